//! Arrays in S3-compatible object storage, against a real S3 server (s3s-fs, SigV4 on, on
//! 127.0.0.1; scripts/test.sh installs it): TileDB-Py writing, consolidating and
//! vacuuming straight into the bucket under a live mount; the repo fixtures and the
//! shared corpus's sample (`corpus_sample`: every feature of every format version) read
//! the same through `fragfs cat` and the mount as from the folders, per fragment and
//! merged; faults injected by a proxy of the test's own (error statuses retried, a
//! server gone, truncated bodies, wrong lengths, wrong credentials); and what reads and
//! listings cost in requests, counted by that proxy.
//!
//! Without s3s-fs every test says why and skips (under CI=true that is a failure).

mod common;

use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::mounting::*;
use common::s3::*;
use common::*;
use fragfs::storage::{S3Store, Store};
use fragfs::view::{open_store, FileTree};

fn fragfs() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_fragfs"));
    aws_env(&mut cmd);
    cmd
}

/// An in-process store on `endpoint` (the server or the proxy) rooted at `uri`.
fn store(endpoint: &str, uri: &str, retry: Duration) -> Arc<S3Store> {
    Arc::new(
        S3Store::open(uri, &options(endpoint, retry), 32 << 20, None)
            .unwrap_or_else(|e| panic!("{uri}: {e}")),
    )
}

/// A tree read directly, without a mount, for the checks.
struct Direct(Arc<dyn FileTree>);

impl Tree for Direct {
    fn fragments(&self) -> Result<Vec<String>, String> {
        Tree::fragments(&*self.0)
    }

    fn read(&self, path: &str) -> Result<Vec<u8>, String> {
        Tree::read(&*self.0, path)
    }
}

