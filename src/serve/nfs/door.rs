//! The NFS door's answers: the NFS, MOUNT and portmapper programs as plain functions
//! of the tree ([`NfsDoor`]), what the module doc of [`super`] describes. No socket
//! here: the connections are [`super::connection`]'s.

use std::sync::Arc;

use super::handles::{self, Handles, Unresolved};
use crate::wire::rpc::{Accept, Call, Programs};
use crate::wire::xdr::{opaque_size, Garbage, Reader, Writer};

use crate::error::Error;
use crate::view::held::Held;
use crate::view::{FileTree, Ino, Kind, Listing, Stat};

/// The most bytes one READ answers (and what clients are told to ask for).
pub const RTMAX: u32 = 256 << 10;
/// The most bytes of a WRITE call a client is told it may send (each is refused).
pub const WTMAX: u32 = 64 << 10;
/// The most bytes of a READDIR/READDIRPLUS reply built, whatever the client allows.
const DIRMAX: u32 = 256 << 10;

const NFS_PROGRAM: u32 = 100_003;
const MOUNT_PROGRAM: u32 = 100_005;
const PORTMAP_PROGRAM: u32 = 100_000;

// nfsstat3 (RFC 1813 section 2.6).
const OK: u32 = 0;
const NOENT: u32 = 2;
const IO: u32 = 5;
const ACCES: u32 = 13;
const NOTDIR: u32 = 20;
const ISDIR: u32 = 21;
const INVAL: u32 = 22;
const ROFS: u32 = 30;
const NAMETOOLONG: u32 = 63;
const STALE: u32 = 70;
const JUKEBOX: u32 = 10_008;
const BADHANDLE: u32 = 10_001;
const TOOSMALL: u32 = 10_005;

// ACCESS3 bits.
const ACCESS_READ: u32 = 0x01;
const ACCESS_LOOKUP: u32 = 0x02;
const ACCESS_EXECUTE: u32 = 0x20;

/// Bytes of a `post_op_attr` with attributes (the flag and a `fattr3`).
const ATTR_SIZE: usize = 4 + 84;
const NAME_MAX: usize = 255;
const PATH_MAX: usize = 1024;

/// The NFS, MOUNT and portmapper programs of one served tree.
pub struct NfsDoor {
    tree: Arc<dyn FileTree>,
    handles: Handles,
    /// The port the door listens on, which the portmapper tells.
    port: u16,
    uid: u32,
    gid: u32,
    /// Time of nodes that have none (the array's files outside fragments).
    start_ms: u64,
    /// Folder listings being paged through.
    listings: Listings,
    /// Where text files are sized; without, GETATTR renders them itself.
    sizes: Option<Arc<dyn Sizes>>,
}

/// What the door knows of the sizes its connection had rendered (the serving side's
/// sizing pool, [`crate::serve::sizing`]).
pub trait Sizes: Send + Sync {
    /// The size of `ino` once rendered; the failure if rendering it failed; `None`
    /// while not rendered.
    fn outcome(&self, ino: Ino) -> Option<Result<u64, Error>>;
}

/// Listings being paged through by clients. A client pages through a folder with
/// cookies (positions) under the verifier its first page answered: the listing taken for
/// that page is kept for the next ones, so paging through a folder of n entries costs
/// one listing, not one per page (quadratic for `fragments/` of 100,000 fragments), and
/// a rescan between pages shifts no position. At most [`Listings::KEPT`] are kept,
/// oldest out; a page whose listing went out lists the folder again.
struct Listings {
    next: std::sync::atomic::AtomicU64,
    /// (verifier, folder, listing), oldest first.
    kept: std::sync::Mutex<std::collections::VecDeque<(u64, Ino, Kept)>>,
}

/// One listing of a folder, as a page of it was cut from.
type Kept = Arc<Listing>;

impl Listings {
    const KEPT: usize = 64;

    fn new(first: u64) -> Listings {
        Listings {
            next: std::sync::atomic::AtomicU64::new(first),
            kept: Default::default(),
        }
    }

    /// The listing of `dir` that verifier `verf` answered, if still kept. A client that
    /// sends no verifier (0: some keep none) gets the newest listing of that folder: its
    /// cookies are positions in it, and listing the folder again for every page made
    /// paging 100,000 entries quadratic.
    fn get(&self, verf: u64, dir: Ino) -> Option<(u64, Kept)> {
        let kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        kept.iter()
            .rev()
            .find(|(v, d, _)| (*v == verf || verf == 0) && *d == dir)
            .map(|(v, _, l)| (*v, l.clone()))
    }

