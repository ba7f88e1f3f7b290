//! One fragment and its metadata, loaded on first use: the footer when the fragment is
//! first looked at, each per-field list of tile offsets only when a tile of that field is
//! read. Mounting an array with 100,000 fragments reads no fragment metadata.
//!
//! Formats 1-2 keep all metadata in one generic tile; it is read at once and presented
//! like a footer with its lists already loaded, so callers see one kind of fragment.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use crate::cache::{Cache, Weigh};
use crate::error::{Error, Place, Result};
use crate::format::error::{FormatError, NEWEST_FORMAT_VERSION, OLDEST_FORMAT_VERSION};
use crate::format::footer::{footer_location, Footer, FooterLocation};
use crate::format::fragment_metadata::{
    parse_fragment_stats, parse_processed_conditions, parse_sums, parse_u64_list, FieldStats, Mbr,
    RTree, TileBounds,
};
use crate::format::legacy_metadata::LegacyMetadata;
use crate::format::name::TimestampedName;
use crate::format::schema::{ArraySchema, ArrayType};
use crate::format::Reader;
use crate::lazy::Lazy;
use crate::storage::{join, Store};

use super::dense_grid::dense_tiling;
use super::field::{fragment_fields, Field};
use super::generic_tile::{decode_generic_tile, read_generic_tile};
use super::schemas::{SchemaFile, LEGACY_SCHEMA};

pub const METADATA_FILE: &str = "__fragment_metadata.tdb";
/// The combined coordinates of sparse fragments before v5.
pub const COORDS_FILE: &str = "__coords.tdb";

/// Bytes read from the end of `__fragment_metadata.tdb` in the first request: the
/// footer of all but the widest schemas, so loading a fragment costs one read.
const FOOTER_READ: u64 = 64 << 10;

/// The parsed metadata of fragments (with the tile lists loaded into it) kept at most,
/// as bytes of their `__fragment_metadata.tdb` files times four (lists are stored
/// compressed): 256 MiB. Parsed on first use, the least recently used go first beyond
/// it and are parsed again when needed; a file open, a merged state or a read in
/// progress holds its own reference meanwhile. Without a bound, `array.json` or
/// `info` of an array of 100,000 fragments kept every one of them for good.
pub const METADATA_CACHE: u64 = 256 << 20;

fn metas() -> &'static Cache<FragmentId, FragmentMeta> {
    static METAS: OnceLock<Cache<FragmentId, FragmentMeta>> = OnceLock::new();
    METAS.get_or_init(|| Cache::new(METADATA_CACHE))
}

impl Weigh for FragmentMeta {
    fn weight(&self) -> u64 {
        self.metadata_len.saturating_mul(4).saturating_add(4096)
    }
}

/// A fragment's identity for the life of the process: unique across every array opened
/// (groups show several), so caches can key by it, and kept by a fragment across the
/// rescans that find it still live.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FragmentId(pub u64);

impl FragmentId {
    fn next() -> FragmentId {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        FragmentId(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}

#[derive(Debug)]
pub struct Fragment {
    pub id: FragmentId,
    pub store: Arc<dyn Store>,
    pub name: String,
    /// The folder, relative to the array root: `__fragments/<name>` or `<name>`.
    pub rel_dir: String,
    pub timestamps: TimestampedName,
    key: Option<[u8; 32]>,
    /// The sizes of the fragment's files, from one listing of its folder (on object
    /// storage sizes come with the listing: no request per file).
    files: Lazy<Arc<HashMap<String, u64>>>,
    /// The version of its metadata file (see [`Fragment::metadata_version`]).
    metadata_version: Lazy<Option<String>>,
}

/// A fragment gone (its array closed, or vacuumed and no file open in it) takes its
/// metadata out of the cache: the metadata holds the fragment's store, and with it the
/// store's open files, which would otherwise stay open as long as the entry.
impl Drop for Fragment {
    fn drop(&mut self) {
        metas().remove(&self.id);
    }
}

/// Which per-slot list of tile positions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TileList {
    Offsets,
    VarOffsets,
    VarSizes,
    ValidityOffsets,
}

/// Per-slot lists, each loaded once.
type LazyLists = Vec<Lazy<Arc<Vec<u64>>>>;

#[derive(Debug)]
pub struct FragmentMeta {
    pub footer: Footer,
    pub schema: Arc<ArraySchema>,
    pub schema_name: String,
    pub fields: Vec<Field>,
    pub tile_count: u64,
    /// Cells of every tile but the last (dense: all tiles).
    pub cells_per_tile: u64,
    pub last_tile_cells: u64,
    /// How `__fragment_metadata.tdb` is organised.
    pub layout: MetadataLayout,
    store: Arc<dyn Store>,
    metadata_key: String,
    metadata_len: u64,
    key: Option<[u8; 32]>,
    place: Place,
    lists: [LazyLists; 4],
    /// Per slot of a var field: where each var tile starts in `values.bin`, and the
    /// total; derived from the var sizes once per fragment.
    var_starts: LazyLists,

