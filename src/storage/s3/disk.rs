//! The S3 store's fetched bytes on local disk (`--cache-dir`): ranges of objects as they
//! were fetched (raw, still filtered or encrypted), kept in the disk cache's entries
//! (64 KiB blocks with CRC records, see [`crate::storage::diskcache`]) so that a later
//! mount, or another daemon, reads them without a request.
//!
//! An entry is keyed by the store (endpoint and bucket), the object's key and its
//! version as its listing gives it: the ETag (AWS S3, MinIO, Garage and Ceph list one),
//! else its size and modification time (servers that list none, s3s-fs). A rewritten
//! object has another version, hence another entry: its old bytes are never served
//! for it. Bytes are kept only for an object whose version a listing told, and only
//! from a response that agrees with that version ([`Version::agrees`]): an object
//! rewritten between its listing and a GET is not kept under the old version.

use std::sync::Arc;

use crate::storage::diskcache::{CacheKey, CacheScope, Entry};

/// What identifies the bytes of one object, from its listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version {
    pub size: u64,
    /// As listed (quotes and all).
    pub etag: Option<String>,
    /// Seconds and nanoseconds since the epoch.
    pub modified: (i64, u32),
}

/// What a GET's response said of the object it read.
#[derive(Debug, Clone, Copy)]
pub struct Answer<'a> {
    pub etag: Option<&'a str>,
    pub size: u64,
    /// Seconds since the epoch (an HTTP date has no finer unit).
    pub modified: i64,
}

/// An ETag without what servers may wrap it in (quotes, a weak marker).
fn bare(etag: &str) -> &str {
    etag.trim_start_matches("W/").trim_matches('"')
}

impl Version {
    /// The version's text in the cache key: another version is another entry.
    pub fn text(&self) -> String {
        match &self.etag {
            Some(etag) => format!("size {} etag {}", self.size, bare(etag)),
            None => format!(
                "size {} modified {}.{:09}",
                self.size, self.modified.0, self.modified.1
            ),
        }
    }

    /// Whether a response read this version of the object: the same size, and the same
    /// ETag (where both have one) or, when the listing had none, the same modification
    /// time to the second (a second apart at most: a server may round where the
    /// listing truncates).
    pub fn agrees(&self, answer: Answer<'_>) -> bool {
        if answer.size != self.size {
            return false;
        }
        match (&self.etag, answer.etag) {
            (Some(listed), Some(got)) => bare(listed) == bare(got),
            (Some(_), None) => true,
            (None, _) => (answer.modified - self.modified.0).abs() <= 1,
        }
    }
}

/// The disk cache's key of `version` of object `full` of `store` (see
/// [`store_identity`]).
pub fn cache_key(store: &str, full: &str, version: &Version) -> CacheKey {
    CacheKey {
        array: store.to_string(),
        scope: CacheScope::Object(version.text()),
        file: full.to_string(),
        // Bytes as stored: an encrypted array's objects are kept encrypted.
        decrypted: false,
    }
}

/// A store's name in cache keys: its endpoint (AWS where none is given: bucket names
/// are global there) and bucket. The same bucket name on two servers is two stores.
pub fn store_identity(endpoint: Option<&str>, bucket: &str) -> String {
    format!(
        "{} s3://{bucket}",
        endpoint.map_or("aws", |e| e.trim_end_matches('/'))
    )
}

/// One object's entry in the disk cache, with the version its bytes must come from.
#[derive(Clone)]
pub struct ObjectDisk {
    pub entry: Arc<Entry>,
    pub version: Arc<Version>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn version(etag: Option<&str>) -> Version {
        Version {
            size: 100,
            etag: etag.map(String::from),
            modified: (1_700_000_000, 500_000_000),
        }
    }

    fn answer(etag: Option<&str>, size: u64, modified: i64) -> Answer<'_> {
        Answer {
            etag,
            size,
            modified,
        }
    }

    #[test]
    fn a_response_agrees_with_the_listed_version_only() {
        let v = version(Some("\"abc\""));
        assert!(v.agrees(answer(Some("\"abc\""), 100, 0)));
        assert!(v.agrees(answer(Some("abc"), 100, 0)), "quotes aside");
        assert!(!v.agrees(answer(Some("\"abd\""), 100, 0)));
        assert!(!v.agrees(answer(Some("\"abc\""), 99, 0)));
        // Without an ETag in the listing: size and modification second.
        let v = version(None);
        assert!(v.agrees(answer(Some("x"), 100, 1_700_000_000)));
        assert!(v.agrees(answer(None, 100, 1_700_000_001)));
        assert!(!v.agrees(answer(None, 100, 1_700_000_005)));
        assert!(!v.agrees(answer(None, 101, 1_700_000_000)));
    }

    #[test]
    fn versions_and_stores_name_distinct_entries() {
        let a = cache_key("aws s3://b", "k", &version(Some("\"e1\"")));
        let b = cache_key("aws s3://b", "k", &version(Some("\"e2\"")));
        let c = cache_key("aws s3://b", "k", &version(None));
        assert!(a != b && a != c && b != c);
        assert_eq!(
            store_identity(Some("http://127.0.0.1:9000/"), "b"),
            "http://127.0.0.1:9000 s3://b"
        );
        assert_ne!(
            store_identity(None, "b"),
            store_identity(Some("http://x"), "b")
        );
    }
}
