use thiserror::Error;

/// Why a chunk could not be un-filtered. The caller adds fragment, file, tile and chunk.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum FilterError {
    /// The filtered bytes or the filter's header are inconsistent.
    #[error("{filter}: {reason}")]
    Corrupt {
        filter: &'static str,
        reason: String,
    },
    /// A CHECKSUM_MD5 / CHECKSUM_SHA256 digest does not match the bytes.
    #[error("{filter}: checksum mismatch in {part}")]
    ChecksumMismatch { filter: &'static str, part: String },
    /// The array is encrypted and no key was given.
    #[error(
        "encrypted array: an encryption key is needed (--encryption-key or FRAGFS_ENCRYPTION_KEY)"
    )]
    KeyNeeded,
    /// AES-256-GCM authentication failed.
    #[error("AES_256_GCM: decryption failed (wrong encryption key, or the data was altered)")]
    Decrypt,
    /// A filter fragfs cannot reverse in this build or this context.
    #[error("{filter}: not supported: {reason}")]
    Unsupported {
        filter: &'static str,
        reason: String,
    },
}