    /// v1/v2: the flat MBR list of the whole-file metadata (there is no R-tree yet).
    legacy_mbrs: Option<Vec<Mbr>>,
}

/// How a fragment's `__fragment_metadata.tdb` is organised (`06-fragment-metadata.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetadataLayout {
    /// v1-v2: the whole file is one generic tile.
    WholeFile,
    /// v3-v9 with fixed-size dimensions: a footer whose length follows from the schema.
    ComputedFooter,
    /// v10+, or a var-size dimension: the file ends with the footer's length.
    TrailingFooter,
}

impl MetadataLayout {
    pub fn describe(self) -> &'static str {
        match self {
            MetadataLayout::WholeFile => "whole-file metadata",
            MetadataLayout::ComputedFooter => "footer at a computed offset",
            MetadataLayout::TrailingFooter => "footer with trailing length",
        }
    }
}

impl Fragment {
    pub fn new(
        store: Arc<dyn Store>,
        name: String,
        rel_dir: String,
        timestamps: TimestampedName,
        key: Option<[u8; 32]>,
    ) -> Fragment {
        Fragment {
            id: FragmentId::next(),
            store,
            name,
            rel_dir,
            timestamps,
            key,
            files: Lazy::default(),
            metadata_version: Lazy::default(),
        }
    }

    /// The fragment's files and their sizes, listed once.
    pub fn files(&self) -> Result<Arc<HashMap<String, u64>>> {
        self.files.get_or_load(|| {
            let listed = self.store.list(&self.rel_dir)?;
            Ok(Arc::new(
                listed
                    .into_iter()
                    .filter_map(|e| Some((e.name, e.size?)))
                    .collect(),
            ))
        })
    }

    /// What tells this fragment's bytes from those of another fragment of the same name
    /// (one rewritten in place, restored from a backup): the version of its metadata
    /// file ([`Store::version`]: its size and modification time on a local disk, its
    /// ETag on object storage), which every format version has
    /// (`__fragment_metadata.tdb`, the whole-file metadata of formats 1-2 included) and
    /// which changes with any rewrite of the fragment's data (the tile offsets and sizes
    /// it records). The disk cache names a fragment's files by it. Read once per
    /// fragment (a mount keeps the fragment's metadata in memory too), after the listing
    /// of the fragment's folder, which on object storage tells it. `None`: the store
    /// tells no version, and nothing of the fragment is cached.
    pub fn metadata_version(&self) -> Result<Option<String>> {
        self.metadata_version.get_or_load(|| {
            self.files()?;
            self.store.version(&self.file_key(METADATA_FILE))
        })
    }

    /// The size of the fragment's file `name`. A file the metadata needs but the folder
    /// does not hold is bad data, reported naming `place` (the tile that needed it).
    pub fn file_size(&self, name: &str, place: &Place) -> Result<u64> {
        match self.files()?.get(name) {
            Some(&size) => Ok(size),
            // Not listed (missing, or a symbolic link, which listings skip): ask for it
            // by name, for the reason.
            None => self
                .store
                .size(&self.file_key(name))
                .map_err(|e| missing_is_corrupt(e, place)),
        }
    }

    /// The fragment's metadata, parsed on first call (a transient failure to read it is
    /// tried again on the next).
    pub fn meta(&self, schemas: &[SchemaFile]) -> Result<Arc<FragmentMeta>> {
        metas().get_or_load(self.id, || FragmentMeta::load(self, schemas))
    }

