//! The JSON files of the tree: `array.json`, `schema.json`, `schemas/<name>.json`,
//! `footer.json`, `tiles.json`. Keys keep a stable order; output is pretty-printed.

use serde_json::{json, Map, Value};

use crate::array::field::FieldRole;
use crate::array::fragment::FragmentMeta;
use crate::array::layout;
use crate::array::{Array, Fragment};
use crate::error::Result;
use crate::format::datatype::decode_int;
use crate::format::fragment_metadata::TileBounds;
use crate::format::schema::{ArraySchema, CurrentDomain, VAR_NUM};
use crate::format::{Filter, FilterPipeline};
use crate::read::tile::{FileRole, TileFile};
use crate::read::ReadEngine;

use crate::encode::value;
use crate::view::names;

pub fn to_bytes(v: &Value) -> Vec<u8> {
    let mut out = serde_json::to_vec_pretty(v).unwrap_or_default();
    out.push(b'\n');
    out
}

fn pipeline(p: &FilterPipeline) -> Value {
    let filters: Vec<Value> = p
        .filters
        .iter()
        .map(|f| {
            let mut m = Map::new();
            m.insert("type".into(), json!(f.name()));
            match f {
                Filter::Gzip { level }
                | Filter::Zstd { level }
                | Filter::Lz4 { level }
                | Filter::Rle { level }
                | Filter::Bzip2 { level }
                | Filter::Dictionary { level } => {
                    m.insert("level".into(), json!(level));
                }
                Filter::Delta { reinterpret } | Filter::DoubleDelta { reinterpret } => {
                    m.insert(
                        "reinterpret_datatype".into(),
                        json!(reinterpret.map(|t| t.name())),
                    );
                }
                Filter::BitWidthReduction { max_window } | Filter::PositiveDelta { max_window } => {
                    m.insert("max_window".into(), json!(max_window));
                }
                Filter::ScaleFloat {
                    scale,
                    offset,
                    byte_width,
                } => {
                    m.insert("scale".into(), json!(scale));
                    m.insert("offset".into(), json!(offset));
                    m.insert("byte_width".into(), json!(byte_width));
                }
                Filter::Webp(w) => {
                    m.insert("quality".into(), json!(w.quality));
                    m.insert("input_format".into(), json!(w.input_format));
                    m.insert("lossless".into(), json!(w.lossless));
                    m.insert("y_extent".into(), json!(w.y_extent));
                    m.insert("x_extent".into(), json!(w.x_extent));
                }
                _ => {}
            }
            Value::Object(m)
        })
        .collect();
    json!({"max_chunk_size": p.max_chunk_size, "filters": filters})
}

fn cell_val_num(n: u32) -> Value {
    if n == VAR_NUM {
        json!("var")
    } else {
        json!(n)
    }
}

pub fn schema(name: &str, s: &ArraySchema) -> Value {
    let dims: Vec<Value> = s
        .dimensions
        .iter()
        .map(|d| {
            let size = d.datatype.size() as usize;
            let domain = if d.domain.len() == 2 * size {
                value::range(&d.domain[..size], &d.domain[size..], d.datatype)
            } else {
                Value::Null
            };
            json!({
                "name": d.name,
                "datatype": d.datatype.name(),
                "cell_val_num": cell_val_num(d.cell_val_num),
                "domain": domain,
                "tile_extent": d.tile_extent.as_ref().map(|e| value::element(e, d.datatype)),
                "filters": pipeline(&d.filters),
            })
        })
        .collect();
    let attrs: Vec<Value> = s
        .attributes
        .iter()
        .map(|a| {
            json!({
                "name": a.name,
                "datatype": a.datatype.name(),
                "cell_val_num": cell_val_num(a.cell_val_num),
                "nullable": a.nullable,
                "fill_value": value::cell(&a.fill_value, a.datatype),
                "fill_value_validity": a.fill_value_validity,
                "order": a.order,
                "enumeration": a.enumeration,
                "filters": pipeline(&a.filters),
            })
        })
        .collect();
    let labels: Vec<Value> = s
        .labels
        .iter()
        .map(|l| {
            json!({"dimension_index": l.dimension_index, "name": l.name, "uri": l.uri,
                   "uri_is_relative": l.uri_is_relative, "attribute_name": l.attribute_name,
                   "order": l.order,
                   "order_name": match l.order { 1 => "increasing", 2 => "decreasing", _ => "unordered" },
                   "datatype": l.datatype.name(),
                   "cell_val_num": cell_val_num(l.cell_val_num), "is_external": l.is_external})
        })
        .collect();
    let current_domain = match &s.current_domain {
        None => Value::Null,
        Some(CurrentDomain::Empty) => json!("empty"),
        Some(CurrentDomain::NdRectangle(ranges)) => Value::Array(
            ranges
                .iter()
                .zip(&s.dimensions)
                .map(|((lo, hi), d)| value::range(lo, hi, d.datatype))
                .collect(),
        ),
    };
    json!({
        "name": name,
        "version": s.version,
        "array_type": if s.array_type == crate::format::schema::ArrayType::Dense { "dense" } else { "sparse" },
        "tile_order": s.tile_order.name(),
        "cell_order": s.cell_order.name(),
        "capacity": s.capacity,
        "allows_dups": s.allows_dups,
        "coords_filters": pipeline(&s.coords_filters),
        "offsets_filters": pipeline(&s.offsets_filters),
        "validity_filters": pipeline(&s.validity_filters),
        "dimensions": dims,
        "attributes": attrs,
        "dimension_labels": labels,
        "enumerations": s.enumerations.iter().map(|e| json!({"name": e.name, "file": e.file_name})).collect::<Vec<_>>(),
        "current_domain": current_domain,
    })
}

