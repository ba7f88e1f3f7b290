//! `fragments.svg` (at the root, in `latest/` and in `at/<T>/`): every fragment on disk
//! described from its metadata alone, standing as TileDB's reader rules make it stand at
//! the picture's time, for [`crate::encode::picture`] to draw.
//!
//! The standing follows the rules `latest/` and `at/<T>/` merge by
//! (`visible` in `src/read/merge/state.rs`): a fragment TileDB would not open at T
//! ([`visibility::is_open_at`]) was written later and is drawn hidden, as is one a
//! consolidation's `.vac` file hides by then (replaced); the rest are live, in part
//! where TileDB shows only their cells stamped up to T. The picture depends on every
//! fragment of the array (those written after T too), so it is an array-level file: made
//! again after each rescan that changed something, never filed under a state.

use std::collections::HashMap;
use std::sync::Arc;

use crate::array::fragment::Fragment;
use crate::array::{visibility, Array, ReplacedFragment};
use crate::encode::picture::{
    self, Axis, AxisKind, Condition, Picture, Status, AGGREGATE_ABOVE, MAX_MBRS,
};
use crate::encode::value;
use crate::error::Result;
use crate::format::datatype::decode_int;
use crate::format::schema::{ArraySchema, ArrayType, Dimension};
use crate::format::Datatype;

use super::array_tree::ArrayTree;
use super::node::When;

/// The file's name, wherever it is.
pub(super) const PICTURE: &str = "fragments.svg";

/// Fragments whose metadata is loaded at once (on the loader threads), then described:
/// the metadata cache need not hold every fragment of a large array at the same time.
const BATCH: usize = 512;

impl ArrayTree {
    /// The SVG of the array's fragments at `w` (`None`: now).
    pub(super) fn fragments_svg(&self, w: When) -> Result<Vec<u8>> {
        let array = self.array();
        Ok(picture::svg(&describe(&array, w)))
    }
}

/// The picture of `array` at `w`.
fn describe(array: &Array, w: When) -> Picture {
    let t = w.unwrap_or(u64::MAX);
    let schema = &array.schema_at(t).schema;
    let dense = schema.array_type == ArrayType::Dense;
    let mut all: Vec<(&Arc<Fragment>, Option<&ReplacedFragment>)> = array
        .fragments
        .iter()
        .map(|f| (f, None))
        .chain(array.replaced.iter().map(|r| (&r.fragment, Some(r))))
        .collect();
    all.sort_by(|(a, _), (b, _)| (a.timestamps.t1, &a.name).cmp(&(b.timestamps.t1, &b.name)));
    let mut replacing: HashMap<&str, usize> = HashMap::new();
    for r in &array.replaced {
        *replacing.entry(r.by.as_str()).or_default() += 1;
    }
    // Tile MBRs only while the fragments are drawn one by one.
    let mut mbrs_left = if all.len() <= AGGREGATE_ABOVE {
        MAX_MBRS
    } else {
        0
    };
    let mut text_ends: [Option<(Vec<u8>, Vec<u8>)>; 2] = [None, None];
    let mut fragments = Vec::with_capacity(all.len());
    for batch in all.chunks(BATCH) {
        let these: Vec<&Arc<Fragment>> = batch.iter().map(|(f, _)| *f).collect();
        Fragment::preload_metas(&these, &array.schemas);
        for &(f, replaced) in batch {
            let d = describe_fragment(array, f, replaced, &replacing, dense, t, &mut mbrs_left);
            if let Ok(meta) = f.meta(&array.schemas) {
                note_text_ends(
                    &mut text_ends,
                    &meta.schema.dimensions,
                    &meta.footer.non_empty_domain,
                );
            }
            fragments.push(d);
        }
    }
    let axes = schema
        .dimensions
        .iter()
        .take(2)
        .enumerate()
        .map(|(i, d)| {
            let kind = kind_of(d);
            let marks = match (&text_ends[i], kind) {
                (Some((lo, hi)), AxisKind::Text) => vec![
                    (text_key(lo), text_label(lo)),
                    (text_key(hi), text_label(hi)),
                ],
                _ => Vec::new(),
            };
            Axis {
                name: d.name.clone(),
                kind,
                marks,
            }
        })
        .collect();
    let mut notes = Vec::new();
    if mbrs_left == 0 && all.len() <= AGGREGATE_ABOVE {
        notes.push(format!(
            "tile MBRs are drawn for the first fragments only (at most {MAX_MBRS} outlines)"
        ));
    }
    Picture {
        at: w,
        axes,
        others: schema
            .dimensions
            .iter()
            .skip(2)
            .map(|d| d.name.clone())
            .collect(),
        fragments,
        conditions: conditions(array, schema, t),
        notes,
    }
}

