//! The persistent cache of decoded bytes (`--cache-dir`): what a mount decoded once is
//! kept on local disk, across mounts, and served from there (by FUSE passthrough when
//! the kernel allows) without decoding again.
//!
//! Why it can be kept forever: a committed fragment never changes (new data is a new
//! fragment with a unique name; vacuuming only removes), so a fragment's decoded file is
//! a function of (array, fragment name, file); a merged file is a function of the state
//! it shows (the schema, the visible fragments and the deletes applied), which
//! [`CacheScope::State`] names in full. Keys also carry the build of fragfs that decoded
//! them ([`build_id`]): a fixed decoder never serves what an older one produced.
//!
//! Objects of object storage are kept here too, as they were fetched (raw, before any
//! decoding): an object's bytes are a function of its store, key and version (its ETag),
//! which [`CacheScope::Object`] names, so they are kept whatever build of fragfs reads
//! them (see `storage/s3/disk.rs`).
//!
//! On disk, under the cache folder (made 0700, with a `CACHEDIR.TAG`):
//! `v1/<array>/fragments/<fragment>/<file>.{data,idx}`,
//! `v1/<array>/states/<state>/<file>.{data,idx}` and
//! `v1/objects/<store>/<object>.{data,idx}`, where `<array>`, `<state>`, `<file>`,
//! `<store>` and `<object>` are digests of the full key text, which each index also
//! holds and is checked against (see [`entry`]). Per-fragment folders are named after
//! the fragment, so the entries of a vacuumed fragment are dropped as one folder
//! ([`DiskCache::retain_fragments`]); objects go by least recent use only.
//!
//! Bounds: the cache stays within its size (least recently used entries go first; an
//! entry's last use is its index's modification time) and never brings the disk's free
//! space under a floor ([`free_space_floor`]). Several daemons may share one folder:
//! making and removing entries is done under an exclusive lock of `lock` in the folder,
//! and the bytes of a key are the same whoever decodes them, so two writers of one block
//! write the same bytes.

pub mod entry;

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use sha2::{Digest, Sha256};

use crate::error::{Error, Place, Result};
pub use entry::{Entry, ReadOutcome, BLOCK};

/// The layout version: a folder of another layout beside it is left alone.
const LAYOUT: &str = "v1";
/// The default size: this fraction of the free space when the cache opens...
const DEFAULT_FRACTION: u64 = 10;
/// ...but at most this much.
const DEFAULT_MAX: u64 = 10 << 30;
/// Entries kept open at once (two descriptors each); more are reopened on need.
const OPEN_ENTRIES: usize = 256;
/// The folder of object entries, beside the arrays' folders (digests, never this name).
const OBJECTS: &str = "objects";

/// What a cached file is: the array it belongs to, the scope that fixes its bytes, and
/// the file's path inside that scope.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CacheKey {
    /// The array's identity: its canonical location (a folder's absolute path, an
    /// `s3://bucket/prefix`); for an object, its store (endpoint and bucket).
    pub array: String,
    pub scope: CacheScope,
    /// The file inside the scope, as the tree shows it (`a/data.bin`, `zarr/a/c/0/0`);
    /// for an object, its key in the bucket.
    pub file: String,
    /// Whether these bytes were decrypted (only cached with `--cache-decrypted`).
    pub decrypted: bool,
}

/// What fixes a cached file's bytes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum CacheScope {
    /// A fragment, by its folder name: its files never change.
    Fragment(String),
    /// A merged state, described in full (timestamp, schema, visible fragments, deletes):
    /// the same text is the same bytes.
    State(String),
    /// An object of object storage as fetched, by its version (`etag "..."`, or its size
    /// and modification time where the listing gives no ETag): another version of the
    /// key is another entry, so bytes of a rewritten object are never served for it.
    /// Raw bytes do not depend on the decoder: the key does not carry the build.
    Object(String),
}

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

