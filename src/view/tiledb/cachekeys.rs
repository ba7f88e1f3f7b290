//! The names of this tree's files in the disk cache (`--cache-dir`): a fragment's files
//! by the fragment's name and the version of its metadata file (a fragment rewritten in
//! place gets new names), a merged state's files (and its Zarr) by the state's full
//! description, each with the array's identity (its canonical location). The file part
//! names the face and the field by what fixes their bytes within that scope: a field's
//! index among the fragment's (or the state's) fields is fixed by the fragment's (the
//! state's) schema, and the faces are this build's (the cache keys carry the build).

use std::collections::HashSet;

use super::array_tree::ArrayTree;
use super::node::{FieldOf, Folder, Node, Served};
use crate::storage::diskcache::{CacheKey, CacheScope};
use crate::view::tiledb::faces::{FaceId, Table};
use crate::view::Ino;

impl ArrayTree {
    pub(super) fn node_cache_key(&self, ino: Ino) -> Option<CacheKey> {
        let node = self.nodes.node(ino)?;
        if let Some(key) = self.in_label(&node, |t, i| Ok(t.cache_key(i))) {
            return key.ok().flatten();
        }
        let (folder, file) = match node.served() {
            Served::FolderFace(folder, id) => (folder, format!("face {}", Folder::face(id).name())),
            Served::FieldFace(of, id) => (of.folder, field_file(of.index, id)),
            Served::EnumFile(of, file) => (
                of.folder,
                format!("field {} enumeration {file:?}", of.index),
            ),
            Served::Zarr(w, z) if !z.is_dir() => (Folder::State(w), format!("zarr {z:?}")),
            // Folders; the array-level files, which a rescan changes; a label's nodes
            // were asked of the label's tree above.
            Served::Folder | Served::ArrayFile(_) | Served::Zarr(..) | Served::Label(_) => {
                return None
            }
        };
        self.key_in(folder, file)
    }

    /// The key of `file` (its part of the key) in `folder`: a fragment's by its name and
    /// version, a state's by its description. `None` (not cached) where the store tells
    /// no version of a fragment involved, or asking failed.
    fn key_in(&self, folder: Folder, file: String) -> Option<CacheKey> {
        let array = self.array();
        let scope = match folder {
            Folder::Fragment(id) => {
                let fragment = array.fragment(id)?;
                CacheScope::Fragment {
                    name: fragment.name.clone(),
                    version: fragment.metadata_version().ok()??,
                }
            }
            Folder::State(w) => CacheScope::State(self.state_key(w)?.to_string()),
        };
        Some(CacheKey {
            array: array.store.cache_identity(),
            scope,
            file,
            decrypted: array.options.key.is_some(),
        })
    }

    /// The key of the same field file in the next fragment (see
    /// [`crate::view::FileTree::next_cache_key`]), as read-ahead finds it
    /// ([`ArrayTree::next_fragment_field`]): a fragment's field files only.
    pub(super) fn next_node_cache_key(&self, ino: Ino) -> Option<CacheKey> {
        let Node::FieldFile(of, id) = self.nodes.node(ino)? else {
            return None;
        };
        let Folder::Fragment(fragment) = of.folder else {
            return None;
        };
        let (_, meta) = self.meta(fragment).ok()?;
        let name = &meta.fields.get(of.index)?.name;
        let (next, j) = self.next_fragment_field(fragment, name).ok()??;
        self.key_in(Folder::Fragment(next), field_file(j, id))
    }

    pub(super) fn live_fragment_names(&self) -> Vec<(String, HashSet<String>)> {
        let array = self.array();
        let names = array.fragments.iter().map(|f| f.name.clone()).collect();
        vec![(array.store.cache_identity(), names)]
    }
}

/// The file part of a field file's key: the field by its index in its folder's fields.
fn field_file(index: usize, id: FaceId) -> String {
    format!("field {index} face {}", FieldOf::face(id).name())
}
