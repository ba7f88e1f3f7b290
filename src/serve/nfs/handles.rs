//! NFS file handles of the tree's nodes, and what keeps them resolvable.
//!
//! NFS has no FORGET: a client keeps a handle as long as it likes (in its inode cache,
//! an open file, a shell's working folder) and expects it to name the same file. The
//! tree's numbers ([`crate::view::nodes`]) are never reused but may be dropped when
//! idle. So a handle is the server's instance id and a tree number, and the door holds
//! ([`FileTree::remember`]) the numbers of the `limit` handles used most recently: those
//! always resolve. An older handle still resolves while the tree keeps its number among
//! its idle ones; once the tree dropped it, the handle answers `NFS3ERR_STALE` and the
//! client looks the name up again (Linux and macOS do this by themselves for a path).
//! A handle can never name the wrong file: a number is never given to another node,
//! and a handle from an earlier run of the server (whose numbers meant other nodes)
//! carries another instance id and is stale too.
//!
//! Resolving by path instead would need the path in the handle, and NFSv3 handles hold
//! at most 64 bytes, less than many of the tree's paths.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use crate::view::{FileTree, Ino, ROOT};

/// Handles held by default: as many as the tree keeps idle numbers, so a client walking
/// a folder of 100,000 fragments keeps resolving the last 65,536 it saw.
pub const HELD: usize = 1 << 16;

/// The bytes of a handle: an instance id then the tree number, both big-endian.
pub const SIZE: usize = 16;

/// Why a handle does not resolve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unresolved {
    /// Not a handle this server makes (`NFS3ERR_BADHANDLE`).
    Bad,
    /// Made by this server once, or by an earlier run of it (`NFS3ERR_STALE`).
    Stale,
}

#[derive(Default)]
struct Lru {
    /// Number -> the tick it was last used.
    used: HashMap<Ino, u64>,
    /// Tick -> number, oldest first.
    order: BTreeMap<u64, Ino>,
    clock: u64,
}

/// The handles one door hands out.
pub struct Handles {
    tree: Arc<dyn FileTree>,
    instance: u64,
    limit: usize,
    held: Mutex<Lru>,
}

impl Handles {
    pub fn new(tree: Arc<dyn FileTree>, limit: usize) -> Handles {
        Handles {
            tree,
            instance: instance_id(),
            limit: limit.max(1),
            held: Mutex::new(Lru::default()),
        }
    }

    /// The handle of `ino`, a number the tree just answered (a lookup, a listing): held
    /// from now on, so it resolves. `None` if the tree dropped it already.
    pub fn handle(&self, ino: Ino) -> Option<[u8; SIZE]> {
        if !self.hold(ino) {
            return None;
        }
        let mut out = [0; SIZE];
        out[..8].copy_from_slice(&self.instance.to_be_bytes());
        out[8..].copy_from_slice(&ino.to_be_bytes());
        Some(out)
    }

    /// The tree number a handle names, if it still names one.
    pub fn resolve(&self, handle: &[u8]) -> Result<Ino, Unresolved> {
        let (Ok(instance), Ok(ino)) = (
            <[u8; 8]>::try_from(handle.get(..8).unwrap_or_default()),
            <[u8; 8]>::try_from(handle.get(8..).unwrap_or_default()),
        ) else {
            return Err(Unresolved::Bad);
        };
        if u64::from_be_bytes(instance) != self.instance {
            return Err(Unresolved::Stale);
        }
        let ino = u64::from_be_bytes(ino);
        if ino == 0 {
            return Err(Unresolved::Bad);
        }
        if self.hold(ino) {
            Ok(ino)
        } else {
            Err(Unresolved::Stale)
        }
    }

    /// Marks `ino` used now, holding it in the tree if it was not held; gives back the
    /// oldest beyond the limit. False if the tree no longer has the number.
    fn hold(&self, ino: Ino) -> bool {
        if ino == ROOT {
            return true;
        }
        let mut lru = self.held.lock().unwrap_or_else(|e| e.into_inner());
        lru.clock += 1;
        let now = lru.clock;
        if let Some(old) = lru.used.insert(ino, now) {
            lru.order.remove(&old);
            lru.order.insert(now, ino);
            return true;
        }
        // Under the lock, so a number is held once however many requests race to it.
        if !self.tree.remember(ino) {
            lru.used.remove(&ino);
            return false;
        }
        lru.order.insert(now, ino);
        while lru.used.len() > self.limit {
            let Some((_, oldest)) = lru.order.pop_first() else {
                break;
            };
            lru.used.remove(&oldest);
            self.tree.forget(oldest, 1);
        }
        true
    }

    /// How many numbers are held now.
    pub fn held(&self) -> usize {
        self.held
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .used
            .len()
    }
}

impl Drop for Handles {
    fn drop(&mut self) {
        let lru = self.held.get_mut().unwrap_or_else(|e| e.into_inner());
        for (&ino, _) in lru.used.iter() {
            self.tree.forget(ino, 1);
        }
    }
}

/// Differs between runs of the server (and between servers of one process), so a
/// handle from an earlier run is stale rather than the name of another node.
fn instance_id() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    h.write_u128(now);
    h.write_u32(std::process::id());
    h.write_u64(COUNT.fetch_add(1, Ordering::Relaxed));
    h.finish()
}
