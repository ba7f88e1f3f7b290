//! `cells.parquet` (issue 43): a Parquet file laid out from a [`Table`], sans-IO.
//!
//! The file is `PAR1`, then row group by row group (one per [`Group`] with rows;
//! groups of 0 rows are left out) and column by column a column chunk, then the
//! footer (`FileMetaData`, version 2, Thrift compact), its length (4 bytes, little
//! endian) and `PAR1` again. A chunk is an optional DICTIONARY_PAGE, then one v1
//! DATA_PAGE, or, where [`Chunk::stored`] says, one DATA_PAGE per stored compressed
//! page (codec ZSTD or LZ4_RAW). Levels use the RLE/bit-packed hybrid with
//! bit-packed runs only, behind their 4-byte length; values are PLAIN. A chunk of at
//! least 16 KiB, the chunk after it, and the footer after it start on a 4 KiB page,
//! behind zero bytes no reader reads: the kernel's page cache reads whole pages, and a
//! page shared with a neighbour would make the face decode that neighbour's tiles
//! (`layout::ALIGN`).
//!
//! [`layout`] does not make the file: it gives it as [`Piece`]s, the bytes it made
//! from the table alone (magic, page headers, dictionary pages, footer) and, for
//! each chunk, what a face fills from the cells: `Raw` where the page's values are
//! exactly a byte range of the field's `values.bin`, `Body` slices of what [`body`]
//! makes of the group's cells (levels, converted values), `Stored` for copied pages.
//! Every size and offset comes from the table's facts, so the face knows the whole
//! file's size and footer before it reads a cell, and reads only the tiles under the
//! bytes asked for; [`body`] checks the cells agree with the facts.
//!
//! # Types (TileDB → Parquet physical, annotation)
//!
//! | TileDB | Parquet |
//! |---|---|
//! | INT8, INT16 / UINT8, UINT16 | INT32, INT(8\|16, signed / unsigned), widened (body) |
//! | INT32 / UINT32 | INT32, INT(32, true / false), raw |
//! | INT64 / UINT64 | INT64, INT(64, true / false), raw |
//! | FLOAT32, FLOAT64 | FLOAT, DOUBLE, raw |
//! | BOOL (a byte a value) | BOOLEAN (bit-packed, body) |
//! | DATETIME_MS, _US, _NS | INT64 TIMESTAMP(unit, isAdjustedToUTC = false), raw |
//! | other DATETIME_* (DAY too), every TIME_* | INT64, raw, the unit in `fragfs.units` |
//! | STRING_ASCII, STRING_UTF8, var | BYTE_ARRAY STRING |
//! | other strings, CHAR, BLOB, GEOM_*, ANY, var | BYTE_ARRAY |
//! | CHAR, BLOB, STRING_*, GEOM_*, n per cell | FIXED_LEN_BYTE_ARRAY(n × size), raw |
//! | numbers, times, BOOL, n > 1 or var per cell | LIST of the above (3-level) |
//! | enumerated (labels) | the labels' type, OPTIONAL, dictionary encoded |
//!
//! TIME_* are not Parquet's TIME: TileDB-Py reads them as durations (timedelta64),
//! Parquet's TIME is a time of day. DATETIME_DAY is not Parquet's DATE (INT32): its
//! fill value, which dense arrays hold where no fragment wrote, is i64::MIN (NaT), and
//! days past ±2^31 are legal. They, and the datetimes Parquet has no unit for, are
//! plain INT64 whose TileDB type is in the key-value pair `fragfs.units` (a JSON
//! object by column name). The legacy converted type is written where one means the
//! same (UTF8, INT_*/UINT_*, LIST); TIMESTAMP_MILLIS/MICROS mean UTC-adjusted
//! instants, which TileDB's datetimes are not, so timestamps have the logical type
//! only.
//!
//! "raw" above: where the column is REQUIRED (not nullable) and not enumerated, its
//! values are `values.bin`'s bytes (for a list, after levels made in the body). A
//! nullable column is OPTIONAL (definition levels; a null has no value). A list is
//! `<required|optional> group name (LIST) { repeated group list { required <type>
//! element } }`; an empty var cell is an empty list, which its definition level tells
//! from a null. An enumerated column's labels are its dictionary page; its codes the
//! indices of an RLE_DICTIONARY page (a bit width byte, then bit-packed runs); a
//! code no label has is written null ([`crate::encode::table::null_count`] counts
//! those). Labels of booleans, and labels of several values, have no dictionary
//! readers take: such columns are an error.
//!
//! Statistics: null_count always (for a list, empty lists count too: leaf slots
//! without a value); min and max from [`Chunk::bounds`] as PLAIN of the physical type,
//! for flat columns that are not enumerated, not where a bound is NaN.
//!
//! [`Table`]: crate::encode::table::Table
//! [`Group`]: crate::encode::table::Group
//! [`Chunk::stored`]: crate::encode::table::Chunk::stored
//! [`Chunk::bounds`]: crate::encode::table::Chunk::bounds
//! [`Piece`]: crate::encode::table::Piece

mod body;
mod footer;
mod hybrid;
mod kind;
mod layout;
mod page;
mod plain;
mod plan;

pub use body::body;
pub use layout::layout;

#[cfg(test)]
mod tests;

/// Whether `column`'s labels can be a Parquet dictionary (flat labels of a type other
/// than booleans, codes of one integer a cell). Where they cannot, the face shows the
/// codes themselves, in both table files.
pub fn takes_labels(column: &crate::encode::table::Column) -> bool {
    column.labels.is_none() || kind::leaf(column).is_ok()
}
