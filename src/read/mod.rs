//! From fragments to bytes and cells: the chunk engine every view reads through.
//!
//! A read of a byte range of a field's file maps to the tiles it overlaps, each tile to
//! the chunks it needs, and only those chunks are un-filtered: straight into the reply
//! when the read covers them whole, through the bounded [`ChunkCache`] when it cuts
//! them. Above the bytes, [`cells`] gives cells `i..j` of a field with their validity,
//! which the text renderers (and every view that needs values) use.

pub mod cache;
pub mod cells;
pub mod field;
pub mod merge;
pub mod tile;

use std::sync::atomic::{AtomicU64, Ordering};

use crate::array::fragment::{Fragment, FragmentId, FragmentMeta};
use crate::error::{Error, Result};
use crate::filter::StringChunk;

use cache::{Cache, Weigh};
pub use field::FieldReader;
use tile::{FileRole, TileChunks};

/// The raw files of a field, as `values.bin`, `offsets.bin`, `validity.bin` show them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RawFile {
    Values,
    Offsets,
    Validity,
}

impl RawFile {
    pub fn name(self) -> &'static str {
        match self {
            RawFile::Values => "values.bin",
            RawFile::Offsets => "offsets.bin",
            RawFile::Validity => "validity.bin",
        }
    }
}

/// Identifies one cached item: a chunk index of a tile, a decoded chunk, a string-mode
/// tile; or an item a view derives (a rendered JSON file, a text file's index or one of
/// its blocks), named by the view.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum CacheKey {
    Tile {
        fragment: FragmentId,
        slot: usize,
        role: FileRole,
        tile: u64,
        item: Item,
    },
    View {
        /// Unique per tree (see [`ReadEngine::new_owner`]), so trees sharing the cache
        /// (the members of a group) never meet.
        owner: u64,
        /// The tree's own number for the file (its inode number).
        file: u64,
        item: ViewItem,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Item {
    ChunkIndex,
    Chunk(usize),
    StringTile,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ViewItem {
    /// A rendered file at a generation of the tree (0 for files that never change).
    Rendered(u64),
    /// Where each block of a text file starts, and its total size, at a generation of
    /// the tree (0 for files that never change).
    TextIndex(u64),
    /// The rendered text of one block of cells (generation, block).
    TextBlock(u64, u64),
}

pub enum Cached {
    Chunks(TileChunks),
    Bytes(Vec<u8>),
    Strings(StringChunk),
    /// Where each block of a text file starts (and, once `complete`, where the last ends):
    /// grown block by block as reads go further, so a sequential reader renders each
    /// block once and the first bytes come at once.
    TextIndex {
        starts: Vec<u64>,
        complete: bool,
    },
}

impl Weigh for Cached {
    fn weight(&self) -> u64 {
        // Plus a small constant for the entry itself.
        64 + match self {
            Cached::Chunks(c) => (c.chunks.len() * 32 + c.starts.len() * 8) as u64,
            Cached::Bytes(b) => b.len() as u64,
            Cached::Strings(s) => (s.bytes.len() + s.offsets.len() * 8) as u64,
            Cached::TextIndex { starts, .. } => starts.len() as u64 * 8,
        }
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

    /// A text index: block starts, and whether the last entry is the file's end.
    pub fn text_index(&self, what: &str) -> Result<(&[u64], bool)> {
        match self {
            Cached::TextIndex { starts, complete } => Ok((starts, *complete)),
            _ => Err(wrong_item(what, "a text index")),
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

/// The shared state of every read: the bounded cache of decoded chunks, chunk indexes
/// and derived items, and a count of chunks decoded (tests prove laziness with it).
pub struct ReadEngine {
    cache: ChunkCache,
    decoded: AtomicU64,
}

impl ReadEngine {
    pub fn new(cache_size: u64) -> ReadEngine {
        ReadEngine {
            cache: ChunkCache::new(cache_size),
            decoded: AtomicU64::new(0),
        }
    }

    /// A number no other caller gets: the `owner` of a tree's [`CacheKey::View`] items.
    pub fn new_owner() -> u64 {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        NEXT.fetch_add(1, Ordering::Relaxed)
    }

    /// Reads field `field` (an index into `meta.fields`) of a fragment.
    pub fn field<'a>(
        &'a self,
        fragment: &'a Fragment,
        meta: &'a FragmentMeta,
        field: usize,
    ) -> Result<FieldReader<'a>> {
        let f = meta.fields.get(field).ok_or_else(|| {
            Error::NotFound(format!("field #{field} of fragment {}", fragment.name))
        })?;
        Ok(FieldReader {
            fragment,
            meta,
            field: f,
            engine: self,
        })
    }

    pub fn cache(&self) -> &ChunkCache {
        &self.cache
    }

    /// Chunks un-filtered since the engine was made.
    pub fn chunks_decoded(&self) -> u64 {
        self.decoded.load(Ordering::Relaxed)
    }

    fn count_decoded(&self) {
        self.decoded.fetch_add(1, Ordering::Relaxed);
    }
}
