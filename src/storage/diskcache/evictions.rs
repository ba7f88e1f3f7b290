//! The eviction thread's orders, as the writers that ask for passes and the thread that
//! runs them share them (the passes themselves are in `evict.rs`).

use std::sync::{Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The eviction thread's orders: whether a pass is due, under way, and how many ran.
#[derive(Default)]
pub(crate) struct Evictions {
    state: Mutex<State>,
    changed: Condvar,
    thread: Mutex<Thread>,
}

/// The eviction thread, once started.
#[derive(Default)]
pub(crate) struct Thread {
    pub(crate) handle: Option<JoinHandle<()>>,
    /// Started (or tried: a thread that could not be made is not tried again).
    pub(crate) tried: bool,
}

#[derive(Default)]
struct State {
    due: bool,
    /// The most bytes a write refused room asked for since the last pass began.
    wanted: u64,
    running: bool,
    stop: bool,
    passes: u64,
}

impl Evictions {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn thread(&self) -> MutexGuard<'_, Thread> {
        self.thread.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Tells the thread to end, and waits until it did.
    pub(crate) fn stop_and_join(&self) {
        self.state().stop = true;
        self.changed.notify_all();
        let handle = self.thread().handle.take();
        if let Some(handle) = handle {
            let _ = handle.join();
        }
    }

    /// Asks for a pass that makes room for `wanted` bytes (one more pass, if one is
    /// under way; requests while one is due are one request). Never waits.
    pub(crate) fn kick(&self, wanted: u64) {
        let mut s = self.state();
        s.wanted = s.wanted.max(wanted);
        if !s.due {
            s.due = true;
            self.changed.notify_all();
        }
    }

    pub(crate) fn stopping(&self) -> bool {
        self.state().stop
    }

    pub(crate) fn passes(&self) -> u64 {
        self.state().passes
    }

    /// Waits until no pass is due or under way, at most `timeout` (true at once when
    /// there is no thread to wait for).
    pub(crate) fn wait_idle(&self, timeout: Duration) -> bool {
        if self.thread().handle.is_none() {
            return true;
        }
        let deadline = Instant::now() + timeout;
        let mut s = self.state();
        while (s.due || s.running) && !s.stop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            s = self
                .changed
                .wait_timeout(s, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        true
    }

    /// The thread's wait for its next pass, and the room it is to make: `None` when
    /// the thread is to end.
    pub(crate) fn next(&self) -> Option<u64> {
        let mut s = self.state();
        while !s.due && !s.stop {
            s = self.changed.wait(s).unwrap_or_else(|e| e.into_inner());
        }
        if s.stop {
            s.running = false;
            self.changed.notify_all();
            return None;
        }
        s.due = false;
        s.running = true;
        Some(std::mem::take(&mut s.wanted))
    }

    pub(crate) fn finished(&self) {
        let mut s = self.state();
        s.running = false;
        s.passes += 1;
        self.changed.notify_all();
    }
}
