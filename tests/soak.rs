//! The soak test: one `fragfs mount` daemon serves an array of 2,000 fragments to 32
//! reader threads for minutes (`FRAGFS_SOAK_SECONDS`, 240 by default) while TileDB-Py
//! writes new fragments into it, consolidates and vacuums them. The readers mix
//! sequential `cat`s of per-fragment and merged (`at/<T>`) files, random 4 KiB reads,
//! text files, `ls -lR` of growing parts of the tree, lookups of ever new `at/<T>`,
//! Zarr chunks, and reads of the writer's fragments as they come and go.
//!
//! Checked: every byte read equals what `fragfs cat`'s tree reads for the same path
//! before the load (the writer only adds later timestamps, so none of them changes); a
//! read of a writer's fragment succeeds or fails cleanly (ENOENT/ESTALE: vacuumed); no
//! EMFILE and no panic in the daemon's log although its descriptor limit is 512; no
//! small request (a 4 KiB read of a fragment's file, a `stat` of a new `at/<T>`) waits
//! longer than [`WAIT_BOUND`] while others render text files and merge states; and after the run the daemon is alive, holds at
//! most [`FD_BOUND`] descriptors and its RSS is within the cache size plus
//! [`RSS_OVERHEAD`], having grown by at most [`RSS_GROWTH`] over the last two thirds of
//! the run, in which tens of thousands of new paths were looked up.

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::mounting::*;
use common::rng::Rng;
use common::*;
use fragfs::view::{ArrayTree, FileTree, Kind};

const FRAGMENTS: u64 = 2_000;
/// Timestamps of the copied fragments: `FIRST..FIRST + FRAGMENTS`.
const FIRST: u64 = 1_000;
const READERS: usize = 32;
const CACHE: u64 = 32 << 20;
/// The daemon's descriptor limit (`ulimit -n`).
const NOFILE: u64 = 512;
/// Descriptors the daemon may hold: the pinned-file budget (half the limit) and what
/// FUSE, the log and its threads need.
const FD_BOUND: usize = 320;
/// RSS beyond the cache: a debug build's code, thread stacks, the node tables, the
/// fragment metadata cache (bounded on its own) and allocator slack.
const RSS_OVERHEAD: u64 = 224 << 20;
const RSS_GROWTH: u64 = 48 << 20;
/// The longest a 4 KiB read or a `stat` may take, on two busy cores with 32 readers.
const WAIT_BOUND: Duration = Duration::from_secs(30);

/// A dense 256 x 256 array, tiles of 64 x 64: a float attribute (zstd), an integer one
/// (delta, zstd), one fragment at timestamp 1.
const MAKE_SOURCE: &str = r#"
import sys, numpy as np, tiledb
uri = sys.argv[1]
dom = tiledb.Domain(tiledb.Dim("y", domain=(0, 255), tile=64, dtype=np.int32),
                    tiledb.Dim("x", domain=(0, 255), tile=64, dtype=np.int32))
schema = tiledb.ArraySchema(domain=dom, sparse=False, attrs=[
    tiledb.Attr("a", dtype=np.float64, filters=[tiledb.ZstdFilter()]),
    tiledb.Attr("b", dtype=np.int32, filters=[tiledb.DeltaFilter(), tiledb.ZstdFilter()])])
tiledb.Array.create(uri, schema)
rng = np.random.default_rng(26)
with tiledb.open(uri, "w", timestamp=1) as A:
    A[:, :] = {"a": rng.normal(size=(256, 256)), "b": rng.integers(0, 1000, (256, 256), dtype=np.int32)}
"#;

/// Writes a fragment every 0.2 s at later and later timestamps, and every fourth time
/// consolidates the last four and vacuums them, until the stop file exists.
const WRITER: &str = r#"
import sys, os, time, numpy as np, tiledb
uri, stop = sys.argv[1], sys.argv[2]
t, i = 10_000_000, 0
while not os.path.exists(stop):
    i += 1
    t += 1
    with tiledb.open(uri, "w", timestamp=t) as A:
        A[0:64, 0:64] = {"a": np.full((64, 64), float(i)), "b": np.full((64, 64), i, dtype=np.int32)}
    if i % 4 == 0:
        cfg = tiledb.Config({"sm.consolidation.timestamp_start": str(t - 3),
                             "sm.consolidation.timestamp_end": str(t)})
        tiledb.consolidate(uri, config=cfg)
        tiledb.vacuum(uri)
    time.sleep(0.2)
print(i)
"#;

