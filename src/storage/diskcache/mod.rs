//! The persistent cache of decoded bytes (`--cache-dir`): what a mount decoded once is
//! kept on local disk, across mounts, and served from there (by FUSE passthrough when
//! the kernel allows) without decoding again.
//!
//! Why it can be kept forever: a committed fragment never changes (new data is a new
//! fragment with a unique name; vacuuming only removes), so a fragment's decoded file is
//! a function of (array, fragment, file); a merged file is a function of the state it
//! shows (the schema, the visible fragments and the deletes applied), which
//! [`CacheScope::State`] names in full. A fragment is named by its folder name and by
//! the version of its metadata file ([`crate::storage::Store::version`]: size and
//! modification time on a local disk, the ETag on object storage), so a fragment
//! rewritten in place (restored from a backup) gets new keys and its old decoded bytes
//! are never served for it. Keys also carry the build of fragfs that decoded them
//! ([`build_id`]): a fixed decoder never serves what an older one produced, and a build
//! that cannot tell itself apart keeps no decoded bytes at all ([`keeps`]).
//!
//! Objects of object storage are kept here too, as they were fetched (raw, before any
//! decoding): an object's bytes are a function of its store, key and version (its ETag),
//! which [`CacheScope::Object`] names, so they are kept whatever build of fragfs reads
//! them (see `storage/s3/disk.rs`).
//!
//! On disk, under the cache folder (made 0700, with a `CACHEDIR.TAG`):
//! `v2/<array>/fragments/<fragment>/<file>.{data,idx}`,
//! `v2/<array>/states/<state>/<file>.{data,idx}` and
//! `v2/objects/<store>/<object>.{data,idx}`, where `<array>`, `<state>`, `<file>`,
//! `<store>` and `<object>` are digests of the full key text, which each index also
//! holds and is checked against (see [`entry`]). Per-fragment folders are named after
//! the fragment, so the entries of a vacuumed fragment are dropped as one folder
//! ([`DiskCache::retain_fragments`]); objects go by least recent use only. Beside
//! `v2/`: `lock`, `usage` and `writers` (see [`lock`] and [`usage`]).
//!
//! The folder must be the daemon's user's and writable by nobody else, and no file in
//! it is opened through a symbolic link ([`private`]): the daemon, often root, hands
//! these files to the kernel to serve.
//!
//! Bounds: the cache stays within its size, counted in the folder itself so that the
//! bound holds whatever number of daemons share it ([`usage`]); a write that finds it
//! full is refused room (its bytes are served, not kept) and wakes the eviction thread
//! ([`evict`]), which removes the least recently used entries (an entry's last use is
//! its index's modification time) off the read path. The cache never brings the disk's
//! free space under a floor ([`free_space_floor`]). Several daemons may share one
//! folder: entries are made and removed under the folder's lock ([`lock`]), and the
//! bytes of a key are the same whoever decodes them, so two writers of one block write
//! the same bytes.

pub mod entry;
mod evict;
mod lock;
pub mod private;
mod usage;
pub mod verify;

use std::collections::{HashMap, HashSet};
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::error::{Error, Place, Result};
pub use entry::{Entry, ReadOutcome, BLOCK};
use evict::Evictions;
use lock::FolderLock;
pub use usage::Room;
use usage::Usage;

/// The layout version: a folder of another layout beside it is left alone. v2: a
/// fragment's key names its metadata file's version, and the folder keeps its usage.
pub const LAYOUT: &str = "v2";
/// The default size: this fraction of the free space when the cache opens...
const DEFAULT_FRACTION: u64 = 10;
/// ...but at most this much.
const DEFAULT_MAX: u64 = 10 << 30;
/// Entries kept open at once (two descriptors each); more are reopened on need.
const OPEN_ENTRIES: usize = 256;
/// The folder of object entries, beside the arrays' folders (digests, never this name).
const OBJECTS: &str = "objects";
/// Counted for a new entry beyond its index: a page of the file system's own records of
/// where the data file's blocks are (an ext4 extent block), which `st_blocks` counts.
const ENTRY_OVERHEAD: u64 = 4096;

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
    /// A fragment, by its folder name and the version of its metadata file (see
    /// [`crate::storage::Store::version`]): a fragment's files never change, unless
    /// the fragment is rewritten in place (restored from a backup), which the version
    /// tells. Another version is another key, in the same place on disk: the entry of
    /// the old one is made anew when the new one is read.
    Fragment { name: String, version: String },
    /// A merged state, described in full (timestamp, schema, visible fragments with
    /// their versions, deletes): the same text is the same bytes.
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

/// The cache folder, opened. Its eviction thread (started on first need) ends with it.
pub struct DiskCache {
    folder: Arc<Folder>,
}

