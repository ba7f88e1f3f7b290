//! Scratch space: unlinked temporary files in one folder, for what is kept on local disk
//! only while the process runs (the read layer's spill of large results).
//!
//! Each file is an `O_TMPFILE` in the folder, or where the file system refuses that, a
//! file created and at once unlinked: nothing is left behind whatever way the process
//! ends, and the space comes back when the last holder of the file closes it.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Hands out unlinked temporary files in its folder.
#[derive(Debug)]
pub struct Scratch {
    dir: PathBuf,
    /// Names for the create-then-unlink fallback.
    next_name: AtomicU64,
}

impl Scratch {
    /// Scratch space in `dir` (nothing is made or checked until a file is asked for).
    pub fn new(dir: impl Into<PathBuf>) -> Scratch {
        Scratch {
            dir: dir.into(),
            next_name: AtomicU64::new(0),
        }
    }

    /// The folder the files are made in, for messages.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// An unlinked file open for reading and writing in the folder.
    pub fn file(&self) -> std::io::Result<File> {
        #[cfg(target_os = "linux")]
        {
            use std::os::unix::fs::OpenOptionsExt;
            let tmpfile = OpenOptions::new()
                .read(true)
                .write(true)
                .mode(0o600)
                .custom_flags(libc::O_TMPFILE)
                .open(&self.dir);
            match tmpfile {
                Ok(file) => return Ok(file),
                // A folder that does not exist or cannot be written refuses the fallback
                // too; any other refusal (a file system without O_TMPFILE: EOPNOTSUPP,
                // EISDIR from kernels that predate it) may still allow it.
                Err(e) if is_final(&e) => return Err(e),
                Err(_) => {}
            }
        }
        self.created_then_unlinked()
    }

    /// The fallback: a file of a name no other is using, removed as soon as it is open.
    fn created_then_unlinked(&self) -> std::io::Result<File> {
        use std::os::unix::fs::OpenOptionsExt;
        loop {
            let name = format!(
                ".fragfs-spill-{}-{}",
                std::process::id(),
                self.next_name.fetch_add(1, Ordering::Relaxed)
            );
            let path = self.dir.join(name);
            match OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&path)
            {
                Ok(file) => {
                    std::fs::remove_file(&path)?;
                    return Ok(file);
                }
                // Left by another process of the same id (after a reboot): next name.
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
    }
}

/// Refusals of `O_TMPFILE` that creating a named file would meet as well.
#[cfg(target_os = "linux")]
fn is_final(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ENOENT | libc::ENOTDIR | libc::EACCES | libc::EROFS | libc::ENOSPC)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::unix::fs::FileExt;

    /// Both ways of making a file (`O_TMPFILE`, and create-then-unlink) give one that
    /// holds what is written and leave no name behind.
    #[test]
    fn files_are_unlinked_and_hold_what_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let scratch = Scratch::new(dir.path());
        for mut f in [scratch.file(), scratch.created_then_unlinked()].map(Result::unwrap) {
            f.write_all(b"abc").unwrap();
            let mut out = [0; 3];
            f.read_exact_at(&mut out, 0).unwrap();
            assert_eq!(&out, b"abc");
            assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        }
    }

    #[test]
    fn a_folder_that_is_missing_or_a_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a-file");
        std::fs::write(&file, b"x").unwrap();
        for place in [dir.path().join("missing"), file] {
            assert!(Scratch::new(place).file().is_err());
        }
    }
}
