//! The 4-byte header word that starts every chunk, and the vector kinds it names
//! (FORMAT.md §2).
//!
//! ```text
//!  bit 31 ............ 16 15 ........ 8 7 ......... 0
//!  [ zero (or length)    ][  subtype   ][ major type  ]
//! ```

use std::fmt;

use super::error::{FiloError, Result};

pub(crate) const MAJOR_EMPTY: u8 = 0x01;
pub(crate) const MAJOR_SIMPLE: u8 = 0x02;
pub(crate) const MAJOR_DICT: u8 = 0x03;
pub(crate) const MAJOR_CONST: u8 = 0x04;
pub(crate) const MAJOR_DIFF: u8 = 0x05;
pub(crate) const MAJOR_BINSIMPLE: u8 = 0x06;
pub(crate) const MAJOR_BINDICT: u8 = 0x07;
pub(crate) const MAJOR_DELTA2: u8 = 0x08;

pub(crate) const SUB_PRIMITIVE: u8 = 0x00;
pub(crate) const SUB_STRING: u8 = 0x01;
pub(crate) const SUB_UTF8: u8 = 0x02;
pub(crate) const SUB_FIXEDMAXUTF8: u8 = 0x03;
pub(crate) const SUB_DATETIME: u8 = 0x04;
pub(crate) const SUB_PRIMITIVE_NOMASK: u8 = 0x05;
pub(crate) const SUB_REPEATED: u8 = 0x06;
pub(crate) const SUB_INT: u8 = 0x07;
pub(crate) const SUB_INT_NOMASK: u8 = 0x08;

/// Largest row count an EmptyVector header can carry (24 bits).
pub const EMPTY_MAX_ROWS: u64 = 0xFF_FFFF;

/// Every vector type with a wire form (FORMAT.md §2.1). The names are the Scala class
/// names, as used in `expected.json` and shown to users.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VectorKind {
    /// `0xLLLLLL01`: all NA, row count in the header.
    EmptyVector,
    /// `0x0002`: FlatBuffers, one stored value per row.
    SimplePrimitiveVector,
    /// `0x0004`: FlatBuffers, one stored value for every valid row.
    ConstPrimitiveVector,
    /// `0x0005`: FlatBuffers, base + per-row delta.
    DiffPrimitiveVector,
    /// `0x0405`: FlatBuffers, base millis + delta, base zone + zone delta.
    DiffDateTimeVector,
    /// `0x0102`: FlatBuffers `[string]`.
    SimpleStringVector,
    /// `0x0104`: FlatBuffers, one string for every valid row.
    ConstStringVector,
    /// `0x0103`: FlatBuffers dictionary + codes.
    DictStringVector,
    /// `0x0806`: bit-packed integers, no NA.
    IntBinaryVector,
    /// `0x0706`: NA bitmap + bit-packed integers.
    MaskedIntBinaryVector,
    /// `0x0506`: 64-bit longs or doubles (or pre-0.3.3 ints), no NA.
    PrimitiveAppendableVector,
    /// `0x0006`: NA bitmap + 64-bit longs or doubles (or pre-0.3.3 ints).
    PrimitiveMaskVector,
    /// `0x0606`: count + one value.
    ConstVector,
    /// `0x0808`: initial value + slope + residuals.
    DeltaDeltaVector,
    /// `0x0206`: offset/length words + string bytes.
    UTF8Vector,
    /// `0x0306`: fixed-size slots.
    FixedMaxUTF8Vector,
    /// `0x0207`: UTF8Vector dictionary + codes.
    DictUTF8Vector,
}

impl VectorKind {
    pub const ALL: [VectorKind; 17] = [
        VectorKind::EmptyVector,
        VectorKind::SimplePrimitiveVector,
        VectorKind::ConstPrimitiveVector,
        VectorKind::DiffPrimitiveVector,
        VectorKind::DiffDateTimeVector,
        VectorKind::SimpleStringVector,
        VectorKind::ConstStringVector,
        VectorKind::DictStringVector,
        VectorKind::IntBinaryVector,
        VectorKind::MaskedIntBinaryVector,
        VectorKind::PrimitiveAppendableVector,
        VectorKind::PrimitiveMaskVector,
        VectorKind::ConstVector,
        VectorKind::DeltaDeltaVector,
        VectorKind::UTF8Vector,
        VectorKind::FixedMaxUTF8Vector,
        VectorKind::DictUTF8Vector,
    ];

