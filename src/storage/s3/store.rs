//! The S3 store itself: see the module above for what it asks of the server.

use std::cell::Cell;
use std::collections::HashMap;
use std::fmt;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::StreamExt;
use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::client::HttpError;
use object_store::path::Path as ObjectPath;
use object_store::{BackoffConfig, ClientOptions, GetOptions, GetRange, ObjectStore, RetryConfig};

use super::cache::ByteCache;
use super::config::{self, S3Options, S3Uri};
use super::disk::{self, Answer, ObjectDisk, Version};
use super::failure::{self, observed, Failure, Seen};
use super::parts::{self, AHEAD_PART, READ_PART};
use super::window::Windows;
use crate::error::{Error, Place, Result};
use crate::storage::diskcache::{DiskCache, BLOCK};
use crate::storage::{check_key, join, past_end, Listed, Pin, RangeRead, Store};

/// The largest read-ahead window (also bounded by a quarter of the byte cache, so what
/// is fetched ahead is still there when the reader gets to it). A quarter rather than an
/// eighth: at the default cache (128 MiB of bytes) the window reaches 32 MiB, eight
/// requests in flight (an eighth was slower; a half no faster: 313-344 MB/s).
const MAX_WINDOW: u64 = 64 << 20;

/// Objects remembered at most; past it the map starts over (a forgotten object costs
/// one listing of its folder).
const KEPT_OBJECTS: usize = 200_000;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// One GET under way: readers that need its bytes wait for it.
struct Fetch {
    key: String,
    range: Range<u64>,
    /// Where its bytes are kept on disk, and the version they must come from.
    disk: Option<ObjectDisk>,
    result: Mutex<Option<Result<Fetched>>>,
    done: Condvar,
}

/// The bytes a GET brought.
#[derive(Debug, Clone)]
struct Fetched {
    bytes: Bytes,
    /// The response agreed with the version the fetch was planned for (or there was
    /// none): false when the object changed since it was listed.
    agrees: bool,
}

impl Fetch {
    fn new(key: &str, range: Range<u64>, disk: Option<&ObjectDisk>) -> Arc<Fetch> {
        Arc::new(Fetch {
            key: key.to_string(),
            range,
            disk: disk.cloned(),
            result: Mutex::new(None),
            done: Condvar::new(),
        })
    }

    fn wait(&self) -> Result<Fetched> {
        let mut result = lock(&self.result);
        loop {
            if let Some(r) = result.as_ref() {
                return r.clone();
            }
            result = self.done.wait(result).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Whether a reader that plans with `disk` may use this fetch's bytes: planned for
    /// the same version of the object (or both for none).
    fn serves(&self, key: &str, disk: Option<&ObjectDisk>) -> bool {
        self.key == key
            && match (&self.disk, disk) {
                (Some(a), Some(b)) => a.version == b.version,
                (None, None) => true,
                _ => false,
            }
    }
}

/// Fetches that must end even if what runs them does not (a panic in the client, a
/// cancelled task): dropped with fetches still in it, it ends them with an error, so no
/// reader waits for them forever.
struct Unfinished {
    inner: Arc<Inner>,
    fetches: Vec<Arc<Fetch>>,
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

/// Where a read's bytes come from.
enum Piece {
    /// Kept bytes starting at this offset.
    Kept(u64, Bytes),
    /// A fetch under way (this reader's own, or another's).
    Fetching(Arc<Fetch>),
    /// Bytes the disk cache holds (by its index; checked when read).
    Disk(Range<u64>),
}

/// What a planned read gave.
enum Outcome {
    /// Per range, its pieces in order.
    Read(Vec<Vec<(u64, Bytes)>>),
    /// A response said the object is not the version the read was planned for: its
    /// pieces may mix two versions, so the read is planned again.
    Changed,
}

/// What listings and responses told of one object.
#[derive(Debug, Clone)]
struct Facts {
    size: u64,
    /// From its listing: what names its bytes in the disk cache.
    version: Option<Arc<Version>>,
}

#[derive(Debug)]
struct State {
    cache: ByteCache,
    windows: Windows,
    /// Objects seen in listings and responses, by full key.
    objects: HashMap<String, Facts>,
    inflight: Vec<Arc<Fetch>>,
}

/// What the store's calls and its background fetches share (never the runtime: a task
/// holding the last reference to it would drop it on one of its own threads).
struct Inner {
    client: AmazonS3,
    bucket: String,
    /// How long a failing request is tried again.
    retry_timeout: Duration,
    state: Mutex<State>,
    /// Where fetched bytes are kept across mounts (`--cache-dir`).
    disk: Option<Arc<DiskCache>>,
    /// The store's name in the disk cache's keys (endpoint and bucket).
    identity: String,
    /// Said once: a response disagreed with an object's listed version.
    disagreed: AtomicBool,
    /// Set when an object's responses disagreed with its listing twice in a row (a
    /// server whose listings and answers never agree, rather than an object rewritten
    /// under way): fetched bytes are no longer kept on disk, so reads stop paying for
    /// the listings and GETs that each disagreement costs.
    unreliable_versions: AtomicBool,
}

/// An object's bytes and what the response said about the object.
struct Got {
    bytes: Bytes,
    etag: Option<String>,
    size: u64,
    /// Seconds since the epoch.
    modified: i64,
}

impl Got {
    fn answer(&self) -> Answer<'_> {
        Answer {
            etag: self.etag.as_deref(),
            size: self.size,
            modified: self.modified,
        }
    }
}

pub struct S3Store {
    runtime: Arc<tokio::runtime::Runtime>,
    inner: Arc<Inner>,
    /// The root inside the bucket (`""` or `a/b`).
    root: String,
}

impl fmt::Debug for S3Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "S3Store({})", self.location())
    }
}

