//! `array.nc`: a merged state (`latest/`, `at/<T>/`) as a netCDF classic file (CDF-2;
//! CDF-5 where a 64-bit integer field or a size needs it), virtual and lazy: the
//! header is computed from the schema and the state (and kept in the view cache), the
//! data regions are the fields' `values.bin` (and `validity.bin`) of the state, byte
//! swapped to big-endian per read, and the dense coordinates computed. The layout
//! rules live in [`crate::encode::netcdf`]; what maps to what in `docs/netcdf.md`.

use serde_json::{json, Map, Value};

use crate::array::field::FieldRole;
use crate::encode::netcdf::{self as nc, Attr, Dim, NcFile, NcType, Piece, Var, Version};
use crate::encode::value;
use crate::error::{Error, Place, Result};
use crate::format::datatype::decode_int;
use crate::format::metadata::MetadataValue;
use crate::format::schema::{ArraySchema, VAR_NUM};
use crate::format::Datatype;
use crate::read::endian::ByteOrder;
use crate::read::RawFile;

use super::super::array_tree::ArrayTree;
use super::super::node::{FieldOf, Folder, When};
use super::{At, Face, Summary};

pub(super) struct ArrayNc;

pub(super) static ARRAY_NC: ArrayNc = ArrayNc;

/// The file's name in a state folder.
pub(in crate::view::tiledb) const NAME: &str = "array.nc";

/// A field as the plan sees it (a merged state's, or the schema's for `array.json`).
pub(in crate::view::tiledb) struct NcField<'a> {
    pub name: &'a str,
    pub role: FieldRole,
    pub datatype: Datatype,
    pub cell_val_num: u32,
    pub nullable: bool,
    pub fill: &'a [u8],
}

/// What the state's cells are.
pub(in crate::view::tiledb) enum StateShape {
    /// A dense box: per dimension its first coordinate and its number of cells.
    Dense { lows: Vec<i128>, shape: Vec<u64> },
    /// A dense state with nothing visible: no box, so no dimensions nor variables.
    Empty,
    /// A sparse state's cells, in TileDB's global order.
    Sparse { cells: u64 },
}

/// Where a variable's data comes from.
#[derive(Debug, Clone, PartialEq)]
enum Source {
    /// Field `field`'s `values.bin`, values of `width` bytes swapped to big-endian.
    Values { field: usize, width: u64 },
    /// Field `field`'s `validity.bin` (one byte a cell).
    Validity { field: usize },
    /// A dense dimension's coordinates, `low` on, written as `ty`.
    Coord { low: i128, ty: NcType },
}

/// The file without its global attributes (they take only header bytes), where each
/// variable's data comes from, and what is left out with why.
pub(in crate::view::tiledb) struct Plan {
    file: NcFile,
    sources: Vec<Source>,
    left_out: Vec<(String, String)>,
    /// Why the file is CDF-5 (`None`: CDF-2).
    cdf5: Option<String>,
}

/// Whether `t` is stored as int64 (INT64, UINT64, dates and times).
fn is_64bit_int(t: Datatype) -> bool {
    matches!(t, Datatype::Int64 | Datatype::UInt64) || t.is_temporal()
}

/// The netCDF type of a TileDB type in `version`, and whether it is an unsigned type
/// written as the signed one of its width (`_Unsigned = "true"`, CDF-2).
fn nc_type(t: Datatype, version: Version) -> std::result::Result<(NcType, bool), String> {
    use Datatype::*;
    let cdf5 = version == Version::Cdf5;
    Ok(match t {
        Int8 | Bool => (NcType::Byte, false),
        UInt8 if cdf5 => (NcType::UByte, false),
        UInt8 => (NcType::Byte, true),
        Int16 => (NcType::Short, false),
        UInt16 if cdf5 => (NcType::UShort, false),
        UInt16 => (NcType::Short, true),
        Int32 => (NcType::Int, false),
        UInt32 if cdf5 => (NcType::UInt, false),
        UInt32 => (NcType::Int, true),
        Float32 => (NcType::Float, false),
        Float64 => (NcType::Double, false),
        UInt64 => (NcType::UInt64, false),
        t if t == Int64 || t.is_temporal() => (NcType::Int64, false),
        Char | StringAscii => (NcType::Char, false),
        other => return Err(format!("{}: netCDF classic has no such type", other.name())),
    })
}

