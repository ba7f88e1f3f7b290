//! A folder on a local file system.
//!
//! Files are read with positioned reads (`pread`) rather than memory maps: a file that is
//! truncated while mapped would kill the daemon with SIGBUS, while a short `pread` is an
//! ordinary error. Files are only ever opened read-only, never through a symbolic link (a
//! link inside an array could otherwise make fragfs serve any file the daemon can read,
//! say to other users of an `allow_other` mount), and with `O_NOATIME` where allowed.
//!
//! Open files are kept (a bounded set, least recently used first out), so reading a tile
//! costs one `pread`, not an `open` and an `fstat` first. Array files never change once
//! written, so a kept descriptor stays right; a deleted file stays readable through it,
//! which [`Store::pin`] relies on.

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use super::pins::{self, Pins};
use super::{check_key, join, past_end, Listed, Named, Pin, RangeRead, Store};
use crate::error::{Error, Place, Result};

/// Open files kept at most (fewer where the descriptor limit is low: see
/// [`pins::descriptor_budget`]). Far below the usual 1024-descriptor limit, which FUSE,
/// pinned files and the process need a share of too.
const KEPT_FILES: usize = 256;

/// The chunk-header walk's window: a read from the page cache costs about a microsecond,
/// while copying a whole tile to find its headers would copy every byte once more than
/// serving it does. A 4 KiB window holds the next header (and those of small chunks)
/// for the price of a small read (see [`Store::walk_window`]).
const WALK_WINDOW: u64 = 4 << 10;

/// An open, read-only file and its size when opened.
#[derive(Debug)]
struct OpenFile {
    file: File,
    len: u64,
}

#[derive(Debug, Default)]
struct Kept {
    files: HashMap<String, (Arc<OpenFile>, u64)>,
    tick: u64,
}

/// Files pinned open, their descriptors bounded.
type Pinned = Arc<Pins<Arc<OpenFile>>>;

#[derive(Debug)]
pub struct LocalStore {
    root: PathBuf,
    kept: Mutex<Kept>,
    /// How many files `kept` holds at most.
    keep: usize,
    pinned: Pinned,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// What a local path given on the command line is.
#[derive(Debug)]
pub enum LocalPath {
    /// A folder: the store rooted there.
    Folder(LocalStore),
    /// A file: the store of its folder, and its name there.
    File(LocalStore, String),
}

impl LocalStore {
    /// Opens a path that may be a folder (an array, a group, a Filo fragment) or a single
    /// file (a lone Filo chunk).
    pub fn open_path(path: &Path) -> Result<LocalPath> {
        let meta = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
        if !meta.is_file() {
            return LocalStore::open(path).map(LocalPath::Folder);
        }
        let parent = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        Ok(LocalPath::File(LocalStore::open(parent)?, name))
    }

    /// A store rooted at the folder `root`, which must exist.
    pub fn open(root: &Path) -> Result<LocalStore> {
        let meta = std::fs::metadata(root).map_err(|e| Error::io(root, e))?;
        if !meta.is_dir() {
            return Err(Error::NotDirectory(root.display().to_string()));
        }
        let (keep, pinned) = pins::descriptor_budget(KEPT_FILES);
        Ok(LocalStore {
            root: root.to_path_buf(),
            kept: Mutex::new(Kept::default()),
            keep,
            pinned: Arc::new(Pins::new(pinned)),
        })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    fn path(&self, key: &str) -> Result<PathBuf> {
        check_key(key)?;
        Ok(if key.is_empty() {
            self.root.clone()
        } else {
            self.root.join(key)
        })
    }

    /// The open file of `key`: pinned, kept, or opened now (and kept).
    fn file(&self, key: &str) -> Result<Arc<OpenFile>> {
        let pinned = match self.pinned.get(key) {
            pins::Pinned::Open(f) => return Ok(f),
            pins::Pinned::Closed => true,
            pins::Pinned::No => false,
        };
        {
            let mut kept = lock(&self.kept);
            kept.tick += 1;
            let tick = kept.tick;
            if let Some((f, used)) = kept.files.get_mut(key) {
                *used = tick;
                return Ok(f.clone());
            }
        }
        let path = self.path(key)?;
        let file = open_no_follow(&path).map_err(|e| Error::io(Place::file(key), e))?;
        let len = file
            .metadata()
            .map_err(|e| Error::io(Place::file(key), e))?
            .len();
        let opened = Arc::new(OpenFile { file, len });
        if pinned {
            // A pinned file whose descriptor was given up: held again while pinned.
            self.pinned.reopened(key, opened.clone());
            return Ok(opened);
        }
        let mut kept = lock(&self.kept);
        if kept.files.len() >= self.keep {
            // The least recently used goes (a scan of a few hundred entries, on a miss).
            if let Some(oldest) = kept
                .files
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(k, _)| k.clone())
            {
                kept.files.remove(&oldest);
            }
        }
        let tick = kept.tick;
        kept.files.insert(key.to_string(), (opened.clone(), tick));
        Ok(opened)
    }

