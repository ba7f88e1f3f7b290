//! The disk cache (`--cache-dir`): every byte read through it equals TileDB's reads and the
//! uncached tree's, on a first mount and after a remount (which decodes nothing the cache
//! holds); complete files are read by the kernel by FUSE passthrough (the daemon stopped);
//! a daemon killed while caching and cache files damaged on disk never serve a wrong
//! byte; eviction keeps the bound; vacuumed fragments' files are dropped; two mounts
//! share one cache folder.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::mounting::*;
use common::*;
use fragfs::storage::diskcache::{CacheConfig, DiskCache};
use fragfs::view::cached::{CacheState, CachedTree};
use fragfs::view::{ArrayTree, FileTree, Ino, ROOT};
use serde_json::Value;

impl Tree for CachedTree {
    fn fragments(&self) -> Result<Vec<String>, String> {
        (self as &dyn FileTree).fragments()
    }

    fn read(&self, path: &str) -> Result<Vec<u8>, String> {
        Tree::read(self as &dyn FileTree, path)
    }
}

fn config(dir: &Path) -> CacheConfig {
    CacheConfig {
        dir: dir.to_path_buf(),
        size: Some(1 << 30),
        decrypted: true,
    }
}

/// A "mount": the array's tree read through the cache in `dir`.
fn cached(array: &Path, expected: &Value, config: &CacheConfig) -> (Arc<ArrayTree>, CachedTree) {
    let inner = Arc::new(open_view(array, expected).unwrap());
    let cache = Arc::new(DiskCache::open(config).unwrap());
    let tree = CachedTree::new(inner.clone(), cache);
    (inner, tree)
}

/// Every file of the tree (but `at/`, unless `with_at`) by path, depth first.
fn files(tree: &dyn FileTree, with_at: bool) -> Vec<(String, Ino)> {
    let mut out = Vec::new();
    let mut stack = vec![(String::new(), ROOT)];
    while let Some((path, dir)) = stack.pop() {
        let Ok(list) = tree.list(dir) else { continue };
        for e in list {
            if dir == ROOT && e.name == "at" && !with_at {
                continue;
            }
            let p = format!("{path}/{}", e.name);
            if e.is_dir() {
                stack.push((p, e.ino));
            } else {
                out.push((p, e.ino));
            }
        }
    }
    out.sort();
    out
}

/// The whole file, or the error's text (a state TileDB cannot read either fails alike
/// with and without the cache).
fn whole(tree: &dyn FileTree, path: &str) -> Result<Vec<u8>, String> {
    let ino = tree.resolve(path).map_err(|e| e.to_string())?;
    read_all(tree, ino).map_err(|e| e.to_string())
}

/// Every file of `cached` equals the same file of `plain`, read in one piece; and once
/// more in odd pieces (a block boundary crossed mid-read), so partly cached files are
/// assembled right. Returns how many files were compared.
fn same_bytes(
    plain: &dyn FileTree,
    cached: &dyn FileTree,
    with_at: bool,
    only: impl Fn(&str) -> bool,
) -> Result<usize, String> {
    let all: Vec<(String, Ino)> = files(cached, with_at)
        .into_iter()
        .filter(|(p, _)| only(p))
        .collect();
    for (path, ino) in &all {
        let want = whole(plain, path);
        let got = whole(cached, path);
        if want != got {
            return Err(format!("{path}: differs through the cache"));
        }
        if let Ok(want) = want {
            let mut pieces = Vec::new();
            let mut offset = 0;
            let mut step = 40_000;
            while offset < want.len() as u64 {
                let n = pieces.len();
                cached
                    .read_into(*ino, offset, step, &mut pieces)
                    .map_err(|e| format!("{path} at {offset}: {e}"))?;
                if pieces.len() == n {
                    break;
                }
                offset = pieces.len() as u64;
                step = step * 3 / 2;
            }
            if pieces != want {
                return Err(format!("{path}: read in pieces differs through the cache"));
            }
        }
    }
    Ok(all.len())
}

/// The files of the fragments whose bytes are decoded tiles (`.bin`, `.npy`).
fn fragment_binaries(tree: &dyn FileTree) -> Vec<(String, Ino)> {
    files(tree, false)
        .into_iter()
        .filter(|(p, _)| {
            p.starts_with("/fragments/") && (p.ends_with(".bin") || p.ends_with(".npy"))
        })
        .collect()
}