/// The cache folder, opened.
pub struct DiskCache {
    root: PathBuf,
    budget: u64,
    floor: u64,
    decrypted: bool,
    /// Held (exclusively) while entries are made or removed.
    lock: File,
    /// Bytes the folder holds, as of the last scan plus what was admitted since.
    used: AtomicU64,
    open: Mutex<OpenEntries>,
    /// Said once: the free-space floor stopped a write.
    floor_reached: AtomicBool,
}

#[derive(Default)]
struct OpenEntries {
    tick: u64,
    map: HashMap<PathBuf, (u64, Arc<Entry>)>,
}

fn io(path: &Path, e: std::io::Error) -> Error {
    Error::io(Place::file(path.display().to_string()), e)
}

fn hex_digest(text: &str) -> String {
    let d = Sha256::digest(text.as_bytes());
    d[..16].iter().map(|b| format!("{b:02x}")).collect()
}

/// An identity of this fragfs executable (a CRC of its bytes with its size and
/// version): decoded bytes are only served to the build that decoded them.
pub fn build_id() -> &'static str {
    static ID: OnceLock<String> = OnceLock::new();
    ID.get_or_init(|| {
        let exe = std::env::current_exe().and_then(std::fs::read);
        match exe {
            Ok(bytes) => format!(
                "fragfs {} {:08x}-{}",
                env!("CARGO_PKG_VERSION"),
                crc32fast::hash(&bytes),
                bytes.len()
            ),
            // No executable to read (a sandbox): the version alone.
            Err(_) => format!("fragfs {}", env!("CARGO_PKG_VERSION")),
        }
    })
}

/// Free bytes of the file system holding `path`, for an unprivileged writer.
fn free_space(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a NUL-terminated path that outlives the call and `s` is a
    // properly sized, writable statvfs (all-zero is a valid value of this plain C struct).
    let rc = unsafe { libc::statvfs(c.as_ptr(), &mut s) };
    (rc == 0).then(|| {
        let unit = s.f_frsize as u64;
        (s.f_bavail as u64 * unit, s.f_blocks as u64 * unit)
    })
}

/// The free space the cache always leaves on its file system: 5% of it, at most 1 GiB.
pub fn free_space_floor(total: u64) -> u64 {
    (total / 20).min(1 << 30)
}

/// A fragment folder name usable as a folder of the cache as it is; others are digested.
fn folder_name(name: &str) -> String {
    let plain = !name.is_empty()
        && !name.starts_with('.')
        && name.len() <= 200
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.');
    if plain {
        name.to_string()
    } else {
        format!("h{}", hex_digest(name))
    }
}

