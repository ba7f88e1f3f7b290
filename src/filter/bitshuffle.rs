//! BITSHUFFLE (`05` §3.9, the kiyo-masui `bitshuffle` / blosc2 layout).
//!
//! Parts whose size is not a multiple of 8 and of the element size are stored raw
//! (forward, TileDB splits every part into a multiple-of-8 prefix and a remainder, so
//! the remainder is such a part). Others are processed in blocks of 8192 bytes; in each
//! block the largest multiple of 8 elements is bit-transposed into 8·s bit-planes of
//! n/8 bytes each, ordered by byte b of the element, then bit k (least significant
//! first); bit `j mod 8` of byte `j div 8` of plane (b, k) is bit k of byte b of element
//! j. Elements left over after the last multiple of 8 are copied raw.

use super::util::{read_part_sizes, split_parts, Step};
use super::FilterError;
use crate::format::Reader;

const NAME: &str = "BITSHUFFLE";
const BLOCK_BYTES: usize = 8192;

/// `elem_size` is the size of the filter's input datatype.
pub(crate) fn reverse(md: &[u8], data: &[u8], elem_size: usize) -> Result<Step, FilterError> {
    let s = elem_size.max(1);
    let mut r = Reader::new(md);
    let sizes = read_part_sizes(&mut r, NAME)?;
    let parts = split_parts(data, &sizes, NAME)?;
    let mut out = Vec::with_capacity(data.len());
    for part in parts {
        if part.len() % s != 0 || part.len() % 8 != 0 {
            out.extend_from_slice(part);
            continue;
        }
        // 8192 / s elements per block: a multiple of 8 for every element size TileDB
        // has (1, 2, 4, 8), so only the last block can leave elements over.
        for block in part.chunks(BLOCK_BYTES) {
            let n = block.len() / s;
            let transposed = (n - n % 8) * s;
            let (planes, raw) = block.split_at(transposed);
            untranspose(planes, s, &mut out);
            out.extend_from_slice(raw);
        }
    }
    Ok(Step::tail(r.offset() as usize, out))
}

/// Rebuilds `planes.len() / s` elements (a multiple of 8) from their bit-planes.
fn untranspose(planes: &[u8], s: usize, out: &mut Vec<u8>) {
    let n = planes.len() / s;
    let plane_len = n / 8;
    let start = out.len();
    out.resize(start + planes.len(), 0);
    let Some(dest) = out.get_mut(start..) else {
        return;
    };
    if plane_len == 0 {
        return;
    }
    for (p, plane) in planes.chunks_exact(plane_len).enumerate() {
        let (b, k) = (p / 8, p % 8);
        for (q, &bits) in plane.iter().enumerate() {
            if bits == 0 {
                continue;
            }
            for t in 0..8 {
                if bits >> t & 1 == 1 {
                    if let Some(byte) = dest.get_mut((q * 8 + t) * s + b) {
                        *byte |= 1 << k;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::test_support::{bitshuffle, part_header};

    fn sample(len: usize) -> Vec<u8> {
        (0..len)
            .map(|i| (i as u32).wrapping_mul(2_654_435_761).rotate_right(13) as u8)
            .collect()
    }

    #[test]
    fn matches_the_plane_formula_for_one_block() {
        // 16 two-byte elements: element j = j, so plane (0, 0) holds the low bits
        // 0,1,0,1,... = 0b10101010 per byte.
        let original: Vec<u8> = (0u16..16).flat_map(|v| v.to_le_bytes()).collect();
        let shuffled = bitshuffle(&original, 2);
        assert_eq!(&shuffled[0..2], &[0xaa, 0xaa]);
        let step = reverse(&part_header(&[32]), &shuffled, 2).unwrap();
        assert_eq!(step.data.unwrap(), original);
    }

    #[test]
    fn leftover_elements_and_raw_parts() {
        for s in [1usize, 2, 4, 8] {
            // 104 bytes: n mod 8 ≠ 0 for s = 2, 4, 8 (52, 26, 13 elements), so the last
            // 4, 2, 5 elements are copied raw; then a 3-byte tail part stored raw.
            let main = sample(13 * 8);
            let tail = sample(3);
            let data = [bitshuffle(&main, s), tail.clone()].concat();
            let step = reverse(&part_header(&[main.len(), 3]), &data, s).unwrap();
            assert_eq!(step.data.unwrap(), [main, tail].concat(), "s = {s}");
        }
    }

    #[test]
    fn parts_larger_than_one_block() {
        for s in [1usize, 4, 8] {
            // 8192 + 1000 bytes: two blocks, the second with leftovers for s = 8
            // (125 elements, 5 over).
            let original = sample(9192);
            let shuffled = bitshuffle(&original, s);
            assert_ne!(shuffled, original);
            let step = reverse(&part_header(&[9192]), &shuffled, s).unwrap();
            assert_eq!(step.data.unwrap(), original, "s = {s}");
        }
    }

    #[test]
    fn part_not_a_multiple_of_the_element_size_is_raw() {
        // 20 bytes of 8-byte elements: stored as is.
        let original = sample(20);
        let step = reverse(&part_header(&[20]), &original, 8).unwrap();
        assert_eq!(step.data.unwrap(), original);
    }

    #[test]
    fn bad_headers_are_errors() {
        assert!(reverse(&part_header(&[16]), &[0; 8], 8).is_err());
        assert!(reverse(&[], &[], 8).is_err());
    }
}
