//! A file of the tree as the network faces serve it: held while served, identified by
//! strong validators, and read as a body one chunk at a time, the next only when the
//! connection took the last (so a response costs one chunk of memory whatever the
//! file's size).

use std::io;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures::StreamExt;
use http_body_util::{combinators::UnsyncBoxBody, BodyExt, StreamBody};
use hyper::body::Frame;

use crate::error::{Error, Result};
use crate::view::prefetch::{Prefetcher, Stream as ReadPattern};
use crate::view::{FileTree, Ino, Lifetime, Stat};

/// Bytes read from the tree per step of a body.
pub const CHUNK: u64 = 256 << 10;
/// Files at most this large that may change get an `ETag` from their bytes.
const HASHED: u64 = 1 << 20;

pub type Body = UnsyncBoxBody<Bytes, io::Error>;

/// A strong validator: an immutable file (inside a fragment) by its path and time; a file of a merged state by the state's digest; another small file by its
/// bytes. Large files that may change and have no version get none. `shown` is the
/// file's path in the tree (`latest/a/values.bin`): every face passes the same, so every
/// face answers the same tag.
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

/// Chunks of a body read at once: the next is decoded while the last is sent, as the
/// kernel's concurrent read-ahead requests do for the mount (a response then costs up to
/// this many chunks).
const PIPELINE: usize = 2;

/// The body of a file from `start` to `end` (to its end when `None`), `first` already
/// read: further chunks are read on the blocking pool, [`PIPELINE`] at a time and only
/// as hyper asks for more, and a sequential body asks `ahead` to prepare the bytes that
/// follow (the stored tiles brought in, as the mount's read-ahead does).
pub fn stream(
    held: Arc<Held>,
    ahead: Option<Arc<Prefetcher>>,
    shown: String,
    start: u64,
    end: Option<u64>,
    first: Vec<u8>,
) -> Body {
    let done = first.is_empty() || end.is_none() && (first.len() as u64) < CHUNK;
    let next = start + first.len() as u64;
    let first = futures::stream::once(async move { Ok::<_, io::Error>(Bytes::from(first)) });
    let offsets = (0u64..)
        .map(move |k| next.saturating_add(k.saturating_mul(CHUNK)))
        .take_while(move |&at| !done && end.is_none_or(|e| at < e));
    let pattern = Arc::new(Mutex::new(ReadPattern::default()));
    let reads = futures::stream::iter(offsets)
        .map(move |at| {
            let want = end.map_or(CHUNK, |e| (e - at).min(CHUNK));
            let (held, ahead, pattern) = (held.clone(), ahead.clone(), pattern.clone());
            async move {
                if let (Some(ahead), Some(size)) = (&ahead, end) {
                    let hint = pattern
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .read(at, want, size);
                    if let Some((from, len)) = hint {
                        ahead.hint(held.ino, from, len);
                    }
                }
                let read =
                    tokio::task::spawn_blocking(move || held.tree.read_at(held.ino, at, want))
                        .await;
                (at, want, read)
            }
        })
        .buffered(PIPELINE);
    // In order; the first failure or short read ends the body.
    let rest = reads.scan(false, move |ended, (at, want, read)| {
        if *ended {
            return futures::future::ready(None);
        }
        let item = match read {
            Ok(Ok(bytes)) => {
                let got = bytes.len() as u64;
                if got < want && end.is_some() {
                    // The file ended before its stated size: cut the body (the client
                    // sees a short read) rather than pad it.
                    log::error!(
                        "serve: /{shown}: ended at byte {} before its size",
                        at + got
                    );
                    *ended = true;
                    Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "file shorter than its size",
                    ))
                } else {
                    // A text file (size unknown) ends at its first short chunk.
                    *ended = got < want;
                    Ok(Bytes::from(bytes))
                }
            }
            Ok(Err(e)) => {
                log::error!("serve: /{shown} at byte {at}: {e}");
                *ended = true;
                Err(io::Error::other(e.to_string()))
            }
            Err(e) => {
                *ended = true;
                Err(io::Error::other(e.to_string()))
            }
        };
        futures::future::ready(Some(item))
    });
    let frames = first
        .chain(rest)
        .filter(|r| futures::future::ready(!matches!(r, Ok(b) if b.is_empty())))
        .map(|r| r.map(Frame::data));
    StreamBody::new(frames).boxed_unsync()
}

/// A file a response is reading: its number kept in use ([`FileTree::remember`]) and
/// the tree's open guard kept, both given back when the response ends.
pub struct Held {
    pub tree: Arc<dyn FileTree>,
    pub ino: Ino,
    _guard: Option<crate::view::OpenGuard>,
}

impl Held {
    pub fn take(tree: &Arc<dyn FileTree>, ino: Ino) -> Result<Held> {
        let guard = tree.open(ino)?;
        if !tree.remember(ino) {
            // Dropped between the lookup and now: as a vanished file.
            return Err(Error::NotFound(format!("file {ino} went away")));
        }
        Ok(Held {
            tree: tree.clone(),
            ino,
            _guard: guard,
        })
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.tree.forget(self.ino, 1);
    }
}

/// The media type of a file of the tree, by its name.
pub fn content_type(name: &str) -> &'static str {
    let ext = name.rsplit_once('.').map_or("", |(_, e)| e);
    match (name, ext) {
        ("zarr.json", _) | (_, "json" | "zarray" | "zattrs" | "zgroup" | "zmetadata") => {
            "application/json"
        }
        (_, "csv") => "text/csv; charset=utf-8",
        (_, "txt" | "hdr") => "text/plain; charset=utf-8",
        (_, "html") => "text/html; charset=utf-8",
        (_, "tif" | "tiff") => "image/tiff",
        (_, "nc") => "application/x-netcdf",
        (_, "h5") => "application/x-hdf5",
        _ => "application/octet-stream",
    }
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
    fn dates_are_imf_fixdates() {
        assert_eq!(http_date(784_111_777_000), "Sun, 06 Nov 1994 08:49:37 GMT");
        assert_eq!(http_date(0), "Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(
            http_date(1_709_251_199_999),
            "Thu, 29 Feb 2024 23:59:59 GMT"
        );
    }

    #[test]
    fn media_types_by_name() {
        assert_eq!(content_type("zarr.json"), "application/json");
        assert_eq!(content_type(".zarray"), "application/json");
        assert_eq!(content_type("cells.csv"), "text/csv; charset=utf-8");
        assert_eq!(content_type("values.bin"), "application/octet-stream");
        assert_eq!(content_type("0.0"), "application/octet-stream");
    }
}
