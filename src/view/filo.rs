//! A Filo fragment as a tree of plain files, the same kind of tree as for TileDB:
//!
//! ```text
//! fragment.json            rows, and per column: vector kind, header word, encoding, sizes
//! <column>/values.bin      little-endian values (u8 bool, i32/i64/f32/f64, i64 epoch ms)
//! <column>/offsets.bin     string columns: u64 start of each row in values.bin
//! <column>/validity.bin    one byte per row, 1 valid, 0 NA
//! <column>/values.txt      one row per line, NULL for NA
//! <column>/values.npy      fixed-size columns: values.bin behind a NumPy header
//! <column>/timezone.bin    datetime columns: i8 per row, UTC offset in quarter hours
//! ```
//!
//! Numeric columns serve `values.bin` straight from the chunk, row by row, without
//! decoding the rest ([`crate::filo::fixed_layout`]); everything else decodes the chunk
//! once into the bounded cache. Chunk files are read whole (Filo chunks are small) and
//! cached too, so memory stays under the cache size.

use std::sync::Arc;

use serde_json::{json, Value};

use super::cache::slice;
use super::info::{FiloColumnInfo, FiloInfo, Info};
use super::nodes::{Ino, NodeTable};
use super::{names, text, Entry, FileTree, Kind, Lifetime, Stat};
use crate::cache::{Cache, Weigh};
use crate::encode::npy;
use crate::error::{Error, Place, Result};
use crate::filo::{
    fixed_layout_with, parse_manifest, ColumnType, DecodedColumn, FormatVersion, Manifest,
    ManifestColumn, Values, MANIFEST_FILE,
};
use crate::format::Datatype;
use crate::storage::Store;

/// The files of a Filo column's folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FiloFile {
    Values,
    Offsets,
    Validity,
    Timezone,
    Npy,
    Text,
}

impl FiloFile {
    const ALL: [FiloFile; 6] = [
        FiloFile::Values,
        FiloFile::Offsets,
        FiloFile::Validity,
        FiloFile::Timezone,
        FiloFile::Npy,
        FiloFile::Text,
    ];

    pub fn name(self) -> &'static str {
        match self {
            FiloFile::Values => "values.bin",
            FiloFile::Offsets => "offsets.bin",
            FiloFile::Validity => "validity.bin",
            FiloFile::Timezone => "timezone.bin",
            FiloFile::Npy => "values.npy",
            FiloFile::Text => "values.txt",
        }
    }

    /// Position in a fixed list, for inode numbers.
    pub fn index(self) -> u64 {
        FiloFile::ALL.iter().position(|&f| f == self).unwrap_or(0) as u64
    }

    /// Whether a column of type `t` has this file.
    fn applies_to(self, t: ColumnType) -> bool {
        match self {
            FiloFile::Offsets => t.elem_size().is_none(),
            FiloFile::Npy => t.elem_size().is_some(),
            FiloFile::Timezone => t == ColumnType::DateTime,
            FiloFile::Values | FiloFile::Validity | FiloFile::Text => true,
        }
    }
}

/// The TileDB datatype whose text and NumPy rendering a column type shares.
fn datatype(t: ColumnType) -> Datatype {
    match t {
        ColumnType::Bool => Datatype::Bool,
        ColumnType::Int => Datatype::Int32,
        ColumnType::Long => Datatype::Int64,
        ColumnType::Float => Datatype::Float32,
        ColumnType::Double => Datatype::Float64,
        ColumnType::String | ColumnType::Utf8 => Datatype::StringUtf8,
        ColumnType::Timestamp | ColumnType::DateTime => Datatype::DatetimeMs,
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    Chunk(usize),
    Decoded(usize),
    Text(usize),
    Json,
}

enum Item {
    Bytes(Vec<u8>),
    Column(DecodedColumn),
}

/// Each key kind always stores one kind of item; a mismatch is a bug, reported as an
/// error naming `what` rather than a panic.
impl Item {
    fn bytes(&self, what: &str) -> Result<&[u8]> {
        match self {
            Item::Bytes(b) => Ok(b),
            Item::Column(_) => Err(Error::corrupt(what, "the cache holds a column, not bytes")),
        }
    }

    fn column(&self, what: &str) -> Result<&DecodedColumn> {
        match self {
            Item::Column(c) => Ok(c),
            Item::Bytes(_) => Err(Error::corrupt(what, "the cache holds bytes, not a column")),
        }
    }
}

impl Weigh for Item {
    fn weight(&self) -> u64 {
        64 + match self {
            Item::Bytes(b) => b.len() as u64,
            Item::Column(c) => {
                let values = match &c.values {
                    Values::Fixed { bytes, .. } => bytes.len(),
                    Values::Var { offsets, bytes } => bytes.len() + offsets.len() * 8,
                };
                (values + c.validity.len() + c.timezone.as_ref().map_or(0, Vec::len)) as u64
            }
        }
    }
}

/// A node of a Filo tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Node {
    Root,
    /// `fragment.json`.
    Json,
    /// The folder of column `c`.
    Column(usize),
    /// A file of column `c`.
    File(usize, FiloFile),
}

