//! The raw files of a field: values, offsets, validity.

/// The raw files of a field, as `values.bin`, `offsets.bin`, `validity.bin` show them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RawFile {
    Values,
    Offsets,
    Validity,
}

impl RawFile {
    pub fn name(self) -> &'static str {
        match self {
            RawFile::Values => "values.bin",
            RawFile::Offsets => "offsets.bin",
            RawFile::Validity => "validity.bin",
        }
    }
}
