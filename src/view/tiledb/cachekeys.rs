//! The names of this tree's files in the disk cache (`--cache-dir`): a fragment's files
//! by the fragment's name, a merged state's files (and its Zarr) by the state's full
//! description, each with the array's identity (its canonical location). The file part
//! names the face and the field by what fixes their bytes within that scope: a field's
//! index among the fragment's (or the state's) fields is fixed by the fragment's (the
//! state's) schema, and the faces are this build's (the cache keys carry the build).

use std::collections::HashSet;

use super::{ArrayTree, FieldOf, Folder, Node};
use crate::storage::diskcache::{CacheKey, CacheScope};
use crate::view::tiledb::faces::Table;
use crate::view::Ino;

impl ArrayTree {
    pub(super) fn node_cache_key(&self, ino: Ino) -> Option<CacheKey> {
        let node = self.nodes.node(ino)?;
        if let Some(key) = self.in_label(&node, |t, i| Ok(t.cache_key(i))) {
            return key.ok().flatten();
        }
        let (folder, file) = match &node {
            Node::FolderFile(folder, id) => (*folder, format!("face {}", Folder::face(*id).name())),
            Node::FieldFile(of, id) => (
                of.folder,
                format!("field {} face {}", of.index, FieldOf::face(*id).name()),
            ),
            Node::EnumFile(of, file) => (
                of.folder,
                format!("field {} enumeration {file:?}", of.index),
            ),
            Node::Zarr(w, z) if !z.is_dir() => (Folder::State(*w), format!("zarr {z:?}")),
            _ => return None,
        };
        let array = self.array();
        let scope = match folder {
            Folder::Fragment(id) => CacheScope::Fragment(array.fragment(id)?.name.clone()),
            Folder::State(w) => CacheScope::State(self.state_key(w).to_string()),
        };
        Some(CacheKey {
            array: array.store.cache_identity(),
            scope,
            file,
            decrypted: array.options.key.is_some(),
        })
    }

    pub(super) fn live_fragment_names(&self) -> Vec<(String, HashSet<String>)> {
        let array = self.array();
        let names = array.fragments.iter().map(|f| f.name.clone()).collect();
        vec![(array.store.cache_identity(), names)]
    }
}
