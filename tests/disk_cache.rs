//! The disk cache (`--cache-dir`): every byte read through it equals TileDB's reads and the
//! uncached tree's, on a first mount and after a remount (which decodes nothing the cache
//! holds); complete files are read by the kernel by FUSE passthrough (the daemon stopped);
//! a daemon killed while caching and cache files damaged on disk never serve a wrong
//! byte; eviction keeps the bound, with one daemon and with two on one folder; vacuumed
//! fragments' files are dropped; two mounts share one cache folder; a fragment
//! rewritten in place is not served from its old bytes; links planted in the folder are
//! not followed; a folder others could write, or one that cannot be used, is refused and
//! reads go on without it; a complete file is checked in the background, not by the
//! open that finds it.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use common::mounting::*;
use common::*;
use fragfs::storage::diskcache::{CacheConfig, DiskCache, LAYOUT};
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

/// How long a test waits for background work (an eviction, a check) before it fails:
/// only a failing run waits it out.
const PATIENCE: Duration = Duration::from_secs(120);

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

/// Sum of the disk blocks of every file under `root` (one removed meanwhile counts as
/// gone).
fn on_disk(root: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let mut total = 0;
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for i in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let Ok(m) = i.metadata() else { continue };
            if m.is_dir() {
                stack.push(i.path());
            } else {
                total += m.blocks() * 512;
            }
        }
    }
    total
}

