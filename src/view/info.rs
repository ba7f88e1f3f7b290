//! What `fragfs info` shows, as data. The trees gather it (reading fragment metadata as
//! needed); the command line decides how it looks (`crate::info::render`).

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::Value;

use crate::array::Array;
use crate::format::schema::{ArrayType, VAR_NUM};

use super::tiledb::json::non_empty_domain;

#[derive(Debug, Clone)]
pub enum Info {
    Array(Box<ArrayInfo>),
    Group(GroupInfo),
    Filo(FiloInfo),
}

#[derive(Debug, Clone)]
pub struct GroupInfo {
    pub location: String,
    pub members: Vec<MemberInfo>,
    /// `(key, datatype, value as JSON)`.
    pub metadata: Vec<(String, &'static str, String)>,
}

#[derive(Debug, Clone)]
pub struct MemberInfo {
    pub name: String,
    pub kind: &'static str,
    pub uri: String,
    pub relative: bool,
    pub not_shown_because: Option<String>,
}

/// Metadata as lines for `info`: key, datatype, value as JSON.
pub fn metadata_lines(
    map: &std::collections::BTreeMap<Vec<u8>, crate::format::metadata::MetadataValue>,
) -> Vec<(String, &'static str, String)> {
    map.iter()
        .map(|(k, v)| {
            (
                String::from_utf8_lossy(k).into_owned(),
                v.datatype.name(),
                crate::encode::value::metadata(v).to_string(),
            )
        })
        .collect()
}

#[derive(Debug, Clone)]
pub struct ArrayInfo {
    /// Where the array is.
    pub location: String,
    /// The newest schema: its file, and a summary.
    pub schema_file: String,
    pub schema: SchemaInfo,
    /// How many schema files (more than one: schema evolution).
    pub schema_count: usize,
    pub schema_versions: BTreeSet<u32>,
    /// Live fragments, oldest first.
    pub fragments: Vec<FragmentInfo>,
    /// Delete and update commits, relative paths.
    pub conditions: Vec<String>,
    /// Folders not shown, and why: `(folder, reason)`.
    pub ignored: Vec<(String, String)>,
    /// Deletes and updates: commit, timestamp, the condition as text or why it cannot
    /// be read.
    pub deletes: Vec<(String, u64, Result<String, String>)>,
    /// The array's metadata (or why it cannot be read).
    pub metadata: Result<Vec<(String, &'static str, String)>, String>,
}

#[derive(Debug, Clone)]
pub struct SchemaInfo {
    pub version: u32,
    pub dense: bool,
    pub tile_order: &'static str,
    pub cell_order: &'static str,
    pub capacity: u64,
    pub allows_dups: bool,
    pub dimensions: Vec<FieldInfo>,
    pub attributes: Vec<FieldInfo>,
}

#[derive(Debug, Clone)]
pub struct FieldInfo {
    pub name: String,
    pub datatype: &'static str,
    /// Values per cell; `None` for var-size cells.
    pub cell_val_num: Option<u32>,
    pub nullable: bool,
    /// Filter names, in pipeline order.
    pub filters: Vec<&'static str>,
}

#[derive(Debug, Clone)]
pub struct FragmentInfo {
    pub name: String,
    /// The end of the fragment's timestamp range, ms since the epoch.
    pub written_ms: u64,
    /// What its metadata says, or why it could not be read.
    pub detail: Result<FragmentDetail, String>,
}

#[derive(Debug, Clone)]
pub struct FragmentDetail {
    pub format_version: u32,
    pub dense: bool,
    pub cells: u64,
    /// Bytes of its files on disk.
    pub bytes: u64,
    /// `[[lo, hi], ...]` per dimension.
    pub non_empty_domain: Value,
    /// How the fragment is laid out on disk, e.g. `v3, root folder, ...`.
    pub layout: String,
}

#[derive(Debug, Clone)]
pub struct FiloInfo {
    pub location: String,
    pub format_version: &'static str,
    pub rows: u64,
    pub columns: Vec<FiloColumnInfo>,
}

#[derive(Debug, Clone)]
pub struct FiloColumnInfo {
    pub name: String,
    pub column_type: &'static str,
    /// The vector kind, or why the chunk could not be decoded.
    pub vector: Result<String, String>,
    pub bytes: u64,
    pub file: String,
}

impl ArrayInfo {
    /// Gathers the summary of an array; reads every fragment's metadata.
    pub fn of(array: &Arc<Array>) -> ArrayInfo {
        let latest = array.latest_schema();
        let s = &latest.schema;
        let field = |name: &str,
                     datatype: crate::format::Datatype,
                     cvn: u32,
                     nullable,
                     filters: &crate::format::FilterPipeline| FieldInfo {
            // As the tree shows it (the empty name of a `from_numpy` attribute included).
            name: super::names::encode(name),
            datatype: datatype.name(),
            cell_val_num: (cvn != VAR_NUM).then_some(cvn),
            nullable,
            filters: filters.filters.iter().map(|f| f.name()).collect(),
        };
        let schema = SchemaInfo {
            version: s.version,
            dense: s.array_type == ArrayType::Dense,
            tile_order: s.tile_order.name(),
            cell_order: s.cell_order.name(),
            capacity: s.capacity,
            allows_dups: s.allows_dups,
            dimensions: s
                .dimensions
                .iter()
                .map(|d| field(&d.name, d.datatype, d.cell_val_num, false, &d.filters))
                .collect(),
            attributes: s
                .attributes
                .iter()
                .map(|a| field(&a.name, a.datatype, a.cell_val_num, a.nullable, &a.filters))
                .collect(),
        };
        array.preload_all_metas();
        let fragments = array
            .fragments
            .iter()
            .map(|f| FragmentInfo {
                name: f.name.clone(),
                written_ms: f.timestamps.t2,
                detail: f
                    .meta(&array.schemas)
                    .map(|m| FragmentDetail {
                        format_version: m.footer.version,
                        dense: m.footer.dense,
                        cells: m.cell_count(),
                        bytes: f.size_on_disk().unwrap_or(0),
                        non_empty_domain: non_empty_domain(&m),
                        layout: crate::array::layout::describe(f, &m),
                    })
                    .map_err(|e| e.to_string()),
            })
            .collect();
        ArrayInfo {
            location: array.location(),
            schema_file: latest.rel_path.clone(),
            schema,
            schema_count: array.schemas.len(),
            schema_versions: array.schemas.iter().map(|s| s.schema.version).collect(),
            fragments,
            conditions: array.conditions.clone(),
            ignored: array
                .ignored
                .iter()
                .map(|i| (i.rel_dir.clone(), i.reason.clone()))
                .collect(),
            deletes: array
                .condition_commits
                .iter()
                .map(|c| {
                    let text = c
                        .condition_text(&*array.store, array.options.key, &latest.schema)
                        .map_err(|e| e.to_string());
                    (c.rel_path.clone(), c.timestamp, text)
                })
                .collect(),
            metadata: crate::array::metadata::load_metadata(&*array.store, array.options.key)
                .map(|m| metadata_lines(&m))
                .map_err(|e| e.to_string()),
        }
    }
}
