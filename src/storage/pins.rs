//! Pinned files of a local store (see [`super::Store::pin`]): an open file of a
//! fragment keeps every file of that fragment readable even if TileDB vacuums it, by
//! holding their descriptors. Held without bound, opening files of a few hundred
//! fragments at once ran the process out of descriptors (EMFILE). So the pins keep
//! descriptors for at most a budget of files (derived from `RLIMIT_NOFILE`), the least
//! recently used giving theirs up first; a pinned file without a descriptor is opened
//! again when read, which works unless the file was removed meanwhile (then the read
//! fails cleanly, as reading any removed file does).

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

struct Entry<F> {
    file: Option<F>,
    /// Pins holding the file.
    count: usize,
    used: u64,
}

struct Inner<F> {
    files: HashMap<String, Entry<F>>,
    tick: u64,
    /// Entries holding a descriptor.
    open: usize,
}

pub(super) struct Pins<F> {
    inner: Mutex<Inner<F>>,
    budget: usize,
}

impl<F> std::fmt::Debug for Pins<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pins")
            .field("budget", &self.budget)
            .finish()
    }
}

/// What a look-up finds.
pub(super) enum Pinned<F> {
    /// Not pinned.
    No,
    /// Pinned, with its descriptor.
    Open(F),
    /// Pinned, its descriptor given up: open it again (and hand it back with
    /// [`Pins::reopened`]).
    Closed,
}

/// The descriptors a store may hold, from the soft `RLIMIT_NOFILE`: files kept open
/// for speed (a quarter of the limit, 16 to `kept`) and pinned files (half the limit
/// less those, at least 32). FUSE, sockets and the rest of the process need the rest.
pub(super) fn descriptor_budget(kept: usize) -> (usize, usize) {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct we pass and nothing else.
    let soft = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0 {
        usize::try_from(limit.rlim_cur).unwrap_or(usize::MAX)
    } else {
        1024
    };
    let kept = (soft / 4).clamp(16, kept.max(16));
    (kept, (soft / 2).saturating_sub(kept).max(32))
}

impl<F: Clone> Pins<F> {
    pub(super) fn new(budget: usize) -> Pins<F> {
        Pins {
            inner: Mutex::new(Inner {
                files: HashMap::new(),
                tick: 0,
                open: 0,
            }),
            budget: budget.max(1),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner<F>> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn get(&self, key: &str) -> Pinned<F> {
        let mut inner = self.lock();
        inner.tick += 1;
        let tick = inner.tick;
        match inner.files.get_mut(key) {
            None => Pinned::No,
            Some(e) => {
                e.used = tick;
                match &e.file {
                    Some(f) => Pinned::Open(f.clone()),
                    None => Pinned::Closed,
                }
            }
        }
    }

    /// One more pin of `key`, whose file is `file`.
    pub(super) fn add(&self, key: &str, file: F) {
        let mut inner = self.lock();
        inner.tick += 1;
        let tick = inner.tick;
        let e = inner.files.entry(key.to_string()).or_insert(Entry {
            file: None,
            count: 0,
            used: tick,
        });
        e.count += 1;
        e.used = tick;
        if e.file.is_none() {
            e.file = Some(file);
            inner.open += 1;
        }
        self.within_budget(&mut inner, key);
    }

    /// The descriptor of a pinned file opened again.
    pub(super) fn reopened(&self, key: &str, file: F) {
        let mut inner = self.lock();
        let Some(e) = inner.files.get_mut(key) else {
            return;
        };
        if e.file.is_none() {
            e.file = Some(file);
            inner.open += 1;
            self.within_budget(&mut inner, key);
        }
    }

    /// One pin of `key` less; the last one forgets the file.
    pub(super) fn remove(&self, key: &str) {
        let mut inner = self.lock();
        let Some(e) = inner.files.get_mut(key) else {
            return;
        };
        e.count = e.count.saturating_sub(1);
        if e.count == 0 {
            if let Some(e) = inner.files.remove(key) {
                if e.file.is_some() {
                    inner.open -= 1;
                }
            }
        }
    }

    /// Gives up the descriptors of the least recently used pinned files (never
    /// `keep`'s, just added) until at most the budget are held.
    fn within_budget(&self, inner: &mut Inner<F>, keep: &str) {
        while inner.open > self.budget {
            let oldest = inner
                .files
                .iter()
                .filter(|(k, e)| e.file.is_some() && k.as_str() != keep)
                .min_by_key(|(_, e)| e.used)
                .map(|(k, _)| k.clone());
            let Some(e) = oldest.and_then(|k| inner.files.get_mut(&k)) else {
                return;
            };
            e.file = None;
            inner.open -= 1;
        }
    }

    /// Descriptors held, and files pinned.
    #[cfg(test)]
    pub(super) fn counts(&self) -> (usize, usize) {
        let inner = self.lock();
        (inner.open, inner.files.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptors_stay_within_the_budget_least_recently_used_out() {
        let pins: Pins<u32> = Pins::new(3);
        for k in 0..10u32 {
            pins.add(&k.to_string(), k);
        }
        assert_eq!(pins.counts(), (3, 10));
        assert!(matches!(pins.get("9"), Pinned::Open(9)));
        assert!(matches!(pins.get("0"), Pinned::Closed));
        pins.reopened("0", 100);
        assert!(matches!(pins.get("0"), Pinned::Open(100)));
        assert_eq!(pins.counts().0, 3);
        // "7" was the least recently used of those open: it gave its descriptor up.
        assert!(matches!(pins.get("7"), Pinned::Closed));
        for k in 0..10u32 {
            pins.remove(&k.to_string());
        }
        assert_eq!(pins.counts(), (0, 0));
        assert!(matches!(pins.get("3"), Pinned::No));
    }

    #[test]
    fn a_file_pinned_twice_stays_until_both_pins_go() {
        let pins: Pins<u32> = Pins::new(8);
        pins.add("a", 1);
        pins.add("a", 1);
        pins.remove("a");
        assert!(matches!(pins.get("a"), Pinned::Open(1)));
        pins.remove("a");
        assert!(matches!(pins.get("a"), Pinned::No));
    }

    #[test]
    fn the_budget_follows_the_descriptor_limit() {
        let (kept, pinned) = descriptor_budget(256);
        assert!((16..=256).contains(&kept));
        assert!(pinned >= 32);
        assert_eq!(descriptor_budget(0).0, 16);
    }
}