/// How much of each array a check reads.
#[derive(Clone, Copy, PartialEq)]
enum Depth {
    /// Every file (`at/<T>/` included) compared with the uncached tree, whole and in
    /// pieces, on each mount, and a third mount that must decode nothing cached.
    Thorough,
    /// TileDB's per-fragment reads on both mounts (the remount from the cache), its
    /// merged reads and `zarr/` (compared with the uncached tree) on the remount: what
    /// the corpus (525 arrays) can afford.
    Truth,
}

/// First mount: TileDB's reads (and the uncached tree's bytes) through an empty cache.
/// Remount: the same through the filled cache, without decoding a chunk to read a
/// fragment's file.
fn check_first_and_remount(
    array: &Path,
    expected: &Value,
    merged: Option<&Value>,
    depth: Depth,
) -> Result<(), String> {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path());
    let plain = open_view(array, expected).map_err(|e| e.to_string())?;
    for round in ["first mount", "remount"] {
        let (_, tree) = cached(array, expected, &config);
        let context = |e: String| format!("{round}: {e}");
        check_tree(&tree, expected).map_err(context)?;
        // The corpus's merged states are checked once, on the remount (where they fill
        // the cache): a second pass would cost as much as the rest of the check, and
        // merged files served from a filled cache are checked on the fixtures.
        if let Some(merged) = merged.filter(|_| depth == Depth::Thorough || round == "remount") {
            check_merged(&tree, merged).map_err(context)?;
        }
        match depth {
            Depth::Thorough => same_bytes(&plain, &tree, true, |_| true),
            Depth::Truth if round == "remount" => {
                same_bytes(&plain, &tree, false, |p| p.starts_with("/zarr/"))
            }
            // (`.npy` files, which the truth does not read.)
            Depth::Truth => same_bytes(&plain, &tree, false, |p| {
                p.starts_with("/fragments/") && p.ends_with(".npy")
            }),
        }
        .map_err(context)?;
    }
    let (inner, tree) = cached(array, expected, &config);
    for (path, ino) in fragment_binaries(&tree) {
        read_all(&tree, ino).map_err(|e| format!("{path}: {e}"))?;
    }
    if inner.chunks_decoded() != 0 {
        return Err(format!(
            "a remount decoded {} chunks to read fragment files the cache holds",
            inner.chunks_decoded()
        ));
    }
    if depth == Depth::Thorough {
        let (_, tree) = cached(array, expected, &config);
        same_bytes(&plain, &tree, true, |_| true)?;
        if tree.bytes_filled() != 0 || tree.bytes_hit() == 0 {
            return Err(format!(
                "a third mount decoded {} bytes of cached files ({} from the cache)",
                tree.bytes_filled(),
                tree.bytes_hit()
            ));
        }
    }
    Ok(())
}

#[test]
fn fixtures_read_through_the_cache_as_tiledb_reads_them_before_and_after_a_remount() {
    let (arrays, merged) = fixture_files();
    let merged: std::collections::HashMap<_, _> = merged.into_iter().collect();
    let failures = std::sync::Mutex::new(Vec::new());
    sum_in_parallel(&arrays, 2, |(array, expected)| {
        if let Err(e) = check_first_and_remount(array, expected, merged.get(array), Depth::Thorough)
        {
            failures
                .lock()
                .unwrap()
                .push(format!("{}: {e}", array.display()));
        }
        (0, 0)
    });
    let failures = failures.into_inner().unwrap();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    println!(
        "{} fixtures: the same bytes through the disk cache, first mount and remount",
        arrays.len()
    );
}

#[test]
fn shared_corpus_reads_through_the_cache_as_tiledb_reads_it() {
    let n = check_corpus_arrays(2, |array, expected, merged| {
        check_first_and_remount(array, expected, merged, Depth::Truth)
    });
    if n > 0 {
        println!(
            "{n} corpus arrays: the same bytes through the disk cache, first mount and remount"
        );
    }
}

/// Sum of the disk blocks of every file under `root`.
fn on_disk(root: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let mut total = 0;
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for i in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let m = i.metadata().unwrap();
            if m.is_dir() {
                stack.push(i.path());
            } else {
                total += m.blocks() * 512;
            }
        }
    }
    total
}