    /// The name used in JSON (the Scala class name).
    pub fn name(self) -> &'static str {
        match self {
            VectorKind::EmptyVector => "EmptyVector",
            VectorKind::SimplePrimitiveVector => "SimplePrimitiveVector",
            VectorKind::ConstPrimitiveVector => "ConstPrimitiveVector",
            VectorKind::DiffPrimitiveVector => "DiffPrimitiveVector",
            VectorKind::DiffDateTimeVector => "DiffDateTimeVector",
            VectorKind::SimpleStringVector => "SimpleStringVector",
            VectorKind::ConstStringVector => "ConstStringVector",
            VectorKind::DictStringVector => "DictStringVector",
            VectorKind::IntBinaryVector => "IntBinaryVector",
            VectorKind::MaskedIntBinaryVector => "MaskedIntBinaryVector",
            VectorKind::PrimitiveAppendableVector => "PrimitiveAppendableVector",
            VectorKind::PrimitiveMaskVector => "PrimitiveMaskVector",
            VectorKind::ConstVector => "ConstVector",
            VectorKind::DeltaDeltaVector => "DeltaDeltaVector",
            VectorKind::UTF8Vector => "UTF8Vector",
            VectorKind::FixedMaxUTF8Vector => "FixedMaxUTF8Vector",
            VectorKind::DictUTF8Vector => "DictUTF8Vector",
        }
    }

    /// The kind of a (major, subtype) pair, as in the dispatcher of FORMAT.md §7.
    fn from_major_sub(major: u8, sub: u8) -> Option<VectorKind> {
        Some(match (major, sub) {
            (MAJOR_SIMPLE, SUB_PRIMITIVE) => VectorKind::SimplePrimitiveVector,
            (MAJOR_CONST, SUB_PRIMITIVE) => VectorKind::ConstPrimitiveVector,
            (MAJOR_DIFF, SUB_PRIMITIVE) => VectorKind::DiffPrimitiveVector,
            (MAJOR_DIFF, SUB_DATETIME) => VectorKind::DiffDateTimeVector,
            (MAJOR_SIMPLE, SUB_STRING) => VectorKind::SimpleStringVector,
            (MAJOR_CONST, SUB_STRING) => VectorKind::ConstStringVector,
            (MAJOR_DICT, SUB_STRING) => VectorKind::DictStringVector,
            (MAJOR_BINSIMPLE, SUB_INT_NOMASK) => VectorKind::IntBinaryVector,
            (MAJOR_BINSIMPLE, SUB_INT) => VectorKind::MaskedIntBinaryVector,
            (MAJOR_BINSIMPLE, SUB_PRIMITIVE_NOMASK) => VectorKind::PrimitiveAppendableVector,
            (MAJOR_BINSIMPLE, SUB_PRIMITIVE) => VectorKind::PrimitiveMaskVector,
            (MAJOR_BINSIMPLE, SUB_REPEATED) => VectorKind::ConstVector,
            (MAJOR_DELTA2, SUB_INT_NOMASK) => VectorKind::DeltaDeltaVector,
            (MAJOR_BINSIMPLE, SUB_UTF8) => VectorKind::UTF8Vector,
            (MAJOR_BINSIMPLE, SUB_FIXEDMAXUTF8) => VectorKind::FixedMaxUTF8Vector,
            (MAJOR_BINDICT, SUB_UTF8) => VectorKind::DictUTF8Vector,
            _ => return None,
        })
    }

    /// Whether rows are fixed-width values (as opposed to strings).
    pub fn is_string(self) -> bool {
        matches!(
            self,
            VectorKind::SimpleStringVector
                | VectorKind::ConstStringVector
                | VectorKind::DictStringVector
                | VectorKind::UTF8Vector
                | VectorKind::FixedMaxUTF8Vector
                | VectorKind::DictUTF8Vector
        )
    }
}

impl fmt::Display for VectorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

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
