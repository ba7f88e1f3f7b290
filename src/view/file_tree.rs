//! The one interface every tree of files answers (a TileDB array, a group, a Filo
//! fragment, a tree read through the disk cache): `fragfs ls`/`cat`/`info`, the FUSE
//! adapter and the network doors all read through it, so every edge serves the same bytes.

use std::collections::HashSet;

use crate::error::Result;
use crate::storage::diskcache::CacheKey;

use super::entry::{Entry, Lifetime, OpenGuard, Stat};
use super::info::Info;
use super::listing::Listing;
use super::mime;
use super::nodes::{Ino, ROOT};

pub trait FileTree: Send + Sync {
    /// The entries of a folder, in display order.
    fn list(&self, dir: Ino) -> Result<Vec<Entry>>;
    /// The child `name` of folder `parent`.
    fn lookup(&self, parent: Ino, name: &str) -> Result<Entry>;
    /// Attributes; sizes are exact.
    fn stat(&self, ino: Ino) -> Result<Stat>;
    /// Exact size of a file (a text file is rendered whole once to know it); 0 for
    /// folders. Listings and `stat` use [`FileTree::stat`], which never renders.
    fn size(&self, ino: Ino) -> Result<u64>;
    /// Appends bytes `[offset, offset + len)` of a file (fewer at its end) to `out`: the
    /// one way bytes are read, so a server can reuse one buffer for every reply.
    fn read_into(&self, ino: Ino, offset: u64, len: u64, out: &mut Vec<u8>) -> Result<()>;
    /// The folder holding `ino` (the root is its own parent).
    fn parent(&self, ino: Ino) -> Result<Ino>;
    /// How long what the kernel learns of `ino` stays true.
    fn lifetime(&self, ino: Ino) -> Lifetime;
    /// Changes when the tree's listing changed (new or removed fragments).
    fn generation(&self) -> u64;
    /// What the tree shows: a folder path, an object-store URL.
    fn source(&self) -> String;
    /// How many entries `statfs` reports as files (fragments or columns).
    fn entry_count(&self) -> u64;
    /// A summary for `fragfs info`, as data: the command line renders it.
    fn info(&self) -> Result<Info>;

    /// The media type of file `ino`, named `name` in its folder, as the doors send it
    /// (`Content-Type`): what its face declares where the tree has faces, else what
    /// its name says.
    fn content_type(&self, _ino: Ino, name: &str) -> &'static str {
        mime::of_name(name)
    }

    /// Prepares what an open file will need and keeps it readable until the guard is
    /// dropped: a file open in a fragment that TileDB then vacuums reads on with the
    /// bytes it had, as POSIX keeps an open, removed file readable.
    fn open(&self, _ino: Ino) -> Result<Option<OpenGuard>> {
        Ok(None)
    }

    /// Whether a reader of the file needs its size before its first read (a table
    /// file's footer is at its end), so a mount sizes it when it is opened
    /// ([`FileTree::size`], on the opening thread) where `stat` did not know it.
    fn sized_on_open(&self, _ino: Ino) -> bool {
        false
    }

    /// The kernel was handed `ino` once more (a lookup reply, a `readdirplus` entry):
    /// its number must stay in use until [`FileTree::forget`] gives the reference back
    /// (see [`nodes`](super::nodes)). False when the number is no longer in use: look the name up
    /// again.
    fn remember(&self, _ino: Ino) -> bool {
        true
    }

    /// The kernel gave back `n` references to `ino` (FORGET).
    fn forget(&self, _ino: Ino, _n: u64) {}

    /// An identity of the bytes a file that may change holds now (a merged state's
    /// digest), equal in every process of the same build that sees the same array:
    /// `fragfs serve` derives strong `ETag`s from it, so replicas agree. `None`: the
    /// file has none (an immutable file is identified by its path, size and time).
    fn version(&self, _ino: Ino) -> Option<u64> {
        None
    }

    /// Prepares, in the background of a sequential reader, what a read of the range will
    /// need (read-ahead). By default nothing.
    fn read_ahead(&self, _ino: Ino, _offset: u64, _len: u64) -> Result<()> {
        Ok(())
    }

    /// What names the bytes of file `ino` for the disk cache (`--cache-dir`), whatever
    /// mount reads them: `None` for files that are not to be kept (those a listing or a
    /// rescan changes: the array-level JSON), and for trees that keep nothing.
    fn cache_key(&self, _ino: Ino) -> Option<CacheKey> {
        None
    }

    /// The cache key of the file a sequential reader of `ino` is likely to open next
    /// (`cat fragments/*/a/values.bin`: the same file of the next fragment), for the
    /// disk cache to check ahead of that open. `None` when there is no such guess.
    fn next_cache_key(&self, _ino: Ino) -> Option<CacheKey> {
        None
    }

    /// Per array of the tree (its identity, as in [`CacheKey::array`]), the names of
    /// its fragments now: the disk cache drops the entries of the others (vacuumed).
    fn cache_fragments(&self) -> Vec<(String, HashSet<String>)> {
        Vec::new()
    }

    /// The file holding every byte of `ino` in the disk cache, checked, for the kernel
    /// to read directly (FUSE passthrough), with its path for the log; `None` unless
    /// the tree reads through a disk cache that holds the whole file, checked already.
    /// Called on the open's thread: it answers at once, never reading the file (a file
    /// not checked yet is checked in the background, for a later open).
    fn cached_file(&self, _ino: Ino) -> Option<(std::fs::File, String)> {
        None
    }

    /// Bytes `[offset, offset + len)` of a file (fewer at its end).
    fn read_at(&self, ino: Ino, offset: u64, len: u64) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.read_into(ino, offset, len, &mut out)?;
        Ok(out)
    }

    /// The entries of folder `dir` in display order, as one listing: numbered only as a
    /// reader gets to each ([`FileTree::listed`]), so a folder of any size is listed
    /// whole page by page. By default, what [`FileTree::list`] gives.
    fn listing(&self, dir: Ino) -> Result<Listing> {
        Ok(Listing::of_entries(dir, self.list(dir)?))
    }

    /// Entry `i` of `listing` (one of this tree's), numbered now: the number stays in
    /// use at least until as many other nodes were numbered as the tree keeps idle.
    /// An entry gone since the listing (a vacuum) is an error whose errno is ENOENT.
    /// By default the number the listing was given while the tree still uses it, else
    /// the name looked up again.
    fn listed(&self, listing: &Listing, i: usize) -> Result<Entry> {
        listing.given_entry(
            i,
            |ino| self.in_use(ino),
            |dir, name| self.lookup(dir, name),
        )
    }

    /// Whether the tree still uses number `ino` (holds its node).
    fn in_use(&self, ino: Ino) -> bool {
        let held = self.remember(ino);
        if held {
            self.forget(ino, 1);
        }
        held
    }

    /// Resolves a `/`-separated path (leading `/` optional) to a node.
    fn resolve(&self, path: &str) -> Result<Ino> {
        let mut ino = ROOT;
        for part in path.split('/').filter(|p| !p.is_empty() && *p != ".") {
            ino = self.lookup(ino, part)?.ino;
        }
        Ok(ino)
    }
}
