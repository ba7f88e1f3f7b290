//! `fragfs mount` and `fragfs umount`: check what can be checked before mounting (so
//! each failure is one clear line), daemonize, mount, serve until unmounted or signalled.

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::array::OpenOptions;
use crate::daemon::{self, limit_heap_arenas, Reporter, Signals, STOP_GRACE};
use crate::error::{Error, Result};
use crate::fuse::{self, MountConfig};
use crate::storage::s3::{is_s3_uri, S3Options};
use crate::view::{open_disk_cache, open_source, ChunkOptions, FileTree};

/// Everything `fragfs mount` was asked to do.
#[derive(Debug, Clone)]
pub struct MountRequest {
    pub array: PathBuf,
    /// How to reach an `s3://` array.
    pub s3: S3Options,
    pub mountpoint: PathBuf,
    pub options: OpenOptions,
    /// For a lone Filo chunk file: its column type and writer version.
    pub chunk: ChunkOptions,
    pub cache_size: u64,
    /// The disk cache (`--cache-dir`), if asked for.
    pub disk_cache: Option<crate::storage::diskcache::CacheConfig>,
    pub foreground: bool,
    pub fuse: MountConfig,
}

/// Mounts and serves until unmounted (by `fragfs umount`, `umount`, or a signal).
/// Without `foreground`, returns in the calling process only on errors found before
/// forking; the forked parent exits once the mount is live or has failed.
pub fn run(request: MountRequest) -> Result<()> {
    check_mountpoint(&request.mountpoint)?;
    if !Path::new("/dev/fuse").exists() {
        return Err(Error::setup(
            libc::ENODEV,
            "no /dev/fuse: FUSE is not available here (load the fuse module; in a container, \
             pass the /dev/fuse device)",
        ));
    }
    if request.fuse.auto_unmount && !request.fuse.allow_other && !request.fuse.allow_root {
        return Err(Error::InvalidArgument(
            "-o auto_unmount needs -o allow_root or -o allow_other (FUSE implements it in \
             fusermount3)"
                .into(),
        ));
    }
    // Opened before forking, so a bad array is reported by the command itself; the view
    // starts no thread, which keeps the fork below sound. An S3 store does (its runtime):
    // it is only checked here, dropped (which joins its threads) and opened again in the
    // daemon, once the signal mask its threads inherit is set.
    let view = open(&request)?;
    let view = if is_s3_uri(&request.array) {
        drop(view);
        None
    } else {
        Some(view)
    };
    let reporter = if request.foreground {
        None
    } else {
        // SAFETY: no thread was started yet, or none is left: argument parsing, logging
        // set-up and opening the tree (a store, its listings and schemas) run on this
        // thread alone, and an S3 store's runtime threads were joined when it was dropped
        // above; the serving, read-ahead and runtime threads start in the child.
        let reporter = unsafe { daemon::daemonize() };
        Some(reporter.map_err(|e| Error::io(Path::new("fork"), e))?)
    };
    serve(view, &request, reporter)
}

/// The tree, read through the disk cache where one is asked for. The daemon of an S3
/// array calls this again after forking: its cache is opened anew there, beside the
/// store (the check before forking kept what it fetched in the same folder).
fn open(request: &MountRequest) -> Result<Arc<dyn FileTree>> {
    open_source(
        &request.array,
        &request.s3,
        request.options.clone(),
        request.chunk,
        request.cache_size,
        open_disk_cache(request.disk_cache.as_ref())?,
    )
}