    /// Whether byte `at` of `key` is in the page cache (for tests of read-ahead).
    pub fn is_cached(&self, key: &str, at: u64) -> bool {
        self.file(key).is_ok_and(|f| is_cached(&f.file, at))
    }
}

impl Store for LocalStore {
    fn location(&self) -> String {
        self.root.display().to_string()
    }

    fn uri(&self) -> String {
        let absolute = self
            .root
            .canonicalize()
            .unwrap_or_else(|_| self.root.clone());
        format!("file://{}", absolute.display())
    }

    fn list(&self, prefix: &str) -> Result<Vec<Listed>> {
        let folder = self.path(prefix)?;
        let mut out = Vec::new();
        for entry in self.list_names(prefix)? {
            let size = if entry.folder {
                None
            } else {
                // Not following links (list_names skipped them; one may appear since).
                match std::fs::symlink_metadata(folder.join(&entry.name)) {
                    Ok(m) if m.file_type().is_symlink() => continue,
                    Ok(m) => Some(m.len()),
                    // Removed between the listing and now: not there.
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                    Err(e) => return Err(Error::io(Place::file(join(prefix, &entry.name)), e)),
                }
            };
            out.push(Listed {
                name: entry.name,
                size,
            });
        }
        Ok(out)
    }

    fn list_names(&self, prefix: &str) -> Result<Vec<Named>> {
        let path = self.path(prefix)?;
        let entries = match std::fs::read_dir(&path) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(Error::io(Place::file(display_key(prefix)), e)),
        };
        let mut out = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| Error::io(Place::file(display_key(prefix)), e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            // The kind comes with the directory entry (d_type) on the file systems
            // arrays live on: no stat. Symbolic links are skipped, as by `list`.
            let ft = entry
                .file_type()
                .map_err(|e| Error::io(Place::file(join(prefix, &name)), e))?;
            if !ft.is_symlink() {
                out.push(Named {
                    name,
                    folder: ft.is_dir(),
                    size: None,
                });
            }
        }
        out.sort();
        Ok(out)
    }

    fn size(&self, key: &str) -> Result<u64> {
        Ok(self.file(key)?.len)
    }

    /// The file's size and modification time as `stat` gives them now (not the kept
    /// descriptor's, which a file replaced by a rename would keep). A link is not
    /// followed: it has no version (and is never read).
    fn version(&self, key: &str) -> Result<Option<String>> {
        use std::os::unix::fs::MetadataExt;
        let path = self.path(key)?;
        let meta = std::fs::symlink_metadata(&path).map_err(|e| Error::io(Place::file(key), e))?;
        Ok(meta.is_file().then(|| {
            format!(
                "size {} mtime {}.{:09}",
                meta.len(),
                meta.mtime(),
                meta.mtime_nsec()
            )
        }))
    }

