//! Inode numbers for the nodes of a tree.
//!
//! The kernel keys its dentry and page caches by inode number, and tools like `find`,
//! `du` and `tar` compare them, so a node must keep its number for the life of a mount.
//! Each tree has its own node type (a fragment's field, a file of the array at a
//! timestamp, a group member's file...) and a [`NodeTable`] of it: the first time a node
//! is shown it gets the next free number, and the table answers both ways from then on.
//! Numbers are never reused. The table grows with the nodes visited, not with the data:
//! a few dozen bytes per node listed.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::RwLock;

/// An inode number.
pub type Ino = u64;

/// The root of every tree, as FUSE requires.
pub const ROOT: Ino = 1;

#[derive(Debug)]
struct Table<N> {
    by_node: HashMap<N, Ino>,
    /// `nodes[i]` has number `i + 1`.
    nodes: Vec<N>,
}

#[derive(Debug)]
pub struct NodeTable<N> {
    inner: RwLock<Table<N>>,
}

impl<N: Clone + Eq + Hash> NodeTable<N> {
    /// A table whose first node, number [`ROOT`], is `root`.
    pub fn new(root: N) -> NodeTable<N> {
        NodeTable {
            inner: RwLock::new(Table {
                by_node: HashMap::from([(root.clone(), ROOT)]),
                nodes: vec![root],
            }),
        }
    }

    /// The number of `node`, handed out now if it has none yet.
    pub fn ino(&self, node: &N) -> Ino {
        if let Some(&ino) = self.read().by_node.get(node) {
            return ino;
        }
        let mut table = self.inner.write().unwrap_or_else(|e| e.into_inner());
        if let Some(&ino) = table.by_node.get(node) {
            return ino;
        }
        table.nodes.push(node.clone());
        let ino = table.nodes.len() as Ino;
        table.by_node.insert(node.clone(), ino);
        ino
    }

    /// The number of `node`, if it has one (none is handed out).
    pub fn find(&self, node: &N) -> Option<Ino> {
        self.read().by_node.get(node).copied()
    }

    /// The node numbered `ino`, if that number was handed out.
    pub fn node(&self, ino: Ino) -> Option<N> {
        let i = usize::try_from(ino.checked_sub(1)?).ok()?;
        self.read().nodes.get(i).cloned()
    }

    /// How many numbers were handed out.
    pub fn len(&self) -> usize {
        self.read().nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Table<N>> {
        self.inner.read().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_stable_distinct_and_answer_both_ways() {
        let table = NodeTable::new("root".to_string());
        assert_eq!(table.ino(&"root".to_string()), ROOT);
        let a = table.ino(&"a".to_string());
        let b = table.ino(&"b".to_string());
        assert_ne!(a, b);
        assert_eq!(table.ino(&"a".to_string()), a, "the same number again");
        assert_eq!(table.node(a).as_deref(), Some("a"));
        assert_eq!(table.node(b).as_deref(), Some("b"));
        assert_eq!(table.node(0), None);
        assert_eq!(table.node(99), None, "never handed out");
        assert_eq!(table.len(), 3);
    }

    #[test]
    fn concurrent_first_sights_agree_on_one_number() {
        let table = NodeTable::new(0u32);
        let numbers: Vec<Vec<Ino>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4)
                .map(|_| s.spawn(|| (1..200u32).map(|n| table.ino(&n)).collect()))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(numbers.windows(2).all(|w| w[0] == w[1]));
        assert_eq!(table.len(), 200);
    }
}