impl fmt::Debug for Fetch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Fetch({} {:?})", self.key, self.range)
    }
}

impl S3Store {
    /// Connects to `s3://bucket/prefix` and checks with one listing that something is
    /// there: a wrong credential, a missing bucket or prefix, or an unreachable endpoint
    /// is one clear error here, not a failure of the first read. `cache_bytes` bounds
    /// the fetched bytes kept in memory; `disk`, where given, keeps them across mounts.
    pub fn open(
        uri: &str,
        options: &S3Options,
        cache_bytes: u64,
        disk: Option<Arc<DiskCache>>,
    ) -> Result<S3Store> {
        let location = S3Uri::parse(uri)?;
        let resolved = config::resolve(options, &|k| std::env::var(k).ok(), &|p| {
            std::fs::read_to_string(p).ok()
        })?;
        let client = build_client(&location.bucket, &resolved)?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("fragfs-s3")
            .enable_all()
            .build()
            .map_err(|e| Error::io("tokio runtime", e))?;
        let max_window = MAX_WINDOW.min(cache_bytes / 4);
        let store = S3Store {
            runtime: Arc::new(runtime),
            inner: Arc::new(Inner {
                client,
                bucket: location.bucket.clone(),
                retry_timeout: resolved.retry_timeout,
                state: Mutex::new(State {
                    cache: ByteCache::new(cache_bytes),
                    windows: Windows::new(max_window),
                    objects: HashMap::new(),
                    inflight: Vec::new(),
                }),
                disk,
                identity: disk::store_identity(resolved.endpoint.as_deref(), &location.bucket),
                disagreed: AtomicBool::new(false),
                unreliable_versions: AtomicBool::new(false),
            }),
            root: location.prefix.clone(),
        };
        // One line that names the URI, with the errno of what failed: ENOENT for a
        // missing bucket, EACCES for refused credentials, EIO for a transport failure.
        let root = store.list("").map_err(|e| {
            let hint = match e.errno() {
                libc::EACCES => {
                    " (check the credentials: --profile, AWS_ACCESS_KEY_ID and \
                                 AWS_SECRET_ACCESS_KEY, or --no-sign-request for a public bucket)"
                }
                _ => "",
            };
            Error::setup(e.errno(), format!("{}{hint}", source_text(&e)))
        })?;
        if root.is_empty() {
            return Err(Error::NotFound(format!(
                "{}: nothing there (no object under {}/ in bucket {})",
                store.uri(),
                location.prefix,
                location.bucket
            )));
        }
        Ok(store)
    }

    fn full(&self, key: &str) -> String {
        join(&self.root, key)
    }

    fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.inner.state)
    }

    /// The bytes of `wanted` ranges of object `full` (`key` relative to the root, for
    /// messages): from kept bytes, the disk cache (`disk`: the object's entry there),
    /// fetches under way, and GETs of the rest, in parts, all of them issued at once.
    fn fetch_ranges(
        &self,
        full: &str,
        wanted: &[Range<u64>],
        disk: Option<&ObjectDisk>,
    ) -> Result<Outcome> {
        let mut own = Vec::new();
        let plans: Vec<Vec<Piece>> = {
            let mut state = self.state();
            wanted
                .iter()
                .map(|r| plan(&mut state, full, r.clone(), READ_PART, disk, &mut own))
                .collect()
        };
        if !own.is_empty() {
            let mut unfinished = Unfinished {
                inner: self.inner.clone(),
                fetches: own.clone(),
            };
            let inner = &self.inner;
            let results: Vec<Result<Got>> = self.runtime.block_on(
                futures::stream::iter(own.iter().map(|f| inner.get(full, Some(f.range.clone()))))
                    .buffered(parts::MAX_IN_FLIGHT)
                    .collect(),
            );
            unfinished.fetches.clear();
            for (f, r) in own.iter().zip(results) {
                inner.complete(f, r);
            }
        }
        let mut changed = false;
        let mut out = Vec::with_capacity(plans.len());
        for plan in plans {
            let mut pieces = Vec::with_capacity(plan.len());
            for piece in plan {
                match piece {
                    Piece::Kept(start, bytes) => pieces.push((start, bytes)),
                    Piece::Fetching(f) => {
                        let fetched = match f.wait() {
                            Ok(b) => b,
                            // Another's fetch failed (a read-ahead, say): this reader
                            // asks for itself, with its own retries.
                            Err(_) if !own.iter().any(|o| Arc::ptr_eq(o, &f)) => {
                                let got = self
                                    .runtime
                                    .block_on(self.inner.get(full, Some(f.range.clone())));
                                self.inner
                                    .absorb(full, f.range.start, f.disk.as_ref(), got)?
                            }
                            Err(e) => return Err(e),
                        };
                        changed |= !fetched.agrees;
                        pieces.push((f.range.start, fetched.bytes));
                    }
                    Piece::Disk(range) => {
                        let Some(d) = disk else { continue };
                        let (bytes, agrees) = self.read_disk(full, d, range.clone())?;
                        changed |= !agrees;
                        pieces.push((range.start, bytes));
                    }
                }
            }
            out.push(pieces);
        }
        Ok(if changed {
            Outcome::Changed
        } else {
            Outcome::Read(out)
        })
    }

    /// `range` of `full` from its disk entry: the blocks it holds, checked against
    /// their records; those damaged on disk are fetched again (and kept). Also says
    /// whether the fetched ones agreed with the entry's version.
    fn read_disk(&self, full: &str, d: &ObjectDisk, range: Range<u64>) -> Result<(Bytes, bool)> {
        let agrees = Cell::new(true);
        let mut out = Vec::with_capacity((range.end - range.start) as usize);
        let inner = &self.inner;
        d.entry.read(
            range.start,
            range.end - range.start,
            &mut out,
            &mut |from, n, buf| {
                let got = self.runtime.block_on(inner.get(full, Some(from..from + n)));
                // Kept by `absorb` where it agrees with the version.
                let fetched = inner.absorb(full, from, Some(d), got)?;
                agrees.set(agrees.get() && fetched.agrees);
                buf.extend_from_slice(&fetched.bytes);
                Ok(())
            },
            &mut |_| None,
        )?;
        Ok((Bytes::from(out), agrees.get()))
    }

    /// Starts fetching `range` of `full` in the background, in parts of at most
    /// [`AHEAD_PART`], except what is kept (in memory or on disk) or being fetched
    /// already.
    fn fetch_ahead(&self, full: &str, range: Range<u64>, disk: Option<&ObjectDisk>) {
        let mut parts = Vec::new();
        plan(&mut self.state(), full, range, AHEAD_PART, disk, &mut parts);
        for f in parts {
            let inner = self.inner.clone();
            let full = full.to_string();
            self.runtime.spawn(async move {
                let mut unfinished = Unfinished {
                    inner: inner.clone(),
                    fetches: vec![f.clone()],
                };
                let r = inner.get(&full, Some(f.range.clone())).await;
                unfinished.fetches.clear();
                inner.complete(&f, r);
            });
        }
    }

    /// What a listing or a response told of `full`.
    fn facts(&self, full: &str) -> Option<Facts> {
        self.state().objects.get(full).cloned()
    }

    /// The size of `full` if a listing or a response told it.
    fn known_size(&self, full: &str) -> Option<u64> {
        self.facts(full).map(|f| f.size)
    }

    /// The disk entry of object `key` (`full`), when a disk cache is configured and a
    /// listing told the object's version: listed here if it was not yet (one listing
    /// of its folder, which tells its neighbours' too). A cache that fails is passed
    /// by, said in the log.
    fn object_disk(&self, key: &str, full: &str, may_list: bool) -> Result<Option<ObjectDisk>> {
        let Some(cache) = &self.inner.disk else {
            return Ok(None);
        };
        if self.inner.unreliable_versions.load(Ordering::Acquire) {
            return Ok(None);
        }
        let facts = match self.facts(full) {
            Some(f) => f,
            None if may_list => {
                self.size(key)?;
                match self.facts(full) {
                    Some(f) => f,
                    None => return Ok(None),
                }
            }
            None => return Ok(None),
        };
        let Some(version) = facts.version else {
            return Ok(None);
        };
        let key = disk::cache_key(&self.inner.identity, full, &version);
        match cache.entry(&key, facts.size) {
            Ok(entry) => Ok(entry.map(|entry| ObjectDisk { entry, version })),
            Err(e) => {
                log::warn!(
                    "disk cache: s3://{}/{full}: {e}: read without the cache",
                    self.inner.bucket
                );
                Ok(None)
            }
        }
    }
}

/// Plans a read of `range` of `full`: kept bytes where there are some, fetches under way
/// (for the same version) where they cover it, blocks of the disk entry (`disk`) that it
/// holds, and new fetches (registered, so other readers wait for them rather than ask
/// again, and pushed to `own`) for the gaps, each cut into parts of at most `largest`
/// bytes.
fn plan(
    state: &mut State,
    full: &str,
    range: Range<u64>,
    largest: u64,
    disk: Option<&ObjectDisk>,
    own: &mut Vec<Arc<Fetch>>,
) -> Vec<Piece> {
    let mut pieces = Vec::new();
    let mut pos = range.start;
    while pos < range.end {
        if let Some((start, bytes)) = state.cache.segment_at(full, pos) {
            pos = start + bytes.len() as u64;
            pieces.push(Piece::Kept(start, bytes));
            continue;
        }
        if let Some(f) = state
            .inflight
            .iter()
            .find(|f| f.serves(full, disk) && f.range.contains(&pos))
        {
            pos = f.range.end;
            pieces.push(Piece::Fetching(f.clone()));
            continue;
        }
        let mut end = gap_end(state, full, pos, range.end);
        if let Some(d) = disk {
            // A run of blocks the entry holds, or up to the next one it holds.
            let held = d.entry.holds(pos / BLOCK);
            let mut b = pos / BLOCK + 1;
            while b * BLOCK < end && d.entry.holds(b) == held {
                b += 1;
            }
            end = end.min(b * BLOCK);
            if held {
                pieces.push(Piece::Disk(pos..end));
                pos = end;
                continue;
            }
        }
        for part in parts::split(pos..end, largest) {
            let f = Fetch::new(full, part, disk);
            state.inflight.push(f.clone());
            own.push(f.clone());
            pieces.push(Piece::Fetching(f));
        }
        pos = end;
    }
    pieces
}

