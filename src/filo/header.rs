//! The 4-byte header word that starts every chunk (FORMAT.md §2); the kinds it names
//! are in `kind.rs`.
//!
//! ```text
//!  bit 31 ............ 16 15 ........ 8 7 ......... 0
//!  [ zero (or length)    ][  subtype   ][ major type  ]
//! ```

use super::error::{FiloError, Result};
use super::kind::{VectorKind, MAJOR_EMPTY};

/// Largest row count an EmptyVector header can carry (24 bits).
pub const EMPTY_MAX_ROWS: u64 = 0xFF_FFFF;

/// A parsed header word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub word: u32,
    pub kind: VectorKind,
    /// EmptyVector only: the row count packed into bits 8..31.
    pub empty_rows: u64,
}

impl Header {
    /// Reads the header word at the start of `chunk`.
    ///
    /// Bits 16..31 must be zero for every kind but EmptyVector. Readers upstream ignore
    /// them, but writers always clear them, so a set bit there means a damaged or foreign
    /// chunk, and saying so beats decoding garbage.
    pub fn parse(chunk: &[u8]) -> Result<Header> {
        let word = match chunk.get(..4) {
            Some(&[a, b, c, d]) => u32::from_le_bytes([a, b, c, d]),
            _ => {
                return Err(FiloError::Truncated {
                    part: "header",
                    field: "header word",
                    offset: 0,
                    needed: 4,
                    available: chunk.len() as u64,
                })
            }
        };
        let major = (word & 0xFF) as u8;
        let sub = ((word >> 8) & 0xFF) as u8;
        if major == MAJOR_EMPTY {
            return Ok(Header {
                word,
                kind: VectorKind::EmptyVector,
                empty_rows: u64::from(word >> 8),
            });
        }
        let Some(kind) = VectorKind::from_major_sub(major, sub) else {
            let reason = if major == 0xFF {
                "0xFF marks an LZ4-framed blob, which must be unframed first"
            } else {
                "unknown major/subtype pair"
            };
            return Err(FiloError::UnsupportedHeader {
                header: word,
                reason,
            });
        };
        if word >> 16 != 0 {
            return Err(FiloError::UnsupportedHeader {
                header: word,
                reason: "bits 16..31 must be zero",
            });
        }
        Ok(Header {
            word,
            kind,
            empty_rows: 0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_one_header() {
        let mut seen = Vec::new();
        for word in 0u32..0x1_0000 {
            if let Ok(h) = Header::parse(&word.to_le_bytes()) {
                if h.kind != VectorKind::EmptyVector {
                    seen.push(h.kind);
                }
            }
        }
        assert_eq!(seen.len(), 16);
        for kind in VectorKind::ALL {
            assert!(
                kind == VectorKind::EmptyVector || seen.contains(&kind),
                "{kind}"
            );
        }
    }

    #[test]
    fn empty_length_and_bad_words() {
        let h = Header::parse(&[0x01, 0x07, 0, 0]).unwrap();
        assert_eq!((h.kind, h.empty_rows), (VectorKind::EmptyVector, 7));
        let h = Header::parse(&[0x01, 0xFF, 0xFF, 0xFF]).unwrap();
        assert_eq!(h.empty_rows, EMPTY_MAX_ROWS);
        assert!(Header::parse(&[0x06, 0x08, 0x01, 0]).is_err());
        assert!(Header::parse(&[0x09, 0, 0, 0]).is_err());
        assert!(Header::parse(&[0x06, 0x08]).is_err());
        let err = Header::parse(&[0xFF, 0, 0, 0]).unwrap_err().to_string();
        assert!(err.contains("LZ4"), "{err}");
    }
}
