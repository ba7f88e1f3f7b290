//! `array.h5` in every state folder (`latest/`, `at/<T>/`): the state as an HDF5 file
//! (layout in `encode/hdf5/`, design in `docs/hdf5.md`). One contiguous little-endian
//! dataset per fixed-size attribute (its data region is `values.bin` as it is), per
//! nullable attribute's validity and per dimension's coordinates; the dimensions are
//! dimension scales. The metadata (superblock and the object headers after the data) is
//! rendered once per state and kept; a read of the data maps to the fields' merged reads.

use std::collections::BTreeSet;

use serde_json::{json, Map, Value};

use crate::array::field::FieldRole;
use crate::encode::hdf5::{self, Attr, Dataset, H5Type, Piece};
use crate::encode::value;
use crate::error::{Error, Place, Result};
use crate::format::datatype::decode_int;
use crate::format::metadata::MetadataValue;
use crate::format::schema::{ArraySchema, ArrayType, VAR_NUM};
use crate::format::Datatype;
use crate::read::merge::Merged;
use crate::read::RawFile;
use crate::view::names;

use super::super::array_tree::ArrayTree;
use super::super::node::{Folder, When};
use super::{At, Face, Summary};

pub(super) struct ArrayH5;

pub(super) static ARRAY_H5: ArrayH5 = ArrayH5;

const NAME: &str = "array.h5";

/// Where a dataset's data come from.
#[derive(Debug, Clone, Copy)]
enum Source {
    /// A raw file of a merged field, as it is.
    Raw(usize, RawFile),
    /// The integers `low, low + 1, ...` in `size`-byte little-endian elements: a dense
    /// dimension's coordinates, or a sparse state's cell numbers.
    Counting { low: i128, size: u64 },
}

/// The file of one state: its datasets (no metadata attributes yet) and their sources.
struct Plan {
    file: hdf5::File,
    sources: Vec<Source>,
}

/// How a field of a schema appears in the file: its HDF5 type and the length of the
/// last dimension it adds (several values per cell), or why it is left out.
fn field_type(
    datatype: Datatype,
    cell_val_num: u32,
) -> std::result::Result<(H5Type, Option<u64>), String> {
    use Datatype::*;
    if cell_val_num == VAR_NUM {
        return Err("variable-size cells: a contiguous dataset holds fixed-size elements".into());
    }
    let extra = (cell_val_num > 1).then_some(u64::from(cell_val_num));
    let int = |size: u32, signed: bool| Ok((H5Type::Int { size, signed }, extra));
    match datatype {
        Int8 => int(1, true),
        Int16 => int(2, true),
        Int32 => int(4, true),
        Int64 => int(8, true),
        // BOOL: its bytes as they are (0 or 1); the attribute `tiledb_datatype` says BOOL.
        UInt8 | Bool => int(1, false),
        UInt16 => int(2, false),
        UInt32 => int(4, false),
        UInt64 => int(8, false),
        Float32 => Ok((H5Type::Float { size: 4 }, extra)),
        Float64 => Ok((H5Type::Float { size: 8 }, extra)),
        t if t.is_temporal() => int(8, true),
        // A cell of n characters is one fixed-length string of n bytes.
        Char | StringAscii | StringUtf8 => Ok((
            H5Type::Str {
                len: cell_val_num,
                utf8: datatype == StringUtf8,
                nul_term: false,
            },
            None,
        )),
        t => Err(format!(
            "{}: no HDF5 type holds it as values.bin does",
            t.name()
        )),
    }
}

/// CF `units` of a temporal type xarray and netCDF readers decode (datetimes since the
/// epoch; times of day as durations), `None` for units CF has no spelling of.
fn cf_units(t: Datatype) -> Option<String> {
    let unit = match t.name().rsplit('_').next()? {
        "DAY" => "days",
        "HR" => "hours",
        "MIN" => "minutes",
        "SEC" => "seconds",
        "MS" => "milliseconds",
        "US" => "microseconds",
        "NS" => "nanoseconds",
        _ => return None,
    };
    Some(if t.is_datetime() {
        format!("{unit} since 1970-01-01T00:00:00")
    } else {
        unit.to_string()
    })
}

/// Names taken in the root group; a name already taken gets `_` appended.
struct Names(BTreeSet<String>);

