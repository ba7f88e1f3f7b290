//! The tree of one TileDB array: what it holds (the array as last scanned, the node table,
//! the caches, the merged states and Zarr stores opened) and how it is opened. What it
//! answers is spread by concern over the files beside this one, each an `impl ArrayTree`.

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use crate::array::fragment::{Fragment, FragmentId};
use crate::array::{Array, OpenOptions};
use crate::error::{Error, Result};
use crate::storage::Store;
use crate::view::cache::Caches;
use crate::view::entry::Entry;
use crate::view::nodes::{Ino, NodeTable};
use crate::view::subtree::Subtrees;

use super::node::{Folder, Node, When};
use super::states::{self, StateFacts};
use super::zarr::ZarrStores;

/// How old the list of fragments may get before a listing of `fragments/` reads the
/// array folder again: new fragments show up, vacuumed ones go, within this time.
pub const REFRESH_INTERVAL: Duration = Duration::from_secs(1);

/// Fragments kept readable for open files after a rescan dropped them: the fragment and
/// how many open files hold it.
pub(super) type Pinned = Arc<Mutex<HashMap<FragmentId, (Arc<Fragment>, usize)>>>;

/// Tells the time (see [`ArrayTree::with_clock`]).
pub type Clock = Arc<dyn Fn() -> Instant + Send + Sync>;

/// The merged states opened, each with the rescan generation it was merged at.
pub(super) type MergedStates = states::States<When, crate::read::merge::Merged>;

pub struct ArrayTree {
    /// The array as last scanned; replaced whole by a rescan that finds changes.
    pub(super) array: RwLock<Arc<Array>>,
    /// Bumped by every rescan that changed something.
    pub(super) generation: AtomicU64,
    /// When the last scan ended.
    pub(super) scanned_at: Mutex<Instant>,
    /// What time it is for rescans: [`Instant::now`], but for tests that make time pass
    /// without waiting for it (see [`ArrayTree::with_clock`]).
    pub(super) clock: Clock,
    /// Held by the one scan under way.
    pub(super) rescanning: Mutex<()>,
    pub(super) caches: Caches,
    pub(super) nodes: NodeTable<Node>,
    /// This tree's name for the items it keeps in the view cache.
    pub(super) owner: u64,
    pub(super) pinned: Pinned,
    /// How old the fragment list may get ([`REFRESH_INTERVAL`] unless set).
    pub(super) refresh_interval: Duration,
    /// Held while a text file's index grows: one thread per file (others reading the
    /// same file then find it grown), other files unhindered.
    pub(super) indexing: crate::view::locks::KeyedLocks<Ino>,
    /// Sizes of files once learned by rendering them (text files, Zarr chunks of
    /// strings), by file and generation (see `learnt_size`).
    pub(super) learnt_sizes: Mutex<HashMap<Ino, (u64, u64)>>,
    /// Per state, the digest of what it is made of and when it last changed, with the
    /// rescan they were computed at (see `state_generation`).
    pub(super) state_digests: Mutex<HashMap<When, StateFacts>>,
    /// How many learnt sizes were left when the map was last cleared of dropped nodes.
    pub(super) learnt_sizes_kept: std::sync::atomic::AtomicUsize,
    /// The dimension labels' trees opened so far.
    pub(super) labels: Subtrees<usize>,
    /// The merged states opened, with the rescan generation they were merged at.
    pub(super) states: MergedStates,
    pub(super) zarr_stores: ZarrStores,
}

impl ArrayTree {
    /// The tree of an opened array, with caches of `cache_size` bytes in all.
    pub fn new(array: Array, cache_size: u64) -> ArrayTree {
        ArrayTree::with_caches(array, Caches::new(cache_size))
    }

    /// The tree of an opened array, reading through `caches` (shared by the trees of a
    /// group, and by an array and its dimension labels).
    pub fn with_caches(array: Array, caches: Caches) -> ArrayTree {
        ArrayTree {
            array: RwLock::new(Arc::new(array)),
            generation: AtomicU64::new(0),
            scanned_at: Mutex::new(Instant::now()),
            clock: Arc::new(Instant::now),
            rescanning: Mutex::new(()),
            caches,
            nodes: NodeTable::new(Node::Root),
            owner: Caches::new_owner(),
            pinned: Arc::default(),
            refresh_interval: REFRESH_INTERVAL,
            indexing: Default::default(),
            learnt_sizes: Mutex::new(HashMap::new()),
            state_digests: Mutex::new(HashMap::new()),
            learnt_sizes_kept: Default::default(),
            labels: Subtrees::default(),
            states: MergedStates::default(),
            zarr_stores: ZarrStores::new(),
        }
    }

    /// Opens the array at the root of `store`.
    pub fn open(store: Arc<dyn Store>, options: OpenOptions, cache_size: u64) -> Result<ArrayTree> {
        Ok(ArrayTree::new(Array::open(store, options)?, cache_size))
    }

    /// Opens the array in a local folder.
    pub fn open_path(
        path: &std::path::Path,
        options: OpenOptions,
        cache_size: u64,
    ) -> Result<ArrayTree> {
        let store = crate::storage::LocalStore::open(path).map_err(|e| match e {
            Error::NotDirectory(p) => {
                Error::NotAnArray(format!("{p}: not a TileDB array (not a folder)"))
            }
            e => e,
        })?;
        ArrayTree::open(Arc::new(store), options, cache_size)
    }

    /// The array as last scanned.
    pub fn array(&self) -> Arc<Array> {
        self.array.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The same tree keeping at most `limit` idle nodes (see [`NodeTable`]); for tests
    /// that show the bound without walking 65,536 paths.
    pub fn with_idle_limit(mut self, limit: usize) -> ArrayTree {
        self.nodes = NodeTable::with_idle_limit(Node::Root, limit);
        self
    }

    /// Inode numbers in use now: those the kernel holds and the idle ones kept.
    pub fn nodes_in_use(&self) -> usize {
        self.nodes.len()
    }

    /// Chunks un-filtered since the tree was opened.
    pub fn chunks_decoded(&self) -> u64 {
        self.caches.engine.chunks_decoded()
    }

    /// Output cells the sparse merges went through since the tree was opened.
    pub fn cells_merged(&self) -> u64 {
        self.caches.engine.cells_merged()
    }

    /// Files rendered whole (JSON files) since the caches were made: once each while
    /// they stay cached, in memory or on disk.
    pub fn files_rendered(&self) -> u64 {
        self.caches.files_rendered()
    }

    /// Bytes the spill keeps on disk now: results larger than the caches (see
    /// `read::spill`).
    pub fn spill_used(&self) -> u64 {
        self.caches.engine.spill().used()
    }

    /// Bytes the caches hold now (never more than the size they were opened with).
    pub fn cache_used(&self) -> u64 {
        self.caches.used()
    }

    pub(super) fn node(&self, ino: Ino) -> Result<Node> {
        self.nodes
            .node(ino)
            .ok_or_else(|| Error::NotFound(format!("inode {ino}")))
    }

    pub(super) fn entry(&self, name: String, node: Node) -> Entry {
        Entry {
            name,
            kind: node.kind(),
            ino: self.nodes.ino(&node),
        }
    }

    /// The fragment a folder is, for the faces that only fragments have.
    pub(super) fn fragment_of(&self, folder: Folder) -> Result<FragmentId> {
        folder
            .fragment()
            .ok_or_else(|| Error::NotFound("a fragment's file in a state folder".into()))
    }
}