/// What a reader reads, with the bytes `fragfs cat`'s tree gave before the load.
struct Expected {
    /// Files inside a fragment (every copied fragment has the same), by path inside it.
    fragment_files: Vec<(String, Vec<u8>)>,
    /// Fragments' JSON files (each names its fragment), by path from the root.
    fragment_json: Vec<(String, Vec<u8>)>,
    /// Files of `at/<T>` states (merged files, text, Zarr), by path from the root.
    state_files: Vec<(String, Vec<u8>)>,
    fragments: Vec<String>,
    states: Vec<u64>,
}

fn file_paths(tree: &ArrayTree, dir: &str) -> Vec<String> {
    let mut out = Vec::new();
    let ino = tree.resolve(dir).unwrap();
    for e in tree.list(ino).unwrap() {
        let path = format!("{dir}/{}", e.name);
        match e.kind {
            Kind::Dir => out.extend(file_paths(tree, &path)),
            Kind::File => out.push(path),
        }
    }
    out
}

fn expected(array: &Path) -> Expected {
    let tree = ArrayTree::open_path(array, Default::default(), 256 << 20).unwrap();
    let read = |path: &str| read_all(&tree, tree.resolve(path).unwrap()).unwrap();
    let fragments: Vec<String> = tree
        .list(tree.resolve("fragments").unwrap())
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(fragments.len() as u64, FRAGMENTS);
    let first = format!("fragments/{}", fragments[0]);
    // The fragment's JSON files and quick looks (`values.png`: `fragfs:source`) name
    // it: those are read for some fragments, each its own.
    let (json, fragment_files): (Vec<String>, Vec<String>) = file_paths(&tree, &first)
        .into_iter()
        .map(|p| p[first.len() + 1..].to_string())
        .partition(|p| p.ends_with(".json") || p.ends_with(".png"));
    let fragment_files = fragment_files
        .into_iter()
        .map(|p| {
            let bytes = read(&format!("{first}/{p}"));
            (p, bytes)
        })
        .collect();
    let mut fragment_json = Vec::new();
    for f in fragments.iter().step_by(50) {
        for p in &json {
            let path = format!("fragments/{f}/{p}");
            let bytes = read(&path);
            fragment_json.push((path, bytes));
        }
    }
    let states: Vec<u64> = vec![FIRST, FIRST + 333, FIRST + 1_234, FIRST + FRAGMENTS - 1];
    let mut state_files = Vec::new();
    for t in &states {
        // A Zarr chunk has a v2 key (`a/1.2`) and a v3 key (`a/c/1/2`) with the same
        // bytes (tests/zarr.rs): read once, expected at both (each read merges up to
        // 2,000 fragments, the better part of this setup in a debug build).
        let mut chunks: HashMap<String, Vec<u8>> = HashMap::new();
        for p in file_paths(&tree, &format!("at/{t}")) {
            // Whole-array text (cells.csv: 65,536 lines per state) is left to the
            // per-attribute text files, which are read. fragments.svg draws every
            // fragment, those the writer adds after T too: it changes as the writer
            // writes (docs/pictures.md).
            if p.ends_with("cells.csv") || p.ends_with("fragments.svg") {
                continue;
            }
            let bytes = match zarr_chunk_key(&p) {
                Some(key) => chunks.entry(key).or_insert_with(|| read(&p)).clone(),
                None => read(&p),
            };
            state_files.push((p, bytes));
        }
    }
    Expected {
        fragment_files,
        fragment_json,
        state_files,
        fragments,
        states,
    }
}

/// The chunk a Zarr chunk file of a state holds, the same for its v2 and v3 keys
/// (`at/T/zarr/a/1.2` and `at/T/zarr/a/c/1/2`: `a 1.2`); `None` for other files.
fn zarr_chunk_key(path: &str) -> Option<String> {
    let (_, rest) = path.split_once("/zarr/")?;
    let (array, key) = rest.split_once('/')?;
    let key = match key.strip_prefix("c/") {
        Some(v3) => v3.replace('/', "."),
        None => key.to_string(),
    };
    let is_chunk = !key.is_empty() && key.split('.').all(|i| i.parse::<u64>().is_ok());
    is_chunk.then(|| format!("{array} {key}"))
}

struct Load<'a> {
    mnt: &'a Path,
    want: &'a Expected,
    start: Instant,
    end: Instant,
    failures: Mutex<Vec<String>>,
    /// The longest wait of a small request, in microseconds, and what it was.
    longest: Mutex<(Duration, String)>,
    ops: Mutex<HashMap<&'static str, u64>>,
    new_states: AtomicU64,
    originals: std::collections::HashSet<String>,
}

