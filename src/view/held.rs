//! A file a reader of the tree holds while it reads (a door's response, an NFS READ):
//! its number kept in use ([`FileTree::remember`]: a tree drops idle numbers) and the
//! tree's open guard kept ([`FileTree::open`]: the bytes stay readable if TileDB
//! vacuums the fragment meanwhile), both given back when the reader is done.

use std::sync::Arc;

use super::{FileTree, Ino, OpenGuard};
use crate::error::{Error, Result};

pub struct Held {
    pub tree: Arc<dyn FileTree>,
    pub ino: Ino,
    _guard: Option<OpenGuard>,
}

impl Held {
    pub fn take(tree: &Arc<dyn FileTree>, ino: Ino) -> Result<Held> {
        let guard = tree.open(ino)?;
        if !tree.remember(ino) {
            // Dropped between the lookup and now: as a vanished file.
            return Err(Error::NotFound(format!("file {ino} went away")));
        }
        Ok(Held {
            tree: tree.clone(),
            ino,
            _guard: guard,
        })
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.tree.forget(self.ino, 1);
    }
}
