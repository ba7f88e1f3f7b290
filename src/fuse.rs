//! The thin FUSE adapter: turns kernel requests into [`FileTree`] calls and view errors
//! into errnos. No decoding happens here; `fragfs cat` and the mount share every read.
//!
//! What makes it kernel-friendly: inode numbers come from the tree's node table (stable
//! for the life of the mount), attributes and entries carry long TTLs because the data is
//! immutable, opens ask the kernel to keep its page cache (and the listings of folders
//! inside a fragment), and `readdirplus` returns attributes so `ls -l` and `find` never
//! need a second request, let alone a decoded tile.
//!
//! Every reply that hands the kernel an inode number (a lookup, a `readdirplus` entry)
//! is counted in the tree first ([`FileTree::remember`]), and FORGET gives the count
//! back: the node tables keep what the kernel holds and a fixed number of idle nodes,
//! so memory does not grow with the paths ever looked up (see `view::nodes`).
//!
//! An open file keeps what it reads (the tree's [`OpenGuard`]): a fragment that TileDB
//! vacuums while a file of it is open reads on with the bytes it had, as a removed local
//! file does; its path is gone once the kernel's entry for the fragment folder expires.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fuser::{
    BackingId, Config, Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation,
    INodeNo, InitFlags, KernelConfig, LockOwner, MountOption, OpenAccMode, OpenFlags, RenameFlags,
    ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory, ReplyDirectoryPlus, ReplyEmpty, ReplyEntry,
    ReplyOpen, ReplyStatfs, Request, Session, SessionACL, TimeOrNow,
};

use crate::error::Error;
use crate::view::prefetch::{Prefetcher, Stream};
use crate::view::{FileTree, Ino, Kind, Lifetime, OpenGuard, Stat};

/// What is inside a fragment never changes, so the kernel may keep what it learnt.
const TTL: Duration = Duration::from_secs(3600);
/// The list of fragments (and the array-level files) can change when TileDB writes,
/// consolidates or vacuums: the kernel asks again after the view's refresh interval.
const CHANGING_TTL: Duration = crate::view::REFRESH_INTERVAL;
/// The kernel read-ahead `fragfs mount` sets by default (`--read-ahead`). The kernel
/// sends a window in requests of at most 1 MiB, one per thread that serves it: with
/// 2 MiB a sequential reader keeps two threads decoding where 1 MiB kept one (a merged
/// `values.bin` read whole by `cat`: 0.384 s against 0.436 s; `array.nc` read 8 KiB at
/// a time: 0.495 s against 0.534 s; medians of 6, scripts/bench/README.md). The window
/// is also the read-around of a memory-mapped reader's page faults: a random fault
/// decodes 2 MiB (in two requests, so no slower, but with more work than 1 MiB).
pub const DEFAULT_READ_AHEAD: u64 = 2 << 20;

/// `st_blksize`: tools like `cat` size their reads by it.
const BLOCK_SIZE: u32 = 128 << 10;

/// How to mount, from the command line.
#[derive(Debug, Clone)]
pub struct MountConfig {
    /// Let other users (`allow_other`) or root (`allow_root`) in; default: only the
    /// mounting user.
    pub allow_other: bool,
    pub allow_root: bool,
    /// Unmount when the daemon dies (needs `fusermount3`, as FUSE implements it there).
    pub auto_unmount: bool,
    /// Threads serving requests, and as many reading ahead.
    pub threads: usize,
    /// How far the kernel reads ahead of a sequential reader, in bytes, when fragfs may
    /// set it (root); 0 leaves the kernel's default.
    pub read_ahead: u64,
    /// End the process as soon as the kernel lets the mount go. fuser's own cleanup
    /// would then unmount the mount point again, by path: after `fragfs umount` that
    /// path may already hold a new mount, which it would take down. Daemons set this;
    /// mounts inside another program (tests) cannot.
    pub exit_on_unmount: bool,
    /// Ask the kernel for FUSE passthrough: files complete in the disk cache are then
    /// read by the kernel from the cache file, without a request to the daemon.
    pub passthrough: bool,
}

