//! [`ReadEngine`]: the decoded-chunk cache and the spill every reader of fragments shares.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::chunk_cache::{Cached, ChunkCache};
use super::spill::{Spill, SpillKey};

/// The spill of a tree's caches: what is larger than the in-memory caches, on disk.
pub type ResultSpill = Spill<SpillKey>;

/// The shared state of every read: the bounded cache of decoded chunks and chunk
/// indexes, the spill where chunks larger than that cache go, and counts of chunks
/// decoded and of cells the sparse merges went through (tests prove laziness, and how
/// many passes a merged state costs, with them).
pub struct ReadEngine {
    cache: ChunkCache,
    spill: Arc<ResultSpill>,
    decoded: AtomicU64,
    merged: AtomicU64,
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
            merged: AtomicU64::new(0),
        }
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
    pub(crate) fn cache_fits_chunk(&self, len: u64) -> bool {
        Cached::bytes_weight(len) <= self.cache.capacity()
    }

    /// Chunks un-filtered since the engine was made.
    pub fn chunks_decoded(&self) -> u64 {
        self.decoded.load(Ordering::Relaxed)
    }

    pub(crate) fn count_decoded(&self) {
        self.decoded.fetch_add(1, Ordering::Relaxed);
    }

    /// Output cells the sparse merges went through since the engine was made (a whole
    /// pass over a state adds its cell count).
    pub fn cells_merged(&self) -> u64 {
        self.merged.load(Ordering::Relaxed)
    }

    pub(crate) fn count_merged(&self, cells: u64) {
        self.merged.fetch_add(cells, Ordering::Relaxed);
    }
}
