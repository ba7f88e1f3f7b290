//! A folder's cells as a table ([`crate::encode::table`]), for the table files
//! `cells.parquet` and `cells.arrow`: the same columns and rows as `cells.csv`, cut into
//! groups — a fragment's by tile, a merged state's by [`STATE_GROUP_ROWS`] cells — with
//! the facts each group's layout depends on.
//!
//! The facts come from the fragment metadata where it records them (tiles' cell counts,
//! var sizes, null counts from format 11, min/max from format 11, MBRs of sparse
//! dimensions), so such a file is laid out, sized and listed without a tile decoded.
//! Where metadata does not say (null counts before format 11, codes with no label,
//! a merged state's nulls and var sizes) the table is built by reading what it lacks
//! (validity and offsets, or the codes) once; until then its size shows as a text
//! file's does.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

use crate::array::fragment::{TileList, METADATA_FILE};
use crate::encode::table::{
    self, CellsRef, Chunk, Codec, Column, Group, Layout, Stored, StoredPage, Table,
};
use crate::error::{Error, Place, Result};
use crate::format::enumeration::Enumeration;
use crate::format::Datatype;
use crate::read::cells::Cells;
use crate::read::stored::StoredCodec;
use crate::read::RawFile;
use crate::view::cache::{OwnedKey, ViewItem, ViewKey};
use crate::view::nodes::Ino;

use super::array_tree::ArrayTree;
use super::json;
use super::node::{state_dir, FieldOf, Folder};
use super::tile_bounds::TileBoundsOf;

/// Rows per group of a merged state: bounded, so a reader's row group or record batch
/// stays a few MiB per column, and large enough that a column chunk's headers are a
/// small share of it.
pub(super) const STATE_GROUP_ROWS: u64 = 1 << 16;

/// The most groups a table file has: its footer (a few hundred bytes per group) is
/// kept in memory, so a table of more (over 68 billion cells in a merged state, over a
/// million tiles in a fragment) is refused rather than laid out.
const MAX_GROUPS: u64 = 1 << 20;

fn too_many_groups(place: Place, groups: u64) -> Error {
    Error::corrupt(
        place,
        format!("{groups} row groups: more than a table file holds ({MAX_GROUPS})"),
    )
}

/// A table file laid out: its table, the writer's layout, and where each piece starts.
pub(super) struct Laid {
    pub table: Table,
    pub layout: Layout,
    /// `starts[i]`: the file offset of piece `i`.
    pub starts: Vec<u64>,
    /// `first_rows[g]`: the table's row group `g` starts at.
    pub first_rows: Vec<u64>,
    /// Where the stored pages of [`Chunk::stored`] lie in their field's data file, by
    /// group and column.
    pub stored: StoredRanges,
}

/// Where stored pages lie in their field's data file, by (group, column).
pub(super) type StoredRanges = HashMap<(usize, usize), Vec<Range<u64>>>;

impl Laid {
    pub fn new(table: Table, layout: Layout, stored: StoredRanges) -> Laid {
        let mut starts = Vec::with_capacity(layout.pieces.len());
        let mut at = 0;
        for p in &layout.pieces {
            starts.push(at);
            at += p.len();
        }
        let mut first_rows = Vec::with_capacity(table.groups.len());
        let mut row = 0;
        for g in &table.groups {
            first_rows.push(row);
            row += g.rows;
        }
        Laid {
            table,
            layout,
            starts,
            first_rows,
            stored,
        }
    }

