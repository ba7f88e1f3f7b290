//! The HTTP face: `GET`/`HEAD` of every file of the tree with a single `Range`, strong
//! validators and CORS, and folders as an HTML or JSON listing.
//!
//! Everything that touches the tree (lookups, stats, reads) runs on the blocking pool:
//! the tree decodes and may wait on storage. A body is read one chunk at a time, the
//! next only when the socket took the last ([`crate::serve::conn`]), so a response costs
//! at most one chunk of memory whatever the file's size.

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};

use super::file::{body, chunks, content_type, etag, first_chunk, http_date, Body};
use super::listing;
use crate::error::Error;
use crate::view::held::Held;
use crate::view::{FileTree, Ino, Kind, Lifetime, Stat, ROOT};
use crate::wire::path::{self, BadPath};
use crate::wire::range::{self, Answer};

/// One served tree and how it is guarded.
pub struct HttpFace {
    pub tree: Arc<dyn FileTree>,
    /// Required as a bearer token or a basic-auth password when set.
    pub token: Option<String>,
    /// Read-ahead workers for sequential bodies (the server's, shared by its faces).
    pub ahead: Option<Arc<crate::view::prefetch::Prefetcher>>,
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

    /// Whether the request carries the token (always, when none is set).
    pub(super) fn authorized(&self, headers: &HeaderMap) -> bool {
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
        let etag = match etag(&**tree, &shown, ino, stat) {
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
            match first_chunk(&held, self.ahead.as_deref(), start, end) {
                Ok(buf) => buf,
                Err(e) => return error(&asked.path, &e),
            }
        };
        let mut response = Response::new(if head {
            empty_body()
        } else {
            body(chunks(
                held,
                self.ahead.clone(),
                shown.clone(),
                start,
                end,
                first,
            ))
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

/// The HTTP status of a tree error; the error is logged with the path.
pub(super) fn error(shown: &str, e: &Error) -> Response<Body> {
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

pub(super) fn text(status: StatusCode, message: &str) -> Response<Body> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
