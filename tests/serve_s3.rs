//! `fragfs serve --s3`: the tree as a read-only S3 bucket. Every file of the fixtures and
//! of the shared corpus's sample (`corpus_sample`: every feature of every format
//! version) byte-exact through GetObject (a small unsigned Rust client), keys in S3's
//! order page by page, the same ETags as the HTTP door, and real clients: boto3,
//! s3fs/fsspec, the AWS CLI, GDAL's /vsis3/ and DuckDB's httpfs. Writes, bad signatures
//! and hostile requests get S3 errors while others are served.

mod common;

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use common::http::{get, raw, Reply};
use common::*;
use fragfs::serve::s3api::S3Door;
use fragfs::serve::{Doors, Server};
use fragfs::view::{FileTree, Ino, ROOT};
use fragfs::wire::path::encode;

const ACCESS: &str = "fragfs-serve-key";
const SECRET: &str = "fragfs-serve-secret";

/// Both doors over `tree`: S3 (anonymous, or signed with `keys`) and HTTP.
fn serve(tree: Arc<dyn FileTree>, keys: bool) -> (Server, SocketAddr, String, SocketAddr) {
    let doors = Doors {
        http: Some("127.0.0.1:0".parse().unwrap()),
        s3: Some("127.0.0.1:0".parse().unwrap()),
        s3_door: S3Door {
            keys: keys.then(|| (ACCESS.into(), fragfs::secret::Secret::new(SECRET))),
            bucket: None,
            domain: None,
        },
        ..Doors::default()
    };
    let server = Server::start(tree, &doors, 2).unwrap();
    let (s3, bucket) = server.s3_addr().unwrap();
    let http = server.http_addr().unwrap();
    (server, s3, bucket, http)
}

fn key_path(bucket: &str, key: &str) -> String {
    let parts: Vec<String> = key.split('/').map(encode).collect();
    format!("/{bucket}/{}", parts.join("/"))
}

/// The text of every `<tag>...</tag>` in `xml`, unescaped.
fn tags(xml: &str, tag: &str) -> Vec<String> {
    let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
    let mut out = Vec::new();
    let mut rest = xml;
    while let Some(i) = rest.find(&open) {
        let after = &rest[i + open.len()..];
        let Some(j) = after.find(&close) else { break };
        out.push(
            after[..j]
                .replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&quot;", "\"")
                .replace("&apos;", "'")
                .replace("&amp;", "&"),
        );
        rest = &after[j + close.len()..];
    }
    out
}

/// A tree served over the S3 API, read with unsigned path-style requests.
struct OverS3 {
    addr: SocketAddr,
    bucket: String,
}

impl OverS3 {
    /// Every key and common prefix of a listing, following continuation tokens.
    fn list(
        &self,
        prefix: &str,
        delimiter: Option<&str>,
        page: usize,
    ) -> Result<(Vec<String>, Vec<String>), String> {
        let (mut keys, mut prefixes) = (Vec::new(), Vec::new());
        let mut token: Option<String> = None;
        for _ in 0..100_000 {
            let mut q = format!(
                "/{}?list-type=2&max-keys={page}&prefix={}",
                self.bucket,
                encode(prefix)
            );
            if let Some(d) = delimiter {
                q.push_str(&format!("&delimiter={}", encode(d)));
            }
            if let Some(t) = &token {
                q.push_str(&format!("&continuation-token={}", encode(t)));
            }
            let r = get(self.addr, "GET", &q, &[]);
            let xml = String::from_utf8_lossy(&r.body).to_string();
            if r.status != 200 {
                return Err(format!("list {q}: {} {xml}", r.status));
            }
            let contents: Vec<String> = tags(&xml, "Contents")
                .iter()
                .flat_map(|c| tags(c, "Key"))
                .collect();
            if contents.len() + tags(&xml, "CommonPrefixes").len() > page {
                return Err(format!("list {q}: more than {page} items"));
            }
            keys.extend(contents);
            prefixes.extend(
                tags(&xml, "CommonPrefixes")
                    .iter()
                    .flat_map(|c| tags(c, "Prefix")),
            );
            if tags(&xml, "IsTruncated") != ["true"] {
                return Ok((keys, prefixes));
            }
            token = tags(&xml, "NextContinuationToken").into_iter().next();
            if token.is_none() {
                return Err(format!("list {q}: truncated without a token"));
            }
        }
        Err("the listing never ended".into())
    }

    fn get(&self, key: &str, headers: &[(&str, &str)]) -> Reply {
        get(self.addr, "GET", &key_path(&self.bucket, key), headers)
    }
}

impl Tree for OverS3 {
    fn fragments(&self) -> Result<Vec<String>, String> {
        let (_, prefixes) = self.list("fragments/", Some("/"), 1000)?;
        Ok(prefixes
            .iter()
            .map(|p| {
                p.trim_start_matches("fragments/")
                    .trim_end_matches('/')
                    .to_string()
            })
            .collect())
    }

    fn read(&self, path: &str) -> Result<Vec<u8>, String> {
        let r = self.get(path, &[]);
        if r.status != 200 {
            return Err(format!(
                "GET {path}: {} {}",
                r.status,
                String::from_utf8_lossy(&r.body)
            ));
        }
        if r.header("content-length") != Some(&r.body.len().to_string()) {
            return Err(format!(
                "GET {path}: Content-Length {:?}",
                r.header("content-length")
            ));
        }
        Ok(r.body)
    }
}