impl Load<'_> {
    fn fail(&self, what: String) {
        let mut f = self.failures.lock().unwrap();
        if f.len() < 20 {
            f.push(what);
        }
    }

    fn small(&self, what: String, took: Duration) {
        let mut l = self.longest.lock().unwrap();
        if took > l.0 {
            *l = (took, what);
        }
    }

    fn check(&self, path: &Path, got: std::io::Result<Vec<u8>>, want: &[u8]) {
        match got {
            Ok(got) if got == want => {}
            Ok(got) => self.fail(format!(
                "{}: {} bytes differ from the {} expected",
                path.display(),
                got.len(),
                want.len()
            )),
            Err(e) => self.fail(format!("{}: {e}", path.display())),
        }
    }

    fn reader(&self, id: usize) {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ ((id as u64 + 1) * 0x1000_0001));
        let mut n = 0u64;
        while Instant::now() < self.end {
            n += 1;
            let op = match rng.below(16) {
                0..=3 => self.cat_fragment_file(&mut rng),
                4..=5 => self.cat_state_file(&mut rng),
                6..=8 => self.random_read(&mut rng),
                9 => self.text_file(&mut rng),
                10 => self.ls_lr(&mut rng),
                11..=12 => self.new_state(id, n),
                13 => self.zarr_chunk(&mut rng),
                _ => self.writers_fragment(&mut rng),
            };
            *self.ops.lock().unwrap().entry(op).or_default() += 1;
        }
    }

    fn fragment_path(&self, rng: &mut Rng, file: &str) -> PathBuf {
        let f = &self.want.fragments[rng.below(self.want.fragments.len())];
        self.mnt.join("fragments").join(f).join(file)
    }

    fn cat_fragment_file(&self, rng: &mut Rng) -> &'static str {
        let (file, want) = &self.want.fragment_files[rng.below(self.want.fragment_files.len())];
        let path = self.fragment_path(rng, file);
        self.check(&path, std::fs::read(&path), want);
        "cat of a fragment's file"
    }

    fn cat_state_file(&self, rng: &mut Rng) -> &'static str {
        let files = if rng.below(3) == 0 {
            &self.want.fragment_json
        } else {
            &self.want.state_files
        };
        let (file, want) = &files[rng.below(files.len())];
        let path = self.mnt.join(file);
        self.check(&path, std::fs::read(&path), want);
        "cat of a merged file or JSON"
    }

    fn random_read(&self, rng: &mut Rng) -> &'static str {
        use std::os::unix::fs::FileExt;
        let (path, want) = if rng.below(2) == 0 {
            let (file, want) = &self.want.fragment_files[rng.below(self.want.fragment_files.len())];
            (self.fragment_path(rng, file), want)
        } else {
            let (file, want) = &self.want.state_files[rng.below(self.want.state_files.len())];
            (self.mnt.join(file), want)
        };
        if path.extension().is_some_and(|e| e == "txt" || e == "csv") {
            return self.text_file(rng); // text is read whole (its size shows once read)
        }
        let offset = rng.below(want.len().max(1)) as u64;
        let started = Instant::now();
        let got = std::fs::File::open(&path).and_then(|f| {
            let mut buf = vec![0; 4096];
            let n = f.read_at(&mut buf, offset)?;
            buf.truncate(n);
            Ok(buf)
        });
        // (A merged file's first read may wait for its state's merge, by design: one
        // reader merges, the others of that state wait; so only fragments' files count.)
        if path.starts_with(self.mnt.join("fragments")) {
            self.small(format!("4 KiB of {}", path.display()), started.elapsed());
        }
        let end = (offset as usize + 4096).min(want.len());
        self.check(&path, got, &want[(offset as usize).min(end)..end]);
        "random 4 KiB read"
    }

    fn text_file(&self, rng: &mut Rng) -> &'static str {
        let texts: Vec<&(String, Vec<u8>)> = self
            .want
            .state_files
            .iter()
            .chain(&self.want.fragment_files)
            .filter(|(p, _)| p.ends_with(".txt"))
            .collect();
        let (file, want) = texts[rng.below(texts.len())];
        let path = if file.starts_with("at/") {
            self.mnt.join(file)
        } else {
            self.fragment_path(rng, file)
        };
        self.check(&path, std::fs::read(&path), want);
        "text file"
    }

    fn ls_lr(&self, rng: &mut Rng) -> &'static str {
        // Growing parts: from one fragment at the start to 20 at the end, and a state.
        let done =
            self.start.elapsed().as_secs_f64() / (self.end - self.start).as_secs_f64().max(1.0);
        let k = 1 + (done * 19.0) as usize;
        let mut cmd = std::process::Command::new("ls");
        cmd.arg("-lR");
        for _ in 0..k {
            cmd.arg(self.fragment_path(rng, ""));
        }
        let t = self.want.states[rng.below(self.want.states.len())];
        cmd.arg(self.mnt.join(format!("at/{t}")));
        match cmd.output() {
            Ok(out) if out.status.success() => {}
            Ok(out) => self.fail(format!(
                "ls -lR: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )),
            Err(e) => self.fail(format!("ls -lR: {e}")),
        }
        "ls -lR"
    }

    fn new_state(&self, id: usize, n: u64) -> &'static str {
        // Never the same T twice in the run: the daemon meets new paths all along.
        let t = 50_000_000 + id as u64 * 100_000_000 + n;
        let path = self.mnt.join(format!("at/{t}"));
        let started = Instant::now();
        match std::fs::metadata(&path) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => self.fail(format!("{}: not a folder", path.display())),
            Err(e) => self.fail(format!("{}: {e}", path.display())),
        }
        self.small(format!("stat {}", path.display()), started.elapsed());
        self.new_states.fetch_add(1, Ordering::Relaxed);
        "lookup of a new at/<T>"
    }

    fn zarr_chunk(&self, rng: &mut Rng) -> &'static str {
        let zarr: Vec<&(String, Vec<u8>)> = self
            .want
            .state_files
            .iter()
            .filter(|(p, _)| p.contains("/zarr/"))
            .collect();
        let (file, want) = zarr[rng.below(zarr.len())];
        let path = self.mnt.join(file);
        self.check(&path, std::fs::read(&path), want);
        "Zarr file"
    }

    fn writers_fragment(&self, rng: &mut Rng) -> &'static str {
        let listed = match std::fs::read_dir(self.mnt.join("fragments")) {
            Ok(l) => l,
            Err(e) => {
                self.fail(format!("listing fragments/: {e}"));
                return "read of a writer's fragment";
            }
        };
        let new: Vec<PathBuf> = listed
            .filter_map(|e| e.ok())
            .filter(|e| !self.originals.contains(&*e.file_name().to_string_lossy()))
            .map(|e| e.path())
            .collect();
        if new.is_empty() {
            return "read of a writer's fragment";
        }
        let path = new[rng.below(new.len())].join("a/values.bin");
        match std::fs::read(&path) {
            // 64 x 64 doubles, consolidated or not.
            Ok(bytes) if bytes.len() == 64 * 64 * 8 => {}
            Ok(bytes) => self.fail(format!("{}: {} bytes", path.display(), bytes.len())),
            // Vacuumed between the listing and the read: a clean error.
            Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT | libc::ESTALE)) => {}
            Err(e) => self.fail(format!("{}: {e}", path.display())),
        }
        "read of a writer's fragment"
    }
}

