//! Zarr v2 metadata (the storage specification, version 2): `.zgroup`, `.zarray` and
//! `.zattrs`, chunk keys `i.j`.

use serde_json::{json, Map, Value};

use super::dtype::fill_json;
use super::grid::ZDesc;

/// An array's `.zarray`. Objects (`|O`) are written by their codec, a filter in v2.
pub fn zarray(d: &ZDesc) -> Value {
    json!({
        "zarr_format": 2,
        "shape": d.shape,
        "chunks": d.chunks,
        "dtype": d.ty.v2,
        "compressor": null,
        "fill_value": d.fill.as_ref().map(|f| fill_json(f, &d.ty)),
        "order": "C",
        "filters": d.ty.elements.codec().map(|id| json!([{ "id": id }])),
        "dimension_separator": ".",
    })
}

/// An array's `.zattrs`: its attributes, and its dimensions' names as xarray reads them.
pub fn zattrs(d: &ZDesc, mut attrs: Map<String, Value>) -> Value {
    attrs.insert("_ARRAY_DIMENSIONS".into(), json!(d.dimension_names));
    Value::Object(attrs)
}

/// The group's `.zgroup`.
pub fn zgroup() -> Value {
    json!({ "zarr_format": 2 })
}
