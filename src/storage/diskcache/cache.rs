//! [`DiskCache`]: the cache folder opened with its bound, and what the readers ask of it.

use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::entry::Entry;
use super::evict;
use super::evictions::Evictions;
use super::folder::{
    free_space, free_space_floor, io, make_folder, ArraySummary, Folder, OpenEntries,
    DEFAULT_FRACTION, DEFAULT_MAX, LAYOUT,
};
use super::key::CacheKey;
use super::lock::FolderLock;
use super::private;
use super::usage::{Room, Usage};
use crate::error::{Error, Result};

/// How `--cache-dir` was asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheConfig {
    pub dir: PathBuf,
    /// The bound (`--cache-dir-size`); `None`: [`DEFAULT_FRACTION`] of the free space,
    /// at most [`DEFAULT_MAX`].
    pub size: Option<u64>,
    /// Keep decrypted bytes of encrypted arrays (`--cache-decrypted`).
    pub decrypted: bool,
}

/// The cache folder, opened. Its eviction thread (started on first need) ends with it.
pub struct DiskCache {
    folder: Arc<Folder>,
}

impl DiskCache {
    /// Opens (making it, 0700) the cache folder. Fails, saying why, for a folder that
    /// is not this user's or that others may write ([`private::check_folder`]), and for
    /// one that cannot be made or written: the caller goes on without a cache
    /// ([`crate::view::open_disk_cache`]).
    pub fn open(config: &CacheConfig) -> Result<DiskCache> {
        let dir = &config.dir;
        if !dir.exists() {
            make_folder(dir)?;
        }
        let meta = std::fs::metadata(dir).map_err(|e| io(dir, e))?;
        private::check_folder(dir, &meta).map_err(Error::InvalidArgument)?;
        if meta.mode() & 0o044 != 0 {
            log::warn!(
                "disk cache: {} is readable by others (mode {:o}): decoded bytes are kept there",
                dir.display(),
                meta.mode() & 0o777
            );
        }
        let tag = dir.join("CACHEDIR.TAG");
        if let Ok(mut f) = private::create_new(&tag) {
            use std::io::Write;
            let _ = f.write_all(
                b"Signature: 8a477f597d28d172789f06886806bc55\n\
                  # The decoded-bytes cache of fragfs (--cache-dir): safe to delete.\n",
            );
        }
        let root = dir.join(LAYOUT);
        make_folder(&root)?;
        if !std::fs::symlink_metadata(&root).is_ok_and(|m| m.is_dir()) {
            return Err(Error::NotDirectory(root.display().to_string()));
        }
        let lock = FolderLock::open(dir)?;
        let usage = Usage::open(dir)?;
        let (free, total) = free_space(dir).unwrap_or((0, 0));
        let budget = config
            .size
            .unwrap_or_else(|| (free / DEFAULT_FRACTION).min(DEFAULT_MAX));
        let folder = Arc::new_cyclic(|me| Folder {
            me: me.clone(),
            root,
            budget,
            floor: free_space_floor(total),
            decrypted: config.decrypted,
            lock,
            usage,
            open: Mutex::new(OpenEntries::default()),
            floor_reached: AtomicBool::new(false),
            count_failed: AtomicBool::new(false),
            evictions: Evictions::default(),
        });
        // Counted now if no daemon is writing (the usual case); else the count those
        // daemons keep stands. A count that is not valid, or over the bound (a smaller
        // `--cache-dir-size` than last time), refuses the first write, which starts an
        // eviction pass (no thread is started here: see [`evict`]).
        if let Some(counting) = folder.usage.try_counting() {
            let total = evict::scan(&folder.root).iter().map(|e| e.bytes).sum();
            folder.lock.hold(|| folder.usage.write(total))?;
            drop(counting);
        }
        Ok(DiskCache { folder })
    }

    pub fn budget(&self) -> u64 {
        self.folder.budget
    }

    pub fn floor(&self) -> u64 {
        self.folder.floor
    }

    /// Bytes the cache folder holds, by the count its daemons share (0 while it has
    /// none).
    pub fn used(&self) -> u64 {
        self.folder.usage.read().unwrap_or(0)
    }

