//! The pieces of a merged read: the sources (visible fragments), runs of cells from one
//! source, and the block size of the indexes.

use std::sync::Arc;

use crate::array::fragment::{Fragment, FragmentMeta};
use crate::error::{Error, Place, Result};

/// Output cells rendered or indexed together: the var-size index keeps one entry per
/// block (8 bytes per 4096 cells per var field), the sparse merge one checkpoint.
pub const BLOCK: u64 = 4096;

/// A visible fragment.
#[derive(Debug, Clone)]
pub struct Source {
    pub fragment: Arc<Fragment>,
    pub meta: Arc<FragmentMeta>,
    /// Visible only in part: its cells stamped after the timestamp are not (a
    /// consolidated fragment with per-cell timestamps, opened inside its range).
    pub partial: bool,
}

/// Where cells of the output come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Run {
    /// Index into the sources; `None`: fill values.
    pub source: Option<usize>,
    /// The source's first cell, and the step between its cells.
    pub cell: u64,
    pub stride: u64,
    pub count: u64,
}

/// The cells `[first, first + n)` of the output `runs` stand for.
pub(crate) fn trim_runs(runs: Vec<Run>, first: u64, n: u64) -> Vec<Run> {
    let end = first.saturating_add(n);
    let mut at = 0u64;
    let mut out = Vec::new();
    for run in runs {
        let (a, b) = (at, at + run.count);
        at = b;
        let (lo, hi) = (a.max(first), b.min(end));
        if lo >= hi {
            if a >= end {
                break;
            }
            continue;
        }
        let skip = lo - a;
        out.push(Run {
            cell: run.cell + skip * run.stride,
            count: hi - lo,
            ..run
        });
    }
    out
}

/// The byte position of cell `cell` of `per` bytes each: cell numbers come from the
/// fragments' domains and counts (metadata), so a product past 64 bits is bad data, an
/// error naming the fragment, never a wrapped offset.
pub(crate) fn byte_at(cell: u64, per: u64, place: impl Fn() -> Place) -> Result<u64> {
    cell.checked_mul(per).ok_or_else(|| {
        Error::corrupt(
            place(),
            format!("cell {cell} of {per} bytes is past 64 bits"),
        )
    })
}
