//! The chunk files of variable-length arrays (var-size strings and bytes), in the
//! encoding numcodecs' `VLenUTF8`/`VLenBytes` (a v2 filter) and zarr-python's v3
//! `vlen-utf8`/`vlen-bytes` codecs share: the number of elements in the chunk (u32,
//! little-endian), then per element, in row-major order, its length in bytes (u32) and
//! its bytes.
//!
//! A chunk's size depends on every string in it, so it is known once the chunk was
//! rendered: until then `stat` shows 0 and the mount serves the file with direct I/O,
//! as it serves the text files. A chunk is rendered a block of cells at a time, from
//! the merged reads of its cells only, keeping where each block starts (8 bytes per
//! 4096 cells): a chunk of any size is read in bounded memory.

use std::sync::Arc;

use super::place::zarr_dir;
use crate::encode::zarr::{Elements, ZDesc};
use crate::error::{Error, Place, Result};
use crate::read::cells::Cells;
use crate::read::merge::Merged;
use crate::view::cache::{OwnedKey, ViewItem, ViewKey};
use crate::view::nodes::Ino;
use crate::view::tiledb::array_tree::ArrayTree;
use crate::view::tiledb::node::When;

/// Cells rendered together: one cached block of a chunk, one entry of its index.
const BLOCK_CELLS: u64 = 4096;

/// The element count that opens a chunk.
const HEADER: u64 = 4;

/// Appends the encoding of `cells` to `out`: per cell its length (u32 LE) and bytes.
/// Strings (`utf8`) get U+FFFD in place of bytes that are not UTF-8, as Rust's and
/// Python's lossy decoders do: a reader would fail on the whole chunk otherwise. With
/// `nul_is_empty` (formats <= 5), a cell of one NUL byte is empty.
fn encode_cells(
    cells: &Cells,
    utf8: bool,
    nul_is_empty: bool,
    place: &Place,
    out: &mut Vec<u8>,
) -> Result<()> {
    for k in 0..cells.len() {
        let raw = match cells.value(k) {
            [0] if nul_is_empty => &[],
            raw => raw,
        };
        let lossy;
        let bytes = match utf8 {
            true => {
                lossy = String::from_utf8_lossy(raw);
                lossy.as_bytes()
            }
            false => raw,
        };
        let len = u32::try_from(bytes.len()).map_err(|_| {
            Error::corrupt(
                place.clone(),
                format!(
                    "a cell of {} bytes: the encoding counts in u32",
                    bytes.len()
                ),
            )
        })?;
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(bytes);
    }
    Ok(())
}

/// A chunk of a variable-length array: its state, array and chunk coordinates, and the
/// path the user sees (for messages).
pub(in crate::view::tiledb) struct VlenChunk<'a> {
    pub(in crate::view::tiledb) w: When,
    pub(in crate::view::tiledb) merged: &'a Merged,
    pub(in crate::view::tiledb) desc: &'a ZDesc,
    pub(in crate::view::tiledb) field: usize,
    pub(in crate::view::tiledb) chunk: &'a [u64],
    pub(in crate::view::tiledb) key: String,
}

impl VlenChunk<'_> {
    fn place(&self) -> Place {
        Place::file(format!(
            "{}/{}/{}",
            zarr_dir(self.w),
            self.desc.name,
            self.key
        ))
    }

    /// The chunk's element count, as its header says it (u32).
    fn header(&self) -> Result<[u8; 4]> {
        let cells = self.desc.chunk_cells();
        u32::try_from(cells).map(u32::to_le_bytes).map_err(|_| {
            Error::corrupt(
                self.place(),
                format!("{cells} cells: the encoding counts in u32"),
            )
        })
    }

    /// The encoded cells of block `b`.
    fn block(&self, b: u64) -> Result<Vec<u8>> {
        let first = b * BLOCK_CELLS;
        let n = BLOCK_CELLS.min(self.desc.chunk_cells().saturating_sub(first));
        let cells =
            self.merged
                .region_cells(self.field, &self.desc.region(self.chunk), first, n)?;
        if cells.len() as u64 != n {
            return Err(Error::corrupt(
                self.place(),
                format!("block {b} holds {} cells, not {n}", cells.len()),
            ));
        }
        let mut out = Vec::new();
        let utf8 = self.desc.ty.elements == Elements::VlenUtf8;
        encode_cells(
            &cells,
            utf8,
            self.desc.nul_is_empty,
            &self.place(),
            &mut out,
        )?;
        Ok(out)
    }
}

impl ArrayTree {
    fn chunk_key(&self, ino: Ino, key: ViewKey) -> OwnedKey {
        OwnedKey {
            owner: self.owner,
            file: ino,
            key,
        }
    }