/// Where a gap starting at `pos` ends: at `end`, or earlier where kept bytes or a fetch
/// under way begin.
fn gap_end(state: &State, full: &str, pos: u64, end: u64) -> u64 {
    let kept = state.cache.next_start(full, pos).unwrap_or(u64::MAX);
    let fetching = state
        .inflight
        .iter()
        .filter(|f| f.key == full && f.range.start > pos)
        .map(|f| f.range.start)
        .min()
        .unwrap_or(u64::MAX);
    end.min(kept).min(fetching)
}

/// Runs `attempt` until it succeeds, fails for good (a missing object, refused
/// credentials, bad bytes), or `budget` has passed since the first try, with backoff.
/// The client retries what it knows (5xx, throttling, connection errors); this catches
/// what it gives up on early (a connection closed before its answer, a body cut short
/// where it cannot resume), so every transient failure gets the same time.
async fn retrying<T, F, Fut>(budget: Duration, mut attempt: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T>>,
{
    let start = Instant::now();
    let mut pause = Duration::from_millis(50);
    loop {
        match attempt().await {
            Err(e) if e.is_transient() && start.elapsed() < budget => {
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(2));
            }
            result => return result,
        }
    }
}

impl Inner {
    /// A GET of `full` (the whole object, or `range`), retried within the budget.
    async fn get(&self, full: &str, range: Option<Range<u64>>) -> Result<Got> {
        observed(retrying(self.retry_timeout, || {
            self.get_once(full, range.clone())
        }))
        .await
    }

    /// One GET of `full` (the whole object, or `range`), retried by the client; the
    /// body must be exactly as long as asked.
    async fn get_once(&self, full: &str, range: Option<Range<u64>>) -> Result<Got> {
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
    fn absorb(
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
    fn complete(&self, f: &Arc<Fetch>, result: Result<Got>) {
        let fetched = self.absorb(&f.key, f.range.start, f.disk.as_ref(), result);
        lock(&self.state).inflight.retain(|o| !Arc::ptr_eq(o, f));
        *lock(&f.result) = Some(fetched);
        f.done.notify_all();
    }
}

/// Notes the size a response gave for `full`; a size other than its listing's means
/// the object changed: the listed version no longer names its bytes.
fn remember_size(state: &mut State, full: &str, size: u64) {
    if let Some(f) = state.objects.get_mut(full) {
        if f.size != size {
            *f = Facts {
                size,
                version: None,
            };
        }
        return;
    }
    if state.objects.len() >= KEPT_OBJECTS {
        state.objects.clear();
    }
    state.objects.insert(
        full.to_string(),
        Facts {
            size,
            version: None,
        },
    );
}

/// Notes what a listing says of `full`: its size and version. Kept bytes of another
/// version are no longer served from memory (the disk keys them by version).
fn remember_listed(state: &mut State, full: &str, version: Version) {
    match &version.etag {
        Some(etag) => state.cache.set_etag(full, etag),
        None => {
            let before = state.objects.get(full).and_then(|f| f.version.as_deref());
            if before.is_some_and(|v| *v != version) {
                state.cache.forget_etag(full);
            }
        }
    }
    if state.objects.len() >= KEPT_OBJECTS && !state.objects.contains_key(full) {
        state.objects.clear();
    }
    state.objects.insert(
        full.to_string(),
        Facts {
            size: version.size,
            version: Some(Arc::new(version)),
        },
    );
}

fn object_path(full: &str) -> Result<ObjectPath> {
    ObjectPath::parse(full)
        .map_err(|e| Error::InvalidArgument(format!("{full:?}: not an object key: {e}")))
}

/// `s3://bucket/key bytes a..b`.
fn describe(bucket: &str, full: &str, range: Option<&Range<u64>>) -> String {
    match range {
        Some(r) => format!("s3://{bucket}/{full} bytes {}..{}", r.start, r.end),
        None => format!("s3://{bucket}/{full}"),
    }
}

/// A failed request as an error with the errno a reader should see: ENOENT for a missing
/// object or bucket, EACCES for refused credentials, EIO for the rest (retries
/// exhausted); the message names the bucket, key and range and says what the server
/// answered. Decided from types only: the variant object_store chose, the status and
/// error document the HTTP layer saw (`seen`, see [`failure`]), the kind of a transport
/// error; never from the text of object_store's messages.
fn s3_error(
    bucket: &str,
    full: &str,
    range: Option<&Range<u64>>,
    e: object_store::Error,
    seen: Option<&Seen>,
) -> Error {
    use std::io::ErrorKind;
    let status = match seen.and_then(|s| s.last.as_ref()) {
        Some(Failure::Status { status, .. }) => Some(*status),
        _ => None,
    };
    let kind = match (&e, status) {
        (object_store::Error::NotFound { .. }, _) | (_, Some(404)) => ErrorKind::NotFound,
        (object_store::Error::PermissionDenied { .. }, _)
        | (object_store::Error::Unauthenticated { .. }, _)
        | (_, Some(401 | 403)) => ErrorKind::PermissionDenied,
        _ => ErrorKind::Other,
    };
    let message = format!("{}: {}", describe(bucket, full, range), answer(&e, seen));
    Error::io(Place::file(full), std::io::Error::new(kind, message))
}

/// What the server answered, on one line: the status with its S3 error code and message
/// (`503 Service Unavailable: SlowDown: Please reduce your request rate.`), or the
/// transport's failure and its cause (`cannot connect: Connection refused`); then how
/// many times it was retried, for how long.
fn answer(e: &object_store::Error, seen: Option<&Seen>) -> String {
    let last = seen.and_then(|s| s.last.as_ref());
    let mut out = match (transport(e), last) {
        // The error itself is a transport failure (a body cut short after the answer
        // began): it is what happened last.
        (Some(t), _) => t,
        (
            None,
            Some(Failure::Status {
                status,
                reason,
                code,
                message,
            }),
        ) => {
            let mut out = match reason {
                Some(reason) => format!("{status} {reason}"),
                None => status.to_string(),
            };
            for part in [code, message].into_iter().flatten() {
                out.push_str(": ");
                out.push_str(part);
            }
            out
        }
        (None, Some(Failure::Transport { kind, reason })) => {
            format!("{}: {reason}", failure::kind_words(*kind))
        }
        // Nothing typed to go by: object_store's message, shown as it is.
        (None, None) => match e {
            object_store::Error::NotFound { .. } => "no such object".to_string(),
            object_store::Error::PermissionDenied { .. } => "access denied".to_string(),
            object_store::Error::Unauthenticated { .. } => "not authenticated".to_string(),
            e => e.to_string().replace(['\n', '\r'], " "),
        },
    };
    if let Some(s) = seen.filter(|s| s.requests > 1) {
        out.push_str(&format!(
            " (after {} retries in {:.1}s)",
            s.requests - 1,
            s.elapsed().as_secs_f64()
        ));
    }
    out
}

/// A transport failure in `e`'s causes (object_store keeps reqwest's error as an
/// [`HttpError`], public and typed), as `kind: innermost cause`.
fn transport(e: &object_store::Error) -> Option<String> {
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        if let Some(h) = c.downcast_ref::<HttpError>() {
            return Some(format!(
                "{}: {}",
                failure::kind_words(h.kind()),
                failure::innermost(h)
            ));
        }
        cause = c.source();
    }
    None
}

/// The message of an error without the place in front (for one-line open errors, whose
/// message names the URI already).
fn source_text(e: &Error) -> String {
    match e {
        Error::Io { cause, .. } => cause.to_string(),
        e => e.to_string(),
    }
}

fn build_client(bucket: &str, r: &config::Resolved) -> Result<AmazonS3> {
    let mut builder = AmazonS3Builder::from_env()
        .with_http_connector(failure::Connector)
        .with_bucket_name(bucket)
        .with_region(&r.region)
        .with_virtual_hosted_style_request(r.virtual_hosted)
        .with_skip_signature(r.no_sign_request)
        .with_retry(RetryConfig {
            backoff: BackoffConfig {
                init_backoff: Duration::from_millis(50),
                max_backoff: Duration::from_secs(2),
                base: 2.0,
            },
            // Bounded by time, not count: a burst of throttling gets the whole budget
            // (half here; `retrying` tries again within the rest).
            max_retries: usize::MAX,
            retry_timeout: r.retry_timeout / 2,
        })
        .with_client_options(
            ClientOptions::new()
                .with_allow_http(true)
                .with_connect_timeout(Duration::from_secs(5))
                .with_timeout(Duration::from_secs(120)),
        );
    if let Some(endpoint) = &r.endpoint {
        builder =
            builder.with_endpoint(config::bucket_endpoint(endpoint, bucket, r.virtual_hosted));
    }
    if let Some((id, secret, token)) = &r.keys {
        builder = builder
            .with_access_key_id(id)
            .with_secret_access_key(secret);
        if let Some(token) = token {
            builder = builder.with_token(token);
        }
    }
    builder
        .build()
        .map_err(|e| Error::InvalidArgument(format!("s3://{bucket}: {e}")))
}

impl Store for S3Store {
    fn location(&self) -> String {
        self.uri()
    }