impl Node {
    fn kind(self) -> Kind {
        match self {
            Node::Root | Node::Column(_) => Kind::Dir,
            Node::Json | Node::File(..) => Kind::File,
        }
    }
}

pub struct FiloTree {
    /// Where the column files are: a fragment folder, or the folder of a lone chunk.
    store: Arc<dyn Store>,
    /// What the tree shows, for messages: the folder, or the lone chunk file.
    source: String,
    manifest: Manifest,
    cache: Cache<Key, Item>,
    nodes: NodeTable<Node>,
}

impl FiloTree {
    /// A fragment folder (the root of `store`) with its `filo_fragment.json`.
    pub fn open_fragment(store: Arc<dyn Store>, cache_size: u64) -> Result<FiloTree> {
        let manifest = parse_manifest(&store.read_all(MANIFEST_FILE)?)
            .map_err(|e| Error::filo(MANIFEST_FILE, e))?;
        Ok(FiloTree {
            source: store.location(),
            store,
            manifest,
            cache: Cache::new(cache_size),
            nodes: NodeTable::new(Node::Root),
        })
    }

    /// A lone chunk file `file` of `store`, of a known column type: one column named
    /// after the file.
    pub fn open_chunk(
        store: Arc<dyn Store>,
        file: &str,
        column_type: ColumnType,
        version: FormatVersion,
        cache_size: u64,
    ) -> Result<FiloTree> {
        let name = match file.rsplit_once('.') {
            Some((stem, _)) if !stem.is_empty() => stem.to_string(),
            _ if !file.is_empty() => file.to_string(),
            _ => "column".to_string(),
        };
        let bytes = store.read_all(file)?;
        let column = ManifestColumn {
            name,
            column_type,
            file: file.to_string(),
            format_version: version,
        };
        let rows = crate::filo::decode_vector_with(&bytes, column_type, &column.decode_options())
            .map_err(|e| Error::filo(file, e))?
            .length;
        Ok(FiloTree {
            source: crate::storage::join(&store.location(), file),
            store,
            manifest: Manifest {
                format_version: version,
                num_rows: rows,
                columns: vec![column],
            },
            cache: Cache::new(cache_size),
            nodes: NodeTable::new(Node::Root),
        })
    }

    fn column(&self, c: usize) -> Result<&ManifestColumn> {
        self.manifest
            .columns
            .get(c)
            .ok_or_else(|| Error::NotFound(format!("column #{c}")))
    }

    /// `column id, id.filo`: where every error about a column happens.
    fn place(&self, c: &ManifestColumn) -> Place {
        Place::file(c.file.as_str()).detail(format!("column {}", c.name))
    }

    fn chunk(&self, c: usize) -> Result<Arc<Item>> {
        let column = self.column(c)?;
        self.cache.get_or_load(Key::Chunk(c), || {
            self.store.read_all(&column.file).map(Item::Bytes)
        })
    }

    fn decoded(&self, c: usize) -> Result<Arc<Item>> {
        let column = self.column(c)?;
        self.cache.get_or_load(Key::Decoded(c), || {
            let chunk = self.chunk(c)?;
            let bytes = chunk.bytes("filo, a chunk")?;
            self.manifest
                .decode_column(column, bytes)
                .map(Item::Column)
                .map_err(|e| Error::filo(self.place(column), e))
        })
    }

