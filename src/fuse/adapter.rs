//! The thin adapter: each kernel request a [`FileTree`] call, each view error an errno.
//! The rest of `fuse/` holds what the requests share: attributes and TTLs (`attrs.rs`),
//! the numbers the kernel holds (`inodes.rs`), open handles (`handles.rs`), FUSE
//! passthrough (`passthrough.rs`) and errnos (`errno.rs`).

use std::ffi::OsStr;
use std::io;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo, InitFlags,
    KernelConfig, LockOwner, OpenAccMode, OpenFlags, RenameFlags, ReplyAttr, ReplyCreate,
    ReplyData, ReplyDirectory, ReplyDirectoryPlus, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyStatfs,
    Request, Session, TimeOrNow,
};

use super::attrs::{attr_ttl, dir_cache_flags, Attrs, BLOCK_SIZE};
use super::config::{fuse_config, MountConfig};
use super::errno::errno;
use super::handles::{Handle, Handles};
use super::inodes::{self, Listing};
use super::passthrough::{has_cap_sys_admin, Passthrough};
use crate::view::prefetch::{Prefetcher, Stream};
use crate::view::{FileTree, Ino, Kind, Lifetime, Stat};

/// A mounted tree, as fuser serves it.
pub struct FragFs {
    view: Arc<dyn FileTree>,
    exit_on_unmount: bool,
    ahead: Prefetcher,
    handles: Handles,
    passthrough: Passthrough,
    attrs: Attrs,
}

impl FragFs {
    pub fn new(view: Arc<dyn FileTree>, cfg: &MountConfig) -> FragFs {
        FragFs {
            ahead: Prefetcher::new(view.clone(), cfg.threads),
            exit_on_unmount: cfg.exit_on_unmount,
            view,
            handles: Handles::default(),
            passthrough: Passthrough::new(cfg.passthrough),
            attrs: Attrs::now(),
        }
    }

    fn node_attr(&self, ino: Ino) -> Result<(FileAttr, Duration), Errno> {
        let stat = self.view.stat(ino).map_err(|e| errno(&e, ino, "stat"))?;
        Ok((self.attrs.of(ino, &stat), attr_ttl(&*self.view, ino, &stat)))
    }

    /// The listing of directory handle `fh`; a handle this adapter did not hand out
    /// (none should reach here) gets a fresh listing.
    fn listing(&self, ino: INodeNo, fh: FileHandle) -> Result<Listing, Errno> {
        if let Some(listing) = self.handles.folders().get(&fh.0) {
            return Ok(listing.clone());
        }
        Ok(Arc::new(inodes::entries(&*self.view, ino.0)?))
    }

    /// Follows each open file's stream of reads; a sequential one gets its next bytes
    /// prepared ahead.
    fn read_ahead(&self, fh: u64, offset: u64, len: u64) {
        let hint = {
            let mut handles = self.handles.files();
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

thread_local! {
    /// Each FUSE thread assembles its replies in one buffer that lives as long as the
    /// thread: fresh memory for every reply costs page faults that show in throughput.
    static REPLY: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A reply buffer grown beyond this (a rare huge read) is not kept.
const REPLY_KEEP: usize = 4 << 20;

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
        if self.passthrough.enabled() {
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
                    self.passthrough.disable();
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
            let ino = inodes::held(&*self.view, parent.0, name, None)?;
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
            // A file whose readers need its size first (a table file) is sized now,
            // so it opens with its size and every later `stat` shows it.
            let stat = if !stat.exact_size && self.view.sized_on_open(ino) {
                self.view.size(ino).map_err(|e| errno(&e, ino, "open"))?;
                self.view.stat(ino).map_err(|e| errno(&e, ino, "open"))?
            } else {
                stat
            };
            let fh = self.handles.next();
            let lifetime = self.view.lifetime(ino);
            let passthrough = lifetime == Lifetime::Immutable
                && stat.exact_size
                && self.passthrough.open(&*self.view, ino, &reply);
            let handle = Handle {
                ino,
                // (`stat` never renders: a text file not sized yet counts as endless.)
                size: if stat.exact_size { stat.size } else { u64::MAX },
                stream: Stream::default(),
                _keep: keep,
                passthrough,
            };
            self.handles.files().insert(fh, handle);
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
            Ok((fh, None)) => self.passthrough.reply(ino, fh, reply),
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
        if let Some(h) = self.handles.files().remove(&fh.0) {
            self.passthrough.closed(h.ino, h.passthrough);
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
            let listing = Arc::new(inodes::entries(&*self.view, ino.0)?);
            let fh = self.handles.next();
            self.handles.folders().insert(fh, listing);
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
        self.handles.folders().remove(&fh.0);
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
                match inodes::held(&*self.view, ino.0, name, Some(*listed)) {
                    Ok(child) => child,
                    // Gone since `opendir` (a vacuum): not listed.
                    Err(_) => continue,
                }
            } else {
                *listed
            };
            let (attr, ttl) = match self.view.stat(child) {
                Ok(stat) => (
                    self.attrs.of(child, &stat),
                    attr_ttl(&*self.view, child, &stat),
                ),
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
                    (self.attrs.of(child, &unreadable), Duration::ZERO)
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

/// Mounts `view` at `mountpoint`. When this returns `Ok` the mount is live (the kernel
/// handshake is done); serve it with `run()` or `spawn()` on the session.
pub fn mount(
    view: Arc<dyn FileTree>,
    mountpoint: &Path,
    cfg: &MountConfig,
) -> io::Result<Session<FragFs>> {
    Session::new(FragFs::new(view, cfg), mountpoint, &fuse_config(cfg))
}
