//! `values.hdr`: an ENVI header beside the `values.bin` of a dense 2-D (3-D: the first
//! dimension as bands) single-value numeric attribute, so GDAL and other raster tools
//! open `values.bin` as a raster. In merged states `values.bin` is always the box of the
//! non-empty domain in row-major order; in a fragment only where its tiles are laid out
//! that way (see [`DenseGrid::row_major_box`](crate::array::dense_grid::DenseGrid)).

use serde_json::Value;

use crate::array::field::FieldRole;
use crate::encode::value;
use crate::error::{Error, Result};
use crate::format::Datatype;
use crate::view::names;

use super::super::{ArrayTree, FieldOf, Folder};
use super::spliced::HeaderAndValues;
use super::At;

pub(super) static ENVI_HDR: HeaderAndValues = HeaderAndValues {
    name: "values.hdr",
    applies: is_raster,
    header,
    with_values: false,
};

fn is_raster(tree: &ArrayTree, of: FieldOf) -> Result<bool> {
    let f = tree.field_facts(of)?;
    if f.role != FieldRole::Attribute || f.cell_val_num != 1 || envi_type(f.datatype).is_none() {
        return Ok(false);
    }
    Ok(tree.raster(of)?.is_some())
}

/// The ENVI data type code of a datatype GDAL 3.6's ENVI driver reads (no INT8 there:
/// it has no signed byte).
fn envi_type(t: Datatype) -> Option<u8> {
    use Datatype::*;
    Some(match t {
        UInt8 => 1,
        Int16 => 2,
        Int32 => 3,
        Float32 => 4,
        Float64 => 5,
        UInt16 => 12,
        UInt32 => 13,
        Int64 => 14,
        UInt64 => 15,
        _ => return None,
    })
}

fn header(at: &At<'_, FieldOf>) -> Result<Vec<u8>> {
    let not_here = || Error::NotFound("values.hdr".into());
    let f = at.facts()?;
    let code = envi_type(f.datatype).ok_or_else(not_here)?;
    let raster = at.raster()?.ok_or_else(not_here)?;
    let (shape, low) = (&raster.shape, &raster.low);
    let n = shape.len();
    let (bands, lines, samples) = match n {
        3 => (shape[0], shape[1], shape[2]),
        _ => (1, shape[0], shape[1]),
    };
    let band_names: Vec<String> = if n == 3 {
        (0..bands)
            .map(|b| format!("{}={}", raster.dims[0], low[0] + i128::from(b)))
            .collect()
    } else {
        vec![names::encode(&f.name)]
    };
    let fill = match value::element(&f.fill, f.datatype) {
        Value::String(s) => s.to_lowercase(),
        other => other.to_string(),
    };
    let source = match at.place.folder {
        Folder::State(w) => w.map_or("latest".to_string(), |t| t.to_string()),
        Folder::Fragment(id) => format!("fragment {}", at.tree.fragment(id)?.name),
    };
    Ok(format!(
        "ENVI\n\
         description = {{fragfs: {} at {}}}\n\
         samples = {samples}\n\
         lines = {lines}\n\
         bands = {bands}\n\
         header offset = 0\n\
         file type = ENVI Standard\n\
         data type = {code}\n\
         interleave = bsq\n\
         byte order = 0\n\
         data ignore value = {fill}\n\
         band names = {{{}}}\n\
         map info = {{Arbitrary, 1, 1, {}, {}, 1, 1, 0}}\n",
        names::encode(&f.name),
        source,
        band_names.join(", "),
        low[n - 1],
        low[n - 2],
    )
    .into_bytes())
}