/// The name of the one fragment of the array folder `dir`.
fn only_fragment(dir: &Path) -> String {
    let names: Vec<String> = std::fs::read_dir(dir.join("__fragments"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");
    names[0].clone()
}

#[test]
fn repo_fixtures_read_the_same_through_s3_cat_and_mount() {
    let Some(server) = S3Server::start() else {
        return;
    };
    upload(&fixtures(), &server.bucket("fixtures"));
    let root = store(&server.endpoint(), "s3://fixtures", Duration::from_secs(10));
    let merged: std::collections::HashMap<PathBuf, serde_json::Value> =
        merged_files(&fixtures()).into_iter().collect();
    let mut failures = Vec::new();
    let arrays = expected_files(&fixtures());
    assert!(arrays.len() >= 5);
    for (array, expected) in &arrays {
        let rel = array.strip_prefix(fixtures()).unwrap().to_str().unwrap();
        let result = check_through_s3(
            &server,
            &root,
            rel,
            array,
            expected,
            merged.get(array),
            true,
        );
        if let Err(e) = result {
            failures.push(format!("{rel}: {e}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The array at `rel` of the bucket under `root` against its local folder `array`:
/// every expected field of every fragment and every merged read through a mount of
/// the S3 tree (or, without FUSE, the tree itself), and `fragfs cat` of the latest
/// cells and `fragfs ls -lR` (names and exact sizes) as from the folder.
fn check_through_s3(
    server: &S3Server,
    root: &Arc<S3Store>,
    rel: &str,
    array: &Path,
    expected: &serde_json::Value,
    merged: Option<&serde_json::Value>,
    with_cat: bool,
) -> Result<(), String> {
    // `with_cat`: also through a FUSE mount and `fragfs cat` (a process and a mount per
    // array cost more than the rest of the check).
    let sub = root.sub(rel).map_err(|e| e.to_string())?;
    let tree =
        open_store(sub, options_for(expected), 32 << 20).map_err(|e| format!("open: {e}"))?;
    // `fragfs ls -lR` (names and exact sizes; the same code as the command) of the S3
    // tree, as of the folder, both fresh (a text file's size shows once it was read). These files say where the array is: their sizes differ.
    let local = open_view(array, expected).map_err(|e| format!("open the folder: {e}"))?;
    let shown = |tree: &dyn FileTree| -> Result<Vec<String>, String> {
        let text = fragfs::ls::list(tree, fragfs::view::ROOT, "/", true, true)
            .map_err(|e| format!("ls -lR: {e}"))?;
        let says_where = ["array.json", "group.json", ".zattrs", "zarr.json"];
        Ok(text
            .lines()
            .filter(|l| !says_where.iter().any(|w| l.ends_with(w)))
            .map(String::from)
            .collect())
    };
    if shown(&*tree)? != shown(&local)? {
        return Err("ls -lR differs through S3".into());
    }
    // Through a mount of the S3 tree where asked (`with_cat`: the corpus test's sample),
    // else the tree itself: what S3 adds is below the tree, and the mount's own path
    // is checked on every array by the mount tests.
    if with_cat && fuse_available("S3 mounts") {
        let mount = TreeMount::new(tree.clone());
        let mounted = Mounted(mount.path().to_path_buf());
        check_tree(&mounted, expected).map_err(|e| format!("mount: {e}"))?;
        if let Some(m) = merged {
            check_merged(&mounted, m).map_err(|e| format!("mount, merged: {e}"))?;
        }
    } else {
        check_tree(&Direct(tree.clone()), expected).map_err(|e| format!("tree: {e}"))?;
        if let Some(m) = merged {
            check_merged(&Direct(tree.clone()), m).map_err(|e| format!("tree, merged: {e}"))?;
        }
    }
    // `fragfs cat` of the latest cells, by the command, as from the folder: a process
    // per array costs more than the rest of the check, so the corpus test asks it of a
    // sample (`with_cat`); the tree it reads is the one checked above.
    if !with_cat {
        return Ok(());
    }
    let uri = format!("{}/{rel}", root.uri());
    let mut cat = fragfs();
    cat.args([
        "cat",
        &uri,
        "latest/cells.csv",
        "--endpoint-url",
        &server.endpoint(),
    ]);
    if let Some(k) = expected["encryption"]["key"].as_str() {
        cat.args(["--encryption-key", k]);
    }
    let through_s3 = cat.output().unwrap();
    let from_folder = local
        .resolve("latest/cells.csv")
        .and_then(|node| read_all(&local, node));
    match (through_s3.status.success(), from_folder) {
        (true, Ok(bytes)) if through_s3.stdout == bytes => {}
        (true, Ok(_)) => return Err("cat latest/cells.csv differs through S3".into()),
        (false, Err(_)) => {}
        (_, from_folder) => {
            return Err(format!(
                "cat latest/cells.csv: through S3: {}; from the folder: {:?}",
                String::from_utf8_lossy(&through_s3.stderr).trim(),
                from_folder.map(|b| b.len())
            ))
        }
    }
    Ok(())
}

#[test]
fn the_shared_corpus_reads_the_same_through_s3_cat_and_mount() {
    let Some(corpus) = shared_or_skip(shared_corpus()) else {
        return;
    };
    let Some(server) = S3Server::start() else {
        return;
    };
    upload(&corpus, &server.bucket("corpus"));
    let root = store(&server.endpoint(), "s3://corpus", Duration::from_secs(10));
    // The corpus_sample: what S3 adds (listings, ranged reads of every kind of file of
    // every format version's folder) is what it adds to the tree; all 525 arrays are
    // read through the tree and through mounts by the other suites.
    let (arrays, merged) = corpus_sample(&corpus);
    let merged: std::collections::HashMap<_, _> = merged.into_iter().collect();
    // Arrays on several threads: each check mostly waits for the server (a signed request
    // costs it ~11 ms), so requests in flight together cut the test's time (340 s with
    // 4 threads, 182 s with 8, on 2 cores).
    let failures = std::sync::Mutex::new(Vec::new());
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..16 {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some((array, expected)) = arrays.get(i) else {
                    return;
                };
                let rel = array.strip_prefix(&corpus).unwrap().to_str().unwrap();
                let merged = merged.get(array);
                // `fragfs cat` on every eighth array and every encrypted one (its key
                // goes through the command line).
                let with_cat = i.is_multiple_of(8) || expected["encryption"]["key"].is_string();
                let checked =
                    check_through_s3(&server, &root, rel, array, expected, merged, with_cat);
                if let Err(e) = checked {
                    failures.lock().unwrap().push(format!("{rel}: {e}"));
                }
            });
        }
    });
    let mut failures = failures.into_inner().unwrap();
    failures.sort();
    println!("{} corpus arrays through S3", arrays.len());
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// What the S3 server may add to the refresh interval before a change shows.
const SLACK: Duration = Duration::from_secs(30);

/// TileDB-Py writes, consolidates and vacuums an array in the bucket while `fragfs
/// mount` (the daemon) shows it: new fragments appear and vacuumed ones vanish.
#[test]
fn tiledb_writes_consolidates_and_vacuums_in_the_bucket_under_a_live_mount() {
    if !fuse_available("live S3 mount") {
        return;
    }
    let Some(python) = python_with("tiledb") else {
        return;
    };
    let Some(server) = S3Server::start() else {
        return;
    };
    server.bucket("live");
    let uri = "s3://live/arrays/live";
    let tiledb = |args: &[&str]| {
        let mut cmd = Command::new(&python);
        aws_env(&mut cmd)
            .env("FRAGFS_TEST_S3_ENDPOINT", server.endpoint())
            .arg(repo().join("tests/tiledb_ops.py"))
            .args(args);
        run_ok(&mut cmd);
    };
    tiledb(&["create", uri]);
    tiledb(&["write", uri, "1"]);
    tiledb(&["write", uri, "2"]);
    let tmp = tempfile::tempdir().unwrap();
    let mnt = tmp.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let log = tmp.path().join("fragfs.log");
    run_ok(
        fragfs()
            .args(["mount", uri])
            .arg(&mnt)
            .arg("-o")
            .arg(format!(
                "endpoint_url={},region={REGION}",
                server.endpoint()
            ))
            .arg("--log-file")
            .arg(&log),
    );
    let _unmount = UnmountOnDrop(&mnt);
    let first = wait_for(&mnt, "the first two", SLACK, |n| n.len() == 2);
    assert_eq!(
        v_values(&mnt, &first[0]),
        (0..10).map(|x| 1000 + x).collect::<Vec<_>>()
    );
    tiledb(&["write", uri, "3"]);
    let three = wait_for(&mnt, "a new fragment", SLACK, |n| n.len() == 3);
    let new = three.iter().find(|n| !first.contains(n)).unwrap();
    assert_eq!(
        v_values(&mnt, new),
        (20..30).map(|x| 3000 + x).collect::<Vec<_>>()
    );
    tiledb(&["consolidate", uri]);
    tiledb(&["vacuum", uri]);
    let after = wait_for(&mnt, "vacuum", SLACK, |n| {
        n.len() == 1 && !three.contains(&n[0])
    });
    assert_eq!(
        &v_values(&mnt, &after[0])[..30],
        (0..30).map(|x| 1000 * (x / 10 + 1) + x).collect::<Vec<_>>()
    );
    let merged = std::fs::read(mnt.join("latest/v/values.bin")).unwrap();
    assert_eq!(
        merged.len(),
        30 * 8,
        "the merged view follows (x in 0..30 written)"
    );
    assert!(is_mounted(&mnt), "the daemon is alive");
}

/// A dense array of 16 tiles of 2 MiB (random int64, ZSTD: chunks of 64 KiB), written by
/// TileDB-Py into `dir` (a folder in a bucket).
fn write_tiled_array(python: &str, dir: &Path) {
    let script = r#"
import sys, numpy as np, tiledb
uri = sys.argv[1]
dom = tiledb.Domain(tiledb.Dim("x", domain=(0, 16 * 262144 - 1), tile=262144, dtype=np.int64))
schema = tiledb.ArraySchema(domain=dom, sparse=False,
    attrs=[tiledb.Attr("v", dtype=np.int64, filters=[tiledb.ZstdFilter()])])
tiledb.Array.create(uri, schema)
with tiledb.open(uri, "w", timestamp=1) as A:
    A[:] = {"v": np.random.default_rng(7).integers(0, 2**62, 16 * 262144)}
"#;
    run_ok(Command::new(python).args(["-c", script]).arg(dir));
}

/// The on-disk size of each tile of `file` (`a0.tdb`, ...) of fragment `frag`, from its
/// `tiles.json` in `tree`.
fn tile_sizes(tree: &dyn FileTree, frag: &str, file: &str) -> Vec<u64> {
    let node = tree
        .resolve(&format!("fragments/{frag}/tiles.json"))
        .unwrap();
    let json: serde_json::Value = serde_json::from_slice(&read_all(tree, node).unwrap()).unwrap();
    fn collect(v: &serde_json::Value, file: &str, out: &mut Vec<u64>) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, v) in m {
                    match v["size"].as_u64() {
                        Some(size) if k == file => out.push(size),
                        _ => collect(v, file, out),
                    }
                }
            }
            serde_json::Value::Array(a) => a.iter().for_each(|v| collect(v, file, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    collect(&json, file, &mut out);
    out
}

/// A 4 KiB read in a cold tile fetches the tile (its chunk headers lie between its
/// chunks, and its bytes then serve the chunk) as ranged parts of at most 1 MiB issued
/// together: at most ceil(tile MiB) GETs and one more, all in flight at once at the
/// proxy (which holds them until as many as the tile's parts have come: GETs issued
/// one after another would never meet there), whether read from the tree or through
/// the mount by a random reader (no read-ahead).
#[test]
fn a_random_4k_read_of_a_cold_tile_fetches_it_in_parallel_parts() {
    let Some(python) = python_with("tiledb") else {
        return;
    };
    let Some(server) = S3Server::start() else {
        return;
    };
    let local = server.bucket("bkt").join("tiled");
    write_tiled_array(&python, &local);
    let proxy = Proxy::start(server.port);
    let s = store(&proxy.endpoint(), "s3://bkt/tiled", Duration::from_secs(10));
    let tree = open_store(s, Default::default(), 64 << 20).unwrap();
    let frag = only_fragment(&local);
    let path = format!("fragments/{frag}/v/values.bin");
    let node = tree.resolve(&path).unwrap();
    let local_tree =
        fragfs::view::open_tree(&local, Default::default(), Default::default(), 16 << 20).unwrap();
    let want = |offset: u64| {
        local_tree
            .read_at(local_tree.resolve(&path).unwrap(), offset, 4096)
            .unwrap()
    };
    let tiles = tile_sizes(&*local_tree, &frag, "a0.tdb");
    assert_eq!(tiles.len(), 16, "{tiles:?}");
    // The tile's parts: ceil(its MiB); the random data keeps them over 1 MiB.
    let parts = |k: u64| tiles[k as usize].div_ceil(1 << 20) as usize;
    // The first read loads the fragment's metadata and the tile offsets.
    tree.read_at(node, 0, 4096).unwrap();
    let tile = 2 << 20;
    let check = |k: u64, what: &str| {
        let gets: Vec<Seen> = proxy
            .seen()
            .into_iter()
            .filter(|r| r.method != "LIST")
            .collect();
        assert!(gets.iter().all(Seen::is_get), "{gets:?}");
        assert!(parts(k) >= 2, "tile {k}: {} bytes", tiles[k as usize]);
        assert!(
            gets.len() >= parts(k) && gets.len() <= parts(k) + 1,
            "{what}, tile {k} ({} bytes): {gets:?}",
            tiles[k as usize]
        );
        assert!(
            proxy.max_in_flight() >= parts(k),
            "{what}, tile {k}: the parts were not in flight together: {gets:?}"
        );
        println!(
            "{what}: a cold 4 KiB read in tile {k} ({} bytes): {} GETs, {} in flight at once",
            tiles[k as usize],
            gets.len(),
            proxy.max_in_flight()
        );
    };
    for (k, within) in [(9u64, 12345u64), (3, 1 << 20), (14, tile - 4096)] {
        proxy.reset();
        proxy.hold_gets(parts(k));
        let offset = k * tile + within;
        assert_eq!(tree.read_at(node, offset, 4096).unwrap(), want(offset));
        check(k, "tree");
    }
    if !fuse_available("random reads through an S3 mount") {
        return;
    }
    let mount = TreeMount::new(tree.clone());
    let file = std::fs::File::open(mount.path().join(&path)).unwrap();
    use std::os::fd::AsRawFd;
    // SAFETY: posix_fadvise takes an open descriptor and integers, no memory.
    let advised = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_RANDOM) };
    assert_eq!(advised, 0);
    for k in [5u64, 11] {
        proxy.reset();
        proxy.hold_gets(parts(k));
        let offset = k * tile + 8192;
        let mut buf = vec![0u8; 4096];
        file.read_exact_at(&mut buf, offset).unwrap();
        assert_eq!(buf, want(offset));
        check(k, "mounted");
    }
}

/// A sequential reader gets its next bytes fetched ahead, in windows that grow from
/// about 1 MiB: reading a whole file costs far fewer requests than its tiles, and the
/// bytes are right.
#[test]
fn a_sequential_reader_reads_ahead_in_growing_windows() {
    let Some(python) = python_with("tiledb") else {
        return;
    };
    let Some(server) = S3Server::start() else {
        return;
    };
    let local = server.bucket("bkt").join("tiled");
    write_tiled_array(&python, &local);
    let proxy = Proxy::start(server.port);
    let s = store(&proxy.endpoint(), "s3://bkt/tiled", Duration::from_secs(10));
    let tree = open_store(s.clone(), Default::default(), 256 << 20).unwrap();
    let frag = only_fragment(&local);
    let path = format!("fragments/{frag}/v/values.bin");
    let node = tree.resolve(&path).unwrap();
    let size = tree.size(node).unwrap();
    proxy.reset();
    let mut got = Vec::new();
    while (got.len() as u64) < size {
        let part = tree.read_at(node, got.len() as u64, 128 << 10).unwrap();
        assert!(!part.is_empty());
        got.extend(part);
    }
    let local_tree =
        fragfs::view::open_tree(&local, Default::default(), Default::default(), 16 << 20).unwrap();
    assert!(got == read_all(&*local_tree, local_tree.resolve(&path).unwrap()).unwrap());
    let lens: Vec<u64> = proxy
        .seen()
        .iter()
        .filter(|r| r.is_get())
        .filter_map(|r| r.range.as_ref())
        .filter_map(|r| {
            let (a, b) = r.strip_prefix("bytes=")?.split_once('-')?;
            Some(b.parse::<u64>().ok()? + 1 - a.parse::<u64>().ok()?)
        })
        .collect();
    assert!(
        lens.iter().any(|&l| l > 2 << 20),
        "windows grow past a tile: {lens:?}"
    );
}

/// 500s and 503 SlowDown are retried and the read succeeds; truncated bodies and wrong
/// lengths are errors (never short or wrong bytes); a server gone for longer than the
/// retry budget gives EIO naming the bucket, key and range, while what was read before
/// still reads, and reads work again once it is back.
#[test]
fn faults_are_retried_or_reported_never_served_as_bytes() {
    let Some(server) = S3Server::start() else {
        return;
    };
    let (array, expected) = fixture("dense_2d");
    upload(&array, &server.bucket("bkt").join("dense_2d"));
    let proxy = Proxy::start(server.port);
    let budget = Duration::from_secs(2);
    let s = store(&proxy.endpoint(), "s3://bkt/dense_2d", budget);
    let tree = open_store(s, options_for(&expected), 16 << 20).unwrap();
    let local = open_view(&array, &expected).unwrap();
    let frag = first_fragment(&expected);
    let file = |field: &str| format!("fragments/{frag}/{field}/values.bin");
    let check = |field: &str| -> fragfs::Result<()> {
        let got = read_all(&*tree, tree.resolve(&file(field))?)?;
        assert_eq!(
            got,
            read_all(&local, local.resolve(&file(field)).unwrap()).unwrap(),
            "{field}"
        );
        Ok(())
    };
    // Error statuses: retried, then the right bytes.
    proxy.inject(&[Fault::Status(500), Fault::Status(503), Fault::Status(500)]);
    check("plain").unwrap();
    assert_eq!(proxy.faults_left(), 0, "every fault was met");
    // A body cut short: the rest is asked for again (from where it stopped), and the
    // bytes are right.
    proxy.inject(&[Fault::Truncate; 3]);
    check("pd_bwr_lz4").unwrap();
    assert_eq!(proxy.faults_left(), 0, "every fault was met");
    // Bodies that never come, or declared short: errors, every time, until they stop.
    for (fault, field) in [
        (Fault::Cut, "bs_dd_zstd"),
        (Fault::ShortLength, "f32_delta_zstd"),
    ] {
        proxy.inject(&[fault; 200]);
        let err = check(field).unwrap_err();
        assert_eq!(err.errno(), libc::EIO, "{fault:?}: {err}");
        assert!(
            err.to_string().contains("s3://bkt/dense_2d/__fragments/"),
            "{err}"
        );
        proxy.clear_faults();
        check(field).unwrap();
    }
    // Gone for longer than the budget: EIO after the budget, naming bucket, key, range.
    check("md5_i16").unwrap();
    proxy.set_down(true);
    let start = Instant::now();
    let err = check("sha_gzip_f64").unwrap_err();
    let took = start.elapsed();
    assert_eq!(err.errno(), libc::EIO, "{err}");
    let text = err.to_string();
    assert!(
        text.contains("s3://bkt/dense_2d/__fragments/") && text.contains(" bytes "),
        "{text}"
    );
    assert!(
        took >= budget && took < budget + Duration::from_secs(20),
        "{took:?}: {text}"
    );
    check("md5_i16").unwrap();
    proxy.set_down(false);
    check("sha_gzip_f64").unwrap();

    // The same through a mount: the serving daemon survives, serves what it read, and
    // recovers.
    if !fuse_available("faults through an S3 mount") {
        return;
    }
    let s = store(&proxy.endpoint(), "s3://bkt/dense_2d", budget);
    let tree = open_store(s, options_for(&expected), 16 << 20).unwrap();
    let mount = TreeMount::new(tree);
    let read = |field: &str| std::fs::read(mount.path().join(file(field)));
    let before = read("plain").unwrap();
    proxy.set_down(true);
    let err = read("f32_delta_zstd").unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EIO), "{err}");
    assert_eq!(read("plain").unwrap(), before);
    proxy.set_down(false);
    assert_eq!(
        read("f32_delta_zstd").unwrap(),
        read_all(&local, local.resolve(&file("f32_delta_zstd")).unwrap()).unwrap()
    );
}

