//! XOR (`05` §3.10, `xor_filter.cc`): each element of a part is stored XORed with the
//! previous one; floats are treated as same-size integers.

use super::util::{le_uint, push_le, read_part_sizes, split_parts, Step};
use super::FilterError;
use crate::format::Reader;

const NAME: &str = "XOR";

/// `width` is the size of the filter's input datatype.
pub(crate) fn reverse(md: &[u8], data: &[u8], width: usize) -> Result<Step, FilterError> {
    let width = width.clamp(1, 8);
    let mut r = Reader::new(md);
    let sizes = read_part_sizes(&mut r, NAME)?;
    let parts = split_parts(data, &sizes, NAME)?;
    let mut out = Vec::with_capacity(data.len());
    for part in parts {
        let mut elements = part.chunks_exact(width);
        let mut last = 0u64;
        for y in elements.by_ref() {
            last ^= le_uint(y);
            push_le(&mut out, last, width);
        }
        // TileDB never writes a part that is not whole elements (chunks are cell
        // aligned); its decoder would leave such bytes undefined, we keep them as is.
        out.extend_from_slice(elements.remainder());
    }
    Ok(Step::tail(r.offset() as usize, out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::test_support::{part_header, xor_encode};

    #[test]
    fn running_xor_per_part() {
        let a: Vec<u8> = [1.5f64, -2.25, 1e300, 0.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let b: Vec<u8> = [7.0f64].iter().flat_map(|v| v.to_le_bytes()).collect();
        let data = [xor_encode(&a, 8), xor_encode(&b, 8)].concat();
        let step = reverse(&part_header(&[32, 8]), &data, 8).unwrap();
        assert_eq!(step.data.unwrap(), [a, b].concat());
        for width in [1usize, 2, 4] {
            let v: Vec<u8> = (0..24u32).map(|i| (i * 37) as u8).collect();
            let step = reverse(&part_header(&[24]), &xor_encode(&v, width), width).unwrap();
            assert_eq!(step.data.unwrap(), v);
        }
    }

    #[test]
    fn bad_headers_are_errors() {
        assert!(reverse(&part_header(&[9]), &[0; 8], 8).is_err());
        assert!(reverse(&[2, 0, 0, 0, 1], &[0; 8], 8).is_err());
    }
}