    /// What the view cache counts it as: its made bytes and a share per piece and
    /// per chunk, the labels.
    fn weight(&self) -> u64 {
        let bytes: u64 = self
            .layout
            .pieces
            .iter()
            .map(|p| match p {
                table::Piece::Bytes(b) => b.len() as u64 + 48,
                _ => 48,
            })
            .sum();
        let chunks: u64 = self
            .table
            .groups
            .iter()
            .flat_map(|g| &g.chunks)
            .map(|c| {
                96 + c
                    .bounds
                    .as_ref()
                    .map_or(0, |b| (b.min.len() + b.max.len()) as u64)
            })
            .sum();
        let labels: u64 = self
            .table
            .columns
            .iter()
            .filter_map(|c| c.labels.as_ref())
            .map(|e| e.data.len() as u64 + e.offsets.len() as u64 * 8)
            .sum();
        let kv: u64 = self
            .table
            .key_value
            .iter()
            .map(|(k, v)| (k.len() + v.len()) as u64)
            .sum();
        let stored: u64 = self.stored.values().map(|r| 32 + 16 * r.len() as u64).sum();
        bytes + chunks + labels + kv + stored + 16 * self.starts.len() as u64
    }

    /// Wraps it for the view cache.
    pub fn into_item(self) -> ViewItem {
        let weight = self.weight();
        ViewItem::Shared {
            item: Arc::new(self),
            weight,
        }
    }
}

/// A file format a table is written in (Parquet, Arrow IPC): the writer's calls.
pub(super) trait TableWriter: Sync {
    /// Adds what the format carries besides the table itself (Parquet: the Arrow
    /// schema pyarrow restores types from).
    fn complete(&self, _table: &mut Table) -> Result<()> {
        Ok(())
    }

    /// Whether the format copies stored compressed pages ([`Chunk::stored`]): the
    /// table then says where a fragment's field has them.
    fn copies_stored(&self) -> bool {
        false
    }

    /// Whether the file's size follows from the rows and var sizes alone, whatever
    /// the null counts (Arrow: its buffers hold null slots): its size is then shown
    /// before the nulls are counted.
    fn sized_without_counts(&self) -> bool {
        false
    }

    fn layout(&self, table: &Table) -> Result<Layout>;

    fn body(
        &self,
        table: &Table,
        group: usize,
        column: usize,
        cells: &CellsRef<'_>,
    ) -> Result<Vec<u8>>;
}

/// A fact a group's chunk still lacks after metadata.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Missing {
    Nulls,
    VarBytes,
    /// A var field's bytes of null cells and count of empty cells ([`Chunk::null_bytes`],
    /// [`Chunk::empty`]): no metadata records them.
    VarCounts,
}

/// The facts every chunk of a table is built from, with what metadata left open.
struct Draft {
    table: Table,
    missing: Vec<(usize, usize, Missing)>,
    stored: StoredRanges,
    /// False for a sparse state whose cells are not counted yet (a merge pass): its
    /// groups are unknown, the table has none.
    counted: bool,
}

impl Draft {
    /// Whether metadata gave every fact.
    fn is_complete(&self) -> bool {
        self.counted && self.missing.is_empty()
    }
}

impl ArrayTree {
    fn table_key(&self, ino: Ino, key: ViewKey) -> OwnedKey {
        OwnedKey {
            owner: self.owner,
            file: ino,
            key,
        }
    }

    /// `fragment F, cells.parquet`, `latest/cells.arrow`...
    pub(super) fn table_place(&self, folder: Folder, name: &str) -> Place {
        match folder {
            Folder::Fragment(f) => match self.fragment(f) {
                Ok(fragment) => fragment.place().in_file(name.to_string()),
                Err(_) => Place::file(name.to_string()),
            },
            Folder::State(w) => Place::file(format!("{}/{name}", state_dir(w))),
        }
    }

    /// Where a writer's error about a folder's table happens: a fragment's facts come
    /// from its metadata (a writer finds the cells disagree with them), a state's from
    /// its merge. The writer's own message names the file, column and group.
    fn writer_place(&self, folder: Folder) -> Place {
        match folder {
            Folder::Fragment(_) => self.table_place(folder, METADATA_FILE),
            Folder::State(w) => Place::file(state_dir(w)),
        }
    }