pub fn non_empty_domain(meta: &FragmentMeta) -> Value {
    Value::Array(
        meta.footer
            .non_empty_domain
            .iter()
            .zip(&meta.schema.dimensions)
            .map(|((lo, hi), d)| value::range(lo, hi, d.datatype))
            .collect(),
    )
}

/// `footer.json`; `enumerations`: per enumerated attribute, the enumeration and the
/// schema its labels come from (which need not be the footer's: see `enums.rs`).
pub fn footer(fragment: &Fragment, meta: &FragmentMeta, enumerations: Value) -> Value {
    let f = &meta.footer;
    json!({
        "fragment": fragment.name,
        "version": f.version,
        "array_schema_name": meta.schema_name,
        "dense": f.dense,
        "null_non_empty_domain": f.null_non_empty_domain,
        "non_empty_domain": non_empty_domain(meta),
        "sparse_tile_num": f.sparse_tile_num,
        "last_tile_cell_num": f.last_tile_cell_num,
        "has_timestamps": f.has_timestamps,
        "has_delete_meta": f.has_delete_meta,
        "file_sizes": f.file_sizes,
        "file_var_sizes": f.file_var_sizes,
        "file_validity_sizes": f.file_validity_sizes,
        "rtree_offset": f.rtree_offset,
        "tile_offsets_offsets": f.tile_offsets_offsets,
        "tile_var_offsets_offsets": f.tile_var_offsets_offsets,
        "tile_var_sizes_offsets": f.tile_var_sizes_offsets,
        "tile_validity_offsets_offsets": f.tile_validity_offsets_offsets,
        "tile_min_offsets": f.tile_min_offsets,
        "tile_max_offsets": f.tile_max_offsets,
        "tile_sum_offsets": f.tile_sum_offsets,
        "tile_null_count_offsets": f.tile_null_count_offsets,
        "fragment_min_max_sum_null_count_offset": f.fragment_min_max_sum_null_count_offset,
        "processed_conditions_offset": f.processed_conditions_offset,
        "optional_sections": f.optional_sections.iter().map(|(id, d)| json!({"id": id, "size": d.len()})).collect::<Vec<_>>(),
        "derived": derived(fragment, meta, enumerations),
    })
}

/// Facts computed from the footer and schema rather than stored in it.
fn derived(fragment: &Fragment, meta: &FragmentMeta, enumerations: Value) -> Value {
    let fields: Vec<Value> = meta
        .fields
        .iter()
        .map(|x| {
            json!({
                "name": x.name, "role": x.role.name(), "slot": x.slot, "datatype": x.datatype.name(),
                "cell_val_num": cell_val_num(x.cell_val_num), "nullable": x.nullable,
                // Dense fragments store no coordinates: fragfs computes them.
                "stored": x.stored, "synthesized": !x.stored, "files": field_files(x),
            })
        })
        .collect();
    json!({
        "layout": layout::describe(fragment, meta),
        "cell_count": meta.cell_count(),
        "tile_count": meta.tile_count,
        "cells_per_tile": meta.cells_per_tile,
        "timestamp_range": [fragment.timestamps.t1, fragment.timestamps.t2],
        "fields": fields,
        "enumerations": enumerations,
    })
}

fn field_files(f: &crate::array::field::Field) -> Value {
    if !f.stored {
        return Value::Null;
    }
    let mut files = vec![f.data_file()];
    if f.is_var() {
        files.push(f.var_file());
    }
    if f.nullable {
        files.push(f.validity_file());
    }
    json!(files)
}

