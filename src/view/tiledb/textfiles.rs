//! The text files `values.txt` (one cell per line) and `cells.csv` (one row per cell),
//! rendered from the cells ([`FieldReader::cells`](crate::read::FieldReader), or a merged
//! state's).
//!
//! A text file's exact size needs every cell rendered once, so it is not known until the
//! file was read to its end (or asked its size by `fragfs cat`/`ls`): until then `stat`
//! shows 0 and the mount serves it with direct I/O, as procfs does, and listings cost
//! metadata only. Reads render the blocks of cells they overlap, keeping where each
//! block starts in the text (8 bytes per 4096 cells): the index grows as reads go, so
//! `cat` renders each block once and its first bytes come at once; a text file of any
//! size is served in bounded memory.

use std::sync::Arc;

use super::array_tree::ArrayTree;
use super::node::state_dir;
use super::node::{FieldOf, Folder};
use crate::error::{Error, Place, Result};
use crate::format::enumeration::Enumeration;
use crate::format::Datatype;
use crate::read::cells::Cells;
use crate::view::cache::{OwnedKey, ViewItem, ViewKey};
use crate::view::nodes::Ino;
use crate::view::{names, text};

/// Cells rendered together: one cached block of text, one entry of the index.
const BLOCK_CELLS: u64 = 4096;

/// A text file: one column of a folder's cells (`values.txt`), or all of them
/// (`cells.csv`).
#[derive(Debug, Clone, Copy)]
pub(super) struct TextFile {
    pub folder: Folder,
    pub column: Option<usize>,
}

impl ArrayTree {
    fn text_key(&self, ino: Ino, key: ViewKey) -> OwnedKey {
        OwnedKey {
            owner: self.owner,
            file: ino,
            key,
        }
    }

    /// The size of a text file if it is known without rendering (it was read to its end
    /// once), else `None`: a listing or `stat` then shows 0, as procfs does for files
    /// whose size is only known by reading them. Learned sizes are kept apart from the
    /// evictable cache: a size shown once must not go back to 0, or the kernel, which
    /// trusts it for files opened since, would cut their reads short.
    pub(super) fn known_text_size(&self, ino: Ino, file: &TextFile) -> Option<u64> {
        let generation = self.generation_of(file.folder);
        if let Some(size) = self.learnt_size(ino, generation) {
            return Some(size);
        }
        let index = self
            .caches
            .views
            .peek(&self.text_key(ino, ViewKey::TextIndex(generation)))?;
        match index.text_index("a text index") {
            Ok((starts, true)) => {
                let size = starts.last().copied()?;
                self.learn_size(ino, generation, size);
                Some(size)
            }
            _ => None,
        }
    }

    /// The exact size of a text file (rendered whole once, if it was not yet).
    pub(super) fn text_size(&self, ino: Ino, file: &TextFile) -> Result<u64> {
        if let Some(size) = self.known_text_size(ino, file) {
            return Ok(size);
        }
        let generation = self.generation_of(file.folder);
        let index = self.text_index_covering(ino, file, u64::MAX, generation)?;
        Ok(*index.text_index("a text index")?.0.last().unwrap_or(&0))
    }

    /// Appends bytes `[offset, offset + len)` of a text file to `out` (fewer at the end
    /// of the file). The index grows as far as the read needs.
    pub(super) fn text_read_into(
        &self,
        ino: Ino,
        file: &TextFile,
        offset: u64,
        len: u64,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        let want_end = offset.saturating_add(len);
        let generation = self.generation_of(file.folder);
        let index = self.text_index_covering(ino, file, want_end, generation)?;
        let (starts, _) = index.text_index("a text index")?;
        let size = starts.last().copied().unwrap_or(0);
        let end = want_end.min(size);
        if offset >= end {
            return Ok(());
        }
        let head = starts.first().copied().unwrap_or(0);
        if offset < head {
            let header = self.csv_header(file)?;
            crate::view::cache::slice_into(&header, offset, end.min(head) - offset, out);
        }
        let mut pos = offset.max(head);
        let blocks = starts.len().saturating_sub(1);
        while pos < end {
            let b = starts[..blocks]
                .partition_point(|&s| s <= pos)
                .saturating_sub(1);
            let (start, stop) = (starts[b], starts[b + 1]);
            let block = self.caches.views.get_or_load(
                self.text_key(ino, ViewKey::TextBlock(generation, b as u64)),
                || self.render_block(file, b as u64).map(ViewItem::Bytes),
            )?;
            let bytes = block.bytes("a block of text")?;
            if bytes.len() as u64 != stop - start {
                return Err(Error::corrupt(
                    self.text_place(file),
                    format!(
                        "block {b} renders to {} bytes, it was {} when the file was sized",
                        bytes.len(),
                        stop - start
                    ),
                ));
            }
            let to = end.min(stop);
            // Within the block (its length was checked against the index just above).
            out.extend_from_slice(
                bytes
                    .get((pos - start) as usize..(to - start) as usize)
                    .unwrap_or_default(),
            );
            pos = to;
        }
        Ok(())
    }