impl Names {
    fn take(&mut self, want: String) -> String {
        let mut name = want;
        while !self.0.insert(name.clone()) {
            name.push('_');
        }
        name
    }
}

/// `array.json`'s and `read.json`'s `"hdf5"`: the datasets a state of `schema` has and
/// the fields left out, with why.
pub(in crate::view::tiledb) fn summary(schema: &ArraySchema) -> Value {
    let mut datasets = Vec::new();
    let mut left_out = Map::new();
    let dense = schema.array_type == ArrayType::Dense;
    let dims = schema
        .dimensions
        .iter()
        .map(|d| (d.name.as_str(), d.datatype, d.cell_val_num, false));
    let attrs = schema
        .attributes
        .iter()
        .map(|a| (a.name.as_str(), a.datatype, a.cell_val_num, a.nullable));
    if !dense {
        datasets.push(json!("cells"));
    }
    for (name, t, n, nullable) in dims.chain(attrs) {
        let shown = names::encode(name);
        match field_type(t, n) {
            Ok((_, extra)) => {
                if extra.is_some() {
                    datasets.push(json!(format!("{shown}_values")));
                }
                datasets.push(json!(shown));
                if nullable {
                    datasets.push(json!(format!("{shown}_validity")));
                }
            }
            Err(why) => {
                left_out.insert(shown, json!(why));
            }
        }
    }
    json!({ "file": NAME, "datasets": datasets, "left_out": left_out })
}

