//! What the views keep between reads: rendered files (JSON, headers) and the text files'
//! indexes and blocks, in a bounded cache of their own. The read layer's cache holds
//! decoded chunks only; the view layer's kinds live here, so neither layer needs to know
//! the other's items, and each checks its own kinds in one place.
//!
//! [`Caches`] is the budget of a tree (or of the trees of a group, which share it): one
//! `--cache-size`, split between the decoded chunks and the views, so the whole stays
//! within it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::cache::{Cache, Weigh};
use crate::error::{Error, Result};
use crate::read::spill::{Blob, Spill, SpillKey};
use crate::read::{ReadEngine, ResultSpill};

use super::nodes::Ino;

/// One item a view keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ViewKey {
    /// A rendered file at a generation of its tree (0 for files that never change).
    Rendered(u64),
    /// Where each block of a text file starts, at a generation.
    TextIndex(u64),
    /// The rendered text of one block of cells (generation, block).
    TextBlock(u64, u64),
    /// Where each block of a Zarr chunk of strings starts, at a generation (a
    /// [`ViewItem::TextIndex`], always complete).
    ChunkIndex(u64),
    /// The encoded bytes of one block of a Zarr chunk's cells (generation, block).
    ChunkBlock(u64, u64),
    /// A table file's (`cells.parquet`, `cells.arrow`) table and layout, at a
    /// generation (a [`ViewItem::Shared`]).
    Table(u64),
    /// What a table file's writer makes of one group's cells of one column
    /// (generation, group, column).
    TableBody(u64, u64, u64),
}

/// A view item with its owner: the tree (see [`Caches::new_owner`]) and the tree's own
/// number for the file (its inode number), so trees sharing the cache never meet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct OwnedKey {
    pub owner: u64,
    pub file: Ino,
    pub key: ViewKey,
}

pub enum ViewItem {
    Bytes(Vec<u8>),
    /// A rendered file larger than the whole view cache, kept in the spill. It weighs
    /// what its bytes would, so the view cache never keeps it (the spill does): it only
    /// passes through a load, to the readers that waited for it.
    Spilled(Arc<Blob>),
    /// Where each block of a text file starts (and, once `complete`, where the last ends):
    /// grown block by block as reads go further, so a sequential reader renders each
    /// block once and the first bytes come at once. (A Zarr chunk of strings keeps
    /// one too, built whole.)
    TextIndex {
        starts: Vec<u64>,
        complete: bool,
    },
    /// Anything else a view keeps (a table file's layout...), with what it weighs:
    /// [`ViewItem::shared`] gives it back as its own type.
    Shared {
        item: Arc<dyn std::any::Any + Send + Sync>,
        weight: u64,
    },
}

/// What an entry weighs besides its bytes.
const ENTRY_WEIGHT: u64 = 64;

impl Weigh for ViewItem {
    fn weight(&self) -> u64 {
        ENTRY_WEIGHT
            + match self {
                ViewItem::Bytes(b) => b.len() as u64,
                ViewItem::Spilled(b) => b.len(),
                ViewItem::TextIndex { starts, .. } => starts.len() as u64 * 8,
                ViewItem::Shared { weight, .. } => *weight,
            }
    }
}

/// Each key kind always stores one kind of item; these accessors check it in one place
/// and turn a mismatch (a bug, never bad data) into an error naming `what`, not a panic.
impl ViewItem {
    pub fn bytes(&self, what: &str) -> Result<&[u8]> {
        match self {
            ViewItem::Bytes(b) => Ok(b),
            ViewItem::Spilled(_) | ViewItem::TextIndex { .. } | ViewItem::Shared { .. } => {
                Err(wrong_item(what, "bytes"))
            }
        }
    }

    /// A text index: block starts, and whether the last entry is the file's end.
    pub fn text_index(&self, what: &str) -> Result<(&[u64], bool)> {
        match self {
            ViewItem::TextIndex { starts, complete } => Ok((starts, *complete)),
            ViewItem::Bytes(_) | ViewItem::Spilled(_) | ViewItem::Shared { .. } => {
                Err(wrong_item(what, "a text index"))
            }
        }
    }

    /// A shared item of type `T`.
    pub fn shared<T: Send + Sync + 'static>(&self, what: &str) -> Result<Arc<T>> {
        match self {
            ViewItem::Shared { item, .. } => item
                .clone()
                .downcast::<T>()
                .map_err(|_| wrong_item(what, std::any::type_name::<T>())),
            _ => Err(wrong_item(what, std::any::type_name::<T>())),
        }
    }
}

fn wrong_item(what: &str, wanted: &str) -> Error {
    Error::corrupt(
        what,
        format!("the view cache holds another kind of item than {wanted}"),
    )
}

pub type ViewCache = Cache<OwnedKey, ViewItem>;

/// A file rendered whole, wherever it is kept: in the view cache, or in the spill when
/// it is larger than the whole view cache. Its length is known without reading it.
pub enum Rendered {
    Memory(Arc<ViewItem>),
    Disk(Arc<Blob>),
}

