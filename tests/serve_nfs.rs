//! `fragfs serve --nfs`: every file of the fixtures and of the shared corpus's sample
//! (`corpus_sample`: every feature of every format version) byte-exact to the tree
//! through an in-process NFSv3 client (tests/common/nfs.rs), sizes never wrong, a real
//! client (libnfs's nfs-ls / nfs-cat / nfs-cp) on a few fixtures, writes refused, and
//! malformed or abandoned calls answered or cut off while others are served. Stale handles after the tree dropped a number: src/serve/nfs/tests.rs.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use common::nfs::{Args, Client, OverNfs, NFS, OK, ROFS};
use common::*;
use fragfs::serve::{Doors, Server};
use fragfs::view::FileTree;

fn serve(tree: Arc<dyn FileTree>) -> Server {
    let doors = Doors {
        nfs: Some("127.0.0.1:0".parse().unwrap()),
        ..Doors::default()
    };
    Server::start(tree, &doors, 2).unwrap()
}

fn served(array: &std::path::Path, expected: &serde_json::Value) -> (Arc<dyn FileTree>, Server) {
    let tree: Arc<dyn FileTree> = Arc::new(open_view(array, expected).unwrap());
    let server = serve(tree.clone());
    (tree, server)
}

/// Every folder listed over NFS (READDIRPLUS, in pages) names what the tree lists, in
/// its order; every file reads the tree's bytes and GETATTR gives its size; attributes
/// a listing sends carry the exact size. `at/` is walked for its first state.
fn check_every_file(tree: &dyn FileTree, client: &Client) -> Result<usize, String> {
    let mut checked = 0;
    let mut stack = vec![(String::new(), client.root.clone())];
    while let Some((path, fh)) = stack.pop() {
        let listed = client
            .list(&fh)
            .map_err(|s| format!("/{path}: READDIRPLUS status {s}"))?;
        let node = tree.resolve(&path).map_err(|e| e.to_string())?;
        let want: Vec<_> = tree.list(node).map_err(|e| e.to_string())?;
        let names: Vec<&str> = listed.iter().map(|(n, _, _)| n.as_str()).collect();
        let want_names: Vec<&str> = want.iter().map(|e| e.name.as_str()).collect();
        if names != want_names {
            return Err(format!(
                "/{path}: listed {names:?}, the tree {want_names:?}"
            ));
        }
        let take = if path == "at" { 1 } else { usize::MAX };
        for ((name, attr, handle), entry) in listed.into_iter().zip(want).take(take) {
            let p = if path.is_empty() {
                name.clone()
            } else {
                format!("{path}/{name}")
            };
            if handle.is_empty() {
                return Err(format!("/{p}: no handle in the listing"));
            }
            if entry.is_dir() {
                stack.push((p, handle));
                continue;
            }
            // In one read (check_tree's reads cross tile boundaries already).
            let bytes = tree
                .size(entry.ino)
                .and_then(|n| tree.read_at(entry.ino, 0, n));
            let got = client.read_all(&handle);
            match (bytes, got) {
                (Ok(b), Ok(g)) => {
                    if b != g {
                        return Err(format!(
                            "/{p}: {} bytes over NFS, the tree {}",
                            g.len(),
                            b.len()
                        ));
                    }
                    let size = client
                        .getattr(&handle)
                        .map_err(|s| format!("/{p}: GETATTR {s}"))?
                        .size;
                    if size != b.len() as u64 {
                        return Err(format!("/{p}: GETATTR size {size} of {}", b.len()));
                    }
                    if let Some(a) = attr {
                        if a.size != size {
                            return Err(format!("/{p}: listed with size {} of {size}", a.size));
                        }
                    }
                }
                (Err(e), Ok(_)) => return Err(format!("/{p}: read over NFS, the tree fails: {e}")),
                (Ok(_), Err(s)) => return Err(format!("/{p}: READ status {s}")),
                (Err(_), Err(_)) => {}
            }
            checked += 1;
        }
    }
    Ok(checked)
}