    /// The text file's index, grown until it reaches byte `upto` or the end of the file.
    /// Each block rendered on the way is kept in the cache for the read that needs it;
    /// the index grows at least twofold per step, so a sequential reader copies it a
    /// few times in all, and renders each block once.
    fn text_index_covering(
        &self,
        ino: Ino,
        file: &TextFile,
        upto: u64,
        generation: u64,
    ) -> Result<Arc<ViewItem>> {
        let key = self.text_key(ino, ViewKey::TextIndex(generation));
        let covers = |c: &ViewItem| -> Result<bool> {
            let (starts, complete) = c.text_index("a text index")?;
            Ok(complete || starts.last().is_some_and(|&end| end >= upto))
        };
        let cache = &self.caches.views;
        if let Some(index) = cache.get(&key) {
            if covers(&index)? {
                return Ok(index);
            }
        }
        // One thread grows a file's index at a time; the others then find it grown.
        let lock = self.indexing.of(&ino);
        let _one = lock.lock().unwrap_or_else(|e| e.into_inner());
        let mut starts = match cache.get(&key) {
            Some(index) if covers(&index)? => return Ok(index),
            Some(index) => index.text_index("a text index")?.0.to_vec(),
            None => vec![self.csv_header(file)?.len() as u64],
        };
        let blocks = self.folder_cell_count(file.folder)?.div_ceil(BLOCK_CELLS);
        let rendered = (starts.len() - 1) as u64;
        let at_least = (rendered * 2).max(rendered + 1);
        let mut b = rendered;
        while b < blocks && (b < at_least || starts.last().is_some_and(|&end| end < upto)) {
            let text = self.render_block(file, b)?;
            let end = starts.last().copied().unwrap_or(0) + text.len() as u64;
            cache.insert(
                self.text_key(ino, ViewKey::TextBlock(generation, b)),
                Arc::new(ViewItem::Bytes(text)),
            );
            starts.push(end);
            b += 1;
        }
        if b >= blocks {
            if let Some(&size) = starts.last() {
                self.learn_size(ino, generation, size);
            }
        }
        let index = Arc::new(ViewItem::TextIndex {
            starts,
            complete: b >= blocks,
        });
        cache.insert(key, index.clone());
        Ok(index)
    }

    /// `fragment F, values.txt of field #i`, `latest/cells.csv`...
    fn text_place(&self, file: &TextFile) -> Place {
        let name = match file.column {
            Some(i) => format!("values.txt of field #{i}"),
            None => "cells.csv".to_string(),
        };
        match file.folder {
            Folder::Fragment(f) => match self.fragment(f) {
                Ok(fragment) => fragment.place().in_file(name),
                Err(_) => Place::file(name),
            },
            Folder::State(w) => Place::file(format!("{}/{name}", state_dir(w))),
        }
    }

    /// The columns of a folder's cells: shown name and datatype.
    pub(super) fn columns(&self, folder: Folder) -> Result<Vec<(String, Datatype)>> {
        Ok(match folder {
            Folder::Fragment(f) => {
                let (_, meta) = self.meta(f)?;
                meta.fields
                    .iter()
                    .map(|x| (names::encode(&x.name), x.datatype))
                    .collect()
            }
            Folder::State(w) => self
                .merged(w)?
                .fields
                .iter()
                .map(|x| (names::encode(&x.name), x.datatype))
                .collect(),
        })
    }

    /// The enumeration of column `i`, if its attribute is enumerated: its cells are shown
    /// as the labels their codes stand for.
    fn column_enumeration(&self, folder: Folder, i: usize) -> Result<Option<Arc<Enumeration>>> {
        Ok(self
            .field_enumeration(&FieldOf::new(folder, i))?
            .map(|(e, _)| e))
    }

