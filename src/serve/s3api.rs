//! The S3 API door: the tree as one read-only bucket, for boto3, s3fs/fsspec, the AWS
//! CLI, GDAL's `/vsis3/`, DuckDB's httpfs and every other S3 client.
//!
//! `s3s` parses the requests (path style: `http://host/BUCKET/KEY`), checks SigV4 when
//! keys are set and writes S3's XML; this module answers the read operations from the
//! tree: ListBuckets, GetBucketLocation, HeadBucket, ListObjectsV2 and ListObjects
//! ([`super::s3list`]), HeadObject and GetObject (one `Range`, `If-Match`,
//! `If-None-Match`, `If-Modified-Since`, `If-Unmodified-Since`). A key is a path of the
//! tree (`latest/a/values.bin`); folders are not keys, they show as common prefixes.
//!
//! Every PUT, POST and DELETE (S3's writes: PutObject, DeleteObject(s), CreateBucket,
//! the multipart uploads, every Put*Configuration) is answered AccessDenied before its
//! body is read or its signature checked; other operations s3s knows answer
//! NotImplemented. Each object answers the `ETag` the HTTP door answers for the same
//! path ([`super::file::etag`]), so S3 and HTTP clients (and two servers over the same
//! array) agree.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use s3s::dto::{
    Bucket, CommonPrefix, ETag, ETagCondition, GetBucketLocationInput, GetBucketLocationOutput,
    GetObjectInput, GetObjectOutput, HeadBucketInput, HeadBucketOutput, HeadObjectInput,
    HeadObjectOutput, ListBucketsInput, ListBucketsOutput, ListObjectsInput, ListObjectsOutput,
    ListObjectsV2Input, ListObjectsV2Output, Object, Owner, Range, StreamingBlob, Timestamp,
};
use s3s::service::S3ServiceBuilder;
use s3s::{s3_error, S3Error, S3Request, S3Response, S3Result, S3};

use super::budget::Budget;
use super::file::{chunks, content_type, etag, first_chunk, CHUNK};
use super::listing::gone;
use super::s3list::{self, plain_name, Folders, Item};
use super::sizing::{Sizing, Unsized};
use crate::error::Error;
use crate::secret::Secret;
use crate::view::held::Held;
use crate::view::prefetch::Prefetcher;
use crate::view::{FileTree, Ino, Kind, Stat, ROOT};
use crate::wire::path::encode;

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

/// Most keys a listing page holds, as S3 allows.
const MAX_KEYS: i32 = 1000;

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

impl super::conn::Plain for s3s::Body {
    fn plain(text: &str) -> s3s::Body {
        s3s::Body::from(text.to_string())
    }
}

/// The S3 service over `tree`: the bucket `bucket`, signed with `keys` when given.
/// Hand it to [`super::conn::serve`].
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
        let name = super::origin::host_name(host);
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

/// The tree as the one bucket `bucket`.
struct Bucketed {
    tree: Arc<dyn FileTree>,
    /// The read-ahead workers that prepare a sequential body's next bytes.
    ahead: Option<Arc<Prefetcher>>,
    /// Where text files are rendered to learn their size.
    sizing: Arc<Sizing>,
    /// The memory the answers of every door hold at once.
    budget: Arc<Budget>,
    /// The folders recent listing pages read, sorted.
    folders: Folders,
    bucket: String,
    /// The bucket's creation date, and the time of files that have none.
    started: SystemTime,
}

/// A file as HeadObject and GetObject answer it.
struct Found {
    held: Arc<Held>,
    /// `None` for a text file not sized yet (the sizing pool renders it).
    size: Option<u64>,
    etag: Option<String>,
    modified: SystemTime,
    content_type: &'static str,
}

impl Found {
    fn size(&self) -> u64 {
        self.size.unwrap_or(0)
    }
}