#[test]
fn every_file_of_the_fixtures_reads_the_same_over_nfs() {
    let (arrays, merged) = fixture_files();
    let merged: std::collections::HashMap<_, _> = merged.into_iter().collect();
    let mut files = 0;
    for (array, expected) in &arrays {
        let (tree, server) = served(array, expected);
        let addr = server.nfs_addr().unwrap();
        let name = array.display();
        let over = OverNfs(Client::connect(addr).unwrap());
        check_tree(&over, expected).unwrap_or_else(|e| panic!("{name}: {e}"));
        if let Some(m) = merged.get(array) {
            check_merged(&over, m).unwrap_or_else(|e| panic!("{name}: merged: {e}"));
        }
        files += check_every_file(&*tree, &over.0).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    println!("{} fixture arrays, {files} files over NFS", arrays.len());
    assert!(files > 500, "only {files} files checked");
}

#[test]
fn the_shared_corpus_reads_the_same_over_nfs() {
    let checked = check_corpus_sample(4, |array, expected, merged| {
        let tree: Arc<dyn FileTree> =
            Arc::new(open_view(array, expected).map_err(|e| e.to_string())?);
        let server = serve(tree.clone());
        let over = OverNfs(Client::connect(server.nfs_addr().unwrap())?);
        check_tree(&over, expected)?;
        if let Some(m) = merged {
            check_merged(&over, m).map_err(|e| format!("merged: {e}"))?;
        }
        // A text file, sized on GETATTR, read as the tree reads it.
        if let Ok(node) = tree.resolve("latest/cells.csv") {
            if let Ok(bytes) = read_all(&*tree, node) {
                let fh = over.0.resolve("latest/cells.csv")?;
                let size = over.0.getattr(&fh).map_err(|s| format!("GETATTR {s}"))?;
                let got = over.0.read_all(&fh).map_err(|s| format!("READ {s}"))?;
                if got != bytes || size.size != bytes.len() as u64 {
                    return Err("latest/cells.csv differs".into());
                }
            }
        }
        Ok(())
    });
    println!("{checked} corpus arrays over NFS");
}

/// libnfs's command-line tools, when installed (scripts/test.sh installs them).
fn libnfs() -> bool {
    let here = Command::new("nfs-cat").output().is_ok();
    if !here {
        skip("libnfs-utils (nfs-ls, nfs-cat, nfs-cp) not installed: the real-client checks");
    }
    here
}

/// A libnfs URL of `path` on the door at `addr` (NFS and MOUNT on the one port). A
/// file at the root is `//name`: libnfs mounts the part before the last slash.
fn url(addr: SocketAddr, path: &str) -> String {
    let port = addr.port();
    let path = if path.contains('/') {
        format!("/{path}")
    } else {
        format!("//{path}")
    };
    format!("nfs://127.0.0.1{path}?version=3&nfsport={port}&mountport={port}")
}

fn plain(path: &str) -> bool {
    path.bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"._-/".contains(&b))
}