/// Wrong credentials, a missing bucket or prefix and an unreachable endpoint: one line
/// on stderr and exit 1, from `ls` and from `mount` alike (which then mounts nothing).
#[test]
fn bad_credentials_buckets_prefixes_and_endpoints_are_one_line() {
    let Some(server) = S3Server::start() else {
        return;
    };
    let (array, _) = fixture("sample");
    upload(&array, &server.bucket("bkt").join("sample"));
    let unreachable = format!("http://127.0.0.1:{}", {
        std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
    });
    let mnt = tempfile::tempdir().unwrap();
    let cases: [(&str, String, Option<&str>, &[&str]); 4] = [
        (
            "s3://bkt/sample",
            server.endpoint(),
            Some("wrong"),
            &["403", "credentials"],
        ),
        (
            "s3://nobucket/sample",
            server.endpoint(),
            None,
            &["NoSuchBucket"],
        ),
        (
            "s3://bkt/samp",
            server.endpoint(),
            None,
            &["nothing there", "samp/"],
        ),
        (
            "s3://bkt/sample",
            unreachable,
            None,
            &["Connection refused", "retries"],
        ),
    ];
    for (uri, endpoint, secret, words) in cases {
        for mount in [false, true] {
            let mut cmd = fragfs();
            if mount {
                cmd.args(["mount", uri]).arg(mnt.path());
            } else {
                cmd.args(["ls", uri]);
            }
            cmd.args(["--endpoint-url", &endpoint, "--retry-timeout", "1s"]);
            if let Some(secret) = secret {
                cmd.env("AWS_SECRET_ACCESS_KEY", secret);
            }
            let out = cmd.output().unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{uri}: {stderr}");
            assert_eq!(stderr.lines().count(), 1, "{uri}: {stderr}");
            assert_names(&stderr, words);
            assert!(!is_mounted(mnt.path()));
        }
    }
    // And the right keys work.
    run_ok(fragfs().args([
        "ls",
        "s3://bkt/sample",
        "--endpoint-url",
        &server.endpoint(),
    ]));
}