/// In the daemon (or the foreground process): mount, report, serve, and stop on a signal.
/// `view` is the tree opened before forking, or `None` to open it here (S3).
fn serve(
    view: Option<Arc<dyn FileTree>>,
    request: &MountRequest,
    reporter: Option<Reporter>,
) -> Result<()> {
    let fail = |reporter: Option<Reporter>, e: Error| {
        if let Some(r) = reporter {
            r.failed(&e.to_string());
        }
        Err(e)
    };
    limit_heap_arenas();
    // Before any thread exists, so all of them inherit the blocked mask and only the
    // waiting thread below ever sees these signals.
    let signals = match Signals::block() {
        Ok(s) => s,
        Err(e) => return fail(reporter, Error::io(Path::new("signals"), e)),
    };
    let view = match view {
        Some(view) => view,
        None => match open(request) {
            Ok(view) => view,
            Err(e) => return fail(reporter, e),
        },
    };
    let mnt = &request.mountpoint;
    // Resolved before mounting: once mounted, resolving the path would ask this very
    // daemon, which does not serve yet.
    let resolved = mnt.canonicalize().unwrap_or_else(|_| mnt.clone());
    let mut session = match fuse::mount(view, mnt, &request.fuse) {
        Ok(s) => s,
        Err(e) => return fail(reporter, mount_error(mnt, e)),
    };
    if request.fuse.read_ahead > 0 {
        match set_kernel_read_ahead(&resolved, request.fuse.read_ahead) {
            Ok(()) => log::info!(
                "kernel read-ahead of the mount: {} KiB",
                request.fuse.read_ahead / 1024
            ),
            Err(e) => log::info!("kernel read-ahead left at its default: {e}"),
        }
    }
    log::info!(
        "mounted {} on {} ({} threads, cache {} bytes)",
        request.array.display(),
        mnt.display(),
        request.fuse.threads,
        request.cache_size
    );
    if let Some(r) = reporter {
        r.mounted();
        // The parent has exited; keep no terminal. Logs go to --log-file.
        let _ = daemon::detach_stdio();
    }
    match std::fs::read_to_string("/proc/self/mountinfo")
        .ok()
        .and_then(|info| fuse_mount_device(&info, &resolved))
    {
        Some(device) => {
            if let Err(e) = watch_for_detach(device, mnt.display().to_string()) {
                log::info!("not watching the mount table: {e}");
            }
        }
        None => log::info!("{}: not in /proc/self/mountinfo", resolved.display()),
    }
    let mut unmounter = session.unmount_callable();
    let shown = mnt.display().to_string();
    let mountpoint = mnt.to_path_buf();
    std::thread::Builder::new()
        .name("fragfs-signals".into())
        .spawn(move || {
            if let Ok(sig) = signals.wait() {
                log::info!("signal {sig}: unmounting {shown}");
                if let Err(e) = unmounter.unmount() {
                    // Busy (a reader inside, a request running): detached now, gone
                    // from the tree, and the connection ends with the process below.
                    log::info!("unmounting {shown}: {e}; detaching it");
                    if let Err(e) = unmount(&mountpoint) {
                        log::error!("unmounting {shown}: {e}");
                    }
                }
                // A request that runs on (a listing of 100,000 fragments, a stalled
                // server) would keep the session, and the process, alive: after a grace
                // period the process ends, which aborts the connection, so its readers
                // get an error instead of waiting in the kernel. A session that ended
                // in time has ended the process before.
                std::thread::sleep(STOP_GRACE);
                log::warn!(
                    "requests still running {} s after signal {sig}: exiting, which aborts \
                     them (their readers get ENOTCONN)",
                    STOP_GRACE.as_secs()
                );
                std::process::exit(0);
            }
        })
        .map_err(|e| Error::io(Path::new("signal thread"), e))?;
    session.run().map_err(|e| Error::io(mnt, e))?;
    log::info!("unmounted {}", mnt.display());
    Ok(())
}

