//! The Zarr store of a dense state, as pure maths over its schema and fields: which
//! arrays it has (and which attributes it leaves out, and why), their data types, chunk
//! grids and fill values, chunk keys, and the metadata documents. Nothing here reads a
//! byte of the array, so every rule is unit-tested without one on disk; `zarr.rs` puts
//! these facts in the tree and reads the chunks.

use std::collections::BTreeSet;
use std::fmt;

use serde_json::{json, Map, Value};

use crate::array::field::FieldRole;
use crate::encode::{npy, value};
use crate::format::datatype::decode_int;
use crate::format::schema::{ArraySchema, ArrayType, VAR_NUM};
use crate::format::Datatype;
use crate::view::names;

/// Cells per chunk of a coordinate array (its chunking is free: 8 MiB of int64).
const COORD_CHUNK: u64 = 1 << 20;

/// Coordinate arrays list every chunk up to this many (beyond, those under fragments;
/// any other chunk still opens by name).
const COORD_LIST_ALL: u64 = 4096;

/// An array of the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(in crate::view::tiledb) enum ZArray {
    /// A fixed-size attribute's values (index among the merged fields).
    Values(usize),
    /// A nullable attribute's validity bytes, `<attr>__validity` (merged field index).
    Validity(usize),
    /// A dimension's coordinates (dimension index).
    Coords(usize),
}

/// Names an array in messages where its name is not at hand (a node that outlived the
/// state it was looked up in).
impl fmt::Display for ZArray {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ZArray::Values(i) => write!(f, "the values of field {i}"),
            ZArray::Validity(i) => write!(f, "the validity of field {i}"),
            ZArray::Coords(d) => write!(f, "the coordinates of dimension {d}"),
        }
    }
}

/// A metadata file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(in crate::view::tiledb) enum ZMeta {
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
    pub(super) fn file_name(self) -> &'static str {
        match self {
            ZMeta::Zgroup => ".zgroup",
            ZMeta::Zarray => ".zarray",
            ZMeta::Zattrs => ".zattrs",
            ZMeta::ZarrJson => "zarr.json",
        }
    }
}

/// How a Zarr array's elements lie in its chunk files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Elements {
    /// Fixed-size, little-endian, back to back: v3's `bytes` codec, v2 with no filter.
    Fixed,
    /// Variable-length strings: numcodecs' `VLenUTF8` (a v2 filter on dtype `|O`),
    /// v3's `vlen-utf8` codec (data type `string`).
    VlenUtf8,
    /// Variable-length bytes: `VLenBytes` (v2), `vlen-bytes` (v3,
    /// `variable_length_bytes`).
    VlenBytes,
}

impl Elements {
    /// The codec's id (v2 filter and v3 codec alike) of a variable-length type.
    pub(super) fn codec(self) -> Option<&'static str> {
        match self {
            Elements::Fixed => None,
            Elements::VlenUtf8 => Some("vlen-utf8"),
            Elements::VlenBytes => Some("vlen-bytes"),
        }
    }
}

/// The data type of a Zarr array: v2's NumPy `dtype`, v3's `data_type`, the element
/// size, and what the attributes add (v3 has no datetime type: int64 plus units).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ZType {
    pub(super) v2: String,
    /// A name, or (fixed-length bytes) a name with its configuration.
    pub(super) v3: Value,
    /// Bytes per element; 0 for variable-length ones.
    pub(super) size: u64,
    pub(super) units: Option<&'static str>,
    pub(super) datatype: Datatype,
    pub(super) elements: Elements,
}

/// The Zarr type of one value of a TileDB datatype, or `None` where Zarr has none
/// (strings, blobs, geometries, `ANY`: [`attribute_type`] gives strings theirs).
pub(super) fn ztype(t: Datatype) -> Option<ZType> {
    use Datatype::*;
    let (v2, v3) = match t {
        Int8 => ("|i1", "int8"),
        UInt8 => ("|u1", "uint8"),
        Int16 => ("<i2", "int16"),
        UInt16 => ("<u2", "uint16"),
        Int32 => ("<i4", "int32"),
        UInt32 => ("<u4", "uint32"),
        Int64 => ("<i8", "int64"),
        UInt64 => ("<u8", "uint64"),
        Float32 => ("<f4", "float32"),
        Float64 => ("<f8", "float64"),
        Bool => ("|b1", "bool"),
        t if t.is_datetime() || t.is_time() => {
            let unit = npy::unit_code(t);
            let kind = if t.is_datetime() { "M8" } else { "m8" };
            return Some(ZType {
                v2: format!("<{kind}[{unit}]"),
                v3: json!("int64"),
                size: 8,
                units: Some(unit),
                datatype: t,
                elements: Elements::Fixed,
            });
        }
        _ => return None,
    };
    Some(ZType {
        v2: v2.to_string(),
        v3: json!(v3),
        size: t.size(),
        units: None,
        datatype: t,
        elements: Elements::Fixed,
    })
}