    /// Loads the metadata of many fragments at once, on the loader threads: each load is a
    /// few small reads that mostly wait on the disk (or on a server), so a time-travel
    /// view over thousands of fragments would otherwise queue those waits one by one.
    /// On a local disk a few fragments load faster in turn than threads start; on a
    /// remote store two already gain a round trip. Errors are left for
    /// [`Fragment::meta`] to report, in the caller's order.
    pub fn preload_metas(fragments: &[&Arc<Fragment>], schemas: &[SchemaFile]) {
        let todo: Vec<Arc<Fragment>> = fragments
            .iter()
            .filter(|f| !f.meta_loaded())
            .map(|f| Arc::clone(f))
            .collect();
        let remote = todo.first().is_some_and(|f| f.store.is_remote());
        if todo.len()
            < if remote {
                2
            } else {
                2 * super::loaders::THREADS
            }
        {
            return;
        }
        let schemas = schemas.to_vec();
        super::loaders::for_each(todo.len(), move |i| {
            if let Some(f) = todo.get(i) {
                let _ = f.meta(&schemas);
            }
        });
    }

    /// Whether the metadata was parsed already (for tests of laziness).
    pub fn meta_loaded(&self) -> bool {
        metas().contains(&self.id)
    }

    /// The store key of a file of the fragment.
    pub fn file_key(&self, file: &str) -> String {
        join(&self.rel_dir, file)
    }

    /// Errors about this fragment name it.
    pub fn place(&self) -> Place {
        Place::fragment(self.name.as_str())
    }

    /// Bytes on disk of the fragment's files (for `info` and `array.json`).
    pub fn size_on_disk(&self) -> Result<u64> {
        Ok(self.files()?.values().sum())
    }
}

impl FragmentMeta {
    fn load(fragment: &Fragment, schemas: &[SchemaFile]) -> Result<FragmentMeta> {
        let place = fragment.place();
        let name_version = fragment.timestamps.version;
        if !(OLDEST_FORMAT_VERSION..=NEWEST_FORMAT_VERSION).contains(&name_version) {
            return Err(Error::format(
                place,
                FormatError::UnsupportedVersion {
                    what: "fragment name",
                    found: name_version,
                },
            ));
        }
        // TileDB picks the loader by the version in the name: generation ONE names
        // (which claim 2) and any name of version 1 or 2 have whole-file metadata.
        let metadata_key = fragment.file_key(METADATA_FILE);
        let metadata_place = place.clone().in_file(METADATA_FILE);
        let metadata_len = fragment.file_size(METADATA_FILE, &metadata_place)?;
        let file = MetadataFile {
            store: &*fragment.store,
            key: &metadata_key,
            len: metadata_len,
            place: &metadata_place,
        };
        let Loaded {
            footer,
            schema_file,
            layout,
            whole_file,
        } = if name_version <= 2 {
            load_whole_file(fragment, schemas, &file)?
        } else {
            load_footer(fragment, schemas, &file)?
        };
        let schema = schema_file.schema.clone();
        let fields = fragment_fields(&schema, &footer);
        let (tile_count, cells_per_tile, last_tile_cells) = if footer.dense {
            dense_tiling(&schema, &footer).map_err(|r| Error::corrupt(place.clone(), r))?
        } else {
            let last = if footer.sparse_tile_num == 0 {
                0
            } else {
                footer.last_tile_cell_num
            };
            (footer.sparse_tile_num, schema.capacity, last)
        };
        let (lists, legacy_mbrs) = match whole_file {
            // Everything is in memory already: the lists start out loaded.
            Some(m) => {
                let loaded = |lists: Vec<Vec<u64>>| -> LazyLists {
                    lists
                        .into_iter()
                        .map(|l| Lazy::loaded(Arc::new(l)))
                        .collect()
                };
                (
                    [
                        loaded(m.tile_offsets),
                        loaded(m.tile_var_offsets),
                        loaded(m.tile_var_sizes),
                        Vec::new(),
                    ],
                    Some(m.mbrs),
                )
            }
            None => {
                let slots = footer.slot_count(&schema);
                let lazy = || (0..slots).map(|_| Lazy::default()).collect::<Vec<_>>();
                ([lazy(), lazy(), lazy(), lazy()], None)
            }
        };
        let var_starts = (0..footer.slot_count(&schema).max(fields.len() + 1))
            .map(|_| Lazy::default())
            .collect();
        Ok(FragmentMeta {
            footer,
            schema,
            schema_name: schema_file.name.clone(),
            fields,
            tile_count,
            cells_per_tile,
            last_tile_cells,
            layout,
            store: fragment.store.clone(),
            metadata_key,
            metadata_len,
            key: fragment.key,
            place,
            lists,
            var_starts,
            legacy_mbrs,
        })
    }

