//! The thin FUSE adapter: turns kernel requests into [`FileTree`] calls and view errors
//! into errnos. No decoding happens here; `fragfs cat` and the mount share every read.
//!
//! What makes it kernel-friendly: inode numbers are the nodes themselves (stable, no
//! table), attributes and entries carry long TTLs because the data is immutable, opens
//! ask the kernel to keep its page cache, and `readdirplus` returns attributes so `ls -l`
//! and `find` never need a second request, let alone a decoded tile.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fuser::{
    AccessFlags, Config, Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation,
    INodeNo, InitFlags, KernelConfig, LockOwner, MountOption, Notifier, OpenAccMode, OpenFlags,
    RenameFlags, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory, ReplyDirectoryPlus, ReplyEmpty,
    ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite, Request, Session, SessionACL, TimeOrNow,
    WriteFlags,
};

use crate::error::Error;
use crate::view::inode::{from_ino, to_ino};
use crate::view::prefetch::{Prefetcher, Stream};
use crate::view::tree::FileTree;
use crate::view::{Kind, Node, Stat};

/// What is inside a fragment never changes, so the kernel may keep what it learnt.
const TTL: Duration = Duration::from_secs(3600);
/// The list of fragments (and the array-level files) can change when TileDB writes,
/// consolidates or vacuums: the kernel asks again after the view's refresh interval.
const CHANGING_TTL: Duration = crate::view::REFRESH_INTERVAL;
/// The kernel read-ahead `fragfs mount` sets by default (`--read-ahead`): enough for
/// several requests in flight, so every serving thread has work.
pub const DEFAULT_READ_AHEAD: u64 = 1 << 20;

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
}

/// One open file: where the reader is, to spot sequential reads.
#[derive(Debug, Clone, Copy)]
struct Handle {
    node: Node,
    stream: Stream,
}

pub struct FragFs {
    view: Arc<dyn FileTree>,
    /// Set once the session exists; used to drop the kernel's cached pages of files
    /// whose fragment was vacuumed.
    notifier: Arc<OnceLock<Notifier>>,
    /// The view generation whose removals were already handled.
    seen_generation: AtomicU64,
    exit_on_unmount: bool,
    ahead: Prefetcher,
    handles: Mutex<HashMap<u64, Handle>>,
    next_handle: AtomicU64,
    uid: u32,
    gid: u32,
    /// Time shown for nodes that are not inside a fragment: the array folder's mtime.
    array_time: SystemTime,
}

impl FragFs {
    pub fn new(
        view: Arc<dyn FileTree>,
        cfg: &MountConfig,
        notifier: Arc<OnceLock<Notifier>>,
    ) -> FragFs {
        let array_time = std::fs::metadata(view.source())
            .and_then(|m| m.modified())
            .unwrap_or(UNIX_EPOCH);
        FragFs {
            ahead: Prefetcher::new(view.clone(), cfg.threads),
            seen_generation: AtomicU64::new(view.generation()),
            exit_on_unmount: cfg.exit_on_unmount,
            view,
            notifier,
            handles: Mutex::new(HashMap::new()),
            next_handle: AtomicU64::new(1),
            // SAFETY: getuid/getgid cannot fail and touch no memory of ours.
            uid: unsafe { libc::getuid() },
            gid: unsafe { libc::getgid() },
            array_time,
        }
    }

    fn attr(&self, node: Node, stat: &Stat) -> Result<FileAttr, Errno> {
        let ino = to_ino(node).ok_or(Errno::EOVERFLOW)?;
        let time = stat
            .mtime_ms
            .map_or(self.array_time, |ms| UNIX_EPOCH + Duration::from_millis(ms));
        let (kind, perm) = match stat.kind {
            Kind::Dir => (FileType::Directory, 0o555),
            Kind::File => (FileType::RegularFile, 0o444),
        };
        Ok(FileAttr {
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
        })
    }

    fn node_attr(&self, node: Node) -> Result<FileAttr, Errno> {
        let stat = self.view.stat(node).map_err(|e| errno(&e, node, "stat"))?;
        self.attr(node, &stat)
    }

