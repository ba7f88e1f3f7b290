//! The HTTP door: `GET`/`HEAD` of every file of the tree with a single `Range` and
//! strong validators, and folders as an HTML or JSON listing. (The `Host` rule and
//! CORS are the connection's: [`super::conn`], [`super::origin`].)
//!
//! Everything that touches the tree (lookups, stats, reads) runs on the blocking pool:
//! the tree decodes and may wait on storage. A body is read one chunk at a time, the
//! next only when the socket took the last, each chunk within the server's memory
//! budget ([`super::budget`]). A text file whose size must be known (a `HEAD`, a range)
//! is sized in the sizing pool ([`super::sizing`]), never on these threads.

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use futures::StreamExt;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};

use super::budget::{Budget, Share};
use super::file::{body, chunks, etag, first_chunk, http_date, Body, CHUNK};
use super::listing;
use super::page;
use super::sizing::{Sizing, Unsized};
use crate::error::Error;
use crate::secret::Secret;
use crate::view::held::Held;
use crate::view::tiledb::{ENVELOPE, ENVELOPE_QUERY};
use crate::view::{FileTree, Ino, Kind, Lifetime, Stat, ROOT};
use crate::wire::path::{self, BadPath};
use crate::wire::range::{self, Answer};

/// The methods this door answers (a CORS preflight is told them).
pub const METHODS: &str = "GET, HEAD, OPTIONS";

/// One served tree and how it is guarded.
pub struct HttpDoor {
    pub tree: Arc<dyn FileTree>,
    /// Required as a bearer token or a basic-auth password when set.
    pub token: Option<Secret>,
    /// Read-ahead workers for sequential bodies (the server's, shared by its doors).
    pub ahead: Option<Arc<crate::view::prefetch::Prefetcher>>,
    /// Where text files are rendered to learn their size.
    pub sizing: Arc<Sizing>,
    /// The memory the answers of every door hold at once.
    pub budget: Arc<Budget>,
}

/// The parts of a request the answer depends on (the body is refused, never read).
struct Asked {
    method: Method,
    path: String,
    headers: HeaderMap,
    /// The query string (`sort=cells&order=desc` sorts a folder page's table).
    query: Option<String>,
    wants_json: bool,
    /// `?envelope=fragfs_tile`: the file whole, behind the `fragfs_tile` codec's
    /// envelope (what a reference set of `fragfs refs` points a served chunk at).
    envelope: bool,
    /// Whether the client asks for HTML by name (browsers do), and gets the folder page.
    wants_page: bool,
}

/// What an answer made on the blocking pool needs before it can be made.
enum Needs {
    /// The size of a text file (rendered in the sizing pool).
    Size(Ino),
    /// A share of the memory budget for its first chunk.
    Budget,
}

/// What the async side got for a [`Needs`], handed to the next try.
#[derive(Default)]
struct Got {
    sized: Option<(Ino, u64)>,
    share: Option<Share>,
}

