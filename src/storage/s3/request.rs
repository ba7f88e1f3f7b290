//! One GET of an object, run on the runtime: its answer absorbed into what the store
//! knows and handed to the readers waiting for it.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use object_store::aws::AmazonS3;
use object_store::path::Path as ObjectPath;
use object_store::{GetOptions, GetRange, ObjectStore};

use super::disk::{Answer, ObjectDisk};
use super::errors::{describe, s3_error};
use super::failure::{self, observed};
use super::inflight::{Fetch, Fetched};
use super::retry::retrying;
use super::state::{remember_size, State};
use super::sync::lock;
use crate::error::{Error, Place, Result};
use crate::storage::diskcache::DiskCache;
use crate::storage::past_end;

/// Fetches that must end even if what runs them does not (a panic in the client, a
/// cancelled task): dropped with fetches still in it, it ends them with an error, so no
/// reader waits for them forever.
pub(crate) struct Unfinished {
    pub(crate) inner: Arc<Inner>,
    pub(crate) fetches: Vec<Arc<Fetch>>,
}

impl Drop for Unfinished {
    fn drop(&mut self) {
        for f in self.fetches.drain(..) {
            let abandoned = std::io::Error::other(format!(
                "s3://{}/{} bytes {}..{}: the request was abandoned",
                self.inner.bucket, f.key, f.range.start, f.range.end
            ));
            self.inner
                .complete(&f, Err(Error::io(Place::file(f.key.as_str()), abandoned)));
        }
    }
}

/// What the store's calls and its background fetches share (never the runtime: a task
/// holding the last reference to it would drop it on one of its own threads).
pub(crate) struct Inner {
    pub(crate) client: AmazonS3,
    pub(crate) bucket: String,
    /// How long a failing request is tried again.
    pub(crate) retry_timeout: Duration,
    pub(crate) state: Mutex<State>,
    /// Where fetched bytes are kept across mounts (`--cache-dir`).
    pub(crate) disk: Option<Arc<DiskCache>>,
    /// The store's name in the disk cache's keys (endpoint and bucket).
    pub(crate) identity: String,
    /// Said once: a response disagreed with an object's listed version.
    pub(crate) disagreed: AtomicBool,
    /// Set when an object's responses disagreed with its listing twice in a row (a
    /// server whose listings and answers never agree, rather than an object rewritten
    /// under way): fetched bytes are no longer kept on disk, so reads stop paying for
    /// the listings and GETs that each disagreement costs.
    pub(crate) unreliable_versions: AtomicBool,
}

/// An object's bytes and what the response said about the object.
pub(crate) struct Got {
    pub(crate) bytes: Bytes,
    pub(crate) etag: Option<String>,
    pub(crate) size: u64,
    /// Seconds since the epoch.
    pub(crate) modified: i64,
}

impl Got {
    pub(crate) fn answer(&self) -> Answer<'_> {
        Answer {
            etag: self.etag.as_deref(),
            size: self.size,
            modified: self.modified,
        }
    }
}

impl Inner {
    /// A GET of `full` (the whole object, or `range`), retried within the budget.
    pub(crate) async fn get(&self, full: &str, range: Option<Range<u64>>) -> Result<Got> {
        observed(retrying(self.retry_timeout, || {
            self.get_once(full, range.clone())
        }))
        .await
    }

    /// One GET of `full` (the whole object, or `range`), retried by the client; the
    /// body must be exactly as long as asked.
    pub(crate) async fn get_once(&self, full: &str, range: Option<Range<u64>>) -> Result<Got> {
        let path = object_path(full)?;
        let options = GetOptions {
            range: range.clone().map(GetRange::Bounded),
            ..GetOptions::default()
        };
        let failed = |e: object_store::Error| {
            s3_error(
                &self.bucket,
                full,
                range.as_ref(),
                e,
                failure::seen().as_ref(),
            )
        };
        let result = self.client.get_opts(&path, options).await.map_err(failed)?;
        let etag = result.meta.e_tag.clone();
        let size = result.meta.size;
        let modified = result.meta.last_modified.timestamp();
        let bytes = result.bytes().await.map_err(failed)?;
        let want = range.as_ref().map_or(size, |r| r.end - r.start);
        if bytes.len() as u64 != want {
            if let Some(r) = range.as_ref().filter(|r| r.end > size) {
                return Err(past_end(full, r.start, r.end - r.start, size));
            }
            return Err(Error::io(
                Place::file(full),
                std::io::Error::other(format!(
                    "{}: the server sent {} bytes, {want} expected (a truncated body or a \
                     wrong Content-Length)",
                    describe(&self.bucket, full, range.as_ref()),
                    bytes.len()
                )),
            ));
        }
        Ok(Got {
            bytes,
            etag,
            size,
            modified,
        })
    }

    /// Takes in what a GET of `full` from `start` returned: its size, ETag and bytes
    /// kept in memory, and on disk (`disk`) when the response agrees with the version
    /// the disk entry is for. A response that does not agree (the object changed since
    /// it was listed) makes the object's facts forgotten: the next read lists it again.
    pub(crate) fn absorb(
        &self,
        full: &str,
        start: u64,
        disk: Option<&ObjectDisk>,
        got: Result<Got>,
    ) -> Result<Fetched> {
        let got = got?;
        let agrees = disk.is_none_or(|d| d.version.agrees(got.answer()));
        if let (Some(d), Some(cache), true) = (disk, &self.disk, agrees) {
            d.entry.keep(start, &got.bytes, &mut |n| cache.admit(n));
        }
        if !agrees && !self.disagreed.swap(true, Ordering::AcqRel) {
            log::warn!(
                "s3://{}/{full}: the object is not the one its listing described (ETag {:?}, \
                 {} bytes, where the listing said {}): read again (said once)",
                self.bucket,
                got.etag,
                got.size,
                disk.map(|d| d.version.text()).unwrap_or_default()
            );
        }
        let mut state = lock(&self.state);
        if agrees {
            remember_size(&mut state, full, got.size);
        } else {
            state.objects.remove(full);
        }
        let etag = got.etag.unwrap_or_default();
        state.cache.insert(full, &etag, start, got.bytes.clone());
        Ok(Fetched {
            bytes: got.bytes,
            agrees,
        })
    }

    /// Ends fetch `f` with `result`: kept (on disk before any waiter is woken), no
    /// longer under way, waiters woken.
    pub(crate) fn complete(&self, f: &Arc<Fetch>, result: Result<Got>) {
        let fetched = self.absorb(&f.key, f.range.start, f.disk.as_ref(), result);
        lock(&self.state).inflight.retain(|o| !Arc::ptr_eq(o, f));
        *lock(&f.result) = Some(fetched);
        f.done.notify_all();
    }
}

pub(crate) fn object_path(full: &str) -> Result<ObjectPath> {
    ObjectPath::parse(full)
        .map_err(|e| Error::InvalidArgument(format!("{full:?}: not an object key: {e}")))
}
