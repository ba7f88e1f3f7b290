//! Results larger than the in-memory cache, kept on disk: a least-recently-used set of
//! byte blobs, each one unlinked temporary file, bounded in bytes.
//!
//! [`Cache`](crate::cache::Cache) refuses a value that weighs more than the whole cache
//! (the memory bound must hold whatever the data), so without this a decoded chunk
//! larger than the engine cache, or a rendered `tiles.json` larger than the view cache,
//! was built again by every read of it: 32 reads of 128 KiB decoded a 4 MiB chunk 32
//! times. Such a value is written here once and read back by range (`pread` into the
//! caller's buffer, never read whole and never mapped), so resident memory does not grow
//! with it.
//!
//! **Budget.** The spill holds at most as many bytes on disk as the cache holds in
//! memory (`--cache-size`), plus one exception: a single value larger than the whole
//! budget is still kept, alone (everything else goes first). It was whole in memory a
//! moment before, when it was decoded or rendered; keeping it on disk is what spares
//! the next read of it the same work. So disk use stays within `max(budget, largest
//! value)`, plus the values being written at that moment. Only values larger than the
//! in-memory cache come here, so there are few of them (budget / cache capacity), and
//! so few open descriptors.
//!
//! **Files.** Each blob is an unlinked temporary file from the [`Scratch`] store (an
//! `O_TMPFILE` in [`std::env::temp_dir`] (`TMPDIR`), or where the file system refuses
//! that, a file created and at once unlinked): nothing is left
//! behind whatever way the process ends, and the space comes back when the last reader
//! of an evicted blob is done with it. (On a tmpfs `/tmp` that space is memory, though
//! not the daemon's: point `TMPDIR` at a disk to keep it off RAM.)
//!
//! **Failures.** A blob that cannot be written (no temporary folder, disk full) is no
//! error to the reader: the value is served from memory once, as before there was a
//! spill, and the first such failure is logged.
//!
//! **Staleness.** Keys carry what makes bytes unique for the process (fragment ids, a
//! tree's owner number, inode and rescan generation), so an entry is never served for
//! anything else; entries of things that are gone are dropped by [`Spill::retain`] where
//! a rescan learns of them, and otherwise age out.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::hash::Hash;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use crate::error::{Error, Place, Result};
use crate::storage::Scratch;

use super::chunk_cache::CacheKey;

/// What the spill of a tree (or of the trees of a group) keeps: decoded chunks of the
/// read engine, and the views' rendered files.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum SpillKey {
    /// A decoded chunk, under its key in the engine's cache.
    Chunk(CacheKey),
    /// A file rendered whole by a view: the tree's owner number, the file's inode number
    /// in that tree and the generation it was rendered at (as the view cache keys it).
    Rendered {
        owner: u64,
        file: u64,
        generation: u64,
    },
}

/// One value kept on disk: an unlinked temporary file of `len` bytes.
#[derive(Debug)]
pub struct Blob {
    file: File,
    len: u64,
}