impl DiskCache {
    /// Opens (making it, 0700) the cache folder.
    pub fn open(config: &CacheConfig) -> Result<DiskCache> {
        let dir = &config.dir;
        if !dir.exists() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(|e| io(dir, e))?;
        }
        let meta = std::fs::metadata(dir).map_err(|e| io(dir, e))?;
        if !meta.is_dir() {
            return Err(Error::NotDirectory(dir.display().to_string()));
        }
        if meta.mode() & 0o077 != 0 {
            log::warn!(
                "disk cache: {} is readable by others (mode {:o}): decoded bytes are kept there",
                dir.display(),
                meta.mode() & 0o777
            );
        }
        let tag = dir.join("CACHEDIR.TAG");
        if !tag.exists() {
            let _ = std::fs::write(
                &tag,
                "Signature: 8a477f597d28d172789f06886806bc55\n\
                 # The decoded-bytes cache of fragfs (--cache-dir): safe to delete.\n",
            );
        }
        let root = dir.join(LAYOUT);
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&root)
            .map_err(|e| io(&root, e))?;
        let lock_path = dir.join("lock");
        let lock = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&lock_path)
            .map_err(|e| io(&lock_path, e))?;
        let (free, total) = free_space(dir).unwrap_or((0, 0));
        let budget = config
            .size
            .unwrap_or_else(|| (free / DEFAULT_FRACTION).min(DEFAULT_MAX));
        let cache = DiskCache {
            root,
            budget,
            floor: free_space_floor(total),
            decrypted: config.decrypted,
            lock,
            used: AtomicU64::new(0),
            open: Mutex::new(OpenEntries::default()),
            floor_reached: AtomicBool::new(false),
        };
        let used = cache
            .locked(|| Ok(cache.scan()))?
            .iter()
            .map(|e| e.bytes)
            .sum();
        cache.used.store(used, Ordering::Release);
        Ok(cache)
    }

    pub fn budget(&self) -> u64 {
        self.budget
    }

    pub fn floor(&self) -> u64 {
        self.floor
    }

    /// Bytes the cache folder holds (as of the last scan, plus what was kept since).
    pub fn used(&self) -> u64 {
        self.used.load(Ordering::Acquire)
    }

    /// Where the entries live.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Whether a file with this key may be kept at all.
    pub fn admits(&self, key: &CacheKey) -> bool {
        !key.decrypted || self.decrypted
    }

    fn array_folder(&self, array: &str) -> PathBuf {
        self.root
            .join(hex_digest(&format!("{}\n{array}", build_id())))
    }

    fn base_of(&self, key: &CacheKey) -> PathBuf {
        let scope = match &key.scope {
            CacheScope::Fragment(name) => self
                .array_folder(&key.array)
                .join("fragments")
                .join(folder_name(name)),
            CacheScope::State(state) => self
                .array_folder(&key.array)
                .join("states")
                .join(hex_digest(state)),
            CacheScope::Object(version) => {
                let object = hex_digest(&format!("{}\n{version}", key.file));
                return self
                    .root
                    .join(OBJECTS)
                    .join(hex_digest(&key.array))
                    .join(object);
            }
        };
        scope.join(hex_digest(&key.file))
    }

    fn key_text(key: &CacheKey) -> String {
        let scope = match &key.scope {
            CacheScope::Fragment(name) => format!("fragment {name}"),
            CacheScope::State(state) => format!("state {state}"),
            CacheScope::Object(version) => {
                return format!(
                    "object\nstore {}\nkey {}\nversion {version}\n",
                    key.array, key.file
                )
            }
        };
        format!(
            "{}\narray {}\n{scope}\nfile {}\n",
            build_id(),
            key.array,
            key.file
        )
    }

    fn locked<T>(&self, f: impl FnOnce() -> Result<T>) -> Result<T> {
        self.lock
            .lock()
            .map_err(|e| io(&self.root.join("../lock"), e))?;
        let out = f();
        let _ = self.lock.unlock();
        out
    }

    /// The entry of the file `key` names, `size` bytes long: opened, or made empty.
    /// `None` when the key is not to be kept (decrypted bytes without
    /// `--cache-decrypted`) or the file is larger than the whole cache.
    pub fn entry(&self, key: &CacheKey, size: u64) -> Result<Option<Arc<Entry>>> {
        if !self.admits(key) || size > self.budget {
            return Ok(None);
        }
        let base = self.base_of(key);
        if let Some(e) = self.open_entry(&base, Some(size)) {
            return Ok(Some(e));
        }
        let text = Self::key_text(key);
        let entry = match Entry::open(&base, &text, size)? {
            Some(e) => e,
            // Room for the index first (its bytes count like the data's).
            None if !self.admit(entry::index_len(&text, size).next_multiple_of(4096)) => {
                return Ok(None)
            }
            None => self.locked(|| {
                // Another daemon may have made it while this one waited for the lock.
                if let Some(e) = Entry::open(&base, &text, size)? {
                    return Ok(e);
                }
                if let Some(parent) = base.parent() {
                    std::fs::DirBuilder::new()
                        .recursive(true)
                        .mode(0o700)
                        .create(parent)
                        .map_err(|e| io(parent, e))?;
                }
                Entry::create(&base, &text, size)
            })?,
        };
        Ok(Some(self.keep_open(base, entry)))
    }

    /// The entry of the file `key` names if the cache holds one, at the size its index
    /// records; never made: for work ahead of a reader (checking the file it is likely
    /// to open next), which must not fill the cache with empty entries.
    pub fn existing_entry(&self, key: &CacheKey) -> Option<Arc<Entry>> {
        if !self.admits(key) {
            return None;
        }
        let base = self.base_of(key);
        if let Some(e) = self.open_entry(&base, None) {
            return Some(e);
        }
        let size = entry::recorded_size(&base)?;
        let entry = Entry::open(&base, &Self::key_text(key), size).ok()??;
        Some(self.keep_open(base, entry))
    }

    /// The entry at `base` if this process has it open (of `size` bytes, when given).
    fn open_entry(&self, base: &Path, size: Option<u64>) -> Option<Arc<Entry>> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        open.tick += 1;
        let tick = open.tick;
        let (t, e) = open.map.get_mut(base)?;
        if size.is_some_and(|s| s != e.size()) || e.is_retired() {
            return None;
        }
        *t = tick;
        Some(e.clone())
    }

    /// Keeps `entry` among the open ones (closing the least recently used beyond
    /// [`OPEN_ENTRIES`]). If another thread opened the same entry meanwhile, that one is
    /// kept and returned: every user of an entry shares its state (which blocks it
    /// holds, whether it was checked).
    fn keep_open(&self, base: PathBuf, entry: Entry) -> Arc<Entry> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        open.tick += 1;
        let tick = open.tick;
        if let Some((t, e)) = open.map.get_mut(&base) {
            if e.size() == entry.size() && !e.is_retired() {
                *t = tick;
                return e.clone();
            }
        }
        let entry = Arc::new(entry);
        open.map.insert(base, (tick, entry.clone()));
        if open.map.len() > OPEN_ENTRIES {
            if let Some(oldest) = open
                .map
                .iter()
                .min_by_key(|(_, (t, _))| *t)
                .map(|(p, _)| p.clone())
            {
                open.map.remove(&oldest);
            }
        }
        entry
    }

    /// Whether `bytes` more may be written now: makes room by evicting the least
    /// recently used entries when the cache would exceed its size; false when the file
    /// system's free space would fall under the floor.
    pub fn admit(&self, bytes: u64) -> bool {
        if bytes > self.budget {
            return false;
        }
        let used = self.used.fetch_add(bytes, Ordering::AcqRel) + bytes;
        if used > self.budget {
            let target = (self.budget - self.budget / 10).min(self.budget - bytes);
            if let Err(e) = self.evict_to(target) {
                log::warn!("disk cache: evicting: {e}");
            }
            self.used.fetch_add(bytes, Ordering::AcqRel);
        }
        match free_space(&self.root) {
            Some((free, _)) if free >= self.floor.saturating_add(bytes) => true,
            _ => {
                self.used.fetch_sub(bytes, Ordering::AcqRel);
                if !self.floor_reached.swap(true, Ordering::AcqRel) {
                    log::warn!(
                        "disk cache: {}: under {} MiB free on its file system: not caching more \
                         until space is freed",
                        self.root.display(),
                        self.floor >> 20
                    );
                }
                false
            }
        }
    }

    /// Every entry of the folder with its size on disk and last use.
    fn scan(&self) -> Vec<Scanned> {
        let mut out = Vec::new();
        let mut stack = vec![self.root.clone()];
        while let Some(dir) = stack.pop() {
            let Ok(read) = std::fs::read_dir(&dir) else {
                continue;
            };
            let mut files: HashMap<PathBuf, Scanned> = HashMap::new();
            for item in read.flatten() {
                let path = item.path();
                let Ok(meta) = item.metadata() else { continue };
                if meta.is_dir() {
                    stack.push(path);
                    continue;
                }
                let name = item.file_name().to_string_lossy().into_owned();
                let Some((stem, suffix)) = name.split_once('.') else {
                    continue;
                };
                let s = files.entry(dir.join(stem)).or_insert_with(|| Scanned {
                    base: dir.join(stem),
                    bytes: 0,
                    used_at: 0,
                });
                s.bytes += meta.blocks() * 512;
                if suffix == "idx" {
                    s.used_at = meta.mtime() as u64 * 1_000_000_000 + meta.mtime_nsec() as u64;
                }
            }
            out.extend(files.into_values());
        }
        out
    }

    /// Removes least recently used entries until the folder holds at most `target`
    /// bytes (and the entries of this process that were removed store nothing more).
    fn evict_to(&self, target: u64) -> Result<()> {
        self.locked(|| {
            let mut all = self.scan();
            let mut used: u64 = all.iter().map(|e| e.bytes).sum();
            all.sort_by_key(|e| e.used_at);
            let mut removed = 0;
            for e in all {
                if used <= target {
                    break;
                }
                self.remove_entry(&e.base);
                used -= e.bytes;
                removed += 1;
            }
            if removed > 0 {
                log::info!("disk cache: evicted {removed} least recently used files");
            }
            self.used.store(used, Ordering::Release);
            Ok(())
        })
    }

    /// Removes one entry: its index first (so the bytes stop counting as valid), then
    /// its data.
    fn remove_entry(&self, base: &Path) {
        let _ = std::fs::remove_file(entry::index_path(base));
        let _ = std::fs::remove_file(entry::data_path(base));
        if let Some((_, e)) = self
            .open
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .map
            .remove(base)
        {
            e.retire();
        }
        if let Some(parent) = base.parent() {
            // Gone only when empty.
            let _ = std::fs::remove_dir(parent);
        }
    }

    /// What the cache holds of `array`, for `fragfs info`.
    pub fn summary(&self, array: &str) -> ArraySummary {
        let mut out = ArraySummary::default();
        let mut stack = vec![self.array_folder(array)];
        while let Some(dir) = stack.pop() {
            for item in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let path = item.path();
                if path.is_dir() {
                    stack.push(path);
                } else if path.extension().is_some_and(|e| e == "idx") {
                    if let Some((size, valid, blocks)) = entry::index_summary(&path) {
                        out.files += 1;
                        out.complete += u64::from(valid == blocks);
                        out.bytes += (valid * BLOCK).min(size);
                    }
                }
            }
        }
        out
    }

    /// Drops the entries of `array`'s fragments that are not in `live` (vacuumed).
    pub fn retain_fragments(&self, array: &str, live: &HashSet<String>) -> Result<()> {
        let dir = self.array_folder(array).join("fragments");
        let Ok(read) = std::fs::read_dir(&dir) else {
            return Ok(());
        };
        let keep: HashSet<String> = live.iter().map(|n| folder_name(n)).collect();
        let gone: Vec<PathBuf> = read
            .flatten()
            .filter(|i| !keep.contains(&*i.file_name().to_string_lossy()))
            .map(|i| i.path())
            .collect();
        if gone.is_empty() {
            return Ok(());
        }
        self.locked(|| {
            for folder in &gone {
                let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
                open.map.retain(|base, (_, e)| {
                    let inside = base.starts_with(folder);
                    if inside {
                        e.retire();
                    }
                    !inside
                });
                drop(open);
                let freed: u64 = std::fs::read_dir(folder)
                    .map(|r| {
                        r.flatten()
                            .filter_map(|i| i.metadata().ok())
                            .map(|m| m.blocks() * 512)
                            .sum()
                    })
                    .unwrap_or(0);
                if std::fs::remove_dir_all(folder).is_ok() {
                    let _ = self
                        .used
                        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |u| {
                            Some(u.saturating_sub(freed))
                        });
                }
            }
            log::info!(
                "disk cache: dropped the files of {} vacuumed fragments of {array}",
                gone.len()
            );
            Ok(())
        })
    }
}

