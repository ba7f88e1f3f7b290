//! Gathering: the bytes of a fixed-size field's output cells copied out of the
//! fragments' raw files, run by run ([`Run`]). How the sources are read is chosen by the
//! runs' shape, so that each decoded chunk is read once and fresh memory is not spent:
//!
//! - long runs (a 1-D dense state, a fragment's own order): each run read straight
//!   into the output, chunks covered whole decoded right there;
//! - many short runs of each source in increasing order (a sparse merge interleaving
//!   fragments cell by cell): each source's span read once ([`short_run_spans`]);
//! - runs that continue each other in their source but not in the output (a dense
//!   state's rows crossing tiles: row `r` of tile 0, of tile 1, ..., then row `r + 1`
//!   of tile 0, which follows row `r` in the fragment): each such cluster read once
//!   ([`contiguous_clusters`]). Read run by run, every chunk would be cut by its rows
//!   and so decoded into the cache, filling it with chunks a sequential reader never
//!   comes back for; read by cluster, the chunks a read covers are decoded straight
//!   into a reused buffer and the cache keeps only those cut at the read's edges.

use std::cell::RefCell;

use super::merged::{Merged, MergedField};
use super::record::Picks;
use super::runs::{byte_at, Run, BLOCK};
use crate::error::{Error, Place, Result};
use crate::read::endian::ByteOrder;
use crate::read::RawFile;

/// A scratch buffer larger than this is dropped after use rather than kept per thread.
const SCRATCH_KEEP: usize = 8 << 20;

thread_local! {
    /// Cluster bytes on their way to the output: reused, so a stream of reads does not
    /// fault in fresh memory on every read.
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Per source, the span of its cells that `runs` use, when the runs are many and short
/// and each source's cells come in increasing order with few gaps (as a sparse merge's
/// do): then reading each span once beats a lookup per run. `None` otherwise (dense
/// runs are long, or strided).
fn short_run_spans(runs: &[Run], sources: usize) -> Option<Vec<Option<(u64, u64)>>> {
    if runs.len() < 4 * sources.max(1) || runs.iter().any(|r| r.stride > 1) {
        return None;
    }
    let mut spans: Vec<Option<(u64, u64)>> = vec![None; sources];
    let mut used = vec![0u64; sources];
    let mut cells = 0u64;
    for run in runs {
        cells += run.count;
        let Some(s) = run.source else { continue };
        let span = spans.get_mut(s)?;
        let end = run.cell.checked_add(run.count)?;
        *span = match *span {
            None => Some((run.cell, end)),
            Some((lo, hi)) if run.cell >= hi => Some((lo, end)),
            Some(_) => return None, // not increasing: leave it to the general path
        };
        used[s] += run.count;
    }
    if cells / (runs.len() as u64) > 64 {
        return None;
    }
    // Cells of a span that no run uses (versions replaced or deleted) are copied for
    // nothing, from decoded tiles: a cell's copy costs about a nanosecond, a lookup per
    // run a hundred, so up to 64 unused cells per used one still pay.
    let wasteful = spans
        .iter()
        .zip(&used)
        .any(|(span, &used)| span.is_some_and(|(lo, hi)| hi - lo > 64 * used + BLOCK));
    (!wasteful).then_some(spans)
}

/// Cells `[first, end)` of one source, which several runs use one after the other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Cluster {
    source: usize,
    first: u64,
    end: u64,
}

/// The clusters of a read, and for each run (by index) the cluster holding its cells
/// (`None` for fill and empty runs).
#[derive(Debug, PartialEq, Eq)]
struct Clusters {
    clusters: Vec<Cluster>,
    of_run: Vec<Option<usize>>,
}

/// The runs of each source grouped into clusters of cells that follow each other in
/// the source, when that groups at least two runs per cluster on average (a dense
/// state's rows crossing tiles); `None` otherwise (runs already as long as they can be,
/// or strided), for the other paths.
fn contiguous_clusters(runs: &[Run]) -> Option<Clusters> {
    if runs.iter().any(|r| r.stride != 1 && r.count > 1) {
        return None;
    }
    let mut order: Vec<usize> = (0..runs.len())
        .filter(|&i| runs[i].source.is_some() && runs[i].count > 0)
        .collect();
    order.sort_unstable_by_key(|&i| (runs[i].source, runs[i].cell));
    let mut clusters: Vec<Cluster> = Vec::new();
    let mut of_run = vec![None; runs.len()];
    for &i in &order {
        let run = &runs[i];
        let source = run.source?;
        let end = run.cell.checked_add(run.count)?;
        match clusters.last_mut() {
            Some(c) if c.source == source && c.end == run.cell => c.end = end,
            _ => clusters.push(Cluster {
                source,
                first: run.cell,
                end,
            }),
        }
        of_run[i] = Some(clusters.len() - 1);
    }
    (order.len() >= 2 * clusters.len()).then_some(Clusters { clusters, of_run })
}

