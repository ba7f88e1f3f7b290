//! The tree of a TileDB array (`docs/DESIGN.md`, "The mounted tree"): array-level JSON, every
//! schema, and one folder per live fragment with its footer, tile statistics, cells and
//! per-field files. Bytes come from the [`ReadEngine`]; this module only decides what is
//! where.

mod enums;
pub mod json;
mod merged;
mod textfiles;
mod zarr;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use crate::array::fragment::{Fragment, FragmentId, FragmentMeta};
use crate::array::{Array, OpenOptions};
use crate::error::{Error, Result};
use crate::read::{CacheKey, Cached, FieldReader, RawFile, ReadEngine, ViewItem};
use crate::storage::{Pin, Store};

use self::zarr::ZNode;
use super::info::{ArrayInfo, Info};
use super::nodes::{Ino, NodeTable};
use super::{names, Entry, FileTree, Kind, Lifetime, OpenGuard, Stat, REFRESH_INTERVAL};

/// How much of the next fragment's file read-ahead prepares when a sequential reader's
/// file is prepared to its end: enough to bridge the step from one file to the next,
/// after which that file's own stream takes over.
const NEXT_FRAGMENT_AHEAD: u64 = 32 << 20;

/// A node of the tree. Fragments are named by their [`FragmentId`], fields by their
/// index in the fragment's fields.
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
    Fragment(FragmentId),
    FooterJson(FragmentId),
    TilesJson(FragmentId),
    /// `cells.csv` of a fragment.
    CellsCsv(FragmentId),
    Field(FragmentId, usize),
    Raw(FragmentId, usize, RawFile),
    /// `values.npy` of a fixed-size field.
    Npy(FragmentId, usize),
    /// `values.txt` of a field.
    Text(FragmentId, usize),
    /// `at/`: the array's past, by timestamp.
    AtDir,
    /// `latest/` (`None`) or `at/<T>/`: the array as TileDB reads it.
    State(Option<u64>),
    ReadJson(Option<u64>),
    /// `cells.csv` of a state.
    MCells(Option<u64>),
    MField(Option<u64>, usize),
    MRaw(Option<u64>, usize, RawFile),
    MNpy(Option<u64>, usize),
    MText(Option<u64>, usize),
    /// `values.hdr`: an ENVI header of a dense raster attribute.
    MHdr(Option<u64>, usize),
    /// `labels/`: the dimension labels, each an array of its own.
    LabelsDir,
    /// The root of dimension label `l`'s tree.
    Label(usize),
    /// Node `ino` of dimension label `l`'s tree.
    LabelInner(usize, Ino),
    /// `enumeration/` of an enumerated attribute's folder.
    Enum(FieldOf),
    EnumFile(FieldOf, EnumFile),
    /// A node of `zarr/` (latest, at the root) or `at/<T>/zarr/`.
    Zarr(Option<u64>, ZNode),
}

/// A field folder: of a fragment, or of a merged state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum FieldOf {
    Fragment(FragmentId, usize),
    State(Option<u64>, usize),
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
    fn is_dir(&self) -> bool {
        matches!(
            self,
            Node::Root
                | Node::SchemasDir
                | Node::FragmentsDir
                | Node::Fragment(_)
                | Node::Field(..)
                | Node::AtDir
                | Node::State(_)
                | Node::MField(..)
                | Node::Enum(_)
                | Node::LabelsDir
                | Node::Label(_)
        ) || matches!(self, Node::Zarr(_, z) if z.is_dir())
    }

    fn kind(&self) -> Kind {
        if self.is_dir() {
            Kind::Dir
        } else {
            Kind::File
        }
    }

    /// The fragment a node is inside of.
    fn fragment(&self) -> Option<FragmentId> {
        match *self {
            Node::Fragment(f)
            | Node::FooterJson(f)
            | Node::TilesJson(f)
            | Node::CellsCsv(f)
            | Node::Field(f, _)
            | Node::Raw(f, ..)
            | Node::Npy(f, _)
            | Node::Text(f, _)
            | Node::Enum(FieldOf::Fragment(f, _))
            | Node::EnumFile(FieldOf::Fragment(f, _), _) => Some(f),
            _ => None,
        }
    }
}

