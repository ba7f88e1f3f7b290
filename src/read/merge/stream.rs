//! The sparse merge from given positions on: a cursor per fragment over a block of its
//! cells at a time, a heap of cursors by their next cell in the global order, and for
//! each coordinate the version the array shows ([`newest`], the deletes). What
//! [`SparseMerge`](super::sparse::SparseMerge) streams to count, index and read.

use std::cmp::Ordering;

use crate::error::{Error, Place, Result};
use crate::format::condition_eval::{holds, EvalError};
use crate::read::cells::Cells;

use crate::format::condition::Condition;
use crate::format::condition_eval::TestedField;
use crate::format::schema::ArraySchema;
use crate::read::ReadEngine;

use super::order::{GlobalOrder, Key};
use super::runs::{Source, BLOCK};

/// What the merge reads from, lent by the [`super::Merged`] it belongs to: the sources,
/// the engine that reads them, and the schema at the timestamp.
#[derive(Clone, Copy)]
pub struct Input<'a> {
    pub sources: &'a [Source],
    pub engine: &'a ReadEngine,
    pub schema: &'a ArraySchema,
}

/// What decides the cells a merge shows: the global order, the timestamp, whether
/// duplicates stay, and the deletes that apply.
pub(super) struct Rules {
    pub order: GlobalOrder,
    pub at: u64,
    pub dups: bool,
    pub deletes: Vec<Delete>,
    /// The fields the deletes test, with their datatypes.
    pub tested: Vec<TestedField>,
}

/// A delete that applies at the timestamp.
#[derive(Debug)]
pub(super) struct Delete {
    /// The commit's file name, as fragments list the conditions they already applied.
    pub name: String,
    pub timestamp: u64,
    /// As stored: the negation of the user's condition (cells where it holds stay).
    pub keep: Condition,
}

/// A block of one source's cells: what the merge looks at.
struct Block {
    first: u64,
    /// Per dimension.
    coords: Vec<Cells>,
    /// Per dimension, the cells' order keys (`None`: a string dimension); empty when
    /// the order is [`GlobalOrder::numeric`], which compares `heads` instead.
    keys: Vec<Option<Vec<Key>>>,
    /// Where each cell is in a numeric global order ([`GlobalOrder::head_into`]),
    /// [`Stream::head_len`] values a cell, back to back: comparing these is the
    /// merge's inner loop, so they are made once a block.
    heads: Vec<i128>,
    timestamps: Option<Vec<u64>>,
    delete_timestamps: Option<Vec<u64>>,
    /// Per tested field (`None`: the fragment has no such field: its cells are NULL).
    tested: Vec<Option<Cells>>,
}

struct Cursor {
    pos: u64,
    end: u64,
    block: Option<Block>,
    /// The fragment's timestamp for cells that carry none.
    t1: u64,
    partial: bool,
    /// Cells per tile of a fragment whose cells carry timestamps (TileDB deduplicates
    /// its versions tile by tile: see [`newest`]); 0 otherwise.
    tile_cells: u64,
}

/// The merge from given positions on.
pub(super) struct Stream<'a> {
    rules: &'a Rules,
    merged: Input<'a>,
    cursors: Vec<Cursor>,
    /// Indexes into `cursors` of those not at their end, a binary min-heap by cell.
    heap: Vec<usize>,
    /// Per source: the names of the deletes it already applied (consolidation did).
    processed: Vec<Vec<String>>,
    /// [`GlobalOrder::numeric`]: cells compare by their heads.
    numeric: bool,
    /// Values in a cell's head (numeric orders).
    head_len: usize,
    /// Buffers of [`Stream::next_group`], kept to spare an allocation per cell.
    versions: Vec<Version>,
    group: Vec<usize>,
    /// The group's coordinates, back to back, and where each dimension's ends.
    reference: Vec<u8>,
    reference_ends: Vec<usize>,
    /// The group's head (numeric orders).
    reference_head: Vec<i128>,
}

fn u64s(cells: &Cells) -> Vec<u64> {
    cells
        .values
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
        .collect()
}

