//! Array and group metadata: the files of `__meta/` (`01-array-layout.md` §8; TileDB
//! `format_spec/metadata.md`, `tiledb/sm/metadata/metadata.cc`,
//! `tiledb/sm/array/array_directory.cc`, `tiledb/sm/group/group_directory.cc`).
//!
//! Arrays and groups share the format. Every file is one generic tile whose payload is
//! a run of entries up to its end, with no count and no version field: the layout has
//! not changed since metadata appeared (TileDB 1.7, format 4), and the file names have
//! always been `__<t1>_<t2>_<uuid>` without a format-version suffix. A consolidated
//! metadata file is the same format: TileDB writes the merged map of its inputs, which
//! holds no deletions (they were applied while merging), and lists the inputs in a
//! `.vac` file of the same name.
//!
//! The parser returns each file's entries as stored; [`merge_metadata`] applies several
//! files the way TileDB does when it opens an array or group.

use std::borrow::Cow;
use std::collections::BTreeMap;

use super::commits::parse_lines;
use super::datatype::Datatype;
use super::error::Result;
use super::name::TimestampedName;
use super::reader::Reader;

/// One entry of a metadata file: a value for `key`, or the deletion of `key`.
#[derive(Debug, Clone, PartialEq)]
pub struct MetadataEntry {
    /// The key's bytes. TileDB keeps keys as `std::string` and its C API takes any
    /// NUL-terminated bytes, so a key need not be UTF-8 (TileDB-Py writes UTF-8).
    pub key: Vec<u8>,
    /// `None` when the entry deletes the key (its `deleted` byte is non-zero).
    pub value: Option<MetadataValue>,
}

impl MetadataEntry {
    pub fn is_deletion(&self) -> bool {
        self.value.is_none()
    }

    /// The key for display: lossy only for keys that are not UTF-8.
    pub fn key_lossy(&self) -> Cow<'_, str> {
        String::from_utf8_lossy(&self.key)
    }
}

/// A metadata value: `count` elements of `datatype`, little-endian as written.
#[derive(Debug, Clone, PartialEq)]
pub struct MetadataValue {
    pub datatype: Datatype,
    /// Number of elements. 0 is legal (TileDB's "zero-valued key", written when the
    /// value pointer was null or, by TileDB-Py, for an empty string); `bytes` is then
    /// empty.
    pub count: u32,
    /// `count × datatype.size()` bytes.
    pub bytes: Vec<u8>,
}

/// Parses the payload of one `__meta/` file into its entries, in file order.
///
/// Layout per entry (`Metadata::serialize`): `u32` key length, key, `u8` deleted; when
/// not deleted, `u8` datatype, `u32` value count, then `count × size` value bytes. An
/// empty payload is valid (no entries), though TileDB never writes one.
pub fn parse_metadata(payload: &[u8]) -> Result<Vec<MetadataEntry>> {
    let mut r = Reader::new(payload);
    let mut entries = Vec::new();
    while !r.is_empty() {
        let key_len = r.u32("metadata key length")?;
        let key = r.bytes(key_len as u64, "metadata key")?.to_vec();
        let deleted = r.u8("metadata deleted flag")?;
        if deleted != 0 {
            entries.push(MetadataEntry { key, value: None });
            continue;
        }
        let at = r.offset();
        let datatype = Datatype::parse(
            r.u8("metadata value datatype")?,
            "metadata value datatype",
            at,
        )?;
        let at = r.offset();
        let count = r.u32("metadata value count")?;
        // Bounds the allocation below by what is really there.
        r.check_count(count as u64, datatype.size(), "metadata value count", at)?;
        let bytes = r
            .bytes(count as u64 * datatype.size(), "metadata value")?
            .to_vec();
        entries.push(MetadataEntry {
            key,
            value: Some(MetadataValue {
                datatype,
                count,
                bytes,
            }),
        });
    }
    Ok(entries)
}

/// Where a timestamped file (a `__meta` file, a group details file) sorts among its
/// siblings.
///
/// TileDB sorts these files by their first timestamp only, with `std::sort`, so files
/// sharing `t1` come in an unspecified order (`TimestampedURI::operator<` in
/// `tiledb/sm/filesystem/uri.h`; `compute_filtered_uris` in `array_directory.cc` and
/// `group_directory.cc`). fragfs breaks such ties by `t2`, then by name, so that a view
/// never changes between two listings; this agrees with TileDB whenever TileDB's order
/// is determined.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FileOrder {
    pub t1: u64,
    pub t2: u64,
    /// The file name without its folder.
    pub name: String,
}

