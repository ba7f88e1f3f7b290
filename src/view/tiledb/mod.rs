//! The tree of a TileDB array (`docs/DESIGN.md`, "The mounted tree"): array-level JSON, every
//! schema, one folder per live fragment, the merged states (`latest/`, `at/<T>/`), the
//! dimension labels and `zarr/`. Bytes come from the read engine; this module decides
//! what is where: the tree's shape, and which node a path names.
//!
//! The files of a fragment or state folder and of a field folder are [`Face`]s, listed,
//! sized and read from one table per kind of folder (`faces/`; `files.rs` reads every
//! kind of file node). The other concerns live beside this module: rescans (`rescan.rs`), open files kept readable (`pinning.rs`),
//! read-ahead (`readahead.rs`), dimension labels (`labels.rs`), merged states
//! (`merged.rs`), text files (`textfiles.rs`), enumerations (`enums.rs`), Zarr
//! (`zarr.rs`).

mod cachekeys;
mod enums;
mod faces;
mod files;
pub mod json;
mod labels;
mod merged;
mod pinning;
mod readahead;
mod rescan;
mod states;
mod textfiles;
mod zarr;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use crate::array::fragment::FragmentId;
use crate::array::{Array, OpenOptions};
use crate::error::{Error, Result};
use crate::storage::Store;

use self::faces::{FaceId, Table};
use self::merged::When;
use self::zarr::ZNode;
use super::cache::Caches;
use super::info::{ArrayInfo, Info};
use super::nodes::{Ino, NodeTable, ROOT};
use super::subtree::{self, Inside, Subtrees};
use super::{names, Entry, FileTree, Kind, Lifetime, Listing, OpenGuard, Stat, REFRESH_INTERVAL};

/// A folder that holds whole-folder files and field folders: a fragment's, or a merged
/// state's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Folder {
    Fragment(FragmentId),
    /// `latest/` (`None`) or `at/<T>/`.
    State(When),
}

impl Folder {
    fn fragment(self) -> Option<FragmentId> {
        match self {
            Folder::Fragment(f) => Some(f),
            Folder::State(_) => None,
        }
    }
}

/// A field folder: field `index` of a fragment's fields, or of a merged state's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct FieldOf {
    folder: Folder,
    index: usize,
}

impl FieldOf {
    fn new(folder: Folder, index: usize) -> FieldOf {
        FieldOf { folder, index }
    }
}

/// A node of the tree. Fragments are named by their [`FragmentId`], fields by their
/// index among the fragment's (or the state's) fields.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Node {
    Root,
    ArrayJson,
    /// `metadata.json`: the array's metadata.
    MetadataJson,
    SchemaJson,
    SchemasDir,
    /// `schemas/<name>.json`, by schema file name.
    SchemaFile(String),
    FragmentsDir,
    /// A fragment's folder.
    Fragment(FragmentId),
    /// `at/`: the array's past, by timestamp.
    AtDir,
    /// `latest/` (`None`) or `at/<T>/`: the array as TileDB reads it.
    State(When),
    /// A file of a fragment or state folder: a face of the folder table.
    FolderFile(Folder, FaceId),
    /// A field's folder.
    Field(FieldOf),
    /// A file of a field folder: a face of the field table.
    FieldFile(FieldOf, FaceId),
    /// `enumeration/` of an enumerated attribute's folder.
    Enum(FieldOf),
    EnumFile(FieldOf, EnumFile),
    /// `labels/`: the dimension labels, each an array of its own.
    LabelsDir,
    /// A node of a dimension label's tree (its root: the label's folder in `labels/`).
    Label(Inside<usize>),
    /// A node of `zarr/` (latest, at the root) or `at/<T>/zarr/`.
    Zarr(When, ZNode),
}

/// The files of `enumeration/`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum EnumFile {
    Values,
    Offsets,
    Text,
    Json,
}

