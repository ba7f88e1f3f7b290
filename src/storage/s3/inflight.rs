//! Requests in flight: one GET under way, which readers that need its bytes wait for.

use std::fmt;
use std::ops::Range;
use std::sync::{Arc, Condvar, Mutex};

use bytes::Bytes;

use super::disk::ObjectDisk;
use super::sync::lock;
use crate::error::Result;

/// One GET under way: readers that need its bytes wait for it.
pub(crate) struct Fetch {
    pub(crate) key: String,
    pub(crate) range: Range<u64>,
    /// Where its bytes are kept on disk, and the version they must come from.
    pub(crate) disk: Option<ObjectDisk>,
    pub(crate) result: Mutex<Option<Result<Fetched>>>,
    pub(crate) done: Condvar,
}

/// The bytes a GET brought.
#[derive(Debug, Clone)]
pub(crate) struct Fetched {
    pub(crate) bytes: Bytes,
    /// The response agreed with the version the fetch was planned for (or there was
    /// none): false when the object changed since it was listed.
    pub(crate) agrees: bool,
}

impl Fetch {
    pub(crate) fn new(key: &str, range: Range<u64>, disk: Option<&ObjectDisk>) -> Arc<Fetch> {
        Arc::new(Fetch {
            key: key.to_string(),
            range,
            disk: disk.cloned(),
            result: Mutex::new(None),
            done: Condvar::new(),
        })
    }

    pub(crate) fn wait(&self) -> Result<Fetched> {
        let mut result = lock(&self.result);
        loop {
            if let Some(r) = result.as_ref() {
                return r.clone();
            }
            result = self.done.wait(result).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Whether a reader that plans with `disk` may use this fetch's bytes: planned for
    /// the same version of the object (or both for none).
    pub(crate) fn serves(&self, key: &str, disk: Option<&ObjectDisk>) -> bool {
        self.key == key
            && match (&self.disk, disk) {
                (Some(a), Some(b)) => a.version == b.version,
                (None, None) => true,
                _ => false,
            }
    }
}

impl fmt::Debug for Fetch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Fetch({} {:?})", self.key, self.range)
    }
}