    /// The table file at `ino` laid out by `lay`, if metadata alone lays it out (or it
    /// was laid out before): what `ls` shows without reading a cell.
    pub(super) fn laid_from_metadata(
        &self,
        ino: Ino,
        folder: Folder,
        writer: &dyn TableWriter,
    ) -> Result<Option<Arc<Laid>>> {
        let generation = self.generation_of(folder);
        let key = self.table_key(ino, ViewKey::Table(generation));
        if let Some(item) = self.caches.views.get(&key) {
            return item.shared::<Laid>("a table file's layout").map(Some);
        }
        let mut draft = self.draft_table(folder, writer, false)?;
        if !draft.is_complete() {
            return Ok(None);
        }
        writer.complete(&mut draft.table)?;
        let layout = writer
            .layout(&draft.table)
            .map_err(|e| e.at(self.writer_place(folder)))?;
        let laid = Laid::new(draft.table, layout, draft.stored);
        let size = laid.layout.size;
        let item = Arc::new(laid.into_item());
        self.caches.views.insert(key, item.clone());
        self.learn_size(ino, generation, size);
        item.shared::<Laid>("a table file's layout").map(Some)
    }

    /// The size of the table file at `ino` if metadata gives it: laid out from
    /// metadata, or (a writer whose size does not depend on the counts) from metadata
    /// with the counts it lacks taken as 0; else a size learnt before.
    pub(super) fn table_known_size(
        &self,
        ino: Ino,
        folder: Folder,
        writer: &dyn TableWriter,
    ) -> Result<Option<u64>> {
        if let Some(laid) = self.laid_from_metadata(ino, folder, writer)? {
            return Ok(Some(laid.layout.size));
        }
        let generation = self.generation_of(folder);
        if let Some(size) = self.learnt_size(ino, generation) {
            return Ok(Some(size));
        }
        if !writer.sized_without_counts() {
            return Ok(None);
        }
        let mut draft = self.draft_table(folder, writer, false)?;
        if !draft.counted
            || draft
                .missing
                .iter()
                .any(|&(_, _, m)| m == Missing::VarBytes)
        {
            return Ok(None);
        }
        writer.complete(&mut draft.table)?;
        let size = writer
            .layout(&draft.table)
            .map_err(|e| e.at(self.writer_place(folder)))?
            .size;
        self.learn_size(ino, generation, size);
        Ok(Some(size))
    }

    /// The table file at `ino` laid out by `lay`, reading what metadata lacks.
    pub(super) fn laid(
        &self,
        ino: Ino,
        folder: Folder,
        writer: &dyn TableWriter,
    ) -> Result<Arc<Laid>> {
        if let Some(laid) = self.laid_from_metadata(ino, folder, writer)? {
            return Ok(laid);
        }
        let generation = self.generation_of(folder);
        let key = self.table_key(ino, ViewKey::Table(generation));
        // One thread reads the facts of a file at a time; the others then find them.
        let lock = self.indexing.of(&ino);
        let _one = lock.lock().unwrap_or_else(|e| e.into_inner());
        let item = self.caches.views.get_or_load(key, || {
            let (mut table, stored) = self.complete_table(folder, writer)?;
            writer.complete(&mut table)?;
            let layout = writer
                .layout(&table)
                .map_err(|e| e.at(self.writer_place(folder)))?;
            self.learn_size(ino, generation, layout.size);
            Ok(Laid::new(table, layout, stored).into_item())
        })?;
        item.shared::<Laid>("a table file's layout")
    }