/// CF `units` of a date or time type xarray decodes to TileDB-Py's datetime64 /
/// timedelta64 values; `None` for the units CF has no fixed length for (years,
/// months, weeks) and those below nanoseconds.
fn time_units(t: Datatype) -> Option<String> {
    use Datatype::*;
    let unit = match t {
        DatetimeDay => "days",
        DatetimeHr | TimeHr => "hours",
        DatetimeMin | TimeMin => "minutes",
        DatetimeSec | TimeSec => "seconds",
        DatetimeMs | TimeMs => "milliseconds",
        DatetimeUs | TimeUs => "microseconds",
        DatetimeNs | TimeNs => "nanoseconds",
        _ => return None,
    };
    Some(if t.is_datetime() {
        format!("{unit} since 1970-01-01T00:00:00")
    } else {
        unit.to_string()
    })
}

/// The attributes every variable of a field gets: its TileDB name and type, and the
/// conventions its type needs (`_Unsigned`, CF units and calendar).
fn type_attrs(f: &NcField<'_>, shown_as: &str, unsigned: bool) -> Vec<Attr> {
    let mut attrs = Vec::new();
    if unsigned {
        attrs.push(Attr::text("_Unsigned", "true"));
    }
    if let Some(units) = time_units(f.datatype) {
        attrs.push(Attr::text("units", &units));
        if f.datatype.is_datetime() {
            attrs.push(Attr::text("calendar", "proleptic_gregorian"));
        }
    }
    attrs.push(Attr::text("tiledb_datatype", f.datatype.name()));
    if shown_as != f.name {
        attrs.push(Attr::text("tiledb_name", f.name));
    }
    attrs
}

/// The name a field's variable gets: its own where netCDF allows it, `anonymous` for
/// the anonymous attribute (`tiledb.from_numpy` writes one).
fn shown_name(f: &NcField<'_>) -> Option<String> {
    if f.name.is_empty() {
        return Some("anonymous".to_string());
    }
    nc::valid_name(f.name).then(|| f.name.to_string())
}

