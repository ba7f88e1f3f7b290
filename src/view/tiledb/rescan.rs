//! When the tree reads the array folder again: a listing of `fragments/` (and a lookup in
//! it, and `array.json`) rescans once the last scan is older than the refresh interval,
//! so new fragments show up and vacuumed ones go. A rescan that changes something bumps
//! the tree's generation, which keys whatever was derived from the old fragment list
//! (merged states, `array.json`, a state's text files).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::Result;

use super::{ArrayTree, Folder};

impl ArrayTree {
    /// Sets how old the list of fragments may get before a listing reads the array's
    /// folder again (`Duration::MAX`: never by itself; tests that count requests).
    pub fn with_refresh_interval(mut self, interval: Duration) -> ArrayTree {
        self.refresh_interval = interval;
        self
    }

    /// Reads the array folder again now. Returns whether anything changed. A folder that
    /// cannot be read keeps the last good list (and the error is returned).
    pub fn refresh(&self) -> Result<bool> {
        *self.scanned_at.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
        let old = self.array();
        let new = old.rescan()?;
        if new.same_content(&old) {
            return Ok(false);
        }
        log::info!(
            "{}: {} live fragments (was {})",
            new.location(),
            new.fragments.len(),
            old.fragments.len()
        );
        *self.array.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(new);
        self.generation.fetch_add(1, Ordering::AcqRel);
        Ok(true)
    }

    /// [`ArrayTree::refresh`] when the last scan is older than the refresh interval.
    pub(super) fn refresh_if_stale(&self) {
        let stale = self
            .scanned_at
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .elapsed()
            >= self.refresh_interval;
        if stale {
            if let Err(e) = self.refresh() {
                log::warn!("rescanning the array: {e} (keeping the last list)");
            }
        }
    }

    /// The generation what is derived from a folder belongs to: a state's files change
    /// with a rescan, a fragment's never do (0).
    pub(super) fn generation_of(&self, folder: Folder) -> u64 {
        match folder {
            Folder::Fragment(_) => 0,
            Folder::State(_) => self.generation.load(Ordering::Acquire),
        }
    }
}
