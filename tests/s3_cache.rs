//! The disk cache (`--cache-dir`) under S3 arrays: the bytes fetched from object storage
//! are kept there by (endpoint, bucket, key, version), beside the decoded files, so a
//! second mount of an array read once asks the server for listings only; what it serves
//! is what the folder serves; a block damaged on disk is fetched again; and a rewritten
//! object (another ETag, or without ETags in listings, another size or modification
//! time) is never served from its old bytes. Against s3s-fs behind the counting proxy of
//! `tests/common/s3.rs` (which can also play a server whose listings carry ETags).
//!
//! Without s3s-fs every test says why and skips (under CI=true that is a failure).

mod common;

use std::collections::BTreeMap;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use common::mounting::*;
use common::s3::*;
use common::*;
use fragfs::storage::diskcache::{CacheConfig, DiskCache, BLOCK, LAYOUT};
use fragfs::storage::{S3Store, Store};
use fragfs::view::{open_source, FileTree, Ino, Kind, ROOT};

fn fragfs() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_fragfs"));
    aws_env(&mut cmd);
    cmd
}

/// The disk cache in `dir`, opened as a mount opens it (a bound far above what the
/// tests keep).
fn disk_cache(dir: &Path) -> Arc<DiskCache> {
    Arc::new(
        DiskCache::open(&CacheConfig {
            dir: dir.to_path_buf(),
            size: Some(1 << 30),
            decrypted: false,
        })
        .unwrap(),
    )
}

/// An in-process store on `endpoint` rooted at `uri`, keeping what it fetches in the
/// disk cache `dir`.
fn cached_store(endpoint: &str, uri: &str, dir: &Path) -> S3Store {
    S3Store::open(
        uri,
        &options(endpoint, Duration::from_secs(10)),
        32 << 20,
        Some(disk_cache(dir)),
    )
    .unwrap_or_else(|e| panic!("{uri}: {e}"))
}

/// The object GETs the proxy saw (listings aside).
fn gets(proxy: &Proxy) -> Vec<Seen> {
    proxy.seen().into_iter().filter(Seen::is_get).collect()
}

fn listings(proxy: &Proxy) -> usize {
    proxy.seen().iter().filter(|s| s.is_listing()).count()
}

/// Files whose bytes say where the tree is (its location differs between S3 and the
/// folder).
const SAYS_WHERE: [&str; 5] = [
    "array.json",
    "group.json",
    ".zattrs",
    "zarr.json",
    "fragment.json",
];

fn says_where(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    SAYS_WHERE.iter().any(|w| name.ends_with(w))
}

/// What reading a file gave: its bytes, or the errno.
type Read = Result<Vec<u8>, i32>;

/// Every file of `tree` (its path) and what reading it whole gives.
fn walk(tree: &dyn FileTree) -> BTreeMap<String, Read> {
    let mut out = BTreeMap::new();
    let mut stack: Vec<(String, Ino)> = vec![(String::new(), ROOT)];
    while let Some((path, dir)) = stack.pop() {
        for e in tree.list(dir).unwrap_or_else(|e| panic!("{path}/: {e}")) {
            let child = format!("{path}/{}", e.name);
            if e.kind == Kind::Dir {
                stack.push((child, e.ino));
            } else {
                out.insert(child, read_all(tree, e.ino).map_err(|e| e.errno()));
            }
        }
    }
    assert!(out.len() > 3, "{} files", out.len());
    out
}

/// Every file below the mount `mnt` and what reading it whole gives.
fn walk_mount(mnt: &Path) -> BTreeMap<String, Read> {
    files_under(mnt)
        .into_iter()
        .map(|f| {
            let read = std::fs::read(mnt.join(&f)).map_err(|e| e.raw_os_error().unwrap_or(0));
            (format!("/{f}"), read)
        })
        .collect()
}

/// Where `got` and `want` differ (paths, bytes or errnos), files that name their
/// location aside; empty when they agree.
fn differences(got: &BTreeMap<String, Read>, want: &BTreeMap<String, Read>) -> Vec<String> {
    let mut out = Vec::new();
    if got.keys().ne(want.keys()) {
        out.push(format!(
            "other files: {:?} against {:?}",
            got.keys()
                .filter(|k| !want.contains_key(*k))
                .collect::<Vec<_>>(),
            want.keys()
                .filter(|k| !got.contains_key(*k))
                .collect::<Vec<_>>()
        ));
    }
    for (path, read) in got {
        if says_where(path) {
            continue;
        }
        match (read, want.get(path)) {
            (Ok(a), Some(Ok(b))) if a == b => {}
            (Err(a), Some(Err(b))) if a == b => {}
            (read, Some(other)) => out.push(format!(
                "{path}: {:?} against {:?}",
                read.as_ref().map(Vec::len),
                other.as_ref().map(Vec::len)
            )),
            _ => {}
        }
    }
    out
}

