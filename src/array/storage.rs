//! Reading bytes of the array's files. Everything above goes through here, so arrays on
//! object storage can later plug in ranged GETs.
//!
//! Files are read with positioned reads (`pread`) rather than memory maps: a file that is
//! truncated while mapped would kill the daemon with SIGBUS, while a short `pread` is an
//! ordinary error. Files are only ever opened read-only, and never through a symbolic
//! link: a link inside an array could otherwise make fragfs serve any file the daemon can
//! read (say, to other users of an `allow_other` mount).

use crate::error::{Error, Result};
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// An open, read-only file of the array.
#[derive(Debug)]
pub struct DataFile {
    path: PathBuf,
    file: File,
    len: u64,
}

impl DataFile {
    pub fn open(path: &Path) -> Result<DataFile> {
        let file = open_no_follow(path)?;
        let len = file.metadata().map_err(|e| Error::io(path, e))?.len();
        Ok(DataFile {
            path: path.to_path_buf(),
            file,
            len,
        })
    }

    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads exactly `len` bytes at `offset`; a range past the end is an error naming
    /// the file, never a short read.
    pub fn read(&self, offset: u64, len: u64) -> Result<Vec<u8>> {
        let mut buf = Vec::new();
        self.read_into(offset, len, &mut buf)?;
        Ok(buf)
    }

    /// Appends exactly `len` bytes at `offset` to `out`, with the checks of `read`: how
    /// the serving path reads unfiltered chunks straight into a reply.
    pub fn read_into(&self, offset: u64, len: u64, out: &mut Vec<u8>) -> Result<()> {
        let end = offset.checked_add(len);
        if end.is_none_or(|end| end > self.len) {
            return Err(Error::corrupt(
                self.path.display().to_string(),
                format!(
                    "truncated file: needs bytes {offset}..{} but the file has {} bytes",
                    offset.saturating_add(len),
                    self.len
                ),
            ));
        }
        let start = out.len();
        append_at(&self.file, offset, len as usize, out).map_err(|e| {
            out.truncate(start);
            Error::io(&self.path, e)
        })
    }

    /// Brings `[offset, offset + len)` into the page cache, for a reader that will get
    /// there soon: the bytes are read, piece by piece, into a scratch buffer and dropped.
    /// Reading sequentially through one open file is what makes the kernel stream it
    /// from disk in large asynchronous windows; `posix_fadvise(WILLNEED)` submits its
    /// reads synchronously and measured slower here. Pieces already in the page cache
    /// are skipped after a one-byte probe that never waits for the disk, so a cached file
    /// costs no copy. Only a hint: errors are left for the real read to report.
    pub fn read_ahead(&self, offset: u64, len: u64) {
        const PIECE: usize = 1 << 20;
        thread_local! {
            static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        let end = offset.saturating_add(len).min(self.len);
        SCRATCH.with_borrow_mut(|scratch| {
            scratch.resize(PIECE, 0);
            let mut at = offset;
            while at < end {
                let n = PIECE.min((end - at) as usize);
                let last = at + n as u64 - 1;
                if !self.is_cached(last) && self.file.read_at(&mut scratch[..n], at).is_err() {
                    return;
                }
                at += n as u64;
            }
        });
    }

    /// Whether byte `at` is in the page cache: a one-byte read that fails rather than
    /// wait for the disk (`RWF_NOWAIT`; a miss still starts the kernel's read-ahead
    /// there, which suits the caller, about to read it). Unknown (an old kernel) counts
    /// as not cached.
    fn is_cached(&self, at: u64) -> bool {
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
            // `iov_len` bytes, which preadv2 may fill; the descriptor is owned by
            // `self.file` for the whole call.
            let n = unsafe { libc::preadv2(self.file.as_raw_fd(), &iov, 1, at, libc::RWF_NOWAIT) };
            n == 1
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = at;
            false
        }
    }

    /// The whole file.
    pub fn read_all(&self) -> Result<Vec<u8>> {
        self.read(0, self.len)
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

/// Reads a whole small file (schemas, commit files).
pub fn read_file(path: &Path) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    open_no_follow(path)?
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io(path, e))?;
    Ok(bytes)
}

/// Opens a file read-only, refusing a symbolic link as the last path component.
fn open_no_follow(path: &Path) -> Result<File> {
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
            Some(libc::ELOOP) => Error::io(
                path,
                std::io::Error::other(
                    "a symbolic link: fragfs does not follow links inside an array",
                ),
            ),
            _ => Error::io(path, e),
        })
}

/// Names in a folder, sorted; a missing folder is empty.
pub fn list_dir(path: &Path) -> Result<Vec<(String, bool)>> {
    let entries = match std::fs::read_dir(path) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io(path, e)),
    };
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(path, e))?;
        // Symlinks are not followed: file_type() describes the link itself.
        let ft = entry.file_type().map_err(|e| Error::io(&entry.path(), e))?;
        if ft.is_symlink() {
            continue;
        }
        out.push((
            entry.file_name().to_string_lossy().into_owned(),
            ft.is_dir(),
        ));
    }
    out.sort();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_into_appends_exactly_and_refuses_ranges_past_the_end() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, (0..=255u8).collect::<Vec<_>>()).unwrap();
        let f = DataFile::open(&path).unwrap();
        let mut out = vec![7u8];
        f.read_into(10, 3, &mut out).unwrap();
        assert_eq!(out, [7, 10, 11, 12]);
        let err = f.read_into(250, 10, &mut out).unwrap_err().to_string();
        assert!(err.contains("truncated file"), "{err}");
        assert_eq!(out, [7, 10, 11, 12], "left as it was");
        // Shrunk after opening: the read meets the end of the file.
        std::fs::write(&path, [0u8; 4]).unwrap();
        let err = f.read_into(2, 100, &mut out).unwrap_err().to_string();
        assert!(err.contains("end of file"), "{err}");
        assert_eq!(out, [7, 10, 11, 12], "left as it was");
    }

    #[test]
    fn read_ahead_brings_the_range_into_the_page_cache() {
        use std::os::fd::AsRawFd;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, vec![1u8; 3 << 20]).unwrap();
        let f = DataFile::open(&path).unwrap();
        f.file.sync_all().unwrap();
        // SAFETY: posix_fadvise takes an open descriptor and integers, no memory.
        let dropped =
            unsafe { libc::posix_fadvise(f.file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        assert_eq!(dropped, 0, "the file's pages dropped from the page cache");
        // Past the end and empty ranges are fine: it is only a hint.
        f.read_ahead(1 << 40, 10);
        f.read_ahead(0, 0);
        // No probe before this point: a probe that misses starts the kernel's own
        // read-ahead there, so only the one below may run, right after read_ahead.
        f.read_ahead(0, 3 << 20);
        assert!(
            f.is_cached((3 << 20) - 1),
            "the last byte read ahead is cached"
        );
        assert_eq!(f.read(0, 4).unwrap(), [1, 1, 1, 1]);
    }
}