    /// Where each block of the chunk (file `ino`) starts, and where the last ends: every
    /// block rendered once, each kept in the cache for the read that comes next.
    fn vlen_index(
        &self,
        ino: Ino,
        chunk: &VlenChunk<'_>,
        generation: u64,
    ) -> Result<Arc<ViewItem>> {
        let key = self.chunk_key(ino, ViewKey::ChunkIndex(generation));
        let index = self.caches.views.get_or_load(key, || {
            // A chunk the encoding cannot count fails here, before any cell is read
            // (so the index stays within 8 bytes per 4096 of at most 2^32 cells).
            chunk.header()?;
            let blocks = chunk.desc.chunk_cells().div_ceil(BLOCK_CELLS);
            let mut starts = vec![HEADER];
            for b in 0..blocks {
                let bytes = chunk.block(b)?;
                let end = starts.last().copied().unwrap_or(HEADER) + bytes.len() as u64;
                self.caches.views.insert(
                    self.chunk_key(ino, ViewKey::ChunkBlock(generation, b)),
                    Arc::new(ViewItem::Bytes(bytes)),
                );
                starts.push(end);
            }
            Ok(ViewItem::TextIndex {
                starts,
                complete: true,
            })
        })?;
        if let Ok((starts, _)) = index.text_index("a chunk's index") {
            if let Some(&size) = starts.last() {
                self.learn_size(ino, generation, size);
            }
        }
        Ok(index)
    }

    /// The chunk's size if it was rendered already (`None`: `stat` shows 0).
    pub(in crate::view::tiledb) fn vlen_known_size(&self, ino: Ino) -> Option<u64> {
        self.learnt_size(
            ino,
            self.generation.load(std::sync::atomic::Ordering::Acquire),
        )
    }

    /// The chunk's exact size (rendered once, if it was not yet).
    pub(in crate::view::tiledb) fn vlen_size(
        &self,
        ino: Ino,
        chunk: &VlenChunk<'_>,
    ) -> Result<u64> {
        let generation = self.generation.load(std::sync::atomic::Ordering::Acquire);
        if let Some(size) = self.learnt_size(ino, generation) {
            return Ok(size);
        }
        let index = self.vlen_index(ino, chunk, generation)?;
        Ok(index
            .text_index("a chunk's index")?
            .0
            .last()
            .copied()
            .unwrap_or(HEADER))
    }

    /// Appends bytes `[offset, offset + len)` of the chunk to `out` (fewer at its end).
    pub(in crate::view::tiledb) fn vlen_read_into(
        &self,
        ino: Ino,
        chunk: &VlenChunk<'_>,
        offset: u64,
        len: u64,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        let generation = self.generation.load(std::sync::atomic::Ordering::Acquire);
        let index = self.vlen_index(ino, chunk, generation)?;
        let (starts, _) = index.text_index("a chunk's index")?;
        let size = starts.last().copied().unwrap_or(HEADER);
        let end = offset.saturating_add(len).min(size);
        if offset >= end {
            return Ok(());
        }
        if offset < HEADER {
            let header = chunk.header()?;
            crate::view::cache::slice_into(&header, offset, end.min(HEADER) - offset, out);
        }
        let blocks = starts.len().saturating_sub(1);
        let mut pos = offset.max(HEADER);
        while pos < end {
            let b = starts[..blocks]
                .partition_point(|&s| s <= pos)
                .saturating_sub(1);
            let (Some(&start), Some(&stop)) = (starts.get(b), starts.get(b + 1)) else {
                break;
            };
            let block = self.caches.views.get_or_load(
                self.chunk_key(ino, ViewKey::ChunkBlock(generation, b as u64)),
                || chunk.block(b as u64).map(ViewItem::Bytes),
            )?;
            let bytes = block.bytes("a block of a chunk")?;
            if bytes.len() as u64 != stop - start {
                return Err(Error::corrupt(
                    chunk.place(),
                    format!(
                        "block {b} encodes to {} bytes, it was {} when the chunk was sized",
                        bytes.len(),
                        stop - start
                    ),
                ));
            }
            let to = end.min(stop);
            crate::view::cache::slice_into(bytes, pos - start, to - pos, out);
            pos = to;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_encode_as_numcodecs_vlen_does() {
        let cells = Cells::var(0, b"ab\xffz".to_vec(), vec![0, 2, 2, 4], None);
        let place = Place::file("t");
        let mut bytes = Vec::new();
        encode_cells(&cells, false, false, &place, &mut bytes).unwrap();
        assert_eq!(
            bytes,
            [
                &[2, 0, 0, 0][..],
                b"ab",
                &[0, 0, 0, 0],
                &[2, 0, 0, 0],
                b"\xffz"
            ]
            .concat()
        );
        // Strings: what is not UTF-8 becomes U+FFFD (3 bytes).
        let mut text = Vec::new();
        encode_cells(&cells, true, false, &place, &mut text).unwrap();
        assert_eq!(
            text,
            [
                &[2, 0, 0, 0][..],
                b"ab",
                &[0, 0, 0, 0],
                &[4, 0, 0, 0],
                "\u{fffd}z".as_bytes()
            ]
            .concat()
        );
    }

    /// Formats <= 5 store an empty cell as one NUL byte: with `nul_is_empty` it is empty.
    #[test]
    fn a_nul_cell_is_empty_where_the_format_stores_empty_so() {
        let cells = Cells::var(0, b"\0ab".to_vec(), vec![0, 1, 3], None);
        let place = Place::file("t");
        let mut old = Vec::new();
        encode_cells(&cells, true, true, &place, &mut old).unwrap();
        assert_eq!(old, [&[0, 0, 0, 0][..], &[2, 0, 0, 0], b"ab"].concat());
        let mut new = Vec::new();
        encode_cells(&cells, true, false, &place, &mut new).unwrap();
        assert_eq!(
            new,
            [&[1, 0, 0, 0][..], b"\0", &[2, 0, 0, 0], b"ab"].concat()
        );
    }
}
