//! How a TileDB field becomes a Parquet column: the physical type, the annotation
//! (logical type and legacy converted type), how one value is written PLAIN, and the
//! shape (flat, or a list of fixed or var length). The table of the mapping is in the
//! module's doc ([`super`]).

use crate::encode::table::Column;
use crate::error::{Error, Place, Result};
use crate::format::datatype::ElementKind;
use crate::format::enumeration::Enumeration;
use crate::format::schema::VAR_NUM;
use crate::format::Datatype;

/// Parquet's physical types this writer writes (the `Type` enum of parquet.thrift).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Physical {
    Boolean,
    Int32,
    Int64,
    Float,
    Double,
    ByteArray,
    /// FIXED_LEN_BYTE_ARRAY of this many bytes.
    Fixed(u64),
}

impl Physical {
    pub fn code(self) -> i32 {
        match self {
            Physical::Boolean => 0,
            Physical::Int32 => 1,
            Physical::Int64 => 2,
            Physical::Float => 4,
            Physical::Double => 5,
            Physical::ByteArray => 6,
            Physical::Fixed(_) => 7,
        }
    }
}

/// A timestamp's unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Millis,
    Micros,
    Nanos,
}

/// The logical types this writer writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Logical {
    String,
    Int {
        bits: u8,
        signed: bool,
    },
    /// Always `isAdjustedToUTC = false`: TileDB's datetimes carry no zone.
    Timestamp(Unit),
}

impl Logical {
    /// The legacy `ConvertedType` old readers understand, where one means the same.
    /// None for a timestamp: TIMESTAMP_MILLIS/MICROS mean UTC-adjusted instants, and
    /// TileDB's datetimes are not that (there is no converted type for nanoseconds
    /// at all).
    pub fn converted(self) -> Option<i32> {
        match self {
            Logical::String => Some(0),
            Logical::Int { bits, signed } => {
                let k = match bits {
                    8 => 0,
                    16 => 1,
                    32 => 2,
                    _ => 3,
                };
                Some(if signed { 15 + k } else { 11 + k })
            }
            Logical::Timestamp(_) => None,
        }
    }
}

/// How one TileDB value (a cell of a flat column, an element of a list) is written as
/// one PLAIN value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encode {
    /// These many bytes, as TileDB has them: PLAIN equals TileDB's little-endian bytes
    /// (a page of only such values is a byte range of `values.bin`).
    Same(u64),
    /// A small integer of this kind, sign- or zero-extended to 4 bytes.
    Widen(ElementKind),
    /// One byte, 0 or not: one bit of a bit-packed run.
    Bool,
    /// A var-size cell's bytes behind their 4-byte length.
    Bytes,
}

/// A Parquet leaf type: what a value is and how it is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kind {
    pub physical: Physical,
    pub logical: Option<Logical>,
    pub encode: Encode,
    /// TileDB's bytes per value (per element of a list).
    pub size: u64,
    /// TileDB's datatype, named in `fragfs.units` when the type cannot carry its unit.
    pub unit: Option<&'static str>,
}

/// A column's shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    Flat,
    /// A LIST of this many elements per cell, or of var length (None).
    List(Option<u64>),
}

/// A column as this writer writes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leaf {
    pub kind: Kind,
    pub shape: Shape,
    /// OPTIONAL (nullable, or enumerated: a code without a label is written null).
    pub optional: bool,
    /// A dictionary column: the labels in a dictionary page, the codes as indices.
    pub dictionary: bool,
}

impl Leaf {
    /// The values of a flat REQUIRED column are `values.bin`'s bytes as they are.
    pub fn raw_values(&self) -> bool {
        !self.optional && !self.dictionary && matches!(self.kind.encode, Encode::Same(_))
    }

    /// The largest definition level.
    pub fn max_def(&self) -> u32 {
        u32::from(self.optional) + u32::from(matches!(self.shape, Shape::List(_)))
    }
}

fn bad(column: &str, what: String) -> Error {
    Error::corrupt(
        Place::file("cells.parquet"),
        format!("column {column:?}: {what}"),
    )
}

/// Bytes-like types: strings, characters, blobs, geometries, ANY.
fn is_bytes(t: Datatype) -> bool {
    t.is_string()
        || matches!(
            t,
            Datatype::Char | Datatype::Blob | Datatype::GeomWkb | Datatype::GeomWkt | Datatype::Any
        )
}

