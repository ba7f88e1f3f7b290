//! A TileDB group (`__group/` details files, `__tiledb_group.tdb`, `__meta/`): its members
//! as TileDB lists them (`format::group` merges the details files), and where each
//! lives: inside the group folder (a folder fragfs can show) or elsewhere.

use std::collections::BTreeMap;

use crate::error::{Error, Place, Result};
use crate::format::group::{
    merge_group_details, parse_group_details, ObjectType, GROUP_DETAILS_DIR,
};
use crate::format::metadata::{FileOrder, MetadataValue};
use crate::storage::Store;

use super::generic_tile::decode_generic_tile;

/// One member of a group.
#[derive(Debug, Clone, PartialEq)]
pub struct Member {
    /// Its name in the group (TileDB's key: the name, or the URI when it has none).
    pub name: String,
    /// The URI as stored.
    pub uri: String,
    pub relative: bool,
    pub object_type: ObjectType,
    /// The folder it is in, relative to the group's: `None` when it lives outside.
    pub inside: Option<String>,
}

#[derive(Debug)]
pub struct Group {
    pub members: Vec<Member>,
    pub metadata: BTreeMap<Vec<u8>, MetadataValue>,
}

impl Group {
    /// The group at the root of `store`.
    pub fn open(store: &dyn Store, key: Option<[u8; 32]>) -> Result<Group> {
        let mut files = Vec::new();
        for entry in store.list(GROUP_DETAILS_DIR)? {
            let Some(size) = entry.size else { continue };
            // Unfinished writes (`.tmp`) and anything not a timestamped name: skipped,
            // as TileDB does.
            if entry.name.contains('.') {
                continue;
            }
            let Some(order) = FileOrder::from_name(&entry.name) else {
                continue;
            };
            let rel = format!("{GROUP_DETAILS_DIR}/{}", entry.name);
            let place = Place::file(rel.as_str());
            let bytes = store.read_range(&rel, 0, size)?;
            let (_, payload) = decode_generic_tile(&bytes, key, &place)?;
            let details = parse_group_details(&payload).map_err(|e| Error::format(place, e))?;
            files.push((order, details));
        }
        let merged = merge_group_details(&files)
            .map_err(|e| Error::format(Place::file(GROUP_DETAILS_DIR), e))?;
        let root = store.uri();
        let members = merged
            .into_iter()
            .map(|(name, m)| Member {
                inside: inside(&root, &m.uri, m.relative),
                name,
                uri: m.uri,
                relative: m.relative,
                object_type: m.object_type,
            })
            .collect();
        let metadata = super::metadata::load_metadata(store, key)?;
        Ok(Group { members, metadata })
    }
}

/// The path of a member inside the group folder, if it is inside: a relative URI
/// without `..`, or an absolute one under the group's own URI.
fn inside(root: &str, uri: &str, relative: bool) -> Option<String> {
    let path = if relative {
        uri.trim_start_matches("./")
            .trim_end_matches('/')
            .to_string()
    } else {
        let root = root.trim_end_matches('/');
        // `file:///a/b` and `file://a/b` name the same local path.
        let norm = |u: &str| u.replacen("file:///", "file://", 1);
        norm(uri)
            .strip_prefix(&format!("{}/", norm(root)))?
            .trim_end_matches('/')
            .to_string()
    };
    let ok = !path.is_empty()
        && path
            .split('/')
            .all(|p| !p.is_empty() && p != "." && p != "..");
    ok.then_some(path)
}

#[cfg(test)]
mod tests {
    #[test]
    fn members_inside_and_outside() {
        let root = "file:///data/g";
        assert_eq!(super::inside(root, "a", true).as_deref(), Some("a"));
        assert_eq!(
            super::inside(root, "sub/b/", true).as_deref(),
            Some("sub/b")
        );
        assert_eq!(super::inside(root, "../x", true), None);
        assert_eq!(
            super::inside(root, "file:///data/g/c", false).as_deref(),
            Some("c")
        );
        assert_eq!(super::inside(root, "file:///data/other", false), None);
        assert_eq!(super::inside(root, "file:///data/gg/x", false), None);
        assert_eq!(
            super::inside("s3://b/g", "s3://b/g/x", false).as_deref(),
            Some("x")
        );
    }
}