/// What one gather copies: the values of a fixed-size field, or its validity bytes;
/// how many bytes a cell has there; the byte order the values leave in.
#[derive(Clone, Copy)]
struct Gather<'a> {
    field: &'a MergedField,
    validity: bool,
    per: usize,
    order: ByteOrder,
}

impl Gather<'_> {
    fn raw(&self) -> RawFile {
        if self.validity {
            RawFile::Validity
        } else {
            RawFile::Values
        }
    }

    /// Appends `n` cells of what no fragment wrote: the field's fill value, or for
    /// validity whether that fill is valid.
    fn push_fill(&self, n: u64, out: &mut Vec<u8>) {
        let (field, per) = (self.field, self.per);
        if self.validity {
            out.resize(out.len() + n as usize, u8::from(field.fill_valid));
            return;
        }
        for _ in 0..n {
            out.extend_from_slice(&field.fill[..per.min(field.fill.len())]);
            // A fill shorter than a cell (never, for schemas TileDB writes) is padded
            // so sizes stay exact.
            out.resize(out.len() + per.saturating_sub(field.fill.len()), 0);
        }
    }
}

impl Merged {
    /// What a gather of field `f`'s values (or validity bytes) copies, in byte order
    /// `order`.
    fn gather_of(&self, f: usize, validity: bool, order: ByteOrder) -> Result<Gather<'_>> {
        let field = self.field(f)?;
        let per = if validity {
            1
        } else {
            field.cell_size() as usize
        };
        Ok(Gather {
            field,
            validity,
            per,
            order,
        })
    }

    /// Appends the values (or validity bytes) of the cells of `runs` of fixed-size
    /// field `f`, each run put in byte order `order` once copied.
    pub(super) fn gather_runs(
        &self,
        f: usize,
        validity: bool,
        runs: Vec<Run>,
        order: ByteOrder,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        let g = self.gather_of(f, validity, order)?;
        if let Some(spans) = short_run_spans(&runs, self.sources.len()) {
            return self.gather_spans(g, &runs, spans, out);
        }
        if let Some(clusters) = contiguous_clusters(&runs) {
            return self.gather_clusters(g, &runs, &clusters, out);
        }
        for run in runs {
            let before = out.len();
            self.gather_run(g, run, out)?;
            order.apply(&mut out[before..]);
        }
        Ok(())
    }

    /// Appends the cells of one run, read from its source on its own.
    fn gather_run(&self, g: Gather<'_>, run: Run, out: &mut Vec<u8>) -> Result<()> {
        let (field, validity, per) = (g.field, g.validity, g.per);
        let source_field = run.source.and_then(|s| field.sources[s].map(|i| (s, i)));
        let Some((s, i)) = source_field else {
            g.push_fill(run.count, out);
            return Ok(());
        };
        let source = &self.sources[s];
        let reader = self.engine.field(&source.fragment, &source.meta, i)?;
        if validity && !reader.field.nullable {
            out.resize(out.len() + run.count as usize, 1);
            return Ok(());
        }
        let raw = g.raw();
        let per = per as u64;
        let place = || source.fragment.place();
        if run.stride == 1 {
            reader.read_into(
                raw,
                byte_at(run.cell, per, place)?,
                byte_at(run.count, per, place)?,
                out,
            )?;
        } else {
            let span = run
                .count
                .saturating_sub(1)
                .checked_mul(run.stride)
                .and_then(|s| s.checked_add(1))
                .ok_or_else(|| Error::corrupt(place(), "a run of cells past 64 bits"))?;
            let bytes = reader.read(
                raw,
                byte_at(run.cell, per, place)?,
                byte_at(span, per, place)?,
            )?;
            for k in 0..run.count {
                // Within `span`, whose bytes were counted above.
                let at = (k * run.stride * per) as usize;
                out.extend_from_slice(bytes.get(at..at + per as usize).ok_or_else(|| {
                    Error::corrupt(source.fragment.place(), "a tile is shorter than its cells")
                })?);
            }
        }
        Ok(())
    }

    /// [`Merged::gather_runs`] for runs grouped by [`contiguous_clusters`]: each
    /// cluster's bytes are read once into a scratch buffer, then every run copies its
    /// cells from there, in output order.
    fn gather_clusters(
        &self,
        g: Gather<'_>,
        runs: &[Run],
        plan: &Clusters,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        let (field, validity, per, order, raw) = (g.field, g.validity, g.per, g.order, g.raw());
        let mut scratch = SCRATCH.with_borrow_mut(std::mem::take);
        scratch.clear();
        // Per cluster: where its bytes start in `scratch`, or `None` when there is
        // nothing to read (fill: the fragment predates the field; validity of a field
        // the fragment stores as not nullable: all valid).
        let mut at: Vec<Option<usize>> = Vec::with_capacity(plan.clusters.len());
        let result = (|| {
            for c in &plan.clusters {
                let Some(i) = field.sources[c.source] else {
                    at.push(None);
                    continue;
                };
                let source = &self.sources[c.source];
                let reader = self.engine.field(&source.fragment, &source.meta, i)?;
                if validity && !reader.field.nullable {
                    at.push(None);
                    continue;
                }
                let place = || source.fragment.place();
                let (from, len) = (
                    byte_at(c.first, per as u64, place)?,
                    byte_at(c.end - c.first, per as u64, place)?,
                );
                let start = scratch.len();
                reader.read_into(raw, from, len, &mut scratch)?;
                if (scratch.len() - start) as u64 != len {
                    return Err(Error::corrupt(
                        place(),
                        format!(
                            "{len} bytes from byte {from} read as {}",
                            scratch.len() - start
                        ),
                    ));
                }
                at.push(Some(start));
            }
            for (run, cluster) in runs.iter().zip(&plan.of_run) {
                let before = out.len();
                let n = run.count as usize * per;
                match cluster.map(|c| (c, at[c])) {
                    Some((c, Some(start))) => {
                        // Within the cluster, whose bytes were counted as read above.
                        let from = start + (run.cell - plan.clusters[c].first) as usize * per;
                        out.extend_from_slice(&scratch[from..from + n]);
                    }
                    Some((c, None))
                        if validity && field.sources[plan.clusters[c].source].is_some() =>
                    {
                        out.resize(out.len() + n, 1)
                    }
                    _ => g.push_fill(run.count, out),
                }
                order.apply(&mut out[before..]);
            }
            Ok(())
        })();
        if scratch.capacity() <= SCRATCH_KEEP {
            SCRATCH.with_borrow_mut(|s| *s = scratch);
        }
        result
    }

    /// [`Merged::gather_runs`] for many short runs (a sparse merge interleaves
    /// fragments cell by cell): each source's span of cells is read once, then the runs
    /// copy from it, instead of one reader lookup and one cache lookup per run.
    fn gather_spans(
        &self,
        g: Gather<'_>,
        runs: &[Run],
        spans: Vec<Option<(u64, u64)>>,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        let (field, validity, per, order, raw) = (g.field, g.validity, g.per, g.order, g.raw());
        // Per source: its first cell read and the bytes of its span (`None`: all fill,
        // or all valid).
        let mut read: Vec<Option<(u64, Vec<u8>)>> = Vec::with_capacity(spans.len());
        for (s, span) in spans.iter().enumerate() {
            let (Some((lo, hi)), Some(i)) = (*span, field.sources.get(s).copied().flatten()) else {
                read.push(None);
                continue;
            };
            let source = &self.sources[s];
            let reader = self.engine.field(&source.fragment, &source.meta, i)?;
            if validity && !reader.field.nullable {
                read.push(None);
                continue;
            }
            let place = || source.fragment.place();
            let per = per as u64;
            let bytes = reader.read(
                raw,
                byte_at(lo, per, place)?,
                byte_at(hi.saturating_sub(lo), per, place)?,
            )?;
            read.push(Some((lo, bytes)));
        }
        // Whole values each run: put in order once, at the end.
        let start = out.len();
        out.reserve(runs.iter().map(|r| r.count as usize * per).sum());
        for run in runs {
            let n = run.count as usize;
            match run.source.and_then(|s| read.get(s)?.as_ref()) {
                Some((lo, bytes)) => {
                    let at = (run.cell - lo) as usize * per;
                    out.extend_from_slice(bytes.get(at..at + n * per).ok_or_else(|| {
                        Error::corrupt(Place::file("merged read"), "a run outside its span")
                    })?);
                }
                None if validity => {
                    let nullable_source = run
                        .source
                        .and_then(|s| field.sources.get(s).copied().flatten())
                        .is_some();
                    let valid = nullable_source || field.fill_valid;
                    out.resize(out.len() + n, valid as u8);
                }
                None => g.push_fill(run.count, out),
            }
        }
        order.apply(&mut out[start..]);
        Ok(())
    }
}