/// Ends the process [`STOP_GRACE`] after the mount (FUSE device `device`) leaves the mount
/// table. A busy mount is unmounted lazily (`fragfs umount`, `umount -l`, `fusermount -uz`):
/// the kernel ends the session only when the last request and open file are done, so a
/// long request (a listing of 100,000 fragments, a stalled server) would keep the daemon
/// running with nothing left to serve. `/proc/self/mountinfo` wakes `poll` at every change
/// of the mount table (`POLLPRI`), so this costs nothing while the mount stays. A session
/// that ends by itself in the grace period has ended the process before.
fn watch_for_detach(device: String, shown: String) -> io::Result<()> {
    use std::io::{Read, Seek};
    use std::os::fd::AsRawFd;
    let mut table = std::fs::File::open("/proc/self/mountinfo")?;
    std::thread::Builder::new()
        .name("fragfs-detach".into())
        .spawn(move || loop {
            let mut wait = libc::pollfd {
                fd: table.as_raw_fd(),
                events: libc::POLLPRI,
                revents: 0,
            };
            // SAFETY: one valid pollfd, alive for the call; the descriptor is `table`'s.
            if unsafe { libc::poll(&mut wait, 1, -1) } < 0 {
                if io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                    continue;
                }
                log::info!(
                    "not watching the mount table: {}",
                    io::Error::last_os_error()
                );
                return;
            }
            let mut text = String::new();
            if table
                .rewind()
                .and_then(|()| table.read_to_string(&mut text))
                .is_err()
            {
                return;
            }
            if mounted_device(&text, &device) {
                continue;
            }
            log::info!("{shown} left the mount table (unmounted or detached)");
            std::thread::sleep(STOP_GRACE);
            log::warn!(
                "requests still running {} s after {shown} was unmounted: exiting, which \
                 aborts them (their readers get ENOTCONN)",
                STOP_GRACE.as_secs()
            );
            std::process::exit(0);
        })
        .map(drop)
}

/// Whether a FUSE mount of device `major:minor` is in the text of a mountinfo file.
fn mounted_device(mountinfo: &str, device: &str) -> bool {
    mountinfo.lines().any(|line| {
        line.split_once(" - ").is_some_and(|(fields, kind)| {
            kind.starts_with("fuse") && fields.split(' ').nth(2) == Some(device)
        })
    })
}

/// Sets how far the kernel reads ahead of a sequential reader of the FUSE mount on
/// `mountpoint` (an absolute, resolved path). Linux gives a FUSE mount 128 KiB, which
/// leaves the serving threads waiting for requests between a reader's reads; only root
/// may change it, in the mount's `/sys/class/bdi/<device>/read_ahead_kb`.
pub fn set_kernel_read_ahead(mountpoint: &Path, bytes: u64) -> std::result::Result<(), String> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| format!("/proc/self/mountinfo: {e}"))?;
    let device = fuse_mount_device(&mountinfo, mountpoint).ok_or_else(|| {
        format!(
            "no FUSE mount on {} in /proc/self/mountinfo",
            mountpoint.display()
        )
    })?;
    let knob = format!("/sys/class/bdi/{device}/read_ahead_kb");
    std::fs::write(&knob, (bytes / 1024).max(1).to_string()).map_err(|e| format!("{knob}: {e}"))
}

/// The `major:minor` device of the last FUSE mount on `mountpoint`, from the text of
/// `/proc/self/mountinfo` (`id parent major:minor root mountpoint options ... - type ...`,
/// with spaces and other odd bytes in paths written as octal escapes).
fn fuse_mount_device(mountinfo: &str, mountpoint: &Path) -> Option<String> {
    let wanted = mountpoint.as_os_str().as_bytes();
    mountinfo.lines().rev().find_map(|line| {
        let (fields, kind) = line.split_once(" - ")?;
        let mut fields = fields.split(' ');
        let device = fields.nth(2)?;
        let path = fields.nth(1)?;
        (kind.starts_with("fuse") && unescape_octal(path) == wanted).then(|| device.to_string())
    })
}

