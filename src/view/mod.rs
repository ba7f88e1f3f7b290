//! The virtual trees of `docs/DESIGN.md`: one tree per kind of input (a TileDB array, a Filo
//! fragment), each owning its nodes through a [`NodeTable`](nodes::NodeTable), behind one
//! [`FileTree`] trait that `fragfs ls`/`cat`/`info` and the FUSE adapter both use, so a
//! mount and the command line serve the same bytes.

pub mod cache;
pub mod cached;
pub mod filo;
pub mod group;
pub mod held;
pub mod info;
pub mod listing;
pub mod locks;
pub mod names;
pub mod nodes;
pub mod prefetch;
pub mod subtree;
pub mod text;
pub mod tiledb;

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::array::{Array, OpenOptions};
use crate::error::{Error, Result};
use crate::filo::{ColumnType, FormatVersion, MANIFEST_FILE};
use crate::format::group::{sniff_object_type, ObjectType};
use crate::storage::diskcache::{CacheConfig, CacheKey, DiskCache};
use crate::storage::local::LocalPath;
use crate::storage::s3::{is_s3_uri, S3Options};
use crate::storage::{LocalStore, Store};

pub use filo::FiloTree;
pub use group::GroupTree;
pub use info::Info;
pub use listing::Listing;
pub use nodes::{Ino, ROOT};
pub use tiledb::ArrayTree;

/// Default bound of the decoded-chunk cache.
pub const DEFAULT_CACHE_SIZE: u64 = 256 << 20;

/// How old the list of fragments may get before a listing of `fragments/` reads the
/// array folder again: new fragments show up, vacuumed ones go, within this time.
pub const REFRESH_INTERVAL: Duration = Duration::from_secs(1);

/// What a folder or file is, as `stat` needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Dir,
    File,
}

/// One entry of a folder listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub name: String,
    pub ino: Ino,
    pub kind: Kind,
}

impl Entry {
    pub fn is_dir(&self) -> bool {
        self.kind == Kind::Dir
    }
}

/// A node's attributes, from metadata alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    pub kind: Kind,
    /// Exact byte size of a file; 0 for folders.
    pub size: u64,
    /// Sub-folders + 2 for folders whose sub-folders are known without reading fragment
    /// metadata; 1 ("not counted", as btrfs reports) for fragment folders, so listing
    /// 100,000 fragments parses none of them. Files: 1.
    pub nlink: u32,
    /// Milliseconds since the epoch: a fragment's nodes carry its end timestamp.
    pub mtime_ms: Option<u64>,
    /// Whether `size` is the file's size. A text file whose size is only known once it
    /// was rendered says 0 and `false` until then; readers read it to its end (the
    /// mount serves it with direct I/O, as procfs does).
    pub exact_size: bool,
}

/// How long the kernel may keep what it learnt of a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lifetime {
    /// Never changes while it exists (everything inside a fragment).
    Immutable,
    /// May change or vanish when the array changes (the fragment list, array-level
    /// files, a fragment folder that a vacuum removes).
    Changing,
    /// Like `Changing`, but a file open reads one state of it to the end (the merged
    /// view of the array): the kernel may cache pages while it is open.
    Snapshot,
}

/// Keeps what an open file needs readable until it is closed (see [`FileTree::open`]).
pub type OpenGuard = Box<dyn std::any::Any + Send + Sync>;

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

    /// Prepares what an open file will need and keeps it readable until the guard is
    /// dropped: a file open in a fragment that TileDB then vacuums reads on with the
    /// bytes it had, as POSIX keeps an open, removed file readable.
    fn open(&self, _ino: Ino) -> Result<Option<OpenGuard>> {
        Ok(None)
    }

    /// The kernel was handed `ino` once more (a lookup reply, a `readdirplus` entry):
    /// its number must stay in use until [`FileTree::forget`] gives the reference back
    /// (see [`nodes`]). False when the number is no longer in use: look the name up
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

/// How to read a lone Filo chunk file: a chunk does not record its column type (nor,
/// for one kind, the writer's version), which a fragment directory's manifest gives.
#[derive(Debug, Clone, Copy, Default)]
pub struct ChunkOptions {
    pub column_type: Option<ColumnType>,
    pub version: FormatVersion,
}

