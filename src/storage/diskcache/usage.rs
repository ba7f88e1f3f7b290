//! How much the cache folder holds, shared by every daemon that uses it, so that the
//! bound holds whatever number of them write there at once.
//!
//! Why a count in the folder, and not a periodic recount: each daemon keeping its own
//! count (as fragfs did) lets N daemons fill N times the bound between their scans, and a
//! recount alone cannot stop a write that exceeds the bound before the next one. So the
//! count lives in the folder, in `usage`, and every byte written is first taken from it
//! under the folder's lock ([`Usage::reserve`]): a write that would take it over the
//! bound is refused before it happens, whoever makes it. Removing files gives their
//! bytes back as measured on disk right before the removal.
//!
//! The count can only be too high, never too low: bytes are counted before they are
//! written, and a write that fails, a daemon killed between the two, or two daemons
//! writing the same block leave bytes counted that are not on disk. That wastes room,
//! never exceeds the bound; it is set right by a recount, which the cache does when it
//! opens and at every eviction (when the count says the folder is full, which is where
//! an excess count matters), and whenever the file does not hold a valid count.
//!
//! A recount must not miss bytes counted but not written yet (the count would then be
//! too low). So a writer holds a shared lock of `writers` from the moment its bytes are
//! counted until they are written ([`Room`]), and a recount holds it exclusively
//! ([`Counting`]): it counts while no write is under way, and a write that comes
//! meanwhile is refused room (its bytes are served, not kept) rather than made to
//! wait. Each room opens `writers` anew: `flock` locks belong to an open file, so
//! threads of one daemon sharing one would not exclude a recount.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::private;
use crate::error::{Error, Place, Result};

/// The count as stored: the bytes, then their complement (a torn or foreign file does
/// not pass for a count).
const RECORD: usize = 16;

/// The folder's count and the lock its writers and recounts share.
pub struct Usage {
    file: File,
    path: PathBuf,
    writers: PathBuf,
}

/// Leave to write bytes that were counted: held until they are written (see the module
/// comment); a recount waits for every room to go.
pub struct Room {
    _writing: Option<File>,
}

impl Room {
    /// Room that no count stands behind, for tests of entries alone.
    #[cfg(test)]
    pub fn unbounded() -> Room {
        Room { _writing: None }
    }
}

/// Held while the folder is recounted: no write is under way, none starts.
pub struct Counting {
    _all: File,
}

fn io(path: &Path, e: std::io::Error) -> Error {
    Error::io(Place::file(path.display().to_string()), e)
}

impl Usage {
    /// The count of the folder `dir` (made, empty, if absent: the next recount fills it).
    pub fn open(dir: &Path) -> Result<Usage> {
        let path = dir.join("usage");
        let writers = dir.join("writers");
        let file = private::open_or_create(&path).map_err(|e| io(&path, e))?;
        // Made now, so that a room or a recount only ever opens it.
        private::open_or_create(&writers).map_err(|e| io(&writers, e))?;
        Ok(Usage {
            file,
            path,
            writers,
        })
    }

    /// The bytes the folder holds by the count; `None` when the file holds no valid
    /// count (new, torn, damaged): then only a recount says.
    pub fn read(&self) -> Option<u64> {
        let mut r = [0u8; RECORD];
        self.file.read_exact_at(&mut r, 0).ok()?;
        let (used, check) = r.split_at(8);
        let used = u64::from_le_bytes(used.try_into().ok()?);
        let check = u64::from_le_bytes(check.try_into().ok()?);
        (check == !used).then_some(used)
    }

    /// Sets the count. The caller holds the folder's lock.
    pub fn write(&self, used: u64) -> Result<()> {
        let mut r = [0u8; RECORD];
        r[..8].copy_from_slice(&used.to_le_bytes());
        r[8..].copy_from_slice(&(!used).to_le_bytes());
        self.file.write_all_at(&r, 0).map_err(|e| io(&self.path, e))
    }

    /// Takes `bytes` from the bound `budget`: true if the count had room (and now holds
    /// them), false if not or if there is no valid count. The caller holds the folder's
    /// lock and a [`Room`].
    pub fn reserve(&self, bytes: u64, budget: u64) -> Result<bool> {
        match self.read() {
            Some(used) if used.saturating_add(bytes) <= budget => {
                self.write(used + bytes)?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// Gives back `bytes` removed from the folder (a count that is not valid stays so:
    /// the next recount sets it). The caller holds the folder's lock.
    pub fn release(&self, bytes: u64) -> Result<()> {
        match self.read() {
            Some(used) => self.write(used.saturating_sub(bytes)),
            None => Ok(()),
        }
    }

    /// Leave to count and write bytes, unless a recount is under way (`None`: the
    /// bytes are not kept this time).
    pub fn room(&self) -> Option<Room> {
        let file = private::open_read(&self.writers).ok()?;
        file.try_lock_shared().ok()?;
        Some(Room {
            _writing: Some(file),
        })
    }

    /// Waits until no write is under way, and keeps new ones from starting until the
    /// returned guard goes: for a recount (off the read path: the eviction thread).
    pub fn counting(&self) -> Result<Counting> {
        let file = private::open_read(&self.writers).map_err(|e| io(&self.writers, e))?;
        file.lock().map_err(|e| io(&self.writers, e))?;
        Ok(Counting { _all: file })
    }

    /// [`Usage::counting`] if no write is under way now; `None` rather than wait.
    pub fn try_counting(&self) -> Option<Counting> {
        let file = private::open_read(&self.writers).ok()?;
        file.try_lock().ok()?;
        Some(Counting { _all: file })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_count_holds_the_bound_and_a_torn_one_is_not_trusted() {
        let dir = tempfile::tempdir().unwrap();
        let usage = Usage::open(dir.path()).unwrap();
        assert_eq!(usage.read(), None, "a new file holds no count");
        assert!(!usage.reserve(1, 100).unwrap(), "no count: no room");
        usage.write(40).unwrap();
        assert!(usage.reserve(60, 100).unwrap());
        assert_eq!(usage.read(), Some(100));
        assert!(!usage.reserve(1, 100).unwrap());
        usage.release(30).unwrap();
        assert_eq!(usage.read(), Some(70));
        // Another opening of the folder sees the same count.
        assert_eq!(Usage::open(dir.path()).unwrap().read(), Some(70));
        std::fs::write(dir.path().join("usage"), b"garbage garbage!").unwrap();
        assert_eq!(usage.read(), None);
    }

    #[test]
    fn a_recount_excludes_writes_under_way() {
        let dir = tempfile::tempdir().unwrap();
        let usage = Usage::open(dir.path()).unwrap();
        let one = usage.room().unwrap();
        let two = usage.room().expect("writers share the lock");
        assert!(usage.try_counting().is_none(), "writes are under way");
        drop((one, two));
        let counting = usage.try_counting().expect("no write under way");
        assert!(usage.room().is_none(), "no room while counting");
        drop(counting);
        assert!(usage.room().is_some());
    }
}
