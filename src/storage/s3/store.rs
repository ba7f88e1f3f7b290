//! The S3 store itself: see the module above for what it asks of the server.

use std::collections::HashMap;
use std::fmt;
use std::ops::Range;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bytes::Bytes;
use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::client::HttpError;
use object_store::path::Path as ObjectPath;
use object_store::{BackoffConfig, ClientOptions, GetOptions, GetRange, ObjectStore, RetryConfig};

use super::cache::ByteCache;
use super::config::{self, S3Options, S3Uri};
use super::failure::{self, observed, Failure, Seen};
use super::window::Windows;
use crate::error::{Error, Place, Result};
use crate::storage::{check_key, join, past_end, Listed, Pin, RangeRead, Store};

/// The largest piece of a read-ahead window fetched by one request: pieces are fetched
/// concurrently, and a reader waits for the piece it needs, not the whole window. Over
/// the bench's loopback server (a sequential `cat` of 8 fragments, 4 runs each): 4 MiB
/// pieces 332-373 MB/s, 8 MiB 276-320 (each response streams at its own pace, so more
/// of them in flight keep more of the server busy).
const PART: u64 = 4 << 20;

/// The largest read-ahead window (also bounded by a quarter of the byte cache, so what
/// is fetched ahead is still there when the reader gets to it). A quarter rather than an
/// eighth: at the default cache (128 MiB of bytes) the window reaches 32 MiB, eight
/// requests in flight (an eighth was slower; a half no faster: 313-344 MB/s).
const MAX_WINDOW: u64 = 64 << 20;

/// Sizes remembered at most; past it the map starts over (a forgotten size costs one
/// listing of the parent folder).
const KEPT_SIZES: usize = 200_000;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// One GET under way: readers that need its bytes wait for it.
struct Fetch {
    key: String,
    range: Range<u64>,
    result: Mutex<Option<Result<Bytes>>>,
    done: Condvar,
}

impl Fetch {
    fn new(key: &str, range: Range<u64>) -> Arc<Fetch> {
        Arc::new(Fetch {
            key: key.to_string(),
            range,
            result: Mutex::new(None),
            done: Condvar::new(),
        })
    }

