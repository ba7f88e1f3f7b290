//! `cells.parquet` (issue 43), first step: a Parquet file laid out from a [`Table`]
//! description, sans-IO. What it writes now: flat REQUIRED columns of physical type
//! INT32, INT64, FLOAT or DOUBLE, PLAIN encoded, UNCOMPRESSED, one v1 DATA_PAGE per
//! column chunk, one or more row groups, the key-value metadata and `created_by`. No
//! logical types, nulls, byte arrays, lists, dictionaries, statistics or compression
//! yet.
//!
//! The file is `PAR1`, then row group by row group and column by column a chunk (its
//! page header, then its values), then the footer (`FileMetaData` in the Thrift compact
//! protocol), the footer's length (4 bytes, little-endian) and `PAR1` again.
//!
//! [`layout`] does not make the file: it gives it as a list of [`Piece`]s, the bytes it
//! made itself (the magic, page headers, footer) and, for every column chunk, a
//! placeholder for the run of that column's rows as PLAIN little-endian values. The
//! reason is the face that serves the file: a run is exactly a byte range of the
//! column's `values.bin`, so the face can fill a read straight from there, decoding
//! only the tiles under the bytes asked for, and it knows the whole file's size (and
//! every offset the footer names) before it reads a single value. So every offset and
//! size in the footer comes from the layout, never from filling.

use std::ops::Range;

use super::thrift::{Type, Writer};
use crate::error::{Error, Place, Result};

const MAGIC: &[u8] = b"PAR1";

/// Parquet's physical types this writer writes (the `Type` enum of parquet.thrift).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Physical {
    Int32,
    Int64,
    Float,
    Double,
}

impl Physical {
    /// Bytes of one PLAIN value.
    pub fn size(self) -> u64 {
        match self {
            Physical::Int32 | Physical::Float => 4,
            Physical::Int64 | Physical::Double => 8,
        }
    }

    fn code(self) -> i32 {
        match self {
            Physical::Int32 => 1,
            Physical::Int64 => 2,
            Physical::Float => 4,
            Physical::Double => 5,
        }
    }
}

/// A column: a REQUIRED leaf at the schema's top level.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    pub name: String,
    pub ty: Physical,
}

/// What the file holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    pub columns: Vec<Column>,
    /// The number of rows of each row group, in order: row group `k` holds the rows
    /// that follow those of the groups before it.
    pub row_groups: Vec<u64>,
    /// The file's key-value metadata, in this order (none: no list written).
    pub key_value: Vec<(String, String)>,
    pub created_by: String,
}

/// What a stretch of the file is made of, in file order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// Bytes the writer made: the magic, page headers, the footer.
    Bytes(Vec<u8>),
    /// Column `column`'s rows `rows` (of the whole table) as PLAIN little-endian
    /// values, `len` bytes: bytes `rows.start * size .. rows.end * size` of the
    /// column's values.
    Values {
        column: usize,
        rows: Range<u64>,
        len: u64,
    },
}

