//! `latest/` and `at/<T>/`: the array as TileDB reads it now, or as of timestamp `T` (ms
//! since the epoch). A state folder lists the faces of its table (`read.json`,
//! `cells.csv`) and a folder per field with the field faces (`faces/`); this module
//! keeps the merged states (from the merge engine, [`Merged`]), lists `at/` and renders
//! `read.json`.

use std::sync::Arc;

use serde_json::{json, Value};

use super::array_tree::ArrayTree;
use super::faces;
use super::node::{Folder, Node, When};
use super::states::StateFacts;
use crate::array::field::FieldRole;
use crate::encode::value;
use crate::error::{Error, Result};
use crate::read::merge::Merged;
use crate::view::names;

impl ArrayTree {
    /// The array at `w`, merged once for as long as what it is made of stays the same
    /// (see [`super::states`] and [`ArrayTree::state_generation`]).
    pub(super) fn merged(&self, w: When) -> Result<Arc<Merged>> {
        self.merged_keyed(w).map(|(_, merged)| merged)
    }

    /// [`ArrayTree::merged`], with the generation it was merged at (what is derived
    /// from it is filed under that).
    pub(super) fn merged_keyed(&self, w: When) -> Result<(u64, Arc<Merged>)> {
        let array = self.array();
        let generation = self.state_generation_of(w, &array);
        let merged = self.states.get(&w, generation, || {
            Merged::open(self.caches.engine.clone(), &array, w)
        })?;
        Ok((generation, merged))
    }

    /// The generation of the state at `w`: a digest of what its merge reads (see
    /// [`crate::read::merge::state_digest`]), computed once per rescan. It changes when
    /// a rescan changed that state (a fragment visible at `w` came or went, a delete up
    /// to `w`), not when it only added later fragments: a state merged, rendered or
    /// described then stays.
    pub(super) fn state_generation(&self, w: When) -> u64 {
        self.state_facts(w, &self.array()).0
    }

    fn state_generation_of(&self, w: When, array: &crate::array::Array) -> u64 {
        self.state_facts(w, array).0
    }

    /// When the state at `w` last changed (see [`crate::read::merge::state_time`]): the
    /// modification time of its files.
    pub(super) fn state_time(&self, w: When) -> Option<u64> {
        self.state_facts(w, &self.array()).1
    }

    /// The state's digest and time, computed once per rescan.
    fn state_facts(&self, w: When, array: &crate::array::Array) -> (u64, Option<u64>) {
        let f = self.facts_of(w, array);
        (f.digest, f.time)
    }

    /// The state's name in the disk cache (see [`crate::read::merge::state_key`]),
    /// computed once per rescan.
    /// `None` when a fragment's version could not be told (then asked again next time).
    pub(super) fn state_key(&self, w: When) -> Option<Arc<str>> {
        let array = self.array();
        let facts = self.facts_of(w, &array);
        if let Some(key) = facts.key.get() {
            return Some(key.clone());
        }
        let key: Arc<str> = crate::read::merge::state_key(&array, w)?.into();
        Some(facts.key.get_or_init(|| key).clone())
    }

    fn facts_of(&self, w: When, array: &crate::array::Array) -> StateFacts {
        /// States kept: more than the open states, few enough to forget them all.
        const KEPT: usize = 4096;
        let scan = self.generation.load(std::sync::atomic::Ordering::Acquire);
        let mut facts = self.state_digests.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(f) = facts.get(&w) {
            if f.scan == scan {
                return f.clone();
            }
        }
        let f = StateFacts {
            scan,
            digest: crate::read::merge::state_digest(array, w),
            time: crate::read::merge::state_time(array, w),
            key: Arc::default(),
        };
        if facts.len() >= KEPT {
            facts.clear();
        }
        facts.insert(w, f.clone());
        f
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
            .chain(array.replaced.iter().map(|r| &r.fragment))
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

    /// The child `name` of `at/`: any timestamp, by name; anything else is not there.
    pub(super) fn lookup_at(&self, name: &str) -> Result<Node> {
        name.parse::<u64>()
            .ok()
            .filter(|t| t.to_string() == name)
            .map(|t| Node::State(Some(t)))
            .ok_or_else(|| Error::NotFound(format!("at/{name}: not a timestamp")))
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
        let mut value = json!({
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
            "enumerations": self.enumerations_json(Folder::State(w))?,
        });
        // Then each kind of file's line, as its face says (`faces/table.rs`).
        if let Some(map) = value.as_object_mut() {
            for summary in faces::summaries() {
                map.insert(summary.key.into(), (summary.of_state)(self, w)?);
            }
        }
        Ok(value)
    }
}