    pub fn cell_count(&self) -> u64 {
        match self.tile_count {
            0 => 0,
            n => (n - 1)
                .saturating_mul(self.cells_per_tile)
                .saturating_add(self.last_tile_cells),
        }
    }

    /// Cells in tile `k`.
    pub fn tile_cells(&self, k: u64) -> u64 {
        if k + 1 == self.tile_count {
            self.last_tile_cells
        } else {
            self.cells_per_tile
        }
    }

    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// A per-slot list of tile positions, loaded on first use.
    pub fn tile_list(&self, which: TileList, slot: usize) -> Result<Arc<Vec<u64>>> {
        let f = &self.footer;
        let (offsets, label) = match which {
            TileList::Offsets => (&f.tile_offsets_offsets, "tile offsets"),
            TileList::VarOffsets => (&f.tile_var_offsets_offsets, "tile var offsets"),
            TileList::VarSizes => (&f.tile_var_sizes_offsets, "tile var sizes"),
            TileList::ValidityOffsets => {
                (&f.tile_validity_offsets_offsets, "tile validity offsets")
            }
        };
        let cell = self.lists[which as usize].get(slot).ok_or_else(|| {
            Error::corrupt(self.place.clone(), format!("no {label} for slot {slot}"))
        })?;
        cell.get_or_load(|| {
            let what = self.metadata_place(format!("{label} of slot {slot}"));
            let at = *offsets.get(slot).ok_or_else(|| {
                Error::corrupt(what.clone(), "footer has no offset for this slot")
            })?;
            let bytes = self.generic_tile(at, &what)?;
            parse_u64_list(&bytes, label)
                .map(Arc::new)
                .map_err(|e| Error::format(what, e))
        })
    }

    /// Where each var tile of the field in `slot` starts in its `values.bin`, plus the
    /// total at the end: computed from the var sizes once per fragment and kept.
    pub fn var_tile_starts(&self, slot: usize, var_file: &str) -> Result<Arc<Vec<u64>>> {
        let cell = self.var_starts.get(slot).ok_or_else(|| {
            Error::corrupt(self.place.clone(), format!("no var sizes for slot {slot}"))
        })?;
        cell.get_or_load(|| {
            let sizes = self.tile_list(TileList::VarSizes, slot)?;
            let n = self.tile_count as usize;
            if sizes.len() < n {
                return Err(Error::corrupt(
                    self.place
                        .clone()
                        .in_file(var_file)
                        .tile(sizes.len() as u64),
                    format!(
                        "{METADATA_FILE} lists {} var tile sizes for {n} tiles",
                        sizes.len()
                    ),
                ));
            }
            let mut starts = Vec::with_capacity(n + 1);
            let mut total = 0u64;
            for &s in &sizes[..n] {
                starts.push(total);
                total = total.saturating_add(s);
            }
            starts.push(total);
            Ok(Arc::new(starts))
        })
    }

    /// Checks the tile count (which the footer gives, or a dense domain implies) against
    /// the tile offsets the metadata lists for the first attribute (one list per
    /// fragment, metadata only): a corrupt count could promise trillions of cells that
    /// no tile holds.
    pub fn check_tile_count(&self) -> Result<()> {
        if self.schema.attributes.is_empty() {
            return Ok(());
        }
        let listed = self.tile_list(TileList::Offsets, 0)?.len() as u64;
        if listed < self.tile_count {
            return Err(Error::corrupt(
                self.place.clone().in_file(METADATA_FILE),
                format!(
                    "the fragment has {} tiles, its first attribute's tile offsets list {listed}",
                    self.tile_count
                ),
            ));
        }
        Ok(())
    }

