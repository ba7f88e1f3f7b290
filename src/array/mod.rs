//! An array on disk: its schemas, which fragments are live, and lazily loaded fragment
//! metadata. Nothing here knows about the virtual tree.

pub mod dense_grid;
pub mod field;
pub mod fragment;
pub mod generic_tile;
pub mod group;
pub mod layout;
pub mod liveness;
pub mod loaders;
pub mod metadata;
pub mod visibility;

use std::collections::HashMap;
use std::sync::Arc;

use crate::error::{Error, Place, Result};
use crate::format::name::TimestampedName;
use crate::format::schema::ArraySchema;
use crate::storage::{Listed, Store};

pub use fragment::{Fragment, FragmentId};
pub use liveness::Ignored;

/// Options that change how an array is read.
#[derive(Clone, Default)]
pub struct OpenOptions {
    /// AES-256-GCM key for encrypted arrays.
    pub key: Option<[u8; 32]>,
}

/// Says whether a key is given, never the key.
impl std::fmt::Debug for OpenOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenOptions")
            .field("key", &self.key.map(|_| "redacted"))
            .finish()
    }
}

/// Parses a user-supplied key: exactly 32 bytes of text (as TileDB takes it) or 64 hex
/// digits.
pub fn parse_key(text: &str) -> Result<[u8; 32]> {
    let bytes = text.as_bytes();
    if bytes.len() == 32 {
        let mut key = [0u8; 32];
        key.copy_from_slice(bytes);
        return Ok(key);
    }
    if bytes.len() == 64 && text.chars().all(|c| c.is_ascii_hexdigit()) {
        let mut key = [0u8; 32];
        for (i, k) in key.iter_mut().enumerate() {
            *k = u8::from_str_radix(&text[2 * i..2 * i + 2], 16)
                .map_err(|e| Error::InvalidArgument(format!("encryption key: {e}")))?;
        }
        return Ok(key);
    }
    Err(Error::InvalidArgument(format!(
        "encryption key must be 32 bytes (or 64 hex digits), got {} bytes",
        bytes.len()
    )))
}

/// A delete (`.del`) or update (`.upd`) commit.
#[derive(Debug, Clone, PartialEq)]
pub struct ConditionCommit {
    /// `__commits/<name>.del`, as on disk or as named inside a `.con` file.
    pub rel_path: String,
    /// When it was committed (its timestamped name's).
    pub timestamp: u64,
    pub is_update: bool,
    /// Its bytes when a `.con` file holds them; else they are in the file.
    pub embedded: Option<Arc<Vec<u8>>>,
}

impl ConditionCommit {
    /// The commit's generic tile: embedded, or read from its file.
    pub fn bytes(&self, store: &dyn Store) -> Result<Arc<Vec<u8>>> {
        match &self.embedded {
            Some(bytes) => Ok(bytes.clone()),
            None => Ok(Arc::new(store.read_all(&self.rel_path)?)),
        }
    }

    /// The condition as stored: the negation of the user's (cells where it holds are
    /// kept). An update's condition likewise.
    pub fn stored_condition(
        &self,
        store: &dyn Store,
        key: Option<[u8; 32]>,
    ) -> Result<crate::format::condition::Condition> {
        let place = Place::file(self.rel_path.as_str());
        let bytes = self.bytes(store)?;
        let (_, payload) = generic_tile::decode_generic_tile(&bytes, key, &place)?;
        let parsed = if self.is_update {
            crate::format::condition::parse_update(&payload).map(|u| u.condition)
        } else {
            crate::format::condition::parse_delete_condition(&payload)
        };
        parsed.map_err(|e| Error::format(place, e))
    }

    /// The user's condition as text (`v < 40`, `name = 'x' AND n IS NULL`), with values
    /// typed by the fields of `schema`.
    pub fn condition_text(
        &self,
        store: &dyn Store,
        key: Option<[u8; 32]>,
        schema: &ArraySchema,
    ) -> Result<String> {
        let stored = self.stored_condition(store, key)?;
        let datatype_of = |name: &str| {
            schema
                .dimensions
                .iter()
                .map(|d| (&d.name, d.datatype))
                .chain(schema.attributes.iter().map(|a| (&a.name, a.datatype)))
                .find(|(n, _)| *n == name)
                .map(|(_, t)| t)
        };
        Ok(stored.negated().to_text(datatype_of))
    }
}