/// [`on_disk`] of the entries of the cache folder `dir`, counted while no daemon makes
/// or removes one: holding the folder's lock, as they do (a scan while folders go and
/// come back may see one twice). Writes go on meanwhile, which only grow files: what it
/// counts is at most what the folder holds when it is done.
fn settled_on_disk(dir: &Path) -> u64 {
    let lock = std::fs::File::open(dir.join("lock")).unwrap();
    lock.lock().unwrap();
    let used = on_disk(&dir.join(LAYOUT));
    lock.unlock().unwrap();
    used
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

/// The cache file of `ino` for the kernel to read, as an open that comes after the
/// background check of it finds it (see [`FileTree::cached_file`]).
fn handed_over(tree: &CachedTree, ino: Ino) -> Option<(std::fs::File, String)> {
    tree.cached_file(ino).or_else(|| {
        tree.wait_checked(ino, PATIENCE);
        tree.cached_file(ino)
    })
}

/// The first open of a file complete in the cache does not read it whole before it is
/// served (the check passthrough needs runs in the background, and this open is served
/// by the daemon from the cache meanwhile); an open after the check gets the file.
#[test]
fn the_first_open_of_a_complete_file_does_not_check_it_on_its_thread() {
    let (array, expected) = fixture("dense_2d");
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path());
    let (_, tree) = cached(&array, &expected, &config);
    let (path, ino, size) = fragment_binaries(&tree)
        .into_iter()
        .map(|(p, ino)| (p, ino, tree.size(ino).unwrap()))
        .max_by_key(|(_, _, size)| *size)
        .unwrap();
    let bytes = read_all(&tree, ino).unwrap();
    // A remount: complete in the cache, checked by no one yet.
    let (_, tree) = cached(&array, &expected, &config);
    let ino = tree.resolve(&path).unwrap();
    assert_eq!(tree.state(ino), CacheState::Complete);
    assert!(
        tree.cached_file(ino).is_none(),
        "{path} ({size} bytes): checked whole on the open's thread"
    );
    assert!(tree.wait_checked(ino, PATIENCE), "{path}: the check failed");
    let (file, _) = tree.cached_file(ino).expect("checked: handed over");
    let mut handed = Vec::new();
    std::io::Read::read_to_end(&mut &file, &mut handed).unwrap();
    assert_eq!(handed, bytes);
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
    let (_, data) = handed_over(&tree, ino).expect("complete after one read");
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
        handed_over(&tree, ino).is_none(),
        "{path}: damaged, yet handed over"
    );
    assert_eq!(read_all(&tree, ino).unwrap(), bytes);
    assert!(
        handed_over(&tree, ino).is_some(),
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
    let (_, second_data) = handed_over(&tree, binaries[1].1).unwrap();
    assert!(
        tree.next_cache_key(binaries[1].1).is_none(),
        "the last fragment has no next"
    );

    // A remount: nothing checked yet; opening the first fragment's file checks the next.
    let (_, tree) = cached(&array, &expected, &config);
    let next = next_data(&tree);
    assert!(next.is_complete() && !next.is_verified());
    let first = tree.resolve(&binaries[0].0).unwrap();
    assert_eq!(tree.state(first), CacheState::Complete);
    tree.cached_file(first);
    let second = tree.resolve(&binaries[1].0).unwrap();
    assert!(
        next.is_being_checked() || next.is_verified(),
        "the next fragment's file was not asked to be checked"
    );
    assert!(
        tree.wait_checked(second, PATIENCE),
        "the next fragment's file was never checked"
    );
    assert!(
        tree.cached_file(second).is_some(),
        "checked ahead, yet not handed over at its first open"
    );

    // Flipped on disk: the check ahead does not pass it, nor does its own open.
    let data = PathBuf::from(format!("{second_data}.data"));
    let mut bytes = std::fs::read(&data).unwrap();
    bytes[0] ^= 1;
    std::fs::write(&data, &bytes).unwrap();
    let (_, tree) = cached(&array, &expected, &config);
    let next = next_data(&tree);
    tree.cached_file(tree.resolve(&binaries[0].0).unwrap());
    let second = tree.resolve(&binaries[1].0).unwrap();
    assert!(!tree.wait_checked(second, PATIENCE), "damaged, yet checked");
    assert!(
        handed_over(&tree, second).is_none(),
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
    let first = all.iter().find(|(p, _)| p.ends_with(".bin")).unwrap();
    let mut most = 0;
    for (path, ino) in &all {
        assert_eq!(
            read_all(&tree, *ino).unwrap(),
            whole(&plain, path).unwrap(),
            "{path}"
        );
        if path == &first.0 {
            assert_eq!(tree.state(*ino), CacheState::Complete, "{path}: not cached");
        }
        let used = settled_on_disk(dir.path());
        most = most.max(used);
        assert!(
            used <= budget,
            "{used} bytes in the cache after {path}, bound {budget}"
        );
    }
    // The first files read went to make room (in the background: once it is done).
    // Asked again, the first one's entry is made anew, empty, or (the cache full
    // again with the last reads) not made.
    assert!(tree.cache().settle(PATIENCE));
    assert!(tree.cache().evictions() > 0);
    let state = tree.state(first.1);
    assert!(
        matches!(
            state,
            CacheState::Partial { cached: 0, .. } | CacheState::NotCached
        ),
        "{}: {state:?}, yet the cache overflowed",
        first.0,
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
    fn start(array: &Path, mnt: &Path, cache: &Path, log: &Path, args: &[&str]) -> Daemon {
        let child = std::process::Command::new(env!("CARGO_BIN_EXE_fragfs"))
            .arg("mount")
            .arg("-f")
            .arg("-v")
            .arg("--log-file")
            .arg(log)
            .arg("--cache-dir")
            .arg(cache)
            .args(args)
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
    let d = Daemon::start(&array, &mnt, &cache, &log, &[]);
    for (path, bytes) in &wanted {
        assert_eq!(&std::fs::read(mnt.join(path)).unwrap(), bytes, "{path}");
    }
    d.stop();
    // Remount. The first opens of each file are served by the daemon while its cache
    // file is checked in the background; read the files until every one was opened by
    // passthrough once (the log says so), which later opens then are too.
    let logged_before = std::fs::metadata(&log).map_or(0, |m| m.len() as usize);
    let d = Daemon::start(&array, &mnt, &cache, &log, &[]);
    let started = std::time::Instant::now();
    loop {
        for (path, bytes) in &wanted {
            assert_eq!(&std::fs::read(mnt.join(path)).unwrap(), bytes, "{path}");
        }
        let logged = std::fs::read_to_string(&log).unwrap_or_default();
        let by_kernel: std::collections::HashSet<&str> = logged
            .get(logged_before..)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.split_once(": read by the kernel (FUSE passthrough)"))
            // The cache file's path, after the log line's time and level.
            .filter_map(|(head, _)| head.rsplit(' ').next())
            .collect();
        if by_kernel.len() >= wanted.len() {
            break;
        }
        assert!(
            started.elapsed() < PATIENCE,
            "{} of {} files ever opened by passthrough. Log:\n{logged}",
            by_kernel.len(),
            wanted.len()
        );
    }
    // Open, stop the daemon, read.
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
        while on_disk(&cache.join(LAYOUT)) < (1 << 20) * (round + 1) {
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

/// Writes a 1-D dense array of `n` fragments (one per timestamp) of `cells` INT64 cells
/// each, one ZSTD attribute `v` (TileDB-Py).
fn write_fragments(python: &str, array: &Path, n: u32, cells: u32) {
    let script = r#"
import sys, numpy as np, tiledb
uri, n, cells = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
dom = tiledb.Domain(tiledb.Dim("x", domain=(0, n * cells - 1), tile=cells, dtype=np.int64))
schema = tiledb.ArraySchema(domain=dom, sparse=False,
    attrs=[tiledb.Attr("v", dtype=np.int64, filters=[tiledb.ZstdFilter()])])
tiledb.Array.create(uri, schema)
for i in range(n):
    with tiledb.open(uri, "w", timestamp=i + 1) as a:
        a[i * cells:(i + 1) * cells] = (np.arange(cells, dtype=np.int64) * 2654435761 + i) % 1000003
"#;
    run_ok(
        std::process::Command::new(python)
            .arg("-c")
            .arg(script)
            .arg(array)
            .arg(n.to_string())
            .arg(cells.to_string()),
    );
}

/// The files under `root` that are not one of an entry's two (`.data` with its
/// `.idx`): what a race between making and removing entries would leave.
fn orphans(root: &Path) -> Vec<PathBuf> {
    let all: std::collections::HashSet<PathBuf> = cache_files(root, "").into_iter().collect();
    let mut out: Vec<PathBuf> = all
        .iter()
        .filter(|p| {
            let s = p.to_string_lossy();
            let other = match (s.strip_suffix(".data"), s.strip_suffix(".idx")) {
                (Some(base), _) => format!("{base}.idx"),
                (_, Some(base)) => format!("{base}.data"),
                _ => return true,
            };
            !all.contains(Path::new(&other))
        })
        .cloned()
        .collect();
    out.sort();
    out
}

/// Two daemons (two `fragfs mount` processes) share one small cache folder and read
/// at once: the folder holds at most its bound at every look (taken under the folder's
/// lock, between the daemons' changes), and once they are gone no `.data` is left
/// without its `.idx` or the reverse.
#[test]
fn two_daemons_sharing_a_small_cache_keep_its_bound() {
    let test = "two_daemons_sharing_a_small_cache_keep_its_bound";
    if !fuse_available(test) {
        return;
    }
    let Some(python) = python_with("tiledb") else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let array = work.path().join("a");
    write_fragments(&python, &array, 12, 16384);
    let expected = serde_json::json!({});
    let plain = open_view(&array, &expected).unwrap();
    // The fragments' files but their text renderings (slow in a debug build).
    let wanted: Vec<(String, Vec<u8>)> = files(&plain, false)
        .into_iter()
        .filter(|(p, _)| p.starts_with("/fragments/") && !p.ends_with(".txt"))
        .map(|(p, ino)| (p[1..].to_string(), read_all(&plain, ino).unwrap()))
        .collect();
    let total: usize = wanted.iter().map(|(_, b)| b.len()).sum();
    let budget: u64 = 1 << 20;
    assert!(
        total as u64 > 2 * budget,
        "{total} bytes: the cache would not fill"
    );
    let cache = work.path().join("cache");
    let daemons: Vec<(Daemon, PathBuf)> = (0..2)
        .map(|i| {
            let mnt = work.path().join(format!("mnt{i}"));
            std::fs::create_dir(&mnt).unwrap();
            let log = work.path().join(format!("log{i}"));
            let d = Daemon::start(&array, &mnt, &cache, &log, &["--cache-dir-size", "1M"]);
            (d, mnt)
        })
        .collect();
    let reading = std::sync::atomic::AtomicUsize::new(daemons.len());
    let mut most = 0;
    let mut looks = 0;
    std::thread::scope(|s| {
        for (_, mnt) in &daemons {
            let (wanted, reading) = (&wanted, &reading);
            s.spawn(move || {
                /// Counts this reader out however it ends (a failed read too).
                struct Done<'a>(&'a std::sync::atomic::AtomicUsize);
                impl Drop for Done<'_> {
                    fn drop(&mut self) {
                        self.0.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
                    }
                }
                let _done = Done(reading);
                for round in 0..3 {
                    for (path, bytes) in wanted {
                        let got =
                            std::fs::read(mnt.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"));
                        assert!(got == *bytes, "round {round}: {path} differs");
                    }
                }
            });
        }
        while reading.load(std::sync::atomic::Ordering::Acquire) > 0 {
            most = most.max(settled_on_disk(&cache));
            looks += 1;
            std::thread::yield_now();
        }
    });
    most = most.max(settled_on_disk(&cache));
    for (d, _) in daemons {
        d.stop();
    }
    let logs: String = (0..2)
        .map(|i| std::fs::read_to_string(work.path().join(format!("log{i}"))).unwrap_or_default())
        .collect();
    assert!(
        most <= budget,
        "{most} bytes in the cache folder at one look of {looks}, bound {budget}"
    );
    assert!(
        logs.contains("evicted"),
        "the cache never filled up. Logs:\n{logs}"
    );
    assert!(
        most > budget / 2,
        "the cache was used ({most} bytes at most)"
    );
    assert_eq!(orphans(&cache.join(LAYOUT)), Vec::<PathBuf>::new());
}

/// A link planted in the cache folder, in place of an entry's `.data` or `.idx` and
/// pointing outside it, is never followed: what it points at stays as it was, the
/// bytes read are right, and the entry is made anew in its place.
#[test]
fn links_planted_in_the_cache_folder_are_not_followed() {
    let (array, expected) = fixture("dense_2d");
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let config = config(dir.path());
    let plain = open_view(&array, &expected).unwrap();
    {
        let (_, tree) = cached(&array, &expected, &config);
        same_bytes(&plain, &tree, false, |_| true).unwrap();
    }
    let data = cache_files(dir.path(), ".data");
    let index = cache_files(dir.path(), ".idx");
    assert!(data.len() >= 8, "{} cached files", data.len());
    // Targets a followed link would damage: bytes of the right size that are not the
    // file's (a data file), a copy of the real index (an index file).
    let mut planted = Vec::new();
    for (i, path) in data.iter().chain(&index).enumerate().step_by(3) {
        let target = outside.path().join(format!("target{i}"));
        let bytes = match path.extension().and_then(|e| e.to_str()) {
            Some("data") => vec![0xa5; std::fs::metadata(path).unwrap().len() as usize],
            _ => std::fs::read(path).unwrap(),
        };
        std::fs::write(&target, &bytes).unwrap();
        std::fs::remove_file(path).unwrap();
        std::os::unix::fs::symlink(&target, path).unwrap();
        planted.push((path.clone(), target, bytes));
    }
    assert!(planted.len() >= 4);
    let (_, tree) = cached(&array, &expected, &config);
    same_bytes(&plain, &tree, false, |_| true).unwrap();
    for (path, target, bytes) in &planted {
        assert!(
            std::fs::read(target).unwrap() == *bytes,
            "{}: followed to {}",
            path.display(),
            target.display()
        );
        let now = std::fs::symlink_metadata(path).unwrap();
        assert!(now.is_file(), "{}: not made anew", path.display());
    }
}

/// `fragfs cat --cache-dir DIR` (and a mount) with a folder others could write, or
/// another user's: the folder is not used (nothing is made in it), the log says why,
/// and the bytes are read as without a cache.
#[test]
fn a_cache_folder_others_could_write_is_refused_and_reads_go_on() {
    use std::os::unix::fs::PermissionsExt;
    let (array, expected) = fixture("dense_2d");
    let plain = open_view(&array, &expected).unwrap();
    let (path, ino) = fragment_binaries(&plain)
        .into_iter()
        .find(|(p, _)| p.ends_with("values.bin"))
        .unwrap();
    let want = read_all(&plain, ino).unwrap();
    let work = tempfile::tempdir().unwrap();
    let cat = |cache: &Path, why: &str| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_fragfs"))
            .arg("cat")
            .arg("--cache-dir")
            .arg(cache)
            .arg(&array)
            .arg(&path[1..])
            .output()
            .unwrap();
        let log = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{why}: {log}");
        assert!(out.stdout == want, "{why}: other bytes");
        assert!(
            log.contains("not used") && log.contains(why),
            "{why}: the log does not say: {log}"
        );
        assert!(!cache.join(LAYOUT).exists(), "{why}: the folder was used");
    };
    let shared = work.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
    cat(&shared, "writable by others");
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o770)).unwrap();
    cat(&shared, "writable by its group");
    if unsafe_geteuid() != 0 {
        skip("a_cache_folder_others_could_write_is_refused: chown needs root");
        return;
    }
    let foreign = work.path().join("foreign");
    std::fs::create_dir(&foreign).unwrap();
    std::fs::set_permissions(&foreign, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::os::unix::fs::chown(&foreign, Some(65534), Some(65534)).unwrap();
    cat(&foreign, "owned by uid 65534");
    // A mount goes on the same way.
    if !fuse_available("a_cache_folder_others_could_write_is_refused (mount)") {
        return;
    }
    let (mnt, log) = (work.path().join("mnt"), work.path().join("log"));
    std::fs::create_dir(&mnt).unwrap();
    let d = Daemon::start(&array, &mnt, &foreign, &log, &[]);
    assert!(std::fs::read(mnt.join(&path[1..])).unwrap() == want);
    d.stop();
    let logged = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(logged.contains("owned by uid 65534"), "{logged}");
    assert!(!foreign.join(LAYOUT).exists());
}

/// Clears the immutable flag of a folder when dropped (so a failed test leaves a
/// folder its temporary directory can remove).
struct Mutable<'a>(&'a Path);

