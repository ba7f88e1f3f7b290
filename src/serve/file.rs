//! A file of the tree as the network doors serve it: held while served, identified by
//! strong validators, and read as a body chunk by chunk, a few ahead of the connection
//! at most (so a response costs a bounded few chunks of memory whatever the file's
//! size).

use std::io;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures::StreamExt;
use http_body_util::{combinators::UnsyncBoxBody, BodyExt, StreamBody};
use hyper::body::Frame;

use super::budget::{Budget, Share};
use crate::error::Result;
use crate::view::held::Held;
use crate::view::prefetch::{Prefetcher, READ_AHEAD};
use crate::view::{FileTree, Ino, Lifetime, Stat};

/// Bytes read from the tree per step of a body: larger steps cost fewer hand-offs
/// between the connection and the blocking pool (512 KiB read a cold 512 MiB GET in
/// 0.63 s where 256 KiB took 0.68 s, four in flight each, fifteen alternating rounds).
pub const CHUNK: u64 = 512 << 10;
/// Files at most this large that may change get an `ETag` from their bytes.
const HASHED: u64 = 1 << 20;

pub type Body = UnsyncBoxBody<Bytes, io::Error>;

/// A strong validator: an immutable file (inside a fragment) by its path and time; a file of a merged state by the state's digest; another small file by its
/// bytes. Large files that may change and have no version get none. `shown` is the
/// file's path in the tree (`latest/a/values.bin`): every door passes the same, so every
/// door answers the same tag.
pub fn etag(tree: &dyn FileTree, shown: &str, ino: Ino, stat: &Stat) -> Result<Option<String>> {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(shown.as_bytes());
    h.update([0]);
    if tree.lifetime(ino) == Lifetime::Immutable {
        // Its bytes never change, and fragment names are unique: the path and time
        // say which bytes they are, before a text file's size is even known.
        h.update(b"fragment");
        h.update(stat.mtime_ms.unwrap_or(0).to_le_bytes());
    } else if let Some(v) = tree.version(ino) {
        h.update(b"state");
        h.update(v.to_le_bytes());
    } else if stat.exact_size && stat.size <= HASHED {
        h.update(tree.read_at(ino, 0, stat.size)?);
    } else {
        return Ok(None);
    }
    let digest = h.finalize();
    let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    Ok(Some(format!("\"{hex}\"")))
}

/// Chunks a body may have in flight at once (being read, or read and waiting to be
/// sent): the next are decoded while the last is sent, as the kernel's concurrent
/// read-ahead requests are for the mount. A deeper pipeline hides the decode and the
/// disk better: a cold sequential GET of the bench's 512 MiB took 0.73 s with two
/// chunks of 256 KiB in flight, 0.63 s with four of 512 KiB (medians of fifteen
/// alternating rounds); with the blocking pool as large as the serving threads and the
/// array's files cached, 0.43 s with four and 0.39 s with six (twelve rounds; eight
/// gained nothing more).
const DEPTH: usize = 6;

/// The body of a file from `start` to `end` (to its end when `None`), `first` already
/// read by [`first_chunk`], as the chunks that follow it: read on the blocking pool up
/// to `DEPTH` (6) at a time and only as the connection takes them, each with its bytes'
/// share of `budget` (the next read waits for one when none is free; read-ahead beyond
/// it is only taken while shares are free), with `ahead` asked to prepare the bytes up
/// to [`READ_AHEAD`] beyond the chunk read (as [`first_chunk`] did for the first). In
/// order; the first failure or short read ends it.
pub fn chunks(
    held: Arc<Held>,
    ahead: Option<Arc<Prefetcher>>,
    budget: Arc<Budget>,
    shown: String,
    start: u64,
    end: Option<u64>,
    first: Bytes,
) -> impl futures::Stream<Item = io::Result<Bytes>> + Send + 'static {
    let ended = first.is_empty() || end.is_none() && (first.len() as u64) < CHUNK;
    let reads = Reads {
        held,
        ahead,
        budget,
        next: start + first.len() as u64,
        ahead_until: first_window(start, end).1,
        end,
        queue: std::collections::VecDeque::new(),
    };
    let first = futures::stream::once(async move { Ok::<_, io::Error>(first) });
    let rest = futures::stream::unfold((reads, ended), move |(mut reads, ended)| {
        let shown = shown.clone();
        async move {
            if ended {
                return None;
            }
            reads.top_up();
            if reads.queue.is_empty() && !reads.done() {
                // Every share is held (by clients slower than this one): wait for one.
                let Some(share) = reads.budget.take(CHUNK as usize).await else {
                    log::warn!("serve: /{shown}: no memory for its next chunk in time: cut");
                    let e = io::Error::other("the server's memory budget stayed spent");
                    return Some((Err(e), (reads, true)));
                };
                reads.start(share);
            }
            let (at, want, read) = reads.queue.pop_front()?;
            let (item, ended) = match read.await {
                Ok(Ok(bytes)) => {
                    let got = bytes.len() as u64;
                    if got < want && reads.end.is_some() {
                        // The file ended before its stated size: cut the body (the
                        // client sees a short read) rather than pad it.
                        log::error!(
                            "serve: /{shown}: ended at byte {} before its size",
                            at + got
                        );
                        let e = io::Error::new(
                            io::ErrorKind::UnexpectedEof,
                            "file shorter than its size",
                        );
                        (Err(e), true)
                    } else {
                        // A text file (size unknown) ends at its first short chunk.
                        (Ok(bytes), got < want)
                    }
                }
                Ok(Err(e)) => {
                    log::error!("serve: /{shown} at byte {at}: {e}");
                    (Err(io::Error::other(e.to_string())), true)
                }
                Err(e) => (Err(io::Error::other(e.to_string())), true),
            };
            Some((item, (reads, ended)))
        }
    });
    first
        .chain(rest)
        .filter(|r| futures::future::ready(!matches!(r, Ok(b) if b.is_empty())))
}

