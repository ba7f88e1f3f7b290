//! Text files rendered to learn their size, apart from the threads that serve bytes.
//!
//! A text file (`cells.csv`, `values.txt`) shows its size only once it was rendered
//! whole ([`crate::view::Stat::exact_size`]). Clients that must know it (an HTTP `HEAD`
//! or range, a WebDAV `getcontentlength`, an S3 listing or `HeadObject`, an NFS
//! `GETATTR`) used to render it on the thread that answered them: eight of them on a
//! large array took both threads of `--threads 2`, and a `GET array.json` waited 6-7 s.
//! Now a door that needs a size it does not know asks this pool: a few threads of its
//! own (half the serving threads), a bounded queue, one render per file however many
//! ask, and a deadline per request. The request waits without holding a thread; past
//! the deadline it is answered "try again later" in its protocol's way (HTTP and S3:
//! 503 with `Retry-After`; NFS: `NFS3ERR_JUKEBOX`) while the render goes on, so the
//! retry finds the size known.

use std::collections::HashMap;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{oneshot, OwnedSemaphorePermit, Semaphore};

use crate::error::Error;
use crate::view::held::Held;
use crate::view::{FileTree, Ino};

/// Renders queued or running at once; a request finding them all taken waits for one
/// (within its deadline): the queue cannot grow without end.
const QUEUE: usize = 64;
/// Outcomes remembered for the answers that asked for them (a tree also keeps the
/// sizes it learnt, by its own rules).
const KNOWN: usize = 4096;

/// Why a size is not given.
#[derive(Debug, Clone)]
pub enum Unsized {
    /// The render did not end within the deadline (or did not start: every place in
    /// the queue was taken); a render started goes on.
    Late,
    /// The file cannot be read or rendered.
    Failed(Error),
}

/// A render to do: the file, held while it renders, and its place in the queue.
type Job = (Held, OwnedSemaphorePermit);
/// What a render gives its waiters.
type Outcome = Result<u64, Error>;

/// The sizing pool of one served tree.
pub struct Sizing {
    tree: Arc<dyn FileTree>,
    jobs: SyncSender<Job>,
    /// Places in the queue (queued and running renders).
    places: Arc<Semaphore>,
    /// Requests waiting for each file being rendered.
    waiting: Mutex<HashMap<Ino, Vec<oneshot::Sender<Outcome>>>>,
    /// Outcomes of renders, with the tree's generation then.
    known: Mutex<HashMap<Ino, (u64, Outcome)>>,
    deadline: Duration,
}

impl Sizing {
    /// A pool of `threads` threads over `tree`, each request waiting at most `deadline`.
    pub fn start(tree: Arc<dyn FileTree>, threads: usize, deadline: Duration) -> Arc<Sizing> {
        let (jobs, queue) = sync_channel::<Job>(QUEUE);
        let sizing = Arc::new(Sizing {
            tree,
            jobs,
            places: Arc::new(Semaphore::new(QUEUE)),
            waiting: Mutex::default(),
            known: Mutex::default(),
            deadline,
        });
        let queue = Arc::new(Mutex::new(queue));
        for i in 0..threads.max(1) {
            let (queue, weak) = (queue.clone(), Arc::downgrade(&sizing));
            let spawned = std::thread::Builder::new()
                .name(format!("fragfs-size-{i}"))
                .spawn(move || work(&queue, &weak));
            if let Err(e) = spawned {
                log::error!("serve: no thread to render text files: {e}");
            }
        }
        sizing
    }

    /// The size of `ino` if a render learnt it at the tree's current generation.
    pub fn known(&self, ino: Ino) -> Option<u64> {
        self.outcome(ino).and_then(|r| r.ok())
    }

    /// What rendering `ino` gave at the tree's current generation: its size, or why it
    /// failed; `None` when it was not rendered (or is still being).
    pub fn outcome(&self, ino: Ino) -> Option<Result<u64, Error>> {
        let generation = self.tree.generation();
        lock(&self.known)
            .get(&ino)
            .filter(|(g, _)| *g == generation)
            .map(|(_, r)| r.clone())
    }

    /// The size of `ino`, rendered in the pool (once, however many ask); waits at most
    /// the deadline, holding no thread.
    pub async fn size(&self, ino: Ino) -> Result<u64, Unsized> {
        if let Some(size) = self.known(ino) {
            return Ok(size);
        }
        let deadline = tokio::time::Instant::now() + self.deadline;
        let (tell, told) = oneshot::channel();
        let first = {
            let mut waiting = lock(&self.waiting);
            match waiting.get_mut(&ino) {
                Some(others) => {
                    others.push(tell);
                    false
                }
                None => {
                    waiting.insert(ino, vec![tell]);
                    true
                }
            }
        };
        if first {
            let place = tokio::time::timeout_at(deadline, self.places.clone().acquire_owned());
            match place.await {
                Ok(Ok(place)) => match Held::take(&self.tree, ino) {
                    // A place held is room in the channel: it never is full here.
                    Ok(held) => {
                        if self.jobs.try_send((held, place)).is_err() {
                            self.abandon(ino);
                        }
                    }
                    Err(e) => self.finished(ino, Err(e)),
                },
                _ => self.abandon(ino),
            }
        }
        match tokio::time::timeout_at(deadline, told).await {
            Ok(Ok(result)) => result.map_err(Unsized::Failed),
            Ok(Err(_)) | Err(_) => Err(Unsized::Late),
        }
    }

    /// Gives up a render that could not be queued: its waiters are told it is late.
    fn abandon(&self, ino: Ino) {
        lock(&self.waiting).remove(&ino);
    }

    fn finished(&self, ino: Ino, result: Result<u64, Error>) {
        {
            let mut known = lock(&self.known);
            if known.len() >= KNOWN {
                // Rarely reached (a size is needed once per file): start again rather
                // than keep an order.
                known.clear();
            }
            known.insert(ino, (self.tree.generation(), result.clone()));
        }
        let waiting = lock(&self.waiting).remove(&ino).unwrap_or_default();
        for tell in waiting {
            let _ = tell.send(result.clone());
        }
    }
}

/// One thread of the pool: renders the files queued until the pool is gone.
fn work(queue: &Mutex<Receiver<Job>>, sizing: &std::sync::Weak<Sizing>) {
    loop {
        let (held, _place) = match lock(queue).recv() {
            Ok(job) => job,
            Err(_) => return,
        };
        let Some(sizing) = sizing.upgrade() else {
            return;
        };
        let result = held.tree.size(held.ino);
        if let Err(e) = &result {
            log::error!("serve: sizing file {}: {e}", held.ino);
        }
        sizing.finished(held.ino, result);
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
