//! The vector kinds a header word names, by major type and subtype (FORMAT.md §2.1).

use std::fmt;

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
    pub(crate) fn from_major_sub(major: u8, sub: u8) -> Option<VectorKind> {
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
