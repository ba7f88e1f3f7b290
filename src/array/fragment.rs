//! One fragment and its metadata, loaded on first use: the footer when the fragment is
//! first looked at, each per-field list of tile offsets only when a tile of that field is
//! read. Mounting an array with 100,000 fragments reads no fragment metadata.
//!
//! Formats 1-2 keep all metadata in one generic tile; it is read at once and presented
//! like a footer with its lists already loaded, so callers see one kind of fragment.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use crate::error::{Error, Result};
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

use super::dense_grid::DenseGrid;
use super::field::{fragment_fields, Field};
use super::generic_tile::{decode_generic_tile, read_generic_tile};
use super::storage::DataFile;
use super::SchemaFile;

pub const METADATA_FILE: &str = "__fragment_metadata.tdb";
/// The combined coordinates of sparse fragments before v5.
pub const COORDS_FILE: &str = "__coords.tdb";

#[derive(Debug)]
pub struct Fragment {
    /// Identity within an opened array: positions change when fragments come and go,
    /// the id stays with the fragment (and so do inode numbers built from it).
    pub id: usize,
    pub dir: PathBuf,
    pub name: String,
    pub rel_dir: String,
    pub timestamps: TimestampedName,
    key: Option<[u8; 32]>,
    meta: OnceLock<Result<Arc<FragmentMeta>>>,
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
type LazyLists = Vec<OnceLock<Result<Arc<Vec<u64>>>>>;

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
    metadata_path: PathBuf,
    key: Option<[u8; 32]>,
    context: String,
    lists: [LazyLists; 4],
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
        id: usize,
        dir: PathBuf,
        name: String,
        rel_dir: String,
        timestamps: TimestampedName,
        key: Option<[u8; 32]>,
    ) -> Fragment {
        Fragment {
            id,
            dir,
            name,
            rel_dir,
            timestamps,
            key,
            meta: OnceLock::new(),
        }
    }

    /// The fragment's metadata, parsed on first call.
    pub fn meta(&self, schemas: &[SchemaFile]) -> Result<Arc<FragmentMeta>> {
        self.meta
            .get_or_init(|| FragmentMeta::load(self, schemas).map(Arc::new))
            .clone()
    }

    /// Whether the metadata was parsed already (for tests of laziness).
    pub fn meta_loaded(&self) -> bool {
        self.meta.get().is_some()
    }

    pub fn metadata_path(&self) -> PathBuf {
        self.dir.join(METADATA_FILE)
    }
}

impl FragmentMeta {
    fn load(fragment: &Fragment, schemas: &[SchemaFile]) -> Result<FragmentMeta> {
        let context = format!("fragment {}", fragment.name);
        let name_version = fragment.timestamps.version;
        if !(OLDEST_FORMAT_VERSION..=NEWEST_FORMAT_VERSION).contains(&name_version) {
            return Err(Error::format(
                &context,
                FormatError::UnsupportedVersion {
                    what: "fragment name",
                    found: name_version,
                },
            ));
        }
        // TileDB picks the loader by the version in the name: generation ONE names
        // (which claim 2) and any name of version 1 or 2 have whole-file metadata.
        let Loaded {
            footer,
            schema_file,
            layout,
            whole_file,
        } = if name_version <= 2 {
            load_whole_file(fragment, schemas, &context)?
        } else {
            load_footer(fragment, schemas, &context)?
        };
        let schema = schema_file.schema.clone();
        let fields = fragment_fields(&schema, &footer);
        let (tile_count, cells_per_tile, last_tile_cells) = if footer.dense {
            dense_tiling(&schema, &footer).map_err(|r| Error::corrupt(&context, r))?
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
                        .map(|l| OnceLock::from(Ok(Arc::new(l))))
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
                let lazy = || (0..slots).map(|_| OnceLock::new()).collect::<Vec<_>>();
                ([lazy(), lazy(), lazy(), lazy()], None)
            }
        };
        Ok(FragmentMeta {
            footer,
            schema,
            schema_name: schema_file.name.clone(),
            fields,
            tile_count,
            cells_per_tile,
            last_tile_cells,
            layout,
            metadata_path: fragment.metadata_path(),
            key: fragment.key,
            context,
            lists,
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
        let cell = self.lists[which as usize]
            .get(slot)
            .ok_or_else(|| Error::corrupt(&self.context, format!("no {label} for slot {slot}")))?;
        cell.get_or_init(|| {
            let what = format!("{}, {METADATA_FILE}, {label} of slot {slot}", self.context);
            let at = *offsets
                .get(slot)
                .ok_or_else(|| Error::corrupt(&what, "footer has no offset for this slot"))?;
            let bytes = self.generic_tile(at, &what)?;
            parse_u64_list(&bytes, label)
                .map(Arc::new)
                .map_err(|e| Error::format(&what, e))
        })
        .clone()
    }

    fn generic_tile(&self, offset: u64, what: &str) -> Result<Vec<u8>> {
        let file = open_metadata(&self.metadata_path, what)?;
        read_generic_tile(&file, offset, self.key, what)
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
        let what = format!("{}, {METADATA_FILE}, R-tree", self.context);
        let bytes = self.generic_tile(self.footer.rtree_offset, &what)?;
        RTree::parse(&bytes, self.footer.version, &self.schema.dimensions)
            .map_err(|e| Error::format(&what, e))
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
            let what = format!("{}, {METADATA_FILE}, {kind} {which} {of}", self.context);
            TileBounds::parse(&self.generic_tile(at, &what)?).map_err(|e| Error::format(&what, e))
        };
        Ok((load(min_at, "mins")?, load(max_at, "maxes")?))
    }

