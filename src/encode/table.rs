//! A folder's cells as a table, the description `cells.parquet` ([`super::parquet`]) and
//! `cells.arrow` ([`super::arrow`]) are both written from: TileDB fields as columns (the
//! datatype, values per cell, nullability and enumeration they have in TileDB), the
//! folder's cells as rows, cut into groups (Parquet row groups, Arrow record batches).
//!
//! Sans-IO like every writer: the face that serves a file gathers these facts from
//! metadata (or, where metadata lacks them, by reading the cells once) and gives the
//! cells of one group and one column as a [`CellsRef`] when a read needs them. Every
//! fact that changes a byte of the file is here, so a writer's layout (every offset,
//! every size) is fixed before a value is read.

use std::ops::Range;

use crate::format::enumeration::Enumeration;
use crate::format::schema::VAR_NUM;
use crate::format::Datatype;

/// The table: its columns, its groups of rows in order, and the file's key-value
/// metadata.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    pub columns: Vec<Column>,
    /// Group `k` holds the rows that follow those of the groups before it.
    pub groups: Vec<Group>,
    /// Key-value metadata of the file, in this order (TileDB's schema, the array's
    /// metadata, units the types could not carry...).
    pub key_value: Vec<(String, String)>,
    /// The writer's name and version (`fragfs 0.x`), for Parquet's `created_by`.
    pub created_by: String,
}

/// A column: a TileDB field as it is in TileDB.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    /// The shown name (the anonymous attribute's as `cells.csv` shows it).
    pub name: String,
    pub datatype: Datatype,
    /// Values per cell; [`VAR_NUM`] for var-size fields.
    pub cell_val_num: u32,
    pub nullable: bool,
    /// The attribute's enumeration: its cells are codes into these labels.
    pub labels: Option<Enumeration>,
}

impl Column {
    pub fn is_var(&self) -> bool {
        self.cell_val_num == VAR_NUM
    }

    /// Bytes of one cell of a fixed-size field (its `values.bin` stride); 0 for var.
    pub fn cell_size(&self) -> u64 {
        if self.is_var() {
            0
        } else {
            u64::from(self.cell_val_num) * self.datatype.size()
        }
    }
}

/// A group of consecutive rows: a row group, a record batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    pub rows: u64,
    /// One per column, in column order.
    pub chunks: Vec<Chunk>,
}

/// What one column's cells in one group are, as far as the layout depends on them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Chunk {
    /// Null cells (0 for a non-nullable field).
    pub nulls: u64,
    /// Var-size fields: the bytes of the group's cells' values (nulls included, as
    /// `values.bin` holds them); 0 for fixed-size fields.
    pub var_bytes: u64,
    /// Var-size fields: where the group's first cell's bytes start in the column's
    /// `values.bin` (the sum of the groups' `var_bytes` before it).
    pub var_start: u64,
    /// Var-size fields: the bytes the null cells among them hold (usually 0: TileDB
    /// writers give a null cell no bytes, but nothing stops one). A Parquet page holds
    /// no value for a null cell, so these bytes are not in it: its size depends on them.
    pub null_bytes: u64,
    /// Var-size fields: the non-null cells with no bytes. A Parquet list writes one
    /// level for such an empty list, none for its elements, so the level count of a
    /// var-size list depends on them.
    pub empty: u64,
    /// The smallest and largest value of the group's non-null cells, as TileDB's
    /// bytes of one value, where metadata records them.
    pub bounds: Option<Bounds>,
    /// The group's cells as stored compressed pages a writer may copy as they are
    /// (a non-nullable fixed-size field whose only filter is ZSTD or LZ4).
    pub stored: Option<Stored>,
}

/// A minimum and a maximum value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bounds {
    pub min: Vec<u8>,
    pub max: Vec<u8>,
}

/// Compressed pages as a fragment stores them, in order: copying them is a read of the
/// stored file, no decompression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    pub codec: Codec,
    pub pages: Vec<StoredPage>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Codec {
    /// One or more ZSTD frames.
    Zstd,
    /// One LZ4 block (Parquet's `LZ4_RAW`).
    Lz4,
}

/// One stored page: `compressed` bytes that decompress to `uncompressed` bytes, the
/// cells' values as `values.bin` has them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoredPage {
    pub compressed: u64,
    pub uncompressed: u64,
}

/// The cells of one column in one group, as a face reads them from the field's files:
/// the bytes `values.bin` has for them, where var cells start, and their validity.
#[derive(Debug, Clone, Copy)]
pub struct CellsRef<'a> {
    /// Fixed-size fields: the cells' values back to back. Var-size: their bytes.
    pub values: &'a [u8],
    /// Var-size fields: where each cell starts in `values`, then where the last ends
    /// (so one more entry than cells).
    pub bounds: Option<&'a [u64]>,
    /// Nullable fields: one byte per cell, 0 for null.
    pub validity: Option<&'a [u8]>,
}