    /// Keeps a fresh listing of `dir`; returns its verifier.
    fn keep(&self, dir: Ino, list: Kept) -> u64 {
        let verf = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        if kept.len() >= Self::KEPT {
            kept.pop_front();
        }
        kept.push_back((verf, dir, list));
        verf
    }
}

/// A call failed with this `nfsstat3`.
struct Status(u32);

impl From<Unresolved> for Status {
    fn from(u: Unresolved) -> Status {
        match u {
            Unresolved::Bad => Status(BADHANDLE),
            Unresolved::Stale => Status(STALE),
        }
    }
}

impl NfsDoor {
    pub fn new(tree: Arc<dyn FileTree>, port: u16, held: usize) -> NfsDoor {
        // The server's own user as every file's owner, as the mount shows them; read
        // from /proc so no unsafe call is needed (elsewhere: root, harmless with 0444).
        let (uid, gid) = std::fs::metadata("/proc/self")
            .map(|m| {
                use std::os::unix::fs::MetadataExt;
                (m.uid(), m.gid())
            })
            .unwrap_or((0, 0));
        let start_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        NfsDoor {
            handles: Handles::new(tree.clone(), held),
            tree,
            port,
            uid,
            gid,
            start_ms,
            // Verifiers of one run differ from an earlier run's.
            listings: Listings::new(start_ms << 16),
            sizes: None,
        }
    }

    /// The same door, learning text files' sizes from `sizes` instead of rendering
    /// them on the thread that answers a GETATTR.
    pub fn with_sizes(mut self, sizes: Arc<dyn Sizes>) -> NfsDoor {
        self.sizes = Some(sizes);
        self
    }

    /// The file a call record asks the size of that is not known yet (a GETATTR of a
    /// text file not rendered): the connection has it sized before the call is
    /// answered. Cheap: the header, a handle, a `stat`.
    pub fn to_size(&self, record: &[u8]) -> Option<Ino> {
        let (call, args) = crate::wire::rpc::call_of(record)?;
        if (call.prog, call.vers, call.proc_) != (NFS_PROGRAM, 3, 1) {
            return None;
        }
        let ino = self.handle_arg(&mut Reader::new(args)).ok()?.ok()?;
        let stat = self.tree.stat(ino).ok()?;
        let known = self.sizes.as_ref().and_then(|s| s.outcome(ino));
        (stat.kind == Kind::File && !stat.exact_size && known.is_none()).then_some(ino)
    }

    /// The handles this door hands out (tests look at how many are held).
    pub fn handles(&self) -> &Handles {
        &self.handles
    }

    /// The `nfsstat3` of a tree error; unexpected ones are logged with what failed.
    fn status(&self, e: &Error, what: &str, ino: Ino) -> Status {
        let code = match e.errno() {
            libc::ENOENT => NOENT,
            libc::ENOTDIR => NOTDIR,
            libc::EISDIR => ISDIR,
            libc::EACCES => ACCES,
            libc::EINVAL => INVAL,
            _ => {
                log::error!("nfs: {what} of node {ino}: {e}");
                IO
            }
        };
        if code != IO {
            log::debug!("nfs: {what} of node {ino}: {e}");
        }
        Status(code)
    }

    fn handle_arg(&self, args: &mut Reader<'_>) -> Result<Result<Ino, Status>, Garbage> {
        let fh = args.opaque(64)?;
        Ok(self.handles.resolve(fh).map_err(Status::from))
    }

    fn stat(&self, ino: Ino) -> Result<Stat, Status> {
        self.tree
            .stat(ino)
            .map_err(|e| self.status(&e, "stat", ino))
    }

