//! Read-ahead of a fragment's field files: the stored tiles are brought into the page
//! cache and their chunk headers walked (nothing decoded) ahead of a sequential reader,
//! and at a file's end the start of the same file in the next fragment too.

use crate::array::fragment::FragmentId;
use crate::error::Result;
use crate::read::{FieldReader, RawFile};

use super::array_tree::ArrayTree;

/// How much of the next fragment's file read-ahead prepares when a sequential reader's
/// file is prepared to its end: enough to bridge the step from one file to the next,
/// after which that file's own stream takes over.
const NEXT_FRAGMENT_AHEAD: u64 = 32 << 20;

impl ArrayTree {
    /// Read-ahead of `[offset, offset + len)` of field `i`'s `raw` file in fragment `id`,
    /// and of the next fragment's when that reaches the end of the file.
    pub(super) fn read_ahead_field(
        &self,
        id: FragmentId,
        i: usize,
        raw: RawFile,
        offset: u64,
        len: u64,
    ) -> Result<()> {
        // The field's name when the range reaches the end of the file.
        let at_the_end = self.with_field(id, i, |r| {
            r.read_ahead(raw, offset, len)?;
            let size = r.size(raw)?;
            let to_the_end = offset < size && offset.saturating_add(len) >= size;
            Ok(to_the_end.then(|| r.field.name.clone()))
        })?;
        match at_the_end {
            Some(name) => self.read_ahead_next_fragment(id, &name, raw),
            None => Ok(()),
        }
    }

    /// Read-ahead has reached the end of field `name`'s `raw` file in fragment `id`: the
    /// start of the same file in the next fragment is prepared too. `cat
    /// fragments/*/a/values.bin` reads them one after the other, and without this the
    /// disk idles from the end of one file until the reader's first read of the next
    /// (cold unfiltered reads: +16%, scripts/bench/README.md).
    fn read_ahead_next_fragment(&self, id: FragmentId, name: &str, raw: RawFile) -> Result<()> {
        match self.next_fragment_field(id, name)? {
            Some((next, j)) => {
                self.with_field(next, j, |r| r.read_ahead(raw, 0, NEXT_FRAGMENT_AHEAD))
            }
            None => Ok(()),
        }
    }

    /// Field `name` of the fragment after `id`: that fragment and the field's index
    /// there, the file a sequential reader of `fragments/*/<name>/` comes to next (read
    /// ahead; its disk-cache file checked ahead). Local arrays only: on object storage
    /// the guess would read the next fragment's metadata before its first use.
    pub(super) fn next_fragment_field(
        &self,
        id: FragmentId,
        name: &str,
    ) -> Result<Option<(FragmentId, usize)>> {
        let array = self.array();
        if array.store.is_remote() {
            return Ok(None);
        }
        let Some(next) = array
            .fragments
            .iter()
            .position(|f| f.id == id)
            .and_then(|k| array.fragments.get(k + 1))
        else {
            return Ok(None);
        };
        let (_, next_meta) = self.meta(next.id)?;
        Ok(next_meta
            .fields
            .iter()
            .position(|f| f.name == name)
            .map(|j| (next.id, j)))
    }

    /// Runs `f` on a reader of field `i` of fragment `id`.
    pub(super) fn with_field<T>(
        &self,
        id: FragmentId,
        i: usize,
        f: impl FnOnce(&FieldReader<'_>) -> Result<T>,
    ) -> Result<T> {
        let (fragment, meta) = self.meta(id)?;
        let reader = self.caches.engine.field(&fragment, &meta, i)?;
        f(&reader)
    }
}
