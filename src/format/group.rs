//! TileDB groups: the group details files of `__group/` and how a folder is recognised
//! as a group (TileDB `format_spec/group.md`, `format_spec/group_file_hierarchy.md`,
//! `tiledb/sm/group/group_details*.cc`, `group_member*.cc`, `group.cc`,
//! `group_directory.cc`, `tiledb/sm/object/object.cc`; not in the shared spec digest).
//!
//! A group folder holds:
//! * `__tiledb_group.tdb`: an empty file (`Group::create` touches it). Before group
//!   details existed (TileDB < 2.9) it was all a group had, and the members were simply
//!   the TileDB objects in the folder.
//! * `__group/<timestamped name>`: group details files (TileDB ≥ 2.9), one per write
//!   session that changed the membership. Each is a generic tile.
//! * `__meta/`: group metadata, same format as array metadata (`super::metadata`).
//!
//! Group details payload: `u32` details version (1 or 2), `u64` member count, then the
//! members. (The public `group.md` says `u32` for the count; the code writes `u64`.)
//! Each member starts with its own `u32` version:
//!
//! | field | v1 | v2 |
//! | --- | --- | --- |
//! | object type `u8` (0 invalid, 1 group, 2 array) | ✓ | ✓ |
//! | relative `u8` | ✓ | ✓ |
//! | URI: `u64` length + bytes | ✓ | ✓ |
//! | name set `u8`, and if set `u64` length + bytes | ✓ | ✓ |
//! | deleted `u8` | | ✓ |
//!
//! Names were added to v1 members before any release wrote groups (TileDB commit
//! 87905fbe, April 2022, in 2.8.0's tree), so every v1 member on disk has the name
//! field. Version 2 (TileDB 2.15) added the deleted flag and changed how files combine:
//! see [`merge_group_details`].

use std::collections::BTreeMap;

use super::error::{FormatError, Result};
use super::metadata::FileOrder;
use super::reader::Reader;

/// The empty file that marks a folder as a group.
pub const GROUP_MARKER_FILE: &str = "__tiledb_group.tdb";
/// The folder of group details files.
pub const GROUP_DETAILS_DIR: &str = "__group";

/// TileDB's `ObjectType`, as stored in a member (`object_api_enum.h`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObjectType {
    /// Written when TileDB could not tell, e.g. for a `tiledb://` member added without
    /// a type.
    Invalid,
    Group,
    Array,
}

impl ObjectType {
    fn parse(r: &mut Reader) -> Result<ObjectType> {
        Ok(match r.u8("group member object type")? {
            0 => ObjectType::Invalid,
            1 => ObjectType::Group,
            2 => ObjectType::Array,
            other => {
                return Err(r.invalid(
                    "group member object type",
                    format!("unknown object type {other}"),
                ))
            }
        })
    }
}

/// What a folder is, by the rule of TileDB's `object_type` (`object.cc`): an array if it
/// has a `__schema` folder or an `__array_schema.tdb` file; otherwise a group if it has
/// a `__group` folder or a `__tiledb_group.tdb` file; otherwise neither. `entries` are
/// the folder's children as `(name, is_dir)`.
pub fn sniff_object_type<'a>(entries: impl IntoIterator<Item = (&'a str, bool)>) -> ObjectType {
    let (mut array, mut group) = (false, false);
    for (name, is_dir) in entries {
        match (name, is_dir) {
            ("__schema", true) | ("__array_schema.tdb", false) => array = true,
            (GROUP_DETAILS_DIR, true) | (GROUP_MARKER_FILE, false) => group = true,
            _ => {}
        }
    }
    if array {
        ObjectType::Array
    } else if group {
        ObjectType::Group
    } else {
        ObjectType::Invalid
    }
}

/// One member record of a group details file.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupMember {
    /// The member record's own version (1 or 2).
    pub version: u32,
    pub object_type: ObjectType,
    /// True when `uri` is relative to the group folder.
    pub relative: bool,
    pub uri: String,
    pub name: Option<String>,
    /// Version 2: this record removes the member. Always false for version 1.
    pub deleted: bool,
}