    fn cache_identity(&self) -> String {
        match self.root.as_str() {
            "" => self.inner.identity.clone(),
            root => format!("{}/{root}", self.inner.identity),
        }
    }

    fn uri(&self) -> String {
        match self.root.as_str() {
            "" => format!("s3://{}", self.inner.bucket),
            root => format!("s3://{}/{root}", self.inner.bucket),
        }
    }

    fn list(&self, prefix: &str) -> Result<Vec<Listed>> {
        check_key(prefix)?;
        let folder = self.full(prefix);
        let path = match folder.as_str() {
            "" => None,
            f => Some(object_path(f)?),
        };
        let inner = &self.inner;
        let listing = self
            .runtime
            .block_on(observed(retrying(inner.retry_timeout, || async {
                inner
                    .client
                    .list_with_delimiter(path.as_ref())
                    .await
                    .map_err(|e| {
                        let shown = format!("{folder}/ (listing)");
                        let seen = failure::seen();
                        s3_error(
                            &inner.bucket,
                            shown.trim_start_matches('/'),
                            None,
                            e,
                            seen.as_ref(),
                        )
                    })
            })))?;
        let mut out = Vec::with_capacity(listing.objects.len() + listing.common_prefixes.len());
        for p in &listing.common_prefixes {
            if let Some(name) = p.filename() {
                out.push(Listed {
                    name: name.to_string(),
                    size: None,
                });
            }
        }
        let mut state = self.state();
        for o in listing.objects {
            // A folder marker object (`prefix/`) is the folder itself, not an entry.
            if Some(&o.location) == path.as_ref() {
                continue;
            }
            let Some(name) = o.location.filename() else {
                continue;
            };
            let full = o.location.as_ref().to_string();
            out.push(Listed {
                name: name.to_string(),
                size: Some(o.size),
            });
            let version = Version {
                size: o.size,
                etag: o.e_tag,
                modified: (
                    o.last_modified.timestamp(),
                    o.last_modified.timestamp_subsec_nanos(),
                ),
            };
            remember_listed(&mut state, &full, version);
        }
        drop(state);
        out.sort();
        out.dedup();
        Ok(out)
    }

