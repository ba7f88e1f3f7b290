//! SCALE_FLOAT (`05` §3.11, `float_scaling_filter.cc`): floats stored as signed
//! integers `round((x − offset) / scale)` of `byte_width` bytes. Lossy by design.

use super::util::{corrupt, le_uint, read_part_sizes, sign_extend, split_parts, Step};
use super::FilterError;
use crate::format::Reader;

const NAME: &str = "SCALE_FLOAT";

/// `float_size` is the size of the filter's input type (4 → f32, 8 → f64).
pub(crate) fn reverse(
    md: &[u8],
    data: &[u8],
    float_size: u64,
    scale: f64,
    offset: f64,
    byte_width: u64,
) -> Result<Step, FilterError> {
    if !matches!(float_size, 4 | 8) {
        return Err(corrupt(
            NAME,
            format!("input type is {float_size} bytes wide, not a 4- or 8-byte float"),
        ));
    }
    let width = match byte_width {
        1 | 2 | 4 | 8 => byte_width as usize,
        w => {
            return Err(corrupt(
                NAME,
                format!("byte width option is {w}, not 1, 2, 4 or 8"),
            ))
        }
    };
    let mut r = Reader::new(md);
    let sizes = read_part_sizes(&mut r, NAME)?;
    let parts = split_parts(data, &sizes, NAME)?;
    let mut out = Vec::with_capacity(data.len() / width * float_size as usize);
    for (i, part) in parts.iter().enumerate() {
        if part.len() % width != 0 {
            return Err(corrupt(
                NAME,
                format!(
                    "part {i} is {} bytes, not whole {width}-byte integers",
                    part.len()
                ),
            ));
        }
        for q in part.chunks_exact(width) {
            let q = sign_extend(le_uint(q), width) as i64;
            // TileDB converts the integer to the float type first, then computes
            // `scale * elem + offset` in f64 and casts back.
            if float_size == 4 {
                let x = (scale * f64::from(q as f32) + offset) as f32;
                out.extend_from_slice(&x.to_le_bytes());
            } else {
                let x = scale * q as f64 + offset;
                out.extend_from_slice(&x.to_le_bytes());
            }
        }
    }
    Ok(Step::tail(r.offset() as usize, out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::test_support::part_header;

    fn encode(values: &[f64], scale: f64, offset: f64, width: usize) -> Vec<u8> {
        values
            .iter()
            .flat_map(|&x| {
                let q = ((x - offset) / scale).round() as i64;
                q.to_le_bytes().into_iter().take(width)
            })
            .collect()
    }

    #[test]
    fn f64_and_f32_at_every_width() {
        let values = [100.0, 100.5, 99.0, 101.5, 63.5, 60.0];
        let (scale, offset) = (0.5, 100.0);
        for width in [1usize, 2, 4, 8] {
            let data = encode(&values, scale, offset, width);
            let md = part_header(&[data.len()]);
            let f64s = reverse(&md, &data, 8, scale, offset, width as u64).unwrap();
            let expected: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
            assert_eq!(f64s.data.unwrap(), expected, "f64 width {width}");
            let f32s = reverse(&md, &data, 4, scale, offset, width as u64).unwrap();
            let expected: Vec<u8> = values
                .iter()
                .flat_map(|&v| (v as f32).to_le_bytes())
                .collect();
            assert_eq!(f32s.data.unwrap(), expected, "f32 width {width}");
        }
    }

    #[test]
    fn negative_integers_are_sign_extended() {
        let data = [0xffu8, 0x80]; // −1, −128 as i8
        let step = reverse(&part_header(&[2]), &data, 8, 2.0, 1.0, 1).unwrap();
        let expected: Vec<u8> = [-1.0f64, -255.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        assert_eq!(step.data.unwrap(), expected);
    }

    #[test]
    fn bad_options_and_parts_are_errors() {
        let md = part_header(&[4]);
        assert!(reverse(&md, &[0; 4], 8, 1.0, 0.0, 3).is_err());
        assert!(reverse(&md, &[0; 4], 2, 1.0, 0.0, 4).is_err());
        assert!(reverse(&part_header(&[3]), &[0; 3], 8, 1.0, 0.0, 2).is_err());
        assert!(reverse(&md, &[0; 5], 8, 1.0, 0.0, 4).is_err());
    }
}