impl GroupMember {
    /// TileDB's key for the member (`GroupMember::key`): its name, or its URI when it
    /// has none. Adding a member with an existing key replaces it.
    pub fn key(&self) -> &str {
        self.name.as_deref().unwrap_or(&self.uri)
    }

    /// The member's URI with a relative one joined to `group_uri`, as
    /// `GroupDetails::member_by_index` returns it.
    pub fn resolved_uri(&self, group_uri: &str) -> String {
        if self.relative {
            format!("{}/{}", group_uri.trim_end_matches('/'), self.uri)
        } else {
            self.uri.clone()
        }
    }
}

/// One parsed group details file.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupDetails {
    /// 1 or 2.
    pub version: u32,
    /// The member records in file order (version 2 files include deletions).
    pub members: Vec<GroupMember>,
}

/// Smallest member record: version, type, relative, URI length, name-set flag.
const MIN_MEMBER_LEN: u64 = 4 + 1 + 1 + 8 + 1;

/// Parses the payload of one `__group/` file.
pub fn parse_group_details(payload: &[u8]) -> Result<GroupDetails> {
    let mut r = Reader::new(payload);
    let at = r.offset();
    let version = r.u32("group details version")?;
    if !(1..=2).contains(&version) {
        return Err(FormatError::Invalid {
            field: "group details version",
            offset: at,
            reason: format!("unknown version {version} (TileDB writes 1 and 2)"),
        });
    }
    let count = r.count(MIN_MEMBER_LEN, "group member count")?;
    let members = (0..count)
        .map(|_| parse_member(&mut r))
        .collect::<Result<Vec<_>>>()?;
    if !r.is_empty() {
        return Err(r.invalid(
            "group details",
            format!("{} bytes after the last member", r.remaining()),
        ));
    }
    Ok(GroupDetails { version, members })
}

fn parse_member(r: &mut Reader) -> Result<GroupMember> {
    let at = r.offset();
    let version = r.u32("group member version")?;
    if !(1..=2).contains(&version) {
        return Err(FormatError::Invalid {
            field: "group member version",
            offset: at,
            reason: format!("unknown version {version} (TileDB writes 1 and 2)"),
        });
    }
    let object_type = ObjectType::parse(r)?;
    let relative = r.bool("group member relative flag")?;
    let uri = r.string_u64("group member uri")?;
    let name = if r.bool("group member name flag")? {
        Some(r.string_u64("group member name")?)
    } else {
        None
    };
    let deleted = version >= 2 && r.bool("group member deleted flag")?;
    Ok(GroupMember {
        version,
        object_type,
        relative,
        uri,
        name,
        deleted,
    })
}

/// True when TileDB treats the group whose newest details file is `name` as a version-1
/// group (`Group::load_group_details`): the name is `__<t1>_<t2>_<uuid>` (4
/// underscores; v1 files had no version suffix until TileDB 2.19) or ends in `_1`.
pub fn details_name_is_v1(name: &str) -> bool {
    let base = name.rsplit('/').next().unwrap_or(name);
    let underscores = base.matches('_').count();
    underscores == 4 || (underscores == 5 && base.ends_with("_1"))
}

