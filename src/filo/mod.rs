//! The Filo binary vector wire format (velvia/filo 0.2–0.3.7 and FiloDB's chunks), decoded
//! to fragfs's plain representation. Spec: `docs/filo-format/FORMAT.md`.
//!
//! A Filo chunk holds one column for a run of rows: a 4-byte header word naming the
//! vector kind, then either a FlatBuffer (old vectors) or a raw memory image (new-style
//! BinaryVectors). The chunk does not record the column's logical type and several
//! headers decode differently per type, so the type comes from outside: a
//! `filo_fragment.json` manifest ([`parse_manifest`]).
//!
//! * [`decode_vector`]: a whole chunk → values, validity, zones and encoding info, laid
//!   out as fragfs's `values.bin` / `validity.bin` / `timezone.bin` (see [`DecodedColumn`]
//!   and the byte layouts in `column.rs`).
//! * [`fixed_layout`]: for every non-string column, row `i` straight from the chunk
//!   without decoding the rest, so big vectors can be served lazily.
//!
//! Everything here works on byte slices, does no I/O and never panics on bad input:
//! every count and offset read from the bytes is checked against the bytes there, and
//! vectors that can expand (constants, dictionaries) are held to a byte budget.

mod bitpack;
mod column;
mod column_type;
mod ctx;
mod datetime;
mod decode;
mod delta;
mod element;
mod error;
mod fbstring;
mod flatbuffers;
mod framing;
mod header;
mod kind;
mod layout;
mod manifest;
mod options;
mod primitive;
mod span;
mod utf8;

pub use bitpack::IntFormat;
pub use column::{ColumnInfo, DecodedColumn, NaEncoding, Values};
pub use column_type::ColumnType;
pub use decode::{decode_vector, decode_vector_with, fixed_layout, fixed_layout_with};
pub use element::Element;
pub use error::{FiloError, Result};
pub use framing::unframe;
pub use header::{Header, EMPTY_MAX_ROWS};
pub use kind::VectorKind;
pub use layout::{FixedLayout, RowBytes};
pub use manifest::{parse_manifest, Manifest, ManifestColumn, MANIFEST_FILE};
pub use options::{DecodeOptions, FormatVersion, DEFAULT_MAX_DECODED_BYTES};
