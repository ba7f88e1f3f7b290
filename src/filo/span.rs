//! A bounds-checked window on the chunk.
//!
//! Filo offsets are relative to many different starts (the body, a nested sub-vector, a
//! FlatBuffers field), but error messages must point at a byte of the *file*. A [`Span`]
//! therefore remembers where it sits in the chunk and which part of the vector it holds,
//! so every read reports "part: field at byte N" in chunk coordinates without the parsers
//! doing offset arithmetic for their messages.

use std::ops::Range;

use super::error::{FiloError, Result};

#[derive(Debug, Clone, Copy)]
pub(crate) struct Span<'a> {
    /// The bytes of this span.
    bytes: &'a [u8],
    /// The whole chunk, which `bytes` is part of.
    chunk: &'a [u8],
    /// Position of `bytes[0]` in the chunk.
    start: usize,
    /// What these bytes are, for error messages ("DictUTF8Vector codes").
    part: &'static str,
}

impl<'a> Span<'a> {
    /// The whole chunk.
    pub fn chunk(bytes: &'a [u8], part: &'static str) -> Self {
        Span {
            bytes,
            chunk: bytes,
            start: 0,
            part,
        }
    }

    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// The whole chunk, to read the [`Range`]s that layouts keep.
    pub fn whole_chunk(&self) -> &'a [u8] {
        self.chunk
    }

    /// Where these bytes are in the chunk.
    pub fn range(&self) -> Range<usize> {
        self.start..self.start + self.bytes.len()
    }

    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    pub fn part(&self) -> &'static str {
        self.part
    }

    /// Chunk offset of byte `rel` of this span, for messages.
    pub fn at(&self, rel: usize) -> u64 {
        self.start as u64 + rel as u64
    }

    /// The same bytes under another name, for a nested structure.
    pub fn named(self, part: &'static str) -> Self {
        Span { part, ..self }
    }

    /// `len` bytes from `rel`, or an error naming `field`.
    pub fn sub(&self, field: &'static str, rel: usize, len: usize) -> Result<Span<'a>> {
        let available = self.bytes.len().saturating_sub(rel);
        if rel > self.bytes.len() || len > available {
            return Err(FiloError::Truncated {
                part: self.part,
                field,
                offset: self.at(rel),
                needed: len as u64,
                available: available as u64,
            });
        }
        Ok(Span {
            bytes: &self.bytes[rel..rel + len],
            start: self.start + rel,
            ..*self
        })
    }

    /// Everything from `rel` to the end.
    pub fn tail(&self, field: &'static str, rel: usize) -> Result<Span<'a>> {
        self.sub(field, rel, self.bytes.len().saturating_sub(rel))
    }

    /// `count` entries of `size` bytes each from `rel`: the usual shape of a count read
    /// from the bytes, checked before anyone allocates for it.
    pub fn entries(
        &self,
        field: &'static str,
        rel: usize,
        count: u64,
        size: usize,
    ) -> Result<Span<'a>> {
        let available = self.bytes.len().saturating_sub(rel);
        let fit = available.checked_div(size).map_or(u64::MAX, |f| f as u64);
        if rel > self.bytes.len() || count > fit {
            return Err(FiloError::CountTooLarge {
                part: self.part,
                field,
                offset: self.at(rel),
                count,
                fit,
            });
        }
        // count <= fit, so count * size <= available fits in usize.
        self.sub(field, rel, count as usize * size)
    }

    pub fn array<const N: usize>(&self, field: &'static str, rel: usize) -> Result<[u8; N]> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.sub(field, rel, N)?.bytes);
        Ok(out)
    }

    pub fn u8(&self, field: &'static str, rel: usize) -> Result<u8> {
        Ok(self.array::<1>(field, rel)?[0])
    }

    pub fn u16(&self, field: &'static str, rel: usize) -> Result<u16> {
        Ok(u16::from_le_bytes(self.array(field, rel)?))
    }

    pub fn u32(&self, field: &'static str, rel: usize) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array(field, rel)?))
    }

    pub fn i32(&self, field: &'static str, rel: usize) -> Result<i32> {
        Ok(i32::from_le_bytes(self.array(field, rel)?))
    }

    pub fn i64(&self, field: &'static str, rel: usize) -> Result<i64> {
        Ok(i64::from_le_bytes(self.array(field, rel)?))
    }

    /// A non-negative i32 count (Filo writes counts as Java ints).
    pub fn count_i32(&self, field: &'static str, rel: usize) -> Result<u64> {
        let n = self.i32(field, rel)?;
        u64::try_from(n).map_err(|_| self.invalid(field, rel, format!("negative count {n}")))
    }

    /// An error about the field at `rel`.
    pub fn invalid(&self, field: &'static str, rel: usize, reason: impl Into<String>) -> FiloError {
        FiloError::Invalid {
            part: self.part,
            field,
            offset: self.at(rel),
            reason: reason.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_report_chunk_offsets() {
        let chunk = [1u8, 2, 3, 4, 5, 6, 7, 8];
        let body = Span::chunk(&chunk, "X").tail("body", 4).unwrap();
        assert_eq!(body.u16("f", 2).unwrap(), 0x0807);
        let err = body.u32("f", 2).unwrap_err().to_string();
        assert_eq!(err, "X: f at byte 6 needs 4 bytes, only 2 left");
        let err = body.entries("table", 0, 40, 4).unwrap_err().to_string();
        assert_eq!(err, "X: table at byte 4 claims 40 entries, only 1 fit");
        assert!(body.sub("f", 9, 0).is_err());
        assert!(body.entries("f", 0, u64::MAX, 8).is_err());
    }
}