    pub fn tile_sums(&self, slot: usize) -> Result<Vec<[u8; 8]>> {
        let Some(&at) = self.footer.tile_sum_offsets.get(slot) else {
            return Ok(Vec::new());
        };
        let what = format!(
            "{}, {METADATA_FILE}, tile sums of slot {slot}",
            self.context
        );
        parse_sums(&self.generic_tile(at, &what)?).map_err(|e| Error::format(&what, e))
    }

    pub fn tile_null_counts(&self, slot: usize) -> Result<Vec<u64>> {
        let Some(&at) = self.footer.tile_null_count_offsets.get(slot) else {
            return Ok(Vec::new());
        };
        let what = format!(
            "{}, {METADATA_FILE}, tile null counts of slot {slot}",
            self.context
        );
        parse_u64_list(&self.generic_tile(at, &what)?, "tile null counts")
            .map_err(|e| Error::format(&what, e))
    }

    pub fn fragment_stats(&self) -> Result<Option<Vec<FieldStats>>> {
        let Some(at) = self.footer.fragment_min_max_sum_null_count_offset else {
            return Ok(None);
        };
        let what = format!("{}, {METADATA_FILE}, fragment statistics", self.context);
        let slots = self.footer.slot_count(&self.schema);
        parse_fragment_stats(&self.generic_tile(at, &what)?, slots)
            .map(Some)
            .map_err(|e| Error::format(&what, e))
    }

    pub fn processed_conditions(&self) -> Result<Option<Vec<String>>> {
        let Some(at) = self.footer.processed_conditions_offset else {
            return Ok(None);
        };
        let what = format!("{}, {METADATA_FILE}, processed conditions", self.context);
        parse_processed_conditions(&self.generic_tile(at, &what)?)
            .map(Some)
            .map_err(|e| Error::format(&what, e))
    }

