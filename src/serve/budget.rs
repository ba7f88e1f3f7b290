//! The memory every door's answers hold at once: one budget of bytes per server. Each
//! chunk of a body read from the tree (its first one too), and each NFS READ's reply,
//! takes its bytes from the budget before it is read and gives them back once the
//! connection has sent them. So a thousand clients that stop reading hold at most the
//! budget between them, not a chunk each; a request that finds the budget spent waits
//! for its share (at most [`WAIT`]) rather than growing memory.
//!
//! Read-ahead (a body's chunks beyond the one it needs next) takes a share only while a
//! quarter of the budget stays free ([`Budget::try_take_ahead`]): fast clients reading
//! ahead must not leave the next response without room for its first chunk.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Bytes of the budget by default: 64 MiB, 128 body chunks of 512 KiB.
pub const DEFAULT_BYTES: usize = 64 << 20;
/// The unit the budget is counted in.
const UNIT: usize = 64 << 10;
/// How long a request waits for its share before it is answered 503.
pub const WAIT: Duration = Duration::from_secs(30);

/// One server's budget.
#[derive(Debug)]
pub struct Budget {
    units: Arc<Semaphore>,
    total: usize,
    /// Answers waiting for the share of their first chunk ([`Budget::take_first`]).
    first_waiting: AtomicUsize,
}

/// Bytes taken from the budget, given back when dropped.
#[derive(Debug)]
pub struct Share(#[allow(dead_code)] OwnedSemaphorePermit);

impl Budget {
    pub fn new(bytes: usize) -> Budget {
        let total = (bytes / UNIT).max(1);
        Budget {
            units: Arc::new(Semaphore::new(total)),
            total,
            first_waiting: AtomicUsize::new(0),
        }
    }

    fn units(&self, bytes: usize) -> u32 {
        bytes.div_ceil(UNIT).clamp(1, self.total) as u32
    }

    /// `bytes` of the budget, waiting at most [`WAIT`] for them; `None` when they did
    /// not come in time (every share held by clients that do not read).
    pub async fn take(&self, bytes: usize) -> Option<Share> {
        let acquire = self.units.clone().acquire_many_owned(self.units(bytes));
        match tokio::time::timeout(WAIT, acquire).await {
            Ok(Ok(permit)) => Some(Share(permit)),
            _ => None,
        }
    }

    /// [`Budget::take`] for the first chunk of an answer (its head waits for it), counted
    /// while it waits: what [`Budget::first_waiting`] tells.
    pub async fn take_first(&self, bytes: usize) -> Option<Share> {
        let _waiting = Waiting::count(&self.first_waiting);
        self.take(bytes).await
    }

    /// Answers waiting now for the share of their first chunk: a test sees a request
    /// held back by a spent budget without giving it time to show otherwise.
    pub fn first_waiting(&self) -> usize {
        self.first_waiting.load(Ordering::Relaxed)
    }

    /// `bytes` of the budget if they are free now.
    pub fn try_take(&self, bytes: usize) -> Option<Share> {
        self.units
            .clone()
            .try_acquire_many_owned(self.units(bytes))
            .ok()
            .map(Share)
    }

    /// `bytes` of the budget for read-ahead: only if a quarter of the budget stays free
    /// after them, for the chunks that responses need next.
    pub fn try_take_ahead(&self, bytes: usize) -> Option<Share> {
        let units = self.units(bytes) as usize;
        if self.units.available_permits() < units + self.total / 4 {
            return None;
        }
        self.try_take(bytes)
    }

    /// Bytes of the budget free now.
    pub fn free(&self) -> usize {
        self.units.available_permits() * UNIT
    }
}

/// One answer counted in [`Budget::first_waiting`] while it lives (a request whose
/// connection goes while it waits is uncounted too).
struct Waiting<'a>(&'a AtomicUsize);

impl<'a> Waiting<'a> {
    fn count(waiting: &'a AtomicUsize) -> Waiting<'a> {
        waiting.fetch_add(1, Ordering::Relaxed);
        Waiting(waiting)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Default for Budget {
    fn default() -> Budget {
        Budget::new(DEFAULT_BYTES)
    }
}