/// Every file below the root with its key (`at/` limited to `at_limit` states).
fn files(tree: &dyn FileTree, at_limit: usize) -> Vec<(String, Ino)> {
    let mut out = Vec::new();
    let mut stack = vec![(String::new(), ROOT)];
    while let Some((path, dir)) = stack.pop() {
        let list = tree.list(dir).unwrap();
        let list: Vec<_> = if path == "at" && at_limit > 0 {
            list.into_iter().take(at_limit).collect()
        } else {
            list
        };
        for e in list {
            let p = if path.is_empty() {
                e.name.clone()
            } else {
                format!("{path}/{}", e.name)
            };
            if e.is_dir() {
                stack.push((p, e.ino));
            } else {
                out.push((p, e.ino));
            }
        }
    }
    out
}

/// The names of folder `path` of the tree as S3 keys (`/` after a folder's), sorted.
fn sorted_names(tree: &dyn FileTree, path: &str) -> (Vec<String>, Vec<String>) {
    let dir = tree.resolve(path).unwrap();
    let base = if path.is_empty() {
        String::new()
    } else {
        format!("{path}/")
    };
    let (mut files, mut dirs) = (Vec::new(), Vec::new());
    for e in tree.list(dir).unwrap() {
        if e.is_dir() {
            dirs.push(format!("{base}{}/", e.name));
        } else {
            files.push(format!("{base}{}", e.name));
        }
    }
    files.sort();
    dirs.sort();
    (files, dirs)
}

/// Every file of the tree through GetObject: the tree's bytes, its exact size, and the ETag the HTTP door answers for the same path. Listings: the root and
/// `at/` with delimiter `/`, `latest/` and `fragments/` without, page by page, in
/// byte order.
fn check_every_file(tree: &dyn FileTree, s3: &OverS3, http: SocketAddr) -> Result<usize, String> {
    for folder in ["", "at"] {
        if tree.resolve(folder).is_err() {
            continue;
        }
        let prefix = if folder.is_empty() {
            String::new()
        } else {
            format!("{folder}/")
        };
        if s3.list(&prefix, Some("/"), 100)? != sorted_names(tree, folder) {
            return Err(format!("the listing of {prefix:?} differs"));
        }
    }
    for folder in ["latest", "fragments"] {
        let mut want: Vec<String> = files(tree, 0)
            .into_iter()
            .map(|(k, _)| k)
            .filter(|k| k.starts_with(&format!("{folder}/")))
            .collect();
        want.sort();
        let (listed, prefixes) = s3.list(&format!("{folder}/"), None, 250)?;
        if listed != want || !prefixes.is_empty() {
            return Err(format!(
                "{folder}/ lists {} keys, the tree has {} files",
                listed.len(),
                want.len()
            ));
        }
    }
    let mut checked = 0;
    // One merged state of at/ (latest/ is another): each renders every file anew.
    for (key, ino) in files(tree, 1) {
        let bytes = read_all(tree, ino);
        let r = s3.get(&key, &[]);
        match bytes {
            Ok(bytes) => {
                if r.status != 200 || r.body != bytes {
                    return Err(format!(
                        "{key}: {} with {} bytes, the tree {}",
                        r.status,
                        r.body.len(),
                        bytes.len()
                    ));
                }
                let over_http = get(http, "HEAD", &key_path("", &key)[1..], &[]);
                if r.header("content-length") != Some(&bytes.len().to_string())
                    || r.header("etag") != over_http.header("etag")
                {
                    return Err(format!(
                        "{key}: S3 says {:?} {:?}, HTTP {:?}",
                        r.header("content-length"),
                        r.header("etag"),
                        over_http.header("etag")
                    ));
                }
            }
            Err(_) if r.status == 500 => {}
            Err(e) => {
                return Err(format!(
                    "{key}: the tree fails ({e}) but S3 answers {}",
                    r.status
                ))
            }
        }
        checked += 1;
    }
    Ok(checked)
}

