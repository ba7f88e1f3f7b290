//! Planning a read: which bytes are kept, being fetched, on disk, or to be fetched.

use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;

use super::disk::ObjectDisk;
use super::inflight::Fetch;
use super::parts::{self};
use super::state::State;
use crate::storage::diskcache::BLOCK;

/// Where a read's bytes come from.
pub(crate) enum Piece {
    /// Kept bytes starting at this offset.
    Kept(u64, Bytes),
    /// A fetch under way (this reader's own, or another's).
    Fetching(Arc<Fetch>),
    /// Bytes the disk cache holds (by its index; checked when read).
    Disk(Range<u64>),
}

/// What a planned read gave.
pub(crate) enum Outcome {
    /// Per range, its pieces in order.
    Read(Vec<Vec<(u64, Bytes)>>),
    /// A response said the object is not the version the read was planned for: its
    /// pieces may mix two versions, so the read is planned again.
    Changed,
}

/// Plans a read of `range` of `full`: kept bytes where there are some, fetches under way
/// (for the same version) where they cover it, blocks of the disk entry (`disk`) that it
/// holds, and new fetches (registered, so other readers wait for them rather than ask
/// again, and pushed to `own`) for the gaps, each cut into parts of at most `largest`
/// bytes.
pub(crate) fn plan(
    state: &mut State,
    full: &str,
    range: Range<u64>,
    largest: u64,
    disk: Option<&ObjectDisk>,
    own: &mut Vec<Arc<Fetch>>,
) -> Vec<Piece> {
    let mut pieces = Vec::new();
    let mut pos = range.start;
    while pos < range.end {
        if let Some((start, bytes)) = state.cache.segment_at(full, pos) {
            pos = start + bytes.len() as u64;
            pieces.push(Piece::Kept(start, bytes));
            continue;
        }
        if let Some(f) = state
            .inflight
            .iter()
            .find(|f| f.serves(full, disk) && f.range.contains(&pos))
        {
            pos = f.range.end;
            pieces.push(Piece::Fetching(f.clone()));
            continue;
        }
        let mut end = gap_end(state, full, pos, range.end);
        if let Some(d) = disk {
            // A run of blocks the entry holds, or up to the next one it holds.
            let held = d.entry.holds(pos / BLOCK);
            let mut b = pos / BLOCK + 1;
            while b * BLOCK < end && d.entry.holds(b) == held {
                b += 1;
            }
            end = end.min(b * BLOCK);
            if held {
                pieces.push(Piece::Disk(pos..end));
                pos = end;
                continue;
            }
        }
        for part in parts::split(pos..end, largest) {
            let f = Fetch::new(full, part, disk);
            state.inflight.push(f.clone());
            own.push(f.clone());
            pieces.push(Piece::Fetching(f));
        }
        pos = end;
    }
    pieces
}

/// Where a gap starting at `pos` ends: at `end`, or earlier where kept bytes or a fetch
/// under way begin.
pub(crate) fn gap_end(state: &State, full: &str, pos: u64, end: u64) -> u64 {
    let kept = state.cache.next_start(full, pos).unwrap_or(u64::MAX);
    let fetching = state
        .inflight
        .iter()
        .filter(|f| f.key == full && f.range.start > pos)
        .map(|f| f.range.start)
        .min()
        .unwrap_or(u64::MAX);
    end.min(kept).min(fetching)
}