impl Merged {
    /// [`Merged::gather_runs`] for the cells of a sparse range given as one source a
    /// cell ([`Picks`]): each source's cells read once, then copied out cell by cell in
    /// a loop with no run to build or look up (a merge interleaving fragments cell by
    /// cell makes a run a cell).
    pub(super) fn gather_picks(
        &self,
        f: usize,
        validity: bool,
        picks: &Picks,
        order: ByteOrder,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        let g = self.gather_of(f, validity, order)?;
        let per = g.per;
        let counts = count_picks(&picks.sources);
        if counts.len() > picks.starts.len() {
            return Err(Error::corrupt(
                Place::file("merged read"),
                "a cell of no source",
            ));
        }
        // Per source: its cells' bytes and the step between them (0: one cell of fill,
        // or of validity, repeated).
        let mut cells: Vec<(Vec<u8>, usize)> = Vec::with_capacity(counts.len());
        for (s, &start) in picks.starts.iter().enumerate() {
            let count = counts.get(s).copied().unwrap_or(0);
            cells.push(self.source_cells(g, s, start, count)?);
        }
        let base = out.len();
        out.resize(base + picks.sources.len() * per, 0);
        let dst = &mut out[base..];
        let copied = match per {
            1 => interleave(&picks.sources, &cells, 1, dst),
            2 => interleave(&picks.sources, &cells, 2, dst),
            4 => interleave(&picks.sources, &cells, 4, dst),
            8 => interleave(&picks.sources, &cells, 8, dst),
            _ => interleave(&picks.sources, &cells, per, dst),
        };
        if !copied {
            out.truncate(base);
            return Err(Error::corrupt(
                Place::file("merged read"),
                "a source has fewer cells than the merge took from it",
            ));
        }
        order.apply(&mut out[base..]);
        Ok(())
    }