/// Undoes mountinfo's `\ooo` escapes.
fn unescape_octal(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let code = b.get(i + 1..i + 4).and_then(|d| {
            let d = std::str::from_utf8(d).ok()?;
            u8::from_str_radix(d, 8).ok()
        });
        match (b[i], code) {
            (b'\\', Some(c)) => {
                out.push(c);
                i += 4;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

/// The mount point must be an existing folder with nothing mounted on it yet. Each
/// refusal has the errno of what is wrong (ENOENT, ENOTDIR, EBUSY), as mount(8) would.
fn check_mountpoint(mnt: &Path) -> Result<()> {
    let shown = mnt.display();
    let meta = std::fs::metadata(mnt).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => {
            Error::setup(libc::ENOENT, format!("mount point {shown}: no such folder"))
        }
        io::ErrorKind::NotConnected => Error::setup(
            libc::EBUSY,
            format!(
                "mount point {shown} is busy: a FUSE mount there has lost its daemon \
                 (fragfs umount {shown})"
            ),
        ),
        _ => Error::io(mnt, e),
    })?;
    if !meta.is_dir() {
        return Err(Error::setup(
            libc::ENOTDIR,
            format!("mount point {shown}: not a folder"),
        ));
    }
    let parent = mnt
        .canonicalize()
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf));
    if let Some(parent) = parent {
        if std::fs::metadata(&parent).is_ok_and(|p| p.dev() != meta.dev()) {
            return Err(Error::setup(
                libc::EBUSY,
                format!(
                    "mount point {shown} is busy: something is already mounted there \
                     (fragfs umount {shown})"
                ),
            ));
        }
    }
    Ok(())
}

/// A failed mount, with the system's own errno where it gave one (EPERM for a user
/// without fusermount3), EIO otherwise (fusermount3 failing says so only in words).
fn mount_error(mnt: &Path, e: io::Error) -> Error {
    let shown = mnt.display();
    let errno = e.raw_os_error().unwrap_or(match e.kind() {
        io::ErrorKind::PermissionDenied => libc::EACCES,
        _ => libc::EIO,
    });
    match e.kind() {
        io::ErrorKind::PermissionDenied => Error::setup(
            errno,
            format!(
                "mount {shown}: permission denied ({e}); mounting needs root or fusermount3 \
                 (package fuse3)"
            ),
        ),
        _ => Error::setup(errno, format!("mount {shown}: {e}")),
    }
}

/// What `fragfs umount` did.
#[derive(Debug, PartialEq, Eq)]
pub enum Unmounted {
    /// Gone now.
    Now,
    /// Files were open: detached from the tree, gone when the last one closes.
    Lazily,
}

/// Unmounts `mnt`: at once if possible, lazily (detached) when busy. Without the
/// privilege to unmount, falls back to `fusermount3 -u`, as for any FUSE mount.
pub fn unmount(mnt: &Path) -> Result<Unmounted> {
    let shown = mnt.display();
    let path = CString::new(mnt.as_os_str().as_bytes())
        .map_err(|_| Error::InvalidArgument(format!("{shown}: path holds a NUL byte")))?;
    // SAFETY: `path` is a valid NUL-terminated string for the duration of the call.
    let umount = |flags| unsafe { libc::umount2(path.as_ptr(), flags) };
    if umount(0) == 0 {
        return Ok(Unmounted::Now);
    }
    let err = io::Error::last_os_error();
    match err.raw_os_error() {
        Some(libc::EBUSY) => {
            if umount(libc::MNT_DETACH) == 0 {
                Ok(Unmounted::Lazily)
            } else {
                Err(Error::io(mnt, io::Error::last_os_error()))
            }
        }
        Some(libc::EPERM) => fusermount_unmount(mnt),
        Some(libc::EINVAL) => Err(Error::InvalidArgument(format!(
            "{shown}: not a mount point"
        ))),
        Some(libc::ENOENT) => Err(Error::setup(
            libc::ENOENT,
            format!("{shown}: no such folder"),
        )),
        _ => Err(Error::io(mnt, err)),
    }
}

