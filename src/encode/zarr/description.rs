//! The description of a dense state's Zarr store, built from its schema and fields in
//! this one place: which arrays it has (and which attributes it leaves out, and why),
//! their names, types, grids and fill values.

use std::collections::BTreeSet;

use serde_json::{json, Map, Value};

use super::dtype::{attribute_type, ztype};
use super::grid::{ZArray, ZDesc};
use crate::format::datatype::decode_int;
use crate::format::schema::{ArraySchema, ArrayType};
use crate::format::Datatype;

/// How a field's name is shown as a file name (the tree's rule: the writer names files
/// but does not choose how).
pub type Shown = fn(&str) -> String;

/// Cells per chunk of a coordinate array (its chunking is free: 8 MiB of int64).
pub const COORD_CHUNK: u64 = 1 << 20;

/// The store of a merged dense state: its arrays, and what it does not show and why.
pub struct Description {
    pub arrays: Vec<ZDesc>,
    pub not_shown: Vec<(String, String)>,
}

impl Description {
    /// Array `a`, if this state has it (a node looked up before a rescan may name an
    /// array the schema no longer has).
    pub fn get(&self, a: ZArray) -> Option<&ZDesc> {
        self.arrays.iter().find(|d| d.array == a)
    }
}

/// What the store needs of one field of a merged state (its index among the state's
/// fields names it in [`ZArray`]).
pub struct ZField<'a> {
    pub index: usize,
    pub name: &'a str,
    /// An attribute (else a dimension: only attributes have arrays of values).
    pub attribute: bool,
    pub datatype: Datatype,
    pub cell_val_num: u32,
    pub nullable: bool,
    /// One cell, and its validity.
    pub fill: &'a [u8],
    pub fill_valid: bool,
}

/// Per dimension of a dense schema: its domain (first, last) and tile extent, or why
/// the array has no Zarr store.
fn schema_grid(schema: &ArraySchema) -> Result<Vec<(i128, i128, u64)>, String> {
    if schema.array_type != ArrayType::Dense {
        return Err("a sparse array (Zarr needs a dense grid)".into());
    }
    schema
        .dimensions
        .iter()
        .map(|d| {
            let t = d.datatype;
            let size = t.size() as usize;
            let lo = d.domain.get(..size).and_then(|b| decode_int(b, t));
            let hi = d.domain.get(size..2 * size).and_then(|b| decode_int(b, t));
            let (Some(lo), Some(hi)) = (lo, hi) else {
                return Err(format!("dimension {}: not an integer domain", d.name));
            };
            let len = u64::try_from(hi - lo + 1)
                .map_err(|_| format!("dimension {}: a domain of more than 2^64 cells", d.name))?;
            let extent = match &d.tile_extent {
                Some(b) => decode_int(b, t)
                    .and_then(|e| u64::try_from(e).ok())
                    .filter(|&e| e > 0)
                    .ok_or_else(|| format!("dimension {}: a bad tile extent", d.name))?,
                // No extent: one tile spans the domain.
                None => len,
            };
            Ok((lo, hi, extent))
        })
        .collect()
}

/// Whether a schema's arrays have a Zarr store, or why not.
pub fn has_store(schema: &ArraySchema) -> Result<(), String> {
    schema_grid(schema).map(|_| ())
}

/// What `array.json` says of `zarr/`: the arrays shown, and those not shown with why
/// (the rules of [`describe`], over the schema's own fields).
pub fn summary(schema: &ArraySchema, shown: Shown) -> Value {
    match describe(schema, &schema_fields(schema), shown) {
        Err(why) => json!({ "shown": false, "why": why }),
        Ok(store) => json!({
            "shown": true,
            "arrays": store.arrays.iter().map(|d| d.name.clone()).collect::<Vec<_>>(),
            "not_shown": store
                .not_shown
                .iter()
                .map(|(n, why)| (n.clone(), json!(why)))
                .collect::<Map<_, _>>(),
        }),
    }
}

