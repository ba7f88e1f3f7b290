//! What the store knows and keeps: the byte cache, read-ahead windows, the facts
//! listings and responses gave of each object (size, version/ETag), fetches in flight.

use std::collections::HashMap;
use std::sync::Arc;

use super::cache::ByteCache;
use super::disk::Version;
use super::inflight::Fetch;
use super::window::Windows;

/// Objects remembered at most; past it the map starts over (a forgotten object costs
/// one listing of its folder).
pub(crate) const KEPT_OBJECTS: usize = 200_000;

/// What listings and responses told of one object.
#[derive(Debug, Clone)]
pub(crate) struct Facts {
    pub(crate) size: u64,
    /// From its listing: what names its bytes in the disk cache.
    pub(crate) version: Option<Arc<Version>>,
}

#[derive(Debug)]
pub(crate) struct State {
    pub(crate) cache: ByteCache,
    pub(crate) windows: Windows,
    /// Objects seen in listings and responses, by full key.
    pub(crate) objects: HashMap<String, Facts>,
    pub(crate) inflight: Vec<Arc<Fetch>>,
}

/// Notes the size a response gave for `full`; a size other than its listing's means
/// the object changed: the listed version no longer names its bytes.
pub(crate) fn remember_size(state: &mut State, full: &str, size: u64) {
    if let Some(f) = state.objects.get_mut(full) {
        if f.size != size {
            *f = Facts {
                size,
                version: None,
            };
        }
        return;
    }
    if state.objects.len() >= KEPT_OBJECTS {
        state.objects.clear();
    }
    state.objects.insert(
        full.to_string(),
        Facts {
            size,
            version: None,
        },
    );
}

/// Notes what a listing says of `full`: its size and version. Kept bytes of another
/// version are no longer served from memory (the disk keys them by version).
pub(crate) fn remember_listed(state: &mut State, full: &str, version: Version) {
    match &version.etag {
        Some(etag) => state.cache.set_etag(full, etag),
        None => {
            let before = state.objects.get(full).and_then(|f| f.version.as_deref());
            if before.is_some_and(|v| *v != version) {
                state.cache.forget_etag(full);
            }
        }
    }
    if state.objects.len() >= KEPT_OBJECTS && !state.objects.contains_key(full) {
        state.objects.clear();
    }
    state.objects.insert(
        full.to_string(),
        Facts {
            size: version.size,
            version: Some(Arc::new(version)),
        },
    );
}