    /// `fattr3` of a node whose stat is known; `None` for a file whose size is not
    /// known yet unless `size_it` (then it is rendered to know it).
    fn fattr(&self, ino: Ino, mut stat: Stat, size_it: bool) -> Result<Option<Vec<u8>>, Status> {
        if stat.kind == Kind::File && !stat.exact_size {
            if !size_it {
                return Ok(None);
            }
            stat.size = match &self.sizes {
                None => self
                    .tree
                    .size(ino)
                    .map_err(|e| self.status(&e, "size", ino))?,
                Some(sizes) => match sizes.outcome(ino) {
                    Some(Ok(size)) => size,
                    Some(Err(e)) => return Err(self.status(&e, "size", ino)),
                    // Sized in the pool, within the deadline, before this call: still
                    // rendering. The client asks again later.
                    None => return Err(Status(JUKEBOX)),
                },
            };
        }
        let mut w = Writer::default();
        let (ftype, mode) = match stat.kind {
            Kind::File => (1, 0o444),
            Kind::Dir => (2, 0o555),
        };
        w.u32(ftype);
        w.u32(mode);
        w.u32(stat.nlink);
        w.u32(self.uid);
        w.u32(self.gid);
        w.u64(stat.size);
        w.u64(used(stat.size));
        w.u32(0); // rdev
        w.u32(0);
        w.u64(0); // fsid
        w.u64(ino); // fileid
        let ms = stat.mtime_ms.unwrap_or(self.start_ms);
        for _ in 0..3 {
            w.u32((ms / 1000).min(u64::from(u32::MAX)) as u32);
            w.u32((ms % 1000) as u32 * 1_000_000);
        }
        Ok(Some(w.buf))
    }

    /// A `post_op_attr`: attributes when they are known cheaply, else none.
    fn post_op(&self, out: &mut Writer, ino: Ino) {
        match self.stat(ino).and_then(|s| self.fattr(ino, s, false)) {
            Ok(Some(a)) => {
                out.bool(true);
                out.buf.extend_from_slice(&a);
            }
            _ => out.bool(false),
        }
    }

    // ---- NFS procedures -------------------------------------------------------------

    fn nfs(&self, proc_: u32, args: &mut Reader<'_>, out: &mut Writer) -> Result<(), Garbage> {
        match proc_ {
            0 => {}
            1 => self.getattr(args, out)?,
            3 => self.lookup(args, out)?,
            4 => self.access(args, out)?,
            5 => {
                // READLINK: the tree has no symbolic links.
                let _ = self.handle_arg(args)?;
                out.u32(INVAL);
                out.bool(false);
            }
            6 => self.read(args, out)?,
            16 => self.readdir(args, out, false)?,
            17 => self.readdir(args, out, true)?,
            18 => self.fsstat(args, out)?,
            19 => self.fsinfo(args, out)?,
            20 => self.pathconf(args, out)?,
            // SETATTR, WRITE, CREATE, MKDIR, SYMLINK, MKNOD, REMOVE, RMDIR, COMMIT:
            // ROFS and an empty wcc_data (no before, no after).
            2 | 7 | 8 | 9 | 10 | 11 | 12 | 13 | 21 => {
                out.u32(ROFS);
                out.bool(false);
                out.bool(false);
            }
            // RENAME: two wcc_data.
            14 => {
                out.u32(ROFS);
                for _ in 0..4 {
                    out.bool(false);
                }
            }
            // LINK: a post_op_attr and a wcc_data.
            15 => {
                out.u32(ROFS);
                for _ in 0..3 {
                    out.bool(false);
                }
            }
            _ => return Err(Garbage("no such procedure")),
        }
        Ok(())
    }

    fn getattr(&self, args: &mut Reader<'_>, out: &mut Writer) -> Result<(), Garbage> {
        let attrs = self.handle_arg(args)?.and_then(|ino| {
            let stat = self.stat(ino)?;
            self.fattr(ino, stat, true)
        });
        match attrs {
            Ok(Some(a)) => {
                out.u32(OK);
                out.buf.extend_from_slice(&a);
            }
            Ok(None) => out.u32(IO), // sized above: not reached
            Err(Status(s)) => out.u32(s),
        }
        Ok(())
    }

    fn lookup(&self, args: &mut Reader<'_>, out: &mut Writer) -> Result<(), Garbage> {
        let dir = self.handle_arg(args)?;
        let name = args.opaque(PATH_MAX)?;
        let dir = match dir {
            Ok(d) => d,
            Err(Status(s)) => {
                out.u32(s);
                out.bool(false);
                return Ok(());
            }
        };
        let found = self.child(dir, name).and_then(|ino| {
            let fh = self.handles.handle(ino).ok_or(Status(STALE))?;
            Ok((ino, fh))
        });
        match found {
            Ok((ino, fh)) => {
                out.u32(OK);
                out.opaque(&fh);
                self.post_op(out, ino);
                self.post_op(out, dir);
            }
            Err(Status(s)) => {
                out.u32(s);
                self.post_op(out, dir);
            }
        }
        Ok(())
    }

