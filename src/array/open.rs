//! [`Array`]: an array opened from its store, its schemas and live fragments found.

use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::error::{Error, Place, Result};
use crate::format::name::TimestampedName;
use crate::format::schema::ArraySchema;
use crate::storage::{Listed, Store};

use super::conditions::ConditionCommit;
use super::fragment::{Fragment, FragmentId};
use super::liveness::Ignored;
use super::options::OpenOptions;
use super::schemas::{load_schemas, SchemaFile, ENUMERATIONS_DIR, LEGACY_SCHEMA};
use super::{generic_tile, liveness};

/// An opened array: schemas decoded, live fragments found, fragment metadata not read yet.
#[derive(Debug)]
pub struct Array {
    /// Where the array's files are.
    pub store: Arc<dyn Store>,
    pub options: OpenOptions,
    /// Oldest first; the last is the latest.
    pub schemas: Vec<SchemaFile>,
    /// Positions in `schemas` of the files of `__schema/`, in name order: the order
    /// [`Array::schema_at`] walks (it is asked for every text block of a fragment).
    schemas_by_name: Vec<usize>,
    pub fragments: Vec<Arc<Fragment>>,
    pub ignored: Vec<Ignored>,
    /// Relative paths of delete/update commits.
    pub conditions: Vec<String>,
    /// The delete/update commits, with their timestamps, for the merged view.
    pub condition_commits: Vec<ConditionCommit>,
    /// Fragments a consolidation replaced that are still on disk (not vacuumed yet).
    pub replaced: Vec<ReplacedFragment>,
    /// Fragment id -> position in `fragments`.
    by_id: HashMap<FragmentId, usize>,
    /// Fragment folder name -> position in `fragments`.
    by_name: HashMap<String, usize>,
    /// Enumerations loaded so far, by file name (files never change); kept for the
    /// life of the array, outside the decoded-chunk cache's bound.
    enumerations: std::sync::Mutex<HashMap<String, Arc<crate::format::enumeration::Enumeration>>>,
    /// Comparisons of keys that rescans from this array made matching what they found
    /// to its fragments ([`Array::rescan_comparisons`]).
    rescan_comparisons: AtomicU64,
}

/// A fragment a consolidation replaced, still on disk.
#[derive(Debug, Clone)]
pub struct ReplacedFragment {
    pub fragment: Arc<Fragment>,
    /// From when the consolidated fragment hides it ([`super::visibility`]: in a sparse
    /// array from format 15 on, the consolidated fragment's first timestamp).
    pub hidden_from: u64,
    /// The consolidated fragment's name (that of its `.vac` file).
    pub by: String,
}

/// A key of a previous scan's fragment (its folder, or its name and folder) as a rescan
/// looks it up, each comparison of two keys counted in `compared`: a lookup in a hash
/// table compares about one pair, a search of a list one per entry passed.
struct Counted<'a, K> {
    key: K,
    compared: &'a AtomicU64,
}

impl<K: Hash> Hash for Counted<'_, K> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.key.hash(state)
    }
}

impl<K: PartialEq> PartialEq for Counted<'_, K> {
    fn eq(&self, other: &Self) -> bool {
        self.compared.fetch_add(1, Ordering::Relaxed);
        self.key == other.key
    }
}

impl<K: Eq> Eq for Counted<'_, K> {}

impl Array {
    /// Opens the array whose root is the root of `store`.
    pub fn open(store: Arc<dyn Store>, options: OpenOptions) -> Result<Array> {
        let root = store.list("")?;
        let location = store.location();
        Array::scan(store, root, options, None).map_err(|e| match e {
            // Found decoding a schema: say which array needs the key.
            Error::KeyNeeded(None) => Error::KeyNeeded(Some(location)),
            Error::WrongKey { array: None, place } => Error::WrongKey {
                array: Some(location),
                place,
            },
            e => e,
        })
    }

    /// Whether a root listing looks like a TileDB array (a schema is there).
    pub fn is_array(root: &[Listed]) -> bool {
        root.iter().any(|e| {
            (e.name == "__schema" && e.is_folder()) || (e.name == LEGACY_SCHEMA && !e.is_folder())
        })
    }

    /// Reads the folder again, for arrays that TileDB writes, consolidates or vacuums
    /// while they are shown. Fragments still live keep their `Fragment` (with the
    /// metadata already parsed) and their id; new ones get new ids; schemas already
    /// decoded are not decoded again.
    pub fn rescan(&self) -> Result<Array> {
        let root = self.store.list("")?;
        Array::scan(self.store.clone(), root, self.options.clone(), Some(self))
    }

