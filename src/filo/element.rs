//! How one stored element of a vector is encoded.

use super::bitpack::IntFormat;

/// How one stored element is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Element {
    /// An integer of `nbits` (a value, a Diff delta, a residual, or a dictionary code).
    Int(IntFormat),
    /// IEEE 754 binary32.
    F32,
    /// IEEE 754 binary64.
    F64,
    /// One bit per row, LSB first (FlatBuffers bool vectors).
    Bit,
}