/// Every cache file (`.data` and `.idx`) under `root`.
fn cache_files(root: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for i in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = i.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.to_string_lossy().ends_with(suffix) {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn damaged_cache_files_are_detected_and_decoded_again() {
    let (array, expected) = fixture("dense_2d");
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path());
    let plain = open_view(&array, &expected).unwrap();
    let (_, tree) = cached(&array, &expected, &config);
    same_bytes(&plain, &tree, false, |_| true).unwrap();
    let data = cache_files(dir.path(), ".data");
    let index = cache_files(dir.path(), ".idx");
    assert!(data.len() >= 10, "{} cached files", data.len());
    // Flip a byte in some, cut others short, tear an index, empty another.
    let mut damaged = 0;
    for (i, path) in data.iter().enumerate() {
        let len = std::fs::metadata(path).unwrap().len();
        if len < 2 {
            continue;
        }
        match i % 3 {
            0 => {
                let mut bytes = std::fs::read(path).unwrap();
                let at = bytes.len() / 2;
                bytes[at] ^= 0x10;
                std::fs::write(path, bytes).unwrap();
            }
            1 => {
                let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
                f.set_len(len / 2).unwrap();
            }
            _ => continue,
        }
        damaged += 1;
    }
    std::fs::write(&index[0], b"FRAGFSC1 torn").unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&index[1])
        .unwrap()
        .set_len(0)
        .unwrap();
    assert!(damaged >= 6);
    let (_, tree) = cached(&array, &expected, &config);
    same_bytes(&plain, &tree, false, |_| true).unwrap();
    assert!(
        tree.bytes_filled() > 0,
        "damaged files were served from the cache instead of decoded again"
    );
    // Decoded again, they are whole again: a next mount reads them all from the cache.
    let (_, tree) = cached(&array, &expected, &config);
    same_bytes(&plain, &tree, false, |_| true).unwrap();
    assert_eq!(tree.bytes_filled(), 0);
}

/// A file complete in the cache whose bytes were flipped on disk is not handed to the
/// kernel (passthrough would serve it unchecked) until it was decoded again.
#[test]
fn a_damaged_complete_file_is_not_handed_to_the_kernel() {
    let (array, expected) = fixture("dense_2d");
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path());
    let (_, tree) = cached(&array, &expected, &config);
    let (path, ino) = fragment_binaries(&tree)
        .into_iter()
        .find(|(p, _)| p.ends_with("values.bin"))
        .unwrap();
    let bytes = read_all(&tree, ino).unwrap();
    let (_, data) = tree.cached_file(ino).expect("complete after one read");
    let data = PathBuf::from(format!("{data}.data"));
    assert_eq!(
        std::fs::read(&data).unwrap(),
        bytes,
        "{path}: the cache file holds the bytes"
    );
    let mut flipped = bytes.clone();
    flipped[bytes.len() - 1] ^= 1;
    std::fs::write(&data, &flipped).unwrap();
    let (_, tree) = cached(&array, &expected, &config);
    let ino = tree.resolve(&path).unwrap();
    assert!(
        tree.cached_file(ino).is_none(),
        "{path}: damaged, yet handed over"
    );
    assert_eq!(read_all(&tree, ino).unwrap(), bytes);
    assert!(
        tree.cached_file(ino).is_some(),
        "{path}: whole again once decoded"
    );
    assert_eq!(std::fs::read(&data).unwrap(), bytes);
}