impl Node {
    /// Whether the node is a folder. (A label's nodes other than its root take their
    /// kind from the label's tree, which is asked instead.)
    fn kind(&self) -> Kind {
        match self {
            Node::Root
            | Node::SchemasDir
            | Node::FragmentsDir
            | Node::Fragment(_)
            | Node::AtDir
            | Node::State(_)
            | Node::Field(_)
            | Node::Enum(_)
            | Node::LabelsDir
            | Node::Label(_) => Kind::Dir,
            Node::ArrayJson
            | Node::MetadataJson
            | Node::SchemaJson
            | Node::SchemaFile(_)
            | Node::FolderFile(..)
            | Node::FieldFile(..)
            | Node::EnumFile(..) => Kind::File,
            Node::Zarr(_, z) if z.is_dir() => Kind::Dir,
            Node::Zarr(..) => Kind::File,
        }
    }

    /// The fragment a node is inside of (its folder included).
    /// The merged state a node shows (`latest/`, `at/<T>/` and their `zarr/`).
    fn state(&self) -> Option<When> {
        match self {
            Node::State(w) | Node::Zarr(w, _) => Some(*w),
            Node::FolderFile(Folder::State(w), _) => Some(*w),
            Node::Field(of) | Node::FieldFile(of, _) | Node::Enum(of) | Node::EnumFile(of, _) => {
                match of.folder {
                    Folder::State(w) => Some(w),
                    Folder::Fragment(_) => None,
                }
            }
            _ => None,
        }
    }

    fn fragment(&self) -> Option<FragmentId> {
        match self {
            Node::Fragment(f) => Some(*f),
            Node::FolderFile(folder, _) => folder.fragment(),
            Node::Field(of) | Node::FieldFile(of, _) | Node::Enum(of) | Node::EnumFile(of, _) => {
                of.folder.fragment()
            }
            Node::Root
            | Node::ArrayJson
            | Node::MetadataJson
            | Node::SchemaJson
            | Node::SchemasDir
            | Node::SchemaFile(_)
            | Node::FragmentsDir
            | Node::AtDir
            | Node::State(_)
            | Node::LabelsDir
            | Node::Label(_)
            | Node::Zarr(..) => None,
        }
    }
}

/// Where a node lies inside a dimension label's tree, if it does.
fn label_inside(node: &Node) -> Option<Inside<usize>> {
    match node {
        Node::Label(inside) => Some(*inside),
        _ => None,
    }
}

/// The merged states opened, each with the rescan generation it was merged at.
type MergedStates = states::States<When, crate::read::merge::Merged>;

pub struct ArrayTree {
    /// The array as last scanned; replaced whole by a rescan that finds changes.
    array: RwLock<Arc<Array>>,
    /// Bumped by every rescan that changed something.
    generation: AtomicU64,
    /// When the last scan ended.
    scanned_at: Mutex<Instant>,
    /// Held by the one scan under way.
    rescanning: Mutex<()>,
    caches: Caches,
    nodes: NodeTable<Node>,
    /// This tree's name for the items it keeps in the view cache.
    owner: u64,
    pinned: pinning::Pinned,
    /// How old the fragment list may get ([`REFRESH_INTERVAL`] unless set).
    refresh_interval: Duration,
    /// Held while a text file's index grows: one thread per file (others reading the
    /// same file then find it grown), other files unhindered.
    indexing: crate::view::locks::KeyedLocks<Ino>,
    /// Sizes of files once learned by rendering them (text files, Zarr chunks of
    /// strings), by file and generation (see `learnt_size`).
    learnt_sizes: Mutex<HashMap<Ino, (u64, u64)>>,
    /// Per state, the digest of what it is made of and when it last changed, with the
    /// rescan they were computed at (see `state_generation`).
    state_digests: Mutex<HashMap<When, merged::StateFacts>>,
    /// How many learnt sizes were left when the map was last cleared of dropped nodes.
    learnt_sizes_kept: std::sync::atomic::AtomicUsize,
    /// The dimension labels' trees opened so far.
    labels: Subtrees<usize>,
    /// The merged states opened, with the rescan generation they were merged at.
    states: MergedStates,
    zarr_stores: zarr::ZarrStores,
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
            zarr_stores: zarr::ZarrStores::new(),
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