/// The Zarr type of an attribute, and how many values a cell holds when that is more
/// than one (they become a last dimension), or why Zarr has no type for it:
///
/// * var-size STRING_UTF8 and STRING_ASCII: variable-length strings (ASCII is UTF-8);
///   var-size CHAR: variable-length bytes (CHAR holds any bytes);
/// * CHAR of `n` per cell: one fixed-length `n`-byte string per cell, NumPy's `|Sn`,
///   as TileDB-Py reads it (v3: `null_terminated_bytes`);
/// * `n` values of a numeric or time type: `n` elements along a last dimension.
pub(super) fn attribute_type(
    t: Datatype,
    cell_val_num: u32,
) -> Result<(ZType, Option<u64>), String> {
    let vlen = |v2: &str, v3: &str, elements| ZType {
        v2: v2.to_string(),
        v3: json!(v3),
        size: 0,
        units: None,
        datatype: t,
        elements,
    };
    match (t, cell_val_num) {
        (Datatype::StringUtf8 | Datatype::StringAscii, VAR_NUM) => {
            Ok((vlen("|O", "string", Elements::VlenUtf8), None))
        }
        (Datatype::Char, VAR_NUM) => Ok((
            vlen("|O", "variable_length_bytes", Elements::VlenBytes),
            None,
        )),
        (t, VAR_NUM) => Err(format!(
            "var-size {}: Zarr's variable-length types hold strings and bytes",
            t.name()
        )),
        (Datatype::Char, n) => Ok((
            ZType {
                v2: format!("|S{n}"),
                v3: json!({
                    "name": "null_terminated_bytes",
                    "configuration": { "length_bytes": n },
                }),
                size: u64::from(n),
                units: None,
                datatype: t,
                elements: Elements::Fixed,
            },
            None,
        )),
        (t, n) => {
            let ty = ztype(t).ok_or_else(|| format!("datatype {}: no Zarr data type", t.name()))?;
            match n {
                0 => Err("0 values per cell".into()),
                1 => Ok((ty, None)),
                n => Ok((ty, Some(u64::from(n)))),
            }
        }
    }
}

/// One array of the store: its name, type, grid and fill value.
pub(super) struct ZDesc {
    pub(super) name: String,
    pub(super) array: ZArray,
    pub(super) ty: ZType,
    /// Per dimension of the domain: the coordinate of index 0.
    pub(super) origin: Vec<i128>,
    /// Per Zarr dimension: the domain's, then (several values per cell) the values of
    /// a cell: the length and the chunk length.
    pub(super) shape: Vec<u64>,
    pub(super) chunks: Vec<u64>,
    /// One element, or `None` (v2 `null`: coordinate arrays, which xarray would
    /// otherwise mask where a coordinate equals it).
    pub(super) fill: Option<Vec<u8>>,
    pub(super) dimension_names: Vec<String>,
    /// Every chunk has a file, written or not: coordinate arrays, and arrays whose
    /// fill (a cell of several values that differ) no one element can say.
    pub(super) every_chunk: bool,
}

impl ZDesc {
    /// Chunks per dimension (the last one may be partial).
    pub(super) fn chunk_counts(&self) -> Vec<u64> {
        self.shape
            .iter()
            .zip(&self.chunks)
            .map(|(&n, &c)| n.div_ceil(c.max(1)))
            .collect()
    }

    /// Cells of the domain per chunk (Zarr chunks are whole, even past the shape's
    /// end), saturating.
    pub(super) fn chunk_cells(&self) -> u64 {
        self.chunks[..self.origin.len()]
            .iter()
            .try_fold(1u64, |n, &c| n.checked_mul(c))
            .unwrap_or(u64::MAX)
    }

    /// Bytes per cell of the domain: one element, or a cell's values.
    pub(super) fn cell_bytes(&self) -> u64 {
        self.shape[self.origin.len()..]
            .iter()
            .try_fold(self.ty.size, |n, &c| n.checked_mul(c))
            .unwrap_or(u64::MAX)
    }

    /// The size of every chunk file of fixed-size elements (saturating); `None` for
    /// variable-length ones, whose size is known once the chunk is rendered.
    pub(super) fn fixed_chunk_bytes(&self) -> Option<u64> {
        match self.ty.elements {
            Elements::Fixed => Some(self.chunk_cells().saturating_mul(self.cell_bytes())),
            Elements::VlenUtf8 | Elements::VlenBytes => None,
        }
    }

    /// The box (first and last coordinate per dimension of the domain) chunk `c`
    /// covers; with fewer coordinates than dimensions, the leading dimensions' part of
    /// it. (A cell's values are whole in every chunk: their coordinate is always 0.)
    pub(super) fn region(&self, c: &[u64]) -> Vec<(i128, i128)> {
        c.iter()
            .zip(&self.origin)
            .zip(&self.chunks)
            .map(|((&k, &o), &n)| {
                let lo = o + i128::from(k) * i128::from(n);
                (lo, lo + i128::from(n) - 1)
            })
            .collect()
    }