/// What the cache holds of one array.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ArraySummary {
    /// Files with an entry, and those of them complete.
    pub files: u64,
    pub complete: u64,
    /// Bytes of those files in the cache (about: a file's last block counts whole).
    pub bytes: u64,
}

struct Scanned {
    base: PathBuf,
    bytes: u64,
    used_at: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(scope: CacheScope, file: &str) -> CacheKey {
        CacheKey {
            array: "/arrays/a".into(),
            scope,
            file: file.into(),
            decrypted: false,
        }
    }

    fn fill(e: &Entry, cache: &DiskCache) {
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
    }

    fn config(dir: &Path, size: u64) -> CacheConfig {
        CacheConfig {
            dir: dir.to_path_buf(),
            size: Some(size),
            decrypted: false,
        }
    }

    fn on_disk(root: &Path) -> u64 {
        let mut total = 0;
        let mut stack = vec![root.to_path_buf()];
        while let Some(d) = stack.pop() {
            for i in std::fs::read_dir(&d).unwrap().flatten() {
                let m = i.metadata().unwrap();
                if m.is_dir() {
                    stack.push(i.path());
                } else {
                    total += m.blocks() * 512;
                }
            }
        }
        total
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

    #[test]
    fn least_recently_used_files_go_first_and_the_bound_holds() {
        let dir = tempfile::tempdir().unwrap();
        let budget = 8 * BLOCK;
        let cache = DiskCache::open(&config(dir.path(), budget)).unwrap();
        let mut entries = Vec::new();
        for i in 0..6 {
            let e = cache
                .entry(&key(CacheScope::Fragment(format!("f{i}")), "a"), 2 * BLOCK)
                .unwrap()
                .unwrap();
            fill(&e, &cache);
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
        // The newest files are kept, the oldest went.
        assert!(entries[5].is_complete() && !entries[5].is_retired());
        assert!(entries[0].is_retired());
        assert!(!entry::index_path(entries[0].base()).exists());
        // A file larger than the whole cache is not kept at all.
        let big = key(CacheScope::Fragment("big".into()), "a");
        assert!(cache.entry(&big, budget + 1).unwrap().is_none());
    }

    #[test]
    fn vacuumed_fragments_are_dropped_and_states_kept() {
        let dir = tempfile::tempdir().unwrap();
        let cache = DiskCache::open(&config(dir.path(), 1 << 30)).unwrap();
        let kept = cache
            .entry(&key(CacheScope::Fragment("__1_1_a_22".into()), "a"), 100)
            .unwrap()
            .unwrap();
        let gone = cache
            .entry(&key(CacheScope::Fragment("__2_2_b_22".into()), "a"), 100)
            .unwrap()
            .unwrap();
        let state = cache
            .entry(&key(CacheScope::State("s".into()), "a"), 100)
            .unwrap()
            .unwrap();
        for e in [&kept, &gone, &state] {
            fill(e, &cache);
        }
        let live = HashSet::from(["__1_1_a_22".to_string()]);
        cache.retain_fragments("/arrays/a", &live).unwrap();
        assert!(gone.is_retired() && !gone.base().parent().unwrap().exists());
        assert!(!kept.is_retired() && entry::data_path(kept.base()).exists());
        assert!(entry::data_path(state.base()).exists());
        // Another array's fragments are not touched by this array's list.
        cache
            .retain_fragments("/arrays/other", &HashSet::new())
            .unwrap();
        assert!(entry::data_path(kept.base()).exists());
    }

    #[test]
    fn decrypted_bytes_are_kept_only_when_asked() {
        let dir = tempfile::tempdir().unwrap();
        let mut k = key(CacheScope::Fragment("f".into()), "a");
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
        assert!(!text.contains(build_id()), "{text}");
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
