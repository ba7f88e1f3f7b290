//! What a whole sparse merge pass saw, kept so that later reads of the counted state
//! need no merge: per output cell the source it comes from and, where that source's
//! cell is not the one after the last it gave (the merge dropped cells between:
//! older versions, deleted cells), that cell.
//!
//! A merge costs tens of nanoseconds a cell; its record is one to four bytes a cell
//! (the source's index) and replays at a few nanoseconds a cell. Without it, every
//! read of a counted state merges its range again from the nearest checkpoint: a table
//! read column by column merges the state once per column. A record larger than its
//! budget (a share of the cache size) is not kept, and reads merge as before.

/// The sources of the output cells, in the narrowest integer that numbers them all.
enum Sources {
    U8(Vec<u8>),
    U16(Vec<u16>),
    U32(Vec<u32>),
}

impl Sources {
    fn new(sources: usize) -> Sources {
        if sources <= 1 << 8 {
            Sources::U8(Vec::new())
        } else if sources <= 1 << 16 {
            Sources::U16(Vec::new())
        } else {
            Sources::U32(Vec::new())
        }
    }

    fn push(&mut self, s: usize) {
        // `Sources::new` chose a type every source index fits.
        match self {
            Sources::U8(v) => v.push(s as u8),
            Sources::U16(v) => v.push(s as u16),
            Sources::U32(v) => v.push(s as u32),
        }
    }

    fn get(&self, i: usize) -> Option<usize> {
        match self {
            Sources::U8(v) => v.get(i).map(|&s| s as usize),
            Sources::U16(v) => v.get(i).map(|&s| s as usize),
            Sources::U32(v) => v.get(i).map(|&s| s as usize),
        }
    }

    fn len(&self) -> usize {
        match self {
            Sources::U8(v) => v.len(),
            Sources::U16(v) => v.len(),
            Sources::U32(v) => v.len(),
        }
    }

    fn bytes(&self) -> usize {
        match self {
            Sources::U8(v) => v.len(),
            Sources::U16(v) => v.len() * 2,
            Sources::U32(v) => v.len() * 4,
        }
    }

    fn shrink(&mut self) {
        match self {
            Sources::U8(v) => v.shrink_to_fit(),
            Sources::U16(v) => v.shrink_to_fit(),
            Sources::U32(v) => v.shrink_to_fit(),
        }
    }
}

/// A merge's record, from output cell 0 to its last.
pub(super) struct Record {
    sources: Sources,
    /// (output cell, source cell) where the source cell is not the one after the last
    /// that source gave, by output cell.
    jumps: Vec<(u64, u64)>,
}

impl Record {
    /// Bytes it holds.
    pub fn bytes(&self) -> usize {
        self.sources.bytes() + self.jumps.len() * 16
    }

    /// Calls `emit(out, source, cell)` for each output cell of `[first, end)`,
    /// replaying from the checkpoint at output cell `start` where the sources were at
    /// `positions` (the merge's cursors: each source's next cell is at or after its
    /// position, and is exactly it unless a jump says otherwise).
    pub fn visit(
        &self,
        start: u64,
        positions: &[u64],
        first: u64,
        end: u64,
        emit: &mut dyn FnMut(u64, usize, u64),
    ) {
        let mut next = positions.to_vec();
        let end = end.min(self.sources.len() as u64);
        let mut j = self.jumps.partition_point(|&(out, _)| out < start);
        for out in start..end {
            let Some(s) = self.sources.get(out as usize) else {
                return;
            };
            let cell = match self.jumps.get(j) {
                Some(&(at, cell)) if at == out => {
                    j += 1;
                    cell
                }
                _ => next.get(s).copied().unwrap_or(0),
            };
            if let Some(n) = next.get_mut(s) {
                *n = cell + 1;
            }
            if out >= first {
                emit(out, s, cell);
            }
        }
    }
}

/// The output cells of a range as the sources' indexes, one byte a cell, with where
/// each source's first cell of the range is: enough to gather a fixed-size field
/// without a run per cell, when the range drops no cell of any source (no jump).
#[derive(Debug, PartialEq, Eq)]
pub struct Picks {
    /// Per output cell, its source.
    pub sources: Vec<u8>,
    /// Per source, the cell the range's first cell from it is.
    pub starts: Vec<u64>,
}

impl Record {
    /// The picks of output cells `[first, end)`, replayed from the checkpoint at
    /// `start` where the sources were at `positions` (as [`Record::visit`]); `None`
    /// where a range is not that simple: a jump inside it, or more than 256 sources.
    pub fn picks(&self, start: u64, positions: &[u64], first: u64, end: u64) -> Option<Picks> {
        let Sources::U8(sources) = &self.sources else {
            return None;
        };
        let end = end.min(sources.len() as u64);
        let first = first.min(end);
        if start > first {
            return None;
        }
        let mut next = positions.to_vec();
        let j = self.jumps.partition_point(|&(out, _)| out < start);
        let inside = self.jumps.partition_point(|&(out, _)| out < end);
        // Jumps before `first` set where their source is; one inside the range ends it.
        let mut jumps = self.jumps[j..inside].iter().peekable();
        for out in start..first {
            let s = sources[out as usize] as usize;
            let cell = match jumps.next_if(|&&(at, _)| at == out) {
                Some(&(_, cell)) => cell,
                None => *next.get(s)?,
            };
            *next.get_mut(s)? = cell + 1;
        }
        if jumps.next().is_some() {
            return None;
        }
        Some(Picks {
            sources: sources[first as usize..end as usize].to_vec(),
            starts: next,
        })
    }
}

