//! Objects held in memory: the test store. It counts what it is asked (listings, size
//! requests, reads and bytes), so tests can state what a listing or a random read costs
//! in requests, which is what matters on object storage; and it can fail on purpose, so
//! tests can check that a transient failure is retried rather than remembered. It can
//! also keep a journal of reads and read-ahead hints, in order, for tests of the order in
//! which a reader asks for bytes.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::{check_key, join, past_end, Listed, Pin, RangeRead, Store};
use crate::error::{Error, Place, Result};

/// What a store was asked, since it was made or last reset.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Requests {
    pub lists: u64,
    pub sizes: u64,
    /// Calls of [`Store::read`] (each may carry several ranges).
    pub reads: u64,
    pub ranges: u64,
    pub bytes: u64,
}

impl Requests {
    /// Every request: what an object store would bill.
    pub fn total(&self) -> u64 {
        self.lists + self.sizes + self.reads
    }
}

/// One request, as the journal keeps it (a read of several ranges: one entry each).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Access {
    Read { key: String, offset: u64, len: u64 },
    ReadAhead { key: String, offset: u64, len: u64 },
}

#[derive(Debug, Default)]
struct Counters {
    /// Every access in order, once [`MemoryStore::keep_journal`] was called.
    journal: Mutex<Option<Vec<Access>>>,
    lists: AtomicU64,
    sizes: AtomicU64,
    reads: AtomicU64,
    ranges: AtomicU64,
    bytes: AtomicU64,
    /// Reads still to fail on purpose.
    failures: AtomicU64,
    /// How long each listing takes, in ms.
    list_delay_ms: AtomicU64,
}

#[derive(Debug)]
pub struct MemoryStore {
    /// Every object of the whole store, by its full key.
    objects: Arc<Mutex<BTreeMap<String, Arc<Vec<u8>>>>>,
    /// Where this store's root is among them (`""`, or a folder for a sub-store).
    prefix: String,
    counters: Arc<Counters>,
    walk_window: u64,
    remote: bool,
    name: String,
}

impl MemoryStore {
    pub fn new(name: &str) -> MemoryStore {
        MemoryStore {
            objects: Arc::default(),
            prefix: String::new(),
            counters: Arc::default(),
            walk_window: 64 << 20,
            remote: false,
            name: name.to_string(),
        }
    }

    /// A copy of a local folder's files (symbolic links skipped), for tests that run the
    /// same checks through memory as through the folder.
    pub fn from_dir(dir: &Path) -> Result<MemoryStore> {
        let store = MemoryStore::new(&dir.display().to_string());
        let mut stack = vec![(dir.to_path_buf(), String::new())];
        while let Some((path, key)) = stack.pop() {
            for entry in std::fs::read_dir(&path).map_err(|e| Error::io(path.as_path(), e))? {
                let entry = entry.map_err(|e| Error::io(path.as_path(), e))?;
                let name = entry.file_name().to_string_lossy().into_owned();
                let ft = entry
                    .file_type()
                    .map_err(|e| Error::io(entry.path().as_path(), e))?;
                if ft.is_dir() {
                    stack.push((entry.path(), join(&key, &name)));
                } else if ft.is_file() {
                    let bytes = std::fs::read(entry.path())
                        .map_err(|e| Error::io(entry.path().as_path(), e))?;
                    store.put(&join(&key, &name), bytes);
                }
            }
        }
        Ok(store)
    }

    /// Adds (or replaces) an object.
    pub fn put(&self, key: &str, bytes: Vec<u8>) {
        let full = join(&self.prefix, key);
        self.objects
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(full, Arc::new(bytes));
    }

    /// Sets how much of a tile's start the chunk walk reads in one request.
    pub fn with_walk_window(mut self, bytes: u64) -> MemoryStore {
        self.walk_window = bytes;
        self
    }