/// Opening a file complete in the cache checks the same file of the next fragment ahead
/// of its open (`cat fragments/*/a/values.bin`, cold: the check's read from disk
/// overlaps the kernel's copy of this one), and a damaged next file fails that check.
#[test]
fn the_next_fragments_file_is_checked_ahead_of_its_open() {
    let (array, expected) = fixture("dense_2d");
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path());
    let (_, tree) = cached(&array, &expected, &config);
    let binaries: Vec<_> = fragment_binaries(&tree)
        .into_iter()
        .filter(|(p, _)| p.ends_with("/plain/values.bin"))
        .collect();
    assert_eq!(binaries.len(), 2, "{binaries:?}");
    for (_, ino) in &binaries {
        read_all(&tree, *ino).unwrap();
    }
    let next_data = |tree: &CachedTree| {
        let key = tree.next_cache_key(tree.resolve(&binaries[0].0).unwrap());
        let key = key.expect("a guess of the next file");
        tree.cache()
            .existing_entry(&key)
            .expect("the next file is in the cache")
    };
    let (_, second_data) = tree.cached_file(binaries[1].1).unwrap();
    assert!(
        tree.next_cache_key(binaries[1].1).is_none(),
        "the last fragment has no next"
    );

    // A remount: nothing checked yet; opening the first fragment's file checks the next.
    let (_, tree) = cached(&array, &expected, &config);
    let next = next_data(&tree);
    assert!(next.is_complete() && !next.is_verified());
    tree.cached_file(tree.resolve(&binaries[0].0).unwrap())
        .expect("complete");
    let waited = std::time::Instant::now();
    while !next.is_verified() {
        assert!(
            waited.elapsed() < std::time::Duration::from_secs(120),
            "the next fragment's file was never checked"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let second = tree.resolve(&binaries[1].0).unwrap();
    assert!(tree.cached_file(second).is_some());

    // Flipped on disk: the check ahead does not pass it, nor does its own open.
    let data = PathBuf::from(format!("{second_data}.data"));
    let mut bytes = std::fs::read(&data).unwrap();
    bytes[0] ^= 1;
    std::fs::write(&data, &bytes).unwrap();
    let (_, tree) = cached(&array, &expected, &config);
    let next = next_data(&tree);
    tree.cached_file(tree.resolve(&binaries[0].0).unwrap())
        .expect("complete");
    let second = tree.resolve(&binaries[1].0).unwrap();
    assert!(
        tree.cached_file(second).is_none(),
        "damaged, yet handed over"
    );
    assert!(!next.is_verified() && !next.is_complete());
    bytes[0] ^= 1;
    assert_eq!(read_all(&tree, second).unwrap(), bytes);
}

#[test]
fn eviction_keeps_the_bound() {
    let (array, expected) = fixture("dense_2d");
    let dir = tempfile::tempdir().unwrap();
    let budget = 256 << 10;
    let config = CacheConfig {
        dir: dir.path().to_path_buf(),
        size: Some(budget),
        decrypted: false,
    };
    let plain = open_view(&array, &expected).unwrap();
    let (_, tree) = cached(&array, &expected, &config);
    let all = files(&tree, false);
    let mut most = 0;
    for (path, ino) in &all {
        assert_eq!(
            read_all(&tree, *ino).unwrap(),
            whole(&plain, path).unwrap(),
            "{path}"
        );
        let used = on_disk(&dir.path().join("v1"));
        most = most.max(used);
        assert!(
            used <= budget,
            "{used} bytes in the cache after {path}, bound {budget}"
        );
    }
    // The first files read went to make room; the last one read is there.
    let first = all.iter().find(|(p, _)| p.ends_with(".bin")).unwrap();
    assert!(
        matches!(tree.state(first.1), CacheState::Partial { cached: 0, .. }),
        "{}: {:?}, yet the cache overflowed",
        first.0,
        tree.state(first.1)
    );
    assert!(
        most > budget / 2,
        "the cache was used ({most} bytes at most)"
    );
}

/// Runs tests/tiledb_ops.py.
fn tiledb_op(python: &str, array: &Path, args: &[&str]) {
    run_ok(
        std::process::Command::new(python)
            .arg(repo().join("tests/tiledb_ops.py"))
            .arg(args[0])
            .arg(array)
            .args(&args[1..]),
    );
}

#[test]
fn vacuumed_fragments_lose_their_cache_files() {
    let Some(python) = python_with("tiledb") else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let array = work.path().join("a");
    tiledb_op(&python, &array, &["create"]);
    for t in ["1", "2", "3"] {
        tiledb_op(&python, &array, &["write", t]);
    }
    let cache_dir = work.path().join("cache");
    let config = config(&cache_dir);
    let expected = serde_json::json!({});
    let (_, tree) = cached(&array, &expected, &config);
    let plain = open_view(&array, &expected).unwrap();
    same_bytes(&plain, &tree, false, |_| true).unwrap();
    let before: Vec<String> = tree.fragments().unwrap();
    assert_eq!(before.len(), 3);
    let folders = |root: &Path| -> Vec<String> {
        let mut out: Vec<String> = cache_files(root, ".idx")
            .iter()
            .filter_map(|p| {
                let f = p.parent()?;
                (f.parent()?.file_name()? == "fragments")
                    .then(|| f.file_name().unwrap().to_string_lossy().into())
            })
            .collect();
        out.sort();
        out.dedup();
        out
    };
    assert_eq!(folders(&cache_dir), before);
    tiledb_op(&python, &array, &["consolidate"]);
    tiledb_op(&python, &array, &["vacuum"]);
    // The next mount (or the running one's next rescan) drops them.
    let (_, tree) = cached(&array, &expected, &config);
    let after = tree.fragments().unwrap();
    assert_eq!(after.len(), 1);
    assert!(
        folders(&cache_dir).is_empty(),
        "left: {:?}",
        folders(&cache_dir)
    );
    let plain = open_view(&array, &expected).unwrap();
    same_bytes(&plain, &tree, false, |_| true).unwrap();
    assert_eq!(folders(&cache_dir), after);
}

#[test]
fn two_mounts_share_one_cache_folder() {
    if !fuse_available("two_mounts_share_one_cache_folder") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path());
    let arrays = [
        fixture("dense_2d"),
        fixture("sparse_var_nullable"),
        fixture("dense_2d"),
    ];
    // Each mount its own cache opened on the same folder (as two daemons would), the
    // same array twice and another array, read at once.
    let mounts: Vec<(TreeMount, ArrayTree)> = arrays
        .iter()
        .map(|(array, expected)| {
            let (_, tree) = cached(array, expected, &config);
            (
                TreeMount::new(Arc::new(tree)),
                open_view(array, expected).unwrap(),
            )
        })
        .collect();
    std::thread::scope(|s| {
        for (mount, plain) in &mounts {
            s.spawn(move || {
                for round in 0..3 {
                    for (path, _) in files(plain, false) {
                        let got = std::fs::read(mount.path().join(&path[1..]))
                            .unwrap_or_else(|e| panic!("{path}: {e}"));
                        assert_eq!(got, whole(plain, &path).unwrap(), "round {round}: {path}");
                    }
                }
            });
        }
    });
    drop(mounts);
    for (array, expected) in &arrays[..2] {
        let plain = open_view(array, expected).unwrap();
        let (_, tree) = cached(array, expected, &config);
        same_bytes(&plain, &tree, false, |_| true).unwrap();
        // Every file whose size is known without rendering it is in the shared cache
        // (a text file is cached once a mount knows its size, which a mount may forget
        // with the node: see docs/disk-cache.md).
        for (path, ino) in files(&tree, false) {
            if path.ends_with(".txt") || path.ends_with(".csv") || tree.cache_key(ino).is_none() {
                continue;
            }
            assert_eq!(
                tree.state(ino),
                CacheState::Complete,
                "{}: {path} not in the shared cache",
                array.display()
            );
        }
    }
}

