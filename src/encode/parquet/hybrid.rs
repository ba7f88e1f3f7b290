//! Parquet's RLE/bit-packed hybrid encoding (levels, dictionary indices) and its plain
//! bit packing (booleans), write side. Only bit-packed runs are written, never RLE
//! runs: their length is a function of the number of values and the bit width alone,
//! never of the values, which is what lets a layout promise a page's size before it
//! has seen a cell.

/// Groups of 8 values per run at most: a run's value count (groups × 8) stays far
/// below what any reader keeps in an `i32`.
const MAX_GROUPS: u64 = 1 << 20;

fn varint_len(mut v: u64) -> u64 {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

fn varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// The bits a value up to `max` needs (at least 1: some readers mishandle width 0).
pub fn width(max: u64) -> u8 {
    (64 - max.leading_zeros()).max(1) as u8
}

/// Bytes of the hybrid encoding of `count` values of `width` bits, as [`encode`]
/// writes it (without the 4-byte length a v1 page puts before levels). Saturates
/// rather than wraps: a caller checks the result against `i32` anyway.
pub fn len(count: u64, width: u8) -> u64 {
    let groups = count.div_ceil(8);
    let full = groups / MAX_GROUPS;
    let rest = groups % MAX_GROUPS;
    let run = |g: u64| varint_len((g << 1) | 1).saturating_add(g.saturating_mul(width.into()));
    let mut n = full.saturating_mul(run(MAX_GROUPS));
    if rest > 0 {
        n = n.saturating_add(run(rest));
    }
    n
}

/// Packs `values` (each below `2^width`) LSB first, `width` bits each, into
/// `ceil(n × width / 8)` bytes: Parquet's bit packing (BOOLEAN's PLAIN with width 1).
pub fn pack(values: &[u32], width: u8, out: &mut Vec<u8>) {
    let mut acc = 0u64;
    let mut bits = 0u32;
    let mask = if width >= 32 {
        u32::MAX
    } else {
        (1u32 << width) - 1
    };
    for &v in values {
        acc |= u64::from(v & mask) << bits;
        bits += u32::from(width);
        while bits >= 8 {
            out.push(acc as u8);
            acc >>= 8;
            bits -= 8;
        }
    }
    if bits > 0 {
        out.push(acc as u8);
    }
}

/// The hybrid encoding of `values` in bit-packed runs of whole groups of 8 (the last
/// group padded with zeros): exactly [`len`]`(values.len(), width)` bytes.
pub fn encode(values: &[u32], width: u8, out: &mut Vec<u8>) {
    let per_run = (MAX_GROUPS * 8) as usize;
    for run in values.chunks(per_run) {
        let groups = (run.len() as u64).div_ceil(8);
        varint((groups << 1) | 1, out);
        let mut padded = run.to_vec();
        padded.resize(groups as usize * 8, 0);
        pack(&padded, width, out);
    }
}

/// Levels as a v1 data page holds them: their byte length (4 bytes, little-endian),
/// then their hybrid encoding; 4 + [`len`] bytes. The caller has checked that the
/// length fits an `i32` (a page's size does).
pub fn levels(values: &[u32], width: u8, out: &mut Vec<u8>) {
    let n = len(values.len() as u64, width);
    out.extend_from_slice(&(n as u32).to_le_bytes());
    encode(values, width, out);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widths_are_the_bits_of_the_largest_value_at_least_one() {
        assert_eq!(width(0), 1);
        assert_eq!(width(1), 1);
        assert_eq!(width(2), 2);
        assert_eq!(width(3), 2);
        assert_eq!(width(4), 3);
        assert_eq!(width(255), 8);
        assert_eq!(width(256), 9);
    }

    #[test]
    fn packing_is_lsb_first() {
        let mut out = Vec::new();
        pack(&[1, 0, 1, 1, 0, 0, 0, 0, 1], 1, &mut out);
        assert_eq!(out, [0b0000_1101, 0b1]);
        // Width 3: 0..8 as the Parquet spec's example, 10001000 11000110 11111010.
        let mut out = Vec::new();
        pack(&[0, 1, 2, 3, 4, 5, 6, 7], 3, &mut out);
        assert_eq!(out, [0b1000_1000, 0b1100_0110, 0b1111_1010]);
    }

    #[test]
    fn a_bit_packed_run_is_its_group_count_then_whole_groups() {
        // 10 values of width 1: 2 groups, header (2 << 1) | 1 = 5, 2 bytes.
        let mut out = Vec::new();
        encode(&[1, 1, 0, 0, 1, 0, 1, 0, 1, 1], 1, &mut out);
        assert_eq!(out, [0x05, 0b0101_0011, 0b0000_0011]);
        assert_eq!(len(10, 1), 3);
        // Width 2 (an optional list's definition levels): 3 values, one group, 2 bytes.
        let mut out = Vec::new();
        encode(&[2, 1, 0], 2, &mut out);
        assert_eq!(out, [0x03, 0b00_01_10, 0]);
        // Levels in a v1 page: the length first.
        let mut out = Vec::new();
        levels(&[1, 0, 1], 1, &mut out);
        assert_eq!(out, [2, 0, 0, 0, 0x03, 0b101]);
        // No values: nothing at all.
        let mut out = Vec::new();
        encode(&[], 1, &mut out);
        assert!(out.is_empty());
        assert_eq!(len(0, 5), 0);
    }

    #[test]
    fn the_length_depends_on_the_count_alone() {
        for count in [1u64, 7, 8, 9, 63 * 8, 64 * 8, 64 * 8 + 1, 5000] {
            for width in [1u8, 2, 3, 7, 12] {
                let max = (1u32 << width) - 1;
                for fill in [0, max] {
                    let values = vec![fill; count as usize];
                    let mut out = Vec::new();
                    encode(&values, width, &mut out);
                    assert_eq!(out.len() as u64, len(count, width), "{count} × {width}");
                }
            }
        }
        // Past one run: a second header.
        let count = MAX_GROUPS * 8 + 1;
        let one = varint_len((MAX_GROUPS << 1) | 1) + MAX_GROUPS;
        assert_eq!(len(count, 1), one + 2);
        let mut out = Vec::new();
        encode(&vec![1; count as usize], 1, &mut out);
        assert_eq!(out.len() as u64, len(count, 1));
        assert_eq!(len(u64::MAX, 32), u64::MAX);
    }
}