    fn with_decoded<T>(&self, c: usize, f: impl FnOnce(&DecodedColumn) -> T) -> Result<T> {
        let item = self.decoded(c)?;
        Ok(f(item.column("filo, a decoded column")?))
    }

    fn rows(&self) -> u64 {
        self.manifest.num_rows
    }

    /// Bytes `[offset, offset + len)` of a file other than numeric `values.bin`, and the
    /// file's total size. Only the requested part is copied out of the decoded column.
    fn built(&self, c: usize, file: FiloFile, offset: u64, len: u64) -> Result<(Vec<u8>, u64)> {
        let column = self.column(c)?;
        let part = |bytes: &[u8]| (slice(bytes, offset, len).to_vec(), bytes.len() as u64);
        match file {
            FiloFile::Values => self.with_decoded(c, |d| match &d.values {
                Values::Fixed { bytes, .. } | Values::Var { bytes, .. } => part(bytes),
            }),
            FiloFile::Offsets => self.with_decoded(c, |d| match &d.values {
                Values::Var { offsets, .. } => {
                    let total = offsets.len() as u64 * 8;
                    let end = offset.saturating_add(len).min(total);
                    let first = (offset / 8).min(offsets.len() as u64) as usize;
                    let last = end.div_ceil(8).min(offsets.len() as u64) as usize;
                    let rows: Vec<u8> = offsets[first..last.max(first)]
                        .iter()
                        .flat_map(|o| o.to_le_bytes())
                        .collect();
                    let skip = (offset - first as u64 * 8).min(rows.len() as u64);
                    (
                        slice(&rows, skip, end.saturating_sub(offset)).to_vec(),
                        total,
                    )
                }
                Values::Fixed { .. } => (Vec::new(), 0),
            }),
            FiloFile::Validity => self.with_decoded(c, |d| part(&d.validity)),
            FiloFile::Timezone => self.with_decoded(c, |d| {
                let zones = d.timezone.as_deref().unwrap_or_default();
                let total = zones.len() as u64;
                let from = offset.min(total) as usize;
                let to = offset.saturating_add(len).min(total) as usize;
                (zones[from..to].iter().map(|&q| q as u8).collect(), total)
            }),
            FiloFile::Npy => {
                let header = npy::header(datatype(column.column_type), 1, self.rows());
                let h = header.len() as u64;
                let values_len = self.file_size(c, FiloFile::Values)?;
                let end = offset.saturating_add(len).min(h + values_len);
                let mut out = slice(&header, offset, len).to_vec();
                if end > h {
                    let from = offset.max(h) - h;
                    out.extend(self.read_values(c, from, end - h - from)?);
                }
                Ok((out, h + values_len))
            }
            FiloFile::Text => {
                let item = self.cache.get_or_load(Key::Text(c), || {
                    self.with_decoded(c, |d| Item::Bytes(render_text(d, column.column_type)))
                })?;
                Ok(part(item.bytes("filo, a column's text")?))
            }
        }
    }

    /// `values.bin`: numeric columns row by row from the chunk, strings decoded.
    fn read_values(&self, c: usize, offset: u64, len: u64) -> Result<Vec<u8>> {
        let column = self.column(c)?;
        if column.column_type.elem_size().is_none() {
            return self
                .built(c, FiloFile::Values, offset, len)
                .map(|(bytes, _)| bytes);
        }
        let chunk = self.chunk(c)?;
        let bytes = chunk.bytes("filo, a chunk")?;
        let layout = fixed_layout_with(bytes, column.column_type, &column.decode_options())
            .map_err(|e| Error::filo(self.place(column), e))?
            .ok_or_else(|| Error::corrupt(self.place(column), "no fixed layout"))?;
        self.manifest
            .check_rows(column, layout.rows())
            .map_err(|e| Error::filo(self.place(column), e))?;
        let size = layout.values_len();
        let end = offset.saturating_add(len).min(size);
        if offset >= end {
            return Ok(Vec::new());
        }
        let mut out = vec![0u8; (end - offset) as usize];
        let n = layout.read_values_at(offset, &mut out);
        out.truncate(n);
        Ok(out)
    }

