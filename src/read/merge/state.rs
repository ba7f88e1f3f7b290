//! Which fragments make the state at a timestamp, and the names of that state.

use std::sync::Arc;

use crate::array::fragment::Fragment;
use crate::array::{visibility, Array};
use crate::format::schema::ArrayType;

/// The fragments visible at `t`, oldest first by (t1, name), each with the timestamp a
/// consolidation hides it from (`None`: live).
pub(crate) fn visible(array: &Array, dense: bool, t: u64) -> Vec<(&Arc<Fragment>, Option<u64>)> {
    let mut candidates: Vec<(&Arc<Fragment>, Option<u64>)> = array
        .fragments
        .iter()
        .map(|f| (f, None))
        .chain(
            array
                .replaced
                .iter()
                .map(|r| (&r.fragment, Some(r.hidden_from))),
        )
        .filter(|(f, hidden)| {
            visibility::is_open_at(&f.timestamps, dense, t) && hidden.is_none_or(|h| h > t)
        })
        .collect();
    candidates
        .sort_by(|(a, _), (b, _)| (a.timestamps.t1, &a.name).cmp(&(b.timestamps.t1, &b.name)));
    candidates
}

/// A digest of everything [`Merged::open`] reads of `array` for the state at `at`: its
/// schema, the visible fragments and the delete/update commits up to then. Two scans
/// of the array with the same digest for `at` merge to the same state, so a state stays
/// open across rescans that only added later fragments (a writer that commits every
/// second would otherwise have every old state merged again every second). It hashes
/// names, not this process's fragment numbers, so two processes of the same build
/// agree on it: `fragfs serve` replicas derive the same `ETag` from it.
pub fn state_digest(array: &Array, at: Option<u64>) -> u64 {
    use std::hash::{Hash, Hasher};
    let t = at.unwrap_or(u64::MAX);
    let schema = array.schema_at(t);
    let dense = schema.schema.array_type == ArrayType::Dense;
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (t, &schema.name).hash(&mut h);
    for (f, hidden) in visible(array, dense, t) {
        (&f.rel_dir, &f.name, hidden).hash(&mut h);
    }
    for c in array.condition_commits.iter().filter(|c| c.timestamp <= t) {
        (&c.rel_path, c.timestamp, c.is_update).hash(&mut h);
    }
    h.finish()
}

/// What [`state_digest`] digests, as a SHA-256 (hex) over an unambiguous encoding:
/// the name of a state in the disk cache, where two states that differ must never meet,
/// across processes and builds. Each visible fragment is named with the version of its
/// metadata file ([`crate::array::Fragment::metadata_version`]), so a fragment
/// rewritten in place makes every state that shows it another state. `None` when a
/// fragment's version cannot be told (the state is then not cached).
pub fn state_key(array: &Array, at: Option<u64>) -> Option<String> {
    use sha2::{Digest, Sha256};
    let t = at.unwrap_or(u64::MAX);
    let schema = array.schema_at(t);
    let dense = schema.schema.array_type == ArrayType::Dense;
    let mut h = Sha256::new();
    let mut text = |s: &str| {
        h.update((s.len() as u64).to_le_bytes());
        h.update(s.as_bytes());
    };
    text(&t.to_string());
    text(&schema.name);
    for (f, hidden) in visible(array, dense, t) {
        let version = f.metadata_version().ok()??;
        text(&format!(
            "fragment {} {} {hidden:?} {version}",
            f.rel_dir, f.name
        ));
    }
    for c in array.condition_commits.iter().filter(|c| c.timestamp <= t) {
        text(&format!(
            "commit {} {} {}",
            c.rel_path, c.timestamp, c.is_update
        ));
    }
    Some(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// When the state at `at` last changed: the newest end timestamp of the fragments it
/// merges and of the deletes it applies (`None` for an array with neither). The merged
/// files' modification time (and `Last-Modified` of `fragfs serve`).
pub fn state_time(array: &Array, at: Option<u64>) -> Option<u64> {
    let t = at.unwrap_or(u64::MAX);
    let dense = array.schema_at(t).schema.array_type == ArrayType::Dense;
    let fragments = visible(array, dense, t)
        .into_iter()
        .map(|(f, _)| f.timestamps.t2.min(t));
    let deletes = array
        .condition_commits
        .iter()
        .filter(|c| c.timestamp <= t)
        .map(|c| c.timestamp);
    fragments.chain(deletes).max()
}