impl Blob {
    /// The value's size, known without reading it.
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Appends bytes `[offset, offset + len)` of the value (fewer at its end, none past
    /// it) to `out`, read from the file: only those bytes come into memory.
    pub fn read_into(&self, offset: u64, len: u64, out: &mut Vec<u8>) -> Result<()> {
        let start = offset.min(self.len);
        let end = offset.saturating_add(len).min(self.len);
        let before = out.len();
        out.resize(before + (end - start) as usize, 0);
        if let Err(e) = self.file.read_exact_at(&mut out[before..], start) {
            out.truncate(before);
            return Err(Error::io(
                Place::file("a spilled result").detail(format!("bytes {start}..{end}")),
                e,
            ));
        }
        Ok(())
    }
}

/// A value loaded through [`Spill::get_or_load`]: on disk, or in memory when the spill
/// could not keep it (served to the readers that asked, then dropped).
#[derive(Debug, Clone)]
pub enum Loaded {
    Disk(Arc<Blob>),
    Memory(Arc<Vec<u8>>),
}

impl Loaded {
    pub fn len(&self) -> u64 {
        match self {
            Loaded::Disk(b) => b.len(),
            Loaded::Memory(v) => v.len() as u64,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends bytes `[offset, offset + len)` (clamped to the value) to `out`.
    pub fn read_into(&self, offset: u64, len: u64, out: &mut Vec<u8>) -> Result<()> {
        match self {
            Loaded::Disk(b) => b.read_into(offset, len, out),
            Loaded::Memory(v) => {
                let size = v.len() as u64;
                let start = offset.min(size) as usize;
                let end = offset.saturating_add(len).min(size) as usize;
                out.extend_from_slice(&v[start..end]);
                Ok(())
            }
        }
    }
}

struct Entry {
    blob: Arc<Blob>,
    tick: u64,
}

struct Lru<K> {
    map: HashMap<K, Entry>,
    order: BTreeMap<u64, K>,
    tick: u64,
    used: u64,
}

/// The result of one load, shared by every thread that asked for it meanwhile.
type LoadSlot = Arc<OnceLock<Result<Loaded>>>;

/// The disk LRU (see the module documentation).
pub struct Spill<K> {
    budget: u64,
    /// Where the blobs' unlinked files come from.
    scratch: Scratch,
    inner: Mutex<Lru<K>>,
    loading: Mutex<HashMap<K, LoadSlot>>,
    /// Whether a failure to write a blob was logged already (once is enough: the next
    /// ones have the same cause).
    warned: AtomicBool,
}

/// A poisoned lock only means another thread panicked while holding it; the maps stay
/// consistent enough to go on, and the daemon must keep serving.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl<K: Hash + Eq + Clone> Spill<K> {
    /// A spill of `budget` bytes in the system's temporary folder.
    pub fn new(budget: u64) -> Spill<K> {
        Spill::in_dir(budget, std::env::temp_dir())
    }

    /// A spill of `budget` bytes whose files live in `dir`.
    pub fn in_dir(budget: u64, dir: impl Into<PathBuf>) -> Spill<K> {
        Spill {
            budget,
            scratch: Scratch::new(dir),
            inner: Mutex::new(Lru {
                map: HashMap::new(),
                order: BTreeMap::new(),
                tick: 0,
                used: 0,
            }),
            loading: Mutex::new(HashMap::new()),
            warned: AtomicBool::new(false),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Lru<K>> {
        lock(&self.inner)
    }

    /// The kept value of `key`, made the most recently used.
    pub fn get(&self, key: &K) -> Option<Arc<Blob>> {
        let mut lru = self.lock();
        lru.tick += 1;
        let tick = lru.tick;
        let entry = lru.map.get_mut(key)?;
        let old = std::mem::replace(&mut entry.tick, tick);
        let blob = entry.blob.clone();
        lru.order.remove(&old);
        lru.order.insert(tick, key.clone());
        Some(blob)
    }

    /// Whether `key` is kept now (without touching its recency).
    pub fn contains(&self, key: &K) -> bool {
        self.lock().map.contains_key(key)
    }

    /// Writes `bytes` to a new blob and keeps it under `key`, evicting the least recently
    /// used blobs beyond the budget. `None` when the blob could not be written (logged
    /// once): the caller serves the bytes it has.
    pub fn insert(&self, key: K, bytes: &[u8]) -> Option<Arc<Blob>> {
        let blob = match self.write(bytes) {
            Ok(blob) => Arc::new(blob),
            Err(e) => {
                if !self.warned.swap(true, Ordering::Relaxed) {
                    log::warn!(
                        "cannot keep a {}-byte result on disk in {}: {e}; results larger \
                         than the cache are built again on every read meanwhile",
                        bytes.len(),
                        self.scratch.dir().display()
                    );
                }
                return None;
            }
        };
        let len = blob.len;
        let mut lru = self.lock();
        lru.tick += 1;
        let tick = lru.tick;
        if let Some(old) = lru.map.remove(&key) {
            lru.order.remove(&old.tick);
            lru.used -= old.blob.len;
        }
        // Beyond the budget the oldest go; a value larger than the whole budget is kept
        // alone (see the module documentation).
        while lru.used.saturating_add(len) > self.budget {
            let Some((_, victim)) = lru.order.pop_first() else {
                break;
            };
            if let Some(e) = lru.map.remove(&victim) {
                lru.used -= e.blob.len;
            }
        }
        lru.used += len;
        lru.order.insert(tick, key.clone());
        lru.map.insert(
            key,
            Entry {
                blob: blob.clone(),
                tick,
            },
        );
        Some(blob)
    }

    /// The kept value of `key`, or loads it, keeps it on disk and returns it. Concurrent
    /// callers for the same key wait for one load (as [`Cache::get_or_load`] does).
    /// Errors are not kept: the next call tries again. A value the spill cannot write
    /// comes back in memory, to the callers waiting for this load only.
    ///
    /// [`Cache::get_or_load`]: crate::cache::Cache::get_or_load
    pub fn get_or_load(&self, key: K, load: impl FnOnce() -> Result<Vec<u8>>) -> Result<Loaded> {
        if let Some(blob) = self.get(&key) {
            return Ok(Loaded::Disk(blob));
        }
        let slot = lock(&self.loading).entry(key.clone()).or_default().clone();
        let result = slot
            .get_or_init(|| {
                // Another thread may have finished this load between our miss and now.
                if let Some(blob) = self.get(&key) {
                    return Ok(Loaded::Disk(blob));
                }
                let bytes = load()?;
                Ok(match self.insert(key.clone(), &bytes) {
                    Some(blob) => Loaded::Disk(blob),
                    None => Loaded::Memory(Arc::new(bytes)),
                })
            })
            .clone();
        let mut loading = lock(&self.loading);
        if loading.get(&key).is_some_and(|s| Arc::ptr_eq(s, &slot)) {
            loading.remove(&key);
        }
        result
    }

    /// Drops `key`'s blob, if kept (what it belongs to is gone).
    pub fn remove(&self, key: &K) {
        let mut lru = self.lock();
        if let Some(e) = lru.map.remove(key) {
            lru.order.remove(&e.tick);
            lru.used -= e.blob.len;
        }
    }

    /// Keeps only the blobs whose key `keep` accepts. `keep` runs without the spill's
    /// lock held (on a copy of the keys: there are few), so it may take other locks.
    pub fn retain(&self, mut keep: impl FnMut(&K) -> bool) {
        let keys: Vec<K> = self.lock().map.keys().cloned().collect();
        for key in keys {
            if !keep(&key) {
                self.remove(&key);
            }
        }
    }

    /// The bound, in bytes.
    pub fn budget(&self) -> u64 {
        self.budget
    }

    /// Bytes kept on disk now.
    pub fn used(&self) -> u64 {
        self.lock().used
    }

    /// Blobs kept now.
    pub fn len(&self) -> usize {
        self.lock().map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A new blob holding `bytes`.
    fn write(&self, bytes: &[u8]) -> std::io::Result<Blob> {
        let mut file = self.scratch.file()?;
        file.write_all(bytes)?;
        Ok(Blob {
            file,
            len: bytes.len() as u64,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    fn spill(budget: u64) -> (tempfile::TempDir, Spill<u32>) {
        let dir = tempfile::tempdir().unwrap();
        let s = Spill::in_dir(budget, dir.path());
        (dir, s)
    }

    fn read(blob: &Blob, offset: u64, len: u64) -> Vec<u8> {
        let mut out = Vec::new();
        blob.read_into(offset, len, &mut out).unwrap();
        out
    }

    #[test]
    fn evicts_least_recently_used_within_the_byte_budget() {
        let (_dir, s) = spill(10);
        s.insert(1, &[1; 4]).unwrap();
        s.insert(2, &[2; 4]).unwrap();
        assert!(s.get(&1).is_some());
        s.insert(3, &[3; 4]).unwrap();
        assert!(s.get(&2).is_none(), "2 was least recently used");
        assert_eq!(read(&s.get(&1).unwrap(), 0, 10), [1; 4]);
        assert_eq!(read(&s.get(&3).unwrap(), 0, 10), [3; 4]);
        assert_eq!(s.used(), 8);
        // Replacing a key does not count it twice.
        s.insert(3, &[5; 6]).unwrap();
        assert_eq!(s.used(), 10);
        assert_eq!(s.len(), 2);
    }

    #[test]
    fn a_value_larger_than_the_budget_is_kept_alone() {
        let (_dir, s) = spill(10);
        s.insert(1, &[1; 4]).unwrap();
        s.insert(2, &[2; 25]).unwrap();
        assert!(s.get(&1).is_none());
        assert_eq!(s.len(), 1);
        assert_eq!(s.used(), 25);
        assert_eq!(read(&s.get(&2).unwrap(), 20, 100), [2; 5]);
        // The next value, within the budget, sends it away.
        s.insert(3, &[3; 4]).unwrap();
        assert!(s.get(&2).is_none());
        assert_eq!(s.used(), 4);
    }

    #[test]
    fn reads_ranges_of_the_blob() {
        let (dir, s) = spill(1 << 20);
        let bytes: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        let blob = s.insert(7, &bytes).unwrap();
        assert_eq!(blob.len(), bytes.len() as u64);
        assert_eq!(read(&blob, 0, 10), bytes[..10]);
        assert_eq!(read(&blob, 65_530, 4096), bytes[65_530..69_626]);
        assert_eq!(
            read(&blob, 99_990, 4096),
            bytes[99_990..],
            "clamped at the end"
        );
        assert!(read(&blob, 200_000, 5).is_empty(), "past the end: nothing");
        // Appended to what the buffer holds.
        let mut out = vec![9];
        blob.read_into(1, 2, &mut out).unwrap();
        assert_eq!(out, [9, bytes[1], bytes[2]]);
        // Nothing is left in the folder: the file is unlinked.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn concurrent_first_loads_of_one_key_run_once() {
        let (_dir, s) = spill(1 << 20);
        let loads = AtomicUsize::new(0);
        std::thread::scope(|scope| {
            for _ in 0..8 {
                scope.spawn(|| {
                    let v = s
                        .get_or_load(7, || {
                            loads.fetch_add(1, Ordering::SeqCst);
                            std::thread::sleep(std::time::Duration::from_millis(50));
                            Ok(vec![1, 2, 3])
                        })
                        .unwrap();
                    assert!(matches!(v, Loaded::Disk(_)));
                    let mut out = Vec::new();
                    v.read_into(1, 5, &mut out).unwrap();
                    assert_eq!(out, [2, 3]);
                });
            }
        });
        assert_eq!(loads.load(Ordering::SeqCst), 1);
        assert!(lock(&s.loading).is_empty(), "finished loads are forgotten");
        // Later calls find it kept.
        let again = s.get_or_load(7, || panic!("loaded twice")).unwrap();
        assert_eq!(again.len(), 3);
    }

    #[test]
    fn failed_loads_are_not_kept() {
        let (_dir, s) = spill(100);
        let err = Error::corrupt("x", "bad");
        assert!(s.get_or_load(1, || Err(err.clone())).is_err());
        assert_eq!(s.get_or_load(1, || Ok(vec![9])).unwrap().len(), 1);
    }

    #[test]
    fn a_folder_that_cannot_be_written_serves_from_memory() {
        let dir = tempfile::tempdir().unwrap();
        // A folder that does not exist, and a path that is a file, not a folder.
        let file = dir.path().join("a-file");
        std::fs::write(&file, b"x").unwrap();
        for place in [dir.path().join("missing"), file] {
            let s: Spill<u32> = Spill::in_dir(1 << 20, place);
            assert!(s.insert(1, &[1, 2, 3]).is_none());
            let loads = AtomicUsize::new(0);
            for _ in 0..2 {
                let v = s
                    .get_or_load(1, || {
                        loads.fetch_add(1, Ordering::SeqCst);
                        Ok(vec![4, 5, 6])
                    })
                    .unwrap();
                assert!(matches!(v, Loaded::Memory(_)));
                let mut out = Vec::new();
                v.read_into(1, 9, &mut out).unwrap();
                assert_eq!(out, [5, 6]);
            }
            assert_eq!(
                loads.load(Ordering::SeqCst),
                2,
                "not kept: loaded each time"
            );
            assert_eq!((s.len(), s.used()), (0, 0));
        }
    }

    #[test]
    fn retain_drops_what_is_gone() {
        let (_dir, s) = spill(100);
        for k in 0..4 {
            s.insert(k, &[0; 5]).unwrap();
        }
        s.retain(|k| k % 2 == 0);
        assert!(s.contains(&0) && s.contains(&2));
        assert!(!s.contains(&1) && !s.contains(&3));
        assert_eq!(s.used(), 10);
    }
}
