//! `values.tif`: a TIFF (BigTIFF above 4 GiB) beside the `values.bin` of a dense 2-D
//! (3-D: the first dimension as bands, planar) single-value numeric attribute, the same
//! rasters as `values.hdr` (see `envi.rs`). The header is computed from metadata by
//! [`crate::encode::tiff`]; the image data that follows it is `values.bin` as it is, read
//! from the field (merged reads in a state, the fragment's tiles in a fragment), so only
//! the tiles under a read are decoded. The layout is cheap to compute (the strip arrays
//! are made only where a read asks for them), so it is computed again per read.

use serde_json::{json, Map, Value};

use crate::array::field::FieldRole;
use crate::encode::tiff::{nodata_text_float, Image, Layout, Sample};
use crate::encode::value;
use crate::error::{Error, Result};
use crate::format::schema::{ArraySchema, ArrayType, VAR_NUM};
use crate::format::Datatype;
use crate::read::RawFile;
use crate::view::names;

use super::super::array_tree::ArrayTree;
use super::super::node::{FieldOf, Folder, When};
use super::{At, Face, Summary};

pub(super) struct ValuesTif;

pub(super) static VALUES_TIF: ValuesTif = ValuesTif;

const NAME: &str = "values.tif";

/// The TIFF sample of one value of `t`, or why there is none. Datetimes and times are
/// their int64 counts (the unit is named in ImageDescription), BOOL its byte.
fn sample_of(t: Datatype) -> std::result::Result<Sample, String> {
    use Datatype::*;
    Ok(match t {
        UInt8 | Bool => Sample::uint(8),
        UInt16 => Sample::uint(16),
        UInt32 => Sample::uint(32),
        UInt64 => Sample::uint(64),
        Int8 => Sample::int(8),
        Int16 => Sample::int(16),
        Int32 => Sample::int(32),
        Int64 => Sample::int(64),
        Float32 => Sample::float(32),
        Float64 => Sample::float(64),
        t if t.is_temporal() => Sample::int(64),
        t => {
            return Err(format!(
                "datatype {}: text or bytes, no TIFF sample format",
                t.name()
            ))
        }
    })
}

/// Why an attribute of this type and cell size has no `values.tif`, or `None`.
fn why_not_field(datatype: Datatype, cell_val_num: u32) -> Option<String> {
    if cell_val_num == VAR_NUM {
        return Some(format!(
            "var-size {}: a TIFF sample has one fixed size",
            datatype.name()
        ));
    }
    if cell_val_num != 1 {
        return Some(format!(
            "{} values per cell: a TIFF pixel of one band holds one",
            cell_val_num
        ));
    }
    sample_of(datatype).err()
}

/// Why no attribute of `schema` has a `values.tif`, or `None`.
fn why_not_array(schema: &ArraySchema) -> Option<String> {
    if schema.array_type == ArrayType::Sparse {
        return Some("a sparse array: its cells are not a raster".into());
    }
    let n = schema.dimensions.len();
    if !(2..=3).contains(&n) {
        return Some(format!(
            "{n} dimensions: a TIFF raster is 2-D (3-D: the first as bands)"
        ));
    }
    None
}

/// What `array.json`'s "tiff" says: which attributes have `values.tif` in merged states
/// (and in per-fragment folders laid out as a raster), and why the others have none.
pub(in crate::view::tiledb) fn summary(schema: &ArraySchema) -> Value {
    summarize(schema, |_| None)
}

/// `read.json`'s "tiff": [`summary`] for one state, with what its box adds (nothing
/// visible yet; a shape beyond what a TIFF holds).
pub(in crate::view::tiledb) fn state_summary(schema: &ArraySchema, shape: Option<&[u64]>) -> Value {
    let Some(shape) = shape else {
        let mut v = summarize(schema, |_| None);
        if v["shown"] == true {
            v = json!({"shown": false, "why": "no cell is visible in this state: no raster"});
        }
        return v;
    };
    summarize(schema, |t| {
        let sample = sample_of(t).ok()?;
        image_of(shape, sample, String::new(), None, None).err()
    })
}