/// A record being made by a pass from output cell 0, until it would pass its budget.
pub(super) struct Recorder {
    record: Record,
    /// Per source, the cell after the last it gave.
    next: Vec<u64>,
    budget: usize,
    over: bool,
}

impl Recorder {
    pub fn new(sources: usize, budget: usize) -> Recorder {
        Recorder {
            record: Record {
                sources: Sources::new(sources),
                jumps: Vec::new(),
            },
            next: vec![0; sources],
            budget,
            over: false,
        }
    }

    /// Output cell `out` (the one after the last pushed) comes from `cell` of `source`.
    pub fn push(&mut self, out: u64, source: usize, cell: u64) {
        if self.over {
            return;
        }
        let Some(next) = self.next.get_mut(source) else {
            self.over = true;
            return;
        };
        if out != self.record.sources.len() as u64 {
            self.over = true;
            return;
        }
        if cell != *next {
            self.record.jumps.push((out, cell));
        }
        *next = cell + 1;
        self.record.sources.push(source);
        if self.record.bytes() > self.budget {
            self.over = true;
            self.record = Record {
                sources: Sources::new(0),
                jumps: Vec::new(),
            };
        }
    }

    /// The record of a pass that reached the last cell, if it kept within its budget.
    pub fn finish(mut self) -> Option<Record> {
        if self.over {
            return None;
        }
        self.record.sources.shrink();
        self.record.jumps.shrink_to_fit();
        Some(self.record)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A merge of two sources where source 1 drops its cells 1 and 2 (older versions):
    /// replayed from any checkpoint, the same cells come out.
    #[test]
    fn replays_from_any_checkpoint() {
        let emitted = [(0, 0), (1, 0), (0, 1), (1, 3), (1, 4), (0, 2), (1, 6)];
        let mut r = Recorder::new(2, 1 << 10);
        for (out, &(s, cell)) in emitted.iter().enumerate() {
            r.push(out as u64, s, cell);
        }
        let record = r.finish().unwrap();
        assert_eq!(record.jumps, vec![(3, 3), (6, 6)]);
        // Checkpoints: the cursors' positions at output cells 0, 3 and 6 (source 1's
        // cursor already past the cells it dropped, or not yet).
        for (start, positions) in [
            (0, vec![0, 0]),
            (3, vec![2, 1]),
            (3, vec![2, 3]),
            (6, vec![3, 5]),
        ] {
            let mut got = Vec::new();
            record.visit(start, &positions, start, 7, &mut |out, s, cell| {
                got.push((out, s, cell))
            });
            let want: Vec<_> = emitted
                .iter()
                .enumerate()
                .skip(start as usize)
                .map(|(o, &(s, c))| (o as u64, s, c))
                .collect();
            assert_eq!(got, want, "from {start} at {positions:?}");
        }
    }

    #[test]
    fn a_record_over_its_budget_is_not_kept() {
        let mut r = Recorder::new(2, 4);
        for out in 0..5 {
            r.push(out, 0, out);
        }
        assert!(r.finish().is_none());
        let mut r = Recorder::new(2, 4);
        for out in 0..4 {
            r.push(out, 0, out);
        }
        assert_eq!(r.finish().unwrap().bytes(), 4);
    }

    #[test]
    fn more_than_256_sources_take_two_bytes_a_cell() {
        let mut r = Recorder::new(300, 1 << 10);
        r.push(0, 299, 0);
        let record = r.finish().unwrap();
        assert_eq!(record.bytes(), 2);
        let mut got = Vec::new();
        record.visit(0, &vec![0; 300], 0, 1, &mut |o, s, c| got.push((o, s, c)));
        assert_eq!(got, vec![(0, 299, 0)]);
    }

    #[test]
    fn picks_stop_at_jumps() {
        let emitted = [(0, 0), (1, 0), (0, 1), (1, 3), (1, 4), (0, 2), (1, 6)];
        let mut r = Recorder::new(2, 1 << 10);
        for (out, &(s, cell)) in emitted.iter().enumerate() {
            r.push(out as u64, s, cell);
        }
        let record = r.finish().unwrap();
        // Cells 4 and 5 follow what came before them (the jump at 3 is before).
        assert_eq!(
            record.picks(3, &[2, 1], 4, 6),
            Some(Picks {
                sources: vec![1, 0],
                starts: vec![2, 4]
            })
        );
        assert_eq!(
            record.picks(0, &[0, 0], 0, 3),
            Some(Picks {
                sources: vec![0, 1, 0],
                starts: vec![0, 0]
            })
        );
        // A jump inside the range: not simple.
        assert_eq!(record.picks(0, &[0, 0], 2, 5), None);
        assert_eq!(record.picks(3, &[2, 1], 3, 5), None);
    }
}