    fn node(&self, ino: Ino) -> Result<Node> {
        self.nodes
            .node(ino)
            .ok_or_else(|| Error::NotFound(format!("inode {ino}")))
    }

    fn entry(&self, name: String, node: Node) -> Entry {
        Entry {
            name,
            kind: node.kind(),
            ino: self.nodes.ino(&node),
        }
    }

    /// The fragment a folder is, for the faces that only fragments have.
    fn fragment_of(&self, folder: Folder) -> Result<FragmentId> {
        folder
            .fragment()
            .ok_or_else(|| Error::NotFound("a fragment's file in a state folder".into()))
    }

    /// Fails with `NotFound` unless the node is in the tree now (a vacuumed fragment's
    /// nodes are gone, but for open files).
    fn check_exists(&self, node: &Node) -> Result<()> {
        let absent = |what: &str| Err(Error::NotFound(what.to_string()));
        match node {
            Node::Root
            | Node::ArrayJson
            | Node::MetadataJson
            | Node::SchemaJson
            | Node::SchemasDir
            | Node::FragmentsDir
            | Node::AtDir
            | Node::LabelsDir
            // Every timestamp has a state: whether it can be merged is for its files'
            // reads to tell (a stat must not need every fragment's metadata).
            | Node::State(_)
            // A label's nodes are checked by the label's tree.
            | Node::Label(_) => Ok(()),
            Node::SchemaFile(name) => match self.array().schemas.iter().any(|s| &s.name == name) {
                true => Ok(()),
                false => absent(&format!("schema {name}")),
            },
            Node::Fragment(f) => self.fragment(*f).map(|_| ()),
            Node::FolderFile(folder, id) => {
                if let Folder::Fragment(f) = folder {
                    self.fragment(*f)?;
                }
                match Folder::face(*id).exists(self, *folder)? {
                    true => Ok(()),
                    false => absent(Folder::face(*id).name()),
                }
            }
            Node::Field(of) => self.field_facts(*of).map(|_| ()),
            Node::FieldFile(of, id) => match FieldOf::face(*id).exists(self, *of)? {
                true => Ok(()),
                false => absent(FieldOf::face(*id).name()),
            },
            Node::Enum(of) => match self.field_enumeration_name(of)? {
                Some(_) => Ok(()),
                None => absent("enumeration"),
            },
            Node::EnumFile(of, file) => {
                let (e, _) = self
                    .field_enumeration(of)?
                    .ok_or_else(|| Error::NotFound("enumeration".into()))?;
                match file {
                    EnumFile::Offsets if !e.is_var() => {
                        absent("offsets.bin of a fixed-size enumeration")
                    }
                    EnumFile::Values | EnumFile::Offsets | EnumFile::Text | EnumFile::Json => {
                        Ok(())
                    }
                }
            }
            Node::Zarr(w, z) => self.zarr_check(*w, z),
        }
    }

    fn lookup_node(&self, parent: &Node, name: &str) -> Result<Node> {
        match parent {
            Node::FragmentsDir => {
                // By name, not by listing: `stat` of each of 100,000 fragments stays cheap.
                self.refresh_if_stale();
                self.array()
                    .fragment_named(name)
                    .filter(|f| names::encode(&f.name) == name)
                    .map(|f| Node::Fragment(f.id))
                    .ok_or_else(|| Error::NotFound(name.to_string()))
            }
            // Any timestamp opens by name, listed or not.
            Node::AtDir => self.lookup_at(name),
            Node::Zarr(w, z) => self.zarr_lookup(*w, z, name),
            dir => self
                .list_nodes(dir)?
                .into_iter()
                .find(|(n, _)| n == name)
                .map(|(_, node)| node)
                .ok_or_else(|| Error::NotFound(name.to_string())),
        }
    }

