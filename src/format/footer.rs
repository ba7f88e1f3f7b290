//! The fragment-metadata footer (`06-fragment-metadata.md` §3), versions 3 to 23, and the
//! rule that locates it in `__fragment_metadata.tdb`.

use super::error::{FormatError, Result, NEWEST_FORMAT_VERSION};
use super::reader::Reader;
use super::schema::{parse_range, ArraySchema};

/// Where the footer of a fragment-metadata file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FooterLocation {
    /// The footer has this many bytes and ends the file (pre-v10, fixed dimensions).
    Computed(u64),
    /// The file ends with a `u64` footer length (v10+, or any var-size dimension).
    Trailing,
}

/// Decides where the footer is, from the version in the fragment's *name* and its schema
/// (`get_footer_offset_and_size`).
pub fn footer_location(name_version: u32, schema: &ArraySchema) -> FooterLocation {
    if name_version >= 10 || !schema.all_dims_fixed() {
        return FooterLocation::Trailing;
    }
    let a = schema.attributes.len() as u64;
    let d = schema.dimensions.len() as u64;
    let n = a + d + 1;
    let ranges: u64 = schema
        .dimensions
        .iter()
        .map(|d| 2 * d.datatype.size())
        .sum();
    let len = match name_version {
        0..=4 => {
            let c = schema.dimensions.first().map_or(0, |d| d.datatype.size());
            4 + 1 + 1 + 2 * d * c + 8 + 8 + 8 * (a + 1) + 8 * a + 8 + 8 * (a + 1) + 8 * a + 8 * a
        }
        5 | 6 => 4 + 1 + 1 + ranges + 8 + 8 + 8 * n * 2 + 8 + 8 * n * 3,
        _ => 4 + 1 + 1 + ranges + 8 + 8 + 8 * n * 3 + 8 + 8 * n * 4,
    };
    FooterLocation::Computed(len)
}

/// One dimension's `[low, high]` raw bytes.
pub type Range = (Vec<u8>, Vec<u8>);

/// Every field of the footer, by its spec name. Lists are per slot (`06` §1).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Footer {
    pub version: u32,
    pub array_schema_name: Option<String>,
    pub dense: bool,
    pub null_non_empty_domain: bool,
    pub non_empty_domain: Vec<Range>,
    pub sparse_tile_num: u64,
    pub last_tile_cell_num: u64,
    pub has_timestamps: bool,
    pub has_delete_meta: bool,
    pub file_sizes: Vec<u64>,
    pub file_var_sizes: Vec<u64>,
    pub file_validity_sizes: Vec<u64>,
    pub rtree_offset: u64,
    pub tile_offsets_offsets: Vec<u64>,
    pub tile_var_offsets_offsets: Vec<u64>,
    pub tile_var_sizes_offsets: Vec<u64>,
    pub tile_validity_offsets_offsets: Vec<u64>,
    pub tile_min_offsets: Vec<u64>,
    pub tile_max_offsets: Vec<u64>,
    pub tile_sum_offsets: Vec<u64>,
    pub tile_null_count_offsets: Vec<u64>,
    pub fragment_min_max_sum_null_count_offset: Option<u64>,
    pub processed_conditions_offset: Option<u64>,
    /// v23 optional sections: (identifier, data).
    pub optional_sections: Vec<(u64, Vec<u8>)>,
    /// v23 sparse: offsets of the global-order min / max generic tiles, per dimension.
    pub global_order_min_offsets: Vec<u64>,
    pub global_order_max_offsets: Vec<u64>,
}

impl Footer {
    /// Number of per-field slots: attributes, `__coords`, dimensions, then `t`, `dt`, `dci`.
    pub fn slot_count(&self, schema: &ArraySchema) -> usize {
        schema.attributes.len()
            + 1
            + schema.dimensions.len()
            + self.has_timestamps as usize
            + 2 * self.has_delete_meta as usize
    }

