//! What browsers may ask of the HTTP, WebDAV and S3 doors: the `Host` rule that stops
//! DNS rebinding, and CORS.
//!
//! A web page can make the browser send requests to any address, `127.0.0.1:8080`
//! included; what the same-origin policy forbids is reading the answers. Two ways
//! around it, both closed here (Jupyter, the Docker daemon and many development servers
//! were hit by exactly these):
//! - **DNS rebinding**: the page's own name (`evil.example`) is made to resolve to
//!   `127.0.0.1`; the page is then same-origin with the server, but every request it
//!   sends carries `Host: evil.example`. So a listener without an access control (a
//!   loopback one, or one opened with `--insecure-listen`) answers only requests whose
//!   `Host` is one of its own names: a loopback name (`localhost`, `127.0.0.1`,
//!   `[::1]`), an IP address for a listener beyond loopback (rebinding needs a name),
//!   or a name given with `--allowed-host`. A loopback listener checks `Host` even
//!   with a token: the rule costs a legitimate client nothing.
//! - **CORS**: `Access-Control-Allow-Origin` lets a page read answers across origins,
//!   so it is sent only to origins named with `--cors-origin` (zarr.js, Vitessce,
//!   neuroglancer pages), or to every origin with `--cors-origin '*'`, which then needs
//!   a token: a page can read nothing it cannot authenticate for.

use std::net::{IpAddr, SocketAddr};

use hyper::header::{self, HeaderMap, HeaderValue};

/// The names and origins of one listener.
#[derive(Debug, Clone)]
pub struct Rules {
    /// Whether every `Host` is answered (a listener beyond loopback with an access
    /// control).
    any_host: bool,
    /// Whether IP addresses are names of the server (a listener beyond loopback).
    addresses: bool,
    /// Names given with `--allowed-host` (lowercase); a leading `.` allows the domain
    /// and every name below it.
    allowed: Vec<String>,
    cors: Cors,
}

/// Which origins may read answers (`--cors-origin`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Cors {
    /// None: no CORS header is sent.
    #[default]
    Off,
    /// These origins (`scheme://host[:port]`, lowercase).
    Origins(Vec<String>),
    /// Every origin (`*`): only with an access control.
    Any,
}

impl Cors {
    /// The rule `--cors-origin` gives (repeated), or why it is refused: `*` without an
    /// access control, or a value that is not an origin.
    pub fn from_args(origins: &[String], guarded: bool) -> Result<Cors, String> {
        if origins.is_empty() {
            return Ok(Cors::Off);
        }
        if origins.iter().any(|o| o == "*") {
            if !guarded {
                return Err(
                    "--cors-origin '*' lets every web page read the answers: it needs \
                            --token (or S3 keys), so a page reads only what it can \
                            authenticate for"
                        .into(),
                );
            }
            return Ok(Cors::Any);
        }
        let mut out = Vec::new();
        for o in origins {
            let lower = o.trim_end_matches('/').to_ascii_lowercase();
            let rest = lower
                .strip_prefix("https://")
                .or_else(|| lower.strip_prefix("http://"));
            match rest {
                Some(host) if !host.is_empty() && !host.contains('/') => out.push(lower),
                _ => {
                    return Err(format!(
                        "--cors-origin {o:?} is not an origin (scheme://host[:port], as a \
                         browser sends it in Origin)"
                    ))
                }
            }
        }
        Ok(Cors::Origins(out))
    }

    /// The `Access-Control-Allow-Origin` value for a request from `origin`, if it may
    /// read the answer.
    fn allow(&self, origin: Option<&HeaderValue>) -> Option<HeaderValue> {
        let origin = origin?;
        match self {
            Cors::Off => None,
            Cors::Any => Some(HeaderValue::from_static("*")),
            Cors::Origins(list) => {
                let asked = origin.to_str().ok()?.to_ascii_lowercase();
                list.contains(&asked).then(|| origin.clone())
            }
        }
    }
}

/// Why a request was refused, for the door's 403 and its log line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrongHost(pub String);

