//! What every vector parser is told about the chunk it reads.

use super::column_type::ColumnType;
use super::error::{FiloError, Result};
use super::kind::VectorKind;

/// What every vector parser is told: which vector, and which column type it is read as.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ctx {
    pub kind: VectorKind,
    pub header: u32,
    pub column_type: ColumnType,
}

impl Ctx {
    pub fn wrong_type(&self) -> FiloError {
        FiloError::WrongColumnType {
            kind: self.kind,
            header: self.header,
            column_type: self.column_type,
        }
    }

    /// Fails unless the column type is one of `allowed`.
    pub fn require(&self, allowed: &[ColumnType]) -> Result<()> {
        if allowed.contains(&self.column_type) {
            Ok(())
        } else {
            Err(self.wrong_type())
        }
    }
}