/// The leaf type and shape of `cell_val_num` values of `t` per cell.
fn kind_of(t: Datatype, cell_val_num: u32, column: &str) -> Result<(Kind, Shape)> {
    use Datatype::*;
    if cell_val_num == 0 {
        return Err(bad(column, "0 values per cell".into()));
    }
    let size = t.size();
    let kind = |physical, logical, encode| Kind {
        physical,
        logical,
        encode,
        size,
        unit: None,
    };
    if is_bytes(t) {
        let string = matches!(t, StringAscii | StringUtf8).then_some(Logical::String);
        if cell_val_num == VAR_NUM {
            return Ok((
                kind(Physical::ByteArray, string, Encode::Bytes),
                Shape::Flat,
            ));
        }
        let n = u64::from(cell_val_num) * size;
        let mut k = kind(Physical::Fixed(n), None, Encode::Same(n));
        k.size = n;
        return Ok((k, Shape::Flat));
    }
    let int = |bits, signed| Some(Logical::Int { bits, signed });
    let k = match t {
        Bool => kind(Physical::Boolean, None, Encode::Bool),
        Int8 | UInt8 | Int16 | UInt16 => {
            let ek = t.element_kind();
            let l = int(8 * ek.size() as u8, ek.is_signed());
            kind(Physical::Int32, l, Encode::Widen(ek))
        }
        Int32 => kind(Physical::Int32, int(32, true), Encode::Same(4)),
        UInt32 => kind(Physical::Int32, int(32, false), Encode::Same(4)),
        Int64 => kind(Physical::Int64, int(64, true), Encode::Same(8)),
        UInt64 => kind(Physical::Int64, int(64, false), Encode::Same(8)),
        Float32 => kind(Physical::Float, None, Encode::Same(4)),
        Float64 => kind(Physical::Double, None, Encode::Same(8)),
        DatetimeMs => kind(
            Physical::Int64,
            Some(Logical::Timestamp(Unit::Millis)),
            Encode::Same(8),
        ),
        DatetimeUs => kind(
            Physical::Int64,
            Some(Logical::Timestamp(Unit::Micros)),
            Encode::Same(8),
        ),
        DatetimeNs => kind(
            Physical::Int64,
            Some(Logical::Timestamp(Unit::Nanos)),
            Encode::Same(8),
        ),
        t if t.is_temporal() => Kind {
            unit: Some(t.name()),
            ..kind(Physical::Int64, None, Encode::Same(8))
        },
        t => {
            return Err(bad(
                column,
                format!("type {} has no Parquet type", t.name()),
            ))
        }
    };
    let shape = match cell_val_num {
        1 => Shape::Flat,
        VAR_NUM => Shape::List(None),
        n => Shape::List(Some(n.into())),
    };
    Ok((k, shape))
}

/// The leaf type of an enumeration's labels: flat, and not booleans (readers have no
/// boolean dictionaries).
pub fn label_kind(labels: &Enumeration, column: &str) -> Result<Kind> {
    match kind_of(labels.datatype, labels.cell_val_num, column)? {
        (k, Shape::Flat) if k.encode != Encode::Bool => Ok(k),
        _ => Err(bad(
            column,
            format!(
                "labels of {} × {} cannot be a Parquet dictionary",
                if labels.is_var() {
                    "var".to_string()
                } else {
                    labels.cell_val_num.to_string()
                },
                labels.datatype.name()
            ),
        )),
    }
}

/// How `column` is written.
pub fn leaf(column: &Column) -> Result<Leaf> {
    if let Some(labels) = &column.labels {
        if column.is_var()
            || column.cell_val_num != 1
            || is_bytes(column.datatype)
            || column.datatype.is_float()
            || column.datatype == Datatype::Bool
        {
            return Err(bad(
                &column.name,
                format!(
                    "codes of type {} cannot index labels",
                    column.datatype.name()
                ),
            ));
        }
        return Ok(Leaf {
            kind: label_kind(labels, &column.name)?,
            shape: Shape::Flat,
            optional: true,
            dictionary: true,
        });
    }
    let (kind, shape) = kind_of(column.datatype, column.cell_val_num, &column.name)?;
    Ok(Leaf {
        kind,
        shape,
        optional: column.nullable,
        dictionary: false,
    })
}
