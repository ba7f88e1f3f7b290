//! The derived files of the tree: `values.npy` (a header in front of `values.bin`), and
//! the text files `values.txt` and `cells.csv`.
//!
//! A text file's exact size needs every cell rendered once. That counting pass keeps only
//! where each block of cells starts in the text (8 bytes per 4096 cells), in the bounded
//! cache; a read then renders just the blocks it overlaps. So a text file of any size is
//! served in bounded memory, and listing a folder of binary files never pays for it.

use std::sync::Arc;

use super::field::{CacheKey, Cached, RawFile};
use super::{names, npy, text, Node, View};
use crate::error::{Error, Result};

/// Cells rendered together: one cached block of text, one entry of the index.
const BLOCK_CELLS: u64 = 4096;

/// The text of cells `[first, first + n)` of one field, cell by cell.
type CellTexts = Vec<Vec<u8>>;

impl View {
    /// Whether sizing `node` needs a pass over its cells that has not run yet: listings
    /// answer such entries without a size, so `ls` of a folder never starts one.
    pub fn size_is_costly(&self, node: Node) -> bool {
        matches!(node, Node::Text(..) | Node::CellsCsv(_))
            && !self.cache.contains(&CacheKey::TextIndex(node))
    }

    /// Size of `values.npy`, `values.txt` or `cells.csv`.
    pub(super) fn derived_size(&self, node: Node) -> Result<u64> {
        match node {
            Node::Npy(f, i) => {
                let header = self.npy_header(f, i)?;
                let values = self.size(Node::Raw(f, i, RawFile::Values))?;
                // Saturating: a corrupt cell count must not overflow (it fails on read).
                Ok(values.saturating_add(header.len() as u64))
            }
            _ => {
                let index = self.text_index(node)?;
                Ok(*index.starts("view, a text index")?.last().unwrap_or(&0))
            }
        }
    }

    /// Appends bytes `[offset, offset + len)` of a field's `values.npy` to `out`: its
    /// header, then `values.bin` decoded straight into `out`.
    pub(super) fn npy_read_into(
        &self,
        f: usize,
        i: usize,
        offset: u64,
        len: u64,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        let end = offset
            .saturating_add(len)
            .min(self.derived_size(Node::Npy(f, i))?);
        let header = self.npy_header(f, i)?;
        let h = header.len() as u64;
        if offset < h {
            out.extend_from_slice(
                header
                    .get(offset as usize..end.min(h) as usize)
                    .unwrap_or_default(),
            );
        }
        if end > h {
            let from = offset.max(h) - h;
            self.read_into(Node::Raw(f, i, RawFile::Values), from, end - h - from, out)?;
        }
        Ok(())
    }

    /// Bytes `[offset, offset + len)` of `values.npy`, `values.txt` or `cells.csv`.
    pub(super) fn derived_read(&self, node: Node, offset: u64, len: u64) -> Result<Vec<u8>> {
        let end = offset.saturating_add(len).min(self.derived_size(node)?);
        if offset >= end {
            return Ok(Vec::new());
        }
        if let Node::Npy(f, i) = node {
            let mut out = Vec::new();
            self.npy_read_into(f, i, offset, end - offset, &mut out)?;
            return Ok(out);
        }
        let index = self.text_index(node)?;
        let starts = index.starts("view, a text index")?;
        let mut out = Vec::with_capacity((end - offset) as usize);
        let head = starts.first().copied().unwrap_or(0);
        if offset < head {
            let header = self.csv_header(node)?;
            out.extend_from_slice(&header[offset as usize..end.min(head) as usize]);
        }
        let mut pos = offset.max(head);
        let blocks = starts.len().saturating_sub(1);
        while pos < end {
            let b = starts[..blocks]
                .partition_point(|&s| s <= pos)
                .saturating_sub(1);
            let (start, stop) = (starts[b], starts[b + 1]);
            let block = self
                .cache
                .get_or_load(CacheKey::TextBlock(node, b as u64), || {
                    self.render_block(node, b as u64).map(Cached::Bytes)
                })?;
            let bytes = block.bytes("view, a block of text")?;
            if bytes.len() as u64 != stop - start {
                return Err(Error::corrupt(
                    format!("{node:?}"),
                    format!(
                        "block {b} renders to {} bytes, it was {} when the file was sized",
                        bytes.len(),
                        stop - start
                    ),
                ));
            }
            let to = end.min(stop);
            out.extend_from_slice(&bytes[(pos - start) as usize..(to - start) as usize]);
            pos = to;
        }
        Ok(out)
    }

    pub(super) fn npy_header(&self, f: usize, i: usize) -> Result<Vec<u8>> {
        let (meta, i) = self.field(f, i)?;
        let field = &meta.fields[i];
        Ok(npy::header(
            field.datatype,
            field.cell_val_num,
            meta.cell_count(),
        ))
    }

