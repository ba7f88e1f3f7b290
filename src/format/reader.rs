//! A bounds-checked little-endian cursor over a byte slice.
//!
//! Every read names the field it is for, so a short buffer produces an error like
//! "truncated attribute name at byte 57: needs 12 bytes, only 3 left" instead of a panic.

use super::error::{FormatError, Result};

#[derive(Debug, Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    /// Current position, in bytes from the start of the buffer.
    pub fn offset(&self) -> u64 {
        self.pos as u64
    }

    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    /// The bytes not read yet.
    pub fn rest(&self) -> &'a [u8] {
        &self.buf[self.pos..]
    }

    /// Takes `len` bytes, failing (not panicking) when fewer are left.
    pub fn bytes(&mut self, len: u64, field: &'static str) -> Result<&'a [u8]> {
        if len > self.remaining() as u64 {
            return Err(FormatError::Truncated {
                field,
                offset: self.offset(),
                needed: len,
                available: self.remaining() as u64,
            });
        }
        let start = self.pos;
        self.pos += len as usize;
        Ok(&self.buf[start..self.pos])
    }

    pub fn array<const N: usize>(&mut self, field: &'static str) -> Result<[u8; N]> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.bytes(N as u64, field)?);
        Ok(out)
    }

    pub fn u8(&mut self, field: &'static str) -> Result<u8> {
        Ok(self.array::<1>(field)?[0])
    }

    pub fn bool(&mut self, field: &'static str) -> Result<bool> {
        Ok(self.u8(field)? != 0)
    }

    pub fn u16(&mut self, field: &'static str) -> Result<u16> {
        Ok(u16::from_le_bytes(self.array(field)?))
    }

    pub fn u32(&mut self, field: &'static str) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array(field)?))
    }

    pub fn i32(&mut self, field: &'static str) -> Result<i32> {
        Ok(i32::from_le_bytes(self.array(field)?))
    }

    pub fn u64(&mut self, field: &'static str) -> Result<u64> {
        Ok(u64::from_le_bytes(self.array(field)?))
    }

    pub fn f32(&mut self, field: &'static str) -> Result<f32> {
        Ok(f32::from_le_bytes(self.array(field)?))
    }

    pub fn f64(&mut self, field: &'static str) -> Result<f64> {
        Ok(f64::from_le_bytes(self.array(field)?))
    }

    /// A `u32` length followed by that many bytes, as text (lossy for non-UTF-8 names).
    pub fn string_u32(&mut self, field: &'static str) -> Result<String> {
        let len = self.u32(field)?;
        Ok(String::from_utf8_lossy(self.bytes(len as u64, field)?).into_owned())
    }

    /// A `u64` length followed by that many bytes, as text.
    pub fn string_u64(&mut self, field: &'static str) -> Result<String> {
        let len = self.u64(field)?;
        Ok(String::from_utf8_lossy(self.bytes(len, field)?).into_owned())
    }

    /// Reads a count of elements of `elem_size` bytes each and checks that that many
    /// elements can still be in the buffer, so a corrupt count cannot trigger a huge
    /// allocation.
    pub fn count(&mut self, elem_size: u64, field: &'static str) -> Result<usize> {
        let offset = self.offset();
        let n = self.u64(field)?;
        self.check_count(n, elem_size, field, offset)
    }

    /// Checks that `n` elements of `elem_size` bytes fit in what is left.
    pub fn check_count(
        &self,
        n: u64,
        elem_size: u64,
        field: &'static str,
        offset: u64,
    ) -> Result<usize> {
        let needed = n.checked_mul(elem_size.max(1));
        match needed {
            Some(bytes) if bytes <= self.remaining() as u64 => Ok(n as usize),
            _ => Err(FormatError::Invalid {
                field,
                offset,
                reason: format!(
                    "count {n} of {elem_size}-byte elements exceeds the {} bytes left",
                    self.remaining()
                ),
            }),
        }
    }

    /// `n` little-endian `u64` values, bounded by the buffer.
    pub fn u64_vec(&mut self, n: u64, field: &'static str) -> Result<Vec<u64>> {
        let raw = self.bytes(n.saturating_mul(8), field)?;
        Ok(raw
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().expect("chunks_exact gives 8 bytes")))
            .collect())
    }

    pub fn invalid(&self, field: &'static str, reason: impl Into<String>) -> super::FormatError {
        super::FormatError::Invalid {
            field,
            offset: self.offset(),
            reason: reason.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_little_endian_and_reports_truncation() {
        let mut r = Reader::new(&[1, 0, 0, 0, 2]);
        assert_eq!(r.u32("x").unwrap(), 1);
        let err = r.u32("version").unwrap_err();
        assert_eq!(
            err.to_string(),
            "truncated version at byte 4: needs 4 bytes, only 1 left"
        );
    }

    #[test]
    fn absurd_count_is_an_error() {
        let mut bytes = u64::MAX.to_le_bytes().to_vec();
        bytes.extend([0; 16]);
        let mut r = Reader::new(&bytes);
        assert!(r.count(8, "tile offsets").is_err());
    }
}