impl FileOrder {
    /// The order of a file named `__<t1>_<t2>_<uuid>` (with or without a `_<version>`
    /// suffix; a leading path is ignored). `None` when the name carries no timestamps.
    pub fn from_name(name: &str) -> Option<FileOrder> {
        let base = name.rsplit('/').next().unwrap_or(name);
        let parsed = TimestampedName::parse(base)?;
        Some(FileOrder {
            t1: parsed.t1,
            t2: parsed.t2,
            name: base.to_string(),
        })
    }
}

/// What a name found in `__meta/` is (`ArrayDirectory::load_array_meta_uris`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MetaFile {
    /// A metadata file, to be loaded in this order.
    Metadata(FileOrder),
    /// A `.vac` file: the metadata files it lists were consolidated into the file of
    /// the same name without `.vac` and are to be ignored.
    Vacuum(FileOrder),
    /// A `.tmp` file: TileDB writes metadata to `<name>.tmp` on local file systems and
    /// renames it when complete, so this is an unfinished write that TileDB skips.
    Partial,
    /// Anything else (TileDB would try to load it as metadata and fail).
    Unknown,
}

/// Classifies a file name of `__meta/`.
pub fn classify_meta_file(name: &str) -> MetaFile {
    let base = name.rsplit('/').next().unwrap_or(name);
    let Some(order) = FileOrder::from_name(base) else {
        return MetaFile::Unknown;
    };
    if base.ends_with(".vac") {
        MetaFile::Vacuum(order)
    } else if base.ends_with(".tmp") {
        MetaFile::Partial
    } else if base.contains('.') {
        MetaFile::Unknown
    } else {
        MetaFile::Metadata(order)
    }
}

/// The metadata files a `__meta/*.vac` file lists, as names inside `__meta/`.
///
/// The file is text, one entry per line. Array consolidation writes entries relative to
/// the array (`/__meta/<name>`) for arrays of format 19 and later, absolute URIs before;
/// group consolidation always writes absolute URIs (`ArrayMetaConsolidator::consolidate`,
/// `GroupMetaConsolidator::consolidate`). For arrays TileDB matches an entry by the part
/// from `__meta` on (`ArrayDirectory::get_full_vac_uri`), which is what this returns.
/// For groups TileDB compares whole URIs, so after a group is moved its `.vac` files no
/// longer hide anything in TileDB; fragfs applies the array rule to both, which gives
/// the same answer for a group that was not moved.
///
/// An entry that does not name a direct child of a `__meta` folder matches no metadata
/// file in TileDB either, and is left out.
pub fn parse_meta_vacuum(bytes: &[u8]) -> Vec<String> {
    parse_lines(bytes)
        .iter()
        .filter_map(|line| {
            // get_full_vac_uri looks for `__fragments` first: such an entry is resolved
            // as a fragment and never matches a metadata file.
            if line.contains("__fragments") {
                return None;
            }
            let from = line.find("__meta")?;
            let name = line[from..].strip_prefix("__meta/")?;
            (!name.is_empty() && !name.contains('/')).then(|| name.to_string())
        })
        .collect()
}

