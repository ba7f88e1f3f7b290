//! Which fragment folders are live (`01-array-layout.md` §4): committed by a `.wrt`/`.ok`
//! file or a `.con` entry (minus `.ign` entries), or holding `__fragment_metadata.tdb`
//! (format 1-4), and not listed in any `.vac` file.

use std::collections::{BTreeMap, BTreeSet};

use crate::error::Result;
use crate::format::commits::{normalize_vacuum_entry, parse_consolidated_commits, parse_lines};
use crate::format::name::{NameGeneration, TimestampedName};
use crate::storage::{Listed, Named, Store};

/// `(name, is folder)` of every entry of a listing.
fn entries(listing: &[Listed]) -> Vec<(String, bool)> {
    listing
        .iter()
        .map(|e| (e.name.clone(), e.is_folder()))
        .collect()
}

/// A small file, read whole: in one request where its size came with the listing.
fn read_sized(store: &dyn Store, key: &str, size: Option<u64>) -> Result<Vec<u8>> {
    match size {
        Some(size) => store.read_range(key, 0, size),
        None => store.read_all(key),
    }
}

/// The size a listing gave `name`, if it did.
fn listed_size(listing: &[Named], name: &str) -> Option<u64> {
    let i = listing
        .binary_search_by(|e| e.name.as_str().cmp(name))
        .ok()?;
    listing[i].size
}

/// A fragment folder found on disk.
#[derive(Debug, Clone, PartialEq)]
pub struct FoundFragment {
    /// Folder name, e.g. `__1_1_<uuid>_22`.
    pub name: String,
    /// Path relative to the array root: `__fragments/<name>` or `<name>`.
    pub rel_dir: String,
    pub timestamps: TimestampedName,
}

/// A fragment folder that is not shown, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Ignored {
    pub rel_dir: String,
    pub reason: String,
}

/// A committed fragment that a consolidation replaced (a `.vac` file lists it) but that
/// is still on disk: hidden from the array now, shown in its past.
#[derive(Debug, Clone, PartialEq)]
pub struct Replaced {
    pub fragment: FoundFragment,
    /// The end timestamp of the consolidation that replaced it (the `.vac` file's): from
    /// then on TileDB reads the consolidated fragment instead.
    pub hidden_from: u64,
}

#[derive(Debug, Default)]
pub struct Liveness {
    /// Live fragments, oldest first (by first timestamp, then name).
    pub live: Vec<FoundFragment>,
    /// Fragments replaced by a consolidation but not vacuumed yet.
    pub replaced: Vec<Replaced>,
    pub ignored: Vec<Ignored>,
    /// Delete/update commits, relative paths (their bytes, embedded or on disk).
    pub conditions: Vec<(String, Option<Vec<u8>>)>,
}

const SPECIAL: &[&str] = &[
    "__schema",
    "__commits",
    "__meta",
    "__fragments",
    "__fragment_meta",
    "__labels",
    "__enumerations",
];