/// The members of a group as TileDB computes them when it opens the group, keyed by
/// [`GroupMember::key`].
///
/// Files are sorted by [`FileOrder`] (whatever the order of `files`). `GroupDirectory`
/// would skip `.vac` files in `__group/` and the files they list (matching whole URIs),
/// but nothing in TileDB writes them: group details are never consolidated. Then, as in
/// `Group::load_group_details`:
/// * if the newest file's name marks a version-1 group ([`details_name_is_v1`]), only
///   that file is read: a v1 writer stored the whole membership in every file. Its
///   records are applied with the rules of its own content version (v1 content adds
///   every record; v2 content as below).
/// * otherwise every file is applied in order, and each must be version 2 (TileDB
///   refuses anything else): a record adds or replaces the member of its key, and a
///   record marked deleted removes it. A v2 writer stores the membership it loaded
///   plus its changes, so removals made earlier stay removed.
pub fn merge_group_details(
    files: &[(FileOrder, GroupDetails)],
) -> Result<BTreeMap<String, GroupMember>> {
    let mut ordered: Vec<&(FileOrder, GroupDetails)> = files.iter().collect();
    ordered.sort_by(|a, b| a.0.cmp(&b.0));
    let mut members = BTreeMap::new();
    let Some((newest_name, newest)) = ordered.last().map(|(o, d)| (&o.name, d)) else {
        return Ok(members);
    };
    if details_name_is_v1(newest_name) {
        apply(&mut members, newest);
        return Ok(members);
    }
    for (order, details) in ordered {
        if details.version != 2 {
            return Err(FormatError::Invalid {
                field: "group details version",
                offset: 0,
                reason: format!(
                    "{} is version {}, but the group's newest details file makes it a \
                     version 2 group, whose files must all be version 2",
                    order.name, details.version
                ),
            });
        }
        apply(&mut members, details);
    }
    Ok(members)
}

