//! Read-ahead workers: while a sequential reader is served, they prepare what it reads
//! next ([`FileTree::read_ahead`]: for field files, the stored tiles brought into the
//! page cache and their chunk headers walked; for text files, blocks rendered into the
//! cache). Decoding itself happens on the serving threads, which the kernel's own
//! read-ahead keeps busy, straight into their replies.
//!
//! Hints are dropped, never queued without bound, when the workers are behind: read-ahead
//! is an optimisation, and a reader that outruns it simply does the work itself (the cache
//! de-duplicates a chunk index or block that both want).

use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use super::tree::FileTree;
use super::Node;

/// Hints waiting for a worker; beyond this the newest are dropped.
const QUEUE: usize = 64;

struct Job {
    node: Node,
    offset: u64,
    len: u64,
}

pub struct Prefetcher {
    jobs: Option<SyncSender<Job>>,
    workers: Vec<JoinHandle<()>>,
}

impl Prefetcher {
    /// Starts `threads` workers (at least one) reading ahead for `view`.
    pub fn new(view: Arc<dyn FileTree>, threads: usize) -> Prefetcher {
        let (jobs, queue) = sync_channel::<Job>(QUEUE);
        let queue = Arc::new(Mutex::new(queue));
        let workers = (0..threads.max(1))
            .filter_map(|i| {
                let (view, queue) = (view.clone(), queue.clone());
                std::thread::Builder::new()
                    .name(format!("fragfs-ahead-{i}"))
                    .spawn(move || work(&*view, &queue))
                    .map_err(|e| log::warn!("read-ahead worker not started: {e}"))
                    .ok()
            })
            .collect();
        Prefetcher {
            jobs: Some(jobs),
            workers,
        }
    }

    /// Asks for bytes `[offset, offset + len)` of `node` to be prepared ahead.
    pub fn hint(&self, node: Node, offset: u64, len: u64) {
        let Some(jobs) = &self.jobs else { return };
        match jobs.try_send(Job { node, offset, len }) {
            Ok(()) | Err(TrySendError::Full(_)) => {}
            Err(TrySendError::Disconnected(_)) => log::debug!("read-ahead workers are gone"),
        }
    }
}

fn work(view: &dyn FileTree, queue: &Mutex<Receiver<Job>>) {
    loop {
        let job = match queue.lock().unwrap_or_else(|e| e.into_inner()).recv() {
            Ok(job) => job,
            Err(_) => return, // the prefetcher was dropped
        };
        // Errors surface when the reader itself reaches these bytes, with its own EIO.
        if let Err(e) = view.read_ahead(job.node, job.offset, job.len) {
            log::debug!("read-ahead of {:?} at {}: {e}", job.node, job.offset);
        }
    }
}

impl Drop for Prefetcher {
    fn drop(&mut self) {
        self.jobs = None;
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}