/// A schema file of the array.
#[derive(Debug, Clone)]
pub struct SchemaFile {
    /// File name (`__array_schema.tdb` or the timestamped name in `__schema/`).
    pub name: String,
    /// Path relative to the array root.
    pub rel_path: String,
    pub schema: Arc<ArraySchema>,
    /// Written with AES-256-GCM.
    pub encrypted: bool,
}

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
    /// Fragments a consolidation replaced that are still on disk (not vacuumed yet),
    /// with the timestamp from which the consolidated fragment hides them
    /// ([`visibility`]: in a sparse array from format 15 on, its first timestamp).
    pub replaced: Vec<(Arc<Fragment>, u64)>,
    /// Fragment id -> position in `fragments`.
    by_id: HashMap<FragmentId, usize>,
    /// Fragment folder name -> position in `fragments`.
    by_name: HashMap<String, usize>,
    /// Enumerations loaded so far, by file name (files never change); kept for the
    /// life of the array, outside the decoded-chunk cache's bound.
    enumerations: std::sync::Mutex<HashMap<String, Arc<crate::format::enumeration::Enumeration>>>,
}

pub const LEGACY_SCHEMA: &str = "__array_schema.tdb";

/// Where enumeration files are (`01-array-layout.md` §9).
pub const ENUMERATIONS_DIR: &str = "__schema/__enumerations";

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
        // (A set, not a search of the previous list per fragment: quadratic on a
        // rescan of a large array of a format without commit files.)
        let committed: std::collections::HashSet<&str> = previous
            .map(|p| {
                p.fragments
                    .iter()
                    .chain(p.replaced.iter().map(|(f, _)| f))
                    .map(|f| f.rel_dir.as_str())
                    .collect()
            })
            .unwrap_or_default();
        let seen_committed = |rel_dir: &str| committed.contains(rel_dir);
        // `open` refuses arrays without schemas (checked above); the type never changes.
        let dense = schemas
            .last()
            .is_some_and(|s| s.schema.array_type == crate::format::schema::ArrayType::Dense);
        let live = liveness::find_fragments(&*store, &root, &seen_committed, dense)?;
        // Fragments still there keep their `Fragment` (metadata already parsed, and id),
        // found by folder (a search of the list for each was quadratic: 30 s for a
        // rescan of 100,000 fragments).
        let before: HashMap<(&str, &str), &Arc<Fragment>> = previous
            .map(|p| {
                p.fragments
                    .iter()
                    .chain(p.replaced.iter().map(|(f, _)| f))
                    .map(|f| ((f.name.as_str(), f.rel_dir.as_str()), f))
                    .collect()
            })
            .unwrap_or_default();
        let fragment = |f: liveness::FoundFragment| {
            let kept = before.get(&(f.name.as_str(), f.rel_dir.as_str()));
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
            .map(|r| (fragment(r.fragment), r.hidden_from))
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
        })
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

/// Decodes every schema file; also tells whether the array is encrypted.
fn load_schemas(
    store: &dyn Store,
    root: &[Listed],
    options: &OpenOptions,
    known: &[SchemaFile],
) -> Result<(Vec<SchemaFile>, bool)> {
    let mut files = Vec::new();
    if root
        .iter()
        .any(|e| e.name == LEGACY_SCHEMA && !e.is_folder())
    {
        let size = root
            .iter()
            .find(|e| e.name == LEGACY_SCHEMA)
            .and_then(|e| e.size);
        files.push((
            LEGACY_SCHEMA.to_string(),
            LEGACY_SCHEMA.to_string(),
            None,
            size,
        ));
    }
    let mut timestamped = Vec::new();
    let has_schema_folder = root.iter().any(|e| e.name == "__schema" && e.is_folder());
    let listing = if has_schema_folder {
        store.list("__schema")?
    } else {
        Vec::new()
    };
    for Listed { name, size } in listing {
        if size.is_some() {
            let t2 = TimestampedName::parse(&name).map(|t| t.t2);
            timestamped.push((name.clone(), format!("__schema/{name}"), t2, size));
        }
    }
    // Latest = largest t2; stable for ties, so listing order breaks them.
    timestamped.sort_by_key(|(_, _, t2, _)| t2.unwrap_or(0));
    files.extend(timestamped);
    let mut encrypted = false;
    let schemas = files
        .into_iter()
        .map(|(name, rel_path, _, size)| {
            // Schema files are immutable: one decoded before is taken as it was.
            if let Some(old) = known.iter().find(|s| s.rel_path == rel_path) {
                encrypted |= old.encrypted;
                return Ok(old.clone());
            }
            // The size came with the listing: one request per schema.
            let bytes = match size {
                Some(size) => store.read_range(&rel_path, 0, size)?,
                None => store.read_all(&rel_path)?,
            };
            let place = Place::file(rel_path.as_str());
            let (header, payload) = generic_tile::decode_generic_tile(&bytes, options.key, &place)
                .map_err(Error::in_schema)?;
            encrypted |= header.encryption_type == 1;
            let schema = ArraySchema::parse(&payload).map_err(|e| Error::format(place, e))?;
            Ok(SchemaFile {
                name,
                rel_path,
                schema: Arc::new(schema),
                encrypted: header.encryption_type == 1,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((schemas, encrypted))
}