impl<'a> Stream<'a> {
    pub(super) fn new(
        rules: &'a Rules,
        merged: Input<'a>,
        positions: &[u64],
    ) -> Result<Stream<'a>> {
        let mut cursors = Vec::with_capacity(merged.sources.len());
        let mut processed = Vec::with_capacity(merged.sources.len());
        for (s, source) in merged.sources.iter().enumerate() {
            cursors.push(Cursor {
                pos: positions.get(s).copied().unwrap_or(0),
                end: source.meta.cell_count(),
                block: None,
                t1: source.fragment.timestamps.t1,
                partial: source.partial,
                tile_cells: if source.meta.footer.has_timestamps {
                    source.meta.cells_per_tile
                } else {
                    0
                },
            });
            processed.push(if rules.deletes.is_empty() {
                Vec::new()
            } else {
                source
                    .meta
                    .processed_conditions()?
                    .unwrap_or_default()
                    .into_iter()
                    .map(|p| p.rsplit('/').next().unwrap_or(&p).to_string())
                    .collect()
            });
        }
        let mut stream = Stream {
            rules,
            merged,
            cursors,
            heap: Vec::new(),
            processed,
            versions: Vec::new(),
            group: Vec::new(),
            reference: Vec::new(),
            reference_ends: Vec::new(),
            reference_head: Vec::new(),
            numeric: rules.order.numeric(),
            head_len: 0,
        };
        if stream.numeric {
            let zero = Key { tile: 0, value: 0 };
            let mut head = Vec::new();
            rules.order.head_into(|_| zero, &mut head);
            stream.head_len = head.len();
        }
        for c in 0..stream.cursors.len() {
            if stream.settle(c)? {
                stream.heap_push(c);
            }
        }
        Ok(stream)
    }

    pub(super) fn positions(&self) -> Vec<u64> {
        self.cursors.iter().map(|c| c.pos).collect()
    }

    /// Loads the block holding cursor `c`'s position and skips the cells it cannot
    /// show (stamped after the timestamp); whether it has a cell.
    fn settle(&mut self, c: usize) -> Result<bool> {
        loop {
            let cursor = &self.cursors[c];
            if cursor.pos >= cursor.end {
                return Ok(false);
            }
            let loaded = cursor.block.as_ref().is_some_and(|b| {
                cursor.pos >= b.first
                    && cursor.pos < b.first + b.coords.first().map_or(0, |c| c.len() as u64)
            });
            if !loaded {
                let block = self.load(c, cursor.pos)?;
                self.cursors[c].block = Some(block);
            }
            let cursor = &self.cursors[c];
            if cursor.partial && self.timestamp(c) > self.rules.at {
                self.cursors[c].pos += 1;
                continue;
            }
            return Ok(true);
        }
    }

    fn load(&self, c: usize, first: u64) -> Result<Block> {
        let source = &self.merged.sources[c];
        let engine = &self.merged.engine;
        let fields = &source.meta.fields;
        let find = |name: &str| fields.iter().position(|f| f.name == name);
        let read = |i: usize| -> Result<Cells> {
            engine
                .field(&source.fragment, &source.meta, i)?
                .cells(first, BLOCK)
        };
        let mut coords = Vec::new();
        let mut keys = Vec::new();
        for (k, d) in self.merged.schema.dimensions.iter().enumerate() {
            let i = fields
                .iter()
                .position(|f| {
                    f.name == d.name && f.role == crate::array::field::FieldRole::Dimension
                })
                .ok_or_else(|| {
                    Error::corrupt(
                        source.fragment.place(),
                        format!("no dimension {} in this fragment", d.name),
                    )
                })?;
            let cells = read(i)?;
            keys.push(match cells.bounds {
                Some(_) => None,
                None => self
                    .rules
                    .order
                    .keys(k, &cells.values, d.datatype.size() as usize),
            });
            coords.push(cells);
        }
        let mut heads = Vec::new();
        if self.numeric {
            let cells = coords.first().map_or(0, |c| c.len());
            heads.reserve(cells * self.head_len);
            let zero = Key { tile: 0, value: 0 };
            for i in 0..cells {
                let key = |d: usize| {
                    keys.get(d)
                        .and_then(|k: &Option<Vec<Key>>| k.as_ref()?.get(i).copied())
                        .unwrap_or(zero)
                };
                let before = heads.len();
                self.rules.order.head_extend(key, &mut heads);
                heads.resize(before + self.head_len, 0);
            }
            keys.clear();
        }
        // Every format that stores cell timestamps (14 on) has the reader compare by
        // them, also between the versions one fragment holds.
        let timestamps = match find("__timestamps") {
            Some(i) => Some(u64s(&read(i)?)),
            None => None,
        };
        let delete_timestamps = match find("__delete_timestamps") {
            Some(i) => Some(u64s(&read(i)?)),
            None => None,
        };
        let tested = self
            .rules
            .tested
            .iter()
            .map(|field| find(&field.name).map(read).transpose())
            .collect::<Result<Vec<_>>>()?;
        Ok(Block {
            first,
            coords,
            keys,
            heads,
            timestamps,
            delete_timestamps,
            tested,
        })
    }

    /// The timestamp of cursor `c`'s cell: its own, or its fragment's first.
    fn timestamp(&self, c: usize) -> u64 {
        let cursor = &self.cursors[c];
        let Some(block) = &cursor.block else {
            return cursor.t1;
        };
        block
            .timestamps
            .as_ref()
            .and_then(|t| t.get((cursor.pos - block.first) as usize).copied())
            .unwrap_or(cursor.t1)
    }

    fn coord(&self, c: usize, d: usize) -> &[u8] {
        let cursor = &self.cursors[c];
        match &cursor.block {
            Some(b) => b.coords[d].value((cursor.pos - b.first) as usize),
            None => &[],
        }
    }

    fn key(&self, c: usize, d: usize) -> Option<Key> {
        let cursor = &self.cursors[c];
        let block = cursor.block.as_ref()?;
        block
            .keys
            .get(d)?
            .as_ref()?
            .get((cursor.pos - block.first) as usize)
            .copied()
    }

    /// Cursor `c`'s cell's head (numeric orders; empty past its block).
    fn head(&self, c: usize) -> &[i128] {
        let cursor = &self.cursors[c];
        let Some(b) = &cursor.block else {
            return &[];
        };
        let at = (cursor.pos - b.first) as usize * self.head_len;
        b.heads.get(at..at + self.head_len).unwrap_or(&[])
    }

    fn cmp(&self, a: usize, b: usize) -> Ordering {
        if self.numeric {
            return self.head(a).cmp(self.head(b)).then(a.cmp(&b));
        }
        let pick = |second: bool| if second { b } else { a };
        self.rules
            .order
            .cmp_keyed(
                |second, d| self.key(pick(second), d),
                |second, d| self.coord(pick(second), d),
            )
            // Equal cells: the older fragment first (the merge looks at all of them).
            .then(a.cmp(&b))
    }

    fn same_cell(&self, a: usize, b: usize) -> bool {
        if self.numeric {
            return self.head(a) == self.head(b);
        }
        (0..self.merged.schema.dimensions.len()).all(|d| self.coord(a, d) == self.coord(b, d))
    }

    fn heap_push(&mut self, c: usize) {
        self.heap.push(c);
        let mut i = self.heap.len() - 1;
        while i > 0 {
            let parent = (i - 1) / 2;
            if self.cmp(self.heap[i], self.heap[parent]).is_lt() {
                self.heap.swap(i, parent);
                i = parent;
            } else {
                break;
            }
        }
    }

    fn heap_pop(&mut self) -> Option<usize> {
        if self.heap.is_empty() {
            return None;
        }
        let top = self.heap.swap_remove(0);
        self.sift_down(0);
        Some(top)
    }

    /// Moves the heap's entry `i` down to its place (its cursor moved on).
    fn sift_down(&mut self, mut i: usize) {
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut least = i;
            if l < self.heap.len() && self.cmp(self.heap[l], self.heap[least]).is_lt() {
                least = l;
            }
            if r < self.heap.len() && self.cmp(self.heap[r], self.heap[least]).is_lt() {
                least = r;
            }
            if least == i {
                break;
            }
            self.heap.swap(i, least);
            i = least;
        }
    }

    /// Emits, as [`Stream::next_group`] would one call each, the cells of the smallest
    /// cursor that come before every other cursor's cell and before its own next one
    /// (each then a coordinate of its own, with one version, shown), at most `cap`,
    /// within its block: what a merge of fragments that do not interleave spends its
    /// time on. Only where nothing but the order decides: a numeric order, no deletes,
    /// a cursor whose cells carry no timestamps. Returns how many (0: the general path
    /// decides the next cell).
    fn gallop(&mut self, cap: u64, emit: &mut impl FnMut(usize, u64)) -> u64 {
        if !self.numeric || !self.rules.deletes.is_empty() {
            return 0;
        }
        // Cursor after cursor: fragments that interleave cell by cell give one each.
        let mut total = 0;
        while total < cap {
            let k = self.gallop_one(cap - total, emit);
            if k == 0 {
                break;
            }
            total += k;
        }
        total
    }

    /// [`Stream::gallop`] of the smallest cursor alone.
    fn gallop_one(&mut self, cap: u64, emit: &mut impl FnMut(usize, u64)) -> u64 {
        let Some(&c) = self.heap.first() else {
            return 0;
        };
        let cursor = &self.cursors[c];
        let Some(block) = &cursor.block else {
            return 0;
        };
        if cursor.partial || block.timestamps.is_some() || block.delete_timestamps.is_some() {
            return 0;
        }
        let hl = self.head_len;
        let head = |i: usize| block.heads.get(i * hl..(i + 1) * hl);
        // The smallest of the others is a child of the heap's top.
        let limit = [1, 2]
            .iter()
            .filter_map(|&i| self.heap.get(i))
            .map(|&o| self.head(o))
            .min();
        let at = (cursor.pos - block.first) as usize;
        let mut k = 0usize;
        while (k as u64) < cap {
            // The block's last cell waits: its next is in the next block.
            let (Some(h), Some(next)) = (head(at + k), head(at + k + 1)) else {
                break;
            };
            if limit.is_some_and(|l| h >= l) || next <= h {
                break;
            }
            k += 1;
        }
        let pos = cursor.pos;
        for cell in pos..pos + k as u64 {
            emit(c, cell);
        }
        if k > 0 {
            // Still within its block (its next cell was there), not partial.
            self.cursors[c].pos += k as u64;
            self.sift_down(0);
        }
        k as u64
    }

    /// The next coordinate: every version of it, from every source; calls `emit` with
    /// (source, cell) for what the array shows there. Where the next cells are each
    /// alone at their coordinate, up to `cap` of them in one call ([`Stream::gallop`]).
    /// `false` at the end.
    pub(super) fn next_group(
        &mut self,
        cap: u64,
        emit: &mut impl FnMut(usize, u64),
    ) -> Result<bool> {
        if self.gallop(cap, emit) > 0 {
            return Ok(true);
        }
        let Some(first) = self.heap_pop() else {
            return Ok(false);
        };
        // Every version: the popped cursor's run of equal cells, and the other cursors
        // whose cell is the same.
        let mut versions = std::mem::take(&mut self.versions);
        versions.clear();
        let mut group = std::mem::take(&mut self.group);
        group.clear();
        group.push(first);
        while let Some(&top) = self.heap.first() {
            if self.same_cell(top, first) {
                self.heap_pop();
                group.push(top);
            } else {
                break;
            }
        }
        // The reference coordinates, copied (cursors move below): a numeric order's
        // head, else the bytes.
        let dims = self.merged.schema.dimensions.len();
        let mut reference = std::mem::take(&mut self.reference);
        let mut ends = std::mem::take(&mut self.reference_ends);
        let mut reference_head = std::mem::take(&mut self.reference_head);
        reference.clear();
        ends.clear();
        reference_head.clear();
        if self.numeric {
            reference_head.extend_from_slice(self.head(first));
        } else {
            for d in 0..dims {
                reference.extend_from_slice(self.coord(first, d));
                ends.push(reference.len());
            }
        }
        let reference_of = |d: usize| {
            let start = if d == 0 { 0 } else { ends[d - 1] };
            &reference[start..ends[d]]
        };
        for &c in &group {
            loop {
                versions.push(self.version(c)?);
                self.cursors[c].pos += 1;
                if !self.settle(c)? {
                    break;
                }
                let same = if self.numeric {
                    self.head(c) == reference_head.as_slice()
                } else {
                    (0..dims).all(|d| self.coord(c, d) == reference_of(d))
                };
                if !same {
                    self.heap_push(c);
                    break;
                }
            }
        }
        if self.rules.dups {
            for v in versions.iter().filter(|v| v.shown) {
                emit(v.source, v.cell);
            }
        } else if let Some(v) = newest(&versions) {
            if v.shown {
                emit(v.source, v.cell);
            }
        }
        self.versions = versions;
        self.group = group;
        self.reference = reference;
        self.reference_ends = ends;
        self.reference_head = reference_head;
        Ok(true)
    }

    /// Cursor `c`'s current cell as a version: its timestamp, and whether it survives
    /// its delete timestamp and the deletes.
    fn version(&self, c: usize) -> Result<Version> {
        let cursor = &self.cursors[c];
        let timestamp = self.timestamp(c);
        let block = cursor.block.as_ref();
        let k = block.map_or(0, |b| (cursor.pos - b.first) as usize);
        let deleted_at = block
            .and_then(|b| b.delete_timestamps.as_ref())
            .and_then(|d| d.get(k).copied())
            .unwrap_or(u64::MAX);
        // u64::MAX: never deleted (also at the latest state, whose timestamp is u64::MAX).
        let mut shown = deleted_at == u64::MAX || deleted_at > self.rules.at;
        if shown {
            for d in &self.rules.deletes {
                if d.timestamp < timestamp || self.processed[c].contains(&d.name) {
                    continue;
                }
                let Some(block) = block else { break };
                // A null cell, or a fragment without the field, is a NULL.
                let value = |f: usize| {
                    block.tested[f]
                        .as_ref()
                        .filter(|cells| cells.is_valid(k))
                        .map(|cells| cells.value(k))
                };
                let keep = holds(&d.keep, &self.rules.tested, &value).map_err(
                    |EvalError { field, reason }| Error::corrupt(Place::file(field), reason),
                )?;
                if !keep {
                    shown = false;
                    break;
                }
            }
        }
        Ok(Version {
            source: c,
            cell: cursor.pos,
            tile: cursor.pos.checked_div(cursor.tile_cells).unwrap_or(0),
            timestamp,
            shown,
        })
    }
}