impl Bucketed {
    fn check_bucket(&self, bucket: &str) -> S3Result<()> {
        if bucket == self.bucket {
            Ok(())
        } else {
            Err(s3_error!(NoSuchBucket))
        }
    }

    /// The file `key` names, held, with its size where known and its validators.
    fn find(&self, key: &str) -> S3Result<Found> {
        let mut ino = ROOT;
        for name in key.split('/') {
            if !plain_name(name) {
                return Err(s3_error!(NoSuchKey));
            }
            ino = self
                .tree
                .lookup(ino, name)
                .map_err(|e| tree_error(key, &e))?
                .ino;
        }
        let stat = self.tree.stat(ino).map_err(|e| tree_error(key, &e))?;
        if stat.kind != Kind::File {
            return Err(s3_error!(NoSuchKey));
        }
        let held = Held::take(&self.tree, ino).map_err(|e| tree_error(key, &e))?;
        let etag = etag(&*self.tree, key, ino, &stat).map_err(|e| tree_error(key, &e))?;
        let name = key.rsplit('/').next().unwrap_or(key);
        Ok(Found {
            held: Arc::new(held),
            size: self.size_of(ino, &stat),
            etag,
            modified: self.modified(&stat),
            content_type: content_type(name),
        })
    }

    /// A file's size if known without rendering it.
    fn size_of(&self, ino: Ino, stat: &Stat) -> Option<u64> {
        if stat.exact_size {
            Some(stat.size)
        } else {
            self.sizing.known(ino)
        }
    }

    fn modified(&self, stat: &Stat) -> SystemTime {
        stat.mtime_ms.map_or(self.started, |ms| {
            SystemTime::UNIX_EPOCH + Duration::from_millis(ms)
        })
    }

    /// One listing page as V2 and V1 both answer it; objects whose size is not known
    /// yet are listed with `None` (sized in the pool before the answer).
    fn list(&self, asked: &Asked) -> S3Result<Listed> {
        let page = s3list::page(
            &*self.tree,
            &self.folders,
            &asked.prefix,
            asked.delimiter.as_deref(),
            asked.after.as_deref(),
            asked.max,
        )
        .map_err(|e| tree_error(&asked.prefix, &e))?;
        let mut objects = Vec::new();
        let mut prefixes = Vec::new();
        let last = page.items.last().map(|i| i.key().to_string());
        for item in page.items {
            match item {
                Item::Prefix(p) => prefixes.push(CommonPrefix {
                    prefix: Some(asked.shown(&p)),
                }),
                Item::Object { key, ino } => {
                    let stat = match self.tree.stat(ino) {
                        Ok(s) => s,
                        // Gone since the listing (a vacuum): left out.
                        Err(e) if gone(&e) => continue,
                        Err(e) => return Err(tree_error(&key, &e)),
                    };
                    // A file that cannot be read is still listed (with the size its
                    // stat gives, no ETag): a GET of it answers the error.
                    let etag = etag(&*self.tree, &key, ino, &stat).ok().flatten();
                    let size = self.size_of(ino, &stat);
                    objects.push((
                        ino,
                        size.is_none(),
                        Object {
                            key: Some(asked.shown(&key)),
                            size: Some(i64::try_from(size.unwrap_or(0)).unwrap_or(i64::MAX)),
                            e_tag: etag.map(strong),
                            last_modified: Some(Timestamp::from(self.modified(&stat))),
                            storage_class: Some(s3s::dto::ObjectStorageClass::from_static(
                                s3s::dto::ObjectStorageClass::STANDARD,
                            )),
                            ..Default::default()
                        },
                    ));
                }
            }
        }
        Ok(Listed {
            count: (objects.len() + prefixes.len()) as i32,
            objects,
            prefixes,
            next: if page.truncated { last } else { None },
        })
    }
}

/// What a listing asks, decoded.
struct Asked {
    prefix: String,
    delimiter: Option<String>,
    after: Option<String>,
    max: usize,
    /// `encoding-type=url`: keys and prefixes in the answer are percent-encoded.
    url: bool,
}

