//! Inode numbers for the nodes of a tree.
//!
//! The kernel keys its dentry and page caches by inode number, and tools like `find`,
//! `du` and `tar` compare them, so a node keeps its number for as long as anyone may
//! hold it. Each tree has its own node type (a fragment's field, a file of the array at a
//! timestamp, a group member's file...) and a [`NodeTable`] of it: the first time a node
//! is shown it gets the next free number, and the table answers both ways from then on.
//! Numbers are never reused.
//!
//! What keeps the table bounded over days of uptime: the kernel counts the references it
//! holds to a number (one per lookup reply, one per `readdirplus` entry) and gives them
//! back with FORGET. The FUSE adapter mirrors those counts here ([`NodeTable::remember`],
//! [`NodeTable::forget`]). A node the kernel holds is never dropped; one it holds no
//! more (or never held: numbers handed out by a listing, or to `fragfs cat`) is *idle*,
//! and only the [`NodeTable::idle_limit`] most recently idle ones are kept, the oldest
//! going first. So the table holds the nodes the kernel has in its inode cache (which the
//! kernel bounds) plus a fixed number of idle ones, whatever the number of paths ever
//! looked up. A dropped node seen again gets a new number: nothing can still hold the
//! old one but a `readdir` listing's `d_ino`, which the kernel does not use.

use std::collections::{HashMap, VecDeque};
use std::hash::Hash;
use std::sync::RwLock;

/// An inode number.
pub type Ino = u64;

/// The root of every tree, as FUSE requires.
pub const ROOT: Ino = 1;

/// Idle nodes a table keeps by default: about 10 MiB of nodes, and more than any one
/// folder's listing needs between `opendir` and the lookups that follow it.
pub const IDLE_LIMIT: usize = 1 << 16;

#[derive(Debug)]
struct Slot<N> {
    node: N,
    /// References the kernel holds (lookups it was answered minus those it forgot).
    held: u64,
    /// When it last became idle or was last handed out idle (a tick of `Table::clock`).
    idle_since: u64,
}

#[derive(Debug)]
struct Table<N> {
    by_node: HashMap<N, Ino>,
    slots: HashMap<Ino, Slot<N>>,
    next: Ino,
    /// Ticks once per node that becomes idle or is touched while idle.
    clock: u64,
    /// Idle nodes, oldest first, as `(idle_since, ino)`; an entry whose node has been
    /// held or touched since is stale and skipped.
    idle: VecDeque<(u64, Ino)>,
    /// Nodes not held now (the root aside).
    idle_count: usize,
}

#[derive(Debug)]
pub struct NodeTable<N> {
    inner: RwLock<Table<N>>,
    idle_limit: usize,
}

impl<N: Clone + Eq + Hash> NodeTable<N> {
    /// A table whose first node, number [`ROOT`], is `root`.
    pub fn new(root: N) -> NodeTable<N> {
        NodeTable::with_idle_limit(root, IDLE_LIMIT)
    }

    /// The same, keeping at most `idle_limit` idle nodes.
    pub fn with_idle_limit(root: N, idle_limit: usize) -> NodeTable<N> {
        let slot = Slot {
            node: root.clone(),
            held: 0,
            idle_since: 0,
        };
        NodeTable {
            inner: RwLock::new(Table {
                by_node: HashMap::from([(root, ROOT)]),
                slots: HashMap::from([(ROOT, slot)]),
                next: ROOT + 1,
                clock: 0,
                idle: VecDeque::new(),
                idle_count: 0,
            }),
            idle_limit: idle_limit.max(1),
        }
    }

    /// How many idle nodes are kept.
    pub fn idle_limit(&self) -> usize {
        self.idle_limit
    }

    /// The number of `node`, handed out now if it has none yet.
    pub fn ino(&self, node: &N) -> Ino {
        {
            let table = self.read();
            if let Some(&ino) = table.by_node.get(node) {
                if !self.wants_touch(&table, ino) {
                    return ino;
                }
            }
        }
        let mut table = self.write();
        if let Some(&ino) = table.by_node.get(node) {
            // Idle and among the older half: moved to the young end, so a node in use
            // by `fragfs cat` or a walk is not the next to go.
            if self.wants_touch(&table, ino) {
                table.make_idle(ino);
            }
            return ino;
        }
        let ino = table.next;
        table.next += 1;
        table.by_node.insert(node.clone(), ino);
        table.slots.insert(
            ino,
            Slot {
                node: node.clone(),
                held: 0,
                idle_since: 0,
            },
        );
        table.idle_count += 1;
        table.make_idle(ino);
        table.evict(self.idle_limit);
        ino
    }

    /// The number of `node`, if it has one (none is handed out).
    pub fn find(&self, node: &N) -> Option<Ino> {
        self.read().by_node.get(node).copied()
    }

    /// The node numbered `ino`, if that number is in use.
    pub fn node(&self, ino: Ino) -> Option<N> {
        self.read().slots.get(&ino).map(|s| s.node.clone())
    }

