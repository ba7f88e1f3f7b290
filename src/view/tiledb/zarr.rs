//! `zarr/` (and `at/<T>/zarr/`): a dense array as a Zarr store that zarr-python, xarray,
//! GDAL and TensorStore open without TileDB. TileDB's space tiles are a regular chunk
//! grid already, so each chunk file is one space tile of the merged array (newest
//! fragment wins, row-major, fill values where nobody wrote), decoded only when read.
//!
//! Both Zarr versions sit side by side in one folder: `.zgroup`/`.zarray`/`.zattrs`
//! with chunk keys `i.j` (v2) and `zarr.json` with keys `c/i/j` (v3). Per fixed-size,
//! single-value attribute one array; per nullable one also `<attr>__validity` (uint8);
//! per dimension a 1-D coordinate array of its values, so xarray labels the axes.
//! Tiles no visible fragment touches have no chunk file (readers fill them), and a
//! listing never walks the domain, only the fragments' boxes.

use std::collections::BTreeSet;

use serde_json::{json, Map, Value};

use super::merged::When;
use super::{ArrayTree, Node};
use crate::array::field::FieldRole;
use crate::error::{Error, Result};
use crate::format::datatype::decode_int;
use crate::format::schema::{ArraySchema, ArrayType};
use crate::format::Datatype;
use crate::read::merge::Merged;
use crate::view::{names, npy, value};

/// Cells per chunk of a coordinate array (its chunking is free: 8 MiB of int64).
const COORD_CHUNK: u64 = 1 << 20;

/// Coordinate arrays list every chunk up to this many (beyond, those under fragments;
/// any other chunk still opens by name).
const COORD_LIST_ALL: u64 = 4096;

/// An array of the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum ZArray {
    /// A fixed-size attribute's values (index among the merged fields).
    Values(usize),
    /// A nullable attribute's validity bytes, `<attr>__validity` (merged field index).
    Validity(usize),
    /// A dimension's coordinates (dimension index).
    Coords(usize),
}

/// A metadata file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum ZMeta {
    /// `.zgroup` (v2 group).
    Zgroup,
    /// `.zarray` (v2 array).
    Zarray,
    /// `.zattrs` (v2 attributes).
    Zattrs,
    /// `zarr.json` (v3 group or array).
    ZarrJson,
}

/// A node under `zarr/`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) enum ZNode {
    Root,
    GroupMeta(ZMeta),
    Array(ZArray),
    ArrayMeta(ZArray, ZMeta),
    /// A v2 chunk file `i.j`, by chunk coordinates.
    Chunk(ZArray, Vec<u64>),
    /// A v3 key folder: `c` (no coordinates) and `c/i`, ... (the leading ones).
    KeyDir(ZArray, Vec<u64>),
    /// A v3 chunk file `c/i/j`.
    KeyChunk(ZArray, Vec<u64>),
}

impl ZNode {
    pub(super) fn is_dir(&self) -> bool {
        matches!(self, ZNode::Root | ZNode::Array(_) | ZNode::KeyDir(..))
    }

    /// The folder holding this node (`None`: the folder holding `zarr/`).
    fn parent(&self) -> Option<ZNode> {
        Some(match self {
            ZNode::Root => return None,
            ZNode::GroupMeta(_) | ZNode::Array(_) => ZNode::Root,
            ZNode::ArrayMeta(a, _) | ZNode::Chunk(a, _) => ZNode::Array(*a),
            ZNode::KeyDir(a, c) if c.is_empty() => ZNode::Array(*a),
            ZNode::KeyDir(a, c) | ZNode::KeyChunk(a, c) => {
                ZNode::KeyDir(*a, c[..c.len() - 1].to_vec())
            }
        })
    }
}

/// The data type of a Zarr array: v2's NumPy `dtype`, v3's `data_type`, the element
/// size, and what the attributes add (v3 has no datetime type: int64 plus units).
struct ZType {
    v2: String,
    v3: &'static str,
    size: u64,
    units: Option<&'static str>,
    datatype: Datatype,
}

