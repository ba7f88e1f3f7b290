//! Which fragments TileDB opens at a timestamp, and from when a consolidation's vacuum
//! file hides the fragments it replaced: TileDB's `ArrayDirectory::timestamps_overlap`,
//! `compute_uris_to_vacuum` and `compute_filtered_uris`
//! (`tiledb/sm/array/array_directory.cc`) for an array opened at `(0, T)`.
//!
//! TileDB decides both from names alone. A fragment folder, or a `.vac` file (named
//! after the consolidated fragment it belongs to), is opened at T when its range
//! `[t1, t2]` overlaps `[0, T]`, but what counts as overlapping depends on the array and
//! the name's format version:
//!
//! - in a sparse array, names of format 15 or later (TileDB's
//!   `consolidation_with_timestamps_min_version`): any overlap, so from `t1` on;
//! - otherwise (dense arrays, older names): the whole range, so from `t2` on.
//!
//! A `.vac` file that is open at T hides every fragment it lists that is open at T.
//! So in a sparse array a consolidation hides what it replaced from its first timestamp
//! on, even inside its range: the consolidated fragment alone then supplies those
//! timestamps, its cells stamped up to T (the cells a purge dropped never come back).
//! Whether a fragment opened inside its range shows only part of its cells is the
//! reader's business: those with per-cell timestamps do ([`partly_visible`]), the
//! others show whole.

use crate::format::name::TimestampedName;

/// The first format whose fragments TileDB opens inside their range (in sparse arrays).
pub const OPEN_INSIDE_RANGE_MIN_VERSION: u32 = 15;

/// The first timestamp T at which TileDB, opening the array at `(0, T)`, opens what is
/// named `name` (a fragment folder or a `.vac` file) in a dense or sparse array.
pub fn opens_from(name: &TimestampedName, dense: bool) -> u64 {
    if !dense && name.version >= OPEN_INSIDE_RANGE_MIN_VERSION {
        name.t1
    } else {
        name.t2
    }
}

/// Whether TileDB opens what is named `name` when the array is opened at `(0, at)`.
pub fn is_open_at(name: &TimestampedName, dense: bool, at: u64) -> bool {
    opens_from(name, dense) <= at
}

/// Whether a fragment open at `at` shows only its cells stamped up to `at`: opened
/// inside its range and holding per-cell timestamps (TileDB's
/// `process_partial_timestamps`). One opened inside its range without timestamps
/// shows every cell.
pub fn partly_visible(name: &TimestampedName, has_timestamps: bool, at: u64) -> bool {
    has_timestamps && name.t2 > at
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(t1: u64, t2: u64, version: u32) -> TimestampedName {
        TimestampedName::parse(&format!(
            "__{t1}_{t2}_0123456789abcdef0123456789abcdef_{version}"
        ))
        .unwrap()
    }

    /// Sparse names of format 15 on open from their first timestamp, everything else
    /// from its last: the rule that makes a sparse consolidation's `.vac` hide the
    /// fragments it replaced inside its range (`sparse_purge_unvacuumed`).
    #[test]
    fn sparse_names_from_format_15_open_inside_their_range() {
        let consolidated = name(1, 4, 22);
        assert_eq!(opens_from(&consolidated, false), 1);
        assert!(!is_open_at(&consolidated, false, 0));
        assert!(is_open_at(&consolidated, false, 2));
        // Dense arrays: the whole range, whatever the format.
        assert_eq!(opens_from(&consolidated, true), 4);
        assert!(!is_open_at(&consolidated, true, 3));
        assert!(is_open_at(&consolidated, true, 4));
        // Format 14 wrote per-cell timestamps, but TileDB opens it whole only.
        assert_eq!(opens_from(&name(1, 4, 14), false), 4);
        assert_eq!(opens_from(&name(1, 4, 15), false), 1);
        // A single-timestamp fragment: the same either way.
        assert_eq!(opens_from(&name(3, 3, 22), false), 3);
    }

    #[test]
    fn only_fragments_with_timestamps_opened_inside_their_range_show_part() {
        let consolidated = name(1, 4, 22);
        assert!(partly_visible(&consolidated, true, 2));
        assert!(!partly_visible(&consolidated, true, 4));
        assert!(!partly_visible(&consolidated, false, 2));
    }
}