/// Mounting an array of 10,000 fragments and listing them (`ls -l fragments/`) costs
/// listings (and the schema), never a request per fragment.
#[test]
fn mounting_and_listing_10000_fragments_costs_listings_only() {
    if !fuse_available("10,000 fragments over S3") {
        return;
    }
    let Some(server) = S3Server::start() else {
        return;
    };
    // The fixture `sample`'s schema and first fragment, as 10,000 fragments.
    let dir = server.bucket("bkt").join("many");
    const N: u64 = 10_000;
    many_fragments(&dir, N, 1);
    let proxy = Proxy::start(server.port);
    let tmp = tempfile::tempdir().unwrap();
    let mnt = tmp.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    run_ok(
        fragfs()
            .args(["mount", "s3://bkt/many"])
            .arg(&mnt)
            .args(["--endpoint-url", &proxy.endpoint()]),
    );
    let _unmount = UnmountOnDrop(&mnt);
    let listed: Vec<_> = std::fs::read_dir(mnt.join("fragments"))
        .unwrap()
        .map(|e| e.unwrap())
        .collect();
    assert_eq!(listed.len(), N as usize);
    for e in &listed {
        e.metadata().unwrap();
    }
    let seen = proxy.seen();
    let listings = seen.iter().filter(|r| r.is_listing()).count();
    let others: Vec<&Seen> = seen.iter().filter(|r| !r.is_listing()).collect();
    let schemas = std::fs::read_dir(dir.join("__schema")).unwrap().count();
    // The mount checks the array, then its daemon opens it: each reads every schema once.
    assert!(
        others
            .iter()
            .all(|r| r.method == "GET" && r.target.contains("/__schema/")),
        "{others:?}"
    );
    assert!(others.len() <= 2 * schemas, "{others:?}");
    // __commits/ and __fragments/ take 10 pages each, per scan of the array: the
    // mount's check, the daemon's open, and a refresh whenever the list is older than
    // the refresh interval (as often as the machine is slow: not counted here). A scan
    // starts with a first page of __fragments/ (no continuation token); one more may
    // be under way, its __commits/ pages listed.
    let scans = seen
        .iter()
        .filter(|r| {
            r.is_listing()
                && r.target.contains("__fragments")
                && !r.target.contains("continuation-token")
        })
        .count();
    assert!(scans >= 1, "{scans} scans");
    assert!(
        listings <= 25 * (scans + 1),
        "{listings} listings in {scans} scans"
    );
    println!(
        "{N} fragments: {listings} listings in {scans} scans, {} GETs",
        others.len()
    );
}