fn bounds(b: &TileBounds, k: usize, meta: &FragmentMeta, f: &crate::array::field::Field) -> Value {
    if b.is_empty() {
        return Value::Null;
    }
    b.get(
        k,
        f.is_var(),
        f.cell_size() as usize,
        meta.tile_count as usize,
    )
    .map(|bytes| value::cell(bytes, f.datatype))
    .unwrap_or(Value::Null)
}

/// Per field and tile: where it is on disk, its sizes, cells, chunks and statistics
/// (v11+), the first and last coordinates in global order (v23+ sparse); per fragment
/// the statistics (v12+), the processed delete/update conditions (v16+) and the R-tree.
/// `labels`: the enumeration of each enumerated attribute (by field index): each of its
/// tiles says how many codes fall outside it.
pub fn tiles(
    engine: &ReadEngine,
    fragment: &Fragment,
    meta: &FragmentMeta,
    labels: &std::collections::HashMap<
        usize,
        std::sync::Arc<crate::format::enumeration::Enumeration>,
    >,
) -> Result<Value> {
    let mut fields = Map::new();
    let fragment_stats = meta.fragment_stats()?;
    let mut statistics = Map::new();
    for (index, f) in meta.fields.iter().enumerate().filter(|(_, f)| f.stored) {
        let reader = engine.field(fragment, meta, index)?;
        let (min, max) = meta.tile_bounds(f.slot)?;
        let dimension = match f.role {
            FieldRole::Dimension => meta.schema.dimensions.iter().position(|d| d.name == f.name),
            _ => None,
        };
        let (global_min, global_max) = match dimension {
            Some(j) => meta.global_order_bounds(j)?,
            None => Default::default(),
        };
        let sums = meta.tile_sums(f.slot)?;
        let nulls = if f.nullable {
            meta.tile_null_counts(f.slot)?
        } else {
            Vec::new()
        };
        let mut roles = vec![FileRole::Data];
        if f.is_var() {
            roles.push(FileRole::Var);
        }
        if f.nullable {
            roles.push(FileRole::Validity);
        }
        let files: Vec<(FileRole, TileFile)> = roles
            .iter()
            .map(|&r| Ok((r, TileFile::open(fragment, meta, f, r)?)))
            .collect::<Result<_>>()?;
        let mut tiles = Vec::new();
        for k in 0..meta.tile_count {
            let mut t = Map::new();
            t.insert("cells".into(), json!(meta.tile_cells(k)));
            for (role, tf) in &files {
                let (offset, size) = tf.tile_span(k)?;
                // Through the engine's cache of chunk indexes; a tile that cannot be
                // walked shows no chunk facts (its reads report why).
                let index = reader.tile_chunk_headers(*role, k).ok();
                let chunks = index
                    .as_deref()
                    .and_then(|c| c.chunks("a chunk index").ok());
                t.insert(
                    tf.file_name.clone(),
                    json!({
                        "offset": offset,
                        "size": size,
                        "decoded_size": chunks.as_ref().map(|c| c.unfiltered_len()),
                        "chunks": chunks.as_ref().map(|c| c.chunks.len()),
                    }),
                );
            }
            t.insert("min".into(), bounds(&min, k as usize, meta, f));
            t.insert("max".into(), bounds(&max, k as usize, meta, f));
            t.insert(
                "sum".into(),
                sums.get(k as usize)
                    .map(|s| value::sum(s, f.datatype))
                    .unwrap_or(Value::Null),
            );
            t.insert(
                "null_count".into(),
                nulls
                    .get(k as usize)
                    .map(|n| json!(n))
                    .unwrap_or(Value::Null),
            );
            if let Some(e) = labels.get(&index) {
                // The tile's min and max settle it without decoding when both are codes
                // of the enumeration: only tiles that may hold others are read.
                let bound = |b: &TileBounds| {
                    b.get(
                        k as usize,
                        false,
                        f.cell_size() as usize,
                        meta.tile_count as usize,
                    )
                    .and_then(|bytes| decode_int(bytes, f.datatype))
                };
                let inside =
                    |c: Option<i128>| c.is_some_and(|c| c >= 0 && (c as u128) < e.len() as u128);
                let outside = match inside(bound(&min)) && inside(bound(&max)) {
                    true => 0,
                    false => {
                        let cells = reader.cells(k * meta.cells_per_tile, meta.tile_cells(k))?;
                        super::codes::codes_outside(e, f.datatype, &cells)
                    }
                };
                t.insert("codes_outside_enumeration".into(), json!(outside));
            }
            if !global_min.is_empty() {
                let k = k as usize;
                t.insert("global_order_min".into(), bounds(&global_min, k, meta, f));
                t.insert("global_order_max".into(), bounds(&global_max, k, meta, f));
            }
            tiles.push(Value::Object(t));
        }
        fields.insert(names::encode(&f.name), json!(tiles));
        if let Some(stats) = fragment_stats.as_ref().and_then(|s| s.get(f.slot)) {
            let cell = |b: &[u8]| match b.is_empty() {
                true => Value::Null,
                false => value::cell(b, f.datatype),
            };
            statistics.insert(
                names::encode(&f.name),
                json!({
                    "min": cell(&stats.min),
                    "max": cell(&stats.max),
                    // Only fields with tile sums have a meaningful fragment sum.
                    "sum": match sums.is_empty() {
                        true => Value::Null,
                        false => value::sum(&stats.sum, f.datatype),
                    },
                    "null_count": match f.nullable {
                        true => json!(stats.null_count),
                        false => Value::Null,
                    },
                }),
            );
        }
    }
    let mbrs = if meta.footer.dense {
        Value::Null
    } else {
        let rtree = meta.rtree()?;
        json!({
            "fanout": rtree.fanout,
            "levels": rtree.levels.iter().map(|level| level.iter().map(|mbr| {
                Value::Array(mbr.iter().zip(&meta.schema.dimensions).map(|((lo, hi), d)| value::range(lo, hi, d.datatype)).collect())
            }).collect::<Vec<_>>()).collect::<Vec<_>>(),
        })
    };
    Ok(json!({
        "fragment": fragment.name,
        "tile_count": meta.tile_count,
        "fields": fields,
        "fragment_statistics": fragment_stats.map(|_| statistics),
        "processed_conditions": meta.processed_conditions()?,
        "rtree": mbrs,
    }))
}

