//! Arrays with many fragments through a real mount: a folder is listed once per
//! `opendir`, however many requests the kernel makes to page through it (a listing per
//! request made `ls` of 100,000 fragments quadratic), and a rescan between two requests
//! shifts nothing: every entry is seen exactly once.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use common::mounting::*;
use common::watched::Watched;
use common::*;
use fragfs::view::{ArrayTree, FileTree};

#[test]
fn a_folder_is_listed_once_per_opendir_and_a_rescan_midway_shifts_nothing() {
    if !fuse_available("readdir of many fragments") {
        return;
    }
    const N: u64 = 5_000;
    let tmp = scratch_dir();
    let array = tmp.path().join("many");
    many_fragments(&array, N, 1_000);
    // No rescan by itself: the test makes the one it needs, between two requests.
    let tree = Arc::new(
        ArrayTree::open_path(&array, Default::default(), 16 << 20)
            .unwrap()
            .with_refresh_interval(std::time::Duration::MAX),
    );
    let fragments_ino = tree.resolve("fragments").unwrap();
    let counting = Watched::new(tree.clone());
    let mount = TreeMount::new(counting.clone());
    let dir = mount.path().join("fragments");

    let mut listing = std::fs::read_dir(&dir).unwrap();
    let mut seen: Vec<String> = listing
        .by_ref()
        .take(50)
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    // A fragment that sorts first appears, and the tree rescans, while the listing is
    // half read: its next requests ask for offsets past what the kernel already has.
    many_fragments(&array, 1, 5);
    assert!(tree.refresh().unwrap(), "the rescan saw the new fragment");
    seen.extend(listing.map(|e| e.unwrap().file_name().to_string_lossy().into_owned()));

    let mut counts: BTreeMap<&str, u32> = BTreeMap::new();
    for name in &seen {
        *counts.entry(name).or_default() += 1;
    }
    let twice: Vec<_> = counts.iter().filter(|(_, &c)| c > 1).collect();
    assert!(twice.is_empty(), "seen more than once: {twice:?}");
    for t in 1_000..1_000 + N {
        let name = format!("__{t}_{t}_{t:032x}_22");
        assert!(counts.contains_key(name.as_str()), "{name} never seen");
    }
    assert!(seen.len() as u64 >= N);
    // Paging through 5,000 entries took the kernel many requests; the tree listed the
    // folder once for them.
    let lists = counting.lists_of(fragments_ino);
    assert_eq!(lists, 1, "listings of fragments/ for one opendir");

    // A new opendir lists again, and sees the new fragment.
    let again: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(again.len() as u64, N + 1);
    assert!(again.contains(&format!("__5_5_{:032x}_22", 5)));
    assert_eq!(counting.lists_of(fragments_ino), 2);
}

/// A daemon whose descriptor limit is 128 serves files of 300 fragments held open at
/// once (each open pins every file of its fragment, which took one descriptor per file
/// and ran out at a few dozen fragments): no EMFILE, every byte right.
#[test]
fn files_open_in_many_fragments_stay_within_the_descriptor_limit() {
    if !fuse_available("descriptor limit") {
        return;
    }
    const N: u64 = 300;
    let tmp = tempfile::tempdir().unwrap();
    let array = tmp.path().join("many");
    many_fragments(&array, N, 1);
    let mnt = tmp.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let log = tmp.path().join("fragfs.log");
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(r#"ulimit -n 128 && exec "$0" mount "$1" "$2" --log-file "$3""#)
        .arg(env!("CARGO_BIN_EXE_fragfs"))
        .arg(&array)
        .arg(&mnt)
        .arg(&log)
        .status()
        .unwrap();
    assert!(status.success());
    let _unmount = UnmountOnDrop(&mnt);
    assert!(is_mounted(&mnt));

    let fragments = mnt.join("fragments");
    let mut names: Vec<String> = std::fs::read_dir(&fragments)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names.len() as u64, N);
    // Every fragment is a copy of one: the same field, the same bytes.
    let field = std::fs::read_dir(fragments.join(&names[0]))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.join("values.bin").exists())
        .unwrap();
    let field = field.file_name().unwrap().to_owned();
    let want = std::fs::read(fragments.join(&names[0]).join(&field).join("values.bin")).unwrap();
    assert!(!want.is_empty());
    let open: Vec<std::fs::File> = names
        .iter()
        .map(|n| {
            std::fs::File::open(fragments.join(n).join(&field).join("values.bin"))
                .unwrap_or_else(|e| panic!("{n}: {e}"))
        })
        .collect();
    for (mut f, n) in open.into_iter().zip(&names) {
        let mut got = Vec::new();
        std::io::Read::read_to_end(&mut f, &mut got).unwrap_or_else(|e| panic!("{n}: {e}"));
        assert!(got == want, "{n}: other bytes");
    }
    let logged = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(!logged.contains("Too many open files"), "{logged}");
}

