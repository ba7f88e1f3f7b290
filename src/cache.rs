//! A least-recently-used cache bounded in bytes: the read engine's holds decoded chunks
//! and the small chunk indexes that locate them, the views' (`view::cache`) rendered
//! files and text indexes; together they stay within `--cache-size`. Fragment metadata
//! has a cache of its own (`array::fragment::METADATA_CACHE`); enumerations and the
//! inode tables (`view::nodes`) are kept outside both.
//!
//! Loads are de-duplicated: when several threads (FUSE workers, read-ahead) want the same
//! missing chunk, one decodes it and the others wait for its result, so read-ahead never
//! makes a chunk cost twice.
//!
//! It sits below every layer that keeps something (`array/` its fragment metadata,
//! `read/` its chunks, `view/` its rendered files), so none of them reaches up into
//! another for it.

use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use crate::error::Result;

/// Anything cached knows its size in bytes.
pub trait Weigh {
    fn weight(&self) -> u64;
}

struct Entry<V> {
    value: Arc<V>,
    tick: u64,
    weight: u64,
}

struct Lru<K, V> {
    map: HashMap<K, Entry<V>>,
    order: BTreeMap<u64, K>,
    tick: u64,
    used: u64,
}

/// The result of one load, shared by every thread that asked for it meanwhile.
type LoadSlot<V> = Arc<OnceLock<Result<Arc<V>>>>;

pub struct Cache<K, V> {
    capacity: u64,
    inner: Mutex<Lru<K, V>>,
    loading: Mutex<HashMap<K, LoadSlot<V>>>,
}

/// A poisoned lock only means another thread panicked while holding it; the maps stay
/// consistent enough to go on, and the daemon must keep serving.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl<K: Hash + Eq + Clone, V: Weigh> Cache<K, V> {
    pub fn new(capacity: u64) -> Self {
        Cache {
            capacity,
            inner: Mutex::new(Lru {
                map: HashMap::new(),
                order: BTreeMap::new(),
                tick: 0,
                used: 0,
            }),
            loading: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Lru<K, V>> {
        lock(&self.inner)
    }

    pub fn get(&self, key: &K) -> Option<Arc<V>> {
        let mut lru = self.lock();
        lru.tick += 1;
        let tick = lru.tick;
        let entry = lru.map.get_mut(key)?;
        let old = std::mem::replace(&mut entry.tick, tick);
        let value = entry.value.clone();
        lru.order.remove(&old);
        lru.order.insert(tick, key.clone());
        Some(value)
    }

    pub fn insert(&self, key: K, value: Arc<V>) {
        let weight = value.weight();
        if weight > self.capacity {
            return; // Served once, never kept: the bound holds even for huge chunks.
        }
        let mut lru = self.lock();
        lru.tick += 1;
        let tick = lru.tick;
        if let Some(old) = lru.map.remove(&key) {
            lru.order.remove(&old.tick);
            lru.used -= old.weight;
        }
        while lru.used + weight > self.capacity {
            let Some((_, victim)) = lru.order.pop_first() else {
                break;
            };
            if let Some(e) = lru.map.remove(&victim) {
                lru.used -= e.weight;
            }
        }
        lru.used += weight;
        lru.order.insert(tick, key.clone());
        lru.map.insert(
            key,
            Entry {
                value,
                tick,
                weight,
            },
        );
    }

    /// Returns the cached value, or loads, caches and returns it. Concurrent callers for
    /// the same key wait for one load. Errors are not cached: the next call tries again.
    pub fn get_or_load(&self, key: K, load: impl FnOnce() -> Result<V>) -> Result<Arc<V>> {
        if let Some(v) = self.get(&key) {
            return Ok(v);
        }
        let slot = lock(&self.loading).entry(key.clone()).or_default().clone();
        let result = slot
            .get_or_init(|| {
                // Another thread may have finished this load between our miss and now.
                if let Some(v) = self.get(&key) {
                    return Ok(v);
                }
                let value = Arc::new(load()?);
                self.insert(key.clone(), value.clone());
                Ok(value)
            })
            .clone();
        let mut loading = lock(&self.loading);
        if loading.get(&key).is_some_and(|s| Arc::ptr_eq(s, &slot)) {
            loading.remove(&key);
        }
        result
    }

    /// Drops `key`'s value, if cached (what it belongs to is gone).
    pub fn remove(&self, key: &K) {
        let mut lru = self.lock();
        if let Some(e) = lru.map.remove(key) {
            lru.order.remove(&e.tick);
            lru.used -= e.weight;
        }
    }

    /// The cached value, without touching its recency (a `stat` is no use of it).
    pub fn peek(&self, key: &K) -> Option<Arc<V>> {
        self.lock().map.get(key).map(|e| e.value.clone())
    }

    /// Whether `key` is cached now (without touching its recency).
    pub fn contains(&self, key: &K) -> bool {
        self.lock().map.contains_key(key)
    }

    /// The bound, in bytes.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// Bytes held now.
    pub fn used(&self) -> u64 {
        self.lock().used
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Weigh for Vec<u8> {
        fn weight(&self) -> u64 {
            self.len() as u64
        }
    }

    #[test]
    fn evicts_least_recently_used_within_the_byte_bound() {
        let c: Cache<u32, Vec<u8>> = Cache::new(10);
        c.insert(1, Arc::new(vec![0; 4]));
        c.insert(2, Arc::new(vec![0; 4]));
        assert!(c.get(&1).is_some());
        c.insert(3, Arc::new(vec![0; 4]));
        assert!(c.get(&2).is_none(), "2 was least recently used");
        assert!(c.get(&1).is_some() && c.get(&3).is_some());
        assert!(c.used() <= 10);
        c.insert(4, Arc::new(vec![0; 11]));
        assert!(c.get(&4).is_none(), "larger than the whole cache: not kept");
    }

    #[test]
    fn concurrent_loads_of_one_key_run_once() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let c: Cache<u32, Vec<u8>> = Cache::new(1 << 20);
        let loads = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    let v = c
                        .get_or_load(7, || {
                            loads.fetch_add(1, Ordering::SeqCst);
                            std::thread::sleep(std::time::Duration::from_millis(50));
                            Ok(vec![1, 2, 3])
                        })
                        .unwrap();
                    assert_eq!(*v, [1, 2, 3]);
                });
            }
        });
        assert_eq!(loads.load(Ordering::SeqCst), 1);
        assert!(
            c.loading.lock().unwrap().is_empty(),
            "finished loads are forgotten"
        );
    }

    #[test]
    fn failed_loads_are_not_cached() {
        let c: Cache<u32, Vec<u8>> = Cache::new(100);
        let err = crate::Error::corrupt("x", "bad");
        assert!(c.get_or_load(1, || Err(err.clone())).is_err());
        assert_eq!(*c.get_or_load(1, || Ok(vec![9])).unwrap(), [9]);
    }
}