    /// What the writer makes of group `group`'s cells of column `column` (kept in the
    /// view cache: a read of any of its bytes makes it whole).
    pub(super) fn table_body(
        &self,
        ino: Ino,
        folder: Folder,
        laid: &Laid,
        group: usize,
        column: usize,
        writer: &dyn TableWriter,
    ) -> Result<Arc<ViewItem>> {
        let generation = self.generation_of(folder);
        let key = self.table_key(
            ino,
            ViewKey::TableBody(generation, group as u64, column as u64),
        );
        self.caches.views.get_or_load(key, || {
            let rows = laid.table.groups.get(group).map_or(0, |g| g.rows);
            let first = laid.first_rows.get(group).copied().unwrap_or(0);
            let cells = self.folder_cells(folder, column, first, rows)?;
            let cells = cells_ref(&cells);
            writer
                .body(&laid.table, group, column, &cells)
                .map(ViewItem::Bytes)
                .map_err(|e| e.at(self.writer_place(folder)))
        })
    }

    /// The table with every fact, read where metadata lacks it.
    fn complete_table(
        &self,
        folder: Folder,
        writer: &dyn TableWriter,
    ) -> Result<(Table, StoredRanges)> {
        // A sparse state's one merge pass: its count and its groups' sources together.
        let spans = match folder {
            Folder::State(w) => self.sparse_state_spans(w, STATE_GROUP_ROWS)?,
            Folder::Fragment(_) => None,
        };
        let Draft {
            mut table,
            missing,
            stored,
            ..
        } = self.draft_table(folder, writer, true)?;
        let first_rows = first_rows(&table.groups);
        if let (Folder::State(w), Some(spans)) = (folder, spans) {
            self.sparse_state_bounds(w, &mut table.groups, &table.columns, &spans)?;
        }
        // A merged state's facts come from its cells (a fragment's validity and offsets
        // are cheaper read alone): one read of a group's column serves all its facts,
        // and the merge behind it serves the group's every column (see the merge's
        // recent runs).
        let mut read: Option<((usize, usize), Cells)> = None;
        for (g, c, what) in missing {
            let rows = table.groups[g].rows;
            let first = first_rows[g];
            let of = FieldOf::new(folder, c);
            let column = &table.columns[c];
            let from_cells = matches!(folder, Folder::State(_))
                || what == Missing::VarCounts
                || column.labels.is_some();
            if from_cells && read.as_ref().is_none_or(|(at, _)| *at != (g, c)) {
                read = Some(((g, c), self.folder_cells(folder, c, first, rows)?));
            }
            let cells = read
                .as_ref()
                .filter(|_| from_cells)
                .map(|(_, c)| cells_ref(c));
            let chunk = &mut table.groups[g].chunks[c];
            match (what, cells) {
                (Missing::VarCounts, Some(cells)) => {
                    (chunk.null_bytes, chunk.empty) = table::var_counts(column, &cells);
                }
                (Missing::Nulls, Some(cells)) => chunk.nulls = table::null_count(column, &cells),
                // A state's var starts follow from its groups' sizes, below.
                (Missing::VarBytes, Some(cells)) => chunk.var_bytes = cells.values.len() as u64,
                (Missing::Nulls, None) => {
                    let mut validity = Vec::new();
                    self.read_field_raw(of, RawFile::Validity, first, rows, &mut validity)?;
                    chunk.nulls = validity.iter().filter(|&&b| b == 0).count() as u64;
                }
                (Missing::VarBytes, None) => {
                    let (start, end) = self.var_span(of, first, rows)?;
                    let chunk = &mut table.groups[g].chunks[c];
                    chunk.var_start = start;
                    chunk.var_bytes = end - start;
                }
                (Missing::VarCounts, None) => {}
            }
        }
        if let Folder::State(_) = folder {
            for (c, column) in table.columns.iter().enumerate() {
                if !column.is_var() {
                    continue;
                }
                let mut at = 0u64;
                for group in &mut table.groups {
                    let chunk = &mut group.chunks[c];
                    chunk.var_start = at;
                    at += chunk.var_bytes;
                }
            }
        }
        Ok((table, stored))
    }

