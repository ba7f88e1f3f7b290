//! How a file node is sized and read: a face's file through its table entry
//! (`faces/`), the array-level JSON files and `enumeration/`'s files rendered whole into
//! the view cache, `zarr/`'s files through the Zarr store; and how long the kernel may
//! keep what it learns of each node.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::MutexGuard;

use crate::error::{Error, Result};
use crate::view::cache::Rendered;
use crate::view::nodes::Ino;
use crate::view::{FileTree, Lifetime};

use super::array_tree::ArrayTree;
use super::faces::{self, At, Face, FaceId, Table};
use super::node::{ArrayFile, Node, Served};
use super::{json, zarr};

impl ArrayTree {
    /// The face a node names in the table of its kind of folder, with where it is.
    pub(super) fn face<P: Table<P> + 'static>(
        &self,
        ino: Ino,
        place: P,
        id: FaceId,
    ) -> (At<'_, P>, &'static dyn Face<P>) {
        (
            At {
                tree: self,
                ino,
                place,
            },
            P::face(id),
        )
    }

    /// The size of a file whose size may not be known without rendering it: `None`, and
    /// `stat` shows 0 (see [`Face::known_size`]).
    pub(super) fn known_size(&self, ino: Ino, node: &Node) -> Result<Option<u64>> {
        match node.served() {
            Served::FolderFace(folder, id) => {
                let (at, face) = self.face(ino, folder, id);
                face.known_size(&at)
            }
            Served::FieldFace(of, id) => {
                let (at, face) = self.face(ino, of, id);
                face.known_size(&at)
            }
            Served::Zarr(w, z) => self.zarr_known_size(ino, w, z),
            Served::Folder | Served::ArrayFile(_) | Served::EnumFile(..) | Served::Label(_) => {
                self.file_size(ino, node).map(Some)
            }
        }
    }

    /// The size of a file learnt by rendering it whole once (a text file read to its
    /// end, a Zarr chunk of strings), at a generation of the tree (0: it never changes).
    /// Learnt sizes are kept apart from the evictable cache: a size shown once must not
    /// go back to 0, or the kernel, which trusts it for files opened since, would cut
    /// their reads short.
    pub(super) fn learnt_size(&self, ino: Ino, generation: u64) -> Option<u64> {
        self.lock_learnt_sizes()
            .get(&ino)
            .filter(|(g, _)| *g == generation)
            .map(|&(_, size)| size)
    }

    /// Keeps a rendered file's size (24 bytes each), one per file: the latest
    /// generation's. Those of numbers the node table dropped (no one holds them) go
    /// whenever the map has doubled since it was last cleared: it stays within twice
    /// the files in use.
    pub(super) fn learn_size(&self, ino: Ino, generation: u64, size: u64) {
        const FLOOR: usize = 1024;
        let mut sizes = self.lock_learnt_sizes();
        if sizes.len() >= FLOOR && sizes.len() >= 2 * self.learnt_sizes_kept.load(Ordering::Relaxed)
        {
            sizes.retain(|&ino, _| self.nodes.node(ino).is_some());
            self.learnt_sizes_kept.store(sizes.len(), Ordering::Relaxed);
        }
        sizes.insert(ino, (generation, size));
    }

    fn lock_learnt_sizes(&self) -> MutexGuard<'_, HashMap<Ino, (u64, u64)>> {
        self.learnt_sizes.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The exact size of a file (0 for folders).
    pub(super) fn file_size(&self, ino: Ino, node: &Node) -> Result<u64> {
        Ok(match node.served() {
            Served::Folder | Served::Label(_) => 0,
            Served::FolderFace(folder, id) => {
                let (at, face) = self.face(ino, folder, id);
                face.size(&at)?
            }
            Served::FieldFace(of, id) => {
                let (at, face) = self.face(ino, of, id);
                face.size(&at)?
            }
            Served::Zarr(w, z) => self.zarr_size(ino, w, z)?,
            Served::ArrayFile(_) | Served::EnumFile(..) => {
                self.rendered_file(ino, node)?.len("a rendered file")?
            }
        })
    }

    /// A file rendered whole, kept at `generation` (0: it never changes; else the tree's
    /// generation, so a rescan renders it again) in the view cache, or in the spill when
    /// it is larger than the view cache (see [`Caches::rendered`]).
    ///
    /// [`Caches::rendered`]: crate::view::cache::Caches::rendered
    pub(super) fn rendered(
        &self,
        ino: Ino,
        generation: u64,
        render: impl FnOnce() -> Result<Vec<u8>>,
    ) -> Result<Rendered> {
        self.caches.rendered(self.owner, ino, generation, render)
    }

    /// The array-level JSON files and the files of `enumeration/`, rendered.
    pub(super) fn rendered_file(&self, ino: Ino, node: &Node) -> Result<Rendered> {
        let file = match node.served() {
            Served::EnumFile(of, file) => {
                return self.rendered(ino, self.generation_of(of.folder), || {
                    self.enum_file(&of, file)
                })
            }
            Served::ArrayFile(file) => file,
            Served::Folder
            | Served::FolderFace(..)
            | Served::FieldFace(..)
            | Served::Zarr(..)
            | Served::Label(_) => {
                return Err(Error::IsDirectory(format!(
                    "{} is not a rendered file",
                    self.describe(node)
                )))
            }
        };
        if let ArrayFile::Array | ArrayFile::Picture(_) = file {
            self.refresh_if_stale();
        }
        // The array-level files change with a rescan.
        self.rendered(ino, self.generation(), || {
            let array = self.array();
            let value = match file {
                ArrayFile::Array => {
                    let mut value = json::array(&array);
                    if let Some(map) = value.as_object_mut() {
                        let schema = &array.latest_schema().schema;
                        map.insert("zarr".into(), zarr::summary(schema));
                        // Then each kind of file's line, as its face says.
                        for summary in faces::summaries() {
                            map.insert(summary.key.into(), (summary.of_schema)(schema));
                        }
                    }
                    value
                }
                ArrayFile::Schema => {
                    let s = array.latest_schema();
                    json::schema(&s.name, &s.schema)
                }
                ArrayFile::SchemaNamed(name) => {
                    let s = array
                        .schemas
                        .iter()
                        .find(|s| s.name == name)
                        .ok_or_else(|| Error::NotFound(format!("schema {name}")))?;
                    json::schema(&s.name, &s.schema)
                }
                // Not JSON: the SVG of the fragments (`picture.rs`).
                ArrayFile::Picture(w) => return self.fragments_svg(w),
                ArrayFile::Metadata => json::metadata(&crate::array::metadata::load_metadata(
                    &*array.store,
                    array.options.key,
                )?),
            };
            Ok(json::to_bytes(&value))
        })
    }

    pub(super) fn node_lifetime(&self, node: &Node) -> Lifetime {
        match node.served() {
            // A face's file lives as the files of its folder do.
            Served::FolderFace(folder, _) => faces::lifetime(folder),
            Served::FieldFace(of, _) | Served::EnumFile(of, _) => faces::lifetime(of.folder),
            Served::Zarr(..) => Lifetime::Snapshot,
            // A fragment folder may be vacuumed; the folders inside it never change.
            // The other folders change with the array.
            Served::Folder => match (node, node.fragment()) {
                (Node::Fragment(_), _) | (_, None) => Lifetime::Changing,
                (_, Some(_)) => Lifetime::Immutable,
            },
            Served::ArrayFile(_) | Served::Label(_) => Lifetime::Changing,
        }
    }

    pub(super) fn read_node_into(
        &self,
        ino: Ino,
        node: &Node,
        offset: u64,
        len: u64,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        match node.served() {
            Served::FolderFace(folder, id) => {
                let (at, face) = self.face(ino, folder, id);
                face.read_into(&at, offset, len, out)
            }
            Served::FieldFace(of, id) => {
                let (at, face) = self.face(ino, of, id);
                face.read_into(&at, offset, len, out)
            }
            Served::Zarr(w, z) => self.zarr_read_into(ino, w, z, offset, len, out),
            Served::ArrayFile(_) | Served::EnumFile(..) => {
                let rendered = self.rendered_file(ino, node)?;
                rendered.read_into("a rendered file", offset, len, out)
            }
            Served::Folder | Served::Label(_) => Err(Error::IsDirectory(self.describe(node))),
        }
    }
}