pub fn array(array: &Array) -> Value {
    let mut versions = std::collections::BTreeSet::new();
    let mut total_cells = 0u64;
    array.preload_all_metas();
    let fragments: Vec<Value> = array
        .fragments
        .iter()
        .map(|f| match f.meta(&array.schemas) {
            Ok(m) => {
                versions.insert(m.footer.version);
                // Saturating: a corrupt fragment's count must not overflow the total.
                total_cells = total_cells.saturating_add(m.cell_count());
                json!({"name": f.name, "dir": f.rel_dir, "version": m.footer.version,
                       "layout": layout::describe(f, &m),
                       "timestamp_range": [f.timestamps.t1, f.timestamps.t2],
                       "type": if m.footer.dense { "dense" } else { "sparse" },
                       "cell_count": m.cell_count(), "size_on_disk": f.size_on_disk().unwrap_or(0)})
            }
            Err(e) => json!({"name": f.name, "dir": f.rel_dir, "error": e.to_string()}),
        })
        .collect();
    json!({
        "path": array.location(),
        "format_versions": versions,
        "schema_versions": array.schemas.iter().map(|s| s.schema.version).collect::<std::collections::BTreeSet<_>>(),
        "fragment_count": array.fragments.len(),
        "total_cells": total_cells,
        "schemas": array.schemas.iter().map(|s| s.rel_path.clone()).collect::<Vec<_>>(),
        "fragments": fragments,
        "ignored": array.ignored.iter().map(|i| json!({"dir": i.rel_dir, "reason": i.reason})).collect::<Vec<_>>(),
        "delete_and_update_conditions": array.conditions,
        "deletes": conditions(array),
    })
}

/// Every delete and update commit: when, and the condition as the user wrote it (an
/// unreadable one says why, never guessed).
pub fn conditions(array: &Array) -> Vec<Value> {
    let schema = &array.latest_schema().schema;
    array
        .condition_commits
        .iter()
        .map(|c| {
            let mut m = Map::new();
            m.insert("commit".into(), json!(c.rel_path));
            m.insert("timestamp".into(), json!(c.timestamp));
            m.insert(
                "kind".into(),
                json!(if c.is_update { "update" } else { "delete" }),
            );
            m.insert(
                "in_consolidated_commits".into(),
                json!(c.embedded.is_some()),
            );
            match c.condition_text(&*array.store, array.options.key, schema) {
                Ok(text) => m.insert("condition".into(), json!(text)),
                Err(e) => m.insert("unreadable".into(), json!(e.to_string())),
            };
            Value::Object(m)
        })
        .collect()
}

/// `metadata.json`: `{key: {"datatype": ..., "value": ...}}` (see [`value::metadata`]).
pub fn metadata(
    map: &std::collections::BTreeMap<Vec<u8>, crate::format::metadata::MetadataValue>,
) -> Value {
    Value::Object(
        map.iter()
            .map(|(k, v)| {
                (
                    String::from_utf8_lossy(k).into_owned(),
                    json!({"datatype": v.datatype.name(), "value": value::metadata(v)}),
                )
            })
            .collect(),
    )
}
