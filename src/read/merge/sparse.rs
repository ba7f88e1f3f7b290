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

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use crate::array::generic_tile::decode_generic_tile;
use crate::array::Array;
use crate::error::{Error, Place, Result};
use crate::format::condition::parse_delete_condition;
use crate::format::condition_eval::tested_fields;
use crate::format::schema::ArraySchema;
use crate::lazy::Lazy;
use crate::read::ReadEngine;

use super::order::GlobalOrder;
use super::record::{Picks, Record, Recorder};
use super::runs::{Run, Source, BLOCK};
pub use super::stream::Input;
use super::stream::{Delete, Rules, Stream};

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
    rules: Rules,
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
            rules: Rules {
                order,
                at,
                dups: schema.allows_dups,
                deletes,
                tested,
            },
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

    /// Whether the whole merge's [`Record`] would keep to its budget: one byte a cell
    /// of at most as many cells as the sources hold (up to 256 of them), with room
    /// for the jumps (16 bytes each) of one in 64 of them. An estimate, for choosing
    /// how to go over every cell: a record that turns out over budget is dropped as
    /// ever.
    pub(super) fn record_fits(&self, merged: Input<'_>) -> bool {
        let cells: u64 = merged.sources.iter().map(|s| s.meta.cell_count()).sum();
        merged.sources.len() <= 1 << 8
            && cells.saturating_add(cells / 4) <= record_budget(merged.engine) as u64
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

    /// The output cells `[first, first + n)` as one source index a cell, where the
    /// merge's record has them that simply ([`Record::picks`]); `None` otherwise (no
    /// record yet, or cells dropped inside the range): then [`SparseMerge::runs`].
    pub(super) fn picks(&self, first: u64, n: u64) -> Option<Picks> {
        let index = self.index.get()?.ok()?;
        let record = index.record.as_ref()?;
        let end = first.saturating_add(n).min(index.cells);
        let k = index
            .checkpoints
            .partition_point(|c| c.out <= first)
            .saturating_sub(1);
        let start = index.checkpoints.get(k)?;
        record.picks(start.out, &start.positions, first, end)
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
        let mut stream = Stream::new(&self.rules, merged, &start.positions)?;
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
        let mut stream = Stream::new(&self.rules, merged, &start.positions)?;
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
