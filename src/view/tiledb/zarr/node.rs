//! The nodes of `zarr/`: the group, its arrays, their metadata files and chunk files (v2
//! keys `i.j`, v3 keys `c/i/j` with their folders).

use crate::encode::zarr::{ZArray, ZMeta};

/// A node under `zarr/`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(in crate::view::tiledb) enum ZNode {
    Root,
    GroupMeta(ZMeta),
    Array(ZArray),
    ArrayMeta(ZArray, ZMeta),
    /// A v2 chunk file `i.j`, by chunk coordinates.
    Chunk(ZArray, Vec<u64>),
    /// A v3 key folder: `c` (no coordinates) and `c/i`, ... (the leading ones).
    KeyDir(ZArray, Vec<u64>),
    /// A v3 chunk file `c/i/j`.
    KeyChunk(ZArray, Vec<u64>),
}

impl ZNode {
    pub(in crate::view::tiledb) fn is_dir(&self) -> bool {
        matches!(self, ZNode::Root | ZNode::Array(_) | ZNode::KeyDir(..))
    }

    /// The folder holding this node (`None`: the folder holding `zarr/`).
    pub(in crate::view::tiledb) fn parent(&self) -> Option<ZNode> {
        Some(match self {
            ZNode::Root => return None,
            ZNode::GroupMeta(_) | ZNode::Array(_) => ZNode::Root,
            ZNode::ArrayMeta(a, _) | ZNode::Chunk(a, _) => ZNode::Array(*a),
            ZNode::KeyDir(a, c) if c.is_empty() => ZNode::Array(*a),
            ZNode::KeyDir(a, c) | ZNode::KeyChunk(a, c) => {
                ZNode::KeyDir(*a, c[..c.len() - 1].to_vec())
            }
        })
    }
}