impl Rules {
    /// The rules of a listener on `addr`, guarded by a token (or keys) or not;
    /// `allowed` are the `--allowed-host` names (and, for the S3 door, its
    /// `--s3-domain` as `.domain`).
    pub fn new(addr: SocketAddr, guarded: bool, allowed: &[String], cors: Cors) -> Rules {
        let loopback = addr.ip().is_loopback();
        Rules {
            any_host: !loopback && guarded,
            addresses: !loopback,
            allowed: allowed
                .iter()
                .map(|h| h.trim_end_matches('.').to_ascii_lowercase())
                .collect(),
            cors,
        }
    }

    /// Whether a request with these headers is answered: its `Host` is one of the
    /// server's names. A request without `Host` (HTTP/1.0 tools) is: no browser sends
    /// one.
    pub fn check_host(&self, headers: &HeaderMap) -> Result<(), WrongHost> {
        if self.any_host {
            return Ok(());
        }
        let Some(value) = headers.get(header::HOST) else {
            return Ok(());
        };
        let Ok(host) = value.to_str() else {
            return Err(WrongHost(String::from_utf8_lossy(value.as_bytes()).into()));
        };
        if self.is_own_name(host) {
            Ok(())
        } else {
            Err(WrongHost(host.to_string()))
        }
    }

    fn is_own_name(&self, host: &str) -> bool {
        let name = host_name(host).trim_end_matches('.').to_ascii_lowercase();
        if name == "localhost" || name.ends_with(".localhost") {
            // RFC 6761: localhost and its subdomains always resolve to loopback.
            return true;
        }
        if let Ok(ip) = name.parse::<IpAddr>() {
            return ip.is_loopback() || self.addresses;
        }
        self.allowed.iter().any(|a| match a.strip_prefix('.') {
            Some(domain) => {
                name == domain
                    || name
                        .strip_suffix(domain)
                        .is_some_and(|sub| sub.ends_with('.'))
            }
            None => name == *a,
        })
    }

    /// Adds the CORS headers an answer to a request with `request` headers carries:
    /// none unless its `Origin` may read it.
    pub fn cors(&self, request: &HeaderMap, answer: &mut HeaderMap) {
        let Some(allow) = self.cors.allow(request.get(header::ORIGIN)) else {
            return;
        };
        let specific = allow != "*";
        answer.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, allow);
        answer.insert(
            header::ACCESS_CONTROL_EXPOSE_HEADERS,
            HeaderValue::from_static(
                "Content-Length, Content-Range, Content-Type, ETag, Last-Modified, \
                 Accept-Ranges",
            ),
        );
        if specific {
            // The answer differs by origin: caches must keep them apart.
            answer.append(header::VARY, HeaderValue::from_static("Origin"));
        }
    }

    /// The answer's headers to a CORS preflight (`OPTIONS` with `Origin` and
    /// `Access-Control-Request-Method`), if its origin may read; `None` otherwise (the
    /// door answers without CORS headers, and the browser gives up).
    pub fn preflight(&self, request: &HeaderMap, methods: &'static str) -> Option<HeaderMap> {
        request.get(header::ACCESS_CONTROL_REQUEST_METHOD)?;
        let allow = self.cors.allow(request.get(header::ORIGIN))?;
        let mut h = HeaderMap::new();
        let specific = allow != "*";
        h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, allow);
        h.insert(
            header::ACCESS_CONTROL_ALLOW_METHODS,
            HeaderValue::from_static(methods),
        );
        h.insert(
            header::ACCESS_CONTROL_ALLOW_HEADERS,
            HeaderValue::from_static(
                "Range, If-None-Match, If-Range, If-Modified-Since, If-Match, \
                 If-Unmodified-Since, Authorization, Accept, Depth, Content-Type, \
                 X-Amz-Date, X-Amz-Content-Sha256, X-Amz-Security-Token, X-Amz-User-Agent",
            ),
        );
        h.insert(
            header::ACCESS_CONTROL_MAX_AGE,
            HeaderValue::from_static("86400"),
        );
        if specific {
            h.insert(header::VARY, HeaderValue::from_static("Origin"));
        }
        Some(h)
    }

    /// Whether a request is a CORS preflight.
    pub fn is_preflight(method: &hyper::Method, request: &HeaderMap) -> bool {
        method == hyper::Method::OPTIONS
            && request.contains_key(header::ORIGIN)
            && request.contains_key(header::ACCESS_CONTROL_REQUEST_METHOD)
    }
}

