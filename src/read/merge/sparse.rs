//! Sparse arrays: the visible fragments' cells merged in global order (a k-way merge:
//! each fragment stores its cells in that order), with TileDB's rules:
//!
//! - a partly visible fragment (per-cell timestamps) shows only cells stamped `<= T`;
//! - without duplicates, one version per coordinate: the newest by (cell timestamp, or
//!   the fragment's first timestamp where it has none; then fragment order; then the
//!   first stored, which a consolidated fragment keeps newest first);
//! - then that version is dropped if its `__delete_timestamps` stamp is `<= T`, or if a
//!   delete committed at or before `T` (and not after the version) matches it: a `.del`
//!   stores the negated condition, a cell is kept where it holds, and a comparison with
//!   a NULL is false ([`condition_eval`](crate::format::condition_eval) decides). An
//!   older version never reappears.
//!
//! The merge streams: memory is a block of cells per fragment. A checkpoint (each
//! fragment's position) every [`BLOCK`] output cells lets a read of any cells restart
//! from the nearest one. Reads record the checkpoints they pass, from cell 0 on, and
//! resume where the last one stopped: a sequential reader (`cat`) merges once, and
//! when it reaches the end the index is complete, with the cell count, without a
//! separate counting pass. Only what needs the count first (a file's size, offsets,
//! text) makes one counting pass over the rest. A pass from cell 0 to the last keeps a
//! [`Record`] of the merge, which later reads replay instead of merging.

use std::cmp::Ordering;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use crate::array::generic_tile::decode_generic_tile;
use crate::array::Array;
use crate::error::{Error, Place, Result};
use crate::format::condition::{parse_delete_condition, Condition};
use crate::format::condition_eval::{holds, tested_fields, EvalError, TestedField};
use crate::format::schema::ArraySchema;
use crate::lazy::Lazy;
use crate::read::cells::Cells;
use crate::read::ReadEngine;

use super::order::{GlobalOrder, Key};
use super::record::{Record, Recorder};
use super::runs::{Run, Source, BLOCK};

/// A delete that applies at the timestamp.
#[derive(Debug)]
struct Delete {
    /// The commit's file name, as fragments list the conditions they already applied.
    name: String,
    timestamp: u64,
    /// As stored: the negation of the user's condition (cells where it holds stay).
    keep: Condition,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Checkpoint {
    /// The output cell the merge is at.
    out: u64,
    /// Each source's position.
    positions: Vec<u64>,
}

struct Index {
    cells: u64,
    checkpoints: Vec<Checkpoint>,
    /// The whole merge, replayed instead of merged again (if it kept to its budget).
    record: Option<Record>,
}

/// What reads learned before the index was complete: the checkpoints from cell 0 up to
/// the furthest any read got (contiguous, as the counting pass would record them),
/// where the last read stopped (a sequential reader's next read starts there), and the
/// record of the merge from cell 0 as far as the streams that continued it got.
struct Progress {
    checkpoints: Vec<Checkpoint>,
    resume: Option<Checkpoint>,
    recording: Option<Recording>,
}

/// A record being made, and where the merge stopped after its last cell.
struct Recording {
    recorder: Recorder,
    at: Checkpoint,
}

/// The output cell from which, after a checkpoint at `out`, the next one is recorded
/// (at the first group boundary at or past it): the next multiple of `every`.
fn next_checkpoint_after(out: u64, every: u64) -> u64 {
    (out / every + 1) * every
}

pub struct SparseMerge {
    order: GlobalOrder,
    at: u64,
    dups: bool,
    deletes: Vec<Delete>,
    /// The fields the deletes test, with their datatypes.
    tested: Vec<TestedField>,
    index: Lazy<Arc<Index>>,
    progress: Mutex<Progress>,
    /// Output cells between checkpoints: [`BLOCK`] (small in tests).
    every: u64,
    /// The runs of the last ranges asked for, newest first, [`RECENT_RUNS`] at most.
    recent: Mutex<VecDeque<RecentRuns>>,
}

/// The runs of output cells `[first, first + n)`, by `(first, n)`.
type RecentRuns = ((u64, u64), Arc<Vec<Run>>);

/// The bytes a merge's record may take: an eighth of the cache's (a state of 16M
/// cells from at most 256 fragments takes 16 MiB).
fn record_budget(engine: &ReadEngine) -> usize {
    usize::try_from(engine.cache().capacity() / 8).unwrap_or(usize::MAX)
}

/// Runs [`SparseMerge::runs`] keeps of the last ranges it merged (40 bytes each: 10
/// MiB): a table's row group of interleaving fragments, a run a cell, fits four times.
/// For a state whose merge has no [`Record`] (over its budget); with one, they are
/// replayed as fast.
const RECENT_RUNS: usize = 1 << 18;

/// What the merge reads from, lent by the [`super::Merged`] it belongs to: the sources,
/// the engine that reads them, and the schema at the timestamp.
#[derive(Clone, Copy)]
pub struct Input<'a> {
    pub sources: &'a [Source],
    pub engine: &'a ReadEngine,
    pub schema: &'a ArraySchema,
}

