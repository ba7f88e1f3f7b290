//! `latest/` and `at/<T>/`: the array as TileDB reads it now, or as of timestamp `T` (ms
//! since the epoch), as files: `read.json`, `cells.csv`, and per field `values.bin`,
//! `offsets.bin`, `validity.bin`, `values.npy`, `values.txt`, and for dense rasters
//! `values.hdr`. The cells come from the merge engine ([`Merged`]).

use std::sync::Arc;

use serde_json::{json, Value};

use super::zarr::ZNode;
use super::{ArrayTree, Node};
use crate::array::field::FieldRole;
use crate::error::{Error, Result};
use crate::read::merge::Merged;
use crate::read::RawFile;
use crate::view::nodes::Ino;
use crate::view::{names, npy, value};

/// A timestamp: `None` is now (`latest/`).
pub(super) type When = Option<u64>;

impl ArrayTree {
    /// The array at `w`, merged once per rescan generation.
    pub(super) fn merged(&self, w: When) -> Result<Arc<Merged>> {
        let generation = self.generation.load(std::sync::atomic::Ordering::Acquire);
        if let Some((g, m)) = self.lock_states().get(&w) {
            if *g == generation {
                return Ok(m.clone());
            }
        }
        let merged = Arc::new(Merged::open(self.engine.clone(), &self.array(), w)?);
        let mut states = self.lock_states();
        // A few states are kept: each is small (its indexes grow by 8 bytes per 4096
        // cells); the oldest go when many were opened.
        if states.len() >= 64 {
            states.clear();
        }
        states.insert(w, (generation, merged.clone()));
        Ok(merged)
    }