/// A Host header's name: without its port, and without the brackets of an IPv6 address.
pub fn host_name(host: &str) -> &str {
    if let Some(rest) = host.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    match host.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => host,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    fn host_ok(rules: &Rules, host: &str) -> bool {
        rules.check_host(&headers(&[("host", host)])).is_ok()
    }

    #[test]
    fn a_loopback_listener_answers_its_own_names_only() {
        let addr: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        for guarded in [false, true] {
            let r = Rules::new(addr, guarded, &[], Cors::Off);
            for ok in [
                "localhost",
                "localhost:8080",
                "LOCALHOST.",
                "127.0.0.1",
                "127.0.0.1:8080",
                "127.1.2.3:9",
                "[::1]",
                "[::1]:8080",
                "app.localhost:8080",
            ] {
                assert!(host_ok(&r, ok), "{ok} refused");
            }
            for bad in [
                "evil.example",
                "evil.example:8080",
                "localhost.evil.example",
                "192.168.1.5:8080",
                "127.0.0.1.nip.io",
                "",
            ] {
                assert!(!host_ok(&r, bad), "{bad} answered");
            }
        }
        assert!(Rules::new(addr, false, &[], Cors::Off)
            .check_host(&HeaderMap::new())
            .is_ok());
    }

    #[test]
    fn allowed_hosts_and_listeners_beyond_loopback() {
        let lo: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        let allowed = ["Notebook.Lab".to_string(), ".s3.example.org".to_string()];
        let r = Rules::new(lo, false, &allowed, Cors::Off);
        for ok in [
            "notebook.lab:8080",
            "s3.example.org",
            "bucket.s3.example.org:9000",
        ] {
            assert!(host_ok(&r, ok), "{ok} refused");
        }
        for bad in ["xs3.example.org", "lab", "other.notebook.lab"] {
            assert!(!host_ok(&r, bad), "{bad} answered");
        }
        // Beyond loopback: addresses are the server's names; with a token, anything.
        let any: SocketAddr = "0.0.0.0:8080".parse().unwrap();
        let open = Rules::new(any, false, &[], Cors::Off);
        assert!(host_ok(&open, "192.168.1.5:8080") && host_ok(&open, "[fe80::1]:80"));
        assert!(!host_ok(&open, "evil.example"));
        let guarded = Rules::new(any, true, &[], Cors::Off);
        assert!(host_ok(&guarded, "evil.example"));
    }

    #[test]
    fn cors_goes_to_the_origins_named() {
        let lo: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        let page = headers(&[("origin", "https://vitessce.io")]);
        let other = headers(&[("origin", "https://evil.example")]);
        let mut out = HeaderMap::new();
        Rules::new(lo, false, &[], Cors::Off).cors(&page, &mut out);
        assert!(out.is_empty(), "no CORS unless asked");
        let cors = Cors::from_args(&["https://Vitessce.io/".into()], false).unwrap();
        let r = Rules::new(lo, false, &[], cors);
        r.cors(&page, &mut out);
        assert_eq!(out["access-control-allow-origin"], "https://vitessce.io");
        assert_eq!(out["vary"], "Origin");
        let mut out = HeaderMap::new();
        r.cors(&other, &mut out);
        assert!(out.is_empty());
        let mut pre = page.clone();
        pre.insert(
            "access-control-request-method",
            HeaderValue::from_static("GET"),
        );
        assert!(r.preflight(&pre, "GET").is_some());
        let mut pre_other = other.clone();
        pre_other.insert(
            "access-control-request-method",
            HeaderValue::from_static("GET"),
        );
        assert!(r.preflight(&pre_other, "GET").is_none());
        // `*` needs an access control.
        assert!(Cors::from_args(&["*".into()], false).is_err());
        assert_eq!(Cors::from_args(&["*".into()], true), Ok(Cors::Any));
        assert!(Cors::from_args(&["vitessce.io".into()], false).is_err());
        assert!(Cors::from_args(&["https://a/b".into()], false).is_err());
    }
}
