//! What the FUSE adapter and the CLI need of a tree of files, whatever it shows: a TileDB
//! array ([`View`]) or a Filo fragment ([`FiloView`]). Both answer from the same
//! [`Node`]s, so inode numbers, listings and reads work alike.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::filo::FiloView;
use super::{Entry, Node, Stat, View};
use crate::array::OpenOptions;
use crate::error::{Error, Result};
use crate::filo::{ColumnType, FormatVersion, MANIFEST_FILE};

pub trait FileTree: Send + Sync {
    /// The entries of a folder, in display order.
    fn list(&self, dir: Node) -> Result<Vec<Entry>>;
    /// The child `name` of folder `parent`.
    fn lookup(&self, parent: Node, name: &str) -> Result<Node>;
    /// Attributes; sizes are exact.
    fn stat(&self, node: Node) -> Result<Stat>;
    /// Exact size of a file node; 0 for folders.
    fn size(&self, node: Node) -> Result<u64>;
    /// Bytes `[offset, offset + len)` of a file (fewer at its end).
    fn read_at(&self, node: Node, offset: u64, len: u64) -> Result<Vec<u8>>;
    /// The folder holding `node` (the root is its own parent).
    fn parent(&self, node: Node) -> Node;
    /// Whether the node's content can never change while mounted.
    fn is_immutable(&self, node: Node) -> bool;
    /// Whether sizing the node needs a pass over its cells that has not run yet.
    fn size_is_costly(&self, node: Node) -> bool;
    /// Changes when the tree's listing changed (new or removed fragments).
    fn generation(&self) -> u64;
    /// The folder or file the tree shows.
    fn source(&self) -> PathBuf;
    /// How many entries `statfs` reports as files (fragments or columns).
    fn entry_count(&self) -> u64;
    /// A readable summary for `fragfs info`.
    fn info(&self) -> String;

    /// Appends bytes `[offset, offset + len)` of a file to `out`: lets a server reuse one
    /// buffer for every reply.
    fn read_into(&self, node: Node, offset: u64, len: u64, out: &mut Vec<u8>) -> Result<()> {
        out.extend_from_slice(&self.read_at(node, offset, len)?);
        Ok(())
    }

    /// Prepares, in the background of a sequential reader, what a read of the range will
    /// need (read-ahead): by default, decodes it into the cache.
    fn read_ahead(&self, node: Node, offset: u64, len: u64) -> Result<()> {
        self.read_at(node, offset, len).map(|_| ())
    }

    /// Resolves a `/`-separated path (leading `/` optional) to a node.
    fn resolve(&self, path: &str) -> Result<Node> {
        let mut node = Node::Root;
        for part in path.split('/').filter(|p| !p.is_empty() && *p != ".") {
            node = self.lookup(node, part)?;
        }
        Ok(node)
    }
}

/// How to read a lone Filo chunk file: a chunk does not record its column type (nor,
/// for one kind, the writer's version), which a fragment directory's manifest gives.
#[derive(Debug, Clone, Copy, Default)]
pub struct ChunkOptions {
    pub column_type: Option<ColumnType>,
    pub version: FormatVersion,
}

/// Opens what `path` holds: a Filo fragment directory (it has `filo_fragment.json`), a
/// lone Filo chunk (a file, with `chunk` saying its column type), or a TileDB array.
pub fn open_tree(
    path: &Path,
    options: OpenOptions,
    chunk: ChunkOptions,
    cache_size: u64,
) -> Result<Arc<dyn FileTree>> {
    let meta = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
    if meta.is_file() {
        let column_type = chunk.column_type.ok_or_else(|| {
            Error::InvalidArgument(format!(
                "{}: a file: give its Filo column type with --filo-type (one of {})",
                path.display(),
                ColumnType::ALL.map(|t| t.name()).join(", ")
            ))
        })?;
        return Ok(Arc::new(FiloView::open_file(
            path,
            column_type,
            chunk.version,
            cache_size,
        )?));
    }
    if path.join(MANIFEST_FILE).is_file() {
        return Ok(Arc::new(FiloView::open_dir(path, cache_size)?));
    }
    Ok(Arc::new(View::open(path, options, cache_size)?))
}

impl FileTree for View {
    fn list(&self, dir: Node) -> Result<Vec<Entry>> {
        View::list(self, dir)
    }
    fn lookup(&self, parent: Node, name: &str) -> Result<Node> {
        View::lookup(self, parent, name)
    }
    fn stat(&self, node: Node) -> Result<Stat> {
        View::stat(self, node)
    }
    fn size(&self, node: Node) -> Result<u64> {
        View::size(self, node)
    }
    fn read_at(&self, node: Node, offset: u64, len: u64) -> Result<Vec<u8>> {
        View::read_at(self, node, offset, len)
    }
    fn read_into(&self, node: Node, offset: u64, len: u64, out: &mut Vec<u8>) -> Result<()> {
        View::read_into(self, node, offset, len, out)
    }
    fn read_ahead(&self, node: Node, offset: u64, len: u64) -> Result<()> {
        View::read_ahead(self, node, offset, len)
    }
    fn parent(&self, node: Node) -> Node {
        View::parent(self, node)
    }
    fn is_immutable(&self, node: Node) -> bool {
        View::is_immutable(self, node)
    }
    fn size_is_costly(&self, node: Node) -> bool {
        View::size_is_costly(self, node)
    }
    fn generation(&self) -> u64 {
        View::generation(self)
    }
    fn source(&self) -> PathBuf {
        self.array().root.clone()
    }
    fn entry_count(&self) -> u64 {
        self.array().fragments.len() as u64
    }
    fn info(&self) -> String {
        crate::info::render(&self.array())
    }
}