impl Plan {
    /// The plan of a state with these fields (dimensions first, then attributes, as a
    /// merged state orders them) and cells.
    pub(in crate::view::tiledb) fn new(fields: &[NcField<'_>], shape: &StateShape) -> Result<Plan> {
        let wide = fields.iter().any(|f| {
            let shown = match (f.role, shape) {
                (FieldRole::Dimension, StateShape::Dense { .. }) => false,
                (_, StateShape::Empty) => false,
                _ => f.cell_val_num != VAR_NUM,
            };
            shown && is_64bit_int(f.datatype)
        }) || dense_coords_need_64(fields, shape);
        let plan = Plan::build(
            fields,
            shape,
            if wide { Version::Cdf5 } else { Version::Cdf2 },
        )?;
        if wide {
            return Ok(plan);
        }
        match plan.file.needs_cdf5()? {
            None => Ok(plan),
            Some(why) => {
                let mut plan = Plan::build(fields, shape, Version::Cdf5)?;
                plan.cdf5 = Some(why);
                Ok(plan)
            }
        }
    }

    fn build(fields: &[NcField<'_>], shape: &StateShape, version: Version) -> Result<Plan> {
        let mut file = NcFile {
            version,
            dims: Vec::new(),
            attrs: Vec::new(),
            vars: Vec::new(),
        };
        let mut sources = Vec::new();
        let mut left_out = Vec::new();
        let mut cdf5 = None;
        let mut taken: std::collections::BTreeSet<String> = Default::default();
        // The dimensions every attribute's variable runs along.
        let cell_dims: Vec<usize> = match shape {
            StateShape::Empty => {
                for f in fields.iter().filter(|f| f.role == FieldRole::Attribute) {
                    left_out.push((
                        f.name.to_string(),
                        "nothing is visible in this state: no box to hold it".to_string(),
                    ));
                }
                return Ok(Plan {
                    file,
                    sources,
                    left_out,
                    cdf5,
                });
            }
            StateShape::Dense { lows, shape } => {
                let dims: Vec<&NcField<'_>> = fields
                    .iter()
                    .filter(|f| f.role == FieldRole::Dimension)
                    .collect();
                for (k, ((f, &low), &n)) in dims.iter().zip(lows).zip(shape).enumerate() {
                    let name = shown_name(f)
                        .filter(|n| !taken.contains(n))
                        .unwrap_or_else(|| format!("dim{k}"));
                    taken.insert(name.clone());
                    let high = low + i128::from(n) - 1;
                    let fits = |lo: i128, hi: i128| lo >= i32::MIN.into() && hi <= i32::MAX.into();
                    // 64-bit coordinates that fit in int32 are written as int: most
                    // dense arrays stay CDF-2, which scipy reads too.
                    let (ty, unsigned) = if is_64bit_int(f.datatype) && fits(low, high) {
                        (NcType::Int, false)
                    } else {
                        nc_type(f.datatype, version).map_err(|why| {
                            Error::corrupt(
                                Place::file(NAME),
                                format!("dimension {}: {why}", f.name),
                            )
                        })?
                    };
                    if ty.cdf5_only() && version == Version::Cdf2 {
                        cdf5 = Some(format!("dimension {} needs {}", f.name, ty.name()));
                    }
                    file.dims.push(Dim {
                        name: name.clone(),
                        len: n,
                    });
                    file.vars.push(Var {
                        name: name.clone(),
                        dims: vec![k],
                        attrs: type_attrs(f, &name, unsigned),
                        ty,
                        pad: Vec::new(),
                    });
                    sources.push(Source::Coord { low, ty });
                }
                (0..dims.len()).collect()
            }
            StateShape::Sparse { cells } => {
                let name = if fields.iter().any(|f| f.name == "cells") {
                    "tiledb_cells"
                } else {
                    "cells"
                };
                taken.insert(name.to_string());
                // No cells: the record dimension, with no records (a fixed dimension
                // cannot have length 0).
                file.dims.push(Dim {
                    name: name.to_string(),
                    len: *cells,
                });
                vec![0]
            }
        };
        for (index, f) in fields.iter().enumerate() {
            if f.role == FieldRole::Dimension && matches!(shape, StateShape::Dense { .. }) {
                continue;
            }
            let mut leave = |why: String| left_out.push((f.name.to_string(), why));
            if f.cell_val_num == VAR_NUM {
                leave("var-size: netCDF classic has no variable-length type".to_string());
                continue;
            }
            let (ty, unsigned) = match nc_type(f.datatype, version) {
                Ok(t) => t,
                Err(why) => {
                    leave(why);
                    continue;
                }
            };
            let Some(name) = shown_name(f) else {
                leave("a name netCDF forbids (Note on names)".to_string());
                continue;
            };
            let mut dims = cell_dims.clone();
            let mut new_names = vec![name.clone()];
            let extra = if f.cell_val_num > 1 {
                let suffix = if ty == NcType::Char {
                    "_strlen"
                } else {
                    "_values"
                };
                let d = format!("{name}{suffix}");
                new_names.push(d.clone());
                Some(d)
            } else {
                None
            };
            let validity = f.nullable.then(|| format!("{name}_validity"));
            new_names.extend(validity.clone());
            if let Some(clash) = new_names.iter().find(|n| taken.contains(*n)) {
                leave(format!(
                    "its netCDF name {clash} is taken by another field's"
                ));
                continue;
            }
            taken.extend(new_names);
            if let Some(d) = extra {
                dims.push(file.dims.len());
                file.dims.push(Dim {
                    name: d,
                    len: u64::from(f.cell_val_num),
                });
            }
            let width = ty.size();
            let mut attrs = type_attrs(f, &name, unsigned);
            // One value of the fill (a cell of several: its first).
            let fill = f.fill.get(..width as usize);
            if let (FieldRole::Attribute, Some(fill)) = (f.role, fill) {
                attrs.insert(0, Attr::from_le("_FillValue", ty, fill));
            }
            if let Some(v) = &validity {
                attrs.push(Attr::text("ancillary_variables", v));
            }
            let mut pad = fill.map(<[u8]>::to_vec).unwrap_or_default();
            ByteOrder::Swapped(width).apply(&mut pad);
            file.vars.push(Var {
                name: name.clone(),
                dims: dims.clone(),
                attrs,
                ty,
                pad,
            });
            sources.push(Source::Values {
                field: index,
                width,
            });
            if let Some(v) = validity {
                file.vars.push(Var {
                    name: v,
                    dims: cell_dims.clone(),
                    attrs: vec![
                        Attr {
                            name: "flag_values".into(),
                            ty: NcType::Byte,
                            values: vec![0, 1],
                        },
                        Attr::text("flag_meanings", "null valid"),
                        Attr::text("tiledb_validity_of", &name),
                    ],
                    ty: NcType::Byte,
                    pad: Vec::new(),
                });
                sources.push(Source::Validity { field: index });
            }
        }
        if cdf5.is_none() && version == Version::Cdf5 {
            cdf5 = file
                .vars
                .iter()
                .find(|v| v.ty.cdf5_only())
                .map(|v| format!("{} is {}", v.name, v.ty.name()));
        }
        Ok(Plan {
            file,
            sources,
            left_out,
            cdf5,
        })
    }

    /// What `read.json` and `array.json` say of the file.
    pub(in crate::view::tiledb) fn summary(&self, with_format: bool) -> Value {
        let mut out = Map::new();
        out.insert("file".into(), json!(NAME));
        if with_format {
            out.insert("format".into(), json!(self.file.version.name()));
            if let Some(why) = &self.cdf5 {
                out.insert("cdf5_because".into(), json!(why));
            }
        }
        out.insert(
            "variables".into(),
            json!(self.file.vars.iter().map(|v| &v.name).collect::<Vec<_>>()),
        );
        out.insert(
            "left_out".into(),
            Value::Object(
                self.left_out
                    .iter()
                    .map(|(n, why)| (n.clone(), json!(why)))
                    .collect(),
            ),
        );
        Value::Object(out)
    }
}

/// Whether a dense box's 64-bit coordinates do not fit in int32.
fn dense_coords_need_64(fields: &[NcField<'_>], shape: &StateShape) -> bool {
    let StateShape::Dense { lows, shape } = shape else {
        return false;
    };
    fields
        .iter()
        .filter(|f| f.role == FieldRole::Dimension)
        .zip(lows.iter().zip(shape))
        .any(|(f, (&low, &n))| {
            let high = low + i128::from(n) - 1;
            is_64bit_int(f.datatype) && (low < i32::MIN.into() || high > i32::MAX.into())
        })
}

/// What `array.json` says of `array.nc` for the newest schema (the variables do not
/// depend on the state; the format may: `read.json` names it).
pub(in crate::view::tiledb) fn summary(schema: &ArraySchema) -> Value {
    let fields = schema_fields(schema);
    let shape = if schema.array_type == crate::format::schema::ArrayType::Dense {
        StateShape::Dense {
            lows: vec![0; schema.dimensions.len()],
            shape: vec![1; schema.dimensions.len()],
        }
    } else {
        StateShape::Sparse { cells: 1 }
    };
    match Plan::new(&fields, &shape) {
        Ok(plan) => plan.summary(false),
        Err(e) => json!({ "file": NAME, "error": e.to_string() }),
    }
}

fn schema_fields(schema: &ArraySchema) -> Vec<NcField<'_>> {
    let dims = schema.dimensions.iter().map(|d| NcField {
        name: &d.name,
        role: FieldRole::Dimension,
        datatype: d.datatype,
        cell_val_num: d.cell_val_num,
        nullable: false,
        fill: &[],
    });
    let attrs = schema.attributes.iter().map(|a| NcField {
        name: &a.name,
        role: FieldRole::Attribute,
        datatype: a.datatype,
        cell_val_num: a.cell_val_num,
        nullable: a.nullable,
        fill: &a.fill_value,
    });
    dims.chain(attrs).collect()
}

impl ArrayTree {
    /// The plan of the state at `w` (a sparse state's cells are counted).
    pub(in crate::view::tiledb) fn netcdf_plan(&self, w: super::super::node::When) -> Result<Plan> {
        let merged = self.merged(w)?;
        let fields: Vec<NcField<'_>> = merged
            .fields
            .iter()
            .map(|f| NcField {
                name: &f.name,
                role: f.role,
                datatype: f.datatype,
                cell_val_num: f.cell_val_num,
                nullable: f.nullable,
                fill: &f.fill,
            })
            .collect();
        let shape = if merged.is_dense() {
            match (merged.non_empty_domain(), merged.shape()) {
                (Some(domain), Some(shape)) if !shape.is_empty() => {
                    let lows: Option<Vec<i128>> = domain
                        .iter()
                        .zip(&merged.schema.dimensions)
                        .map(|((lo, _), d)| decode_int(lo, d.datatype))
                        .collect();
                    let lows = lows.ok_or_else(|| {
                        Error::corrupt(Place::file(NAME), "a dense domain that is not integers")
                    })?;
                    StateShape::Dense { lows, shape }
                }
                _ => StateShape::Empty,
            }
        } else {
            StateShape::Sparse {
                cells: merged.cell_count()?,
            }
        };
        Plan::new(&fields, &shape)
    }
}

/// The global attributes: the array, the state, and the array's metadata (as
/// `metadata.json` shows it: per array, not per timestamp).
fn global_attrs(at: &At<'_, Folder>, w: Option<u64>, version: Version) -> Result<Vec<Attr>> {
    let tree = at.tree;
    let array = tree.array();
    let merged = tree.merged(w)?;
    // The array is named by its schema, never by where it lives: a copy of the array,
    // or the same array in S3, serves the same bytes (and so the same ETag).
    let mut attrs = vec![Attr::text(
        "tiledb_state",
        &w.map_or("latest".to_string(), |t| format!("at/{t}")),
    )];
    // The state's timestamp; `latest`: the newest visible fragment's end, if any.
    let t = w.or_else(|| {
        merged
            .sources
            .iter()
            .map(|s| s.fragment.timestamps.t2)
            .max()
    });
    if let Some(t) = t {
        attrs.push(Attr::double("tiledb_timestamp", t as f64));
    }
    attrs.push(Attr::text("tiledb_schema", &merged.schema_name));
    attrs.push(Attr::text(
        "source",
        concat!("fragfs ", env!("CARGO_PKG_VERSION")),
    ));
    let own: Vec<String> = attrs.iter().map(|a| a.name.clone()).collect();
    // Metadata that cannot be read is said so in the file, which still opens.
    let metadata = match crate::array::metadata::load_metadata(&*array.store, array.options.key) {
        Ok(m) => m,
        Err(e) => {
            attrs.push(Attr::text("tiledb_metadata_error", &e.to_string()));
            Default::default()
        }
    };
    let mut other = Vec::new();
    for (key, v) in &metadata {
        let name = String::from_utf8_lossy(key);
        match metadata_attr(&name, v, version) {
            Some(a) if nc::valid_name(&name) && !own.contains(&a.name) => attrs.push(a),
            _ => other.push(format!(
                "{name} ({}): {}",
                v.datatype.name(),
                value::metadata(v)
            )),
        }
    }
    if !other.is_empty() {
        attrs.push(Attr::text("tiledb_metadata_other", &other.join("\n")));
    }
    Ok(attrs)
}

/// A metadata value as an attribute of its own type, if `version` has one.
fn metadata_attr(name: &str, v: &MetadataValue, version: Version) -> Option<Attr> {
    let t = v.datatype;
    if t.is_string() || t == Datatype::Char {
        let text = std::str::from_utf8(&v.bytes).ok()?;
        return Some(Attr::text(name, text));
    }
    if t == Datatype::Bool || v.bytes.is_empty() {
        return None;
    }
    let (ty, unsigned) = nc_type(t, version).ok()?;
    if unsigned || ty.cdf5_only() && version != Version::Cdf5 || t.is_temporal() {
        return None;
    }
    Some(Attr::from_le(name, ty, &v.bytes))
}

fn state_of(folder: Folder) -> Result<Option<u64>> {
    match folder {
        Folder::State(w) => Ok(w),
        Folder::Fragment(_) => Err(Error::NotFound(NAME.into())),
    }
}

impl ArrayNc {
    /// The header, rendered once per state and kept in the view cache.
    fn header(&self, at: &At<'_, Folder>) -> Result<(Plan, crate::view::cache::Rendered)> {
        let w = state_of(at.place)?;
        let plan = at.tree.netcdf_plan(w)?;
        let generation = at.tree.generation_of(at.place);
        let rendered = at.tree.rendered(at.ino, generation, || {
            let mut file = plan.file.clone();
            file.attrs = global_attrs(at, w, file.version)?;
            file.header()
        })?;
        Ok((plan, rendered))
    }

    fn field_at<'a>(&self, at: &At<'a, Folder>, field: usize) -> At<'a, FieldOf> {
        At {
            tree: at.tree,
            ino: at.ino,
            place: FieldOf::new(at.place, field),
        }
    }

