//! The fragment metadata of formats 1 and 2 (`06-fragment-metadata.md` §5): the whole
//! `__fragment_metadata.tdb` is one generic tile whose payload holds everything at once,
//! with no footer, no R-tree and no per-field generic tiles.
//!
//! fragfs turns it into the same [`Footer`] and per-slot lists that later versions
//! give, so nothing above the loader needs to know which generation wrote a fragment.

use super::error::{FormatError, Result, NEWEST_FORMAT_VERSION};
use super::footer::{Footer, Range};
use super::fragment_metadata::Mbr;
use super::reader::Reader;
use super::schema::ArraySchema;

/// Every field of a v1/v2 metadata payload, in file order. Slots are as in later
/// versions: attribute `i` is slot `i`, `__coords` is slot `A`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LegacyMetadata {
    pub version: u32,
    /// Empty when the stored domain is empty (TileDB writes none for empty fragments).
    pub non_empty_domain: Vec<Range>,
    /// One MBR per data tile of a sparse fragment (the flat list an R-tree replaced in v3).
    pub mbrs: Vec<Mbr>,
    /// A + 1 lists (attributes, then `__coords`): offset of each tile in the data file.
    pub tile_offsets: Vec<Vec<u64>>,
    /// A lists: offset of each tile in the `_var` file.
    pub tile_var_offsets: Vec<Vec<u64>>,
    /// A lists: unfiltered size of each var tile.
    pub tile_var_sizes: Vec<Vec<u64>>,
    pub last_tile_cell_num: u64,
    /// A + 1 sizes of the data files (attributes, then `__coords`).
    pub file_sizes: Vec<u64>,
    /// A sizes of the `_var` files.
    pub file_var_sizes: Vec<u64>,
}

impl LegacyMetadata {
    /// Parses the unfiltered payload of a v1/v2 `__fragment_metadata.tdb`. Dimensions all
    /// share dimension 0's type in these versions, so every range is `2 × c` bytes.
    pub fn parse(bytes: &[u8], schema: &ArraySchema) -> Result<LegacyMetadata> {
        let mut r = Reader::new(bytes);
        let version = r.u32("fragment metadata version")?;
        match version {
            1 | 2 => {}
            3..=NEWEST_FORMAT_VERSION => {
                return Err(FormatError::Invalid {
                    field: "fragment metadata version",
                    offset: 0,
                    reason: format!(
                        "version {version} in a whole-file metadata tile, a layout only \
                         versions 1 and 2 use"
                    ),
                })
            }
            found => {
                return Err(FormatError::UnsupportedVersion {
                    what: "fragment metadata",
                    found,
                })
            }
        }
        let dims = schema.dimensions.len() as u64;
        let c = schema.dimensions.first().map_or(0, |d| d.datatype.size());
        let range_len = 2 * c;

        let at = r.offset();
        let domain_len = r.u64("non-empty domain size")?;
        let domain = r.bytes(domain_len, "non-empty domain")?;
        let non_empty_domain = match domain_len {
            0 => Vec::new(),
            n if n == dims * range_len => split_ranges(domain, c),
            n => {
                return Err(FormatError::Invalid {
                    field: "non-empty domain size",
                    offset: at,
                    reason: format!(
                        "{n} bytes, but {dims} dimensions of {c}-byte coordinates need {}",
                        dims * range_len
                    ),
                })
            }
        };
        let mbrs = parse_rectangles(&mut r, dims * range_len, c, "MBR")?;
        // Bounding coords: the first and the last cell of each tile. Unused since v3
        // (and by TileDB's own v1/v2 loader), so they are only skipped.
        let bounding = r.count(dims * range_len, "bounding coords count")?;
        r.bytes(bounding as u64 * dims * range_len, "bounding coords")?;
        let a = schema.attributes.len();
        let tile_offsets = parse_lists(&mut r, a + 1, "tile offsets")?;
        let tile_var_offsets = parse_lists(&mut r, a, "tile var offsets")?;
        let tile_var_sizes = parse_lists(&mut r, a, "tile var sizes")?;
        let last_tile_cell_num = r.u64("last tile cell num")?;
        let file_sizes = r.u64_vec(a as u64 + 1, "file sizes")?;
        let file_var_sizes = r.u64_vec(a as u64, "file var sizes")?;
        Ok(LegacyMetadata {
            version,
            non_empty_domain,
            mbrs,
            tile_offsets,
            tile_var_offsets,
            tile_var_sizes,
            last_tile_cell_num,
            file_sizes,
            file_var_sizes,
        })
    }

    /// The footer a v3 writer would have written for this fragment. `dense` comes from
    /// the folder (a v1/v2 fragment is dense iff it has no `__coords.tdb`); the generic
    /// tile offsets stay empty because the lists are already in memory.
    pub fn footer(&self, dense: bool) -> Footer {
        Footer {
            version: self.version,
            dense,
            null_non_empty_domain: self.non_empty_domain.is_empty(),
            non_empty_domain: self.non_empty_domain.clone(),
            sparse_tile_num: if dense { 0 } else { self.mbrs.len() as u64 },
            last_tile_cell_num: self.last_tile_cell_num,
            file_sizes: self.file_sizes.clone(),
            file_var_sizes: self.file_var_sizes.clone(),
            ..Footer::default()
        }
    }
}