/// A body's [`chunks`] as an HTTP body.
pub fn body(chunks: impl futures::Stream<Item = io::Result<Bytes>> + Send + 'static) -> Body {
    StreamBody::new(chunks.map(|r| r.map(Frame::data))).boxed_unsync()
}

/// The bytes after a body's first chunk that its read-ahead asks for before that chunk
/// is read, `[from, to)`: up to [`READ_AHEAD`] from its start (none for a body of one
/// chunk, or of unknown size, which only a text file has).
fn first_window(start: u64, end: Option<u64>) -> (u64, u64) {
    let from = start + CHUNK;
    let to = end.map_or(from, |e| e.min(start + READ_AHEAD));
    (from, to.max(from))
}

/// What a body's read-ahead asks for as its read at `at` starts, `[from, to)`, having
/// asked up to `ahead_until`: the bytes up to [`READ_AHEAD`] beyond `at`, in steps of at
/// least half that, so a body makes few hints.
fn next_window(ahead_until: u64, at: u64, end: u64) -> Option<(u64, u64)> {
    (ahead_until < end && ahead_until < at + READ_AHEAD / 2)
        .then(|| (ahead_until, (at + READ_AHEAD).min(end)))
}

/// The reads of a body in flight, oldest first.
struct Reads {
    held: Arc<Held>,
    ahead: Option<Arc<Prefetcher>>,
    budget: Arc<Budget>,
    /// Where the next read starts.
    next: u64,
    /// End of what `ahead` was asked to prepare.
    ahead_until: u64,
    end: Option<u64>,
    queue: std::collections::VecDeque<(u64, u64, tokio::task::JoinHandle<Result<Bytes>>)>,
}

impl Reads {
    /// Whether every read of the body was started.
    fn done(&self) -> bool {
        self.end.is_some_and(|e| self.next >= e)
    }

    /// Starts reads until `DEPTH` are in flight, or the budget says no: the next chunk
    /// takes any free share, the chunks read ahead of it only while a quarter of the
    /// budget stays free.
    fn top_up(&mut self) {
        while self.queue.len() < DEPTH && !self.done() {
            let share = if self.queue.is_empty() {
                self.budget.try_take(CHUNK as usize)
            } else {
                self.budget.try_take_ahead(CHUNK as usize)
            };
            match share {
                Some(share) => self.start(share),
                None => return,
            }
        }
    }

    /// Starts the next read, `share` held by its bytes until they are sent.
    fn start(&mut self, share: Share) {
        let at = self.next;
        let want = match self.end {
            Some(e) if at >= e => return,
            Some(e) => (e - at).min(CHUNK),
            None => CHUNK,
        };
        if let (Some(ahead), Some(end)) = (&self.ahead, self.end) {
            if let Some((from, to)) = next_window(self.ahead_until, at, end) {
                ahead.hint(self.held.ino, from, to - from);
                self.ahead_until = to;
            }
        }
        let held = self.held.clone();
        let read = tokio::task::spawn_blocking(move || read_chunk(&held, at, want, share));
        self.queue.push_back((at, want, read));
        self.next = at + want;
    }
}

/// Bytes `[at, at + want)` of the held file, read into a spare chunk buffer that goes
/// back to [`SPARE`] (and `share` to the budget) when the connection has sent them.
fn read_chunk(held: &Held, at: u64, want: u64, share: Share) -> Result<Bytes> {
    // A whole chunk reuses a spare buffer; a small read (a 4 KiB range) takes what it
    // needs, not half a megabyte per client.
    let buf = if want < CHUNK {
        Vec::with_capacity(want as usize)
    } else {
        lock_spare()
            .pop()
            .unwrap_or_else(|| Vec::with_capacity(CHUNK as usize))
    };
    let mut chunk = Chunk { buf, _share: share };
    held.tree.read_into(held.ino, at, want, &mut chunk.buf)?;
    Ok(Bytes::from_owner(chunk))
}