/// A `fragfs mount -f` child, stopped (and its mount taken down) when dropped.
struct Daemon {
    child: std::process::Child,
    mnt: PathBuf,
}

impl Daemon {
    fn start(array: &Path, mnt: &Path, cache: &Path, log: &Path) -> Daemon {
        let child = std::process::Command::new(env!("CARGO_BIN_EXE_fragfs"))
            .arg("mount")
            .arg("-f")
            .arg("-v")
            .arg("--log-file")
            .arg(log)
            .arg("--cache-dir")
            .arg(cache)
            .arg(array)
            .arg(mnt)
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let d = Daemon {
            child,
            mnt: mnt.to_path_buf(),
        };
        let start = std::time::Instant::now();
        while !is_mounted(mnt) {
            assert!(start.elapsed().as_secs() < 60, "never mounted");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        d
    }

    fn signal(&self, sig: i32) {
        // SAFETY: sending a signal to our own child process.
        assert_eq!(unsafe { libc::kill(self.child.id() as i32, sig) }, 0);
    }

    fn stop(mut self) {
        force_unmount(&self.mnt);
        let _ = self.child.wait();
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        // SAFETY: a signal to our own child (which may have ended: then it fails).
        unsafe { libc::kill(self.child.id() as i32, libc::SIGCONT) };
        force_unmount(&self.mnt);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The kernel's version, as (major, minor).
fn kernel_version() -> (u32, u32) {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let mut parts = release
        .trim()
        .split(['.', '-'])
        .map(|p| p.parse().unwrap_or(0));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
}

/// Files complete in the cache are opened by passthrough: the kernel reads them from
/// the cache file itself, so they read whole while the daemon is stopped (SIGSTOP). A
/// file the daemon served would hang until SIGCONT; the reader is given ample time, which
/// only a failing run waits out.
#[test]
fn complete_files_read_by_passthrough_while_the_daemon_is_stopped() {
    let test = "complete_files_read_by_passthrough_while_the_daemon_is_stopped";
    if !fuse_available(test) {
        return;
    }
    if unsafe_geteuid() != 0 {
        skip(&format!(
            "{test}: FUSE passthrough needs root (CAP_SYS_ADMIN)"
        ));
        return;
    }
    if kernel_version() < (6, 9) {
        skip(&format!(
            "{test}: kernel {:?} has no FUSE passthrough (6.9+)",
            kernel_version()
        ));
        return;
    }
    let (array, expected) = fixture("dense_2d");
    let plain = open_view(&array, &expected).unwrap();
    let wanted: Vec<(String, Vec<u8>)> = fragment_binaries(&plain)
        .into_iter()
        .filter(|(p, _)| p.ends_with("values.bin"))
        .map(|(p, ino)| (p[1..].to_string(), read_all(&plain, ino).unwrap()))
        .collect();
    assert!(wanted.len() >= 5);
    let work = tempfile::tempdir().unwrap();
    let (cache, mnt, log) = (
        work.path().join("cache"),
        work.path().join("mnt"),
        work.path().join("log"),
    );
    std::fs::create_dir(&mnt).unwrap();
    // First mount: the reads fill the cache.
    let d = Daemon::start(&array, &mnt, &cache, &log);
    for (path, bytes) in &wanted {
        assert_eq!(&std::fs::read(mnt.join(path)).unwrap(), bytes, "{path}");
    }
    d.stop();
    // Remount: open, stop the daemon, read.
    let d = Daemon::start(&array, &mnt, &cache, &log);
    let open: Vec<std::fs::File> = wanted
        .iter()
        .map(|(p, _)| std::fs::File::open(mnt.join(p)).unwrap())
        .collect();
    d.signal(libc::SIGSTOP);
    let (tx, rx) = std::sync::mpsc::channel();
    // Plain read() calls: `read_to_end` would `fstat` first, and attributes are the
    // daemon's to answer (passthrough is for reads).
    // Closed only once all are read: a close sends FLUSH to the daemon.
    let reader = std::thread::spawn(move || {
        let mut open = open;
        let got: Vec<Vec<u8>> = open
            .iter_mut()
            .map(|f| {
                let mut b = Vec::new();
                let mut buf = vec![0u8; 1 << 16];
                loop {
                    match std::io::Read::read(f, &mut buf) {
                        Ok(0) => break Ok(b),
                        Ok(n) => b.extend_from_slice(&buf[..n]),
                        Err(e) => break Err(e),
                    }
                }
            })
            .collect::<Result<_, _>>()
            .unwrap();
        let _ = tx.send(got.clone());
        drop(open);
        got
    });
    let in_time = rx.recv_timeout(std::time::Duration::from_secs(60));
    d.signal(libc::SIGCONT);
    let got = reader.join().unwrap();
    let logged = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        in_time.is_ok(),
        "the reads waited for the stopped daemon: not passthrough. Log:\n{logged}"
    );
    for ((path, bytes), got) in wanted.iter().zip(&got) {
        assert_eq!(got, bytes, "{path}");
    }
    assert!(logged.contains("(FUSE passthrough)"), "{logged}");
    d.stop();
}

/// Writes a 1-D dense array with one 8 MiB ZSTD attribute (TileDB-Py).
fn write_big_array(python: &str, array: &Path) {
    let script = r#"
import sys, numpy as np, tiledb
dom = tiledb.Domain(tiledb.Dim("x", domain=(0, 1048575), tile=131072, dtype=np.int64))
schema = tiledb.ArraySchema(domain=dom, sparse=False,
    attrs=[tiledb.Attr("v", dtype=np.int64, filters=[tiledb.ZstdFilter()])])
tiledb.Array.create(sys.argv[1], schema)
with tiledb.open(sys.argv[1], "w") as a:
    a[:] = (np.arange(1048576, dtype=np.int64) * 2654435761) % 1000003
"#;
    run_ok(
        std::process::Command::new(python)
            .arg("-c")
            .arg(script)
            .arg(array),
    );
}

/// A process killed (SIGKILL) while it fills the cache leaves a cache the next mount
/// reads right: what it wrote is used, what it had not finished is decoded again.
#[test]
fn a_process_killed_while_caching_leaves_a_cache_that_reads_right() {
    let Some(python) = python_with("tiledb") else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let array = work.path().join("big");
    write_big_array(&python, &array);
    let cache = work.path().join("cache");
    let expected = serde_json::json!({});
    let plain = open_view(&array, &expected).unwrap();
    let (file, _) = fragment_binaries(&plain)
        .into_iter()
        .find(|(p, _)| p.ends_with("/v/values.bin"))
        .unwrap();
    for round in 0..3 {
        // `fragfs cat` into a pipe nobody reads: it caches its first 1 MiB read, then
        // blocks writing it out, and is killed there (round 0) or while reading on.
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_fragfs"))
            .arg("cat")
            .arg("--cache-dir")
            .arg(&cache)
            .arg(&array)
            .arg(&file[1..])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let start = std::time::Instant::now();
        let mut out = child.stdout.take().unwrap();
        let mut drained = 0usize;
        while on_disk(&cache.join("v1")) < (1 << 20) * (round + 1) {
            assert!(
                start.elapsed().as_secs() < 60,
                "round {round}: nothing cached"
            );
            if round > 0 && drained < (round as usize) << 20 {
                let mut buf = vec![0u8; 1 << 16];
                drained += std::io::Read::read(&mut out, &mut buf).unwrap();
            } else {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        }
        child.kill().unwrap();
        child.wait().unwrap();
    }
    let config = config(&cache);
    let (_, tree) = cached(&array, &expected, &config);
    // The binary files (the text renderings of a million cells are slow in a debug
    // build, and cached the same way).
    same_bytes(&plain, &tree, false, |p| p.ends_with(".bin")).unwrap();
    assert!(
        tree.bytes_hit() >= 1 << 20,
        "what the killed process cached was not used"
    );
    assert!(tree.bytes_filled() > 0, "the rest was decoded");
    let (_, tree) = cached(&array, &expected, &config);
    same_bytes(&plain, &tree, false, |p| p.ends_with(".bin")).unwrap();
    assert_eq!(tree.bytes_filled(), 0);
}

/// `fragfs info --cache-dir` says what the cache holds of the array and how complete
/// files will be served; `fragfs cat --cache-dir` fills it.
#[test]
fn info_says_what_the_cache_holds() {
    let (array, expected) = fixture("dense_2d");
    let plain = open_view(&array, &expected).unwrap();
    let (path, ino) = fragment_binaries(&plain)
        .into_iter()
        .find(|(p, _)| p.ends_with("values.bin"))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let fragfs = |args: &[&std::ffi::OsStr]| {
        run_ok(
            std::process::Command::new(env!("CARGO_BIN_EXE_fragfs"))
                .args(args)
                .arg("--cache-dir")
                .arg(dir.path()),
        )
    };
    let info = fragfs(&["info".as_ref(), array.as_os_str()]);
    assert!(info.contains(": 0 files (0 complete), 0 bytes"), "{info}");
    let cat = std::process::Command::new(env!("CARGO_BIN_EXE_fragfs"))
        .arg("cat")
        .arg(&array)
        .arg(&path[1..])
        .arg("--cache-dir")
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(cat.status.success());
    assert_eq!(cat.stdout, read_all(&plain, ino).unwrap());
    let info = fragfs(&["info".as_ref(), array.as_os_str()]);
    let size = plain.size(ino).unwrap();
    assert!(
        info.contains(&format!(": 1 files (1 complete), {size} bytes")),
        "{info}"
    );
    assert!(
        info.contains("complete fragment files: read by the kernel")
            || info.contains("read from the cache by the daemon ("),
        "{info}"
    );
}

/// An encrypted array's decrypted bytes stay out of the cache unless asked for.
#[test]
fn encrypted_arrays_are_cached_only_with_cache_decrypted() {
    let (array, expected) = fixture("encrypted");
    assert!(expected["encryption"]["key"].is_string());
    for decrypted in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let config = CacheConfig {
            dir: dir.path().to_path_buf(),
            size: Some(1 << 30),
            decrypted,
        };
        let (_, tree) = cached(&array, &expected, &config);
        check_tree(&tree, &expected).unwrap();
        let kept = cache_files(dir.path(), ".data").len();
        match decrypted {
            false => assert_eq!(kept, 0, "decrypted bytes cached without --cache-decrypted"),
            true => assert!(kept > 0, "nothing cached with --cache-decrypted"),
        }
    }
}