/// The merged states opened, each with the rescan generation it was merged at.
type MergedStates = HashMap<Option<u64>, (u64, Arc<crate::read::merge::Merged>)>;

/// Fragments kept readable for open files after a rescan dropped them: the fragment and
/// how many open files hold it.
type Pinned = Arc<Mutex<HashMap<FragmentId, (Arc<Fragment>, usize)>>>;

pub struct ArrayTree {
    /// The array as last scanned; replaced whole by a rescan that finds changes.
    array: RwLock<Arc<Array>>,
    /// Bumped by every rescan that changed something.
    generation: AtomicU64,
    scanned_at: Mutex<Instant>,
    engine: Arc<ReadEngine>,
    nodes: NodeTable<Node>,
    /// This tree's name for the items it keeps in the engine's cache.
    owner: u64,
    pinned: Pinned,
    /// How old the fragment list may get ([`REFRESH_INTERVAL`] unless set).
    refresh_interval: Duration,
    /// Held while a text file's index grows (one at a time).
    indexing: Mutex<()>,
    /// Text files' sizes once learned, by file and generation (see `known_text_size`).
    text_sizes: Mutex<HashMap<(Ino, u64), u64>>,
    /// The dimension labels' trees opened so far.
    labels: Mutex<HashMap<usize, Arc<ArrayTree>>>,
    /// The merged states opened, with the rescan generation they were merged at.
    states: Mutex<MergedStates>,
    zarr_stores: zarr::ZarrStores,
}

impl ArrayTree {
    /// The tree of an opened array, with a cache of `cache_size` bytes of its own.
    pub fn new(array: Array, cache_size: u64) -> ArrayTree {
        ArrayTree::with_engine(array, Arc::new(ReadEngine::new(cache_size)))
    }

    /// The tree of an opened array, reading through `engine` (shared by the trees of a
    /// group).
    pub fn with_engine(array: Array, engine: Arc<ReadEngine>) -> ArrayTree {
        ArrayTree {
            array: RwLock::new(Arc::new(array)),
            generation: AtomicU64::new(0),
            scanned_at: Mutex::new(Instant::now()),
            engine,
            nodes: NodeTable::new(Node::Root),
            owner: ReadEngine::new_owner(),
            pinned: Arc::default(),
            refresh_interval: REFRESH_INTERVAL,
            indexing: Mutex::new(()),
            text_sizes: Mutex::new(HashMap::new()),
            labels: Mutex::new(HashMap::new()),
            states: Mutex::new(HashMap::new()),
            zarr_stores: zarr::ZarrStores::new(),
        }
    }

