//! Which fragment folders are live (`01-array-layout.md` §4): committed by a `.wrt`/`.ok`
//! file or a `.con` entry (minus `.ign` entries), or holding `__fragment_metadata.tdb`
//! (format 1-4), and not listed in any `.vac` file.

use std::collections::{BTreeMap, BTreeSet};

use crate::error::Result;
use crate::format::commits::{normalize_vacuum_entry, parse_consolidated_commits, parse_lines};
use crate::format::name::{NameGeneration, TimestampedName};

use super::visibility;
use crate::storage::{Listed, Named, Store};

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
    /// From when TileDB reads the consolidated fragment instead: the first timestamp at
    /// which it opens a `.vac` file that lists it ([`visibility::opens_from`]).
    pub hidden_from: u64,
    /// The consolidated fragment that replaced it: the name of that `.vac` file, without
    /// its folder and extension.
    pub by: String,
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

/// Finds the live fragments of the array in `store`; `root_listing` is the listing of
/// its root (which the caller has already), `dense` its type (from when a
/// consolidation hides what it replaced depends on it). `seen_committed` tells a root-level fragment
/// folder (formats 1-4) found committed by an earlier scan: its commit marker does not
/// go away, so a rescan lists only the array's own folders, never one per fragment.
///
/// The phases, in the order TileDB's own reader needs them: what `.ign` files take back
/// from consolidated commits, then every commit marker (what is committed, the delete
/// and update commits, what consolidations replaced), then the fragment folders present,
/// then the verdict on each.
pub fn find_fragments(
    store: &dyn Store,
    root_listing: &[Listed],
    seen_committed: &dyn Fn(&str) -> bool,
    dense: bool,
) -> Result<Liveness> {
    let commits = CommitsFolder::list(store, root_listing)?;
    let ignore = commits.ignored_commits()?;
    let mut markers = commits.markers(&ignore)?;
    markers.add_root_markers(store, root_listing)?;
    let candidates = fragment_folders(store, root_listing, &markers.committed, seen_committed)?;
    let mut liveness = judge(candidates, &markers.vacuumed, dense);
    liveness.conditions = markers.conditions;
    Ok(liveness)
}

/// Whether the root listing has the folder `name`.
fn has_folder(root_listing: &[Listed], name: &str) -> bool {
    root_listing.iter().any(|e| e.name == name && e.is_folder())
}

/// The `__commits` folder (format 12+): its file names, and reads of its files.
struct CommitsFolder<'a> {
    store: &'a dyn Store,
    /// Names only: one marker file per fragment, whose sizes nobody needs. Empty when
    /// the array has no `__commits` folder (formats 1-11).
    listing: Vec<Named>,
}

