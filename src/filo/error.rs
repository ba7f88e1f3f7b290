//! Errors of the Filo decoder.
//!
//! Every error about the bytes names the part being read (a vector kind such as
//! `UTF8Vector`, or a piece of one such as `NaMask`) and the **byte offset from the start
//! of the chunk** (the header word is byte 0), so `hexdump -C` of the file shows the bad
//! bytes directly. For an LZ4-framed blob the offsets are those of the decompressed chunk
//! and the message says so ([`FiloError::InFramedChunk`]).

use thiserror::Error;

use super::column_type::ColumnType;
use super::kind::VectorKind;

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum FiloError {
    /// The bytes ended before a field could be read.
    #[error("{part}: {field} at byte {offset} needs {needed} bytes, only {available} left")]
    Truncated {
        part: &'static str,
        field: &'static str,
        offset: u64,
        needed: u64,
        available: u64,
    },
    /// A count read from the bytes is larger than the bytes that follow can hold.
    #[error("{part}: {field} at byte {offset} claims {count} entries, only {fit} fit")]
    CountTooLarge {
        part: &'static str,
        field: &'static str,
        offset: u64,
        count: u64,
        fit: u64,
    },
    /// A field holds a value that cannot be right.
    #[error("{part}: {field} at byte {offset}: {reason}")]
    Invalid {
        part: &'static str,
        field: &'static str,
        offset: u64,
        reason: String,
    },
    /// A header word that names no Filo vector.
    #[error("header at byte 0: {header:#010x} is not a Filo vector (major {major:#04x}, subtype {subtype:#04x}): {reason}", major = header & 0xFF, subtype = (header >> 8) & 0xFF)]
    UnsupportedHeader { header: u32, reason: &'static str },
    /// The vector is valid but cannot hold values of the column's type (the type comes
    /// from outside the bytes, so this is a manifest/vector mismatch).
    #[error("{kind} (header {header:#010x}) cannot be read as a {column_type} column")]
    WrongColumnType {
        kind: VectorKind,
        header: u32,
        column_type: ColumnType,
    },
    /// Decoding would produce more bytes than the caller allowed. Constant, empty and
    /// string vectors can legitimately expand far beyond their own size, so a hostile
    /// chunk of a few bytes could otherwise ask for gigabytes.
    #[error(
        "{part}: {rows} rows decode to {bytes} bytes or more, over the limit of {limit} bytes"
    )]
    TooLarge {
        part: &'static str,
        rows: u64,
        bytes: u64,
        limit: u64,
    },
    /// An error inside the chunk carried by an LZ4-framed blob. The message says the
    /// inner error and `source()` returns nothing, as for every error of the crate (see
    /// [`crate::error`]): a field named `source` would be both.
    #[error("in the LZ4-decompressed chunk ({chunk_bytes} bytes): {cause}")]
    InFramedChunk {
        chunk_bytes: u64,
        cause: Box<FiloError>,
    },
    /// `filo_fragment.json` cannot be used; `path` is a JSON path such as `columns[2].type`.
    #[error("filo_fragment.json: {path}: {reason}")]
    Manifest { path: String, reason: String },
    /// A decoded column does not have the manifest's `num_rows`.
    #[error("column {column:?}: decoded {found} rows, the manifest says num_rows = {expected}")]
    RowCount {
        column: String,
        found: u64,
        expected: u64,
    },
}

pub type Result<T, E = FiloError> = std::result::Result<T, E>;
