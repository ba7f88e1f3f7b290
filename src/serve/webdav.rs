//! The WebDAV door: read-only WebDAV class 1 (RFC 4918) over the tree, so that macOS
//! Finder, Windows Explorer, davfs2 and rclone mount or copy it with no FUSE in the
//! server.
//!
//! Only what a read-only class-1 server needs: `OPTIONS` (`DAV: 1`), `PROPFIND` of
//! depth 0 or 1, and `GET`/`HEAD`, which are the HTTP door's own answers (ranges,
//! validators, streaming, errors), so a file reads and validates the same over both.
//! A `PROPFIND` answers from `stat`; WebDAV clients trust `getcontentlength`, so a
//! text file not yet sized is sized in the sizing pool ([`super::sizing`]), and one
//! that could not be in time is listed without it. The multistatus of a folder is
//! streamed page by page ([`super::listing`]), whatever its size, and what a body may
//! ask is bounded ([`crate::wire::propfind`]). Every write (`PUT`, `DELETE`, `MKCOL`,
//! `COPY`, `MOVE`, `PROPPATCH`) answers 403; `LOCK`/`UNLOCK`, which a class-1 server
//! does not offer, answer 405. Not advertising class 2 is what makes Finder mount the
//! share read-only instead of failing its first write.
//!
//! Written on hyper rather than with the `dav-server` crate: its `DavMetaData` wants a
//! file's length before the file is opened and a path-less `etag()`, its GET has its
//! own range logic, and it carries a lock system and write paths this door must refuse;
//! here a GET is byte for byte the HTTP door's, and the subset is small.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};

use super::file::{etag, http_date, Body};
use super::http::{error, not_sized, text, unauthorized, HttpDoor};
use super::listing::{self, Shown};
use crate::error::Result;
use crate::view::{FileTree, Ino, Kind, Stat, ROOT};
use crate::wire::path::{self, encode, BadPath};
use crate::wire::propfind::{self, Refused, Wanted, DAV, MAX_BODY};

/// Time a client has to send a `PROPFIND` body once its head arrived.
const BODY_TIMEOUT: Duration = Duration::from_secs(30);
/// The methods this door answers with something other than a refusal.
pub const METHODS: &str = "OPTIONS, GET, HEAD, PROPFIND";

/// One served tree over WebDAV, guarded as the HTTP door is.
pub struct WebDavDoor {
    tree: Arc<dyn FileTree>,
    /// `GET`/`HEAD` are the HTTP door's; it also holds the token.
    http: Arc<HttpDoor>,
    /// The time of a node that has none (the array's own files, `latest/`), as a mount
    /// shows it: when serving started.
    started_ms: u64,
}

/// The properties this door knows, in the order they are written.
const LIVE: [&str; 6] = [
    "displayname",
    "resourcetype",
    "getcontentlength",
    "getlastmodified",
    "getetag",
    "getcontenttype",
];