/// Groups (nested, SOMA), enumerations, dimension labels, Zarr views and a Filo fragment
/// serve the same files with the same bytes through S3 as from their folders: both
/// mounted, every file read.
#[test]
fn groups_zarr_and_filo_read_the_same_through_s3() {
    if !fuse_available("groups, Zarr and Filo through S3") {
        return;
    }
    let Some(server) = S3Server::start() else {
        return;
    };
    let cases = [
        features().join("group_nested"),
        features().join("soma_experiment"),
        features().join("enumerations"),
        features().join("dimension_labels"),
        fixtures().join("dense_2d"),
        repo().join("tests/fixtures/filo/fragment"),
    ];
    let bucket = server.bucket("trees");
    for (i, local) in cases.iter().enumerate() {
        upload(local, &bucket.join(i.to_string()));
    }
    let root = store(&server.endpoint(), "s3://trees", Duration::from_secs(10));
    // These files say where the tree is.
    let says_where = [
        "array.json",
        "group.json",
        ".zattrs",
        "zarr.json",
        "fragment.json",
    ];
    for (i, local) in cases.iter().enumerate() {
        let s3_tree = open_store(
            root.sub(&i.to_string()).unwrap(),
            Default::default(),
            16 << 20,
        )
        .unwrap_or_else(|e| panic!("{}: {e}", local.display()));
        let local_tree =
            fragfs::view::open_tree(local, Default::default(), Default::default(), 16 << 20)
                .unwrap();
        let (a, b) = (TreeMount::new(s3_tree), TreeMount::new(local_tree));
        let files = files_under(b.path());
        assert_eq!(files_under(a.path()), files, "{}", local.display());
        assert!(files.len() > 3);
        for f in &files {
            let name = f.rsplit('/').next().unwrap_or(f);
            if says_where.iter().any(|w| name.ends_with(w)) {
                continue;
            }
            let (x, y) = (
                std::fs::read(a.path().join(f)),
                std::fs::read(b.path().join(f)),
            );
            match (x, y) {
                (Ok(x), Ok(y)) => assert!(x == y, "{}: {f}", local.display()),
                (x, y) => assert_eq!(
                    x.map_err(|e| e.raw_os_error()),
                    y.map_err(|e| e.raw_os_error()),
                    "{}: {f}",
                    local.display()
                ),
            }
        }
    }
}