    /// `fragment F, __fragment_metadata.tdb, <detail>`.
    fn metadata_place(&self, detail: String) -> Place {
        self.place.clone().in_file(METADATA_FILE).detail(detail)
    }

    fn generic_tile(&self, offset: u64, place: &Place) -> Result<Vec<u8>> {
        read_generic_tile(
            &*self.store,
            &self.metadata_key,
            self.metadata_len,
            offset,
            self.key,
            place,
        )
    }

    /// The R-tree (sparse fragments: one leaf MBR per tile). For v1/v2 fragments, which
    /// only have a flat MBR list, a single leaf level with fanout 0.
    pub fn rtree(&self) -> Result<RTree> {
        if let Some(mbrs) = &self.legacy_mbrs {
            return Ok(RTree {
                fanout: 0,
                levels: vec![mbrs.clone()],
            });
        }
        let what = self.metadata_place("R-tree".into());
        let bytes = self.generic_tile(self.footer.rtree_offset, &what)?;
        RTree::parse(&bytes, self.footer.version, &self.schema.dimensions)
            .map_err(|e| Error::format(what, e))
    }

    /// Per-tile min and max of a slot (v11+; empty when the field has none).
    pub fn tile_bounds(&self, slot: usize) -> Result<(TileBounds, TileBounds)> {
        let f = &self.footer;
        self.bounds_pair(
            f.tile_min_offsets.get(slot),
            f.tile_max_offsets.get(slot),
            &format!("of slot {slot}"),
            "tile",
        )
    }

    /// Per-tile first and last coordinate, in global order, of dimension `dim`: the
    /// bounds v23 sparse fragments add; empty before.
    pub fn global_order_bounds(&self, dim: usize) -> Result<(TileBounds, TileBounds)> {
        let f = &self.footer;
        self.bounds_pair(
            f.global_order_min_offsets.get(dim),
            f.global_order_max_offsets.get(dim),
            &format!("of dimension {dim}"),
            "global-order",
        )
    }

    /// The min and max generic tiles at the given offsets, if the footer has them.
    fn bounds_pair(
        &self,
        min_at: Option<&u64>,
        max_at: Option<&u64>,
        of: &str,
        kind: &str,
    ) -> Result<(TileBounds, TileBounds)> {
        let (Some(&min_at), Some(&max_at)) = (min_at, max_at) else {
            return Ok(Default::default());
        };
        let load = |at: u64, which: &str| {
            let what = self.metadata_place(format!("{kind} {which} {of}"));
            TileBounds::parse(&self.generic_tile(at, &what)?).map_err(|e| Error::format(what, e))
        };
        Ok((load(min_at, "mins")?, load(max_at, "maxes")?))
    }

    pub fn tile_sums(&self, slot: usize) -> Result<Vec<[u8; 8]>> {
        let Some(&at) = self.footer.tile_sum_offsets.get(slot) else {
            return Ok(Vec::new());
        };
        let what = self.metadata_place(format!("tile sums of slot {slot}"));
        parse_sums(&self.generic_tile(at, &what)?).map_err(|e| Error::format(what, e))
    }

    pub fn tile_null_counts(&self, slot: usize) -> Result<Vec<u64>> {
        let Some(&at) = self.footer.tile_null_count_offsets.get(slot) else {
            return Ok(Vec::new());
        };
        let what = self.metadata_place(format!("tile null counts of slot {slot}"));
        parse_u64_list(&self.generic_tile(at, &what)?, "tile null counts")
            .map_err(|e| Error::format(what, e))
    }

    pub fn fragment_stats(&self) -> Result<Option<Vec<FieldStats>>> {
        let Some(at) = self.footer.fragment_min_max_sum_null_count_offset else {
            return Ok(None);
        };
        let what = self.metadata_place("fragment statistics".into());
        let slots = self.footer.slot_count(&self.schema);
        parse_fragment_stats(&self.generic_tile(at, &what)?, slots)
            .map(Some)
            .map_err(|e| Error::format(what, e))
    }

    pub fn processed_conditions(&self) -> Result<Option<Vec<String>>> {
        let Some(at) = self.footer.processed_conditions_offset else {
            return Ok(None);
        };
        let what = self.metadata_place("processed conditions".into());
        parse_processed_conditions(&self.generic_tile(at, &what)?)
            .map(Some)
            .map_err(|e| Error::format(what, e))
    }

