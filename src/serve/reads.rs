//! The threads that read response bodies from the tree, decoding them: a fixed set per
//! server, as the mount has its FUSE threads. Tokio's blocking pool would run the same
//! reads spread over up to four times as many threads, each read then finding its
//! decoder state and the core's caches cold: a sequential GET of the bench's ZSTD
//! attribute ran about 17% slower so. The blocking pool keeps every other blocking call
//! (answers, listings).
//!
//! A read that hangs (storage that does not answer) holds one of these threads: an
//! object-storage tree gets four per serving thread, as many as the blocking pool has,
//! so that waits on the network do not queue behind each other.

use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};

use crate::error::{Error, Result};

type Job = Box<dyn FnOnce() + Send>;

pub struct BodyReads {
    jobs: Sender<Job>,
}

impl BodyReads {
    /// Starts `threads` readers (at least one).
    pub fn new(threads: usize) -> BodyReads {
        let (jobs, queue) = channel::<Job>();
        let queue = Arc::new(Mutex::new(queue));
        for i in 0..threads.max(1) {
            let queue = queue.clone();
            if let Err(e) = std::thread::Builder::new()
                .name(format!("fragfs-body-{i}"))
                .spawn(move || work(&queue))
            {
                log::warn!("serve: body reader not started: {e}");
            }
        }
        BodyReads { jobs }
    }

    /// Runs `read` on a reader thread and waits (asynchronously) for its result.
    pub async fn run<T: Send + 'static>(
        &self,
        read: impl FnOnce() -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let (answer, answered) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move || {
            let _ = answer.send(read());
        });
        let gone = || {
            let e = std::io::Error::other("the body reader failed");
            Error::io(std::path::Path::new("body reader"), e)
        };
        self.jobs.send(job).map_err(|_| gone())?;
        answered.await.map_err(|_| gone())?
    }
}

fn work(queue: &Mutex<Receiver<Job>>) {
    loop {
        let job = match queue.lock().unwrap_or_else(|e| e.into_inner()).recv() {
            Ok(job) => job,
            Err(_) => return, // the server was dropped
        };
        // A read that panics fails its own response (its answer is dropped), not the
        // thread.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
    }

    #[test]
    fn reads_run_on_the_readers_and_a_panic_fails_only_its_own() {
        let reads = BodyReads::new(1);
        let rt = runtime();
        let name = rt.block_on(reads.run(|| {
            Ok(std::thread::current()
                .name()
                .unwrap_or_default()
                .to_string())
        }));
        assert_eq!(name.unwrap(), "fragfs-body-0");
        let failed = rt.block_on(reads.run(|| -> Result<()> { panic!("a bad read") }));
        assert!(failed.is_err());
        // The one reader survived the panic.
        assert_eq!(rt.block_on(reads.run(|| Ok(7))).unwrap(), 7);
        let e = rt.block_on(reads.run(|| -> Result<()> { Err(Error::NotFound("x".into())) }));
        assert!(matches!(e, Err(Error::NotFound(_))));
    }
}
