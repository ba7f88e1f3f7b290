//! The benchmark's FUSE baseline: one read-only file, `zeros`, of N bytes of zeros.
//!
//! It costs nothing to produce its bytes, so reading it measures the FUSE round trip
//! alone (kernel, /dev/fuse, fuser's dispatch). It mounts with exactly fragfs's mount
//! options and thread count (`fragfs::fuse::fuse_config`), opens with KEEP_CACHE and
//! reports the same `st_blksize`, so a tool reading it issues the same requests as it
//! does on a fragfs `values.bin`.
//!
//! ```sh
//! cargo run --release --example zerofs -- <mountpoint> <bytes, e.g. 512M> [--threads N]
//! ```
//!
//! It serves until the mount point is unmounted (`umount <mountpoint>`), then prints on
//! stderr how many reads it served and their sizes, to check the request size.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, UNIX_EPOCH};

use fragfs::fuse::{fuse_config, MountConfig};
use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo, LockOwner,
    OpenAccMode, OpenFlags, ReplyAttr, ReplyData, ReplyDirectory, ReplyEntry, ReplyOpen, Request,
    Session,
};

/// Same as fragfs: `cat` sizes its reads by `st_blksize`.
const BLOCK_SIZE: u32 = 128 << 10;
const TTL: Duration = Duration::from_secs(3600);
const FILE_INO: INodeNo = INodeNo(2);
const FILE_NAME: &str = "zeros";
/// FUSE never asks for more than 256 pages per read; larger asks get a fresh buffer.
static ZEROS: [u8; 1 << 20] = [0; 1 << 20];

/// What was served, shared with `main` (the session owns the filesystem).
#[derive(Default)]
struct Stats {
    reads: AtomicU64,
    bytes: AtomicU64,
    /// Requested size -> count.
    sizes: Mutex<BTreeMap<u32, u64>>,
}

impl Stats {
    fn summary(&self) -> String {
        let sizes = self.sizes.lock().unwrap_or_else(|e| e.into_inner());
        let sizes: Vec<String> = sizes.iter().map(|(s, n)| format!("{s}x{n}")).collect();
        format!(
            "zerofs: {} reads, {} bytes; request sizes (bytes x count): {}",
            self.reads.load(Ordering::Relaxed),
            self.bytes.load(Ordering::Relaxed),
            sizes.join(" ")
        )
    }
}

struct ZeroFs {
    size: u64,
    uid: u32,
    gid: u32,
    stats: Arc<Stats>,
}

impl ZeroFs {
    fn attr(&self, ino: INodeNo) -> Option<FileAttr> {
        let (kind, perm, size, nlink) = match ino {
            INodeNo::ROOT => (FileType::Directory, 0o555, 0, 2),
            FILE_INO => (FileType::RegularFile, 0o444, self.size, 1),
            _ => return None,
        };
        Some(FileAttr {
            ino,
            size,
            blocks: size.div_ceil(512),
            atime: UNIX_EPOCH,
            mtime: UNIX_EPOCH,
            ctime: UNIX_EPOCH,
            crtime: UNIX_EPOCH,
            kind,
            perm,
            nlink,
            uid: self.uid,
            gid: self.gid,
            rdev: 0,
            flags: 0,
            blksize: BLOCK_SIZE,
        })
    }
}