/// A tree read directly, without a mount, for the conformance checks.
struct Direct(Arc<dyn FileTree>);

impl Tree for Direct {
    fn fragments(&self) -> Result<Vec<String>, String> {
        Tree::fragments(&*self.0)
    }

    fn read(&self, path: &str) -> Result<Vec<u8>, String> {
        Tree::read(&*self.0, path)
    }
}

/// Every repo fixture opened from S3 through the disk cache, twice, each time by a new
/// store and a new cache over the same folder (as two mounts): both serve every file
/// as the folder does and pass the fixture's truth files, and the second asks the
/// server for no byte (listings only).
#[test]
fn a_second_open_of_cached_s3_arrays_makes_no_get_and_serves_the_same_bytes() {
    let Some(server) = S3Server::start() else {
        return;
    };
    upload(&fixtures(), &server.bucket("fixtures"));
    let proxy = Proxy::start(server.port);
    let cache = tempfile::tempdir().unwrap();
    let merged: std::collections::HashMap<PathBuf, serde_json::Value> =
        merged_files(&fixtures()).into_iter().collect();
    let arrays = expected_files(&fixtures());
    assert!(arrays.len() >= 5);
    let open = |rel: &str, expected: &serde_json::Value| {
        let disk = fragfs::view::open_disk_cache(Some(&CacheConfig {
            dir: cache.path().to_path_buf(),
            size: Some(1 << 30),
            decrypted: false,
        }))
        .unwrap();
        open_source(
            Path::new(&format!("s3://fixtures/{rel}")),
            &options(&proxy.endpoint(), Duration::from_secs(10)),
            options_for(expected),
            Default::default(),
            32 << 20,
            disk,
        )
        .unwrap_or_else(|e| panic!("{rel}: {e}"))
    };
    let mut first = BTreeMap::new();
    let mut failures = Vec::new();
    for (array, expected) in &arrays {
        let rel = array.strip_prefix(fixtures()).unwrap().to_str().unwrap();
        let local =
            fragfs::view::open_tree(array, options_for(expected), Default::default(), 16 << 20)
                .unwrap();
        let tree = open(rel, expected);
        let files = walk(&*tree);
        for d in differences(&files, &walk(&*local)) {
            failures.push(format!("{rel}, first open: {d}"));
        }
        first.insert(rel.to_string(), files);
    }
    let (first_gets, first_listings) = (gets(&proxy).len(), listings(&proxy));
    assert!(first_gets > 0);
    proxy.reset();
    for (array, expected) in &arrays {
        let rel = array.strip_prefix(fixtures()).unwrap().to_str().unwrap();
        let tree = open(rel, expected);
        for d in differences(&walk(&*tree), &first[rel]) {
            failures.push(format!("{rel}, second open: {d}"));
        }
        if let Err(e) = check_tree(&Direct(tree.clone()), expected) {
            failures.push(format!("{rel}, second open: {e}"));
        }
        if let Some(m) = merged.get(array) {
            if let Err(e) = check_merged(&Direct(tree.clone()), m) {
                failures.push(format!("{rel}, second open, merged: {e}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let again = gets(&proxy);
    println!(
        "{} arrays: first open {first_gets} GETs and {first_listings} listings, second \
         open {} GETs and {} listings",
        arrays.len(),
        again.len(),
        listings(&proxy)
    );
    assert!(again.is_empty(), "the second open fetched: {again:?}");
}

/// `fragfs mount --cache-dir` of S3 arrays (plain, var-size and nullable, encrypted
/// without --cache-decrypted, a group), read whole, unmounted, and mounted again: the
/// second mount makes no GET (fragment metadata, schemas, tiles: all from the disk
/// cache), and both serve what the folders serve.
#[test]
fn a_remount_of_a_cached_s3_array_makes_zero_gets() {
    if !fuse_available("remounting S3 arrays with a disk cache") {
        return;
    }
    let Some(server) = S3Server::start() else {
        return;
    };
    let bucket = server.bucket("bkt");
    let mut cases: Vec<(String, PathBuf, Option<String>)> = Vec::new();
    for name in ["dense_2d", "sparse_var_nullable", "encrypted"] {
        let (array, expected) = fixture(name);
        let key = expected["encryption"]["key"].as_str().map(String::from);
        cases.push((name.to_string(), array, key));
    }
    cases.push(("group_nested".into(), features().join("group_nested"), None));
    for (name, local, _) in &cases {
        upload(local, &bucket.join(name));
    }
    let proxy = Proxy::start(server.port);
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let mnt = tmp.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    // Mounts (in the foreground, so the test knows when it ended), reads every file,
    // unmounts.
    let mount_and_read = |name: &str, key: Option<&str>| -> BTreeMap<String, Read> {
        let mut cmd = fragfs();
        cmd.args(["mount", "-f", &format!("s3://bkt/{name}")])
            .arg(&mnt)
            .args(["--endpoint-url", &proxy.endpoint(), "--cache-dir"])
            .arg(&cache)
            .stderr(std::process::Stdio::null());
        if let Some(key) = key {
            cmd.args(["--encryption-key", key]);
        }
        let mut child = cmd.spawn().unwrap();
        let _unmount = UnmountOnDrop(&mnt);
        let start = std::time::Instant::now();
        while !is_mounted(&mnt) {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "{name}: never mounted"
            );
            assert!(child.try_wait().unwrap().is_none(), "{name}: mount failed");
            std::thread::sleep(Duration::from_millis(20));
        }
        let files = walk_mount(&mnt);
        run_ok(fragfs().arg("umount").arg(&mnt));
        assert!(child.wait().unwrap().success(), "{name}: the daemon failed");
        files
    };
    let mut failures = Vec::new();
    let mut first = Vec::new();
    for (name, local, key) in &cases {
        let options = fragfs::array::OpenOptions {
            key: key.as_deref().map(|k| fragfs::array::parse_key(k).unwrap()),
        };
        let local = fragfs::view::open_tree(local, options, Default::default(), 16 << 20).unwrap();
        let files = mount_and_read(name, key.as_deref());
        for d in differences(&files, &walk(&*local)) {
            failures.push(format!("{name}, first mount: {d}"));
        }
        first.push(files);
    }
    let (first_gets, first_listings) = (gets(&proxy).len(), listings(&proxy));
    proxy.reset();
    for ((name, _, key), before) in cases.iter().zip(&first) {
        let files = mount_and_read(name, key.as_deref());
        for d in differences(&files, before) {
            failures.push(format!("{name}, second mount: {d}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let again = gets(&proxy);
    println!(
        "{} arrays mounted twice: first mounts {first_gets} GETs and {first_listings} \
         listings, second mounts {} GETs and {} listings",
        cases.len(),
        again.len(),
        listings(&proxy)
    );
    assert!(first_gets > 0);
    assert!(again.is_empty(), "the second mounts fetched: {again:?}");
}

/// Bytes that differ from block to block, `seed` making other ones.
fn blob(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// The `.data` files of object entries under the cache folder `dir`.
fn object_entries(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.join(LAYOUT).join("objects")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "data") {
                out.push(p);
            }
        }
    }
    out
}

/// A byte flipped in an object's entry on disk is found by its block's CRC: that block
/// alone is fetched again (and kept again), the bytes served are the object's.
#[test]
fn a_damaged_object_block_on_disk_is_fetched_again() {
    let Some(server) = S3Server::start() else {
        return;
    };
    let dir = server.bucket("bkt").join("obj");
    std::fs::create_dir_all(&dir).unwrap();
    let bytes = blob(5 * BLOCK as usize + 1234, 1);
    std::fs::write(dir.join("blob"), &bytes).unwrap();
    let proxy = Proxy::start(server.port);
    let cache = tempfile::tempdir().unwrap();
    let read = || {
        let store = cached_store(&proxy.endpoint(), "s3://bkt/obj", cache.path());
        proxy.reset();
        let got = store.read_all("blob").unwrap();
        assert!(got == bytes, "the object's bytes");
        gets(&proxy)
    };
    assert_eq!(read().len(), 1, "fetched once (under 1 MiB: one part)");
    assert!(read().is_empty(), "then from the disk cache");
    let entries = object_entries(cache.path());
    assert_eq!(entries.len(), 1, "{entries:?}");
    let data = std::fs::OpenOptions::new()
        .write(true)
        .open(&entries[0])
        .unwrap();
    let at = 2 * BLOCK + 77;
    data.write_all_at(&[bytes[at as usize] ^ 0x10], at).unwrap();
    let again = read();
    assert_eq!(again.len(), 1, "{again:?}");
    assert_eq!(
        again[0].range.as_deref(),
        Some(format!("bytes={}-{}", 2 * BLOCK, 3 * BLOCK - 1).as_str()),
        "the damaged block alone"
    );
    assert!(read().is_empty(), "kept again");
}

/// Rewrites the object file `path` with `bytes`, its modification time set to `mtime`.
fn rewrite(path: &Path, bytes: &[u8], mtime: SystemTime) {
    std::fs::write(path, bytes).unwrap();
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
}

/// An object rewritten under the same key (same size) is read anew, never from the
/// bytes kept for its old version: by a new store (a remount) and by a store that
/// lists it again, and when it changes between its listing and its GET. With listings
/// that carry ETags (only the ETag differs: same size, same modification time) and
/// with s3s-fs's own listings, which have none (the modification time differs).
#[test]
fn a_rewritten_object_is_never_served_from_its_old_bytes() {
    let Some(server) = S3Server::start() else {
        return;
    };
    for with_etags in [true, false] {
        let proxy = Proxy::start(server.port);
        if with_etags {
            proxy.list_etags(&server.root);
        }
        let dir = server
            .bucket("bkt")
            .join(if with_etags { "etags" } else { "plain" });
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("blob");
        let uri = format!("s3://bkt/{}", dir.file_name().unwrap().to_str().unwrap());
        let (a, b) = (
            blob(3 * BLOCK as usize + 5, 2),
            blob(3 * BLOCK as usize + 5, 3),
        );
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        // With ETags the modification time stays: the ETag alone tells.
        let t1 = if with_etags {
            t0
        } else {
            t0 + Duration::from_secs(10)
        };
        let what = if with_etags {
            "listed ETags"
        } else {
            "no ETags listed"
        };
        rewrite(&path, &a, t0);
        let cache = tempfile::tempdir().unwrap();
        let store = cached_store(&proxy.endpoint(), &uri, cache.path());
        assert!(store.read_all("blob").unwrap() == a, "{what}");
        // A remount after the rewrite.
        rewrite(&path, &b, t1);
        let store = cached_store(&proxy.endpoint(), &uri, cache.path());
        proxy.reset();
        assert!(store.read_all("blob").unwrap() == b, "{what}: new bytes");
        assert!(!gets(&proxy).is_empty(), "{what}: fetched");
        // Back to the first bytes, seen by a new listing (a refresh): served from the
        // disk, whose entry for that version holds them.
        rewrite(&path, &a, t0);
        store.list("").unwrap();
        proxy.reset();
        assert!(
            store.read_all("blob").unwrap() == a,
            "{what}: old bytes again"
        );
        assert!(gets(&proxy).is_empty(), "{what}: from the disk cache");
        // Rewritten between its listing and the GET: the response does not agree with
        // the listed version (b), so the object is listed again and read anew (a).
        rewrite(&path, &b, t1);
        let fresh = tempfile::tempdir().unwrap();
        let store = cached_store(&proxy.endpoint(), &uri, fresh.path());
        rewrite(&path, &a, t0);
        assert!(
            store.read_all("blob").unwrap() == a,
            "{what}: the bytes there now"
        );
        // Nothing of it was kept under the version first listed: that version, listed
        // by a new store over the same cache, is fetched and is b.
        rewrite(&path, &b, t1);
        let store = cached_store(&proxy.endpoint(), &uri, fresh.path());
        proxy.reset();
        assert!(
            store.read_all("blob").unwrap() == b,
            "{what}: b's entry holds b"
        );
        assert!(!gets(&proxy).is_empty(), "{what}: b was not kept");
    }
}

/// A server whose GET answers never carry the ETag its listings give: each read is
/// right (the bytes the server sends), the first disagreements cost a listing and a GET
/// more, and then the store stops keeping bytes on disk rather than pay that per read.
#[test]
fn a_server_whose_answers_never_agree_with_its_listings_is_read_without_the_disk() {
    let Some(server) = S3Server::start() else {
        return;
    };
    let dir = server.bucket("bkt").join("odd");
    std::fs::create_dir_all(&dir).unwrap();
    let (a, b) = (blob(200_000, 4), blob(300_000, 5));
    std::fs::write(dir.join("a"), &a).unwrap();
    std::fs::write(dir.join("b"), &b).unwrap();
    let proxy = Proxy::start(server.port);
    proxy.list_disagreeing_etags(&server.root);
    let cache = tempfile::tempdir().unwrap();
    let store = cached_store(&proxy.endpoint(), "s3://bkt/odd", cache.path());
    proxy.reset();
    assert!(store.read_all("a").unwrap() == a);
    let first = gets(&proxy).len();
    assert!((2..=3).contains(&first), "{first} GETs");
    proxy.reset();
    assert!(store.read_all("b").unwrap() == b);
    assert_eq!(gets(&proxy).len(), 1, "one GET, no retry");
    assert!(
        object_entries(cache.path()).len() <= 1,
        "{:?}",
        object_entries(cache.path())
    );
    // Nothing disagreeing was kept: a new store (with listed ETags that agree now)
    // fetches both.
    let proxy = Proxy::start(server.port);
    proxy.list_etags(&server.root);
    let store = cached_store(&proxy.endpoint(), "s3://bkt/odd", cache.path());
    proxy.reset();
    assert!(store.read_all("a").unwrap() == a && store.read_all("b").unwrap() == b);
    assert_eq!(gets(&proxy).len(), 2);
}