    fn fragment_json(&self) -> Result<Vec<u8>> {
        let item = self.cache.get_or_load(Key::Json, || {
            let columns = self
                .manifest
                .columns
                .iter()
                .enumerate()
                .map(|(c, col)| {
                    let meta = self.with_decoded(c, |d| d.metadata_json())?;
                    Ok(json!({
                        "name": col.name,
                        "type": col.column_type.name(),
                        "file": col.file,
                        "format_version": col.format_version.name(),
                        "vector": meta,
                    }))
                })
                .collect::<Result<Vec<Value>>>()?;
            let doc = json!({
                "source": self.source,
                "format": "filo",
                "format_version": self.manifest.format_version.name(),
                "rows": self.rows(),
                "columns": columns,
            });
            Ok(Item::Bytes(super::tiledb::json::to_bytes(&doc)))
        })?;
        Ok(item.bytes("filo, fragment.json")?.to_vec())
    }

    fn file_size(&self, c: usize, file: FiloFile) -> Result<u64> {
        let column = self.column(c)?;
        let rows = self.rows();
        Ok(match (file, column.column_type.elem_size()) {
            // The manifest's row count is only a claim: sizes saturate, reads check it.
            (FiloFile::Values, Some(size)) => rows.saturating_mul(size as u64),
            (FiloFile::Npy, Some(size)) => {
                (npy::header(datatype(column.column_type), 1, rows).len() as u64)
                    .saturating_add(rows.saturating_mul(size as u64))
            }
            (FiloFile::Validity | FiloFile::Timezone, _) => rows,
            (FiloFile::Offsets, _) => rows.saturating_mul(8),
            // Var-size values and text: known once built.
            (FiloFile::Values | FiloFile::Npy, None) | (FiloFile::Text, _) => {
                self.built(c, file, 0, 0)?.1
            }
        })
    }
}

/// One row per line, NULL for NA, as `values.txt` of TileDB fields.
fn render_text(d: &DecodedColumn, t: ColumnType) -> Vec<u8> {
    let mut out = Vec::new();
    for row in 0..d.length as usize {
        if d.validity.get(row) == Some(&1) {
            text::cell(&mut out, datatype(t), d.values.row(row).unwrap_or_default());
        } else {
            out.extend_from_slice(text::NULL.as_bytes());
        }
        out.push(b'\n');
    }
    out
}

impl FiloTree {
    fn node(&self, ino: Ino) -> Result<Node> {
        self.nodes
            .node(ino)
            .ok_or_else(|| Error::NotFound(format!("inode {ino}")))
    }

    fn list_nodes(&self, dir: Node) -> Result<Vec<(String, Node)>> {
        match dir {
            Node::Root => {
                let mut out = vec![("fragment.json".to_string(), Node::Json)];
                for (c, col) in self.manifest.columns.iter().enumerate() {
                    out.push((names::encode(&col.name), Node::Column(c)));
                }
                Ok(out)
            }
            Node::Column(c) => {
                let t = self.column(c)?.column_type;
                Ok(FiloFile::ALL
                    .into_iter()
                    .filter(|f| f.applies_to(t))
                    .map(|f| (f.name().to_string(), Node::File(c, f)))
                    .collect())
            }
            Node::Json | Node::File(..) => Err(Error::NotDirectory(self.describe(dir))),
        }
    }

    /// How a node is named in a message: its path in the fragment folder.
    fn describe(&self, node: Node) -> String {
        let column = |c: usize| match self.manifest.columns.get(c) {
            Some(col) => names::encode(&col.name),
            None => format!("column #{c}"),
        };
        match node {
            Node::Root => "the fragment folder".to_string(),
            Node::Json => "fragment.json".to_string(),
            Node::Column(c) => column(c),
            Node::File(c, f) => format!("{}/{}", column(c), f.name()),
        }
    }

    fn node_size(&self, node: Node) -> Result<u64> {
        match node {
            Node::Json => Ok(self.fragment_json()?.len() as u64),
            Node::File(c, f) if f.applies_to(self.column(c)?.column_type) => self.file_size(c, f),
            Node::Root | Node::Column(_) => Ok(0),
            Node::File(..) => Err(Error::NotFound(format!(
                "{} in a Filo fragment",
                self.describe(node)
            ))),
        }
    }
}

