//! `values.txt` (one cell per line) of a field and `cells.csv` (one row per cell) of a
//! fragment or state folder: text rendered from the cells block by block
//! (`textfiles.rs`), whose size is known once the file was read to its end.

use crate::error::Result;

use super::super::array_tree::ArrayTree;
use super::super::node::{FieldOf, Folder};
use super::super::textfiles::TextFile;
use super::{At, Face};

pub(super) struct Text<P> {
    name: &'static str,
    mime: &'static str,
    /// Which text file the folder at a place holds.
    file: fn(P) -> TextFile,
}

pub(super) static VALUES_TXT: Text<FieldOf> = Text {
    name: "values.txt",
    mime: "text/plain; charset=utf-8",
    file: one_column,
};

pub(super) static CELLS_CSV: Text<Folder> = Text {
    name: "cells.csv",
    mime: "text/csv; charset=utf-8",
    file: every_column,
};

fn one_column(of: FieldOf) -> TextFile {
    TextFile {
        folder: of.folder,
        column: Some(of.index),
    }
}

fn every_column(folder: Folder) -> TextFile {
    TextFile {
        folder,
        column: None,
    }
}

impl<P: Copy> Face<P> for Text<P> {
    fn name(&self) -> &'static str {
        self.name
    }

    fn mime(&self) -> &'static str {
        self.mime
    }

    fn exists(&self, _tree: &ArrayTree, _place: P) -> Result<bool> {
        Ok(true)
    }

    fn known_size(&self, at: &At<'_, P>) -> Result<Option<u64>> {
        Ok(at.tree.known_text_size(at.ino, &(self.file)(at.place)))
    }

    fn size(&self, at: &At<'_, P>) -> Result<u64> {
        at.tree.text_size(at.ino, &(self.file)(at.place))
    }

    fn read_into(&self, at: &At<'_, P>, offset: u64, len: u64, out: &mut Vec<u8>) -> Result<()> {
        at.tree
            .text_read_into(at.ino, &(self.file)(at.place), offset, len, out)
    }

    /// Renders the blocks ahead into the cache.
    fn read_ahead(&self, at: &At<'_, P>, offset: u64, len: u64) -> Result<()> {
        let file = (self.file)(at.place);
        at.tree
            .text_read_into(at.ino, &file, offset, len, &mut Vec::new())
    }
}