    /// Where cells `first .. first + rows` of a var field's `values.bin` start and end.
    fn var_span(&self, of: FieldOf, first: u64, rows: u64) -> Result<(u64, u64)> {
        let mut offsets = Vec::new();
        self.read_field_raw(of, RawFile::Offsets, first * 8, rows * 8 + 8, &mut offsets)?;
        let at = |i: usize| -> Option<u64> {
            Some(u64::from_le_bytes(
                offsets.get(i * 8..i * 8 + 8)?.try_into().ok()?,
            ))
        };
        let start = at(0).unwrap_or(0);
        // The last group's end is the end of `values.bin`.
        let end = match at(rows as usize) {
            Some(end) => end,
            None => self.field_raw_size(of, RawFile::Values)?,
        };
        if end < start {
            return Err(Error::corrupt(
                self.table_place(of.folder, "offsets.bin"),
                format!("cells {first}..{}: offsets go backwards", first + rows),
            ));
        }
        Ok((start, end))
    }

    fn read_field_raw(
        &self,
        of: FieldOf,
        raw: RawFile,
        offset: u64,
        len: u64,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        match of.folder {
            Folder::Fragment(f) => {
                self.with_field(f, of.index, |r| r.read_into(raw, offset, len, out))
            }
            Folder::State(w) => self.merged(w)?.read_into(of.index, raw, offset, len, out),
        }
    }

    fn field_raw_size(&self, of: FieldOf, raw: RawFile) -> Result<u64> {
        match of.folder {
            Folder::Fragment(f) => self.with_field(f, of.index, |r| r.size(raw)),
            Folder::State(w) => self.merged(w)?.size(of.index, raw),
        }
    }

    /// The table of a folder with what metadata says, and what it leaves open.
    /// `count`: count a sparse state's cells if they are not yet (a merge pass);
    /// without it such a state's draft is not `counted` and has no groups.
    fn draft_table(&self, folder: Folder, writer: &dyn TableWriter, count: bool) -> Result<Draft> {
        let columns = self.table_columns(folder)?;
        let key_value = self.table_key_value(folder)?;
        let created_by = concat!("fragfs ", env!("CARGO_PKG_VERSION")).to_string();
        let mut missing = Vec::new();
        let mut stored = StoredRanges::new();
        let mut counted = true;
        let groups = match folder {
            Folder::Fragment(f) => {
                let mut groups = self.fragment_groups(f, &columns, &mut missing)?;
                if writer.copies_stored() {
                    stored = self.stored_pages(f, &columns, &mut groups)?;
                }
                groups
            }
            Folder::State(w) if !count && !self.merged(w)?.counted() => {
                counted = false;
                Vec::new()
            }
            Folder::State(w) => {
                let merged = self.merged(w)?;
                let cells = merged.cell_count()?;
                let n = cells.div_ceil(STATE_GROUP_ROWS);
                if n > MAX_GROUPS {
                    return Err(too_many_groups(Place::file(state_dir(w)), n));
                }
                let mut groups = (0..n)
                    .map(|g| {
                        let rows = STATE_GROUP_ROWS.min(cells - g * STATE_GROUP_ROWS);
                        let chunks = columns
                            .iter()
                            .enumerate()
                            .map(|(c, col)| {
                                if col.nullable || col.labels.is_some() {
                                    missing.push((g as usize, c, Missing::Nulls));
                                }
                                if col.is_var() {
                                    missing.push((g as usize, c, Missing::VarBytes));
                                }
                                if table::needs_var_counts(col) {
                                    missing.push((g as usize, c, Missing::VarCounts));
                                }
                                Chunk::default()
                            })
                            .collect();
                        Group { rows, chunks }
                    })
                    .collect::<Vec<_>>();
                let first_rows = first_rows(&groups);
                self.dense_state_bounds(w, &mut groups, &first_rows)?;
                groups
            }
        };
        Ok(Draft {
            table: Table {
                columns,
                groups,
                key_value,
                created_by,
            },
            missing,
            stored,
            counted,
        })
    }