impl Drop for Mutable<'_> {
    fn drop(&mut self) {
        let _ = std::process::Command::new("chattr")
            .arg("-i")
            .arg(self.0)
            .output();
    }
}

/// A cache folder that cannot be made, or cannot be written: reads go on without it,
/// the log says why.
#[test]
fn a_cache_folder_that_cannot_be_used_leaves_reads_as_without_it() {
    use std::os::unix::fs::PermissionsExt;
    let (array, expected) = fixture("dense_2d");
    let plain = open_view(&array, &expected).unwrap();
    let (path, ino) = fragment_binaries(&plain)
        .into_iter()
        .find(|(p, _)| p.ends_with("values.bin"))
        .unwrap();
    let want = read_all(&plain, ino).unwrap();
    let work = tempfile::tempdir().unwrap();
    let cat = |cache: &Path, what: &str| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_fragfs"))
            .arg("cat")
            .arg("--cache-dir")
            .arg(cache)
            .arg(&array)
            .arg(&path[1..])
            .output()
            .unwrap();
        let log = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{what}: {log}");
        assert!(out.stdout == want, "{what}: other bytes");
        assert!(
            log.contains("not used"),
            "{what}: the log does not say: {log}"
        );
    };
    // Under a file: it cannot be made.
    let file = work.path().join("file");
    std::fs::write(&file, b"x").unwrap();
    cat(&file.join("cache"), "a folder that cannot be made");
    // A folder of this user that nobody may write (root may write any folder but an
    // immutable one).
    let locked = work.path().join("locked");
    std::fs::create_dir(&locked).unwrap();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o500)).unwrap();
    let _mutable = Mutable(&locked);
    if unsafe_geteuid() == 0 {
        let immutable = std::process::Command::new("chattr")
            .arg("+i")
            .arg(&locked)
            .output();
        if !immutable.is_ok_and(|o| o.status.success()) {
            skip("a_cache_folder_that_cannot_be_used: chattr +i failed (as root, an unwritable folder needs it)");
            return;
        }
    }
    cat(&locked, "a folder that cannot be written");
    assert!(!locked.join(LAYOUT).exists());
}