impl WebDavDoor {
    /// The WebDAV door of the tree `http` serves, guarded by the same token (required as
    /// a basic-auth password, or a bearer token, when set).
    pub fn new(http: Arc<HttpDoor>) -> WebDavDoor {
        WebDavDoor {
            tree: http.tree.clone(),
            http,
            started_ms: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64),
        }
    }

    /// Answers one request; never fails (errors are HTTP statuses).
    pub async fn answer(
        self: Arc<Self>,
        req: Request<Incoming>,
    ) -> std::result::Result<Response<Body>, Infallible> {
        let method = req.method().clone();
        log::debug!("webdav: {method} {}", req.uri().path());
        // Without authentication: clients (Windows above all) probe with it first, and
        // it says nothing of the tree.
        if method == Method::OPTIONS {
            return Ok(options());
        }
        if method == Method::GET || method == Method::HEAD {
            return self.http.clone().answer(req).await;
        }
        if !self.http.authorized(req.headers()) {
            return Ok(closing(unauthorized()));
        }
        let answer = match method.as_str() {
            "PROPFIND" => self.propfind(req).await,
            "PUT" | "DELETE" | "MKCOL" | "COPY" | "MOVE" | "PROPPATCH" | "POST" => {
                // The body (a PUT's file) is never read: the connection closes instead.
                closing(text(StatusCode::FORBIDDEN, "read-only\n"))
            }
            _ => {
                let mut r = text(
                    StatusCode::METHOD_NOT_ALLOWED,
                    "read-only WebDAV class 1: no locks, no writes\n",
                );
                r.headers_mut()
                    .insert(header::ALLOW, HeaderValue::from_static(METHODS));
                closing(r)
            }
        };
        Ok(answer)
    }

    async fn propfind(self: Arc<Self>, req: Request<Incoming>) -> Response<Body> {
        let depth = match req.headers().get("depth").map(|v| v.to_str()) {
            Some(Ok("0")) => 0,
            Some(Ok("1")) => 1,
            // RFC 4918 §9.1: no Depth means infinity; a server may refuse it.
            None | Some(Ok("infinity" | "Infinity")) => {
                return xml(
                    StatusCode::FORBIDDEN,
                    "<D:error xmlns:D=\"DAV:\"><D:propfind-finite-depth/></D:error>\n".into(),
                )
            }
            _ => return text(StatusCode::BAD_REQUEST, "Depth is 0, 1 or infinity\n"),
        };
        let declared = req
            .headers()
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok());
        if declared.is_some_and(|n| n > MAX_BODY as u64) {
            return closing(text(
                StatusCode::PAYLOAD_TOO_LARGE,
                "a PROPFIND body is at most 64 KiB\n",
            ));
        }
        let path = req.uri().path().to_string();
        let body = Limited::new(req.into_body(), MAX_BODY).collect();
        let body = match tokio::time::timeout(BODY_TIMEOUT, body).await {
            Err(_) => return closing(text(StatusCode::REQUEST_TIMEOUT, "body too slow\n")),
            Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => {
                return closing(text(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "a PROPFIND body is at most 64 KiB\n",
                ))
            }
            Ok(Err(_)) => return closing(text(StatusCode::BAD_REQUEST, "a broken body\n")),
            Ok(Ok(b)) => b.to_bytes(),
        };
        let wanted = match propfind::parse(&body) {
            Ok(w) => w,
            Err(Refused::Malformed(why)) => {
                return text(
                    StatusCode::BAD_REQUEST,
                    &format!("not a PROPFIND body: {why}\n"),
                )
            }
            Err(Refused::TooMuch(why)) => {
                return text(StatusCode::PAYLOAD_TOO_LARGE, &format!("{why}\n"))
            }
        };
        let wanted = Arc::new(wanted);
        let door = self.clone();
        let (path2, wanted2) = (path.clone(), wanted.clone());
        let found = tokio::task::spawn_blocking(move || door.find(&path2, depth == 1)).await;
        let found = match found {
            Ok(Ok(f)) => f,
            Ok(Err(response)) => return *response,
            Err(e) => {
                log::error!("webdav: a request's task failed: {e}");
                return text(StatusCode::INTERNAL_SERVER_ERROR, "internal error\n");
            }
        };
        // The node itself: a file's size rendered in the sizing pool if not known.
        let mut size = found.size;
        if !found.dir && size.is_none() {
            match self.http.sizing.size(found.ino).await {
                Ok(s) => size = Some(s),
                Err(why) => return not_sized(&path, why),
            }
        }
        let mut head = String::from(
            "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<D:multistatus xmlns:D=\"DAV:\">\n",
        );
        let door = self.clone();
        let f = found.clone();
        let own = tokio::task::spawn_blocking(move || {
            let mut out = String::new();
            door.response(
                &mut out, &f.href, &f.display, f.ino, &f.stat, size, &wanted2,
            );
            out
        })
        .await;
        match own {
            Ok(own) => head.push_str(&own),
            Err(e) => {
                log::error!("webdav: a request's task failed: {e}");
                return text(StatusCode::INTERNAL_SERVER_ERROR, "internal error\n");
            }
        }
        let tail = "</D:multistatus>\n".to_string();
        let pages = match (depth, found.listing) {
            (1, Some(listing)) => {
                let door = self.clone();
                let base = found.href.clone();
                let render = move |_: &dyn FileTree, shown: &[Shown], _: usize| {
                    let mut out = String::new();
                    for e in shown {
                        let href =
                            format!("{base}{}{}", encode(&e.name), if e.dir { "/" } else { "" });
                        let stat = Stat {
                            kind: if e.dir { Kind::Dir } else { Kind::File },
                            size: e.size.unwrap_or(0),
                            nlink: 1,
                            mtime_ms: e.mtime_ms,
                            exact_size: e.size.is_some(),
                        };
                        door.response(&mut out, &href, &e.name, e.ino, &stat, e.size, &wanted);
                    }
                    out
                };
                listing::stream(
                    self.tree.clone(),
                    listing,
                    Some(self.http.sizing.clone()),
                    head,
                    render,
                    tail,
                )
            }
            _ => {
                head.push_str(&tail);
                Box::pin(futures::stream::once(async move {
                    Ok::<_, std::io::Error>(Bytes::from(head))
                }))
            }
        };
        let mut r = Response::new(super::file::body(pages));
        *r.status_mut() = StatusCode::MULTI_STATUS;
        r.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/xml; charset=utf-8"),
        );
        r
    }

    /// The node a PROPFIND of `raw` (a URL path) names, with its listing if a folder
    /// whose entries are asked for (`children`); or the answer that it is not there. On
    /// a blocking thread.
    fn find(&self, raw: &str, children: bool) -> std::result::Result<Found, Box<Response<Body>>> {
        let (names, trailing) = match path::segments(raw) {
            Ok(p) => p,
            Err(BadPath(why)) => {
                return Err(Box::new(text(StatusCode::BAD_REQUEST, &format!("{why}\n"))))
            }
        };
        let tree = &*self.tree;
        let mut ino = ROOT;
        for name in &names {
            ino = match tree.lookup(ino, name) {
                Ok(entry) => entry.ino,
                Err(e) => return Err(Box::new(error(raw, &e))),
            };
        }
        let stat = tree.stat(ino).map_err(|e| Box::new(error(raw, &e)))?;
        let dir = stat.kind == Kind::Dir;
        if !dir && trailing {
            return Err(Box::new(text(
                StatusCode::NOT_FOUND,
                "a file, not a folder\n",
            )));
        }
        let mut href = String::from("/");
        for n in &names {
            href.push_str(&encode(n));
            href.push('/');
        }
        if !dir {
            href.pop();
        }
        let listing = match dir && children {
            true => Some(listing::take(tree, ino).map_err(|e| Box::new(error(raw, &e)))?),
            false => None,
        };
        Ok(Found {
            href,
            display: names.last().cloned().unwrap_or_default(),
            ino,
            dir,
            size: (!dir && stat.exact_size).then_some(stat.size),
            stat,
            listing,
        })
    }

    /// One `<D:response>`: the node's properties that were found (200), are not
    /// defined for it (404) or failed (500). `size` is a file's, where known.
    #[allow(clippy::too_many_arguments)]
    fn response(
        &self,
        out: &mut String,
        href: &str,
        display: &str,
        ino: Ino,
        stat: &Stat,
        size: Option<u64>,
        wanted: &Wanted,
    ) {
        let mut found = String::new();
        let mut missing = String::new();
        let mut failed = String::new();
        let live: Vec<(String, String)>;
        let asked: &[(String, String)] = match wanted {
            Wanted::Props(p) => p,
            _ => {
                live = LIVE
                    .iter()
                    .map(|n| (DAV.to_string(), n.to_string()))
                    .collect();
                &live
            }
        };
        for (ns, local) in asked {
            let value = if ns == DAV {
                self.property(local, href, display, ino, stat, size)
            } else {
                Ok(None)
            };
            match value {
                Ok(Some(v)) => {
                    let v = if *wanted == Wanted::PropName { "" } else { &v };
                    found.push_str(&element(ns, local, v))
                }
                // An allprop lists what a node has, without the ones it lacks.
                Ok(None) if matches!(wanted, Wanted::Props(_)) => {
                    missing.push_str(&element(ns, local, ""))
                }
                Ok(None) => {}
                Err(e) => {
                    log::error!("webdav: {href}: {local}: {e}");
                    failed.push_str(&element(ns, local, ""));
                }
            }
        }
        out.push_str("<D:response><D:href>");
        out.push_str(href);
        out.push_str("</D:href>");
        for (props, status) in [
            (found, "200 OK"),
            (missing, "404 Not Found"),
            (failed, "500 Internal Server Error"),
        ] {
            if !props.is_empty() {
                out.push_str("<D:propstat><D:prop>");
                out.push_str(&props);
                out.push_str("</D:prop><D:status>HTTP/1.1 ");
                out.push_str(status);
                out.push_str("</D:status></D:propstat>");
            }
        }
        out.push_str("</D:response>\n");
    }

    /// The value of the WebDAV property `local` (XML, already escaped), `None` when the
    /// node has none (a text file whose size could not be learnt in time has no
    /// `getcontentlength`).
    fn property(
        &self,
        local: &str,
        href: &str,
        display: &str,
        ino: Ino,
        stat: &Stat,
        size: Option<u64>,
    ) -> Result<Option<String>> {
        let tree = &*self.tree;
        let file = stat.kind == Kind::File;
        Ok(match local {
            "displayname" => Some(escape(display)),
            "resourcetype" => Some(if file {
                String::new()
            } else {
                "<D:collection/>".into()
            }),
            "getcontentlength" if file => size.map(|s| s.to_string()),
            "getlastmodified" => Some(http_date(stat.mtime_ms.unwrap_or(self.started_ms))),
            // The HTTP door's tag for the same path, so clients and caches can mix doors.
            "getetag" if file => {
                let path = decoded_path(href);
                etag(tree, &path, ino, stat)?.map(|t| escape(&t))
            }
            "getcontenttype" if file => Some(tree.content_type(ino, display).to_string()),
            _ => None,
        })
    }
}