    /// `count` cells of source `s` from cell `start` on, for [`Merged::gather_picks`].
    fn source_cells(
        &self,
        g: Gather<'_>,
        s: usize,
        start: u64,
        count: u64,
    ) -> Result<(Vec<u8>, usize)> {
        let one = |g: &Gather<'_>, valid: Option<bool>| {
            let mut cell = Vec::with_capacity(g.per);
            match valid {
                Some(valid) => cell.push(valid as u8),
                None => g.push_fill(1, &mut cell),
            }
            (cell, 0)
        };
        let Some(i) = g.field.sources.get(s).copied().flatten() else {
            // The fragment predates the field: fill, or whether the fill is valid.
            return Ok(one(&g, g.validity.then_some(g.field.fill_valid)));
        };
        if count == 0 {
            return Ok((Vec::new(), g.per));
        }
        let source = &self.sources[s];
        let reader = self.engine.field(&source.fragment, &source.meta, i)?;
        if g.validity && !reader.field.nullable {
            return Ok(one(&g, Some(true)));
        }
        let place = || source.fragment.place();
        let per = g.per as u64;
        let bytes = reader.read(
            g.raw(),
            byte_at(start, per, place)?,
            byte_at(count, per, place)?,
        )?;
        Ok((bytes, g.per))
    }
}

