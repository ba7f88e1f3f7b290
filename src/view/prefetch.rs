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

use super::{FileTree, Ino};

/// Hints waiting for a worker; beyond this the newest are dropped.
const QUEUE: usize = 64;

/// How far ahead of a sequential reader its file is prepared.
pub const READ_AHEAD: u64 = 32 << 20;

/// How far from the end of the previous read a read may start and still continue a
/// sequential stream: the kernel's read-ahead requests reach several threads and may
/// finish out of order.
const STREAM_SLACK: u64 = 2 << 20;

/// The reads of one open file, to tell a sequential reader (worth preparing ahead) from a
/// random one (not worth a 32 MiB read from disk).
#[derive(Debug, Default, Clone, Copy)]
pub struct Stream {
    /// End of the furthest read so far.
    next: u64,
    /// Reads in a row that continued the stream.
    streak: u32,
    /// End of what read-ahead was already asked for.
    ahead_until: u64,
}

impl Stream {
    /// Notes a read of `[offset, offset + len)` of a file of `size` bytes; returns the
    /// range to prepare ahead, if any. A stream counts as sequential from its first read
    /// at offset 0, or after two reads in a row that continue it (a random reader
    /// lands near its previous read now and then, rarely twice in a row); it is asked
    /// for in large steps, so a stream of small reads makes few hints.
    pub fn read(&mut self, offset: u64, len: u64, size: u64) -> Option<(u64, u64)> {
        let end = offset.saturating_add(len).min(size);
        let continues = offset.abs_diff(self.next) <= STREAM_SLACK;
        if offset == 0 || continues {
            self.streak = self.streak.saturating_add(1);
            self.next = self.next.max(end);
        } else {
            *self = Stream {
                next: end,
                ..Stream::default()
            };
            return None;
        }
        if (offset != 0 && self.streak < 2) || end >= size {
            return None;
        }
        let from = self.ahead_until.max(end);
        let to = end.saturating_add(READ_AHEAD).min(size);
        let due = to >= from.saturating_add(READ_AHEAD / 2) || (to == size && from < to);
        due.then(|| {
            self.ahead_until = to;
            (from, to - from)
        })
    }
}

struct Job {
    ino: Ino,
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
    pub fn hint(&self, ino: Ino, offset: u64, len: u64) {
        let Some(jobs) = &self.jobs else { return };
        match jobs.try_send(Job { ino, offset, len }) {
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
        if let Err(e) = view.read_ahead(job.ino, job.offset, job.len) {
            log::debug!("read-ahead of inode {} at {}: {e}", job.ino, job.offset);
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

#[cfg(test)]
mod tests {
    use super::*;

    const SIZE: u64 = 256 << 20;
    const MIB: u64 = 1 << 20;

    #[test]
    fn a_reader_from_the_start_is_prepared_ahead_in_large_steps() {
        let mut s = Stream::default();
        assert_eq!(s.read(0, MIB, SIZE), Some((MIB, READ_AHEAD)));
        // Out of order, as the kernel's read-ahead requests finish: still the stream.
        assert_eq!(s.read(2 * MIB, MIB, SIZE), None, "already asked for");
        assert_eq!(s.read(MIB, MIB, SIZE), None);
        let mut hints = Vec::new();
        for k in 3..SIZE / MIB {
            hints.extend(s.read(k * MIB, MIB, SIZE));
        }
        // Every byte after the first read asked for once, in steps of at least 16 MiB.
        let mut at = MIB + READ_AHEAD;
        for &(from, len) in &hints {
            assert_eq!(from, at, "{hints:?}");
            assert!(len >= READ_AHEAD / 2 || from + len == SIZE, "{hints:?}");
            at = from + len;
        }
        assert_eq!(at, SIZE, "up to the end of the file: {hints:?}");
    }

    #[test]
    fn random_reads_are_not_prepared_ahead() {
        let mut s = Stream::default();
        let mut x = 12345u64;
        let mut hints = 0;
        for _ in 0..2000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let offset = (x >> 11) % (SIZE - 4096) / 4096 * 4096 + 4096;
            hints += usize::from(s.read(offset, 4096, SIZE).is_some());
        }
        assert!(hints <= 2, "{hints} read-aheads for 2000 random reads");
    }

    #[test]
    fn a_reader_starting_mid_file_is_prepared_after_two_reads_in_a_row() {
        let mut s = Stream::default();
        assert_eq!(s.read(100 * MIB, MIB, SIZE), None);
        assert_eq!(s.read(101 * MIB, MIB, SIZE), None, "one read in a row");
        assert_eq!(s.read(102 * MIB, MIB, SIZE), Some((103 * MIB, READ_AHEAD)));
        // A jump elsewhere ends the stream.
        assert_eq!(s.read(10 * MIB, MIB, SIZE), None);
        assert_eq!(s.read(11 * MIB, MIB, SIZE), None);
        assert_eq!(s.read(12 * MIB, MIB, SIZE), Some((13 * MIB, READ_AHEAD)));
        // The end of the file is never passed.
        let mut s = Stream::default();
        assert_eq!(s.read(0, MIB, 3 * MIB), Some((MIB, 2 * MIB)));
        assert_eq!(s.read(MIB, 2 * MIB, 3 * MIB), None);
    }
}