/// The node a PROPFIND names.
#[derive(Clone)]
struct Found {
    /// Its `href` (percent-encoded, a folder's with a trailing slash).
    href: String,
    display: String,
    ino: Ino,
    dir: bool,
    stat: Stat,
    size: Option<u64>,
    listing: Option<Arc<crate::view::Listing>>,
}

/// A tree path (`latest/a/values.bin`) from an href of this door.
fn decoded_path(href: &str) -> String {
    href.trim_matches('/')
        .split('/')
        .map(|p| path::decode(p).unwrap_or_default())
        .collect::<Vec<_>>()
        .join("/")
}

/// `<D:name>value</D:name>`, or the element in its own namespace.
fn element(ns: &str, local: &str, value: &str) -> String {
    let (open, close) = if ns == DAV {
        (format!("D:{local}"), format!("D:{local}"))
    } else if ns.is_empty() {
        (format!("{local} xmlns=\"\""), local.to_string())
    } else {
        (
            format!("X:{local} xmlns:X=\"{}\"", escape(ns)),
            format!("X:{local}"),
        )
    };
    if value.is_empty() {
        format!("<{open}/>")
    } else {
        format!("<{open}>{value}</{close}>")
    }
}

/// Escapes text for XML content and attribute values.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            _ => out.push(c),
        }
    }
    out
}