    /// The entries of a folder, in display order.
    fn list_nodes(&self, dir: &Node) -> Result<Vec<(String, Node)>> {
        let e = |name: &str, node| (name.to_string(), node);
        Ok(match dir {
            Node::Root => {
                let has_labels = !self.array().latest_schema().schema.labels.is_empty();
                vec![
                    e("array.json", Node::ArrayJson),
                    e("metadata.json", Node::MetadataJson),
                    e("schema.json", Node::SchemaJson),
                    e("schemas", Node::SchemasDir),
                    e("fragments", Node::FragmentsDir),
                    e("latest", Node::State(None)),
                    e("at", Node::AtDir),
                ]
                .into_iter()
                .chain(has_labels.then(|| e("labels", Node::LabelsDir)))
                .chain(
                    self.has_zarr(None)
                        .then(|| e("zarr", Node::Zarr(None, ZNode::Root))),
                )
                .collect()
            }
            Node::LabelsDir => self
                .array()
                .latest_schema()
                .schema
                .labels
                .iter()
                .enumerate()
                .map(|(l, label)| {
                    let root = Inside {
                        key: l,
                        inner: ROOT,
                    };
                    (names::encode(&label.name), Node::Label(root))
                })
                .collect(),
            Node::SchemasDir => self
                .array()
                .schemas
                .iter()
                .map(|s| {
                    (
                        format!("{}.json", names::encode(&s.name)),
                        Node::SchemaFile(s.name.clone()),
                    )
                })
                .collect(),
            Node::FragmentsDir => {
                self.refresh_if_stale();
                self.array()
                    .fragments
                    .iter()
                    .map(|f| (names::encode(&f.name), Node::Fragment(f.id)))
                    .collect()
            }
            Node::AtDir => self
                .change_timestamps()
                .into_iter()
                .map(|t| (t.to_string(), Node::State(Some(t))))
                .collect(),
            Node::Fragment(f) => self.list_folder(Folder::Fragment(*f))?,
            Node::State(w) => self.list_folder(Folder::State(*w))?,
            Node::Field(of) => {
                let mut out: Vec<(String, Node)> = faces::present(self, *of)?
                    .into_iter()
                    .map(|(id, face)| e(face.name(), Node::FieldFile(*of, id)))
                    .collect();
                if self.field_enumeration_name(of)?.is_some() {
                    out.push(e("enumeration", Node::Enum(*of)));
                }
                out
            }
            Node::Enum(of) => {
                let (en, _) = self
                    .field_enumeration(of)?
                    .ok_or_else(|| Error::NotFound("enumeration".into()))?;
                let mut out = vec![e("values.bin", Node::EnumFile(*of, EnumFile::Values))];
                if en.is_var() {
                    out.push(e("offsets.bin", Node::EnumFile(*of, EnumFile::Offsets)));
                }
                out.push(e("values.txt", Node::EnumFile(*of, EnumFile::Text)));
                out.push(e("enumeration.json", Node::EnumFile(*of, EnumFile::Json)));
                out
            }
            Node::Zarr(w, z) => self.zarr_list(*w, z)?,
            Node::Label(_) => return Err(Error::NotDirectory("a dimension label's node".into())),
            Node::ArrayJson
            | Node::MetadataJson
            | Node::SchemaJson
            | Node::SchemaFile(_)
            | Node::FolderFile(..)
            | Node::FieldFile(..)
            | Node::EnumFile(..) => return Err(Error::NotDirectory(self.describe(dir))),
        })
    }

    /// A fragment or state folder: the faces of the folder table it has, a folder per
    /// field, and (states at a timestamp) `zarr/`.
    /// The names of a folder's fields (dimensions, then attributes, as stored), unencoded.
    fn field_names(&self, folder: Folder) -> Result<Vec<String>> {
        let names = |fields: &mut dyn Iterator<Item = &String>| fields.cloned().collect();
        Ok(match folder {
            Folder::Fragment(f) => names(&mut self.meta(f)?.1.fields.iter().map(|x| &x.name)),
            Folder::State(w) => names(&mut self.merged(w)?.fields.iter().map(|x| &x.name)),
        })
    }