    /// `fragment <name>`: where errors about this fragment happen.
    pub fn place(&self) -> &Place {
        &self.place
    }

    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// The AES-256-GCM key, set only for encrypted arrays.
    pub fn key(&self) -> Option<[u8; 32]> {
        self.key
    }
}

/// What a metadata loader found: the footer (real or, for v1/v2, synthesized), the
/// schema the fragment was written with, and how the file was laid out.
struct Loaded<'a> {
    footer: Footer,
    schema_file: &'a SchemaFile,
    layout: MetadataLayout,
    /// v1/v2: the whole metadata, lists and MBRs included.
    whole_file: Option<LegacyMetadata>,
}

/// `__fragment_metadata.tdb` of the fragment being loaded.
struct MetadataFile<'a> {
    store: &'a dyn Store,
    key: &'a str,
    len: u64,
    place: &'a Place,
}

impl MetadataFile<'_> {
    fn read(&self, offset: u64, len: u64) -> Result<Vec<u8>> {
        self.store
            .read_range(self.key, offset, len)
            .map_err(|e| missing_is_corrupt(e, self.place))
    }
}

/// A missing file in a listed fragment is bad data (EIO naming it), not a missing
/// virtual file (ENOENT); anything else is said to happen at `place`.
fn missing_is_corrupt(e: Error, place: &Place) -> Error {
    match &e {
        Error::Io { cause, .. } if cause.kind() == std::io::ErrorKind::NotFound => {
            Error::corrupt(place.clone(), format!("cannot open: {cause}"))
        }
        _ => e.at(place.clone()),
    }
}

/// Formats 1-2: the whole `__fragment_metadata.tdb` is one generic tile
/// (`06-fragment-metadata.md` §5), read against `__array_schema.tdb`.
fn load_whole_file<'a>(
    fragment: &Fragment,
    schemas: &'a [SchemaFile],
    file: &MetadataFile<'_>,
) -> Result<Loaded<'a>> {
    let schema_file = schemas
        .iter()
        .find(|s| s.name == LEGACY_SCHEMA)
        .ok_or_else(|| {
            Error::corrupt(
                fragment.place(),
                "no __array_schema.tdb for a v1-v2 fragment",
            )
        })?;
    let bytes = file.read(0, file.len)?;
    let (_, payload) = decode_generic_tile(&bytes, fragment.key, file.place)?;
    let metadata = LegacyMetadata::parse(&payload, &schema_file.schema)
        .map_err(|e| Error::format(file.place.clone(), e))?;
    // There is no dense flag yet: only sparse fragments have coordinates, and a sparse
    // array has only sparse fragments (so a lost __coords.tdb is reported as lost, not
    // taken for a dense fragment).
    let has_coords = fragment.files()?.contains_key(COORDS_FILE);
    let dense = schema_file.schema.array_type == ArrayType::Dense && !has_coords;
    Ok(Loaded {
        footer: metadata.footer(dense),
        schema_file,
        layout: MetadataLayout::WholeFile,
        whole_file: Some(metadata),
    })
}

