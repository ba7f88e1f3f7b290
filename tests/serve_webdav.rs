//! `fragfs serve --webdav`: every file of the fixtures and of the shared corpus's sample
//! (`corpus_sample`: every feature of every format version) byte-exact to the tree
//! through PROPFIND listings and GET (an in-process client), the same through real
//! clients (rclone; a davfs2 mount where the machine allows), and hostile or writing
//! clients answered with errors while others are served.

mod common;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use common::http::{get, raw, read_reply, Reply};
use common::*;
use fragfs::serve::{Doors, Server};
use fragfs::view::{FileTree, Ino, ROOT};
use fragfs::wire::path::{decode, encode};
use quick_xml::events::Event;
use quick_xml::NsReader;

fn serve(tree: Arc<dyn FileTree>, token: Option<&str>, http: bool) -> Server {
    let doors = Doors {
        http: http.then(|| "127.0.0.1:0".parse().unwrap()),
        webdav: Some("127.0.0.1:0".parse().unwrap()),
        token: token.map(fragfs::secret::Secret::new),
        ..Doors::default()
    };
    Server::start(tree, &doors, 2).unwrap()
}

fn served_fixture(name: &str, token: Option<&str>) -> (Arc<dyn FileTree>, Server, SocketAddr) {
    let (array, expected) = fixture(name);
    let tree: Arc<dyn FileTree> = Arc::new(open_view(&array, &expected).unwrap());
    let server = serve(tree.clone(), token, false);
    let addr = server.webdav_addr().unwrap();
    (tree, server, addr)
}

fn url(path: &str) -> String {
    let parts: Vec<String> = path.split('/').map(encode).collect();
    format!("/{}", parts.join("/"))
}

