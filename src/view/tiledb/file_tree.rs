//! [`FileTree`] for an array's tree: the questions every edge asks, answered from the
//! node an inode number names (a dimension label's nodes by the label's own tree).

use std::sync::atomic::Ordering;

use crate::error::{Error, Result};
use crate::view::entry::{Entry, Kind, Lifetime, OpenGuard, Stat};
use crate::view::file_tree::FileTree;
use crate::view::info::{ArrayInfo, Info};
use crate::view::listing::Listing;
use crate::view::mime;
use crate::view::nodes::{Ino, ROOT};
use crate::view::subtree::{self, Inside};

use super::array_tree::ArrayTree;
use super::faces::Table;
use super::node::{label_inside, FieldOf, Folder, Node, Served};

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
        match node.served() {
            Served::FolderFace(folder, id) => {
                let (at, face) = self.face(ino, folder, id);
                face.read_ahead(&at, offset, len)
            }
            Served::FieldFace(of, id) => {
                let (at, face) = self.face(ino, of, id);
                face.read_ahead(&at, offset, len)
            }
            // Rendered whole on first read, or read through as they come.
            Served::ArrayFile(_) | Served::EnumFile(..) | Served::Zarr(..) => Ok(()),
            Served::Folder | Served::Label(_) => Ok(()),
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

    fn sized_on_open(&self, ino: Ino) -> bool {
        let Ok(node) = self.node(ino) else {
            return false;
        };
        if let Some(sized) = self.in_label(&node, |t, i| Ok(t.sized_on_open(i))) {
            return sized.unwrap_or(false);
        }
        match node.served() {
            Served::FolderFace(_, id) => Folder::face(id).sized_on_open(),
            _ => false,
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
            Node::Picture(None) => Node::Root,
            Node::Picture(Some(w)) => Node::State(w),
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

    fn content_type(&self, ino: Ino, name: &str) -> &'static str {
        let Some(node) = self.nodes.node(ino) else {
            return mime::of_name(name);
        };
        if let Some(kind) = self.in_label(&node, |t, i| Ok(t.content_type(i, name))) {
            return kind.unwrap_or_else(|_| mime::of_name(name));
        }
        match node.served() {
            Served::FolderFace(_, id) => Folder::face(id).mime(),
            Served::FieldFace(_, id) => FieldOf::face(id).mime(),
            Served::Folder
            | Served::ArrayFile(_)
            | Served::EnumFile(..)
            | Served::Zarr(..)
            | Served::Label(_) => mime::of_name(name),
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

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::array::OpenOptions;
    use crate::view::file_tree::FileTree;

    use super::ArrayTree;

    /// A face's file has the media type its face declares, whatever name it is asked
    /// under; other files are typed by their name.
    #[test]
    fn media_types_come_from_the_faces() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tiledb/dense_2d");
        let tree = ArrayTree::open_path(&dir, OpenOptions::default(), 1 << 20).unwrap();
        let fragment = tree.list(tree.resolve("fragments").unwrap()).unwrap()[0]
            .name
            .clone();
        let field = tree.list(tree.resolve("latest").unwrap()).unwrap();
        // An attribute (the fields list dimensions first).
        let field = field.iter().rfind(|e| e.is_dir()).unwrap().name.clone();
        for (path, kind) in [
            ("latest/array.nc", "application/x-netcdf"),
            ("latest/array.h5", "application/x-hdf5"),
            ("latest/cells.csv", "text/csv; charset=utf-8"),
            ("latest/read.json", "application/json"),
            (
                &format!("latest/{field}/values.bin"),
                "application/octet-stream",
            ),
            (
                &format!("latest/{field}/values.npy"),
                "application/octet-stream",
            ),
            (
                &format!("latest/{field}/values.txt"),
                "text/plain; charset=utf-8",
            ),
            (
                &format!("latest/{field}/values.hdr"),
                "text/plain; charset=utf-8",
            ),
            (&format!("latest/{field}/values.tif"), "image/tiff"),
            (
                &format!("fragments/{fragment}/footer.json"),
                "application/json",
            ),
        ] {
            let ino = tree.resolve(path).unwrap();
            assert_eq!(tree.content_type(ino, "misleading.bin"), kind, "{path}");
        }
        let ino = tree.resolve("array.json").unwrap();
        assert_eq!(tree.content_type(ino, "array.json"), "application/json");
    }
}
