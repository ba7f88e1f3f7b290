//! The one error type above the parsers. Every error carries the errno a FUSE reader
//! gets and a message that names where the problem is (fragment, file, tile, chunk).

use crate::filter::FilterError;
use crate::format::FormatError;
use thiserror::Error;

#[derive(Debug, Error, Clone)]
pub enum Error {
    /// No such virtual file or folder.
    #[error("{0}: no such file or directory")]
    NotFound(String),
    /// A file operation on a folder (or the reverse).
    #[error("{0}: is a directory")]
    IsDirectory(String),
    #[error("{0}: not a directory")]
    NotDirectory(String),
    /// Reading a file of the array failed.
    #[error("{path}: {message}")]
    Io {
        path: String,
        kind: std::io::ErrorKind,
        message: String,
    },
    /// The folder is not a TileDB array fragfs can read.
    #[error("{0}")]
    NotAnArray(String),
    /// Bytes on disk that cannot be parsed: `context` names fragment, file, tile, chunk.
    #[error("{context}: {source}")]
    Format {
        context: String,
        source: FormatError,
    },
    /// A chunk that cannot be un-filtered.
    #[error("{context}: {source}")]
    Filter {
        context: String,
        source: FilterError,
    },
    /// Metadata and data disagree (e.g. a tile decodes to the wrong size).
    #[error("{context}: {reason}")]
    Corrupt { context: String, reason: String },
    /// The array is encrypted and no key was given.
    #[error(
        "encrypted array: an encryption key is needed (--encryption-key or FRAGFS_ENCRYPTION_KEY)"
    )]
    KeyNeeded,
    #[error("{0}")]
    InvalidArgument(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// The errno a FUSE reader should see.
    pub fn errno(&self) -> i32 {
        match self {
            Error::NotFound(_) => libc::ENOENT,
            Error::IsDirectory(_) => libc::EISDIR,
            Error::NotDirectory(_) => libc::ENOTDIR,
            Error::Io { kind, .. } if *kind == std::io::ErrorKind::NotFound => libc::ENOENT,
            Error::Io { kind, .. } if *kind == std::io::ErrorKind::PermissionDenied => libc::EACCES,
            Error::InvalidArgument(_) => libc::EINVAL,
            _ => libc::EIO,
        }
    }

    pub fn io(path: &std::path::Path, e: std::io::Error) -> Error {
        Error::Io {
            path: path.display().to_string(),
            kind: e.kind(),
            message: e.to_string(),
        }
    }

    /// Wraps a parser error with where it happened.
    pub fn format(context: impl Into<String>, source: FormatError) -> Error {
        Error::Format {
            context: context.into(),
            source,
        }
    }

    /// Wraps a filter error with where it happened; a missing key stays a missing key.
    pub fn filter(context: impl Into<String>, source: FilterError) -> Error {
        match source {
            FilterError::KeyNeeded => Error::KeyNeeded,
            source => Error::Filter {
                context: context.into(),
                source,
            },
        }
    }

    pub fn corrupt(context: impl Into<String>, reason: impl Into<String>) -> Error {
        Error::Corrupt {
            context: context.into(),
            reason: reason.into(),
        }
    }
}
