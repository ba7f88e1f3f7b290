//! The HTTP face: `GET`/`HEAD` of every file of the tree with a single `Range`, strong
//! validators and CORS, and folders as an HTML or JSON listing.
//!
//! Everything that touches the tree (lookups, stats, reads) runs on the blocking pool:
//! the tree decodes and may wait on storage. A body is read one chunk at a time, the
//! next only when the socket took the last ([`crate::serve::conn`]), so a response costs
//! at most one chunk of memory whatever the file's size.

use std::convert::Infallible;
use std::io;
use std::sync::Arc;

use bytes::Bytes;
use futures::StreamExt;
use http_body_util::{combinators::UnsyncBoxBody, BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};

use super::listing;
use super::path::{self, BadPath};
use super::range::{self, Answer};
use crate::error::Error;
use crate::view::{FileTree, Ino, Kind, Lifetime, Stat, ROOT};

/// Bytes read from the tree per step of a body.
const CHUNK: u64 = 256 << 10;
/// Files at most this large that may change get an `ETag` from their bytes.
const HASHED: u64 = 1 << 20;

pub type Body = UnsyncBoxBody<Bytes, io::Error>;

/// One served tree and how it is guarded.
pub struct HttpFace {
    pub tree: Arc<dyn FileTree>,
    /// Required as a bearer token or a basic-auth password when set.
    pub token: Option<String>,
}

/// The parts of a request the answer depends on (the body is refused, never read).
struct Asked {
    method: Method,
    path: String,
    headers: HeaderMap,
    wants_json: bool,
}

