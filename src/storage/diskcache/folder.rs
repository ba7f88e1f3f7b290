//! The cache folder as the cache and its eviction thread share it: where an entry of a
//! key lives, opening and making entries under the folder's lock, the entries kept open,
//! room within the bound and the free-space floor, removal, and per-array summaries.

use std::collections::{HashMap, HashSet};
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use sha2::{Digest, Sha256};

use super::entry::{self, Entry, BLOCK};
use super::evictions::Evictions;
use super::key::{build_id, keeps, CacheKey, CacheScope};
use super::lock::FolderLock;
use super::usage::{Room, Usage};
use crate::error::{Error, Place, Result};

/// The layout version: a folder of another layout beside it is left alone. v2: a
/// fragment's key names its metadata file's version, and the folder keeps its usage.
pub const LAYOUT: &str = "v2";
/// The default size: this fraction of the free space when the cache opens...
pub(crate) const DEFAULT_FRACTION: u64 = 10;
/// ...but at most this much.
pub(crate) const DEFAULT_MAX: u64 = 10 << 30;
/// Entries kept open at once (two descriptors each); more are reopened on need.
pub(crate) const OPEN_ENTRIES: usize = 256;
/// The folder of object entries, beside the arrays' folders (digests, never this name).
pub(crate) const OBJECTS: &str = "objects";
/// Counted for a new entry beyond its index: a page of the file system's own records of
/// where the data file's blocks are (an ext4 extent block), which `st_blocks` counts.
pub(crate) const ENTRY_OVERHEAD: u64 = 4096;

/// What the cache and its eviction thread share.
pub(crate) struct Folder {
    /// Itself, for the eviction thread it starts ([`Folder::evict_later`]).
    pub(crate) me: std::sync::Weak<Folder>,
    /// `DIR/v2`: where the entries live.
    pub(crate) root: PathBuf,
    pub(crate) budget: u64,
    pub(crate) floor: u64,
    pub(crate) decrypted: bool,
    /// Held while entries are made or removed and the count is changed.
    pub(crate) lock: FolderLock,
    /// The bytes the folder holds, shared by every daemon.
    pub(crate) usage: Usage,
    pub(crate) open: Mutex<OpenEntries>,
    /// Said once: the free-space floor stopped a write.
    pub(crate) floor_reached: AtomicBool,
    /// Said once: the count could not be changed.
    pub(crate) count_failed: AtomicBool,
    pub(crate) evictions: Evictions,
}

#[derive(Default)]
pub(crate) struct OpenEntries {
    tick: u64,
    map: HashMap<PathBuf, (u64, Arc<Entry>)>,
}

pub(crate) fn io(path: &Path, e: std::io::Error) -> Error {
    Error::io(Place::file(path.display().to_string()), e)
}

pub(crate) fn hex_digest(text: &str) -> String {
    let d = Sha256::digest(text.as_bytes());
    d[..16].iter().map(|b| format!("{b:02x}")).collect()
}

/// Free bytes of the file system holding `path`, for an unprivileged writer.
pub(crate) fn free_space(path: &Path) -> Option<(u64, u64)> {
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
pub(crate) fn folder_name(name: &str) -> String {
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
pub(crate) fn make_folder(dir: &Path) -> Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| io(dir, e))
}

/// Bytes a file takes on disk, as the bound counts them; 0 when it is not there. Never
/// follows a link (a planted link counts as the link).
pub(crate) fn on_disk(path: &Path) -> u64 {
    std::fs::symlink_metadata(path).map_or(0, |m| m.blocks() * 512)
}

impl Folder {
    pub(crate) fn admits(&self, key: &CacheKey) -> bool {
        (!key.decrypted || self.decrypted) && keeps(&key.scope, build_id())
    }

    /// The folder of an array's decoded files (`None` for a build without an
    /// identity, which keeps none).
    pub(crate) fn array_folder(&self, array: &str) -> Option<PathBuf> {
        Some(
            self.root
                .join(hex_digest(&format!("{}\n{array}", build_id()?))),
        )
    }

    pub(crate) fn base_of(&self, key: &CacheKey) -> Option<PathBuf> {
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

    pub(crate) fn key_text(key: &CacheKey) -> Option<String> {
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

    pub(crate) fn entry(&self, key: &CacheKey, size: u64) -> Result<Option<Arc<Entry>>> {
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

    pub(crate) fn existing_entry(&self, key: &CacheKey) -> Option<Arc<Entry>> {
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
    pub(crate) fn open_entry(
        &self,
        base: &Path,
        text: &str,
        size: Option<u64>,
    ) -> Option<Arc<Entry>> {
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
    pub(crate) fn keep_open(&self, base: PathBuf, entry: Entry) -> Arc<Entry> {
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
    pub(crate) fn room_for(&self, bytes: u64) -> Option<Room> {
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
    pub(crate) fn reserve(&self, bytes: u64) -> Result<bool> {
        let kept = self.usage.reserve(bytes, self.budget)?;
        if !kept {
            self.evict_later(bytes);
        }
        Ok(kept)
    }

    pub(crate) fn admit(&self, bytes: u64) -> Option<Room> {
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
    pub(crate) fn remove_entry(&self, base: &Path, more: &[PathBuf]) -> Result<()> {
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

    pub(crate) fn summary(&self, array: &str) -> ArraySummary {
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

    pub(crate) fn retain_fragments(&self, array: &str, live: &HashSet<String>) -> Result<()> {
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
