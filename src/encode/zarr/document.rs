//! The metadata files of the store, either version: which file is which, and each
//! one's document (the versions' own spellings are in [`super::v2`] and [`super::v3`]).

use serde_json::{json, Map, Value};

use super::description::Description;
use super::grid::ZDesc;
use super::{v2, v3};

/// A metadata file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ZMeta {
    /// `.zgroup` (v2 group).
    Zgroup,
    /// `.zarray` (v2 array).
    Zarray,
    /// `.zattrs` (v2 attributes).
    Zattrs,
    /// `zarr.json` (v3 group or array).
    ZarrJson,
}

impl ZMeta {
    /// The file's name, the one place listings, lookups and messages take it from.
    pub fn file_name(self) -> &'static str {
        match self {
            ZMeta::Zgroup => ".zgroup",
            ZMeta::Zarray => ".zarray",
            ZMeta::Zattrs => ".zattrs",
            ZMeta::ZarrJson => "zarr.json",
        }
    }
}

impl ZDesc {
    /// The array's metadata file `meta` (`.zarray`, `.zattrs` or `zarr.json`).
    pub fn document(&self, meta: ZMeta) -> Value {
        let mut attrs = Map::new();
        if let Some(units) = self.ty.units {
            attrs.insert("units".into(), json!(units));
        }
        attrs.insert("tiledb_datatype".into(), json!(self.ty.datatype.name()));
        match meta {
            ZMeta::Zarray => v2::zarray(self),
            ZMeta::Zattrs => v2::zattrs(self, attrs),
            ZMeta::Zgroup | ZMeta::ZarrJson => v3::array(self, attrs),
        }
    }
}

