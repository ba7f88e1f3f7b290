//! DOUBLE_DELTA (`05` §3.4, TileDB's `dd_compressor.cc`).
//!
//! A part is `u8` bit size b, `u64` value count n, then either the n values raw (when
//! b ≥ 8·width − 1, i.e. no saving) or the first two values followed by a bit stream
//! holding, for each later value, a sign bit and b magnitude bits of the double delta,
//! most significant bit first, packed from bit 63 down in little-endian `u64` words.

use super::util::{le_uint, mask, push_le};

/// Decodes one part of `width`-byte values into exactly `expected` bytes.
///
/// TileDB computes `x[i] = dd + 2·x[i−1] − x[i−2]` in `i64` and truncates to the type.
/// Truncation modulo 2^(8·width) does not depend on how the previous values were
/// extended, so wrapping `u64` arithmetic masked to the width gives the same bytes for
/// signed and unsigned types alike.
pub(crate) fn decode(input: &[u8], width: usize, expected: usize) -> Result<Vec<u8>, String> {
    if !matches!(width, 1 | 2 | 4 | 8) {
        return Err(format!("unsupported value width {width}"));
    }
    let (&bitsize, rest) = input.split_first().ok_or("missing bit size")?;
    let (count, body) = rest.split_at_checked(8).ok_or("missing value count")?;
    let n = le_uint(count);
    if n.checked_mul(width as u64) != Some(expected as u64) {
        return Err(format!(
            "header counts {n} values of {width} bytes, expected {expected} bytes"
        ));
    }
    if n == 0 {
        return Ok(Vec::new());
    }
    let bitsize = u32::from(bitsize);
    if bitsize >= 8 * width as u32 - 1 {
        // Stored raw: TileDB copies the rest of the part.
        if body.len() != expected {
            return Err(format!(
                "raw part holds {} bytes, expected {expected}",
                body.len()
            ));
        }
        return Ok(body.to_vec());
    }

    let first_two = (n.min(2) as usize) * width;
    let (head, stream) = body
        .split_at_checked(first_two)
        .ok_or("part too short for its first values")?;
    let mut out = Vec::with_capacity(expected);
    out.extend_from_slice(head);
    if n <= 2 {
        return if stream.is_empty() {
            Ok(out)
        } else {
            Err(format!(
                "{} unexpected bytes after the values",
                stream.len()
            ))
        };
    }

    let bits_per_value = u64::from(bitsize) + 1;
    let words_needed = (n - 2)
        .checked_mul(bits_per_value)
        .map(|bits| bits.div_ceil(64))
        .ok_or("value count overflows")?;
    if words_needed.checked_mul(8) != Some(stream.len() as u64) {
        return Err(format!(
            "bit stream is {} bytes, {} values of {bits_per_value} bits need {} bytes",
            stream.len(),
            n - 2,
            words_needed.saturating_mul(8)
        ));
    }

    let m = mask(width);
    let mut bits = BitReader::new(stream);
    let mut prev2 = le_uint(head.get(..width).ok_or("missing first value")?);
    let mut prev1 = le_uint(head.get(width..).ok_or("missing second value")?);
    for _ in 2..n {
        let negative = bits.read(1).ok_or("bit stream ended early")? == 1;
        let magnitude = bits.read(bitsize).ok_or("bit stream ended early")?;
        let dd = if negative {
            magnitude.wrapping_neg()
        } else {
            magnitude
        };
        let x = dd.wrapping_add(prev1.wrapping_mul(2)).wrapping_sub(prev2) & m;
        push_le(&mut out, x, width);
        prev2 = prev1;
        prev1 = x;
    }
    Ok(out)
}

/// Reads bits most-significant first out of little-endian `u64` words.
struct BitReader<'a> {
    words: &'a [u8],
    /// Bits consumed so far.
    pos: u64,
}

impl<'a> BitReader<'a> {
    fn new(words: &'a [u8]) -> Self {
        BitReader { words, pos: 0 }
    }