#[derive(Debug, Clone, Copy)]
struct Version {
    source: usize,
    cell: u64,
    /// The tile of its fragment that holds it, where the fragment's cells carry
    /// timestamps (else 0).
    tile: u64,
    timestamp: u64,
    shown: bool,
}

/// The version of one coordinate an array without duplicates shows (TileDB's
/// `ResultTileCmpBase::compare_timestamps` between fragments, and the deduplication
/// of a fragment's own versions in `SparseGlobalOrderReader`): the largest cell
/// timestamp (the fragment's first where its cells carry none), then the later
/// fragment. The cell timestamp decides between the versions one fragment holds too,
/// in whatever order they are stored. One fragment's versions with equal timestamps
/// (writes at one millisecond, consolidated) are settled as TileDB settles them: in
/// each tile the first stored (`dedup_tiles_with_timestamps`), then across each tile
/// boundary the later tile's (`dedup_fragments_with_timestamps` keeps the earlier only
/// when it is strictly newer): so the first stored of the last tile holding one.
/// `versions` come in stored order per source.
///
/// (At such a boundary TileDB also drops the whole earlier tile when the later holds
/// one result only, other coordinates' cells included; fragfs does not: see
/// docs/merged.md.)
fn newest(versions: &[Version]) -> Option<&Version> {
    versions
        .iter()
        .enumerate()
        .max_by(|(i, a), (j, b)| {
            (a.timestamp, a.source, a.tile)
                .cmp(&(b.timestamp, b.source, b.tile))
                .then(j.cmp(i))
        })
        .map(|(_, v)| v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn version(source: usize, cell: u64, timestamp: u64) -> Version {
        Version {
            source,
            cell,
            tile: 0,
            timestamp,
            shown: true,
        }
    }

    /// One fragment's versions of a coordinate: the largest cell timestamp wins
    /// wherever it is stored (a consolidated fragment with per-cell timestamps,
    /// `sparse_versions_vacuumed`); equal ones, the first stored; between fragments
    /// the timestamp first, then the later fragment.
    #[test]
    fn the_newest_version_is_the_largest_timestamp_then_the_later_fragment() {
        let pick = |vs: &[Version]| newest(vs).map(|v| (v.source, v.cell));
        // One consolidated fragment, newest stored first or last.
        assert_eq!(
            pick(&[version(0, 5, 4), version(0, 6, 3), version(0, 7, 1)]),
            Some((0, 5))
        );
        assert_eq!(
            pick(&[version(0, 5, 1), version(0, 6, 3), version(0, 7, 4)]),
            Some((0, 7))
        );
        assert_eq!(
            pick(&[version(0, 5, 2), version(0, 6, 4), version(0, 7, 3)]),
            Some((0, 6))
        );
        // Equal timestamps in one fragment: the first stored.
        assert_eq!(pick(&[version(0, 5, 3), version(0, 6, 3)]), Some((0, 5)));
        // A consolidated fragment (source 0, cells stamped up to 4) against a later
        // fragment written at 3: the cell timestamp decides, not the fragment order.
        assert_eq!(pick(&[version(0, 2, 4), version(1, 0, 3)]), Some((0, 2)));
        assert_eq!(pick(&[version(0, 2, 2), version(1, 0, 3)]), Some((1, 0)));
        // Equal timestamps across fragments: the later fragment.
        assert_eq!(pick(&[version(0, 2, 3), version(1, 0, 3)]), Some((1, 0)));
        assert_eq!(pick(&[]), None);
    }

    /// Equal timestamps inside one fragment, tiles of two cells: TileDB keeps the first
    /// of each tile, then the later tile's at each boundary
    /// (`sparse_equal_timestamps_vacuumed`).
    #[test]
    fn tied_versions_in_one_fragment_go_to_the_first_of_the_last_tile() {
        let tiled = |cell: u64, timestamp: u64| Version {
            tile: cell / 2,
            ..version(0, cell, timestamp)
        };
        let pick = |vs: &[Version]| newest(vs).map(|v| v.cell);
        // Cells 0-3 in tiles 0 and 1, all stamped 5: cell 2.
        let tied: Vec<Version> = (0..4).map(|c| tiled(c, 5)).collect();
        assert_eq!(pick(&tied), Some(2));
        // Cells 1-4 (tiles 0, 1, 2): the last tile holds cell 4 alone.
        let tied: Vec<Version> = (1..5).map(|c| tiled(c, 5)).collect();
        assert_eq!(pick(&tied), Some(4));
        // A strictly newer version wins wherever it is.
        assert_eq!(pick(&[tiled(0, 6), tiled(1, 5), tiled(2, 5)]), Some(0));
        assert_eq!(pick(&[tiled(0, 5), tiled(1, 6), tiled(2, 5)]), Some(1));
        // The newest tie in the last tile that holds one: cells 1 and 2 tie at 6.
        assert_eq!(
            pick(&[tiled(0, 5), tiled(1, 6), tiled(2, 6), tiled(3, 5)]),
            Some(2)
        );
    }
}
