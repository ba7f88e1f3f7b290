//! POSITIVE_DELTA (`05` §3.8, `positive_delta_filter.cc`): each window stores its first
//! value as a base in the metadata and, in the data, the differences to the previous
//! value (the first difference is 0). Windows that are not whole elements are raw. The
//! caller decides whether the filter is active for the type at all.

use super::util::{corrupt, le_uint, mask, push_le, ForFilter, Step};
use super::FilterError;
use crate::format::Reader;

const NAME: &str = "POSITIVE_DELTA";

/// `width` is the element size (1, 2, 4 or 8).
pub(crate) fn reverse(md: &[u8], data: &[u8], width: usize) -> Result<Step, FilterError> {
    let mut r = Reader::new(md);
    let at = r.offset();
    let count = r.u32("window count").for_filter(NAME)?;
    r.check_count(count as u64, width as u64 + 4, "window count", at)
        .for_filter(NAME)?;
    let windows = (0..count)
        .map(|_| {
            let base = le_uint(r.bytes(width as u64, "window base").for_filter(NAME)?);
            let len = r.u32("window length").for_filter(NAME)? as usize;
            Ok((base, len))
        })
        .collect::<Result<Vec<_>, FilterError>>()?;
    let total: u64 = windows.iter().map(|&(_, len)| len as u64).sum();
    if total != data.len() as u64 {
        return Err(corrupt(
            NAME,
            format!(
                "windows cover {total} bytes, but the data is {} bytes",
                data.len()
            ),
        ));
    }

    let m = mask(width);
    let mut out = Vec::with_capacity(data.len());
    let mut rest = data;
    for (base, len) in windows {
        let (window, tail) = rest
            .split_at_checked(len)
            .ok_or_else(|| corrupt(NAME, "window extends past the data"))?;
        rest = tail;
        if len % width != 0 {
            out.extend_from_slice(window);
            continue;
        }
        let mut prev = base;
        for delta in window.chunks_exact(width) {
            prev = prev.wrapping_add(le_uint(delta)) & m;
            push_le(&mut out, prev, width);
        }
    }
    Ok(Step::tail(r.offset() as usize, out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::test_support::positive_delta_encode;

    #[test]
    fn round_trips_all_widths() {
        let values: Vec<u64> = vec![1000, 1004, 1010, 1013, 1013, 1015, 1019, 1025, 1028];
        for width in [1usize, 2, 4, 8] {
            let mut original = Vec::new();
            for &v in &values {
                push_le(&mut original, v & mask(width), width);
            }
            for window in [width * 2, 24, 256] {
                let (md, data) = positive_delta_encode(&original, width, window);
                let step = reverse(&md, &data, width).unwrap();
                assert_eq!(
                    step.data.unwrap(),
                    original,
                    "width {width} window {window}"
                );
            }
        }
    }

    #[test]
    fn i8_wraps_and_raw_windows_pass() {
        // Signed bytes as TileDB sees them: −5, −3, 0, 120 are increasing.
        let original = [0xfbu8, 0xfd, 0, 120, 0xaa];
        let (md, data) = positive_delta_encode(&original, 1, 256);
        let step = reverse(&md, &data, 1).unwrap();
        assert_eq!(step.data.unwrap(), original);
        // A 3-byte window of 2-byte elements is stored raw.
        let (md, data) = positive_delta_encode(&[1, 2, 3], 2, 256);
        assert_eq!(reverse(&md, &data, 2).unwrap().data.unwrap(), [1, 2, 3]);
    }

    #[test]
    fn corrupt_headers_are_errors() {
        let (md, data) = positive_delta_encode(&[1, 0, 2, 0], 2, 256);
        assert!(reverse(&md[..5], &data, 2).is_err());
        assert!(reverse(&md, &data[..3], 2).is_err());
        assert!(reverse(&[0xff; 4], &data, 2).is_err());
    }
}