    /// Appends bytes `[from, to)` of variable `var`'s data.
    fn read_data(
        &self,
        at: &At<'_, Folder>,
        plan: &Plan,
        var: usize,
        from: u64,
        to: u64,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        let short = |what: &str| {
            Error::corrupt(
                Place::file(NAME),
                format!("{what}: fewer bytes than the state holds"),
            )
        };
        match plan.sources.get(var) {
            Some(&Source::Values { field, width }) => {
                // The values under the range, whole, read straight into `out` and put
                // big-endian run by run as they are gathered (every byte of a variable
                // passes here: no scratch copy, no pass of its own), then cut to the
                // range where it starts or ends inside a value.
                let (a, b) = (from / width * width, to.div_ceil(width) * width);
                let start = out.len();
                self.field_at(at, field).read_values_ordered(
                    a,
                    b - a,
                    ByteOrder::Swapped(width),
                    out,
                )?;
                if (out.len() - start) as u64 != b - a {
                    out.truncate(start);
                    return Err(short(&plan.file.vars[var].name));
                }
                out.truncate(start + (to - a) as usize);
                out.drain(start..start + (from - a) as usize);
            }
            Some(&Source::Validity { field }) => {
                let before = out.len();
                self.field_at(at, field)
                    .read_raw(RawFile::Validity, from, to - from, out)?;
                if (out.len() - before) as u64 != to - from {
                    return Err(short(&plan.file.vars[var].name));
                }
            }
            Some(&Source::Coord { low, ty }) => {
                let width = ty.size();
                let (first, last) = (from / width, to.div_ceil(width));
                let mut buf = Vec::with_capacity(((last - first) * width) as usize);
                for i in first..last {
                    let v = (low + i128::from(i)).to_be_bytes();
                    buf.extend_from_slice(&v[16 - width as usize..]);
                }
                let skip = (from - first * width) as usize;
                out.extend_from_slice(&buf[skip..skip + (to - from) as usize]);
            }
            None => {
                return Err(Error::corrupt(
                    Place::file(NAME),
                    format!("no variable #{var}"),
                ))
            }
        }
        Ok(())
    }
}