fn summarize(schema: &ArraySchema, too_big: impl Fn(Datatype) -> Option<String>) -> Value {
    if let Some(why) = why_not_array(schema) {
        return json!({"shown": false, "why": why});
    }
    let mut files = Vec::new();
    let mut not_shown = Map::new();
    for a in &schema.attributes {
        let name = names::encode(&a.name);
        match why_not_field(a.datatype, a.cell_val_num).or_else(|| too_big(a.datatype)) {
            Some(why) => {
                not_shown.insert(name, json!(why));
            }
            None => files.push(format!("{name}/{NAME}")),
        }
    }
    json!({
        "shown": !files.is_empty(),
        "files": files,
        "not_shown": not_shown,
        "dimensions": "not in the file: the pixel grid starts at the box's low corner \
                       (ModelTiepoint); a 3-D array's first dimension is the bands",
    })
}

/// The image of a raster of `shape` (2 or 3 dimensions, slowest first).
fn image_of(
    shape: &[u64],
    sample: Sample,
    description: String,
    nodata: Option<String>,
    origin: Option<(f64, f64)>,
) -> std::result::Result<Layout, String> {
    let (bands, rows, cols) = match *shape {
        [rows, cols] => (1, rows, cols),
        [bands, rows, cols] => (bands, rows, cols),
        _ => return Err(format!("{} dimensions", shape.len())),
    };
    Layout::new(Image {
        bands,
        rows,
        cols,
        sample,
        description,
        nodata,
        origin,
    })
}

/// The `GDAL_NODATA` text of a fill value of `t`.
fn nodata(fill: &[u8], t: Datatype) -> Option<String> {
    match value::element(fill, t) {
        Value::Number(n) if t.is_float() => n.as_f64().map(nodata_text_float),
        Value::Number(n) => Some(n.to_string()),
        // NaN and the infinities come spelled as strings.
        Value::String(s) => Some(match s.as_str() {
            "Infinity" => "inf".into(),
            "-Infinity" => "-inf".into(),
            _ => "nan".into(),
        }),
        _ => None,
    }
}

/// The layout of field `of`'s `values.tif`; `NotFound` where it has none.
fn layout(tree: &ArrayTree, of: FieldOf) -> Result<Layout> {
    let not_here = |why: String| Error::NotFound(format!("{NAME}: {why}"));
    let f = tree.field_facts(of)?;
    if f.role != FieldRole::Attribute {
        return Err(not_here("a dimension".into()));
    }
    if let Some(why) = why_not_field(f.datatype, f.cell_val_num) {
        return Err(not_here(why));
    }
    let sample = sample_of(f.datatype).map_err(not_here)?;
    let raster = tree
        .raster(of)?
        .ok_or_else(|| not_here("not a raster".into()))?;
    let n = raster.shape.len();
    let source = match of.folder {
        Folder::State(None) => "latest".to_string(),
        Folder::State(Some(t)) => format!("at {t}"),
        Folder::Fragment(id) => format!("fragment {}", tree.fragment(id)?.name),
    };
    // No array name: where the array lives must not change the bytes (a copy of the
    // array, or the same array in S3, serves the same file and ETag).
    let mut description = format!("fragfs: attribute {}, {source}", names::encode(&f.name));
    if f.datatype.is_temporal() {
        description.push_str(&format!(" ({} as int64)", f.datatype.name()));
    }
    if n == 3 {
        description.push_str(&format!(
            "; bands are {} from {}",
            raster.dims[0], raster.low[0]
        ));
    }
    // The pixel grid's upper-left corner, as values.hdr's `map info` gives it.
    let origin = Some((raster.low[n - 1] as f64, raster.low[n - 2] as f64));
    image_of(
        &raster.shape,
        sample,
        description,
        nodata(&f.fill, f.datatype),
        origin,
    )
    .map_err(not_here)
}