    fn list_folder(&self, folder: Folder) -> Result<Vec<(String, Node)>> {
        let mut out: Vec<(String, Node)> = faces::present(self, folder)?
            .into_iter()
            .map(|(id, face)| (face.name().to_string(), Node::FolderFile(folder, id)))
            .collect();
        let fields = self.field_names(folder)?;
        for (i, name) in fields.iter().enumerate() {
            out.push((names::encode(name), Node::Field(FieldOf::new(folder, i))));
        }
        // `zarr/` of the latest state is at the root.
        if let Folder::State(w @ Some(_)) = folder {
            if self.has_zarr(w) {
                out.push(("zarr".to_string(), Node::Zarr(w, ZNode::Root)));
            }
        }
        Ok(out)
    }

    /// How a node is named in a message: its path in the tree where it has one.
    fn describe(&self, node: &Node) -> String {
        match self.nodes.find(node) {
            Some(ino) => self.path_of(ino),
            None => "a file".to_string(),
        }
    }

    /// The path of `ino` from the root, for messages.
    fn path_of(&self, mut ino: Ino) -> String {
        let mut parts = Vec::new();
        while ino != ROOT {
            let Ok(parent) = self.parent(ino) else { break };
            let name = self
                .list(parent)
                .ok()
                .and_then(|l| l.into_iter().find(|e| e.ino == ino))
                .map(|e| e.name);
            parts.push(name.unwrap_or_else(|| format!("#{ino}")));
            ino = parent;
        }
        parts.reverse();
        format!("/{}", parts.join("/"))
    }

    /// The number of sub-folders of a folder whose listing is cheap (the root, `labels/`,
    /// a field folder), so `stat` reports `nlink` = 2 + that; `None` where counting them
    /// would need fragment metadata or a merge (see [`Stat::nlink`]).
    fn subfolders(&self, node: &Node) -> Result<Option<u32>> {
        Ok(match node {
            Node::Root | Node::LabelsDir | Node::Field(_) | Node::Enum(_) | Node::SchemasDir => {
                let dirs = self
                    .list_nodes(node)?
                    .iter()
                    .filter(|(_, n)| n.kind() == Kind::Dir)
                    .count();
                Some(u32::try_from(dirs).unwrap_or(u32::MAX - 2))
            }
            Node::FragmentsDir => {
                Some(u32::try_from(self.array().fragments.len()).unwrap_or(u32::MAX - 2))
            }
            Node::Fragment(_) | Node::AtDir | Node::State(_) | Node::Label(_) | Node::Zarr(..) => {
                None
            }
            Node::ArrayJson
            | Node::MetadataJson
            | Node::SchemaJson
            | Node::SchemaFile(_)
            | Node::FolderFile(..)
            | Node::FieldFile(..)
            | Node::EnumFile(..) => None,
        })
    }
}

impl FileTree for ArrayTree {
    fn list(&self, dir: Ino) -> Result<Vec<Entry>> {
        let node = self.node(dir)?;
        if let Node::Label(inside) = node {
            let listed = self.label_tree(inside.key)?.list(inside.inner)?;
            return Ok(listed
                .into_iter()
                .map(|e| self.label_entry(inside.key, e))
                .collect());
        }
        self.check_exists(&node)?;
        Ok(self
            .list_nodes(&node)?
            .into_iter()
            .map(|(name, node)| self.entry(name, node))
            .collect())
    }

    fn listing(&self, dir: Ino) -> Result<Listing> {
        let node = self.node(dir)?;
        if let Node::Label(inside) = node {
            let tree = self.label_tree(inside.key)?;
            return subtree::outer_listing(dir, inside.key, &*tree, inside.inner);
        }
        self.check_exists(&node)?;
        let (names, nodes): (Vec<(String, Kind)>, Vec<Node>) = self
            .list_nodes(&node)?
            .into_iter()
            .map(|(name, node)| ((name, node.kind()), node))
            .unzip();
        Ok(Listing::of_kept(dir, names, nodes))
    }

