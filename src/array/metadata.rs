//! Array and group metadata (`__meta/`, `01-array-layout.md` §8): every metadata file
//! that TileDB would load (not `.tmp` files, not what a `.vac` lists), merged in order:
//! the newest value of a key wins, a deletion removes it.

use std::collections::BTreeMap;

use crate::error::{Error, Place, Result};
use crate::format::metadata::{
    classify_meta_file, merge_metadata, parse_meta_vacuum, parse_metadata, MetaFile, MetadataValue,
};
use crate::storage::Store;

use super::generic_tile::decode_generic_tile;

pub const META_DIR: &str = "__meta";

/// The metadata of the array (or group) at the root of `store`.
pub fn load_metadata(
    store: &dyn Store,
    key: Option<[u8; 32]>,
) -> Result<BTreeMap<Vec<u8>, MetadataValue>> {
    let listing = store.list(META_DIR)?;
    let mut vacuumed = std::collections::BTreeSet::new();
    let mut files = Vec::new();
    for entry in &listing {
        let Some(size) = entry.size else { continue };
        let rel = format!("{META_DIR}/{}", entry.name);
        match classify_meta_file(&entry.name) {
            MetaFile::Vacuum(_) => {
                vacuumed.extend(parse_meta_vacuum(&store.read_range(&rel, 0, size)?));
            }
            MetaFile::Metadata(order) => files.push((order, rel, size)),
            MetaFile::Partial | MetaFile::Unknown => {}
        }
    }
    let mut parsed = Vec::new();
    for (order, rel, size) in files {
        if vacuumed.contains(&order.name) {
            continue;
        }
        let place = Place::file(rel.as_str());
        let bytes = store.read_range(&rel, 0, size)?;
        let (_, payload) = decode_generic_tile(&bytes, key, &place)?;
        let entries = parse_metadata(&payload).map_err(|e| Error::format(place, e))?;
        parsed.push((order, entries));
    }
    Ok(merge_metadata(&parsed))
}