impl Filesystem for ZeroFs {
    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        match (parent, name.to_str()) {
            (INodeNo::ROOT, Some(FILE_NAME)) => match self.attr(FILE_INO) {
                Some(attr) => reply.entry(&TTL, &attr, Generation(0)),
                None => reply.error(Errno::ENOENT),
            },
            _ => reply.error(Errno::ENOENT),
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match self.attr(ino) {
            Some(attr) => reply.attr(&TTL, &attr),
            None => reply.error(Errno::ENOENT),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        if ino != FILE_INO {
            reply.error(Errno::EISDIR);
        } else if flags.acc_mode() != OpenAccMode::O_RDONLY {
            reply.error(Errno::EROFS);
        } else {
            // As fragfs: the bytes never change, so the kernel keeps its page cache.
            reply.opened(FileHandle(1), FopenFlags::FOPEN_KEEP_CACHE);
        }
    }

    fn read(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let n = self.size.saturating_sub(offset).min(u64::from(size)) as usize;
        let stats = &self.stats;
        stats.reads.fetch_add(1, Ordering::Relaxed);
        stats.bytes.fetch_add(n as u64, Ordering::Relaxed);
        *stats
            .sizes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(size)
            .or_default() += 1;
        match ZEROS.get(..n) {
            Some(zeros) => reply.data(zeros),
            None => reply.data(&vec![0; n]),
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
        if ino != INodeNo::ROOT {
            return reply.error(Errno::ENOTDIR);
        }
        let entries = [
            (INodeNo::ROOT, FileType::Directory, "."),
            (INodeNo::ROOT, FileType::Directory, ".."),
            (FILE_INO, FileType::RegularFile, FILE_NAME),
        ];
        for (i, (ino, kind, name)) in entries.iter().enumerate().skip(offset as usize) {
            if reply.add(*ino, i as u64 + 1, *kind, name) {
                break;
            }
        }
        reply.ok();
    }
}

/// `512M`, `64K`, `2G` or plain bytes.
fn parse_size(text: &str) -> Option<u64> {
    let (digits, shift) = match text.as_bytes().last()? {
        b'K' | b'k' => (&text[..text.len() - 1], 10),
        b'M' | b'm' => (&text[..text.len() - 1], 20),
        b'G' | b'g' => (&text[..text.len() - 1], 30),
        _ => (text, 0),
    };
    digits.parse::<u64>().ok()?.checked_mul(1 << shift)
}

struct Args {
    mountpoint: PathBuf,
    size: u64,
    threads: usize,
}

fn parse_args() -> Result<Args, String> {
    let usage = "usage: zerofs <mountpoint> <size, e.g. 512M> [--threads N]";
    let mut positional = Vec::new();
    // fragfs's default: one thread per core.
    let mut threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if arg == "--threads" {
            threads = args
                .next()
                .and_then(|n| n.parse().ok())
                .ok_or_else(|| format!("--threads needs a number\n{usage}"))?;
        } else {
            positional.push(arg);
        }
    }
    let [mountpoint, size] = <[String; 2]>::try_from(positional).map_err(|_| usage.to_string())?;
    let size = parse_size(&size).ok_or_else(|| format!("bad size {size:?}\n{usage}"))?;
    Ok(Args {
        mountpoint: PathBuf::from(mountpoint),
        size,
        threads,
    })
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("zerofs: {e}");
            return ExitCode::FAILURE;
        }
    };
    let stats = Arc::new(Stats::default());
    let fs = ZeroFs {
        size: args.size,
        // SAFETY: getuid/getgid cannot fail and touch no memory of ours.
        uid: unsafe { libc::getuid() },
        gid: unsafe { libc::getgid() },
        stats: stats.clone(),
    };
    // fragfs's own mount options (RO, nodev, nosuid, noatime, default_permissions,
    // owner-only) and thread count, so the kernel treats both mounts alike.
    let config = fuse_config(&MountConfig {
        allow_other: false,
        allow_root: false,
        auto_unmount: false,
        threads: args.threads,
        read_ahead: fragfs::fuse::DEFAULT_READ_AHEAD,
        exit_on_unmount: false,
        passthrough: false,
    });
    let mountpoint = args
        .mountpoint
        .canonicalize()
        .unwrap_or(args.mountpoint.clone());
    let session = match Session::new(fs, &args.mountpoint, &config) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("zerofs: mount {}: {e}", args.mountpoint.display());
            return ExitCode::FAILURE;
        }
    };
    // The kernel read-ahead fragfs sets on its mounts (as root; else both keep 128K).
    if let Err(e) =
        fragfs::mount::set_kernel_read_ahead(&mountpoint, fragfs::fuse::DEFAULT_READ_AHEAD)
    {
        eprintln!("zerofs: kernel read-ahead left at its default: {e}");
    }
    // `run` returns once the mount point is unmounted.
    if let Err(e) = session.run() {
        eprintln!("zerofs: {e}");
        return ExitCode::FAILURE;
    }
    eprintln!("{}", stats.summary());
    ExitCode::SUCCESS
}
