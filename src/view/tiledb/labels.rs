//! `labels/`: an array's dimension labels, each an array of its own (under the folder
//! the schema names, usually `__labels/l<N>`), mounted as a subtree
//! ([`view::subtree`](crate::view::subtree)) that reads through this tree's caches.

use std::sync::Arc;

use crate::array::Array;
use crate::error::{Error, Result};
use crate::view::nodes::Ino;
use crate::view::subtree;
use crate::view::{Entry, FileTree};

use super::array_tree::ArrayTree;
use super::node::Node;

impl ArrayTree {
    /// Dimension label `l`'s tree, opened on first visit.
    pub(super) fn label_tree(&self, l: usize) -> Result<Arc<dyn FileTree>> {
        self.labels.tree(l, || {
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
            Ok(Arc::new(ArrayTree::with_caches(
                Array::open(store, array.options.clone())?,
                self.caches.clone(),
            )))
        })
    }

    /// Runs `f` on the label tree and inner number of a label's node.
    pub(super) fn in_label<T>(
        &self,
        node: &Node,
        f: impl FnOnce(&dyn FileTree, Ino) -> Result<T>,
    ) -> Option<Result<T>> {
        let Node::Label(inside) = node else {
            return None;
        };
        Some(
            self.label_tree(inside.key)
                .and_then(|t| f(&*t, inside.inner)),
        )
    }

    /// Renumbers an entry of label `l`'s tree for this tree.
    pub(super) fn label_entry(&self, l: usize, e: Entry) -> Entry {
        subtree::outer_entry(&self.nodes, Node::Label, l, e)
    }
}