/// The datasets of state `merged` and where their data come from. A sparse state's
/// data regions are laid out for the cells of its fragments (an upper bound of its cell
/// count, from metadata), so the file's size is known before the cells are counted;
/// `counted`: the datasets have the counted cells (else that bound, for sizing only).
fn plan(merged: &Merged, counted: bool) -> Result<Plan> {
    let mut names = Names(BTreeSet::new());
    // Field datasets keep their own names; only what fragfs adds yields.
    for f in &merged.fields {
        names.0.insert(names::encode(&f.name));
    }
    let mut datasets = Vec::new();
    let mut sources = Vec::new();
    let dense = merged.is_dense();
    let mut bound: Option<u64> = None;
    // The dimension scales every field dataset is laid along.
    let (axes, cells): (Vec<Option<usize>>, Vec<u64>) = if dense {
        let shape = merged
            .shape()
            .unwrap_or_else(|| vec![0; merged.schema.dimensions.len()]);
        let lows: Vec<i128> = match merged.non_empty_domain() {
            Some(domain) => domain
                .iter()
                .zip(&merged.schema.dimensions)
                .map(|((lo, _), d)| decode_int(lo, d.datatype).unwrap_or(0))
                .collect(),
            None => vec![0; shape.len()],
        };
        let mut axes = Vec::new();
        for ((d, n), low) in merged.schema.dimensions.iter().zip(&shape).zip(lows) {
            let Ok((dtype, None)) = field_type(d.datatype, d.cell_val_num) else {
                return Err(Error::corrupt(
                    Place::file(NAME),
                    format!("dense dimension {} of type {}", d.name, d.datatype.name()),
                ));
            };
            let name = names::encode(&d.name);
            axes.push(Some(datasets.len()));
            let mut attrs = vec![Attr::text("tiledb_datatype", d.datatype.name())];
            if let Some(units) = cf_units(d.datatype) {
                attrs.push(Attr::text("units", &units));
            }
            datasets.push(Dataset {
                name: name.clone(),
                dtype,
                shape: vec![*n],
                fill: None,
                attrs,
                scale: Some(name),
                dims: vec![],
                reserve: None,
            });
            sources.push(Source::Counting {
                low,
                size: d.datatype.size(),
            });
        }
        (axes, shape)
    } else {
        bound = Some(
            merged
                .sources
                .iter()
                .fold(0u64, |n, s| n.saturating_add(s.meta.cell_count())),
        );
        let n = match counted {
            true => merged.cell_count()?,
            false => bound.unwrap_or(0),
        };
        let name = names.take("cells".into());
        let axes = vec![Some(datasets.len())];
        datasets.push(Dataset {
            name: name.clone(),
            dtype: H5Type::Int {
                size: 8,
                signed: false,
            },
            shape: vec![n],
            fill: None,
            attrs: vec![Attr::text(
                "long_name",
                "cell number in the state's global order",
            )],
            scale: Some(name),
            dims: vec![],
            reserve: None,
        });
        sources.push(Source::Counting { low: 0, size: 8 });
        (axes, vec![n])
    };
    for (i, f) in merged.fields.iter().enumerate() {
        if dense && f.role == FieldRole::Dimension {
            continue;
        }
        let Ok((dtype, extra)) = field_type(f.datatype, f.cell_val_num) else {
            continue;
        };
        let name = names::encode(&f.name);
        let mut shape = cells.clone();
        let mut dims = axes.clone();
        if let Some(n) = extra {
            // The values of a cell: a dimension scale of its own, `0..n` (netCDF-4
            // readers need a scale on every dimension once a dataset names any).
            let scale = names.take(format!("{name}_values"));
            dims.push(Some(datasets.len()));
            datasets.push(Dataset {
                name: scale.clone(),
                dtype: H5Type::Int {
                    size: 4,
                    signed: false,
                },
                shape: vec![n],
                fill: None,
                attrs: vec![Attr::text(
                    "long_name",
                    &format!("value number within a cell of {name}"),
                )],
                scale: Some(scale),
                dims: vec![],
                reserve: None,
            });
            sources.push(Source::Counting { low: 0, size: 4 });
            shape.push(n);
        }
        let mut attrs = vec![Attr::text("tiledb_datatype", f.datatype.name())];
        if let Some(units) = cf_units(f.datatype) {
            attrs.push(Attr::text("units", &units));
        }
        // One element of the fill cell: the Fill Value message and `_FillValue`
        // (netCDF's name for it), for numbers. Strings have none: netCDF-C reads a fixed
        // string dataset as NC_STRING and takes its fill value for a pointer.
        let element = dtype.size() as usize;
        let number = matches!(dtype, H5Type::Int { .. } | H5Type::Float { .. });
        let fill = (f.role == FieldRole::Attribute && number)
            .then(|| f.fill.get(..element).map(<[u8]>::to_vec))
            .flatten();
        if let Some(v) = &fill {
            attrs.push(Attr::scalar("_FillValue", dtype.clone(), v.clone()));
        }
        datasets.push(Dataset {
            name: name.clone(),
            dtype,
            shape,
            fill,
            attrs,
            scale: None,
            dims,
            reserve: None,
        });
        sources.push(Source::Raw(i, RawFile::Values));
        if f.nullable {
            let validity = names.take(format!("{name}_validity"));
            datasets.push(Dataset {
                name: validity,
                dtype: H5Type::Int {
                    size: 1,
                    signed: false,
                },
                shape: cells.clone(),
                fill: Some(vec![u8::from(f.fill_valid)]),
                attrs: vec![Attr::text(
                    "long_name",
                    &format!("validity of {name} (1: valid, 0: null)"),
                )],
                scale: None,
                dims: axes.clone(),
                reserve: None,
            });
            sources.push(Source::Raw(i, RawFile::Validity));
        }
    }
    if let Some(cells) = bound {
        for d in &mut datasets {
            let per_cell = d.shape[1..]
                .iter()
                .fold(u64::from(d.dtype.size()), |n, &k| n.saturating_mul(k));
            d.reserve = Some(cells.saturating_mul(per_cell));
        }
    }
    Ok(Plan {
        file: hdf5::File {
            root_attrs: Vec::new(),
            datasets,
        },
        sources,
    })
}

