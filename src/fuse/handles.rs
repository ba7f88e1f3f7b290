//! The handles the adapter gives the kernel: open files (where the reader is, what
//! keeps the file readable) and open folders (the listing `opendir` took).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use super::inodes::Listing;
use crate::view::prefetch::Stream;
use crate::view::{Ino, OpenGuard};

/// One open file: where the reader is, to spot sequential reads, and what keeps the
/// file readable until it is closed.
pub struct Handle {
    pub ino: Ino,
    /// The size `open` saw (`u64::MAX` for a text file not sized yet): what read-ahead
    /// stops at, so a read needs no `stat` of its own.
    pub size: u64,
    pub stream: Stream,
    pub _keep: Option<OpenGuard>,
    /// Opened by passthrough: the kernel reads it from the disk cache itself.
    pub passthrough: bool,
}

/// Every open file and folder, by handle number.
pub struct Handles {
    files: Mutex<HashMap<u64, Handle>>,
    folders: Mutex<HashMap<u64, Listing>>,
    next: AtomicU64,
}

impl Default for Handles {
    fn default() -> Handles {
        Handles {
            files: Mutex::new(HashMap::new()),
            folders: Mutex::new(HashMap::new()),
            next: AtomicU64::new(1),
        }
    }
}

impl Handles {
    /// A handle number never given before (files and folders share them).
    pub fn next(&self) -> u64 {
        self.next.fetch_add(1, Ordering::Relaxed)
    }

    /// The open files.
    pub fn files(&self) -> MutexGuard<'_, HashMap<u64, Handle>> {
        self.files.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The open folders' listings.
    pub fn folders(&self) -> MutexGuard<'_, HashMap<u64, Listing>> {
        self.folders.lock().unwrap_or_else(|e| e.into_inner())
    }
}
