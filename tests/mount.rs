//! Real FUSE mounts: what is read through the mount equals what `fragfs cat` serves and
//! what TileDB read back; listing decodes nothing; writes are refused; concurrent readers
//! get exact bytes; bad data is EIO while the daemon keeps serving; signals and
//! `fragfs umount` unmount.
//!
//! Every mount gets its own temporary mount point and is unmounted when its guard drops,
//! also when an assertion failed. Without /dev/fuse the tests say why and skip, except
//! under CI=true, where they must run.

mod common;

use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::mounting::*;
use common::*;
use fragfs::view::{ArrayTree, FileTree, ROOT};

/// A `fragfs mount` process (daemon or foreground), unmounted and reaped on drop.
struct Daemon {
    mnt: PathBuf,
    child: Option<Child>,
    _dir: tempfile::TempDir,
}

impl Drop for Daemon {
    fn drop(&mut self) {
        force_unmount(&self.mnt);
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn fragfs() -> Command {
    Command::new(env!("CARGO_BIN_EXE_fragfs"))
}

/// The same tree through the view, without FUSE.
fn view_files(view: &ArrayTree) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![(String::new(), ROOT)];
    while let Some((path, dir)) = stack.pop() {
        for e in view.list(dir).unwrap() {
            let child = if path.is_empty() {
                e.name.clone()
            } else {
                format!("{path}/{}", e.name)
            };
            if e.is_dir() {
                stack.push((child, e.ino));
            } else {
                out.push(child);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn every_fixture_reads_through_the_mount_as_through_cat_and_as_tiledb_wrote_it() {
    if !fuse_available("fixtures through the mount") {
        return;
    }
    let (arrays, _) = fixture_files();
    assert!(arrays.len() >= 5);
    for (array, expected) in &arrays {
        let m = InProcess::new(array, expected, 64 << 20, 2);
        let files = files_under(m.path());
        assert_eq!(
            files,
            view_files(&m.view),
            "{}: trees differ",
            array.display()
        );
        for f in &files {
            // The same bytes, or the same failure (a state TileDB cannot read either).
            let through_mount = std::fs::read(m.path().join(f)).map_err(|e| e.raw_os_error());
            let through_cat = m.view.read(f).map_err(|_| Some(libc::EIO));
            assert!(
                through_mount == through_cat,
                "{}: {f} differs: {:?} / {:?}",
                array.display(),
                through_mount.as_ref().map(Vec::len),
                through_cat.as_ref().map(Vec::len)
            );
        }
        let fields = check_tree(&Mounted(m.path().to_path_buf()), expected)
            .unwrap_or_else(|e| panic!("{}: {e}", array.display()));
        assert!(fields > 0);
        // The merged view too, as TileDB reads the array (latest and every timestamp).
        let merged_json = array.with_extension("merged.json");
        if let Ok(bytes) = std::fs::read(&merged_json) {
            let merged: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
            check_merged(&Mounted(m.path().to_path_buf()), &merged)
                .unwrap_or_else(|e| panic!("{} merged: {e}", array.display()));
        }
    }
}

#[test]
fn shared_corpus_reads_byte_exact_through_the_mount() {
    let Some(corpus) = shared_or_skip(shared_corpus()) else {
        return;
    };
    if !fuse_available("shared corpus through the mount") {
        return;
    }
    let mut report: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut failures = Vec::new();
    let mut fields = 0;
    for (version, dir) in corpus_versions(&corpus) {
        let folder = format!("v{version}");
        for (array, expected) in expected_files(&dir) {
            let m = InProcess::new(&array, &expected, 16 << 20, 2);
            let r = report.entry(folder.clone()).or_default();
            let merged_json = array.with_extension("merged.json");
            let merged: serde_json::Value =
                serde_json::from_slice(&std::fs::read(&merged_json).unwrap()).unwrap();
            let mounted = Mounted(m.path().to_path_buf());
            // Per fragment, and merged (latest/ and at/<T>/) as TileDB reads the array.
            let checked = check_tree(&mounted, &expected)
                .and_then(|n| check_merged(&mounted, &merged).map(|_| n));
            match checked {
                Ok(n) => {
                    r.0 += 1;
                    fields += n;
                }
                Err(e) => {
                    r.1 += 1;
                    failures.push(format!("{}: {e}", array.display()));
                }
            }
        }
    }
    for (v, (ok, bad)) in &report {
        println!("{v}: {ok} arrays byte-exact through the mount, {bad} not");
    }
    println!("{fields} fields checked through the mount");
    // Every format version is read (formats 2 to 22 in the corpus): all 525 arrays.
    let passed: usize = report.values().map(|r| r.0).sum();
    assert_eq!(
        passed + failures.len(),
        525,
        "arrays checked through the mount"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn is_text_file(path: &str) -> bool {
    path.ends_with(".txt") || path.ends_with(".csv")
}

/// `cells.parquet`, `cells.arrow`: sized from metadata where it gives every fact,
/// else when first opened (docs/tables.md).
fn is_table_file(path: &str) -> bool {
    path.ends_with("/cells.parquet") || path.ends_with("/cells.arrow")
}

/// Listing and stat-ing decode nothing; only the text files (whose exact size needs one
/// counting pass over their cells) may, and only when stat-ed or read.
#[test]
fn listing_and_stat_decode_nothing_and_ls_lr_shows_exact_sizes() {
    if !fuse_available("ls -lR") {
        return;
    }
    let (array, expected) = fixture("sparse_var_nullable");
    let m = InProcess::new(&array, &expected, 64 << 20, 2);
    let files = view_files(&m.view);
    let size_of = |f: &str| m.view.size(m.view.resolve(f).unwrap()).unwrap();
    // What `stat` shows before anything is read: exact sizes from metadata, and 0 for
    // files whose size needs a pass over cells (text files, sparse merged files).
    let shown: BTreeMap<String, u64> = files
        .iter()
        .map(|f| {
            let st = m.view.stat(m.view.resolve(f).unwrap()).unwrap();
            assert!(st.exact_size || st.size == 0, "{f}");
            assert!(
                st.exact_size
                    || is_text_file(f)
                    || is_table_file(f)
                    || f.starts_with("latest/")
                    || f.starts_with("at/"),
                "{f}"
            );
            (f.clone(), st.size)
        })
        .collect();
    assert_eq!(m.view.chunks_decoded(), 0, "stat decoded a chunk");
    // Names of everything, and `ls -l` of the folders that hold no text file.
    let names = run_ok(Command::new("ls").arg("-R").arg(m.path()));
    assert!(
        names.contains("values.txt") && names.contains("cells.csv"),
        "{names}"
    );
    run_ok(
        Command::new("ls")
            .arg("-l")
            .arg(m.path())
            .arg(m.path().join("fragments")),
    );
    // `find` stats every other file: exact sizes, from metadata.
    let found = run_ok(Command::new("find").arg(m.path()).args([
        "-type", "f", "!", "-name", "*.txt", "!", "-name", "*.csv", "-printf", "%s %P\\n",
    ]));
    assert_eq!(
        m.view.chunks_decoded(),
        0,
        "listing or stat decoded a chunk"
    );
    let binary: Vec<&String> = files.iter().filter(|f| !is_text_file(f)).collect();
    assert_eq!(found.lines().count(), binary.len());
    for f in &binary {
        assert!(
            found.lines().any(|l| l == format!("{} {f}", shown[*f])),
            "{f}:\n{found}"
        );
    }
    // `ls -lR` decodes nothing either: a text file, whose size is only known once
    // rendered, shows 0 until it was read (as procfs files do).
    let shows = |listing: &str, name: &str, size: u64| {
        listing.lines().any(|l| {
            l.ends_with(&format!(" {name}"))
                && l.split_whitespace().nth(4) == Some(&size.to_string())
        })
    };
    let listing = run_ok(Command::new("ls").arg("-lR").arg(m.path()));
    assert_eq!(m.view.chunks_decoded(), 0, "ls -lR decoded a chunk");
    for f in &files {
        let name = f.rsplit('/').next().unwrap();
        let size = shown[f];
        assert!(
            shows(&listing, name, size),
            "ls -l shows no {name} of {size} bytes:\n{listing}"
        );
    }
    // Read whole (they are served with direct I/O until their size is known), text
    // files give all their text; from then on `ls -l` shows their exact size.
    for f in files.iter().filter(|f| shown[*f] == 0) {
        let read = std::fs::read(m.path().join(f)).unwrap();
        assert_eq!(read.len() as u64, size_of(f), "{f}: the whole text");
    }
    let listing = run_ok(Command::new("ls").arg("-lR").arg(m.path()));
    for f in &files {
        let (size, name) = (size_of(f), f.rsplit('/').next().unwrap());
        assert!(
            shows(&listing, name, size),
            "ls -l shows no {name} of {size} bytes:\n{listing}"
        );
    }
    let du = run_ok(Command::new("du").arg("-sb").arg(m.path()));
    let total: u64 = files.iter().map(|f| size_of(f)).sum();
    let du_bytes: u64 = du.split_whitespace().next().unwrap().parse().unwrap();
    assert_eq!(du_bytes, total, "du -b counts exactly the files' sizes");
}

/// A text file's size, once shown, stays shown even when a small cache evicts what was
/// rendered: the kernel trusts a size it was given for files opened since (page cache),
/// so going back to 0 would cut their reads short.
#[test]
fn a_text_size_once_known_survives_eviction() {
    let (array, expected) = fixture("dense_basic");
    let view = ArrayTree::open_path(&array, options_for(&expected), 16 << 10).unwrap();
    let texts: Vec<String> = view_files(&view)
        .into_iter()
        .filter(|f| is_text_file(f))
        .collect();
    assert!(texts.len() >= 4);
    for f in &texts {
        let ino = view.resolve(f).unwrap();
        let whole = view.read(f).unwrap();
        let st = view.stat(ino).unwrap();
        assert!(st.exact_size && st.size == whole.len() as u64, "{f}");
    }
    // Everything was read through a 16 KiB cache: the early indexes are long evicted.
    for f in &texts {
        let st = view.stat(view.resolve(f).unwrap()).unwrap();
        assert!(
            st.exact_size && st.size > 0,
            "{f} went back to an unknown size"
        );
    }
}

/// Text files whose size is not known yet (`stat` says 0, as for procfs files) are read
/// whole by the tools people use on them, each on a fresh mount (so the size is still
/// unknown when the tool opens the file): cat, cp, wc, head, tail, Python, numpy, pandas.
#[test]
fn text_files_of_unknown_size_are_read_whole_by_usual_tools() {
    if !fuse_available("text files of unknown size") {
        return;
    }
    let Some(python) = python_with("pandas") else {
        return;
    };
    let (array, expected) = fixture("sample");
    let frag = first_fragment(&expected);
    let csv_path = format!("fragments/{frag}/cells.csv");
    let txt_path = format!("fragments/{frag}/temperature/values.txt");
    let whole = |path: &str| {
        let view = open_view(&array, &expected).unwrap();
        read_all(&view, view.resolve(path).unwrap()).unwrap()
    };
    let (csv, txt) = (whole(&csv_path), whole(&txt_path));
    let csv_lines: Vec<&[u8]> = csv.split_inclusive(|&b| b == b'\n').collect();
    let txt_values: Vec<f64> = String::from_utf8(txt.clone())
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    type Check<'a> = Box<dyn Fn(&Path) -> Result<(), String> + 'a>;
    let check = |what: &str, got: Vec<u8>, want: &[u8]| -> Result<(), String> {
        (got == want).then_some(()).ok_or(format!(
            "{what}: got {} bytes {:?}...",
            got.len(),
            String::from_utf8_lossy(&got[..got.len().min(80)])
        ))
    };
    let out = |cmd: &mut Command| -> Vec<u8> { cmd.output().unwrap().stdout };
    let tools: Vec<(&str, Check)> = vec![
        (
            "cat",
            Box::new(|f: &Path| check("cat", out(Command::new("cat").arg(f)), &csv)),
        ),
        (
            "cp",
            Box::new(|f: &Path| {
                let copy = tempfile::NamedTempFile::new().unwrap();
                run_ok(Command::new("cp").arg(f).arg(copy.path()));
                check("cp", std::fs::read(copy.path()).unwrap(), &csv)
            }),
        ),
        (
            "wc -c",
            Box::new(|f: &Path| {
                let n = String::from_utf8(out(Command::new("wc").arg("-c").arg(f))).unwrap();
                check(
                    "wc -c",
                    n.split_whitespace()
                        .next()
                        .unwrap_or("")
                        .as_bytes()
                        .to_vec(),
                    csv.len().to_string().as_bytes(),
                )
            }),
        ),
        (
            "head -n 3",
            Box::new(|f: &Path| {
                check(
                    "head",
                    out(Command::new("head").args(["-n", "3"]).arg(f)),
                    &csv_lines[..3].concat(),
                )
            }),
        ),
        (
            "tail -n 2",
            Box::new(|f: &Path| {
                check(
                    "tail",
                    out(Command::new("tail").args(["-n", "2"]).arg(f)),
                    &csv_lines[csv_lines.len() - 2..].concat(),
                )
            }),
        ),
        (
            "python read()",
            Box::new(|f: &Path| {
                let got = out(Command::new(&python)
                    .args([
                        "-c",
                        "import sys; sys.stdout.buffer.write(open(sys.argv[1], 'rb').read())",
                    ])
                    .arg(f));
                check("python", got, &csv)
            }),
        ),
        (
            "pandas read_csv",
            Box::new(|f: &Path| {
                let got = out(Command::new(&python).args(["-c", "import sys, pandas; d = pandas.read_csv(sys.argv[1]); print(len(d), ','.join(d.columns))"]).arg(f));
                let header = String::from_utf8_lossy(csv_lines[0]).trim_end().to_string();
                check(
                    "pandas",
                    got,
                    format!("{} {header}\n", csv_lines.len() - 1).as_bytes(),
                )
            }),
        ),
    ];
    let mut failures = Vec::new();
    for (tool, run) in &tools {
        let m = InProcess::new(&array, &expected, 64 << 20, 2);
        let file = m.path().join(&csv_path);
        assert_eq!(
            std::fs::metadata(&file).unwrap().len(),
            0,
            "{tool}: size not known yet"
        );
        if let Err(e) = run(&file) {
            failures.push(format!("{tool}: {e}"));
        }
    }
    // numpy on a values.txt of floats.
    let m = InProcess::new(&array, &expected, 64 << 20, 2);
    let file = m.path().join(&txt_path);
    assert_eq!(std::fs::metadata(&file).unwrap().len(), 0);
    let got = out(Command::new(&python)
        .args([
            "-c",
            "import sys, numpy; print(numpy.loadtxt(sys.argv[1]).tolist())",
        ])
        .arg(&file));
    let want = format!("{txt_values:?}\n");
    if got != want.as_bytes() {
        failures.push(format!(
            "numpy: {} vs {want}",
            String::from_utf8_lossy(&got)
        ));
    }
    // And once read, the size is known.
    assert_eq!(std::fs::metadata(&file).unwrap().len(), txt.len() as u64);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_kind_of_write_is_refused_with_erofs() {
    if !fuse_available("EROFS") {
        return;
    }
    let (array, expected) = expected_files(&fixtures()).into_iter().next().unwrap();
    let m = InProcess::new(&array, &expected, 64 << 20, 2);
    let root = m.path();
    let file = root.join("array.json");
    let erofs = |what: &str, r: std::io::Result<()>| {
        let e = r.expect_err(what);
        assert_eq!(e.raw_os_error(), Some(libc::EROFS), "{what}: {e}");
    };
    erofs(
        "create",
        std::fs::File::create(root.join("new")).map(|_| ()),
    );
    erofs(
        "open for writing",
        std::fs::OpenOptions::new()
            .write(true)
            .open(&file)
            .map(|_| ()),
    );
    erofs(
        "truncate",
        std::fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(&file)
            .map(|_| ()),
    );
    erofs("mkdir", std::fs::create_dir(root.join("d")));
    erofs("unlink", std::fs::remove_file(&file));
    erofs("rmdir", std::fs::remove_dir(root.join("schemas")));
    erofs("rename", std::fs::rename(&file, root.join("b.json")));
    erofs("symlink", std::os::unix::fs::symlink("x", root.join("l")));
    erofs("link", std::fs::hard_link(&file, root.join("h")));
    erofs(
        "chmod",
        std::fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(0o777)),
    );
    // Reading still works, and the array folder is untouched by all of it.
    assert!(!std::fs::read(&file).unwrap().is_empty());
}

#[test]
fn thirty_two_threads_reading_random_ranges_of_every_file_get_exact_bytes() {
    if !fuse_available("32 threads") {
        return;
    }
    let (array, expected) = fixture("dense_basic");
    // A cache far smaller than the data, so threads evict each other's chunks.
    let m = InProcess::new(&array, &expected, 48 << 10, 4);
    let reference = open_view(&array, &expected).unwrap();
    let files: Vec<(String, Vec<u8>)> = view_files(&reference)
        .into_iter()
        .map(|f| {
            let bytes = reference.read(&f).unwrap();
            (f, bytes)
        })
        .collect();
    // Binary, NumPy, text and JSON files: every read path at once.
    assert!(files.len() >= 30, "{}", files.len());
    std::thread::scope(|s| {
        for t in 0..32u64 {
            let files = &files;
            let root = m.path();
            s.spawn(move || {
                let mut seed = 0x9E37_79B9_7F4A_7C15u64 ^ t;
                let mut next = move || {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    seed
                };
                for _ in 0..200 {
                    let (name, want) = &files[(next() % files.len() as u64) as usize];
                    let f = std::fs::File::open(root.join(name)).unwrap();
                    let len = want.len() as u64;
                    let offset = next() % (len + 1);
                    let n = (next() % 5000).min(len - offset) as usize;
                    let mut buf = vec![0u8; n];
                    f.read_exact_at(&mut buf, offset).unwrap();
                    assert!(
                        buf[..] == want[offset as usize..offset as usize + n],
                        "{name} at {offset}+{n}"
                    );
                }
            });
        }
    });
    assert!(m.view.cache_used() <= 48 << 10);
}

/// Mounts `array` with the `fragfs` binary as a daemon, logging to a file.
fn daemon(array: &Path, extra: &[&str]) -> (Daemon, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let log = dir.path().join("fragfs.log");
    run_ok(
        fragfs()
            .arg("mount")
            .arg(array)
            .arg(&mnt)
            .arg("--log-file")
            .arg(&log)
            .args(extra),
    );
    assert!(is_mounted(&mnt), "mount returned before the mount was live");
    (
        Daemon {
            mnt,
            child: None,
            _dir: dir,
        },
        log,
    )
}

#[test]
fn daemon_survives_a_corrupt_tile_and_names_it_in_the_log() {
    if !fuse_available("corrupt tile") {
        return;
    }
    let (_tmp, array, frag) = copy_fixture("dense_basic");
    corrupt_first_chunk(&frag.join("a1.tdb"));
    let name = frag.file_name().unwrap().to_str().unwrap();
    let (d, log) = daemon(&array, &[]);
    let bad = d.mnt.join(format!("fragments/{name}/f64_zstd/values.bin"));
    let err = std::fs::read(&bad).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EIO), "{err}");
    // Everything else is still served, by the same daemon.
    let good = d.mnt.join(format!("fragments/{name}/i32/values.bin"));
    assert!(!std::fs::read(&good).unwrap().is_empty());
    assert!(!std::fs::read(d.mnt.join("array.json")).unwrap().is_empty());
    assert_eq!(
        std::fs::read(&bad).unwrap_err().raw_os_error(),
        Some(libc::EIO),
        "a second read of the bad file is EIO again"
    );
    assert!(is_mounted(&d.mnt));
    let logged = std::fs::read_to_string(&log).unwrap();
    let line = logged
        .lines()
        .find(|l| l.contains("ERROR"))
        .unwrap_or_else(|| panic!("no error logged:\n{logged}"));
    assert_names(line, &[name, "a1.tdb", "tile 0", "chunk 0", "ZSTD"]);
}

#[test]
fn mount_returns_when_live_and_umount_unmounts() {
    if !fuse_available("daemon mode") {
        return;
    }
    let (array, _) = expected_files(&fixtures()).into_iter().next().unwrap();
    let (d, _log) = daemon(&array, &["--cache-size", "8M", "--threads", "3"]);
    // No waiting: the command returned only once the mount was live.
    let names: Vec<_> = std::fs::read_dir(&d.mnt)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(names.contains(&"fragments".to_string()), "{names:?}");
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap();
    assert!(
        mounts
            .lines()
            .any(|l| l.starts_with("fragfs ") && l.contains(" ro,")),
        "the mount shows as fragfs, read-only:\n{mounts}"
    );
    // Busy: a file is open, so umount detaches lazily and says so.
    let mut open = std::fs::File::open(d.mnt.join("array.json")).unwrap();
    let out = fragfs().arg("umount").arg(&d.mnt).output().unwrap();
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("busy"), "{stderr}");
    assert!(!is_mounted(&d.mnt), "detached from the tree");
    let mut text = String::new();
    open.read_to_string(&mut text).unwrap();
    assert!(text.contains("fragments"), "the open file still reads");
    drop(open);
    // Not busy: unmounted at once, silently.
    let (d2, _log2) = daemon(&array, &[]);
    let out = fragfs().arg("umount").arg(&d2.mnt).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stderr.is_empty());
    assert!(!is_mounted(&d2.mnt));
    let out = fragfs().arg("umount").arg(&d2.mnt).output().unwrap();
    assert!(!out.status.success(), "unmounting twice is an error");
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a mount point"));
}

/// The kernel's read-ahead of a mount, from its backing device info in sysfs.
fn kernel_read_ahead_kib(mnt: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::metadata(mnt).unwrap().dev();
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let knob = format!("/sys/class/bdi/{major}:{minor}/read_ahead_kb");
    std::fs::read_to_string(&knob)
        .unwrap_or_else(|e| panic!("{knob}: {e}"))
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn kernel_read_ahead_is_raised_when_root_and_left_when_asked() {
    if !fuse_available("kernel read-ahead") {
        return;
    }
    let (array, _) = expected_files(&fixtures()).into_iter().next().unwrap();
    let root = unsafe_geteuid() == 0;
    let (d, log) = daemon(&array, &["-v"]);
    let logged = std::fs::read_to_string(&log).unwrap();
    if root {
        assert_eq!(kernel_read_ahead_kib(&d.mnt), 2048, "default 2M:\n{logged}");
        assert!(
            logged.contains("kernel read-ahead of the mount: 2048 KiB"),
            "{logged}"
        );
        let (d4, _) = daemon(&array, &["--read-ahead", "4M"]);
        assert_eq!(kernel_read_ahead_kib(&d4.mnt), 4096);
        let (d0, _) = daemon(&array, &["--read-ahead", "0"]);
        assert_eq!(
            kernel_read_ahead_kib(&d0.mnt),
            128,
            "0 leaves the kernel's value"
        );
    } else {
        println!("not root: checking only that the mount says it kept the kernel's value");
        assert!(
            logged.contains("kernel read-ahead left at its default"),
            "{logged}"
        );
    }
}

#[test]
fn sigterm_and_sigint_unmount_cleanly() {
    if !fuse_available("signals") {
        return;
    }
    let (array, _) = expected_files(&fixtures()).into_iter().next().unwrap();
    for signal in [libc::SIGTERM, libc::SIGINT] {
        let dir = tempfile::tempdir().unwrap();
        let mnt = dir.path().join("mnt");
        std::fs::create_dir(&mnt).unwrap();
        let child = fragfs()
            .arg("mount")
            .arg("-f")
            .arg(&array)
            .arg(&mnt)
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut d = Daemon {
            mnt: mnt.clone(),
            child: Some(child),
            _dir: dir,
        };
        let start = Instant::now();
        while !is_mounted(&mnt) {
            assert!(start.elapsed() < Duration::from_secs(10), "never mounted");
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(std::fs::read(mnt.join("schema.json")).is_ok());
        let child = d.child.as_mut().unwrap();
        // SAFETY: sending a signal to our own child process.
        assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0);
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            assert!(start.elapsed() < Duration::from_secs(20), "still running");
            std::thread::sleep(Duration::from_millis(20));
        };
        assert!(status.success(), "signal {signal}: exit {status}");
        assert!(!is_mounted(&mnt), "signal {signal} left the mount behind");
    }
}

#[test]
fn mount_failures_are_one_clear_line() {
    if !fuse_available("mount failures") {
        return;
    }
    let (array, _) = expected_files(&fixtures()).into_iter().next().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("file");
    std::fs::write(&file, "x").unwrap();
    let not_array = tmp.path().join("empty");
    std::fs::create_dir(&not_array).unwrap();
    let mnt = tmp.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let (busy, _log) = daemon(&array, &[]);
    let cases = [
        (array.clone(), tmp.path().join("nope"), "no such folder"),
        (array.clone(), file.clone(), "not a folder"),
        (not_array, mnt.clone(), "not a TileDB array"),
        (tmp.path().join("missing"), mnt.clone(), "No such file"),
        (array.clone(), busy.mnt.clone(), "busy"),
    ];
    for (source, target, says) in cases {
        let args = [source, target];
        let out = fragfs().arg("mount").args(&args).output().unwrap();
        assert!(!out.status.success(), "{args:?} mounted");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(
            stderr.starts_with("fragfs: ") && stderr.contains(says),
            "{args:?}: {stderr}"
        );
    }
    let out = fragfs()
        .args(["mount", "-o", "frobnicate"])
        .arg(&array)
        .arg(&mnt)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown mount option"));
    assert!(!is_mounted(&mnt));
}

#[test]
fn odd_names_are_shown_as_written_except_what_a_file_name_cannot_hold() {
    if !fuse_available("names") {
        return;
    }
    let (array, expected) = fixture("odd_names");
    let m = InProcess::new(&array, &expected, 1 << 20, 2);
    let frag = expected["fragments"][0]["fragment_dir"].as_str().unwrap();
    let folder = m
        .path()
        .join("fragments")
        .join(frag.rsplit('/').next().unwrap());
    let mut names: Vec<String> = std::fs::read_dir(&folder)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    let mut want = vec![
        "%2E%2E",
        "50%25",
        "a%2Fb",
        "cells.arrow",
        "cells.csv",
        "cells.parquet",
        "footer.json",
        "row index",
        "tiles.json",
        "température °C",
        "with space",
        "名前",
    ];
    want.sort();
    assert_eq!(names, want);
    // The dense dimension is synthesized, and footer.json says so.
    let footer: serde_json::Value =
        serde_json::from_slice(&std::fs::read(folder.join("footer.json")).unwrap()).unwrap();
    let row = footer["derived"]["fields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "row index")
        .unwrap();
    assert_eq!(row["synthesized"], true);
    let rows = std::fs::read_to_string(folder.join("row index/values.txt")).unwrap();
    assert_eq!(rows, "0\n1\n2\n3\n4\n5\n6\n7\n");
    let csv = std::fs::read_to_string(folder.join("cells.csv")).unwrap();
    assert!(
        csv.starts_with("row index,with space,température °C,a%2Fb,50%25,%2E%2E,名前\n"),
        "{csv}"
    );
    assert!(
        csv.contains("0,0,-1.25,0,0,-4,\"x,\"\"y\"\"\\n\"\n"),
        "{csv}"
    );
}

#[test]
fn mount_helper_convention_for_fstab() {
    if !fuse_available("mount helper") {
        return;
    }
    let (array, _) = expected_files(&fixtures()).into_iter().next().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    // `mount -t fuse.fragfs` runs /sbin/mount.fuse.fragfs, a link to fragfs.
    let helper = tmp.path().join("mount.fuse.fragfs");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_fragfs"), &helper).unwrap();
    let mnt = tmp.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let _guard = Daemon {
        mnt: mnt.clone(),
        child: None,
        _dir: tempfile::tempdir().unwrap(),
    };
    let out = Command::new(&helper)
        .arg(&array)
        .arg(&mnt)
        .args([
            "-o",
            "rw,nofail,noauto,cache_size=8M,threads=2,x-systemd.automount",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(is_mounted(&mnt));
    assert!(std::fs::read(mnt.join("array.json")).is_ok());
    fragfs::mount::unmount(&mnt).unwrap();
    // mount.fuse3 runs the subtype's program itself: `fragfs SOURCE TARGET -o OPTS`.
    let out = fragfs()
        .arg(&array)
        .arg(&mnt)
        .args(["-o", "ro,threads=1"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(is_mounted(&mnt));
    fragfs::mount::unmount(&mnt).unwrap();
    // `mount -f` fakes the mount; unknown options are refused in one line.
    let out = Command::new(&helper)
        .arg(&array)
        .arg(&mnt)
        .arg("-f")
        .output()
        .unwrap();
    assert!(out.status.success() && !is_mounted(&mnt));
    let out = Command::new(&helper)
        .arg(&array)
        .arg(&mnt)
        .args(["-o", "bogus"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown mount option"));
}

#[test]
fn a_file_whose_size_cannot_be_read_is_listed_and_its_eio_logged_once() {
    if !fuse_available("unsized file") {
        return;
    }
    let (_tmp, array, frag) = copy_fixture("dense_basic");
    // The var tile sizes of big_zstd (slot 7) unreadable: values.bin has no size.
    let view = ArrayTree::open_path(&array, Default::default(), 1 << 20).unwrap();
    let at = view.array().fragments[0]
        .meta(&view.array().schemas)
        .unwrap()
        .footer
        .tile_var_sizes_offsets[7] as usize;
    drop(view);
    let meta = frag.join("__fragment_metadata.tdb");
    let mut bytes = std::fs::read(&meta).unwrap();
    bytes[at + 4..at + 12].copy_from_slice(&u64::MAX.to_le_bytes()); // persisted size
    std::fs::write(&meta, bytes).unwrap();
    let name = frag.file_name().unwrap().to_str().unwrap();
    let (d, log) = daemon(&array, &[]);
    let folder = d.mnt.join(format!("fragments/{name}/big_zstd"));
    let listed: Vec<String> = std::fs::read_dir(&folder)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(listed.contains(&"values.bin".to_string()), "{listed:?}");
    let err = std::fs::read(folder.join("values.bin")).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EIO), "{err}");
    let logged = std::fs::read_to_string(&log).unwrap();
    let errors: Vec<&str> = logged.lines().filter(|l| l.contains("ERROR")).collect();
    assert_eq!(errors.len(), 1, "one failure, one line:\n{logged}");
    assert_names(
        errors[0],
        &[name, "__fragment_metadata.tdb", "tile var sizes of slot 7"],
    );
}

/// The one `fragfs` daemon whose arguments name mount point `mnt`.
fn daemon_of(mnt: &Path) -> i32 {
    use std::os::unix::ffi::OsStrExt;
    let exe = std::fs::canonicalize(env!("CARGO_BIN_EXE_fragfs")).unwrap();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        if std::fs::read_link(entry.path().join("exe")).ok().as_deref() != Some(&*exe) {
            continue;
        }
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        if cmdline
            .split(|b| *b == 0)
            .any(|arg| arg == mnt.as_os_str().as_bytes())
        {
            found.push(pid);
        }
    }
    assert_eq!(found.len(), 1, "daemons of {}: {found:?}", mnt.display());
    found[0]
}

/// A process's exit, watched through a pidfd: opened while the process runs, so a
/// later process given the same number is never mistaken for it.
struct Exit(std::os::fd::OwnedFd);

impl Exit {
    fn of(pid: i32) -> Exit {
        use std::os::fd::FromRawFd;
        // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor we own.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
        assert!(
            fd >= 0,
            "pidfd_open {pid}: {}",
            std::io::Error::last_os_error()
        );
        // SAFETY: `fd` was just opened and nothing else owns it.
        Exit(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd as i32) })
    }

    /// Whether the process exited within `timeout` (a pidfd polls readable once it has).
    fn wait(&self, timeout: Duration) -> bool {
        use std::os::fd::AsRawFd;
        let mut pfd = libc::pollfd {
            fd: self.0.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            // SAFETY: one pollfd, valid for the call.
            let n = unsafe { libc::poll(&mut pfd, 1, left.as_millis() as i32) };
            match n {
                1.. => return true,
                0 => return false,
                _ => {
                    let e = std::io::Error::last_os_error();
                    assert_eq!(e.kind(), std::io::ErrorKind::Interrupted, "poll: {e}");
                }
            }
        }
    }
}

/// `fragfs umount` then an immediate new mount on the same path: the old daemon, on its
/// way out, must not unmount the new one (fuser's cleanup unmounts by path).
#[test]
fn remounting_right_after_umount_keeps_the_new_mount() {
    if !fuse_available("remount") {
        return;
    }
    let (array, _) = expected_files(&fixtures()).into_iter().next().unwrap();
    let (d, log) = daemon(&array, &[]);
    let mut old = Exit::of(daemon_of(&d.mnt));
    for round in 0..5 {
        run_ok(fragfs().arg("umount").arg(&d.mnt));
        run_ok(fragfs().arg("mount").arg(&array).arg(&d.mnt));
        // Once the old daemon has exited, it has done all it would on its way out.
        assert!(
            old.wait(Duration::from_secs(60)),
            "round {round}: the old daemon still runs a minute after umount"
        );
        assert!(
            is_mounted(&d.mnt),
            "round {round}: the new mount was taken down"
        );
        old = Exit::of(daemon_of(&d.mnt));
        assert!(std::fs::read(d.mnt.join("array.json")).is_ok());
    }
    // The race itself is rare; what makes it possible is a daemon trying to unmount its
    // path again after the kernel let go. The first daemon logged to `log`: it must not
    // have tried.
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(
        !logged.contains("umount"),
        "the old daemon unmounted again:\n{logged}"
    );
}