    /// Sets how old the list of fragments may get before a listing reads the array's
    /// folder again (`Duration::MAX`: never by itself; tests that count requests).
    pub fn with_refresh_interval(mut self, interval: Duration) -> ArrayTree {
        self.refresh_interval = interval;
        self
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

    /// Reads the array folder again now. Returns whether anything changed. A folder that
    /// cannot be read keeps the last good list (and the error is returned).
    pub fn refresh(&self) -> Result<bool> {
        *self.scanned_at.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
        let old = self.array();
        let new = old.rescan()?;
        if new.same_content(&old) {
            return Ok(false);
        }
        log::info!(
            "{}: {} live fragments (was {})",
            new.location(),
            new.fragments.len(),
            old.fragments.len()
        );
        *self.array.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(new);
        self.generation.fetch_add(1, Ordering::AcqRel);
        Ok(true)
    }

    /// [`ArrayTree::refresh`] when the last scan is older than the refresh interval.
    fn refresh_if_stale(&self) {
        let stale = self
            .scanned_at
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .elapsed()
            >= self.refresh_interval;
        if stale {
            if let Err(e) = self.refresh() {
                log::warn!("rescanning the array: {e} (keeping the last list)");
            }
        }
    }

    /// Chunks un-filtered since the tree was opened.
    pub fn chunks_decoded(&self) -> u64 {
        self.engine.chunks_decoded()
    }

    /// Bytes the cache holds now (never more than the size it was opened with).
    pub fn cache_used(&self) -> u64 {
        self.engine.cache().used()
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

    /// The fragment with id `id`: live, or kept for an open file after it was vacuumed.
    fn fragment(&self, id: FragmentId) -> Result<Arc<Fragment>> {
        if let Some(f) = self.array().fragment(id) {
            return Ok(f.clone());
        }
        let pinned = self.pinned.lock().unwrap_or_else(|e| e.into_inner());
        pinned
            .get(&id)
            .map(|(f, _)| f.clone())
            .ok_or_else(|| Error::NotFound(format!("fragment #{}", id.0)))
    }

    fn meta(&self, id: FragmentId) -> Result<(Arc<Fragment>, Arc<FragmentMeta>)> {
        let fragment = self.fragment(id)?;
        let meta = fragment.meta(&self.array().schemas)?;
        Ok((fragment, meta))
    }

    /// Read-ahead of `[offset, offset + len)` of field `i`'s `raw` file in fragment `id`,
    /// and of the next fragment's when that reaches the end of the file.
    fn read_ahead_field(
        &self,
        id: FragmentId,
        i: usize,
        raw: RawFile,
        offset: u64,
        len: u64,
    ) -> Result<()> {
        // The field's name when the range reaches the end of the file.
        let at_the_end = self.with_field(id, i, |r| {
            r.read_ahead(raw, offset, len)?;
            let size = r.size(raw)?;
            let to_the_end = offset < size && offset.saturating_add(len) >= size;
            Ok(to_the_end.then(|| r.field.name.clone()))
        })?;
        match at_the_end {
            Some(name) => self.read_ahead_next_fragment(id, &name, raw),
            None => Ok(()),
        }
    }

    /// Read-ahead has reached the end of field `name`'s `raw` file in fragment `id`: the
    /// start of the same file in the next fragment is prepared too. `cat
    /// fragments/*/a/values.bin` reads them one after the other, and without this the
    /// disk idles from the end of one file until the reader's first read of the next
    /// (cold unfiltered reads: +16%, scripts/bench/README.md). Local arrays only: on
    /// object storage it would read the next fragment's metadata before its first use.
    fn read_ahead_next_fragment(&self, id: FragmentId, name: &str, raw: RawFile) -> Result<()> {
        let array = self.array();
        if array.store.is_remote() {
            return Ok(());
        }
        let Some(next) = array
            .fragments
            .iter()
            .position(|f| f.id == id)
            .and_then(|k| array.fragments.get(k + 1))
        else {
            return Ok(());
        };
        let (_, next_meta) = self.meta(next.id)?;
        let Some(j) = next_meta.fields.iter().position(|f| f.name == name) else {
            return Ok(());
        };
        self.with_field(next.id, j, |r| r.read_ahead(raw, 0, NEXT_FRAGMENT_AHEAD))
    }

    /// Runs `f` on a reader of field `i` of fragment `id`.
    fn with_field<T>(
        &self,
        id: FragmentId,
        i: usize,
        f: impl FnOnce(&FieldReader<'_>) -> Result<T>,
    ) -> Result<T> {
        let (fragment, meta) = self.meta(id)?;
        let reader = self.engine.field(&fragment, &meta, i)?;
        f(&reader)
    }

    /// Fails with `NotFound` unless the node is in the tree now (a vacuumed fragment's
    /// nodes are gone, but for open files).
    fn check_exists(&self, node: &Node) -> Result<()> {
        match node {
            Node::SchemaFile(name) if !self.array().schemas.iter().any(|s| &s.name == name) => {
                Err(Error::NotFound(format!("schema {name}")))
            }
            Node::Field(f, i) | Node::Raw(f, i, _) | Node::Text(f, i) => {
                self.with_field(*f, *i, |_| Ok(()))
            }
            Node::Npy(f, i) => self.with_field(*f, *i, |r| match r.field.is_var() {
                false => Ok(()),
                true => Err(Error::NotFound(format!("values.npy of var field #{i}"))),
            }),
            Node::Enum(of) => match self.field_enumeration_name(of)? {
                Some(_) => Ok(()),
                None => Err(Error::NotFound("enumeration".into())),
            },
            Node::EnumFile(of, _) => {
                let (e, _) = self
                    .field_enumeration(of)?
                    .ok_or_else(|| Error::NotFound("enumeration".into()))?;
                match node {
                    Node::EnumFile(_, EnumFile::Offsets) if !e.is_var() => Err(Error::NotFound(
                        "offsets.bin of a fixed-size enumeration".into(),
                    )),
                    _ => Ok(()),
                }
            }
            Node::Zarr(w, z) => self.zarr_check(*w, z),
            other => match other.fragment() {
                Some(f) => self.fragment(f).map(|_| ()),
                None => self.check_merged(other),
            },
        }
    }

    fn lookup_node(&self, parent: &Node, name: &str) -> Result<Node> {
        if !parent.is_dir() {
            return Err(Error::NotDirectory(name.to_string()));
        }
        if *parent == Node::FragmentsDir {
            // By name, not by listing: `stat` of each of 100,000 fragments stays cheap.
            self.refresh_if_stale();
            return self
                .array()
                .fragment_named(name)
                .filter(|f| names::encode(&f.name) == name)
                .map(|f| Node::Fragment(f.id))
                .ok_or_else(|| Error::NotFound(name.to_string()));
        }
        if *parent == Node::AtDir {
            // Any timestamp opens by name, listed or not.
            return self.lookup_at(name);
        }
        if let Node::Zarr(w, z) = parent {
            return self.zarr_lookup(*w, z, name);
        }
        self.list_nodes(parent)?
            .into_iter()
            .find(|(n, _)| n == name)
            .map(|(_, node)| node)
            .ok_or_else(|| Error::NotFound(name.to_string()))
    }

    /// The entries of a folder, in display order.
    fn list_nodes(&self, dir: &Node) -> Result<Vec<(String, Node)>> {
        let e = |name: &str, node| (name.to_string(), node);
        Ok(match dir {
            Node::Root => vec![
                e("array.json", Node::ArrayJson),
                e("metadata.json", Node::MetadataJson),
                e("schema.json", Node::SchemaJson),
                e("schemas", Node::SchemasDir),
                e("fragments", Node::FragmentsDir),
                e("latest", Node::State(None)),
                e("at", Node::AtDir),
            ]
            .into_iter()
            .chain(
                (!self.array().latest_schema().schema.labels.is_empty())
                    .then(|| e("labels", Node::LabelsDir)),
            )
            .chain(
                self.has_zarr(None)
                    .then(|| e("zarr", Node::Zarr(None, ZNode::Root))),
            )
            .collect(),
            Node::LabelsDir => self
                .array()
                .latest_schema()
                .schema
                .labels
                .iter()
                .enumerate()
                .map(|(l, label)| (names::encode(&label.name), Node::Label(l)))
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
            Node::Fragment(f) => {
                let (_, meta) = self.meta(*f)?;
                let mut out = vec![
                    e("footer.json", Node::FooterJson(*f)),
                    e("tiles.json", Node::TilesJson(*f)),
                    e("cells.csv", Node::CellsCsv(*f)),
                ];
                for (i, field) in meta.fields.iter().enumerate() {
                    out.push((names::encode(&field.name), Node::Field(*f, i)));
                }
                out
            }
            Node::Field(f, i) => {
                let (_, meta) = self.meta(*f)?;
                let field = meta
                    .fields
                    .get(*i)
                    .ok_or_else(|| Error::NotFound(format!("field #{i}")))?;
                let mut out = vec![e("values.bin", Node::Raw(*f, *i, RawFile::Values))];
                if field.is_var() {
                    out.push(e("offsets.bin", Node::Raw(*f, *i, RawFile::Offsets)));
                }
                if field.nullable {
                    out.push(e("validity.bin", Node::Raw(*f, *i, RawFile::Validity)));
                }
                if !field.is_var() {
                    out.push(e("values.npy", Node::Npy(*f, *i)));
                }
                out.push(e("values.txt", Node::Text(*f, *i)));
                let of = FieldOf::Fragment(*f, *i);
                if self.field_enumeration_name(&of)?.is_some() {
                    out.push(e("enumeration", Node::Enum(of)));
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
            merged @ (Node::AtDir | Node::State(_) | Node::MField(..)) => {
                self.list_merged(merged)?
            }
            Node::Zarr(w, z) => self.zarr_list(*w, z)?,
            other => return Err(Error::NotDirectory(format!("{other:?}"))),
        })
    }

    fn node_size(&self, ino: Ino, node: &Node) -> Result<u64> {
        Ok(match node {
            n if n.is_dir() => 0,
            Node::Zarr(w, z) => self.zarr_size(*w, z)?,
            Node::Raw(f, i, raw) => self.with_field(*f, *i, |r| r.size(*raw))?,
            Node::Npy(..) | Node::Text(..) | Node::CellsCsv(_) => self.derived_size(ino, node)?,
            Node::ReadJson(_)
            | Node::MCells(_)
            | Node::MRaw(..)
            | Node::MNpy(..)
            | Node::MText(..)
            | Node::MHdr(..) => self.merged_size(ino, node)?,
            _ => self.rendered(ino, node)?.bytes("a JSON file")?.len() as u64,
        })
    }

    /// JSON files are rendered on first use and kept in the bounded cache. The
    /// array-level ones change with a rescan, so their key carries the generation.
    fn rendered(&self, ino: Ino, node: &Node) -> Result<Arc<Cached>> {
        if *node == Node::ArrayJson {
            self.refresh_if_stale();
        }
        let generation = match self.node_lifetime(node) {
            Lifetime::Immutable => 0,
            Lifetime::Changing | Lifetime::Snapshot => self.generation(),
        };
        self.engine.cache().get_or_load(
            CacheKey::View {
                owner: self.owner,
                file: ino,
                item: ViewItem::Rendered(generation),
            },
            || self.render(node),
        )
    }

    fn render(&self, node: &Node) -> Result<Cached> {
        let array = self.array();
        let value = match node {
            Node::ArrayJson => {
                let mut value = json::array(&array);
                if let Some(map) = value.as_object_mut() {
                    map.insert("zarr".into(), zarr::summary(&array.latest_schema().schema));
                }
                value
            }
            Node::SchemaJson => {
                let s = array.latest_schema();
                json::schema(&s.name, &s.schema)
            }
            Node::SchemaFile(name) => {
                let s = array
                    .schemas
                    .iter()
                    .find(|s| &s.name == name)
                    .ok_or_else(|| Error::NotFound(format!("schema {name}")))?;
                json::schema(&s.name, &s.schema)
            }
            Node::FooterJson(f) => {
                let (fragment, meta) = self.meta(*f)?;
                json::footer(&fragment, &meta)
            }
            Node::TilesJson(f) => {
                let (fragment, meta) = self.meta(*f)?;
                let mut labels = HashMap::new();
                for i in 0..meta.fields.len() {
                    // A bad enumeration file fails the labels (values.txt says why), not
                    // the tile facts: those tiles just show no flag.
                    match self.field_enumeration(&FieldOf::Fragment(*f, i)) {
                        Ok(Some((e, _))) => {
                            labels.insert(i, e);
                        }
                        Ok(None) => {}
                        Err(e) => log::warn!("tiles.json of {}: {e}", fragment.name),
                    }
                }
                json::tiles(&self.engine, &fragment, &meta, &labels)?
            }
            Node::ReadJson(w) => self.read_json(*w)?,
            Node::EnumFile(of, file) => return Ok(Cached::Bytes(self.enum_file(of, *file)?)),
            Node::MetadataJson => json::metadata(&crate::array::metadata::load_metadata(
                &*array.store,
                array.options.key,
            )?),
            Node::MHdr(w, i) => return Ok(Cached::Bytes(self.envi_header(*w, *i)?.into_bytes())),
            other => return Err(Error::IsDirectory(format!("{other:?}"))),
        };
        Ok(Cached::Bytes(json::to_bytes(&value)))
    }

    fn node_lifetime(&self, node: &Node) -> Lifetime {
        match node {
            // A fragment folder may be vacuumed; what is inside never changes.
            Node::Fragment(_) => Lifetime::Changing,
            Node::ReadJson(_)
            | Node::MCells(_)
            | Node::MRaw(..)
            | Node::MNpy(..)
            | Node::MText(..)
            | Node::MHdr(..)
            | Node::EnumFile(FieldOf::State(..), _)
            | Node::Zarr(..) => Lifetime::Snapshot,
            n if n.fragment().is_some() => Lifetime::Immutable,
            _ => Lifetime::Changing,
        }
    }

    fn read_node_into(
        &self,
        ino: Ino,
        node: &Node,
        offset: u64,
        len: u64,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        match node {
            n if n.is_dir() => Err(Error::IsDirectory(format!("{n:?}"))),
            Node::Zarr(w, z) => self.zarr_read_into(*w, z, offset, len, out),
            Node::Raw(f, i, raw) => {
                self.with_field(*f, *i, |r| r.read_into(*raw, offset, len, out))
            }
            Node::Npy(f, i) => self.npy_read_into(ino, *f, *i, offset, len, out),
            Node::Text(..) | Node::CellsCsv(_) => self.text_read_into(ino, node, offset, len, out),
            Node::ReadJson(_)
            | Node::MCells(_)
            | Node::MRaw(..)
            | Node::MNpy(..)
            | Node::MText(..)
            | Node::MHdr(..) => self.merged_read_into(ino, node, offset, len, out),
            other => {
                let rendered = self.rendered(ino, other)?;
                let bytes = rendered.bytes("a JSON file")?;
                let start = offset.min(bytes.len() as u64) as usize;
                let end = offset.saturating_add(len).min(bytes.len() as u64) as usize;
                out.extend_from_slice(&bytes[start..end]);
                Ok(())
            }
        }
    }
}

/// What [`ArrayTree::open`](FileTree::open) hands out: the fragment stays readable (its
/// metadata kept, its files pinned in the store) while the file is open.
struct FragmentGuard {
    id: FragmentId,
    pinned: Pinned,
    _files: Pin,
}

impl Drop for FragmentGuard {
    fn drop(&mut self) {
        let mut pinned = self.pinned.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, count)) = pinned.get_mut(&self.id) {
            *count -= 1;
            if *count == 0 {
                pinned.remove(&self.id);
            }
        }
    }
}

impl ArrayTree {
    /// Dimension label `l`'s tree, opened on first visit (it is an array of its own,
    /// under the folder the schema names, usually `__labels/l<N>`).
    fn label_tree(&self, l: usize) -> Result<Arc<ArrayTree>> {
        if let Some(t) = self
            .labels
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&l)
        {
            return Ok(t.clone());
        }
        let array = self.array();
        let label = array
            .latest_schema()
            .schema
            .labels
            .get(l)
            .cloned()
            .ok_or_else(|| Error::NotFound(format!("dimension label #{l}")))?;
        if !label.uri_is_relative {
            return Err(Error::NotFound(format!(
                "dimension label {}: an absolute URI ({}), outside the array",
                label.name, label.uri
            )));
        }
        let store = array.store.sub(label.uri.trim_matches('/'))?;
        let tree = Arc::new(ArrayTree::with_engine(
            Array::open(store, array.options.clone())?,
            self.engine.clone(),
        ));
        self.labels
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(l, tree.clone());
        Ok(tree)
    }

    /// The label tree and inner number a node stands for, if it is a label's.
    fn in_label(&self, node: &Node) -> Result<Option<(usize, Arc<ArrayTree>, Ino)>> {
        Ok(match *node {
            Node::Label(l) => Some((l, self.label_tree(l)?, super::ROOT)),
            Node::LabelInner(l, i) => Some((l, self.label_tree(l)?, i)),
            _ => None,
        })
    }

    /// The outer number of label `l`'s node `inner`.
    fn label_outer(&self, l: usize, inner: Ino) -> Ino {
        if inner == super::ROOT {
            self.nodes.ino(&Node::Label(l))
        } else {
            self.nodes.ino(&Node::LabelInner(l, inner))
        }
    }

    fn label_entry(&self, l: usize, e: Entry) -> Entry {
        Entry {
            ino: self.label_outer(l, e.ino),
            ..e
        }
    }
}

impl FileTree for ArrayTree {
    fn list(&self, dir: Ino) -> Result<Vec<Entry>> {
        let node = self.node(dir)?;
        if let Some((l, tree, i)) = self.in_label(&node)? {
            let listed = tree.list(i)?;
            return Ok(listed.into_iter().map(|e| self.label_entry(l, e)).collect());
        }
        self.check_exists(&node)?;
        Ok(self
            .list_nodes(&node)?
            .into_iter()
            .map(|(name, node)| self.entry(name, node))
            .collect())
    }

    fn lookup(&self, parent: Ino, name: &str) -> Result<Entry> {
        let parent = self.node(parent)?;
        if let Some((l, tree, i)) = self.in_label(&parent)? {
            let e = tree.lookup(i, name)?;
            return Ok(self.label_entry(l, e));
        }
        let node = self.lookup_node(&parent, name)?;
        Ok(self.entry(name.to_string(), node))
    }

    fn stat(&self, ino: Ino) -> Result<Stat> {
        let node = self.node(ino)?;
        if let Some((_, tree, i)) = self.in_label(&node)? {
            return tree.stat(i);
        }
        if node == Node::FragmentsDir {
            self.refresh_if_stale();
        }
        self.check_exists(&node)?;
        let array = self.array();
        let mut exact_size = true;
        let (kind, size, nlink) = match &node {
            Node::Root => (Kind::Dir, 0, 4),
            Node::SchemasDir => (Kind::Dir, 0, 2),
            Node::FragmentsDir => (
                Kind::Dir,
                0,
                u32::try_from(array.fragments.len())
                    .unwrap_or(u32::MAX - 2)
                    .saturating_add(2),
            ),
            Node::Fragment(_) => (Kind::Dir, 0, 1),
            Node::Field(..) => (Kind::Dir, 0, 2),
            // The state folders: sub-folders are not counted (their fields may need a
            // merge to list), as for fragment folders.
            Node::AtDir | Node::State(_) => (Kind::Dir, 0, 1),
            Node::MField(..) | Node::Enum(_) | Node::LabelsDir => (Kind::Dir, 0, 2),
            // Sub-folders not counted, as for the state folders.
            n @ Node::Zarr(..) if n.is_dir() => (Kind::Dir, 0, 1),
            text @ (Node::Text(..) | Node::CellsCsv(_)) => match self.known_text_size(ino, text) {
                Some(size) => (Kind::File, size, 1),
                None => {
                    exact_size = false;
                    (Kind::File, 0, 1)
                }
            },
            merged @ (Node::ReadJson(_)
            | Node::MCells(_)
            | Node::MRaw(..)
            | Node::MNpy(..)
            | Node::MText(..)
            | Node::MHdr(..)) => match self.merged_known_size(ino, merged)? {
                Some(size) => (Kind::File, size, 1),
                None => {
                    exact_size = false;
                    (Kind::File, 0, 1)
                }
            },
            file => (Kind::File, self.node_size(ino, file)?, 1),
        };
        let mtime_ms = match node.fragment() {
            Some(f) => Some(self.fragment(f)?.timestamps.t2),
            None => None,
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
        if let Some((_, tree, i)) = self.in_label(&node)? {
            return tree.size(i);
        }
        self.node_size(ino, &node)
    }

    fn read_into(&self, ino: Ino, offset: u64, len: u64, out: &mut Vec<u8>) -> Result<()> {
        let node = self.node(ino)?;
        if let Some((_, tree, i)) = self.in_label(&node)? {
            return tree.read_into(i, offset, len, out);
        }
        self.read_node_into(ino, &node, offset, len, out)
    }

    /// Prepares what a read of the range will need: for field files, their stored tiles
    /// are brought into the page cache and their chunk headers walked (nothing decoded),
    /// and at a file's end the start of the same file in the next fragment; text files
    /// are rendered into the cache, block by block.
    fn read_ahead(&self, ino: Ino, offset: u64, len: u64) -> Result<()> {
        let node = self.node(ino)?;
        if let Some((_, tree, i)) = self.in_label(&node)? {
            return tree.read_ahead(i, offset, len);
        }
        match &node {
            Node::Raw(f, i, raw) => self.read_ahead_field(*f, *i, *raw, offset, len),
            Node::Npy(f, i) => {
                let h = self.npy_header(*f, *i)?.len() as u64;
                let end = offset.saturating_add(len).saturating_sub(h);
                let from = offset.saturating_sub(h);
                self.read_ahead_field(*f, *i, RawFile::Values, from, end.saturating_sub(from))
            }
            Node::Text(..) | Node::CellsCsv(_) => {
                self.text_read_into(ino, &node, offset, len, &mut Vec::new())
            }
            _ => Ok(()),
        }
    }

    fn open(&self, ino: Ino) -> Result<Option<OpenGuard>> {
        let node = self.node(ino)?;
        if let Some((_, tree, i)) = self.in_label(&node)? {
            return tree.open(i);
        }
        let Some(id) = node.fragment() else {
            return Ok(None);
        };
        // The metadata is read now, and the fragment's files pinned: whatever happens to
        // the fragment on disk, this file reads on.
        let (fragment, _) = self.meta(id)?;
        let files = fragment.store.pin(&fragment.rel_dir)?;
        let mut pinned = self.pinned.lock().unwrap_or_else(|e| e.into_inner());
        pinned.entry(id).or_insert((fragment, 0)).1 += 1;
        Ok(Some(Box::new(FragmentGuard {
            id,
            pinned: self.pinned.clone(),
            _files: files,
        })))
    }

    fn parent(&self, ino: Ino) -> Result<Ino> {
        let node = self.node(ino)?;
        if let Node::LabelInner(l, i) = node {
            let p = self.label_tree(l)?.parent(i)?;
            return Ok(self.label_outer(l, p));
        }
        let parent = match node {
            Node::LabelsDir => Node::Root,
            Node::Label(_) => Node::LabelsDir,
            Node::LabelInner(..) => Node::LabelsDir,
            Node::Root
            | Node::MetadataJson
            | Node::ArrayJson
            | Node::SchemaJson
            | Node::SchemasDir
            | Node::FragmentsDir => Node::Root,
            Node::SchemaFile(_) => Node::SchemasDir,
            Node::Fragment(_) => Node::FragmentsDir,
            Node::FooterJson(f) | Node::TilesJson(f) | Node::CellsCsv(f) | Node::Field(f, _) => {
                Node::Fragment(f)
            }
            Node::Raw(f, i, _) | Node::Npy(f, i) | Node::Text(f, i) => Node::Field(f, i),
            Node::Enum(FieldOf::Fragment(f, i)) => Node::Field(f, i),
            Node::Enum(FieldOf::State(w, i)) => Node::MField(w, i),
            Node::EnumFile(of, _) => Node::Enum(of),
            Node::State(None) | Node::AtDir => Node::Root,
            Node::State(Some(_)) => Node::AtDir,
            Node::ReadJson(w) | Node::MCells(w) | Node::MField(w, _) => Node::State(w),
            Node::MRaw(w, i, _) | Node::MNpy(w, i) | Node::MText(w, i) | Node::MHdr(w, i) => {
                Node::MField(w, i)
            }
            Node::Zarr(w, z) => self.zarr_parent(w, &z),
        };
        Ok(self.nodes.ino(&parent))
    }

    fn lifetime(&self, ino: Ino) -> Lifetime {
        if let Some(Node::Label(l) | Node::LabelInner(l, _)) = self.nodes.node(ino) {
            let inner = match self.nodes.node(ino) {
                Some(Node::LabelInner(_, i)) => i,
                _ => super::ROOT,
            };
            return match self.label_tree(l) {
                Ok(t) => t.lifetime(inner),
                Err(_) => Lifetime::Changing,
            };
        }
        match self.nodes.node(ino) {
            Some(node) => self.node_lifetime(&node),
            None => Lifetime::Changing,
        }
    }

    fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
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
