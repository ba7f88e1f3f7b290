//! The Zarr stores built so far: one per state, so a listing, a lookup or a read under
//! `zarr/` finds its store instead of describing every array again. A state is named as
//! the merged states are, by its timestamp, with the generation of it the store
//! describes: a rescan that changed the state makes the next use build it again. The
//! number kept is bounded (the least recently used goes), as nothing may grow with the
//! number of paths looked up.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::encode::zarr::Description;

/// How many states keep a store: as many as keep a merged state.
const STATES: usize = 64;

/// A state's store, or why it has none (a sparse array, a domain Zarr cannot grid): the
/// reason follows from the schema as surely as the store, so it is kept the same way.
pub(in crate::view::tiledb) type Built = Result<Arc<Description>, String>;

/// A state: its timestamp (`None`, now).
type State = Option<u64>;

/// The stores of one array's states.
pub(in crate::view::tiledb) struct ZarrStores {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    /// Per state, the generation its store describes, the store and when it was last
    /// used.
    stores: HashMap<State, (u64, Built, u64)>,
    /// Counts uses, to find the least recently used.
    clock: u64,
    /// How many stores were built, for the tests that prove they are built once.
    #[cfg(test)]
    builds: usize,
}

impl ZarrStores {
    pub(in crate::view::tiledb) fn new() -> ZarrStores {
        ZarrStores {
            inner: Mutex::new(Inner::default()),
        }
    }

    /// The store of the state at `w` in rescan generation `generation`, built by `build`
    /// unless it was already. The build runs under the lock: it is pure and quick (the
    /// merged state it describes is opened before), and two threads must not both build.
    pub(in crate::view::tiledb) fn get_or_build(
        &self,
        w: Option<u64>,
        generation: u64,
        build: impl FnOnce() -> Result<Description, String>,
    ) -> Built {
        let mut inner = self.lock();
        inner.clock += 1;
        let now = inner.clock;
        if let Some((g, store, used)) = inner.stores.get_mut(&w) {
            if *g == generation {
                *used = now;
                return store.clone();
            }
        }
        let store: Built = build().map(Arc::new);
        #[cfg(test)]
        {
            inner.builds += 1;
        }
        // (Another generation of this state is replaced below.)
        if !inner.stores.contains_key(&w) && inner.stores.len() >= STATES {
            let oldest = inner
                .stores
                .iter()
                .min_by_key(|(_, (_, _, used))| *used)
                .map(|(&state, _)| state);
            if let Some(state) = oldest {
                inner.stores.remove(&state);
            }
        }
        inner.stores.insert(w, (generation, store.clone(), now));
        store
    }

    /// How many stores were built so far.
    #[cfg(test)]
    pub(in crate::view::tiledb) fn builds(&self) -> usize {
        self.lock().builds
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn empty() -> Result<Description, String> {
        Ok(Description {
            arrays: Vec::new(),
            not_shown: Vec::new(),
        })
    }

    #[test]
    fn a_state_is_built_once_per_generation() {
        let stores = ZarrStores::new();
        let a = stores.get_or_build(None, 0, empty).unwrap();
        let b = stores
            .get_or_build(None, 0, || panic!("built again"))
            .unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        stores.get_or_build(Some(5), 0, empty).unwrap();
        assert_eq!(stores.builds(), 2);
        // A rescan that changed the state: built again, in the old one's place.
        let c = stores.get_or_build(None, 1, empty).unwrap();
        assert!(!Arc::ptr_eq(&a, &c));
        assert_eq!(stores.builds(), 3);
        assert_eq!(stores.lock().stores.len(), 2);
        // One that did not change the state at 5 keeps its store.
        stores
            .get_or_build(Some(5), 0, || panic!("built again"))
            .unwrap();
        assert_eq!(stores.builds(), 3);
    }

    #[test]
    fn the_reason_a_state_has_no_store_is_kept_too() {
        let stores = ZarrStores::new();
        assert!(stores
            .get_or_build(None, 0, || Err("sparse".into()))
            .is_err());
        let again = stores.get_or_build(None, 0, || panic!("built again"));
        assert_eq!(again.err().as_deref(), Some("sparse"));
        assert_eq!(stores.builds(), 1);
    }

    #[test]
    fn the_least_recently_used_state_goes_first() {
        let stores = ZarrStores::new();
        for t in 0..STATES as u64 {
            stores.get_or_build(Some(t), 0, empty).unwrap();
        }
        // State 0 is used again: state 1 is now the least recently used.
        stores
            .get_or_build(Some(0), 0, || panic!("state 0 was kept"))
            .unwrap();
        stores.get_or_build(Some(1000), 0, empty).unwrap();
        assert_eq!(stores.lock().stores.len(), STATES);
        stores
            .get_or_build(Some(0), 0, || panic!("state 0 was evicted"))
            .unwrap();
        stores
            .get_or_build(Some(2), 0, || panic!("state 2 was evicted"))
            .unwrap();
        let before = stores.builds();
        stores.get_or_build(Some(1), 0, empty).unwrap();
        assert_eq!(stores.builds(), before + 1, "state 1 should have gone");
    }
}