    fn read(&self, key: &str, ranges: &mut [RangeRead<'_>]) -> Result<()> {
        let file = self.file(key)?;
        let mut done = 0;
        let result = ranges.iter_mut().try_for_each(|r| {
            if r.offset.checked_add(r.len).is_none_or(|end| end > file.len) {
                return Err(past_end(key, r.offset, r.len, file.len));
            }
            let start = r.out.len();
            append_at(&file.file, r.offset, r.len as usize, r.out).map_err(|e| {
                r.out.truncate(start);
                match e.kind() {
                    // Shrunk after it was opened: bad data, not a flaky disk.
                    std::io::ErrorKind::UnexpectedEof => Error::corrupt(
                        Place::file(key),
                        format!(
                            "truncated file: unexpected end of file reading bytes {}..{}",
                            r.offset,
                            r.offset + r.len
                        ),
                    ),
                    _ => Error::io(Place::file(key), e),
                }
            })?;
            done += 1;
            Ok(())
        });
        if result.is_err() {
            // All or nothing: what earlier ranges appended goes too.
            for r in ranges.iter_mut().take(done) {
                let keep = r.out.len().saturating_sub(r.len as usize);
                r.out.truncate(keep);
            }
        }
        result
    }

    /// Brings the range into the page cache for a reader that will get there soon: read,
    /// piece by piece, into a scratch buffer and dropped. Reading sequentially through
    /// one open file is what makes the kernel stream it from disk in large asynchronous
    /// windows; `posix_fadvise(WILLNEED)` submits its reads synchronously and measured
    /// slower here. Pieces already cached are skipped after a one-byte probe that never
    /// waits for the disk, so a cached file costs no copy.
    fn read_ahead(&self, key: &str, offset: u64, len: u64) {
        const PIECE: usize = 1 << 20;
        thread_local! {
            static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        let Ok(file) = self.file(key) else { return };
        let end = offset.saturating_add(len).min(file.len);
        SCRATCH.with_borrow_mut(|scratch| {
            scratch.resize(PIECE, 0);
            let mut at = offset;
            while at < end {
                let n = PIECE.min((end - at) as usize);
                let last = at + n as u64 - 1;
                if !is_cached(&file.file, last) && file.file.read_at(&mut scratch[..n], at).is_err()
                {
                    return;
                }
                at += n as u64;
            }
        });
    }

    fn walk_window(&self) -> u64 {
        WALK_WINDOW
    }

    fn pin(&self, prefix: &str) -> Result<Pin> {
        let mut keys = Vec::new();
        for entry in self.list(prefix)? {
            if entry.is_folder() {
                continue;
            }
            let key = join(prefix, &entry.name);
            let file = self.file(&key)?;
            self.pinned.add(&key, file);
            keys.push(key);
        }
        Ok(Box::new(PinnedFiles {
            keys,
            pinned: self.pinned.clone(),
        }))
    }

    fn sub(&self, prefix: &str) -> Result<Arc<dyn Store>> {
        Ok(Arc::new(LocalStore::open(&self.path(prefix)?)?))
    }
}

/// What [`LocalStore::pin`] returns: the files stay open while it lives.
struct PinnedFiles {
    keys: Vec<String>,
    pinned: Pinned,
}

impl Drop for PinnedFiles {
    fn drop(&mut self) {
        for key in &self.keys {
            self.pinned.remove(key);
        }
    }
}

fn display_key(key: &str) -> &str {
    if key.is_empty() {
        "."
    } else {
        key
    }
}

/// Appends exactly `n` bytes of `file` at `offset` to `out`, read straight into its
/// spare capacity: serving unfiltered tiles, zero-filling the buffer first cost ~7% of
/// the throughput. On an error `out` may have grown in capacity only.
fn append_at(file: &File, offset: u64, n: usize, out: &mut Vec<u8>) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    out.reserve(n);
    let start = out.len();
    let mut done = 0usize;
    while done < n {
        let at = offset
            .checked_add(done as u64)
            .and_then(|at| libc::off_t::try_from(at).ok())
            .ok_or_else(|| std::io::Error::from_raw_os_error(libc::EOVERFLOW))?;
        let spare = &mut out.spare_capacity_mut()[done..n];
        // SAFETY: `spare` is writable memory of `out` of exactly `spare.len()` bytes
        // (reserved above, `done < n`), which pread may fill, uninitialized or not; the
        // descriptor is owned by `file` for the whole call.
        let got =
            unsafe { libc::pread(file.as_raw_fd(), spare.as_mut_ptr().cast(), spare.len(), at) };
        match got {
            n if n > 0 => done += n as usize,
            0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            _ => {
                let e = std::io::Error::last_os_error();
                if e.kind() != std::io::ErrorKind::Interrupted {
                    return Err(e);
                }
            }
        }
    }
    // SAFETY: the loop ran until pread had written all `n` bytes after `start`.
    unsafe { out.set_len(start + n) };
    Ok(())
}

/// Whether byte `at` is in the page cache: a one-byte read that fails rather than wait
/// for the disk (`RWF_NOWAIT`; a miss still starts the kernel's read-ahead there, which
/// suits the caller, about to read it). Unknown (an old kernel) counts as not cached.
fn is_cached(file: &File, at: u64) -> bool {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let Ok(at) = i64::try_from(at) else {
            return false;
        };
        let mut byte = [0u8; 1];
        let iov = libc::iovec {
            iov_base: byte.as_mut_ptr().cast(),
            iov_len: byte.len(),
        };
        // SAFETY: the one iovec points at `byte`, a live local buffer of exactly
        // `iov_len` bytes, which preadv2 may fill; the descriptor is owned by `file`
        // for the whole call.
        let n = unsafe { libc::preadv2(file.as_raw_fd(), &iov, 1, at, libc::RWF_NOWAIT) };
        n == 1
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (file, at);
        false
    }
}