impl Asked {
    fn new(
        prefix: Option<&str>,
        delimiter: Option<&str>,
        after: Option<String>,
        max_keys: Option<i32>,
        encoding: Option<&s3s::dto::EncodingType>,
    ) -> S3Result<Asked> {
        let url = match encoding.map(s3s::dto::EncodingType::as_str) {
            None => false,
            Some(s3s::dto::EncodingType::URL) => true,
            Some(other) => {
                return Err(s3_error!(
                    InvalidArgument,
                    "unknown encoding-type {other:?}"
                ));
            }
        };
        let max = max_keys.unwrap_or(MAX_KEYS);
        if max < 0 {
            return Err(s3_error!(InvalidArgument, "max-keys below 0"));
        }
        Ok(Asked {
            prefix: prefix.unwrap_or_default().to_string(),
            delimiter: delimiter.filter(|d| !d.is_empty()).map(str::to_string),
            after,
            max: max.min(MAX_KEYS) as usize,
            url,
        })
    }

    /// A key or prefix as the answer shows it.
    fn shown(&self, key: &str) -> String {
        if self.url {
            key.split('/').map(encode).collect::<Vec<_>>().join("/")
        } else {
            key.to_string()
        }
    }

    fn shown_opt(&self, text: Option<String>) -> Option<String> {
        text.map(|t| self.shown(&t))
    }
}

struct Listed {
    /// Each object with its file, and whether its size is still to be learnt.
    objects: Vec<(Ino, bool, Object)>,
    prefixes: Vec<CommonPrefix>,
    count: i32,
    /// The last key of a truncated page.
    next: Option<String>,
}

fn strong(quoted: String) -> ETag {
    ETag::Strong(quoted.trim_matches('"').to_string())
}

/// The S3 error of a tree error; what is not a missing key is logged with its key.
fn tree_error(key: &str, e: &Error) -> S3Error {
    match e.errno() {
        libc::ENOENT | libc::ENOTDIR | libc::EISDIR => s3_error!(NoSuchKey),
        libc::EACCES | libc::EPERM => s3_error!(AccessDenied),
        _ => {
            log::error!("s3: {key}: {e}");
            s3_error!(InternalError, "{e}")
        }
    }
}

/// What the conditional headers of a GET or HEAD decide.
enum Condition {
    Serve,
    NotModified,
}

fn conditions(
    found: &Found,
    if_match: Option<&ETagCondition>,
    if_none_match: Option<&ETagCondition>,
    if_modified_since: Option<&Timestamp>,
    if_unmodified_since: Option<&Timestamp>,
) -> S3Result<Condition> {
    let ours = found.etag.as_deref().map(|t| t.trim_matches('"'));
    let matches = |c: &ETagCondition| match c {
        ETagCondition::Any => true,
        ETagCondition::ETag(t) => Some(t.value()) == ours,
    };
    let secs = |t: &Timestamp| {
        let mut text = Vec::new();
        let _ = t.format(s3s::dto::TimestampFormat::EpochSeconds, &mut text);
        let text = String::from_utf8_lossy(&text);
        // "1700000000" or "1700000000.5": whole seconds, as HTTP dates have.
        text.split('.')
            .next()
            .and_then(|s| s.parse::<i64>().ok())
            .unwrap_or(0)
    };
    let modified = found
        .modified
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    if let Some(c) = if_match {
        if !matches(c) {
            return Err(s3_error!(PreconditionFailed));
        }
    } else if if_unmodified_since.is_some_and(|t| modified > secs(t)) {
        return Err(s3_error!(PreconditionFailed));
    }
    if let Some(c) = if_none_match {
        if matches(c) {
            return Ok(Condition::NotModified);
        }
    } else if if_modified_since.is_some_and(|t| modified <= secs(t)) {
        return Ok(Condition::NotModified);
    }
    Ok(Condition::Serve)
}