/// `[lo0, hi0, lo1, hi1, …]` with `c`-byte values, as one range per dimension.
fn split_ranges(bytes: &[u8], c: u64) -> Vec<Range> {
    bytes
        .chunks_exact(2 * c.max(1) as usize)
        .map(|pair| {
            let (lo, hi) = pair.split_at(c as usize);
            (lo.to_vec(), hi.to_vec())
        })
        .collect()
}

/// A `u64` count, then that many rectangles of `len` bytes (one range per dimension).
fn parse_rectangles(r: &mut Reader, len: u64, c: u64, field: &'static str) -> Result<Vec<Mbr>> {
    let n = r.count(len, field)?;
    (0..n)
        .map(|_| Ok(split_ranges(r.bytes(len, field)?, c)))
        .collect()
}

/// `n` lists, each a `u64` count and that many `u64` values.
fn parse_lists(r: &mut Reader, n: usize, field: &'static str) -> Result<Vec<Vec<u64>>> {
    (0..n)
        .map(|_| {
            let count = r.count(8, field)?;
            r.u64_vec(count as u64, field)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::schema::ArraySchema;

    /// The schema of TileDB's `non_split_coords_v1_4_0` test array (spec fixture
    /// README): sparse, 2 INT32 dimensions, 1 INT32 attribute, schema version 1.
    fn v1_schema() -> ArraySchema {
        let mut s = Vec::new();
        s.extend(1u32.to_le_bytes()); // version
        s.extend([1, 1, 1]); // sparse, col-major tiles and cells
        s.extend(100_000u64.to_le_bytes()); // capacity
        for _ in 0..2 {
            // coords and offsets pipelines: max chunk size, no filters
            s.extend(65536u32.to_le_bytes());
            s.extend(0u32.to_le_bytes());
        }
        s.push(2); // domain type INT32
        s.extend(2u32.to_le_bytes());
        for name in ["d1", "d2"] {
            s.extend((name.len() as u32).to_le_bytes());
            s.extend(name.as_bytes());
            s.extend(0i32.to_le_bytes());
            s.extend(10000i32.to_le_bytes());
            s.push(0);
            s.extend(10001i32.to_le_bytes());
        }
        s.extend(1u32.to_le_bytes());
        s.extend(1u32.to_le_bytes());
        s.push(b'a');
        s.push(2);
        s.extend(1u32.to_le_bytes());
        s.extend(65536u32.to_le_bytes());
        s.extend(0u32.to_le_bytes());
        ArraySchema::parse(&s).unwrap()
    }

    /// The unfiltered payload of that array's `__fragment_metadata.tdb`, written by
    /// TileDB 1.4; the README beside it lists the values hand-decoded below.
    const FIXTURE_PAYLOAD: &str = "01000000100000000000000001000000040000000a0000000a000000\
        010000000000000001000000040000000a0000000a000000010000000000000001000000\
        0a000000040000000a000000010000000000000000000000000000000100000000000000\
        000000000000000001000000000000000000000000000000010000000000000000000000\
        0000000004000000000000002400000000000000400000000000000000000000\
        00000000";

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn parses_tiledbs_v1_fixture() {
        let m = LegacyMetadata::parse(&hex(FIXTURE_PAYLOAD), &v1_schema()).unwrap();
        let i32s = |r: &Range| {
            (
                i32::from_le_bytes(r.0[..].try_into().unwrap()),
                i32::from_le_bytes(r.1[..].try_into().unwrap()),
            )
        };
        assert_eq!(m.version, 1);
        let ned: Vec<_> = m.non_empty_domain.iter().map(i32s).collect();
        assert_eq!(ned, [(1, 4), (10, 10)]);
        assert_eq!(m.mbrs.len(), 1);
        assert_eq!(
            m.mbrs[0].iter().map(i32s).collect::<Vec<_>>(),
            [(1, 4), (10, 10)]
        );
        assert_eq!(m.tile_offsets, [vec![0], vec![0]]);
        assert_eq!(m.tile_var_offsets, [vec![0]]);
        assert_eq!(m.tile_var_sizes, [vec![0]]);
        assert_eq!(m.last_tile_cell_num, 4);
        assert_eq!(m.file_sizes, [36, 64]);
        assert_eq!(m.file_var_sizes, [0]);
        let footer = m.footer(false);
        assert_eq!((footer.sparse_tile_num, footer.dense), (1, false));
    }

    #[test]
    fn refuses_bad_versions_and_lengths() {
        let schema = v1_schema();
        let mut bytes = hex(FIXTURE_PAYLOAD);
        bytes[..4].copy_from_slice(&24u32.to_le_bytes());
        let err = LegacyMetadata::parse(&bytes, &schema).unwrap_err();
        assert!(err.to_string().contains("format version 24"), "{err}");
        bytes[..4].copy_from_slice(&3u32.to_le_bytes());
        assert!(LegacyMetadata::parse(&bytes, &schema).is_err());
        // A domain size that does not fit 2 dimensions of INT32.
        let mut bytes = hex(FIXTURE_PAYLOAD);
        bytes[4] = 12;
        let err = LegacyMetadata::parse(&bytes, &schema).unwrap_err();
        assert!(err.to_string().contains("non-empty domain size"), "{err}");
        // Every truncation is an error, never a panic.
        let full = hex(FIXTURE_PAYLOAD);
        for n in 0..full.len() {
            assert!(LegacyMetadata::parse(&full[..n], &schema).is_err(), "{n}");
        }
    }
}