    fn listed(&self, listing: &Listing, i: usize) -> Result<Entry> {
        if let Some(nodes) = listing.kept::<Vec<Node>>() {
            let (name, _) = listing
                .name(i)
                .ok_or_else(|| Error::NotFound(format!("entry {i} of a listing")))?;
            let node = nodes
                .get(i)
                .ok_or_else(|| Error::NotFound(name.to_string()))?;
            return Ok(self.entry(name.to_string(), node.clone()));
        }
        subtree::outer_listed(
            listing,
            i,
            |l| self.label_tree(l),
            |l, e| self.label_entry(l, e),
        )
    }

    fn lookup(&self, parent: Ino, name: &str) -> Result<Entry> {
        let parent = self.node(parent)?;
        if let Node::Label(inside) = parent {
            let e = self.label_tree(inside.key)?.lookup(inside.inner, name)?;
            return Ok(self.label_entry(inside.key, e));
        }
        if parent.kind() != Kind::Dir {
            return Err(Error::NotDirectory(name.to_string()));
        }
        let node = self.lookup_node(&parent, name)?;
        Ok(self.entry(name.to_string(), node))
    }

    fn stat(&self, ino: Ino) -> Result<Stat> {
        let node = self.node(ino)?;
        if let Some(stat) = self.in_label(&node, |t, i| t.stat(i)) {
            return stat;
        }
        if node == Node::FragmentsDir {
            self.refresh_if_stale();
        }
        self.check_exists(&node)?;
        let kind = node.kind();
        let (size, exact_size) = match kind {
            Kind::Dir => (0, true),
            Kind::File => match self.known_size(ino, &node)? {
                Some(size) => (size, true),
                None => (0, false),
            },
        };
        let nlink = match (kind, self.subfolders(&node)?) {
            (Kind::File, _) => 1,
            (Kind::Dir, Some(dirs)) => dirs.saturating_add(2),
            // Not counted ("1", as btrfs reports): listing 100,000 fragments parses none.
            (Kind::Dir, None) => 1,
        };
        let mtime_ms = match (node.fragment(), node.state()) {
            (Some(f), _) => Some(self.fragment(f)?.timestamps.t2),
            // A merged state's files: when the state last changed. Not its folder:
            // walking at/<T> for many T would digest the fragment list for each.
            (None, Some(w)) if !matches!(node, Node::State(_)) => self.state_time(w),
            (None, Some(_)) => None,
            (None, None) => None,
        };
        Ok(Stat {
            kind,
            size,
            nlink,
            mtime_ms,
            exact_size,
        })
    }

    fn size(&self, ino: Ino) -> Result<u64> {
        let node = self.node(ino)?;
        if let Some(size) = self.in_label(&node, |t, i| t.size(i)) {
            return size;
        }
        self.file_size(ino, &node)
    }

    fn read_into(&self, ino: Ino, offset: u64, len: u64, out: &mut Vec<u8>) -> Result<()> {
        let node = self.node(ino)?;
        if let Some(read) = self.in_label(&node, |t, i| t.read_into(i, offset, len, out)) {
            return read;
        }
        self.read_node_into(ino, &node, offset, len, out)
    }

    /// Prepares what a read of the range will need, as the file's face says (field
    /// files: their stored tiles, and the next fragment's at a file's end; text files:
    /// their blocks, rendered into the cache).
    fn read_ahead(&self, ino: Ino, offset: u64, len: u64) -> Result<()> {
        let node = self.node(ino)?;
        if let Some(done) = self.in_label(&node, |t, i| t.read_ahead(i, offset, len)) {
            return done;
        }
        match &node {
            Node::FolderFile(folder, id) => {
                let (at, face) = self.face(ino, *folder, *id);
                face.read_ahead(&at, offset, len)
            }
            Node::FieldFile(of, id) => {
                let (at, face) = self.face(ino, *of, *id);
                face.read_ahead(&at, offset, len)
            }
            // Rendered whole on first read, or read through as they come.
            Node::ArrayJson
            | Node::MetadataJson
            | Node::SchemaJson
            | Node::SchemaFile(_)
            | Node::EnumFile(..)
            | Node::Zarr(..) => Ok(()),
            Node::Root
            | Node::SchemasDir
            | Node::FragmentsDir
            | Node::Fragment(_)
            | Node::AtDir
            | Node::State(_)
            | Node::Field(_)
            | Node::Enum(_)
            | Node::LabelsDir
            | Node::Label(_) => Ok(()),
        }
    }