    /// Where the entries live.
    pub fn root(&self) -> &Path {
        &self.folder.root
    }

    /// Whether a file with this key may be kept at all.
    pub fn admits(&self, key: &CacheKey) -> bool {
        self.folder.admits(key)
    }

    /// The entry of the file `key` names, `size` bytes long: opened, or made empty.
    /// `None` when the key is not to be kept (decrypted bytes without
    /// `--cache-decrypted`, decoded bytes of a build without an identity), the file is
    /// larger than the whole cache, or the cache has no room for a new entry now.
    pub fn entry(&self, key: &CacheKey, size: u64) -> Result<Option<Arc<Entry>>> {
        self.folder.entry(key, size)
    }

    /// The entry of the file `key` names if the cache holds one, at the size its index
    /// records; never made: for work ahead of a reader (checking the file it is likely
    /// to open next), which must not fill the cache with empty entries.
    pub fn existing_entry(&self, key: &CacheKey) -> Option<Arc<Entry>> {
        self.folder.existing_entry(key)
    }

    /// Room to write `bytes` more now, held until they are written; `None` (the bytes
    /// are served, not kept) when the cache is full, and then the eviction thread is
    /// woken to make room for later writes, or when the file system's free space would
    /// fall under the floor. Never scans nor removes anything itself.
    pub fn admit(&self, bytes: u64) -> Option<Room> {
        self.folder.admit(bytes)
    }

    /// Waits until no eviction is due or under way (for tests, and for a caller that
    /// wants the folder settled), at most `timeout`: false if it was not by then.
    pub fn settle(&self, timeout: Duration) -> bool {
        self.folder.evictions.wait_idle(timeout)
    }

    /// Eviction passes finished since the cache was opened.
    pub fn evictions(&self) -> u64 {
        self.folder.evictions.passes()
    }

    /// What the cache holds of `array`, for `fragfs info`.
    pub fn summary(&self, array: &str) -> ArraySummary {
        self.folder.summary(array)
    }

    /// Drops the entries of `array`'s fragments that are not in `live` (vacuumed).
    pub fn retain_fragments(&self, array: &str, live: &HashSet<String>) -> Result<()> {
        self.folder.retain_fragments(array, live)
    }
}

impl Drop for DiskCache {
    fn drop(&mut self) {
        self.folder.evictions.stop_and_join();
    }
}

#[cfg(test)]
mod tests {
    use super::super::*;
    use super::*;
    use crate::error::Place;
    use crate::storage::diskcache::folder::{folder_name, OBJECTS};
    use std::fs::File;
    use std::sync::atomic::AtomicU64;
    use std::sync::atomic::Ordering;

    const SETTLED: Duration = Duration::from_secs(120);

    fn key(scope: CacheScope, file: &str) -> CacheKey {
        CacheKey {
            array: "/arrays/a".into(),
            scope,
            file: file.into(),
            decrypted: false,
        }
    }

    fn fragment(name: &str) -> CacheScope {
        CacheScope::Fragment {
            name: name.into(),
            version: "size 10 mtime 1.000000000".into(),
        }
    }

    /// Reads the whole entry, its bytes decoded as 7s; true if it is complete then.
    fn fill(e: &Entry, cache: &DiskCache) -> bool {
        let size = e.size();
        let mut out = Vec::new();
        e.read(
            0,
            size,
            &mut out,
            &mut |_, n, buf| {
                buf.resize(buf.len() + n as usize, 7);
                Ok(())
            },
            &mut |n| cache.admit(n),
        )
        .unwrap();
        e.is_complete()
    }

    /// The whole entry from the cache file alone (a decode would fail the read).
    fn cached_bytes(e: &Entry) -> Vec<u8> {
        let mut out = Vec::new();
        e.read(
            0,
            e.size(),
            &mut out,
            &mut |_, _, _| Err(Error::corrupt(Place::file("x"), "decoded, not cached")),
            &mut |_| None,
        )
        .unwrap();
        out
    }