    pub(super) fn folder_cell_count(&self, folder: Folder) -> Result<u64> {
        match folder {
            Folder::Fragment(f) => Ok(self.meta(f)?.1.cell_count()),
            Folder::State(w) => self.merged(w)?.cell_count(),
        }
    }

    pub(super) fn folder_cells(
        &self,
        folder: Folder,
        column: usize,
        first: u64,
        n: u64,
    ) -> Result<Cells> {
        match folder {
            Folder::Fragment(f) => self.with_field(f, column, |r| r.cells(first, n)),
            Folder::State(w) => self.merged(w)?.cells(column, first, n),
        }
    }

    /// `cells.csv`'s header row (names of every field); empty for `values.txt`.
    fn csv_header(&self, file: &TextFile) -> Result<Vec<u8>> {
        if file.column.is_some() {
            return Ok(Vec::new());
        }
        let mut out = Vec::new();
        for (k, (name, _)) in self.columns(file.folder)?.iter().enumerate() {
            if k > 0 {
                out.push(b',');
            }
            text::csv_field(&mut out, name.as_bytes());
        }
        out.push(b'\n');
        Ok(out)
    }

    /// The text of block `b`: its cells one per line, or its rows of `cells.csv`.
    fn render_block(&self, file: &TextFile, b: u64) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        let first = b * BLOCK_CELLS;
        let types = self.columns(file.folder)?;
        let columns: Vec<usize> = match file.column {
            Some(i) => vec![i],
            None => (0..types.len()).collect(),
        };
        let columns = columns
            .into_iter()
            .map(|i| {
                let t = types.get(i).map(|(_, t)| *t).unwrap_or(Datatype::UInt8);
                let labels = self.column_enumeration(file.folder, i)?;
                Ok((
                    self.folder_cells(file.folder, i, first, BLOCK_CELLS)?,
                    t,
                    labels,
                ))
            })
            .collect::<Result<Vec<_>>>()?;
        let rows = columns.first().map_or(0, |(c, ..)| c.len());
        let mut cell = Vec::new();
        for row in 0..rows {
            for (k, (cells, datatype, labels)) in columns.iter().enumerate() {
                if k > 0 {
                    out.push(b',');
                }
                cell_text(&mut cell, cells, row, *datatype, labels.as_deref());
                if file.column.is_some() {
                    out.extend_from_slice(&cell);
                } else {
                    text::csv_field(&mut out, &cell);
                }
            }
            out.push(b'\n');
        }
        Ok(out)
    }
}

/// The text of cell `k` of a run into `out` (cleared first): its value (the label of an
/// enumerated attribute's code), or NULL.
fn cell_text(
    out: &mut Vec<u8>,
    cells: &Cells,
    k: usize,
    datatype: Datatype,
    labels: Option<&Enumeration>,
) {
    out.clear();
    if !cells.is_valid(k) {
        out.extend_from_slice(text::NULL.as_bytes());
    } else if let Some(e) = labels {
        super::codes::label_text(out, e, datatype, cells.value(k));
    } else {
        text::cell(out, datatype, cells.value(k));
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::view::{ArrayTree, FileTree};

    /// While one text file's index grows (its lock held here, as a long render of
    /// `latest/cells.csv` holds it), another text file renders: it waits for nothing.
    /// (With one lock for every text file this read would wait for the other; the
    /// timeout only turns that hang into a failure.)
    #[test]
    fn a_text_file_rendering_does_not_stall_another() {
        let array = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/features/merge_sparse_overlap");
        let tree = std::sync::Arc::new(
            ArrayTree::open_path(&array, Default::default(), 16 << 20).unwrap(),
        );
        let slow = tree.resolve("latest/cells.csv").unwrap();
        let other = tree.resolve("latest/a/values.txt").unwrap();
        let lock = tree.indexing.of(&slow);
        let _rendering = lock.lock().unwrap();
        let (done, finished) = std::sync::mpsc::channel();
        let reader = tree.clone();
        std::thread::spawn(move || {
            let _ = done.send(reader.size(other).and_then(|n| reader.read_at(other, 0, n)));
        });
        let text = finished
            .recv_timeout(Duration::from_secs(120))
            .expect("values.txt waited for cells.csv's lock")
            .unwrap();
        assert!(text.ends_with(b"\n") && text.len() > 10);
    }
}
