//! The array schema (`03-array-schema.md`), every version. The layout depends on the
//! schema's own version, its first field.

use super::datatype::Datatype;
use super::error::{FormatError, Result, NEWEST_FORMAT_VERSION};
use super::pipeline::FilterPipeline;
use super::reader::Reader;

/// `cell_val_num` meaning "variable size".
pub const VAR_NUM: u32 = u32::MAX;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArrayType {
    Dense,
    Sparse,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    RowMajor,
    ColMajor,
    GlobalOrder,
    Unordered,
    Hilbert,
}

impl Layout {
    fn parse(r: &mut Reader, field: &'static str) -> Result<Layout> {
        Ok(match r.u8(field)? {
            0 => Layout::RowMajor,
            1 => Layout::ColMajor,
            2 => Layout::GlobalOrder,
            3 => Layout::Unordered,
            4 => Layout::Hilbert,
            other => return Err(r.invalid(field, format!("unknown layout {other}"))),
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Layout::RowMajor => "row-major",
            Layout::ColMajor => "col-major",
            Layout::GlobalOrder => "global-order",
            Layout::Unordered => "unordered",
            Layout::Hilbert => "hilbert",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Dimension {
    pub name: String,
    pub datatype: Datatype,
    pub cell_val_num: u32,
    /// The dimension's own pipeline; empty means "use the coords filters".
    pub filters: FilterPipeline,
    /// `[low, high]` raw bytes (2 × type size); empty for string dimensions.
    pub domain: Vec<u8>,
    /// Raw tile extent (type size bytes), if any.
    pub tile_extent: Option<Vec<u8>>,
}

impl Dimension {
    pub fn is_var(&self) -> bool {
        self.cell_val_num == VAR_NUM
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Attribute {
    pub name: String,
    pub datatype: Datatype,
    pub cell_val_num: u32,
    pub filters: FilterPipeline,
    /// One cell (one element for var-size); the type default before v6.
    pub fill_value: Vec<u8>,
    pub nullable: bool,
    pub fill_value_validity: bool,
    /// DataOrder (v17+): 0 unordered, 1 increasing, 2 decreasing.
    pub order: u8,
    pub enumeration: Option<String>,
}

impl Attribute {
    pub fn is_var(&self) -> bool {
        self.cell_val_num == VAR_NUM
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct DimensionLabel {
    pub dimension_index: u32,
    pub name: String,
    pub uri_is_relative: bool,
    pub uri: String,
    pub attribute_name: String,
    pub order: u8,
    pub datatype: Datatype,
    pub cell_val_num: u32,
    pub is_external: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Enumeration {
    pub name: String,
    pub file_name: String,
}

/// The current domain (v22+): per dimension `[low, high]` raw bytes.
#[derive(Debug, Clone, PartialEq)]
pub enum CurrentDomain {
    Empty,
    NdRectangle(Vec<(Vec<u8>, Vec<u8>)>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct ArraySchema {
    pub version: u32,
    pub allows_dups: bool,
    pub array_type: ArrayType,
    pub tile_order: Layout,
    pub cell_order: Layout,
    pub capacity: u64,
    pub coords_filters: FilterPipeline,
    pub offsets_filters: FilterPipeline,
    pub validity_filters: FilterPipeline,
    pub dimensions: Vec<Dimension>,
    pub attributes: Vec<Attribute>,
    pub labels: Vec<DimensionLabel>,
    pub enumerations: Vec<Enumeration>,
    pub current_domain: Option<CurrentDomain>,
}

/// The default fill value of one element of `t` (`02-enums.md`), used before v6.
pub fn default_fill_element(t: Datatype) -> Vec<u8> {
    use Datatype::*;
    match t {
        Int32 => i32::MIN.to_le_bytes().to_vec(),
        Int64 => i64::MIN.to_le_bytes().to_vec(),
        Float32 => f32::NAN.to_le_bytes().to_vec(),
        Float64 => f64::NAN.to_le_bytes().to_vec(),
        Char | Int8 => vec![0x80],
        UInt8 => vec![0xff],
        Int16 => i16::MIN.to_le_bytes().to_vec(),
        UInt16 => u16::MAX.to_le_bytes().to_vec(),
        UInt32 => u32::MAX.to_le_bytes().to_vec(),
        UInt64 => u64::MAX.to_le_bytes().to_vec(),
        t if t.is_temporal() => i64::MIN.to_le_bytes().to_vec(),
        t => vec![0; t.size() as usize],
    }
}

fn datatype(r: &mut Reader, field: &'static str) -> Result<Datatype> {
    let at = r.offset();
    Datatype::parse(r.u8(field)?, field, at)
}

impl ArraySchema {
    /// Whether a var-size cell of one NUL byte is this format's stored empty value:
    /// libtiledb before 2.1 (formats <= 5) wrote an empty var cell so, and these schemas
    /// store no fill value, the default of a var-size string being that byte too.
    /// TileDB-Py reads such a cell as empty.
    pub fn empty_var_cell_is_nul(&self) -> bool {
        self.version <= 5
    }

    /// Parses an unfiltered schema payload.
    pub fn parse(bytes: &[u8]) -> Result<ArraySchema> {
        let mut r = Reader::new(bytes);
        let version = r.u32("schema version")?;
        if version == 0 || version > NEWEST_FORMAT_VERSION {
            return Err(FormatError::UnsupportedVersion {
                what: "array schema",
                found: version,
            });
        }
        let allows_dups = version >= 5 && r.bool("allows_dups")?;
        let array_type = match r.u8("array type")? {
            0 => ArrayType::Dense,
            1 => ArrayType::Sparse,
            other => return Err(r.invalid("array type", format!("unknown array type {other}"))),
        };
        let tile_order = Layout::parse(&mut r, "tile order")?;
        let cell_order = Layout::parse(&mut r, "cell order")?;
        let capacity = r.u64("capacity")?;
        let coords_filters = FilterPipeline::parse(&mut r)?;
        let offsets_filters = FilterPipeline::parse(&mut r)?;
        let validity_filters = if version >= 7 {
            FilterPipeline::parse(&mut r)?
        } else {
            FilterPipeline::default()
        };
        let dimensions = parse_domain(&mut r, version)?;
        let at = r.offset();
        let attribute_count = r.u32("attribute count")?;
        r.check_count(attribute_count as u64, 9, "attribute count", at)?;
        let attributes = (0..attribute_count)
            .map(|_| parse_attribute(&mut r, version))
            .collect::<Result<Vec<_>>>()?;
        let mut labels = Vec::new();
        if version >= 18 {
            let at = r.offset();
            let n = r.u32("dimension label count")?;
            r.check_count(n as u64, 30, "dimension label count", at)?;
            for _ in 0..n {
                labels.push(parse_label(&mut r)?);
            }
        }
        let mut enumerations = Vec::new();
        if version >= 20 {
            let at = r.offset();
            let n = r.u32("enumeration count")?;
            r.check_count(n as u64, 8, "enumeration count", at)?;
            for _ in 0..n {
                enumerations.push(Enumeration {
                    name: r.string_u32("enumeration name")?,
                    file_name: r.string_u32("enumeration file name")?,
                });
            }
        }
        let current_domain = if version >= 22 {
            Some(parse_current_domain(&mut r, &dimensions)?)
        } else {
            None
        };
        Ok(ArraySchema {
            version,
            allows_dups,
            array_type,
            tile_order,
            cell_order,
            capacity,
            coords_filters,
            offsets_filters,
            validity_filters,
            dimensions,
            attributes,
            labels,
            enumerations,
            current_domain,
        })
    }

    /// True when every dimension has a fixed size (needed to locate pre-v10 footers).
    pub fn all_dims_fixed(&self) -> bool {
        self.dimensions.iter().all(|d| !d.is_var())
    }

    /// The pipeline that filters a dimension's data: its own, or the coords filters
    /// when its own is empty (`03` §2).
    pub fn dimension_filters(&self, d: &Dimension) -> FilterPipeline {
        if d.filters.is_empty() {
            self.coords_filters.clone()
        } else {
            d.filters.clone()
        }
    }
}

fn parse_domain(r: &mut Reader, version: u32) -> Result<Vec<Dimension>> {
    let domain_type = if version < 5 {
        Some(datatype(r, "domain datatype")?)
    } else {
        None
    };
    let at = r.offset();
    let count = r.u32("dimension count")?;
    r.check_count(count as u64, 5, "dimension count", at)?;
    (0..count)
        .map(|_| {
            let name = r.string_u32("dimension name")?;
            let (datatype, cell_val_num, filters, domain_len) = match domain_type {
                Some(t) => (t, 1, FilterPipeline::default(), 2 * t.size()),
                None => {
                    let t = datatype(r, "dimension datatype")?;
                    let cvn = r.u32("dimension cell_val_num")?;
                    let filters = FilterPipeline::parse(r)?;
                    (t, cvn, filters, r.u64("dimension domain size")?)
                }
            };
            let domain = r.bytes(domain_len, "dimension domain")?.to_vec();
            let null_extent = r.bool("dimension null tile extent")?;
            let tile_extent = if null_extent {
                None
            } else {
                Some(r.bytes(datatype.size(), "dimension tile extent")?.to_vec())
            };
            Ok(Dimension {
                name,
                datatype,
                cell_val_num,
                filters,
                domain,
                tile_extent,
            })
        })
        .collect()
}

fn parse_attribute(r: &mut Reader, version: u32) -> Result<Attribute> {
    let name = r.string_u32("attribute name")?;
    let datatype = datatype(r, "attribute datatype")?;
    let cell_val_num = r.u32("attribute cell_val_num")?;
    let filters = FilterPipeline::parse(r)?;
    let fill_value = if version >= 6 {
        let len = r.u64("attribute fill value size")?;
        r.bytes(len, "attribute fill value")?.to_vec()
    } else {
        let one = default_fill_element(datatype);
        let n = if cell_val_num == VAR_NUM {
            1
        } else {
            cell_val_num.min(1 << 16) as usize
        };
        one.repeat(n)
    };
    let (nullable, fill_value_validity) = if version >= 7 {
        (
            r.bool("attribute nullable")?,
            r.bool("attribute fill validity")?,
        )
    } else {
        (false, false)
    };
    let order = if version >= 17 {
        r.u8("attribute order")?
    } else {
        0
    };
    let enumeration = if version >= 20 {
        let name = r.string_u32("attribute enumeration name")?;
        (!name.is_empty()).then_some(name)
    } else {
        None
    };
    Ok(Attribute {
        name,
        datatype,
        cell_val_num,
        filters,
        fill_value,
        nullable,
        fill_value_validity,
        order,
        enumeration,
    })
}

fn parse_label(r: &mut Reader) -> Result<DimensionLabel> {
    let dimension_index = r.u32("label dimension index")?;
    let name = r.string_u32("label name")?;
    let uri_is_relative = r.bool("label uri is relative")?;
    let uri = r.string_u64("label uri")?;
    let attribute_name = r.string_u32("label attribute name")?;
    let order = r.u8("label order")?;
    let datatype = datatype(r, "label datatype")?;
    let cell_val_num = r.u32("label cell_val_num")?;
    let is_external = r.bool("label is external")?;
    Ok(DimensionLabel {
        dimension_index,
        name,
        uri_is_relative,
        uri,
        attribute_name,
        order,
        datatype,
        cell_val_num,
        is_external,
    })
}

fn parse_current_domain(r: &mut Reader, dims: &[Dimension]) -> Result<CurrentDomain> {
    let _version = r.u32("current domain version")?;
    if r.bool("current domain empty")? {
        return Ok(CurrentDomain::Empty);
    }
    let kind = r.u8("current domain type")?;
    if kind != 0 {
        return Err(r.invalid("current domain type", format!("unknown type {kind}")));
    }
    let ranges = dims
        .iter()
        .map(|d| parse_range(r, d.is_var(), d.datatype.size(), "current domain range"))
        .collect::<Result<Vec<_>>>()?;
    Ok(CurrentDomain::NdRectangle(ranges))
}

/// One `[low, high]` range: fixed → 2 × size bytes; var → `u64` total, `u64` low size,
/// then the bytes (`NDRectangle::deserialize_ndranges`).
pub fn parse_range(
    r: &mut Reader,
    var: bool,
    size: u64,
    field: &'static str,
) -> Result<(Vec<u8>, Vec<u8>)> {
    if var {
        let total = r.u64(field)?;
        let at = r.offset();
        let low_len = r.u64(field)?;
        if low_len > total {
            return Err(FormatError::Invalid {
                field,
                offset: at,
                reason: format!("low value of {low_len} bytes exceeds the range's {total}"),
            });
        }
        let bytes = r.bytes(total, field)?;
        let (lo, hi) = bytes.split_at(low_len as usize);
        Ok((lo.to_vec(), hi.to_vec()))
    } else {
        let lo = r.bytes(size, field)?.to_vec();
        let hi = r.bytes(size, field)?.to_vec();
        Ok((lo, hi))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The worked example of `03-array-schema.md` §9 (schema v10).
    #[test]
    fn parses_the_spec_example() {
        let hex = "0a000000 00 01 00 00 1027000000000000
            00000100 01000000 02 05000000 02 ffffffff
            00000100 01000000 02 05000000 02 ffffffff
            00000100 01000000 04 05000000 04 ffffffff
            01000000
            01000000 64 0b ffffffff 00000100 00000000 0000000000000000 01
            01000000
            01000000 61 00 01000000 00000100 00000000 0400000000000000 00000080 00 00";
        let bytes: Vec<u8> = hex
            .split_whitespace()
            .flat_map(|w| {
                (0..w.len())
                    .step_by(2)
                    .map(move |i| u8::from_str_radix(&w[i..i + 2], 16).unwrap())
            })
            .collect();
        let s = ArraySchema::parse(&bytes).unwrap();
        assert_eq!(s.version, 10);
        assert_eq!(s.array_type, ArrayType::Sparse);
        assert_eq!(s.capacity, 10000);
        assert_eq!(s.dimensions[0].name, "d");
        assert!(s.dimensions[0].is_var());
        assert_eq!(s.attributes[0].fill_value, i32::MIN.to_le_bytes());
        assert!(!s.attributes[0].nullable);
    }

    #[test]
    fn rejects_unknown_versions() {
        let err = ArraySchema::parse(&24u32.to_le_bytes()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "unsupported array schema format version 24 (fragfs reads versions 1 to 23)"
        );
        assert!(ArraySchema::parse(&0u32.to_le_bytes()).is_err());
    }
}
