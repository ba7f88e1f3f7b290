//! Errors of the pure parsers. Every error names the field it was reading and the byte
//! offset (relative to the start of the buffer being parsed) so a user can find the bad
//! bytes with `hexdump`.

use thiserror::Error;

/// Newest on-disk format version fragfs understands.
pub const NEWEST_FORMAT_VERSION: u32 = 23;
/// Oldest on-disk format version fragfs understands.
pub const OLDEST_FORMAT_VERSION: u32 = 1;

#[derive(Debug, Error, Clone, PartialEq)]
pub enum FormatError {
    /// The buffer ended before a field could be read.
    #[error("truncated {field} at byte {offset}: needs {needed} bytes, only {available} left")]
    Truncated {
        field: &'static str,
        offset: u64,
        needed: u64,
        available: u64,
    },
    /// A field holds a value that cannot be right.
    #[error("invalid {field} at byte {offset}: {reason}")]
    Invalid {
        field: &'static str,
        offset: u64,
        reason: String,
    },
    /// A version number outside the range fragfs reads.
    #[error(
        "unsupported {what} format version {found} (fragfs reads versions {OLDEST_FORMAT_VERSION} to {NEWEST_FORMAT_VERSION})"
    )]
    UnsupportedVersion { what: &'static str, found: u32 },
    /// A file in the layout of TileDB 1.3 and older, which had no format version yet.
    #[error(
        "unsupported format version 0: the layout of TileDB 1.3 and older (fragfs reads versions {OLDEST_FORMAT_VERSION} to {NEWEST_FORMAT_VERSION})"
    )]
    PreVersion1,
}

pub type Result<T, E = FormatError> = std::result::Result<T, E>;
