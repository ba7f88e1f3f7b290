//! Where each group of a sparse state's output cells comes from: per source the first
//! and last of its cells the group takes (a merge takes each source's cells in order,
//! so the rest lie between). A table's row-group statistics are the bounds of the
//! source tiles of those spans.
//!
//! A state whose fragments interleave has a run a cell, so this looks at cells, not
//! runs: from the merge's record at a byte a cell where the whole merge fits one, else
//! in the merge pass itself, which then also counts the cells.

use super::gather::count_picks;
use super::merged::{Merged, Shape};
use crate::error::Result;

/// Per source a group takes cells from: `(source, first cell, last cell)`.
pub type Spans = Vec<(usize, u64, u64)>;

impl Merged {
    /// The spans of each group of `rows` output cells, from cell 0 to the last; one
    /// merge pass at most.
    pub fn group_spans(&self, rows: u64) -> Result<Vec<Spans>> {
        let rows = rows.max(1);
        if let Shape::Sparse(s) = &self.shape {
            if s.counted() || s.record_fits(self.sparse_input()) {
                let cells = self.cell_count()?;
                return (0..cells.div_ceil(rows))
                    .map(|g| self.spans(g * rows, rows))
                    .collect();
            }
        }
        let mut groups: Vec<Spans> = Vec::new();
        // Per source: the group it was last seen in, and its entry there.
        let mut seen: Vec<(usize, usize)> = vec![(usize::MAX, 0); self.sources.len()];
        // The group cell `out` is in starts a new one at `next_group` (cells come in
        // order: no division a cell).
        let mut next_group = 0u64;
        self.visit(0, u64::MAX, &mut |out, source, cell| {
            while out >= next_group {
                groups.push(Vec::new());
                next_group += rows;
            }
            let g = groups.len() - 1;
            widen(&mut groups[g], seen.get_mut(source), g, source, cell);
        })?;
        Ok(groups)
    }

    /// The spans of output cells `[first, first + n)`.
    fn spans(&self, first: u64, n: u64) -> Result<Spans> {
        if let Shape::Sparse(s) = &self.shape {
            if let Some(picks) = s.picks(first, n) {
                let counts = count_picks(&picks.sources);
                return Ok(counts
                    .iter()
                    .zip(&picks.starts)
                    .enumerate()
                    .filter(|(_, (&count, _))| count > 0)
                    .map(|(s, (&count, &start))| (s, start, start + count - 1))
                    .collect());
            }
        }
        let mut spans = Spans::new();
        let mut seen: Vec<(usize, usize)> = vec![(usize::MAX, 0); self.sources.len()];
        self.visit(first, n, &mut |_, source, cell| {
            widen(&mut spans, seen.get_mut(source), 0, source, cell)
        })?;
        Ok(spans)
    }
}

/// Adds `cell` of `source` to the spans of group `g`; `seen` is the source's (group,
/// entry) of its last cell.
fn widen(spans: &mut Spans, seen: Option<&mut (usize, usize)>, g: usize, source: usize, cell: u64) {
    match seen {
        Some((at, i)) if *at == g => {
            let (_, lo, hi) = &mut spans[*i];
            (*lo, *hi) = ((*lo).min(cell), (*hi).max(cell));
        }
        Some(entry) => {
            *entry = (g, spans.len());
            spans.push((source, cell, cell));
        }
        None => {}
    }
}