impl HttpFace {
    /// Answers one request; never fails (errors are HTTP statuses).
    pub async fn answer(
        self: Arc<Self>,
        req: Request<Incoming>,
    ) -> Result<Response<Body>, Infallible> {
        let method = req.method().clone();
        if method == Method::OPTIONS {
            return Ok(preflight());
        }
        if method != Method::GET && method != Method::HEAD {
            let mut r = text(
                StatusCode::METHOD_NOT_ALLOWED,
                "read-only: GET and HEAD only\n",
            );
            r.headers_mut().insert(
                header::ALLOW,
                HeaderValue::from_static("GET, HEAD, OPTIONS"),
            );
            return Ok(r);
        }
        if has_body(req.headers()) {
            let mut r = text(StatusCode::PAYLOAD_TOO_LARGE, "a GET has no body\n");
            r.headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
            return Ok(r);
        }
        if !self.authorized(req.headers()) {
            let mut r = text(StatusCode::UNAUTHORIZED, "a token is required\n");
            r.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Basic realm=\"fragfs\", charset=\"UTF-8\""),
            );
            return Ok(r);
        }
        let asked = Asked {
            wants_json: wants_json(req.headers(), req.uri().query()),
            method,
            path: req.uri().path().to_string(),
            headers: req.headers().clone(),
        };
        let face = self.clone();
        let reply = tokio::task::spawn_blocking(move || face.reply(&asked)).await;
        Ok(reply.unwrap_or_else(|e| {
            log::error!("http: a request's task failed: {e}");
            text(StatusCode::INTERNAL_SERVER_ERROR, "internal error\n")
        }))
    }

    fn authorized(&self, headers: &HeaderMap) -> bool {
        let Some(token) = &self.token else {
            return true;
        };
        let Some(given) = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
        else {
            return false;
        };
        let given = given.trim();
        if let Some(bearer) = given.strip_prefix("Bearer ") {
            return same(bearer.trim().as_bytes(), token.as_bytes());
        }
        if let Some(basic) = given.strip_prefix("Basic ") {
            if let Some(pair) = base64_decode(basic.trim()) {
                // Any user name; the password is the token.
                if let Some(i) = pair.iter().position(|&b| b == b':') {
                    return same(&pair[i + 1..], token.as_bytes());
                }
            }
        }
        false
    }

    /// The whole answer, on a blocking thread.
    fn reply(&self, asked: &Asked) -> Response<Body> {
        let (names, trailing) = match path::segments(&asked.path) {
            Ok(p) => p,
            Err(BadPath(why)) => return text(StatusCode::BAD_REQUEST, &format!("{why}\n")),
        };
        let tree = &*self.tree;
        let mut ino = ROOT;
        for name in &names {
            ino = match tree.lookup(ino, name) {
                Ok(entry) => entry.ino,
                Err(e) => return error(&asked.path, &e),
            };
        }
        let stat = match tree.stat(ino) {
            Ok(s) => s,
            Err(e) => return error(&asked.path, &e),
        };
        match stat.kind {
            Kind::Dir if !trailing => {
                // Relative links of the listing need the slash.
                let mut r = text(StatusCode::MOVED_PERMANENTLY, "a folder\n");
                if let Ok(v) = HeaderValue::from_str(&format!("{}/", asked.path)) {
                    r.headers_mut().insert(header::LOCATION, v);
                }
                r
            }
            Kind::Dir => self.folder(asked, ino, &names),
            Kind::File if trailing => error(
                &asked.path,
                &Error::NotDirectory(format!("{}: a file", asked.path)),
            ),
            Kind::File => self.file(asked, ino, &stat, &names),
        }
    }

    fn folder(&self, asked: &Asked, ino: Ino, names: &[String]) -> Response<Body> {
        let tree = &*self.tree;
        let entries = match listing::entries(tree, ino) {
            Ok(e) => e,
            Err(e) => return error(&asked.path, &e),
        };
        let shown = format!(
            "/{}",
            names.iter().map(|n| format!("{n}/")).collect::<String>()
        );
        let (body, kind) = if asked.wants_json {
            (listing::json(&shown, &entries), "application/json")
        } else {
            (
                listing::html(tree, &shown, &entries),
                "text/html; charset=utf-8",
            )
        };
        let mut r = full(
            StatusCode::OK,
            body.into_bytes(),
            asked.method == Method::HEAD,
        );
        let h = r.headers_mut();
        h.insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        h.insert(header::VARY, HeaderValue::from_static("Accept"));
        r
    }

    fn file(&self, asked: &Asked, ino: Ino, stat: &Stat, names: &[String]) -> Response<Body> {
        let tree = &self.tree;
        // Held for the whole response: the number stays in use (a tree drops idle
        // numbers) and the bytes stay readable if TileDB vacuums the fragment meanwhile.
        let held = match Held::take(tree, ino) {
            Ok(h) => Arc::new(h),
            Err(e) => return error(&asked.path, &e),
        };
        let name = names.last().map_or("", String::as_str);
        let shown = names.join("/");
        let etag = match self.etag(&shown, ino, stat) {
            Ok(t) => t,
            Err(e) => return error(&asked.path, &e),
        };
        let modified = stat.mtime_ms.map(http_date);
        let mut validators = HeaderMap::new();
        if let Some(t) = etag.as_deref().and_then(|t| HeaderValue::from_str(t).ok()) {
            validators.insert(header::ETAG, t);
        }
        if let Some(m) = modified
            .as_deref()
            .and_then(|m| HeaderValue::from_str(m).ok())
        {
            validators.insert(header::LAST_MODIFIED, m);
        }
        if let (Some(tag), Some(asked_tags)) =
            (&etag, header_str(&asked.headers, header::IF_NONE_MATCH))
        {
            if asked_tags.trim() == "*"
                || asked_tags
                    .split(',')
                    .any(|t| t.trim().trim_start_matches("W/") == tag)
            {
                let mut r = empty(StatusCode::NOT_MODIFIED);
                r.headers_mut().extend(validators);
                return r;
            }
        }
        // A range of a file whose size shows only once rendered (a text file), or a HEAD
        // of one (how clients ask for a size), renders it to know its size; a plain GET
        // streams it as it renders.
        let range = header_str(&asked.headers, header::RANGE).filter(|_| {
            match header_str(&asked.headers, header::IF_RANGE) {
                None => true,
                Some(v) => {
                    Some(v.trim()) == etag.as_deref() || Some(v.trim()) == modified.as_deref()
                }
            }
        });
        let size = if stat.exact_size {
            Some(stat.size)
        } else if range.is_some() || asked.method == Method::HEAD {
            match tree.size(ino) {
                Ok(s) => Some(s),
                Err(e) => return error(&asked.path, &e),
            }
        } else {
            None
        };
        let answer = match (range, size) {
            (Some(r), Some(size)) => range::answer(r, size),
            _ => Answer::Whole,
        };
        let (status, start, end) = match (answer, size) {
            (Answer::Unsatisfiable, size) => {
                let mut r = text(StatusCode::RANGE_NOT_SATISFIABLE, "range not satisfiable\n");
                if let Ok(v) = HeaderValue::from_str(&format!("bytes */{}", size.unwrap_or(0))) {
                    r.headers_mut().insert(header::CONTENT_RANGE, v);
                }
                return r;
            }
            (Answer::Part { start, end }, _) => (StatusCode::PARTIAL_CONTENT, start, Some(end)),
            (Answer::Whole, size) => (StatusCode::OK, 0, size),
        };
        let head = asked.method == Method::HEAD;
        // The first chunk is read before answering, so that a file that cannot be read
        // answers an error status rather than a cut body.
        let first = if head {
            Vec::new()
        } else {
            let want = end.map_or(CHUNK, |e| (e - start).min(CHUNK));
            let mut buf = Vec::new();
            if let Err(e) = tree.read_into(ino, start, want, &mut buf) {
                return error(&asked.path, &e);
            }
            buf
        };
        let mut response = Response::new(if head {
            empty_body()
        } else {
            stream(held, shown.clone(), start, end, first)
        });
        *response.status_mut() = status;
        let h = response.headers_mut();
        h.extend(validators);
        h.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(content_type(name)),
        );
        if let Some(end) = end {
            h.insert(header::CONTENT_LENGTH, HeaderValue::from(end - start));
        }
        if status == StatusCode::PARTIAL_CONTENT {
            if let (Some(end), Some(size)) = (end, size) {
                if let Ok(v) = HeaderValue::from_str(&format!("bytes {start}-{}/{size}", end - 1)) {
                    h.insert(header::CONTENT_RANGE, v);
                }
            }
        }
        let cache = match tree.lifetime(ino) {
            Lifetime::Immutable => "public, max-age=31536000, immutable",
            _ => "no-cache",
        };
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
        cors(h);
        response
    }

    /// A strong validator: an immutable file (inside a fragment) by its path, size and
    /// time; a file of a merged state by the state's digest; another small file by its
    /// bytes. Large files that may change and have no version get none.
    fn etag(&self, shown: &str, ino: Ino, stat: &Stat) -> crate::Result<Option<String>> {
        use sha2::{Digest, Sha256};
        let tree = &self.tree;
        let mut h = Sha256::new();
        h.update(shown.as_bytes());
        h.update([0]);
        if tree.lifetime(ino) == Lifetime::Immutable && stat.exact_size {
            h.update(stat.size.to_le_bytes());
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
}

/// The body of a file from `start` to `end` (to its end when `None`), `first` already
/// read: each further chunk is read on the blocking pool when hyper asks for it.
fn stream(held: Arc<Held>, shown: String, start: u64, end: Option<u64>, first: Vec<u8>) -> Body {
    let done = first.is_empty() || end.is_none() && (first.len() as u64) < CHUNK;
    let next = start + first.len() as u64;
    let first = futures::stream::once(async move { Ok::<_, io::Error>(Bytes::from(first)) });
    let ino = held.ino;
    let state = (held, next, done);
    let rest = futures::stream::unfold(state, move |(tree, at, done)| {
        let shown = shown.clone();
        async move {
            if done || end.is_some_and(|e| at >= e) {
                return None;
            }
            let want = end.map_or(CHUNK, |e| (e - at).min(CHUNK));
            let t = tree.clone();
            let read = tokio::task::spawn_blocking(move || t.tree.read_at(ino, at, want)).await;
            let bytes = match read {
                Ok(Ok(b)) => b,
                Ok(Err(e)) => {
                    log::error!("http: /{shown} at byte {at}: {e}");
                    return Some((Err(io::Error::other(e.to_string())), (tree, at, true)));
                }
                Err(e) => return Some((Err(io::Error::other(e.to_string())), (tree, at, true))),
            };
            let got = bytes.len() as u64;
            if got < want && end.is_some() {
                // The file ended before its stated size: cut the body (the client sees
                // a short read) rather than pad it.
                log::error!("http: /{shown}: ended at byte {} before its size", at + got);
                return Some((
                    Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "file shorter than its size",
                    )),
                    (tree, at, true),
                ));
            }
            let done = got < want;
            Some((Ok(Bytes::from(bytes)), (tree, at + got, done)))
        }
    });
    let frames = first
        .chain(rest)
        .filter(|r| futures::future::ready(!matches!(r, Ok(b) if b.is_empty())))
        .map(|r| r.map(Frame::data));
    StreamBody::new(frames).boxed_unsync()
}

