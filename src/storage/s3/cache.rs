//! Bytes already fetched from object storage, kept by (key, ETag, offset) within a byte
//! budget, least recently used out first. TileDB never rewrites an object in place (every
//! fragment, commit and schema file has a unique, timestamped name), so fetched bytes
//! stay right as long as the object's ETag is the one they came with: a chunk-header walk
//! that fetched a whole tile serves the chunk reads that follow, and a window fetched
//! ahead of a sequential reader serves its next reads, without another request.

use std::collections::{BTreeMap, HashMap};

use bytes::Bytes;

/// Objects whose ETag is remembered at most; past it the map starts over (an unknown
/// ETag only costs a cache miss, and the next response tells it again).
const KEPT_ETAGS: usize = 200_000;

/// `(key, etag, start)`: where a segment's bytes come from.
type SegmentKey = (String, String, u64);

#[derive(Debug)]
struct Segment {
    bytes: Bytes,
    used: u64,
}

#[derive(Debug, Default)]
pub struct ByteCache {
    capacity: u64,
    used_bytes: u64,
    tick: u64,
    segments: BTreeMap<SegmentKey, Segment>,
    /// Last use -> segment, to find the least recently used.
    by_use: BTreeMap<u64, SegmentKey>,
    /// The current ETag of each object seen in a listing or a response.
    etags: HashMap<String, String>,
}

impl ByteCache {
    pub fn new(capacity: u64) -> ByteCache {
        ByteCache {
            capacity,
            ..ByteCache::default()
        }
    }

    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// Remembers the ETag an object has now (from a listing or a response); bytes kept
    /// under another ETag are no longer served.
    pub fn set_etag(&mut self, key: &str, etag: &str) {
        if self.etags.get(key).map(String::as_str) == Some(etag) {
            return;
        }
        if self.etags.len() >= KEPT_ETAGS {
            self.etags.clear();
        }
        self.etags.insert(key.to_string(), etag.to_string());
    }

    /// Forgets the ETag of `key` (its listing says it changed, without an ETag): its
    /// kept bytes are not served until a response tells the ETag again.
    pub fn forget_etag(&mut self, key: &str) {
        self.etags.remove(key);
    }

    fn etag(&self, key: &str) -> Option<&String> {
        self.etags.get(key)
    }

    /// The kept segment holding byte `at` of `key` (at its current ETag): its start and
    /// bytes. Marks it used.
    pub fn segment_at(&mut self, key: &str, at: u64) -> Option<(u64, Bytes)> {
        let etag = self.etag(key)?.clone();
        let probe = (key.to_string(), etag, at);
        let (found, _) = self.segments.range(..=&probe).next_back()?;
        if found.0 != probe.0 || found.1 != probe.1 {
            return None;
        }
        let found = found.clone();
        self.tick += 1;
        let tick = self.tick;
        let segment = self.segments.get_mut(&found)?;
        if found.2 + segment.bytes.len() as u64 <= at {
            return None;
        }
        self.by_use.remove(&segment.used);
        segment.used = tick;
        self.by_use.insert(tick, found.clone());
        Some((found.2, segment.bytes.clone()))
    }

    /// Where the next kept segment of `key` after byte `at` starts (bounds a gap to fetch).
    pub fn next_start(&self, key: &str, at: u64) -> Option<u64> {
        let etag = self.etag(key)?;
        let from = (key.to_string(), etag.clone(), at.saturating_add(1));
        self.segments
            .range(from..)
            .next()
            .filter(|(k, _)| k.0 == key && &k.1 == etag)
            .map(|(k, _)| k.2)
    }

    /// Keeps `bytes` of `key` from `start` under `etag`, dropping the least recently used
    /// segments beyond the budget. A segment larger than a quarter of the budget is not
    /// kept: it would push out everything else for one reader.
    pub fn insert(&mut self, key: &str, etag: &str, start: u64, bytes: Bytes) {
        let len = bytes.len() as u64;
        if len == 0 || len > self.capacity / 4 {
            return;
        }
        self.set_etag(key, etag);
        let k = (key.to_string(), etag.to_string(), start);
        self.tick += 1;
        let tick = self.tick;
        if let Some(old) = self
            .segments
            .insert(k.clone(), Segment { bytes, used: tick })
        {
            self.by_use.remove(&old.used);
            self.used_bytes -= old.bytes.len() as u64;
        }
        self.by_use.insert(tick, k);
        self.used_bytes += len;
        while self.used_bytes > self.capacity {
            let Some((_, oldest)) = self.by_use.pop_first() else {
                break;
            };
            if let Some(old) = self.segments.remove(&oldest) {
                self.used_bytes -= old.bytes.len() as u64;
            }
        }
    }

    /// Bytes held now.
    pub fn used(&self) -> u64 {
        self.used_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_serve_their_etag_only_and_the_budget_holds() {
        let mut c = ByteCache::new(400);
        c.insert("k", "e1", 10, Bytes::from(vec![1u8; 50]));
        assert_eq!(
            c.segment_at("k", 10).map(|(s, b)| (s, b.len())),
            Some((10, 50))
        );
        assert_eq!(c.segment_at("k", 59).map(|(s, _)| s), Some(10));
        assert!(c.segment_at("k", 60).is_none());
        assert!(c.segment_at("k", 9).is_none());
        assert_eq!(c.next_start("k", 0), Some(10));
        assert_eq!(c.next_start("k", 10), None);
        // A new ETag (the object was replaced): the old bytes are not served.
        c.set_etag("k", "e2");
        assert!(c.segment_at("k", 10).is_none());
        // The budget: the least recently used goes first; too large is never kept.
        c.insert("a", "x", 0, Bytes::from(vec![0u8; 100]));
        c.insert("b", "x", 0, Bytes::from(vec![0u8; 100]));
        c.insert("c", "x", 0, Bytes::from(vec![0u8; 100]));
        assert!(c.segment_at("a", 0).is_some());
        c.insert("d", "x", 0, Bytes::from(vec![0u8; 100]));
        assert!(c.used() <= 400);
        assert!(c.segment_at("a", 0).is_some(), "recently used stays");
        assert!(c.segment_at("k", 10).is_none());
        c.insert("e", "x", 0, Bytes::from(vec![0u8; 101]));
        assert!(
            c.segment_at("e", 0).is_none(),
            "over a quarter of the budget"
        );
    }
}