    pub fn context(&self) -> &str {
        &self.context
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

/// Opens a fragment's metadata file. The fragment is listed, so a missing or unreadable
/// file is bad data (EIO naming it), not a missing virtual file (ENOENT).
fn open_metadata(path: &Path, what: &str) -> Result<DataFile> {
    DataFile::open(path).map_err(|e| match e {
        Error::Io { message, .. } => Error::corrupt(what, format!("cannot open: {message}")),
        e => e,
    })
}

/// Formats 1-2: the whole `__fragment_metadata.tdb` is one generic tile
/// (`06-fragment-metadata.md` §5), read against `__array_schema.tdb`.
fn load_whole_file<'a>(
    fragment: &Fragment,
    schemas: &'a [SchemaFile],
    context: &str,
) -> Result<Loaded<'a>> {
    let what = format!("{context}, {METADATA_FILE}");
    let schema_file = schemas
        .iter()
        .find(|s| s.name == super::LEGACY_SCHEMA)
        .ok_or_else(|| Error::corrupt(context, "no __array_schema.tdb for a v1-v2 fragment"))?;
    let bytes = open_metadata(&fragment.metadata_path(), &what)?.read_all()?;
    let (_, payload) = decode_generic_tile(&bytes, fragment.key, &what)?;
    let metadata = LegacyMetadata::parse(&payload, &schema_file.schema)
        .map_err(|e| Error::format(&what, e))?;
    // There is no dense flag yet: only sparse fragments have coordinates, and a sparse
    // array has only sparse fragments (so a lost __coords.tdb is reported as lost, not
    // taken for a dense fragment).
    let dense = schema_file.schema.array_type == ArrayType::Dense
        && !fragment.dir.join(COORDS_FILE).is_file();
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
    context: &str,
) -> Result<Loaded<'a>> {
    let what = format!("{context}, {METADATA_FILE}");
    let file = open_metadata(&fragment.metadata_path(), &what)?;
    // Pre-v10 fragments always use the legacy schema; v10+ name theirs in the footer.
    let legacy = schemas.iter().find(|s| s.name == super::LEGACY_SCHEMA);
    let name_version = fragment.timestamps.version;
    let location = if name_version >= 10 {
        FooterLocation::Trailing
    } else {
        let schema = legacy
            .or(schemas.first())
            .ok_or_else(|| Error::corrupt(context, "no schema for a pre-v10 fragment"))?;
        footer_location(name_version, &schema.schema)
    };
    let (footer_bytes, layout) = match location {
        FooterLocation::Trailing => (
            read_trailing_footer(&file, context)?,
            MetadataLayout::TrailingFooter,
        ),
        FooterLocation::Computed(len) => {
            let start = file.len().checked_sub(len).ok_or_else(|| {
                Error::corrupt(
                    &what,
                    format!(
                        "file of {} bytes is shorter than its {len}-byte footer",
                        file.len()
                    ),
                )
            })?;
            (file.read(start, len)?, MetadataLayout::ComputedFooter)
        }
    };
    let version_in_footer = Reader::new(&footer_bytes)
        .u32("footer version")
        .map_err(|e| Error::format(&what, e))?;
    let schema_file = if version_in_footer >= 10 {
        let mut r = Reader::new(&footer_bytes);
        let name = r
            .u32("footer version")
            .and_then(|_| r.string_u64("array schema name"))
            .map_err(|e| Error::format(&what, e))?;
        let n = name.trim_start_matches('/').to_string();
        schemas.iter().find(|s| s.name == n).ok_or_else(|| {
            Error::corrupt(
                &what,
                format!("footer names schema {n}, which is not in __schema/"),
            )
        })?
    } else {
        legacy.ok_or_else(|| {
            Error::corrupt(
                &what,
                format!(
                    "footer of format version {version_in_footer} needs __array_schema.tdb, \
                     which the array does not have"
                ),
            )
        })?
    };
    let footer = Footer::parse(&footer_bytes, &schema_file.schema)
        .map_err(|e| Error::format(format!("{what} footer"), e))?;
    Ok(Loaded {
        footer,
        schema_file,
        layout,
        whole_file: None,
    })
}

fn read_trailing_footer(file: &DataFile, context: &str) -> Result<Vec<u8>> {
    let what = format!("{context}, {METADATA_FILE}");
    let len_at = file.len().checked_sub(8).ok_or_else(|| {
        Error::corrupt(&what, format!("file of {} bytes has no footer", file.len()))
    })?;
    let raw = file.read(len_at, 8)?;
    let len = u64::from_le_bytes(
        raw.try_into()
            .map_err(|_| Error::corrupt(&what, "short read"))?,
    );
    let start = len_at.checked_sub(len).ok_or_else(|| {
        Error::corrupt(
            &what,
            format!(
                "footer length {len} exceeds the file's {} bytes",
                file.len()
            ),
        )
    })?;
    file.read(start, len)
}

/// Tile count and cells per tile of a dense fragment: every space tile that intersects the
/// non-empty domain, anchored at the domain's low value (`07` §4).
fn dense_tiling(
    schema: &ArraySchema,
    footer: &Footer,
) -> std::result::Result<(u64, u64, u64), String> {
    let grid = DenseGrid::new(schema, footer)?;
    Ok((
        grid.tile_count(),
        grid.cells_per_tile(),
        grid.cells_per_tile(),
    ))
}

/// Reads the fragment folder's total size on disk (for `info`).
pub fn dir_size(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok()?.metadata().ok())
                .filter(|m| m.is_file())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}