/// Opens what `path` holds, a local path or an `s3://bucket/prefix` URI (reached as
/// `s3` says), read through the disk cache `disk` (`--cache-dir`, opened by
/// [`open_disk_cache`]) where there is one: its decoded files are kept there, and an S3
/// store keeps the bytes it fetches there too, so a later mount asks the store for
/// none of what was read before. On object storage the cache budget is shared half and
/// half between the fetched bytes and the decoded chunks, so the whole stays within
/// `cache_size`.
pub fn open_source(
    path: &Path,
    s3: &S3Options,
    options: OpenOptions,
    chunk: ChunkOptions,
    cache_size: u64,
    disk: Option<Arc<DiskCache>>,
) -> Result<Arc<dyn FileTree>> {
    let tree = if is_s3_uri(path) {
        open_s3(path, s3, options, cache_size, disk.clone())?
    } else {
        open_tree(path, options, chunk, cache_size)?
    };
    Ok(match disk {
        Some(cache) => Arc::new(cached::CachedTree::new(tree, cache)),
        None => tree,
    })
}

#[cfg(feature = "s3")]
fn open_s3(
    path: &Path,
    s3: &S3Options,
    options: OpenOptions,
    cache_size: u64,
    disk: Option<Arc<DiskCache>>,
) -> Result<Arc<dyn FileTree>> {
    let uri = path.to_string_lossy();
    let store = crate::storage::S3Store::open(&uri, s3, cache_size / 2, disk)?;
    open_store(Arc::new(store), options, cache_size - cache_size / 2)
}

#[cfg(not(feature = "s3"))]
fn open_s3(
    path: &Path,
    _s3: &S3Options,
    _options: OpenOptions,
    _cache_size: u64,
    _disk: Option<Arc<DiskCache>>,
) -> Result<Arc<dyn FileTree>> {
    Err(Error::InvalidArgument(format!(
        "{}: this fragfs was built without S3 support (the `s3` feature)",
        path.display()
    )))
}

/// The disk cache that `config` names (`--cache-dir`), opened (made if needed), or
/// `None` without one: opened before the source, so the one cache serves both the
/// decoded files and an S3 store's fetched bytes ([`open_source`]).
///
/// A cache folder that cannot be used is no reason to fail a mount (or `serve`, `cat`,
/// `ls`), which reads right without it: a folder not owned by this user or writable by
/// others (refused: see [`crate::storage::diskcache::private`]), one that cannot be
/// made or written. Then this says why in one log line and answers `None`: the caller
/// goes on without the cache. (Never an error now; the `Result` is kept for callers.)
pub fn open_disk_cache(config: Option<&CacheConfig>) -> Result<Option<Arc<DiskCache>>> {
    let Some(config) = config else {
        return Ok(None);
    };
    let cache = match DiskCache::open(config) {
        Ok(cache) => Arc::new(cache),
        Err(e) => {
            log::error!(
                "disk cache {}: not used: {e}; reading without it",
                config.dir.display()
            );
            return Ok(None);
        }
    };
    log::info!(
        "disk cache {}: {} MiB of at most {} MiB used (the disk keeps {} MiB free)",
        config.dir.display(),
        cache.used() >> 20,
        cache.budget() >> 20,
        cache.floor() >> 20
    );
    Ok(Some(cache))
}

/// Opens what the local `path` holds, sniffing which tree fits: a Filo fragment folder (it has
/// `filo_fragment.json`), a lone Filo chunk (a file, with `chunk` giving its column
/// type), or a TileDB array.
pub fn open_tree(
    path: &Path,
    options: OpenOptions,
    chunk: ChunkOptions,
    cache_size: u64,
) -> Result<Arc<dyn FileTree>> {
    match LocalStore::open_path(path)? {
        LocalPath::Folder(store) => open_store(Arc::new(store), options, cache_size),
        LocalPath::File(store, name) => {
            let column_type = chunk.column_type.ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "{}: a file: give its Filo column type with --filo-type (one of {})",
                    path.display(),
                    ColumnType::ALL.map(|t| t.name()).join(", ")
                ))
            })?;
            Ok(Arc::new(FiloTree::open_chunk(
                Arc::new(store),
                &name,
                column_type,
                chunk.version,
                cache_size,
            )?))
        }
    }
}

/// Opens the tree of what the root of `store` holds: a Filo fragment or a TileDB array.
pub fn open_store(
    store: Arc<dyn Store>,
    options: OpenOptions,
    cache_size: u64,
) -> Result<Arc<dyn FileTree>> {
    let root = store.list("")?;
    if root
        .iter()
        .any(|e| e.name == MANIFEST_FILE && !e.is_folder())
    {
        return Ok(Arc::new(FiloTree::open_fragment(store, cache_size)?));
    }
    let entries = root.iter().map(|e| (e.name.as_str(), e.is_folder()));
    if sniff_object_type(entries) == ObjectType::Group {
        let caches = cache::Caches::new(cache_size);
        return Ok(Arc::new(GroupTree::open(store, options, caches)?));
    }
    let array = Array::open(store, options)?;
    Ok(Arc::new(ArrayTree::new(array, cache_size)))
}