impl FileTree for FiloTree {
    fn list(&self, dir: Ino) -> Result<Vec<Entry>> {
        Ok(self
            .list_nodes(self.node(dir)?)?
            .into_iter()
            .map(|(name, node)| Entry {
                name,
                ino: self.nodes.ino(&node),
                kind: node.kind(),
            })
            .collect())
    }

    fn lookup(&self, parent: Ino, name: &str) -> Result<Entry> {
        let parent = self.node(parent)?;
        if parent.kind() != Kind::Dir {
            return Err(Error::NotDirectory(name.to_string()));
        }
        self.list(self.nodes.ino(&parent))?
            .into_iter()
            .find(|e| e.name == name)
            .ok_or_else(|| Error::NotFound(name.to_string()))
    }

    fn stat(&self, ino: Ino) -> Result<Stat> {
        let node = self.node(ino)?;
        let (kind, size, nlink) = match node {
            Node::Root => (
                Kind::Dir,
                0,
                2 + self.manifest.columns.len().min(u32::MAX as usize - 2) as u32,
            ),
            Node::Column(c) => {
                self.column(c)?;
                (Kind::Dir, 0, 2)
            }
            Node::Json | Node::File(..) => (Kind::File, self.node_size(node)?, 1),
        };
        Ok(Stat {
            kind,
            size,
            nlink,
            mtime_ms: None,
            exact_size: true,
        })
    }

    fn size(&self, ino: Ino) -> Result<u64> {
        self.node_size(self.node(ino)?)
    }

    fn read_into(&self, ino: Ino, offset: u64, len: u64, out: &mut Vec<u8>) -> Result<()> {
        let bytes = match self.node(ino)? {
            Node::Json => slice(&self.fragment_json()?, offset, len).to_vec(),
            Node::File(c, FiloFile::Values) => self.read_values(c, offset, len)?,
            Node::File(c, f) if f.applies_to(self.column(c)?.column_type) => {
                self.built(c, f, offset, len)?.0
            }
            n @ (Node::Root | Node::Column(_)) => return Err(Error::IsDirectory(self.describe(n))),
            n @ Node::File(..) => {
                return Err(Error::NotFound(format!(
                    "{} in a Filo fragment",
                    self.describe(n)
                )))
            }
        };
        out.extend_from_slice(&bytes);
        Ok(())
    }

    fn parent(&self, ino: Ino) -> Result<Ino> {
        let parent = match self.node(ino)? {
            Node::File(c, _) => Node::Column(c),
            Node::Root | Node::Json | Node::Column(_) => Node::Root,
        };
        Ok(self.nodes.ino(&parent))
    }

    fn remember(&self, ino: Ino) -> bool {
        self.nodes.remember(ino)
    }

    fn forget(&self, ino: Ino, n: u64) {
        self.nodes.forget(ino, n)
    }

    fn lifetime(&self, _ino: Ino) -> Lifetime {
        Lifetime::Immutable
    }

    fn generation(&self) -> u64 {
        0
    }

    fn source(&self) -> String {
        self.source.clone()
    }

    fn entry_count(&self) -> u64 {
        self.manifest.columns.len() as u64
    }

    fn info(&self) -> Result<Info> {
        let sizes: std::collections::HashMap<String, u64> = self
            .store
            .list("")?
            .into_iter()
            .filter_map(|e| Some((e.name, e.size?)))
            .collect();
        let columns = self
            .manifest
            .columns
            .iter()
            .enumerate()
            .map(|(c, col)| FiloColumnInfo {
                name: col.name.clone(),
                column_type: col.column_type.name(),
                vector: self
                    .with_decoded(c, |d| d.kind.name().to_string())
                    .map_err(|e| e.to_string()),
                bytes: sizes.get(&col.file).copied().unwrap_or(0),
                file: col.file.clone(),
            })
            .collect();
        Ok(Info::Filo(FiloInfo {
            location: self.source.clone(),
            format_version: self.manifest.format_version.name(),
            rows: self.rows(),
            columns,
        }))
    }
}