    /// The chunk index range (inclusive) that a box of coordinates meets along `d`,
    /// clamped to the grid (a fragment's box never leaves the domain, but a bad one
    /// must not name chunks that do not exist).
    pub(super) fn chunk_span(&self, d: usize, (lo, hi): (i128, i128)) -> (u64, u64) {
        let n = i128::from(self.chunks[d].max(1));
        let first = ((lo - self.origin[d]).max(0) / n) as u64;
        let last = ((hi - self.origin[d]).max(0) / n) as u64;
        let count = self.chunk_counts()[d];
        (
            first.min(count.saturating_sub(1)),
            last.min(count.saturating_sub(1)),
        )
    }

    /// Whether chunk `c` (or, with fewer coordinates, a v3 key folder's leading ones)
    /// has a file, given the boxes the visible fragments wrote: every chunk of an
    /// array that has them all; data chunks when some fragment wrote inside their box
    /// (the rest readers fill with the fill value themselves).
    pub(super) fn chunk_exists(&self, written: &[Vec<(i128, i128)>], c: &[u64]) -> bool {
        let counts = self.chunk_counts();
        if c.len() > counts.len() || c.iter().zip(&counts).any(|(k, n)| k >= n) {
            return false;
        }
        if self.every_chunk {
            return true;
        }
        let region = self.region(c);
        written.iter().any(|dom| {
            dom.iter()
                .zip(&region)
                .all(|(&(lo, hi), &(a, b))| lo <= b && a <= hi)
        })
    }

    /// The chunks that have a file, in key order. Only the written boxes are walked,
    /// never the whole grid, so a listing costs what the fragments cover; an array
    /// with every chunk lists them all up to [`COORD_LIST_ALL`] (beyond, those under
    /// the written boxes: any other still opens by name).
    pub(super) fn chunk_files(&self, written: &[Vec<(i128, i128)>]) -> BTreeSet<Vec<u64>> {
        let mut out = BTreeSet::new();
        for spans in self.chunk_boxes(written) {
            odometer(&spans, &mut out);
        }
        out
    }

    /// The keys one level below `prefix` in the `c/` folders (v3) of the chunks that
    /// have a file: what [`ZDesc::chunk_files`] would give there, found from the boxes'
    /// spans without listing every chunk (a walk of a million-chunk grid's folders
    /// would otherwise list the million once per folder).
    pub(super) fn next_keys(&self, written: &[Vec<(i128, i128)>], prefix: &[u64]) -> BTreeSet<u64> {
        let k = prefix.len();
        self.chunk_boxes(written)
            .into_iter()
            .filter(|spans| {
                k < spans.len()
                    && prefix
                        .iter()
                        .zip(spans)
                        .all(|(c, &(lo, hi))| lo <= *c && *c <= hi)
            })
            .flat_map(|spans| spans[k].0..=spans[k].1)
            .collect()
    }

    /// The boxes of chunk indexes (inclusive spans per dimension) whose chunks have a
    /// file: the whole grid when every chunk has one (and the grid is small enough to
    /// list, [`COORD_LIST_ALL`]), else those under each written box.
    fn chunk_boxes(&self, written: &[Vec<(i128, i128)>]) -> Vec<Vec<(u64, u64)>> {
        let counts = self.chunk_counts();
        let all = counts
            .iter()
            .try_fold(1u64, |n, &c| n.checked_mul(c))
            .is_some_and(|n| n <= COORD_LIST_ALL);
        let whole: Vec<(u64, u64)> = counts.iter().map(|&n| (0, n.saturating_sub(1))).collect();
        if self.every_chunk && all {
            return vec![whole];
        }
        written
            .iter()
            .filter_map(|dom| match self.array {
                ZArray::Coords(dim) => dom.get(dim).map(|&range| vec![self.chunk_span(0, range)]),
                // The dimensions of the domain, then a cell's values: one chunk.
                _ => Some(
                    (0..counts.len())
                        .map(|k| match dom.get(k) {
                            Some(&range) if k < self.origin.len() => self.chunk_span(k, range),
                            _ => whole[k],
                        })
                        .collect(),
                ),
            })
            .collect()
    }

    /// The array's metadata file `meta` (`.zarray`, `.zattrs` or `zarr.json`).
    pub(super) fn document(&self, meta: ZMeta) -> Value {
        let mut attrs = Map::new();
        if let Some(units) = self.ty.units {
            attrs.insert("units".into(), json!(units));
        }
        attrs.insert("tiledb_datatype".into(), json!(self.ty.datatype.name()));
        let codec = self.ty.elements.codec();
        match meta {
            ZMeta::Zarray => json!({
                "zarr_format": 2,
                "shape": self.shape,
                "chunks": self.chunks,
                "dtype": self.ty.v2,
                "compressor": null,
                "fill_value": self.fill.as_ref().map(|f| fill_json(f, &self.ty)),
                "order": "C",
                // Objects (`|O`) are written by their codec, a filter in v2.
                "filters": codec.map(|id| json!([{ "id": id }])),
                "dimension_separator": ".",
            }),
            ZMeta::Zattrs => {
                attrs.insert("_ARRAY_DIMENSIONS".into(), json!(self.dimension_names));
                Value::Object(attrs)
            }
            ZMeta::Zgroup | ZMeta::ZarrJson => json!({
                "zarr_format": 3,
                "node_type": "array",
                "shape": self.shape,
                "data_type": self.ty.v3,
                "chunk_grid": {
                    "name": "regular",
                    "configuration": { "chunk_shape": self.chunks },
                },
                "chunk_key_encoding": {
                    "name": "default",
                    "configuration": { "separator": "/" },
                },
                // v3 has no null fill: coordinates get 0 (xarray takes the mask from
                // `_FillValue` in the attributes, absent here).
                "fill_value": match &self.fill {
                    Some(f) => fill_json(f, &self.ty),
                    None => json!(0),
                },
                "codecs": [match codec {
                    Some(id) => json!({ "name": id, "configuration": {} }),
                    None => json!({ "name": "bytes", "configuration": { "endian": "little" } }),
                }],
                "attributes": attrs,
                "dimension_names": self.dimension_names,
            }),
        }
    }
}