/// Finds the live fragments of the array in `store`; `root_entries` is the listing of
/// its root (which the caller has already). `seen_committed` tells a root-level fragment
/// folder (formats 1-4) found committed by an earlier scan: its commit marker does not
/// go away, so a rescan lists only the array's own folders, never one per fragment.
pub fn find_fragments(
    store: &dyn Store,
    root_listing: &[Listed],
    seen_committed: &dyn Fn(&str) -> bool,
) -> Result<Liveness> {
    let has = |folder: &str| {
        root_listing
            .iter()
            .any(|e| e.name == folder && e.is_folder())
    };
    // Names only: one marker file per fragment, whose sizes nobody needs.
    let commits_listing = if has("__commits") {
        store.list_names("__commits")?
    } else {
        Vec::new()
    };
    let commit_files: Vec<(String, bool)> = commits_listing
        .iter()
        .map(|e| (e.name.clone(), e.folder))
        .collect();
    let root_entries = entries(root_listing);
    let commit = |name: &str| {
        let key = crate::storage::join("__commits", name);
        read_sized(store, &key, listed_size(&commits_listing, name))
    };

    let mut ignore = BTreeSet::new();
    for (name, is_dir) in &commit_files {
        if !is_dir && name.ends_with(".ign") {
            for line in parse_lines(&commit(name)?) {
                ignore.insert(line);
            }
        }
    }

    // Relative commit paths that count as present: `__commits/<x>.wrt`, `<x>.ok`, ...
    let mut committed = BTreeSet::new();
    let mut conditions = Vec::new();
    let mut vacuumed: BTreeMap<String, String> = BTreeMap::new();
    let mut add_vac = |bytes: &[u8], source: &str| {
        for entry in parse_lines(bytes) {
            vacuumed
                .entry(normalize_vacuum_entry(&entry))
                .and_modify(|earliest| {
                    // Listed twice: hidden from the first consolidation on.
                    let t2 = |s: &str| TimestampedName::parse(s).map_or(u64::MAX, |t| t.t2);
                    if t2(source) < t2(earliest) {
                        *earliest = source.to_string();
                    }
                })
                .or_insert_with(|| source.to_string());
        }
    };
    for (name, is_dir) in &commit_files {
        if *is_dir {
            continue;
        }
        let rel = format!("__commits/{name}");
        if name.ends_with(".con") {
            let bytes = commit(name)?;
            // A corrupt .con file hides what it commits; it is reported, not fatal.
            match parse_consolidated_commits(&bytes) {
                Ok(entries) => {
                    for e in entries {
                        if ignore.contains(&e.path) {
                            continue;
                        }
                        if e.path.ends_with(".del") || e.path.ends_with(".upd") {
                            conditions.push((e.path.clone(), e.payload.clone()));
                        }
                        committed.insert(e.path);
                    }
                }
                Err(e) => log::warn!("{rel}: unreadable consolidated commits file: {e}"),
            }
        } else if name.ends_with(".wrt") {
            committed.insert(rel);
        } else if name.ends_with(".del") || name.ends_with(".upd") {
            conditions.push((rel, None));
        } else if name.ends_with(".vac") {
            add_vac(&commit(name)?, &rel);
        }
    }
    for (name, is_dir) in &root_entries {
        if *is_dir {
            continue;
        }
        if name.ends_with(".ok") {
            committed.insert(name.clone());
        } else if name.ends_with(".vac") {
            let size = root_listing
                .iter()
                .find(|e| e.name == *name)
                .and_then(|e| e.size);
            add_vac(&read_sized(store, name, size)?, name);
        }
    }

    let mut found = Vec::new();
    let mut ignored = Vec::new();
    let fragments_listing = if has("__fragments") {
        store.list("__fragments")?
    } else {
        Vec::new()
    };
    for (name, is_dir) in entries(&fragments_listing) {
        if is_dir {
            let rel_dir = format!("__fragments/{name}");
            let commit = format!("__commits/{name}.wrt");
            found.push((
                name,
                rel_dir,
                committed.contains(&commit),
                ".wrt commit file",
            ));
        }
    }
    for (name, is_dir) in &root_entries {
        if !is_dir || name.contains('.') || SPECIAL.contains(&name.as_str()) {
            continue;
        }
        let rel_dir = name.clone();
        let Some(ts) = TimestampedName::parse(name) else {
            continue;
        };
        let is_committed = match ts.generation {
            NameGeneration::Three => committed.contains(&format!("{name}.ok")),
            _ if seen_committed(name) => true,
            _ => store
                .list(name)?
                .iter()
                .any(|e| e.name == "__fragment_metadata.tdb" && !e.is_folder()),
        };
        let marker = match ts.generation {
            NameGeneration::Three => ".ok commit file",
            _ => "__fragment_metadata.tdb",
        };
        found.push((name.clone(), rel_dir, is_committed, marker));
    }

    let mut live = Vec::new();
    let mut replaced = Vec::new();
    for (name, rel_dir, is_committed, marker) in found {
        let Some(timestamps) = TimestampedName::parse(&name) else {
            ignored.push(Ignored {
                rel_dir,
                reason: "not a timestamped fragment name".into(),
            });
            continue;
        };
        if !is_committed {
            ignored.push(Ignored {
                rel_dir,
                reason: format!("uncommitted: no {marker}"),
            });
        } else if let Some(vac) = vacuumed.get(&rel_dir) {
            ignored.push(Ignored {
                rel_dir: rel_dir.clone(),
                reason: format!("consolidated away: listed in {vac}"),
            });
            replaced.push(Replaced {
                fragment: FoundFragment {
                    name,
                    rel_dir,
                    timestamps,
                },
                hidden_from: TimestampedName::parse(vac).map_or(0, |t| t.t2),
            });
        } else {
            live.push(FoundFragment {
                name,
                rel_dir,
                timestamps,
            });
        }
    }
    live.sort_by(|a, b| (a.timestamps.t1, &a.name).cmp(&(b.timestamps.t1, &b.name)));
    Ok(Liveness {
        live,
        replaced,
        ignored,
        conditions,
    })
}