impl HttpDoor {
    /// Answers one request; never fails (errors are HTTP statuses).
    pub async fn answer(
        self: Arc<Self>,
        req: Request<Incoming>,
    ) -> Result<Response<Body>, Infallible> {
        let method = req.method().clone();
        if method == Method::OPTIONS {
            // Not a CORS preflight (the connection answers those): what may be asked.
            let mut r = empty(StatusCode::NO_CONTENT);
            r.headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static(METHODS));
            return Ok(r);
        }
        if method != Method::GET && method != Method::HEAD {
            let mut r = text(
                StatusCode::METHOD_NOT_ALLOWED,
                "read-only: GET and HEAD only\n",
            );
            r.headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static(METHODS));
            return Ok(r);
        }
        if has_body(req.headers()) {
            let mut r = text(StatusCode::PAYLOAD_TOO_LARGE, "a GET has no body\n");
            r.headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
            return Ok(r);
        }
        if !self.authorized(req.headers()) {
            return Ok(unauthorized());
        }
        let envelope = match envelope(req.uri().query()) {
            Ok(e) => e,
            Err(why) => return Ok(text(StatusCode::BAD_REQUEST, &why)),
        };
        let asked = Arc::new(Asked {
            envelope,
            wants_json: wants_json(req.headers(), req.uri().query()),
            wants_page: header_str(req.headers(), header::ACCEPT)
                .is_some_and(|a| a.contains("text/html")),
            method,
            path: req.uri().path().to_string(),
            query: req.uri().query().map(str::to_string),
            headers: req.headers().clone(),
        });
        let mut got = Got::default();
        // A second try has what the first needed; a third, what the second needed.
        for _ in 0..3 {
            let door = self.clone();
            let this_try = asked.clone();
            let reply = tokio::task::spawn_blocking(move || {
                let got = got;
                door.reply(&this_try, got)
            })
            .await;
            let needs = match reply {
                Ok(Ok(response)) => return Ok(response),
                Ok(Err((needs, back))) => {
                    got = back;
                    needs
                }
                Err(e) => {
                    log::error!("http: a request's task failed: {e}");
                    return Ok(text(StatusCode::INTERNAL_SERVER_ERROR, "internal error\n"));
                }
            };
            match needs {
                Needs::Size(ino) => match self.sizing.size(ino).await {
                    Ok(size) => got.sized = Some((ino, size)),
                    Err(u) => return Ok(not_sized(&asked.path, u)),
                },
                Needs::Budget => match self.budget.take_first(CHUNK as usize).await {
                    Some(share) => got.share = Some(share),
                    None => return Ok(busy("the server's memory budget is held by slow clients")),
                },
            }
        }
        Ok(busy("the answer could not be made"))
    }

    /// Whether the request carries the token (always, when none is set).
    pub(crate) fn authorized(&self, headers: &HeaderMap) -> bool {
        let Some(token) = &self.token else {
            return true;
        };
        headers
            .get(header::AUTHORIZATION)
            .and_then(|v| crate::wire::auth::credentials(v.as_bytes()))
            .is_some_and(|c| token.matches(c.secret()))
    }

    /// The whole answer, on a blocking thread; or what it needs first (given back with
    /// what the try was given).
    fn reply(&self, asked: &Asked, got: Got) -> Result<Response<Body>, (Needs, Got)> {
        let (names, trailing) = match path::segments(&asked.path) {
            Ok(p) => p,
            Err(BadPath(why)) => return Ok(text(StatusCode::BAD_REQUEST, &format!("{why}\n"))),
        };
        let tree = &*self.tree;
        let mut ino = ROOT;
        for name in &names {
            ino = match tree.lookup(ino, name) {
                Ok(entry) => entry.ino,
                Err(e) => return Ok(error(&asked.path, &e)),
            };
        }
        let stat = match tree.stat(ino) {
            Ok(s) => s,
            Err(e) => return Ok(error(&asked.path, &e)),
        };
        match stat.kind {
            Kind::Dir if !trailing => {
                // Relative links of the listing need the slash.
                let mut r = text(StatusCode::MOVED_PERMANENTLY, "a folder\n");
                if let Ok(v) = HeaderValue::from_str(&format!("{}/", asked.path)) {
                    r.headers_mut().insert(header::LOCATION, v);
                }
                Ok(r)
            }
            Kind::Dir => Ok(self.folder(asked, ino, &names)),
            Kind::File if trailing => Ok(error(
                &asked.path,
                &Error::NotDirectory(format!("{}: a file", asked.path)),
            )),
            Kind::File => self.file(asked, ino, &stat, &names, got),
        }
    }

    fn folder(&self, asked: &Asked, ino: Ino, names: &[String]) -> Response<Body> {
        let tree = &self.tree;
        let listed = match listing::take(&**tree, ino) {
            Ok(l) => l,
            Err(e) => return error(&asked.path, &e),
        };
        let shown = format!(
            "/{}",
            names.iter().map(|n| format!("{n}/")).collect::<String>()
        );
        let head = asked.method == Method::HEAD;
        let (pages, kind) = if asked.wants_json {
            (
                listing::json(tree.clone(), listed, &shown),
                "application/json",
            )
        } else if asked.wants_page {
            (
                // The page links by the path as asked (percent-encoded).
                page::html(tree.clone(), listed, &asked.path, asked.query.as_deref()),
                "text/html; charset=utf-8",
            )
        } else {
            // Clients that do not ask for HTML (curl, fsspec, GDAL, rclone: `*/*`)
            // read a folder's HTML as a directory listing: every link one of its
            // entries. The page's links to pictures, fields' files and sortings would
            // be taken for entries.
            (
                page::plain(tree.clone(), listed, &asked.path),
                "text/html; charset=utf-8",
            )
        };
        let mut r = Response::new(if head { empty_body() } else { body(pages) });
        let h = r.headers_mut();
        h.insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        h.insert(header::VARY, HeaderValue::from_static("Accept"));
        r
    }

    fn file(
        &self,
        asked: &Asked,
        ino: Ino,
        stat: &Stat,
        names: &[String],
        mut got: Got,
    ) -> Result<Response<Body>, (Needs, Got)> {
        let tree = &self.tree;
        // Held for the whole response: the number stays in use (a tree drops idle
        // numbers) and the bytes stay readable if TileDB vacuums the fragment meanwhile.
        let held = match Held::take(tree, ino) {
            Ok(h) => Arc::new(h),
            Err(e) => return Ok(error(&asked.path, &e)),
        };
        let name = names.last().map_or("", String::as_str);
        let shown = names.join("/");
        let etag = match etag(&**tree, &shown, ino, stat) {
            // The enveloped file is another representation: another tag.
            Ok(Some(t)) if asked.envelope => Some(format!("{}-fragfs_tile\"", t.trim_end_matches('"'))),
            Ok(t) => t,
            Err(e) => return Ok(error(&asked.path, &e)),
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
                return Ok(r);
            }
        }
        // A range of a file whose size shows only once rendered (a text file), or a HEAD
        // of one (how clients ask for a size), needs its size: the sizing pool renders
        // it. A plain GET streams it as it renders.
        if asked.envelope && asked.headers.contains_key(header::RANGE) {
            return Ok(text(
                StatusCode::BAD_REQUEST,
                "a file behind the fragfs_tile envelope is served whole: GET it without a Range\n",
            ));
        }
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
            match got.sized.filter(|(i, _)| *i == ino) {
                Some((_, size)) => Some(size),
                None => match self.sizing.known(ino) {
                    Some(size) => Some(size),
                    None => return Err((Needs::Size(ino), got)),
                },
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
                return Ok(r);
            }
            (Answer::Part { start, end }, _) => (StatusCode::PARTIAL_CONTENT, start, Some(end)),
            (Answer::Whole, size) => (StatusCode::OK, 0, size),
        };
        let head = asked.method == Method::HEAD;
        // The first chunk is read before answering, so that a file that cannot be read
        // answers an error status rather than a cut body; its bytes come out of the
        // budget like every other chunk's.
        let mut response = if head {
            Response::new(empty_body())
        } else {
            let first_len = end.map_or(CHUNK, |e| (e - start).min(CHUNK)) as usize;
            let share = match got
                .share
                .take()
                .or_else(|| self.budget.try_take(first_len))
            {
                Some(s) => s,
                None => return Err((Needs::Budget, got)),
            };
            let first = match first_chunk(&held, self.ahead.as_deref(), start, end, share) {
                Ok(first) => first,
                Err(e) => return Ok(error(&asked.path, &e)),
            };
            let rest = chunks(
                held,
                self.ahead.clone(),
                self.budget.clone(),
                shown.clone(),
                start,
                end,
                first,
            );
            match asked.envelope {
                true => {
                    let envelope = Bytes::from_static(&ENVELOPE);
                    Response::new(body(
                        futures::stream::once(async move { Ok(envelope) }).chain(rest),
                    ))
                }
                false => Response::new(body(rest)),
            }
        };
        *response.status_mut() = status;
        let h = response.headers_mut();
        h.extend(validators);
        h.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(tree.content_type(ino, name)),
        );
        if let Some(end) = end {
            let extra = if asked.envelope { ENVELOPE.len() as u64 } else { 0 };
            h.insert(header::CONTENT_LENGTH, HeaderValue::from(end - start + extra));
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
        Ok(response)
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

/// Whether the query asks for the file behind the `fragfs_tile` envelope; another
/// envelope is an error (a client must not get bytes it did not ask for).
fn envelope(query: Option<&str>) -> Result<bool, String> {
    let mut asked = false;
    for part in query.unwrap_or("").split('&') {
        if part == ENVELOPE_QUERY {
            asked = true;
        } else if let Some(other) = part.strip_prefix("envelope=") {
            return Err(format!(
                "unknown envelope {other:?}: the one there is is {ENVELOPE_QUERY}\n"
            ));
        }
    }
    Ok(asked)
}

fn header_str(headers: &HeaderMap, name: header::HeaderName) -> Option<&str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// The HTTP status of a tree error; the error is logged with the path.
pub(crate) fn error(shown: &str, e: &Error) -> Response<Body> {
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

/// 401 with the challenge every client (browsers, GDAL, Windows) answers.
pub(crate) fn unauthorized() -> Response<Body> {
    let mut r = text(StatusCode::UNAUTHORIZED, "a token is required\n");
    r.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Basic realm=\"fragfs\", charset=\"UTF-8\""),
    );
    r
}