fn fusermount_unmount(mnt: &Path) -> Result<Unmounted> {
    for bin in ["fusermount3", "fusermount"] {
        let run = |lazy: bool| {
            let mut cmd = std::process::Command::new(bin);
            cmd.arg("-u").arg("-q");
            if lazy {
                cmd.arg("-z");
            }
            cmd.arg(mnt).status()
        };
        match run(false) {
            Ok(s) if s.success() => return Ok(Unmounted::Now),
            Ok(_) => {
                if run(true).is_ok_and(|s| s.success()) {
                    return Ok(Unmounted::Lazily);
                }
                return Err(Error::setup(
                    libc::EPERM,
                    format!("{}: {bin} -u failed (not a mount of yours?)", mnt.display()),
                ));
            }
            Err(_) => continue, // not installed: try the other name
        }
    }
    Err(Error::setup(
        libc::EPERM,
        format!(
            "{}: permission denied, and no fusermount3 to unmount as a user",
            mnt.display()
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
61 22 0:40 / /tmp/old rw,nosuid - fuse.fragfs fragfs ro,user_id=0
67 22 0:53 / /tmp/my\\040array\\134x rw,nosuid,nodev - fuse.fragfs fragfs ro,user_id=0
70 22 0:41 / /tmp/old rw,nosuid - fuse.fragfs fragfs ro,user_id=0
71 22 0:42 / /tmp/tmpfs rw - tmpfs tmpfs rw
";

    #[test]
    fn finds_the_device_of_the_newest_fuse_mount_on_a_path() {
        let dev = |p: &str| fuse_mount_device(MOUNTINFO, Path::new(p));
        assert_eq!(
            dev("/tmp/old").as_deref(),
            Some("0:41"),
            "the last one mounted there"
        );
        assert_eq!(
            dev("/tmp/my array\\x").as_deref(),
            Some("0:53"),
            "octal escapes undone"
        );
        assert_eq!(dev("/tmp/tmpfs"), None, "not a FUSE mount");
        assert_eq!(dev("/"), None);
        assert_eq!(dev("/tmp/none"), None);
    }

    #[test]
    fn a_device_is_mounted_while_a_fuse_line_has_it() {
        assert!(mounted_device(MOUNTINFO, "0:53"));
        assert!(mounted_device(MOUNTINFO, "0:41"));
        assert!(!mounted_device(MOUNTINFO, "0:42"), "tmpfs, not FUSE");
        assert!(!mounted_device(MOUNTINFO, "0:5"));
    }

    #[test]
    fn octal_escapes_and_stray_backslashes() {
        assert_eq!(unescape_octal("a\\040b\\011c"), b"a b\tc");
        assert_eq!(unescape_octal("a\\9b\\"), b"a\\9b\\");
    }

    /// A mount point that is missing, a file, or a failed mount: each refusal has the
    /// errno of what is wrong, not EINVAL for all of them.
    #[test]
    fn refusals_carry_the_errno_of_what_is_wrong() {
        let dir = std::env::temp_dir().join(format!("fragfs-mnt-{}", std::process::id()));
        let missing = dir.join("missing");
        let err = check_mountpoint(&missing).unwrap_err();
        assert_eq!(err.errno(), libc::ENOENT, "{err}");
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("file");
        std::fs::write(&file, b"x").unwrap();
        let err = check_mountpoint(&file).unwrap_err();
        assert_eq!(err.errno(), libc::ENOTDIR, "{err}");
        assert!(check_mountpoint(&dir).is_ok());
        std::fs::remove_dir_all(&dir).unwrap();
        let denied = mount_error(&dir, io::Error::from_raw_os_error(libc::EPERM));
        assert_eq!(denied.errno(), libc::EPERM);
        assert!(denied.to_string().contains("fusermount3"), "{denied}");
        let failed = mount_error(&dir, io::Error::other("fusermount3: mount failed"));
        assert_eq!(failed.errno(), libc::EIO);
        assert!(failed.to_string().ends_with(": fusermount3: mount failed"));
    }
}
