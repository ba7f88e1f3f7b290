//! An array that TileDB writes, consolidates and vacuums while it is mounted: new
//! fragments appear in `fragments/` within the refresh interval, vacuumed ones vanish
//! from listings and then from paths, and files still open in a vacuumed fragment read
//! on with the bytes they had, as POSIX keeps an open, removed file readable (the same
//! bytes every run, whether the kernel still holds the pages or asks fragfs again). The
//! daemon survives all of it.
//!
//! Needs TileDB-Py (scripts/test.sh installs it into a venv in the cargo home); without it the
//! test says why and skips, except under CI=true.

mod common;

use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::FileExt;
use std::process::Command;
use std::time::{Duration, Instant};

use common::mounting::*;
use common::*;

fn tiledb(python: &str, args: &[&str]) {
    run_ok(
        Command::new(python)
            .arg(repo().join("tests/tiledb_ops.py"))
            .args(args),
    );
}

/// What a local folder may add to the refresh interval before a change shows.
const SLACK: Duration = Duration::from_secs(3);

#[test]
fn writes_consolidation_and_vacuum_under_a_live_mount() {
    if !fuse_available("live changes") {
        return;
    }
    let Some(python) = python_with("tiledb") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let array = tmp.path().join("live");
    let a = array.to_str().unwrap();
    tiledb(&python, &["create", a]);
    tiledb(&python, &["write", a, "1"]);
    tiledb(&python, &["write", a, "2"]);
    let mnt = tmp.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let log = tmp.path().join("fragfs.log");
    run_ok(
        Command::new(env!("CARGO_BIN_EXE_fragfs"))
            .args(["mount", a])
            .arg(&mnt)
            .arg("--log-file")
            .arg(&log),
    );
    let _unmount = UnmountOnDrop(&mnt);

    let first = Mounted(mnt.clone()).fragments().unwrap();
    assert_eq!(first.len(), 2, "{first:?}");
    assert_eq!(
        v_values(&mnt, &first[0]),
        (0..10).map(|x| 1000 + x).collect::<Vec<_>>()
    );

    // A new fragment appears within the refresh interval, with the bytes written.
    tiledb(&python, &["write", a, "3"]);
    let three = wait_for(&mnt, "new fragment", SLACK, |n| n.len() == 3);
    let new = three.iter().find(|n| !first.contains(n)).unwrap();
    assert_eq!(
        v_values(&mnt, new),
        (20..30).map(|x| 3000 + x).collect::<Vec<_>>()
    );
    let array_json = std::fs::read_to_string(mnt.join("array.json")).unwrap();
    assert!(
        array_json.contains(new.as_str()),
        "array.json follows the rescan"
    );

    // Files held open across consolidation and vacuuming: one read before, one not.
    let old_file = mnt.join(format!("fragments/{}/v/values.bin", first[0]));
    let mut read_before = std::fs::File::open(&old_file).unwrap();
    let mut before = Vec::new();
    read_before.read_to_end(&mut before).unwrap();
    let unread =
        std::fs::File::open(mnt.join(format!("fragments/{}/v/values.txt", first[1]))).unwrap();

    tiledb(&python, &["consolidate", a]);
    tiledb(&python, &["vacuum", a]);
    let after = wait_for(&mnt, "vacuum", SLACK, |n| {
        n.len() == 1 && !three.contains(&n[0])
    });
    let consolidated = &after[0];
    let all = v_values(&mnt, consolidated);
    assert_eq!(
        &all[..30],
        (0..30).map(|x| 1000 * (x / 10 + 1) + x).collect::<Vec<_>>()
    );

    // Files open across the vacuum read on, with the bytes they had: the one read
    // before (again, from any offset) and the one never read until now.
    let mut again = Vec::new();
    let mut read_before = read_before;
    read_before.seek(SeekFrom::Start(0)).unwrap();
    read_before.read_to_end(&mut again).unwrap();
    assert_eq!(again, before, "read before the vacuum");
    let mut tail = vec![0u8; 16];
    read_before.read_exact_at(&mut tail, 8).unwrap();
    assert_eq!(tail, before[8..24]);
    let mut text = String::new();
    let mut unread = unread;
    unread.read_to_string(&mut text).unwrap();
    let want: String = (10..20).map(|x| format!("{}\n", 2000 + x)).collect();
    assert_eq!(text, want, "unread until after the vacuum");
    // Paths into the vacuumed fragment go: from the next lookup once the kernel's entry
    // for its folder expires (CHANGING_TTL, the refresh interval).
    let start = Instant::now();
    while std::fs::metadata(&old_file).is_ok() {
        assert!(
            start.elapsed() < 2 * fragfs::view::REFRESH_INTERVAL + Duration::from_secs(10),
            "a vacuumed path is still there"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    drop((read_before, unread));
    // The daemon is alive and serves the consolidated fragment.
    assert!(is_mounted(&mnt));
    assert!(
        !std::fs::read(mnt.join(format!("fragments/{consolidated}/cells.csv")))
            .unwrap()
            .is_empty()
    );
}