/// What the cache and its eviction thread share.
struct Folder {
    /// Itself, for the eviction thread it starts ([`Folder::evict_later`]).
    me: std::sync::Weak<Folder>,
    /// `DIR/v2`: where the entries live.
    root: PathBuf,
    budget: u64,
    floor: u64,
    decrypted: bool,
    /// Held while entries are made or removed and the count is changed.
    lock: FolderLock,
    /// The bytes the folder holds, shared by every daemon.
    usage: Usage,
    open: Mutex<OpenEntries>,
    /// Said once: the free-space floor stopped a write.
    floor_reached: AtomicBool,
    /// Said once: the count could not be changed.
    count_failed: AtomicBool,
    evictions: Evictions,
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
/// version): decoded bytes are only served to the build that decoded them. `None` when
/// the executable cannot be read (a sandbox, a deleted file): the version alone would
/// let two builds of one version (a fix made since) serve each other's bytes, so such a
/// build keeps no decoded bytes ([`keeps`]).
pub fn build_id() -> Option<&'static str> {
    static ID: OnceLock<Option<String>> = OnceLock::new();
    ID.get_or_init(|| {
        let exe = std::env::current_exe().and_then(std::fs::read);
        match exe {
            Ok(bytes) => Some(format!(
                "fragfs {} {:08x}-{}",
                env!("CARGO_PKG_VERSION"),
                crc32fast::hash(&bytes),
                bytes.len()
            )),
            Err(e) => {
                log::warn!(
                    "disk cache: this fragfs executable cannot be read ({e}): its build cannot \
                     be told from another of version {}, so no decoded bytes are cached",
                    env!("CARGO_PKG_VERSION")
                );
                None
            }
        }
    })
    .as_deref()
}

/// Whether bytes of `scope` may be kept by a build whose identity is `build`.
///
/// Decoded bytes (a fragment's or a state's files) depend on the decoder, so they are
/// kept only under a build that is told apart from every other ([`build_id`]). Objects
/// fetched from object storage are kept whatever the build: their bytes are the store's
/// as they came (still filtered, still encrypted), keyed by the object's version, and
/// no decoder made them; keeping them is what spares a later mount the requests.
pub fn keeps(scope: &CacheScope, build: Option<&str>) -> bool {
    matches!(scope, CacheScope::Object(_)) || build.is_some()
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

/// Makes `dir` and the folders above it that are missing, 0700.
fn make_folder(dir: &Path) -> Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| io(dir, e))
}

