//! The face of every file that is a header computed from metadata, followed by a field's
//! `values.bin` as it is (`values.npy`), or the header alone, describing `values.bin`
//! beside it (`values.hdr`). The header is small and cheap to compute, so it is made
//! again for each read; the values are read straight from the field.

use crate::error::Result;
use crate::read::RawFile;

use super::super::array_tree::ArrayTree;
use super::super::node::FieldOf;
use super::{At, Face};

pub(super) struct HeaderAndValues {
    pub name: &'static str,
    pub mime: &'static str,
    /// Whether a field has the file: metadata only (a listing asks it).
    pub applies: fn(&ArrayTree, FieldOf) -> Result<bool>,
    /// The header (it may need the cell count: asked only once that is known, or to read).
    pub header: fn(&At<'_, FieldOf>) -> Result<Vec<u8>>,
    /// Whether `values.bin` follows the header in the file.
    pub with_values: bool,
}

impl Face<FieldOf> for HeaderAndValues {
    fn name(&self) -> &'static str {
        self.name
    }

    fn mime(&self) -> &'static str {
        self.mime
    }

    fn exists(&self, tree: &ArrayTree, of: FieldOf) -> Result<bool> {
        (self.applies)(tree, of)
    }

    fn known_size(&self, at: &At<'_, FieldOf>) -> Result<Option<u64>> {
        if !self.with_values {
            return self.size(at).map(Some);
        }
        // The header of a sparse state's file names its cell count: known with the
        // values' size, not before.
        match at.raw_known_size(RawFile::Values)? {
            Some(values) => Ok(Some(self.header_len(at)?.saturating_add(values))),
            None => Ok(None),
        }
    }

    fn size(&self, at: &At<'_, FieldOf>) -> Result<u64> {
        let header = self.header_len(at)?;
        if !self.with_values {
            return Ok(header);
        }
        // Saturating: a corrupt cell count must not overflow (it fails on read).
        Ok(header.saturating_add(at.raw_size(RawFile::Values)?))
    }

    fn read_into(
        &self,
        at: &At<'_, FieldOf>,
        offset: u64,
        len: u64,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        let header = (self.header)(at)?;
        crate::view::cache::slice_into(&header, offset, len, out);
        let h = header.len() as u64;
        let end = offset.saturating_add(len);
        if self.with_values && end > h {
            let from = offset.max(h) - h;
            at.read_raw(RawFile::Values, from, end - h - from, out)?;
        }
        Ok(())
    }

    fn read_ahead(&self, at: &At<'_, FieldOf>, offset: u64, len: u64) -> Result<()> {
        if !self.with_values {
            return Ok(());
        }
        let h = self.header_len(at)?;
        let from = offset.saturating_sub(h);
        let end = offset.saturating_add(len).saturating_sub(h);
        at.read_ahead_raw(RawFile::Values, from, end.saturating_sub(from))
    }
}

impl HeaderAndValues {
    fn header_len(&self, at: &At<'_, FieldOf>) -> Result<u64> {
        Ok((self.header)(at)?.len() as u64)
    }
}