/// `array.json`'s and `read.json`'s "tiff".
static SUMMARY: Summary = Summary {
    key: "tiff",
    of_schema: summary,
    of_state: state_summary_of,
};

fn state_summary_of(tree: &ArrayTree, w: When) -> Result<Value> {
    let merged = tree.merged(w)?;
    let shape = merged.non_empty_domain().and(merged.shape());
    Ok(state_summary(&merged.schema, shape.as_deref()))
}

impl Face<FieldOf> for ValuesTif {
    fn name(&self) -> &'static str {
        NAME
    }

    fn mime(&self) -> &'static str {
        "image/tiff"
    }

    fn summary(&self) -> Option<&'static Summary> {
        Some(&SUMMARY)
    }

    fn exists(&self, tree: &ArrayTree, of: FieldOf) -> Result<bool> {
        match layout(tree, of) {
            Ok(_) => Ok(true),
            Err(Error::NotFound(_)) => Ok(false),
            Err(e) => Err(e),
        }
    }

    fn known_size(&self, at: &At<'_, FieldOf>) -> Result<Option<u64>> {
        self.size(at).map(Some)
    }

    fn size(&self, at: &At<'_, FieldOf>) -> Result<u64> {
        Ok(layout(at.tree, at.place)?.file_len())
    }

    fn read_into(
        &self,
        at: &At<'_, FieldOf>,
        offset: u64,
        len: u64,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        let l = layout(at.tree, at.place)?;
        l.read_header(offset, len, out);
        let end = offset.saturating_add(len).min(l.file_len());
        if end > l.data_offset {
            // The header describes the shape; values.bin must hold exactly that many
            // values, or the strips would end short.
            let values = at.raw_size(RawFile::Values)?;
            if values != l.data_len {
                return Err(Error::corrupt(
                    NAME,
                    format!("values.bin holds {values} bytes, the raster {}", l.data_len),
                ));
            }
            let from = offset.max(l.data_offset) - l.data_offset;
            at.read_raw(RawFile::Values, from, end - l.data_offset - from, out)?;
        }
        Ok(())
    }

    fn read_ahead(&self, at: &At<'_, FieldOf>, offset: u64, len: u64) -> Result<()> {
        let h = layout(at.tree, at.place)?.data_offset;
        let from = offset.saturating_sub(h);
        let end = offset.saturating_add(len).saturating_sub(h);
        at.read_ahead_raw(RawFile::Values, from, end.saturating_sub(from))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodata_as_gdal_writes_it() {
        let t = |b: &[u8], d| nodata(b, d).unwrap();
        assert_eq!(t(&(-9999i32).to_le_bytes(), Datatype::Int32), "-9999");
        assert_eq!(
            t(&u64::MAX.to_le_bytes(), Datatype::UInt64),
            u64::MAX.to_string()
        );
        assert_eq!(t(&f64::NAN.to_le_bytes(), Datatype::Float64), "nan");
        assert_eq!(t(&f32::NAN.to_le_bytes(), Datatype::Float32), "nan");
        assert_eq!(
            t(&(0.1f32).to_le_bytes(), Datatype::Float32),
            "0.10000000149011612"
        );
        assert_eq!(t(&[0x80], Datatype::Int8), "-128");
    }

    #[test]
    fn which_fields_have_a_tif() {
        assert!(why_not_field(Datatype::Float64, 1).is_none());
        assert!(why_not_field(Datatype::DatetimeMs, 1).is_none());
        assert!(why_not_field(Datatype::Float64, 3)
            .unwrap()
            .contains("3 values"));
        assert!(why_not_field(Datatype::Int32, VAR_NUM)
            .unwrap()
            .contains("var-size"));
        assert!(why_not_field(Datatype::StringAscii, 1)
            .unwrap()
            .contains("STRING_ASCII"));
        assert!(why_not_field(Datatype::Char, 1).unwrap().contains("CHAR"));
    }
}
