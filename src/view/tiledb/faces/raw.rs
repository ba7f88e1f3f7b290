//! `values.bin`, `offsets.bin`, `validity.bin`: a field's raw files, decoded (a
//! fragment's) or merged (a state's), exactly as TileDB's read buffers hold them.

use crate::error::Result;
use crate::read::RawFile;

use super::super::array_tree::ArrayTree;
use super::super::node::FieldOf;
use super::{At, Face};

pub(super) struct Raw(RawFile);

pub(super) static VALUES: Raw = Raw(RawFile::Values);
pub(super) static OFFSETS: Raw = Raw(RawFile::Offsets);
pub(super) static VALIDITY: Raw = Raw(RawFile::Validity);

impl Face<FieldOf> for Raw {
    fn name(&self) -> &'static str {
        self.0.name()
    }

    fn mime(&self) -> &'static str {
        "application/octet-stream"
    }

    fn exists(&self, tree: &ArrayTree, of: FieldOf) -> Result<bool> {
        let facts = tree.field_facts(of)?;
        Ok(match self.0 {
            RawFile::Values => true,
            RawFile::Offsets => facts.is_var(),
            RawFile::Validity => facts.nullable,
        })
    }

    fn known_size(&self, at: &At<'_, FieldOf>) -> Result<Option<u64>> {
        at.raw_known_size(self.0)
    }

    fn size(&self, at: &At<'_, FieldOf>) -> Result<u64> {
        at.raw_size(self.0)
    }

    fn read_into(
        &self,
        at: &At<'_, FieldOf>,
        offset: u64,
        len: u64,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        at.read_raw(self.0, offset, len, out)
    }

    fn read_ahead(&self, at: &At<'_, FieldOf>, offset: u64, len: u64) -> Result<()> {
        at.read_ahead_raw(self.0, offset, len)
    }
}