impl SparseMerge {
    pub fn new(
        schema: &ArraySchema,
        sources: &[Source],
        at: u64,
        array: &Array,
        engine: Arc<ReadEngine>,
    ) -> Result<SparseMerge> {
        let order = GlobalOrder::new(schema)
            .map_err(|r| Error::corrupt(Place::file(array.location()), r))?;
        let mut deletes = Vec::new();
        for c in array
            .condition_commits
            .iter()
            .filter(|c| !c.is_update && c.timestamp <= at)
        {
            let place = Place::file(c.rel_path.as_str());
            let bytes = c.bytes(&*array.store)?;
            let (_, payload) = decode_generic_tile(&bytes, array.options.key, &place)?;
            let keep = parse_delete_condition(&payload).map_err(|e| Error::format(place, e))?;
            deletes.push(Delete {
                name: c
                    .rel_path
                    .rsplit('/')
                    .next()
                    .unwrap_or(&c.rel_path)
                    .to_string(),
                timestamp: c.timestamp,
                keep,
            });
        }
        let tested = tested_fields(schema, deletes.iter().map(|d| &d.keep));
        Ok(SparseMerge {
            order,
            at,
            dups: schema.allows_dups,
            deletes,
            tested,
            index: Lazy::default(),
            progress: Mutex::new(Progress {
                checkpoints: vec![Checkpoint {
                    out: 0,
                    positions: vec![0; sources.len()],
                }],
                resume: None,
                recording: Some(Recording {
                    recorder: Recorder::new(sources.len(), record_budget(&engine)),
                    at: Checkpoint {
                        out: 0,
                        positions: vec![0; sources.len()],
                    },
                }),
            }),
            every: BLOCK,
            recent: Mutex::default(),
        })
    }

    pub fn counted(&self) -> bool {
        self.index.is_loaded()
    }

    /// Cells of the merged array: one counting pass (kept).
    pub fn cell_count(&self, merged: Input<'_>) -> Result<u64> {
        Ok(self.index(merged)?.cells)
    }

    /// The complete index: counting is streaming to the end, from wherever reads got
    /// to; the stream that reaches the end installs the index.
    fn index(&self, merged: Input<'_>) -> Result<Arc<Index>> {
        if let Some(done) = self.index.get() {
            return done;
        }
        self.visit_streaming(merged, u64::MAX, 0, &mut |_, _, _| {}, true)?;
        self.index.get().unwrap_or_else(|| {
            Err(Error::corrupt(
                Place::file("merge"),
                "the merge ended without a count",
            ))
        })
    }