/// The fields a merged state of `schema` has, as the store needs them: dimensions,
/// then attributes, with the schema's fill values.
pub fn schema_fields(schema: &ArraySchema) -> Vec<ZField<'_>> {
    let dims = schema.dimensions.iter().map(|d| ZField {
        index: 0,
        name: &d.name,
        attribute: false,
        datatype: d.datatype,
        cell_val_num: d.cell_val_num,
        nullable: false,
        fill: &[],
        fill_valid: true,
    });
    let attrs = schema.attributes.iter().map(|a| ZField {
        index: 0,
        name: &a.name,
        attribute: true,
        datatype: a.datatype,
        cell_val_num: a.cell_val_num,
        nullable: a.nullable,
        fill: &a.fill_value,
        fill_valid: a.fill_value_validity,
    });
    dims.chain(attrs)
        .enumerate()
        .map(|(index, f)| ZField { index, ..f })
        .collect()
}

/// The name of a nullable attribute's validity array.
fn validity_name(shown: Shown, attr: &str) -> String {
    format!("{}__validity", shown(attr))
}

/// The name of the last dimension of an attribute with several values per cell.
fn values_dimension(attr: &str) -> String {
    format!("{attr}__values")
}

/// The store of a state with this schema and these fields, or why it has none.
pub fn describe(
    schema: &ArraySchema,
    fields: &[ZField<'_>],
    shown: Shown,
) -> Result<Description, String> {
    let grid = schema_grid(schema)?;
    let dimension_names: Vec<String> = schema.dimensions.iter().map(|d| d.name.clone()).collect();
    let origin: Vec<i128> = grid.iter().map(|g| g.0).collect();
    let shape: Vec<u64> = grid.iter().map(|g| (g.1 - g.0 + 1) as u64).collect();
    let chunks: Vec<u64> = grid.iter().map(|g| g.2).collect();
    let mut arrays = Vec::new();
    let mut not_shown = Vec::new();
    let taken: BTreeSet<String> = fields.iter().map(|f| shown(f.name)).collect();
    let taken_raw: BTreeSet<&str> = fields.iter().map(|f| f.name).collect();
    for f in fields {
        if !f.attribute {
            continue;
        }
        let (ty, values) = match attribute_type(f.datatype, f.cell_val_num) {
            Ok(t) => t,
            Err(why) => {
                not_shown.push((shown(f.name), why));
                continue;
            }
        };
        // A cell of several values adds a last dimension (the validity has none).
        let (mut a_shape, mut a_chunks, mut a_names) =
            (shape.clone(), chunks.clone(), dimension_names.clone());
        let mut fill = f.fill.to_vec();
        let mut every_chunk = false;
        if let Some(n) = values {
            let dim = values_dimension(f.name);
            if taken_raw.contains(dim.as_str()) || dimension_names.contains(&dim) {
                not_shown.push((
                    shown(f.name),
                    format!("its values' dimension {dim}: the name of another field"),
                ));
                continue;
            }
            a_shape.push(n);
            a_chunks.push(n);
            a_names.push(dim);
            // Zarr's fill value is one element: a fill cell of differing values (or
            // of the wrong size) is written out in every chunk instead.
            let size = ty.size as usize;
            fill = f.fill.get(..size).unwrap_or_default().to_vec();
            every_chunk = f.fill.len() as u64 != n * ty.size
                || f.fill.chunks(size.max(1)).any(|v| v != &fill[..]);
        }
        // Formats <= 5: a var cell of one NUL byte, the fill value included, is empty.
        let nul_is_empty = ty.size == 0 && schema.empty_var_cell_is_nul();
        if nul_is_empty && fill == [0] {
            fill.clear();
        }
        arrays.push(ZDesc {
            name: shown(f.name),
            array: ZArray::Values(f.index),
            ty,
            origin: origin.clone(),
            shape: a_shape,
            chunks: a_chunks,
            fill: Some(fill),
            dimension_names: a_names,
            every_chunk,
            nul_is_empty,
        });
        if f.nullable {
            let name = validity_name(shown, f.name);
            if taken.contains(&name) {
                not_shown.push((name, "the name of another field".into()));
                continue;
            }
            arrays.push(ZDesc {
                name,
                array: ZArray::Validity(f.index),
                ty: ztype(Datatype::UInt8).ok_or("uint8 has no Zarr type")?,
                origin: origin.clone(),
                shape: shape.clone(),
                chunks: chunks.clone(),
                fill: Some(vec![u8::from(f.fill_valid)]),
                dimension_names: dimension_names.clone(),
                every_chunk: false,
                nul_is_empty: false,
            });
        }
    }
    for (d, dim) in schema.dimensions.iter().enumerate() {
        let Some(ty) = ztype(dim.datatype) else {
            not_shown.push((
                shown(&dim.name),
                format!("datatype {}", dim.datatype.name()),
            ));
            continue;
        };
        arrays.push(ZDesc {
            name: shown(&dim.name),
            array: ZArray::Coords(d),
            ty,
            origin: vec![origin[d]],
            shape: vec![shape[d]],
            chunks: vec![shape[d].clamp(1, COORD_CHUNK)],
            fill: None,
            dimension_names: vec![dim.name.clone()],
            every_chunk: true,
            nul_is_empty: false,
        });
    }
    Ok(Description { arrays, not_shown })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encode::zarr::testing::*;

    #[test]
    fn the_store_shows_attributes_and_dimensions() {
        let store = grid_store();
        let names: Vec<&str> = store.arrays.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["a", "a__validity", "s", "pair", "t", "x", "y"]);
        // Field indexes count the dimensions first, as the merged state's fields do.
        assert_eq!(array(&store, "a").array, ZArray::Values(2));
        assert_eq!(array(&store, "a__validity").array, ZArray::Validity(2));
        assert_eq!(array(&store, "y").array, ZArray::Coords(1));
        let why: Vec<(&str, &str)> = store
            .not_shown
            .iter()
            .map(|(n, w)| (n.as_str(), w.as_str()))
            .collect();
        assert_eq!(
            why,
            [(
                "vi",
                "var-size INT32: Zarr's variable-length types hold strings and bytes"
            )]
        );
        let validity = array(&store, "a__validity");
        assert_eq!(validity.ty.v2, "|u1");
        assert_eq!(validity.fill, Some(vec![0]));
        // A string: the domain's shape and chunks, its fill value one element.
        let s = array(&store, "s");
        assert_eq!(
            (s.shape.clone(), s.chunks.clone()),
            (vec![20, 36], vec![3, 4])
        );
        assert_eq!(s.fill, Some(vec![0]));
        assert_eq!(s.fixed_chunk_bytes(), None);
        assert_eq!(s.chunk_cells(), 12);
    }

    #[test]
    fn a_cell_of_several_values_is_one_more_dimension() {
        let mut s = grid();
        s.attributes.push(attr(
            "rgb",
            Datatype::Float32,
            3,
            true,
            [1f32, 1., 1.]
                .iter()
                .flat_map(|f| f.to_le_bytes())
                .collect(),
        ));
        s.attributes.push(attr(
            "odd_fill",
            Datatype::Int16,
            2,
            false,
            [7i16, -7].iter().flat_map(|v| v.to_le_bytes()).collect(),
        ));
        let store = store_of(&s);
        let rgb = array(&store, "rgb");
        assert_eq!(
            (
                rgb.shape.clone(),
                rgb.chunks.clone(),
                rgb.dimension_names.clone()
            ),
            (
                vec![20, 36, 3],
                vec![3, 4, 3],
                vec!["x".into(), "y".into(), "rgb__values".into()]
            )
        );
        assert_eq!(rgb.origin.len(), 2);
        assert_eq!((rgb.cell_bytes(), rgb.chunk_cells()), (12, 12));
        assert_eq!(rgb.fixed_chunk_bytes(), Some(3 * 4 * 12));
        // The fill value is one element: the cell's values are all 1.0.
        assert_eq!(rgb.fill, Some(1f32.to_le_bytes().to_vec()));
        assert!(!rgb.every_chunk);
        // The validity is one byte per cell: no values dimension.
        let validity = array(&store, "rgb__validity");
        assert_eq!(
            (validity.shape.clone(), validity.cell_bytes()),
            (vec![20, 36], 1)
        );
        // Chunks: the values dimension has one chunk, 0; regions are the domain's.
        let written = vec![vec![(2, 4), (0, 2)]];
        assert_eq!(
            rgb.chunk_files(&written).into_iter().collect::<Vec<_>>(),
            [vec![0, 1, 0], vec![1, 1, 0]]
        );
        assert!(rgb.chunk_exists(&written, &[1, 1, 0]));
        assert!(!rgb.chunk_exists(&written, &[1, 1, 1]));
        assert_eq!(rgb.region(&[1, 1, 0]), [(4, 6), (-1, 2)]);
        // A fill of differing values is no one element: every chunk has a file.
        let odd = array(&store, "odd_fill");
        assert!(odd.every_chunk);
        assert_eq!(odd.fill, Some(7i16.to_le_bytes().to_vec()));
        assert!(odd.chunk_exists(&[], &[6, 8, 0]));
        assert_eq!(odd.chunk_files(&[]).len(), 7 * 9);
        // A values dimension named like a field: not shown, and why.
        s.attributes
            .push(attr("rgb__values", Datatype::UInt8, 1, false, vec![0]));
        let store = store_of(&s);
        assert!(store.get(ZArray::Values(7)).is_none());
        assert!(store.not_shown.contains(&(
            "rgb".into(),
            "its values' dimension rgb__values: the name of another field".into()
        )));
    }

    #[test]
    fn a_validity_name_taken_by_a_field_is_not_shown() {
        let mut s = grid();
        s.attributes
            .push(attr("a__validity", Datatype::UInt8, 1, false, vec![0]));
        let store = store(&s, &fields(&s)).unwrap();
        assert!(store
            .not_shown
            .contains(&("a__validity".into(), "the name of another field".into())));
        assert_eq!(array(&store, "a__validity").array, ZArray::Values(7));
    }

    #[test]
    fn no_store_for_sparse_or_ungriddable_schemas() {
        let sparse = schema(ArrayType::Sparse, grid().dimensions, Vec::new());
        assert!(store(&sparse, &[]).err().unwrap().contains("sparse"));
        assert_eq!(summary_of(&sparse)["shown"], false);
        let float = schema(
            ArrayType::Dense,
            vec![Dimension {
                domain: [0f64.to_le_bytes(), 1f64.to_le_bytes()].concat(),
                ..dim("f", Datatype::Float64, 0, 0, None)
            }],
            Vec::new(),
        );
        assert_eq!(
            has_store(&float).err().as_deref(),
            Some("dimension f: not an integer domain")
        );
        let zero = schema(
            ArrayType::Dense,
            vec![dim("x", Datatype::Int32, 0, 9, Some(0))],
            Vec::new(),
        );
        assert_eq!(
            has_store(&zero).err().as_deref(),
            Some("dimension x: a bad tile extent")
        );
        let huge = schema(
            ArrayType::Dense,
            vec![dim("x", Datatype::Int64, i64::MIN, i64::MAX, None)],
            Vec::new(),
        );
        assert!(has_store(&huge).err().unwrap().contains("more than 2^64"));
    }

    #[test]
    fn summary_names_what_is_shown_and_why_the_rest_is_not() {
        let s = summary_of(&grid());
        assert_eq!(s["shown"], true);
        assert_eq!(
            s["arrays"],
            json!(["a", "a__validity", "s", "pair", "t", "x", "y"])
        );
        assert_eq!(s["not_shown"].as_object().unwrap().len(), 1);
        assert!(s["not_shown"]["vi"]
            .as_str()
            .unwrap()
            .starts_with("var-size INT32"));
        let mut strings = grid();
        strings.attributes = vec![attr("c", Datatype::StringAscii, 1, false, vec![0])];
        assert_eq!(
            summary_of(&strings)["not_shown"]["c"],
            "datatype STRING_ASCII: no Zarr data type"
        );
        // The store's rules: a validity name taken by a field is not shown.
        let mut taken = grid();
        taken
            .attributes
            .push(attr("a__validity", Datatype::UInt8, 1, false, vec![0]));
        assert_eq!(
            summary_of(&taken)["not_shown"]["a__validity"],
            "the name of another field"
        );
    }

    /// Formats <= 5: a var cell of one NUL byte is the stored empty value and the fill
    /// value; the store gives it as empty, as TileDB-Py reads it. Later formats keep it.
    #[test]
    fn a_nul_fill_of_formats_up_to_5_is_empty() {
        let mut s = grid();
        let of = |s: &ArraySchema| {
            let d = store(s, &fields(s)).unwrap();
            let a = d.arrays.iter().find(|a| a.name == "s").unwrap();
            (a.fill.clone(), a.nul_is_empty)
        };
        assert_eq!(of(&s), (Some(vec![0]), false));
        s.version = 5;
        assert!(s.empty_var_cell_is_nul());
        assert_eq!(of(&s), (Some(vec![]), true));
        let x = store(&s, &fields(&s)).unwrap();
        assert!(x
            .arrays
            .iter()
            .filter(|a| a.name != "s")
            .all(|a| !a.nul_is_empty));
    }
}