impl Piece {
    pub fn len(&self) -> u64 {
        match self {
            Piece::Bytes(b) => b.len() as u64,
            Piece::Values { len, .. } => *len,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A laid-out file: its pieces in order, and its size (the sum of their lengths).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    pub pieces: Vec<Piece>,
    pub size: u64,
}

impl Layout {
    fn push_bytes(&mut self, bytes: &[u8]) {
        self.size += bytes.len() as u64;
        match self.pieces.last_mut() {
            Some(Piece::Bytes(b)) => b.extend_from_slice(bytes),
            _ => self.pieces.push(Piece::Bytes(bytes.to_vec())),
        }
    }

    fn push_values(&mut self, column: usize, rows: Range<u64>, len: u64) {
        if len > 0 {
            self.size += len;
            self.pieces.push(Piece::Values { column, rows, len });
        }
    }
}

fn too_big(what: &str) -> Error {
    Error::corrupt(
        Place::file("cells.parquet"),
        format!("{what}: too large for a Parquet file"),
    )
}

fn i32_of(v: u64, what: &str) -> Result<i32> {
    i32::try_from(v).map_err(|_| too_big(what))
}

fn i64_of(v: u64, what: &str) -> Result<i64> {
    i64::try_from(v).map_err(|_| too_big(what))
}

/// One column chunk's place in the file, for the footer.
struct Chunk {
    rows: u64,
    /// Where its page header starts: the chunk's first byte.
    offset: u64,
    /// Page header and values.
    size: u64,
}

/// The header of a v1 DATA_PAGE of `rows` PLAIN values of `bytes` bytes, no levels
/// (REQUIRED, flat).
fn page_header(rows: u64, bytes: u64) -> Result<Vec<u8>> {
    let size = i32_of(bytes, "a column chunk")?;
    let n = i32_of(rows, "a row group")?;
    let mut w = Writer::new();
    w.field_i32(1, 0); // type: DATA_PAGE
    w.field_i32(2, size); // uncompressed_page_size
    w.field_i32(3, size); // compressed_page_size
    w.field_struct(5, |w| {
        w.field_i32(1, n); // num_values
        w.field_i32(2, 0); // encoding: PLAIN
        w.field_i32(3, 3); // definition_level_encoding: RLE
        w.field_i32(4, 3); // repetition_level_encoding: RLE
    });
    Ok(w.finish())
}

/// Lays out the file of `table` (see the module's doc): the pieces and the size.
pub fn layout(table: &Table) -> Result<Layout> {
    if table.columns.is_empty() {
        return Err(Error::corrupt(
            Place::file("cells.parquet"),
            "a Parquet file needs at least one column",
        ));
    }
    let mut out = Layout {
        pieces: Vec::new(),
        size: 0,
    };
    out.push_bytes(MAGIC);
    // chunks[g][c]: row group g, column c.
    let mut chunks: Vec<Vec<Chunk>> = Vec::with_capacity(table.row_groups.len());
    let mut first_row = 0u64;
    for &rows in &table.row_groups {
        let end = first_row
            .checked_add(rows)
            .ok_or_else(|| too_big("the rows"))?;
        let mut group = Vec::with_capacity(table.columns.len());
        for (c, column) in table.columns.iter().enumerate() {
            let bytes = rows
                .checked_mul(column.ty.size())
                .ok_or_else(|| too_big("a column chunk"))?;
            let header = page_header(rows, bytes)?;
            let offset = out.size;
            out.push_bytes(&header);
            out.push_values(c, first_row..end, bytes);
            group.push(Chunk {
                rows,
                offset,
                size: header.len() as u64 + bytes,
            });
        }
        chunks.push(group);
        first_row = end;
    }
    let footer = footer(table, &chunks, first_row)?;
    out.push_bytes(&footer);
    let len = u32::try_from(footer.len()).map_err(|_| too_big("the footer"))?;
    out.push_bytes(&len.to_le_bytes());
    out.push_bytes(MAGIC);
    Ok(out)
}

/// `FileMetaData`, Thrift compact.
fn footer(table: &Table, chunks: &[Vec<Chunk>], rows: u64) -> Result<Vec<u8>> {
    // Everything that can fail, first: the closures below cannot.
    let rows = i64_of(rows, "the rows")?;
    let mut groups = Vec::with_capacity(chunks.len());
    for group in chunks {
        let mut cols = Vec::with_capacity(group.len());
        for chunk in group {
            cols.push((
                i64_of(chunk.rows, "a row group")?,
                i64_of(chunk.offset, "the file")?,
                i64_of(chunk.size, "a column chunk")?,
            ));
        }
        let total = group
            .iter()
            .try_fold(0u64, |t, c| t.checked_add(c.size))
            .ok_or_else(|| too_big("a row group"))?;
        groups.push((cols, i64_of(total, "a row group")?));
    }
    let n_columns = i32_of(table.columns.len() as u64, "the columns")?;

    let mut w = Writer::new();
    w.field_i32(1, 1); // version
                       // The schema, depth first: the root (no type), then its REQUIRED leaves.
    let schema: Vec<Option<&Column>> = std::iter::once(None)
        .chain(table.columns.iter().map(Some))
        .collect();
    w.field_list(2, Type::Struct, &schema, |w, column| {
        w.elem_struct(|w| match column {
            None => {
                w.field_string(4, "schema");
                w.field_i32(5, n_columns); // num_children
            }
            Some(col) => {
                w.field_i32(1, col.ty.code()); // type
                w.field_i32(3, 0); // repetition_type: REQUIRED
                w.field_string(4, &col.name);
            }
        })
    });
    w.field_i64(3, rows);
    w.field_list(4, Type::Struct, &groups, |w, (cols, total)| {
        w.elem_struct(|w| {
            let columns: Vec<_> = cols.iter().zip(&table.columns).collect();
            w.field_list(
                1,
                Type::Struct,
                &columns,
                |w, &(&(n, offset, size), col)| {
                    w.elem_struct(|w| {
                        w.field_i64(2, offset); // file_offset: the chunk's first byte
                        w.field_struct(3, |w| {
                            w.field_i32(1, col.ty.code());
                            w.field_list(2, Type::I32, &[0], |w, &e| w.elem_i64(e)); // PLAIN
                            w.field_list(3, Type::Binary, &[&col.name], |w, s| {
                                w.elem_binary(s.as_bytes())
                            });
                            w.field_i32(4, 0); // codec: UNCOMPRESSED
                            w.field_i64(5, n); // num_values
                            w.field_i64(6, size); // total_uncompressed_size
                            w.field_i64(7, size); // total_compressed_size
                            w.field_i64(9, offset); // data_page_offset
                        });
                    })
                },
            );
            w.field_i64(2, *total); // total_byte_size
            w.field_i64(3, cols.first().map_or(0, |c| c.0)); // num_rows
            w.field_i64(5, cols.first().map_or(0, |c| c.1)); // file_offset
            w.field_i64(6, *total); // total_compressed_size
        })
    });
    if !table.key_value.is_empty() {
        w.field_list(5, Type::Struct, &table.key_value, |w, (k, v)| {
            w.elem_struct(|w| {
                w.field_string(1, k);
                w.field_string(2, v);
            })
        });
    }
    w.field_string(6, &table.created_by);
    Ok(w.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(row_groups: Vec<u64>) -> Table {
        Table {
            columns: vec![
                Column {
                    name: "a".into(),
                    ty: Physical::Int32,
                },
                Column {
                    name: "b".into(),
                    ty: Physical::Double,
                },
            ],
            row_groups,
            key_value: vec![("k".into(), "v".into())],
            created_by: "fragfs".into(),
        }
    }

    /// The file with every run of values filled with 0xAA.
    fn filled(l: &Layout) -> Vec<u8> {
        let mut out = Vec::new();
        for p in &l.pieces {
            match p {
                Piece::Bytes(b) => out.extend_from_slice(b),
                Piece::Values { len, .. } => out.extend(std::iter::repeat_n(0xaa, *len as usize)),
            }
        }
        out
    }

    #[test]
    fn a_page_header_is_a_data_page_of_plain_values_without_levels() {
        assert_eq!(
            page_header(3, 12).unwrap(),
            [
                0x15, 0x00, // 1: DATA_PAGE
                0x15, 0x18, // 2: 12 bytes
                0x15, 0x18, // 3: 12 bytes
                0x2c, // 5: DataPageHeader
                0x15, 0x06, // 1: 3 values
                0x15, 0x00, // 2: PLAIN
                0x15, 0x06, // 3: RLE
                0x15, 0x06, // 4: RLE
                0x00, 0x00,
            ]
        );
    }

    #[test]
    fn the_pieces_are_magic_chunks_footer_length_magic() {
        let l = layout(&table(vec![2, 3])).unwrap();
        let file = filled(&l);
        assert_eq!(file.len() as u64, l.size);
        assert_eq!(l.pieces.iter().map(Piece::len).sum::<u64>(), l.size);
        assert_eq!(&file[..4], b"PAR1");
        assert_eq!(&file[file.len() - 4..], b"PAR1");
        let n = u32::from_le_bytes(file[file.len() - 8..file.len() - 4].try_into().unwrap());
        let footer = &file[file.len() - 8 - n as usize..file.len() - 8];
        // FileMetaData: version 1, then the schema list of 3 structs.
        assert_eq!(footer[..4], [0x15, 0x02, 0x19, 0x3c]);
        assert!(footer.windows(6).any(|w| w == b"fragfs"));
        let runs: Vec<_> = l
            .pieces
            .iter()
            .filter_map(|p| match p {
                Piece::Values { column, rows, len } => Some((*column, rows.clone(), *len)),
                Piece::Bytes(_) => None,
            })
            .collect();
        assert_eq!(
            runs,
            [(0, 0..2, 8), (1, 0..2, 16), (0, 2..5, 12), (1, 2..5, 24)]
        );
        // Bytes and runs alternate: the magic and the first header are one piece.
        assert!(matches!(l.pieces[0], Piece::Bytes(_)));
        assert_eq!(l.pieces.len(), 9);
    }

    #[test]
    fn each_chunk_starts_with_its_page_header_where_the_footer_says() {
        let l = layout(&table(vec![2, 3])).unwrap();
        let file = filled(&l);
        // The first chunk's header right after the magic; the second right after the
        // first's values.
        let h1 = page_header(2, 8).unwrap();
        assert_eq!(&file[4..4 + h1.len()], &h1[..]);
        let second = 4 + h1.len() + 8;
        let h2 = page_header(2, 16).unwrap();
        assert_eq!(&file[second..second + h2.len()], &h2[..]);
        // data_page_offset 9 (field delta 2, i64) of the second chunk: zigzag(second).
        let mut want = vec![0x26];
        let mut z = (second as u64) << 1;
        while z >= 0x80 {
            want.push((z as u8) | 0x80);
            z >>= 7;
        }
        want.push(z as u8);
        assert!(file.windows(want.len()).any(|w| w == want));
    }

    #[test]
    fn empty_row_groups_have_no_runs_and_no_columns_is_an_error() {
        let l = layout(&table(vec![0])).unwrap();
        assert!(l.pieces.iter().all(|p| matches!(p, Piece::Bytes(_))));
        assert_eq!(l.pieces.len(), 1);
        let mut t = table(vec![1]);
        t.columns.clear();
        assert!(layout(&t).is_err());
    }

    #[test]
    fn a_page_over_2_gib_is_an_error_not_a_wrapped_size() {
        // 2^28 doubles: 2 GiB, one byte past i32::MAX.
        assert!(layout(&table(vec![1 << 28])).is_err());
        assert!(layout(&table(vec![(1 << 28) - 1])).is_ok());
        assert!(layout(&table(vec![u64::MAX])).is_err());
    }
}