    fn open(&self, ino: Ino) -> Result<Option<OpenGuard>> {
        let node = self.node(ino)?;
        if let Some(guard) = self.in_label(&node, |t, i| t.open(i)) {
            return guard;
        }
        match node.fragment() {
            Some(id) => self.pin(id).map(Some),
            None => Ok(None),
        }
    }

    fn parent(&self, ino: Ino) -> Result<Ino> {
        let node = self.node(ino)?;
        let parent = match node {
            Node::Label(inside) if inside.inner == ROOT => Node::LabelsDir,
            Node::Label(inside) => {
                let p = self.label_tree(inside.key)?.parent(inside.inner)?;
                Node::Label(Inside {
                    key: inside.key,
                    inner: p,
                })
            }
            Node::Root
            | Node::MetadataJson
            | Node::ArrayJson
            | Node::SchemaJson
            | Node::SchemasDir
            | Node::FragmentsDir
            | Node::LabelsDir
            | Node::AtDir
            | Node::State(None) => Node::Root,
            Node::SchemaFile(_) => Node::SchemasDir,
            Node::Fragment(_) => Node::FragmentsDir,
            Node::State(Some(_)) => Node::AtDir,
            Node::FolderFile(folder, _) | Node::Field(FieldOf { folder, .. }) => match folder {
                Folder::Fragment(f) => Node::Fragment(f),
                Folder::State(w) => Node::State(w),
            },
            Node::FieldFile(of, _) | Node::Enum(of) => Node::Field(of),
            Node::EnumFile(of, _) => Node::Enum(of),
            Node::Zarr(w, z) => self.zarr_parent(w, &z),
        };
        Ok(self.nodes.ino(&parent))
    }

    fn remember(&self, ino: Ino) -> bool {
        subtree::remember(&self.nodes, ino, label_inside, |l| self.label_tree(l))
    }

    fn forget(&self, ino: Ino, n: u64) {
        subtree::forget(&self.nodes, ino, n, label_inside, |l| self.label_tree(l))
    }

    fn lifetime(&self, ino: Ino) -> Lifetime {
        let Some(node) = self.nodes.node(ino) else {
            return Lifetime::Changing;
        };
        match self.in_label(&node, |t, i| Ok(t.lifetime(i))) {
            Some(lifetime) => lifetime.unwrap_or(Lifetime::Changing),
            None => self.node_lifetime(&node),
        }
    }

    fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    fn version(&self, ino: Ino) -> Option<u64> {
        let node = self.nodes.node(ino)?;
        if let Some(version) = self.in_label(&node, |t, i| Ok(t.version(i))) {
            return version.ok().flatten();
        }
        Some(self.state_generation(node.state()?))
    }

    fn cache_key(&self, ino: Ino) -> Option<crate::storage::diskcache::CacheKey> {
        self.node_cache_key(ino)
    }

    fn next_cache_key(&self, ino: Ino) -> Option<crate::storage::diskcache::CacheKey> {
        self.next_node_cache_key(ino)
    }

    fn cache_fragments(&self) -> Vec<(String, std::collections::HashSet<String>)> {
        self.live_fragment_names()
    }

    fn source(&self) -> String {
        self.array().location()
    }

    fn entry_count(&self) -> u64 {
        self.array().fragments.len() as u64
    }

    fn info(&self) -> Result<Info> {
        Ok(Info::Array(Box::new(ArrayInfo::of(&self.array()))))
    }
}