/// A PROPFIND of `path` with `Depth: depth` (none when empty) and `body`.
fn propfind(addr: SocketAddr, path: &str, depth: &str, body: &str, auth: Option<&str>) -> Reply {
    let mut head = format!("PROPFIND {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    if !depth.is_empty() {
        head.push_str(&format!("Depth: {depth}\r\n"));
    }
    if let Some(a) = auth {
        head.push_str(&format!("Authorization: {a}\r\n"));
    }
    head.push_str(&format!(
        "Content-Type: application/xml\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    ));
    raw(addr, head.as_bytes(), false)
}

/// One `<D:response>` of a multistatus.
#[derive(Debug, Default)]
struct Found {
    href: String,
    /// Properties answered 200, by local name, with their text.
    props: BTreeMap<String, String>,
    /// Properties answered with another status, by local name.
    missing: Vec<String>,
    collection: bool,
}

impl Found {
    /// The last name of the href, decoded.
    fn name(&self) -> String {
        let h = self.href.trim_end_matches('/');
        decode(h.rsplit('/').next().unwrap_or_default()).unwrap()
    }
}

/// Parses a 207 body (strictly: anything that is not well-formed fails).
fn multistatus(body: &[u8]) -> Result<Vec<Found>, String> {
    let text = std::str::from_utf8(body).map_err(|e| e.to_string())?;
    let mut reader = NsReader::from_str(text);
    let mut out = Vec::new();
    let mut stack: Vec<String> = Vec::new();
    let mut current = Found::default();
    let mut props: Vec<(String, String)> = Vec::new();
    let mut status = String::new();
    let mut collection = false;
    let mut text_buf = String::new();
    loop {
        let (ns, event) = reader.read_resolved_event().map_err(|e| e.to_string())?;
        let dav = matches!(ns, quick_xml::name::ResolveResult::Bound(n) if n.0 == b"DAV:");
        match event {
            Event::Start(ref e) | Event::Empty(ref e) => {
                let local = String::from_utf8_lossy(e.local_name().into_inner()).to_string();
                let empty = matches!(event, Event::Empty(_));
                let parent = stack.last().map(String::as_str);
                if parent == Some("prop") {
                    props.push((local.clone(), String::new()));
                }
                if dav && local == "collection" && stack.iter().any(|s| s == "resourcetype") {
                    collection = true;
                }
                text_buf.clear();
                if !empty {
                    stack.push(local);
                }
            }
            Event::Text(t) => text_buf.push_str(&t.decode().map_err(|e| e.to_string())?),
            Event::GeneralRef(r) => {
                let name = String::from_utf8_lossy(&r).to_string();
                text_buf.push_str(match name.as_str() {
                    "quot" => "\"",
                    "amp" => "&",
                    "lt" => "<",
                    "gt" => ">",
                    "apos" => "'",
                    _ => return Err(format!("entity {name}")),
                });
            }
            Event::End(_) => {
                let local = stack.pop().ok_or("end too many")?;
                match local.as_str() {
                    "href" => current.href = text_buf.clone(),
                    "status" => status = text_buf.clone(),
                    "propstat" => {
                        for (name, value) in props.drain(..) {
                            if status.contains(" 200 ") {
                                current.props.insert(name, value);
                            } else {
                                current.missing.push(name);
                            }
                        }
                        if status.contains(" 200 ") {
                            current.collection |= collection;
                        }
                        collection = false;
                    }
                    "response" => out.push(std::mem::take(&mut current)),
                    _ if stack.last().map(String::as_str) == Some("prop") => {
                        if let Some(p) = props.last_mut() {
                            p.1 = text_buf.clone();
                        }
                    }
                    _ => {}
                }
                text_buf.clear();
            }
            Event::Eof => break,
            _ => {}
        }
    }
    if !stack.is_empty() {
        return Err("unclosed elements".into());
    }
    Ok(out)
}

/// The entries of a depth-1 PROPFIND of folder `path` (its own entry first).
fn listing(addr: SocketAddr, path: &str, auth: Option<&str>) -> Result<Vec<Found>, String> {
    let r = propfind(addr, path, "1", "", auth);
    if r.status != 207 {
        return Err(format!("PROPFIND {path}: {}", r.status));
    }
    multistatus(&r.body)
}

/// A tree served over WebDAV, read as the corpus checks read any tree: folders by
/// PROPFIND, files by GET.
struct OverWebDav(SocketAddr);

impl Tree for OverWebDav {
    fn fragments(&self) -> Result<Vec<String>, String> {
        let mut names: Vec<String> = listing(self.0, "/fragments/", None)?
            .into_iter()
            .skip(1)
            .map(|f| f.name())
            .collect();
        names.sort();
        Ok(names)
    }

    fn read(&self, path: &str) -> Result<Vec<u8>, String> {
        common::http::body(self.0, &url(path))
    }
}

/// Walks the tree over PROPFIND (`at/` limited to its first state: the others hold the
/// same kinds of files), checking every folder's names and kinds and every file's size
/// and properties against the tree; the bytes and tag of every file of `latest/` and of
/// every 3rd other file over GET (the corpus checks read the rest), and every 5th
/// file's tag against the HTTP door's at `http` when given (a debug build decodes
/// slowly: all of it took a minute). The number of files checked.
fn check_every_file(
    tree: &dyn FileTree,
    addr: SocketAddr,
    http: Option<SocketAddr>,
) -> Result<usize, String> {
    let mut checked = 0;
    let mut stack = vec![(String::new(), ROOT)];
    while let Some((path, dir)) = stack.pop() {
        let shown = if path.is_empty() {
            "/".to_string()
        } else {
            format!("{}/", url(&path))
        };
        let found = listing(addr, &shown, None)?;
        let (me, children) = found.split_first().ok_or(format!("{shown}: empty"))?;
        if !me.collection || me.href != shown {
            return Err(format!("{shown}: answered as {me:?}"));
        }
        let list = tree.list(dir).map_err(|e| e.to_string())?;
        let names: Vec<String> = children.iter().map(Found::name).collect();
        let listed: Vec<&str> = list.iter().map(|e| e.name.as_str()).collect();
        if names != listed {
            return Err(format!("{shown}: listed {names:?}, the tree {listed:?}"));
        }
        let keep = if path == "at" { 1 } else { usize::MAX };
        for (entry, child) in list.iter().zip(children).take(keep) {
            let p = if path.is_empty() {
                entry.name.clone()
            } else {
                format!("{path}/{}", entry.name)
            };
            if entry.is_dir() {
                if !child.collection {
                    return Err(format!("{p}: a folder not shown as a collection"));
                }
                stack.push((p, entry.ino));
                continue;
            }
            if child.collection || child.href != url(&p) {
                return Err(format!("{p}: answered as {child:?}"));
            }
            checked += 1;
            if p.starts_with("latest/") || checked % 3 == 0 {
                let http = http.filter(|_| checked % 5 == 0);
                check_file(tree, addr, http, &p, entry.ino, child)?;
            } else {
                check_size(tree, &p, entry.ino, child)?;
            }
        }
    }
    Ok(checked)
}

/// A file's listed size and properties, against the tree's size.
fn check_size(tree: &dyn FileTree, p: &str, ino: Ino, child: &Found) -> Result<(), String> {
    let Ok(size) = tree.size(ino) else {
        return Ok(());
    };
    let len = child.props.get("getcontentlength");
    if len != Some(&size.to_string()) {
        return Err(format!("{p}: getcontentlength {len:?} of {size}"));
    }
    for prop in ["getcontenttype", "getlastmodified", "displayname"] {
        if !child.props.contains_key(prop) {
            return Err(format!("{p}: no {prop} in {:?}", child.props));
        }
    }
    Ok(())
}

fn check_file(
    tree: &dyn FileTree,
    addr: SocketAddr,
    http: Option<SocketAddr>,
    p: &str,
    ino: Ino,
    child: &Found,
) -> Result<(), String> {
    let r = get(addr, "GET", &url(p), &[]);
    let Ok(bytes) = read_all(tree, ino) else {
        return if r.status >= 400 {
            Ok(())
        } else {
            Err(format!("{p}: {} over WebDAV, the tree fails", r.status))
        };
    };
    if r.status != 200 || r.body != bytes {
        return Err(format!(
            "{p}: GET {} with {} bytes, the tree has {}",
            r.status,
            r.body.len(),
            bytes.len()
        ));
    }
    let len = child.props.get("getcontentlength");
    if len != Some(&bytes.len().to_string()) {
        return Err(format!("{p}: getcontentlength {len:?} of {}", bytes.len()));
    }
    if !child.props.contains_key("getcontenttype") || !child.props.contains_key("getlastmodified") {
        return Err(format!("{p}: properties {:?}", child.props));
    }
    let tag = child.props.get("getetag").map(String::as_str);
    if tag != r.header("etag") {
        return Err(format!(
            "{p}: getetag {tag:?}, GET says {:?}",
            r.header("etag")
        ));
    }
    if let Some(http) = http {
        let h = get(http, "HEAD", &url(p), &[]);
        if tag != h.header("etag") {
            return Err(format!("{p}: getetag {tag:?}, HTTP {:?}", h.header("etag")));
        }
    }
    Ok(())
}

#[test]
fn every_file_of_the_fixtures_reads_the_same_over_webdav() {
    let (arrays, merged) = fixture_files();
    let merged: std::collections::HashMap<_, _> = merged.into_iter().collect();
    let mut files = 0;
    for (array, expected) in &arrays {
        let tree: Arc<dyn FileTree> = Arc::new(open_view(array, expected).unwrap());
        let server = serve(tree.clone(), None, true);
        let addr = server.webdav_addr().unwrap();
        let name = array.display();
        check_tree(&OverWebDav(addr), expected).unwrap_or_else(|e| panic!("{name}: {e}"));
        if let Some(m) = merged.get(array) {
            check_merged(&OverWebDav(addr), m).unwrap_or_else(|e| panic!("{name}: merged: {e}"));
        }
        files += check_every_file(&*tree, addr, server.http_addr())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    println!("{} fixture arrays, {files} files over WebDAV", arrays.len());
    assert!(files > 500, "only {files} files checked");
}

#[test]
fn the_shared_corpus_reads_the_same_over_webdav() {
    let checked = check_corpus_sample(4, |array, expected, merged| {
        let tree: Arc<dyn FileTree> =
            Arc::new(open_view(array, expected).map_err(|e| e.to_string())?);
        let server = serve(tree.clone(), None, false);
        let over = OverWebDav(server.webdav_addr().unwrap());
        check_tree(&over, expected)?;
        if let Some(m) = merged {
            check_merged(&over, m).map_err(|e| format!("merged: {e}"))?;
        }
        // A text file: its listed size is the rendered one, its bytes the tree's.
        if let Ok(node) = tree.resolve("latest/cells.csv") {
            let found = listing(over.0, "/latest/", None)?;
            let cells = found
                .iter()
                .find(|f| f.href == "/latest/cells.csv")
                .ok_or("latest/cells.csv not listed")?;
            check_file(&*tree, over.0, None, "latest/cells.csv", node, cells)?;
        }
        Ok(())
    });
    println!("{checked} corpus arrays over WebDAV");
}

#[test]
fn options_and_properties_asked_by_name() {
    let (tree, _server, addr) = served_fixture("consolidated", None);
    let r = get(addr, "OPTIONS", "/", &[]);
    assert_eq!(r.status, 200);
    assert_eq!(
        r.header("dav"),
        Some("1"),
        "class 1 only, so Finder mounts read-only"
    );
    let allow = r.header("allow").unwrap();
    assert!(allow.contains("PROPFIND") && !allow.contains("LOCK") && !allow.contains("PUT"));

    // Named properties: the ones a node has in a 200 propstat, the others in a 404 one.
    let body = "<?xml version=\"1.0\"?><D:propfind xmlns:D=\"DAV:\" xmlns:Z=\"urn:x\"><D:prop>\
                <D:getcontentlength/><D:getetag/><Z:quota/><D:supportedlock/>\
                </D:prop></D:propfind>";
    let r = propfind(addr, "/latest/", "1", body, None);
    assert_eq!(r.status, 207);
    let found = multistatus(&r.body).unwrap();
    let me = &found[0];
    assert!(me.props.is_empty(), "{me:?}");
    let mut missing = me.missing.clone();
    missing.sort();
    assert_eq!(
        missing,
        ["getcontentlength", "getetag", "quota", "supportedlock"]
    );
    let cells = found
        .iter()
        .find(|f| f.href == "/latest/cells.csv")
        .unwrap();
    let bytes = read_all(&*tree, tree.resolve("latest/cells.csv").unwrap()).unwrap();
    assert_eq!(
        cells.props.keys().collect::<Vec<_>>(),
        ["getcontentlength", "getetag"]
    );
    assert_eq!(cells.props["getcontentlength"], bytes.len().to_string());
    assert_eq!(cells.missing, ["quota", "supportedlock"]);

    // propname: names without values; depth 0 of a file: the file alone.
    let body = "<propfind xmlns=\"DAV:\"><propname/></propfind>";
    let r = propfind(addr, "/latest/cells.csv", "0", body, None);
    assert_eq!(r.status, 207);
    let found = multistatus(&r.body).unwrap();
    assert_eq!(found.len(), 1);
    assert!(found[0].props.contains_key("getetag"));
    assert!(found[0].props.values().all(String::is_empty), "{found:?}");
    // A folder named without its slash is answered with it.
    let found = multistatus(&propfind(addr, "/latest", "0", "", None).body).unwrap();
    assert_eq!(found[0].href, "/latest/");
    assert!(found[0].collection);
    // A missing node.
    assert_eq!(propfind(addr, "/nothing/", "0", "", None).status, 404);
    assert_eq!(
        propfind(addr, "/latest/cells.csv/", "0", "", None).status,
        404
    );
}

#[test]
fn writes_locks_and_bad_requests_are_refused_and_others_still_served() {
    let (tree, _server, addr) = served_fixture("consolidated", None);
    let want = read_all(&*tree, tree.resolve("latest/cells.csv").unwrap()).unwrap();
    let still_served = || {
        assert_eq!(
            common::http::body(addr, "/latest/cells.csv").unwrap(),
            want,
            "the server stopped serving"
        );
    };
    // Writes: 403 whatever they carry; locks (class 2): 405.
    for (method, status, extra) in [
        ("PUT", 403, "Content-Length: 5\r\n\r\nhello"),
        (
            "PUT",
            403,
            "Expect: 100-continue\r\nContent-Length: 1000000\r\n\r\n",
        ),
        ("DELETE", 403, "\r\n"),
        ("MKCOL", 403, "\r\n"),
        ("COPY", 403, "Destination: /latest/copy.csv\r\n\r\n"),
        ("MOVE", 403, "Destination: /latest/moved.csv\r\n\r\n"),
        ("PROPPATCH", 403, "Content-Length: 0\r\n\r\n"),
        ("LOCK", 405, "Content-Length: 0\r\n\r\n"),
        ("UNLOCK", 405, "Lock-Token: <urn:x>\r\n\r\n"),
        ("SEARCH", 405, "\r\n"),
    ] {
        let req = format!(
            "{method} /latest/cells.csv HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n{extra}"
        );
        let r = raw(addr, req.as_bytes(), false);
        assert_eq!(r.status, status, "{method}");
        still_served();
    }
    assert!(tree.resolve("latest/copy.csv").is_err());

    // Depth: infinity (or none, which means it) is refused as RFC 4918 allows; others bad.
    for (depth, status) in [("infinity", 403), ("", 403), ("2", 400), ("x", 400)] {
        let r = propfind(addr, "/", depth, "", None);
        assert_eq!(r.status, status, "Depth {depth:?}");
        if status == 403 {
            assert!(String::from_utf8_lossy(&r.body).contains("propfind-finite-depth"));
        }
    }

    // Malformed bodies: 400.
    for body in [
        "<propfind xmlns=\"DAV:\"><prop>",
        "<propfind xmlns=\"DAV:\"><prop></propfind>",
        "<propfind xmlns=\"urn:other\"><allprop/></propfind>",
        "<D:propfind><D:allprop/></D:propfind>",
        "not xml at all",
        "<!DOCTYPE lol [<!ENTITY a \"aaaaaaaa\">]><propfind xmlns=\"DAV:\"><allprop/></propfind>",
        "<propfind xmlns=\"DAV:\"></propfind>",
    ] {
        let r = propfind(addr, "/", "1", body, None);
        assert_eq!(r.status, 400, "{body}");
    }
    still_served();

    // Paths leaving the tree.
    for path in ["/latest/../..", "/a%2Fb/", "/%00/"] {
        assert_eq!(propfind(addr, path, "0", "", None).status, 400, "{path}");
    }

    // A huge body: refused on its declared length without being read, or once it passed
    // the bound when chunked.
    let r = raw(
        addr,
        b"PROPFIND / HTTP/1.1\r\nHost: localhost\r\nDepth: 1\r\nContent-Length: 100000000\r\n\r\n",
        false,
    );
    assert_eq!(r.status, 413);
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    s.write_all(
        b"PROPFIND / HTTP/1.1\r\nHost: localhost\r\nDepth: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
    )
    .unwrap();
    let chunk = format!("{:x}\r\n{}\r\n", 8192, " ".repeat(8192));
    for _ in 0..16 {
        // The server may stop reading once it answered: later writes may fail.
        if s.write_all(chunk.as_bytes()).is_err() {
            break;
        }
    }
    let r = read_reply(&mut std::io::BufReader::new(s), false);
    assert_eq!(r.status, 413);
    still_served();

    // A client that sends half a body and goes away.
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(
        b"PROPFIND / HTTP/1.1\r\nHost: localhost\r\nDepth: 1\r\nContent-Length: 100\r\n\r\n<propf",
    )
    .unwrap();
    drop(s);
    // And one that stops reading a long listing after its first bytes.
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(b"PROPFIND /fragments/ HTTP/1.1\r\nHost: localhost\r\nDepth: 1\r\n\r\n")
        .unwrap();
    let mut first = [0u8; 16];
    s.read_exact(&mut first).unwrap();
    drop(s);
    still_served();
    assert_eq!(
        listing(addr, "/", None).unwrap().len(),
        1 + tree.list(ROOT).unwrap().len()
    );
}

#[test]
fn a_token_is_the_basic_auth_password() {
    let (_tree, _server, addr) = served_fixture("dense_basic", Some("s3cret"));
    // user:s3cret and user:wrong
    let good = "Basic dXNlcjpzM2NyZXQ=";
    let bad = "Basic dXNlcjp3cm9uZw==";
    let r = propfind(addr, "/", "1", "", None);
    assert_eq!(r.status, 401);
    assert!(r.header("www-authenticate").unwrap().starts_with("Basic"));
    assert_eq!(propfind(addr, "/", "1", "", Some(bad)).status, 401);
    assert_eq!(propfind(addr, "/", "1", "", Some("Basic !!")).status, 401);
    assert_eq!(propfind(addr, "/", "1", "", Some(good)).status, 207);
    assert_eq!(get(addr, "GET", "/array.json", &[]).status, 401);
    assert_eq!(
        get(addr, "GET", "/array.json", &[("Authorization", bad)]).status,
        401
    );
    assert_eq!(
        get(addr, "GET", "/array.json", &[("Authorization", good)]).status,
        200
    );
    // Writes without the token: 401 first, never a write.
    let r = raw(
        addr,
        b"DELETE /array.json HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
        false,
    );
    assert_eq!(r.status, 401);
    // OPTIONS (a client's first probe) tells only what the server is.
    assert_eq!(get(addr, "OPTIONS", "/", &[]).status, 200);
}

/// Every file below the tree's root with its path (`at/` limited to `at_limit` states).
fn files(tree: &dyn FileTree, at_limit: usize) -> Vec<(String, Ino)> {
    let mut out = Vec::new();
    let mut stack = vec![(String::new(), ROOT)];
    while let Some((path, dir)) = stack.pop() {
        let list = tree.list(dir).unwrap();
        let take = if path == "at" { at_limit } else { usize::MAX };
        for e in list.into_iter().take(take) {
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

fn rclone(addr: SocketAddr, pass: &str, args: &[&str]) -> std::process::Output {
    let obscured = Command::new("rclone")
        .args(["obscure", pass])
        .output()
        .unwrap();
    let obscured = String::from_utf8(obscured.stdout).unwrap();
    Command::new("rclone")
        .args(args)
        .args([
            "--webdav-url",
            &format!("http://{addr}/"),
            "--webdav-user",
            "anyone",
            "--webdav-pass",
            obscured.trim(),
            "--config",
            "/dev/null",
            "--low-level-retries",
            "1",
            "--retries",
            "1",
        ])
        .output()
        .unwrap()
}

#[test]
fn rclone_lists_cats_and_copies_the_tree() {
    if !tool_available(
        "rclone",
        "the WebDAV door's rclone checks need it (Debian rclone)",
    ) {
        return;
    }
    for name in ["consolidated", "dense_2d"] {
        let (tree, _server, addr) = served_fixture(name, Some("pw"));
        let all = files(&*tree, usize::MAX);
        // lsjson -R: every file with its size, and nothing else.
        let out = rclone(addr, "pw", &["lsjson", "-R", "--files-only", ":webdav:"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let listed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let mut listed: Vec<(String, u64)> = listed
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e["Path"].as_str().unwrap().to_string(),
                    e["Size"].as_u64().unwrap(),
                )
            })
            .collect();
        listed.sort();
        let mut want: Vec<(String, u64)> = all
            .iter()
            .map(|(p, ino)| (p.clone(), read_all(&*tree, *ino).unwrap().len() as u64))
            .collect();
        want.sort();
        assert_eq!(listed, want, "{name}");
        // cat of a text file and of a fragment's binary file.
        let fragment = tree.list(tree.resolve("fragments").unwrap()).unwrap()[0]
            .name
            .clone();
        for p in [
            "latest/cells.csv".to_string(),
            format!("fragments/{fragment}/__fragment_metadata.json"),
        ] {
            let Ok(node) = tree.resolve(&p) else { continue };
            let out = rclone(addr, "pw", &["cat", &format!(":webdav:{p}")]);
            assert!(
                out.status.success(),
                "{p}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert_eq!(out.stdout, read_all(&*tree, node).unwrap(), "{name}: {p}");
        }
        // copy of the whole tree: byte-exact, file by file.
        let dest = tempfile::tempdir().unwrap();
        let out = rclone(
            addr,
            "pw",
            &["copy", ":webdav:", dest.path().to_str().unwrap()],
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        for (p, ino) in &all {
            let copied = std::fs::read(dest.path().join(p)).unwrap_or_else(|e| panic!("{p}: {e}"));
            assert_eq!(copied, read_all(&*tree, *ino).unwrap(), "{name}: {p}");
        }
        // A wrong password lists nothing.
        let out = rclone(addr, "nope", &["lsjson", ":webdav:"]);
        assert!(!out.status.success(), "a wrong password was let in");
    }
}

/// A davfs2 mount, unmounted when dropped.
struct DavMount {
    dir: tempfile::TempDir,
}

impl DavMount {
    /// Mounts `url` read-only with `user`/`pass`, or says why it cannot.
    fn mount(url: &str, pass: &str) -> Result<DavMount, String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        // davfs2 runs as its own user, which must reach its cache.
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))
            .map_err(|e| e.to_string())?;
        let (mnt, cache) = (dir.path().join("mnt"), dir.path().join("cache"));
        std::fs::create_dir(&mnt).map_err(|e| e.to_string())?;
        std::fs::create_dir(&cache).map_err(|e| e.to_string())?;
        std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o777))
            .map_err(|e| e.to_string())?;
        let secrets = dir.path().join("secrets");
        std::fs::write(&secrets, format!("{url} anyone {pass}\n")).map_err(|e| e.to_string())?;
        std::fs::set_permissions(&secrets, std::fs::Permissions::from_mode(0o600))
            .map_err(|e| e.to_string())?;
        let conf = dir.path().join("davfs2.conf");
        std::fs::write(
            &conf,
            format!(
                "use_locks 0\nask_auth 0\ncache_dir {}\nsecrets {}\n",
                cache.display(),
                secrets.display()
            ),
        )
        .map_err(|e| e.to_string())?;
        let out = Command::new("mount.davfs")
            .arg(url)
            .arg(&mnt)
            .args(["-o", &format!("ro,conf={}", conf.display())])
            .stdin(Stdio::null())
            .output()
            .map_err(|e| e.to_string())?;
        if !out.status.success() {
            return Err(format!(
                "mount.davfs failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(DavMount { dir })
    }

    fn path(&self) -> std::path::PathBuf {
        self.dir.path().join("mnt")
    }
}

impl Drop for DavMount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.path()).output();
    }
}

/// Why davfs2 cannot mount here, or `None` when it can.
fn davfs2_unavailable() -> Option<String> {
    // SAFETY: geteuid cannot fail and touches no memory.
    if unsafe { libc::geteuid() } != 0 {
        return Some("davfs2 mounts need root".into());
    }
    if Command::new("mount.davfs").arg("-V").output().is_err() {
        return Some("mount.davfs is not installed (Debian davfs2)".into());
    }
    if !Path::new("/dev/fuse").exists() && !Path::new("/dev/cfs0").exists() {
        return Some("davfs2 needs /dev/fuse or coda, absent here".into());
    }
    None
}

/// Whether davfs2's readdir fails here against another WebDAV server too (rclone's):
/// davfs2 1.6.1 speaks the FUSE protocol itself, and some kernels refuse its readdir.
fn davfs2_readdir_broken_here() -> bool {
    let src = tempfile::tempdir().unwrap();
    std::fs::write(src.path().join("f"), b"x").unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let Ok(mut server) = Command::new("rclone")
        .args(["serve", "webdav", "--addr", &format!("127.0.0.1:{port}")])
        .arg(src.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
    else {
        return false;
    };
    let url = format!("http://127.0.0.1:{port}/");
    let mut broken = false;
    for _ in 0..50 {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            if let Ok(m) = DavMount::mount(&url, "x") {
                broken = std::fs::read_dir(m.path())
                    .and_then(|rd| rd.collect::<std::io::Result<Vec<_>>>())
                    .is_err();
            }
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = server.kill();
    let _ = server.wait();
    broken
}

#[test]
fn a_davfs2_mount_reads_the_tree() {
    if let Some(why) = davfs2_unavailable() {
        skip(&why);
        return;
    }
    let (tree, _server, addr) = served_fixture("consolidated", Some("pw"));
    let mount = match DavMount::mount(&format!("http://{addr}/"), "pw") {
        Ok(m) => m,
        Err(e) => {
            skip(&format!("davfs2 cannot mount here: {e}"));
            return;
        }
    };
    let root = mount.path();
    // Sizes (ls -l) and bytes (cat) of every file, by path.
    let all = files(&*tree, 2);
    for (p, ino) in &all {
        let want = read_all(&*tree, *ino).unwrap();
        let meta = std::fs::metadata(root.join(p)).unwrap_or_else(|e| panic!("{p}: {e}"));
        assert_eq!(meta.len(), want.len() as u64, "{p}: size");
        assert!(meta.is_file(), "{p}");
        assert_eq!(std::fs::read(root.join(p)).unwrap(), want, "{p}");
    }
    let latest = std::fs::metadata(root.join("latest")).unwrap();
    assert!(latest.is_dir());
    // Listings (ls), where davfs2 can list at all.
    let listed: std::io::Result<Vec<String>> =
        std::fs::read_dir(root.join("latest")).and_then(|rd| {
            rd.map(|e| e.map(|e| e.file_name().to_string_lossy().to_string()))
                .collect()
        });
    match listed {
        Ok(mut names) => {
            names.sort();
            let mut want: Vec<String> = tree
                .list(tree.resolve("latest").unwrap())
                .unwrap()
                .into_iter()
                .map(|e| e.name)
                .collect();
            want.sort();
            assert_eq!(names, want);
        }
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) && davfs2_readdir_broken_here() => {
            skip(&format!(
                "davfs2 lists no folder on this kernel ({e}), rclone's own WebDAV server's \
                 neither: listings through davfs2 not checked"
            ));
        }
        Err(e) => panic!("ls through davfs2: {e}"),
    }
    println!("{} files through davfs2", all.len());
}

fn fragfs_serve(array: &Path, args: &[&str]) -> (std::process::Child, Vec<String>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_fragfs"))
        .arg("serve")
        .arg(array)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut lines = Vec::new();
    for _ in 0..args.iter().filter(|a| a.starts_with("--")).count() {
        let mut line = String::new();
        std::io::BufRead::read_line(&mut out, &mut line).unwrap();
        lines.push(line.trim().to_string());
    }
    (child, lines)
}

#[test]
fn the_command_serves_webdav_beside_http_and_guards_public_addresses() {
    let (array, _) = fixture("dense_basic");
    let (mut child, lines) = fragfs_serve(
        &array,
        &["--webdav", "127.0.0.1:0", "--http", "127.0.0.1:0"],
    );
    let webdav = lines
        .iter()
        .find_map(|l| l.strip_prefix("webdav http://"))
        .unwrap_or_else(|| panic!("no webdav line in {lines:?}"));
    let http = lines
        .iter()
        .find_map(|l| l.strip_prefix("http http://"))
        .unwrap_or_else(|| panic!("no http line in {lines:?}"));
    let (webdav, http): (SocketAddr, SocketAddr) = (
        webdav.trim_end_matches('/').parse().unwrap(),
        http.trim_end_matches('/').parse().unwrap(),
    );
    assert_eq!(propfind(webdav, "/", "1", "", None).status, 207);
    assert_eq!(
        get(webdav, "HEAD", "/array.json", &[]).header("etag"),
        get(http, "HEAD", "/array.json", &[]).header("etag")
    );
    // SAFETY: kill sends a signal to our own child, by its pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    assert!(child.wait().unwrap().success());

    let out = Command::new(env!("CARGO_BIN_EXE_fragfs"))
        .arg("serve")
        .arg(&array)
        .args(["--webdav", "0.0.0.0:0"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--webdav") && err.contains("--token") && err.contains("--insecure-listen"),
        "{err}"
    );
}
