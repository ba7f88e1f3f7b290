//! The virtual tree of `DESIGN.md`: nodes, exact sizes, and [`View::read_at`], the one
//! entry point through which both `fragfs cat` and the FUSE mount read bytes.

pub mod cache;
pub mod field;
pub mod filo;
pub mod inode;
pub mod json;
pub mod names;
pub mod npy;
pub mod prefetch;
pub mod text;
mod textfile;
pub mod tree;
pub mod value;

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use crate::array::fragment::{Fragment, FragmentMeta};
use crate::array::{Array, OpenOptions};
use crate::error::{Error, Result};

pub use field::RawFile;
use field::{CacheKey, Cached, ChunkCache, FieldReader};

/// Default bound of the decoded-chunk cache.
pub const DEFAULT_CACHE_SIZE: u64 = 256 << 20;

/// A node of the tree. Fragments and fields are numbered as listed, which keeps node
/// identities (and inode numbers built from them) stable for the life of a view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Node {
    Root,
    ArrayJson,
    SchemaJson,
    SchemasDir,
    SchemaFile(usize),
    FragmentsDir,
    Fragment(usize),
    FooterJson(usize),
    TilesJson(usize),
    /// Fragment, index into the fragment's fields.
    Field(usize, usize),
    Raw(usize, usize, RawFile),
    /// `values.npy` of a fixed-size field.
    Npy(usize, usize),
    /// `values.txt` of a field.
    Text(usize, usize),
    /// `cells.csv` of a fragment.
    CellsCsv(usize),
    /// `fragment.json` of a Filo fragment.
    FiloJson,
    /// The folder of Filo column `c`.
    FiloColumn(usize),
    /// A file of Filo column `c`.
    FiloFile(usize, filo::FiloFile),
}

impl Node {
    pub fn is_dir(self) -> bool {
        matches!(
            self,
            Node::Root
                | Node::SchemasDir
                | Node::FragmentsDir
                | Node::Fragment(_)
                | Node::Field(..)
                | Node::FiloColumn(_)
        )
    }
}

/// One entry of a folder listing.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub name: String,
    pub node: Node,
}

/// What a folder or file is, as `stat` needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Dir,
    File,
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
}

/// How old the list of fragments may get before a listing of `fragments/` reads the
/// array folder again: new fragments show up, vacuumed ones go, within this time.
pub const REFRESH_INTERVAL: Duration = Duration::from_secs(1);

pub struct View {
    /// The array as last scanned; replaced whole by a rescan that finds changes.
    array: RwLock<Arc<Array>>,
    /// Bumped by every rescan that changed something.
    generation: AtomicU64,
    scanned_at: Mutex<Instant>,
    /// Decoded chunks, chunk indexes and rendered JSON, bounded in bytes.
    cache: ChunkCache,
    decoded: AtomicU64,
}

impl View {
    pub fn open(path: &Path, options: OpenOptions, cache_size: u64) -> Result<View> {
        Ok(View {
            array: RwLock::new(Arc::new(Array::open(path, options)?)),
            generation: AtomicU64::new(0),
            scanned_at: Mutex::new(Instant::now()),
            cache: ChunkCache::new(cache_size),
            decoded: AtomicU64::new(0),
        })
    }

