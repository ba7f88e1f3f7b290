//! A tree read through the disk cache (`--cache-dir`, see [`crate::storage::diskcache`]):
//! the same tree, whose files with a cache key ([`FileTree::cache_key`]) are read from
//! the cache where it holds their blocks and decoded (then kept) where it does not.
//! Everything else (listings, attributes, files without a key) goes straight to the tree
//! inside.
//!
//! A cache that fails (a full or read-only disk, a damaged entry) never fails a read:
//! the bytes are decoded as without a cache, and the log says why.

use std::collections::HashSet;
use std::fs::File;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::error::Result;
use crate::storage::diskcache::verify::Checker;
use crate::storage::diskcache::{CacheKey, DiskCache, Entry};

use super::info::Info;
use super::{Entry as DirEntry, FileTree, Ino, Kind, Lifetime, Listing, OpenGuard, Stat};

pub struct CachedTree {
    inner: Arc<dyn FileTree>,
    cache: Arc<DiskCache>,
    /// The tree's generation when its vacuumed fragments were last dropped from the
    /// cache (`u64::MAX`: never yet).
    pruned_at: AtomicU64,
    /// Bytes served from the cache, and decoded for it, since the tree was opened.
    hit: AtomicU64,
    filled: AtomicU64,
    /// The thread that checks complete cache files before the kernel may read them
    /// (see [`CachedTree::cached_file`] and [`CachedTree::check_ahead`]).
    checker: Checker,
}

/// How long an open waits for a check of its file already under way (asked ahead of
/// the open) before the daemon serves it: about the time a 64 MiB file takes to check
/// from the page cache, and what a daemon-served open costs over a passthrough one.
const CHECK_UNDER_WAY_WAIT: std::time::Duration = std::time::Duration::from_millis(100);

/// The largest file checked ahead of its open: the check reads the whole file, which a
/// wrong guess wastes.
const CHECK_AHEAD_MAX: u64 = 1 << 30;

/// What a file of the tree is in the cache now, for `fragfs info` and the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheState {
    /// No key (a listing-dependent file), or not admitted (decrypted bytes).
    NotCached,
    /// `cached` of `size` bytes are in the cache.
    Partial { cached: u64, size: u64 },
    /// Every byte is in the cache.
    Complete,
}

impl CachedTree {
    pub fn new(inner: Arc<dyn FileTree>, cache: Arc<DiskCache>) -> CachedTree {
        let tree = CachedTree {
            inner,
            cache,
            pruned_at: AtomicU64::new(u64::MAX),
            hit: AtomicU64::new(0),
            filled: AtomicU64::new(0),
            checker: Checker::new(),
        };
        tree.prune();
        tree
    }

    pub fn cache(&self) -> &DiskCache {
        &self.cache
    }

    /// Bytes served from the cache since the tree was opened.
    pub fn bytes_hit(&self) -> u64 {
        self.hit.load(Ordering::Relaxed)
    }

    /// Bytes decoded (and offered to the cache) since the tree was opened.
    pub fn bytes_filled(&self) -> u64 {
        self.filled.load(Ordering::Relaxed)
    }

    /// Drops the cache entries of fragments the tree no longer has, once per change of
    /// the tree.
    fn prune(&self) {
        let generation = self.inner.generation();
        if self.pruned_at.swap(generation, Ordering::AcqRel) == generation {
            return;
        }
        for (array, live) in self.inner.cache_fragments() {
            if let Err(e) = self.cache.retain_fragments(&array, &live) {
                log::warn!("disk cache: dropping vacuumed fragments of {array}: {e}");
            }
        }
    }

    /// Before the kernel may read a cache file itself, every block of it is read back
    /// and checked (once per process, in the background: an open that finds its file
    /// unchecked is served by the daemon meanwhile). So at the open of one file, the
    /// one a sequential reader will likely open next (`cat fragments/*/a/values.bin`)
    /// is checked too, while this one is read: its open then finds it checked and gets
    /// passthrough at once.
    fn check_ahead(&self, ino: Ino) {
        let Some(key) = self.inner.next_cache_key(ino) else {
            return;
        };
        let Some(entry) = self.cache.existing_entry(&key) else {
            return;
        };
        if entry.size() <= CHECK_AHEAD_MAX {
            // Busy with earlier ones: this guess is dropped, not queued.
            self.checker.ask(&entry);
        }
    }

    /// Waits until the background check of `ino`'s cache file (asked for by
    /// [`FileTree::cached_file`]) is over, at most `timeout`: whether the file was
    /// found whole then (a later `cached_file` hands it over). For tests, and for a
    /// caller that would rather wait than be served by the daemon.
    pub fn wait_checked(&self, ino: Ino, timeout: Duration) -> bool {
        match self.entry(ino) {
            Some(entry) => self.checker.wait(&entry, timeout),
            None => false,
        }
    }

    fn key_and_size(&self, ino: Ino) -> Option<(CacheKey, u64)> {
        let key = self.inner.cache_key(ino)?;
        let stat = self.inner.stat(ino).ok()?;
        (stat.kind == Kind::File && stat.exact_size).then_some((key, stat.size))
    }

    /// The cache entry of `ino`, if it has one; a cache that fails says so in the log
    /// and is passed by.
    fn entry(&self, ino: Ino) -> Option<Arc<Entry>> {
        self.prune();
        let (key, size) = self.key_and_size(ino)?;
        match self.cache.entry(&key, size) {
            Ok(entry) => entry,
            Err(e) => {
                log::warn!("disk cache: {}: {e}: read without the cache", key.file);
                None
            }
        }
    }