/// One open file: where the reader is, to spot sequential reads, and what keeps the
/// file readable until it is closed.
struct Handle {
    ino: Ino,
    /// The size `open` saw (`u64::MAX` for a text file not sized yet): what read-ahead
    /// stops at, so a read needs no `stat` of its own.
    size: u64,
    stream: Stream,
    _keep: Option<OpenGuard>,
    /// Opened by passthrough: the kernel reads it from the disk cache itself.
    passthrough: bool,
}

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

/// A folder's entries as `opendir` listed them (`.` and `..` first): every `readdir` of
/// that handle pages through this one listing, so a long listing costs one `list`
/// rather than one per kernel request (quadratic), and a rescan between two requests
/// cannot shift the offsets (an entry skipped or seen twice).
type Listing = Arc<Vec<(String, Ino, Kind)>>;

pub struct FragFs {
    view: Arc<dyn FileTree>,
    exit_on_unmount: bool,
    ahead: Prefetcher,
    handles: Mutex<HashMap<u64, Handle>>,
    /// Whether opens may use FUSE passthrough: asked for, offered by the kernel at
    /// init, and not refused since (it needs CAP_SYS_ADMIN).
    passthrough: AtomicBool,
    opens: Mutex<HashMap<Ino, InodeOpens>>,
    listings: Mutex<HashMap<u64, Listing>>,
    next_handle: AtomicU64,
    uid: u32,
    gid: u32,
    /// Time shown for nodes that are not inside a fragment: the array folder's mtime.
    array_time: SystemTime,
}

impl FragFs {
    pub fn new(view: Arc<dyn FileTree>, cfg: &MountConfig) -> FragFs {
        // The time the tree was opened: the array's own folder time is not something
        // every store has.
        let array_time = SystemTime::now();
        FragFs {
            ahead: Prefetcher::new(view.clone(), cfg.threads),
            exit_on_unmount: cfg.exit_on_unmount,
            view,
            handles: Mutex::new(HashMap::new()),
            passthrough: AtomicBool::new(cfg.passthrough),
            opens: Mutex::new(HashMap::new()),
            listings: Mutex::new(HashMap::new()),
            next_handle: AtomicU64::new(1),
            // SAFETY: getuid/getgid cannot fail and touch no memory of ours.
            uid: unsafe { libc::getuid() },
            gid: unsafe { libc::getgid() },
            array_time,
        }
    }

    fn attr(&self, ino: Ino, stat: &Stat) -> FileAttr {
        let time = stat
            .mtime_ms
            .map_or(self.array_time, |ms| UNIX_EPOCH + Duration::from_millis(ms));
        let (kind, perm) = match stat.kind {
            Kind::Dir => (FileType::Directory, 0o555),
            Kind::File => (FileType::RegularFile, 0o444),
        };
        FileAttr {
            ino: INodeNo(ino),
            size: stat.size,
            blocks: stat.size.div_ceil(512),
            atime: time,
            mtime: time,
            ctime: time,
            crtime: time,
            kind,
            perm,
            nlink: stat.nlink,
            uid: self.uid,
            gid: self.gid,
            rdev: 0,
            flags: 0,
            blksize: BLOCK_SIZE,
        }
    }

    fn node_attr(&self, ino: Ino) -> Result<(FileAttr, Duration), Errno> {
        let stat = self.view.stat(ino).map_err(|e| errno(&e, ino, "stat"))?;
        Ok((self.attr(ino, &stat), attr_ttl(&*self.view, ino, &stat)))
    }