    /// Where output cells `[first, first + n)` come from (fewer past the last cell).
    /// Before the cells are counted, the merge streams from the nearest point reads
    /// reached, recording checkpoints on the way (see the module's doc).
    /// The last few ranges' runs are kept ([`RECENT_RUNS`]): the readers of one range
    /// (a table's row group, one column after another; a field's validity, then its
    /// values) merge it once.
    pub fn runs(&self, merged: Input<'_>, first: u64, n: u64) -> Result<Vec<Run>> {
        let mut runs: Vec<Run> = Vec::with_capacity(n.min(BLOCK) as usize);
        let mut push = |_, source, cell| push_cell(&mut runs, source, cell);
        if let Some(Ok(index)) = self.index.get() {
            if index.record.is_some() {
                // Replayed: faster than copying kept runs.
                self.visit_indexed(merged, &index, first, n, &mut push)?;
                return Ok(runs);
            }
        }
        let recent = || self.recent.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, runs)) = recent().iter().find(|(at, _)| *at == (first, n)) {
            return Ok(runs.as_ref().clone());
        }
        self.visit(merged, first, n, &mut push)?;
        if runs.len() <= RECENT_RUNS {
            let mut recent = recent();
            recent.push_front(((first, n), Arc::new(runs.clone())));
            let mut kept = 0;
            recent.retain(|(_, r)| {
                kept += r.len();
                kept <= RECENT_RUNS
            });
        }
        Ok(runs)
    }

    /// Calls `emit(out, source, cell)` for each output cell `out` of `[first, first +
    /// n)`, in order, with the source cell it shows: [`SparseMerge::runs`] without
    /// the runs, for a caller that wants something else of every cell (a table's
    /// statistics, gathered in the pass that counts the cells).
    pub fn visit(
        &self,
        merged: Input<'_>,
        first: u64,
        n: u64,
        emit: &mut dyn FnMut(u64, usize, u64),
    ) -> Result<()> {
        match self.index.get() {
            Some(index) => {
                let index = index?;
                self.visit_indexed(merged, &index, first, n, emit)
            }
            None => self.visit_streaming(merged, first, n, emit, false),
        }
    }

    /// `counting`: the pass that counts the cells, which continues the record of the
    /// merge (so that it is complete at the end) rather than start where the
    /// furthest read got.
    fn visit_streaming(
        &self,
        merged: Input<'_>,
        first: u64,
        n: u64,
        emit: &mut dyn FnMut(u64, usize, u64),
        counting: bool,
    ) -> Result<()> {
        let lock = || self.progress.lock().unwrap_or_else(|e| e.into_inner());
        // Start at the known point nearest before `first`: a checkpoint, or where the
        // last read stopped, or where the record stopped (the counting pass always);
        // checkpoints follow the last one at or before the start.
        let (start, mut next_checkpoint, mut recording) = {
            let mut progress = lock();
            let before = |at: u64| {
                let k = progress.checkpoints.partition_point(|c| c.out <= at);
                progress.checkpoints.get(k.saturating_sub(1))
            };
            let Some(checkpoint) = before(first) else {
                return Err(Error::corrupt(Place::file("merge"), "no first checkpoint"));
            };
            let mut start = match &progress.resume {
                Some(r) if r.out <= first && r.out > checkpoint.out => r.clone(),
                _ => checkpoint.clone(),
            };
            let continues = |at: &Checkpoint| at.out <= first && (counting || at.out >= start.out);
            let recording = match &progress.recording {
                Some(r) if continues(&r.at) => {
                    start = r.at.clone();
                    progress.recording.take()
                }
                _ => None,
            };
            let progress = &*progress;
            let before = |at: u64| {
                let k = progress.checkpoints.partition_point(|c| c.out <= at);
                progress.checkpoints.get(k.saturating_sub(1))
            };
            let last = before(start.out).map_or(0, |c| c.out);
            (start, next_checkpoint_after(last, self.every), recording)
        };
        let end = first.saturating_add(n);
        let mut stream = Stream::new(self, merged, &start.positions)?;
        let mut out = start.out;
        let mut recorded = Vec::new();
        let mut ended = false;
        loop {
            // At the first group boundary at or past each multiple of `every`, whoever
            // streams: so every read records the same checkpoints.
            if out >= next_checkpoint {
                recorded.push(Checkpoint {
                    out,
                    positions: stream.positions(),
                });
                next_checkpoint = next_checkpoint_after(out, self.every);
            }
            if out >= end {
                break;
            }
            // Not past the next checkpoint in one call, so every stream records it at
            // the same cell.
            let cap = next_checkpoint - out;
            let more = stream.next_group(cap, &mut |source, cell| {
                if let Some(r) = &mut recording {
                    r.recorder.push(out, source, cell);
                }
                if out >= first && out < end {
                    emit(out, source, cell);
                }
                out += 1;
            })?;
            if !more {
                ended = true;
                break;
            }
        }
        merged.engine.count_merged(out - start.out);
        // The stream stopped between groups: the next read may resume here.
        let mut progress = lock();
        let known = progress.checkpoints.last().map_or(0, |c| c.out);
        progress
            .checkpoints
            .extend(recorded.into_iter().filter(|c| c.out > known));
        if !ended {
            let here = Checkpoint {
                out,
                positions: stream.positions(),
            };
            if let Some(mut r) = recording.take() {
                r.at = here.clone();
                progress.recording = Some(r);
            }
            progress.resume = Some(here);
        }
        if ended {
            // Every checkpoint up to the end is known, and the count.
            let index = Arc::new(Index {
                cells: out,
                record: recording.and_then(|r| r.recorder.finish()),
                checkpoints: progress.checkpoints.clone(),
            });
            drop(progress);
            self.index.get_or_load(|| Ok(index))?;
        }
        Ok(())
    }

    fn visit_indexed(
        &self,
        merged: Input<'_>,
        index: &Index,
        first: u64,
        n: u64,
        emit: &mut dyn FnMut(u64, usize, u64),
    ) -> Result<()> {
        let end = first.saturating_add(n).min(index.cells);
        if first >= end {
            return Ok(());
        }
        let k = index
            .checkpoints
            .partition_point(|c| c.out <= first)
            .saturating_sub(1);
        let Some(start) = index.checkpoints.get(k) else {
            return Ok(());
        };
        if let Some(record) = &index.record {
            record.visit(start.out, &start.positions, first, end, emit);
            return Ok(());
        }
        let mut stream = Stream::new(self, merged, &start.positions)?;
        let mut out = start.out;
        let result = self.stream_to(&mut stream, &mut out, first, end, emit);
        merged.engine.count_merged(out - start.out);
        result
    }

    /// Streams output cells from `*out` until `end` (or the last), emitting those from
    /// `first` on.
    fn stream_to(
        &self,
        stream: &mut Stream<'_>,
        out: &mut u64,
        first: u64,
        end: u64,
        emit: &mut dyn FnMut(u64, usize, u64),
    ) -> Result<()> {
        while *out < end {
            let more = stream.next_group(end - *out, &mut |source, cell| {
                if *out >= first && *out < end {
                    emit(*out, source, cell);
                }
                *out += 1;
            })?;
            if !more {
                break;
            }
        }
        Ok(())
    }
}

