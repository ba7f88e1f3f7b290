//! FUSE passthrough for the disk cache: a file complete in the cache is read by the
//! kernel from the cache file itself, without a request to the daemon. The kernel
//! refuses to mix, on one inode, opens it reads itself with opens the daemon serves,
//! so the opens of each inode are counted here.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use fuser::{BackingId, Errno, FileHandle, FopenFlags, ReplyOpen};

use crate::view::{FileTree, Ino};

/// The opens of one inode. The kernel refuses to mix, on one inode, opens it reads
/// itself (passthrough) with opens the daemon serves, and wants one backing file for all
/// its passthrough opens: a file complete in the cache is opened by passthrough only
/// while the daemon serves no open of it, and every passthrough open of it shares the
/// first one's registration, released with the last.
#[derive(Default)]
struct InodeOpens {
    by_daemon: usize,
    passthrough: Option<(BackingId, usize)>,
}

/// Whether opens may use passthrough, and the opens of every open inode.
pub struct Passthrough {
    /// Whether opens may use FUSE passthrough: asked for, offered by the kernel at
    /// init, and not refused since (it needs CAP_SYS_ADMIN).
    enabled: AtomicBool,
    opens: Mutex<HashMap<Ino, InodeOpens>>,
}

impl Passthrough {
    /// Passthrough as asked for (`asked`), until the kernel or a refusal says otherwise.
    pub fn new(asked: bool) -> Passthrough {
        Passthrough {
            enabled: AtomicBool::new(asked),
            opens: Mutex::new(HashMap::new()),
        }
    }

    /// Whether opens may still use passthrough.
    pub fn enabled(&self) -> bool {
        self.enabled.load(Ordering::Acquire)
    }

    /// No passthrough from now on: every file is served by the daemon.
    pub fn disable(&self) {
        self.enabled.store(false, Ordering::Release);
    }

    fn inode_opens(&self) -> std::sync::MutexGuard<'_, HashMap<Ino, InodeOpens>> {
        self.opens.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Counts an open of `ino`, by passthrough if it can be (its whole file is in the
    /// disk cache, checked, and the daemon serves no open of it): true if so. An open
    /// not by passthrough is counted as served by the daemon.
    pub fn open(&self, view: &dyn FileTree, ino: Ino, reply: &ReplyOpen) -> bool {
        {
            let mut opens = self.inode_opens();
            let o = opens.entry(ino).or_default();
            if let Some((_, n)) = &mut o.passthrough {
                *n += 1;
                return true;
            }
            if o.by_daemon > 0 || !self.enabled() {
                o.by_daemon += 1;
                return false;
            }
        }
        // Asked without the lock, so other opens and closes do not wait for it (it never
        // reads the whole file: one not yet checked is checked in the background and
        // this open served by the daemon); what others did meanwhile is looked at
        // again below.
        let cached = view.cached_file(ino);
        let mut opens = self.inode_opens();
        let o = opens.entry(ino).or_default();
        if let Some((_, n)) = &mut o.passthrough {
            *n += 1;
            return true;
        }
        if o.by_daemon == 0 && self.enabled() {
            if let Some((file, path)) = cached {
                match reply.open_backing(&file) {
                    Ok(id) => {
                        log::info!("{path}.data: read by the kernel (FUSE passthrough)");
                        o.passthrough = Some((id, 1));
                        return true;
                    }
                    Err(e) => {
                        self.disable();
                        log::warn!(
                            "FUSE passthrough refused ({e}): files complete in the disk cache \
                             are read from it by the daemon from now on"
                        );
                    }
                }
            }
        }
        o.by_daemon += 1;
        false
    }

    /// Replies to a passthrough open with the inode's registration.
    pub fn reply(&self, ino: Ino, fh: u64, reply: ReplyOpen) {
        let opens = self.inode_opens();
        match opens.get(&ino).and_then(|o| o.passthrough.as_ref()) {
            Some((id, _)) => reply.opened_passthrough(FileHandle(fh), FopenFlags::empty(), id),
            // Not reachable: the registration lives until this handle is released.
            None => reply.error(Errno::EIO),
        }
    }

    /// Uncounts an open of `ino`; the last passthrough open releases the registration.
    pub fn closed(&self, ino: Ino, passthrough: bool) {
        let mut opens = self.inode_opens();
        let Some(o) = opens.get_mut(&ino) else {
            return;
        };
        if passthrough {
            if let Some((_, n)) = &mut o.passthrough {
                *n -= 1;
                if *n == 0 {
                    o.passthrough = None;
                }
            }
        } else {
            o.by_daemon = o.by_daemon.saturating_sub(1);
        }
        if o.by_daemon == 0 && o.passthrough.is_none() {
            opens.remove(&ino);
        }
    }
}

/// Whether a mount made now could use FUSE passthrough for the disk cache, or why not
/// (for `fragfs info`: the mount itself asks the kernel at init).
pub fn passthrough_possible() -> Result<(), String> {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let mut parts = release
        .trim()
        .split(['.', '-'])
        .map(|p| p.parse::<u32>().unwrap_or(0));
    let version = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    if version < (6, 9) {
        return Err(format!(
            "kernel {} has no FUSE passthrough (6.9+)",
            release.trim()
        ));
    }
    if !has_cap_sys_admin() {
        return Err("FUSE passthrough needs root or CAP_SYS_ADMIN".into());
    }
    Ok(())
}

/// Whether this process holds CAP_SYS_ADMIN (bit 21 of `CapEff` in /proc/self/status),
/// which registering a backing file for FUSE passthrough needs.
pub fn has_cap_sys_admin() -> bool {
    const CAP_SYS_ADMIN: u32 = 21;
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            let hex = status.lines().find_map(|l| l.strip_prefix("CapEff:"))?;
            u64::from_str_radix(hex.trim(), 16).ok()
        })
        .is_some_and(|caps| caps & (1 << CAP_SYS_ADMIN) != 0)
}