/// The root group's attributes: the array's schema and the state, and the array's metadata
/// (numbers and text as attributes of their own; other values, and any too large for a
/// header message, as JSON in `tiledb_metadata_other`).
fn root_attrs(tree: &ArrayTree, merged: &Merged) -> Vec<Attr> {
    let array = tree.array();
    // The array is named by its schema, not its location: the file's bytes depend on
    // the array alone (a copy elsewhere, or S3, serves the same bytes and ETags).
    let mut attrs = vec![
        Attr::text("tiledb_schema", &merged.schema_name),
        Attr::text(
            "tiledb_state",
            &merged
                .at
                .map_or("latest".to_string(), |t| format!("at/{t}")),
        ),
    ];
    if let Some(t) = merged.at {
        attrs.push(Attr::scalar(
            "tiledb_timestamp_ms",
            H5Type::Int {
                size: 8,
                signed: false,
            },
            t.to_le_bytes().to_vec(),
        ));
    }
    let metadata = match crate::array::metadata::load_metadata(&*array.store, array.options.key) {
        Ok(m) => m,
        Err(e) => {
            // The data still read; the file says why the metadata is missing.
            log::warn!("{NAME}: array metadata: {e}");
            attrs.push(Attr::text("tiledb_metadata_error", &e.to_string()));
            return attrs;
        }
    };
    let taken: BTreeSet<String> = attrs.iter().map(|a| a.name.clone()).collect();
    let mut other = Map::new();
    for (key, v) in &metadata {
        let attr = std::str::from_utf8(key)
            .ok()
            .filter(|k| !k.is_empty() && !k.contains('\0') && !taken.contains(*k))
            .and_then(|k| metadata_attr(k, v));
        match attr {
            Some(a) if a.data.len() + a.name.len() < hdf5::MAX_MESSAGE - 256 => attrs.push(a),
            _ => {
                other.insert(
                    String::from_utf8_lossy(key).into_owned(),
                    value::metadata(v),
                );
            }
        }
    }
    if !other.is_empty() {
        let text = Value::Object(other).to_string();
        if text.len() < hdf5::MAX_MESSAGE - 256 {
            attrs.push(Attr::text("tiledb_metadata_other", &text));
        } else {
            attrs.push(Attr::text(
                "tiledb_metadata_other",
                "too large for an HDF5 attribute: see metadata.json",
            ));
        }
    }
    attrs
}

/// A metadata value as an attribute: numbers (a list unless one), text; `None` for
/// other types.
fn metadata_attr(key: &str, v: &MetadataValue) -> Option<Attr> {
    let t = v.datatype;
    if t.is_string() || t == Datatype::Char {
        if !matches!(
            t,
            Datatype::Char | Datatype::StringAscii | Datatype::StringUtf8
        ) {
            return None;
        }
        let s = std::str::from_utf8(&v.bytes).ok()?;
        return (!s.contains('\0')).then(|| Attr::text(key, s));
    }
    let (dtype, None) = field_type(t, 1).ok()? else {
        return None;
    };
    if v.count == 0 || !matches!(dtype, H5Type::Int { .. } | H5Type::Float { .. }) {
        return None;
    }
    Some(Attr {
        name: key.into(),
        dtype,
        dims: (v.count != 1).then(|| vec![u64::from(v.count)]),
        data: v.bytes.clone(),
    })
}

fn state(at: &At<'_, Folder>) -> Result<Option<u64>> {
    match at.place {
        Folder::State(w) => Ok(w),
        Folder::Fragment(_) => Err(Error::NotFound(NAME.into())),
    }
}

fn corrupt(reason: String) -> Error {
    Error::corrupt(Place::file(NAME), reason)
}

impl ArrayH5 {
    /// The plan, its data regions, and the metadata (rendered once per state, kept).
    fn layout(
        &self,
        at: &At<'_, Folder>,
    ) -> Result<(
        std::sync::Arc<Merged>,
        Plan,
        hdf5::Regions,
        crate::view::cache::Rendered,
    )> {
        let merged = at.tree.merged(state(at)?)?;
        let plan = plan(&merged, true)?;
        let regions = hdf5::regions(&plan.file.datasets).map_err(corrupt)?;
        let generation = at.tree.generation_of(at.place);
        let meta = at.tree.rendered(at.ino, generation, || {
            let mut file = plan.file.clone();
            file.root_attrs = root_attrs(at.tree, &merged);
            hdf5::metadata(&file, &regions).map_err(corrupt)
        })?;
        Ok((merged, plan, regions, meta))
    }
}

/// `array.json`'s and `read.json`'s "hdf5".
static SUMMARY: Summary = Summary {
    key: "hdf5",
    of_schema: summary,
    of_state: state_summary,
};

fn state_summary(tree: &ArrayTree, w: When) -> Result<Value> {
    Ok(summary(&tree.merged(w)?.schema))
}

