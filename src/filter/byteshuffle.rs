//! BYTESHUFFLE (`05` §3.6, blosc `shuffle`): within each part, byte j of every element
//! is gathered into plane j; a tail shorter than one element is left in place.

use super::util::{read_part_sizes, split_parts, Step};
use super::FilterError;
use crate::format::Reader;

const NAME: &str = "BYTESHUFFLE";

/// `elem_size` is the size of the filter's input datatype.
pub(crate) fn reverse(md: &[u8], data: &[u8], elem_size: usize) -> Result<Step, FilterError> {
    let mut r = Reader::new(md);
    let sizes = read_part_sizes(&mut r, NAME)?;
    let parts = split_parts(data, &sizes, NAME)?;
    let mut out = Vec::with_capacity(data.len());
    for part in parts {
        unshuffle(part, elem_size.max(1), &mut out);
    }
    Ok(Step::tail(r.offset() as usize, out))
}

/// Original byte `i·s + j` is shuffled byte `j·n + i`.
fn unshuffle(part: &[u8], s: usize, out: &mut Vec<u8>) {
    let n = part.len() / s;
    let (shuffled, tail) = part.split_at(n * s);
    let start = out.len();
    out.resize(start + n * s, 0);
    if let Some(dest) = out.get_mut(start..) {
        for (j, plane) in shuffled.chunks_exact(n.max(1)).enumerate() {
            for (element, &byte) in dest.chunks_exact_mut(s).zip(plane) {
                if let Some(d) = element.get_mut(j) {
                    *d = byte;
                }
            }
        }
    }
    out.extend_from_slice(tail);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::test_support::{byteshuffle, part_header};

    #[test]
    fn four_byte_elements_with_a_tail() {
        // 3 INT32 elements and a 2-byte tail.
        let original: Vec<u8> = (0u8..14).collect();
        let shuffled = byteshuffle(&original, 4);
        assert_eq!(
            shuffled,
            [0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11, 12, 13],
            "forward layout"
        );
        let mut md = part_header(&[14]);
        md.extend([0xee, 0xff]); // earlier filters' metadata
        let step = reverse(&md, &shuffled, 4).unwrap();
        assert!(matches!(step.md, crate::filter::util::Md::Tail(8)));
        assert_eq!(step.data.unwrap(), original);
    }

    #[test]
    fn several_parts_and_widths() {
        for s in [1usize, 2, 8] {
            let a: Vec<u8> = (0..37).map(|i| i * 3).collect();
            let b: Vec<u8> = (0..16).collect();
            let data = [byteshuffle(&a, s), byteshuffle(&b, s)].concat();
            let step = reverse(&part_header(&[37, 16]), &data, s).unwrap();
            assert_eq!(step.data.unwrap(), [a, b].concat());
        }
    }

    #[test]
    fn bad_headers_are_errors() {
        assert!(reverse(&part_header(&[5]), &[0; 4], 4).is_err());
        assert!(reverse(&[1, 0], &[0; 4], 4).is_err());
        assert!(reverse(&[0xff; 4], &[0; 4], 4).is_err());
    }
}