    fn handles(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Handle>> {
        self.handles.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Follows each open file's stream of reads; a sequential one gets its next bytes
    /// prepared ahead.
    fn read_ahead(&self, fh: u64, offset: u64, len: u64, size: u64) {
        let hint = {
            let mut handles = self.handles();
            let Some(h) = handles.get_mut(&fh) else {
                return;
            };
            h.stream
                .read(offset, len, size)
                .map(|ahead| (h.node, ahead))
        };
        if let Some((node, (from, len))) = hint {
            self.ahead.hint(node, from, len);
        }
    }
}

thread_local! {
    /// Each FUSE thread assembles its replies in one buffer that lives as long as the
    /// thread: fresh memory for every reply costs page faults that show in throughput.
    static REPLY: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A reply buffer grown beyond this (a rare huge read) is not kept.
const REPLY_KEEP: usize = 4 << 20;

/// How long the kernel may keep an entry or attributes of `node`.
fn ttl(view: &dyn FileTree, node: Node) -> Duration {
    match node {
        Node::Fragment(_) => CHANGING_TTL, // a fragment folder may be vacuumed
        n if view.is_immutable(n) => TTL,
        _ => CHANGING_TTL,
    }
}

fn node(ino: INodeNo) -> Result<Node, Errno> {
    from_ino(ino.0).ok_or(Errno::ENOENT)
}

/// The errno for a view error; unexpected ones (bad data, I/O) are logged with the
/// message that names fragment, file, tile and chunk.
fn errno(e: &Error, node: Node, op: &str) -> Errno {
    let code = e.errno();
    if code == libc::EIO {
        let message = e.to_string();
        if !repeated(node, &message) {
            log::error!("{op} {node:?}: {message}");
        }
    } else {
        log::debug!("{op} {node:?}: {e}");
    }
    Errno::from_i32(code)
}

/// Whether the same error of the same node was logged a moment ago. The kernel often
/// asks twice for what failed once (a lookup then its revalidation, a read-ahead then
/// the page itself): one failure is one log line.
fn repeated(node: Node, message: &str) -> bool {
    const WINDOW: Duration = Duration::from_secs(2);
    static RECENT: Mutex<Vec<(Node, String, std::time::Instant)>> = Mutex::new(Vec::new());
    let now = std::time::Instant::now();
    let mut recent = RECENT.lock().unwrap_or_else(|e| e.into_inner());
    recent.retain(|(_, _, at)| now.duration_since(*at) < WINDOW);
    if recent.iter().any(|(n, m, _)| *n == node && m == message) {
        return true;
    }
    recent.push((node, message.to_string(), now));
    false
}

impl Filesystem for FragFs {
    fn destroy(&mut self) {
        if self.exit_on_unmount {
            log::info!("{}: unmounted", self.view.source().display());
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
        Ok(())
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let result = (|| {
            let parent = node(parent)?;
            let name = name.to_str().ok_or(Errno::ENOENT)?;
            let child = self
                .view
                .lookup(parent, name)
                .map_err(|e| errno(&e, parent, "lookup"))?;
            Ok((child, self.node_attr(child)?))
        })();
        self.forget_vacuumed();
        match result {
            Ok((child, attr)) => reply.entry(&ttl(&*self.view, child), &attr, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match node(ino).and_then(|n| Ok((n, self.node_attr(n)?))) {
            Ok((n, attr)) => reply.attr(&ttl(&*self.view, n), &attr),
            Err(e) => reply.error(e),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        let result = (|| {
            let node = node(ino)?;
            if flags.acc_mode() != OpenAccMode::O_RDONLY || flags.0 & libc::O_TRUNC != 0 {
                return Err(Errno::EROFS);
            }
            let stat = self.view.stat(node).map_err(|e| errno(&e, node, "open"))?;
            if stat.kind == Kind::Dir {
                return Err(Errno::EISDIR);
            }
            let fh = self.next_handle.fetch_add(1, Ordering::Relaxed);
            let handle = Handle {
                node,
                stream: Stream::default(),
            };
            self.handles().insert(fh, handle);
            // Immutable files keep their pages in the kernel; the array-level JSON, which
            // a rescan may change, is read through every time.
            let flags = if self.view.is_immutable(node) {
                FopenFlags::FOPEN_KEEP_CACHE
            } else {
                FopenFlags::FOPEN_DIRECT_IO
            };
            Ok((fh, flags))
        })();
        match result {
            Ok((fh, flags)) => reply.opened(FileHandle(fh), flags),
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
        let node = match node(ino) {
            Ok(n) => n,
            Err(e) => return reply.error(e),
        };
        // Read-ahead is asked for first, so the disk works while this read decodes.
        if let Ok(file_size) = self.view.size(node) {
            self.read_ahead(fh.0, offset, u64::from(size), file_size);
        }
        REPLY.with_borrow_mut(|buf| {
            buf.clear();
            match self.view.read_into(node, offset, u64::from(size), buf) {
                Ok(()) => reply.data(buf),
                Err(e) => reply.error(errno(&e, node, &format!("read at {offset}"))),
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
        self.handles().remove(&fh.0);
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
        match node(ino).and_then(|n| self.node_attr(n)) {
            Ok(attr) if attr.kind == FileType::Directory => {
                reply.opened(FileHandle(0), FopenFlags::FOPEN_KEEP_CACHE)
            }
            Ok(_) => reply.error(Errno::ENOTDIR),
            Err(e) => reply.error(e),
        }
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let entries = match self.entries(ino) {
            Ok(e) => e,
            Err(e) => return reply.error(e),
        };
        for (i, (name, child)) in entries.iter().enumerate().skip(offset as usize) {
            let Some(child_ino) = to_ino(*child) else {
                continue;
            };
            let kind = if child.is_dir() {
                FileType::Directory
            } else {
                FileType::RegularFile
            };
            if reply.add(INodeNo(child_ino), i as u64 + 1, kind, name) {
                break;
            }
        }
        reply.ok();
    }

    fn readdirplus(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectoryPlus,
    ) {
        let entries = match self.entries(ino) {
            Ok(e) => e,
            Err(e) => return reply.error(e),
        };
        for (i, (name, child)) in entries.iter().enumerate().skip(offset as usize) {
            // A text file not sized yet is listed with attributes that expire at once,
            // so a later `stat` asks (and pays for the counting pass) but `ls` does not.
            let unsized_file = Stat {
                kind: Kind::File,
                size: 0,
                nlink: 1,
                mtime_ms: None,
            };
            let (attr, ttl) = if self.view.size_is_costly(*child) {
                (self.attr(*child, &unsized_file), Duration::ZERO)
            } else {
                match self.view.stat(*child) {
                    Ok(stat) => (self.attr(*child, &stat), ttl(&*self.view, *child)),
                    // Unreadable metadata: listed all the same (hiding it would lie
                    // about the tree), with attributes that expire at once, so its use
                    // reports (and logs) the error.
                    Err(_) if !child.is_dir() => (self.attr(*child, &unsized_file), Duration::ZERO),
                    Err(_) => continue,
                }
            };
            let Ok(attr) = attr else { continue };
            if reply.add(attr.ino, i as u64 + 1, name, &ttl, &attr, Generation(0)) {
                break;
            }
        }
        reply.ok();
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        let files = self.view.entry_count();
        reply.statfs(0, 0, 0, files, 0, BLOCK_SIZE, 255, BLOCK_SIZE);
    }

    fn access(&self, _req: &Request, ino: INodeNo, mask: AccessFlags, reply: ReplyEmpty) {
        match node(ino).and_then(|n| self.node_attr(n)) {
            Ok(_) if mask.contains(AccessFlags::W_OK) => reply.error(Errno::EROFS),
            Ok(_) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    // Everything that would change the tree: the mount is read-only.

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

    fn write(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _offset: u64,
        _data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
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

    fn fallocate(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _offset: u64,
        _length: u64,
        _mode: i32,
        reply: ReplyEmpty,
    ) {
        reply.error(Errno::EROFS);
    }
}

impl FragFs {
    /// A folder's entries with `.` and `..` first, as `readdir` must list them.
    fn entries(&self, ino: INodeNo) -> Result<Vec<(String, Node)>, Errno> {
        let dir = node(ino)?;
        let listed = self.view.list(dir).map_err(|e| errno(&e, dir, "readdir"));
        self.forget_vacuumed();
        let listed = listed?;
        let parent = self.view.parent(dir);
        let mut out = Vec::with_capacity(listed.len() + 2);
        out.push((".".to_string(), dir));
        out.push(("..".to_string(), parent));
        out.extend(listed.into_iter().map(|e| (e.name, e.node)));
        Ok(out)
    }
}

impl FragFs {
    /// After a rescan removed fragments, drops the kernel's cached pages of files still
    /// open in them, so their readers get ENOENT from the view, not stale pages. Runs
    /// on its own thread: a notification sent from a request handler could wait on the
    /// very inode that handler holds.
    fn forget_vacuumed(&self) {
        let generation = self.view.generation();
        if self.seen_generation.swap(generation, Ordering::AcqRel) == generation {
            return;
        }
        let gone: Vec<u64> = self
            .handles()
            .values()
            .filter(|h| self.view.stat(h.node).is_err())
            .filter_map(|h| to_ino(h.node))
            .collect();
        let Some(notifier) = self.notifier.get().cloned() else {
            return;
        };
        if gone.is_empty() {
            return;
        }
        let spawned = std::thread::Builder::new()
            .name("fragfs-inval".into())
            .spawn(move || {
                for ino in gone {
                    if let Err(e) = notifier.inval_inode(INodeNo(ino), 0, 0) {
                        log::debug!("invalidating inode {ino}: {e}");
                    }
                }
            });
        if let Err(e) = spawned {
            log::warn!("cannot invalidate the pages of vacuumed fragments: {e}");
        }
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
    let notifier = Arc::new(OnceLock::new());
    let fs = FragFs::new(view, cfg, notifier.clone());
    let session = Session::new(fs, mountpoint, &fuse_config(cfg))?;
    let _ = notifier.set(session.notifier());
    Ok(session)
}