    /// Makes every listing from now on take `delay`, as a slow object store's does.
    pub fn set_list_delay(&self, delay: std::time::Duration) {
        let ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX);
        self.counters.list_delay_ms.store(ms, Ordering::SeqCst);
    }

    /// Answers [`Store::is_remote`] as object storage does.
    pub fn as_remote(mut self) -> MemoryStore {
        self.remote = true;
        self
    }

    /// The next `n` reads fail with a transient I/O error (as a network store's 503).
    pub fn fail_next_reads(&self, n: u64) {
        self.counters.failures.store(n, Ordering::SeqCst);
    }

    /// Starts (or restarts) the journal of reads and read-ahead hints.
    pub fn keep_journal(&self) {
        *self.journal() = Some(Vec::new());
    }

    /// The accesses since [`MemoryStore::keep_journal`], in order.
    pub fn journal_entries(&self) -> Vec<Access> {
        self.journal().clone().unwrap_or_default()
    }

    fn journal(&self) -> std::sync::MutexGuard<'_, Option<Vec<Access>>> {
        self.counters
            .journal
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    fn note(&self, access: Access) {
        if let Some(journal) = self.journal().as_mut() {
            journal.push(access);
        }
    }

    pub fn requests(&self) -> Requests {
        let c = &self.counters;
        Requests {
            lists: c.lists.load(Ordering::SeqCst),
            sizes: c.sizes.load(Ordering::SeqCst),
            reads: c.reads.load(Ordering::SeqCst),
            ranges: c.ranges.load(Ordering::SeqCst),
            bytes: c.bytes.load(Ordering::SeqCst),
        }
    }

    pub fn reset_requests(&self) {
        let c = &self.counters;
        for counter in [&c.lists, &c.sizes, &c.reads, &c.ranges, &c.bytes] {
            counter.store(0, Ordering::SeqCst);
        }
    }

    fn object(&self, key: &str) -> Result<Arc<Vec<u8>>> {
        check_key(key)?;
        self.objects
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&join(&self.prefix, key))
            .cloned()
            .ok_or_else(|| Error::io(Place::file(key), std::io::ErrorKind::NotFound.into()))
    }
}

impl Store for MemoryStore {
    fn location(&self) -> String {
        match self.prefix.as_str() {
            "" => format!("memory:{}", self.name),
            prefix => format!("memory:{}/{prefix}", self.name),
        }
    }

    fn list(&self, prefix: &str) -> Result<Vec<Listed>> {
        check_key(prefix)?;
        self.counters.lists.fetch_add(1, Ordering::SeqCst);
        let delay = self.counters.list_delay_ms.load(Ordering::SeqCst);
        std::thread::sleep(std::time::Duration::from_millis(delay));
        let folder = join(&self.prefix, prefix);
        let start = if folder.is_empty() {
            String::new()
        } else {
            format!("{folder}/")
        };
        let objects = self.objects.lock().unwrap_or_else(|e| e.into_inner());
        let mut out: BTreeMap<String, Option<u64>> = BTreeMap::new();
        for (key, bytes) in objects.range(start.clone()..) {
            let Some(rest) = key.strip_prefix(&start) else {
                break;
            };
            match rest.split_once('/') {
                Some((dir, _)) => {
                    out.insert(dir.to_string(), None);
                }
                None => {
                    out.insert(rest.to_string(), Some(bytes.len() as u64));
                }
            }
        }
        Ok(out
            .into_iter()
            .map(|(name, size)| Listed { name, size })
            .collect())
    }

    fn size(&self, key: &str) -> Result<u64> {
        self.counters.sizes.fetch_add(1, Ordering::SeqCst);
        Ok(self.object(key)?.len() as u64)
    }

    /// A CRC of the bytes, with their length: deterministic (the same bytes give the
    /// same version in every process), and another object put at the key gives another.
    /// Not counted as a request (a store's version comes with its listings).
    fn version(&self, key: &str) -> Result<Option<String>> {
        let object = self.object(key)?;
        Ok(Some(format!(
            "size {} crc {:08x}",
            object.len(),
            crc32fast::hash(&object)
        )))
    }

