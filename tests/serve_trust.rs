//! `fragfs serve` tried as an attacker would (issue 41): listings that lose no entry
//! and cost time linear in the entries through every door, bounded PROPFIND answers,
//! text files sized apart from the threads that serve bytes, connection bounds across
//! doors, the answers' memory budget, secrets that are refused when weak and never sit
//! on a command line, and HTTPS on the three HTTP-based doors.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::Command;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::http::get;
use common::watched::Watched;
use common::*;
use fragfs::serve::{Doors, Limits, Server};
use fragfs::view::{ArrayTree, FileTree, Ino};

fn loopback() -> Option<SocketAddr> {
    Some("127.0.0.1:0".parse().unwrap())
}

/// Every door on loopback.
fn all_doors() -> Doors {
    Doors {
        http: loopback(),
        webdav: loopback(),
        s3: loopback(),
        nfs: loopback(),
        ..Doors::default()
    }
}

/// `<tag>...</tag>` texts of an XML answer, in order.
fn xml_texts<'a>(xml: &'a str, tag: &str) -> Vec<&'a str> {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    xml.split(&open)
        .skip(1)
        .filter_map(|s| s.split(&close).next())
        .collect()
}

/// The names under `fragments/` each door lists, with the listings and numberings the
/// tree saw for it.
fn fragments_through_every_door(
    watched: &Watched,
    server: &Server,
    fragments: Ino,
) -> Vec<(&'static str, Vec<String>, u64, u64)> {
    let mut out = Vec::new();
    let http = server.http_addr().unwrap();
    let webdav = server.webdav_addr().unwrap();
    let (s3, bucket) = server.s3_addr().unwrap();
    let nfs = server.nfs_addr().unwrap();

    watched.reset();
    let r = get(http, "GET", "/fragments/?format=json", &[]);
    assert_eq!(r.status, 200);
    let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    let names = v["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap().to_string())
        .collect();
    out.push((
        "HTTP (JSON)",
        names,
        watched.listings_of(fragments),
        watched.numbered.load(Ordering::Relaxed),
    ));

    watched.reset();
    let r = get(http, "GET", "/fragments/", &[]);
    let page = String::from_utf8(r.body).unwrap();
    let names = page
        .split("<tr><td><a href=\"")
        .skip(2) // the head, then ../
        .filter_map(|s| s.split("/\"").next())
        .map(|s| fragfs::wire::path::decode(s).unwrap())
        .collect();
    out.push((
        "HTTP (HTML)",
        names,
        watched.listings_of(fragments),
        watched.numbered.load(Ordering::Relaxed),
    ));

    watched.reset();
    let r = get(
        webdav,
        "PROPFIND",
        "/fragments/",
        &[("Depth", "1"), ("Content-Length", "0")],
    );
    assert_eq!(r.status, 207);
    let xml = String::from_utf8(r.body).unwrap();
    let names = xml_texts(&xml, "D:href")
        .into_iter()
        .skip(1) // the folder itself
        .map(|h| {
            let name = h.trim_end_matches('/').rsplit('/').next().unwrap();
            fragfs::wire::path::decode(name).unwrap()
        })
        .collect();
    out.push((
        "WebDAV",
        names,
        watched.listings_of(fragments),
        watched.numbered.load(Ordering::Relaxed),
    ));

    // S3: ListObjectsV2 with the delimiter, page by page (1,000 keys a page).
    watched.reset();
    let mut names = Vec::new();
    let mut token: Option<String> = None;
    let mut pages = 0;
    loop {
        let mut path = format!("/{bucket}?list-type=2&prefix=fragments%2F&delimiter=%2F");
        if let Some(t) = &token {
            path.push_str(&format!("&continuation-token={t}"));
        }
        let r = get(s3, "GET", &path, &[]);
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
        let xml = String::from_utf8(r.body).unwrap();
        for common in xml_texts(&xml, "CommonPrefixes") {
            for p in xml_texts(common, "Prefix") {
                names.push(
                    p.trim_start_matches("fragments/")
                        .trim_end_matches('/')
                        .to_string(),
                );
            }
        }
        pages += 1;
        token = xml_texts(&xml, "NextContinuationToken")
            .first()
            .map(|t| t.to_string());
        if token.is_none() {
            break;
        }
    }
    assert!(pages >= 2, "{pages} pages");
    out.push((
        "S3",
        names,
        watched.listings_of(fragments),
        watched.numbered.load(Ordering::Relaxed),
    ));

    // NFS: READDIR page by page (a client's 32 KiB pages) sending no verifier, and
    // READDIRPLUS sending the one the first page answered (8 KiB pages).
    watched.reset();
    let client = common::nfs::Client::connect(nfs).unwrap();
    let dir = client.resolve("fragments").unwrap();
    let names = client.names(&dir, 32 << 10).unwrap();
    out.push((
        "NFS READDIR",
        names,
        watched.listings_of(fragments),
        watched.numbered.load(Ordering::Relaxed),
    ));
    watched.reset();
    let listed = client.list(&dir).unwrap();
    assert!(listed
        .iter()
        .all(|(_, attr, fh)| attr.is_some() && !fh.is_empty()));
    let names = listed.into_iter().map(|(n, _, _)| n).collect();
    out.push((
        "NFS READDIRPLUS",
        names,
        watched.listings_of(fragments),
        watched.numbered.load(Ordering::Relaxed),
    ));
    out
}

/// A `fragments/` of 100,000 entries, where the tree keeps 65,536 idle numbers: every
/// door lists every entry (HTTP and WebDAV listed 65,536, silently), taking one listing
/// of the folder however many pages (S3's pages each walked it again: 20 s against
/// 0.35 s for 10,000) and numbering each entry about once: time linear in the entries.
#[test]
fn a_hundred_thousand_entries_are_listed_whole_and_once_through_every_door() {
    const N: u64 = 100_000;
    let tmp = scratch_dir();
    let array = tmp.path().join("many");
    many_fragments(&array, N, 1_000_000);
    let tree: Arc<dyn FileTree> = Arc::new(
        ArrayTree::open_path(&array, Default::default(), 16 << 20)
            .unwrap()
            .with_refresh_interval(Duration::MAX),
    );
    let watched = Watched::new(tree);
    let server = Server::start(watched.clone(), &all_doors(), 2).unwrap();
    let fragments = watched.resolve("fragments").unwrap();
    let mut want: Vec<String> = (1_000_000..1_000_000 + N)
        .map(|t| format!("__{t}_{t}_{t:032x}_22"))
        .collect();
    want.sort();
    for (door, mut names, listings, numbered) in
        fragments_through_every_door(&watched, &server, fragments)
    {
        let listed = names.len();
        names.sort();
        assert!(names == want, "{door}: {listed} entries of {N}");
        assert_eq!(listings, 1, "{door}: {listings} listings of fragments/");
        // Each entry numbered once; S3 shows folders as prefixes and numbers none.
        assert!(numbered <= N, "{door}: {numbered} entries numbered");
        eprintln!("{door}: {listed} entries, {listings} listing, {numbered} numbered");
    }
}

/// The same with a tree that keeps only 1,000 idle numbers, for a folder of 5,000: the
/// doors number entries as they get to them, so none is lost whatever the bound.
#[test]
fn a_folder_larger_than_the_node_table_is_listed_whole() {
    const N: u64 = 5_000;
    let tmp = scratch_dir();
    let array = tmp.path().join("many");
    many_fragments(&array, N, 1_000);
    let tree: Arc<dyn FileTree> = Arc::new(
        ArrayTree::open_path(&array, Default::default(), 16 << 20)
            .unwrap()
            .with_idle_limit(1_000),
    );
    let watched = Watched::new(tree);
    let server = Server::start(watched.clone(), &all_doors(), 2).unwrap();
    let fragments = watched.resolve("fragments").unwrap();
    for (door, names, _, _) in fragments_through_every_door(&watched, &server, fragments) {
        assert_eq!(names.len() as u64, N, "{door}");
    }
}

/// The body that once made a 640 MB answer per folder (a long namespace, thousands of
/// properties) is refused (413); a body within the bounds, Depth 1 over a large folder,
/// is streamed: the server's peak memory stays small.
#[test]
fn propfind_bodies_are_bounded_and_answers_streamed() {
    let tmp = scratch_dir();
    let array = tmp.path().join("many");
    many_fragments(&array, 2_000, 1_000);
    let (child, addr) = fragfs_serve(&array, &["--webdav", "127.0.0.1:0", "--cache-size", "8M"]);
    let propfind = |body: &str| {
        let head = format!(
            "PROPFIND /fragments/ HTTP/1.1\r\nHost: {addr}\r\nDepth: 1\r\nConnection: close\r\n\
             Content-Type: application/xml\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(300))).unwrap();
        s.write_all(head.as_bytes()).unwrap();
        s.write_all(body.as_bytes()).unwrap();
        let mut out = Vec::new();
        s.read_to_end(&mut out).unwrap();
        out
    };
    let body = |props: usize, ns: usize, name: usize| {
        let mut b = format!(
            "<?xml version=\"1.0\"?><D:propfind xmlns:D=\"DAV:\" xmlns:x=\"urn:{}\"><D:prop>",
            "n".repeat(ns)
        );
        for i in 0..props {
            b.push_str(&format!("<x:p{i:05}{}/>", "q".repeat(name)));
        }
        b.push_str("</D:prop></D:propfind>");
        b
    };
    // The hostile one: under 64 KiB, a 2 KiB namespace, 4,000 properties.
    let hostile = body(4_000, 2_000, 0);
    assert!(hostile.len() < 64 << 10);
    let answer = propfind(&hostile);
    let shown = |a: &[u8]| String::from_utf8_lossy(&a[..a.len().min(200)]).into_owned();
    assert!(answer.starts_with(b"HTTP/1.1 413"), "{}", shown(&answer));
    assert!(propfind(&body(65, 10, 0)).starts_with(b"HTTP/1.1 413"));
    assert!(propfind(&body(1, 300, 0)).starts_with(b"HTTP/1.1 413"));
    // The most allowed: 64 properties of long names, over 2,000 entries: an answer of
    // some 35 MB, streamed.
    let answer = propfind(&body(64, 250, 240));
    assert!(answer.starts_with(b"HTTP/1.1 207"), "{}", shown(&answer));
    let text = String::from_utf8_lossy(&answer);
    assert_eq!(text.matches("<D:response>").count(), 2_001);
    let peak = peak_rss_mib(child.id());
    eprintln!("{} MB answered; peak RSS {peak} MiB", answer.len() >> 20);
    assert!(answer.len() > 20 << 20, "{} bytes", answer.len());
    assert!(peak < 8 + 80, "peak RSS {peak} MiB for a streamed answer");
}

/// While eight clients ask the size of text files that take long to render (held back
/// here until the test lets them go), the threads that serve bytes stay free: a GET
/// answers while every render is still held (with `--threads 2`, the renders took both
/// threads before, and the GET waited for them). Past the deadline a request is told
/// to come back (503 with `Retry-After`); once rendered, the size is there.
#[test]
fn text_files_are_sized_apart_from_the_threads_that_serve_bytes() {
    let (array, expected) = fixture("timestamps_deletes");
    let tree: Arc<dyn FileTree> = Arc::new(open_view(&array, &expected).unwrap());
    let watched = Watched::new(tree);
    let doors = Doors {
        limits: Limits {
            sizing_deadline: Duration::from_secs(2),
            ..Limits::default()
        },
        ..all_doors()
    };
    let server = Server::start(watched.clone(), &doors, 2).unwrap();
    let addr = server.http_addr().unwrap();
    let states: Vec<String> = watched
        .list(watched.resolve("at").unwrap())
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    let mut texts = vec!["latest/cells.csv".to_string()];
    texts.extend(states.iter().map(|t| format!("at/{t}/cells.csv")));
    let texts: Vec<String> = texts.into_iter().cycle().take(8).collect();
    watched.close_gate();
    let heads: Vec<_> = texts
        .iter()
        .map(|p| {
            let p = format!("/{p}");
            std::thread::spawn(move || get(addr, "HEAD", &p, &[]))
        })
        .collect();
    // The renders are held (at least one is in the pool, waiting at the gate)...
    let deadline = Instant::now() + Duration::from_secs(120);
    while watched.waiting.load(Ordering::SeqCst) == 0 {
        assert!(Instant::now() < deadline, "no render started");
        std::thread::sleep(Duration::from_millis(10));
    }
    // ...and a small GET is answered meanwhile, over HTTP and WebDAV.
    for door in [addr, server.webdav_addr().unwrap()] {
        let r = get(door, "GET", "/array.json", &[]);
        assert_eq!(r.status, 200);
    }
    assert!(
        watched.waiting.load(Ordering::SeqCst) > 0,
        "the renders are still held"
    );
    // Held past the deadline: "try again later", in each protocol's way.
    for h in heads {
        let r = h.join().unwrap();
        assert_eq!(r.status, 503, "{:?}", String::from_utf8_lossy(&r.body));
        assert!(r.header("retry-after").is_some());
    }
    let (s3, bucket) = server.s3_addr().unwrap();
    let r = get(s3, "HEAD", &format!("/{bucket}/latest/cells.csv"), &[]);
    assert_eq!(r.status, 503, "S3 HeadObject");
    let nfs = common::nfs::Client::connect(server.nfs_addr().unwrap()).unwrap();
    let fh = nfs.resolve("latest/cells.csv").unwrap();
    assert_eq!(nfs.getattr(&fh).unwrap_err(), 10_008, "NFS3ERR_JUKEBOX");
    // A WebDAV listing lists the file all the same, without the length it cannot give.
    let dav = server.webdav_addr().unwrap();
    let listing = |expect_length: bool| {
        let r = get(
            dav,
            "PROPFIND",
            "/latest/",
            &[("Depth", "1"), ("Content-Length", "0")],
        );
        assert_eq!(r.status, 207);
        let xml = String::from_utf8(r.body).unwrap();
        let cells = xml
            .split("<D:response>")
            .find(|r| r.contains("<D:href>/latest/cells.csv</D:href>"))
            .expect("cells.csv listed")
            .to_string();
        assert_eq!(cells.contains("getcontentlength"), expect_length, "{cells}");
        cells
    };
    listing(false);
    watched.open_gate();
    for p in &texts {
        let want = read_all(&*watched, watched.resolve(p).unwrap())
            .unwrap()
            .len();
        // The render goes on after a deadline; the retry finds its size (waiting for
        // it at most the deadline again).
        let mut r = get(addr, "HEAD", &format!("/{p}"), &[]);
        for _ in 0..60 {
            if r.status != 503 {
                break;
            }
            r = get(addr, "HEAD", &format!("/{p}"), &[]);
        }
        assert_eq!(r.status, 200, "{p}");
        assert_eq!(r.header("content-length"), Some(&*want.to_string()), "{p}");
    }
    let cells = read_all(&*watched, watched.resolve("latest/cells.csv").unwrap()).unwrap();
    let dav_says = listing(true);
    assert!(dav_says.contains(&format!("<D:getcontentlength>{}<", cells.len())));
    assert_eq!(nfs.getattr(&fh).unwrap().size, cells.len() as u64);
    let r = get(s3, "HEAD", &format!("/{bucket}/latest/cells.csv"), &[]);
    assert_eq!(r.header("content-length"), Some(&*cells.len().to_string()));
}

/// A server of `dense_basic` with an HTTP and a WebDAV door sharing `slots`
/// connection slots.
fn http_and_webdav_with_slots(slots: usize) -> Server {
    let (array, expected) = fixture("dense_basic");
    let tree: Arc<dyn FileTree> = Arc::new(open_view(&array, &expected).unwrap());
    let doors = Doors {
        http: loopback(),
        webdav: loopback(),
        limits: Limits {
            max_connections: slots,
            ..Limits::default()
        },
        ..Doors::default()
    };
    Server::start(tree, &doors, 2).unwrap()
}

/// One bound of connections for every door together: with room for two, two idle
/// connections (one HTTP, one WebDAV) leave a third client accepted but unserved
/// until one of them goes; the bound per client address is `serve.rs`'s.
#[test]
fn one_connection_bound_holds_across_doors() {
    let server = http_and_webdav_with_slots(2);
    let (http, webdav) = (server.http_addr().unwrap(), server.webdav_addr().unwrap());
    let a = TcpStream::connect(http).unwrap();
    let b = TcpStream::connect(webdav).unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while server.connections() < 2 {
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(10));
    }
    // The third is accepted by the WebDAV door but not served: it waits for a slot,
    // both being held.
    let mut third = TcpStream::connect(webdav).unwrap();
    while server.doors_waiting_for_a_slot() < 1 {
        assert!(
            Instant::now() < deadline,
            "the door never waited for a slot"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(server.accepted(), 2, "a third connection served");
    let waiting = std::thread::spawn(move || {
        third
            .write_all(b"GET /array.json HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
            .unwrap();
        let mut answer = Vec::new();
        third.read_to_end(&mut answer).unwrap();
        answer
    });
    drop(a);
    let answer = waiting.join().unwrap();
    assert!(
        answer.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&answer[..answer.len().min(200)])
    );
    assert_eq!(server.accepted(), 3);
    drop(b);
}

/// A door takes a slot only for a connection it has: with one slot and two doors,
/// an idle door does not keep it from the other, so each door serves its client.
#[test]
fn an_idle_door_keeps_no_slot() {
    let server = http_and_webdav_with_slots(1);
    for addr in [server.webdav_addr().unwrap(), server.http_addr().unwrap()] {
        let mut s = TcpStream::connect(addr).unwrap();
        // A bound so that a starved door fails the test instead of hanging it.
        s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
        s.write_all(b"GET /array.json HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
            .unwrap();
        let mut answer = Vec::new();
        s.read_to_end(&mut answer)
            .unwrap_or_else(|e| panic!("{addr}: no answer: {e}"));
        assert!(answer.starts_with(b"HTTP/1.1 200"), "{addr}");
    }
}

/// Every chunk of an answer comes out of one memory budget, the first ones too: with
/// room for four chunks, four clients that stop reading hold it all, a fifth request
/// waits for a share, and gets its bytes once one of the four goes.
#[test]
fn the_first_chunk_of_every_answer_counts_in_the_memory_budget() {
    let Some(python) = python_with("tiledb") else {
        return;
    };
    let tmp = scratch_dir();
    let array = tmp.path().join("big");
    write_random_int64_array(&python, &array, 4 * 262_144, 262_144, 3);
    let tree = open_source_tree(&array, 16 << 20);
    let doors = Doors {
        http: loopback(),
        limits: Limits {
            answer_memory: 4 * (512 << 10),
            ..Limits::default()
        },
        ..Doors::default()
    };
    let server = Server::start(tree.clone(), &doors, 2).unwrap();
    let addr = server.http_addr().unwrap();
    assert_eq!(server.budget_free(), 4 * (512 << 10));
    let path = "/latest/v/values.bin";
    let stalled: Vec<TcpStream> = (0..4)
        .map(|_| {
            let mut s = TcpStream::connect(addr).unwrap();
            s.write_all(format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n").as_bytes())
                .unwrap();
            let mut first = [0u8; 12];
            s.read_exact(&mut first).unwrap();
            assert_eq!(&first, b"HTTP/1.1 200");
            s
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(120);
    while server.budget_free() > 0 {
        assert!(
            Instant::now() < deadline,
            "{} bytes free",
            server.budget_free()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    // A fifth waits for a share (its head not sent until its first chunk is read)...
    // While the four still fill their sockets, each gives a chunk's share back as it is
    // sent and takes the next: a fifth that comes in then may get one (and is answered,
    // which shows nothing), so it is asked again until it waits. A server that let the
    // first chunk by would answer every one.
    let request = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    let fifth = loop {
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(request.as_bytes()).unwrap();
        s.set_nonblocking(true).unwrap();
        let waits = loop {
            assert!(
                Instant::now() < deadline,
                "a fifth answer never waited for its first chunk's share"
            );
            if server.answers_waiting_for_memory() > 0 {
                break true;
            }
            match s.peek(&mut [0u8; 1]) {
                Ok(_) => break false,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => panic!("the fifth: {e}"),
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        if waits {
            s.set_nonblocking(false).unwrap();
            break s;
        }
    };
    assert_eq!(server.budget_free(), 0);
    // ...and is answered whole once the stalled clients go.
    drop(stalled);
    let r = common::http::read_reply(&mut std::io::BufReader::new(fifth), false);
    assert_eq!(r.status, 200);
    assert!(r.body == read_all(&*tree, tree.resolve(path).unwrap()).unwrap());
}

/// Tokens and S3 keys shorter than 16 bytes (an unset variable's empty one above all)
/// are refused at start with one line; `--token-file` and `--s3-secret-key-file` keep
/// secrets off the command line (`ps` shows it), and work.
#[test]
fn weak_secrets_are_refused_and_secret_files_keep_them_off_the_command_line() {
    let (array, _) = fixture("dense_basic");
    let refused = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_fragfs"))
            .arg("serve")
            .arg(&array)
            .args(args)
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?} accepted");
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        err
    };
    let e = refused(&["--http", "127.0.0.1:0", "--token", ""]);
    assert!(e.contains("--token") && e.contains("16"), "{e}");
    refused(&["--http", "127.0.0.1:0", "--token", "fifteen-bytes.."]);
    refused(&[
        "--s3",
        "127.0.0.1:0",
        "--s3-access-key",
        "",
        "--s3-secret-key",
        "a-secret-of-enough-bytes",
    ]);
    let e = refused(&[
        "--s3",
        "127.0.0.1:0",
        "--s3-access-key",
        "an-access-key-id",
        "--s3-secret-key",
        "short",
    ]);
    assert!(e.contains("--s3-secret-key"), "{e}");

    let dir = tempfile::tempdir().unwrap();
    let token = "a-token-read-from-a-file-0123";
    let file = dir.path().join("token");
    std::fs::write(&file, format!("{token}\n")).unwrap();
    let empty = dir.path().join("empty");
    std::fs::write(&empty, "\n").unwrap();
    refused(&[
        "--http",
        "127.0.0.1:0",
        "--token-file",
        empty.to_str().unwrap(),
    ]);
    let (child, addr) = fragfs_serve(
        &array,
        &[
            "--http",
            "127.0.0.1:0",
            "--token-file",
            file.to_str().unwrap(),
        ],
    );
    assert_eq!(get(addr, "GET", "/array.json", &[]).status, 401);
    let auth = format!("Bearer {token}");
    assert_eq!(
        get(addr, "GET", "/array.json", &[("Authorization", &auth)]).status,
        200
    );
    let cmdline = std::fs::read(format!("/proc/{}/cmdline", child.id())).unwrap();
    assert!(
        !String::from_utf8_lossy(&cmdline).contains(token),
        "the token is on the command line"
    );
}

/// HTTPS on each of the three HTTP-based doors, with a certificate made for the test:
/// clients that trust it read over TLS; plain HTTP to the port gets nothing.
#[test]
fn https_on_the_http_webdav_and_s3_doors() {
    if !tool_available("openssl", "TLS test certificates") || !tool_available("curl", "HTTPS") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    run_ok(
        Command::new("openssl")
            .args(["req", "-x509", "-newkey", "ec", "-pkeyopt"])
            .args(["ec_paramgen_curve:prime256v1", "-nodes", "-days", "2"])
            .args(["-subj", "/CN=localhost"])
            .args(["-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"])
            .arg("-keyout")
            .arg(&key)
            .arg("-out")
            .arg(&cert),
    );
    let (array, expected) = fixture("dense_basic");
    let tree: Arc<dyn FileTree> = Arc::new(open_view(&array, &expected).unwrap());
    let doors = Doors {
        http: loopback(),
        webdav: loopback(),
        s3: loopback(),
        tls: Some(fragfs::serve::tls::TlsFiles {
            cert: cert.clone(),
            key: key.clone(),
        }),
        ..Doors::default()
    };
    let server = Server::start(tree.clone(), &doors, 2).unwrap();
    let urls = server.urls();
    assert!(
        urls.iter().all(|(_, u)| u.starts_with("https://")),
        "{urls:?}"
    );
    let want = read_all(&*tree, tree.resolve("array.json").unwrap()).unwrap();
    let curl = |args: &[&str]| {
        let out = Command::new("curl")
            .args(["-sS", "--fail", "--cacert"])
            .arg(&cert)
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "curl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    };
    let http = server.http_addr().unwrap();
    assert!(curl(&[&format!("https://localhost:{}/array.json", http.port())]) == want);
    let dav = server.webdav_addr().unwrap();
    let listing = curl(&[
        "-X",
        "PROPFIND",
        "-H",
        "Depth: 1",
        &format!("https://127.0.0.1:{}/", dav.port()),
    ]);
    assert!(String::from_utf8_lossy(&listing).contains("<D:multistatus"));
    assert!(curl(&[&format!("https://127.0.0.1:{}/array.json", dav.port())]) == want);
    let (s3, bucket) = server.s3_addr().unwrap();
    assert!(
        curl(&[&format!(
            "https://127.0.0.1:{}/{bucket}/array.json",
            s3.port()
        )]) == want
    );
    if let Some(python) = python_with("boto3") {
        let script = r#"
import sys, boto3
from botocore import UNSIGNED
from botocore.config import Config
c = boto3.client("s3", endpoint_url=sys.argv[1], verify=sys.argv[2], region_name="us-east-1",
                 config=Config(signature_version=UNSIGNED))
keys = [o["Key"] for o in c.list_objects_v2(Bucket=sys.argv[3], Prefix="latest/")["Contents"]]
sys.stdout.buffer.write(c.get_object(Bucket=sys.argv[3], Key="array.json")["Body"].read())
assert keys, keys
"#;
        let got = run_ok(
            Command::new(&python)
                .args(["-c", script])
                .arg(format!("https://127.0.0.1:{}", s3.port()))
                .arg(&cert)
                .arg(&bucket),
        );
        assert!(got.as_bytes() == want, "boto3 over HTTPS");
    }
    // Plain HTTP to a TLS port: no HTTP answer.
    let mut s = TcpStream::connect(http).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    s.write_all(b"GET /array.json HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .unwrap();
    let mut got = Vec::new();
    let _ = s.read_to_end(&mut got);
    assert!(!got.starts_with(b"HTTP/1.1 200"), "plain HTTP answered");
    // A listener with a token but no TLS beyond loopback is warned about.
    let warn = Doors {
        http: Some("0.0.0.0:0".parse().unwrap()),
        token: Some(fragfs::secret::Secret::new("a-token-of-sixteen-bytes")),
        ..Doors::default()
    };
    let warnings = warn.check_access().unwrap();
    assert!(
        warnings.iter().any(|w| w.contains("--tls-cert")),
        "{warnings:?}"
    );
    let quiet = Doors {
        tls: doors.tls.clone(),
        ..warn
    };
    assert!(quiet.check_access().unwrap().is_empty());
}