/// nfs-cat of files at the root, merged (`latest/`), per fragment, and a text file:
/// the tree's bytes; nfs-ls of `latest/` names what the tree lists.
#[test]
fn a_real_client_reads_the_tree_byte_exact() {
    if !libnfs() {
        return;
    }
    let mut read = 0;
    for name in ["dense_basic", "sparse_var_nullable", "timestamps_deletes"] {
        let (array, expected) = fixture(name);
        let (tree, server) = served(&array, &expected);
        let addr = server.nfs_addr().unwrap();
        let frag = tree.list(tree.resolve("fragments").unwrap()).unwrap()[0]
            .name
            .clone();
        let mut paths = vec!["array.json".to_string(), "schema.json".to_string()];
        for dir in ["latest".to_string(), format!("fragments/{frag}")] {
            let mut stack = vec![dir];
            while let Some(d) = stack.pop() {
                for e in tree.list(tree.resolve(&d).unwrap()).unwrap() {
                    let p = format!("{d}/{}", e.name);
                    if e.is_dir() {
                        stack.push(p);
                    } else {
                        paths.push(p);
                    }
                }
            }
        }
        paths.retain(|p| plain(p));
        assert!(
            paths
                .iter()
                .any(|p| p.ends_with(".txt") || p.ends_with(".csv")),
            "{paths:?}"
        );
        for path in paths.iter().take(40) {
            let want = read_all(&*tree, tree.resolve(path).unwrap()).unwrap();
            let out = Command::new("nfs-cat")
                .arg(url(addr, path))
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{name}: nfs-cat {path}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(
                out.stdout == want,
                "{name}: {path}: {} bytes from nfs-cat, the tree {}",
                out.stdout.len(),
                want.len()
            );
            read += 1;
        }
        let out = Command::new("nfs-ls")
            .arg(url(addr, "latest/"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "nfs-ls: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let listed: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.split_whitespace().last().map(String::from))
            .filter(|n| n != "." && n != "..")
            .collect();
        let mut want: Vec<String> = tree
            .list(tree.resolve("latest").unwrap())
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect();
        let mut listed_sorted = listed.clone();
        listed_sorted.sort();
        want.sort();
        assert_eq!(listed_sorted, want, "{name}: nfs-ls latest/");
    }
    println!("{read} files read with nfs-cat");
}

/// nfs-cp onto the export (a new file, an existing one) fails and changes nothing; so
/// do the protocol's writes sent directly.
#[test]
fn writes_are_refused() {
    let (array, expected) = fixture("dense_basic");
    let (tree, server) = served(&array, &expected);
    let addr = server.nfs_addr().unwrap();
    let client = Client::connect(addr).unwrap();
    let latest = client.resolve("latest").unwrap();
    let file = client.resolve("array.json").unwrap();
    let before = client.read_all(&file).unwrap();
    let calls: [(u32, Args); 6] = [
        (
            7,
            Args::default()
                .opaque(&file)
                .u64(0)
                .u32(3)
                .u32(2)
                .opaque(b"abc"),
        ), // WRITE
        (
            8,
            Args::default()
                .opaque(&latest)
                .opaque(b"new")
                .u32(0)
                .u32(0)
                .u32(0)
                .u32(0)
                .u32(0)
                .u32(0)
                .u32(0),
        ), // CREATE
        (
            9,
            Args::default()
                .opaque(&latest)
                .opaque(b"d")
                .u32(0)
                .u32(0)
                .u32(0)
                .u32(0)
                .u32(0)
                .u32(0),
        ), // MKDIR
        (
            12,
            Args::default().opaque(&client.root).opaque(b"array.json"),
        ), // REMOVE
        (
            14,
            Args::default()
                .opaque(&client.root)
                .opaque(b"array.json")
                .opaque(&latest)
                .opaque(b"x"),
        ), // RENAME
        (
            2,
            Args::default()
                .opaque(&file)
                .u32(0)
                .u32(0)
                .u32(0)
                .u32(1)
                .u64(0)
                .u32(0)
                .u32(0)
                .u32(0),
        ), // SETATTR size 0
    ];
    for (proc_, args) in calls {
        let reply = client.call(NFS, 3, proc_, args).unwrap();
        assert_eq!(common::nfs::Res(&reply).u32(), ROFS, "procedure {proc_}");
    }
    assert_eq!(client.read_all(&file).unwrap(), before);
    assert!(client.lookup(&latest, "new").is_err());
    if !libnfs() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let local = tmp.path().join("local");
    std::fs::write(&local, b"not to be written").unwrap();
    for target in ["latest/new.bin", "array.json"] {
        let out = Command::new("nfs-cp")
            .arg(&local)
            .arg(url(addr, target))
            .output()
            .unwrap();
        assert!(!out.status.success(), "nfs-cp onto {target} succeeded");
    }
    assert_eq!(client.read_all(&file).unwrap(), before);
    assert!(tree.resolve("latest/new.bin").is_err());
}

fn send_raw(addr: SocketAddr, bytes: &[u8]) -> TcpStream {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    s.write_all(bytes).unwrap();
    s
}

/// Closed by the server: a read ends (EOF or reset) rather than waiting 20 s (the
/// server's own timeouts are longer, so only a deliberate close passes).
fn closed(mut s: TcpStream) -> bool {
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut buf = [0; 64];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) => {
                return !matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                )
            }
        }
    }
}

