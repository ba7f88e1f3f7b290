//! The one error type above the parsers. Every error carries the errno a FUSE reader
//! gets, keeps its cause (the parser's, the filter's, the Filo decoder's or the I/O
//! error itself) and says where it happened as a [`Place`]: fragment, file, tile,
//! chunk, as separate fields, so a log line names them and code can look at them.
//!
//! One rule for causes, in this enum and in every error enum below it: **the message
//! says the cause, and `source()` returns nothing.** A printer that walks the source
//! chain (anyhow's `{:#}`, a log layer) and one that prints `{e}` (the CLI, every log
//! line of the daemon) then both show the cause exactly once. The cause stays a typed
//! field (`cause`), never named `source`: thiserror makes a field of that name the
//! error's source, which would print it twice.

use std::fmt;
use std::sync::Arc;

use crate::filo::FiloError;
use crate::filter::FilterError;
use crate::format::FormatError;
use thiserror::Error;

/// Where in an array (or a Filo fragment) something happened. Every part is optional;
/// shown as `fragment F, FILE, tile T, chunk C, DETAIL`, the parts present joined by
/// commas, which is how a user finds the bytes with `hexdump`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Place {
    /// The fragment folder name.
    pub fragment: Option<String>,
    /// A file of the array (`a0.tdb`, `__schema/<name>`), relative to the array or to
    /// the fragment folder; or the path of a file outside any fragment.
    pub file: Option<String>,
    pub tile: Option<u64>,
    pub chunk: Option<usize>,
    /// Anything more precise: `tile offsets of slot 3`, `field a, cell 4096`.
    pub detail: Option<String>,
}

impl Place {
    pub fn fragment(name: impl Into<String>) -> Place {
        Place {
            fragment: Some(name.into()),
            ..Place::default()
        }
    }

    /// A place naming only a file (or a path, or anything a user would recognise).
    pub fn file(name: impl Into<String>) -> Place {
        Place {
            file: Some(name.into()),
            ..Place::default()
        }
    }

    pub fn in_file(mut self, name: impl Into<String>) -> Place {
        self.file = Some(name.into());
        self
    }

    pub fn tile(mut self, k: u64) -> Place {
        self.tile = Some(k);
        self
    }

    pub fn chunk(mut self, i: usize) -> Place {
        self.chunk = Some(i);
        self
    }

    pub fn detail(mut self, detail: impl Into<String>) -> Place {
        self.detail = Some(detail.into());
        self
    }
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        let mut part = |f: &mut fmt::Formatter<'_>, text: fmt::Arguments<'_>| {
            if !std::mem::take(&mut first) {
                f.write_str(", ")?;
            }
            f.write_fmt(text)
        };
        if let Some(x) = &self.fragment {
            part(f, format_args!("fragment {x}"))?;
        }
        if let Some(x) = &self.file {
            part(f, format_args!("{x}"))?;
        }
        if let Some(x) = self.tile {
            part(f, format_args!("tile {x}"))?;
        }
        if let Some(x) = self.chunk {
            part(f, format_args!("chunk {x}"))?;
        }
        if let Some(x) = &self.detail {
            part(f, format_args!("{x}"))?;
        }
        Ok(())
    }
}

impl From<&str> for Place {
    fn from(file: &str) -> Place {
        Place::file(file)
    }
}

impl From<String> for Place {
    fn from(file: String) -> Place {
        Place::file(file)
    }
}

impl From<&std::path::PathBuf> for Place {
    fn from(path: &std::path::PathBuf) -> Place {
        Place::file(path.display().to_string())
    }
}