/// Opens a file read-only, refusing a symbolic link as the last path component.
fn open_no_follow(path: &Path) -> std::io::Result<File> {
    File::options()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NOATIME)
        .open(path)
        .or_else(|e| match e.raw_os_error() {
            // O_NOATIME (reading leaves even the access times as they were) needs the
            // file's owner or root.
            Some(libc::EPERM) => File::options()
                .read(true)
                .custom_flags(libc::O_NOFOLLOW)
                .open(path),
            _ => Err(e),
        })
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "a symbolic link: fragfs does not follow links inside an array",
            ),
            _ => e,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store_with(name: &str, bytes: &[u8]) -> (tempfile::TempDir, LocalStore) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(name), bytes).unwrap();
        let store = LocalStore::open(dir.path()).unwrap();
        (dir, store)
    }

    #[test]
    fn reads_append_exactly_and_refuse_ranges_past_the_end() {
        let (dir, store) = store_with("f", &(0..=255u8).collect::<Vec<_>>());
        let mut out = vec![7u8];
        store.read_into("f", 10, 3, &mut out).unwrap();
        assert_eq!(out, [7, 10, 11, 12]);
        let err = store.read_into("f", 250, 10, &mut out).unwrap_err();
        assert!(err.to_string().contains("truncated file"), "{err}");
        assert_eq!(out, [7, 10, 11, 12], "left as it was");
        // Several ranges in one call; all or nothing.
        let (mut a, mut b) = (Vec::new(), vec![1u8]);
        store
            .read(
                "f",
                &mut [
                    RangeRead {
                        offset: 0,
                        len: 2,
                        out: &mut a,
                    },
                    RangeRead {
                        offset: 100,
                        len: 1,
                        out: &mut b,
                    },
                ],
            )
            .unwrap();
        assert_eq!((a.as_slice(), b.as_slice()), (&[0, 1][..], &[1, 100][..]));
        let mut c = Vec::new();
        let failed = store.read(
            "f",
            &mut [
                RangeRead {
                    offset: 0,
                    len: 2,
                    out: &mut a,
                },
                RangeRead {
                    offset: 255,
                    len: 2,
                    out: &mut c,
                },
            ],
        );
        assert!(failed.is_err());
        assert_eq!(a, [0, 1], "the first range's bytes went too");
        // Shrunk after it was opened (the handle is kept): the read meets the end.
        std::fs::write(dir.path().join("f"), [0u8; 4]).unwrap();
        let err = store
            .read_into("f", 2, 100, &mut out)
            .unwrap_err()
            .to_string();
        assert!(err.contains("end of file"), "{err}");
        assert_eq!(out, [7, 10, 11, 12], "left as it was");
    }

    /// A file rewritten in place (another size, or the same size at another time) has
    /// another version, as `stat` tells it now (not as the kept descriptor saw it); a
    /// link has none.
    #[test]
    fn a_rewritten_file_has_another_version_and_a_link_none() {
        let (dir, store) = store_with("f", b"abc");
        let first = store.version("f").unwrap().unwrap();
        assert_eq!(store.version("f").unwrap().unwrap(), first);
        store.size("f").unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"abcd").unwrap();
        let second = store.version("f").unwrap().unwrap();
        assert_ne!(second, first);
        assert!(second.starts_with("size 4 mtime "), "{second}");
        let t = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1000);
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(t)
            .unwrap();
        assert_eq!(
            store.version("f").unwrap().unwrap(),
            "size 4 mtime 1000.000000000"
        );
        std::os::unix::fs::symlink(&path, dir.path().join("link")).unwrap();
        assert_eq!(store.version("link").unwrap(), None);
        assert!(store.version("missing").is_err());
    }

    #[test]
    fn listings_give_sizes_skip_links_and_missing_folders_are_empty() {
        let (dir, store) = store_with("f", b"abc");
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", dir.path().join("link")).unwrap();
        let listed = store.list("").unwrap();
        assert_eq!(
            listed,
            [
                Listed {
                    name: "f".into(),
                    size: Some(3)
                },
                Listed {
                    name: "sub".into(),
                    size: None
                }
            ]
        );
        assert!(store.list("nothing/here").unwrap().is_empty());
        // Names and kinds alone: the same entries, no sizes (no stat per file).
        let named = store.list_names("").unwrap();
        let kinds: Vec<(&str, bool, Option<u64>)> = named
            .iter()
            .map(|e| (e.name.as_str(), e.folder, e.size))
            .collect();
        assert_eq!(kinds, [("f", false, None), ("sub", true, None)]);
        assert!(store.list_names("nothing/here").unwrap().is_empty());
        let err = store.size("link").unwrap_err().to_string();
        assert!(err.contains("symbolic link"), "{err}");
        assert!(store.size("../x").is_err());
    }

    #[test]
    fn a_pinned_file_reads_on_after_it_is_deleted() {
        let (dir, store) = store_with("a", b"old bytes");
        std::fs::create_dir(dir.path().join("frag")).unwrap();
        std::fs::write(dir.path().join("frag/x.tdb"), b"fragment").unwrap();
        let pin = store.pin("frag").unwrap();
        // Many other files pass through the kept set: the pinned one is not evicted.
        for i in 0..KEPT_FILES + 10 {
            std::fs::write(dir.path().join(format!("g{i}")), b"x").unwrap();
            store.size(&format!("g{i}")).unwrap();
        }
        std::fs::remove_dir_all(dir.path().join("frag")).unwrap();
        assert_eq!(store.read_all("frag/x.tdb").unwrap(), b"fragment");
        drop(pin);
        assert_eq!(store.pinned.counts(), (0, 0), "unpinned");
    }

    #[test]
    fn read_ahead_brings_the_range_into_the_page_cache() {
        use std::os::fd::AsRawFd;
        let (_dir, store) = store_with("f", &vec![1u8; 3 << 20]);
        let file = store.file("f").unwrap();
        file.file.sync_all().unwrap();
        // SAFETY: posix_fadvise takes an open descriptor and integers, no memory.
        let dropped =
            unsafe { libc::posix_fadvise(file.file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        assert_eq!(dropped, 0, "the file's pages dropped from the page cache");
        // Past the end and empty ranges are fine: it is only a hint.
        store.read_ahead("f", 1 << 40, 10);
        store.read_ahead("f", 0, 0);
        // No probe before this point: a probe that misses starts the kernel's own
        // read-ahead there, so only the one below may run, right after read_ahead.
        store.read_ahead("f", 0, 3 << 20);
        assert!(
            store.is_cached("f", (3 << 20) - 1),
            "the last byte read ahead is cached"
        );
        assert_eq!(store.read_range("f", 0, 4).unwrap(), [1, 1, 1, 1]);
    }
}
