//! The virtual tree of `DESIGN.md`: nodes, exact sizes, and [`View::read_at`], the one
//! entry point through which both `fragfs cat` and the FUSE mount read bytes.

pub mod cache;
pub mod field;
pub mod json;
pub mod names;
pub mod value;

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use crate::array::fragment::FragmentMeta;
use crate::array::{Array, OpenOptions};
use crate::error::{Error, Result};

pub use field::RawFile;
use field::{ChunkCache, FieldReader};

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
        )
    }
}

/// One entry of a folder listing.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub name: String,
    pub node: Node,
}

pub struct View {
    pub array: Array,
    cache: ChunkCache,
    rendered: Mutex<HashMap<Node, Arc<Vec<u8>>>>,
}

impl View {
    pub fn open(path: &Path, options: OpenOptions, cache_size: u64) -> Result<View> {
        Ok(View {
            array: Array::open(path, options)?,
            cache: ChunkCache::new(cache_size),
            rendered: Mutex::new(HashMap::new()),
        })
    }

    fn meta(&self, fragment: usize) -> Result<Arc<FragmentMeta>> {
        let f = self
            .array
            .fragments
            .get(fragment)
            .ok_or_else(|| Error::NotFound(format!("fragment #{fragment}")))?;
        f.meta(&self.array.schemas)
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
        self.list(parent)?
            .into_iter()
            .find(|e| e.name == name)
            .map(|e| e.node)
            .ok_or_else(|| Error::NotFound(name.to_string()))
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
                .array
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
            Node::FragmentsDir => self
                .array
                .fragments
                .iter()
                .enumerate()
                .map(|(i, f)| e(&names::encode(&f.name), Node::Fragment(i)))
                .collect(),
            Node::Fragment(f) => {
                let meta = self.meta(f)?;
                let mut out = vec![
                    e("footer.json", Node::FooterJson(f)),
                    e("tiles.json", Node::TilesJson(f)),
                ];
                for (i, field) in meta.fields.iter().enumerate() {
                    if field.stored {
                        out.push(e(&names::encode(&field.name), Node::Field(f, i)));
                    }
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
            other => self.rendered(other)?.len() as u64,
        })
    }

    /// Reads `len` bytes at `offset` of a file node (fewer at the end of the file).
    pub fn read_at(&self, node: Node, offset: u64, len: u64) -> Result<Vec<u8>> {
        match node {
            n if n.is_dir() => Err(Error::IsDirectory(format!("{n:?}"))),
            Node::Raw(f, i, raw) => self.with_field(f, i, |r| r.read(raw, offset, len)),
            other => {
                let bytes = self.rendered(other)?;
                let start = offset.min(bytes.len() as u64) as usize;
                let end = offset.saturating_add(len).min(bytes.len() as u64) as usize;
                Ok(bytes[start..end].to_vec())
            }
        }
    }

    fn with_field<T>(
        &self,
        f: usize,
        i: usize,
        run: impl FnOnce(&FieldReader) -> Result<T>,
    ) -> Result<T> {
        let meta = self.meta(f)?;
        let field = meta
            .fields
            .get(i)
            .ok_or_else(|| Error::NotFound(format!("field #{i}")))?;
        let reader = FieldReader {
            fragment: f,
            dir: &self.array.fragments[f].dir,
            meta: &meta,
            field,
            cache: &self.cache,
        };
        run(&reader)
    }

    /// JSON files are rendered once and kept (they are small and immutable).
    fn rendered(&self, node: Node) -> Result<Arc<Vec<u8>>> {
        if let Some(b) = self
            .rendered
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&node)
        {
            return Ok(b.clone());
        }
        let value = match node {
            Node::ArrayJson => json::array(&self.array),
            Node::SchemaJson => {
                let s = self.array.latest_schema();
                json::schema(&s.name, &s.schema)
            }
            Node::SchemaFile(i) => {
                let s = self
                    .array
                    .schemas
                    .get(i)
                    .ok_or_else(|| Error::NotFound(format!("schema #{i}")))?;
                json::schema(&s.name, &s.schema)
            }
            Node::FooterJson(f) => json::footer(&self.array.fragments[f], &*self.meta(f)?),
            Node::TilesJson(f) => json::tiles(&self.array.fragments[f], &*self.meta(f)?)?,
            other => return Err(Error::IsDirectory(format!("{other:?}"))),
        };
        let bytes = Arc::new(json::to_bytes(&value));
        self.rendered
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(node, bytes.clone());
        Ok(bytes)
    }

    /// Path of a node, for messages.
    pub fn cache_used(&self) -> u64 {
        self.cache.used()
    }
}