    /// The node `name` names in folder `dir` (`.` and `..` included).
    fn child(&self, dir: Ino, name: &[u8]) -> Result<Ino, Status> {
        if name.len() > NAME_MAX {
            return Err(Status(NAMETOOLONG));
        }
        if self.stat(dir)?.kind != Kind::Dir {
            return Err(Status(NOTDIR));
        }
        let name = std::str::from_utf8(name).map_err(|_| Status(NOENT))?;
        match name {
            "." => Ok(dir),
            ".." => self
                .tree
                .parent(dir)
                .map_err(|e| self.status(&e, "parent", dir)),
            _ if name.is_empty() || name.contains(['/', '\0']) => Err(Status(NOENT)),
            _ => self
                .tree
                .lookup(dir, name)
                .map(|e| e.ino)
                .map_err(|e| self.status(&e, "lookup", dir)),
        }
    }

    fn access(&self, args: &mut Reader<'_>, out: &mut Writer) -> Result<(), Garbage> {
        let ino = self.handle_arg(args)?;
        let asked = args.u32()?;
        match ino.and_then(|i| Ok((i, self.stat(i)?))) {
            Ok((ino, stat)) => {
                let allowed = match stat.kind {
                    Kind::Dir => ACCESS_READ | ACCESS_LOOKUP | ACCESS_EXECUTE,
                    Kind::File => ACCESS_READ,
                };
                out.u32(OK);
                self.post_op(out, ino);
                out.u32(asked & allowed);
            }
            Err(Status(s)) => {
                out.u32(s);
                out.bool(false);
            }
        }
        Ok(())
    }

    fn read(&self, args: &mut Reader<'_>, out: &mut Writer) -> Result<(), Garbage> {
        let ino = self.handle_arg(args)?;
        let offset = args.u64()?;
        let count = args.u32()?.min(RTMAX);
        let read = ino.and_then(|ino| {
            let stat = self.stat(ino)?;
            if stat.kind == Kind::Dir {
                return Err(Status(ISDIR));
            }
            let held = Held::take(&self.tree, ino).map_err(|e| self.status(&e, "open", ino))?;
            let mut data = Vec::new();
            held.tree
                .read_into(ino, offset, u64::from(count), &mut data)
                .map_err(|e| self.status(&e, "read", ino))?;
            let end = offset + data.len() as u64;
            let eof = (data.len() as u64) < u64::from(count) || stat.exact_size && end >= stat.size;
            Ok((ino, data, eof))
        });
        match read {
            Ok((ino, data, eof)) => {
                out.u32(OK);
                self.post_op(out, ino);
                out.u32(data.len() as u32);
                out.bool(eof);
                out.opaque(&data);
            }
            Err(Status(s)) => {
                out.u32(s);
                out.bool(false);
            }
        }
        Ok(())
    }

