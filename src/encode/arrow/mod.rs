//! `cells.arrow`: an Arrow IPC file (Feather v2) laid out from a
//! [`Table`](super::table::Table), sans-IO.
//!
//! The file is `ARROW1` and two zero bytes, the Schema message, one DictionaryBatch per
//! enumerated column (its id is the column's index), one RecordBatch per group, the
//! end-of-stream marker, the Footer (the schema again and a Block per dictionary and
//! record batch), the footer's length and `ARROW1`. Metadata version V5, little-endian,
//! uncompressed; every message and every buffer starts 8-byte aligned and is padded to
//! a multiple of 8, so `pa.memory_map` reads it without a copy. The schema's
//! custom_metadata is the table's key-value metadata.
//!
//! # Types
//!
//! | TileDB (values per cell)                     | Arrow                                   |
//! |----------------------------------------------|-----------------------------------------|
//! | INT8 .. UINT64                               | Int(bit width, signed as it is)         |
//! | FLOAT32, FLOAT64                             | FloatingPoint SINGLE, DOUBLE            |
//! | BOOL (a byte per value)                      | Bool (bits)                             |
//! | DATETIME_SEC, _MS, _US, _NS                  | Timestamp(unit), no time zone           |
//! | other DATETIME_* (DAY too), other TIME_*     | Int64                                   |
//! | TIME_SEC, _MS, _US, _NS                      | Duration(unit) (TileDB-Py's timedelta64)|
//! | STRING_ASCII, STRING_UTF8 (var)              | LargeUtf8                               |
//! | other strings, CHAR, BLOB, ANY, GEOM_* (var) | LargeBinary                             |
//! | the same, n fixed                            | FixedSizeBinary(n × element size)       |
//! | n > 1 fixed of any type above Int..Duration  | FixedSizeList(n) of it ("item")         |
//! | var of any type above Int..Duration          | LargeList of it ("item")                |
//!
//! A nullable field is nullable with a validity bitmap. A field whose TileDB type the
//! Arrow type does not say one to one (CHAR, STRING_ASCII, other strings, ANY, GEOM_*,
//! the DATETIME_* and TIME_* stored as Int64, and TIME_SEC..NS, which are times of day
//! in TileDB, not durations) has field custom_metadata `tiledb_datatype` = its TileDB
//! name. DATETIME_DAY is not Date32: its fill value, which dense arrays hold where no
//! fragment wrote, is i64::MIN (NaT), and days past ±2^31 are legal; neither fits an
//! int32. An enumerated attribute (an integer per cell) is a dictionary field: its type is
//! the labels' (mapped as above), its index type the attribute's integer type, ordered as
//! the enumeration is; its labels are a DictionaryBatch. A code with no label is null
//! (Arrow's index must point at an entry), so such a field is always nullable.
//!
//! # Layout
//!
//! [`layout()`] gives the file as [`Piece`](super::table::Piece)s. Buffers that are
//! exactly a byte range of the column's `values.bin` (fixed-size values, the bytes of
//! var cells, a list's child values) are [`Piece::Raw`](super::table::Piece::Raw): the
//! face copies them straight from TileDB's values. The rest (validity bitmaps, int64
//! offsets rebased to 0 in each batch, booleans as bits) is
//! made from the group's cells by [`body`], and the layout names slices of it as
//! [`Piece::Body`](super::table::Piece::Body). The file's size and every offset follow
//! from the table's rows and var bytes alone, never from null counts, because a face
//! shows the size before it counts a null: a nullable field always has its bitmap (even
//! with no null), and the one number that does depend on nulls (a FieldNode's null_count)
//! sits in a fixed-size struct.

mod buffers;
mod layout;
mod messages;
mod types;

pub use buffers::body;
pub use layout::layout;
pub use messages::schema_message;
