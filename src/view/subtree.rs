//! Trees mounted inside a tree, each at a folder of its own: a group's members (arrays
//! and nested groups), an array's dimension labels (arrays of their own). One mechanism
//! for both: the outer tree numbers every node of an inner tree in its own table, as
//! (which subtree, inner number), opens each inner tree on first visit, and hands every
//! call on such a node to the inner tree.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex};

use crate::error::Result;

use super::nodes::{Ino, NodeTable, ROOT};
use super::{Entry, FileTree, Listing};

/// A node of subtree `key`: its number `inner` there ([`ROOT`]: the subtree's folder).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Inside<K> {
    pub key: K,
    pub inner: Ino,
}

/// The subtrees opened so far, by key.
pub struct Subtrees<K> {
    open: Mutex<HashMap<K, Arc<dyn FileTree>>>,
}

impl<K> Default for Subtrees<K> {
    fn default() -> Self {
        Subtrees {
            open: Mutex::new(HashMap::new()),
        }
    }
}

impl<K: Copy + Eq + Hash> Subtrees<K> {
    /// Subtree `key`, opened by `open` on first use.
    pub fn tree(
        &self,
        key: K,
        open: impl FnOnce() -> Result<Arc<dyn FileTree>>,
    ) -> Result<Arc<dyn FileTree>> {
        if let Some(t) = self.lock().get(&key) {
            return Ok(t.clone());
        }
        let tree = open()?;
        // Two first visits may both open it; the first one in is kept.
        Ok(self.lock().entry(key).or_insert(tree).clone())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<K, Arc<dyn FileTree>>> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The outer number of `inside`, in the outer tree's `nodes`, whose node for a place
/// inside a subtree is `wrap(inside)`.
pub fn outer<K, N: Clone + Eq + Hash>(
    nodes: &NodeTable<N>,
    wrap: impl Fn(Inside<K>) -> N,
    inside: Inside<K>,
) -> Ino {
    nodes.ino(&wrap(inside))
}

/// The entries a subtree lists (or looks up), renumbered for the outer tree.
pub fn outer_entry<K: Copy, N: Clone + Eq + Hash>(
    nodes: &NodeTable<N>,
    wrap: impl Fn(Inside<K>) -> N,
    key: K,
    e: Entry,
) -> Entry {
    Entry {
        ino: outer(nodes, wrap, Inside { key, inner: e.ino }),
        ..e
    }
}

/// What an outer tree keeps of a subtree's listing: which subtree, and its own.
struct Inner<K> {
    key: K,
    listing: Listing,
}

/// [`FileTree::listing`] of folder `dir` of an outer tree that is folder `inner` of
/// subtree `key` (`tree`): the subtree's listing, kept for [`outer_listed`].
pub fn outer_listing<K: Send + Sync + 'static>(
    dir: Ino,
    key: K,
    tree: &dyn FileTree,
    inner: Ino,
) -> Result<Listing> {
    let listing = tree.listing(inner)?;
    let names = listing.names().map(|(n, k)| (n.to_string(), k)).collect();
    Ok(Listing::of_kept(dir, names, Inner { key, listing }))
}

/// [`FileTree::listed`] of a listing made by [`outer_listing`]: the subtree numbers the
/// entry, `outer` renumbers it for the outer tree. A listing of another kind is none
/// of this tree's.
pub fn outer_listed<K: Copy + Send + Sync + 'static>(
    listing: &Listing,
    i: usize,
    tree: impl Fn(K) -> Result<Arc<dyn FileTree>>,
    outer: impl Fn(K, Entry) -> Entry,
) -> Result<Entry> {
    let inner = listing.kept::<Inner<K>>().ok_or_else(|| {
        crate::error::Error::NotFound(format!("entry {i} of another tree's listing"))
    })?;
    let e = tree(inner.key)?.listed(&inner.listing, i)?;
    Ok(outer(inner.key, e))
}

/// [`FileTree::remember`] for a tree that holds subtrees: the outer number is held in
/// `nodes`, and a node inside a subtree (`inside` says which) holds its inner number
/// there too, so neither table drops what the kernel holds.
pub fn remember<K: Copy, N: Clone + Eq + Hash>(
    nodes: &NodeTable<N>,
    ino: Ino,
    inside: impl Fn(&N) -> Option<Inside<K>>,
    tree: impl Fn(K) -> Result<Arc<dyn FileTree>>,
) -> bool {
    let Some(node) = nodes.node(ino) else {
        return false;
    };
    if !nodes.remember(ino) {
        return false;
    }
    let Some(i) = inside(&node) else {
        return true;
    };
    if tree(i.key).is_ok_and(|t| t.remember(i.inner)) {
        return true;
    }
    nodes.forget(ino, 1);
    false
}

/// [`FileTree::forget`] for a tree that holds subtrees (see [`remember`]).
pub fn forget<K: Copy, N: Clone + Eq + Hash>(
    nodes: &NodeTable<N>,
    ino: Ino,
    n: u64,
    inside: impl Fn(&N) -> Option<Inside<K>>,
    tree: impl Fn(K) -> Result<Arc<dyn FileTree>>,
) {
    let Some(node) = nodes.node(ino) else {
        return;
    };
    if let Some(i) = inside(&node) {
        if let Ok(t) = tree(i.key) {
            t.forget(i.inner, n);
        }
    }
    nodes.forget(ino, n);
}

/// The node that holds a subtree's folder in the outer tree (its root's parent is the
/// outer folder that lists it, which the outer tree knows).
pub fn is_root<K>(inside: &Inside<K>) -> bool {
    inside.inner == ROOT
}