fn ztype(t: Datatype) -> Option<ZType> {
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
                v3: "int64",
                size: 8,
                units: Some(unit),
                datatype: t,
            });
        }
        _ => return None,
    };
    Some(ZType {
        v2: v2.to_string(),
        v3,
        size: t.size(),
        units: None,
        datatype: t,
    })
}

/// One array of the store: its name, type, grid and fill value.
struct ZDesc {
    name: String,
    array: ZArray,
    ty: ZType,
    /// Per dimension: the coordinate of index 0, the length, the chunk length.
    origin: Vec<i128>,
    shape: Vec<u64>,
    chunks: Vec<u64>,
    /// One element, or `None` (v2 `null`: coordinate arrays, which xarray would
    /// otherwise mask where a coordinate equals it).
    fill: Option<Vec<u8>>,
    dimension_names: Vec<String>,
}

impl ZDesc {
    fn chunk_counts(&self) -> Vec<u64> {
        self.shape
            .iter()
            .zip(&self.chunks)
            .map(|(&n, &c)| n.div_ceil(c.max(1)))
            .collect()
    }

    fn chunk_bytes(&self) -> u64 {
        self.chunks
            .iter()
            .try_fold(self.ty.size, |n, &c| n.checked_mul(c))
            .unwrap_or(u64::MAX)
    }

    /// The box (first and last coordinate per dimension) chunk `c` covers.
    fn region(&self, c: &[u64]) -> Vec<(i128, i128)> {
        c.iter()
            .zip(&self.origin)
            .zip(&self.chunks)
            .map(|((&k, &o), &n)| {
                let lo = o + i128::from(k) * i128::from(n);
                (lo, lo + i128::from(n) - 1)
            })
            .collect()
    }

    /// The chunk index range (inclusive) that a box of coordinates meets along `d`.
    fn chunk_span(&self, d: usize, (lo, hi): (i128, i128)) -> (u64, u64) {
        let n = i128::from(self.chunks[d].max(1));
        let first = ((lo - self.origin[d]).max(0) / n) as u64;
        let last = ((hi - self.origin[d]).max(0) / n) as u64;
        let count = self.chunk_counts()[d];
        (
            first.min(count.saturating_sub(1)),
            last.min(count.saturating_sub(1)),
        )
    }
}

/// The store of a merged dense state: its arrays, and what it does not show and why.
pub(super) struct ZStore {
    arrays: Vec<ZDesc>,
    pub(super) not_shown: Vec<(String, String)>,
}

impl ZStore {
    fn get(&self, a: ZArray) -> Result<&ZDesc> {
        self.arrays
            .iter()
            .find(|d| d.array == a)
            .ok_or_else(|| Error::NotFound(format!("zarr array {a:?}")))
    }
}

