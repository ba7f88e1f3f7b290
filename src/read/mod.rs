//! From fragments to bytes and cells: the chunk engine every view reads through.
//!
//! A read of a byte range of a field's file maps to the tiles it overlaps, each tile to
//! the chunks it needs, and only those chunks are un-filtered: straight into the reply
//! when the read covers them whole, through the bounded [`ChunkCache`] when it cuts
//! them. Above the bytes, [`cells`] gives cells `i..j` of a field with their validity,
//! which the text renderers (and every view that needs values) use.

pub mod cells;
pub mod endian;
pub mod field;
pub mod merge;
pub mod spill;
pub mod tile;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::array::fragment::{Fragment, FragmentId, FragmentMeta};
use crate::error::{Error, Result};
use crate::filter::StringChunk;

use crate::cache::{Cache, Weigh};
pub use field::FieldReader;
use spill::{Spill, SpillKey};
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

/// The spill of a tree's caches: what is larger than the in-memory caches, on disk.
pub type ResultSpill = Spill<SpillKey>;

/// The shared state of every read: the bounded cache of decoded chunks and chunk
/// indexes, the spill where chunks larger than that cache go, and a count of chunks
/// decoded (tests prove laziness with it).
pub struct ReadEngine {
    cache: ChunkCache,
    spill: Arc<ResultSpill>,
    decoded: AtomicU64,
}

impl ReadEngine {
    /// An engine whose cache holds `cache_size` bytes, with a spill of as many on disk.
    pub fn new(cache_size: u64) -> ReadEngine {
        ReadEngine::with_spill(cache_size, Arc::new(Spill::new(cache_size)))
    }

    /// An engine whose cache holds `cache_size` bytes, keeping larger chunks in `spill`
    /// (shared with the views of the same trees).
    pub fn with_spill(cache_size: u64, spill: Arc<ResultSpill>) -> ReadEngine {
        ReadEngine {
            cache: ChunkCache::new(cache_size),
            spill,
            decoded: AtomicU64::new(0),
        }
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

    /// Where chunks larger than the cache, and the views' files larger than theirs, are
    /// kept.
    pub fn spill(&self) -> &Arc<ResultSpill> {
        &self.spill
    }

    /// Whether a decoded chunk of `len` bytes fits the cache (else it goes to the spill).
    fn cache_fits_chunk(&self, len: u64) -> bool {
        Cached::bytes_weight(len) <= self.cache.capacity()
    }

    /// Chunks un-filtered since the engine was made.
    pub fn chunks_decoded(&self) -> u64 {
        self.decoded.load(Ordering::Relaxed)
    }

    fn count_decoded(&self) {
        self.decoded.fetch_add(1, Ordering::Relaxed);
    }
}