    fn config(dir: &Path, size: u64) -> CacheConfig {
        CacheConfig {
            dir: dir.to_path_buf(),
            size: Some(size),
            decrypted: false,
        }
    }

    /// Bytes on disk under `root` (files only), as the bound counts them; files that
    /// go while they are counted (an eviction under way) count as gone.
    fn on_disk(root: &Path) -> u64 {
        let mut total = 0;
        let mut stack = vec![root.to_path_buf()];
        while let Some(d) = stack.pop() {
            for i in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                let Ok(m) = i.metadata() else { continue };
                if m.is_dir() {
                    stack.push(i.path());
                } else {
                    total += m.blocks() * 512;
                }
            }
        }
        total
    }

    /// [`on_disk`] of the cache's entries while no entry is made or removed (under the
    /// folder's lock): a scan while folders go and come back may see one twice. Writes
    /// go on meanwhile, which only grow files: what it counts is at most what the folder
    /// holds when it is done.
    fn settled_on_disk(cache: &DiskCache) -> u64 {
        let root = cache.root();
        cache.folder.lock.hold(|| Ok(on_disk(root))).unwrap()
    }

    /// The files under `root` that are not one of an entry's two (`.data` with its
    /// `.idx`): what a race between making and removing entries would leave.
    fn orphans(root: &Path) -> Vec<PathBuf> {
        let mut files = HashSet::new();
        let mut stack = vec![root.to_path_buf()];
        while let Some(d) = stack.pop() {
            for i in std::fs::read_dir(&d).unwrap().flatten() {
                if i.file_type().unwrap().is_dir() {
                    stack.push(i.path());
                } else {
                    files.insert(i.path());
                }
            }
        }
        let mut out: Vec<PathBuf> = files
            .iter()
            .filter(|p| {
                let s = p.to_string_lossy();
                let other = match (s.strip_suffix(".data"), s.strip_suffix(".idx")) {
                    (Some(base), _) => format!("{base}.idx"),
                    (_, Some(base)) => format!("{base}.data"),
                    _ => return true,
                };
                !files.contains(Path::new(&other))
            })
            .cloned()
            .collect();
        out.sort();
        out
    }

    #[test]
    fn the_folder_is_private_and_tagged() {
        let dir = tempfile::tempdir().unwrap();
        let cache_dir = dir.path().join("c");
        DiskCache::open(&config(&cache_dir, 1 << 20)).unwrap();
        let mode = std::fs::metadata(&cache_dir).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o700);
        assert!(cache_dir.join("CACHEDIR.TAG").exists());
    }

    /// A folder others may write, or another user's, is not used at all.
    #[test]
    fn a_folder_others_may_write_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let set = |mode| {
            std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(mode)).unwrap()
        };
        set(0o775);
        let why = DiskCache::open(&config(dir.path(), 1 << 20))
            .err()
            .unwrap()
            .to_string();
        assert!(why.contains("writable by its group"), "{why}");
        assert!(!dir.path().join(LAYOUT).exists(), "nothing made in it");
        set(0o700);
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            std::os::unix::fs::chown(dir.path(), Some(65534), None).unwrap();
            let why = DiskCache::open(&config(dir.path(), 1 << 20))
                .err()
                .unwrap()
                .to_string();
            assert!(why.contains("owned by uid 65534"), "{why}");
        }
    }

    #[test]
    fn least_recently_used_files_go_first_and_the_bound_holds() {
        let dir = tempfile::tempdir().unwrap();
        let budget = 8 * BLOCK;
        let cache = DiskCache::open(&config(dir.path(), budget)).unwrap();
        let mut entries = Vec::new();
        for i in 0..6 {
            let k = key(fragment(&format!("f{i}")), "a");
            // A full cache refuses room and evicts in the background: once it is done,
            // there is room.
            let e = match cache.entry(&k, 2 * BLOCK).unwrap() {
                Some(e) => e,
                None => {
                    assert!(cache.settle(SETTLED));
                    cache.entry(&k, 2 * BLOCK).unwrap().unwrap()
                }
            };
            if !fill(&e, &cache) {
                assert!(cache.settle(SETTLED));
                assert!(fill(&e, &cache), "no room made for file {i}");
            }
            // Distinct last-use times, oldest first.
            let t = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1000 + i);
            File::options()
                .write(true)
                .open(entry::index_path(e.base()))
                .unwrap()
                .set_modified(t)
                .unwrap();
            entries.push(e);
            assert!(
                on_disk(cache.root()) <= budget,
                "{} bytes on disk after {} files, bound {budget}",
                on_disk(cache.root()),
                i + 1
            );
        }
        assert!(cache.evictions() > 0);
        // The newest files are kept, the oldest went.
        assert!(entries[5].is_complete() && !entries[5].is_retired());
        assert!(entries[0].is_retired());
        assert!(!entry::index_path(entries[0].base()).exists());
        // A file larger than the whole cache is not kept at all.
        let big = key(fragment("big"), "a");
        assert!(cache.entry(&big, budget + 1).unwrap().is_none());
        assert!(orphans(cache.root()).is_empty());
    }

    /// Two threads of one daemon make, fill and (through the eviction thread, a third)
    /// evict entries of a small cache at once: the bound holds on disk at every look,
    /// the shared count is never below what the disk holds, and no entry is left half
    /// made or half removed.
    #[test]
    fn threads_hammering_one_cache_keep_the_bound_and_leave_no_orphans() {
        let dir = tempfile::tempdir().unwrap();
        let budget = 12 * BLOCK;
        let cache = DiskCache::open(&config(dir.path(), budget)).unwrap();
        let root = cache.root().to_path_buf();
        let worst = AtomicU64::new(0);
        let running = AtomicBool::new(true);
        /// Stops the watcher however the workers end (a failed one too).
        struct Stop<'a>(&'a AtomicBool);
        impl Drop for Stop<'_> {
            fn drop(&mut self) {
                self.0.store(false, Ordering::Release);
            }
        }
        std::thread::scope(|s| {
            let watcher = s.spawn(|| {
                while running.load(Ordering::Acquire) {
                    worst.fetch_max(settled_on_disk(&cache), Ordering::AcqRel);
                    std::thread::yield_now();
                }
            });
            let stop = Stop(&running);
            let workers: Vec<_> = (0..2u64)
                .map(|t| {
                    let (cache, worst) = (&cache, &worst);
                    s.spawn(move || {
                        for i in 0..400u64 {
                            // Keys the two threads share, each always of one size.
                            let n = (i * 7 + t * 13) % 30;
                            let size = (1 + n % 3) * BLOCK - (n % 5) * 1000;
                            let k = key(fragment(&format!("f{n}")), "a");
                            if let Some(e) = cache.entry(&k, size).unwrap() {
                                fill(&e, cache);
                            }
                            worst.fetch_max(settled_on_disk(cache), Ordering::AcqRel);
                        }
                    })
                })
                .collect();
            let ended: Vec<_> = workers.into_iter().map(|w| w.join()).collect();
            drop(stop);
            watcher.join().unwrap();
            for e in ended {
                e.unwrap();
            }
        });
        assert!(cache.settle(SETTLED));
        let worst = worst.into_inner();
        assert!(worst <= budget, "{worst} bytes on disk, bound {budget}");
        assert!(cache.evictions() > 0, "the cache was never full");
        assert!(
            cache.used() >= on_disk(&root),
            "counted {} bytes, {} on disk",
            cache.used(),
            on_disk(&root)
        );
        assert_eq!(orphans(&root), Vec::<PathBuf>::new());
    }

    /// Two openings of one folder (as two daemons: each its own lock file, its own
    /// thread) share one count: together they stay within the bound.
    #[test]
    fn two_caches_on_one_folder_share_the_bound() {
        let dir = tempfile::tempdir().unwrap();
        let budget = 10 * BLOCK;
        let one = DiskCache::open(&config(dir.path(), budget)).unwrap();
        let two = DiskCache::open(&config(dir.path(), budget)).unwrap();
        for i in 0..12 {
            let cache = [&one, &two][i % 2];
            let k = key(fragment(&format!("f{i}")), "a");
            if let Some(e) = cache.entry(&k, 2 * BLOCK).unwrap() {
                fill(&e, cache);
            }
            let used = on_disk(one.root());
            assert!(used <= budget, "{used} bytes on disk, bound {budget}");
        }
        assert!(one.settle(SETTLED) && two.settle(SETTLED));
        assert!(one.evictions() + two.evictions() > 0);
        assert_eq!(one.used(), two.used());
    }

    /// A link planted in place of an entry's data or index file is not followed: its
    /// target stays as it was, and the entry is made anew beside it, its bytes right.
    #[test]
    fn links_planted_in_place_of_entry_files_are_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let k = key(fragment("f"), "a");
        let size = 2 * BLOCK + 10;
        let base = {
            let cache = DiskCache::open(&config(dir.path(), 1 << 30)).unwrap();
            let e = cache.entry(&k, size).unwrap().unwrap();
            assert!(fill(&e, &cache));
            e.base().to_path_buf()
        };
        for (i, part) in [entry::data_path(&base), entry::index_path(&base)]
            .iter()
            .enumerate()
        {
            let target = outside.path().join(format!("target{i}"));
            let precious = vec![i as u8 + 1; size as usize];
            std::fs::write(&target, &precious).unwrap();
            std::fs::remove_file(part).unwrap();
            std::os::unix::fs::symlink(&target, part).unwrap();
            let cache = DiskCache::open(&config(dir.path(), 1 << 30)).unwrap();
            let e = cache.entry(&k, size).unwrap().unwrap();
            assert!(!e.is_complete(), "{}: made anew", part.display());
            assert!(fill(&e, &cache));
            assert_eq!(cached_bytes(&e), vec![7; size as usize]);
            assert!(!std::fs::symlink_metadata(part)
                .unwrap()
                .file_type()
                .is_symlink());
            assert_eq!(std::fs::read(&target).unwrap(), precious, "target written");
        }
        // The folder's own files: a link there is replaced, its target left alone.
        let target = outside.path().join("lock-target");
        std::fs::write(&target, b"precious").unwrap();
        for own in ["lock", "usage", "writers"] {
            let path = dir.path().join(own);
            std::fs::remove_file(&path).unwrap();
            std::os::unix::fs::symlink(&target, &path).unwrap();
        }
        let cache = DiskCache::open(&config(dir.path(), 1 << 30)).unwrap();
        let e = cache.entry(&k, size).unwrap().unwrap();
        assert_eq!(cached_bytes(&e), vec![7; size as usize]);
        assert_eq!(std::fs::read(&target).unwrap(), b"precious");
    }

    /// Another version of a fragment (rewritten in place) is another key in the same
    /// place: its old bytes are not served, and the entry is made anew.
    #[test]
    fn a_fragment_of_another_version_is_made_anew() {
        let dir = tempfile::tempdir().unwrap();
        let cache = DiskCache::open(&config(dir.path(), 1 << 30)).unwrap();
        let at = |version: &str| {
            key(
                CacheScope::Fragment {
                    name: "__1_1_a_22".into(),
                    version: version.into(),
                },
                "a",
            )
        };
        let old = cache.entry(&at("size 10 mtime 1.0"), 100).unwrap().unwrap();
        assert!(fill(&old, &cache));
        let new = cache.entry(&at("size 12 mtime 2.0"), 100).unwrap().unwrap();
        assert_eq!(old.base(), new.base());
        assert!(!new.is_complete(), "the old version's bytes served");
        assert!(old.is_retired());
    }

    /// Decoded bytes are kept only by a build that can be told apart (its executable
    /// read); an object's bytes as fetched are kept whatever the build.
    #[test]
    fn a_build_without_an_identity_keeps_no_decoded_bytes() {
        let id = Some("fragfs 1.0 0badc0de-123");
        for scope in [fragment("f"), CacheScope::State("s".into())] {
            assert!(keeps(&scope, id));
            assert!(!keeps(&scope, None), "{scope:?}");
        }
        assert!(keeps(&CacheScope::Object("size 1 etag e".into()), None));
        assert!(build_id().is_some(), "the test executable is readable");
    }

    #[test]
    fn vacuumed_fragments_are_dropped_and_states_kept() {
        let dir = tempfile::tempdir().unwrap();
        let cache = DiskCache::open(&config(dir.path(), 1 << 30)).unwrap();
        let kept = cache
            .entry(&key(fragment("__1_1_a_22"), "a"), 100)
            .unwrap()
            .unwrap();
        let gone = cache
            .entry(&key(fragment("__2_2_b_22"), "a"), 100)
            .unwrap()
            .unwrap();
        let state = cache
            .entry(&key(CacheScope::State("s".into()), "a"), 100)
            .unwrap()
            .unwrap();
        for e in [&kept, &gone, &state] {
            fill(e, &cache);
        }
        let before = cache.used();
        let live = HashSet::from(["__1_1_a_22".to_string()]);
        cache.retain_fragments("/arrays/a", &live).unwrap();
        assert!(gone.is_retired() && !gone.base().parent().unwrap().exists());
        assert!(!kept.is_retired() && entry::data_path(kept.base()).exists());
        assert!(entry::data_path(state.base()).exists());
        assert!(cache.used() < before, "the dropped bytes are given back");
        // Another array's fragments are not touched by this array's list.
        cache
            .retain_fragments("/arrays/other", &HashSet::new())
            .unwrap();
        assert!(entry::data_path(kept.base()).exists());
    }

    #[test]
    fn decrypted_bytes_are_kept_only_when_asked() {
        let dir = tempfile::tempdir().unwrap();
        let mut k = key(fragment("f"), "a");
        k.decrypted = true;
        let cache = DiskCache::open(&config(dir.path(), 1 << 20)).unwrap();
        assert!(cache.entry(&k, 10).unwrap().is_none());
        let mut c = config(dir.path(), 1 << 20);
        c.decrypted = true;
        let cache = DiskCache::open(&c).unwrap();
        assert!(cache.entry(&k, 10).unwrap().is_some());
    }

    /// Objects live apart from the arrays' decoded files, one entry per version, under
    /// a key that does not name the build (raw bytes do not depend on the decoder).
    #[test]
    fn object_entries_are_per_version_and_not_per_build() {
        let dir = tempfile::tempdir().unwrap();
        let cache = DiskCache::open(&config(dir.path(), 1 << 30)).unwrap();
        let object = |version: &str| CacheKey {
            array: "http://127.0.0.1:9000 s3://b".into(),
            scope: CacheScope::Object(version.into()),
            file: "a/__fragments/f/a0.tdb".into(),
            decrypted: false,
        };
        let one = cache
            .entry(&object("size 100 etag e1"), 100)
            .unwrap()
            .unwrap();
        let two = cache
            .entry(&object("size 100 etag e2"), 100)
            .unwrap()
            .unwrap();
        assert_ne!(one.base(), two.base());
        assert!(one.base().starts_with(cache.root().join(OBJECTS)));
        fill(&one, &cache);
        let index = std::fs::read(entry::index_path(one.base())).unwrap();
        let text = String::from_utf8_lossy(&index);
        assert!(text.contains("version size 100 etag e1"), "{text}");
        assert!(!text.contains(build_id().unwrap()), "{text}");
        // An array's vacuum list does not reach the objects of its store.
        cache
            .retain_fragments("http://127.0.0.1:9000 s3://b", &HashSet::new())
            .unwrap();
        assert!(!one.is_retired() && entry::data_path(one.base()).exists());
        // Opened again: the same entry, its bytes there.
        drop((one, two));
        let cache = DiskCache::open(&config(dir.path(), 1 << 30)).unwrap();
        let again = cache
            .entry(&object("size 100 etag e1"), 100)
            .unwrap()
            .unwrap();
        assert!(again.is_complete());
    }

    #[test]
    fn fragment_names_that_are_not_plain_are_digested() {
        assert_eq!(folder_name("__1_2_ab_22"), "__1_2_ab_22");
        for odd in ["..", "a/b", "", ".hidden"] {
            let f = folder_name(odd);
            assert!(f.starts_with('h') && f.len() == 33, "{odd:?} -> {f}");
        }
    }
}