impl Description {
    /// The group's metadata file `meta`: where the store comes from (`array`, the
    /// timestamp `w`, the schema's name) and the attributes it leaves out, with why.
    pub fn group_document(
        &self,
        meta: ZMeta,
        array: &str,
        w: Option<u64>,
        schema_name: &str,
    ) -> Value {
        let attrs = json!({
            "tiledb": {
                "array": array,
                "timestamp": w,
                "schema": schema_name,
                "not_shown": self
                    .not_shown
                    .iter()
                    .map(|(n, why)| (n.clone(), json!(why)))
                    .collect::<Map<_, _>>(),
            }
        });
        match meta {
            ZMeta::Zgroup => v2::zgroup(),
            ZMeta::Zattrs => attrs,
            ZMeta::Zarray | ZMeta::ZarrJson => v3::group(attrs),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encode::zarr::testing::*;

    #[test]
    fn array_documents_in_both_versions() {
        let store = grid_store();
        let a = array(&store, "a");
        let v2 = a.document(ZMeta::Zarray);
        assert_eq!(v2["zarr_format"], 2);
        assert_eq!(v2["shape"], json!([20, 36]));
        assert_eq!(v2["chunks"], json!([3, 4]));
        assert_eq!(v2["dtype"], "<i4");
        assert_eq!(v2["fill_value"], -1);
        assert_eq!(v2["dimension_separator"], ".");
        let attrs = a.document(ZMeta::Zattrs);
        assert_eq!(attrs["_ARRAY_DIMENSIONS"], json!(["x", "y"]));
        assert_eq!(attrs["tiledb_datatype"], "INT32");
        let v3 = a.document(ZMeta::ZarrJson);
        assert_eq!(v3["zarr_format"], 3);
        assert_eq!(v3["node_type"], "array");
        assert_eq!(v3["data_type"], "int32");
        assert_eq!(
            v3["chunk_grid"]["configuration"]["chunk_shape"],
            json!([3, 4])
        );
        assert_eq!(v3["chunk_key_encoding"]["configuration"]["separator"], "/");
        assert_eq!(v3["fill_value"], -1);
        assert_eq!(v3["dimension_names"], json!(["x", "y"]));
        // Datetimes: NumPy's unit in v2, int64 plus units in v3.
        let t = array(&store, "t");
        assert_eq!(t.document(ZMeta::Zarray)["dtype"], "<M8[ms]");
        assert_eq!(t.document(ZMeta::Zarray)["fill_value"], i64::MIN);
        assert_eq!(t.document(ZMeta::ZarrJson)["attributes"]["units"], "ms");
        // Coordinates: no fill in v2 (xarray would mask), 0 in v3 (no null there).
        let x = array(&store, "x");
        assert_eq!(x.document(ZMeta::Zarray)["fill_value"], Value::Null);
        assert_eq!(x.document(ZMeta::ZarrJson)["fill_value"], 0);
        assert_eq!(x.document(ZMeta::Zattrs)["_ARRAY_DIMENSIONS"], json!(["x"]));
    }

    #[test]
    fn documents_of_strings_bytes_and_cells_of_several_values() {
        let mut schema = grid();
        schema.attributes.extend([
            attr("b", Datatype::Char, VAR_NUM, false, vec![0x80]),
            attr("code", Datatype::Char, 2, false, vec![0x80, 0x80]),
        ]);
        let store = store_of(&schema);
        // Strings: the VLenUTF8 filter (v2), the vlen-utf8 codec (v3); the fill value
        // is TileDB's, one NUL byte, as a string.
        let s = array(&store, "s");
        let v2 = s.document(ZMeta::Zarray);
        assert_eq!(v2["dtype"], "|O");
        assert_eq!(v2["filters"], json!([{ "id": "vlen-utf8" }]));
        assert_eq!(v2["compressor"], Value::Null);
        assert_eq!(v2["fill_value"], "\u{0}");
        let v3 = s.document(ZMeta::ZarrJson);
        assert_eq!(v3["data_type"], "string");
        assert_eq!(
            v3["codecs"],
            json!([{ "name": "vlen-utf8", "configuration": {} }])
        );
        assert_eq!(v3["fill_value"], "\u{0}");
        // Bytes: vlen-bytes, the fill in base64 (0x80).
        let b = array(&store, "b");
        assert_eq!(b.document(ZMeta::Zarray)["filters"][0]["id"], "vlen-bytes");
        assert_eq!(b.document(ZMeta::Zarray)["fill_value"], "gA==");
        let v3 = b.document(ZMeta::ZarrJson);
        assert_eq!(v3["data_type"], "variable_length_bytes");
        assert_eq!(v3["codecs"][0]["name"], "vlen-bytes");
        assert_eq!(v3["fill_value"], "gA==");
        // CHAR x 2: fixed-length bytes, through the bytes codec.
        let code = array(&store, "code");
        assert_eq!(code.document(ZMeta::Zarray)["dtype"], "|S2");
        assert_eq!(code.document(ZMeta::Zarray)["filters"], Value::Null);
        assert_eq!(code.document(ZMeta::Zarray)["fill_value"], "gIA=");
        let v3 = code.document(ZMeta::ZarrJson);
        assert_eq!(v3["data_type"]["name"], "null_terminated_bytes");
        assert_eq!(v3["data_type"]["configuration"]["length_bytes"], 2);
        assert_eq!(v3["codecs"][0]["name"], "bytes");
        // Two floats a cell: a last dimension, named for xarray.
        let pair = array(&store, "pair");
        assert_eq!(pair.document(ZMeta::Zarray)["shape"], json!([20, 36, 2]));
        assert_eq!(pair.document(ZMeta::Zarray)["chunks"], json!([3, 4, 2]));
        assert_eq!(
            pair.document(ZMeta::Zattrs)["_ARRAY_DIMENSIONS"],
            json!(["x", "y", "pair__values"])
        );
        assert_eq!(
            pair.document(ZMeta::ZarrJson)["dimension_names"],
            json!(["x", "y", "pair__values"])
        );
        assert_eq!(pair.document(ZMeta::ZarrJson)["fill_value"], 0.0);
    }

    #[test]
    fn group_documents_say_where_the_store_comes_from() {
        let store = grid_store();
        let attrs = store.group_document(ZMeta::Zattrs, "/data/a", Some(5), "__schema_1");
        assert_eq!(attrs["tiledb"]["array"], "/data/a");
        assert_eq!(attrs["tiledb"]["timestamp"], 5);
        assert_eq!(attrs["tiledb"]["schema"], "__schema_1");
        assert!(attrs["tiledb"]["not_shown"]["vi"]
            .as_str()
            .unwrap()
            .starts_with("var-size INT32"));
        assert_eq!(
            store.group_document(ZMeta::Zgroup, "", None, ""),
            json!({ "zarr_format": 2 })
        );
        let v3 = store.group_document(ZMeta::ZarrJson, "", None, "");
        assert_eq!(v3["node_type"], "group");
        assert_eq!(v3["attributes"]["tiledb"]["timestamp"], Value::Null);
    }
}
