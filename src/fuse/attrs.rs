//! What the kernel is told of a node, and for how long it may keep it: attributes
//! (owner, modes, times, size), their TTLs, and how it may cache a folder's listing.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fuser::{FileAttr, FileType, FopenFlags, INodeNo};

use crate::view::{FileTree, Ino, Kind, Lifetime, Stat};

/// What is inside a fragment never changes, so the kernel may keep what it learnt.
const TTL: Duration = Duration::from_secs(3600);
/// The list of fragments (and the array-level files) can change when TileDB writes,
/// consolidates or vacuums: the kernel asks again after the view's refresh interval.
const CHANGING_TTL: Duration = crate::view::REFRESH_INTERVAL;

/// `st_blksize`: tools like `cat` size their reads by it.
pub const BLOCK_SIZE: u32 = 128 << 10;

/// What the attributes of every node share: the mounting user owns them all, and nodes
/// with no time of their own show the time the tree was opened.
pub struct Attrs {
    uid: u32,
    gid: u32,
    /// Time shown for nodes that are not inside a fragment: the array folder's mtime.
    array_time: SystemTime,
}

impl Attrs {
    /// The attributes of a tree opened now, owned by this process's user.
    pub fn now() -> Attrs {
        Attrs {
            // SAFETY: getuid/getgid cannot fail and touch no memory of ours.
            uid: unsafe { libc::getuid() },
            gid: unsafe { libc::getgid() },
            // The time the tree was opened: the array's own folder time is not something
            // every store has.
            array_time: SystemTime::now(),
        }
    }

    /// The attributes of node `ino` as `stat` describes it: read-only modes.
    pub fn of(&self, ino: Ino, stat: &Stat) -> FileAttr {
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
}

/// How long the kernel may keep an entry or attributes of `ino`.
pub fn ttl(view: &dyn FileTree, ino: Ino) -> Duration {
    match view.lifetime(ino) {
        Lifetime::Immutable => TTL,
        Lifetime::Changing | Lifetime::Snapshot => CHANGING_TTL,
    }
}

/// The same, for attributes: a size not known yet (0 for a text file never read) is not
/// kept at all, so the exact size shows as soon as it is known.
pub fn attr_ttl(view: &dyn FileTree, ino: Ino, stat: &Stat) -> Duration {
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
pub fn dir_cache_flags(lifetime: Lifetime) -> FopenFlags {
    match lifetime {
        Lifetime::Immutable => FopenFlags::FOPEN_CACHE_DIR | FopenFlags::FOPEN_KEEP_CACHE,
        Lifetime::Changing | Lifetime::Snapshot => FopenFlags::empty(),
    }
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