#[test]
fn every_file_of_the_fixtures_reads_the_same_over_s3() {
    let (arrays, merged) = fixture_files();
    let merged: HashMap<_, _> = merged.into_iter().collect();
    let mut files = 0;
    for (array, expected) in &arrays {
        let tree: Arc<dyn FileTree> = Arc::new(open_view(array, expected).unwrap());
        let (_server, addr, bucket, http) = serve(tree.clone(), false);
        let s3 = OverS3 { addr, bucket };
        let name = array.display();
        check_tree(&s3, expected).unwrap_or_else(|e| panic!("{name}: {e}"));
        if let Some(m) = merged.get(array) {
            check_merged(&s3, m).unwrap_or_else(|e| panic!("{name}: merged: {e}"));
        }
        files += check_every_file(&*tree, &s3, http).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    println!("{} fixture arrays, {files} files over S3", arrays.len());
    assert!(files > 500, "only {files} files checked");
}

#[test]
fn the_shared_corpus_reads_the_same_over_s3() {
    let Some(corpus) = shared_or_skip(shared_corpus()) else {
        return;
    };
    let (arrays, merged) = corpus_sample(&corpus);
    let merged: HashMap<_, _> = merged.into_iter().collect();
    let failures = std::sync::Mutex::new(Vec::new());
    sum_in_parallel(&arrays, 4, |(array, expected)| {
        let check = || -> Result<(), String> {
            let tree: Arc<dyn FileTree> =
                Arc::new(open_view(array, expected).map_err(|e| e.to_string())?);
            let (_server, addr, bucket, _) = serve(tree.clone(), false);
            let s3 = OverS3 { addr, bucket };
            check_tree(&s3, expected)?;
            if let Some(m) = merged.get(array) {
                check_merged(&s3, m).map_err(|e| format!("merged: {e}"))?;
            }
            if let Ok(node) = tree.resolve("latest/cells.csv") {
                if let Ok(bytes) = read_all(&*tree, node) {
                    if s3.read("latest/cells.csv")? != bytes {
                        return Err("latest/cells.csv differs".into());
                    }
                }
            }
            Ok(())
        };
        if let Err(e) = check() {
            failures
                .lock()
                .unwrap()
                .push(format!("{}: {e}", array.display()));
        }
        (1, 0)
    });
    let failures = failures.into_inner().unwrap();
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    println!("{} corpus arrays over S3", arrays.len());
}

#[test]
fn listings_page_in_key_order_with_delimiters_and_start_after() {
    let (array, expected) = fixture("odd_names");
    let tree: Arc<dyn FileTree> = Arc::new(open_view(&array, &expected).unwrap());
    let (_server, addr, bucket, _) = serve(tree.clone(), false);
    let s3 = OverS3 {
        addr,
        bucket: bucket.clone(),
    };
    assert_eq!(bucket, "odd-names");
    // The root with "/": the top files and folders of the tree, sorted as bytes.
    let (keys, prefixes) = s3.list("", Some("/"), 2).unwrap();
    let mut top_files = Vec::new();
    let mut top_dirs = Vec::new();
    for e in tree.list(ROOT).unwrap() {
        if e.is_dir() {
            top_dirs.push(format!("{}/", e.name));
        } else {
            top_files.push(e.name);
        }
    }
    top_files.sort();
    top_dirs.sort();
    assert_eq!((keys, prefixes), (top_files, top_dirs));
    // Under latest/ with a name prefix, and without a delimiter: every page a prefix of
    // the whole listing.
    let (all, _) = s3.list("latest/", None, 1000).unwrap();
    let mut want: Vec<String> = files(&*tree, 0)
        .into_iter()
        .map(|(k, _)| k)
        .filter(|k| k.starts_with("latest/"))
        .collect();
    want.sort();
    assert_eq!(all, want);
    for page in [1, 3, 7] {
        assert_eq!(
            s3.list("latest/", None, page).unwrap().0,
            all,
            "page {page}"
        );
    }
    // start-after: what follows the key, in the same order.
    let mid = &all[all.len() / 2];
    let r = get(
        addr,
        "GET",
        &format!(
            "/{}?list-type=2&start-after={}&prefix=latest/",
            s3.bucket,
            encode(mid)
        ),
        &[],
    );
    let after: Vec<String> = tags(&String::from_utf8_lossy(&r.body), "Key");
    assert_eq!(after, all[all.len() / 2 + 1..]);
    // ListObjects (v1) with a marker.
    let r = get(
        addr,
        "GET",
        &format!(
            "/{}?prefix=latest/&marker={}&max-keys=1",
            s3.bucket,
            encode(mid)
        ),
        &[],
    );
    let xml = String::from_utf8_lossy(&r.body).to_string();
    assert_eq!(
        tags(&xml, "Key"),
        all[all.len() / 2 + 1..all.len() / 2 + 2],
        "{xml}"
    );
    // max-keys=0, a bad token, another bucket.
    let r = get(
        addr,
        "GET",
        &format!("/{}?list-type=2&max-keys=0", s3.bucket),
        &[],
    );
    assert!(tags(&String::from_utf8_lossy(&r.body), "Key").is_empty());
    let r = get(
        addr,
        "GET",
        &format!("/{}?list-type=2&continuation-token=zz", s3.bucket),
        &[],
    );
    assert_eq!(r.status, 400);
    assert_eq!(
        tags(&String::from_utf8_lossy(&r.body), "Code"),
        ["InvalidArgument"]
    );
    let r = get(addr, "GET", "/other-bucket?list-type=2", &[]);
    assert_eq!(
        tags(&String::from_utf8_lossy(&r.body), "Code"),
        ["NoSuchBucket"]
    );
    // The bucket list and location.
    let r = get(addr, "GET", "/", &[]);
    assert_eq!(
        tags(&String::from_utf8_lossy(&r.body), "Name"),
        ["odd-names"]
    );
    assert_eq!(get(addr, "HEAD", "/odd-names", &[]).status, 200);
    assert_eq!(get(addr, "HEAD", "/nope-bucket", &[]).status, 404);
    assert_eq!(get(addr, "GET", "/odd-names?location", &[]).status, 200);
}

#[test]
fn ranges_and_conditional_gets() {
    let (array, expected) = fixture("dense_basic");
    let tree: Arc<dyn FileTree> = Arc::new(open_view(&array, &expected).unwrap());
    let (_server, addr, bucket, _) = serve(tree.clone(), false);
    let s3 = OverS3 { addr, bucket };
    // A text file not yet sized: HEAD renders it to tell its size.
    let cells = read_all(&*tree, tree.resolve("latest/cells.csv").unwrap()).unwrap();
    let head = get(addr, "HEAD", &key_path(&s3.bucket, "latest/cells.csv"), &[]);
    assert_eq!(
        head.header("content-length"),
        Some(cells.len().to_string().as_str())
    );
    let etag = head.header("etag").unwrap().to_string();
    let r = s3.get("latest/cells.csv", &[("Range", "bytes=10-19")]);
    assert_eq!(r.status, 206);
    assert_eq!(r.body, cells[10..20]);
    assert_eq!(
        r.header("content-range"),
        Some(format!("bytes 10-19/{}", cells.len()).as_str())
    );
    let r = s3.get("latest/cells.csv", &[("Range", "bytes=-5")]);
    assert_eq!(r.body, cells[cells.len() - 5..]);
    let r = s3.get(
        "latest/cells.csv",
        &[("Range", &format!("bytes={}-", cells.len()))],
    );
    assert_eq!(r.status, 416);
    assert_eq!(
        tags(&String::from_utf8_lossy(&r.body), "Code"),
        ["InvalidRange"]
    );
    // The largest kind of file here, whole (bodies of many chunks: the test below).
    let (big, ino) = files(&*tree, 3)
        .into_iter()
        .find(|(_, i)| {
            tree.stat(*i)
                .is_ok_and(|s| s.exact_size && s.size > 300 << 10)
        })
        .unwrap_or_else(|| {
            (
                "latest/cells.csv".into(),
                tree.resolve("latest/cells.csv").unwrap(),
            )
        });
    assert_eq!(s3.read(&big).unwrap(), read_all(&*tree, ino).unwrap());
    assert_eq!(
        s3.get("latest/cells.csv", &[("If-None-Match", &etag)])
            .status,
        304
    );
    assert_eq!(
        s3.get("latest/cells.csv", &[("If-Match", &etag)]).status,
        200
    );
    assert_eq!(
        s3.get("latest/cells.csv", &[("If-Match", "\"other\"")])
            .status,
        412
    );
    assert_eq!(
        s3.get("latest/cells.csv", &[("If-None-Match", "\"other\"")])
            .status,
        200
    );
    // Folders, odd keys and missing keys are NoSuchKey.
    for key in [
        "latest",
        "latest/",
        "nope",
        "latest/../array.json",
        "latest//cells.csv",
    ] {
        let r = get(addr, "GET", &format!("/{}/{key}", s3.bucket), &[]);
        assert_eq!(r.status, 404, "{key}");
        assert_eq!(
            tags(&String::from_utf8_lossy(&r.body), "Code"),
            ["NoSuchKey"],
            "{key}"
        );
    }
}

/// A file of many body chunks (4 MiB of ZSTD-filtered values, TileDB-written), whole
/// and in a range that starts and ends inside chunks, reads the tree's bytes over both
/// the S3 API and HTTP: the chunks read ahead come back in order, none skipped.
#[test]
fn bodies_of_many_chunks_read_whole_and_in_ranges() {
    let Some(python) = python_with("tiledb") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let array = dir.path().join("many_chunks");
    write_random_int64_array(&python, &array, 524_288, 65_536, 3);
    let tree = open_source_tree(&array, 64 << 20);
    let (_server, addr, bucket, http) = serve(tree.clone(), false);
    let s3 = OverS3 { addr, bucket };
    let key = "latest/v/values.bin";
    let want = read_all(&*tree, tree.resolve(key).unwrap()).unwrap();
    assert_eq!(want.len(), 4 << 20);
    assert!(s3.read(key).unwrap() == want, "S3 GetObject: bytes differ");
    let (from, to) = (100_000, 3_500_000);
    let range = format!("bytes={from}-{}", to - 1);
    let r = s3.get(key, &[("Range", &range)]);
    assert_eq!(r.status, 206);
    assert!(
        r.body == want[from..to],
        "S3 ranged GetObject: bytes differ"
    );
    let r = get(http, "GET", &format!("/{key}"), &[]);
    assert_eq!(r.status, 200);
    assert!(r.body == want, "HTTP GET: bytes differ");
    let r = get(http, "GET", &format!("/{key}"), &[("Range", &range)]);
    assert_eq!(r.status, 206);
    assert!(r.body == want[from..to], "HTTP ranged GET: bytes differ");
}

#[test]
fn writes_are_denied_and_hostile_requests_get_errors_while_others_are_served() {
    let (array, expected) = fixture("dense_basic");
    let tree: Arc<dyn FileTree> = Arc::new(open_view(&array, &expected).unwrap());
    let (_server, addr, bucket, _) = serve(tree.clone(), false);
    let s3 = OverS3 {
        addr,
        bucket: bucket.clone(),
    };
    let want = s3.read("array.json").unwrap();
    for (method, path) in [
        ("PUT", format!("/{bucket}/new.bin")),
        ("PUT", format!("/{bucket}/array.json")),
        ("DELETE", format!("/{bucket}/array.json")),
        ("PUT", "/new-bucket".to_string()),
        ("DELETE", format!("/{bucket}")),
        ("POST", format!("/{bucket}?delete")),
        ("POST", format!("/{bucket}/big.bin?uploads")),
        ("PUT", format!("/{bucket}?policy")),
    ] {
        let req = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello");
        let r = raw(addr, req.as_bytes(), false);
        assert_eq!(r.status, 403, "{method} {path}");
        assert_eq!(
            tags(&String::from_utf8_lossy(&r.body), "Code"),
            ["AccessDenied"],
            "{method} {path}"
        );
    }
    // An operation s3s knows but this door does not serve.
    let r = get(addr, "GET", &format!("/{bucket}?acl"), &[]);
    assert_eq!(
        tags(&String::from_utf8_lossy(&r.body), "Code"),
        ["NotImplemented"]
    );
    // Malformed requests.
    for bad in [
        &b"GET /%zz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"[..],
        b"GET /dense-basic/array.json HTTP/1.1\r\nHost: localhost\r\nRange: bytes=zz\r\nConnection: close\r\n\r\n",
        b"NONSENSE\r\n\r\n",
    ] {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        s.write_all(bad).unwrap();
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out);
        let text = String::from_utf8_lossy(&out);
        assert!(text.is_empty() || text.starts_with("HTTP/1.1 4"), "{text}");
    }
    let r = get(
        addr,
        "GET",
        &format!("/{bucket}?list-type=2&max-keys=-1"),
        &[],
    );
    assert_eq!(r.status, 400);
    // A client that stops reading a large body and goes away.
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "GET /{bucket}/latest/cells.csv HTTP/1.1\r\nHost: localhost\r\n\r\n"
    )
    .unwrap();
    let mut some = [0u8; 100];
    s.read_exact(&mut some).unwrap();
    drop(s);
    assert_eq!(s3.read("array.json").unwrap(), want);
}