/// One fragment: its standing at `t`, and what its metadata says of it.
fn describe_fragment(
    array: &Array,
    f: &Fragment,
    replaced: Option<&ReplacedFragment>,
    replacing: &HashMap<&str, usize>,
    dense: bool,
    t: u64,
    mbrs_left: &mut usize,
) -> picture::Fragment {
    let ts = &f.timestamps;
    let consolidated = match replacing.get(f.name.as_str()) {
        Some(n) => Some(format!(
            "it replaced {n} fragments still on disk (its .vac file lists them)"
        )),
        None if ts.t1 < ts.t2 => {
            Some("its timestamps span a range, which only a consolidation writes".into())
        }
        None => None,
    };
    let mut out = picture::Fragment {
        name: f.name.clone(),
        t1: ts.t1,
        t2: ts.t2,
        status: Status::Live,
        consolidated,
        kind: None,
        cells: None,
        bytes: f.size_on_disk().ok(),
        domain_text: "unknown".into(),
        extent: None,
        mbrs: Vec::new(),
        problem: None,
    };
    let meta = match f.meta(&array.schemas) {
        Ok(meta) => Some(meta),
        Err(e) => {
            out.problem = Some(format!("its metadata cannot be read: {e}"));
            None
        }
    };
    out.status = if !visibility::is_open_at(ts, dense, t) {
        Status::Later
    } else if let Some(r) = replaced.filter(|r| r.hidden_from <= t) {
        Status::Replaced {
            by: r.by.clone(),
            from: r.hidden_from,
        }
    } else if meta
        .as_ref()
        .is_some_and(|m| visibility::partly_visible(ts, m.footer.has_timestamps, t))
    {
        Status::Partial
    } else {
        Status::Live
    };
    let Some(meta) = meta else { return out };
    let dims = &meta.schema.dimensions;
    let domain = &meta.footer.non_empty_domain;
    out.kind = Some(if meta.footer.dense { "dense" } else { "sparse" });
    out.cells = Some(meta.cell_count());
    if domain.len() != dims.len() || meta.footer.null_non_empty_domain || domain.is_empty() {
        out.domain_text = "none".into();
        out.problem = Some("no non-empty domain: nothing to place".into());
        return out;
    }
    out.domain_text = dims
        .iter()
        .zip(domain)
        .map(|(d, (lo, hi))| {
            format!(
                "{} [{}, {}]",
                d.name,
                value::cell(lo, d.datatype),
                value::cell(hi, d.datatype)
            )
        })
        .collect::<Vec<_>>()
        .join(", ");
    out.extent = project(dims, domain);
    if out.extent.is_none() {
        out.problem = Some("its non-empty domain cannot be placed (bad bounds)".into());
    }
    if !meta.footer.dense && *mbrs_left > 0 {
        match meta.rtree() {
            Ok(tree) => {
                let leaves = tree.levels.last().map(Vec::as_slice).unwrap_or(&[]);
                if leaves.len() <= *mbrs_left {
                    *mbrs_left -= leaves.len();
                    out.mbrs = leaves.iter().filter_map(|m| project(dims, m)).collect();
                } else {
                    *mbrs_left = 0;
                }
            }
            Err(e) => out.problem = Some(format!("its R-tree cannot be read: {e}")),
        }
    }
    out
}

/// Where a box (per dimension its low and high bytes) lies along the first two
/// dimensions, in the axes' units (see [`AxisKind`]).
fn project(dims: &[Dimension], bounds: &[(Vec<u8>, Vec<u8>)]) -> Option<Vec<(f64, f64)>> {
    dims.iter()
        .zip(bounds)
        .take(2)
        .map(|(d, (lo, hi))| {
            let t = d.datatype;
            match kind_of(d) {
                AxisKind::Text => Some((text_key(lo), text_key(hi))),
                AxisKind::Float => {
                    let (lo, hi) = (float(lo, t)?, float(hi, t)?);
                    (lo <= hi).then_some((lo, hi))
                }
                AxisKind::Integer => {
                    let (lo, hi) = (decode_int(lo, t)?, decode_int(hi, t)?);
                    (lo <= hi).then_some((lo as f64, hi as f64 + 1.0))
                }
            }
        })
        .collect()
}

fn kind_of(d: &Dimension) -> AxisKind {
    if d.is_var() || d.datatype.is_string() {
        AxisKind::Text
    } else if d.datatype.is_float() {
        AxisKind::Float
    } else {
        AxisKind::Integer
    }
}

fn float(bytes: &[u8], t: Datatype) -> Option<f64> {
    match t {
        Datatype::Float32 => Some(f32::from_le_bytes(bytes.try_into().ok()?) as f64),
        _ => Some(f64::from_le_bytes(bytes.try_into().ok()?)),
    }
}

/// A string's place on a text axis: its first 8 bytes as a big-endian number (zero
/// padded), which keeps the strings' order up to those bytes.
fn text_key(bytes: &[u8]) -> f64 {
    let mut b = [0u8; 8];
    let n = bytes.len().min(8);
    b[..n].copy_from_slice(&bytes[..n]);
    u64::from_be_bytes(b) as f64
}

fn text_label(bytes: &[u8]) -> String {
    let s = String::from_utf8_lossy(bytes);
    match s.chars().count() > 16 {
        true => format!("{}…", s.chars().take(16).collect::<String>()),
        false => s.into_owned(),
    }
}

/// Widens the ends of the text dimensions among the first two by a fragment's domain.
fn note_text_ends(
    ends: &mut [Option<(Vec<u8>, Vec<u8>)>; 2],
    dims: &[Dimension],
    domain: &[(Vec<u8>, Vec<u8>)],
) {
    for (i, (d, (lo, hi))) in dims.iter().zip(domain).take(2).enumerate() {
        if kind_of(d) != AxisKind::Text {
            continue;
        }
        let e = ends[i].get_or_insert_with(|| (lo.clone(), hi.clone()));
        if lo < &e.0 {
            e.0 = lo.clone();
        }
        if hi > &e.1 {
            e.1 = hi.clone();
        }
    }
}

/// Every delete and update commit, its condition as the user wrote it.
fn conditions(array: &Array, schema: &ArraySchema, t: u64) -> Vec<Condition> {
    array
        .condition_commits
        .iter()
        .map(|c| Condition {
            timestamp: c.timestamp,
            kind: if c.is_update { "update" } else { "delete" },
            text: match c.condition_text(&*array.store, array.options.key, schema) {
                Ok(text) => text,
                Err(e) => format!("(its condition cannot be read: {e})"),
            },
            commit: c.rel_path.clone(),
            applied: c.timestamp <= t,
        })
        .collect()
}