    fn lock_states(&self) -> std::sync::MutexGuard<'_, super::MergedStates> {
        self.states.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The timestamps at which the array changed: every fragment's end, the start of
    /// fragments whose cells carry timestamps (visible in part from then), and every
    /// delete.
    pub(super) fn change_timestamps(&self) -> Vec<u64> {
        let array = self.array();
        let mut out: Vec<u64> = Vec::new();
        for f in array
            .fragments
            .iter()
            .chain(array.replaced.iter().map(|(f, _)| f))
        {
            out.push(f.timestamps.t2);
            if f.timestamps.t1 != f.timestamps.t2 {
                out.push(f.timestamps.t1);
            }
        }
        out.extend(array.condition_commits.iter().map(|c| c.timestamp));
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The entries of a folder of the merged view.
    pub(super) fn list_merged(&self, dir: &Node) -> Result<Vec<(String, Node)>> {
        let e = |name: &str, node| (name.to_string(), node);
        Ok(match dir {
            Node::AtDir => self
                .change_timestamps()
                .into_iter()
                .map(|t| (t.to_string(), Node::State(Some(t))))
                .collect(),
            Node::State(w) => {
                let merged = self.merged(*w)?;
                let mut out = vec![
                    e("read.json", Node::ReadJson(*w)),
                    e("cells.csv", Node::MCells(*w)),
                ];
                for (i, f) in merged.fields.iter().enumerate() {
                    out.push((names::encode(&f.name), Node::MField(*w, i)));
                }
                // `zarr/` of the latest state is at the root.
                if w.is_some() && self.has_zarr(*w) {
                    out.push(e("zarr", Node::Zarr(*w, ZNode::Root)));
                }
                out
            }
            Node::MField(w, i) => {
                let merged = self.merged(*w)?;
                let f = merged
                    .fields
                    .get(*i)
                    .ok_or_else(|| Error::NotFound(format!("field #{i}")))?;
                let mut out = vec![e("values.bin", Node::MRaw(*w, *i, RawFile::Values))];
                if f.is_var() {
                    out.push(e("offsets.bin", Node::MRaw(*w, *i, RawFile::Offsets)));
                }
                if f.nullable {
                    out.push(e("validity.bin", Node::MRaw(*w, *i, RawFile::Validity)));
                }
                if !f.is_var() {
                    out.push(e("values.npy", Node::MNpy(*w, *i)));
                }
                out.push(e("values.txt", Node::MText(*w, *i)));
                if envi_type(&merged, *i).is_some() {
                    out.push(e("values.hdr", Node::MHdr(*w, *i)));
                }
                let of = super::FieldOf::State(*w, *i);
                if self.field_enumeration_name(&of)?.is_some() {
                    out.push(e("enumeration", Node::Enum(of)));
                }
                out
            }
            other => return Err(Error::NotDirectory(format!("{other:?}"))),
        })
    }

    /// The child `name` of `at/`: any timestamp, by name; anything else is not there.
    pub(super) fn lookup_at(&self, name: &str) -> Result<Node> {
        name.parse::<u64>()
            .ok()
            .filter(|t| t.to_string() == name)
            .map(|t| Node::State(Some(t)))
            .ok_or_else(|| Error::NotFound(format!("at/{name}: not a timestamp")))
    }

    /// Whether a merged node exists (the field of a state, say).
    pub(super) fn check_merged(&self, node: &Node) -> Result<()> {
        let (w, i) = match node {
            Node::MField(w, i)
            | Node::MRaw(w, i, _)
            | Node::MNpy(w, i)
            | Node::MText(w, i)
            | Node::MHdr(w, i) => (*w, Some(*i)),
            // Every timestamp has a state, and its files: whether it can be merged is
            // for their reads to tell (a stat must not need every fragment's metadata).
            _ => return Ok(()),
        };
        let merged = self.merged(w)?;
        let Some(i) = i else { return Ok(()) };
        let f = merged
            .fields
            .get(i)
            .ok_or_else(|| Error::NotFound(format!("field #{i}")))?;
        let present = match node {
            Node::MRaw(_, _, RawFile::Offsets) => f.is_var(),
            Node::MRaw(_, _, RawFile::Validity) => f.nullable,
            Node::MNpy(..) => !f.is_var(),
            Node::MHdr(..) => envi_type(&merged, i).is_some(),
            _ => true,
        };
        match present {
            true => Ok(()),
            false => Err(Error::NotFound(format!("{node:?}"))),
        }
    }

    /// The size of a merged file if it is known without a pass over cells (a listing
    /// never starts one: such files show 0, as text files do, until they were read).
    pub(super) fn merged_known_size(&self, ino: Ino, node: &Node) -> Result<Option<u64>> {
        let w = match node {
            Node::MRaw(w, ..) | Node::MNpy(w, _) | Node::ReadJson(w) | Node::MHdr(w, _) => *w,
            Node::MText(..) | Node::MCells(_) => return Ok(self.known_text_size(ino, node)),
            _ => return Ok(None),
        };
        let merged = self.merged(w)?;
        Ok(match node {
            Node::MRaw(_, i, raw) => merged.known_size(*i, *raw),
            Node::MNpy(_, i) if merged.counted() => Some(self.merged_size(ino, node)?),
            Node::ReadJson(_) if merged.counted() => Some(self.merged_size(ino, node)?),
            Node::MHdr(..) => Some(self.merged_size(ino, node)?),
            _ => None,
        })
    }

    /// Size of a merged file (text files: see [`ArrayTree::derived_size`]).
    pub(super) fn merged_size(&self, ino: Ino, node: &Node) -> Result<u64> {
        match node {
            Node::MRaw(w, i, raw) => self.merged(*w)?.size(*i, *raw),
            Node::MNpy(w, i) => {
                let merged = self.merged(*w)?;
                let header = merged_npy_header(&merged, *i)?;
                Ok((header.len() as u64).saturating_add(merged.size(*i, RawFile::Values)?))
            }
            Node::MText(..) | Node::MCells(_) => self.derived_size(ino, node),
            _ => Ok(self.rendered(ino, node)?.bytes("a rendered file")?.len() as u64),
        }
    }

    /// Appends bytes `[offset, offset + len)` of a merged file to `out`.
    pub(super) fn merged_read_into(
        &self,
        ino: Ino,
        node: &Node,
        offset: u64,
        len: u64,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        match node {
            Node::MRaw(w, i, raw) => self.merged(*w)?.read_into(*i, *raw, offset, len, out),
            Node::MNpy(w, i) => {
                let merged = self.merged(*w)?;
                let header = merged_npy_header(&merged, *i)?;
                let h = header.len() as u64;
                let end = offset.saturating_add(len);
                if offset < h {
                    out.extend_from_slice(&header[offset as usize..end.min(h) as usize]);
                }
                if end > h {
                    let from = offset.max(h) - h;
                    merged.read_into(*i, RawFile::Values, from, end - h - from, out)?;
                }
                Ok(())
            }
            Node::MText(..) | Node::MCells(_) => self.text_read_into(ino, node, offset, len, out),
            _ => {
                let rendered = self.rendered(ino, node)?;
                let bytes = rendered.bytes("a rendered file")?;
                let start = offset.min(bytes.len() as u64) as usize;
                let end = offset.saturating_add(len).min(bytes.len() as u64) as usize;
                out.extend_from_slice(&bytes[start..end]);
                Ok(())
            }
        }
    }

    /// `read.json`: what the state is made of.
    pub(super) fn read_json(&self, w: When) -> Result<Value> {
        let merged = self.merged(w)?;
        let array = self.array();
        let dims = &merged.schema.dimensions;
        let domain = merged.non_empty_domain().map(|d| {
            Value::Array(
                d.iter()
                    .zip(dims)
                    .map(|((lo, hi), dim)| value::range(lo, hi, dim.datatype))
                    .collect(),
            )
        });
        let t = w.unwrap_or(u64::MAX);
        let deletes: Vec<Value> = array
            .condition_commits
            .iter()
            .filter(|c| !c.is_update && c.timestamp <= t)
            .map(|c| json!({"commit": c.rel_path, "timestamp": c.timestamp}))
            .collect();
        let fill: serde_json::Map<String, Value> = merged
            .fields
            .iter()
            .filter(|f| f.role == FieldRole::Attribute)
            .map(|f| (names::encode(&f.name), value::cell(&f.fill, f.datatype)))
            .collect();
        Ok(json!({
            "timestamp": w,
            "schema": merged.schema_name,
            "layout": if merged.is_dense() { "row-major" } else { "global" },
            "non_empty_domain": domain,
            "shape": merged.shape(),
            "cell_count": merged.cell_count()?,
            "fragments": merged.sources.iter().map(|s| json!({
                "name": s.fragment.name,
                "timestamp_range": [s.fragment.timestamps.t1, s.fragment.timestamps.t2],
                "partly_visible": s.partial,
            })).collect::<Vec<_>>(),
            "deletes_applied": deletes,
            "fill_values": fill,
        }))
    }

    /// `values.hdr`: an ENVI header, so GDAL and other raster tools read `values.bin`.
    pub(super) fn envi_header(&self, w: When, i: usize) -> Result<String> {
        let merged = self.merged(w)?;
        let code = envi_type(&merged, i).ok_or_else(|| Error::NotFound("values.hdr".into()))?;
        let shape = merged.shape().unwrap_or_default();
        let f = &merged.fields[i];
        let dims = &merged.schema.dimensions;
        let domain = merged.non_empty_domain().unwrap_or_default();
        let low = |d: usize| -> String {
            domain
                .get(d)
                .map(|(lo, _)| value::element(lo, dims[d].datatype).to_string())
                .unwrap_or_else(|| "0".into())
        };
        let n = shape.len();
        let (bands, lines, samples) = match n {
            3 => (shape[0], shape[1], shape[2]),
            _ => (1, shape[0], shape[1]),
        };
        let band_names: Vec<String> = if n == 3 {
            let lo: i128 = domain
                .first()
                .and_then(|(lo, _)| crate::format::datatype::decode_int(lo, dims[0].datatype))
                .unwrap_or(0);
            (0..bands)
                .map(|b| format!("{}={}", dims[0].name, lo + b as i128))
                .collect()
        } else {
            vec![names::encode(&f.name)]
        };
        let fill = value::element(&f.fill, f.datatype);
        let fill = match fill {
            Value::String(s) => s.to_lowercase(),
            other => other.to_string(),
        };
        Ok(format!(
            "ENVI\n\
             description = {{fragfs: {} at {}}}\n\
             samples = {samples}\n\
             lines = {lines}\n\
             bands = {bands}\n\
             header offset = 0\n\
             file type = ENVI Standard\n\
             data type = {code}\n\
             interleave = bsq\n\
             byte order = 0\n\
             data ignore value = {fill}\n\
             band names = {{{}}}\n\
             map info = {{Arbitrary, 1, 1, {}, {}, 1, 1, 0}}\n",
            names::encode(&f.name),
            w.map_or("latest".to_string(), |t| t.to_string()),
            band_names.join(", "),
            low(n - 1),
            low(n - 2),
        ))
    }
}

/// The NumPy header of a merged field: dense arrays shaped like their box.
fn merged_npy_header(merged: &Merged, i: usize) -> Result<Vec<u8>> {
    let f = merged
        .fields
        .get(i)
        .ok_or_else(|| Error::NotFound(format!("field #{i}")))?;
    Ok(match merged.shape() {
        Some(shape) => npy::shaped_header(f.datatype, f.cell_val_num, &shape),
        None => npy::header(f.datatype, f.cell_val_num, merged.cell_count()?),
    })
}

/// The ENVI data type code of field `i`, if it gets a `values.hdr`: a dense array of 2
/// dimensions (3: the first is bands) and a fixed-size, single-value numeric attribute of
/// a type GDAL 3.6's ENVI driver reads (no INT8 there: it has no signed byte).
fn envi_type(merged: &Merged, i: usize) -> Option<u8> {
    let f = merged.fields.get(i)?;
    let dims = merged.schema.dimensions.len();
    if !merged.is_dense() || !(2..=3).contains(&dims) || f.role != FieldRole::Attribute {
        return None;
    }
    // Nothing visible: no raster to describe.
    merged.non_empty_domain()?;
    if f.cell_val_num != 1 {
        return None;
    }
    use crate::format::Datatype::*;
    Some(match f.datatype {
        UInt8 => 1,
        Int16 => 2,
        Int32 => 3,
        Float32 => 4,
        Float64 => 5,
        UInt16 => 12,
        UInt32 => 13,
        Int64 => 14,
        UInt64 => 15,
        _ => return None,
    })
}