impl From<&std::path::Path> for Place {
    fn from(path: &std::path::Path) -> Place {
        Place::file(path.display().to_string())
    }
}

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
    /// Reading bytes from the store failed; the I/O error is kept (shared, so the error
    /// can be cloned to every reader that waited for the same load). An empty place
    /// shows the I/O error alone (its message names what failed).
    #[error("{}{cause}", place_prefix(place))]
    Io {
        place: Box<Place>,
        cause: Arc<std::io::Error>,
    },
    /// The folder is not a TileDB array fragfs can read.
    #[error("{0}")]
    NotAnArray(String),
    /// Bytes that cannot be parsed.
    #[error("{}{cause}", place_prefix(place))]
    Format {
        place: Box<Place>,
        cause: FormatError,
    },
    /// A chunk that cannot be un-filtered.
    #[error("{}{cause}", place_prefix(place))]
    Filter {
        place: Box<Place>,
        cause: FilterError,
    },
    /// A Filo chunk that cannot be decoded.
    #[error("{}{cause}", place_prefix(place))]
    Filo { place: Box<Place>, cause: FiloError },
    /// Metadata and data disagree (e.g. a tile decodes to the wrong size), or a file the
    /// metadata promises is missing or short.
    #[error("{place}: {reason}")]
    Corrupt { place: Box<Place>, reason: String },
    /// The array is encrypted and no key was given; names the array once known.
    #[error(
        "{}encrypted array: an encryption key is needed (--encryption-key or FRAGFS_ENCRYPTION_KEY)",
        prefix(.0)
    )]
    KeyNeeded(Option<String>),
    /// The key given does not decrypt the array's schema. The schema is the first thing
    /// an encrypted array decrypts, so a key that fails there is the wrong key; a key
    /// that decrypted it is right, and a chunk that fails later was altered (bad data,
    /// [`Error::Filter`]). Names the array once known.
    #[error(
        "{}wrong encryption key: it does not decrypt the array's schema ({place})",
        prefix(array)
    )]
    WrongKey {
        array: Option<String>,
        place: Box<Place>,
    },
    /// A failure outside the array's bytes (a mount point, a bucket, a credential, an
    /// array URI) whose message says everything, with the errno that fits it: ENOENT
    /// for something missing, EACCES for refused credentials, EBUSY for a busy mount
    /// point, EIO for a transport that failed.
    #[error("{message}")]
    Setup { message: String, errno: i32 },
    #[error("{0}")]
    InvalidArgument(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// `"<array>: "`, or nothing.
fn prefix(array: &Option<String>) -> String {
    array.as_ref().map(|a| format!("{a}: ")).unwrap_or_default()
}

/// `"<place>: "`, or nothing for a place with no part.
fn place_prefix(place: &Place) -> String {
    match place.to_string() {
        shown if shown.is_empty() => shown,
        shown => shown + ": ",
    }
}

impl Error {
    /// The errno a FUSE reader should see. It says what kind of failure it is, so a
    /// reader can act on it: EIO only for failed I/O and bad bytes; a missing or wrong
    /// key is EACCES (the data is there, the reader may not decrypt it); a failure
    /// outside the array carries its own.
    pub fn errno(&self) -> i32 {
        match self {
            Error::NotFound(_) => libc::ENOENT,
            Error::IsDirectory(_) => libc::EISDIR,
            Error::NotDirectory(_) => libc::ENOTDIR,
            Error::Io { cause, .. } => match cause.kind() {
                std::io::ErrorKind::NotFound => libc::ENOENT,
                std::io::ErrorKind::PermissionDenied => libc::EACCES,
                _ => libc::EIO,
            },
            // Nothing fragfs can show is there (a group member that is not a folder, a
            // folder with no schema): what a reader of a missing folder gets.
            Error::NotAnArray(_) => libc::ENOENT,
            Error::KeyNeeded(_) | Error::WrongKey { .. } => libc::EACCES,
            Error::Setup { errno, .. } => *errno,
            Error::InvalidArgument(_) => libc::EINVAL,
            Error::Format { .. } | Error::Filter { .. } | Error::Filo { .. } => libc::EIO,
            Error::Corrupt { .. } => libc::EIO,
        }
    }

    /// Whether trying again later may succeed: an I/O failure (a flaky disk, a network
    /// store answering 503), but not bad bytes, a missing file or a missing key. Loads
    /// that fail this way are never cached, so a later read tries again.
    pub fn is_transient(&self) -> bool {
        match self {
            Error::Io { cause, .. } => !matches!(
                cause.kind(),
                std::io::ErrorKind::NotFound
                    | std::io::ErrorKind::PermissionDenied
                    | std::io::ErrorKind::IsADirectory
                    | std::io::ErrorKind::NotADirectory
                    | std::io::ErrorKind::InvalidInput
            ),
            _ => false,
        }
    }

    /// Where it happened, for errors about bytes of the array.
    pub fn place(&self) -> Option<&Place> {
        match self {
            Error::Io { place, .. }
            | Error::Format { place, .. }
            | Error::Filter { place, .. }
            | Error::Filo { place, .. }
            | Error::Corrupt { place, .. }
            | Error::WrongKey { place, .. } => Some(place),
            _ => None,
        }
    }

    /// The same error, said to have happened at `place` (the cause is kept).
    pub fn at(self, place: Place) -> Error {
        let place = Box::new(place);
        match self {
            Error::Io { cause, .. } => Error::Io { place, cause },
            Error::Format { cause, .. } => Error::Format { place, cause },
            Error::Filter { cause, .. } => Error::Filter { place, cause },
            Error::Filo { cause, .. } => Error::Filo { place, cause },
            Error::Corrupt { reason, .. } => Error::Corrupt { place, reason },
            Error::WrongKey { array, .. } => Error::WrongKey { array, place },
            other => other,
        }
    }

    pub fn io(place: impl Into<Place>, e: std::io::Error) -> Error {
        Error::Io {
            place: Box::new(place.into()),
            cause: Arc::new(e),
        }
    }

    /// The kind of the I/O error, for an [`Error::Io`].
    pub fn io_kind(&self) -> Option<std::io::ErrorKind> {
        match self {
            Error::Io { cause, .. } => Some(cause.kind()),
            _ => None,
        }
    }

    /// Wraps a parser error with where it happened.
    pub fn format(place: impl Into<Place>, cause: FormatError) -> Error {
        Error::Format {
            place: Box::new(place.into()),
            cause,
        }
    }

    /// Wraps a filter error with where it happened; a missing key stays a missing key.
    pub fn filter(place: impl Into<Place>, cause: FilterError) -> Error {
        match cause {
            FilterError::KeyNeeded => Error::KeyNeeded(None),
            cause => Error::Filter {
                place: Box::new(place.into()),
                cause,
            },
        }
    }

    /// For errors found decoding the array's schema, the first thing an encrypted array
    /// decrypts: a chunk that does not decrypt there means the key is wrong
    /// ([`Error::WrongKey`]), not that the bytes were altered. Other errors pass as
    /// they are.
    pub fn in_schema(self) -> Error {
        match self {
            Error::Filter {
                place,
                cause: FilterError::Decrypt,
            } => Error::WrongKey { array: None, place },
            other => other,
        }
    }

    pub fn filo(place: impl Into<Place>, cause: FiloError) -> Error {
        Error::Filo {
            place: Box::new(place.into()),
            cause,
        }
    }

    pub fn corrupt(place: impl Into<Place>, reason: impl Into<String>) -> Error {
        Error::Corrupt {
            place: Box::new(place.into()),
            reason: reason.into(),
        }
    }

    /// A [`Error::Setup`] failure: `message` says all, `errno` fits it.
    pub fn setup(errno: i32, message: impl Into<String>) -> Error {
        Error::Setup {
            message: message.into(),
            errno,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_show_the_parts_they_have_in_order() {
        let p = Place::fragment("__1_1_x_22")
            .in_file("a0.tdb")
            .tile(3)
            .chunk(1);
        assert_eq!(
            p.to_string(),
            "fragment __1_1_x_22, a0.tdb, tile 3, chunk 1"
        );
        assert_eq!(
            Place::file("__schema/s").detail("x").to_string(),
            "__schema/s, x"
        );
        let e = Error::corrupt(p.clone(), "bad");
        assert_eq!(e.place(), Some(&p));
        // Boxed places keep errors small, so every `Result` stays cheap to return.
        assert!(std::mem::size_of::<Error>() <= 80);
        assert_eq!(
            e.to_string(),
            "fragment __1_1_x_22, a0.tdb, tile 3, chunk 1: bad"
        );
    }

    #[test]
    fn io_errors_keep_their_cause_and_tell_transient_from_permanent() {
        let flaky = Error::io("a0.tdb", std::io::Error::other("connection reset"));
        assert!(flaky.is_transient());
        assert_eq!(flaky.errno(), libc::EIO);
        assert_eq!(flaky.io_kind(), Some(std::io::ErrorKind::Other));
        assert_eq!(flaky.to_string(), "a0.tdb: connection reset");
        let missing = Error::io("a0.tdb", std::io::ErrorKind::NotFound.into());
        assert!(!missing.is_transient());
        assert_eq!(missing.errno(), libc::ENOENT);
        assert!(!Error::corrupt("x", "bad").is_transient());
        // No place: the I/O error alone, not ": ..." in front of it.
        let bare = Error::io(Place::default(), std::io::Error::other("s3://b/k: refused"));
        assert_eq!(bare.to_string(), "s3://b/k: refused");
    }

    /// Every message and the causes a chain-walking printer would add (anyhow's `{:#}`):
    /// `e: cause: cause's cause...`.
    fn with_chain(e: &dyn std::error::Error) -> String {
        let mut out = e.to_string();
        let mut cause = e.source();
        while let Some(c) = cause {
            out.push_str(": ");
            out.push_str(&c.to_string());
            cause = c.source();
        }
        out
    }

    /// A cause shows once whether the printer prints `{e}` (the CLI, log lines) or walks
    /// the source chain too: messages carry their cause, `source()` adds nothing.
    #[test]
    fn every_cause_is_printed_once_with_or_without_the_source_chain() {
        let cases: Vec<(Error, &str)> = vec![
            (
                Error::io("a0.tdb", std::io::Error::other("connection reset")),
                "connection reset",
            ),
            (
                Error::format(
                    "__schema/s",
                    FormatError::Invalid {
                        field: "cell order",
                        offset: 3,
                        reason: "value 9".into(),
                    },
                ),
                "value 9",
            ),
            (
                Error::filter(
                    Place::file("a0.tdb").tile(1),
                    FilterError::ChecksumMismatch {
                        filter: "CHECKSUM_MD5",
                        part: "data".into(),
                    },
                ),
                "checksum mismatch in data",
            ),
            (
                Error::filo(
                    "ts.filo",
                    FiloError::InFramedChunk {
                        chunk_bytes: 10,
                        cause: Box::new(FiloError::Manifest {
                            path: "columns[0]".into(),
                            reason: "no type".into(),
                        }),
                    },
                ),
                "no type",
            ),
            (
                Error::filter("__schema/s", FilterError::Decrypt).in_schema(),
                "wrong encryption key",
            ),
        ];
        for (e, cause) in cases {
            assert!(std::error::Error::source(&e).is_none(), "{e}");
            for shown in [e.to_string(), with_chain(&e), format!("fragfs: {e}")] {
                assert_eq!(shown.matches(cause).count(), 1, "{shown}");
            }
        }
    }

    /// A missing key and a wrong one are EACCES, not EIO: the bytes are there, this
    /// reader may not decrypt them. A chunk that does not decrypt once the schema did
    /// (the key is right) is altered data: EIO.
    #[test]
    fn a_missing_or_wrong_key_is_eacces_and_altered_ciphertext_is_eio() {
        assert_eq!(Error::KeyNeeded(None).errno(), libc::EACCES);
        assert_eq!(
            Error::filter("a0.tdb", FilterError::KeyNeeded).errno(),
            libc::EACCES
        );
        let place = Place::file("__schema/s").chunk(0);
        let wrong = Error::filter(place.clone(), FilterError::Decrypt).in_schema();
        assert_eq!(wrong.errno(), libc::EACCES);
        assert_eq!(wrong.place(), Some(&place));
        assert!(!wrong.is_transient());
        let altered = Error::filter(Place::file("a0.tdb").tile(2), FilterError::Decrypt);
        assert_eq!(altered.errno(), libc::EIO);
        // Only a decryption failure says anything about the key.
        let bad = Error::corrupt("__schema/s", "short").in_schema();
        assert_eq!(bad.errno(), libc::EIO);
    }

    #[test]
    fn failures_outside_the_array_carry_the_errno_that_fits() {
        let e = Error::setup(libc::EBUSY, "mount point /m is busy");
        assert_eq!(
            (e.errno(), e.to_string().as_str()),
            (libc::EBUSY, "mount point /m is busy")
        );
        assert!(!e.is_transient());
        assert_eq!(
            Error::NotAnArray("x: not a TileDB array".into()).errno(),
            libc::ENOENT
        );
        assert_eq!(Error::InvalidArgument("bad".into()).errno(), libc::EINVAL);
    }
}
