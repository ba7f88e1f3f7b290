//! `values.hdr`: an ENVI header beside the `values.bin` of a dense 2-D (3-D: the first
//! dimension as bands) single-value numeric attribute, so GDAL and other raster tools
//! open `values.bin` as a raster (the header text is
//! [`crate::encode::envi`]'s). In merged states `values.bin` is always the box of the
//! non-empty domain in row-major order; in a fragment only where its tiles are laid out
//! that way (see [`DenseGrid::row_major_box`](crate::array::dense_grid::DenseGrid)).

use crate::array::field::FieldRole;
use crate::encode::envi;
use crate::error::{Error, Result};
use crate::view::names;

use super::super::array_tree::ArrayTree;
use super::super::node::{FieldOf, Folder};
use super::spliced::HeaderAndValues;
use super::At;

pub(super) static ENVI_HDR: HeaderAndValues = HeaderAndValues {
    name: "values.hdr",
    mime: "text/plain; charset=utf-8",
    applies: is_raster,
    header,
    with_values: false,
};

fn is_raster(tree: &ArrayTree, of: FieldOf) -> Result<bool> {
    let f = tree.field_facts(of)?;
    if f.role != FieldRole::Attribute
        || f.cell_val_num != 1
        || envi::envi_type(f.datatype).is_none()
    {
        return Ok(false);
    }
    Ok(tree.raster(of)?.is_some())
}

fn header(at: &At<'_, FieldOf>) -> Result<Vec<u8>> {
    let not_here = || Error::NotFound("values.hdr".into());
    let f = at.facts()?;
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
    let source = match at.place.folder {
        Folder::State(w) => w.map_or("latest".to_string(), |t| t.to_string()),
        Folder::Fragment(id) => format!("fragment {}", at.tree.fragment(id)?.name),
    };
    let text = envi::header(&envi::Raster {
        bands,
        lines,
        samples,
        datatype: f.datatype,
        ignore: &f.fill,
        description: format!("fragfs: {} at {source}", names::encode(&f.name)),
        band_names,
        origin: (low[n - 1], low[n - 2]),
    })
    .ok_or_else(not_here)?;
    Ok(text.into_bytes())
}
