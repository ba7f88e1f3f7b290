//! The logical type of a column, which the chunk itself does not record.

use std::fmt;

/// The logical type of a column (FORMAT.md §1), named as in the manifest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ColumnType {
    /// u8 0/1.
    Bool,
    /// i32.
    Int,
    /// i64.
    Long,
    /// f32.
    Float,
    /// f64.
    Double,
    /// Old FlatBuffers string vectors (also accepts the new-style string vectors).
    String,
    /// New-style `ZeroCopyUTF8String` vectors (also accepts the FlatBuffers ones).
    Utf8,
    /// `java.sql.Timestamp`: i64 epoch milliseconds.
    Timestamp,
    /// Joda `DateTime`: i64 epoch milliseconds plus a per-row zone (`timezone.bin`).
    DateTime,
}

impl ColumnType {
    pub const ALL: [ColumnType; 9] = [
        ColumnType::Bool,
        ColumnType::Int,
        ColumnType::Long,
        ColumnType::Float,
        ColumnType::Double,
        ColumnType::String,
        ColumnType::Utf8,
        ColumnType::Timestamp,
        ColumnType::DateTime,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ColumnType::Bool => "bool",
            ColumnType::Int => "int",
            ColumnType::Long => "long",
            ColumnType::Float => "float",
            ColumnType::Double => "double",
            ColumnType::String => "string",
            ColumnType::Utf8 => "utf8",
            ColumnType::Timestamp => "timestamp",
            ColumnType::DateTime => "datetime",
        }
    }

    pub fn from_name(name: &str) -> Option<ColumnType> {
        ColumnType::ALL.into_iter().find(|t| t.name() == name)
    }

    /// Bytes per row in `values.bin`, or None for strings.
    pub fn elem_size(self) -> Option<usize> {
        match self {
            ColumnType::Bool => Some(1),
            ColumnType::Int | ColumnType::Float => Some(4),
            ColumnType::Long
            | ColumnType::Double
            | ColumnType::Timestamp
            | ColumnType::DateTime => Some(8),
            ColumnType::String | ColumnType::Utf8 => None,
        }
    }
}

impl fmt::Display for ColumnType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Column types whose values are integers or become them: an integer vector can be
/// read as any of these (an int column keeps the low 32 bits, a double column converts).
pub(crate) const INTEGRAL: [ColumnType; 4] = [
    ColumnType::Int,
    ColumnType::Long,
    ColumnType::Timestamp,
    ColumnType::Double,
];
