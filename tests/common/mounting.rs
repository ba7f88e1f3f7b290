//! Mounting for tests: whether FUSE is usable here, and mounts served by threads of the
//! test process (so a test can look into the view), unmounted when dropped.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fragfs::fuse::MountConfig;
use fragfs::view::ArrayTree;

use super::{options_for, Mounted, Tree};

/// Whether mounts can run here; prints the reason when not. Under CI they must.
pub fn fuse_available(test: &str) -> bool {
    let reason = if !Path::new("/dev/fuse").exists() {
        Some("/dev/fuse is missing")
    } else if unsafe_geteuid() != 0 && which("fusermount3").is_none() {
        Some("not root and no fusermount3")
    } else {
        None
    };
    match reason {
        None => true,
        Some(r) if std::env::var("CI").as_deref() == Ok("true") => {
            panic!("{test}: CI=true but FUSE mounts cannot run: {r}")
        }
        Some(r) => {
            super::skip(&format!("{test}: {r}"));
            false
        }
    }
}

pub fn unsafe_geteuid() -> u32 {
    // SAFETY: geteuid cannot fail and touches no memory.
    unsafe { libc::geteuid() }
}

fn which(bin: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| Path::new(d).join(bin))
        .find(|p| p.is_file())
}

pub fn is_mounted(mnt: &Path) -> bool {
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    let mnt = mnt.canonicalize().unwrap_or_else(|_| mnt.to_path_buf());
    mounts
        .lines()
        .any(|l| l.split(' ').nth(1) == Some(mnt.to_str().unwrap_or_default()))
}

pub fn force_unmount(mnt: &Path) {
    if is_mounted(mnt) {
        let _ = fragfs::mount::unmount(mnt);
    }
}

/// Unmounts a daemon's mount when dropped, so a test that fails leaves no mount behind.
pub struct UnmountOnDrop<'a>(pub &'a Path);

impl Drop for UnmountOnDrop<'_> {
    fn drop(&mut self) {
        force_unmount(self.0);
    }
}

/// Polls `fragments/` of the mount `mnt` until `done` holds of its (sorted) names, and
/// returns them. Panics after the documented refresh interval plus `slack` (what the
/// store may add: an S3 server is slower than a folder), naming `what` was awaited and
/// what was seen last.
pub fn wait_for(
    mnt: &Path,
    what: &str,
    slack: Duration,
    done: impl Fn(&[String]) -> bool,
) -> Vec<String> {
    let start = Instant::now();
    loop {
        // A listing that fails (a daemon still starting) is polled again, and shown.
        let names = Mounted(mnt.to_path_buf()).fragments();
        if let Ok(names) = &names {
            if done(names) {
                return names.clone();
            }
        }
        assert!(
            start.elapsed() < fragfs::view::REFRESH_INTERVAL + slack,
            "{what}: fragments/ still {names:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The int64 attribute `v` of a fragment of the array tests/tiledb_ops.py writes, read
/// through the mount `mnt`.
pub fn v_values(mnt: &Path, fragment: &str) -> Vec<i64> {
    std::fs::read(mnt.join(format!("fragments/{fragment}/v/values.bin")))
        .unwrap()
        .chunks_exact(8)
        .map(|c| i64::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// Every file below `root` (a mount), as sorted `/`-separated paths relative to it; at
/// least one, or the walk proves nothing.
pub fn files_under(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        for e in std::fs::read_dir(root.join(&rel)).unwrap() {
            let e = e.unwrap();
            let child = rel.join(e.file_name());
            if e.file_type().unwrap().is_dir() {
                stack.push(child);
            } else {
                out.push(child.to_string_lossy().into_owned());
            }
        }
    }
    assert!(!out.is_empty(), "no file below {}", root.display());
    out.sort();
    out
}

pub fn config(threads: usize) -> MountConfig {
    MountConfig {
        allow_other: false,
        allow_root: false,
        auto_unmount: false,
        threads,
        read_ahead: 0,
        exit_on_unmount: false,
        passthrough: false,
    }
}

/// A mount served by threads of this test process, so the test can look at the view.
pub struct InProcess {
    pub view: Arc<ArrayTree>,
    session: Option<fuser::BackgroundSession>,
    dir: tempfile::TempDir,
}

impl InProcess {
    pub fn new(
        array: &Path,
        expected: &serde_json::Value,
        cache: u64,
        threads: usize,
    ) -> InProcess {
        let view = Arc::new(ArrayTree::open_path(array, options_for(expected), cache).unwrap());
        let dir = tempfile::tempdir().unwrap();
        let session = fragfs::fuse::mount(view.clone(), dir.path(), &config(threads))
            .unwrap_or_else(|e| panic!("mount {}: {e}", array.display()))
            .spawn()
            .unwrap();
        InProcess {
            view,
            session: Some(session),
            dir,
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for InProcess {
    fn drop(&mut self) {
        if let Some(s) = self.session.take() {
            // Unmounts, then waits for the serving threads.
            let _ = s.umount_and_join();
        }
        force_unmount(self.dir.path());
    }
}

/// The fixture `name` of the folder `dir` mounted by threads of this process, opened with
/// the key its `<name>.expected.json` names.
pub fn mount_fixture(dir: &Path, name: &str) -> InProcess {
    let expected: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join(format!("{name}.expected.json"))).unwrap())
            .unwrap();
    InProcess::new(&dir.join(name), &expected, 16 << 20, 2)
}

/// The feature fixture `name` (tests/fixtures/features) mounted: [`mount_fixture`].
pub fn mount_feature(name: &str) -> InProcess {
    mount_fixture(&super::features(), name)
}

/// Any tree (e.g. a Filo fragment) mounted by threads of the test process.
pub struct TreeMount {
    session: Option<fuser::BackgroundSession>,
    dir: tempfile::TempDir,
}

impl TreeMount {
    pub fn new(tree: Arc<dyn fragfs::view::FileTree>) -> TreeMount {
        let dir = tempfile::tempdir().unwrap();
        let session = fragfs::fuse::mount(tree, dir.path(), &config(2))
            .unwrap()
            .spawn()
            .unwrap();
        TreeMount {
            session: Some(session),
            dir,
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for TreeMount {
    fn drop(&mut self) {
        if let Some(s) = self.session.take() {
            let _ = s.umount_and_join();
        }
        force_unmount(self.dir.path());
    }
}