/// Per dimension of a dense schema: its domain (first, last) and tile extent, or why
/// the array has no Zarr store.
fn schema_grid(schema: &ArraySchema) -> std::result::Result<Vec<(i128, i128, u64)>, String> {
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

/// What `array.json` says of `zarr/`: the arrays shown, and those not shown with why.
pub(super) fn summary(schema: &ArraySchema) -> Value {
    if let Err(why) = schema_grid(schema) {
        return json!({ "shown": false, "why": why });
    }
    let mut shown = Vec::new();
    let mut not_shown = Map::new();
    for a in &schema.attributes {
        match attribute_reason(a.datatype, a.cell_val_num) {
            None => {
                shown.push(json!(names::encode(&a.name)));
                if a.nullable {
                    shown.push(json!(validity_name(&a.name)));
                }
            }
            Some(why) => {
                not_shown.insert(names::encode(&a.name), json!(why));
            }
        }
    }
    for d in &schema.dimensions {
        shown.push(json!(names::encode(&d.name)));
    }
    json!({ "shown": true, "arrays": shown, "not_shown": not_shown })
}

/// Why an attribute has no Zarr array, if it has none.
fn attribute_reason(t: Datatype, cell_val_num: u32) -> Option<String> {
    if cell_val_num == crate::format::schema::VAR_NUM {
        return Some("var-size: Zarr arrays hold fixed-size elements".into());
    }
    if cell_val_num != 1 {
        return Some(format!(
            "{cell_val_num} values per cell: Zarr arrays hold one"
        ));
    }
    match ztype(t) {
        Some(_) => None,
        None => Some(format!("datatype {}: no Zarr data type", t.name())),
    }
}

fn validity_name(attr: &str) -> String {
    format!("{}__validity", names::encode(attr))
}

/// The store of a merged state.
pub(super) fn store(merged: &Merged) -> std::result::Result<ZStore, String> {
    let grid = schema_grid(&merged.schema)?;
    let schema = &merged.schema;
    let dimension_names: Vec<String> = schema.dimensions.iter().map(|d| d.name.clone()).collect();
    let origin: Vec<i128> = grid.iter().map(|g| g.0).collect();
    let shape: Vec<u64> = grid.iter().map(|g| (g.1 - g.0 + 1) as u64).collect();
    let chunks: Vec<u64> = grid.iter().map(|g| g.2).collect();
    let mut arrays = Vec::new();
    let mut not_shown = Vec::new();
    let taken: BTreeSet<String> = merged
        .fields
        .iter()
        .map(|f| names::encode(&f.name))
        .collect();
    for (i, f) in merged.fields.iter().enumerate() {
        if f.role != FieldRole::Attribute {
            continue;
        }
        if let Some(why) = attribute_reason(f.datatype, f.cell_val_num) {
            not_shown.push((names::encode(&f.name), why));
            continue;
        }
        let Some(ty) = ztype(f.datatype) else {
            continue;
        };
        arrays.push(ZDesc {
            name: names::encode(&f.name),
            array: ZArray::Values(i),
            ty,
            origin: origin.clone(),
            shape: shape.clone(),
            chunks: chunks.clone(),
            fill: Some(f.fill.clone()),
            dimension_names: dimension_names.clone(),
        });
        if f.nullable {
            let name = validity_name(&f.name);
            if taken.contains(&name) {
                not_shown.push((name, "the name of another field".into()));
                continue;
            }
            arrays.push(ZDesc {
                name,
                array: ZArray::Validity(i),
                ty: ztype(Datatype::UInt8).ok_or("uint8")?,
                origin: origin.clone(),
                shape: shape.clone(),
                chunks: chunks.clone(),
                fill: Some(vec![u8::from(f.fill_valid)]),
                dimension_names: dimension_names.clone(),
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
        });
    }
    Ok(ZStore { arrays, not_shown })
}

/// Parses chunk key coordinates (`sep` between them), in range of `counts`.
fn parse_key(name: &str, sep: char, counts: &[u64]) -> Option<Vec<u64>> {
    let parts: Vec<u64> = name
        .split(sep)
        .map(|p| p.parse::<u64>().ok().filter(|v| v.to_string() == p))
        .collect::<Option<_>>()?;
    (parts.len() == counts.len() && parts.iter().zip(counts).all(|(p, n)| p < n)).then_some(parts)
}

fn key_v2(c: &[u64]) -> String {
    c.iter().map(u64::to_string).collect::<Vec<_>>().join(".")
}

impl ArrayTree {
    /// The store of the state at `w`.
    fn zstore(&self, w: When) -> Result<(std::sync::Arc<Merged>, ZStore)> {
        let merged = self.merged(w)?;
        let store = store(&merged).map_err(|why| Error::NotFound(format!("zarr/: {why}")))?;
        Ok((merged, store))
    }

    /// Whether a state of this array has a `zarr/` folder (dense arrays do).
    pub(super) fn has_zarr(&self, w: When) -> bool {
        match w {
            None => schema_grid(&self.array().latest_schema().schema).is_ok(),
            Some(_) => self.zstore(w).is_ok(),
        }
    }

    /// Whether chunk `c` (or, with fewer coordinates, a key folder's leading ones) of
    /// array `d` exists: coordinate chunks always; data chunks when a visible fragment
    /// wrote inside their box.
    fn zchunk_exists(&self, merged: &Merged, d: &ZDesc, c: &[u64]) -> bool {
        let counts = d.chunk_counts();
        if c.len() > counts.len() || c.iter().zip(&counts).any(|(k, n)| k >= n) {
            return false;
        }
        if matches!(d.array, ZArray::Coords(_)) {
            return true;
        }
        let region = d.region(c);
        merged.written_domains().iter().any(|dom| {
            dom.iter()
                .zip(&region)
                .all(|(&(lo, hi), &(a, b))| lo <= b && a <= hi)
        })
    }

    /// The chunks of array `d` that have a file, in key order.
    fn zchunks(&self, merged: &Merged, d: &ZDesc) -> BTreeSet<Vec<u64>> {
        let counts = d.chunk_counts();
        let mut out = BTreeSet::new();
        if let ZArray::Coords(dim) = d.array {
            if counts[0] <= COORD_LIST_ALL {
                out.extend((0..counts[0]).map(|k| vec![k]));
                return out;
            }
            for dom in merged.written_domains() {
                let (a, b) = d.chunk_span(0, dom[dim]);
                out.extend((a..=b).map(|k| vec![k]));
            }
            return out;
        }
        for dom in merged.written_domains() {
            let spans: Vec<(u64, u64)> =
                (0..counts.len()).map(|k| d.chunk_span(k, dom[k])).collect();
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
        out
    }

    pub(super) fn zarr_list(&self, w: When, node: &ZNode) -> Result<Vec<(String, Node)>> {
        let (merged, store) = self.zstore(w)?;
        let z = |n: ZNode| Node::Zarr(w, n);
        Ok(match node {
            ZNode::Root => {
                let mut out = vec![
                    (".zgroup".to_string(), z(ZNode::GroupMeta(ZMeta::Zgroup))),
                    (".zattrs".to_string(), z(ZNode::GroupMeta(ZMeta::Zattrs))),
                    (
                        "zarr.json".to_string(),
                        z(ZNode::GroupMeta(ZMeta::ZarrJson)),
                    ),
                ];
                out.extend(
                    store
                        .arrays
                        .iter()
                        .map(|d| (d.name.clone(), z(ZNode::Array(d.array)))),
                );
                out
            }
            ZNode::Array(a) => {
                let d = store.get(*a)?;
                let mut out = vec![
                    (
                        ".zarray".to_string(),
                        z(ZNode::ArrayMeta(*a, ZMeta::Zarray)),
                    ),
                    (
                        ".zattrs".to_string(),
                        z(ZNode::ArrayMeta(*a, ZMeta::Zattrs)),
                    ),
                    (
                        "zarr.json".to_string(),
                        z(ZNode::ArrayMeta(*a, ZMeta::ZarrJson)),
                    ),
                ];
                let chunks = self.zchunks(&merged, d);
                if !chunks.is_empty() {
                    out.push(("c".to_string(), z(ZNode::KeyDir(*a, Vec::new()))));
                }
                out.extend(
                    chunks
                        .into_iter()
                        .map(|c| (key_v2(&c), z(ZNode::Chunk(*a, c)))),
                );
                out
            }
            ZNode::KeyDir(a, prefix) => {
                let d = store.get(*a)?;
                let last = prefix.len() + 1 == d.shape.len();
                let next: BTreeSet<u64> = self
                    .zchunks(&merged, d)
                    .into_iter()
                    .filter(|c| c.starts_with(prefix))
                    .map(|c| c[prefix.len()])
                    .collect();
                next.into_iter()
                    .map(|k| {
                        let mut c = prefix.clone();
                        c.push(k);
                        let node = if last {
                            ZNode::KeyChunk(*a, c)
                        } else {
                            ZNode::KeyDir(*a, c)
                        };
                        (k.to_string(), z(node))
                    })
                    .collect()
            }
            other => return Err(Error::NotDirectory(format!("{other:?}"))),
        })
    }

    /// A child by name: chunk keys are parsed, not searched for in a listing.
    pub(super) fn zarr_lookup(&self, w: When, parent: &ZNode, name: &str) -> Result<Node> {
        let missing = || Error::NotFound(name.to_string());
        let z = |n: ZNode| Node::Zarr(w, n);
        match parent {
            ZNode::Array(a) if !name.starts_with('.') && name != "zarr.json" && name != "c" => {
                let (merged, store) = self.zstore(w)?;
                let d = store.get(*a)?;
                let c = parse_key(name, '.', &d.chunk_counts()).ok_or_else(missing)?;
                match self.zchunk_exists(&merged, d, &c) {
                    true => Ok(z(ZNode::Chunk(*a, c))),
                    false => Err(missing()),
                }
            }
            ZNode::KeyDir(a, prefix) => {
                let (merged, store) = self.zstore(w)?;
                let d = store.get(*a)?;
                let k = name
                    .parse::<u64>()
                    .ok()
                    .filter(|k| k.to_string() == name)
                    .ok_or_else(missing)?;
                let mut c = prefix.clone();
                c.push(k);
                if !self.zchunk_exists(&merged, d, &c) {
                    return Err(missing());
                }
                Ok(z(match c.len() == d.shape.len() {
                    true => ZNode::KeyChunk(*a, c),
                    false => ZNode::KeyDir(*a, c),
                }))
            }
            _ => self
                .zarr_list(w, parent)?
                .into_iter()
                .find(|(n, _)| n == name)
                .map(|(_, node)| node)
                .ok_or_else(missing),
        }
    }

    /// Fails with `NotFound` unless the node is there now.
    pub(super) fn zarr_check(&self, w: When, node: &ZNode) -> Result<()> {
        // The root's `zarr/` follows from the schema, as the root listing shows it: it
        // stays a folder (whose listing fails) when a fragment cannot be read.
        if w.is_none() && matches!(node, ZNode::Root) {
            return match self.has_zarr(None) {
                true => Ok(()),
                false => Err(Error::NotFound("zarr/: not a dense array".into())),
            };
        }
        let (merged, store) = self.zstore(w)?;
        match node {
            ZNode::Root | ZNode::GroupMeta(_) => Ok(()),
            ZNode::Array(a) | ZNode::ArrayMeta(a, _) => store.get(*a).map(|_| ()),
            ZNode::Chunk(a, c) | ZNode::KeyDir(a, c) | ZNode::KeyChunk(a, c) => {
                match self.zchunk_exists(&merged, store.get(*a)?, c) {
                    true => Ok(()),
                    false => Err(Error::NotFound(format!("{node:?}"))),
                }
            }
        }
    }

    pub(super) fn zarr_parent(&self, w: When, node: &ZNode) -> Node {
        match node.parent() {
            Some(p) => Node::Zarr(w, p),
            None => match w {
                None => Node::Root,
                Some(_) => Node::State(w),
            },
        }
    }

    /// The size of a file: chunks from the grid, metadata rendered.
    pub(super) fn zarr_size(&self, w: When, node: &ZNode) -> Result<u64> {
        match node {
            ZNode::Chunk(a, _) | ZNode::KeyChunk(a, _) => {
                Ok(self.zstore(w)?.1.get(*a)?.chunk_bytes())
            }
            n if n.is_dir() => Ok(0),
            _ => Ok(self.zarr_meta(w, node)?.len() as u64),
        }
    }

    /// Appends bytes `[offset, offset + len)` of a file to `out`.
    pub(super) fn zarr_read_into(
        &self,
        w: When,
        node: &ZNode,
        offset: u64,
        len: u64,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        let (a, c) = match node {
            ZNode::Chunk(a, c) | ZNode::KeyChunk(a, c) => (*a, c),
            n if n.is_dir() => return Err(Error::IsDirectory(format!("{n:?}"))),
            _ => {
                let bytes = self.zarr_meta(w, node)?;
                let start = offset.min(bytes.len() as u64) as usize;
                let end = offset.saturating_add(len).min(bytes.len() as u64) as usize;
                out.extend_from_slice(&bytes[start..end]);
                return Ok(());
            }
        };
        let (merged, store) = self.zstore(w)?;
        let d = store.get(a)?;
        let end = offset.saturating_add(len).min(d.chunk_bytes());
        if offset >= end {
            return Ok(());
        }
        let size = d.ty.size;
        let (first, last) = (offset / size, end.div_ceil(size));
        let before = out.len();
        match a {
            ZArray::Values(f) | ZArray::Validity(f) => {
                let validity = matches!(a, ZArray::Validity(_));
                merged.region_into(f, validity, &d.region(c), first, last - first, out)?;
            }
            ZArray::Coords(_) => {
                let start = d.region(c)[0].0;
                for k in first..last {
                    let v = (start + i128::from(k)) as i64;
                    out.extend_from_slice(&v.to_le_bytes()[..size as usize]);
                }
            }
        }
        // Cut to the bytes asked for (a read need not start at an element).
        out.drain(before..before + (offset - first * size) as usize);
        out.truncate(before + (end - offset) as usize);
        Ok(())
    }

    /// The bytes of a metadata file.
    fn zarr_meta(&self, w: When, node: &ZNode) -> Result<Vec<u8>> {
        let (merged, store) = self.zstore(w)?;
        let group_attrs = json!({
            "tiledb": {
                "array": self.array().location(),
                "timestamp": w,
                "schema": merged.schema_name,
                "not_shown": store.not_shown.iter().map(|(n, why)| (n.clone(), json!(why))).collect::<Map<_, _>>(),
            }
        });
        let value = match node {
            ZNode::GroupMeta(ZMeta::Zgroup) => json!({ "zarr_format": 2 }),
            ZNode::GroupMeta(ZMeta::Zattrs) => group_attrs,
            ZNode::GroupMeta(_) => json!({
                "zarr_format": 3,
                "node_type": "group",
                "attributes": group_attrs,
            }),
            ZNode::ArrayMeta(a, meta) => {
                let d = store.get(*a)?;
                let mut attrs = Map::new();
                if let Some(units) = d.ty.units {
                    attrs.insert("units".into(), json!(units));
                }
                attrs.insert("tiledb_datatype".into(), json!(d.ty.datatype.name()));
                match meta {
                    ZMeta::Zarray => json!({
                        "zarr_format": 2,
                        "shape": d.shape,
                        "chunks": d.chunks,
                        "dtype": d.ty.v2,
                        "compressor": null,
                        "fill_value": d.fill.as_ref().map(|f| fill_json(f, &d.ty)),
                        "order": "C",
                        "filters": null,
                        "dimension_separator": ".",
                    }),
                    ZMeta::Zattrs => {
                        attrs.insert("_ARRAY_DIMENSIONS".into(), json!(d.dimension_names));
                        Value::Object(attrs)
                    }
                    _ => json!({
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
                        // v3 has no null fill: coordinates get 0 (xarray takes the
                        // mask from `_FillValue` in the attributes, absent here).
                        "fill_value": match &d.fill {
                            Some(f) => fill_json(f, &d.ty),
                            None => json!(0),
                        },
                        "codecs": [{ "name": "bytes", "configuration": { "endian": "little" } }],
                        "attributes": attrs,
                        "dimension_names": d.dimension_names,
                    }),
                }
            }
            other => return Err(Error::IsDirectory(format!("{other:?}"))),
        };
        Ok(super::json::to_bytes(&value))
    }
}

/// A fill value as Zarr metadata has it: a number (NaN and infinities as strings), a
/// boolean for bool; datetimes as their int64.
fn fill_json(bytes: &[u8], ty: &ZType) -> Value {
    match ty.datatype {
        Datatype::Bool => json!(bytes.first().copied().unwrap_or(0) != 0),
        _ if ty.units.is_some() => value::element(bytes, Datatype::Int64),
        t => value::element(bytes, t),
    }
}