#[test]
fn signed_requests_only_when_keys_are_set() {
    let (array, expected) = fixture("dense_basic");
    let tree: Arc<dyn FileTree> = Arc::new(open_view(&array, &expected).unwrap());
    let (_server, addr, bucket, _) = serve(tree, true);
    // Anonymous: AccessDenied.
    let r = get(addr, "GET", &format!("/{bucket}/array.json"), &[]);
    assert_eq!(r.status, 403);
    assert_eq!(
        tags(&String::from_utf8_lossy(&r.body), "Code"),
        ["AccessDenied"]
    );
    let Some(python) = python_with("boto3") else {
        return;
    };
    let script = r#"
import sys, boto3, botocore
from botocore.config import Config
ep, bucket, ak, sk = sys.argv[1:5]
def client(secret):
    return boto3.client("s3", endpoint_url=ep, region_name="us-east-1", aws_access_key_id=ak,
                        aws_secret_access_key=secret, config=Config(retries={"max_attempts": 1}))
good = client(sk)
body = good.get_object(Bucket=bucket, Key="array.json")["Body"].read()
assert body.startswith(b"{"), body[:20]
assert [b["Name"] for b in good.list_buckets()["Buckets"]] == [bucket]
def code(f):
    try:
        f()
    except botocore.exceptions.ClientError as e:
        return e.response["Error"]["Code"]
    return "no error"
print("wrong", code(lambda: client("not-the-secret").get_object(Bucket=bucket, Key="array.json")))
print("put", code(lambda: good.put_object(Bucket=bucket, Key="x", Body=b"x")))
print("create", code(lambda: good.create_bucket(Bucket="another")))
print("delete", code(lambda: good.delete_object(Bucket=bucket, Key="array.json")))
"#;
    let out = run_ok(
        Command::new(&python)
            .args([
                "-c",
                script,
                &format!("http://{addr}"),
                &bucket,
                ACCESS,
                SECRET,
            ])
            .env("AWS_CONFIG_FILE", "/nonexistent")
            .env("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent"),
    );
    assert!(out.contains("wrong SignatureDoesNotMatch"), "{out}");
    for op in ["put", "create", "delete"] {
        assert!(out.contains(&format!("{op} AccessDenied")), "{out}");
    }
}

