//! Checks of complete entries in the background, before the kernel may read them itself
//! (FUSE passthrough serves a file unchecked, so every block is read back and matched
//! against its record first, once per process: [`Entry::verified_data`]).
//!
//! That check reads the whole file, which for a large cold file takes as long as reading
//! it; on the thread of the open that asked, it would be that open's whole cost before
//! the reader got a byte. So an open only asks for it ([`Checker::ask`]) and is served by
//! the daemon meanwhile (from the cache, each block checked as it is read); a later open
//! finds the file checked and gets passthrough. Checks run one at a time on their own
//! thread, and at most [`QUEUED`] wait: a request beyond that is dropped (the next open
//! of the file asks again), so a reader opening thousands of files never grows a queue.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::Entry;

/// Checks waiting at most: enough for every file of a sequential reader's pass (which
/// asks for each as it opens it, and for the next one ahead), few enough that a reader
/// opening thousands of files holds only this many entries in the queue.
const QUEUED: usize = 64;

/// The checking thread (started at the first check asked for: a mount opens its tree
/// before it forks into the background, and a thread started then would not exist in
/// the daemon), and what it finished. Dropped, it ends the thread and waits for it.
pub struct Checker {
    worker: Mutex<Worker>,
    done: Arc<Done>,
}

#[derive(Default)]
struct Worker {
    queue: Option<SyncSender<Arc<Entry>>>,
    thread: Option<JoinHandle<()>>,
    /// Started (or tried: a thread that could not be made is not tried again).
    tried: bool,
}

#[derive(Default)]
struct Done {
    count: Mutex<u64>,
    changed: Condvar,
    /// The checker is being dropped: what is still queued is not checked.
    stopping: AtomicBool,
}

impl Done {
    fn count(&self) -> MutexGuard<'_, u64> {
        self.count.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Default for Checker {
    fn default() -> Self {
        Checker::new()
    }
}

impl Checker {
    /// A checker with no thread yet. Without a thread (none could be made) nothing is
    /// checked: files are served by the daemon.
    pub fn new() -> Checker {
        Checker {
            worker: Mutex::new(Worker::default()),
            done: Arc::new(Done::default()),
        }
    }

    fn start(&self, w: &mut Worker) {
        w.tried = true;
        let (send, receive) = sync_channel::<Arc<Entry>>(QUEUED);
        let finished = self.done.clone();
        let spawned = std::thread::Builder::new()
            .name("fragfs-check".into())
            .spawn(move || {
                for entry in receive {
                    if !finished.stopping.load(Ordering::Acquire) && entry.verified_data().is_none()
                    {
                        log::debug!("disk cache: {}: not whole on disk", entry.base().display());
                    }
                    let mut n = finished.count();
                    entry.end_check();
                    *n += 1;
                    finished.changed.notify_all();
                }
            });
        match spawned {
            Ok(thread) => {
                w.queue = Some(send);
                w.thread = Some(thread);
            }
            Err(e) => log::warn!("disk cache: no thread to check files: {e}"),
        }
    }

    /// Asks for `entry` to be checked, unless it is checked, not complete, or asked for
    /// already. Never waits: with the queue full, the request is dropped (false).
    pub fn ask(&self, entry: &Arc<Entry>) -> bool {
        if entry.is_verified() || !entry.is_complete() || !entry.begin_check() {
            return true;
        }
        let mut w = self.worker.lock().unwrap_or_else(|e| e.into_inner());
        if !w.tried {
            self.start(&mut w);
        }
        let sent = match &w.queue {
            Some(queue) => queue.try_send(entry.clone()).is_ok(),
            None => false,
        };
        if !sent {
            let _n = self.done.count();
            entry.end_check();
            self.done.changed.notify_all();
        }
        sent
    }

    /// Checks finished since the checker started.
    pub fn finished(&self) -> u64 {
        *self.done.count()
    }

    /// Waits until `entry` is not being checked (nor waiting for it), at most
    /// `timeout`: whether it was checked whole by then.
    pub fn wait(&self, entry: &Entry, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut n = self.done.count();
        while entry.is_being_checked() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            n = self
                .done
                .changed
                .wait_timeout(n, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        entry.is_verified()
    }
}

impl Drop for Checker {
    fn drop(&mut self) {
        self.done.stopping.store(true, Ordering::Release);
        let mut w = self.worker.lock().unwrap_or_else(|e| e.into_inner());
        // The channel closed, the thread ends after the check under way.
        w.queue = None;
        if let Some(thread) = w.thread.take() {
            let _ = thread.join();
        }
    }
}
