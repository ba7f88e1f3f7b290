//! One lock per key, made when first asked for and dropped when no one holds it: work
//! that must run once per file (growing a text file's index) waits only for the same
//! file, never for every file of the mount.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex};

#[derive(Debug)]
pub struct KeyedLocks<K> {
    locks: Mutex<HashMap<K, Arc<Mutex<()>>>>,
}

impl<K: Eq + Hash + Clone> Default for KeyedLocks<K> {
    fn default() -> Self {
        KeyedLocks {
            locks: Mutex::new(HashMap::new()),
        }
    }
}

impl<K: Eq + Hash + Clone> KeyedLocks<K> {
    /// The lock of `key`: lock it for as long as the work runs. Locks no one holds any
    /// more are dropped on the way, so the map holds only the keys in use.
    pub fn of(&self, key: &K) -> Arc<Mutex<()>> {
        let mut locks = self.locks.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(lock) = locks.get(key) {
            return lock.clone();
        }
        locks.retain(|_, l| Arc::strong_count(l) > 1);
        let lock = Arc::new(Mutex::new(()));
        locks.insert(key.clone(), lock.clone());
        lock
    }

    /// How many keys have a lock now.
    #[cfg(test)]
    fn count(&self) -> usize {
        self.locks.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_key_held_leaves_the_others_free_and_unused_locks_go() {
        let locks = KeyedLocks::default();
        let a = locks.of(&1u64);
        let _held = a.lock().unwrap();
        assert!(locks.of(&2).try_lock().is_ok(), "another key is free");
        assert!(locks.of(&1).try_lock().is_err(), "the same key waits");
        for k in 3..1000 {
            drop(locks.of(&k).lock().unwrap());
        }
        assert!(locks.count() <= 2, "{} locks kept", locks.count());
    }
}