/// A file a response is reading: its number kept in use ([`FileTree::remember`]) and
/// the tree's open guard kept, both given back when the response ends.
struct Held {
    tree: Arc<dyn FileTree>,
    ino: Ino,
    _guard: Option<crate::view::OpenGuard>,
}

impl Held {
    fn take(tree: &Arc<dyn FileTree>, ino: Ino) -> crate::Result<Held> {
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

fn has_body(headers: &HeaderMap) -> bool {
    headers.contains_key(header::TRANSFER_ENCODING)
        || header_str(headers, header::CONTENT_LENGTH).is_some_and(|v| v.trim() != "0")
}

fn wants_json(headers: &HeaderMap, query: Option<&str>) -> bool {
    if query.is_some_and(|q| q.split('&').any(|p| p == "format=json")) {
        return true;
    }
    header_str(headers, header::ACCEPT)
        .is_some_and(|a| a.contains("application/json") && !a.contains("text/html"))
}

fn header_str(headers: &HeaderMap, name: header::HeaderName) -> Option<&str> {
    headers.get(name).and_then(|v| v.to_str().ok())
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

/// The HTTP status of a tree error; the error is logged with the path.
fn error(shown: &str, e: &Error) -> Response<Body> {
    let status = match e.errno() {
        libc::ENOENT | libc::ENOTDIR => StatusCode::NOT_FOUND,
        libc::EACCES | libc::EPERM => StatusCode::FORBIDDEN,
        _ => {
            log::error!("http: {shown}: {e}");
            StatusCode::INTERNAL_SERVER_ERROR
        }
    };
    text(status, &format!("{e}\n"))
}

fn cors(h: &mut HeaderMap) {
    h.insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    h.insert(
        header::ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static(
            "Content-Length, Content-Range, Content-Type, ETag, Last-Modified, Accept-Ranges",
        ),
    );
}

/// The answer to a CORS preflight (no authentication: browsers send none with it).
fn preflight() -> Response<Body> {
    let mut r = empty(StatusCode::NO_CONTENT);
    let h = r.headers_mut();
    h.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static("GET, HEAD, OPTIONS"),
    );
    h.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static(
            "Range, If-None-Match, If-Range, If-Modified-Since, Authorization, Accept",
        ),
    );
    h.insert(
        header::ACCESS_CONTROL_MAX_AGE,
        HeaderValue::from_static("86400"),
    );
    h.insert(
        header::ALLOW,
        HeaderValue::from_static("GET, HEAD, OPTIONS"),
    );
    r
}

fn empty_body() -> Body {
    Full::new(Bytes::new())
        .map_err(|e| match e {})
        .boxed_unsync()
}

fn empty(status: StatusCode) -> Response<Body> {
    let mut r = Response::new(empty_body());
    *r.status_mut() = status;
    cors(r.headers_mut());
    r
}

/// A whole body (or, for HEAD, only its length).
fn full(status: StatusCode, bytes: Vec<u8>, head: bool) -> Response<Body> {
    let len = bytes.len() as u64;
    let body = if head {
        Bytes::new()
    } else {
        Bytes::from(bytes)
    };
    let mut r = Response::new(Full::new(body).map_err(|e| match e {}).boxed_unsync());
    *r.status_mut() = status;
    r.headers_mut()
        .insert(header::CONTENT_LENGTH, HeaderValue::from(len));
    cors(r.headers_mut());
    r
}

fn text(status: StatusCode, message: &str) -> Response<Body> {
    let mut r = full(status, message.as_bytes().to_vec(), false);
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

/// Compares secrets in time independent of where they differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Standard base64 (with or without padding), `None` when malformed.
fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0);
    for c in text.trim_end_matches('=').bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Some(out)
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
    fn basic_credentials_and_secrets() {
        assert_eq!(
            base64_decode("dXNlcjpzM2NyZXQ="),
            Some(b"user:s3cret".to_vec())
        );
        assert_eq!(
            base64_decode("dXNlcjpzM2NyZXQ"),
            Some(b"user:s3cret".to_vec())
        );
        assert_eq!(base64_decode("!!"), None);
        assert!(same(b"abc", b"abc"));
        assert!(!same(b"abc", b"abd"));
        assert!(!same(b"abc", b"abcd"));
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