/// Chunk buffers that responses have sent, kept for the next chunks: each read then
/// fills memory already mapped, as the mount's reply buffer is. With the heap held to
/// two arenas ([`crate::daemon::limit_heap_arenas`]) a fresh buffer per chunk cost a cold
/// 512 MiB GET about 17,600 page faults, against about 1,400 with these.
static SPARE: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());
/// At most this many are kept (4 MiB): what the responses in flight hold beyond it is
/// given back to the allocator.
const SPARE_KEEP: usize = 8;

fn lock_spare() -> std::sync::MutexGuard<'static, Vec<Vec<u8>>> {
    SPARE.lock().unwrap_or_else(|e| e.into_inner())
}

/// The bytes of one chunk of a body, lent to the connection until it has sent them.
struct Chunk {
    buf: Vec<u8>,
    _share: Share,
}

impl AsRef<[u8]> for Chunk {
    fn as_ref(&self) -> &[u8] {
        &self.buf
    }
}

impl Drop for Chunk {
    fn drop(&mut self) {
        let mut buf = std::mem::take(&mut self.buf);
        let capacity = buf.capacity();
        if capacity < CHUNK as usize || capacity > 2 * CHUNK as usize {
            return; // A small read's, or grown by an odd one: not worth keeping.
        }
        buf.clear();
        let mut spare = lock_spare();
        if spare.len() < SPARE_KEEP {
            spare.push(buf);
        }
    }
}

/// The first chunk of a body from `start` to `end` (to its end when `None`), read
/// before answering so that a file that cannot be read answers an error status
/// rather than a cut body. `ahead` is first asked for the bytes that follow: the
/// client asked for the whole range, so there is no pattern to wait for, and the disk
/// can bring them in while this chunk is read. (On the bench's cold 64 MiB files the
/// difference from asking at the second chunk was within the noise: 0.47-0.49 s
/// either way over twelve rounds.)
pub fn first_chunk(
    held: &Held,
    ahead: Option<&Prefetcher>,
    start: u64,
    end: Option<u64>,
    share: Share,
) -> Result<Bytes> {
    let (from, to) = first_window(start, end);
    if let (Some(ahead), true) = (ahead, to > from) {
        ahead.hint(held.ino, from, to - from);
    }
    let want = end.map_or(CHUNK, |e| (e - start).min(CHUNK));
    read_chunk(held, start, want, share)
}

/// An IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`) of milliseconds since the epoch.
pub fn http_date(ms: u64) -> String {
    let secs = ms / 1000;
    let days = secs / 86400;
    let rem = secs % 86400;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    const WEEKDAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    format!(
        "{}, {:02} {} {} {:02}:{:02}:{:02} GMT",
        WEEKDAYS[(days % 7) as usize],
        day,
        MONTHS[(month - 1) as usize],
        year,
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_is_read_ahead_once_in_large_steps() {
        let (start, end) = (3 << 20, (200 << 20) + 12_345);
        let (from, mut until) = first_window(start, Some(end));
        assert_eq!((from, until), (start + CHUNK, start + READ_AHEAD));
        let mut windows = vec![(from, until)];
        let mut at = start + CHUNK;
        while at < end {
            if let Some((a, b)) = next_window(until, at, end) {
                assert!(b > a && b <= at + READ_AHEAD, "{a}..{b} at {at}");
                windows.push((a, b));
                until = b;
            }
            assert!(until >= (at + READ_AHEAD / 2).min(end), "behind at {at}");
            at += CHUNK;
        }
        // Every byte after the first chunk asked for once, in order, to the end.
        for pair in windows.windows(2) {
            assert_eq!(pair[0].1, pair[1].0, "{windows:?}");
        }
        assert_eq!(until, end);
        assert!(windows.len() <= 1 + (end - start) as usize / (READ_AHEAD / 2) as usize);
    }

    #[test]
    fn a_body_of_one_chunk_or_of_unknown_size_reads_nothing_ahead() {
        let (from, to) = first_window(4096, Some(8192));
        assert!(to <= from);
        let (from, to) = first_window(0, None);
        assert!(to <= from);
        assert_eq!(next_window(CHUNK, CHUNK, CHUNK), None);
    }

    #[test]
    fn dates_are_imf_fixdates() {
        assert_eq!(http_date(784_111_777_000), "Sun, 06 Nov 1994 08:49:37 GMT");
        assert_eq!(http_date(0), "Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(
            http_date(1_709_251_199_999),
            "Thu, 29 Feb 2024 23:59:59 GMT"
        );
    }

}