    /// Block starts and the total size of a text file, from one counting pass.
    fn text_index(&self, node: Node) -> Result<Arc<Cached>> {
        self.cache.get_or_load(CacheKey::TextIndex(node), || {
            let f = match node {
                Node::Text(f, _) | Node::CellsCsv(f) => f,
                other => return Err(Error::IsDirectory(format!("{other:?}"))),
            };
            let cells = self.meta(f)?.cell_count();
            let blocks = cells.div_ceil(BLOCK_CELLS);
            // Grown as blocks really render: the cell count comes from metadata, and a
            // corrupt one must not reserve memory for trillions of blocks up front.
            let mut starts = Vec::new();
            let mut total = self.csv_header(node)?.len() as u64;
            for b in 0..blocks {
                starts.push(total);
                total += self.render_block(node, b)?.len() as u64;
            }
            starts.push(total);
            Ok(Cached::Starts(starts))
        })
    }

    /// `cells.csv`'s header row (names of every field); empty for `values.txt`.
    fn csv_header(&self, node: Node) -> Result<Vec<u8>> {
        let Node::CellsCsv(f) = node else {
            return Ok(Vec::new());
        };
        let meta = self.meta(f)?;
        let mut out = Vec::new();
        for (k, field) in meta.fields.iter().enumerate() {
            if k > 0 {
                out.push(b',');
            }
            text::csv_field(&mut out, names::encode(&field.name).as_bytes());
        }
        out.push(b'\n');
        Ok(out)
    }

    /// The text of block `b`: its cells one per line, or its rows of `cells.csv`.
    fn render_block(&self, node: Node, b: u64) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        match node {
            Node::Text(f, i) => {
                let cells = self.meta(f)?.cell_count();
                let first = b * BLOCK_CELLS;
                for cell in self.cell_texts(f, i, first, BLOCK_CELLS.min(cells - first))? {
                    out.extend_from_slice(&cell);
                    out.push(b'\n');
                }
            }
            Node::CellsCsv(f) => {
                let meta = self.meta(f)?;
                let first = b * BLOCK_CELLS;
                let n = BLOCK_CELLS.min(meta.cell_count() - first);
                let columns = (0..meta.fields.len())
                    .map(|i| self.cell_texts(f, i, first, n))
                    .collect::<Result<Vec<_>>>()?;
                for row in 0..n as usize {
                    for (k, column) in columns.iter().enumerate() {
                        if k > 0 {
                            out.push(b',');
                        }
                        text::csv_field(&mut out, &column[row]);
                    }
                    out.push(b'\n');
                }
            }
            other => return Err(Error::IsDirectory(format!("{other:?}"))),
        }
        Ok(out)
    }

    /// The text of cells `[first, first + n)` of field `i` of fragment `f`.
    fn cell_texts(&self, f: usize, i: usize, first: u64, n: u64) -> Result<CellTexts> {
        let (meta, i) = self.field(f, i)?;
        let field = &meta.fields[i];
        let raw = |file, offset, len| self.read_at(Node::Raw(f, i, file), offset, len);
        // Cells that do not fit what the metadata promises: named by the file holding
        // the offsets (or values) and the tile of the first cell concerned.
        let what = |cell: u64| {
            format!(
                "{}, {}, tile {}, field {}, cell {cell}",
                meta.context(),
                field.data_file(),
                cell / meta.cells_per_tile.max(1),
                field.name,
            )
        };
        let valid = if field.nullable {
            raw(RawFile::Validity, first, n)?
        } else {
            vec![1; n as usize]
        };
        let values: Vec<Vec<u8>> = if field.is_var() {
            let offsets: Vec<u64> = raw(RawFile::Offsets, first * 8, n * 8)?
                .chunks_exact(8)
                .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
                .collect();
            let total = self.size(Node::Raw(f, i, RawFile::Values))?;
            let end = if first + n < meta.cell_count() {
                let next = raw(RawFile::Offsets, (first + n) * 8, 8)?;
                u64::from_le_bytes(next.try_into().unwrap_or([0; 8]))
            } else {
                total
            };
            let base = offsets.first().copied().unwrap_or(end);
            if base > end || end > total {
                return Err(Error::corrupt(
                    what(first),
                    format!("offsets {base}..{end} out of order"),
                ));
            }
            let bytes = raw(RawFile::Values, base, end - base)?;
            let mut bounds = offsets.clone();
            bounds.push(end);
            bounds
                .windows(2)
                .zip(first..)
                .map(|(w, cell)| {
                    // Checked: a corrupt offset below the first is an error, not a panic.
                    let (from, to) = (w[0].checked_sub(base), w[1].max(w[0]).checked_sub(base));
                    from.zip(to)
                        .and_then(|(a, b)| bytes.get(a as usize..b as usize))
                        .map(<[u8]>::to_vec)
                        .ok_or_else(|| Error::corrupt(what(cell), "offsets out of order"))
                })
                .collect::<Result<_>>()?
        } else {
            let size = field.cell_size().max(1);
            let bytes = raw(RawFile::Values, first * size, n * size)?;
            bytes.chunks(size as usize).map(<[u8]>::to_vec).collect()
        };
        if values.len() != n as usize || valid.len() != n as usize {
            return Err(Error::corrupt(
                what(first),
                "fewer cells than the metadata promises",
            ));
        }
        Ok(values
            .iter()
            .zip(&valid)
            .map(|(v, &ok)| {
                let mut out = Vec::new();
                if ok == 0 {
                    out.extend_from_slice(text::NULL.as_bytes());
                } else {
                    text::cell(&mut out, field.datatype, v);
                }
                out
            })
            .collect())
    }
}