/// An anonymous S3 door over fixture `name` for the external clients.
fn served_fixture(name: &str) -> (Arc<dyn FileTree>, Server, String, String) {
    let (array, expected) = fixture(name);
    let tree: Arc<dyn FileTree> = Arc::new(open_view(&array, &expected).unwrap());
    let (server, addr, bucket, _) = serve(tree.clone(), false);
    (tree, server, format!("http://{addr}"), bucket)
}

/// The environment of an anonymous client of `endpoint`, without the machine's AWS setup.
fn anonymous(cmd: &mut Command) -> &mut Command {
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("AWS_") {
            cmd.env_remove(k);
        }
    }
    cmd.env("AWS_CONFIG_FILE", "/nonexistent")
        .env("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env("AWS_REGION", "us-east-1")
}

#[test]
fn boto3_lists_pages_heads_and_reads_ranges() {
    let Some(python) = python_with("boto3") else {
        return;
    };
    let (tree, _server, endpoint, bucket) = served_fixture("consolidated");
    let cells = read_all(&*tree, tree.resolve("latest/cells.csv").unwrap()).unwrap();
    let mut keys: Vec<String> = files(&*tree, 0).into_iter().map(|(k, _)| k).collect();
    keys.sort();
    let script = r#"
import sys, json, boto3
from botocore import UNSIGNED
from botocore.config import Config
ep, bucket = sys.argv[1:3]
c = boto3.client("s3", endpoint_url=ep, config=Config(signature_version=UNSIGNED))
keys = []
pages = 0
for page in c.get_paginator("list_objects_v2").paginate(Bucket=bucket, PaginationConfig={"PageSize": 7}):
    keys += [o["Key"] for o in page.get("Contents", [])]
    pages += 1
top = c.list_objects_v2(Bucket=bucket, Delimiter="/")
v1 = [o["Key"] for p in c.get_paginator("list_objects").paginate(Bucket=bucket, PaginationConfig={"PageSize": 50}) for o in p.get("Contents", [])]
head = c.head_object(Bucket=bucket, Key="latest/cells.csv")
part = c.get_object(Bucket=bucket, Key="latest/cells.csv", Range="bytes=3-12")
whole = c.get_object(Bucket=bucket, Key="latest/cells.csv")["Body"].read()
print(json.dumps({
    "keys": keys, "pages": pages, "v1": v1,
    "top_prefixes": [p["Prefix"] for p in top.get("CommonPrefixes", [])],
    "top_keys": [o["Key"] for o in top.get("Contents", [])],
    "length": head["ContentLength"], "etag": head["ETag"],
    "part": part["Body"].read().hex(), "part_status": part["ResponseMetadata"]["HTTPStatusCode"],
    "whole": whole.hex(),
}))
"#;
    let out =
        run_ok(anonymous(&mut Command::new(&python)).args(["-c", script, &endpoint, &bucket]));
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    // A client that signs (keys in its environment) is served anonymously too.
    let signing = r#"
import sys, boto3
c = boto3.client("s3", endpoint_url=sys.argv[1], aws_access_key_id="any", aws_secret_access_key="thing")
print(len(c.get_object(Bucket=sys.argv[2], Key="latest/cells.csv")["Body"].read()))
"#;
    let n = run_ok(anonymous(&mut Command::new(&python)).args(["-c", signing, &endpoint, &bucket]));
    assert_eq!(n.trim(), cells.len().to_string());
    let got: Vec<&str> = v["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap())
        .collect();
    assert_eq!(got, keys);
    assert!(v["pages"].as_u64().unwrap() as usize >= keys.len() / 7);
    assert_eq!(v["v1"], v["keys"]);
    let top: Vec<&str> = v["top_prefixes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap())
        .collect();
    assert!(
        top.contains(&"latest/") && top.contains(&"fragments/"),
        "{top:?}"
    );
    assert_eq!(v["length"].as_u64(), Some(cells.len() as u64));
    assert_eq!(v["part_status"].as_u64(), Some(206));
    assert_eq!(v["part"].as_str().unwrap(), hex(&cells[3..13]));
    assert_eq!(v["whole"].as_str().unwrap(), hex(&cells));
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[test]
fn s3fs_opens_reads_and_lists() {
    let Some(python) = python_with("s3fs") else {
        return;
    };
    let (tree, _server, endpoint, bucket) = served_fixture("dense_2d");
    let script = r#"
import sys, json, s3fs
ep, bucket = sys.argv[1:3]
fs = s3fs.S3FileSystem(anon=True, endpoint_url=ep)
ls = fs.ls(f"{bucket}/latest", detail=True)
with fs.open(f"{bucket}/latest/cells.csv", "rb") as f:
    start = f.read(16)
    f.seek(5)
    mid = f.read(7)
whole = fs.cat(f"{bucket}/latest/cells.csv")
print(json.dumps({"ls": sorted([[e["name"], e["type"], e.get("size")] for e in ls]),
                  "start": start.hex(), "mid": mid.hex(), "whole": whole.hex(),
                  "find": len(fs.find(f"{bucket}/fragments"))}))
"#;
    let out =
        run_ok(anonymous(&mut Command::new(&python)).args(["-c", script, &endpoint, &bucket]));
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    let cells = read_all(&*tree, tree.resolve("latest/cells.csv").unwrap()).unwrap();
    assert_eq!(v["whole"].as_str().unwrap(), hex(&cells));
    assert_eq!(v["start"].as_str().unwrap(), hex(&cells[..16]));
    assert_eq!(v["mid"].as_str().unwrap(), hex(&cells[5..12]));
    let latest = tree.resolve("latest").unwrap();
    let mut want: Vec<String> = tree
        .list(latest)
        .unwrap()
        .into_iter()
        .map(|e| format!("{bucket}/latest/{}", e.name))
        .collect();
    want.sort();
    let got: Vec<&str> = v["ls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e[0].as_str().unwrap())
        .collect();
    assert_eq!(got, want);
    for e in v["ls"].as_array().unwrap() {
        if e[0].as_str().unwrap().ends_with("cells.csv") {
            assert_eq!(e[2].as_u64(), Some(cells.len() as u64), "{e}");
        }
    }
    let fragments_files = files(&*tree, 0)
        .into_iter()
        .filter(|(k, _)| k.starts_with("fragments/"))
        .count();
    assert_eq!(v["find"].as_u64(), Some(fragments_files as u64));
}

#[test]
fn the_aws_cli_lists_and_copies() {
    let Some(python) = python_with("awscli") else {
        return;
    };
    let (tree, _server, endpoint, bucket) = served_fixture("dense_basic");
    let aws = |args: &[&str]| -> std::process::Output {
        anonymous(&mut Command::new(&python))
            .args([
                "-m",
                "awscli",
                "--endpoint-url",
                &endpoint,
                "--no-sign-request",
            ])
            .args(args)
            .output()
            .unwrap()
    };
    let ls = aws(&["s3", "ls", &format!("s3://{bucket}/latest/")]);
    assert!(
        ls.status.success(),
        "{}",
        String::from_utf8_lossy(&ls.stderr)
    );
    let ls = String::from_utf8_lossy(&ls.stdout).to_string();
    assert!(ls.contains("cells.csv") && ls.contains("PRE "), "{ls}");
    let out = tempfile::tempdir().unwrap();
    let copy = out.path().join("cells.csv");
    let cp = aws(&[
        "s3",
        "cp",
        &format!("s3://{bucket}/latest/cells.csv"),
        copy.to_str().unwrap(),
    ]);
    assert!(
        cp.status.success(),
        "{}",
        String::from_utf8_lossy(&cp.stderr)
    );
    let cells = read_all(&*tree, tree.resolve("latest/cells.csv").unwrap()).unwrap();
    assert_eq!(std::fs::read(&copy).unwrap(), cells);
    let put = aws(&[
        "s3",
        "cp",
        copy.to_str().unwrap(),
        &format!("s3://{bucket}/new.csv"),
    ]);
    assert!(!put.status.success());
    assert!(String::from_utf8_lossy(&put.stderr).contains("AccessDenied"));
}

#[test]
fn gdal_reads_an_envi_raster_through_vsis3() {
    if !tool_available("gdalinfo", "GDAL (scripts/test.sh installs gdal-bin)") {
        return;
    }
    let (tree, _server, endpoint, bucket) = served_fixture("dense_2d");
    // The first attribute with an ENVI header.
    let latest = tree.resolve("latest").unwrap();
    let attr = tree
        .list(latest)
        .unwrap()
        .into_iter()
        .find(|e| e.is_dir() && tree.lookup(e.ino, "values.hdr").is_ok())
        .expect("an attribute with values.hdr")
        .name;
    let host = endpoint.trim_start_matches("http://");
    let gdal = |tool: &str, args: &[&str]| {
        run_ok(
            anonymous(&mut Command::new(tool))
                .args(args)
                .env("AWS_S3_ENDPOINT", host)
                .env("AWS_HTTPS", "NO")
                .env("AWS_VIRTUAL_HOSTING", "FALSE")
                .env("AWS_NO_SIGN_REQUEST", "YES"),
        )
    };
    let path = format!("/vsis3/{bucket}/latest/{attr}/values.bin");
    let info = gdal("gdalinfo", &[&path]);
    assert!(info.contains("Driver: ENVI/ENVI"), "{info}");
    let out = tempfile::tempdir().unwrap();
    let copy = out.path().join("copy.bin");
    gdal(
        "gdal_translate",
        &["-q", "-of", "ENVI", &path, copy.to_str().unwrap()],
    );
    let want = read_all(
        &*tree,
        tree.resolve(&format!("latest/{attr}/values.bin")).unwrap(),
    )
    .unwrap();
    assert_eq!(std::fs::read(&copy).unwrap(), want);
}

#[test]
fn duckdb_reads_cells_csv_with_httpfs() {
    // The extension comes from PyPI (scripts/test-requirements.txt), installed into
    // DuckDB from the package's own file: nothing is downloaded at run time, and a
    // fresh machine has no other copy.
    let Some(python) = python_with("duckdb_extension_httpfs") else {
        return;
    };
    let (tree, _server, endpoint, bucket) = served_fixture("dense_basic");
    let script = r#"
import glob, os, sys, duckdb, duckdb_extension_httpfs
ep, bucket = sys.argv[1:3]
c = duckdb.connect()
ext = glob.glob(os.path.join(os.path.dirname(duckdb_extension_httpfs.__file__),
                             "extensions", "v" + duckdb.__version__, "httpfs.duckdb_extension"))
if not ext:
    sys.exit("duckdb-extension-httpfs ships no httpfs.duckdb_extension for DuckDB " + duckdb.__version__)
c.execute("INSTALL '%s'" % ext[0])
c.execute("LOAD httpfs")
c.execute(f"SET s3_endpoint='{ep.removeprefix('http://')}'")
c.execute("SET s3_use_ssl=false")
c.execute("SET s3_url_style='path'")
c.execute("SET s3_region='us-east-1'")
rows = c.execute(f"SELECT count(*) FROM read_csv('s3://{bucket}/latest/cells.csv', header=true)").fetchone()[0]
print("ROWS", rows)
"#;
    let out =
        run_ok(anonymous(&mut Command::new(&python)).args(["-c", script, &endpoint, &bucket]));
    let cells = read_all(&*tree, tree.resolve("latest/cells.csv").unwrap()).unwrap();
    let lines = cells
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .count();
    assert!(
        out.contains(&format!("ROWS {}", lines - 1)),
        "{out} (want {} rows)",
        lines - 1
    );
}

/// `fragfs serve` of `source` with `args`: the child and the S3 door's bucket URL.
fn fragfs_serve(source: &str, args: &[&str], env: &[(&str, &str)]) -> (KillOnDrop, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_fragfs"));
    cmd.arg("serve")
        .arg(source)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().unwrap();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    std::io::BufRead::read_line(&mut out, &mut line).unwrap();
    assert!(line.starts_with("s3 http://"), "first line {line:?}");
    (
        KillOnDrop(child),
        line.trim().trim_start_matches("s3 ").to_string(),
    )
}

fn stop(child: &mut std::process::Child) {
    // SAFETY: kill sends a signal to our own child, by its pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().unwrap();
    assert!(status.success(), "{status}");
}

#[test]
fn two_servers_over_one_s3_array_answer_the_same_bytes_and_etags() {
    let Some(store) = common::s3::S3Server::start() else {
        return;
    };
    let (array, _) = fixture("consolidated");
    common::s3::upload(&array, &store.bucket("arrays").join("consolidated"));
    let source = "s3://arrays/consolidated";
    let endpoint = store.endpoint();
    let args = [
        "--s3",
        "127.0.0.1:0",
        "--endpoint-url",
        &endpoint,
        "--bucket",
        "same",
    ];
    let env = [
        ("AWS_ACCESS_KEY_ID", common::s3::ACCESS_KEY),
        ("AWS_SECRET_ACCESS_KEY", common::s3::SECRET_KEY),
        ("AWS_REGION", common::s3::REGION),
        ("AWS_EC2_METADATA_DISABLED", "true"),
    ];
    let (mut one, url_one) = fragfs_serve(source, &args, &env);
    let (mut two, url_two) = fragfs_serve(source, &args, &env);
    assert!(url_one.ends_with("/same/"), "{url_one}");
    let addr = |u: &str| -> SocketAddr {
        u.trim_start_matches("http://")
            .split('/')
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    let (a, b) = (
        OverS3 {
            addr: addr(&url_one),
            bucket: "same".into(),
        },
        OverS3 {
            addr: addr(&url_two),
            bucket: "same".into(),
        },
    );
    let (keys, _) = a.list("", None, 1000).unwrap();
    assert_eq!(keys, b.list("", None, 1000).unwrap().0);
    let fragment = a.fragments().unwrap()[0].clone();
    let mut checked = 0;
    for key in keys.iter().filter(|k| {
        k.starts_with(&format!("fragments/{fragment}/"))
            || k.starts_with("latest/")
            || !k.contains('/')
    }) {
        let (ra, rb) = (a.get(key, &[]), b.get(key, &[]));
        assert_eq!(ra.status, 200, "{key}");
        assert!(ra.header("etag").is_some(), "{key}: no ETag");
        assert_eq!(ra.header("etag"), rb.header("etag"), "{key}");
        assert_eq!(ra.body, rb.body, "{key}");
        checked += 1;
    }
    assert!(checked > 10, "{checked}");
    stop(&mut one);
    stop(&mut two);
}

/// `--s3-domain`: boto3 with virtual-hosted-style addressing (the bucket in the host
/// name, signed with SigV4 over that host) reads what path-style requests read; the
/// host names resolve to loopback inside the client (no DNS here).
#[test]
fn virtual_hosted_requests_name_the_bucket_in_the_host() {
    let Some(python) = python_with("boto3") else {
        return;
    };
    let (array, _) = fixture("consolidated");
    let args = [
        "--s3",
        "127.0.0.1:0",
        "--s3-domain",
        "fragfs.test",
        "--bucket",
        "cells",
        "--s3-access-key",
        ACCESS,
        "--s3-secret-key",
        SECRET,
    ];
    let (mut child, url) = fragfs_serve(&array.to_string_lossy(), &args, &[]);
    let port = url
        .trim_start_matches("http://127.0.0.1:")
        .split('/')
        .next()
        .unwrap()
        .to_string();
    let script = r#"
import sys, json, socket, boto3
from botocore.config import Config
port, access, secret = sys.argv[1:4]
real = socket.getaddrinfo
asked = set()
def loopback(host, *rest):
    asked.add(host)
    if host == "fragfs.test" or host.endswith(".fragfs.test"):
        host = "127.0.0.1"
    return real(host, *rest)
socket.getaddrinfo = loopback
def client(endpoint, style):
    return boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
        aws_access_key_id=access, aws_secret_access_key=secret,
        config=Config(s3={"addressing_style": style}))
out = {}
for style, endpoint in [("virtual", f"http://fragfs.test:{port}"), ("path", f"http://127.0.0.1:{port}")]:
    c = client(endpoint, style)
    keys = [o["Key"] for o in c.list_objects_v2(Bucket="cells", Prefix="latest/")["Contents"]]
    body = c.get_object(Bucket="cells", Key="latest/cells.csv")["Body"]
    out[style] = {"keys": keys, "cells": body.read().hex()}
try:
    client(f"http://fragfs.test:{port}", "virtual").list_objects_v2(Bucket="other")
    out["other"] = "listed"
except c.exceptions.NoSuchBucket:
    out["other"] = "NoSuchBucket"
out["hosts"] = sorted(asked)
print(json.dumps(out))
"#;
    let out =
        run_ok(anonymous(&mut Command::new(&python)).args(["-c", script, &port, ACCESS, SECRET]));
    stop(&mut child);
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    let tree = open_view(&array, &fixture("consolidated").1).unwrap();
    let cells = read_all(&tree, tree.resolve("latest/cells.csv").unwrap()).unwrap();
    assert_eq!(v["virtual"]["cells"].as_str().unwrap(), hex(&cells));
    assert_eq!(v["virtual"]["keys"], v["path"]["keys"]);
    assert!(
        v["virtual"]["keys"].as_array().unwrap().len() > 3,
        "{}",
        v["virtual"]["keys"]
    );
    assert_eq!(v["path"]["cells"], v["virtual"]["cells"]);
    assert_eq!(v["other"], "NoSuchBucket");
    // The virtual-hosted requests went to the bucket's own host name.
    assert!(
        v["hosts"]
            .as_array()
            .unwrap()
            .iter()
            .any(|h| h == "cells.fragfs.test"),
        "{}",
        v["hosts"]
    );
}

#[test]
fn the_command_refuses_public_addresses_without_keys_and_bad_bucket_names() {
    let (array, _) = fixture("dense_basic");
    let run = |args: &[&str], env: &[(&str, &str)]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_fragfs"));
        cmd.arg("serve")
            .arg(&array)
            .args(args)
            .env_remove("FRAGFS_S3_ACCESS_KEY")
            .env_remove("FRAGFS_S3_SECRET_KEY");
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.output().unwrap()
    };
    let out = run(&["--s3", "0.0.0.0:0"], &[]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--s3-access-key") && err.contains("--insecure-listen"),
        "{err}"
    );
    let out = run(&["--s3", "127.0.0.1:0", "--bucket", "Not_A_Bucket"], &[]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("Not_A_Bucket"));
    let out = run(&["--s3", "127.0.0.1:0", "--s3-access-key", "k"], &[]);
    assert!(!out.status.success(), "a key without its secret");
    // Keys from the environment: the door serves signed requests only.
    let array_path = array.to_str().unwrap().to_string();
    let (mut child, url) = fragfs_serve(
        &array_path,
        &["--s3", "127.0.0.1:0"],
        &[
            ("FRAGFS_S3_ACCESS_KEY", ACCESS),
            ("FRAGFS_S3_SECRET_KEY", SECRET),
        ],
    );
    assert!(url.ends_with("/dense-basic/"), "{url}");
    let addr: SocketAddr = url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(get(addr, "GET", "/dense-basic/array.json", &[]).status, 403);
    stop(&mut child);
}