    /// The object's version as its listing told it (its ETag; where the server lists
    /// none, its size and modification time): from a listing of the parent, kept from an
    /// earlier one where there was one, as for [`Store::size`]. `None` when a response
    /// since disagreed with the listing (the object changed: no version names it now).
    fn version(&self, key: &str) -> Result<Option<String>> {
        check_key(key)?;
        let full = self.full(key);
        if self.facts(&full).is_none() {
            self.size(key)?;
        }
        Ok(self.facts(&full).and_then(|f| f.version).map(|v| v.text()))
    }

    /// From a listing of the parent (kept from an earlier one where there was one): never
    /// a HEAD, which some servers answer with 500 for a folder.
    fn size(&self, key: &str) -> Result<u64> {
        check_key(key)?;
        let full = self.full(key);
        if let Some(size) = self.known_size(&full) {
            return Ok(size);
        }
        let (parent, name) = key.rsplit_once('/').unwrap_or(("", key));
        match self.list(parent)?.into_iter().find(|e| e.name == name) {
            Some(Listed {
                size: Some(size), ..
            }) => Ok(size),
            Some(_) => Err(Error::IsDirectory(self.uri() + "/" + key)),
            None => Err(Error::io(
                Place::file(key),
                std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    format!("s3://{}/{full}: no such object", self.inner.bucket),
                ),
            )),
        }
    }

    fn read(&self, key: &str, ranges: &mut [RangeRead<'_>]) -> Result<()> {
        self.read_ranges(key, ranges, true)
    }

    fn read_alone(&self, key: &str, offset: u64, len: u64) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.read_ranges(
            key,
            &mut [RangeRead {
                offset,
                len,
                out: &mut out,
            }],
            false,
        )?;
        Ok(out)
    }

    /// A sequential reader (the view saw one) will need this range: fetched in the
    /// background, as far as the reader's window goes.
    fn read_ahead(&self, key: &str, offset: u64, len: u64) {
        if check_key(key).is_err() {
            return;
        }
        let full = self.full(key);
        let Some(size) = self.known_size(&full) else {
            return;
        };
        let end = offset.saturating_add(len).min(size);
        let range = self.state().windows.on_hint(&full, offset..end);
        if let Some(range) = range {
            // A hint never lists: without a known version, nothing is kept on disk.
            let disk = self.object_disk(key, &full, false).ok().flatten();
            let range = match &disk {
                Some(_) => parts::widen(range, size),
                None => range,
            };
            self.fetch_ahead(&full, range, disk.as_ref());
        }
    }

    /// The whole tile: a request costs a round trip, and the chunk reads that follow the
    /// walk are then served from the kept bytes. It is fetched in parts of about 1 MiB
    /// issued together ([`parts`]).
    fn walk_window(&self) -> u64 {
        u64::MAX
    }

    fn is_remote(&self) -> bool {
        true
    }

    /// Objects cannot be kept from deletion: nothing is kept (bytes already fetched stay
    /// readable from the cache).
    fn pin(&self, _prefix: &str) -> Result<Pin> {
        Ok(Box::new(()))
    }

    fn sub(&self, prefix: &str) -> Result<Arc<dyn Store>> {
        check_key(prefix)?;
        Ok(Arc::new(S3Store {
            runtime: self.runtime.clone(),
            inner: self.inner.clone(),
            root: self.full(prefix),
        }))
    }

    /// One GET of the whole object, without asking its size first; with a disk cache,
    /// a listing of its folder first (its version names its bytes there).
    fn read_all(&self, key: &str) -> Result<Vec<u8>> {
        check_key(key)?;
        let full = self.full(key);
        if let Some(size) = self.known_size(&full) {
            return self.read_range(key, 0, size);
        }
        if self.inner.disk.is_some() {
            let size = self.size(key)?;
            return self.read_range(key, 0, size);
        }
        let got = self.runtime.block_on(self.inner.get(&full, None));
        self.inner
            .absorb(&full, 0, None, got)
            .map(|f| f.bytes.to_vec())
            .map_err(|e| match e {
                Error::Io { cause, .. } => Error::Io {
                    place: Box::new(Place::file(key)),
                    cause,
                },
                e => e,
            })
    }
}

