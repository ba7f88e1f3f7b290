//! The S3 API door's wiring: how it is guarded and named ([`S3Door`], the bucket's
//! name, virtual-hosted addressing), and the service that hands s3s's parsed requests
//! to the answers, refusing every write first.

use std::sync::Arc;
use std::time::SystemTime;

use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use s3s::service::S3ServiceBuilder;
use s3s::S3Result;

use super::answers::Answers;
use super::bucket::Bucketed;
use crate::secret::Secret;
use crate::serve::budget::Budget;
use crate::serve::s3list::Folders;
use crate::serve::sizing::Sizing;
use crate::view::prefetch::Prefetcher;
use crate::view::FileTree;

/// How the S3 door is guarded and named (`fragfs serve --s3`).
#[derive(Debug, Clone, Default)]
pub struct S3Door {
    /// An access key and its secret: every request must be signed with them (SigV4).
    /// Without them the door answers anonymous requests (loopback only, unless
    /// `--insecure-listen`).
    pub keys: Option<(String, Secret)>,
    /// The bucket's name; by default [`bucket_name`] of the tree's source.
    pub bucket: Option<String>,
    /// The domain of virtual-hosted-style requests (`<bucket>.<domain>`); path-style
    /// requests are answered whatever the host.
    pub domain: Option<String>,
}

/// The methods this door answers (a CORS preflight is told them).
pub const METHODS: &str = "GET, HEAD, OPTIONS";

/// The bucket name of a served tree: the last component of its folder (or of its
/// `s3://bucket/prefix` URL), lowercased, every character outside `[a-z0-9.-]` made
/// `-`, runs of `-` and `.` collapsed, cut to 63 characters and trimmed to start and end
/// with a letter or digit; a name still not valid (shorter than 3, or shaped like an IP
/// address) becomes `fragfs-NAME` or `fragfs`. `my_Array.tdb` is `my-array.tdb`.
pub fn bucket_name(source: &str) -> String {
    let last = source
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap_or_default();
    let mut name = String::new();
    for c in last.chars().flat_map(char::to_lowercase) {
        let c = if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.' {
            c
        } else {
            '-'
        };
        // No "..", ".-", "-." or "--" (the last is allowed, but `xn--` is not).
        match (name.chars().last(), c) {
            (Some('.' | '-'), '.' | '-') => {}
            _ => name.push(c),
        }
    }
    let mut name: String = name.chars().take(63).collect();
    name = name
        .trim_matches(|c: char| !c.is_ascii_alphanumeric())
        .to_string();
    if !s3s::path::check_bucket_name(&name) {
        name = format!("fragfs-{name}")
            .chars()
            .take(63)
            .collect::<String>()
            .trim_end_matches(|c: char| !c.is_ascii_alphanumeric())
            .to_string();
    }
    if !s3s::path::check_bucket_name(&name) {
        name = "fragfs".to_string();
    }
    name
}

/// Whether `name` may name the bucket (`--bucket`).
pub fn valid_bucket(name: &str) -> bool {
    s3s::path::check_bucket_name(name)
}

pub type Body = s3s::Body;

impl crate::serve::conn::Plain for s3s::Body {
    fn plain(text: &str) -> s3s::Body {
        s3s::Body::from(text.to_string())
    }
}

/// The S3 service over `tree`: the bucket `bucket`, signed with `keys` when given.
/// Hand it to [`crate::serve::conn::serve`].
pub fn service(
    tree: Arc<dyn FileTree>,
    ahead: Option<Arc<Prefetcher>>,
    sizing: Arc<Sizing>,
    budget: Arc<Budget>,
    bucket: String,
    door: &S3Door,
) -> impl hyper::service::Service<
    Request<Incoming>,
    Response = Response<Body>,
    Error = s3s::HttpError,
    Future = impl Send + 'static,
> + Clone
       + Send
       + 'static {
    let mut builder = S3ServiceBuilder::new(Answers(Arc::new(Bucketed {
        tree,
        ahead,
        sizing,
        budget,
        folders: Folders::default(),
        bucket,
        started: SystemTime::now(),
    })));
    let signed = door.keys.is_some();
    if let Some((access, secret)) = door.keys.clone() {
        builder.set_auth(s3s::auth::SimpleAuth::from_single(
            access,
            secret.expose().to_string(),
        ));
    }
    if let Some(domain) = &door.domain {
        builder.set_host(Addressing {
            domain: domain.to_ascii_lowercase(),
        });
    }
    let s3 = builder.build();
    hyper::service::service_fn(move |mut req: Request<Incoming>| {
        let s3 = s3.clone();
        async move {
            if writes(req.method()) {
                return Ok(denied(req.uri().path()));
            }
            if !signed {
                // An anonymous door serves clients that sign anyway (credentials in
                // their environment): s3s would answer a signed request NotImplemented
                // without an auth provider.
                req.headers_mut().remove(hyper::header::AUTHORIZATION);
            }
            s3.call(req.map(Body::from)).await
        }
    })
}