impl<'a> CommitsFolder<'a> {
    fn list(store: &'a dyn Store, root_listing: &[Listed]) -> Result<CommitsFolder<'a>> {
        let listing = if has_folder(root_listing, "__commits") {
            store.list_names("__commits")?
        } else {
            Vec::new()
        };
        Ok(CommitsFolder { store, listing })
    }

    /// The names of the files (not folders) in the folder, in listing order.
    fn files(&self) -> impl Iterator<Item = &str> {
        self.listing
            .iter()
            .filter(|e| !e.folder)
            .map(|e| e.name.as_str())
    }

    fn read(&self, name: &str) -> Result<Vec<u8>> {
        let key = crate::storage::join("__commits", name);
        read_sized(self.store, &key, listed_size(&self.listing, name))
    }

    /// Phase 1: the commit paths the `.ign` files list. A consolidated commits file
    /// (`.con`) may embed commits that a later operation took back; TileDB writes their
    /// paths to an `.ign` file rather than rewrite the `.con`, so they must be known
    /// before any `.con` is read.
    fn ignored_commits(&self) -> Result<BTreeSet<String>> {
        let mut ignore = BTreeSet::new();
        for name in self.files().filter(|n| n.ends_with(".ign")) {
            ignore.extend(parse_lines(&self.read(name)?));
        }
        Ok(ignore)
    }

    /// Phase 2: every marker of the folder, in listing order (which is the order of the
    /// condition commits): `.wrt` and `.con` entries commit fragments, `.del`/`.upd`
    /// (standalone or embedded in a `.con`) are the condition commits, `.vac` files list
    /// the fragments consolidations replaced. A `.con` entry listed in `ignore` counts as
    /// absent.
    fn markers(&self, ignore: &BTreeSet<String>) -> Result<Markers> {
        let mut markers = Markers::default();
        for name in self.files() {
            let rel = format!("__commits/{name}");
            if name.ends_with(".con") {
                let bytes = self.read(name)?;
                // A corrupt .con file hides what it commits; it is reported, not fatal.
                match parse_consolidated_commits(&bytes) {
                    Ok(entries) => {
                        for e in entries {
                            if ignore.contains(&e.path) {
                                continue;
                            }
                            if is_condition(&e.path) {
                                markers.conditions.push((e.path.clone(), e.payload.clone()));
                            }
                            markers.committed.insert(e.path);
                        }
                    }
                    Err(e) => log::warn!("{rel}: unreadable consolidated commits file: {e}"),
                }
            } else if name.ends_with(".wrt") {
                markers.committed.insert(rel);
            } else if is_condition(name) {
                markers.conditions.push((rel, None));
            } else if name.ends_with(".vac") {
                markers.vacuumed.add(&self.read(name)?, &rel);
            }
        }
        Ok(markers)
    }
}

/// Whether a commit path names a delete or an update commit.
fn is_condition(path: &str) -> bool {
    path.ends_with(".del") || path.ends_with(".upd")
}

/// What the commit markers say, before any fragment folder is looked at.
#[derive(Default)]
struct Markers {
    /// Relative commit paths that count as present: `__commits/<x>.wrt`, `<x>.ok`, ...
    committed: BTreeSet<String>,
    /// Delete/update commits, relative paths (their bytes when a `.con` embeds them).
    conditions: Vec<(String, Option<Vec<u8>>)>,
    vacuumed: VacuumLists,
}

impl Markers {
    /// Phase 3: the markers formats 1-11 keep in the array's root instead of
    /// `__commits`: `<fragment>.ok` commits a fragment (formats 5-11), `<t1_t2>.vac`
    /// lists what a consolidation replaced.
    fn add_root_markers(&mut self, store: &dyn Store, root_listing: &[Listed]) -> Result<()> {
        for e in root_listing.iter().filter(|e| !e.is_folder()) {
            if e.name.ends_with(".ok") {
                self.committed.insert(e.name.clone());
            } else if e.name.ends_with(".vac") {
                self.vacuumed
                    .add(&read_sized(store, &e.name, e.size)?, &e.name);
            }
        }
        Ok(())
    }
}

/// Fragment folder (relative path) -> the `.vac` files that list it. A folder can be
/// listed twice (consolidated, then the result consolidated again before a vacuum).
#[derive(Default)]
struct VacuumLists(BTreeMap<String, Vec<String>>);

impl VacuumLists {
    /// Adds the entries of the `.vac` file `source`.
    fn add(&mut self, bytes: &[u8], source: &str) {
        for entry in parse_lines(bytes) {
            self.0
                .entry(normalize_vacuum_entry(&entry))
                .or_default()
                .push(source.to_string());
        }
    }