    /// The array as last scanned.
    pub fn array(&self) -> Arc<Array> {
        self.array.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Changes whenever a rescan found new or removed fragments or schemas.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
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
            new.root.display(),
            new.fragments.len(),
            old.fragments.len()
        );
        *self.array.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(new);
        self.generation.fetch_add(1, Ordering::AcqRel);
        Ok(true)
    }

    /// [`View::refresh`] when the last scan is older than [`REFRESH_INTERVAL`].
    fn refresh_if_stale(&self) {
        let stale = self
            .scanned_at
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .elapsed()
            >= REFRESH_INTERVAL;
        if stale {
            if let Err(e) = self.refresh() {
                log::warn!("rescanning the array: {e} (keeping the last list)");
            }
        }
    }

    /// Chunks un-filtered since the view was opened.
    pub fn chunks_decoded(&self) -> u64 {
        self.decoded.load(Ordering::Relaxed)
    }

    /// Attributes of a node. Sizes come from metadata; no tile is decoded.
    pub fn stat(&self, node: Node) -> Result<Stat> {
        if node == Node::FragmentsDir {
            self.refresh_if_stale();
        }
        self.check_exists(node)?;
        let array = self.array();
        let fragment_time = |f: usize| array.fragment(f).map(|f| f.timestamps.t2);
        let (kind, size, nlink) = match node {
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
            file => (Kind::File, self.size(file)?, 1),
        };
        let mtime_ms = match node {
            Node::Fragment(f)
            | Node::FooterJson(f)
            | Node::TilesJson(f)
            | Node::CellsCsv(f)
            | Node::Field(f, _)
            | Node::Raw(f, ..)
            | Node::Npy(f, _)
            | Node::Text(f, _) => fragment_time(f),
            _ => None,
        };
        Ok(Stat {
            kind,
            size,
            nlink,
            mtime_ms,
        })
    }

    /// The live fragment with id `fragment`; a vacuumed one is not found.
    fn fragment(&self, fragment: usize) -> Result<Arc<Fragment>> {
        self.array()
            .fragment(fragment)
            .cloned()
            .ok_or_else(|| Error::NotFound(format!("fragment #{fragment}")))
    }

    fn meta(&self, fragment: usize) -> Result<Arc<FragmentMeta>> {
        self.fragment(fragment)?.meta(&self.array().schemas)
    }

    /// The field `i` of fragment `f`: every field is shown, the coordinates of dense
    /// fragments synthesized.
    fn field(&self, f: usize, i: usize) -> Result<(Arc<FragmentMeta>, usize)> {
        let meta = self.meta(f)?;
        match meta.fields.get(i) {
            Some(_) => Ok((meta, i)),
            None => Err(Error::NotFound(format!("field #{i} of fragment #{f}"))),
        }
    }

    /// Fails with `NotFound` unless the node is in the tree (inode numbers can name
    /// fragments or fields that do not exist).
    fn check_exists(&self, node: Node) -> Result<()> {
        match node {
            Node::SchemaFile(i) if i >= self.array().schemas.len() => {
                Err(Error::NotFound(format!("schema #{i}")))
            }
            Node::Fragment(f) | Node::FooterJson(f) | Node::TilesJson(f) | Node::CellsCsv(f) => {
                self.fragment(f).map(|_| ())
            }
            Node::Field(f, i) | Node::Raw(f, i, _) | Node::Text(f, i) => {
                self.field(f, i).map(|_| ())
            }
            Node::Npy(f, i) => {
                let (meta, i) = self.field(f, i)?;
                match meta.fields[i].is_var() {
                    false => Ok(()),
                    true => Err(Error::NotFound(format!("values.npy of var field #{i}"))),
                }
            }
            Node::FiloJson | Node::FiloColumn(_) | Node::FiloFile(..) => {
                Err(Error::NotFound(format!("{node:?} in a TileDB array")))
            }
            Node::Root
            | Node::ArrayJson
            | Node::SchemaJson
            | Node::SchemasDir
            | Node::SchemaFile(_)
            | Node::FragmentsDir => Ok(()),
        }
    }

    /// Resolves a `/`-separated path (leading `/` optional) to a node.
    pub fn resolve(&self, path: &str) -> Result<Node> {
        let mut node = Node::Root;
        for part in path.split('/').filter(|p| !p.is_empty() && *p != ".") {
            node = self.lookup(node, part)?;
        }
        Ok(node)
    }

    /// The child `name` of folder `parent`.
    pub fn lookup(&self, parent: Node, name: &str) -> Result<Node> {
        if !parent.is_dir() {
            return Err(Error::NotDirectory(name.to_string()));
        }
        if parent == Node::FragmentsDir {
            // By name, not by listing: `stat` of each of 100,000 fragments stays cheap.
            self.refresh_if_stale();
            return self
                .array()
                .fragment_named(name)
                .filter(|f| names::encode(&f.name) == name)
                .map(|f| Node::Fragment(f.id))
                .ok_or_else(|| Error::NotFound(name.to_string()));
        }
        self.list(parent)?
            .into_iter()
            .find(|e| e.name == name)
            .map(|e| e.node)
            .ok_or_else(|| Error::NotFound(name.to_string()))
    }

    /// The folder holding `node` (the root is its own parent).
    pub fn parent(&self, node: Node) -> Node {
        match node {
            Node::Root | Node::ArrayJson | Node::SchemaJson | Node::SchemasDir => Node::Root,
            Node::FragmentsDir => Node::Root,
            Node::SchemaFile(_) => Node::SchemasDir,
            Node::Fragment(_) => Node::FragmentsDir,
            Node::FooterJson(f) | Node::TilesJson(f) | Node::CellsCsv(f) | Node::Field(f, _) => {
                Node::Fragment(f)
            }
            Node::Raw(f, i, _) | Node::Npy(f, i) | Node::Text(f, i) => Node::Field(f, i),
            Node::FiloJson | Node::FiloColumn(_) | Node::FiloFile(..) => Node::Root,
        }
    }

    /// The entries of a folder, in display order.
    pub fn list(&self, dir: Node) -> Result<Vec<Entry>> {
        let e = |name: &str, node| Entry {
            name: name.to_string(),
            node,
        };
        Ok(match dir {
            Node::Root => vec![
                e("array.json", Node::ArrayJson),
                e("schema.json", Node::SchemaJson),
                e("schemas", Node::SchemasDir),
                e("fragments", Node::FragmentsDir),
            ],
            Node::SchemasDir => self
                .array()
                .schemas
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    e(
                        &format!("{}.json", names::encode(&s.name)),
                        Node::SchemaFile(i),
                    )
                })
                .collect(),
            Node::FragmentsDir => {
                self.refresh_if_stale();
                self.array()
                    .fragments
                    .iter()
                    .map(|f| e(&names::encode(&f.name), Node::Fragment(f.id)))
                    .collect()
            }
            Node::Fragment(f) => {
                let meta = self.meta(f)?;
                let mut out = vec![
                    e("footer.json", Node::FooterJson(f)),
                    e("tiles.json", Node::TilesJson(f)),
                    e("cells.csv", Node::CellsCsv(f)),
                ];
                for (i, field) in meta.fields.iter().enumerate() {
                    out.push(e(&names::encode(&field.name), Node::Field(f, i)));
                }
                out
            }
            Node::Field(f, i) => {
                let meta = self.meta(f)?;
                let field = meta
                    .fields
                    .get(i)
                    .ok_or_else(|| Error::NotFound(format!("field #{i}")))?;
                let mut out = vec![e("values.bin", Node::Raw(f, i, RawFile::Values))];
                if field.is_var() {
                    out.push(e("offsets.bin", Node::Raw(f, i, RawFile::Offsets)));
                }
                if field.nullable {
                    out.push(e("validity.bin", Node::Raw(f, i, RawFile::Validity)));
                }
                if !field.is_var() {
                    out.push(e("values.npy", Node::Npy(f, i)));
                }
                out.push(e("values.txt", Node::Text(f, i)));
                out
            }
            other => return Err(Error::NotDirectory(format!("{other:?}"))),
        })
    }

    /// Exact size of a file node, from metadata (no tile is decoded). Folders: 0.
    pub fn size(&self, node: Node) -> Result<u64> {
        Ok(match node {
            n if n.is_dir() => 0,
            Node::Raw(f, i, raw) => self.with_field(f, i, |r| r.size(raw))?,
            Node::Npy(..) | Node::Text(..) | Node::CellsCsv(_) => self.derived_size(node)?,
            other => self.rendered(other)?.bytes("view, a JSON file")?.len() as u64,
        })
    }

    /// Reads `len` bytes at `offset` of a file node (fewer at the end of the file).
    pub fn read_at(&self, node: Node, offset: u64, len: u64) -> Result<Vec<u8>> {
        match node {
            n if n.is_dir() => Err(Error::IsDirectory(format!("{n:?}"))),
            Node::Raw(f, i, raw) => self.with_field(f, i, |r| r.read(raw, offset, len)),
            Node::Npy(..) | Node::Text(..) | Node::CellsCsv(_) => {
                self.derived_read(node, offset, len)
            }
            other => {
                let rendered = self.rendered(other)?;
                let bytes = rendered.bytes("view, a JSON file")?;
                let start = offset.min(bytes.len() as u64) as usize;
                let end = offset.saturating_add(len).min(bytes.len() as u64) as usize;
                Ok(bytes[start..end].to_vec())
            }
        }
    }

    /// Appends bytes `[offset, offset + len)` of a file to `out`; field files are
    /// decoded straight into it.
    pub fn read_into(&self, node: Node, offset: u64, len: u64, out: &mut Vec<u8>) -> Result<()> {
        match node {
            Node::Raw(f, i, raw) => self.with_field(f, i, |r| r.read_into(raw, offset, len, out)),
            Node::Npy(f, i) => self.npy_read_into(f, i, offset, len, out),
            other => {
                out.extend_from_slice(&self.read_at(other, offset, len)?);
                Ok(())
            }
        }
    }

    /// Read-ahead for a sequential reader of `[offset, offset + len)`. Field files are
    /// decoded by the threads serving the kernel's own read-ahead requests, straight into
    /// their replies, so here the disk is asked for their tiles in the background; text
    /// files are rendered into the cache, block by block.
    pub fn read_ahead(&self, node: Node, offset: u64, len: u64) -> Result<()> {
        match node {
            Node::Raw(f, i, raw) => self.with_field(f, i, |r| r.read_ahead(raw, offset, len)),
            Node::Npy(f, i) => {
                let h = self.npy_header(f, i)?.len() as u64;
                let end = offset.saturating_add(len).saturating_sub(h);
                let from = offset.saturating_sub(h);
                self.with_field(f, i, |r| r.read_ahead(RawFile::Values, from, end - from))
            }
            Node::Text(..) | Node::CellsCsv(_) => self.read_at(node, offset, len).map(|_| ()),
            _ => Ok(()),
        }
    }

    fn with_field<T>(
        &self,
        f: usize,
        i: usize,
        run: impl FnOnce(&FieldReader) -> Result<T>,
    ) -> Result<T> {
        let (meta, i) = self.field(f, i)?;
        let field = &meta.fields[i];
        let fragment = self.fragment(f)?;
        let reader = FieldReader {
            fragment: f,
            dir: &fragment.dir,
            meta: &meta,
            field,
            cache: &self.cache,
            decoded: &self.decoded,
        };
        run(&reader)
    }

    /// JSON files are rendered on first use and kept in the bounded cache. The
    /// array-level ones change with a rescan, so their key carries the generation.
    fn rendered(&self, node: Node) -> Result<Arc<Cached>> {
        if node == Node::ArrayJson {
            self.refresh_if_stale();
        }
        let generation = if self.is_immutable(node) {
            0
        } else {
            self.generation()
        };
        self.cache
            .get_or_load(CacheKey::Rendered(node, generation), || self.render(node))
    }

    /// Whether a node's content can never change: everything inside a fragment (as long
    /// as the fragment lives). The array-level files change when fragments come and go.
    pub fn is_immutable(&self, node: Node) -> bool {
        !matches!(
            node,
            Node::Root
                | Node::ArrayJson
                | Node::SchemaJson
                | Node::SchemasDir
                | Node::SchemaFile(_)
                | Node::FragmentsDir
        )
    }

    fn render(&self, node: Node) -> Result<Cached> {
        let array = self.array();
        let value = match node {
            Node::ArrayJson => json::array(&array),
            Node::SchemaJson => {
                let s = array.latest_schema();
                json::schema(&s.name, &s.schema)
            }
            Node::SchemaFile(i) => {
                let s = array
                    .schemas
                    .get(i)
                    .ok_or_else(|| Error::NotFound(format!("schema #{i}")))?;
                json::schema(&s.name, &s.schema)
            }
            Node::FooterJson(f) => json::footer(&*self.fragment(f)?, &*self.meta(f)?),
            Node::TilesJson(f) => json::tiles(&*self.fragment(f)?, &*self.meta(f)?)?,
            other => return Err(Error::IsDirectory(format!("{other:?}"))),
        };
        Ok(Cached::Bytes(json::to_bytes(&value)))
    }

    /// Bytes the cache holds now (never more than the size it was opened with).
    pub fn cache_used(&self) -> u64 {
        self.cache.used()
    }
}