impl S3Store {
    /// [`Store::read`]; `ahead`: whether a sequential reader's next bytes may be fetched
    /// ahead of these.
    fn read_ranges(&self, key: &str, ranges: &mut [RangeRead<'_>], ahead: bool) -> Result<()> {
        check_key(key)?;

        let full = self.full(key);
        let check = |known: Option<u64>| {
            for r in ranges.iter() {
                let past = match r.offset.checked_add(r.len) {
                    None => true,
                    Some(end) => known.is_some_and(|size| end > size),
                };
                if past {
                    return Err(past_end(key, r.offset, r.len, known.unwrap_or(0)));
                }
            }
            Ok(())
        };
        check(self.known_size(&full))?;
        let wanted: Vec<Range<u64>> = ranges
            .iter()
            .map(|r| r.offset..r.offset + r.len)
            .filter(|r| !r.is_empty())
            .collect();
        if wanted.is_empty() {
            return Ok(());
        }
        // With a disk cache, an object not listed yet is listed here (its size is then
        // known too).
        let mut disk = self.object_disk(key, &full, true)?;
        check(self.known_size(&full))?;
        // Errors name the key relative to the root, as other stores do.
        let relative = |e: Error| match e {
            Error::Corrupt { reason, .. } => Error::corrupt(Place::file(key), reason),
            Error::Io { cause, .. } => Error::Io {
                place: Box::new(Place::file(key)),
                cause,
            },
            e => e,
        };
        // A response that disagrees with the listed version (the object was rewritten)
        // makes the read start over: listed again, then, should it disagree once more
        // (a server whose listings and responses never agree), without the disk.
        let mut attempt = 0;
        let pieces = loop {
            // Whole blocks, so the disk cache can keep every byte fetched.
            let asked: Vec<Range<u64>> = match &disk {
                Some(d) => wanted
                    .iter()
                    .map(|r| parts::widen(r.clone(), d.entry.size()))
                    .collect(),
                None => wanted.clone(),
            };
            match self
                .fetch_ranges(&full, &asked, disk.as_ref())
                .map_err(relative)?
            {
                Outcome::Read(pieces) => break pieces,
                Outcome::Changed => attempt += 1,
            }
            disk = match attempt {
                1 => self.object_disk(key, &full, true).map_err(relative)?,
                _ => {
                    if !self.inner.unreliable_versions.swap(true, Ordering::AcqRel) {
                        log::warn!(
                            "{}: the server's answers for {full} disagreed twice in a row \
                             with its listing: fetched bytes are no longer kept in the disk \
                             cache",
                            self.uri()
                        );
                    }
                    None
                }
            };
        };
        let mut pieces = pieces.into_iter();
        for r in ranges.iter_mut().filter(|r| r.len > 0) {
            let parts = pieces.next().unwrap_or_default();
            r.out.reserve(r.len as usize);
            let (mut pos, end) = (r.offset, r.offset + r.len);
            for (start, bytes) in parts {
                // Pieces in order, each from at most where the last one ended: a gap
                // leaves the range short, which is reported below.
                if start > pos || pos >= end {
                    break;
                }
                let from = (pos - start) as usize;
                let to = ((end.min(start + bytes.len() as u64)) - start) as usize;
                if let Some(part) = bytes.get(from..to) {
                    r.out.extend_from_slice(part);
                    pos = start + to as u64;
                }
            }
            // The server (or a cached object) gave fewer bytes than the range: an error
            // that names them, never a short buffer the caller would decode.
            if pos != end {
                return Err(Error::corrupt(
                    Place::file(key),
                    format!(
                        "bytes {}..{end} were asked, only {}..{pos} came back",
                        r.offset, r.offset
                    ),
                ));
            }
        }
        if !ahead {
            return Ok(());
        }
        // A sequential reader's next bytes, fetched ahead.
        let size = self.known_size(&full).unwrap_or(0);
        let next: Vec<Range<u64>> = {
            let mut state = self.state();
            wanted
                .iter()
                .filter_map(|r| state.windows.on_read(&full, r.clone(), size))
                .collect()
        };
        for range in next {
            let range = match &disk {
                Some(d) => parts::widen(range, d.entry.size()),
                None => range,
            };
            self.fetch_ahead(&full, range, disk.as_ref());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inner() -> Arc<Inner> {
        let resolved = config::Resolved {
            endpoint: Some("http://127.0.0.1:9".into()),
            region: "us-east-1".into(),
            keys: Some(("k".into(), "s".into(), None)),
            ..config::Resolved::default()
        };
        Arc::new(Inner {
            client: build_client("bkt", &resolved).unwrap(),
            bucket: "bkt".into(),
            retry_timeout: Duration::from_secs(1),
            state: Mutex::new(State {
                cache: ByteCache::new(1 << 20),
                windows: Windows::new(1 << 20),
                objects: HashMap::new(),
                inflight: Vec::new(),
            }),
            disk: None,
            identity: "test s3://bkt".into(),
            disagreed: AtomicBool::new(false),
            unreliable_versions: AtomicBool::new(false),
        })
    }

    /// A fetch whose runner died (a panic, a cancelled task) ends with an error: readers
    /// waiting for it do not wait forever, and it is no longer under way.
    #[test]
    fn abandoned_fetches_end_with_an_error() {
        let inner = inner();
        let f = Fetch::new("a/k", 0..10, None);
        lock(&inner.state).inflight.push(f.clone());
        let waiter = {
            let f = f.clone();
            std::thread::spawn(move || f.wait())
        };
        drop(Unfinished {
            inner: inner.clone(),
            fetches: vec![f],
        });
        let err = waiter.join().unwrap().unwrap_err().to_string();
        assert!(
            err.contains("s3://bkt/a/k bytes 0..10: the request was abandoned"),
            "{err}"
        );
        assert!(lock(&inner.state).inflight.is_empty());
    }

    /// An error whose text says nothing fragfs reads: what object_store returns for a
    /// failed listing (its real cause type is private).
    fn opaque() -> object_store::Error {
        object_store::Error::Generic {
            store: "S3",
            source: "Error performing list request: ...".into(),
        }
    }

    fn seen(requests: u32, last: Failure) -> Seen {
        Seen {
            requests,
            last: Some(last),
            ..Seen::default()
        }
    }

    fn status(status: u16, reason: &'static str, code: &str, message: &str) -> Failure {
        Failure::Status {
            status,
            reason: Some(reason),
            code: Some(code.into()),
            message: Some(message.into()),
        }
    }

    #[test]
    fn server_answers_show_their_status_code_and_message() {
        let slow = status(503, "Service Unavailable", "SlowDown", "Please slow down.");
        let err = s3_error("b", "a/k", Some(&(10..20)), opaque(), Some(&seen(4, slow)));
        assert_eq!(err.errno(), libc::EIO);
        assert!(err.is_transient());
        let text = err.to_string();
        assert!(
            text.starts_with(
                "a/k: s3://b/a/k bytes 10..20: 503 Service Unavailable: SlowDown: \
                 Please slow down. (after 3 retries in "
            ),
            "{text}"
        );
        // No error document (a proxy's 502): the status alone.
        let bare = Failure::Status {
            status: 502,
            reason: Some("Bad Gateway"),
            code: None,
            message: None,
        };
        let err = s3_error("b", "k", None, opaque(), Some(&seen(1, bare)));
        assert_eq!(err.to_string(), "k: s3://b/k: 502 Bad Gateway");
    }

    /// The errno comes from the status the HTTP layer saw, whatever object_store's text
    /// says, and from the variant object_store chose where it chose one.
    #[test]
    fn refused_credentials_are_eacces_and_a_missing_bucket_is_enoent() {
        let denied = status(403, "Forbidden", "SignatureDoesNotMatch", "Check your key.");
        let err = s3_error("b", "p/ (listing)", None, opaque(), Some(&seen(1, denied)));
        assert_eq!(err.errno(), libc::EACCES);
        assert!(!err.is_transient());
        assert!(
            err.to_string()
                .ends_with("403 Forbidden: SignatureDoesNotMatch: Check your key."),
            "{err}"
        );
        let missing = status(404, "Not Found", "NoSuchBucket", "No such bucket.");
        let err = s3_error("b", "p/ (listing)", None, opaque(), Some(&seen(1, missing)));
        assert_eq!(err.errno(), libc::ENOENT);
        assert!(!err.is_transient());
        for (e, errno, said) in [
            (
                object_store::Error::NotFound {
                    path: "k".into(),
                    source: "404".into(),
                },
                libc::ENOENT,
                "no such object",
            ),
            (
                object_store::Error::PermissionDenied {
                    path: "k".into(),
                    source: "403".into(),
                },
                libc::EACCES,
                "access denied",
            ),
            (
                object_store::Error::Unauthenticated {
                    path: "k".into(),
                    source: "401".into(),
                },
                libc::EACCES,
                "not authenticated",
            ),
        ] {
            let err = s3_error("b", "k", None, e, None);
            assert_eq!(err.errno(), errno, "{err}");
            assert_eq!(err.to_string(), format!("k: s3://b/k: {said}"));
        }
    }

    #[test]
    fn transport_failures_name_their_cause_and_retries() {
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        let e = object_store::Error::Generic {
            store: "S3",
            source: Box::new(HttpError::new(
                object_store::client::HttpErrorKind::Connect,
                refused,
            )),
        };
        let last = Failure::Transport {
            kind: object_store::client::HttpErrorKind::Connect,
            reason: "connection refused".into(),
        };
        let err = s3_error("b", "k", None, e, Some(&seen(5, last)));
        assert_eq!(err.errno(), libc::EIO);
        assert!(err.is_transient());
        let text = err.to_string();
        assert!(
            text.starts_with("k: s3://b/k: cannot connect: connection refused (after 4 retries"),
            "{text}"
        );
    }

    /// A server that answers every request with `status` and an S3 error document.
    fn refusing_server(status: &'static str, code: &'static str) -> String {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        std::thread::spawn(move || {
            for mut conn in listener.incoming().flatten() {
                let mut request = Vec::new();
                let mut buf = [0u8; 4096];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match conn.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                let body = format!(
                    "<?xml version=\"1.0\"?><Error><Code>{code}</Code>\
                     <Message>Said by the server.</Message></Error>"
                );
                let _ = write!(
                    conn,
                    "HTTP/1.1 {status}\r\nContent-Type: application/xml\r\n\
                     Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        endpoint
    }

    /// Through the real client: the status and error document of a refused listing
    /// reach the error typed, by the HTTP layer (object_store keeps them as text only).
    #[test]
    fn opening_a_refused_or_missing_bucket_gives_its_errno_and_the_servers_words() {
        for (status, code, errno, words) in [
            (
                "403 Forbidden",
                "InvalidAccessKeyId",
                libc::EACCES,
                "403 Forbidden: InvalidAccessKeyId: Said by the server. (check the credentials",
            ),
            (
                "404 Not Found",
                "NoSuchBucket",
                libc::ENOENT,
                "404 Not Found: NoSuchBucket: Said by the server.",
            ),
        ] {
            let options = S3Options {
                endpoint_url: Some(refusing_server(status, code)),
                region: Some("us-east-1".into()),
                keys: Some(("id".into(), "secret".into())),
                retry_timeout: Some(Duration::from_secs(1)),
                ..S3Options::default()
            };
            let err = S3Store::open("s3://bkt/arr", &options, 1 << 20, None).unwrap_err();
            assert_eq!(err.errno(), errno, "{err}");
            let text = err.to_string();
            assert!(
                text.starts_with("s3://bkt/arr/ (listing): ") && text.contains(words),
                "{text}"
            );
        }
    }
}