/// Adds every chunk of the box `spans` (per dimension, the first and last index).
fn odometer(spans: &[(u64, u64)], out: &mut BTreeSet<Vec<u64>>) {
    let mut c: Vec<u64> = spans.iter().map(|s| s.0).collect();
    'odometer: loop {
        out.insert(c.clone());
        for k in (0..c.len()).rev() {
            if c[k] < spans[k].1 {
                c[k] += 1;
                continue 'odometer;
            }
            c[k] = spans[k].0;
        }
        break;
    }
}

/// The store of a merged dense state: its arrays, and what it does not show and why.
pub(super) struct ZStore {
    pub(super) arrays: Vec<ZDesc>,
    pub(super) not_shown: Vec<(String, String)>,
}

impl ZStore {
    /// Array `a`, if this state has it (a node looked up before a rescan may name an
    /// array the schema no longer has).
    pub(super) fn get(&self, a: ZArray) -> Option<&ZDesc> {
        self.arrays.iter().find(|d| d.array == a)
    }

    /// The group's metadata file `meta`: where the store comes from (`array`, the
    /// timestamp `w`, the schema's name) and the attributes it leaves out, with why.
    pub(super) fn group_document(
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
            ZMeta::Zgroup => json!({ "zarr_format": 2 }),
            ZMeta::Zattrs => attrs,
            ZMeta::Zarray | ZMeta::ZarrJson => json!({
                "zarr_format": 3,
                "node_type": "group",
                "attributes": attrs,
            }),
        }
    }
}

/// What the store needs of one field of a merged state (its index among the state's
/// fields names it in [`ZArray`]).
pub(super) struct ZField<'a> {
    pub(super) index: usize,
    pub(super) name: &'a str,
    pub(super) role: FieldRole,
    pub(super) datatype: Datatype,
    pub(super) cell_val_num: u32,
    pub(super) nullable: bool,
    /// One cell, and its validity.
    pub(super) fill: &'a [u8],
    pub(super) fill_valid: bool,
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
pub(super) fn has_store(schema: &ArraySchema) -> Result<(), String> {
    schema_grid(schema).map(|_| ())
}