/// The answer to `OPTIONS`: class 1 only, so that Finder mounts the share read-only.
fn options() -> Response<Body> {
    let mut r = Response::new(
        Full::new(Bytes::new())
            .map_err(|e| match e {})
            .boxed_unsync(),
    );
    let h = r.headers_mut();
    h.insert("dav", HeaderValue::from_static("1"));
    h.insert(header::ALLOW, HeaderValue::from_static(METHODS));
    // Windows' WebDAV redirector looks for it before it believes a server is one.
    h.insert("ms-author-via", HeaderValue::from_static("DAV"));
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(0));
    r
}

fn xml(status: StatusCode, body: String) -> Response<Body> {
    let mut r = text(status, &body);
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/xml; charset=utf-8"),
    );
    r
}

/// Closes the connection after `r`: a request body left unread cannot be skipped safely.
fn closing(mut r: Response<Body>) -> Response<Body> {
    r.headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elements_and_escapes() {
        assert_eq!(element("DAV:", "getetag", "x"), "<D:getetag>x</D:getetag>");
        assert_eq!(
            element("urn:a&b", "q", ""),
            "<X:q xmlns:X=\"urn:a&amp;b\"/>"
        );
        assert_eq!(element("", "q", ""), "<q xmlns=\"\"/>");
        assert_eq!(escape("a<b>&\"'"), "a&lt;b&gt;&amp;&quot;&apos;");
    }
}
