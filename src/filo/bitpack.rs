//! Stored integers of any width (FORMAT.md §4.2, §4.3) and NA bitmaps (§4.1).
//!
//! Both are read by row index straight from the bytes, with no decoding pass, which is
//! what makes fixed-width vectors row-addressable ([`super::FixedLayout`]).

use super::error::Result;
use super::span::Span;

/// How one stored integer is laid out: `nbits` ∈ {2, 4, 8, 16, 32, 64} and signedness.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IntFormat {
    pub nbits: u8,
    /// As written. At 64 bits the flag is ignored: 64-bit data is always two's
    /// complement (the old Long writer marks negative i64 data `signed = 0`).
    pub signed: bool,
}

impl IntFormat {
    /// Checks `nbits` against the widths this storage allows (sub-byte widths occur only
    /// in new-style sub-vectors), so a bad width is an error here rather than a wrong
    /// value later. `rel` is where the width was read, for the message.
    pub(crate) fn new(
        span: &Span,
        field: &'static str,
        rel: usize,
        nbits: u16,
        signed: bool,
        allow_sub_byte: bool,
    ) -> Result<IntFormat> {
        let ok = match nbits {
            8 | 16 | 32 | 64 => true,
            2 | 4 => allow_sub_byte,
            _ => false,
        };
        if !ok {
            let allowed = if allow_sub_byte {
                "2, 4, 8, 16, 32 or 64"
            } else {
                "8, 16, 32 or 64"
            };
            return Err(span.invalid(field, rel, format!("nbits {nbits}, expected {allowed}")));
        }
        Ok(IntFormat {
            nbits: nbits as u8,
            signed,
        })
    }

    /// Bytes needed for `count` packed elements (the last byte may be partly used).
    pub fn bytes_for(self, count: u64) -> u64 {
        let bits = u128::from(count) * u128::from(self.nbits);
        u64::try_from(bits.div_ceil(8)).unwrap_or(u64::MAX)
    }

    /// Element `i` of `data`, sign- or zero-extended to i64.
    ///
    /// Callers check `data` holds `bytes_for(count)` bytes when they build a reader;
    /// should that ever be wrong, a missing byte reads as 0 instead of panicking. Widths
    /// come from [`IntFormat::new`]; any other width still reads something, never panics.
    pub(crate) fn read(self, data: &[u8], i: u64) -> i64 {
        let nbits = u32::from(self.nbits).clamp(1, 64);
        let raw: u64 = if nbits < 8 {
            // LSB-first packing; 8 is a multiple of nbits, so no element straddles bytes.
            let bit = i.wrapping_mul(u64::from(nbits));
            let byte = byte_at(data, bit >> 3);
            u64::from(byte >> (bit & 7)) & ((1 << nbits) - 1)
        } else {
            let width = (nbits / 8) as u64;
            let start = i.wrapping_mul(width);
            let mut le = [0u8; 8];
            for (k, b) in le.iter_mut().take(width as usize).enumerate() {
                *b = byte_at(data, start.wrapping_add(k as u64));
            }
            u64::from_le_bytes(le)
        };
        if nbits == 64 {
            return raw as i64;
        }
        if self.signed {
            // Move the element's sign bit to bit 63, then shift back arithmetically.
            let unused = 64 - nbits;
            ((raw << unused) as i64) >> unused
        } else {
            raw as i64
        }
    }
}

fn byte_at(data: &[u8], i: u64) -> u8 {
    usize::try_from(i)
        .ok()
        .and_then(|i| data.get(i))
        .copied()
        .unwrap_or(0)
}

/// Bit `i` of a bitmap of u64 LE words: an NA bitmap (bit set = NA) or a bool bitset.
///
/// Words missing at the end read as 0 (available): FlatBuffers NaMask vectors may be
/// shorter than the row count (FORMAT.md §4.1). Since the words are little-endian, bit
/// `i` of the bitmap is bit `i & 7` of byte `i >> 3`.
pub fn bit(bitmap: &[u8], i: u64) -> bool {
    (byte_at(bitmap, i >> 3) >> (i & 7)) & 1 == 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fmt(nbits: u8, signed: bool) -> IntFormat {
        IntFormat { nbits, signed }
    }

    #[test]
    fn sub_byte_packing_matches_the_spec_examples() {
        // FORMAT.md §4.2: [1,2,3,4] at 4 bits = 21 43; [1,2,1,0] at 2 bits = 19.
        let four: Vec<i64> = (0..4)
            .map(|i| fmt(4, false).read(&[0x21, 0x43], i))
            .collect();
        assert_eq!(four, [1, 2, 3, 4]);
        let two: Vec<i64> = (0..4).map(|i| fmt(2, false).read(&[0x19], i)).collect();
        assert_eq!(two, [1, 2, 1, 0]);
        // Signed sub-byte widths are sign-extended (FORMAT.md §11 item 5).
        assert_eq!(fmt(4, true).read(&[0x0F], 0), -1);
        assert_eq!(fmt(2, true).read(&[0b10], 0), -2);
    }

    #[test]
    fn widths_and_signedness() {
        assert_eq!(fmt(8, true).read(&[0xFB], 0), -5);
        assert_eq!(fmt(8, false).read(&[0xFB], 0), 251);
        assert_eq!(fmt(16, true).read(&[0, 0x80], 0), -32768);
        assert_eq!(fmt(16, false).read(&[0, 0x80], 0), 32768);
        assert_eq!(fmt(32, false).read(&[0xFF; 4], 0), 4294967295);
        assert_eq!(fmt(32, true).read(&[0xFF; 4], 0), -1);
        // 64 bits: always two's complement, whatever the flag says.
        assert_eq!(fmt(64, false).read(&[0xFF; 8], 0), -1);
        assert_eq!(fmt(16, true).read(&[1, 0, 2, 0], 1), 2);
        // Out of range reads are 0, never a panic; nor do widths IntFormat::new refuses.
        assert_eq!(fmt(64, true).read(&[1, 2], u64::MAX), 0);
        assert_eq!(fmt(2, true).read(&[], u64::MAX), 0);
        for nbits in [0, 1, 3, 12, 63, 65, 255] {
            let _ = fmt(nbits, true).read(&[0xFF; 16], 1);
        }
    }

    #[test]
    fn bitmap_bits_and_short_bitmaps() {
        let words = 0x8000_0000_0000_0021u64.to_le_bytes();
        let na: Vec<u64> = (0..80).filter(|&i| bit(&words, i)).collect();
        assert_eq!(na, [0, 5, 63]);
        assert_eq!(fmt(4, false).bytes_for(5), 3);
        assert_eq!(fmt(64, false).bytes_for(u64::MAX), u64::MAX);
    }
}