/// Adds cell `cell` of source `source` to the end of `runs`.
fn push_cell(runs: &mut Vec<Run>, source: usize, cell: u64) {
    match runs.last_mut() {
        Some(r) if r.source == Some(source) && r.cell + r.count == cell => r.count += 1,
        _ => runs.push(Run {
            source: Some(source),
            cell,
            stride: 1,
            count: 1,
        }),
    }
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
struct Stream<'a> {
    merge: &'a SparseMerge,
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
    fn new(merge: &'a SparseMerge, merged: Input<'a>, positions: &[u64]) -> Result<Stream<'a>> {
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
            processed.push(if merge.deletes.is_empty() {
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
            merge,
            merged,
            cursors,
            heap: Vec::new(),
            processed,
            versions: Vec::new(),
            group: Vec::new(),
            reference: Vec::new(),
            reference_ends: Vec::new(),
            reference_head: Vec::new(),
            numeric: merge.order.numeric(),
            head_len: 0,
        };
        if stream.numeric {
            let zero = Key { tile: 0, value: 0 };
            let mut head = Vec::new();
            merge.order.head_into(|_| zero, &mut head);
            stream.head_len = head.len();
        }
        for c in 0..stream.cursors.len() {
            if stream.settle(c)? {
                stream.heap_push(c);
            }
        }
        Ok(stream)
    }

    fn positions(&self) -> Vec<u64> {
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
            if cursor.partial && self.timestamp(c) > self.merge.at {
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
                    .merge
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
            let mut head = Vec::with_capacity(self.head_len);
            for i in 0..cells {
                let key = |d: usize| {
                    keys.get(d)
                        .and_then(|k: &Option<Vec<Key>>| k.as_ref()?.get(i).copied())
                        .unwrap_or(zero)
                };
                self.merge.order.head_into(key, &mut head);
                head.resize(self.head_len, 0);
                heads.extend_from_slice(&head);
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
            .merge
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
        self.merge
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
        if !self.numeric || !self.merge.deletes.is_empty() {
            return 0;
        }
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
    fn next_group(&mut self, cap: u64, emit: &mut impl FnMut(usize, u64)) -> Result<bool> {
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
        if self.merge.dups {
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
        let mut shown = deleted_at == u64::MAX || deleted_at > self.merge.at;
        if shown {
            for d in &self.merge.deletes {
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
                let keep = holds(&d.keep, &self.merge.tested, &value).map_err(
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
    use std::path::Path;

    use super::*;
    use crate::array::OpenOptions;
    use crate::read::merge::Merged;
    use crate::storage::LocalStore;

    /// The merge of the fixture `name` (a folder under tests/fixtures) at `at`, with a
    /// checkpoint every `every` output cells.
    fn open(name: &str, at: Option<u64>, every: u64) -> Merged {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(name);
        let store = Arc::new(LocalStore::open(&path).unwrap());
        let array = Array::open(store, OpenOptions::default()).unwrap();
        let engine = Arc::new(ReadEngine::new(64 << 20));
        let mut merged = Merged::open(engine, &array, at).unwrap();
        match &mut merged.shape {
            super::super::merged::Shape::Sparse(s) => s.every = every,
            _ => panic!("{name} is not sparse"),
        }
        merged
    }

    fn sparse(merged: &Merged) -> &SparseMerge {
        match &merged.shape {
            super::super::merged::Shape::Sparse(s) => s,
            _ => unreachable!(),
        }
    }

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

    /// Reads that stream in steps of any size (resuming, recording checkpoints as they
    /// go) give the runs the counted index gives, and leave behind the very index the
    /// counting pass builds: same count, same checkpoints (a missed one would make every
    /// later random read merge from further back).
    #[test]
    fn streaming_reads_build_the_index_the_counting_pass_builds() {
        let cases = [
            ("features/merge_sparse_overlap", None),
            ("features/merge_sparse_dups", None),
            ("features/merge_deletes_consolidated", None),
            ("features/merge_consolidated_partial", Some(2)),
            ("features/merge_consolidated_partial", None),
            // The Hilbert order: numeric heads, and string dimensions compared keyed.
            ("hilbert/pointcloud_versions", None),
            ("hilbert/hilbert_ints", Some(4)),
            ("hilbert/hilbert_strings", None),
        ];
        for (name, at) in cases {
            for every in [1, 2, 3] {
                let counted = open(name, at, every);
                let cells = counted.cell_count().unwrap();
                assert!(cells > 2, "{name}: {cells} cells");
                let want = sparse(&counted).index(counted.sparse_input()).unwrap();
                for step in [1, 2, 5, 64] {
                    let streamed = open(name, at, every);
                    let mut first = 0;
                    loop {
                        assert!(!streamed.counted() || first >= cells);
                        let got = streamed.runs(first, step).unwrap();
                        let expected = counted.runs(first, step).unwrap();
                        assert_eq!(got, expected, "{name} every {every} step {step} at {first}");
                        if got.is_empty() {
                            break;
                        }
                        first += step;
                    }
                    assert!(streamed.counted(), "{name}: reading to the end counts");
                    let index = sparse(&streamed).index(streamed.sparse_input()).unwrap();
                    assert_eq!(index.cells, want.cells, "{name}");
                    assert_eq!(
                        index.checkpoints, want.checkpoints,
                        "{name} every {every} step {step}"
                    );
                }
            }
        }
    }
}