/// The kernel's FORGETs reach the node table: a walk of 20,000 distinct `at/<T>` paths
/// and of every fragment's folder, once the kernel has dropped its dentries, leaves the
/// tree with its idle limit of numbers, not one per path ever looked up (they were all
/// kept before). And `ls -l` of a folder listing more entries than that limit sees every
/// entry with its attributes (numbers the listing handed out went idle and were dropped
/// before `readdirplus` reached them: they are looked up again).
#[test]
fn forgotten_paths_leave_the_node_table_bounded() {
    if !fuse_available("FORGET") {
        return;
    }
    if unsafe_geteuid() != 0 {
        skip("FORGET: dropping the kernel's dentries (drop_caches) needs root");
        return;
    }
    const N: u64 = 3_000;
    const IDLE: usize = 1_000;
    let tmp = scratch_dir();
    let array = tmp.path().join("many");
    many_fragments(&array, N, 1);
    let tree = Arc::new(
        ArrayTree::open_path(&array, Default::default(), 16 << 20)
            .unwrap()
            .with_idle_limit(IDLE),
    );
    let mount = TreeMount::new(tree.clone());
    let root = mount.path();

    // `ls -l fragments/`: 3,000 entries, each with its attributes (readdirplus).
    let listed: Vec<(String, std::fs::Metadata)> = std::fs::read_dir(root.join("fragments"))
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                e.metadata().unwrap(),
            )
        })
        .collect();
    assert_eq!(listed.len() as u64, N);
    assert!(listed.iter().all(|(_, m)| m.is_dir()));
    // Into every fragment, and 20,000 distinct timestamps.
    for (name, _) in &listed {
        let folder = root.join("fragments").join(name);
        assert!(std::fs::metadata(folder.join("footer.json")).unwrap().len() > 0);
    }
    for t in 1..=20_000u64 {
        let state = root.join("at").join(t.to_string());
        assert!(std::fs::metadata(&state).unwrap().is_dir(), "at/{t}");
    }
    let before = tree.nodes_in_use();
    assert!(
        before > 20_000,
        "the kernel holds what it looked up: {before}"
    );

    // The kernel drops its unused dentries and inodes, and FORGETs them to the daemon
    // (queued: they arrive as the daemon reads requests, so poll until they did).
    std::fs::write("/proc/sys/vm/drop_caches", "2").unwrap();
    let bound = IDLE + 100;
    let mut now = tree.nodes_in_use();
    for _ in 0..600 {
        if now <= bound {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        std::fs::write("/proc/sys/vm/drop_caches", "2").unwrap();
        now = tree.nodes_in_use();
    }
    assert!(
        now <= bound,
        "{now} numbers in use after the kernel forgot {before}: at most {bound} expected"
    );
    // What is looked up again works, with new numbers or old.
    assert!(std::fs::metadata(root.join("at/17")).unwrap().is_dir());
    assert_eq!(
        std::fs::read_dir(root.join("fragments")).unwrap().count() as u64,
        N
    );
}

/// Seconds `runs` runs in a row of `sh -c script` (given `dir`) take, each checked to
/// print `entries`.
fn listing_seconds(script: &str, dir: &std::path::Path, entries: u64, runs: u64) -> f64 {
    let start = std::time::Instant::now();
    for _ in 0..runs {
        let out = run_ok(
            std::process::Command::new("sh")
                .arg("-c")
                .arg(script)
                .arg(dir),
        );
        assert_eq!(out.trim().parse::<u64>().unwrap(), entries, "{script}");
    }
    start.elapsed().as_secs_f64()
}

/// CPU seconds (user and system) this thread has spent: what a rescan, which runs on
/// the calling thread, costs, however busy the machine is meanwhile.
fn thread_cpu_seconds() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the call's duration.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// CPU seconds of a rescan that finds nothing new (it matches every fragment found to
/// the one it had: a search of the list for each was quadratic, 30 s at 100,000).
fn rescan_seconds(tree: &ArrayTree) -> f64 {
    let start = thread_cpu_seconds();
    assert!(!tree.refresh().unwrap(), "nothing changed");
    thread_cpu_seconds() - start
}