impl Face<Folder> for ArrayH5 {
    fn name(&self) -> &'static str {
        NAME
    }

    fn mime(&self) -> &'static str {
        "application/x-hdf5"
    }

    fn summary(&self) -> Option<&'static Summary> {
        Some(&SUMMARY)
    }

    fn exists(&self, _tree: &ArrayTree, folder: Folder) -> Result<bool> {
        Ok(matches!(folder, Folder::State(_)))
    }

    fn known_size(&self, at: &At<'_, Folder>) -> Result<Option<u64>> {
        let merged = at.tree.merged(state(at)?)?;
        if merged.counted() {
            return self.size(at).map(Some);
        }
        // Not counted yet: the regions follow from the bound, and the metadata's length
        // does not depend on the count (every number in it has a fixed width). libhdf5
        // needs the size at open: it compares it with the superblock's end of file.
        let plan = plan(&merged, false)?;
        let regions = hdf5::regions(&plan.file.datasets).map_err(corrupt)?;
        let mut file = plan.file;
        file.root_attrs = root_attrs(at.tree, &merged);
        let meta = hdf5::metadata(&file, &regions).map_err(corrupt)?;
        Ok(Some(
            regions.end + (meta.len() as u64).saturating_sub(hdf5::SUPERBLOCK_LEN),
        ))
    }

    fn size(&self, at: &At<'_, Folder>) -> Result<u64> {
        let (_, _, regions, meta) = self.layout(at)?;
        let meta_len = meta.len(NAME)?;
        Ok(regions.end + meta_len.saturating_sub(hdf5::SUPERBLOCK_LEN))
    }

    fn read_into(
        &self,
        at: &At<'_, Folder>,
        offset: u64,
        len: u64,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        let (merged, plan, regions, meta) = self.layout(at)?;
        let meta_len = meta.len(NAME)?;
        for piece in hdf5::pieces(&regions, meta_len, offset, len) {
            match piece {
                Piece::Meta { from, len } => meta.read_into(NAME, from, len, out)?,
                Piece::Zero(n) => out.resize(out.len() + n as usize, 0),
                Piece::Data { index, from, len } => {
                    let source = plan
                        .sources
                        .get(index)
                        .copied()
                        .ok_or_else(|| corrupt(format!("no source for dataset #{index}")))?;
                    let before = out.len();
                    match source {
                        Source::Raw(f, raw) => merged.read_into(f, raw, from, len, out)?,
                        Source::Counting { low, size } => counting(low, size, from, len, out),
                    }
                    if (out.len() - before) as u64 != len {
                        let name = &plan.file.datasets[index].name;
                        return Err(corrupt(format!(
                            "dataset {name}: {} bytes where the header promises {len}",
                            out.len() - before
                        )));
                    }
                }
            }
        }
        Ok(())
    }
}

/// Bytes `[from, from + len)` of the little-endian integers `low, low + 1, ...` of
/// `size` bytes each.
fn counting(low: i128, size: u64, from: u64, len: u64, out: &mut Vec<u8>) {
    let size = size.max(1);
    let first = from / size;
    let last = (from + len).div_ceil(size);
    let mut bytes = Vec::with_capacity(((last - first) * size) as usize);
    for i in first..last {
        let v = low.wrapping_add(i128::from(i));
        bytes.extend_from_slice(&v.to_le_bytes()[..size as usize]);
    }
    let skip = (from - first * size) as usize;
    out.extend_from_slice(&bytes[skip..skip + len as usize]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counting_slices_computed_integers() {
        let mut out = Vec::new();
        counting(-1, 2, 1, 4, &mut out);
        // -1, 0, 1 as i16 LE: ff ff 00 00 01 00; bytes 1..5.
        assert_eq!(out, [0xff, 0, 0, 1]);
    }

    #[test]
    fn types_map_or_say_why_not() {
        assert_eq!(
            field_type(Datatype::UInt16, 1).unwrap(),
            (
                H5Type::Int {
                    size: 2,
                    signed: false
                },
                None
            )
        );
        assert_eq!(field_type(Datatype::Float32, 3).unwrap().1, Some(3));
        assert!(matches!(
            field_type(Datatype::Char, 4).unwrap(),
            (H5Type::Str { len: 4, .. }, None)
        ));
        assert!(field_type(Datatype::StringUtf8, VAR_NUM)
            .unwrap_err()
            .contains("variable"));
        assert!(field_type(Datatype::Blob, 1).is_err());
        assert_eq!(
            cf_units(Datatype::DatetimeMs).unwrap(),
            "milliseconds since 1970-01-01T00:00:00"
        );
        assert_eq!(cf_units(Datatype::TimeSec).unwrap(), "seconds");
        assert_eq!(cf_units(Datatype::DatetimeYear), None);
    }
}