impl CellsRef<'_> {
    pub fn len(&self, column: &Column) -> usize {
        match self.bounds {
            Some(b) => b.len().saturating_sub(1),
            None => (self.values.len() as u64)
                .checked_div(column.cell_size())
                .unwrap_or(0) as usize,
        }
    }

    pub fn is_empty(&self, column: &Column) -> bool {
        self.len(column) == 0
    }

    /// Whether cell `i` holds a value.
    pub fn is_valid(&self, i: usize) -> bool {
        self.validity
            .is_none_or(|v| v.get(i).is_some_and(|&b| b != 0))
    }

    /// Cell `i`'s bytes (empty out of range).
    pub fn value(&self, column: &Column, i: usize) -> &[u8] {
        match self.bounds {
            Some(b) => match (b.get(i), b.get(i + 1)) {
                (Some(&from), Some(&to)) => self
                    .values
                    .get(from as usize..to.max(from) as usize)
                    .unwrap_or_default(),
                _ => &[],
            },
            None => {
                let size = column.cell_size() as usize;
                self.values
                    .get(i * size..(i + 1) * size)
                    .unwrap_or_default()
            }
        }
    }
}

/// The label index cell value `value` of an enumerated column stands for: its code, if
/// a label has it. A code with no label (TileDB writes none, but a file may hold one)
/// is `None`, and both writers show such a cell as null: a dictionary index must point
/// at an entry.
pub fn label_index(column: &Column, value: &[u8]) -> Option<u64> {
    let labels = column.labels.as_ref()?;
    let code = crate::format::datatype::decode_int(value, column.datatype)?;
    let code = u64::try_from(code).ok()?;
    (code < labels.len() as u64).then_some(code)
}

/// The cells of `cells` a writer shows as null: the null ones, and for an enumerated
/// column those whose code has no label. The face counts them with this, where
/// metadata does not say, so the writers and the facts agree.
pub fn null_count(column: &Column, cells: &CellsRef<'_>) -> u64 {
    (0..cells.len(column))
        .filter(|&i| {
            !cells.is_valid(i)
                || (column.labels.is_some()
                    && label_index(column, cells.value(column, i)).is_none())
        })
        .count() as u64
}

/// Whether a var-size column's cells are lists of numbers (dates, times, booleans):
/// what is not bytes (strings, characters, blobs, geometries, ANY).
pub fn is_var_list(column: &Column) -> bool {
    use Datatype::*;
    let t = column.datatype;
    let bytes = t.is_string() || matches!(t, Char | Blob | GeomWkb | GeomWkt | Any);
    column.is_var() && !bytes
}

/// Whether a column's layout depends on [`Chunk::null_bytes`] or [`Chunk::empty`],
/// which no metadata records: a nullable var column, or a var list.
pub fn needs_var_counts(column: &Column) -> bool {
    column.is_var() && (column.nullable || is_var_list(column))
}

/// The bytes held by the null cells of a var-size `cells` and, for a var list, the
/// non-null cells with no bytes ([`Chunk::null_bytes`], [`Chunk::empty`]), for the
/// face to count where metadata does not say; 0 for what the layout does not depend
/// on (see [`needs_var_counts`]).
pub fn var_counts(column: &Column, cells: &CellsRef<'_>) -> (u64, u64) {
    if !column.is_var() {
        return (0, 0);
    }
    let list = is_var_list(column);
    (0..cells.len(column)).fold((0, 0), |(bytes, empty), i| {
        let n = cells.value(column, i).len() as u64;
        if !cells.is_valid(i) {
            (bytes + n, empty)
        } else {
            (bytes, empty + u64::from(list && n == 0))
        }
    })
}

/// A file laid out from a [`Table`]: what each stretch of it is made of, in file
/// order, and its size (the sum of the pieces' lengths). Both writers give one, so the
/// faces fill both the same way.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Layout {
    pub pieces: Vec<Piece>,
    pub size: u64,
}

/// A stretch of a laid-out file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// Bytes the writer made from the table alone (magic, headers, footers, padding).
    Bytes(Vec<u8>),
    /// Bytes `range` of column `column`'s `values.bin`, as they are (a fixed-size
    /// field's rows `r..s` are bytes `r * cell_size .. s * cell_size`; a var field's
    /// group is `var_start .. var_start + var_bytes`).
    Raw { column: usize, range: Range<u64> },
    /// Bytes `at .. at + len` of what the writer's `body(table, group, column, cells)`
    /// makes of the group's cells of the column (levels, encoded values, bitmaps,
    /// offsets: whatever is not raw).
    Body {
        group: usize,
        column: usize,
        at: u64,
        len: u64,
    },
    /// Stored page `page` of [`Chunk::stored`] of the column in the group, copied as
    /// the fragment stores it (`len` bytes).
    Stored {
        group: usize,
        column: usize,
        page: usize,
        len: u64,
    },
}

impl Piece {
    pub fn len(&self) -> u64 {
        match self {
            Piece::Bytes(b) => b.len() as u64,
            Piece::Raw { range, .. } => range.end.saturating_sub(range.start),
            Piece::Body { len, .. } | Piece::Stored { len, .. } => *len,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Layout {
    /// Appends made bytes (to the last piece, if it is made bytes too).
    pub fn push_bytes(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        self.size += bytes.len() as u64;
        match self.pieces.last_mut() {
            Some(Piece::Bytes(b)) => b.extend_from_slice(bytes),
            _ => self.pieces.push(Piece::Bytes(bytes.to_vec())),
        }
    }

    /// Appends any other piece (an empty one is left out).
    pub fn push(&mut self, piece: Piece) {
        if let Piece::Bytes(b) = &piece {
            let b = b.clone();
            return self.push_bytes(&b);
        }
        if !piece.is_empty() {
            self.size += piece.len();
            self.pieces.push(piece);
        }
    }
}
