//! DELTA (`05` §3.5, TileDB's `delta_compressor.cc`): `u64` value count n, the first
//! value, then `x[i] − x[i−1]` truncated to the value width.

use super::util::{le_uint, mask, push_le};

/// Decodes one part of `width`-byte values into exactly `expected` bytes, with wrapping
/// addition in the value type (modulo 2^(8·width), the same for signed and unsigned).
///
/// TileDB 2.16–2.19's encoder wrote one value too many (its loop ran to `num` inclusive,
/// reading past the input) while its decoder read only n; that extra trailing value is
/// accepted and ignored.
pub(crate) fn decode(input: &[u8], width: usize, expected: usize) -> Result<Vec<u8>, String> {
    if !matches!(width, 1 | 2 | 4 | 8) {
        return Err(format!("unsupported value width {width}"));
    }
    let (count, body) = input.split_at_checked(8).ok_or("missing value count")?;
    let n = le_uint(count);
    if n.checked_mul(width as u64) != Some(expected as u64) {
        return Err(format!(
            "header counts {n} values of {width} bytes, expected {expected} bytes"
        ));
    }
    if n == 0 {
        return Ok(Vec::new());
    }
    let (values, extra) = body.split_at_checked(expected).ok_or_else(|| {
        format!(
            "part holds {} bytes of values, needs {expected}",
            body.len()
        )
    })?;
    if !extra.is_empty() && extra.len() != width {
        return Err(format!("{} unexpected bytes after the values", extra.len()));
    }
    let m = mask(width);
    let mut out = Vec::with_capacity(expected);
    let mut last = 0u64;
    for (i, v) in values.chunks_exact(width).enumerate() {
        let v = le_uint(v);
        last = if i == 0 { v } else { last.wrapping_add(v) & m };
        push_le(&mut out, last, width);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::test_support::delta_encode;

    #[test]
    fn wraps_in_the_value_type() {
        // i8: 100 → −100 is a delta of −200, stored truncated as 56; decoding wraps back.
        let values = [100i64, -100, 127, -128, 0];
        let encoded = delta_encode(&values, 1);
        assert_eq!(encoded[8..], [100u8, 56, 227, 1, 128]);
        let expected: Vec<u8> = values.iter().map(|&v| v as u8).collect();
        assert_eq!(decode(&encoded, 1, 5).unwrap(), expected);
        // u64 extremes.
        let values = [u64::MAX as i64, 0, i64::MIN, 1];
        let encoded = delta_encode(&values, 8);
        let expected: Vec<u8> = values.iter().flat_map(|&v| v.to_le_bytes()).collect();
        assert_eq!(decode(&encoded, 8, 32).unwrap(), expected);
    }

    #[test]
    fn tolerates_the_extra_value_of_old_writers() {
        let values = [5i64, 7, 9];
        let mut encoded = delta_encode(&values, 4);
        encoded.extend([0xaa; 4]);
        let expected: Vec<u8> = values
            .iter()
            .flat_map(|&v| (v as i32).to_le_bytes())
            .collect();
        assert_eq!(decode(&encoded, 4, 12).unwrap(), expected);
        encoded.push(0);
        assert!(decode(&encoded, 4, 12).is_err());
    }

    #[test]
    fn corrupt_parts_are_errors() {
        let encoded = delta_encode(&[1, 2, 3], 2);
        assert!(decode(&encoded, 2, 8).is_err());
        assert!(decode(&encoded[..9], 2, 6).is_err());
        assert!(decode(&encoded[..4], 2, 6).is_err());
        let mut huge = encoded.clone();
        huge[..8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(decode(&huge, 2, 6).is_err());
    }
}