    /// Marks the chunks of the fragment's fields whose tiles are stored as compressed
    /// pages a Parquet reader can take as they are (see `read/stored.rs`): fixed-size,
    /// one value a cell, of a type whose PLAIN bytes are TileDB's, not nullable, not
    /// enumerated, compressed with ZSTD or LZ4 alone. Reads chunk headers, decodes
    /// nothing. Returns where the pages lie.
    fn stored_pages(
        &self,
        f: crate::array::fragment::FragmentId,
        columns: &[Column],
        groups: &mut [Group],
    ) -> Result<StoredRanges> {
        let mut ranges = StoredRanges::new();
        for (c, column) in columns.iter().enumerate() {
            if !plain_as_stored(column) {
                continue;
            }
            let cell_size = column.cell_size();
            self.with_field(f, c, |reader| {
                let Some(codec) = reader.stored_codec() else {
                    return Ok(());
                };
                let codec = match codec {
                    StoredCodec::Zstd => Codec::Zstd,
                    StoredCodec::Lz4 => Codec::Lz4,
                };
                for (k, group) in groups.iter_mut().enumerate() {
                    let Some(chunks) = reader.stored_chunks(k as u64)? else {
                        continue;
                    };
                    let cells: u64 = chunks.iter().map(|s| s.unfiltered).sum();
                    let whole_cells = chunks.iter().all(|s| s.unfiltered % cell_size == 0);
                    if !whole_cells || cells != group.rows * cell_size {
                        continue;
                    }
                    group.chunks[c].stored = Some(Stored {
                        codec,
                        pages: chunks
                            .iter()
                            .map(|s| StoredPage {
                                compressed: s.range.end - s.range.start,
                                uncompressed: s.unfiltered,
                            })
                            .collect(),
                    });
                    ranges.insert((k, c), chunks.into_iter().map(|s| s.range).collect());
                }
                Ok(())
            })?;
        }
        Ok(ranges)
    }

    /// One group per tile, with the facts the fragment metadata records.
    fn fragment_groups(
        &self,
        f: crate::array::fragment::FragmentId,
        columns: &[Column],
        missing: &mut Vec<(usize, usize, Missing)>,
    ) -> Result<Vec<Group>> {
        let (_, meta) = self.meta(f)?;
        // A corrupt tile count must not size the table: the tile offsets in the
        // metadata must cover every tile (as for every raw file).
        meta.check_tile_count()?;
        if meta.tile_count > MAX_GROUPS {
            return Err(too_many_groups(meta.place().clone(), meta.tile_count));
        }
        let tiles = meta.tile_count as usize;
        let mut groups: Vec<Group> = (0..meta.tile_count)
            .map(|k| Group {
                rows: meta.tile_cells(k),
                chunks: vec![Chunk::default(); columns.len()],
            })
            .collect();
        for (c, (field, column)) in meta.fields.iter().zip(columns).enumerate() {
            // TileDB's tile null counts are right for a sparse fragment's nullable field
            // of one value a cell; a var field's can be 0 where cells are null, one of
            // several values a cell counts values, and a dense tile's leave out its
            // cells outside the written domain (null in the folder): those are counted
            // from the validity.
            let nulls = if field.nullable && (field.cell_val_num != 1 || meta.footer.dense) {
                None
            } else if field.nullable {
                let counts = meta.tile_null_counts(field.slot)?;
                (counts.len() == tiles).then_some(counts)
            } else {
                Some(vec![0; tiles])
            };
            let var_sizes = if field.is_var() {
                Some(meta.tile_list(TileList::VarSizes, field.slot)?)
            } else {
                None
            };
            let bounds = TileBoundsOf::new(&meta, c)?;
            let mut var_start = 0;
            for (k, group) in groups.iter_mut().enumerate() {
                let chunk = &mut group.chunks[c];
                match nulls.as_ref().and_then(|n| n.get(k)) {
                    Some(&n) if column.labels.is_none() => chunk.nulls = n,
                    _ => missing.push((k, c, Missing::Nulls)),
                }
                if let Some(sizes) = &var_sizes {
                    let size = *sizes.get(k).ok_or_else(|| {
                        Error::corrupt(
                            meta.place().clone(),
                            format!("field {}: no var size for tile {k}", field.name),
                        )
                    })?;
                    chunk.var_start = var_start;
                    chunk.var_bytes = size;
                    var_start += size;
                }
                if table::needs_var_counts(column) {
                    missing.push((k, c, Missing::VarCounts));
                }
                chunk.bounds = bounds.get(k, group.rows);
            }
        }
        Ok(groups)
    }

