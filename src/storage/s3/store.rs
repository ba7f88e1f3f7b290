//! The S3 store itself: see the module above for what it asks of the server. Its
//! pieces: `state.rs` (what it knows of objects), `inflight.rs` (fetches under way),
//! `plan.rs`, `fetching.rs`, `request.rs`, `retry.rs`, `errors.rs`, `client.rs`.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use object_store::ObjectStore;

use super::cache::ByteCache;
use super::client::build_client;
use super::config::{self, S3Options, S3Uri};
use super::disk::{self, ObjectDisk, Version};
use super::errors::{s3_error, source_text};
use super::failure::{self, observed};
use super::parts::{self};
use super::request::{object_path, Inner};
use super::retry::retrying;
use super::state::{remember_listed, Facts, State};
use super::sync::lock;
use super::window::Windows;
use crate::error::{Error, Place, Result};
use crate::storage::diskcache::DiskCache;
use crate::storage::{check_key, join, Listed, Pin, RangeRead, Store};

/// The largest read-ahead window (also bounded by a quarter of the byte cache, so what
/// is fetched ahead is still there when the reader gets to it). A quarter rather than an
/// eighth: at the default cache (128 MiB of bytes) the window reaches 32 MiB, eight
/// requests in flight (an eighth was slower; a half no faster: 313-344 MB/s).
pub(crate) const MAX_WINDOW: u64 = 64 << 20;

pub struct S3Store {
    pub(crate) runtime: Arc<tokio::runtime::Runtime>,
    pub(crate) inner: Arc<Inner>,
    /// The root inside the bucket (`""` or `a/b`).
    pub(crate) root: String,
}

impl fmt::Debug for S3Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "S3Store({})", self.location())
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

    pub(crate) fn full(&self, key: &str) -> String {
        join(&self.root, key)
    }

    pub(crate) fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.inner.state)
    }

    /// What a listing or a response told of `full`.
    pub(crate) fn facts(&self, full: &str) -> Option<Facts> {
        self.state().objects.get(full).cloned()
    }

    /// The size of `full` if a listing or a response told it.
    pub(crate) fn known_size(&self, full: &str) -> Option<u64> {
        self.facts(full).map(|f| f.size)
    }

    /// The disk entry of object `key` (`full`), when a disk cache is configured and a
    /// listing told the object's version: listed here if it was not yet (one listing
    /// of its folder, which tells its neighbours' too). A cache that fails is passed
    /// by, said in the log.
    pub(crate) fn object_disk(
        &self,
        key: &str,
        full: &str,
        may_list: bool,
    ) -> Result<Option<ObjectDisk>> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::s3::cache::ByteCache;
    use crate::storage::s3::client::build_client;
    use crate::storage::s3::config;
    use crate::storage::s3::failure::{Failure, Seen};
    use crate::storage::s3::inflight::Fetch;
    use crate::storage::s3::request::Unfinished;
    use crate::storage::s3::state::State;
    use crate::storage::s3::window::Windows;
    use object_store::client::HttpError;
    use std::collections::HashMap;
    use std::sync::atomic::AtomicBool;
    use std::sync::Mutex;
    use std::time::Duration;

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