/// 503 "try again later", for what the server could not do in time.
pub(crate) fn busy(why: &str) -> Response<Body> {
    let mut r = text(
        StatusCode::SERVICE_UNAVAILABLE,
        &format!("{why}: try again\n"),
    );
    r.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
    r
}

/// The answer when a text file could not be sized for the request.
pub(crate) fn not_sized(shown: &str, why: Unsized) -> Response<Body> {
    match why {
        Unsized::Late => busy("this text file is still being rendered to learn its size"),
        Unsized::Failed(e) => error(shown, &e),
    }
}

pub(crate) fn empty_body() -> Body {
    Full::new(Bytes::new())
        .map_err(|e| match e {})
        .boxed_unsync()
}

fn empty(status: StatusCode) -> Response<Body> {
    let mut r = Response::new(empty_body());
    *r.status_mut() = status;
    r
}

/// A whole body.
fn full(status: StatusCode, bytes: Vec<u8>) -> Response<Body> {
    let len = bytes.len() as u64;
    let mut r = Response::new(
        Full::new(Bytes::from(bytes))
            .map_err(|e| match e {})
            .boxed_unsync(),
    );
    *r.status_mut() = status;
    r.headers_mut()
        .insert(header::CONTENT_LENGTH, HeaderValue::from(len));
    r
}

pub(crate) fn text(status: StatusCode, message: &str) -> Response<Body> {
    let mut r = full(status, message.as_bytes().to_vec());
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

impl super::conn::Plain for Body {
    fn plain(text: &str) -> Body {
        Full::new(Bytes::from(text.to_string()))
            .map_err(|e| match e {})
            .boxed_unsync()
    }
}