/// What `array.json` says of `zarr/`: the arrays shown, and those not shown with why
/// (the rules of [`store`], over the schema's own fields).
pub(in crate::view::tiledb) fn summary(schema: &ArraySchema) -> Value {
    match store(schema, &schema_fields(schema)) {
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
pub(super) fn schema_fields(schema: &ArraySchema) -> Vec<ZField<'_>> {
    let dims = schema.dimensions.iter().map(|d| ZField {
        index: 0,
        name: &d.name,
        role: FieldRole::Dimension,
        datatype: d.datatype,
        cell_val_num: d.cell_val_num,
        nullable: false,
        fill: &[],
        fill_valid: true,
    });
    let attrs = schema.attributes.iter().map(|a| ZField {
        index: 0,
        name: &a.name,
        role: FieldRole::Attribute,
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
fn validity_name(attr: &str) -> String {
    format!("{}__validity", names::encode(attr))
}

/// The name of the last dimension of an attribute with several values per cell.
fn values_dimension(attr: &str) -> String {
    format!("{attr}__values")
}

/// The store of a state with this schema and these fields, or why it has none.
pub(super) fn store(schema: &ArraySchema, fields: &[ZField<'_>]) -> Result<ZStore, String> {
    let grid = schema_grid(schema)?;
    let dimension_names: Vec<String> = schema.dimensions.iter().map(|d| d.name.clone()).collect();
    let origin: Vec<i128> = grid.iter().map(|g| g.0).collect();
    let shape: Vec<u64> = grid.iter().map(|g| (g.1 - g.0 + 1) as u64).collect();
    let chunks: Vec<u64> = grid.iter().map(|g| g.2).collect();
    let mut arrays = Vec::new();
    let mut not_shown = Vec::new();
    let taken: BTreeSet<String> = fields.iter().map(|f| names::encode(f.name)).collect();
    let taken_raw: BTreeSet<&str> = fields.iter().map(|f| f.name).collect();
    for f in fields {
        if f.role != FieldRole::Attribute {
            continue;
        }
        let (ty, values) = match attribute_type(f.datatype, f.cell_val_num) {
            Ok(t) => t,
            Err(why) => {
                not_shown.push((names::encode(f.name), why));
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
                    names::encode(f.name),
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
        arrays.push(ZDesc {
            name: names::encode(f.name),
            array: ZArray::Values(f.index),
            ty,
            origin: origin.clone(),
            shape: a_shape,
            chunks: a_chunks,
            fill: Some(fill),
            dimension_names: a_names,
            every_chunk,
        });
        if f.nullable {
            let name = validity_name(f.name);
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
            });
        }
    }
    for (d, dim) in schema.dimensions.iter().enumerate() {
        let Some(ty) = ztype(dim.datatype) else {
            not_shown.push((
                names::encode(&dim.name),
                format!("datatype {}", dim.datatype.name()),
            ));
            continue;
        };
        arrays.push(ZDesc {
            name: names::encode(&dim.name),
            array: ZArray::Coords(d),
            ty,
            origin: vec![origin[d]],
            shape: vec![shape[d]],
            chunks: vec![shape[d].clamp(1, COORD_CHUNK)],
            fill: None,
            dimension_names: vec![dim.name.clone()],
            every_chunk: true,
        });
    }
    Ok(ZStore { arrays, not_shown })
}

/// Parses chunk key coordinates (`sep` between them), in range of `counts`. Only the
/// canonical spelling counts (`01`, `+1` and `1.` are not keys), so one chunk has one
/// name.
pub(super) fn parse_key(name: &str, sep: char, counts: &[u64]) -> Option<Vec<u64>> {
    let parts: Vec<u64> = name
        .split(sep)
        .map(|p| p.parse::<u64>().ok().filter(|v| v.to_string() == p))
        .collect::<Option<_>>()?;
    (parts.len() == counts.len() && parts.iter().zip(counts).all(|(p, n)| p < n)).then_some(parts)
}

/// A v2 chunk key: `i.j`.
pub(super) fn key_v2(c: &[u64]) -> String {
    c.iter().map(u64::to_string).collect::<Vec<_>>().join(".")
}

/// A v3 chunk key (or key folder, with fewer coordinates): `c/i/j`.
pub(super) fn key_v3(c: &[u64]) -> String {
    std::iter::once("c".to_string())
        .chain(c.iter().map(u64::to_string))
        .collect::<Vec<_>>()
        .join("/")
}

/// A fill value as Zarr metadata has it: a number (NaN and infinities as strings), a
/// boolean for bool; datetimes as their int64; a string for variable-length strings
/// (invalid UTF-8 replaced, as in their chunks); base64 for bytes, fixed-length or not
/// (zarr-python's spelling in both versions).
fn fill_json(bytes: &[u8], ty: &ZType) -> Value {
    match (ty.elements, ty.datatype) {
        (Elements::VlenUtf8, _) => json!(String::from_utf8_lossy(bytes)),
        (Elements::VlenBytes, _) | (Elements::Fixed, Datatype::Char) => {
            json!(value::base64(bytes))
        }
        (Elements::Fixed, Datatype::Bool) => json!(bytes.first().copied().unwrap_or(0) != 0),
        _ if ty.units.is_some() => value::element(bytes, Datatype::Int64),
        (Elements::Fixed, t) => value::element(bytes, t),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::schema::{Attribute, Dimension};

    fn dim(name: &str, t: Datatype, lo: i64, hi: i64, extent: Option<i64>) -> Dimension {
        let size = t.size() as usize;
        let bytes = |v: i64| v.to_le_bytes()[..size].to_vec();
        Dimension {
            name: name.into(),
            datatype: t,
            cell_val_num: 1,
            filters: Default::default(),
            domain: [bytes(lo), bytes(hi)].concat(),
            tile_extent: extent.map(bytes),
        }
    }

    fn attr(
        name: &str,
        t: Datatype,
        cell_val_num: u32,
        nullable: bool,
        fill: Vec<u8>,
    ) -> Attribute {
        Attribute {
            name: name.into(),
            datatype: t,
            cell_val_num,
            filters: Default::default(),
            fill_value: fill,
            nullable,
            fill_value_validity: false,
            order: 0,
            enumeration: None,
        }
    }

    fn schema(
        array_type: ArrayType,
        dimensions: Vec<Dimension>,
        attributes: Vec<Attribute>,
    ) -> ArraySchema {
        ArraySchema {
            version: 22,
            allows_dups: false,
            array_type,
            tile_order: crate::format::schema::Layout::RowMajor,
            cell_order: crate::format::schema::Layout::RowMajor,
            capacity: 10000,
            coords_filters: Default::default(),
            offsets_filters: Default::default(),
            validity_filters: Default::default(),
            dimensions,
            attributes,
            labels: Vec::new(),
            enumerations: Vec::new(),
            current_domain: None,
        }
    }

    fn fields(schema: &ArraySchema) -> Vec<ZField<'_>> {
        schema_fields(schema)
    }

    /// x in 1..=20 by tiles of 3, y in -5..=30 by tiles of 4; a nullable int32 `a`
    /// (fill -1), a var-size string, a pair of floats, a timestamp and var-size int32s.
    fn grid() -> ArraySchema {
        schema(
            ArrayType::Dense,
            vec![
                dim("x", Datatype::Int32, 1, 20, Some(3)),
                dim("y", Datatype::Int64, -5, 30, Some(4)),
            ],
            vec![
                attr(
                    "a",
                    Datatype::Int32,
                    1,
                    true,
                    (-1i32).to_le_bytes().to_vec(),
                ),
                attr("s", Datatype::StringUtf8, VAR_NUM, false, vec![0]),
                attr("pair", Datatype::Float64, 2, false, vec![0; 16]),
                attr(
                    "t",
                    Datatype::DatetimeMs,
                    1,
                    false,
                    i64::MIN.to_le_bytes().to_vec(),
                ),
                attr("vi", Datatype::Int32, VAR_NUM, false, vec![0; 4]),
            ],
        )
    }

    fn grid_store() -> ZStore {
        let s = grid();
        store(&s, &fields(&s)).unwrap()
    }

    fn array<'s>(store: &'s ZStore, name: &str) -> &'s ZDesc {
        store.arrays.iter().find(|d| d.name == name).unwrap()
    }

    #[test]
    fn dtypes_map_to_both_zarr_versions() {
        let t = |t| ztype(t).map(|z| (z.v2, z.v3, z.size, z.units));
        let some = |v2: &str, v3: &str, size, units| Some((v2.to_string(), json!(v3), size, units));
        assert_eq!(t(Datatype::Int8), some("|i1", "int8", 1, None));
        assert_eq!(t(Datatype::UInt16), some("<u2", "uint16", 2, None));
        assert_eq!(t(Datatype::Int32), some("<i4", "int32", 4, None));
        assert_eq!(t(Datatype::UInt64), some("<u8", "uint64", 8, None));
        assert_eq!(t(Datatype::Float32), some("<f4", "float32", 4, None));
        assert_eq!(t(Datatype::Bool), some("|b1", "bool", 1, None));
        // v3 has no datetimes: int64, with the unit in the attributes.
        assert_eq!(
            t(Datatype::DatetimeMs),
            some("<M8[ms]", "int64", 8, Some("ms"))
        );
        assert_eq!(t(Datatype::TimeNs), some("<m8[ns]", "int64", 8, Some("ns")));
        assert_eq!(t(Datatype::DatetimeDay).map(|z| z.0), Some("<M8[D]".into()));
        for none in [
            Datatype::StringAscii,
            Datatype::Char,
            Datatype::Blob,
            Datatype::Any,
        ] {
            assert_eq!(t(none), None, "{none:?}");
        }
    }

    #[test]
    fn strings_bytes_and_cells_of_several_values_have_zarr_types() {
        let t =
            |t, n| attribute_type(t, n).map(|(z, values)| (z.v2, z.v3, z.size, z.elements, values));
        // Var-size strings: v2 objects with the VLenUTF8 filter, v3 `string`.
        for s in [Datatype::StringUtf8, Datatype::StringAscii] {
            assert_eq!(
                t(s, VAR_NUM),
                Ok(("|O".into(), json!("string"), 0, Elements::VlenUtf8, None))
            );
        }
        // Var-size CHAR holds any bytes.
        assert_eq!(
            t(Datatype::Char, VAR_NUM),
            Ok((
                "|O".into(),
                json!("variable_length_bytes"),
                0,
                Elements::VlenBytes,
                None
            ))
        );
        // CHAR x 4: one fixed-length byte string per cell, as TileDB-Py reads it.
        assert_eq!(
            t(Datatype::Char, 4),
            Ok((
                "|S4".into(),
                json!({ "name": "null_terminated_bytes", "configuration": { "length_bytes": 4 } }),
                4,
                Elements::Fixed,
                None
            ))
        );
        assert_eq!(t(Datatype::Char, 1).map(|z| z.0), Ok("|S1".into()));
        // Several numbers: the element type, and the count for a last dimension.
        assert_eq!(
            t(Datatype::Float32, 3),
            Ok(("<f4".into(), json!("float32"), 4, Elements::Fixed, Some(3)))
        );
        assert_eq!(t(Datatype::Int16, 2).map(|z| z.4), Ok(Some(2)));
        assert_eq!(t(Datatype::Int16, 1).map(|z| z.4), Ok(None));
        // What stays out, and why.
        assert_eq!(
            t(Datatype::Int32, VAR_NUM),
            Err("var-size INT32: Zarr's variable-length types hold strings and bytes".into())
        );
        assert_eq!(
            t(Datatype::StringAscii, 4),
            Err("datatype STRING_ASCII: no Zarr data type".into())
        );
        assert_eq!(
            t(Datatype::Blob, VAR_NUM).err().unwrap(),
            "var-size BLOB: Zarr's variable-length types hold strings and bytes"
        );
    }

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
        assert_eq!(summary(&sparse)["shown"], false);
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
        let s = summary(&grid());
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
            summary(&strings)["not_shown"]["c"],
            "datatype STRING_ASCII: no Zarr data type"
        );
        // The store's rules: a validity name taken by a field is not shown.
        let mut taken = grid();
        taken
            .attributes
            .push(attr("a__validity", Datatype::UInt8, 1, false, vec![0]));
        assert_eq!(
            summary(&taken)["not_shown"]["a__validity"],
            "the name of another field"
        );
    }

    #[test]
    fn chunk_counts_regions_and_sizes() {
        let store = grid_store();
        let a = array(&store, "a");
        assert_eq!(
            (a.origin.clone(), a.shape.clone(), a.chunks.clone()),
            (vec![1, -5], vec![20, 36], vec![3, 4])
        );
        // 20 / 3 leaves a partial chunk; 36 / 4 does not.
        assert_eq!(a.chunk_counts(), [7, 9]);
        assert_eq!(a.fixed_chunk_bytes(), Some(3 * 4 * 4));
        assert_eq!(a.region(&[1, 2]), [(4, 6), (3, 6)]);
        // The last chunk runs past the domain: Zarr chunks are whole.
        assert_eq!(a.region(&[6, 8]), [(19, 21), (27, 30)]);
        // A key folder's leading coordinates.
        assert_eq!(a.region(&[2]), [(7, 9)]);
        // Coordinate arrays: one chunk up to 2^20 cells.
        let x = array(&store, "x");
        assert_eq!(
            (x.shape.clone(), x.chunks.clone(), x.chunk_counts()),
            (vec![20], vec![20], vec![1])
        );
        let t = array(&store, "t");
        assert_eq!(t.fixed_chunk_bytes(), Some(8 * 12));
        let huge = ZDesc {
            chunks: vec![u64::MAX, 2],
            ..grid_store().arrays.remove(0)
        };
        assert_eq!(
            huge.fixed_chunk_bytes(),
            Some(u64::MAX),
            "overflow saturates"
        );
    }

    #[test]
    fn chunk_spans_clamp_to_the_grid() {
        let store = grid_store();
        let a = array(&store, "a");
        assert_eq!(a.chunk_span(0, (2, 9)), (0, 2));
        assert_eq!(a.chunk_span(0, (4, 4)), (1, 1));
        assert_eq!(a.chunk_span(1, (-5, -5)), (0, 0));
        assert_eq!(a.chunk_span(1, (0, 10)), (1, 3));
        assert_eq!(a.chunk_span(0, (-100, 100)), (0, 6));
        assert_eq!(a.chunk_span(1, (30, 30)), (8, 8));
    }

    /// A grid of 10^12 chunks written whole: a `c/<i>` folder lists its million keys
    /// from the written box's spans (listing them by filtering every chunk of the grid
    /// would walk 10^12).
    #[test]
    fn keys_of_a_huge_grid_are_listed_one_level_at_a_time() {
        let s = schema(
            ArrayType::Dense,
            vec![
                dim("x", Datatype::Int64, 0, 999_999, Some(1)),
                dim("y", Datatype::Int64, 0, 999_999, Some(1)),
            ],
            vec![attr("a", Datatype::Int32, 1, false, vec![0; 4])],
        );
        let store = store(&s, &fields(&s)).unwrap();
        let a = array(&store, "a");
        let written = vec![vec![(0, 999_999), (0, 999_999)]];
        let top = a.next_keys(&written, &[]);
        assert_eq!(top.len(), 1_000_000);
        let below = a.next_keys(&written, &[123_456]);
        assert_eq!(below.len(), 1_000_000);
        assert_eq!(below.iter().next_back(), Some(&999_999));
        assert!(
            a.next_keys(&written, &[1_000_000]).is_empty(),
            "past the grid"
        );
    }

    #[test]
    fn chunk_files_are_those_under_written_boxes() {
        let store = grid_store();
        let a = array(&store, "a");
        let written = vec![vec![(2, 9), (0, 10)], vec![(19, 20), (30, 30)]];
        let files = a.chunk_files(&written);
        let mut want: Vec<Vec<u64>> = Vec::new();
        for i in 0..=2 {
            for j in 1..=3 {
                want.push(vec![i, j]);
            }
        }
        want.push(vec![6, 8]);
        assert_eq!(files.into_iter().collect::<Vec<_>>(), want);
        // One level at a time, as the `c/` folders list them, the same keys.
        let top = a.next_keys(&written, &[]);
        assert_eq!(top.iter().copied().collect::<Vec<_>>(), [0, 1, 2, 6]);
        for i in top {
            let below: Vec<u64> = a.next_keys(&written, &[i]).into_iter().collect();
            let want_below: Vec<u64> = want.iter().filter(|c| c[0] == i).map(|c| c[1]).collect();
            assert_eq!(below, want_below, "under {i}");
            assert!(
                a.next_keys(&written, &[i, below[0]]).is_empty(),
                "chunks: no level below"
            );
        }
        assert!(a.next_keys(&written, &[4]).is_empty(), "4 holds no chunk");
        assert!(a.chunk_exists(&written, &[1, 2]));
        assert!(a.chunk_exists(&written, &[6, 8]));
        assert!(
            !a.chunk_exists(&written, &[0, 0]),
            "y -5..-2 was not written"
        );
        assert!(
            !a.chunk_exists(&written, &[3, 1]),
            "x 10..12 was not written"
        );
        // Key folders: leading coordinates.
        assert!(a.chunk_exists(&written, &[2]));
        assert!(!a.chunk_exists(&written, &[4]));
        assert!(a.chunk_exists(&written, &[]));
        // Out of the grid, or too many coordinates.
        assert!(!a.chunk_exists(&written, &[7, 0]));
        assert!(!a.chunk_exists(&written, &[0, 1, 0]));
        assert!(a.chunk_files(&[]).is_empty());
        assert!(!a.chunk_exists(&[], &[0, 1]));
    }

    #[test]
    fn coordinate_chunks_exist_whatever_was_written() {
        let store = grid_store();
        let x = array(&store, "x");
        assert_eq!(
            x.chunk_files(&[]).into_iter().collect::<Vec<_>>(),
            [vec![0]]
        );
        assert!(x.chunk_exists(&[], &[0]));
        assert!(!x.chunk_exists(&[], &[1]));
        // Past COORD_LIST_ALL chunks only those under fragments are listed, but any
        // opens by name.
        let s = schema(
            ArrayType::Dense,
            vec![dim("x", Datatype::Int64, 0, (1 << 33) - 1, Some(1 << 20))],
            Vec::new(),
        );
        let big = store_of(&s);
        let x = array(&big, "x");
        assert_eq!(x.chunk_counts(), [8192]);
        let written = vec![vec![(3 << 20, (3 << 20) + 5)]];
        assert_eq!(
            x.chunk_files(&written).into_iter().collect::<Vec<_>>(),
            [vec![3]]
        );
        assert!(x.chunk_exists(&written, &[8191]));
    }

    fn store_of(s: &ArraySchema) -> ZStore {
        store(s, &fields(s)).unwrap()
    }

    #[test]
    fn keys_parse_only_in_their_canonical_spelling() {
        let counts = [7, 9];
        assert_eq!(parse_key("1.2", '.', &counts), Some(vec![1, 2]));
        assert_eq!(parse_key("6.8", '.', &counts), Some(vec![6, 8]));
        assert_eq!(parse_key("1/2", '/', &counts), Some(vec![1, 2]));
        for bad in [
            "7.0", "0.9", "01.2", "+1.2", "1", "1.2.3", "1.", ".1", "", "-1.2", "a.b", "1/2",
        ] {
            assert_eq!(parse_key(bad, '.', &counts), None, "{bad:?}");
        }
        assert_eq!(key_v2(&[1, 2]), "1.2");
        assert_eq!(key_v2(&[0]), "0");
        assert_eq!(key_v3(&[]), "c");
        assert_eq!(key_v3(&[1, 2]), "c/1/2");
        for c in [vec![0, 0], vec![6, 8], vec![3, 5]] {
            assert_eq!(parse_key(&key_v2(&c), '.', &counts), Some(c));
        }
    }

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
    fn fill_values_as_zarr_spells_them() {
        let t = |d| ztype(d).unwrap();
        assert_eq!(fill_json(&[1], &t(Datatype::Bool)), json!(true));
        assert_eq!(fill_json(&[0], &t(Datatype::Bool)), json!(false));
        assert_eq!(
            fill_json(&f64::NAN.to_le_bytes(), &t(Datatype::Float64)),
            json!("NaN")
        );
        assert_eq!(
            fill_json(&f32::NEG_INFINITY.to_le_bytes(), &t(Datatype::Float32)),
            json!("-Infinity")
        );
        assert_eq!(
            fill_json(&u16::MAX.to_le_bytes(), &t(Datatype::UInt16)),
            json!(65535)
        );
        assert_eq!(
            fill_json(&7i64.to_le_bytes(), &t(Datatype::TimeSec)),
            json!(7)
        );
        let a = |d, n| attribute_type(d, n).unwrap().0;
        // Strings as strings (bad UTF-8 replaced, as in the chunks), bytes in base64.
        assert_eq!(
            fill_json(b"\xffa", &a(Datatype::StringUtf8, VAR_NUM)),
            json!("\u{fffd}a")
        );
        assert_eq!(
            fill_json(&[0], &a(Datatype::StringAscii, VAR_NUM)),
            json!("\u{0}")
        );
        assert_eq!(
            fill_json(&[0, 1, 2], &a(Datatype::Char, VAR_NUM)),
            json!("AAEC")
        );
        assert_eq!(fill_json(&[0x80; 3], &a(Datatype::Char, 3)), json!("gICA"));
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

    #[test]
    fn arrays_the_state_lacks_are_described_readably() {
        let store = grid_store();
        assert!(store.get(ZArray::Values(9)).is_none());
        assert_eq!(ZArray::Values(9).to_string(), "the values of field 9");
        assert_eq!(
            ZArray::Coords(1).to_string(),
            "the coordinates of dimension 1"
        );
        assert_eq!(ZMeta::ZarrJson.file_name(), "zarr.json");
    }
}
