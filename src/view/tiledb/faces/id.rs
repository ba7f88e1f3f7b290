//! A face's number in its table.

/// A face's number in its table: what a node stores, so nodes stay small, hashable and
/// comparable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(in crate::view::tiledb) struct FaceId(pub(super) u8);
