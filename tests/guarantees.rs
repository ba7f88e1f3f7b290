//! The promises of README's "Guarantees" that the other suites do not already show:
//! fragfs never changes the array folder (contents or times), never follows a symbolic
//! link out of it, and a mount is private to the user who made it unless asked.

mod common;

use std::path::Path;
use std::process::Command;

use common::mounting::*;
use common::*;

fn fragfs(args: &[&std::ffi::OsStr]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_fragfs"))
        .args(args)
        .output()
        .unwrap()
}

/// Reads every file below `root` (a mount), returning how many.
fn read_everything(root: &Path) -> usize {
    let mut files = 0;
    let mut stack = vec![root.to_path_buf()];
    while let Some(p) = stack.pop() {
        for e in std::fs::read_dir(&p).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            } else {
                std::fs::read(e.path()).unwrap();
                files += 1;
            }
        }
    }
    files
}

#[test]
fn the_array_folder_is_untouched_by_mounting_listing_and_reading_everything() {
    if !fuse_available("untouched array") {
        return;
    }
    for name in [
        "sparse_var_nullable",
        "consolidated",
        "timestamps_deletes",
        "dense_2d",
    ] {
        let (tmp, array, _) = copy_fixture(name);
        let before = folder_snapshot(&array);
        let mnt = tmp.path().join("mnt");
        std::fs::create_dir(&mnt).unwrap();
        let out = fragfs(&["mount".as_ref(), array.as_os_str(), mnt.as_os_str()]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(read_everything(&mnt) > 10);
        assert!(Command::new("ls")
            .arg("-lR")
            .arg(&mnt)
            .output()
            .unwrap()
            .status
            .success());
        let out = fragfs(&["umount".as_ref(), mnt.as_os_str()]);
        assert!(out.status.success());
        // The CLI too.
        for command in ["info", "ls"] {
            let out = fragfs(&[command.as_ref(), array.as_os_str()]);
            assert!(out.status.success(), "{command}");
        }
        assert!(
            before == folder_snapshot(&array),
            "{name}: the array folder changed"
        );
    }
}

#[test]
fn symbolic_links_inside_the_array_are_not_followed() {
    let (tmp, array, frag) = copy_fixture("dense_basic");
    // A data file replaced by a link to a file outside the array (with the same bytes,
    // so following it would "work").
    let outside = tmp.path().join("outside.tdb");
    std::fs::rename(frag.join("a0.tdb"), &outside).unwrap();
    std::os::unix::fs::symlink(&outside, frag.join("a0.tdb")).unwrap();
    let name = frag.file_name().unwrap().to_str().unwrap().to_string();
    let path = format!("fragments/{name}/i32/values.bin");
    let out = fragfs(&["cat".as_ref(), array.as_os_str(), path.as_ref()]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_names(&stderr, &["a0.tdb", "symbolic link"]);
    // Other fields are served.
    let path = format!("fragments/{name}/f64_zstd/values.bin");
    assert!(fragfs(&["cat".as_ref(), array.as_os_str(), path.as_ref()])
        .status
        .success());
    // A fragment folder that is a link is not a fragment of this array.
    let (tmp2, other, _) = copy_fixture("sample");
    let linked = array
        .join("__fragments")
        .join("__9_9_00000000000000000000000000000000_22");
    let sample_frag = std::fs::read_dir(other.join("__fragments"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    std::os::unix::fs::symlink(&sample_frag, &linked).unwrap();
    std::fs::write(
        array
            .join("__commits")
            .join("__9_9_00000000000000000000000000000000_22.wrt"),
        b"",
    )
    .unwrap();
    let out = fragfs(&["ls".as_ref(), array.as_os_str(), "fragments".as_ref()]);
    assert!(out.status.success());
    assert!(!String::from_utf8_lossy(&out.stdout).contains("__9_9_"));
    drop(tmp2);
}

#[test]
fn mounts_are_private_unless_allow_other() {
    if !fuse_available("permissions") {
        return;
    }
    if unsafe_is_root() {
        let (array, _) = expected_files(&fixtures()).into_iter().next().unwrap();
        for (options, other_user_may_read) in [(None, false), (Some("allow_other"), true)] {
            let tmp = tempfile::tempdir().unwrap();
            // The mount point's parent must let the other user through to try.
            std::fs::set_permissions(
                tmp.path(),
                std::os::unix::fs::PermissionsExt::from_mode(0o755),
            )
            .unwrap();
            let mnt = tmp.path().join("mnt");
            std::fs::create_dir(&mnt).unwrap();
            let mut cmd = Command::new(env!("CARGO_BIN_EXE_fragfs"));
            cmd.arg("mount").arg(&array).arg(&mnt);
            if let Some(o) = options {
                cmd.args(["-o", o]);
            }
            let out = cmd.output().unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let as_nobody = Command::new("setpriv")
                .args(["--reuid=65534", "--regid=65534", "--clear-groups", "cat"])
                .arg(mnt.join("array.json"))
                .output()
                .unwrap();
            force_unmount(&mnt);
            let stderr = String::from_utf8_lossy(&as_nobody.stderr);
            assert_eq!(
                as_nobody.status.success(),
                other_user_may_read,
                "{options:?}: {stderr}"
            );
            if !other_user_may_read {
                assert!(stderr.contains("Permission denied"), "{stderr}");
            }
        }
    } else {
        skip("checking another user's access needs root (setpriv)");
    }
}

fn unsafe_is_root() -> bool {
    // SAFETY: geteuid cannot fail and touches no memory.
    unsafe { libc::geteuid() == 0 }
}
