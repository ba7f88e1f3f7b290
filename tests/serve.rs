//! `fragfs serve` over HTTP: every file of the fixtures and of the shared corpus's
//! sample (`corpus_sample`: every feature of every format version) byte-exact to the
//! tree a mount shows, the HTTP semantics clients rely on (ranges, validators,
//! listings, CORS, tokens), and hostile clients answered with errors while others are
//! served.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::http::{body, get, raw, OverHttp};
use common::*;
use fragfs::serve::{Doors, Server};
use fragfs::view::{FileTree, Ino, ROOT};

fn serve(tree: Arc<dyn FileTree>, token: Option<&str>) -> Server {
    let doors = Doors {
        http: Some("127.0.0.1:0".parse().unwrap()),
        token: token.map(fragfs::secret::Secret::new),
        ..Doors::default()
    };
    Server::start(tree, &doors, 2).unwrap()
}

fn served_fixture(name: &str) -> (Arc<dyn FileTree>, Server, SocketAddr) {
    let (array, expected) = fixture(name);
    let tree: Arc<dyn FileTree> = Arc::new(open_view(&array, &expected).unwrap());
    let server = serve(tree.clone(), None);
    let addr = server.http_addr().unwrap();
    (tree, server, addr)
}

/// Every file below `dir` with its tree path (`at/` limited to `at_limit` states).
fn files(tree: &dyn FileTree, at_limit: usize) -> Vec<(String, Ino)> {
    let mut out = Vec::new();
    let mut stack = vec![(String::new(), ROOT)];
    while let Some((path, dir)) = stack.pop() {
        let list = tree.list(dir).unwrap();
        let list = if path == "at" {
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

fn url(path: &str) -> String {
    let parts: Vec<String> = path.split('/').map(fragfs::wire::path::encode).collect();
    format!("/{}", parts.join("/"))
}

/// Every file of the tree (its merged states included) over HTTP: the same bytes as the
/// tree reads, the same size in `Content-Length` (or, for a text file not yet sized,
/// streamed), an error status where the tree fails; and every folder's JSON listing
/// names what the tree lists.
fn check_every_file(tree: &dyn FileTree, addr: SocketAddr) -> Result<usize, String> {
    let mut checked = 0;
    for (path, ino) in files(tree, 3) {
        let want = read_all(tree, ino);
        let r = get(addr, "GET", &url(&path), &[]);
        match want {
            Ok(bytes) => {
                if r.status != 200 || r.body != bytes {
                    return Err(format!(
                        "{path}: {} with {} bytes, the tree has {}",
                        r.status,
                        r.body.len(),
                        bytes.len()
                    ));
                }
                if let Some(len) = r.header("content-length") {
                    if len != bytes.len().to_string() {
                        return Err(format!("{path}: Content-Length {len} of {}", bytes.len()));
                    }
                }
            }
            Err(e) => {
                if r.status < 400 {
                    return Err(format!(
                        "{path}: {} over HTTP, the tree fails: {e}",
                        r.status
                    ));
                }
            }
        }
        checked += 1;
    }
    for dir in ["", "fragments/", "latest/"] {
        if tree.resolve(dir).is_err() {
            continue; // a group has neither
        }
        let r = get(addr, "GET", &format!("/{dir}?format=json"), &[]);
        let v: serde_json::Value = serde_json::from_slice(&r.body).map_err(|e| e.to_string())?;
        let names: Vec<&str> = v["entries"]
            .as_array()
            .ok_or(format!("/{dir}: no entries"))?
            .iter()
            .filter_map(|e| e["name"].as_str())
            .collect();
        let node = tree.resolve(dir).map_err(|e| e.to_string())?;
        let listed: Vec<String> = tree
            .list(node)
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect();
        if names != listed {
            return Err(format!("/{dir}: listed {names:?}, the tree {listed:?}"));
        }
    }
    Ok(checked)
}

#[test]
fn every_file_of_the_fixtures_reads_the_same_over_http() {
    let (arrays, merged) = fixture_files();
    let merged: std::collections::HashMap<_, _> = merged.into_iter().collect();
    let mut files = 0;
    for (array, expected) in &arrays {
        let tree: Arc<dyn FileTree> = Arc::new(open_view(array, expected).unwrap());
        let server = serve(tree.clone(), None);
        let addr = server.http_addr().unwrap();
        let name = array.display();
        check_tree(&OverHttp(addr), expected).unwrap_or_else(|e| panic!("{name}: {e}"));
        if let Some(m) = merged.get(array) {
            check_merged(&OverHttp(addr), m).unwrap_or_else(|e| panic!("{name}: merged: {e}"));
        }
        files += check_every_file(&*tree, addr).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    println!("{} fixture arrays, {files} files over HTTP", arrays.len());
    assert!(files > 500, "only {files} files checked");
}

#[test]
fn the_shared_corpus_reads_the_same_over_http() {
    let checked = check_corpus_sample(4, |array, expected, merged| {
        let tree: Arc<dyn FileTree> =
            Arc::new(open_view(array, expected).map_err(|e| e.to_string())?);
        let server = serve(tree.clone(), None);
        let over = OverHttp(server.http_addr().unwrap());
        check_tree(&over, expected)?;
        if let Some(m) = merged {
            check_merged(&over, m).map_err(|e| format!("merged: {e}"))?;
        }
        // A text file, streamed as it renders, as the tree reads it.
        let cells = tree.resolve("latest/cells.csv");
        if let Ok(node) = cells {
            if let Ok(bytes) = read_all(&*tree, node) {
                let r = get(over.0, "GET", "/latest/cells.csv", &[]);
                if r.status != 200 || r.body != bytes {
                    return Err("latest/cells.csv differs".into());
                }
            }
        }
        Ok(())
    });
    println!("{checked} corpus arrays over HTTP");
}

#[test]
fn ranges_validators_and_conditional_requests() {
    let (tree, _server, addr) = served_fixture("dense_2d");
    let fragment = tree.list(tree.resolve("fragments").unwrap()).unwrap()[0]
        .name
        .clone();
    let path = format!("/fragments/{fragment}/bs_dd_zstd/values.bin");
    let whole = body(addr, &path).unwrap();
    let size = whole.len();
    assert!(size > 16, "a file of {size} bytes");

    let r = get(addr, "GET", &path, &[("Range", "bytes=3-10")]);
    assert_eq!(r.status, 206);
    assert_eq!(r.body, whole[3..11]);
    assert_eq!(
        r.header("content-range"),
        Some(&*format!("bytes 3-10/{size}"))
    );
    assert_eq!(r.header("content-length"), Some("8"));
    let r = get(addr, "GET", &path, &[("Range", "bytes=-5")]);
    assert_eq!((r.status, &r.body[..]), (206, &whole[size - 5..]));
    let r = get(addr, "GET", &path, &[("Range", "bytes=4-")]);
    assert_eq!((r.status, &r.body[..]), (206, &whole[4..]));
    let r = get(addr, "GET", &path, &[("Range", "bytes=2-999999999999")]);
    assert_eq!((r.status, &r.body[..]), (206, &whole[2..]));
    // Several ranges: the whole file.
    let r = get(addr, "GET", &path, &[("Range", "bytes=0-1,4-5")]);
    assert_eq!((r.status, &r.body[..]), (200, &whole[..]));
    // Past the end, inverted, huge: 416 with the size.
    for bad in [
        format!("bytes={size}-"),
        "bytes=9-2".to_string(),
        "bytes=99999999999999999999999-".to_string(),
    ] {
        let r = get(addr, "GET", &path, &[("Range", &bad)]);
        assert_eq!(r.status, 416, "{bad}");
        assert_eq!(r.header("content-range"), Some(&*format!("bytes */{size}")));
    }
    assert_eq!(
        get(addr, "GET", &path, &[("Range", "lines=1-2")]).status,
        200
    );

    let r = get(addr, "HEAD", &path, &[]);
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-length"), Some(&*size.to_string()));
    assert_eq!(r.header("accept-ranges"), Some("bytes"));
    assert_eq!(r.header("content-type"), Some("application/octet-stream"));
    // No CORS header unless an origin is named (`--cors-origin`).
    assert_eq!(r.header("access-control-allow-origin"), None);
    assert!(r
        .header("last-modified")
        .is_some_and(|m| m.ends_with(" GMT")));
    let etag = r.header("etag").expect("a strong ETag").to_string();
    assert!(etag.starts_with('"') && etag.ends_with('"'), "{etag}");
    assert!(r.header("cache-control").unwrap().contains("immutable"));

    let r = get(addr, "GET", &path, &[("If-None-Match", &etag)]);
    assert_eq!((r.status, r.body.len()), (304, 0));
    assert_eq!(r.header("etag"), Some(&*etag));
    let r = get(addr, "GET", &path, &[("If-None-Match", "\"other\"")]);
    assert_eq!(r.status, 200);
    let r = get(
        addr,
        "GET",
        &path,
        &[("Range", "bytes=0-3"), ("If-Range", &etag)],
    );
    assert_eq!(r.status, 206);
    let r = get(
        addr,
        "GET",
        &path,
        &[("Range", "bytes=0-3"), ("If-Range", "\"stale\"")],
    );
    assert_eq!((r.status, r.body.len()), (200, size));

    // Files of a merged state, and files that may change, have validators too, and the
    // same bytes give the same tag.
    for p in [
        "/latest/bs_dd_zstd/values.bin",
        "/array.json",
        "/latest/read.json",
    ] {
        let a = get(addr, "HEAD", p, &[]);
        let b = get(addr, "HEAD", p, &[]);
        assert!(a.header("etag").is_some(), "{p}: no ETag");
        assert_eq!(a.header("etag"), b.header("etag"), "{p}");
        assert_eq!(a.header("cache-control"), Some("no-cache"), "{p}");
    }
    // A merged state's files carry the time the state last changed: here its newest
    // fragment's end timestamp.
    let newest = tree
        .list(tree.resolve("fragments").unwrap())
        .unwrap()
        .iter()
        .filter_map(|e| tree.stat(e.ino).unwrap().mtime_ms)
        .max()
        .unwrap();
    let latest = get(addr, "HEAD", "/latest/bs_dd_zstd/values.bin", &[]);
    assert_eq!(
        latest.header("last-modified"),
        Some(&*fragfs::serve::file::http_date(newest))
    );
    assert_eq!(
        get(addr, "HEAD", "/array.json", &[]).header("content-type"),
        Some("application/json")
    );
    // A fragment's text file has one tag before and after it is rendered.
    let csv = format!("/fragments/{fragment}/cells.csv");
    let before = get(addr, "GET", &csv, &[]);
    assert_eq!(before.header("transfer-encoding"), Some("chunked"));
    let after = get(addr, "HEAD", &csv, &[]);
    assert!(before.header("etag").is_some());
    assert_eq!(before.header("etag"), after.header("etag"));
}

/// `?envelope=fragfs_tile` (what `fragfs refs --serve-url` points a served chunk of a
/// `fragfs_tile` array at): the file whole behind the codec's 8 bytes, sized and tagged
/// as its own representation; ranges and other envelopes refused.
#[test]
fn a_file_behind_the_fragfs_tile_envelope() {
    let (_tree, _server, addr) = served_fixture("dense_2d");
    let path = "/zarr/bs_dd_zstd/1.2";
    let plain = get(addr, "GET", path, &[]);
    assert_eq!(plain.status, 200);
    let enveloped = format!("{path}?envelope=fragfs_tile");
    let r = get(addr, "GET", &enveloped, &[]);
    assert_eq!(r.status, 200);
    assert_eq!(r.body[..8], fragfs::view::tiledb::ENVELOPE);
    assert_eq!(r.body[8..], plain.body[..]);
    assert_eq!(
        r.header("content-length"),
        Some(&*(plain.body.len() + 8).to_string())
    );
    let head = get(addr, "HEAD", &enveloped, &[]);
    assert_eq!(head.status, 200);
    assert_eq!(head.header("content-length"), r.header("content-length"));
    let (tag, plain_tag) = (r.header("etag").unwrap(), plain.header("etag").unwrap());
    assert_ne!(tag, plain_tag);
    assert!(
        tag.starts_with('"') && tag.ends_with("-fragfs_tile\""),
        "{tag}"
    );
    let cached = get(addr, "GET", &enveloped, &[("If-None-Match", tag)]);
    assert_eq!(cached.status, 304);
    let ranged = get(addr, "GET", &enveloped, &[("Range", "bytes=0-3")]);
    assert_eq!(ranged.status, 400);
    assert!(String::from_utf8_lossy(&ranged.body).contains("served whole"));
    let other = get(addr, "GET", &format!("{path}?envelope=gzip"), &[]);
    assert_eq!(other.status, 400);
    assert!(String::from_utf8_lossy(&other.body).contains("unknown envelope \"gzip\""));
}

#[test]
fn text_files_stream_as_they_render_and_head_tells_their_size() {
    let (tree, _server, addr) = served_fixture("sparse_var_nullable");
    let node = tree.resolve("latest/cells.csv").unwrap();
    // Not sized yet: a GET streams it (chunked), and equals what the tree reads.
    assert!(!tree.stat(node).unwrap().exact_size);
    let r = get(addr, "GET", "/latest/cells.csv", &[]);
    assert_eq!(r.status, 200);
    assert_eq!(r.header("transfer-encoding"), Some("chunked"));
    assert_eq!(r.header("content-type"), Some("text/csv; charset=utf-8"));
    let want = read_all(&*tree, node).unwrap();
    assert_eq!(r.body, want);
    // A HEAD (how clients ask for a size) and a range know it.
    let r = get(addr, "HEAD", "/latest/cells.csv", &[]);
    assert_eq!(r.header("content-length"), Some(&*want.len().to_string()));
    let r = get(addr, "GET", "/latest/cells.csv", &[("Range", "bytes=1-4")]);
    assert_eq!((r.status, &r.body[..]), (206, &want[1..5]));
}

#[test]
fn folders_list_as_html_or_json() {
    let (tree, _server, addr) = served_fixture("odd_names");
    // Without the slash: redirected to the folder, so relative links work.
    let r = get(addr, "GET", "/latest", &[]);
    assert_eq!(r.status, 301);
    assert_eq!(r.header("location"), Some("/latest/"));

    let r = get(addr, "GET", "/", &[("Accept", "text/html")]);
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
    let page = String::from_utf8(r.body).unwrap();
    for e in tree.list(ROOT).unwrap() {
        let slash = if e.is_dir() { "/" } else { "" };
        let href = format!("href=\"{}{slash}\"", fragfs::wire::path::encode(&e.name));
        assert!(page.contains(&href), "no link {href}");
    }
    let size = tree.stat(tree.resolve("array.json").unwrap()).unwrap().size;
    assert!(
        page.contains(&format!("<td class=\"size\">{size}</td>")),
        "no size of array.json"
    );
    // The page above the files: the picture, the schema's tables, the fragments; the
    // array by its folder's name only, never the server's path to it.
    assert!(page.contains("<img class=\"picture\" src=\"fragments.svg\""));
    let schema: serde_json::Value =
        serde_json::from_slice(&read_all(&*tree, tree.resolve("schema.json").unwrap()).unwrap())
            .unwrap();
    for a in schema["attributes"].as_array().unwrap() {
        let name = a["name"].as_str().unwrap();
        let shown = name
            .replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
            .replace('"', "&quot;")
            .replace('\'', "&#39;");
        assert!(
            page.contains(&format!("<tr><td>{shown}</td>")),
            "attribute {name}"
        );
    }
    let fragments = tree.list(tree.resolve("fragments").unwrap()).unwrap();
    for f in &fragments {
        let link = format!(
            "<a href=\"fragments/{}/\">",
            fragfs::wire::path::encode(&f.name)
        );
        assert!(page.contains(&link), "no row of {}", f.name);
    }
    let location = tree.source();
    assert!(location.ends_with("odd_names") && location.len() > "odd_names".len());
    assert!(
        !page.contains(&location),
        "the page shows the server's path {location}"
    );
    assert!(page.contains("<h1>odd_names</h1>"));
    // Sorted by the server, asked by a column's link: newest first.
    let browser = [("Accept", "text/html,application/xhtml+xml,*/*;q=0.8")];
    let r = get(addr, "GET", "/?sort=t1&order=desc", &browser);
    let sorted = String::from_utf8(r.body).unwrap();
    let at = |name: &str| sorted.find(&format!("fragments/{name}/")).unwrap();
    if let [first, .., last] = fragments.as_slice() {
        assert!(at(&last.name) < at(&first.name), "not newest first");
    }
    assert!(sorted.contains("?sort=t1&amp;order=asc\">First timestamp</a> ▼"));
    // A state's page: each field's files, linked.
    let r = get(addr, "GET", "/latest/", &browser);
    let state = String::from_utf8(r.body).unwrap();
    assert!(state.contains("<h2 id=\"fields\">Fields</h2>"));
    for e in tree.list(tree.resolve("latest").unwrap()).unwrap() {
        if e.is_dir() && e.name != "zarr" {
            let href = fragfs::wire::path::encode(&e.name);
            assert!(
                state.contains(&format!("<a href=\"{href}/values.bin\">")),
                "{href}"
            );
        }
    }
    // A client that does not ask for HTML (curl, fsspec, GDAL, rclone) gets the entries
    // alone, each a link: those clients take every link of a page for an entry.
    for (folder, dir) in [("/", ROOT), ("/latest/", tree.resolve("latest").unwrap())] {
        let r = get(addr, "GET", folder, &[]);
        assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
        let listing = String::from_utf8(r.body).unwrap();
        let hrefs: Vec<&str> = listing
            .split("href=\"")
            .skip(1)
            .filter_map(|s| s.split('"').next())
            .collect();
        let mut want: Vec<String> = tree
            .list(dir)
            .unwrap()
            .iter()
            .map(|e| {
                let slash = if e.is_dir() { "/" } else { "" };
                format!("{}{slash}", fragfs::wire::path::encode(&e.name))
            })
            .collect();
        if folder != "/" {
            want.insert(0, "../".into());
        }
        assert_eq!(hrefs, want, "{folder}: links other than the entries");
        assert!(
            !listing.contains(&location),
            "{folder}: the server's path shows"
        );
    }

    // Every attribute folder of the odd names is reachable by its link.
    let r = get(addr, "GET", "/latest/", &[("Accept", "application/json")]);
    let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    let entries = v["entries"].as_array().unwrap();
    assert!(!entries.is_empty());
    for e in entries {
        let name = e["name"].as_str().unwrap();
        let dir = e["type"] == "dir";
        let link = format!(
            "/latest/{}{}",
            fragfs::wire::path::encode(name),
            if dir { "/" } else { "" }
        );
        assert_eq!(get(addr, "HEAD", &link, &[]).status, 200, "{link}");
        if !dir {
            // A size listed is the file's size (a text file's shows once rendered).
            if let Some(size) = e["size"].as_u64() {
                let node = tree.resolve(&format!("latest/{name}")).unwrap();
                assert_eq!(read_all(&*tree, node).unwrap().len() as u64, size, "{name}");
            }
        }
    }
}

const TOKEN: &str = "a-token-of-sixteen-bytes";

#[test]
fn a_token_guards_every_request() {
    let (array, expected) = fixture("dense_basic");
    let tree: Arc<dyn FileTree> = Arc::new(open_view(&array, &expected).unwrap());
    let server = serve(tree, Some(TOKEN));
    let addr = server.http_addr().unwrap();
    let r = get(addr, "GET", "/array.json", &[]);
    assert_eq!(r.status, 401);
    assert!(r.header("www-authenticate").unwrap().starts_with("Basic"));
    let basic = |pair: &str| {
        use std::fmt::Write;
        // A small base64 encoder, apart from the server's decoder.
        const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut out = String::from("Basic ");
        for c in pair.as_bytes().chunks(3) {
            let n = c.iter().fold(0u32, |a, &b| a << 8 | u32::from(b)) << (8 * (3 - c.len()));
            for i in 0..4 {
                if i <= c.len() {
                    out.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
                } else {
                    out.push('=');
                }
            }
        }
        let _ = write!(out, "");
        out
    };
    for (auth, status) in [
        ("Bearer nope".to_string(), 401),
        (format!("Bearer {TOKEN}x"), 401),
        (format!("Bearer {TOKEN}"), 200),
        (format!("bearer {TOKEN}"), 200),
        // Any user name; the password is the token.
        (basic(&format!("user:{TOKEN}")), 200),
        (basic(&format!(":{TOKEN}")), 200),
        (basic(&format!("{TOKEN}:")), 401),
        // `Og==`, an empty user and password: what an empty --token once let in.
        ("Basic Og==".to_string(), 401),
        (basic(":"), 401),
    ] {
        assert_eq!(
            get(addr, "GET", "/array.json", &[("Authorization", &auth)]).status,
            status,
            "{auth}"
        );
    }
    // Without --cors-origin a preflight is refused: a page cannot read, token or not.
    let r = get(
        addr,
        "OPTIONS",
        "/array.json",
        &[
            ("Origin", "http://app.example"),
            ("Access-Control-Request-Method", "GET"),
        ],
    );
    assert_eq!(r.status, 403);
    assert_eq!(r.header("access-control-allow-origin"), None);
}

/// A server on loopback answers only its own names as `Host` (a page that rebinds its
/// name to 127.0.0.1 is refused), and CORS headers go only to the origins named.
#[test]
fn browsers_get_in_only_by_the_servers_names_and_named_origins() {
    let (array, expected) = fixture("dense_basic");
    let tree: Arc<dyn FileTree> = Arc::new(open_view(&array, &expected).unwrap());
    let start = |doors: Doors| Server::start(tree.clone(), &doors, 2);
    let http = || Doors {
        http: Some("127.0.0.1:0".parse().unwrap()),
        ..Doors::default()
    };
    let server = start(http()).unwrap();
    let addr = server.http_addr().unwrap();
    let host = |h: &str| {
        raw(
            addr,
            format!("GET /array.json HTTP/1.1\r\nHost: {h}\r\nConnection: close\r\n\r\n")
                .as_bytes(),
            false,
        )
        .status
    };
    let port = addr.port();
    for own in [
        "localhost".to_string(),
        format!("localhost:{port}"),
        format!("127.0.0.1:{port}"),
        "127.0.0.1".to_string(),
        format!("[::1]:{port}"),
    ] {
        assert_eq!(host(&own), 200, "Host {own}");
    }
    // DNS rebinding: the attacker's name, resolving to 127.0.0.1.
    for foreign in [
        "evil.example".to_string(),
        format!("evil.example:{port}"),
        "localhost.evil.example".to_string(),
        "192.168.1.5".to_string(),
    ] {
        assert_eq!(host(&foreign), 403, "Host {foreign}");
    }
    // A cross-origin read: no CORS header, so the browser keeps the answer from the
    // page; a preflight is refused.
    let page = [("Origin", "https://vitessce.io")];
    let r = get(addr, "GET", "/array.json", &page);
    assert_eq!(r.status, 200);
    assert_eq!(r.header("access-control-allow-origin"), None);
    drop(server);

    // Named: that origin reads, another does not; a name allowed reaches it.
    let server = start(Doors {
        cors_origins: vec!["https://vitessce.io".into()],
        allowed_hosts: vec!["notebook.lab".into()],
        ..http()
    })
    .unwrap();
    let addr = server.http_addr().unwrap();
    let r = get(addr, "GET", "/array.json", &page);
    assert_eq!(
        r.header("access-control-allow-origin"),
        Some("https://vitessce.io")
    );
    assert!(r.header("vary").is_some_and(|v| v.contains("Origin")));
    assert!(r
        .header("access-control-expose-headers")
        .is_some_and(|h| h.contains("Content-Range") && h.contains("ETag")));
    let r = get(
        addr,
        "GET",
        "/array.json",
        &[("Origin", "https://evil.example")],
    );
    assert_eq!(r.header("access-control-allow-origin"), None);
    let pre = get(
        addr,
        "OPTIONS",
        "/latest/a/values.bin",
        &[
            ("Origin", "https://vitessce.io"),
            ("Access-Control-Request-Method", "GET"),
            ("Access-Control-Request-Headers", "range"),
        ],
    );
    assert_eq!(pre.status, 204);
    assert_eq!(
        pre.header("access-control-allow-origin"),
        Some("https://vitessce.io")
    );
    assert!(pre
        .header("access-control-allow-headers")
        .is_some_and(|h| h.contains("Range")));
    let r = raw(
        addr,
        b"GET /array.json HTTP/1.1\r\nHost: notebook.lab\r\nConnection: close\r\n\r\n",
        false,
    );
    assert_eq!(r.status, 200);
    drop(server);

    // Every origin (`*`) needs a token: refused without, served with.
    let open = start(Doors {
        cors_origins: vec!["*".into()],
        ..http()
    });
    assert!(open.is_err(), "--cors-origin '*' without a token");
    let server = start(Doors {
        cors_origins: vec!["*".into()],
        token: Some(fragfs::secret::Secret::new(TOKEN)),
        ..http()
    })
    .unwrap();
    let addr = server.http_addr().unwrap();
    let auth = format!("Bearer {TOKEN}");
    let r = get(
        addr,
        "GET",
        "/array.json",
        &[("Origin", "https://any.example"), ("Authorization", &auth)],
    );
    assert_eq!(r.status, 200);
    assert_eq!(r.header("access-control-allow-origin"), Some("*"));
}

#[test]
fn bad_and_hostile_requests_get_errors_and_others_are_still_served() {
    let (tree, server, addr) = served_fixture("dense_2d");
    let ok = || body(addr, "/array.json").unwrap();
    let want = ok();
    for (method, path, status) in [
        ("PUT", "/array.json", 405),
        ("DELETE", "/latest/", 405),
        ("POST", "/", 405),
        ("GET", "/nothing/here", 404),
        ("GET", "/array.json/", 404),
        ("GET", "/../etc/passwd", 400),
        ("GET", "/fragments/%2e%2e/x", 400),
        ("GET", "/latest/a%00b", 400),
        ("GET", "/latest//a", 400),
        ("GET", "/%ff", 400),
    ] {
        assert_eq!(
            get(addr, method, path, &[]).status,
            status,
            "{method} {path}"
        );
    }
    // A request body is refused (and its connection closed).
    let r = raw(
        addr,
        b"GET /array.json HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\n\r\nhello",
        false,
    );
    assert_eq!(r.status, 413);
    // Garbage, and a head larger than the bound.
    assert_eq!(raw(addr, b"\x01\x02 nonsense\r\n\r\n", false).status, 400);
    let huge = format!(
        "GET / HTTP/1.1\r\nHost: localhost\r\nX-Big: {}\r\n\r\n",
        "a".repeat(64 << 10)
    );
    assert_eq!(raw(addr, huge.as_bytes(), false).status, 431);

    // 1,000 idle connections from one address: it gets its share (256) and the rest
    // are closed at once with a 503; other clients are still served.
    let idle: Vec<TcpStream> = (0..1000)
        .map(|_| TcpStream::connect(addr).unwrap())
        .collect();
    let deadline = Instant::now() + Duration::from_secs(120);
    while server.refused() < 1000 - 256 {
        assert!(Instant::now() < deadline, "{} refused", server.refused());
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(server.refused(), 1000 - 256);
    // Accepted in order: the last ones were refused, and told why.
    let mut last = idle.last().unwrap();
    last.set_read_timeout(Some(Duration::from_secs(120)))
        .unwrap();
    let mut told = String::new();
    let _ = last.read_to_string(&mut told);
    assert!(told.starts_with("HTTP/1.1 503"), "{told:?}");
    let other = std::net::Ipv4Addr::new(127, 0, 0, 2);
    let ok = || {
        let r = common::http::get_from(other, addr, "GET", "/array.json", &[]);
        assert_eq!(r.status, 200);
        r.body
    };
    let big = tree.resolve("latest/cells.csv").unwrap();
    let big_size = read_all(&*tree, big).unwrap().len();
    let mut stalled = common::http::connect_from(other, addr);
    stalled
        .write_all(b"GET /latest/cells.csv HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .unwrap();
    let mut first = [0u8; 16];
    stalled.read_exact(&mut first).unwrap();
    assert_eq!(&first[..12], b"HTTP/1.1 200");
    let started = Instant::now();
    for _ in 0..20 {
        assert_eq!(ok(), want);
    }
    println!(
        "20 requests in {:?} beside 1000 idle connections and a stalled reader of {big_size} bytes",
        started.elapsed()
    );
    drop(idle);
    drop(stalled);
    assert_eq!(ok(), want);
    // Stopping ends the server (and its connections) within the grace period.
    let idle = TcpStream::connect(addr).unwrap();
    let started = Instant::now();
    server.stop();
    assert!(started.elapsed() < Duration::from_secs(10));
    drop(idle);
    assert!(
        TcpStream::connect(addr).is_err(),
        "still listening after stop"
    );
}

#[test]
fn the_command_serves_until_sigterm_and_replicas_agree_on_etags() {
    let (array, _) = fixture("consolidated");
    let (mut one, a) = fragfs_serve(&array, &["--http", "127.0.0.1:0"]);
    let (mut two, b) = fragfs_serve(&array, &["--http", "127.0.0.1:0"]);
    // A third replica in this process, whose fragment numbers differ (other arrays were
    // opened first): tags derive from names, never from this process's numbering.
    let (other, other_expected) = fixture("dense_2d");
    let _first = open_view(&other, &other_expected).unwrap();
    let (_, expected) = fixture("consolidated");
    let tree: Arc<dyn FileTree> = Arc::new(open_view(&array, &expected).unwrap());
    let three = serve(tree, None);
    let c = three.http_addr().unwrap();
    let listing: serde_json::Value =
        serde_json::from_slice(&body(a, "/fragments/?format=json").unwrap()).unwrap();
    let fragment = listing["entries"][0]["name"].as_str().unwrap().to_string();
    for path in [
        format!("/fragments/{fragment}/a/values.bin"),
        "/latest/a/values.bin".to_string(),
        "/latest/cells.csv".to_string(),
        "/array.json".to_string(),
    ] {
        let (ra, rb) = (get(a, "HEAD", &path, &[]), get(b, "HEAD", &path, &[]));
        assert_eq!(ra.status, 200, "{path}");
        assert!(ra.header("etag").is_some(), "{path}: no ETag");
        assert_eq!(ra.header("etag"), rb.header("etag"), "{path}");
        assert_eq!(
            ra.header("etag"),
            get(c, "HEAD", &path, &[]).header("etag"),
            "{path}"
        );
        assert_eq!(
            ra.header("last-modified"),
            rb.header("last-modified"),
            "{path}"
        );
        assert_eq!(body(a, &path).unwrap(), body(b, &path).unwrap(), "{path}");
    }
    for child in [&mut one, &mut two] {
        // SAFETY: kill sends a signal to our own child, by its pid.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    }
    let started = Instant::now();
    for child in [&mut one, &mut two] {
        let status = child.wait().unwrap();
        assert!(status.success(), "{status}");
    }
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn the_command_refuses_a_public_address_without_access_control() {
    let (array, _) = fixture("dense_basic");
    let out = Command::new(env!("CARGO_BIN_EXE_fragfs"))
        .args(["serve"])
        .arg(&array)
        .args(["--http", "0.0.0.0:0"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--token") && err.contains("--insecure-listen"),
        "{err}"
    );
    // A taken port is one clear line too.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().to_string();
    let out = Command::new(env!("CARGO_BIN_EXE_fragfs"))
        .args(["serve"])
        .arg(&array)
        .args(["--http", &port])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot listen on") && err.contains(&port),
        "{err}"
    );
}

/// Forty clients that ask for a 32 MiB file and stop reading hold the server to a chunk
/// or two each (it reads further ahead only within a fixed budget): its peak memory,
/// through a whole download of the file by another client, stays within the cache and a
/// fixed overhead, where buffering their responses would take over a gigabyte.
#[test]
fn clients_that_stop_reading_cost_the_server_a_chunk_each() {
    let Some(python) = python_with("tiledb") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let array = dir.path().join("big");
    write_random_int64_array(&python, &array, 16 * 262_144, 262_144, 7);
    let (mut child, addr) = fragfs_serve(&array, &["--http", "127.0.0.1:0", "--cache-size", "16M"]);
    let path = "/latest/v/values.bin";
    let tree = open_source_tree(&array, 16 << 20);
    let want = read_all(&*tree, tree.resolve(path).unwrap()).unwrap();
    assert_eq!(want.len(), 32 << 20);
    // Alone, the download reads ahead of the client (several chunks in flight).
    assert!(body(addr, path).unwrap() == want, "bytes differ");
    let mut stalled = Vec::new();
    for _ in 0..40 {
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n").as_bytes())
            .unwrap();
        let mut first = [0u8; 12];
        s.read_exact(&mut first).unwrap();
        assert_eq!(&first, b"HTTP/1.1 200");
        stalled.push(s);
    }
    // With the stalled responses holding the read-ahead budget, one chunk at a time.
    assert!(body(addr, path).unwrap() == want, "bytes differ");
    let peak = peak_rss_mib(child.id());
    println!("peak RSS {peak} MiB with 40 stalled readers of a 32 MiB file");
    assert!(peak < 16 + 112, "peak RSS {peak} MiB");
    drop(stalled);
    // SAFETY: kill sends a signal to our own child, by its pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    assert!(child.wait().unwrap().success());
}

/// A group (a TileDB-SOMA experiment) serves its members' trees as the mount shows
/// them: every file the same bytes.
#[test]
fn a_group_is_served_as_mounted() {
    let group = soma_fixtures().join("experiment");
    let tree = open_source_tree(&group, 64 << 20);
    let server = serve(tree.clone(), None);
    let addr = server.http_addr().unwrap();
    let files = check_every_file(&*tree, addr).unwrap();
    assert!(files > 50, "{files} files");
}

/// With short limits: a connection that sends nothing, and one whose client stopped
/// reading its responses, are closed by the server. The test waits for the server to
/// count them gone (only the server times anything), then drains what was sent.
#[test]
fn idle_and_stalled_connections_are_closed() {
    let (array, expected) = fixture("dense_2d");
    let tree: Arc<dyn FileTree> = Arc::new(open_view(&array, &expected).unwrap());
    let doors = Doors {
        http: Some("127.0.0.1:0".parse().unwrap()),
        limits: fragfs::serve::Limits {
            header_timeout: Duration::from_secs(1),
            idle_timeout: Duration::from_secs(1),
            ..Default::default()
        },
        ..Doors::default()
    };
    let server = Server::start(tree.clone(), &doors, 2).unwrap();
    let addr = server.http_addr().unwrap();
    let gone = |what: &str| {
        let deadline = Instant::now() + Duration::from_secs(120);
        while server.connections() > 0 {
            assert!(Instant::now() < deadline, "{what}: still open after 120 s");
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    // The server closes it: the read ends (the test's own read timeout only bounds a
    // failure).
    let mut idle = TcpStream::connect(addr).unwrap();
    idle.set_read_timeout(Some(Duration::from_secs(120)))
        .unwrap();
    let mut rest = Vec::new();
    idle.read_to_end(&mut rest).unwrap();
    assert!(
        rest.is_empty() || rest.starts_with(b"HTTP/1.1 408"),
        "{:?}",
        String::from_utf8_lossy(&rest)
    );

    // Pipelined requests whose replies (over 32 MiB) overflow every socket buffer, from
    // a client that reads none of them.
    let size = read_all(&*tree, tree.resolve("latest/cells.csv").unwrap())
        .unwrap()
        .len();
    let n = (32 << 20) / size + 1;
    let mut stalled = TcpStream::connect(addr).unwrap();
    let request = "GET /latest/cells.csv HTTP/1.1\r\nHost: localhost\r\n\r\n".repeat(n);
    stalled.write_all(request.as_bytes()).unwrap();
    while server.accepted() < 2 {
        std::thread::sleep(Duration::from_millis(10));
    }
    gone("a client that stopped reading");
    let mut got = Vec::new();
    let _ = stalled.read_to_end(&mut got);
    let replies = got.windows(12).filter(|w| w == b"HTTP/1.1 200").count();
    assert!(
        replies < n,
        "all {n} replies sent to a client that did not read"
    );
    println!("closed after {replies} of {n} replies");
}