/// Formats 3+: a footer at the end of the file, found by computation before v10 (fixed
/// dimensions) or by the trailing length (`06` §3.3); its version is authoritative.
fn load_footer<'a>(
    fragment: &Fragment,
    schemas: &'a [SchemaFile],
    file: &MetadataFile<'_>,
) -> Result<Loaded<'a>> {
    let what = file.place;
    // Pre-v10 fragments always use the legacy schema; v10+ name theirs in the footer.
    let legacy = schemas.iter().find(|s| s.name == LEGACY_SCHEMA);
    let name_version = fragment.timestamps.version;
    let location = if name_version >= 10 {
        FooterLocation::Trailing
    } else {
        let schema = legacy
            .or(schemas.first())
            .ok_or_else(|| Error::corrupt(fragment.place(), "no schema for a pre-v10 fragment"))?;
        footer_location(name_version, &schema.schema)
    };
    // One read of the file's end holds the footer of all but the widest schemas.
    let tail_len = FOOTER_READ.min(file.len);
    let tail_start = file.len - tail_len;
    let tail = file.read(tail_start, tail_len)?;
    let (footer_bytes, layout) = match location {
        FooterLocation::Trailing => (
            read_trailing_footer(file, &tail, tail_start)?,
            MetadataLayout::TrailingFooter,
        ),
        FooterLocation::Computed(len) => {
            let start = file.len.checked_sub(len).ok_or_else(|| {
                Error::corrupt(
                    what.clone(),
                    format!(
                        "file of {} bytes is shorter than its {len}-byte footer",
                        file.len
                    ),
                )
            })?;
            (
                from_tail(file, &tail, tail_start, start, len)?,
                MetadataLayout::ComputedFooter,
            )
        }
    };
    let version_in_footer = Reader::new(&footer_bytes)
        .u32("footer version")
        .map_err(|e| Error::format(what.clone(), e))?;
    let schema_file = if version_in_footer >= 10 {
        let mut r = Reader::new(&footer_bytes);
        let name = r
            .u32("footer version")
            .and_then(|_| r.string_u64("array schema name"))
            .map_err(|e| Error::format(what.clone(), e))?;
        let n = name.trim_start_matches('/').to_string();
        schemas.iter().find(|s| s.name == n).ok_or_else(|| {
            Error::corrupt(
                what.clone(),
                format!("footer names schema {n}, which is not in __schema/"),
            )
        })?
    } else {
        legacy.ok_or_else(|| {
            Error::corrupt(
                what.clone(),
                format!(
                    "footer of format version {version_in_footer} needs __array_schema.tdb, \
                     which the array does not have"
                ),
            )
        })?
    };
    let footer = Footer::parse(&footer_bytes, &schema_file.schema)
        .map_err(|e| Error::format(what.clone().detail("footer"), e))?;
    Ok(Loaded {
        footer,
        schema_file,
        layout,
        whole_file: None,
    })
}

/// Bytes `[start, start + len)` of the file: from `tail` (which holds the file from
/// `tail_start` on) when it has them, else read.
fn from_tail(
    file: &MetadataFile<'_>,
    tail: &[u8],
    tail_start: u64,
    start: u64,
    len: u64,
) -> Result<Vec<u8>> {
    match start.checked_sub(tail_start) {
        Some(at) => tail
            .get(at as usize..(at + len) as usize)
            .map(<[u8]>::to_vec)
            .ok_or_else(|| Error::corrupt(file.place.clone(), "short read")),
        None => file.read(start, len),
    }
}

fn read_trailing_footer(file: &MetadataFile<'_>, tail: &[u8], tail_start: u64) -> Result<Vec<u8>> {
    let what = file.place;
    let len_at = file.len.checked_sub(8).ok_or_else(|| {
        Error::corrupt(
            what.clone(),
            format!("file of {} bytes has no footer", file.len),
        )
    })?;
    let raw = from_tail(file, tail, tail_start, len_at, 8)?;
    let len = u64::from_le_bytes(
        raw.try_into()
            .map_err(|_| Error::corrupt(what.clone(), "short read"))?,
    );
    let start = len_at.checked_sub(len).ok_or_else(|| {
        Error::corrupt(
            what.clone(),
            format!("footer length {len} exceeds the file's {} bytes", file.len),
        )
    })?;
    from_tail(file, tail, tail_start, start, len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::array::{Array, OpenOptions};
    use crate::storage::LocalStore;

    /// Metadata is cached beyond the fragment's own life no longer than the fragment:
    /// closing the array drops it, and with it the store (and the store's open files).
    #[test]
    fn a_closed_arrays_metadata_and_store_are_let_go() {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tiledb/sample");
        let store = Arc::new(LocalStore::open(&path).unwrap());
        let weak = Arc::downgrade(&store);
        let array = Array::open(store, OpenOptions::default()).unwrap();
        let ids: Vec<FragmentId> = array.fragments.iter().map(|f| f.id).collect();
        for f in &array.fragments {
            f.meta(&array.schemas).unwrap();
            assert!(f.meta_loaded());
        }
        drop(array);
        assert!(ids.iter().all(|id| !metas().contains(id)));
        assert!(weak.upgrade().is_none(), "the store is still held");
    }
}