/// A record announcing 2 GiB, a reply sent as a call, a truncated call, and a client
/// that leaves in the middle of reads: answered or cut off, and others are served.
#[test]
fn malformed_and_abandoned_calls_leave_the_server_serving() {
    let (array, expected) = fixture("dense_basic");
    let (tree, server) = served(&array, &expected);
    let addr = server.nfs_addr().unwrap();
    let want = read_all(&*tree, tree.resolve("array.json").unwrap()).unwrap();

    // A 2 GiB record: the connection is closed, nothing is allocated.
    assert!(closed(send_raw(
        addr,
        &[0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4]
    )));
    // A record that is no call (a REPLY): closed.
    assert!(closed(send_raw(
        addr,
        &[0x80, 0, 0, 8, 0, 0, 0, 9, 0, 0, 0, 1]
    )));
    // A READ without its arguments: GARBAGE_ARGS, and the connection goes on.
    let client = Client::connect(addr).unwrap();
    assert_eq!(
        client.call(NFS, 3, 6, Args::default()).unwrap_err(),
        "accept_stat 4"
    );
    assert_eq!(
        client.call(NFS, 2, 0, Args::default()).unwrap_err(),
        "accept_stat 2"
    );
    let fh = client.resolve("array.json").unwrap();
    assert_eq!(client.read_all(&fh).unwrap(), want);

    // Reads sent, then the connection dropped before their replies.
    for _ in 0..5 {
        let mut calls = Vec::new();
        for xid in 0..8u32 {
            let body = Args::default()
                .u32(xid)
                .u32(0)
                .u32(2)
                .u32(NFS)
                .u32(3)
                .u32(6)
                .u32(0)
                .u32(0)
                .u32(0)
                .u32(0)
                .opaque(&fh)
                .u64(0)
                .u32(1 << 20)
                .0;
            calls.extend_from_slice(&((body.len() as u32) | 1 << 31).to_be_bytes());
            calls.extend_from_slice(&body);
        }
        drop(send_raw(addr, &calls));
    }
    let other = Client::connect(addr).unwrap();
    let fh = other.resolve("array.json").unwrap();
    assert_eq!(other.read_all(&fh).unwrap(), want);
    assert_eq!(other.getattr(&fh).unwrap().size, want.len() as u64);
    // Every connection but the two clients' is closed, the abandoned ones included.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while server.connections() > 2 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(server.connections(), 2, "the two clients' connections only");
    // The handle of a name that does not exist.
    assert_eq!(other.lookup(&other.root, "nothing").unwrap_err(), 2);
    let _ = OK;
}

/// READDIR (names only) in small pages lists what the tree lists; a page too small for
/// one entry is NFS3ERR_TOOSMALL; a file is not a folder.
#[test]
fn plain_readdir_pages_through_a_folder() {
    let (array, expected) = fixture("dense_basic");
    let (tree, server) = served(&array, &expected);
    let client = Client::connect(server.nfs_addr().unwrap()).unwrap();
    for path in ["", "latest", "fragments"] {
        let fh = client.resolve(path).unwrap();
        let want: Vec<String> = tree
            .list(tree.resolve(path).unwrap())
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect();
        assert!(want.len() > 1);
        assert_eq!(
            client.names(&fh, 200).unwrap(),
            want,
            "/{path} in small pages"
        );
        assert_eq!(
            client.names(&fh, 65536).unwrap(),
            want,
            "/{path} in one page"
        );
    }
    assert_eq!(client.names(&client.root, 60), Err(10_005), "TOOSMALL");
    let file = client.resolve("array.json").unwrap();
    assert_eq!(client.names(&file, 4096), Err(20), "NOTDIR");
}

#[test]
fn nfs_beyond_loopback_needs_insecure_listen() {
    let mut doors = Doors {
        nfs: Some("0.0.0.0:2049".parse().unwrap()),
        ..Doors::default()
    };
    let e = doors.check_access().unwrap_err().to_string();
    assert!(e.contains("--insecure-listen"), "{e}");
    doors.token = Some(fragfs::secret::Secret::new("a token of 16 bytes or more"));
    assert!(
        doors.check_access().is_err(),
        "a token guards HTTP, not NFS"
    );
    doors.insecure_listen = true;
    assert!(doors.check_access().is_ok());
    doors.insecure_listen = false;
    doors.nfs = Some("127.0.0.1:2049".parse().unwrap());
    assert!(doors.check_access().is_ok());
}
