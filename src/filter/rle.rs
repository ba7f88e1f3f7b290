//! Fixed-width RLE (`05` §3.3): runs of `value_size + 2` bytes, the value followed by a
//! big-endian `u16` count. The value width is the tile's cell size, not the datatype
//! size (12 for a 3 × INT32 attribute, 8 for offsets).

/// Decodes one RLE part that must expand to exactly `expected` bytes. The runs are summed
/// before allocating, since a 3-byte run can claim 65535 copies.
pub(crate) fn decode(input: &[u8], value_size: u64, expected: usize) -> Result<Vec<u8>, String> {
    if value_size == 0 {
        return Err("cell size 0".into());
    }
    let run_size = value_size
        .checked_add(2)
        .and_then(|s| usize::try_from(s).ok())
        .ok_or_else(|| format!("cell size {value_size} is too large"))?;
    if !input.len().is_multiple_of(run_size) {
        return Err(format!(
            "{} bytes is not a whole number of {run_size}-byte runs",
            input.len()
        ));
    }
    let value_len = run_size - 2;
    let runs = || {
        input.chunks_exact(run_size).map(move |run| {
            let (value, count) = run.split_at(value_len);
            let count = count.iter().fold(0u64, |acc, &b| (acc << 8) | u64::from(b));
            (value, count)
        })
    };
    let total = runs()
        .try_fold(0u64, |acc, (_, count)| {
            count
                .checked_mul(value_size)
                .and_then(|n| acc.checked_add(n))
        })
        .ok_or("run lengths overflow")?;
    if total != expected as u64 {
        return Err(format!(
            "runs expand to {total} bytes, header says {expected}"
        ));
    }
    let mut out = Vec::with_capacity(expected);
    for (value, count) in runs() {
        for _ in 0..count {
            out.extend_from_slice(value);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::test_support::rle_encode;

    #[test]
    fn twelve_byte_cells() {
        // A 3 × INT32 attribute: the value is the whole 12-byte cell.
        let cell_a: Vec<u8> = [1i32, -2, 3].iter().flat_map(|v| v.to_le_bytes()).collect();
        let cell_b: Vec<u8> = [7i32, 7, 7].iter().flat_map(|v| v.to_le_bytes()).collect();
        let mut original = Vec::new();
        for cell in [&cell_a, &cell_a, &cell_a, &cell_b, &cell_a] {
            original.extend_from_slice(cell);
        }
        let encoded = rle_encode(&original, 12);
        assert_eq!(encoded.len(), 3 * 14);
        // Count is big-endian: 3 copies = 00 03.
        assert_eq!(&encoded[12..14], &[0, 3]);
        assert_eq!(decode(&encoded, 12, original.len()).unwrap(), original);
    }

    #[test]
    fn long_runs_use_the_high_byte() {
        let original = vec![5u8; 300];
        let encoded = rle_encode(&original, 1);
        assert_eq!(encoded, [5, 1, 44]);
        assert_eq!(decode(&encoded, 1, 300).unwrap(), original);
    }

    #[test]
    fn bad_parts_are_errors() {
        assert!(decode(&[1, 2, 3, 4], 1, 1).is_err()); // not whole runs
        assert!(decode(&[1, 0, 2], 1, 3).is_err()); // expands to 2, not 3
        assert!(decode(&[1, 0xff, 0xff], 1, 10).is_err()); // claims 65535
        assert!(decode(&[1, 0, 1], 0, 1).is_err());
        assert!(decode(&[], u64::MAX, 0).is_err());
    }
}
