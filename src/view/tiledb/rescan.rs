//! When the tree reads the array folder again: a listing of `fragments/` (and a lookup in
//! it, and `array.json`) rescans once the last scan is older than the refresh interval,
//! so new fragments show up and vacuumed ones go. A rescan that changes something bumps
//! the tree's generation, which keys whatever was derived from the old fragment list
//! (merged states, `array.json`, a state's text files).
//!
//! The interval counts from the end of the last scan, and one scan runs at a time: on an
//! object store whose listing of a large array takes longer than the interval, requests
//! that come meanwhile (or right after) go on with the last list instead of each
//! scanning again.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use std::collections::HashSet;

use crate::array::fragment::FragmentId;
use crate::array::Array;
use crate::error::Result;
use crate::read::spill::SpillKey;
use crate::read::CacheKey;

use super::array_tree::{ArrayTree, Clock};
use super::node::{Folder, Node};

impl ArrayTree {
    /// Sets how old the list of fragments may get before a listing reads the array's
    /// folder again (`Duration::MAX`: never by itself; tests that count requests).
    pub fn with_refresh_interval(mut self, interval: Duration) -> ArrayTree {
        self.refresh_interval = interval;
        self
    }

    /// Tells the time of rescans by `clock` instead of the wall clock, from now on: for
    /// tests that make an interval pass (or a scan take long) without waiting for it.
    pub fn with_clock(mut self, clock: Clock) -> ArrayTree {
        *self.scanned_at.get_mut().unwrap_or_else(|e| e.into_inner()) = clock();
        self.clock = clock;
        self
    }

    /// Reads the array folder again now. Returns whether anything changed. A folder that
    /// cannot be read keeps the last good list (and the error is returned).
    pub fn refresh(&self) -> Result<bool> {
        let changed = self.rescan();
        *self.scanned_at.lock().unwrap_or_else(|e| e.into_inner()) = (self.clock)();
        changed
    }

    fn rescan(&self) -> Result<bool> {
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
        let new = Arc::new(new);
        *self.array.write().unwrap_or_else(|e| e.into_inner()) = new.clone();
        let now = self.generation.fetch_add(1, Ordering::AcqRel) + 1;
        self.drop_spilled(&old, &new, now);
        Ok(true)
    }

    /// Frees the disk the spill gives to what this rescan made stale (nothing stale could
    /// be served anyway: keys carry fragment ids and generations), rather than leaving it
    /// to age out: chunks of fragments no longer live, and this tree's files rendered at
    /// an older generation but for those of fragments still live, which never change.
    /// (The rendered files of a tree that is closed, and chunks of fragments of other
    /// arrays, age out by the spill's LRU order.)
    fn drop_spilled(&self, old: &Array, new: &Array, now: u64) {
        let live: HashSet<FragmentId> = new.fragments.iter().map(|f| f.id).collect();
        let gone: HashSet<FragmentId> = old
            .fragments
            .iter()
            .map(|f| f.id)
            .filter(|id| !live.contains(id))
            .collect();
        // Whatever node a rendered file is (a fragment folder's file, a field's text
        // file, an enumeration's file), the fragment it is in.
        let fragment_of = |ino| self.nodes.node(ino).and_then(|n: Node| n.fragment());
        self.caches.engine.spill().retain(|key| match key {
            SpillKey::Chunk(CacheKey::Tile { fragment, .. }) => !gone.contains(fragment),
            SpillKey::Rendered {
                owner,
                file,
                generation,
            } if *owner == self.owner && *generation < now => {
                fragment_of(*file).is_some_and(|id| live.contains(&id))
            }
            SpillKey::Rendered { .. } => true,
        });
    }

    /// [`ArrayTree::refresh`] when the last scan is older than the refresh interval.
    pub(super) fn refresh_if_stale(&self) {
        if !self.stale() {
            return;
        }
        // A scan under way: go on with the last list rather than wait or scan twice.
        let Ok(_one) = self.rescanning.try_lock() else {
            return;
        };
        // Another scan may have ended between the look and the lock.
        if !self.stale() {
            return;
        }
        if let Err(e) = self.refresh() {
            log::warn!("rescanning the array: {e} (keeping the last list)");
        }
    }

    fn stale(&self) -> bool {
        let scanned_at = *self.scanned_at.lock().unwrap_or_else(|e| e.into_inner());
        (self.clock)().saturating_duration_since(scanned_at) >= self.refresh_interval
    }

    /// The generation what is derived from a folder belongs to: a state's files change
    /// with a rescan that changed that state, a fragment's never do (0).
    pub(super) fn generation_of(&self, folder: Folder) -> u64 {
        match folder {
            Folder::Fragment(_) => 0,
            Folder::State(w) => self.state_generation(w),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use crate::array::{Array, OpenOptions};
    use crate::storage::MemoryStore;

    use super::ArrayTree;

    /// The sample array in memory, rescanned when older than `interval`; and its store,
    /// to slow its listings down and count them.
    fn tree(interval: Duration) -> (ArrayTree, Arc<MemoryStore>) {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tiledb/sample");
        let store = Arc::new(MemoryStore::from_dir(&dir).unwrap());
        let array = Array::open(store.clone(), OpenOptions::default()).unwrap();
        let tree = ArrayTree::new(array, 1 << 20).with_refresh_interval(interval);
        (tree, store)
    }

    /// A scan slower than the interval must not make the request that follows it scan
    /// again (counted from its start, each such scan was stale as soon as it ended).
    /// Time is the tree's clock: each listing the store answers takes 600 ms of it, and
    /// the test moves it on by the interval, so nothing waits on the wall clock.
    #[test]
    fn the_request_right_after_a_slow_scan_uses_its_list() {
        let (tree, store) = tree(Duration::from_millis(500));
        store.reset_requests();
        let start = Instant::now();
        let waited = Arc::new(AtomicU64::new(0));
        let clock = {
            let (store, waited) = (store.clone(), waited.clone());
            move || {
                let listing = 600 * store.requests().lists;
                start + Duration::from_millis(listing + waited.load(Ordering::SeqCst))
            }
        };
        let tree = tree.with_clock(Arc::new(clock));
        tree.refresh_if_stale();
        assert_eq!(store.requests().lists, 0, "no scan within the interval");
        waited.fetch_add(500, Ordering::SeqCst);
        tree.refresh_if_stale();
        let one_scan = store.requests().lists;
        assert!(one_scan > 0, "the first request after the interval scans");
        tree.refresh_if_stale();
        assert_eq!(
            store.requests().lists,
            one_scan,
            "no second scan right after"
        );
        waited.fetch_add(500, Ordering::SeqCst);
        tree.refresh_if_stale();
        assert!(
            store.requests().lists > one_scan,
            "a scan once the interval passed again"
        );
    }

    /// Requests that come while a scan runs go on with the last list: one scan, not one
    /// per request.
    #[test]
    fn one_scan_at_a_time() {
        let (tree, store) = tree(Duration::ZERO);
        store.set_list_delay(Duration::from_millis(50));
        store.reset_requests();
        tree.refresh_if_stale();
        let one_scan = store.requests().lists;
        store.reset_requests();
        let started = std::sync::Barrier::new(4);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    started.wait();
                    tree.refresh_if_stale();
                });
            }
        });
        let scans = store.requests().lists as f64 / one_scan as f64;
        assert!(scans < 4.0, "{scans} scans for 4 concurrent requests");
    }
}