/// SIGTERM while a request hangs on a server that never answers: the daemon ends within
/// seconds (its grace period, then it ends the connection), the reader gets an error
/// instead of waiting in the kernel, and the mount is gone.
#[test]
fn sigterm_ends_a_daemon_whose_request_hangs_on_the_server() {
    if !fuse_available("SIGTERM during a hung request") {
        return;
    }
    stop_while_a_request_hangs(|child, _| {
        // SAFETY: sending a signal to our own child process.
        assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    });
}

/// The same with `fragfs umount`: the busy mount is detached at once, and the daemon,
/// which the kernel would keep until the hung request ends (minutes of retries), sees
/// its mount leave the mount table and ends within its grace period.
#[test]
fn fragfs_umount_ends_a_daemon_whose_request_hangs_on_the_server() {
    if !fuse_available("fragfs umount during a hung request") {
        return;
    }
    stop_while_a_request_hangs(|_, mnt| {
        let out = fragfs().arg("umount").arg(mnt).output().unwrap();
        assert!(out.status.success(), "{out:?}");
    });
}

/// Mounts an array of an S3 server behind a proxy, makes a read hang there, stops the
/// daemon with `stop`, and checks it ends within seconds, failing the read.
fn stop_while_a_request_hangs(stop: impl FnOnce(&std::process::Child, &Path)) {
    let Some(server) = S3Server::start() else {
        return;
    };
    let (array, expected) = fixture("sample");
    upload(&array, &server.bucket("bkt").join("sample"));
    let proxy = Proxy::start(server.port);
    let tmp = tempfile::tempdir().unwrap();
    let mnt = tmp.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let mut child = fragfs()
        .args(["mount", "-f", "s3://bkt/sample"])
        .arg(&mnt)
        .arg("-o")
        .arg(format!("endpoint_url={},region={REGION}", proxy.endpoint()))
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let _unmount = UnmountOnDrop(&mnt);
    let start = std::time::Instant::now();
    while !is_mounted(&mnt) {
        assert!(start.elapsed() < Duration::from_secs(30), "never mounted");
        std::thread::sleep(Duration::from_millis(20));
    }
    // Every object GET from now on hangs.
    proxy.inject(&[Fault::Stall; 64]);
    let gets = proxy.seen().iter().filter(|s| s.is_get()).count();
    let file = mnt.join(format!(
        "fragments/{}/{}/values.bin",
        first_fragment(&expected),
        expected["fragments"][0]["fields"][0]["name"]
            .as_str()
            .unwrap()
    ));
    let reader = std::thread::spawn(move || std::fs::read(file));
    // The read reached the server (and hangs there).
    while proxy.seen().iter().filter(|s| s.is_get()).count() == gets {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the read never reached the server"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let signalled = std::time::Instant::now();
    stop(&child, &mnt);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        // The grace period (3 s) and a wide margin for a loaded machine; without the
        // grace the daemon waits for the server's timeouts and retries (minutes).
        assert!(
            signalled.elapsed() < Duration::from_secs(20),
            "the daemon still runs {:?} after it was told to stop",
            signalled.elapsed()
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "exit {status}");
    assert!(
        reader.join().unwrap().is_err(),
        "the hung read ends in an error"
    );
    assert!(!is_mounted(&mnt), "the mount is gone");
    proxy.clear_faults();
}

/// `tiles.json` needs the chunk headers only: on S3 a tile of one chunk costs a GET of
/// its first 20 bytes, not the whole tile (16 tiles of 32 KiB here: about 320 bytes of
/// data file fetched instead of 512 KiB).
#[test]
fn tiles_json_on_s3_fetches_chunk_headers_not_tiles() {
    let Some(python) = python_with("tiledb") else {
        return;
    };
    let Some(server) = S3Server::start() else {
        return;
    };
    let local = server.bucket("bkt").join("small_tiles");
    let script = r#"
import sys, numpy as np, tiledb
uri = sys.argv[1]
dom = tiledb.Domain(tiledb.Dim("x", domain=(0, 16 * 4096 - 1), tile=4096, dtype=np.int64))
schema = tiledb.ArraySchema(domain=dom, sparse=False,
    attrs=[tiledb.Attr("v", dtype=np.int64, filters=[tiledb.ZstdFilter()])])
tiledb.Array.create(uri, schema)
with tiledb.open(uri, "w", timestamp=1) as A:
    A[:] = {"v": np.random.default_rng(3).integers(0, 2**62, 16 * 4096)}
"#;
    run_ok(Command::new(&python).args(["-c", script]).arg(&local));
    let frag = only_fragment(&local);
    let data = local.join("__fragments").join(&frag).join("a0.tdb");
    let data_len = std::fs::metadata(&data).unwrap().len();
    assert!(
        data_len > 16 * 16_000,
        "the tiles hold random data: {data_len} bytes"
    );
    let proxy = Proxy::start(server.port);
    let s = store(
        &proxy.endpoint(),
        "s3://bkt/small_tiles",
        Duration::from_secs(10),
    );
    let tree = open_store(s, Default::default(), 64 << 20).unwrap();
    let json: serde_json::Value = serde_json::from_slice(
        &tree
            .read_at(
                tree.resolve(&format!("fragments/{frag}/tiles.json"))
                    .unwrap(),
                0,
                1 << 30,
            )
            .unwrap(),
    )
    .unwrap();
    let text = json.to_string();
    assert!(text.contains("\"chunks\":1"), "{text}");
    // Bytes of a0.tdb the proxy saw asked for.
    let fetched: u64 = proxy
        .seen()
        .iter()
        .filter(|s| s.is_get() && s.target.contains(&format!("{frag}/a0.tdb")))
        .map(|s| {
            let range = s.range.as_deref().expect("a ranged GET");
            let (a, b) = range.trim_start_matches("bytes=").split_once('-').unwrap();
            b.parse::<u64>().unwrap() - a.parse::<u64>().unwrap() + 1
        })
        .sum();
    assert!(
        fetched <= 16 * 64,
        "tiles.json fetched {fetched} bytes of a0.tdb ({data_len} in all)"
    );
}