    fn read(&self, key: &str, ranges: &mut [RangeRead<'_>]) -> Result<()> {
        let c = &self.counters;
        c.reads.fetch_add(1, Ordering::SeqCst);
        let failing = c
            .failures
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
        if failing.is_ok() {
            return Err(Error::io(
                Place::file(key),
                std::io::Error::new(
                    std::io::ErrorKind::ConnectionReset,
                    "injected failure: connection reset",
                ),
            ));
        }
        let object = self.object(key)?;
        let size = object.len() as u64;
        for r in ranges.iter() {
            if r.offset.checked_add(r.len).is_none_or(|end| end > size) {
                return Err(past_end(key, r.offset, r.len, size));
            }
        }
        for r in ranges.iter_mut() {
            self.note(Access::Read {
                key: key.to_string(),
                offset: r.offset,
                len: r.len,
            });
            c.ranges.fetch_add(1, Ordering::SeqCst);
            c.bytes.fetch_add(r.len, Ordering::SeqCst);
            r.out
                .extend_from_slice(&object[r.offset as usize..(r.offset + r.len) as usize]);
        }
        Ok(())
    }

    fn read_ahead(&self, key: &str, offset: u64, len: u64) {
        self.note(Access::ReadAhead {
            key: key.to_string(),
            offset,
            len,
        });
    }

    fn walk_window(&self) -> u64 {
        self.walk_window
    }

    fn is_remote(&self) -> bool {
        self.remote
    }

    /// Objects here stay until removed; a pin keeps nothing (as on object storage).
    fn pin(&self, _prefix: &str) -> Result<Pin> {
        Ok(Box::new(()))
    }

    fn sub(&self, prefix: &str) -> Result<Arc<dyn Store>> {
        check_key(prefix)?;
        Ok(Arc::new(MemoryStore {
            objects: self.objects.clone(),
            prefix: join(&self.prefix, prefix),
            counters: self.counters.clone(),
            walk_window: self.walk_window,
            remote: self.remote,
            name: self.name.clone(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The same bytes give the same version (in any store), others another; asking is
    /// not a request.
    #[test]
    fn versions_follow_the_bytes() {
        let (one, two) = (MemoryStore::new("one"), MemoryStore::new("two"));
        one.put("k", b"abc".to_vec());
        two.put("k", b"abc".to_vec());
        let v = one.version("k").unwrap();
        assert_eq!(v, two.version("k").unwrap());
        one.put("k", b"abd".to_vec());
        assert_ne!(one.version("k").unwrap(), v);
        assert!(one.version("missing").is_err());
        assert_eq!(one.requests().total(), 0);
    }

    #[test]
    fn lists_folders_counts_requests_and_fails_on_purpose() {
        let store = MemoryStore::new("t");
        store.put("a/b/c.tdb", vec![1, 2, 3]);
        store.put("a/x", vec![9]);
        store.put("top", vec![]);
        let names = |l: Vec<Listed>| l.into_iter().map(|e| (e.name, e.size)).collect::<Vec<_>>();
        assert_eq!(
            names(store.list("").unwrap()),
            [("a".to_string(), None), ("top".to_string(), Some(0))]
        );
        assert_eq!(
            names(store.list("a").unwrap()),
            [("b".to_string(), None), ("x".to_string(), Some(1))]
        );
        assert_eq!(store.read_range("a/b/c.tdb", 1, 2).unwrap(), [2, 3]);
        assert!(store.read_range("a/b/c.tdb", 2, 2).is_err());
        let r = store.requests();
        assert_eq!((r.lists, r.reads, r.bytes), (2, 2, 2));
        store.fail_next_reads(1);
        let err = store.read_range("a/x", 0, 1).unwrap_err();
        assert!(err.is_transient(), "{err}");
        assert_eq!(store.read_range("a/x", 0, 1).unwrap(), [9]);
        let sub = store.sub("a").unwrap();
        assert_eq!(sub.read_all("b/c.tdb").unwrap(), [1, 2, 3]);
        assert_eq!(sub.size("missing").unwrap_err().errno(), libc::ENOENT);
    }
}