/// VmRSS of a process, in bytes.
fn rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kb * 1024
}

#[test]
fn a_mount_holds_under_a_long_mixed_load_with_a_writer() {
    if !fuse_available("soak") {
        return;
    }
    let Some(python) = python_with("tiledb") else {
        return;
    };
    let seconds: u64 = std::env::var("FRAGFS_SOAK_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(240);
    // 2,000 fragment folders: in memory where there is room.
    let tmp = scratch_dir();
    let source = tmp.path().join("source");
    run_ok(
        std::process::Command::new(&python)
            .args(["-c", MAKE_SOURCE])
            .arg(&source),
    );
    let array = tmp.path().join("array");
    many_fragments_from(&source, &array, FRAGMENTS, FIRST);
    let want = expected(&array);

    let mnt = tmp.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let log = tmp.path().join("fragfs.log");
    let mut daemon = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            r#"ulimit -n {NOFILE} && exec "$0" mount -f "$1" "$2" --cache-size {CACHE} --log-file "$3""#
        ))
        .arg(env!("CARGO_BIN_EXE_fragfs"))
        .arg(&array)
        .arg(&mnt)
        .arg(&log)
        .spawn()
        .unwrap();
    let _unmount = UnmountOnDrop(&mnt);
    let started = Instant::now();
    while !is_mounted(&mnt) {
        assert!(started.elapsed() < Duration::from_secs(60), "never mounted");
        assert!(daemon.try_wait().unwrap().is_none(), "the daemon ended");
        std::thread::sleep(Duration::from_millis(20));
    }

    let stop = tmp.path().join("stop");
    let writer = std::process::Command::new(&python)
        .args(["-c", WRITER])
        .arg(&array)
        .arg(&stop)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();

    let start = Instant::now();
    let load = Load {
        mnt: &mnt,
        want: &want,
        start,
        end: start + Duration::from_secs(seconds),
        failures: Mutex::new(Vec::new()),
        longest: Mutex::new((Duration::ZERO, String::new())),
        ops: Mutex::new(HashMap::new()),
        new_states: AtomicU64::new(0),
        originals: want.fragments.iter().cloned().collect(),
    };
    let third = Arc::new(AtomicU64::new(0));
    let sampling = AtomicBool::new(true);
    std::thread::scope(|s| {
        for id in 0..READERS {
            let load = &load;
            s.spawn(move || load.reader(id));
        }
        // The daemon's RSS a third of the way in, to compare with the end.
        let (third, sampling, pid) = (third.clone(), &sampling, daemon.id());
        s.spawn(move || {
            let at = start + Duration::from_secs(seconds / 3);
            while Instant::now() < at && sampling.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(200));
            }
            third.store(rss(pid), Ordering::Relaxed);
        });
    });
    sampling.store(false, Ordering::Relaxed);
    std::fs::write(&stop, b"").unwrap();
    let written = writer.wait_with_output().unwrap();
    assert!(written.status.success(), "the writer failed: {written:?}");

    let ops = load.ops.lock().unwrap().clone();
    let (longest, what) = load.longest.lock().unwrap().clone();
    let daemon_rss = rss(daemon.id());
    let fds = std::fs::read_dir(format!("/proc/{}/fd", daemon.id()))
        .unwrap()
        .count();
    let third = third.load(Ordering::Relaxed);
    let report = format!(
        "soak: {seconds} s, {READERS} readers, {} writes by TileDB-Py; operations: {ops:?}\n\
         soak: longest small request {longest:?} ({what}); daemon RSS {} MiB at a third, {} \
         MiB at the end (cache {} MiB); {fds} descriptors; {} new at/<T> looked up\n",
        String::from_utf8_lossy(&written.stdout).trim(),
        third >> 20,
        daemon_rss >> 20,
        CACHE >> 20,
        load.new_states.load(Ordering::Relaxed)
    );
    eprint!("{report}");
    // Also kept after the run (the test harness shows a passing test's output only
    // with --nocapture): the figures docs/reliability.md quotes.
    let _ = std::fs::write(
        Path::new(env!("CARGO_TARGET_TMPDIR")).join("soak-report.txt"),
        &report,
    );
    let failures = load.failures.lock().unwrap().clone();
    assert!(failures.is_empty(), "failed reads: {failures:#?}");
    assert!(
        daemon.try_wait().unwrap().is_none(),
        "the daemon ended during the load"
    );
    let logged = std::fs::read_to_string(&log).unwrap_or_default();
    for bad in ["Too many open files", "panicked"] {
        assert!(!logged.contains(bad), "the daemon's log: {bad}\n{logged}");
    }
    assert!(
        longest <= WAIT_BOUND,
        "a small request waited {longest:?}: {what}"
    );
    assert!(fds <= FD_BOUND, "{fds} descriptors open in the daemon");
    assert!(
        daemon_rss <= CACHE + RSS_OVERHEAD,
        "daemon RSS {} MiB, more than the cache ({} MiB) + {} MiB",
        daemon_rss >> 20,
        CACHE >> 20,
        RSS_OVERHEAD >> 20
    );
    assert!(
        daemon_rss <= third + RSS_GROWTH,
        "daemon RSS grew from {} to {} MiB",
        third >> 20,
        daemon_rss >> 20
    );
    for op in [
        "cat of a fragment's file",
        "cat of a merged file or JSON",
        "random 4 KiB read",
        "text file",
        "ls -lR",
        "lookup of a new at/<T>",
        "Zarr file",
        "read of a writer's fragment",
    ] {
        assert!(ops.get(op).copied().unwrap_or(0) > 0, "no {op} ran");
    }

    let out = std::process::Command::new(env!("CARGO_BIN_EXE_fragfs"))
        .arg("umount")
        .arg(&mnt)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let status = daemon.wait().unwrap();
    assert!(status.success(), "the daemon exited with {status}");
}