    /// The `.vac` file that hides `rel_dir` first, and from which timestamp: each
    /// hides what it lists from the timestamp TileDB opens it at
    /// ([`visibility::opens_from`]); a name that does not parse, always.
    fn first_hiding(&self, rel_dir: &str, dense: bool) -> Option<(&String, u64)> {
        let from = |vac: &str| {
            TimestampedName::parse(vac).map_or(0, |name| visibility::opens_from(&name, dense))
        };
        self.0
            .get(rel_dir)?
            .iter()
            .map(|vac| (vac, from(vac)))
            .min_by_key(|(_, t)| *t)
    }
}

/// A fragment folder present on disk, before the verdict.
struct Candidate {
    name: String,
    rel_dir: String,
    committed: bool,
    /// The marker that commits it, to say what is missing when it is not committed.
    marker: &'static str,
}

/// Phase 4: every folder that may be a fragment, and whether it is committed: the
/// folders of `__fragments` (format 12+, committed by `__commits/<name>.wrt`), then
/// the timestamped folders of the root (formats 1-11): from format 5 on (names of the
/// third generation) committed by `<name>.ok`, before by holding
/// `__fragment_metadata.tdb`, which costs a listing unless `seen_committed` knows it.
fn fragment_folders(
    store: &dyn Store,
    root_listing: &[Listed],
    committed: &BTreeSet<String>,
    seen_committed: &dyn Fn(&str) -> bool,
) -> Result<Vec<Candidate>> {
    let mut found = Vec::new();
    let fragments_listing = if has_folder(root_listing, "__fragments") {
        store.list("__fragments")?
    } else {
        Vec::new()
    };
    for e in fragments_listing.iter().filter(|e| e.is_folder()) {
        found.push(Candidate {
            committed: committed.contains(&format!("__commits/{}.wrt", e.name)),
            rel_dir: format!("__fragments/{}", e.name),
            name: e.name.clone(),
            marker: ".wrt commit file",
        });
    }
    for e in root_listing.iter().filter(|e| e.is_folder()) {
        let name = &e.name;
        if name.contains('.') || SPECIAL.contains(&name.as_str()) {
            continue;
        }
        let Some(ts) = TimestampedName::parse(name) else {
            continue;
        };
        let (committed, marker) = match ts.generation {
            NameGeneration::Three => (committed.contains(&format!("{name}.ok")), ".ok commit file"),
            _ if seen_committed(name) => (true, "__fragment_metadata.tdb"),
            _ => (
                store
                    .list(name)?
                    .iter()
                    .any(|e| e.name == "__fragment_metadata.tdb" && !e.is_folder()),
                "__fragment_metadata.tdb",
            ),
        };
        found.push(Candidate {
            name: name.clone(),
            rel_dir: name.clone(),
            committed,
            marker,
        });
    }
    Ok(found)
}

/// Phase 5: the verdict on each candidate. Live: committed, timestamped and in no
/// vacuum list; committed but listed is replaced (hidden now, still shown in the past
/// before the consolidation); the rest is ignored, with the reason. Live fragments are
/// sorted oldest first (by first timestamp, then name), the order TileDB merges them.
fn judge(candidates: Vec<Candidate>, vacuumed: &VacuumLists, dense: bool) -> Liveness {
    let mut liveness = Liveness::default();
    for Candidate {
        name,
        rel_dir,
        committed,
        marker,
    } in candidates
    {
        let Some(timestamps) = TimestampedName::parse(&name) else {
            liveness.ignored.push(Ignored {
                rel_dir,
                reason: "not a timestamped fragment name".into(),
            });
            continue;
        };
        if !committed {
            liveness.ignored.push(Ignored {
                rel_dir,
                reason: format!("uncommitted: no {marker}"),
            });
        } else if let Some((vac, hidden_from)) = vacuumed.first_hiding(&rel_dir, dense) {
            liveness.ignored.push(Ignored {
                rel_dir: rel_dir.clone(),
                reason: format!("consolidated away: listed in {vac}"),
            });
            let file = vac.rsplit('/').next().unwrap_or(vac);
            let by = file.strip_suffix(".vac").unwrap_or(file).to_string();
            liveness.replaced.push(Replaced {
                fragment: FoundFragment {
                    name,
                    rel_dir,
                    timestamps,
                },
                hidden_from,
                by,
            });
        } else {
            liveness.live.push(FoundFragment {
                name,
                rel_dir,
                timestamps,
            });
        }
    }
    liveness
        .live
        .sort_by(|a, b| (a.timestamps.t1, &a.name).cmp(&(b.timestamps.t1, &b.name)));
    liveness
}
