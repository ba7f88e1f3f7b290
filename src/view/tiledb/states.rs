//! The merged states a tree keeps open (`latest/`, `at/<T>/`): at most [`KEPT`], the
//! least recently used going first, each for the rescan generation it was merged at.
//!
//! Opening a state reads every visible fragment's metadata, so two readers arriving at
//! once must not both open it: each state has a slot of its own, and the first reader
//! opens it while the others of that state wait on the slot (readers of other states go
//! on). A script that walks `at/1` .. `at/1000000` keeps [`KEPT`] states, not a million.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::error::Result;

/// How many states stay open. Each is small (its indexes grow by 8 bytes per 4096
/// cells), but a state's fragment metadata is not.
pub const KEPT: usize = 64;

/// One state: empty until its first reader opened it.
struct Slot<T> {
    generation: u64,
    value: Mutex<Option<Arc<T>>>,
}

struct Entry<T> {
    slot: Arc<Slot<T>>,
    used: u64,
}

/// The open states by key, bounded, least recently used first out.
pub struct States<K, T> {
    inner: Mutex<(HashMap<K, Entry<T>>, u64)>,
    kept: usize,
}

impl<K: Eq + Hash + Clone, T> Default for States<K, T> {
    fn default() -> Self {
        States::with_capacity(KEPT)
    }
}

fn lock<X>(m: &Mutex<X>) -> MutexGuard<'_, X> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl<K: Eq + Hash + Clone, T> States<K, T> {
    pub fn with_capacity(kept: usize) -> States<K, T> {
        States {
            inner: Mutex::new((HashMap::new(), 0)),
            kept: kept.max(1),
        }
    }

    /// The state `key` of `generation`, opened by `open` if no reader did yet (a failed
    /// open is not kept: the next reader tries again).
    pub fn get(
        &self,
        key: &K,
        generation: u64,
        open: impl FnOnce() -> Result<T>,
    ) -> Result<Arc<T>> {
        let slot = self.slot(key, generation);
        let mut value = lock(&slot.value);
        if let Some(v) = value.as_ref() {
            return Ok(v.clone());
        }
        let v = Arc::new(open()?);
        *value = Some(v.clone());
        Ok(v)
    }

    /// How many states are kept.
    #[cfg(test)]
    fn len(&self) -> usize {
        lock(&self.inner).0.len()
    }

    /// The slot of `key` at `generation`: the kept one, or a new one in its place (an
    /// older generation's, or the least recently used when full).
    fn slot(&self, key: &K, generation: u64) -> Arc<Slot<T>> {
        let mut inner = lock(&self.inner);
        let (map, clock) = &mut *inner;
        *clock += 1;
        let now = *clock;
        if let Some(e) = map.get_mut(key) {
            if e.slot.generation == generation {
                e.used = now;
                return e.slot.clone();
            }
        }
        if !map.contains_key(key) && map.len() >= self.kept {
            if let Some(oldest) = map
                .iter()
                .min_by_key(|(_, e)| e.used)
                .map(|(k, _)| k.clone())
            {
                map.remove(&oldest);
            }
        }
        let slot = Arc::new(Slot {
            generation,
            value: Mutex::new(None),
        });
        map.insert(
            key.clone(),
            Entry {
                slot: slot.clone(),
                used: now,
            },
        );
        slot
    }
}

/// What the tree keeps of a state per rescan (see `merged.rs`): what it is made of, when
/// it last changed, and its name in the disk cache.
#[derive(Clone)]
pub(super) struct StateFacts {
    /// The rescan (tree generation) they were computed at.
    pub(super) scan: u64,
    pub(super) digest: u64,
    pub(super) time: Option<u64>,
    /// The state's name in the disk cache, computed when first asked for (shared by
    /// the clones of these facts).
    pub(super) key: Arc<std::sync::OnceLock<Arc<str>>>,
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// Eight readers of one state that all arrive before the first open ends: one opens,
    /// seven wait and share it. (The open waits until all eight have asked, so without
    /// the slot every one of them would open.)
    #[test]
    fn concurrent_first_readers_open_a_state_once() {
        let states: States<Option<u64>, u64> = States::default();
        let arrived = AtomicUsize::new(0);
        let opens = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    arrived.fetch_add(1, Ordering::SeqCst);
                    let v = states
                        .get(&Some(7), 1, || {
                            opens.fetch_add(1, Ordering::SeqCst);
                            while arrived.load(Ordering::SeqCst) < 8 {
                                std::thread::yield_now();
                            }
                            Ok(42)
                        })
                        .unwrap();
                    assert_eq!(*v, 42);
                });
            }
        });
        assert_eq!(opens.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn the_least_recently_used_goes_and_a_new_generation_reopens() {
        let states: States<u64, u64> = States::with_capacity(3);
        let opens = AtomicUsize::new(0);
        let get = |k: u64, g: u64| {
            *states
                .get(&k, g, || {
                    opens.fetch_add(1, Ordering::SeqCst);
                    Ok(k * 10 + g)
                })
                .unwrap()
        };
        for k in 0..3 {
            get(k, 1);
        }
        get(0, 1); // 1 is now the least recently used
        get(3, 1);
        assert_eq!(states.len(), 3);
        assert_eq!(opens.load(Ordering::SeqCst), 4);
        get(0, 1);
        get(2, 1);
        assert_eq!(
            opens.load(Ordering::SeqCst),
            4,
            "kept states are not reopened"
        );
        get(1, 1);
        assert_eq!(opens.load(Ordering::SeqCst), 5, "the evicted one is");
        assert_eq!(get(2, 2), 22, "a rescan's generation merges again");
        assert_eq!(opens.load(Ordering::SeqCst), 6);
        // A walk over a million timestamps keeps three.
        for k in 100..1100 {
            get(k, 1);
        }
        assert_eq!(states.len(), 3);
    }

    #[test]
    fn a_failed_open_is_tried_again() {
        let states: States<u64, u64> = States::default();
        let err = states.get(&1, 1, || Err(crate::error::Error::NotFound("x".into())));
        assert!(err.is_err());
        assert_eq!(*states.get(&1, 1, || Ok(5)).unwrap(), 5);
    }
}