    fn handles(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Handle>> {
        self.handles.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn listings(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Listing>> {
        self.listings.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The listing of directory handle `fh`; a handle this adapter did not hand out
    /// (none should reach here) gets a fresh listing.
    fn listing(&self, ino: INodeNo, fh: FileHandle) -> Result<Listing, Errno> {
        if let Some(listing) = self.listings().get(&fh.0) {
            return Ok(listing.clone());
        }
        Ok(Arc::new(self.entries(ino)?))
    }

    fn inode_opens(&self) -> std::sync::MutexGuard<'_, HashMap<Ino, InodeOpens>> {
        self.opens.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Counts an open of `ino`, by passthrough if it can be (its whole file is in the
    /// disk cache, checked, and the daemon serves no open of it): true if so. An open
    /// not by passthrough is counted as served by the daemon.
    fn open_passthrough(&self, ino: Ino, reply: &ReplyOpen) -> bool {
        {
            let mut opens = self.inode_opens();
            let o = opens.entry(ino).or_default();
            if let Some((_, n)) = &mut o.passthrough {
                *n += 1;
                return true;
            }
            if o.by_daemon > 0 || !self.passthrough.load(Ordering::Acquire) {
                o.by_daemon += 1;
                return false;
            }
        }
        // Asked without the lock, so other opens and closes do not wait for it (it never
        // reads the whole file: one not yet checked is checked in the background and
        // this open served by the daemon); what others did meanwhile is looked at
        // again below.
        let cached = self.view.cached_file(ino);
        let mut opens = self.inode_opens();
        let o = opens.entry(ino).or_default();
        if let Some((_, n)) = &mut o.passthrough {
            *n += 1;
            return true;
        }
        if o.by_daemon == 0 && self.passthrough.load(Ordering::Acquire) {
            if let Some((file, path)) = cached {
                match reply.open_backing(&file) {
                    Ok(id) => {
                        log::info!("{path}.data: read by the kernel (FUSE passthrough)");
                        o.passthrough = Some((id, 1));
                        return true;
                    }
                    Err(e) => {
                        self.passthrough.store(false, Ordering::Release);
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
    fn reply_passthrough(&self, ino: Ino, fh: u64, reply: ReplyOpen) {
        let opens = self.inode_opens();
        match opens.get(&ino).and_then(|o| o.passthrough.as_ref()) {
            Some((id, _)) => reply.opened_passthrough(FileHandle(fh), FopenFlags::empty(), id),
            // Not reachable: the registration lives until this handle is released.
            None => reply.error(Errno::EIO),
        }
    }

    /// Uncounts an open of `ino`; the last passthrough open releases the registration.
    fn closed(&self, ino: Ino, passthrough: bool) {
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

    /// Follows each open file's stream of reads; a sequential one gets its next bytes
    /// prepared ahead.
    fn read_ahead(&self, fh: u64, offset: u64, len: u64) {
        let hint = {
            let mut handles = self.handles();
            let Some(h) = handles.get_mut(&fh) else {
                return;
            };
            let size = h.size;
            h.stream.read(offset, len, size).map(|ahead| (h.ino, ahead))
        };
        if let Some((ino, (from, len))) = hint {
            self.ahead.hint(ino, from, len);
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
fn has_cap_sys_admin() -> bool {
    const CAP_SYS_ADMIN: u32 = 21;
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            let hex = status.lines().find_map(|l| l.strip_prefix("CapEff:"))?;
            u64::from_str_radix(hex.trim(), 16).ok()
        })
        .is_some_and(|caps| caps & (1 << CAP_SYS_ADMIN) != 0)
}

thread_local! {
    /// Each FUSE thread assembles its replies in one buffer that lives as long as the
    /// thread: fresh memory for every reply costs page faults that show in throughput.
    static REPLY: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A reply buffer grown beyond this (a rare huge read) is not kept.
const REPLY_KEEP: usize = 4 << 20;

/// How long the kernel may keep an entry or attributes of `ino`.
fn ttl(view: &dyn FileTree, ino: Ino) -> Duration {
    match view.lifetime(ino) {
        Lifetime::Immutable => TTL,
        Lifetime::Changing | Lifetime::Snapshot => CHANGING_TTL,
    }
}

/// The same, for attributes: a size not known yet (0 for a text file never read) is not
/// kept at all, so the exact size shows as soon as it is known.
fn attr_ttl(view: &dyn FileTree, ino: Ino, stat: &Stat) -> Duration {
    if stat.exact_size {
        ttl(view, ino)
    } else {
        Duration::ZERO
    }
}

/// How the kernel may cache a folder's listing. `FOPEN_CACHE_DIR` keeps the entries
/// `readdir` returned in the kernel's page cache, and `FOPEN_KEEP_CACHE` keeps them
/// across opens (without it, each `opendir` drops them; alone, it does nothing for a
/// folder). Only folders whose entries never change get both (those inside a
/// fragment): the kernel would otherwise show a listing that a write, consolidation or
/// vacuum made stale, since it only drops a kept listing when the folder's mtime changes
/// and these folders show a fixed one. The rest are listed afresh at every open.
fn dir_cache_flags(lifetime: Lifetime) -> FopenFlags {
    match lifetime {
        Lifetime::Immutable => FopenFlags::FOPEN_CACHE_DIR | FopenFlags::FOPEN_KEEP_CACHE,
        Lifetime::Changing | Lifetime::Snapshot => FopenFlags::empty(),
    }
}

/// The errno for a view error; unexpected ones (bad data, I/O) are logged with the
/// message that names fragment, file, tile and chunk.
fn errno(e: &Error, ino: Ino, op: &str) -> Errno {
    let code = e.errno();
    if code == libc::EIO {
        let message = e.to_string();
        if !repeated(ino, &message) {
            log::error!("{op} inode {ino}: {message}");
        }
    } else {
        log::debug!("{op} inode {ino}: {e}");
    }
    Errno::from_i32(code)
}

/// Whether the same error of the same node was logged a moment ago. The kernel often
/// asks twice for what failed once (a lookup then its revalidation, a read-ahead then
/// the page itself): one failure is one log line.
fn repeated(ino: Ino, message: &str) -> bool {
    const WINDOW: Duration = Duration::from_secs(2);
    static RECENT: Mutex<Vec<(Ino, String, std::time::Instant)>> = Mutex::new(Vec::new());
    let now = std::time::Instant::now();
    let mut recent = RECENT.lock().unwrap_or_else(|e| e.into_inner());
    recent.retain(|(_, _, at)| now.duration_since(*at) < WINDOW);
    if recent.iter().any(|(n, m, _)| *n == ino && m == message) {
        return true;
    }
    recent.push((ino, message.to_string(), now));
    false
}

impl Filesystem for FragFs {
    fn destroy(&mut self) {
        if self.exit_on_unmount {
            log::info!("{}: unmounted", self.view.source());
            std::process::exit(0);
        }
    }

    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> io::Result<()> {
        // Not every kernel offers readdirplus; without it `ls -l` still works, just with
        // a getattr per entry.
        if config
            .add_capabilities(InitFlags::FUSE_DO_READDIRPLUS)
            .is_err()
        {
            log::info!("kernel without readdirplus");
        }
        if self.passthrough.load(Ordering::Acquire) {
            let offered = config
                .add_capabilities(InitFlags::FUSE_PASSTHROUGH)
                .is_ok()
                // 2: the cache folder may itself be on a stacked file system (overlayfs
                // in a container).
                && config.set_max_stack_depth(2).is_ok();
            let why_not = if !offered {
                Some("the kernel does not offer FUSE passthrough (Linux 6.9+)")
            } else if !has_cap_sys_admin() {
                Some("FUSE passthrough needs root or CAP_SYS_ADMIN")
            } else {
                None
            };
            match why_not {
                None => log::info!(
                    "disk cache: files complete in it are read by the kernel directly (FUSE \
                     passthrough)"
                ),
                Some(reason) => {
                    self.passthrough.store(false, Ordering::Release);
                    log::info!(
                        "disk cache: {reason}: files complete in it are read from it by the \
                         daemon (pread), without decoding"
                    );
                }
            }
        }
        Ok(())
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let result = (|| {
            let name = name.to_str().ok_or(Errno::ENOENT)?;
            let ino = self.held(parent.0, name, None)?;
            self.node_attr(ino)
                .inspect_err(|_| self.view.forget(ino, 1))
        })();
        match result {
            Ok((attr, ttl)) => reply.entry(&ttl, &attr, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    // BATCH_FORGET: fuser's default `batch_forget` calls this for each node (its
    // `ForgetOne` is not public, so it could not be written here anyway).
    fn forget(&self, _req: &Request, ino: INodeNo, nlookup: u64) {
        self.view.forget(ino.0, nlookup);
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match self.node_attr(ino.0) {
            Ok((attr, ttl)) => reply.attr(&ttl, &attr),
            Err(e) => reply.error(e),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        let ino = ino.0;
        let result = (|| {
            if flags.acc_mode() != OpenAccMode::O_RDONLY || flags.0 & libc::O_TRUNC != 0 {
                return Err(Errno::EROFS);
            }
            let stat = self.view.stat(ino).map_err(|e| errno(&e, ino, "open"))?;
            if stat.kind == Kind::Dir {
                return Err(Errno::EISDIR);
            }
            let keep = self.view.open(ino).map_err(|e| errno(&e, ino, "open"))?;
            let fh = self.next_handle.fetch_add(1, Ordering::Relaxed);
            let lifetime = self.view.lifetime(ino);
            let passthrough = lifetime == Lifetime::Immutable
                && stat.exact_size
                && self.open_passthrough(ino, &reply);
            let handle = Handle {
                ino,
                // (`stat` never renders: a text file not sized yet counts as endless.)
                size: if stat.exact_size { stat.size } else { u64::MAX },
                stream: Stream::default(),
                _keep: keep,
                passthrough,
            };
            self.handles().insert(fh, handle);
            if passthrough {
                return Ok((fh, None));
            }
            // Immutable files keep their pages in the kernel; the array-level JSON, which
            // a rescan may change, is read through every time, and so is a text file
            // whose size is not known yet (the kernel would stop at the size it shows).
            // A snapshot (the merged view) uses the page cache while open, so sequential
            // readers get the kernel's read-ahead, and drops it at the next open.
            let flags = match lifetime {
                Lifetime::Immutable if stat.exact_size => FopenFlags::FOPEN_KEEP_CACHE,
                Lifetime::Snapshot if stat.exact_size => FopenFlags::empty(),
                _ => FopenFlags::FOPEN_DIRECT_IO,
            };
            Ok((fh, Some(flags)))
        })();
        match result {
            Ok((fh, Some(flags))) => reply.opened(FileHandle(fh), flags),
            Ok((fh, None)) => self.reply_passthrough(ino, fh, reply),
            Err(e) => reply.error(e),
        }
    }

    fn read(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let ino = ino.0;
        // Read-ahead is asked for first, so the disk works while this read decodes.
        self.read_ahead(fh.0, offset, u64::from(size));
        REPLY.with_borrow_mut(|buf| {
            buf.clear();
            match self.view.read_into(ino, offset, u64::from(size), buf) {
                Ok(()) => reply.data(buf),
                Err(e) => reply.error(errno(&e, ino, &format!("read at {offset}"))),
            }
            if buf.capacity() > REPLY_KEEP {
                *buf = Vec::new();
            }
        });
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        if let Some(h) = self.handles().remove(&fh.0) {
            self.closed(h.ino, h.passthrough);
        }
        reply.ok();
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        reply.ok();
    }

    fn fsync(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        reply.ok();
    }

    fn opendir(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        let result = (|| {
            let (attr, _) = self.node_attr(ino.0)?;
            if attr.kind != FileType::Directory {
                return Err(Errno::ENOTDIR);
            }
            let listing = Arc::new(self.entries(ino)?);
            let fh = self.next_handle.fetch_add(1, Ordering::Relaxed);
            self.listings().insert(fh, listing);
            Ok(fh)
        })();
        match result {
            Ok(fh) => reply.opened(FileHandle(fh), dir_cache_flags(self.view.lifetime(ino.0))),
            Err(e) => reply.error(e),
        }
    }

    fn releasedir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        reply: ReplyEmpty,
    ) {
        self.listings().remove(&fh.0);
        reply.ok();
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let entries = match self.listing(ino, fh) {
            Ok(e) => e,
            Err(e) => return reply.error(e),
        };
        for (i, (name, child, kind)) in entries.iter().enumerate().skip(offset as usize) {
            let kind = match kind {
                Kind::Dir => FileType::Directory,
                Kind::File => FileType::RegularFile,
            };
            if reply.add(INodeNo(*child), i as u64 + 1, kind, name) {
                break;
            }
        }
        reply.ok();
    }

    fn readdirplus(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectoryPlus,
    ) {
        let entries = match self.listing(ino, fh) {
            Ok(e) => e,
            Err(e) => return reply.error(e),
        };
        for (i, (name, listed, kind)) in entries.iter().enumerate().skip(offset as usize) {
            // `.` and `..` are not counted by the kernel; every other entry is.
            let counted = i >= 2;
            let child = if counted {
                match self.held(ino.0, name, Some(*listed)) {
                    Ok(child) => child,
                    // Gone since `opendir` (a vacuum): not listed.
                    Err(_) => continue,
                }
            } else {
                *listed
            };
            let (attr, ttl) = match self.view.stat(child) {
                Ok(stat) => (self.attr(child, &stat), attr_ttl(&*self.view, child, &stat)),
                // Unreadable metadata: listed all the same (hiding it would lie about
                // the tree), with attributes that expire at once, so its use reports
                // (and logs) the error.
                Err(_) if *kind == Kind::File => {
                    let unreadable = Stat {
                        kind: Kind::File,
                        size: 0,
                        nlink: 1,
                        mtime_ms: None,
                        exact_size: false,
                    };
                    (self.attr(child, &unreadable), Duration::ZERO)
                }
                Err(_) => {
                    if counted {
                        self.view.forget(child, 1);
                    }
                    continue;
                }
            };
            if reply.add(attr.ino, i as u64 + 1, name, &ttl, &attr, Generation(0)) {
                // Did not fit: the kernel never saw it.
                if counted {
                    self.view.forget(child, 1);
                }
                break;
            }
        }
        reply.ok();
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        let files = self.view.entry_count();
        reply.statfs(0, 0, 0, files, 0, BLOCK_SIZE, 255, BLOCK_SIZE);
    }

    // No `access`: the mount uses `default_permissions`, so the kernel checks access
    // itself from the attributes (0o444 files, 0o555 folders, EROFS for W_OK on the
    // read-only mount) and never asks.

    // Everything that would change the tree. The mount is read-only (`ro`), so the
    // kernel refuses these with EROFS before asking; they answer EROFS all the same
    // for a mount made without `ro` (a program mounting with its own configuration) or
    // remounted read-write, where fuser's defaults would answer ENOSYS. No handlers for
    // what needs a file open for writing (write, fallocate, copy_file_range into it):
    // `open` and `create` refuse every access mode but read-only, so the kernel never
    // has a handle to send them for.

    fn setattr(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        _size: Option<u64>,
        _atime: Option<TimeOrNow>,
        _mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        reply.error(Errno::EROFS);
    }

    fn mknod(
        &self,
        _req: &Request,
        _parent: INodeNo,
        _name: &OsStr,
        _mode: u32,
        _umask: u32,
        _rdev: u32,
        reply: ReplyEntry,
    ) {
        reply.error(Errno::EROFS);
    }

    fn mkdir(
        &self,
        _req: &Request,
        _parent: INodeNo,
        _name: &OsStr,
        _mode: u32,
        _umask: u32,
        reply: ReplyEntry,
    ) {
        reply.error(Errno::EROFS);
    }

    fn unlink(&self, _req: &Request, _parent: INodeNo, _name: &OsStr, reply: ReplyEmpty) {
        reply.error(Errno::EROFS);
    }

    fn rmdir(&self, _req: &Request, _parent: INodeNo, _name: &OsStr, reply: ReplyEmpty) {
        reply.error(Errno::EROFS);
    }

    fn symlink(
        &self,
        _req: &Request,
        _parent: INodeNo,
        _link_name: &OsStr,
        _target: &Path,
        reply: ReplyEntry,
    ) {
        reply.error(Errno::EROFS);
    }

    fn rename(
        &self,
        _req: &Request,
        _parent: INodeNo,
        _name: &OsStr,
        _newparent: INodeNo,
        _newname: &OsStr,
        _flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        reply.error(Errno::EROFS);
    }

    fn link(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _newparent: INodeNo,
        _newname: &OsStr,
        reply: ReplyEntry,
    ) {
        reply.error(Errno::EROFS);
    }

    fn create(
        &self,
        _req: &Request,
        _parent: INodeNo,
        _name: &OsStr,
        _mode: u32,
        _umask: u32,
        _flags: i32,
        reply: ReplyCreate,
    ) {
        reply.error(Errno::EROFS);
    }

    fn setxattr(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _name: &OsStr,
        _value: &[u8],
        _flags: i32,
        _position: u32,
        reply: ReplyEmpty,
    ) {
        reply.error(Errno::EROFS);
    }

    fn removexattr(&self, _req: &Request, _ino: INodeNo, _name: &OsStr, reply: ReplyEmpty) {
        reply.error(Errno::EROFS);
    }
}

impl FragFs {
    /// The number of `name` in folder `dir`, counted as held by the kernel (the caller
    /// hands it over, or gives it back with `forget`). `listed` is the number a listing
    /// gave; if the tree dropped it since (idle nodes go, oldest first), or it is not
    /// given, the name is looked up.
    fn held(&self, dir: Ino, name: &str, listed: Option<Ino>) -> Result<Ino, Errno> {
        if let Some(ino) = listed {
            if self.view.remember(ino) {
                return Ok(ino);
            }
        }
        // A number can go idle and be dropped between the lookup and `remember` only
        // if a whole idle limit of other nodes came in between: one more try is plenty,
        // three never fail.
        for _ in 0..3 {
            let ino = self
                .view
                .lookup(dir, name)
                .map_err(|e| errno(&e, dir, "lookup"))?
                .ino;
            if self.view.remember(ino) {
                return Ok(ino);
            }
        }
        log::error!("lookup of {name} in inode {dir}: its number was dropped three times");
        Err(Errno::EIO)
    }

    /// A folder's entries with `.` and `..` first, as `readdir` must list them.
    fn entries(&self, ino: INodeNo) -> Result<Vec<(String, Ino, Kind)>, Errno> {
        let dir = ino.0;
        let listed = self.view.list(dir).map_err(|e| errno(&e, dir, "readdir"))?;
        let parent = self
            .view
            .parent(dir)
            .map_err(|e| errno(&e, dir, "readdir"))?;
        let mut out = Vec::with_capacity(listed.len() + 2);
        out.push((".".to_string(), dir, Kind::Dir));
        out.push(("..".to_string(), parent, Kind::Dir));
        out.extend(listed.into_iter().map(|e| (e.name, e.ino, e.kind)));
        Ok(out)
    }
}

/// The fuser configuration for `cfg`: read-only, private unless asked, named `fragfs`.
pub fn fuse_config(cfg: &MountConfig) -> Config {
    let mut config = Config::default();
    config.mount_options = vec![
        MountOption::RO,
        MountOption::FSName("fragfs".into()),
        MountOption::Subtype("fragfs".into()),
        MountOption::NoDev,
        MountOption::NoSuid,
        MountOption::NoAtime,
        MountOption::DefaultPermissions,
    ];
    if cfg.auto_unmount {
        config.mount_options.push(MountOption::AutoUnmount);
    }
    config.acl = if cfg.allow_other {
        SessionACL::All
    } else if cfg.allow_root {
        SessionACL::RootAndOwner
    } else {
        SessionACL::Owner
    };
    config.n_threads = Some(cfg.threads.max(1));
    config
}

/// Mounts `view` at `mountpoint`. When this returns `Ok` the mount is live (the kernel
/// handshake is done); serve it with `run()` or `spawn()` on the session.
pub fn mount(
    view: Arc<dyn FileTree>,
    mountpoint: &Path,
    cfg: &MountConfig,
) -> io::Result<Session<FragFs>> {
    Session::new(FragFs::new(view, cfg), mountpoint, &fuse_config(cfg))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Listings inside a fragment never change: the kernel keeps them across opens
    /// (both flags; `FOPEN_KEEP_CACHE` alone does nothing for a folder). Listings that
    /// a write or vacuum can change are asked for at every open.
    #[test]
    fn only_folders_that_never_change_keep_their_listing_in_the_kernel() {
        assert_eq!(
            dir_cache_flags(Lifetime::Immutable),
            FopenFlags::FOPEN_CACHE_DIR | FopenFlags::FOPEN_KEEP_CACHE
        );
        for lifetime in [Lifetime::Changing, Lifetime::Snapshot] {
            assert_eq!(dir_cache_flags(lifetime), FopenFlags::empty());
        }
    }
}