/// `GroupDetailsV1::deserialize` adds every record; `GroupDetailsV2::deserialize`
/// removes the deleted ones.
fn apply(members: &mut BTreeMap<String, GroupMember>, details: &GroupDetails) {
    for m in &details.members {
        if details.version >= 2 && m.deleted {
            members.remove(m.key());
        } else {
            members.insert(m.key().to_string(), m.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{file_tile_payload, format_testdata};

    fn member(
        version: u32,
        kind: u8,
        relative: bool,
        uri: &str,
        name: Option<&str>,
        deleted: bool,
    ) -> Vec<u8> {
        let mut b = version.to_le_bytes().to_vec();
        b.push(kind);
        b.push(relative as u8);
        b.extend((uri.len() as u64).to_le_bytes());
        b.extend(uri.as_bytes());
        match name {
            Some(n) => {
                b.push(1);
                b.extend((n.len() as u64).to_le_bytes());
                b.extend(n.as_bytes());
            }
            None => b.push(0),
        }
        if version >= 2 {
            b.push(deleted as u8);
        }
        b
    }

    fn details(version: u32, members: &[Vec<u8>]) -> Vec<u8> {
        let mut b = version.to_le_bytes().to_vec();
        b.extend((members.len() as u64).to_le_bytes());
        for m in members {
            b.extend(m);
        }
        b
    }

    fn v1_sample() -> Vec<u8> {
        details(
            1,
            &[
                member(1, 2, true, "arr", None, false),
                member(1, 1, false, "file:///g/sub", Some("sub"), false),
            ],
        )
    }

    fn v2_sample() -> Vec<u8> {
        details(
            2,
            &[
                member(2, 2, true, "arr", Some("a"), false),
                member(2, 0, false, "tiledb://ns/x", None, true),
            ],
        )
    }

    #[test]
    fn parses_version_1() {
        let d = parse_group_details(&v1_sample()).unwrap();
        assert_eq!(d.version, 1);
        assert_eq!(
            d.members,
            vec![
                GroupMember {
                    version: 1,
                    object_type: ObjectType::Array,
                    relative: true,
                    uri: "arr".into(),
                    name: None,
                    deleted: false,
                },
                GroupMember {
                    version: 1,
                    object_type: ObjectType::Group,
                    relative: false,
                    uri: "file:///g/sub".into(),
                    name: Some("sub".into()),
                    deleted: false,
                },
            ]
        );
        assert_eq!(d.members[0].key(), "arr");
        assert_eq!(d.members[1].key(), "sub");
        assert_eq!(d.members[0].resolved_uri("file:///g/"), "file:///g/arr");
        assert_eq!(d.members[1].resolved_uri("file:///g"), "file:///g/sub");
    }

    #[test]
    fn parses_version_2() {
        let d = parse_group_details(&v2_sample()).unwrap();
        assert_eq!(d.version, 2);
        assert_eq!(d.members.len(), 2);
        let m = &d.members[1];
        assert_eq!(
            (m.version, m.object_type, m.relative, m.deleted),
            (2, ObjectType::Invalid, false, true)
        );
        assert_eq!(m.uri, "tiledb://ns/x");
        assert_eq!(d.members[0].name.as_deref(), Some("a"));
        assert!(!d.members[0].deleted);
        assert_eq!(
            parse_group_details(&details(2, &[])).unwrap().members,
            vec![]
        );
    }

    #[test]
    fn truncation_at_every_byte_is_an_error() {
        for sample in [v1_sample(), v2_sample()] {
            for cut in 0..sample.len() {
                assert!(parse_group_details(&sample[..cut]).is_err(), "cut at {cut}");
            }
            let mut long = sample.clone();
            long.push(0);
            let err = parse_group_details(&long).unwrap_err().to_string();
            assert!(err.contains("1 bytes after the last member"), "{err}");
        }
    }

    #[test]
    fn bad_versions_types_and_counts_are_errors() {
        let err = parse_group_details(&details(3, &[]))
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "invalid group details version at byte 0: unknown version 3 (TileDB writes 1 and 2)"
        );
        let err = parse_group_details(&details(2, &[member(7, 2, true, "a", None, false)]))
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("invalid group member version at byte 12"),
            "{err}"
        );
        let err = parse_group_details(&details(2, &[member(2, 3, true, "a", None, false)]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown object type 3"), "{err}");

        let mut b = 2u32.to_le_bytes().to_vec();
        b.extend(u64::MAX.to_le_bytes());
        b.extend(member(2, 2, true, "a", None, false));
        let err = parse_group_details(&b).unwrap_err().to_string();
        assert!(
            err.starts_with("invalid group member count at byte 4"),
            "{err}"
        );

        let mut b = member(2, 2, true, "", None, false);
        b[6..14].copy_from_slice(&u64::MAX.to_le_bytes());
        let err = parse_group_details(&details(2, &[b]))
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("truncated group member uri at byte 26"),
            "{err}"
        );
    }

    fn order(t: u64, version: Option<u32>) -> FileOrder {
        let suffix = version.map(|v| format!("_{v}")).unwrap_or_default();
        FileOrder::from_name(&format!(
            "__{t}_{t}_0123456789abcdef0123456789abcdef{suffix}"
        ))
        .unwrap()
    }

    #[test]
    fn version_names() {
        assert!(details_name_is_v1("__1_1_0123456789abcdef0123456789abcdef"));
        assert!(details_name_is_v1(
            "__group/__1_1_0123456789abcdef0123456789abcdef_1"
        ));
        assert!(!details_name_is_v1(
            "__1_1_0123456789abcdef0123456789abcdef_2"
        ));
    }

    #[test]
    fn version_2_groups_apply_every_file() {
        let first = parse_group_details(&details(
            2,
            &[
                member(2, 2, true, "a1", Some("a"), false),
                member(2, 2, true, "b1", Some("b"), false),
                member(2, 1, false, "file:///g/c", None, false),
            ],
        ))
        .unwrap();
        let second = parse_group_details(&details(
            2,
            &[
                member(2, 2, true, "a2", Some("a"), false),
                member(2, 2, true, "b1", Some("b"), true),
                member(2, 1, false, "file:///g/c", None, false),
            ],
        ))
        .unwrap();
        let third =
            parse_group_details(&details(2, &[member(2, 2, true, "d", None, false)])).unwrap();
        let files = vec![
            (order(3, Some(2)), third),
            (order(1, Some(2)), first.clone()),
            (order(2, Some(2)), second),
        ];
        let merged = merge_group_details(&files).unwrap();
        let keys: Vec<_> = merged.keys().cloned().collect();
        assert_eq!(keys, ["a", "d", "file:///g/c"]);
        assert_eq!(merged["a"].uri, "a2");

        // A version-1 file in a version-2 group is refused, as TileDB does.
        let v1 = parse_group_details(&v1_sample()).unwrap();
        let err = merge_group_details(&[(order(1, None), v1), (order(2, Some(2)), first)])
            .unwrap_err()
            .to_string();
        assert!(err.contains("whose files must all be version 2"), "{err}");
        assert!(merge_group_details(&[]).unwrap().is_empty());
    }

    #[test]
    fn version_1_groups_read_only_the_newest_file() {
        let old =
            parse_group_details(&details(1, &[member(1, 2, true, "old", None, false)])).unwrap();
        let new = parse_group_details(&v1_sample()).unwrap();
        for newest in [order(2, None), order(2, Some(1))] {
            let files = vec![(newest, new.clone()), (order(1, None), old.clone())];
            let merged = merge_group_details(&files).unwrap();
            let keys: Vec<_> = merged.keys().cloned().collect();
            assert_eq!(keys, ["arr", "sub"]);
        }
    }

    #[test]
    fn sniffs_arrays_and_groups() {
        assert_eq!(
            sniff_object_type([("__schema", true), ("__group", true)]),
            ObjectType::Array
        );
        assert_eq!(
            sniff_object_type([("__array_schema.tdb", false)]),
            ObjectType::Array
        );
        assert_eq!(sniff_object_type([("__group", true)]), ObjectType::Group);
        assert_eq!(
            sniff_object_type([("__tiledb_group.tdb", false), ("a", true)]),
            ObjectType::Group
        );
        assert_eq!(sniff_object_type([("__group", false)]), ObjectType::Invalid);
        assert_eq!(
            sniff_object_type([("__schema", false)]),
            ObjectType::Invalid
        );
        assert_eq!(sniff_object_type([]), ObjectType::Invalid);
    }

    /// Real files written by TileDB-Py (`testdata/generate.py`): a write adding three
    /// members, then one removing `meta_arr`.
    #[test]
    fn real_group_details() {
        let dir = format_testdata("group");
        assert_eq!(
            sniff_object_type([(GROUP_DETAILS_DIR, true), ("__meta", true)]),
            ObjectType::Group
        );
        let mut files = Vec::new();
        for entry in std::fs::read_dir(dir.join(GROUP_DETAILS_DIR)).unwrap() {
            let path = entry.unwrap().path();
            let payload = file_tile_payload(&path);
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            assert!(!details_name_is_v1(&name));
            files.push((
                FileOrder::from_name(&name).unwrap(),
                parse_group_details(&payload).unwrap(),
            ));
        }
        files.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(files.len(), 2);
        for (_, d) in &files {
            assert_eq!(d.version, 2);
            // Each v2 file repeats the membership it loaded.
            assert_eq!(d.members.len(), 3);
        }
        let removed: Vec<_> = files[1].1.members.iter().filter(|m| m.deleted).collect();
        assert_eq!(removed.len(), 1);
        assert_eq!(removed[0].key(), "meta_arr");

        let merged = merge_group_details(&files).unwrap();
        let group_uri = "file:///tmp/fragfs-testdata/grp";
        let mut seen: Vec<_> = merged
            .values()
            .map(|m| (m.resolved_uri(group_uri), m.object_type, m.name.clone()))
            .collect();
        seen.sort_by(|a, b| a.0.cmp(&b.0));
        // What TileDB-Py listed (testdata/group/group.json).
        assert_eq!(
            seen,
            vec![
                (
                    "file:///tmp/fragfs-testdata/grp/a1".to_string(),
                    ObjectType::Array,
                    Some("first".to_string())
                ),
                (
                    "file:///tmp/fragfs-testdata/grp/sub".to_string(),
                    ObjectType::Group,
                    None
                ),
            ]
        );
        assert!(merged["first"].relative);
        assert_eq!(merged["first"].uri, "a1");
    }
}