    /// The columns of a folder's table: its fields as `cells.csv` shows them.
    fn table_columns(&self, folder: Folder) -> Result<Vec<Column>> {
        let names = self.columns(folder)?;
        let mut columns = Vec::with_capacity(names.len());
        for (i, (name, _)) in names.into_iter().enumerate() {
            let of = FieldOf::new(folder, i);
            let facts = self.field_facts(of)?;
            let labels = self
                .field_enumeration(&of)?
                .map(|(e, _)| Enumeration::clone(&e));
            let mut column = Column {
                name,
                datatype: facts.datatype,
                cell_val_num: facts.cell_val_num,
                nullable: facts.nullable,
                labels,
            };
            if !crate::encode::parquet::takes_labels(&column) {
                // Labels no dictionary can hold (booleans, several values a label):
                // the codes are shown, as values.bin has them.
                column.labels = None;
            }
            columns.push(column);
        }
        Ok(columns)
    }

    /// The file's key-value metadata: the TileDB schema (as `array.json` has it) and
    /// the array's metadata (as `metadata.json`), as JSON.
    fn table_key_value(&self, folder: Folder) -> Result<Vec<(String, String)>> {
        let (schema_name, schema) = match folder {
            Folder::Fragment(f) => {
                let (_, meta) = self.meta(f)?;
                (meta.schema_name.clone(), meta.schema.clone())
            }
            Folder::State(w) => {
                let merged = self.merged(w)?;
                (merged.schema_name.clone(), merged.schema.clone())
            }
        };
        let mut kv = vec![(
            "tiledb.schema".to_string(),
            String::from_utf8_lossy(&json::to_bytes(&json::schema(&schema_name, &schema)))
                .into_owned(),
        )];
        let array = self.array();
        // Metadata that cannot be read is said so in the file, which still opens.
        match crate::array::metadata::load_metadata(&*array.store, array.options.key) {
            Ok(m) if m.is_empty() => {}
            Ok(m) => kv.push((
                "tiledb.metadata".to_string(),
                String::from_utf8_lossy(&json::to_bytes(&json::metadata(&m))).into_owned(),
            )),
            Err(e) => kv.push(("tiledb.metadata_error".to_string(), e.to_string())),
        }
        Ok(kv)
    }
}

/// Whether a column's Parquet PLAIN values are its `values.bin` bytes as they are: one
/// value a cell of a 32- or 64-bit integer (signed or not), a float, a 64-bit date or
/// time (days too: a plain INT64), not nullable, not enumerated.
fn plain_as_stored(column: &Column) -> bool {
    use Datatype::*;
    let t = column.datatype;
    let plain = matches!(t, Int32 | UInt32 | Int64 | UInt64 | Float32 | Float64) || t.is_temporal();
    plain && column.cell_val_num == 1 && !column.nullable && column.labels.is_none()
}

/// Where each group starts, in rows.
fn first_rows(groups: &[Group]) -> Vec<u64> {
    let mut out = Vec::with_capacity(groups.len());
    let mut row = 0;
    for g in groups {
        out.push(row);
        row += g.rows;
    }
    out
}

/// Cells read from a folder, as the writers take them.
fn cells_ref(cells: &Cells) -> CellsRef<'_> {
    CellsRef {
        values: &cells.values,
        bounds: cells.bounds.as_deref(),
        validity: cells.validity.as_deref(),
    }
}