/// 304 Not Modified, with the validators (s3s writes an answer's status from its
/// output's fields: a 304 is written as an error).
fn not_modified(found: &Found) -> S3Error {
    let mut e = s3_error!(NotModified);
    let mut headers = hyper::HeaderMap::new();
    if let Some(v) = found
        .etag
        .as_deref()
        .and_then(|t| hyper::header::HeaderValue::from_str(t).ok())
    {
        headers.insert(hyper::header::ETAG, v);
    }
    let date = super::file::http_date(
        found
            .modified
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64),
    );
    if let Ok(v) = hyper::header::HeaderValue::from_str(&date) {
        headers.insert(hyper::header::LAST_MODIFIED, v);
    }
    e.set_headers(headers);
    e
}

/// `[start, end)` of a file of `size` bytes that `range` asks for.
fn span(range: Option<&Range>, size: u64) -> S3Result<Option<std::ops::Range<u64>>> {
    match range {
        None => Ok(None),
        Some(r) => Ok(Some(r.check(size)?)),
    }
}

/// What s3s calls: the bucket, shared with the blocking tasks that read the tree.
struct Answers(Arc<Bucketed>);

impl Answers {
    /// Runs `f` on the blocking pool (every tree call may decode or wait on storage).
    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Bucketed) -> S3Result<T> + Send + 'static,
    ) -> S3Result<T> {
        let this = self.0.clone();
        tokio::task::spawn_blocking(move || f(&this))
            .await
            .map_err(|e| {
                log::error!("s3: a request's task failed: {e}");
                s3_error!(InternalError)
            })?
    }

    /// The page a listing asks for, in either version's terms (`after`: v1's marker, or
    /// v2's continuation token or start-after), with what it asked, decoded.
    async fn page(
        &self,
        bucket: &str,
        prefix: Option<&str>,
        delimiter: Option<&str>,
        after: Option<String>,
        max_keys: Option<i32>,
        encoding: Option<&s3s::dto::EncodingType>,
    ) -> S3Result<(Asked, Listed)> {
        self.0.check_bucket(bucket)?;
        let asked = Asked::new(prefix, delimiter, after, max_keys, encoding)?;
        let (asked, mut listed) = self
            .blocking(move |b| {
                let listed = b.list(&asked)?;
                Ok((asked, listed))
            })
            .await?;
        // Text files not sized yet, rendered in the sizing pool (all of the page's at
        // once): S3 clients trust a listing's sizes.
        let pending: Vec<usize> = (0..listed.objects.len())
            .filter(|&i| listed.objects[i].1)
            .collect();
        let sizes = futures::future::join_all(
            pending
                .iter()
                .map(|&i| self.0.sizing.size(listed.objects[i].0)),
        )
        .await;
        for (i, size) in pending.into_iter().zip(sizes) {
            match size {
                Ok(size) => {
                    listed.objects[i].2.size = Some(i64::try_from(size).unwrap_or(i64::MAX))
                }
                // Listed all the same, with the size its stat gives: a GET answers why.
                Err(Unsized::Failed(_)) => {}
                Err(why) => return Err(slow_down(why)),
            }
        }
        Ok((asked, listed))
    }

    /// The file `key` names with its size, a text file rendered in the sizing pool to
    /// know it.
    async fn find(&self, key: String) -> S3Result<Found> {
        let k = key.clone();
        let mut found = self.blocking(move |b| b.find(&k)).await?;
        if found.size.is_none() {
            match self.0.sizing.size(found.held.ino).await {
                Ok(size) => found.size = Some(size),
                Err(Unsized::Failed(e)) => return Err(tree_error(&key, &e)),
                Err(why) => return Err(slow_down(why)),
            }
        }
        Ok(found)
    }
}

