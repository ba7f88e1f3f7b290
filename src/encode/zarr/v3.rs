//! Zarr v3 metadata (the core specification, version 3): `zarr.json` of groups and
//! arrays, chunk keys `c/i/j`.

use serde_json::{json, Map, Value};

use super::dtype::fill_json;
use super::grid::ZDesc;

/// An array's `zarr.json`, with its attributes.
pub fn array(d: &ZDesc, attrs: Map<String, Value>) -> Value {
    json!({
        "zarr_format": 3,
        "node_type": "array",
        "shape": d.shape,
        "data_type": d.ty.v3,
        "chunk_grid": {
            "name": "regular",
            "configuration": { "chunk_shape": d.chunks },
        },
        "chunk_key_encoding": {
            "name": "default",
            "configuration": { "separator": "/" },
        },
        // v3 has no null fill: coordinates get 0 (xarray takes the mask from
        // `_FillValue` in the attributes, absent here).
        "fill_value": match &d.fill {
            Some(f) => fill_json(f, &d.ty),
            None => json!(0),
        },
        "codecs": [match d.ty.elements.codec() {
            Some(id) => json!({ "name": id, "configuration": {} }),
            None => json!({ "name": "bytes", "configuration": { "endian": "little" } }),
        }],
        "attributes": attrs,
        "dimension_names": d.dimension_names,
    })
}

/// The group's `zarr.json`, with its attributes.
pub fn group(attrs: Value) -> Value {
    json!({
        "zarr_format": 3,
        "node_type": "group",
        "attributes": attrs,
    })
}