    /// READDIR and READDIRPLUS: `.`, `..` and the folder's entries in display order;
    /// a cookie is the position of the entry after which to go on.
    fn readdir(&self, args: &mut Reader<'_>, out: &mut Writer, plus: bool) -> Result<(), Garbage> {
        let dir = self.handle_arg(args)?;
        let cookie = args.u64()?;
        let verf = args.fixed(8)?;
        let verf = u64::from_be_bytes(verf.try_into().unwrap_or([0; 8]));
        if plus {
            args.u32()?; // dircount: the reply is bounded by maxcount
        }
        let count = args.u32()?.min(DIRMAX) as usize;
        let listed = dir.and_then(|dir| {
            // Later pages of a listing read the one their first page was cut from (and
            // need no `stat` of the folder: see the folder's attributes below).
            let kept = (cookie != 0)
                .then(|| self.listings.get(verf, dir))
                .flatten();
            if kept.is_none() && self.stat(dir)?.kind != Kind::Dir {
                return Err(Status(NOTDIR));
            }
            let parent = self
                .tree
                .parent(dir)
                .map_err(|e| self.status(&e, "parent", dir))?;
            let (verf, list) = match kept {
                Some((verf, list)) => (verf, list),
                None => {
                    let list = Arc::new(
                        self.tree
                            .listing(dir)
                            .map_err(|e| self.status(&e, "list", dir))?,
                    );
                    (self.listings.keep(dir, list.clone()), list)
                }
            };
            Ok((dir, parent, verf, list))
        });
        let (dir, parent, verf, list) = match listed {
            Ok(l) => l,
            Err(Status(s)) => {
                out.u32(s);
                out.bool(false);
                return Ok(());
            }
        };
        let mut entries = Writer::default();
        // Status, the folder's attributes, the verifier, the end marker and eof.
        let mut used = 4 + ATTR_SIZE + 8 + 8;
        let mut eof = true;
        let mut sent = 0;
        // Positions: `.`, `..`, then the listing's entries; a cookie is the position
        // after which to go on.
        let first = usize::try_from(cookie).unwrap_or(usize::MAX);
        for i in first..list.len().saturating_add(2) {
            // Whether the entry fits, before it is numbered: its most bytes, with
            // attributes and a handle.
            let name_len = match i {
                0 => 1,
                1 => 2,
                _ => list.name(i - 2).map_or(0, |(n, _)| n.len()),
            };
            let most = 4
                + 8
                + opaque_size(name_len)
                + 8
                + if plus {
                    ATTR_SIZE + 4 + opaque_size(handles::SIZE)
                } else {
                    0
                };
            if used + most > count {
                eof = false;
                break;
            }
            let (name, ino) = match i {
                0 => (".".to_string(), dir),
                1 => ("..".to_string(), parent),
                _ => match self.tree.listed(&list, i - 2) {
                    Ok(e) => (e.name, e.ino),
                    // Gone since the listing (a vacuum): left out.
                    Err(_) => continue,
                },
            };
            let mut entry = Writer::default();
            entry.bool(true);
            entry.u64(ino);
            entry.opaque(name.as_bytes());
            entry.u64(i as u64 + 1);
            if plus {
                let attrs = self
                    .stat(ino)
                    .and_then(|s| self.fattr(ino, s, false))
                    .ok()
                    .flatten();
                match attrs {
                    Some(a) => {
                        entry.bool(true);
                        entry.buf.extend_from_slice(&a);
                    }
                    None => entry.bool(false),
                }
                match self.handles.handle(ino) {
                    Some(fh) => {
                        entry.bool(true);
                        entry.opaque(&fh);
                    }
                    None => entry.bool(false),
                }
            }
            used += entry.len();
            entries.buf.extend_from_slice(&entry.buf);
            sent += 1;
        }
        // The folder's attributes with the first page only: a `stat` of `fragments/`
        // checks the array for new fragments (a rescan, once a second), which a page
        // after another of one listing must not set off (a listing of 100,000 took one
        // rescan per second of paging, each as long as the folder: quadratic).
        let dir_attrs = |out: &mut Writer| {
            if cookie == 0 {
                self.post_op(out, dir);
            } else {
                out.bool(false);
            }
        };
        if sent == 0 && !eof {
            out.u32(TOOSMALL);
            dir_attrs(out);
            return Ok(());
        }
        out.u32(OK);
        dir_attrs(out);
        out.u64(verf);
        out.buf.extend_from_slice(&entries.buf);
        out.bool(false);
        out.bool(eof);
        Ok(())
    }

    fn fsstat(&self, args: &mut Reader<'_>, out: &mut Writer) -> Result<(), Garbage> {
        match self.handle_arg(args)? {
            Ok(ino) => {
                out.u32(OK);
                self.post_op(out, ino);
                for v in [0, 0, 0, self.tree.entry_count(), 0, 0] {
                    out.u64(v); // bytes total, free, available; files the same
                }
                out.u32(0); // invarsec: may change any time
            }
            Err(Status(s)) => {
                out.u32(s);
                out.bool(false);
            }
        }
        Ok(())
    }

    fn fsinfo(&self, args: &mut Reader<'_>, out: &mut Writer) -> Result<(), Garbage> {
        match self.handle_arg(args)? {
            Ok(ino) => {
                out.u32(OK);
                self.post_op(out, ino);
                for v in [RTMAX, RTMAX, 4096, WTMAX, WTMAX, 4096, DIRMAX] {
                    out.u32(v);
                }
                out.u64(u64::MAX >> 1); // maxfilesize
                out.u32(0); // time_delta: milliseconds
                out.u32(1_000_000);
                out.u32(0x08); // FSF3_HOMOGENEOUS; no links, no set time
            }
            Err(Status(s)) => {
                out.u32(s);
                out.bool(false);
            }
        }
        Ok(())
    }

    fn pathconf(&self, args: &mut Reader<'_>, out: &mut Writer) -> Result<(), Garbage> {
        match self.handle_arg(args)? {
            Ok(ino) => {
                out.u32(OK);
                self.post_op(out, ino);
                out.u32(1); // linkmax
                out.u32(NAME_MAX as u32);
                out.bool(true); // no_trunc
                out.bool(true); // chown_restricted
                out.bool(false); // case_insensitive
                out.bool(true); // case_preserving
            }
            Err(Status(s)) => {
                out.u32(s);
                out.bool(false);
            }
        }
        Ok(())
    }