/// S3's "reduce your request rate" (503), which every SDK retries after a pause: for a
/// text file still being rendered to learn its size, or too many at once.
fn slow_down(_: Unsized) -> S3Error {
    s3_error!(
        SlowDown,
        "a text file is still being rendered to learn its size: try again"
    )
}

fn timestamp_of(t: SystemTime) -> Timestamp {
    Timestamp::from(t)
}

#[async_trait::async_trait]
impl S3 for Answers {
    async fn list_buckets(
        &self,
        _req: S3Request<ListBucketsInput>,
    ) -> S3Result<S3Response<ListBucketsOutput>> {
        Ok(S3Response::new(ListBucketsOutput {
            buckets: Some(vec![Bucket {
                name: Some(self.0.bucket.clone()),
                creation_date: Some(timestamp_of(self.0.started)),
                bucket_region: None,
            }]),
            owner: Some(Owner {
                display_name: Some("fragfs".into()),
                id: Some("fragfs".into()),
            }),
            ..Default::default()
        }))
    }

    async fn get_bucket_location(
        &self,
        req: S3Request<GetBucketLocationInput>,
    ) -> S3Result<S3Response<GetBucketLocationOutput>> {
        self.0.check_bucket(&req.input.bucket)?;
        Ok(S3Response::new(GetBucketLocationOutput::default()))
    }

    async fn head_bucket(
        &self,
        req: S3Request<HeadBucketInput>,
    ) -> S3Result<S3Response<HeadBucketOutput>> {
        self.0.check_bucket(&req.input.bucket)?;
        Ok(S3Response::new(HeadBucketOutput::default()))
    }

    async fn list_objects_v2(
        &self,
        req: S3Request<ListObjectsV2Input>,
    ) -> S3Result<S3Response<ListObjectsV2Output>> {
        let input = req.input;
        self.0.check_bucket(&input.bucket)?;
        // Resume after the later of the token's key and start-after.
        let token = match input.continuation_token.as_deref() {
            None => None,
            Some(t) => Some(s3list::untoken(t).ok_or_else(|| {
                s3_error!(InvalidArgument, "the continuation token is not valid")
            })?),
        };
        let after = match (token, input.start_after.clone()) {
            (Some(t), Some(s)) => Some(t.max(s)),
            (t, s) => t.or(s),
        };
        let (asked, listed) = self
            .page(
                &input.bucket,
                input.prefix.as_deref(),
                input.delimiter.as_deref(),
                after,
                input.max_keys,
                input.encoding_type.as_ref(),
            )
            .await?;
        Ok(S3Response::new(ListObjectsV2Output {
            name: Some(input.bucket),
            prefix: asked.shown_opt(input.prefix),
            delimiter: asked.shown_opt(input.delimiter),
            start_after: asked.shown_opt(input.start_after),
            max_keys: Some(asked.max as i32),
            key_count: Some(listed.count),
            is_truncated: Some(listed.next.is_some()),
            continuation_token: input.continuation_token,
            next_continuation_token: listed.next.as_deref().map(s3list::token),
            encoding_type: input.encoding_type,
            contents: Some(listed.objects.into_iter().map(|(_, _, o)| o).collect()),
            common_prefixes: Some(listed.prefixes),
            ..Default::default()
        }))
    }

    async fn list_objects(
        &self,
        req: S3Request<ListObjectsInput>,
    ) -> S3Result<S3Response<ListObjectsOutput>> {
        let input = req.input;
        let (asked, listed) = self
            .page(
                &input.bucket,
                input.prefix.as_deref(),
                input.delimiter.as_deref(),
                input.marker.clone(),
                input.max_keys,
                input.encoding_type.as_ref(),
            )
            .await?;
        Ok(S3Response::new(ListObjectsOutput {
            name: Some(input.bucket),
            prefix: asked.shown_opt(input.prefix),
            delimiter: asked.shown_opt(input.delimiter),
            marker: asked.shown_opt(input.marker),
            max_keys: Some(asked.max as i32),
            is_truncated: Some(listed.next.is_some()),
            next_marker: asked.shown_opt(listed.next),
            encoding_type: input.encoding_type,
            contents: Some(listed.objects.into_iter().map(|(_, _, o)| o).collect()),
            common_prefixes: Some(listed.prefixes),
            ..Default::default()
        }))
    }

