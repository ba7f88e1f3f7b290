//! The bounded cache of decoded chunks ([`ChunkCache`]): what a tile's key names (its
//! chunk index, a chunk, a string tile) and what is kept for it.

use crate::cache::{Cache, Weigh};
use crate::error::{Error, Result};
use crate::filter::StringChunk;

use super::tile::{FileRole, TileChunks};
use crate::array::fragment::FragmentId;

/// Identifies one cached item: a chunk index of a tile, a decoded chunk, a string-mode
/// tile. (What the views derive is cached by the views: `view::cache`.)
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum CacheKey {
    Tile {
        fragment: FragmentId,
        slot: usize,
        role: FileRole,
        tile: u64,
        item: Item,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Item {
    ChunkIndex,
    Chunk(usize),
    StringTile,
}

pub enum Cached {
    Chunks(TileChunks),
    Bytes(Vec<u8>),
    Strings(StringChunk),
}

impl Weigh for Cached {
    fn weight(&self) -> u64 {
        // Plus a small constant for the entry itself.
        64 + match self {
            Cached::Chunks(c) => (c.chunks.len() * 32 + c.starts.len() * 8) as u64,
            Cached::Bytes(b) => b.len() as u64,
            Cached::Strings(s) => (s.bytes.len() + s.offsets.len() * 8) as u64,
        }
    }
}

impl Cached {
    /// The weight of `len` decoded bytes as a cached item.
    pub fn bytes_weight(len: u64) -> u64 {
        64u64.saturating_add(len)
    }
}

/// Each key kind always stores one kind of item; these accessors check it in one place
/// and turn a mismatch (a bug, never bad data) into an error naming `what`, not a panic.
impl Cached {
    pub fn chunks(&self, what: &str) -> Result<&TileChunks> {
        match self {
            Cached::Chunks(c) => Ok(c),
            _ => Err(wrong_item(what, "a chunk index")),
        }
    }

    pub fn bytes(&self, what: &str) -> Result<&[u8]> {
        match self {
            Cached::Bytes(b) => Ok(b),
            _ => Err(wrong_item(what, "bytes")),
        }
    }

    pub fn strings(&self, what: &str) -> Result<&StringChunk> {
        match self {
            Cached::Strings(s) => Ok(s),
            _ => Err(wrong_item(what, "a string tile")),
        }
    }
}

fn wrong_item(what: &str, wanted: &str) -> Error {
    Error::corrupt(
        what,
        format!("the cache holds another kind of item than {wanted}"),
    )
}

pub type ChunkCache = Cache<CacheKey, Cached>;