    // The keys of the matching hold a counter (`Counted`), which neither their hash
    // nor their equality reads.
    #[allow(clippy::mutable_key_type)]
    fn scan(
        store: Arc<dyn Store>,
        root: Vec<Listed>,
        options: OpenOptions,
        previous: Option<&Array>,
    ) -> Result<Array> {
        if !Array::is_array(&root) {
            return Err(Error::NotAnArray(format!(
                "{}: not a TileDB array (no __schema/ folder and no {LEGACY_SCHEMA})",
                store.location()
            )));
        }
        let known = previous.map_or(&[][..], |p| &p.schemas[..]);
        let (schemas, encrypted) = load_schemas(&*store, &root, &options, known)?;
        // The key is applied to data tiles only when the array really is encrypted.
        let key = if encrypted { options.key } else { None };
        if schemas.is_empty() {
            return Err(Error::NotAnArray(format!(
                "{}: not a TileDB array (no schema file in __schema/)",
                store.location()
            )));
        }
        let mut schemas_by_name: Vec<usize> = (0..schemas.len())
            .filter(|&i| schemas[i].name != LEGACY_SCHEMA)
            .collect();
        schemas_by_name.sort_by(|&a, &b| schemas[a].name.cmp(&schemas[b].name));
        // Matching what the scan finds to the previous scan's fragments compares keys,
        // counted in the previous array ([`Array::rescan_comparisons`]).
        let unused = AtomicU64::new(0);
        let compared = previous.map_or(&unused, |p| &p.rescan_comparisons);
        // (A set, not a search of the previous list per fragment: quadratic on a
        // rescan of a large array of a format without commit files.)
        let committed: HashSet<Counted<&str>> = previous
            .map(|p| {
                p.fragments
                    .iter()
                    .chain(p.replaced.iter().map(|r| &r.fragment))
                    .map(|f| Counted {
                        key: f.rel_dir.as_str(),
                        compared,
                    })
                    .collect()
            })
            .unwrap_or_default();
        let seen_committed = |rel_dir: &str| {
            committed.contains(&Counted {
                key: rel_dir,
                compared,
            })
        };
        // `open` refuses arrays without schemas (checked above); the type never changes.
        let dense = schemas
            .last()
            .is_some_and(|s| s.schema.array_type == crate::format::schema::ArrayType::Dense);
        let live = liveness::find_fragments(&*store, &root, &seen_committed, dense)?;
        // Fragments still there keep their `Fragment` (metadata already parsed, and id),
        // found by folder (a search of the list for each was quadratic: 30 s for a
        // rescan of 100,000 fragments).
        let before: HashMap<Counted<(&str, &str)>, &Arc<Fragment>> = previous
            .map(|p| {
                p.fragments
                    .iter()
                    .chain(p.replaced.iter().map(|r| &r.fragment))
                    .map(|f| {
                        (
                            Counted {
                                key: (f.name.as_str(), f.rel_dir.as_str()),
                                compared,
                            },
                            f,
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        let fragment = |f: liveness::FoundFragment| {
            let kept = before.get(&Counted {
                key: (f.name.as_str(), f.rel_dir.as_str()),
                compared,
            });
            kept.map(|&f| f.clone()).unwrap_or_else(|| {
                Arc::new(Fragment::new(
                    store.clone(),
                    f.name,
                    f.rel_dir,
                    f.timestamps,
                    key,
                ))
            })
        };
        let fragments: Vec<Arc<Fragment>> = live.live.into_iter().map(&fragment).collect();
        let replaced = live
            .replaced
            .into_iter()
            .map(|r| ReplacedFragment {
                fragment: fragment(r.fragment),
                hidden_from: r.hidden_from,
                by: r.by,
            })
            .collect();
        let mut condition_commits: Vec<ConditionCommit> = live
            .conditions
            .iter()
            .map(|(path, embedded)| ConditionCommit {
                rel_path: path.clone(),
                timestamp: TimestampedName::parse(path).map_or(0, |t| t.t2),
                is_update: path.ends_with(".upd"),
                embedded: embedded.clone().map(Arc::new),
            })
            .collect();
        condition_commits
            .sort_by(|a, b| (a.timestamp, &a.rel_path).cmp(&(b.timestamp, &b.rel_path)));
        let by_id = fragments
            .iter()
            .enumerate()
            .map(|(i, f)| (f.id, i))
            .collect();
        let by_name = fragments
            .iter()
            .enumerate()
            .map(|(i, f)| (f.name.clone(), i))
            .collect();
        Ok(Array {
            store,
            options,
            schemas,
            schemas_by_name,
            fragments,
            ignored: live.ignored,
            conditions: live.conditions.into_iter().map(|(p, _)| p).collect(),
            condition_commits,
            replaced,
            by_id,
            by_name,
            enumerations: Default::default(),
            rescan_comparisons: AtomicU64::new(0),
        })
    }

    /// How many comparisons of fragment keys the rescans from this array have made in
    /// all, matching the fragments each found (and the folders it found committed) to
    /// this array's: about one per fragment found, as each is looked up in a hash table
    /// (a search of the fragment list for each was quadratic: 30 s for a rescan of
    /// 100,000). A count of work, for tests to check that a rescan's matching grows
    /// linearly, which no busy machine changes as it changes a time.
    pub fn rescan_comparisons(&self) -> u64 {
        self.rescan_comparisons.load(Ordering::Relaxed)
    }

    /// Where the array is, for messages.
    pub fn location(&self) -> String {
        self.store.location()
    }

    /// The live fragment with id `id`.
    pub fn fragment(&self, id: FragmentId) -> Option<&Arc<Fragment>> {
        self.by_id.get(&id).and_then(|&i| self.fragments.get(i))
    }

    /// Loads the metadata of every fragment, on several threads where that pays (see
    /// [`Fragment::preload_metas`]): for the views that describe them all (`info`,
    /// `array.json`), which would otherwise wait for them one by one.
    pub fn preload_all_metas(&self) {
        let all: Vec<&Arc<Fragment>> = self.fragments.iter().collect();
        Fragment::preload_metas(&all, &self.schemas);
    }

    /// The live fragment in folder `name`.
    pub fn fragment_named(&self, name: &str) -> Option<&Arc<Fragment>> {
        self.by_name.get(name).and_then(|&i| self.fragments.get(i))
    }

    /// Whether a rescan found what `other` holds: the same fragments, schemas, ignored
    /// folders and conditions.
    pub fn same_content(&self, other: &Array) -> bool {
        let ids = |a: &Array| a.fragments.iter().map(|f| f.id).collect::<Vec<_>>();
        let schemas = |a: &Array| a.schemas.iter().map(|s| s.name.clone()).collect::<Vec<_>>();
        ids(self) == ids(other)
            && schemas(self) == schemas(other)
            && self.ignored == other.ignored
            && self.conditions == other.conditions
    }

    /// The enumeration `name` of the schema `schema_name` (each schema names the files of
    /// its enumerations; extending one writes a new file), loaded on first use.
    pub fn enumeration(
        &self,
        schema: &ArraySchema,
        name: &str,
    ) -> Result<Arc<crate::format::enumeration::Enumeration>> {
        let file = schema
            .enumerations
            .iter()
            .find(|e| e.name == name)
            .map(|e| e.file_name.clone())
            .ok_or_else(|| {
                Error::corrupt(
                    Place::file("schema"),
                    format!(
                        "an attribute names enumeration {name}, which the schema does not list"
                    ),
                )
            })?;
        let mut cache = self.enumerations.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(e) = cache.get(&file) {
            return Ok(e.clone());
        }
        let rel = format!("{ENUMERATIONS_DIR}/{file}");
        let place = Place::file(rel.as_str());
        let bytes = self.store.read_all(&rel).map_err(|e| e.at(place.clone()))?;
        let (_, payload) = generic_tile::decode_generic_tile(&bytes, self.options.key, &place)?;
        let parsed = crate::format::enumeration::Enumeration::parse(&payload)
            .map_err(|e| Error::format(place, e))?;
        let parsed = Arc::new(parsed);
        cache.insert(file, parsed.clone());
        Ok(parsed)
    }

    /// The schema TileDB opens the array with at `at` (ms since the epoch): the last
    /// schema file, in name order, whose end timestamp is not after it; when none is that
    /// old, the first one (`__array_schema.tdb` first), so fragments older than every
    /// schema still open. Name order, not timestamp order: TileDB lists `__schema/` and
    /// walks it as the listing sorts, so `__2_2_*` comes after `__17..._*` however much
    /// older it is (tests/fixtures/features/README.md). The merged view reads with it;
    /// a fragment's enumeration labels come from it at the fragment's end timestamp.
    pub fn schema_at(&self, at: u64) -> &SchemaFile {
        let named = || {
            self.schemas_by_name
                .iter()
                .filter_map(|&i| self.schemas.get(i))
        };
        let legacy = self.schemas.iter().find(|s| s.name == LEGACY_SCHEMA);
        named()
            .rev()
            .find(|s| TimestampedName::parse(&s.name).is_none_or(|t| t.t2 <= at))
            .or(legacy)
            .or_else(|| named().next())
            .unwrap_or_else(|| self.latest_schema())
    }

    /// The schema TileDB opens the array with now: the last by name (see
    /// [`Array::schema_at`]), else the pre-2.x `__array_schema.tdb`.
    pub fn latest_schema(&self) -> &SchemaFile {
        self.schemas_by_name
            .last()
            .and_then(|&i| self.schemas.get(i))
            .or_else(|| self.schemas.iter().find(|s| s.name == LEGACY_SCHEMA))
            // `open` refuses arrays without schemas.
            .unwrap_or(&self.schemas[self.schemas.len() - 1])
    }
}