    async fn head_object(
        &self,
        req: S3Request<HeadObjectInput>,
    ) -> S3Result<S3Response<HeadObjectOutput>> {
        let input = req.input;
        self.0.check_bucket(&input.bucket)?;
        let found = self.find(input.key.clone()).await?;
        let condition = conditions(
            &found,
            input.if_match.as_ref(),
            input.if_none_match.as_ref(),
            input.if_modified_since.as_ref(),
            input.if_unmodified_since.as_ref(),
        )?;
        let output = HeadObjectOutput {
            content_length: Some(i64::try_from(found.size()).unwrap_or(i64::MAX)),
            content_type: Some(found.content_type.to_string()),
            accept_ranges: Some("bytes".into()),
            e_tag: found.etag.clone().map(strong),
            last_modified: Some(timestamp_of(found.modified)),
            ..Default::default()
        };
        if let Condition::NotModified = condition {
            return Err(not_modified(&found));
        }
        Ok(S3Response::new(output))
    }

    async fn get_object(
        &self,
        req: S3Request<GetObjectInput>,
    ) -> S3Result<S3Response<GetObjectOutput>> {
        let input = req.input;
        self.0.check_bucket(&input.bucket)?;
        if input.part_number.is_some_and(|n| n != 1) {
            return Err(s3_error!(InvalidArgument, "the object has one part"));
        }
        let found = self.find(input.key.clone()).await?;
        let condition = conditions(
            &found,
            input.if_match.as_ref(),
            input.if_none_match.as_ref(),
            input.if_modified_since.as_ref(),
            input.if_unmodified_since.as_ref(),
        )?;
        let mut output = GetObjectOutput {
            content_type: Some(found.content_type.to_string()),
            accept_ranges: Some("bytes".into()),
            e_tag: found.etag.clone().map(strong),
            last_modified: Some(timestamp_of(found.modified)),
            ..Default::default()
        };
        if let Condition::NotModified = condition {
            return Err(not_modified(&found));
        }
        let size = found.size();
        let part = span(input.range.as_ref(), size)?;
        let (start, end) = part.clone().map_or((0, size), |r| (r.start, r.end));
        // The first chunk is read before answering, so that a file that cannot be read
        // answers an error rather than a cut body.
        let held = found.held.clone();
        let first_len = (end - start).min(CHUNK);
        let key = input.key.clone();
        let Some(share) = self.0.budget.take(first_len as usize).await else {
            return Err(s3_error!(
                SlowDown,
                "the server's memory budget is held by slow clients: try again"
            ));
        };
        let first = self
            .blocking(move |this| {
                first_chunk(&held, this.ahead.as_deref(), start, Some(end), share)
                    .map_err(|e| tree_error(&key, &e))
            })
            .await?;
        if (first.len() as u64) < first_len {
            log::error!("s3: {}: shorter than its size", input.key);
            return Err(s3_error!(
                InternalError,
                "the file is shorter than its size"
            ));
        }
        output.content_length = Some(i64::try_from(end - start).unwrap_or(i64::MAX));
        if part.is_some() {
            output.content_range = Some(format!("bytes {start}-{}/{size}", end.saturating_sub(1)));
        }
        let chunks = chunks(
            found.held,
            self.0.ahead.clone(),
            self.0.budget.clone(),
            input.key,
            start,
            Some(end),
            first,
        );
        output.body = Some(StreamingBlob::wrap(chunks));
        Ok(S3Response::new(output))
    }
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
