//! A value loaded once, on first use, that remembers failures only when they are
//! permanent. Fragment metadata, tile lists and the like are immutable, so a loaded value
//! (or bad bytes) can be kept for good; a transient I/O failure (a disk hiccup, an object
//! store's 503) must not be: the next use tries again.

use std::sync::{Mutex, OnceLock};

use crate::error::Result;

pub struct Lazy<T> {
    value: OnceLock<Result<T>>,
    /// Serialises loads, so concurrent first uses load once.
    loading: Mutex<()>,
}

impl<T> Default for Lazy<T> {
    fn default() -> Self {
        Lazy {
            value: OnceLock::new(),
            loading: Mutex::new(()),
        }
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for Lazy<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Lazy").field(&self.value.get()).finish()
    }
}

impl<T: Clone> Lazy<T> {
    /// A cell that starts out loaded.
    pub fn loaded(value: T) -> Lazy<T> {
        Lazy {
            value: OnceLock::from(Ok(value)),
            loading: Mutex::new(()),
        }
    }

    /// The value, loading it with `load` on first use. A transient error is returned
    /// without being kept; anything else is kept and returned from then on.
    pub fn get_or_load(&self, load: impl FnOnce() -> Result<T>) -> Result<T> {
        if let Some(done) = self.value.get() {
            return done.clone();
        }
        let _one_at_a_time = self.loading.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(done) = self.value.get() {
            return done.clone();
        }
        let result = load();
        if !matches!(&result, Err(e) if e.is_transient()) {
            // Cannot fail: only this thread sets the value, under the lock.
            let _ = self.value.set(result.clone());
        }
        result
    }

    /// The value (or permanent error) if it is loaded; never loads.
    pub fn get(&self) -> Option<Result<T>> {
        self.value.get().cloned()
    }

    /// Whether a value (or a permanent error) is kept.
    pub fn is_loaded(&self) -> bool {
        self.value.get().is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    #[test]
    fn transient_failures_are_retried_permanent_ones_kept() {
        let cell: Lazy<u32> = Lazy::default();
        let flaky = || Err(Error::io("x", std::io::Error::other("reset")));
        assert!(cell.get_or_load(flaky).is_err());
        assert!(!cell.is_loaded());
        assert_eq!(cell.get_or_load(|| Ok(7)).unwrap(), 7);
        assert_eq!(cell.get_or_load(|| Ok(8)).unwrap(), 7, "loaded once");
        let bad: Lazy<u32> = Lazy::default();
        assert!(bad.get_or_load(|| Err(Error::corrupt("x", "bad"))).is_err());
        assert!(bad.is_loaded());
        assert!(bad.get_or_load(|| Ok(1)).is_err(), "bad bytes stay bad");
    }
}