    // ---- MOUNT v3 (RFC 1813 appendix I) ---------------------------------------------

    fn mount(&self, proc_: u32, args: &mut Reader<'_>, out: &mut Writer) -> Result<(), Garbage> {
        match proc_ {
            0 | 3 | 4 => {
                // NULL, UMNT, UMNTALL: nothing is recorded.
                if proc_ == 3 {
                    args.string(PATH_MAX)?;
                }
            }
            1 => {
                let path = args.string(PATH_MAX)?;
                match self.export(path) {
                    Ok(fh) => {
                        out.u32(0);
                        out.opaque(&fh);
                        out.u32(1); // one flavour: AUTH_SYS
                        out.u32(1);
                    }
                    Err(code) => out.u32(code),
                }
            }
            2 => out.bool(false), // DUMP: no mounts are recorded
            5 => {
                // EXPORT: `/`, to every host.
                out.bool(true);
                out.opaque(b"/");
                out.bool(false);
                out.bool(false);
            }
            _ => return Err(Garbage("no such procedure")),
        }
        Ok(())
    }

    /// The handle of an exported folder: `/` or any folder below it.
    fn export(&self, path: &str) -> Result<[u8; handles::SIZE], u32> {
        if path.split('/').any(|p| p == ".." || p.contains('\0')) {
            return Err(ACCES);
        }
        let ino = self.tree.resolve(path).map_err(|e| match e.errno() {
            libc::ENOENT => NOENT,
            libc::ENOTDIR => NOTDIR,
            _ => {
                log::error!("nfs: mount {path}: {e}");
                IO
            }
        })?;
        let stat = self.tree.stat(ino).map_err(|_| IO)?;
        if stat.kind != Kind::Dir {
            return Err(NOTDIR);
        }
        self.handles.handle(ino).ok_or(NOENT)
    }

    // ---- portmapper v2 (RFC 1833): only where this port is ---------------------------

    fn portmap(&self, proc_: u32, args: &mut Reader<'_>, out: &mut Writer) -> Result<(), Garbage> {
        const TCP: u32 = 6;
        match proc_ {
            0 => {}
            3 => {
                let (prog, vers, prot) = (args.u32()?, args.u32()?, args.u32()?);
                args.u32()?;
                let ours = matches!((prog, vers), (NFS_PROGRAM, 3) | (MOUNT_PROGRAM, 3));
                out.u32(if ours && prot == TCP {
                    u32::from(self.port)
                } else {
                    0
                });
            }
            4 => {
                for prog in [NFS_PROGRAM, MOUNT_PROGRAM] {
                    out.bool(true);
                    out.u32(prog);
                    out.u32(3);
                    out.u32(TCP);
                    out.u32(u32::from(self.port));
                }
                out.bool(false);
            }
            _ => return Err(Garbage("no such procedure")),
        }
        Ok(())
    }
}

/// The bytes a file of `size` bytes uses (`fattr3.used`): whole 4 KiB blocks, up to
/// the largest count of them that a u64 holds (a size near 2^64, which a corrupt
/// header may claim, once overflowed here).
fn used(size: u64) -> u64 {
    size.div_ceil(4096).saturating_mul(4096)
}

impl Programs for NfsDoor {
    fn call(&self, call: &Call, args: &mut Reader<'_>, out: &mut Writer) -> Accept {
        let (result, procs) = match (call.prog, call.vers) {
            (NFS_PROGRAM, 3) => (self.nfs(call.proc_, args, out), 22),
            (NFS_PROGRAM, _) => return Accept::ProgMismatch { low: 3, high: 3 },
            (MOUNT_PROGRAM, 3) => (self.mount(call.proc_, args, out), 6),
            (MOUNT_PROGRAM, _) => return Accept::ProgMismatch { low: 3, high: 3 },
            (PORTMAP_PROGRAM, 2) => (self.portmap(call.proc_, args, out), 5),
            (PORTMAP_PROGRAM, _) => return Accept::ProgMismatch { low: 2, high: 2 },
            _ => return Accept::ProgUnavail,
        };
        match result {
            Ok(()) => Accept::Success,
            Err(_) if call.proc_ >= procs => Accept::ProcUnavail,
            Err(Garbage(why)) => {
                log::debug!("nfs: call {} of program {}: {why}", call.proc_, call.prog);
                Accept::GarbageArgs
            }
        }
    }
}

#[cfg(test)]
mod tests;
