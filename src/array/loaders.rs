//! The loader threads of the process: every preload of fragment metadata (a time-travel
//! state over thousands of fragments, `info`) runs on these [`THREADS`] threads, started
//! once, rather than starting threads of its own on each call. Loads mostly wait on a
//! disk or a server, so the threads are many for two cores; being shared, they stay
//! that many however many states open at once.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex, OnceLock};

/// Loads in flight: enough to keep a disk's (or a connection pool's) queue full.
pub const THREADS: usize = 16;

type Job = Box<dyn FnOnce() + Send>;

struct Pool {
    jobs: Mutex<Sender<Job>>,
}

static POOL: OnceLock<Pool> = OnceLock::new();
static STARTED: AtomicUsize = AtomicUsize::new(0);

fn pool() -> &'static Pool {
    POOL.get_or_init(|| {
        let (jobs, queue) = channel::<Job>();
        let queue = Arc::new(Mutex::new(queue));
        for i in 0..THREADS {
            let queue = queue.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("fragfs-load-{i}"))
                .spawn(move || serve(&queue));
            if spawned.is_ok() {
                STARTED.fetch_add(1, Ordering::Relaxed);
            }
        }
        Pool {
            jobs: Mutex::new(jobs),
        }
    })
}

fn serve(queue: &Mutex<Receiver<Job>>) {
    loop {
        let job = queue.lock().unwrap_or_else(|e| e.into_inner()).recv();
        match job {
            Ok(job) => job(),
            Err(_) => return,
        }
    }
}

/// How many loader threads the process started (at most [`THREADS`], ever).
pub fn threads_started() -> usize {
    STARTED.load(Ordering::Relaxed)
}

/// A batch of work items, taken one at a time by whoever runs it.
struct Batch {
    n: usize,
    next: AtomicUsize,
    done: Mutex<usize>,
    all_done: Condvar,
    work: Box<dyn Fn(usize) + Send + Sync>,
}

impl Batch {
    fn run(&self) {
        loop {
            let i = self.next.fetch_add(1, Ordering::Relaxed);
            if i >= self.n {
                return;
            }
            // A panicking item must not leave the caller waiting for it.
            let _ = catch_unwind(AssertUnwindSafe(|| (self.work)(i)));
            let mut done = self.done.lock().unwrap_or_else(|e| e.into_inner());
            *done += 1;
            if *done == self.n {
                self.all_done.notify_all();
            }
        }
    }
}

/// Runs `work(i)` for every `i` in `0..n` on the loader threads and the calling thread,
/// and returns when every item is done. The caller works too, so a batch finishes even
/// while the loaders are busy with others.
pub fn for_each(n: usize, work: impl Fn(usize) + Send + Sync + 'static) {
    let batch = Arc::new(Batch {
        n,
        next: AtomicUsize::new(0),
        done: Mutex::new(0),
        all_done: Condvar::new(),
        work: Box::new(work),
    });
    {
        let jobs = pool().jobs.lock().unwrap_or_else(|e| e.into_inner());
        for _ in 1..n.min(THREADS + 1) {
            let batch = batch.clone();
            if jobs.send(Box::new(move || batch.run())).is_err() {
                break;
            }
        }
    }
    batch.run();
    let mut done = batch.done.lock().unwrap_or_else(|e| e.into_inner());
    while *done < n {
        done = batch.all_done.wait(done).unwrap_or_else(|e| e.into_inner());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Many batches, some at once: every item runs exactly once, and the process never
    /// has more than [`THREADS`] loader threads.
    #[test]
    fn batches_share_one_set_of_threads_and_run_every_item_once() {
        let counts: Arc<Vec<AtomicUsize>> =
            Arc::new((0..4000).map(|_| AtomicUsize::new(0)).collect());
        std::thread::scope(|s| {
            for b in 0..8 {
                let counts = counts.clone();
                s.spawn(move || {
                    for round in 0..5 {
                        let counts = counts.clone();
                        let base = (b * 5 + round) * 100;
                        for_each(100, move |i| {
                            counts[base + i].fetch_add(1, Ordering::Relaxed);
                        });
                    }
                });
            }
        });
        assert!(counts.iter().all(|c| c.load(Ordering::Relaxed) == 1));
        assert!(
            threads_started() <= THREADS,
            "{} threads",
            threads_started()
        );
        assert!(threads_started() > 0);
    }
}