    fn wait(&self) -> Result<Bytes> {
        let mut result = lock(&self.result);
        loop {
            if let Some(r) = result.as_ref() {
                return r.clone();
            }
            result = self.done.wait(result).unwrap_or_else(|e| e.into_inner());
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
}

#[derive(Debug)]
struct State {
    cache: ByteCache,
    windows: Windows,
    /// Object sizes from listings and responses, by full key.
    sizes: HashMap<String, u64>,
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
}

/// An object's bytes and what the response said about the object.
struct Got {
    bytes: Bytes,
    etag: Option<String>,
    size: u64,
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
    /// the fetched bytes kept.
    pub fn open(uri: &str, options: &S3Options, cache_bytes: u64) -> Result<S3Store> {
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
                    sizes: HashMap::new(),
                    inflight: Vec::new(),
                }),
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
    /// messages): from kept bytes, fetches under way, and GETs of the rest, all of them
    /// issued at once. Per range, its pieces in order.
    fn fetch_ranges(&self, full: &str, wanted: &[Range<u64>]) -> Result<Vec<Vec<(u64, Bytes)>>> {
        let mut own = Vec::new();
        let plans: Vec<Vec<Piece>> = {
            let mut state = self.state();
            wanted
                .iter()
                .map(|r| plan(&mut state, full, r.clone(), u64::MAX, &mut own))
                .collect()
        };
        if !own.is_empty() {
            let mut unfinished = Unfinished {
                inner: self.inner.clone(),
                fetches: own.clone(),
            };
            let inner = &self.inner;
            let results = self.runtime.block_on(futures::future::join_all(
                own.iter().map(|f| inner.get(full, Some(f.range.clone()))),
            ));
            unfinished.fetches.clear();
            for (f, r) in own.iter().zip(results) {
                inner.complete(f, r);
            }
        }
        let mut out = Vec::with_capacity(plans.len());
        for plan in plans {
            let mut pieces = Vec::with_capacity(plan.len());
            for piece in plan {
                match piece {
                    Piece::Kept(start, bytes) => pieces.push((start, bytes)),
                    Piece::Fetching(f) => {
                        let bytes = match f.wait() {
                            Ok(b) => b,
                            // Another's fetch failed (a read-ahead, say): this reader
                            // asks for itself, with its own retries.
                            Err(_) if !own.iter().any(|o| Arc::ptr_eq(o, &f)) => {
                                let got = self
                                    .runtime
                                    .block_on(self.inner.get(full, Some(f.range.clone())));
                                let bytes =
                                    got.as_ref().map(|g| g.bytes.clone()).map_err(Clone::clone);
                                self.inner.remember(full, f.range.start, got);
                                bytes?
                            }
                            Err(e) => return Err(e),
                        };
                        pieces.push((f.range.start, bytes));
                    }
                }
            }
            out.push(pieces);
        }
        Ok(out)
    }

    /// Starts fetching `range` of `full` in the background, in pieces of at most
    /// [`PART`], except what is kept or being fetched already.
    fn fetch_ahead(&self, full: &str, range: Range<u64>) {
        let mut parts = Vec::new();
        plan(&mut self.state(), full, range, PART, &mut parts);
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

    /// The size of `full` if a listing or a response told it.
    fn known_size(&self, full: &str) -> Option<u64> {
        self.state().sizes.get(full).copied()
    }
}

/// Plans a read of `range` of `full`: kept bytes where there are some, fetches under way
/// where they cover it, and new fetches of at most `largest` bytes each (registered, so
/// other readers wait for them rather than ask again, and pushed to `own`) for the gaps.
fn plan(
    state: &mut State,
    full: &str,
    range: Range<u64>,
    largest: u64,
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
            .find(|f| f.key == full && f.range.contains(&pos))
        {
            pos = f.range.end;
            pieces.push(Piece::Fetching(f.clone()));
            continue;
        }
        let end = gap_end(state, full, pos, range.end).min(pos.saturating_add(largest));
        let f = Fetch::new(full, pos..end);
        state.inflight.push(f.clone());
        own.push(f.clone());
        pieces.push(Piece::Fetching(f));
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
        Ok(Got { bytes, etag, size })
    }

    /// Keeps what a GET of `full` from `start` returned: its size, ETag and bytes.
    fn remember(&self, full: &str, start: u64, got: Result<Got>) {
        if let Ok(got) = got {
            let mut state = lock(&self.state);
            remember_size(&mut state, full, got.size);
            let etag = got.etag.unwrap_or_default();
            state.cache.insert(full, &etag, start, got.bytes);
        }
    }

    /// Ends fetch `f` with `result`: kept, no longer under way, waiters woken.
    fn complete(&self, f: &Arc<Fetch>, result: Result<Got>) {
        let bytes = result
            .as_ref()
            .map(|g| g.bytes.clone())
            .map_err(Clone::clone);
        {
            let mut state = lock(&self.state);
            state.inflight.retain(|o| !Arc::ptr_eq(o, f));
            if let Ok(got) = result {
                remember_size(&mut state, &f.key, got.size);
                let etag = got.etag.unwrap_or_default();
                state.cache.insert(&f.key, &etag, f.range.start, got.bytes);
            }
        }
        *lock(&f.result) = Some(bytes);
        f.done.notify_all();
    }
}

fn remember_size(state: &mut State, full: &str, size: u64) {
    if state.sizes.len() >= KEPT_SIZES && !state.sizes.contains_key(full) {
        state.sizes.clear();
    }
    state.sizes.insert(full.to_string(), size);
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
            remember_size(&mut state, &full, o.size);
            if let Some(etag) = &o.e_tag {
                state.cache.set_etag(&full, etag);
            }
        }
        drop(state);
        out.sort();
        out.dedup();
        Ok(out)
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
            self.fetch_ahead(&full, range);
        }
    }

    /// The whole tile: a request costs a round trip, and the chunk reads that follow the
    /// walk are then served from the kept bytes.
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

    /// One GET of the whole object, without asking its size first.
    fn read_all(&self, key: &str) -> Result<Vec<u8>> {
        check_key(key)?;
        let full = self.full(key);
        if let Some(size) = self.known_size(&full) {
            return self.read_range(key, 0, size);
        }
        let got = self.runtime.block_on(self.inner.get(&full, None));
        let bytes = got.as_ref().map(|g| g.bytes.to_vec()).map_err(|e| match e {
            Error::Io { cause, .. } => Error::Io {
                place: Box::new(Place::file(key)),
                cause: cause.clone(),
            },
            e => e.clone(),
        });
        self.inner.remember(&full, 0, got);
        bytes
    }
}

impl S3Store {
    /// [`Store::read`]; `ahead`: whether a sequential reader's next bytes may be fetched
    /// ahead of these.
    fn read_ranges(&self, key: &str, ranges: &mut [RangeRead<'_>], ahead: bool) -> Result<()> {
        check_key(key)?;

        let full = self.full(key);
        let known = self.known_size(&full);
        for r in ranges.iter() {
            let past = match r.offset.checked_add(r.len) {
                None => true,
                Some(end) => known.is_some_and(|size| end > size),
            };
            if past {
                return Err(past_end(key, r.offset, r.len, known.unwrap_or(0)));
            }
        }
        let wanted: Vec<Range<u64>> = ranges
            .iter()
            .map(|r| r.offset..r.offset + r.len)
            .filter(|r| !r.is_empty())
            .collect();
        if wanted.is_empty() {
            return Ok(());
        }
        let pieces = self.fetch_ranges(&full, &wanted).map_err(|e| match e {
            // Errors name the key relative to the root, as other stores do.
            Error::Corrupt { reason, .. } => Error::corrupt(Place::file(key), reason),
            Error::Io { cause, .. } => Error::Io {
                place: Box::new(Place::file(key)),
                cause,
            },
            e => e,
        })?;
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
            self.fetch_ahead(&full, range);
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
                sizes: HashMap::new(),
                inflight: Vec::new(),
            }),
        })
    }

    /// A fetch whose runner died (a panic, a cancelled task) ends with an error: readers
    /// waiting for it do not wait forever, and it is no longer under way.
    #[test]
    fn abandoned_fetches_end_with_an_error() {
        let inner = inner();
        let f = Fetch::new("a/k", 0..10);
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
            let err = S3Store::open("s3://bkt/arr", &options, 1 << 20).unwrap_err();
            assert_eq!(err.errno(), errno, "{err}");
            let text = err.to_string();
            assert!(
                text.starts_with("s3://bkt/arr/ (listing): ") && text.contains(words),
                "{text}"
            );
        }
    }
}