/// Writes cells 0..99 of the array made by `tiledb_ops.py create` at timestamp `t`,
/// each `base` plus its index.
fn write_values(python: &str, array: &Path, t: u32, base: i64) {
    let script = r#"
import sys, numpy as np, tiledb
uri, t, base = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with tiledb.open(uri, "w", timestamp=t) as a:
    a[0:100] = {"v": base + np.arange(100, dtype=np.int64)}
"#;
    run_ok(
        std::process::Command::new(python)
            .arg("-c")
            .arg(script)
            .arg(array)
            .arg(t.to_string())
            .arg(base.to_string()),
    );
}

/// The one fragment folder of an array (format 12+: under `__fragments/`).
fn only_fragment(array: &Path) -> PathBuf {
    let mut all: Vec<PathBuf> = std::fs::read_dir(array.join("__fragments"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(all.len(), 1, "{all:?}");
    all.pop().unwrap()
}

/// A fragment rewritten in place (restored from a backup: same name, other files, as
/// TileDB wrote them for another array of the same schema) gets new cache keys: the
/// next mount serves its new bytes, in its own files and in the merged state, never
/// the old ones the cache holds.
#[test]
fn a_fragment_rewritten_in_place_is_not_served_stale() {
    let Some(python) = python_with("tiledb") else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let (array, twin) = (work.path().join("a"), work.path().join("twin"));
    tiledb_op(&python, &array, &["create"]);
    // The same schema (its file and name) in both.
    run_ok(
        std::process::Command::new("cp")
            .arg("-r")
            .arg(&array)
            .arg(&twin),
    );
    write_values(&python, &array, 1, 0);
    write_values(&python, &twin, 1, 5000);
    let cache_dir = work.path().join("cache");
    let config = config(&cache_dir);
    let expected = serde_json::json!({});
    let (_, tree) = cached(&array, &expected, &config);
    let before = open_view(&array, &expected).unwrap();
    assert!(same_bytes(&before, &tree, false, |_| true).unwrap() > 5);
    drop(tree);
    // The restore: the fragment keeps its name, its files are the twin's.
    let (fragment, other) = (only_fragment(&array), only_fragment(&twin));
    for f in std::fs::read_dir(&fragment).unwrap() {
        std::fs::remove_file(f.unwrap().path()).unwrap();
    }
    for f in std::fs::read_dir(&other).unwrap() {
        let f = f.unwrap();
        std::fs::copy(f.path(), fragment.join(f.file_name())).unwrap();
    }
    let after = open_view(&array, &expected).unwrap();
    let values = |tree: &dyn FileTree| whole(tree, "latest/v/values.bin").unwrap();
    assert_ne!(
        values(&before),
        values(&after),
        "the restore changed nothing"
    );
    let (_, tree) = cached(&array, &expected, &config);
    same_bytes(&after, &tree, false, |_| true).unwrap();
    assert!(
        tree.bytes_filled() > 0,
        "nothing decoded: served from the old bytes"
    );
}
