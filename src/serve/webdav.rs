//! The WebDAV face: read-only WebDAV class 1 (RFC 4918) over the tree, so that macOS
//! Finder, Windows Explorer, davfs2 and rclone mount or copy it with no FUSE in the
//! server.
//!
//! Only what a read-only class-1 server needs: `OPTIONS` (`DAV: 1`), `PROPFIND` of
//! depth 0 or 1 answered from `stat` (and, for a text file not yet sized, the tree's
//! `size`, since WebDAV clients trust `getcontentlength`), and `GET`/`HEAD`, which
//! are the HTTP face's own answers (ranges, validators, streaming, errors), so a file
//! reads and validates the same over both. Every write (`PUT`, `DELETE`, `MKCOL`,
//! `COPY`, `MOVE`, `PROPPATCH`) answers 403; `LOCK`/`UNLOCK`, which a class-1 server
//! does not offer, answer 405. Not advertising class 2 is what makes Finder mount the
//! share read-only instead of failing its first write.
//!
//! Written on hyper rather than with the `dav-server` crate: its `DavMetaData` wants a
//! file's length before the file is opened and a path-less `etag()`, its GET has its
//! own range logic, and it carries a lock system and write paths this face must refuse;
//! here a GET is byte for byte the HTTP face's, and the subset is small.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};

use super::file::{content_type, etag, http_date, Body};
use super::http::{error, text, HttpFace};
use crate::error::Result;
use crate::view::{FileTree, Ino, Kind, Stat, ROOT};
use crate::wire::path::{self, encode, BadPath};
use crate::wire::propfind::{self, Refused, Wanted, DAV, MAX_BODY};

/// Time a client has to send a `PROPFIND` body once its head arrived.
const BODY_TIMEOUT: Duration = Duration::from_secs(30);
/// The methods this face answers with something other than a refusal.
const ALLOW: &str = "OPTIONS, GET, HEAD, PROPFIND";

/// One served tree over WebDAV, guarded as the HTTP face is.
pub struct WebDavFace {
    tree: Arc<dyn FileTree>,
    /// `GET`/`HEAD` are the HTTP face's; it also holds the token.
    http: Arc<HttpFace>,
    /// The time of a node that has none (the array's own files, `latest/`), as a mount
    /// shows it: when serving started.
    started_ms: u64,
}

/// The properties this face knows, in the order they are written.
const LIVE: [&str; 6] = [
    "displayname",
    "resourcetype",
    "getcontentlength",
    "getlastmodified",
    "getetag",
    "getcontenttype",
];

impl WebDavFace {
    /// The WebDAV face of the tree `http` serves, guarded by the same token (required as
    /// a basic-auth password, or a bearer token, when set).
    pub fn new(http: Arc<HttpFace>) -> WebDavFace {
        WebDavFace {
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
            let mut r = text(StatusCode::UNAUTHORIZED, "a token is required\n");
            r.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Basic realm=\"fragfs\", charset=\"UTF-8\""),
            );
            return Ok(closing(r));
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
                    .insert(header::ALLOW, HeaderValue::from_static(ALLOW));
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
        let face = self.clone();
        let reply =
            tokio::task::spawn_blocking(move || face.multistatus(&path, depth, &wanted)).await;
        reply.unwrap_or_else(|e| {
            log::error!("webdav: a request's task failed: {e}");
            text(StatusCode::INTERNAL_SERVER_ERROR, "internal error\n")
        })
    }

    /// The 207 answer to a PROPFIND of `raw` (a URL path), on a blocking thread.
    fn multistatus(&self, raw: &str, depth: u8, wanted: &Wanted) -> Response<Body> {
        let (names, trailing) = match path::segments(raw) {
            Ok(p) => p,
            Err(BadPath(why)) => return text(StatusCode::BAD_REQUEST, &format!("{why}\n")),
        };
        let tree = &*self.tree;
        let mut ino = ROOT;
        for name in &names {
            ino = match tree.lookup(ino, name) {
                Ok(entry) => entry.ino,
                Err(e) => return error(raw, &e),
            };
        }
        let stat = match tree.stat(ino) {
            Ok(s) => s,
            Err(e) => return error(raw, &e),
        };
        if stat.kind == Kind::File && trailing {
            return text(StatusCode::NOT_FOUND, "a file, not a folder\n");
        }
        let mut out = String::from(
            "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<D:multistatus xmlns:D=\"DAV:\">\n",
        );
        let display = names.last().cloned().unwrap_or_default();
        self.response(&mut out, &names, &display, ino, &stat, wanted);
        if depth == 1 && stat.kind == Kind::Dir {
            let list = match tree.list(ino) {
                Ok(l) => l,
                Err(e) => return error(raw, &e),
            };
            let mut child_names = names.clone();
            for entry in list {
                // An entry that went away since the listing (a vacuum) is left out.
                let Ok(child) = tree.stat(entry.ino) else {
                    continue;
                };
                child_names.push(entry.name);
                let name = child_names.last().cloned().unwrap_or_default();
                self.response(&mut out, &child_names, &name, entry.ino, &child, wanted);
                child_names.pop();
            }
        }
        out.push_str("</D:multistatus>\n");
        xml(StatusCode::MULTI_STATUS, out)
    }

    /// One `<D:response>`: the node's properties that were found (200), are not
    /// defined for it (404) or failed (500).
    fn response(
        &self,
        out: &mut String,
        names: &[String],
        display: &str,
        ino: Ino,
        stat: &Stat,
        wanted: &Wanted,
    ) {
        let dir = stat.kind == Kind::Dir;
        let mut href = String::from("/");
        for n in names {
            href.push_str(&encode(n));
            href.push('/');
        }
        if !dir {
            href.pop();
        }
        let mut found = String::new();
        let mut missing = String::new();
        let mut failed = String::new();
        let asked: Vec<(String, String)> = match wanted {
            Wanted::Props(p) => p.clone(),
            _ => LIVE
                .iter()
                .map(|n| ("DAV:".to_string(), n.to_string()))
                .collect(),
        };
        for (ns, local) in &asked {
            let value = if ns == DAV {
                self.property(local, names, display, ino, stat)
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
        out.push_str(&href);
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
    /// node has none.
    fn property(
        &self,
        local: &str,
        names: &[String],
        display: &str,
        ino: Ino,
        stat: &Stat,
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
            "getcontentlength" if file => Some(
                if stat.exact_size {
                    stat.size
                } else {
                    tree.size(ino)?
                }
                .to_string(),
            ),
            "getlastmodified" => Some(http_date(stat.mtime_ms.unwrap_or(self.started_ms))),
            // The HTTP face's tag for the same path, so clients and caches can mix faces:
            // a text file's once it was sized (as listed here), as a GET then gives it.
            "getetag" if file => {
                let sized;
                let stat = if stat.exact_size {
                    stat
                } else {
                    tree.size(ino)?;
                    sized = tree.stat(ino)?;
                    &sized
                };
                etag(tree, &names.join("/"), ino, stat)?.map(|t| escape(&t))
            }
            "getcontenttype" if file => Some(content_type(display).to_string()),
            _ => None,
        })
    }
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
    h.insert(header::ALLOW, HeaderValue::from_static(ALLOW));
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