    /// The kernel was handed `ino` once more. False if the number is no longer in use
    /// (it went idle and was dropped): the caller looks the node up again.
    pub fn remember(&self, ino: Ino) -> bool {
        let mut table = self.write();
        let Some(slot) = table.slots.get_mut(&ino) else {
            return false;
        };
        slot.held += 1;
        if slot.held == 1 && ino != ROOT {
            table.idle_count -= 1;
        }
        true
    }

    /// The kernel gave back `n` of its references to `ino`.
    pub fn forget(&self, ino: Ino, n: u64) {
        let mut table = self.write();
        let Some(slot) = table.slots.get_mut(&ino) else {
            return;
        };
        if slot.held == 0 {
            // Nothing held to give back (a FORGET for a number this table did not
            // count): nothing to do.
            return;
        }
        slot.held = slot.held.saturating_sub(n);
        if slot.held == 0 && ino != ROOT {
            table.idle_count += 1;
            table.make_idle(ino);
            table.evict(self.idle_limit);
        }
    }

    /// How many numbers are in use now.
    pub fn len(&self) -> usize {
        self.read().slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether idle `ino` is old enough to be moved to the young end of the idle queue
    /// (only nodes in the older half are: touching is then rare enough to be cheap).
    fn wants_touch(&self, table: &Table<N>, ino: Ino) -> bool {
        ino != ROOT
            && table.slots.get(&ino).is_some_and(|s| {
                s.held == 0
                    && table.clock.saturating_sub(s.idle_since) > (self.idle_limit / 2) as u64
            })
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Table<N>> {
        self.inner.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Table<N>> {
        self.inner.write().unwrap_or_else(|e| e.into_inner())
    }
}

impl<N: Eq + Hash> Table<N> {
    /// Puts idle `ino` at the young end of the idle queue.
    fn make_idle(&mut self, ino: Ino) {
        self.clock += 1;
        let clock = self.clock;
        if let Some(slot) = self.slots.get_mut(&ino) {
            slot.idle_since = clock;
        }
        self.idle.push_back((clock, ino));
    }

    /// Drops the oldest idle nodes beyond `limit`, and the queue's stale entries when
    /// they outnumber the live ones (so the queue stays within twice the idle nodes).
    fn evict(&mut self, limit: usize) {
        while self.idle_count > limit {
            let Some((since, ino)) = self.idle.pop_front() else {
                break;
            };
            if self.is_idle_since(ino, since) {
                if let Some(slot) = self.slots.remove(&ino) {
                    self.by_node.remove(&slot.node);
                }
                self.idle_count -= 1;
            }
        }
        if self.idle.len() > 2 * self.idle_count + 64 {
            let slots = &self.slots;
            self.idle.retain(|&(since, ino)| {
                slots
                    .get(&ino)
                    .is_some_and(|s| s.held == 0 && s.idle_since == since)
            });
        }
    }

    fn is_idle_since(&self, ino: Ino, since: u64) -> bool {
        self.slots
            .get(&ino)
            .is_some_and(|s| s.held == 0 && s.idle_since == since)
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

    /// 200,000 distinct paths looked up and forgotten (a script walking `at/1` ..
    /// `at/200000`) leave the table at its idle limit; what the kernel holds stays.
    #[test]
    fn forgotten_nodes_go_held_ones_stay_and_the_table_is_bounded() {
        let table = NodeTable::with_idle_limit(0u64, 1000);
        let held = table.ino(&7);
        assert!(table.remember(held));
        assert!(table.remember(held));
        for n in 100..200_000u64 {
            let ino = table.ino(&n);
            assert!(table.remember(ino));
            table.forget(ino, 1);
            assert!(table.len() <= 1002, "{} nodes after {n}", table.len());
        }
        assert_eq!(table.node(held), Some(7), "held twice: never dropped");
        assert_eq!(table.ino(&7), held, "and keeps its number");
        table.forget(held, 1);
        assert_eq!(table.node(held), Some(7), "still held once");
        table.forget(held, 1);
        for n in 2_000_000..2_001_000u64 {
            table.ino(&n);
        }
        assert_eq!(table.node(held), None, "idle, then the oldest: dropped");
        assert!(!table.remember(held), "a dropped number is not revived");
        assert_ne!(table.ino(&7), held, "seen again: a new number");
        assert_eq!(table.node(ROOT), Some(0), "the root stays");
        let queue = table.read().idle.len();
        assert!(queue <= 2 * 1000 + 64, "idle queue of {queue}");
    }

    /// Nodes handed out but never held (a listing, `fragfs cat`) are idle from the
    /// start; one used again is not the next to go.
    #[test]
    fn idle_nodes_go_oldest_first_and_use_keeps_them_young() {
        let table = NodeTable::with_idle_limit(0u32, 100);
        let first = table.ino(&1);
        let kept = table.ino(&2);
        for n in 3..=100u32 {
            table.ino(&n);
        }
        assert_eq!(table.len(), 101, "the root and 100 idle nodes");
        for n in 101..=160u32 {
            // `kept` is used all along, as a walk uses the folder it lists.
            assert_eq!(table.ino(&2), kept);
            table.ino(&n);
        }
        assert_eq!(table.node(first), None, "the oldest went");
        assert_eq!(table.node(kept), Some(2), "the one in use stayed");
        assert_eq!(table.len(), 101);
    }
}