    /// The next `count` (≤ 64) bits as an unsigned number, or `None` past the end.
    fn read(&mut self, count: u32) -> Option<u64> {
        let mut value = 0u64;
        let mut left = count;
        while left > 0 {
            let word_index = usize::try_from(self.pos / 64).ok()?;
            let start = word_index.checked_mul(8)?;
            let word = le_uint(self.words.get(start..start.checked_add(8)?)?);
            // Bits still unread in this word, counted from bit 63 downwards.
            let available = 64 - (self.pos % 64) as u32;
            let take = available.min(left);
            let shift = available - take;
            let chunk = (word >> shift) & low_bits(take);
            value = if take == 64 {
                chunk
            } else {
                (value << take) | chunk
            };
            self.pos += u64::from(take);
            left -= take;
        }
        Some(value)
    }
}

fn low_bits(n: u32) -> u64 {
    if n >= 64 {
        u64::MAX
    } else {
        (1u64 << n) - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::test_support::dd_encode;

    fn bytes(values: &[i64], width: usize) -> Vec<u8> {
        let mut out = Vec::new();
        for &v in values {
            push_le(&mut out, v as u64, width);
        }
        out
    }

    #[test]
    fn negative_double_deltas_straddle_words() {
        // Double deltas within ±44 need b = 6, so 7 bits per value: values straddle the
        // 64-bit words at irregular places, and about a third of them are negative.
        let mut values = vec![1000i64, 1004];
        for i in 0..40 {
            let step = if i % 3 == 0 { -20 } else { 20 + i % 5 };
            values.push(values[values.len() - 1] + step);
        }
        let encoded = dd_encode(&values, 8);
        assert_eq!(encoded[0], 6, "bit size");
        let decoded = decode(&encoded, 8, values.len() * 8).unwrap();
        assert_eq!(decoded, bytes(&values, 8));
    }

    #[test]
    fn all_widths_and_short_parts() {
        for width in [1usize, 2, 4, 8] {
            for n in [1usize, 2, 3, 9] {
                let values: Vec<i64> = (0..n as i64).map(|i| (i * i) % 5 - 2).collect();
                let encoded = dd_encode(&values, width);
                let decoded = decode(&encoded, width, n * width).unwrap();
                assert_eq!(decoded, bytes(&values, width), "width {width} n {n}");
            }
        }
    }

    #[test]
    fn raw_when_the_bit_size_saves_nothing() {
        // i8 values whose double deltas need 7 bits (≥ 8·1 − 1): stored raw.
        let values = [0i64, 100, -100, 100, -100];
        let encoded = dd_encode(&values, 1);
        assert!(encoded[0] >= 7);
        assert_eq!(encoded.len(), 9 + 5);
        assert_eq!(decode(&encoded, 1, 5).unwrap(), bytes(&values, 1));
        // u64 extremes.
        let values = [0i64, -1, 0, i64::MIN, 5];
        let encoded = dd_encode(&values, 8);
        assert_eq!(decode(&encoded, 8, 40).unwrap(), bytes(&values, 8));
    }

    #[test]
    fn wrapping_arithmetic_matches_truncation() {
        // u8 values wrap: 250, 255, 4 (= 260 mod 256) is a constant delta of 5.
        let values = [250i64, 255, 260, 265];
        let encoded = dd_encode(&values, 1);
        let expected: Vec<u8> = values.iter().map(|&v| v as u8).collect();
        assert_eq!(decode(&encoded, 1, 4).unwrap(), expected);
    }

    #[test]
    fn corrupt_parts_are_errors() {
        let values: Vec<i64> = (0..10).map(|i| i * 3).collect();
        let encoded = dd_encode(&values, 4);
        assert!(decode(&encoded, 4, 44).is_err()); // count mismatch
        assert!(decode(&encoded[..encoded.len() - 1], 4, 40).is_err()); // short stream
        assert!(decode(&encoded[..5], 4, 40).is_err()); // truncated header
        assert!(decode(&[], 4, 0).is_err());
        let mut huge = encoded.clone();
        huge[1..9].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(decode(&huge, 4, 40).is_err());
        assert!(decode(&encoded, 3, 30).is_err());
    }
}