/// 100,000 fragments through a real mount: `ls fragments | wc -l` and
/// `ls -l fragments/` take about the same time per entry as 10,000 do (a listing per
/// kernel request made them quadratic: 0.19 s at 10,000, unfinished after 11 minutes at
/// 100,000), so does a rescan of the array folder, and a listing with a rescan in the
/// middle sees every entry exactly once.
///
/// The two sizes are two arrays, mounted side by side and measured in turn, each figure
/// the fastest of three: a busy spell of the machine (the suite runs other tests beside
/// this one) slows both sizes alike instead of the one measured at that moment. The
/// small array is listed ten times in a row per measurement, so both timed spans are
/// about as long: on a busy machine the scheduler favours a task that just woke, which
/// helped a short span more than a long one (1.5x per entry at 100,000 with every core
/// busy, 2.5x once in CI, against 1.0x idle). A rescan is measured in this thread's CPU
/// time, which waiting for a core does not add to.
#[test]
fn a_hundred_thousand_fragments_list_in_linear_time_each_once() {
    if !fuse_available("100,000 fragments") {
        return;
    }
    const SMALL: u64 = 10_000;
    const LARGE: u64 = 100_000;
    // 770,000 folder entries: made in memory where there is room, ten times faster
    // than on a disk.
    let tmp = scratch_dir();
    let arrays = [SMALL, LARGE].map(|n| {
        let array = tmp.path().join(format!("many-{n}"));
        many_fragments(&array, n, 1_000_000);
        let tree = Arc::new(
            ArrayTree::open_path(&array, Default::default(), 16 << 20)
                .unwrap()
                .with_refresh_interval(std::time::Duration::MAX),
        );
        let mount = TreeMount::new(tree.clone());
        (array, tree, mount, n)
    });
    let count = r#"ls "$0" | wc -l"#;
    // `ls -l` prints a "total" line first.
    let long = r#"ls -l "$0" | tail -n +2 | wc -l"#;
    // Per size, the fastest per-entry time of each measurement.
    let mut best = [[f64::INFINITY; 3]; 2];
    // At least 3 rounds; up to 8 while a ratio is over the bound, so a round that a busy
    // machine slowed (the other lanes of the suite) is outvoted, while a listing that
    // grows faster than linearly (10x per entry here) stays over it in every round.
    let linear = |best: &[[f64; 3]; 2]| (0..3).all(|k| best[1][k] <= 2.0 * best[0][k]);
    for round in 0..8 {
        if round >= 3 && linear(&best) {
            break;
        }
        for ((_, tree, mount, n), best) in arrays.iter().zip(&mut best) {
            let dir = mount.path().join("fragments");
            let runs = LARGE / n;
            let times = [
                listing_seconds(count, &dir, *n, runs),
                listing_seconds(long, &dir, *n, runs),
                (0..runs).map(|_| rescan_seconds(tree)).sum(),
            ];
            for (b, t) in best.iter_mut().zip(times) {
                *b = b.min(t / (n * runs) as f64);
            }
        }
    }
    let what = ["ls | wc -l", "ls -l", "a rescan (CPU)"];
    for ((what, s), l) in what.iter().zip(best[0]).zip(best[1]) {
        eprintln!(
            "{what}: {:.2} µs per entry at {SMALL}, {:.2} at {LARGE}",
            s * 1e6,
            l * 1e6
        );
        assert!(
            l <= 2.0 * s,
            "{what}: {:.2} µs per entry at {LARGE}, more than twice {:.2} at {SMALL}",
            l * 1e6,
            s * 1e6
        );
    }

    // A rescan half way through a listing of 100,000 (a fragment that sorts first
    // appears): every entry once, none skipped.
    let (array, tree, mount, _) = &arrays[1];
    let mut listing = std::fs::read_dir(mount.path().join("fragments")).unwrap();
    let mut seen: Vec<String> = listing
        .by_ref()
        .take(50_000)
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    many_fragments(array, 1, 5);
    assert!(tree.refresh().unwrap());
    seen.extend(listing.map(|e| e.unwrap().file_name().to_string_lossy().into_owned()));
    let unique: std::collections::HashSet<&String> = seen.iter().collect();
    assert_eq!(unique.len(), seen.len(), "an entry seen twice");
    for t in 1_000_000..1_000_000 + LARGE {
        let name = format!("__{t}_{t}_{t:032x}_22");
        assert!(unique.contains(&name), "{name} never seen");
    }
}