/// `array.json`'s and `read.json`'s "netcdf".
static SUMMARY: Summary = Summary {
    key: "netcdf",
    of_schema: summary,
    of_state: state_summary,
};

/// `read.json`'s "netcdf": the state's plan, with the format it takes.
fn state_summary(tree: &ArrayTree, w: When) -> Result<Value> {
    Ok(tree.netcdf_plan(w)?.summary(true))
}

impl Face<Folder> for ArrayNc {
    fn name(&self) -> &'static str {
        NAME
    }

    fn mime(&self) -> &'static str {
        "application/x-netcdf"
    }

    fn summary(&self) -> Option<&'static Summary> {
        Some(&SUMMARY)
    }

    fn exists(&self, _tree: &ArrayTree, folder: Folder) -> Result<bool> {
        Ok(matches!(folder, Folder::State(_)))
    }

    fn known_size(&self, at: &At<'_, Folder>) -> Result<Option<u64>> {
        // A sparse state's header names its cell count: known once it is counted.
        if !at.tree.merged(state_of(at.place)?)?.counted() {
            return Ok(None);
        }
        self.size(at).map(Some)
    }

    fn size(&self, at: &At<'_, Folder>) -> Result<u64> {
        let (plan, header) = self.header(at)?;
        plan.file.size(header.len(NAME)?)
    }

    fn read_into(
        &self,
        at: &At<'_, Folder>,
        offset: u64,
        len: u64,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        let (plan, header) = self.header(at)?;
        let header_len = header.len(NAME)?;
        for piece in plan.file.pieces(header_len, offset, len)? {
            match piece {
                Piece::Header { from, to } => header.read_into(NAME, from, to - from, out)?,
                Piece::Data { var, from, to } => self.read_data(at, &plan, var, from, to, out)?,
                Piece::Pad { var, at: skip, n } => {
                    let fill = &plan.file.vars[var].pad;
                    out.extend((skip..skip + n).map(|i| {
                        if fill.is_empty() {
                            0
                        } else {
                            fill[(i % fill.len() as u64) as usize]
                        }
                    }));
                }
            }
        }
        Ok(())
    }

    fn read_ahead(&self, at: &At<'_, Folder>, offset: u64, len: u64) -> Result<()> {
        let (plan, header) = self.header(at)?;
        for piece in plan.file.pieces(header.len(NAME)?, offset, len)? {
            if let Piece::Data { var, from, to } = piece {
                if let Some(&Source::Values { field, width }) = plan.sources.get(var) {
                    let a = from / width * width;
                    self.field_at(at, field).read_ahead_raw(
                        RawFile::Values,
                        a,
                        to.div_ceil(width) * width - a,
                    )?;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field<'a>(
        name: &'a str,
        role: FieldRole,
        t: Datatype,
        n: u32,
        fill: &'a [u8],
    ) -> NcField<'a> {
        NcField {
            name,
            role,
            datatype: t,
            cell_val_num: n,
            nullable: false,
            fill,
        }
    }

    /// A dense 2-D box: coordinates first, one variable per attribute (a cell of 3 adds
    /// a last dimension), int64 dimensions as int while they fit; var-size and UTF-16
    /// attributes left out, with why; unsigned as signed with `_Unsigned` in CDF-2.
    #[test]
    fn a_dense_plan() {
        let fill = 7u16.to_le_bytes();
        let fields = [
            field("x", FieldRole::Dimension, Datatype::Int64, 1, &[]),
            field("y", FieldRole::Dimension, Datatype::UInt32, 1, &[]),
            field("a", FieldRole::Attribute, Datatype::UInt16, 1, &fill),
            field("rgb", FieldRole::Attribute, Datatype::Float32, 3, &[0; 12]),
            field(
                "s",
                FieldRole::Attribute,
                Datatype::StringUtf8,
                VAR_NUM,
                &[0],
            ),
            field("w", FieldRole::Attribute, Datatype::StringUtf16, 1, &[0, 0]),
        ];
        let shape = StateShape::Dense {
            lows: vec![-3, 10],
            shape: vec![4, 5],
        };
        let plan = Plan::new(&fields, &shape).unwrap();
        assert_eq!(plan.file.version, Version::Cdf2);
        let names: Vec<&str> = plan.file.vars.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(names, ["x", "y", "a", "rgb"]);
        let dims: Vec<(&str, u64)> = plan
            .file
            .dims
            .iter()
            .map(|d| (d.name.as_str(), d.len))
            .collect();
        assert_eq!(dims, [("x", 4), ("y", 5), ("rgb_values", 3)]);
        assert_eq!(plan.file.vars[0].ty, NcType::Int);
        assert_eq!(plan.file.vars[2].ty, NcType::Short);
        assert!(plan.file.vars[2]
            .attrs
            .contains(&Attr::text("_Unsigned", "true")));
        assert_eq!(plan.file.vars[2].attrs[0].values, [0, 7]);
        assert_eq!(plan.file.vars[3].dims, [0, 1, 2]);
        assert_eq!(
            plan.sources[0],
            Source::Coord {
                low: -3,
                ty: NcType::Int
            }
        );
        let left: Vec<&str> = plan.left_out.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(left, ["s", "w"]);
        // Bytes: the header, then x (16), y (20), a (40: 20 shorts), rgb (240).
        assert_eq!(plan.file.size(100).unwrap(), 100 + 16 + 20 + 40 + 240);
        // A box past int32 needs int64 coordinates: CDF-5, unsigned types native.
        let far = StateShape::Dense {
            lows: vec![1 << 40, 0],
            shape: vec![1, 1],
        };
        let plan = Plan::new(&fields, &far).unwrap();
        assert_eq!(plan.file.version, Version::Cdf5);
        assert_eq!(plan.file.vars[0].ty, NcType::Int64);
        assert_eq!(plan.file.vars[2].ty, NcType::UShort);
        assert!(plan.cdf5.is_some());
    }

    /// A sparse state: one `cells` dimension (the record dimension when empty), every
    /// dimension a variable along it; a nullable attribute adds its validity; int64
    /// makes it CDF-5; datetimes carry CF units.
    #[test]
    fn a_sparse_plan() {
        let mut t = field("t", FieldRole::Attribute, Datatype::DatetimeMs, 1, &[0; 8]);
        t.nullable = true;
        let fields = [
            field("d", FieldRole::Dimension, Datatype::Float64, 1, &[]),
            t,
            field("", FieldRole::Attribute, Datatype::Int32, 1, &[1, 0, 0, 0]),
        ];
        let plan = Plan::new(&fields, &StateShape::Sparse { cells: 6 }).unwrap();
        assert_eq!(plan.file.version, Version::Cdf5);
        let names: Vec<&str> = plan.file.vars.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(names, ["d", "t", "t_validity", "anonymous"]);
        assert_eq!(
            plan.file.dims,
            [Dim {
                name: "cells".into(),
                len: 6
            }]
        );
        assert!(plan.file.vars[1].attrs.contains(&Attr::text(
            "units",
            "milliseconds since 1970-01-01T00:00:00"
        )));
        assert_eq!(plan.sources[2], Source::Validity { field: 1 });
        let empty = Plan::new(&fields, &StateShape::Sparse { cells: 0 }).unwrap();
        assert_eq!(empty.file.size(64).unwrap(), 64);
        assert!(empty.file.header().is_ok());
    }
}