    /// One line per array of the tree: what the cache holds of it (`fragfs info`).
    pub fn describe(&self) -> String {
        let mut out = format!(
            "disk cache: {} of at most {} MiB used\n",
            self.cache.used() >> 20,
            self.cache.budget() >> 20
        );
        for (array, _) in self.inner.cache_fragments() {
            let s = self.cache.summary(&array);
            out.push_str(&format!(
                "  {array}: {} files ({} complete), {} bytes\n",
                s.files, s.complete, s.bytes
            ));
        }
        out
    }

    /// Where `ino` stands in the cache.
    pub fn state(&self, ino: Ino) -> CacheState {
        match self.entry(ino) {
            None => CacheState::NotCached,
            Some(e) if e.is_complete() => CacheState::Complete,
            Some(e) => CacheState::Partial {
                cached: e.cached_bytes(),
                size: e.size(),
            },
        }
    }
}

impl FileTree for CachedTree {
    fn list(&self, dir: Ino) -> Result<Vec<DirEntry>> {
        self.inner.list(dir)
    }

    fn lookup(&self, parent: Ino, name: &str) -> Result<DirEntry> {
        self.inner.lookup(parent, name)
    }

    fn listing(&self, dir: Ino) -> Result<Listing> {
        self.inner.listing(dir)
    }

    fn listed(&self, listing: &Listing, i: usize) -> Result<DirEntry> {
        self.inner.listed(listing, i)
    }

    fn stat(&self, ino: Ino) -> Result<Stat> {
        self.inner.stat(ino)
    }

    fn size(&self, ino: Ino) -> Result<u64> {
        self.inner.size(ino)
    }

    fn read_into(&self, ino: Ino, offset: u64, len: u64, out: &mut Vec<u8>) -> Result<()> {
        let Some(entry) = self.entry(ino) else {
            return self.inner.read_into(ino, offset, len, out);
        };
        let inner = &self.inner;
        let cache = &self.cache;
        let outcome = entry.read(
            offset,
            len,
            out,
            &mut |from, n, buf| inner.read_into(ino, from, n, buf),
            &mut |n| cache.admit(n),
        )?;
        self.hit.fetch_add(outcome.hit, Ordering::Relaxed);
        self.filled.fetch_add(outcome.filled, Ordering::Relaxed);
        Ok(())
    }

    fn parent(&self, ino: Ino) -> Result<Ino> {
        self.inner.parent(ino)
    }

    fn lifetime(&self, ino: Ino) -> Lifetime {
        self.inner.lifetime(ino)
    }

    fn generation(&self) -> u64 {
        self.inner.generation()
    }

    fn source(&self) -> String {
        self.inner.source()
    }

    fn entry_count(&self) -> u64 {
        self.inner.entry_count()
    }

    fn info(&self) -> Result<Info> {
        self.inner.info()
    }

    fn open(&self, ino: Ino) -> Result<Option<OpenGuard>> {
        self.inner.open(ino)
    }

    fn sized_on_open(&self, ino: Ino) -> bool {
        self.inner.sized_on_open(ino)
    }

    fn remember(&self, ino: Ino) -> bool {
        self.inner.remember(ino)
    }

    fn forget(&self, ino: Ino, n: u64) {
        self.inner.forget(ino, n)
    }

    fn version(&self, ino: Ino) -> Option<u64> {
        self.inner.version(ino)
    }

    fn content_type(&self, ino: Ino, name: &str) -> &'static str {
        self.inner.content_type(ino, name)
    }

    fn read_ahead(&self, ino: Ino, offset: u64, len: u64) -> Result<()> {
        match self.entry(ino) {
            Some(e) if e.is_complete() => Ok(()),
            _ => self.inner.read_ahead(ino, offset, len),
        }
    }

    fn cache_key(&self, ino: Ino) -> Option<CacheKey> {
        self.inner.cache_key(ino)
    }

    fn next_cache_key(&self, ino: Ino) -> Option<CacheKey> {
        self.inner.next_cache_key(ino)
    }

    fn cache_fragments(&self) -> Vec<(String, HashSet<String>)> {
        self.inner.cache_fragments()
    }

    /// Never reads the whole file here (the open waits for this answer): a complete
    /// file not yet checked is checked in the background and `None` said meanwhile, so
    /// this open is served by the daemon (from the cache, each block checked as it is
    /// read) and a later one gets passthrough.
    fn cached_file(&self, ino: Ino) -> Option<(File, String)> {
        let entry = self.entry(ino)?;
        if !entry.is_complete() {
            return None;
        }
        // The file a sequential reader opens next is checked first: this one is being
        // served by the daemon meanwhile if it is not checked, and the next open then
        // finds its file checked (a reader of `fragments/*/a/values.bin` gets
        // passthrough from the second on).
        self.check_ahead(ino);
        let mut data = entry.checked_data();
        if data.is_none() && entry.is_being_checked() {
            // A check under way (asked ahead of this open) is given a moment to end:
            // never the whole file's time on this thread, which the reader would wait.
            self.checker.wait(&entry, CHECK_UNDER_WAY_WAIT);
            data = entry.checked_data();
        }
        if data.is_none() {
            self.checker.ask(&entry);
        }
        let file = data?.try_clone().ok()?;
        // The kernel's reads will not tell the cache the file is in use: this open does.
        entry.touch();
        Some((file, entry.base().display().to_string()))
    }
}