/// How many cells each source gives (up to the highest source named). Counted in four
/// lanes: cells from the same source one after the other would otherwise wait on each
/// other's increment.
pub(super) fn count_picks(sources: &[u8]) -> Vec<u64> {
    let mut lanes = [[0u64; 256]; 4];
    let mut quads = sources.chunks_exact(4);
    for q in &mut quads {
        for (lane, &s) in lanes.iter_mut().zip(q) {
            lane[s as usize] += 1;
        }
    }
    for &s in quads.remainder() {
        lanes[0][s as usize] += 1;
    }
    let counts: Vec<u64> = (0..256).map(|s| lanes.iter().map(|l| l[s]).sum()).collect();
    let used = counts.iter().rposition(|&c| c > 0).map_or(0, |s| s + 1);
    counts[..used].to_vec()
}

/// Copies each output cell from its source's next cell (`per` bytes a cell); `false`
/// if a source ran out. Inlined into each `per` [`Merged::gather_picks`] names, so
/// the copies of the common sizes are single moves.
#[inline(always)]
fn interleave(sources: &[u8], cells: &[(Vec<u8>, usize)], per: usize, dst: &mut [u8]) -> bool {
    let mut at = vec![0usize; cells.len()];
    for (d, &s) in dst.chunks_exact_mut(per).zip(sources) {
        let s = s as usize;
        let (Some((bytes, step)), Some(a)) = (cells.get(s), at.get_mut(s)) else {
            return false;
        };
        let Some(cell) = bytes.get(*a..*a + per) else {
            return false;
        };
        d.copy_from_slice(cell);
        *a += step;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(source: usize, cell: u64, count: u64) -> Run {
        Run {
            source: Some(source),
            cell,
            stride: 1,
            count,
        }
    }

    fn fill(count: u64) -> Run {
        Run {
            source: None,
            cell: 0,
            stride: 1,
            count,
        }
    }

    /// Two rows of a dense state across two 4 x 4 tiles of one fragment, then a fill
    /// run: each tile's two rows follow each other in the fragment, so they make one
    /// cluster each, whatever the output order.
    #[test]
    fn rows_crossing_tiles_cluster_per_tile() {
        let runs = [
            run(0, 0, 4),
            run(0, 16, 4),
            run(0, 4, 4),
            run(0, 20, 4),
            fill(3),
        ];
        let plan = contiguous_clusters(&runs).expect("clusters");
        assert_eq!(
            plan.clusters,
            [
                Cluster {
                    source: 0,
                    first: 0,
                    end: 8
                },
                Cluster {
                    source: 0,
                    first: 16,
                    end: 24
                }
            ]
        );
        assert_eq!(plan.of_run, [Some(0), Some(1), Some(0), Some(1), None]);
    }

    /// Runs that do not continue each other (a 1-D state's, already whole), or in other
    /// sources, or strided, are left to the other paths.
    #[test]
    fn runs_that_do_not_continue_each_other_are_not_clustered() {
        assert_eq!(
            contiguous_clusters(&[run(0, 0, 100), run(1, 100, 50)]),
            None
        );
        // Adjacent cells, but of two sources.
        assert_eq!(contiguous_clusters(&[run(0, 0, 4), run(1, 4, 4)]), None);
        let strided = Run {
            stride: 8,
            ..run(0, 4, 4)
        };
        assert_eq!(contiguous_clusters(&[run(0, 0, 4), strided]), None);
        // One run in three continues another: not worth a scratch copy.
        assert_eq!(
            contiguous_clusters(&[run(0, 0, 4), run(0, 4, 4), run(0, 20, 4), run(0, 40, 4)]),
            None
        );
    }

    #[test]
    fn picks_are_counted_and_interleaved_per_source() {
        let sources = [0u8, 2, 0, 0, 2, 0, 2];
        assert_eq!(count_picks(&sources), vec![4, 0, 3]);
        assert_eq!(count_picks(&[]), Vec::<u64>::new());
        // Source 0's cells, source 1 a repeated fill cell, source 2's cells: 2 bytes each.
        let cells = vec![
            (vec![0, 0, 1, 1, 2, 2, 3, 3], 2),
            (vec![9, 9], 0),
            (vec![7, 0, 8, 0, 9, 0], 2),
        ];
        let mut dst = vec![0u8; 14];
        assert!(interleave(&[0, 2, 1, 0, 2, 1, 2], &cells, 2, &mut dst));
        assert_eq!(dst, [0, 0, 7, 0, 9, 9, 1, 1, 8, 0, 9, 9, 9, 0]);
        // A source with fewer cells than the picks take from it.
        assert!(!interleave(&[2, 2, 2, 2], &cells, 2, &mut [0u8; 8]));
    }
}