/// Which requests are virtual-hosted: those whose host (without its port) is
/// `<bucket>.<domain>`. Every other host is path-style, so clients that reach the door
/// by its IP address or another name keep working (s3s's own `SingleDomain` would take
/// such a host for a bucket name).
struct Addressing {
    domain: String,
}

impl s3s::host::S3Host for Addressing {
    fn parse_host_header<'a>(&'a self, host: &'a str) -> S3Result<s3s::host::VirtualHost<'a>> {
        let name = crate::serve::origin::host_name(host);
        let bucket = name
            .len()
            .checked_sub(self.domain.len() + 1)
            .filter(|&at| {
                name[at + 1..].eq_ignore_ascii_case(&self.domain) && name.as_bytes()[at] == b'.'
            })
            .map(|at| &name[..at]);
        let vh = s3s::host::VirtualHost::new(self.domain.as_str());
        Ok(match bucket {
            Some(b) if !b.is_empty() => vh.with_bucket(b.to_ascii_lowercase()),
            _ => vh,
        })
    }
}

/// Whether `domain` can be the domain of virtual-hosted-style requests: dot-separated
/// labels of letters, digits and `-`.
pub fn valid_domain(domain: &str) -> bool {
    !domain.is_empty()
        && domain.len() <= 253
        && domain.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        })
}

/// S3 methods that change something (and carry a body): never served.
fn writes(method: &Method) -> bool {
    *method == Method::PUT || *method == Method::POST || *method == Method::DELETE
}

/// S3's AccessDenied, without reading the request's body.
fn denied(path: &str) -> Response<Body> {
    let xml = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>AccessDenied</Code>\
         <Message>fragfs serves a read-only bucket</Message><Resource>{}</Resource></Error>",
        xml_escape(path)
    );
    let mut r = Response::new(Body::from(xml));
    *r.status_mut() = StatusCode::FORBIDDEN;
    r.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/xml"),
    );
    r
}

fn xml_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_names_from_sources() {
        assert_eq!(bucket_name("/data/my_Array.tdb/"), "my-array.tdb");
        assert_eq!(
            bucket_name("tests/fixtures/tiledb/dense_basic"),
            "dense-basic"
        );
        assert_eq!(
            bucket_name("s3://bucket/arrays/consolidated"),
            "consolidated"
        );
        assert_eq!(bucket_name("s3://bucket"), "bucket");
        assert_eq!(bucket_name("/x/ab"), "fragfs-ab");
        assert_eq!(bucket_name("/x/__"), "fragfs");
        assert_eq!(bucket_name("/x/192.168.1.1"), "fragfs-192.168.1.1");
        assert_eq!(bucket_name("/x/a..b--c"), "a.b-c");
        assert_eq!(bucket_name("/x/Été"), "fragfs-t");
        let long = bucket_name(&format!("/x/{}", "a".repeat(100)));
        assert_eq!(long.len(), 63);
        for name in [
            "my-array.tdb",
            "fragfs-ab",
            "fragfs",
            "a.b-c",
            long.as_str(),
        ] {
            assert!(valid_bucket(name), "{name}");
        }
        assert!(!valid_bucket("Not_A_Bucket"));
    }

    #[test]
    fn virtual_hosts_name_the_bucket_and_other_hosts_are_path_style() {
        use s3s::host::S3Host;
        let a = Addressing {
            domain: "s3.example.org".into(),
        };
        let bucket = |host: &str| {
            a.parse_host_header(host)
                .unwrap()
                .bucket()
                .map(str::to_string)
        };
        assert_eq!(
            bucket("cells.s3.example.org:9000").as_deref(),
            Some("cells")
        );
        assert_eq!(bucket("Cells.S3.Example.org").as_deref(), Some("cells"));
        assert_eq!(bucket("a.b.s3.example.org").as_deref(), Some("a.b"));
        for path_style in [
            "s3.example.org:9000",
            "s3.example.org",
            "127.0.0.1:9000",
            "[::1]:9000",
            "xs3.example.org",
            ".s3.example.org",
            "localhost",
        ] {
            assert_eq!(bucket(path_style), None, "{path_style}");
        }
        assert!(valid_domain("s3.example.org") && valid_domain("localhost"));
        for bad in ["", "a..b", "a_b.org", "a b", "s3.example.org:9000"] {
            assert!(!valid_domain(bad), "{bad:?}");
        }
    }
}