impl Rendered {
    /// The file's size; `what` names it in the error a wrong item (a bug) gives.
    pub fn len(&self, what: &str) -> Result<u64> {
        Ok(match self {
            Rendered::Memory(item) => item.bytes(what)?.len() as u64,
            Rendered::Disk(blob) => blob.len(),
        })
    }

    /// Appends bytes `[offset, offset + len)` of the file (fewer at its end, none past
    /// it) to `out`.
    pub fn read_into(&self, what: &str, offset: u64, len: u64, out: &mut Vec<u8>) -> Result<()> {
        match self {
            Rendered::Memory(item) => {
                slice_into(item.bytes(what)?, offset, len, out);
                Ok(())
            }
            Rendered::Disk(blob) => blob.read_into(offset, len, out),
        }
    }
}

/// The share of the budget the views get: text blocks and rendered files are small next
/// to decoded chunks, and cheap to render again.
const VIEW_SHARE: u64 = 8;

/// The bounded caches a tree reads through: decoded chunks (the read engine) and view
/// items, within one byte budget in memory; and the spill (`read::spill`), where what
/// is larger than either goes, within as many bytes on disk.
#[derive(Clone)]
pub struct Caches {
    pub engine: Arc<ReadEngine>,
    pub views: Arc<ViewCache>,
    /// Files rendered whole since the caches were made (the views' count of work, as
    /// [`ReadEngine::chunks_decoded`] is the engine's).
    renders: Arc<AtomicU64>,
}

impl Caches {
    /// Caches within `cache_size` bytes in all in memory, and as many on disk.
    pub fn new(cache_size: u64) -> Caches {
        Caches::with_spill(cache_size, Arc::new(Spill::new(cache_size)))
    }

    /// Caches within `cache_size` bytes in memory, keeping larger results in `spill`.
    pub fn with_spill(cache_size: u64, spill: Arc<ResultSpill>) -> Caches {
        let views = cache_size / VIEW_SHARE;
        Caches {
            engine: Arc::new(ReadEngine::with_spill(cache_size - views, spill)),
            views: Arc::new(ViewCache::new(views)),
            renders: Arc::default(),
        }
    }

    /// File `file` of tree `owner` rendered whole at `generation` (0: it never changes):
    /// from the view cache, or from the spill when it is larger than the view cache; else
    /// rendered, once for all concurrent callers, and kept in whichever fits (served
    /// from memory this once when neither can keep it).
    pub fn rendered(
        &self,
        owner: u64,
        file: Ino,
        generation: u64,
        render: impl FnOnce() -> Result<Vec<u8>>,
    ) -> Result<Rendered> {
        let key = OwnedKey {
            owner,
            file,
            key: ViewKey::Rendered(generation),
        };
        let spill_key = SpillKey::Rendered {
            owner,
            file,
            generation,
        };
        let spill = self.engine.spill();
        let item = self.views.get_or_load(key, || {
            if let Some(blob) = spill.get(&spill_key) {
                return Ok(ViewItem::Spilled(blob));
            }
            let bytes = render()?;
            self.renders.fetch_add(1, Ordering::Relaxed);
            if ENTRY_WEIGHT + bytes.len() as u64 > self.views.capacity() {
                if let Some(blob) = spill.insert(spill_key, &bytes) {
                    return Ok(ViewItem::Spilled(blob));
                }
            }
            Ok(ViewItem::Bytes(bytes))
        })?;
        Ok(match &*item {
            ViewItem::Spilled(blob) => Rendered::Disk(blob.clone()),
            _ => Rendered::Memory(item),
        })
    }

    /// Files rendered whole since the caches were made.
    pub fn files_rendered(&self) -> u64 {
        self.renders.load(Ordering::Relaxed)
    }

    /// A number no other caller gets: the `owner` of a tree's view items.
    pub fn new_owner() -> u64 {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        NEXT.fetch_add(1, Ordering::Relaxed)
    }

    /// Bytes held now by both caches.
    pub fn used(&self) -> u64 {
        self.engine.cache().used() + self.views.used()
    }
}

/// Bytes `[offset, offset + len)` of `bytes` (fewer at its end, none past it): how every
/// file rendered whole is read.
pub fn slice(bytes: &[u8], offset: u64, len: u64) -> &[u8] {
    let size = bytes.len() as u64;
    let start = offset.min(size) as usize;
    let end = offset.saturating_add(len).min(size) as usize;
    &bytes[start..end]
}

/// Appends [`slice`]`(bytes, offset, len)` to `out`.
pub fn slice_into(bytes: &[u8], offset: u64, len: u64, out: &mut Vec<u8>) {
    out.extend_from_slice(slice(bytes, offset, len));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_clamp_to_the_bytes() {
        let mut out = Vec::new();
        slice_into(b"abcdef", 2, 3, &mut out);
        assert_eq!(out, b"cde");
        slice_into(b"abcdef", 4, u64::MAX, &mut out);
        assert_eq!(out, b"cdeef");
        slice_into(b"abcdef", 9, 3, &mut out);
        assert_eq!(out, b"cdeef", "past the end: nothing");
    }

    #[test]
    fn the_budget_is_split_not_doubled() {
        let caches = Caches::new(1 << 20);
        let total = caches.engine.cache().capacity() + caches.views.capacity();
        assert_eq!(total, 1 << 20);
    }
}