/// Bytes a file takes on disk, as the bound counts them; 0 when it is not there. Never
/// follows a link (a planted link counts as the link).
fn on_disk(path: &Path) -> u64 {
    std::fs::symlink_metadata(path).map_or(0, |m| m.blocks() * 512)
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

impl Folder {
    fn admits(&self, key: &CacheKey) -> bool {
        (!key.decrypted || self.decrypted) && keeps(&key.scope, build_id())
    }

    /// The folder of an array's decoded files (`None` for a build without an
    /// identity, which keeps none).
    fn array_folder(&self, array: &str) -> Option<PathBuf> {
        Some(
            self.root
                .join(hex_digest(&format!("{}\n{array}", build_id()?))),
        )
    }

    fn base_of(&self, key: &CacheKey) -> Option<PathBuf> {
        let scope = match &key.scope {
            CacheScope::Fragment { name, .. } => self
                .array_folder(&key.array)?
                .join("fragments")
                .join(folder_name(name)),
            CacheScope::State(state) => self
                .array_folder(&key.array)?
                .join("states")
                .join(hex_digest(state)),
            CacheScope::Object(version) => {
                let object = hex_digest(&format!("{}\n{version}", key.file));
                return Some(
                    self.root
                        .join(OBJECTS)
                        .join(hex_digest(&key.array))
                        .join(object),
                );
            }
        };
        Some(scope.join(hex_digest(&key.file)))
    }

    fn key_text(key: &CacheKey) -> Option<String> {
        let scope = match &key.scope {
            CacheScope::Fragment { name, version } => {
                format!("fragment {name}\nversion {version}")
            }
            CacheScope::State(state) => format!("state {state}"),
            CacheScope::Object(version) => {
                return Some(format!(
                    "object\nstore {}\nkey {}\nversion {version}\n",
                    key.array, key.file
                ))
            }
        };
        Some(format!(
            "{}\narray {}\n{scope}\nfile {}\n",
            build_id()?,
            key.array,
            key.file
        ))
    }

    fn entry(&self, key: &CacheKey, size: u64) -> Result<Option<Arc<Entry>>> {
        if !self.admits(key) || size > self.budget {
            return Ok(None);
        }
        let (Some(base), Some(text)) = (self.base_of(key), Self::key_text(key)) else {
            return Ok(None);
        };
        if let Some(e) = self.open_entry(&base, &text, Some(size)) {
            return Ok(Some(e));
        }
        // Opened or made under the lock: never while an eviction removes its files
        // (which it does under the lock too), so an entry is never opened half removed,
        // nor made while it is being removed.
        let entry = self.lock.hold(|| {
            if let Some(e) = Entry::open(&base, &text, size)? {
                return Ok(Some(e));
            }
            // Room for the index first (its bytes count like the data's).
            let need = entry::index_len(&text, size).next_multiple_of(4096) + ENTRY_OVERHEAD;
            let Some(_room) = self.room_for(need) else {
                return Ok(None);
            };
            if !self.reserve(need)? {
                return Ok(None);
            }
            // What was there (another key, damaged, a planted link) goes first.
            let made = self
                .remove_entry(&base, &[])
                .and_then(|()| base.parent().map_or(Ok(()), make_folder))
                .and_then(|()| Entry::create(&base, &text, size));
            if made.is_err() {
                let _ = self.usage.release(need);
            }
            made.map(Some)
        })?;
        Ok(entry.map(|e| self.keep_open(base, e)))
    }

    fn existing_entry(&self, key: &CacheKey) -> Option<Arc<Entry>> {
        if !self.admits(key) {
            return None;
        }
        let (base, text) = (self.base_of(key)?, Self::key_text(key)?);
        if let Some(e) = self.open_entry(&base, &text, None) {
            return Some(e);
        }
        let entry = self
            .lock
            .hold(|| match entry::recorded_size(&base) {
                Some(size) => Entry::open(&base, &text, size),
                None => Ok(None),
            })
            .ok()??;
        Some(self.keep_open(base, entry))
    }

    /// The entry at `base` if this process has it open, for key `text` (of `size`
    /// bytes, when given).
    fn open_entry(&self, base: &Path, text: &str, size: Option<u64>) -> Option<Arc<Entry>> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        open.tick += 1;
        let tick = open.tick;
        let (t, e) = open.map.get_mut(base)?;
        if size.is_some_and(|s| s != e.size()) || e.key() != text || e.is_retired() {
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
            if e.size() == entry.size() && e.key() == entry.key() && !e.is_retired() {
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

    /// Leave to count `bytes` (see [`Folder::reserve`]): `None` for more than the
    /// whole bound, while the folder is being counted, or when the file system's free
    /// space would fall under the floor.
    fn room_for(&self, bytes: u64) -> Option<Room> {
        if bytes > self.budget {
            return None;
        }
        match free_space(&self.root) {
            Some((free, _)) if free >= self.floor.saturating_add(bytes) => {}
            _ => {
                if !self.floor_reached.swap(true, Ordering::AcqRel) {
                    log::warn!(
                        "disk cache: {}: under {} MiB free on its file system: not caching more \
                         until space is freed",
                        self.root.display(),
                        self.floor >> 20
                    );
                }
                return None;
            }
        }
        self.usage.room()
    }

    /// Counts `bytes` more in the folder's usage if the bound leaves room; when not (or
    /// when there is no valid count), wakes the eviction thread. The caller holds the
    /// lock and a [`Room`].
    fn reserve(&self, bytes: u64) -> Result<bool> {
        let kept = self.usage.reserve(bytes, self.budget)?;
        if !kept {
            self.evict_later(bytes);
        }
        Ok(kept)
    }

    fn admit(&self, bytes: u64) -> Option<Room> {
        let room = self.room_for(bytes)?;
        match self.lock.hold(|| self.reserve(bytes)) {
            Ok(true) => Some(room),
            Ok(false) => None,
            Err(e) => {
                if !self.count_failed.swap(true, Ordering::AcqRel) {
                    log::warn!("disk cache: counting what it holds: {e}: not caching more");
                }
                None
            }
        }
    }

    /// Removes the entry at `base` (its index first, so the bytes stop counting as
    /// valid, then its data, then `more` of its files: an index left half made) and
    /// gives their bytes back to the count; this process's entry of it stores nothing
    /// more. The caller holds the lock.
    fn remove_entry(&self, base: &Path, more: &[PathBuf]) -> Result<()> {
        let index = entry::index_path(base);
        let data = entry::data_path(base);
        let mut freed = 0;
        for path in [&index, &data].into_iter().chain(more) {
            let bytes = on_disk(path);
            match std::fs::remove_file(path) {
                Ok(()) => freed += bytes,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(io(path, e)),
            }
        }
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
        if freed > 0 {
            self.usage.release(freed)?;
        }
        Ok(())
    }

    fn summary(&self, array: &str) -> ArraySummary {
        let mut out = ArraySummary::default();
        let Some(folder) = self.array_folder(array) else {
            return out;
        };
        let mut stack = vec![folder];
        while let Some(dir) = stack.pop() {
            for item in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let path = item.path();
                // The entry's own type: a link is never followed.
                let Ok(kind) = item.file_type() else { continue };
                if kind.is_dir() {
                    stack.push(path);
                } else if kind.is_file() && path.extension().is_some_and(|e| e == "idx") {
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

    fn retain_fragments(&self, array: &str, live: &HashSet<String>) -> Result<()> {
        let Some(folder) = self.array_folder(array) else {
            return Ok(());
        };
        let dir = folder.join("fragments");
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
        self.lock.hold(|| {
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
                // Neither follows a link: a link in the folder's place goes itself.
                let removed = match std::fs::symlink_metadata(folder) {
                    Ok(m) if m.is_dir() => std::fs::remove_dir_all(folder),
                    Ok(_) => std::fs::remove_file(folder),
                    Err(e) => Err(e),
                };
                if removed.is_ok() {
                    self.usage.release(freed)?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::File;
    use std::sync::atomic::AtomicU64;

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
