//! How an array is read: [`OpenOptions`] and the encryption key it may carry.

use crate::error::{Error, Result};

/// Options that change how an array is read.
#[derive(Clone, Default)]
pub struct OpenOptions {
    /// AES-256-GCM key for encrypted arrays.
    pub key: Option<[u8; 32]>,
}

/// Says whether a key is given, never the key.
impl std::fmt::Debug for OpenOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenOptions")
            .field("key", &self.key.map(|_| "redacted"))
            .finish()
    }
}

/// Parses a user-supplied key: exactly 32 bytes of text (as TileDB takes it) or 64 hex
/// digits.
pub fn parse_key(text: &str) -> Result<[u8; 32]> {
    let bytes = text.as_bytes();
    if bytes.len() == 32 {
        let mut key = [0u8; 32];
        key.copy_from_slice(bytes);
        return Ok(key);
    }
    if bytes.len() == 64 && text.chars().all(|c| c.is_ascii_hexdigit()) {
        let mut key = [0u8; 32];
        for (i, k) in key.iter_mut().enumerate() {
            *k = u8::from_str_radix(&text[2 * i..2 * i + 2], 16)
                .map_err(|e| Error::InvalidArgument(format!("encryption key: {e}")))?;
        }
        return Ok(key);
    }
    Err(Error::InvalidArgument(format!(
        "encryption key must be 32 bytes (or 64 hex digits), got {} bytes",
        bytes.len()
    )))
}
