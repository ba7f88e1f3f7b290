//! How a fetch is cut into ranged GETs. A request's bytes stream at the pace of one
//! connection, so a cold tile fetched as several ranges issued together arrives sooner
//! than as one (TileDB reads S3 the same way, in parallel parts): a read asks for its
//! gap in parts of at most [`READ_PART`] (at most [`MAX_IN_FLIGHT`] under way at once),
//! a read-ahead window in parts of at most [`AHEAD_PART`]. Parts are even in size and whole 64 KiB blocks, so the parts of a
//! block-aligned range stay aligned and the disk cache can keep every block of them.

use std::ops::Range;

use crate::storage::diskcache::BLOCK;

/// The largest part of a read: a cold tile of N MiB is ceil(N) GETs, issued together.
pub const READ_PART: u64 = 1 << 20;

/// The largest part of a read-ahead window: pieces are fetched concurrently, and a
/// reader waits for the piece it needs, not the whole window. Over the bench's loopback
/// server (a sequential `cat` of 8 fragments, 4 runs each): 4 MiB pieces 332-373 MB/s,
/// 8 MiB 276-320 (each response streams at its own pace, so more of them in flight keep
/// more of the server busy).
pub const AHEAD_PART: u64 = 4 << 20;

/// The most GETs one read has in flight: a tile of up to this many MiB is fetched all
/// at once; a larger one keeps this many going (a huge tile must not open hundreds of
/// connections at once).
pub const MAX_IN_FLIGHT: usize = 32;

/// `range` in as few parts of at most `largest` bytes (a multiple of [`BLOCK`]) as it
/// takes, in order, of one size (the last one shorter) rounded up to whole blocks.
pub fn split(range: Range<u64>, largest: u64) -> Vec<Range<u64>> {
    let len = range.end.saturating_sub(range.start);
    if len == 0 {
        return Vec::new();
    }
    let largest = largest.max(BLOCK);
    let count = len.div_ceil(largest);
    let part = len.div_ceil(count).next_multiple_of(BLOCK).min(largest);
    let mut out = Vec::with_capacity(count as usize);
    let mut at = range.start;
    while at < range.end {
        let end = range.end.min(at.saturating_add(part));
        out.push(at..end);
        at = end;
    }
    out
}

/// `range` widened to whole blocks, within an object of `size` bytes (its last block
/// may be short): what is fetched for a read when the disk cache keeps the object.
pub fn widen(range: Range<u64>, size: u64) -> Range<u64> {
    let start = range.start / BLOCK * BLOCK;
    let end = range.end.next_multiple_of(BLOCK).min(size).max(range.end);
    start..end
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    #[test]
    fn a_fetch_of_n_mib_is_ceil_n_even_parts_of_whole_blocks() {
        for (len, parts) in [
            (1, 1),
            (4096, 1),
            (MIB, 1),
            (MIB + 1, 2),
            (2 * MIB + 12345, 3),
            (16 * MIB, 16),
            (16 * MIB + 1, 17),
        ] {
            for start in [0, 3 * BLOCK, 12345] {
                let got = split(start..start + len, READ_PART);
                assert_eq!(got.len(), parts, "{len} bytes from {start}: {got:?}");
                assert_eq!(got[0].start, start);
                assert_eq!(got.last().unwrap().end, start + len);
                assert!(got.windows(2).all(|p| p[0].end == p[1].start));
                assert!(got.iter().all(|p| p.end - p.start <= READ_PART));
                // Every part but the last is whole blocks, so aligned parts stay aligned.
                assert!(got[..got.len() - 1]
                    .iter()
                    .all(|p| (p.end - p.start) % BLOCK == 0));
            }
        }
        // Even: 2 MiB and a bit is three parts of about 0.7 MiB, not 1 + 1 + a bit.
        let got = split(0..2 * MIB + 12345, READ_PART);
        assert!(got.iter().all(|p| p.end - p.start > MIB / 2), "{got:?}");
        assert!(split(5..5, READ_PART).is_empty());
        assert_eq!(split(0..10 * MIB, AHEAD_PART).len(), 3);
    }

    #[test]
    fn widened_ranges_cover_whole_blocks_within_the_object() {
        assert_eq!(widen(10..20, 1 << 30), 0..BLOCK);
        assert_eq!(widen(BLOCK..BLOCK + 1, 1 << 30), BLOCK..2 * BLOCK);
        assert_eq!(widen(BLOCK - 1..BLOCK + 1, 1 << 30), 0..2 * BLOCK);
        // The object's last block is short.
        assert_eq!(
            widen(BLOCK + 5..BLOCK + 10, BLOCK + 100),
            BLOCK..BLOCK + 100
        );
        assert_eq!(widen(0..100, 100), 0..100);
    }
}
