//! The derived files of a fragment: `values.npy` (a header in front of `values.bin`), and
//! the text files `values.txt` and `cells.csv`, rendered from the cells
//! ([`FieldReader::cells`](crate::read::FieldReader)).
//!
//! A text file's exact size needs every cell rendered once. That counting pass keeps only
//! where each block of cells starts in the text (8 bytes per 4096 cells), in the bounded
//! cache; a read then renders just the blocks it overlaps. So a text file of any size is
//! served in bounded memory, and listing a folder of binary files never pays for it.

use std::sync::Arc;

use super::{ArrayTree, Node};
use crate::array::fragment::FragmentId;
use crate::error::{Error, Place, Result};
use crate::read::cells::Cells;
use crate::read::{CacheKey, Cached, RawFile, ViewItem};
use crate::view::nodes::Ino;
use crate::view::{names, npy, text};

/// Cells rendered together: one cached block of text, one entry of the index.
const BLOCK_CELLS: u64 = 4096;

impl ArrayTree {
    fn text_key(&self, ino: Ino, item: ViewItem) -> CacheKey {
        CacheKey::View {
            owner: self.owner,
            file: ino,
            item,
        }
    }

    /// Whether sizing `node` needs a pass over its cells that has not run yet: listings
    /// answer such entries without a size, so `ls` of a folder never starts one.
    pub(super) fn text_size_is_costly(&self, ino: Ino, node: &Node) -> bool {
        matches!(node, Node::Text(..) | Node::CellsCsv(_))
            && !self
                .engine
                .cache()
                .contains(&self.text_key(ino, ViewItem::TextIndex))
    }

    /// Size of `values.npy`, `values.txt` or `cells.csv`.
    pub(super) fn derived_size(&self, ino: Ino, node: &Node) -> Result<u64> {
        match node {
            Node::Npy(f, i) => {
                let header = self.npy_header(*f, *i)?;
                let values = self.with_field(*f, *i, |r| r.size(RawFile::Values))?;
                // Saturating: a corrupt cell count must not overflow (it fails on read).
                Ok(values.saturating_add(header.len() as u64))
            }
            _ => {
                let index = self.text_index(ino, node)?;
                Ok(*index.starts("a text index")?.last().unwrap_or(&0))
            }
        }
    }

    /// Appends bytes `[offset, offset + len)` of a field's `values.npy` to `out`: its
    /// header, then `values.bin` decoded straight into `out`.
    pub(super) fn npy_read_into(
        &self,
        ino: Ino,
        f: FragmentId,
        i: usize,
        offset: u64,
        len: u64,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        let end = offset
            .saturating_add(len)
            .min(self.derived_size(ino, &Node::Npy(f, i))?);
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
            self.with_field(f, i, |r| {
                r.read_into(RawFile::Values, from, end - h - from, out)
            })?;
        }
        Ok(())
    }

    /// Appends bytes `[offset, offset + len)` of `values.txt` or `cells.csv` to `out`.
    pub(super) fn text_read_into(
        &self,
        ino: Ino,
        node: &Node,
        offset: u64,
        len: u64,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        let index = self.text_index(ino, node)?;
        let starts = index.starts("a text index")?;
        let size = starts.last().copied().unwrap_or(0);
        let end = offset.saturating_add(len).min(size);
        if offset >= end {
            return Ok(());
        }
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
                .engine
                .cache()
                .get_or_load(self.text_key(ino, ViewItem::TextBlock(b as u64)), || {
                    self.render_block(node, b as u64).map(Cached::Bytes)
                })?;
            let bytes = block.bytes("a block of text")?;
            if bytes.len() as u64 != stop - start {
                return Err(Error::corrupt(
                    self.text_place(node),
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
        Ok(())
    }

    /// `fragment F, values.txt of a` or `fragment F, cells.csv`.
    fn text_place(&self, node: &Node) -> Place {
        let (f, file) = match node {
            Node::Text(f, i) => (*f, format!("values.txt of field #{i}")),
            Node::CellsCsv(f) => (*f, "cells.csv".to_string()),
            other => return Place::file(format!("{other:?}")),
        };
        match self.fragment(f) {
            Ok(fragment) => fragment.place().in_file(file),
            Err(_) => Place::file(file),
        }
    }

    pub(super) fn npy_header(&self, f: FragmentId, i: usize) -> Result<Vec<u8>> {
        let (_, meta) = self.meta(f)?;
        let field = meta
            .fields
            .get(i)
            .ok_or_else(|| Error::NotFound(format!("field #{i}")))?;
        Ok(npy::header(
            field.datatype,
            field.cell_val_num,
            meta.cell_count(),
        ))
    }

    /// Block starts and the total size of a text file, from one counting pass.
    fn text_index(&self, ino: Ino, node: &Node) -> Result<Arc<Cached>> {
        self.engine
            .cache()
            .get_or_load(self.text_key(ino, ViewItem::TextIndex), || {
                let f = match node {
                    Node::Text(f, _) | Node::CellsCsv(f) => *f,
                    other => return Err(Error::IsDirectory(format!("{other:?}"))),
                };
                let (_, meta) = self.meta(f)?;
                let blocks = meta.cell_count().div_ceil(BLOCK_CELLS);
                // Grown as blocks really render: the cell count comes from metadata, and
                // a corrupt one must not reserve memory for trillions of blocks up front.
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
    fn csv_header(&self, node: &Node) -> Result<Vec<u8>> {
        let Node::CellsCsv(f) = node else {
            return Ok(Vec::new());
        };
        let (_, meta) = self.meta(*f)?;
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
    fn render_block(&self, node: &Node, b: u64) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        let first = b * BLOCK_CELLS;
        match node {
            Node::Text(f, i) => {
                let (cells, datatype) = self.with_field(*f, *i, |r| {
                    Ok((r.cells(first, BLOCK_CELLS)?, r.field.datatype))
                })?;
                let mut cell = Vec::new();
                for k in 0..cells.len() {
                    cell_text(&mut cell, &cells, k, datatype);
                    out.extend_from_slice(&cell);
                    out.push(b'\n');
                }
            }
            Node::CellsCsv(f) => {
                let (_, meta) = self.meta(*f)?;
                let columns = (0..meta.fields.len())
                    .map(|i| {
                        self.with_field(*f, i, |r| {
                            Ok((r.cells(first, BLOCK_CELLS)?, r.field.datatype))
                        })
                    })
                    .collect::<Result<Vec<_>>>()?;
                let rows = columns.first().map_or(0, |(c, _)| c.len());
                let mut cell = Vec::new();
                for row in 0..rows {
                    for (k, (cells, datatype)) in columns.iter().enumerate() {
                        if k > 0 {
                            out.push(b',');
                        }
                        cell_text(&mut cell, cells, row, *datatype);
                        text::csv_field(&mut out, &cell);
                    }
                    out.push(b'\n');
                }
            }
            other => return Err(Error::IsDirectory(format!("{other:?}"))),
        }
        Ok(out)
    }
}

/// The text of cell `k` of a run into `out` (cleared first): its value, or NULL.
fn cell_text(out: &mut Vec<u8>, cells: &Cells, k: usize, datatype: crate::format::Datatype) {
    out.clear();
    if cells.is_valid(k) {
        text::cell(out, datatype, cells.value(k));
    } else {
        out.extend_from_slice(text::NULL.as_bytes());
    }
}