/// Applies metadata files the way TileDB loads them (`Metadata::deserialize`): in
/// [`FileOrder`] (sorted here, whatever the order of `files`), entry by entry within a
/// file, each entry first erasing its key and then, unless it is a deletion, setting
/// it. So the newest value of a key wins and a deletion removes the key until a later
/// entry sets it again.
///
/// The caller leaves out what TileDB does not load: `.tmp` and `.vac` files, and the
/// files that a `.vac` lists ([`parse_meta_vacuum`]).
pub fn merge_metadata(
    files: &[(FileOrder, Vec<MetadataEntry>)],
) -> BTreeMap<Vec<u8>, MetadataValue> {
    let mut ordered: Vec<&(FileOrder, Vec<MetadataEntry>)> = files.iter().collect();
    ordered.sort_by(|a, b| a.0.cmp(&b.0));
    let mut merged = BTreeMap::new();
    for (_, entries) in ordered {
        for entry in entries {
            merged.remove(&entry.key);
            if let Some(value) = &entry.value {
                merged.insert(entry.key.clone(), value.clone());
            }
        }
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::FormatError;
    use crate::test_support::{file_tile_payload, format_testdata, shared_corpus_or_skip};
    use std::path::Path;

    fn put(buf: &mut Vec<u8>, key: &[u8], datatype: u8, count: u32, value: &[u8]) {
        buf.extend((key.len() as u32).to_le_bytes());
        buf.extend(key);
        buf.push(0);
        buf.push(datatype);
        buf.extend(count.to_le_bytes());
        buf.extend(value);
    }

    fn del(buf: &mut Vec<u8>, key: &[u8]) {
        buf.extend((key.len() as u32).to_le_bytes());
        buf.extend(key);
        buf.push(1);
    }

    fn value(datatype: Datatype, count: u32, bytes: &[u8]) -> Option<MetadataValue> {
        Some(MetadataValue {
            datatype,
            count,
            bytes: bytes.to_vec(),
        })
    }

    /// Four entries, one buffer each.
    fn sample_entries() -> Vec<Vec<u8>> {
        let mut parts = vec![Vec::new(), Vec::new(), Vec::new(), Vec::new()];
        put(
            &mut parts[0],
            b"i",
            0,
            2,
            &[1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff],
        );
        del(&mut parts[1], b"gone");
        put(&mut parts[2], b"", 12, 0, &[]);
        put(&mut parts[3], &[0xff, b'k'], 3, 1, &2.5f64.to_le_bytes());
        parts
    }

    fn sample() -> Vec<u8> {
        sample_entries().concat()
    }

    #[test]
    fn parses_every_field() {
        let e = parse_metadata(&sample()).unwrap();
        assert_eq!(e.len(), 4);
        assert_eq!(e[0].key, b"i");
        assert_eq!(
            e[0].value,
            value(Datatype::Int32, 2, &[1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff])
        );
        assert!(e[1].is_deletion());
        assert_eq!(e[1].key_lossy(), "gone");
        assert_eq!(e[2].key, b"");
        assert_eq!(e[2].value, value(Datatype::StringUtf8, 0, &[]));
        assert_eq!(e[3].key, [0xff, b'k']);
        assert_eq!(e[3].key_lossy(), "\u{fffd}k");
        assert_eq!(
            e[3].value,
            value(Datatype::Float64, 1, &2.5f64.to_le_bytes())
        );
        assert_eq!(parse_metadata(&[]).unwrap(), vec![]);
    }

    #[test]
    fn truncation_at_every_byte_is_an_error() {
        let b = sample();
        // Entry boundaries: a cut there is a valid shorter file.
        let boundaries: Vec<usize> = sample_entries()
            .iter()
            .scan(0, |end, e| {
                *end += e.len();
                Some(*end)
            })
            .chain([0])
            .collect();
        for cut in 0..b.len() {
            let result = parse_metadata(&b[..cut]);
            if boundaries.contains(&cut) {
                assert!(result.is_ok(), "cut at {cut}");
            } else {
                assert!(
                    matches!(
                        result,
                        Err(FormatError::Truncated { .. } | FormatError::Invalid { .. })
                    ),
                    "cut at {cut}: {result:?}"
                );
            }
        }
        assert_eq!(parse_metadata(&b).unwrap().len(), 4);
    }

    #[test]
    fn bad_counts_and_datatypes_are_errors() {
        let mut b = Vec::new();
        put(&mut b, b"k", 1, u32::MAX, &[0; 16]);
        let err = parse_metadata(&b).unwrap_err().to_string();
        assert!(
            err.starts_with("invalid metadata value count at byte 7"),
            "{err}"
        );

        let mut b = Vec::new();
        put(&mut b, b"k", 44, 1, &[0]);
        let err = parse_metadata(&b).unwrap_err().to_string();
        assert_eq!(
            err,
            "invalid metadata value datatype at byte 6: unknown datatype id 44"
        );

        let mut b = u32::MAX.to_le_bytes().to_vec();
        b.extend(b"abc");
        let err = parse_metadata(&b).unwrap_err().to_string();
        assert!(err.starts_with("truncated metadata key at byte 4"), "{err}");
    }

    /// The order of `__<t1>_<t2>_<uuid>` with a 32-character uuid made of `c`.
    fn order_of(t1: u64, t2: u64, c: char) -> FileOrder {
        let uuid: String = c.to_string().repeat(32);
        FileOrder::from_name(&format!("__{t1}_{t2}_{uuid}")).unwrap()
    }

    #[test]
    fn merge_applies_files_in_timestamp_order() {
        let e = |key: &str, v: Option<i64>| MetadataEntry {
            key: key.as_bytes().to_vec(),
            value: v.and_then(|v| value(Datatype::Int64, 1, &v.to_le_bytes())),
        };
        let files = vec![
            // Given newest first: the merge sorts.
            (order_of(3, 3, 'c'), vec![e("a", None), e("c", Some(30))]),
            (
                order_of(1, 1, 'a'),
                vec![e("a", Some(1)), e("b", Some(1)), e("c", Some(1))],
            ),
            (
                order_of(2, 2, 'b'),
                vec![e("b", None), e("b", Some(2)), e("a", Some(2))],
            ),
            // Same t1 as the first file: sorts after it by t2, and overrides "d".
            (order_of(1, 2, '0'), vec![e("d", Some(12))]),
            (order_of(1, 1, 'b'), vec![e("d", Some(11))]),
        ];
        let merged = merge_metadata(&files);
        let as_i64 = |k: &str| {
            merged
                .get(k.as_bytes())
                .map(|v| i64::from_le_bytes(v.bytes.clone().try_into().unwrap()))
        };
        assert_eq!(as_i64("a"), None);
        assert_eq!(as_i64("b"), Some(2));
        assert_eq!(as_i64("c"), Some(30));
        assert_eq!(as_i64("d"), Some(12), "__1_2_ sorts after __1_1_b");
        assert_eq!(merged.len(), 3);
    }

    #[test]
    fn file_names_are_classified() {
        let o = FileOrder::from_name("__meta/__1_2_0123456789abcdef0123456789abcdef").unwrap();
        assert_eq!((o.t1, o.t2), (1, 2));
        assert_eq!(o.name, "__1_2_0123456789abcdef0123456789abcdef");
        let v2 = FileOrder::from_name("__5_6_0123456789abcdef0123456789abcdef_2").unwrap();
        assert_eq!((v2.t1, v2.t2), (5, 6));
        assert_eq!(FileOrder::from_name("__meta"), None);
        assert!(order_of(1, 1, 'a') < order_of(1, 2, 'a'));
        assert!(order_of(1, 2, 'a') < order_of(1, 2, 'b'));
        assert!(order_of(1, 9, 'a') < order_of(2, 2, 'a'));
        assert!(matches!(
            classify_meta_file("__1_2_0123456789abcdef0123456789abcdef"),
            MetaFile::Metadata(_)
        ));
        assert!(matches!(
            classify_meta_file("__1_2_0123456789abcdef0123456789abcdef.vac"),
            MetaFile::Vacuum(_)
        ));
        assert_eq!(
            classify_meta_file("__1_2_0123456789abcdef0123456789abcdef.tmp"),
            MetaFile::Partial
        );
        assert_eq!(classify_meta_file("notes.txt"), MetaFile::Unknown);
        assert_eq!(
            classify_meta_file("__1_2_0123456789abcdef0123456789abcdef.bak"),
            MetaFile::Unknown
        );
    }

    #[test]
    fn vacuum_entries_name_files_in_meta() {
        let vac = b"/__meta/__1_1_a\nfile:///data/arr/__meta/__2_2_b\r\n\n__3_3_c\n\
            s3://b/arr/__fragments/__meta/__4_4_d\n/x/__meta/sub/__5_5_e\n/x/__meta/";
        assert_eq!(parse_meta_vacuum(vac), vec!["__1_1_a", "__2_2_b"]);
    }

    /// Loads a `__meta` folder as TileDB does: classify, drop vacuumed and partial
    /// files, parse, merge.
    fn load_folder(dir: &Path) -> (usize, BTreeMap<Vec<u8>, MetadataValue>) {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        let mut vacuumed = Vec::new();
        for n in &names {
            if let MetaFile::Vacuum(_) = classify_meta_file(n) {
                vacuumed.extend(parse_meta_vacuum(&std::fs::read(dir.join(n)).unwrap()));
            }
        }
        let mut files = Vec::new();
        for n in &names {
            if let MetaFile::Metadata(o) = classify_meta_file(n) {
                if !vacuumed.contains(n) {
                    files.push((o, parse_metadata(&file_tile_payload(&dir.join(n))).unwrap()));
                }
            }
        }
        (vacuumed.len(), merge_metadata(&files))
    }

    /// Real files written by TileDB-Py (`testdata/generate.py`): two writes, a
    /// consolidation (with its `.vac`), then a deletion.
    #[test]
    fn real_array_metadata() {
        let dir = format_testdata("metadata/array");
        let mut per_file = BTreeMap::new();
        for entry in std::fs::read_dir(&dir).unwrap() {
            let name = entry.unwrap().file_name().to_string_lossy().into_owned();
            if let MetaFile::Metadata(o) = classify_meta_file(&name) {
                per_file.insert(
                    o,
                    parse_metadata(&file_tile_payload(&dir.join(&name))).unwrap(),
                );
            }
        }
        assert_eq!(per_file.len(), 4);
        // The consolidated file (t1 = 1, t2 = 2) holds the merge of the first two,
        // without deletions.
        let (consolidated, entries) = per_file.iter().nth(1).unwrap();
        assert_eq!((consolidated.t1, consolidated.t2), (1, 2));
        assert!(entries.iter().all(|e| !e.is_deletion()));
        let keys: Vec<_> = entries.iter().map(|e| e.key_lossy().into_owned()).collect();
        assert_eq!(
            keys,
            ["__np_flat_arr", "bytes", "empty", "float", "int", "str"]
        );
        // The first write: TileDB-Py also deletes its `__np_*` helper keys.
        let (_, first) = per_file.iter().next().unwrap();
        assert!(first
            .iter()
            .any(|e| e.is_deletion() && e.key == b"__np_flat_gone"));

        let (vacuumed, merged) = load_folder(&dir);
        assert_eq!(vacuumed, 2);
        let get = |k: &str| merged.get(k.as_bytes()).cloned();
        assert_eq!(get("int"), value(Datatype::Int64, 1, &8i64.to_le_bytes()));
        assert_eq!(
            get("str"),
            value(Datatype::StringUtf8, 6, "h\u{e9}llo".as_bytes())
        );
        assert_eq!(get("bytes"), value(Datatype::Blob, 2, &[0, 1]));
        // TileDB-Py stores a numpy array under `__np_flat_<key>` and shows it as `<key>`.
        assert_eq!(
            get("__np_flat_arr"),
            value(Datatype::Int16, 3, &[1, 0, 2, 0, 3, 0])
        );
        assert_eq!(get("empty"), value(Datatype::StringUtf8, 0, &[]));
        assert_eq!(get("float"), None, "deleted by the last write");
        assert_eq!(get("gone"), None, "deleted by the second write");
        // What TileDB-Py showed after the last write (testdata/metadata/array.json:
        // arr, bytes, empty, int, str).
        let keys: Vec<_> = merged.keys().map(|k| String::from_utf8_lossy(k)).collect();
        assert_eq!(keys, ["__np_flat_arr", "bytes", "empty", "int", "str"]);
    }

    #[test]
    fn real_group_metadata() {
        let (vacuumed, merged) = load_folder(&format_testdata("metadata/group"));
        assert_eq!(vacuumed, 0);
        assert_eq!(
            merged.get(&b"k"[..]).cloned(),
            value(Datatype::StringUtf8, 1, b"v")
        );
        assert_eq!(
            merged.get(&b"k2"[..]).cloned(),
            value(Datatype::Int64, 1, &3i64.to_le_bytes())
        );
        assert_eq!(merged.len(), 2);
    }

    /// Every `__meta` file of the repository's fixtures and of the shared corpus (which
    /// had none when this was written): the fixtures make sure some are parsed.
    #[test]
    fn every_metadata_file_of_the_fixtures_and_the_corpus_parses() {
        let mut stack = vec![Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")];
        stack.extend(shared_corpus_or_skip());
        let mut count = 0;
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    stack.push(path);
                } else if path.parent().and_then(|p| p.file_name()) == Some("__meta".as_ref()) {
                    let name = path.file_name().unwrap().to_string_lossy().into_owned();
                    if let MetaFile::Metadata(_) = classify_meta_file(&name) {
                        parse_metadata(&file_tile_payload(&path))
                            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                        count += 1;
                    }
                }
            }
        }
        assert!(count > 0, "no metadata file found to parse");
        println!("parsed {count} metadata files");
    }
}
