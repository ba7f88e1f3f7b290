//! Open files outlive vacuums: a file open in a fragment that TileDB then vacuums reads on
//! with the bytes it had, as POSIX keeps an open, removed file readable. An open pins
//! the fragment (its metadata kept here, its files held open by the store) until the
//! last file open in it is closed.

use std::sync::Arc;

use crate::array::fragment::{Fragment, FragmentId, FragmentMeta};
use crate::error::{Error, Result};
use crate::storage::Pin;
use crate::view::OpenGuard;

use super::array_tree::{ArrayTree, Pinned};

impl ArrayTree {
    /// The fragment with id `id`: live, or kept for an open file after it was vacuumed.
    pub(super) fn fragment(&self, id: FragmentId) -> Result<Arc<Fragment>> {
        if let Some(f) = self.array().fragment(id) {
            return Ok(f.clone());
        }
        let pinned = self.pinned.lock().unwrap_or_else(|e| e.into_inner());
        pinned
            .get(&id)
            .map(|(f, _)| f.clone())
            .ok_or_else(|| Error::NotFound(format!("fragment #{}", id.0)))
    }

    pub(super) fn meta(&self, id: FragmentId) -> Result<(Arc<Fragment>, Arc<FragmentMeta>)> {
        let fragment = self.fragment(id)?;
        let meta = fragment.meta(&self.array().schemas)?;
        Ok((fragment, meta))
    }

    /// Keeps fragment `id` readable until the guard is dropped. Its metadata is read
    /// now, and its files pinned: whatever happens to the fragment on disk, the file
    /// reads on.
    pub(super) fn pin(&self, id: FragmentId) -> Result<OpenGuard> {
        let (fragment, _) = self.meta(id)?;
        let files = fragment.store.pin(&fragment.rel_dir)?;
        let mut pinned = self.pinned.lock().unwrap_or_else(|e| e.into_inner());
        pinned.entry(id).or_insert((fragment, 0)).1 += 1;
        Ok(Box::new(FragmentGuard {
            id,
            pinned: self.pinned.clone(),
            _files: files,
        }))
    }
}

/// What [`ArrayTree::pin`] hands out: the fragment stays readable (its metadata kept,
/// its files pinned in the store) while the file is open.
struct FragmentGuard {
    id: FragmentId,
    pinned: Pinned,
    _files: Pin,
}

impl Drop for FragmentGuard {
    fn drop(&mut self) {
        let mut pinned = self.pinned.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, count)) = pinned.get_mut(&self.id) {
            *count -= 1;
            if *count == 0 {
                pinned.remove(&self.id);
            }
        }
    }
}
