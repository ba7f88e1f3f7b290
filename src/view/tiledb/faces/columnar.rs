//! `cells.parquet` and `cells.arrow`: a fragment's or a state's cells as a table file
//! for the table tools (DuckDB, polars, pandas, Spark, Dask), beside `cells.csv`, with
//! the same columns and rows. The writers (`encode::parquet`, `encode::arrow`) lay the
//! file out from the folder's table (`cell_table.rs`) before a value is read; a read
//! fills the range it asks for piece by piece: made bytes from the layout, raw runs
//! straight from the fields' `values.bin`, the rest from what the writer makes of one
//! group's cells of one column. So a query that reads one column decodes only that
//! column's tiles, and one that skips row groups decodes none of theirs.

use crate::encode::table::{CellsRef, Layout, Piece, Table};
use crate::encode::{arrow, parquet, value};
use crate::error::{Error, Result};
use crate::read::RawFile;

use super::super::array_tree::ArrayTree;
use super::super::cell_table::TableWriter;
use super::super::node::{FieldOf, Folder};
use super::{At, Face};

pub(super) struct Columnar {
    name: &'static str,
    mime: &'static str,
    writer: &'static (dyn TableWriter + 'static),
}

pub(super) static CELLS_PARQUET: Columnar = Columnar {
    name: "cells.parquet",
    mime: "application/vnd.apache.parquet",
    writer: &ParquetWriter,
};

pub(super) static CELLS_ARROW: Columnar = Columnar {
    name: "cells.arrow",
    mime: "application/vnd.apache.arrow.file",
    writer: &ArrowWriter,
};

struct ParquetWriter;

impl TableWriter for ParquetWriter {
    fn copies_stored(&self) -> bool {
        true
    }

    /// The Arrow schema of the same table, as pyarrow writes it into its Parquet files:
    /// pyarrow, pandas and polars restore from it what Parquet's types do not say
    /// (categoricals, durations, large strings).
    fn complete(&self, table: &mut Table) -> Result<()> {
        let schema = arrow::schema_message(table)?;
        table
            .key_value
            .push(("ARROW:schema".to_string(), value::base64(&schema)));
        Ok(())
    }

    fn layout(&self, table: &Table) -> Result<Layout> {
        parquet::layout(table)
    }

    fn body(
        &self,
        table: &Table,
        group: usize,
        column: usize,
        cells: &CellsRef<'_>,
    ) -> Result<Vec<u8>> {
        parquet::body(table, group, column, cells)
    }
}

struct ArrowWriter;

impl TableWriter for ArrowWriter {
    fn sized_without_counts(&self) -> bool {
        true
    }

    fn layout(&self, table: &Table) -> Result<Layout> {
        arrow::layout(table)
    }

    fn body(
        &self,
        table: &Table,
        group: usize,
        column: usize,
        cells: &CellsRef<'_>,
    ) -> Result<Vec<u8>> {
        arrow::body(table, group, column, cells)
    }
}

impl Columnar {
    fn field_at<'a>(&self, at: &At<'a, Folder>, column: usize) -> At<'a, FieldOf> {
        At {
            tree: at.tree,
            ino: at.ino,
            place: FieldOf::new(at.place, column),
        }
    }
}

impl Face<Folder> for Columnar {
    fn name(&self) -> &'static str {
        self.name
    }

    fn mime(&self) -> &'static str {
        self.mime
    }

    fn exists(&self, _tree: &ArrayTree, _folder: Folder) -> Result<bool> {
        Ok(true)
    }

    fn known_size(&self, at: &At<'_, Folder>) -> Result<Option<u64>> {
        at.tree.table_known_size(at.ino, at.place, self.writer)
    }

    /// A table reader seeks to the footer first: the size must be there at open.
    fn sized_on_open(&self) -> bool {
        true
    }

    fn size(&self, at: &At<'_, Folder>) -> Result<u64> {
        Ok(at.tree.laid(at.ino, at.place, self.writer)?.layout.size)
    }

    fn read_into(
        &self,
        at: &At<'_, Folder>,
        offset: u64,
        len: u64,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        let laid = at.tree.laid(at.ino, at.place, self.writer)?;
        let end = offset.saturating_add(len).min(laid.layout.size);
        let mut pos = offset;
        let mut i = laid.starts.partition_point(|&s| s <= pos).saturating_sub(1);
        while pos < end {
            let (Some(piece), Some(&start)) = (laid.layout.pieces.get(i), laid.starts.get(i))
            else {
                break;
            };
            let from = pos - start;
            let to = (end - start).min(piece.len());
            let before = out.len();
            match piece {
                Piece::Bytes(b) => {
                    out.extend_from_slice(b.get(from as usize..to as usize).unwrap_or_default())
                }
                Piece::Raw { column, range } => self.field_at(at, *column).read_raw(
                    RawFile::Values,
                    range.start + from,
                    to - from,
                    out,
                )?,
                Piece::Body {
                    group,
                    column,
                    at: body_at,
                    ..
                } => {
                    let body = at.tree.table_body(
                        at.ino,
                        at.place,
                        &laid,
                        *group,
                        *column,
                        self.writer,
                    )?;
                    let bytes = body.bytes("a table file's body")?;
                    out.extend_from_slice(
                        bytes
                            .get((body_at + from) as usize..(body_at + to) as usize)
                            .unwrap_or_default(),
                    );
                }
                Piece::Stored {
                    group,
                    column,
                    page,
                    ..
                } => {
                    let range = laid
                        .stored
                        .get(&(*group, *column))
                        .and_then(|pages| pages.get(*page))
                        .ok_or_else(|| {
                            Error::corrupt(
                                at.tree.table_place(at.place, self.name),
                                format!("group {group}, column {column}: no stored page {page}"),
                            )
                        })?;
                    let Folder::Fragment(f) = at.place else {
                        return Err(Error::corrupt(
                            at.tree.table_place(at.place, self.name),
                            "a merged state has no stored pages",
                        ));
                    };
                    at.tree.with_field(f, *column, |r| {
                        r.read_data_file_into(range.start + from, to - from, out)
                    })?;
                }
            }
            if (out.len() - before) as u64 != to - from {
                return Err(Error::corrupt(
                    at.tree.table_place(at.place, self.name),
                    format!(
                        "bytes {}..{} came out {} bytes long: the cells are not what the file was laid out from",
                        start + from,
                        start + to,
                        out.len() - before
                    ),
                ));
            }
            pos = start + to;
            i += 1;
        }
        Ok(())
    }

    /// Brings in ahead the tiles under the raw runs of the range.
    fn read_ahead(&self, at: &At<'_, Folder>, offset: u64, len: u64) -> Result<()> {
        let laid = at.tree.laid(at.ino, at.place, self.writer)?;
        let end = offset.saturating_add(len).min(laid.layout.size);
        let mut i = laid
            .starts
            .partition_point(|&s| s <= offset)
            .saturating_sub(1);
        while let (Some(piece), Some(&start)) = (laid.layout.pieces.get(i), laid.starts.get(i)) {
            if start >= end {
                break;
            }
            if let Piece::Raw { column, range } = piece {
                let from = offset.saturating_sub(start);
                let to = (end - start).min(piece.len());
                self.field_at(at, *column).read_ahead_raw(
                    RawFile::Values,
                    range.start + from,
                    to - from,
                )?;
            }
            i += 1;
        }
        Ok(())
    }
}