    /// Parses a footer of version 3 or later (bytes may include the trailing length).
    pub fn parse(bytes: &[u8], schema: &ArraySchema) -> Result<Footer> {
        let mut r = Reader::new(bytes);
        let mut f = Footer {
            version: r.u32("footer version")?,
            ..Footer::default()
        };
        let v = f.version;
        if v == 1 || v == 2 {
            return Err(FormatError::Invalid {
                field: "footer version",
                offset: 0,
                reason: format!(
                    "version {v} in a footer, but versions 1 and 2 keep their metadata in one \
                     generic tile (the fragment's name claims a later version)"
                ),
            });
        }
        if !(3..=NEWEST_FORMAT_VERSION).contains(&v) {
            return Err(FormatError::UnsupportedVersion {
                what: "fragment footer",
                found: v,
            });
        }
        if v >= 10 {
            f.array_schema_name = Some(r.string_u64("array schema name")?);
        }
        f.dense = r.bool("dense")?;
        f.null_non_empty_domain = r.bool("null non-empty domain")?;
        let dims = &schema.dimensions;
        if v < 5 {
            if !f.null_non_empty_domain {
                let c = dims.first().map_or(0, |d| d.datatype.size());
                for _ in dims {
                    let lo = r.bytes(c, "non-empty domain")?.to_vec();
                    let hi = r.bytes(c, "non-empty domain")?.to_vec();
                    f.non_empty_domain.push((lo, hi));
                }
            }
        } else if !f.null_non_empty_domain {
            for d in dims {
                f.non_empty_domain.push(parse_range(
                    &mut r,
                    d.is_var(),
                    d.datatype.size(),
                    "non-empty domain",
                )?);
            }
        } else if schema.all_dims_fixed() {
            let c = dims.first().map_or(0, |d| d.datatype.size());
            r.bytes(2 * dims.len() as u64 * c, "null non-empty domain")?;
        }
        f.sparse_tile_num = r.u64("sparse tile num")?;
        f.last_tile_cell_num = r.u64("last tile cell num")?;
        if v >= 14 {
            f.has_timestamps = r.bool("has timestamps")?;
        }
        if v >= 15 {
            f.has_delete_meta = r.bool("has delete meta")?;
        }
        let a = schema.attributes.len() as u64;
        let n = f.slot_count(schema) as u64;
        let (f1, f2) = if v < 5 { (a + 1, a) } else { (n, n) };
        f.file_sizes = r.u64_vec(f1, "file sizes")?;
        f.file_var_sizes = r.u64_vec(f2, "file var sizes")?;
        if v >= 7 {
            f.file_validity_sizes = r.u64_vec(n, "file validity sizes")?;
        }
        f.rtree_offset = r.u64("R-tree offset")?;
        f.tile_offsets_offsets = r.u64_vec(f1, "tile offsets offsets")?;
        f.tile_var_offsets_offsets = r.u64_vec(f2, "tile var offsets offsets")?;
        f.tile_var_sizes_offsets = r.u64_vec(f2, "tile var sizes offsets")?;
        if v >= 7 {
            f.tile_validity_offsets_offsets = r.u64_vec(n, "tile validity offsets offsets")?;
        }
        if v >= 11 {
            f.tile_min_offsets = r.u64_vec(n, "tile min offsets")?;
            f.tile_max_offsets = r.u64_vec(n, "tile max offsets")?;
            f.tile_sum_offsets = r.u64_vec(n, "tile sum offsets")?;
            f.tile_null_count_offsets = r.u64_vec(n, "tile null count offsets")?;
        }
        if v >= 12 {
            f.fragment_min_max_sum_null_count_offset =
                Some(r.u64("fragment min/max/sum/null count offset")?);
        }
        if v >= 16 {
            f.processed_conditions_offset = Some(r.u64("processed conditions offset")?);
        }
        if v >= 23 {
            let at = r.offset();
            let count = r.u32("optional section count")?;
            r.check_count(count as u64, 12, "optional section count", at)?;
            for _ in 0..count {
                let id = r.u64("optional section id")?;
                let len = r.u32("optional section size")?;
                let data = r.bytes(len as u64, "optional section data")?.to_vec();
                if id == 0 {
                    let mut s = Reader::new(&data);
                    let d = dims.len() as u64;
                    f.global_order_min_offsets = s.u64_vec(d, "global order min offsets")?;
                    f.global_order_max_offsets = s.u64_vec(d, "global order max offsets")?;
                }
                f.optional_sections.push((id, data));
            }
        }
        Ok(f)
    }
}
