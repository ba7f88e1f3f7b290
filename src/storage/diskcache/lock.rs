//! The cache folder's lock: held while entries are made or removed and while the shared
//! count is read and changed, by one thread of one daemon at a time.
//!
//! Two locks make it: `flock` of the folder's `lock` file excludes other daemons (and
//! other openings of the cache in this process, each with its own open file), but not
//! the threads of this one, which share one open file and so one `flock`: a second
//! `flock` by another thread succeeds at once. A `Mutex` taken first excludes those. The
//! file is unlocked before the mutex is let go (and on a panic too), so the two are
//! always held together.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use super::private;
use crate::error::{Error, Place, Result};

pub struct FolderLock {
    threads: Mutex<()>,
    file: File,
    path: PathBuf,
}

/// Both locks, held: unlocked when dropped.
struct Held<'a> {
    file: &'a File,
    _threads: MutexGuard<'a, ()>,
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        // Before the mutex guard (a field: dropped after this).
        let _ = self.file.unlock();
    }
}

impl FolderLock {
    /// The lock of the folder `dir` (its `lock` file made if absent).
    pub fn open(dir: &Path) -> Result<FolderLock> {
        let path = dir.join("lock");
        let file = private::open_or_create(&path)
            .map_err(|e| Error::io(Place::file(path.display().to_string()), e))?;
        Ok(FolderLock {
            threads: Mutex::new(()),
            file,
            path,
        })
    }

    /// Runs `f` holding the lock against every other thread and daemon. Not reentrant:
    /// `f` must not take it again.
    pub fn hold<T>(&self, f: impl FnOnce() -> Result<T>) -> Result<T> {
        let threads = self.threads.lock().unwrap_or_else(|e| e.into_inner());
        self.file
            .lock()
            .map_err(|e| Error::io(Place::file(self.path.display().to_string()), e))?;
        let _held = Held {
            file: &self.file,
            _threads: threads,
        };
        f()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    /// Threads of one process exclude each other (the `flock` alone would let them in
    /// together).
    #[test]
    fn threads_of_one_process_hold_it_one_at_a_time() {
        let dir = tempfile::tempdir().unwrap();
        let lock = FolderLock::open(dir.path()).unwrap();
        let inside = AtomicU32::new(0);
        let most = AtomicU32::new(0);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..500 {
                        lock.hold(|| {
                            let n = inside.fetch_add(1, Ordering::SeqCst) + 1;
                            most.fetch_max(n, Ordering::SeqCst);
                            std::thread::yield_now();
                            inside.fetch_sub(1, Ordering::SeqCst);
                            Ok(())
                        })
                        .unwrap();
                    }
                });
            }
        });
        assert_eq!(most.load(Ordering::SeqCst), 1);
    }
}
