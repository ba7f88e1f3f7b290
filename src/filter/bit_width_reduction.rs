//! BIT_WIDTH_REDUCTION (`05` §3.7, `bit_width_reduction_filter.cc`).
//!
//! Forward, each window of at most `max window` bytes stores its minimum as an offset and
//! the values minus that offset in the smallest of 8/16/32/64 bits that holds the range.
//! Windows that would not shrink, or are not whole elements, are stored raw. The caller
//! decides whether the filter is active for the type at all (it is a no-op for 8-bit
//! and non-integer types, and for DATETIME/TIME before format 20).

use super::util::{corrupt, le_uint, mask, push_le, sign_extend, ForFilter, Step};
use super::FilterError;
use crate::format::{ElementKind, Reader};

const NAME: &str = "BIT_WIDTH_REDUCTION";

struct Window {
    offset: u64,
    bits: u8,
    len: usize,
}

pub(crate) fn reverse(
    md: &[u8],
    data: &[u8],
    kind: ElementKind,
    limit: usize,
) -> Result<Step, FilterError> {
    let size = kind.size();
    let mut r = Reader::new(md);
    let original_len = r.u32("original length").for_filter(NAME)? as usize;
    let at = r.offset();
    let count = r.u32("window count").for_filter(NAME)?;
    r.check_count(count as u64, size as u64 + 5, "window count", at)
        .for_filter(NAME)?;
    let windows = (0..count)
        .map(|_| {
            Ok(Window {
                offset: le_uint(r.bytes(size as u64, "window offset").for_filter(NAME)?),
                bits: r.u8("window bit width").for_filter(NAME)?,
                len: r.u32("window length").for_filter(NAME)? as usize,
            })
        })
        .collect::<Result<Vec<_>, FilterError>>()?;
    let total: u64 = windows.iter().map(|w| w.len as u64).sum();
    if total != original_len as u64 {
        return Err(corrupt(
            NAME,
            format!("windows cover {total} bytes, header says {original_len}"),
        ));
    }
    if original_len > limit {
        return Err(corrupt(
            NAME,
            format!("original length {original_len} is more than this chunk can hold"),
        ));
    }

    let element_bits = 8 * size;
    let m = mask(size);
    // `original_len` is only the header's claim: reserve no more than the data can
    // expand to (a stored byte becomes at most `size` bytes, in an 8-bit window).
    let mut out = Vec::with_capacity(original_len.min(data.len().saturating_mul(size)));
    let mut rest = data;
    for (i, w) in windows.iter().enumerate() {
        let raw = usize::from(w.bits) >= element_bits || w.len % size != 0;
        let width = usize::from(w.bits / 8);
        if !raw && !matches!(w.bits, 8 | 16 | 32) {
            return Err(corrupt(
                NAME,
                format!("window {i} has bit width {}", w.bits),
            ));
        }
        let stored = if raw { w.len } else { w.len / size * width };
        let (bytes, tail) = rest.split_at_checked(stored).ok_or_else(|| {
            corrupt(
                NAME,
                format!("window {i} needs {stored} bytes, only {} left", rest.len()),
            )
        })?;
        rest = tail;
        if raw {
            out.extend_from_slice(bytes);
            continue;
        }
        for value in bytes.chunks_exact(width) {
            let mut v = le_uint(value);
            if kind.is_signed() {
                v = sign_extend(v, width);
            }
            push_le(&mut out, v.wrapping_add(w.offset) & m, size);
        }
    }
    if !rest.is_empty() {
        return Err(corrupt(
            NAME,
            format!("{} bytes of data left after the last window", rest.len()),
        ));
    }
    Ok(Step::tail(r.offset() as usize, out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::test_support::bit_width_encode;

    fn i32_bytes(v: &[i32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn signed_windows_sign_extend() {
        // Window 1: −100..=27 fits 8 bits relative to −100; window 2 needs 16 bits with
        // negative reduced values; window 3 is a raw 2-byte tail.
        let a = i32_bytes(&[-100, 27, -5, 0]);
        let b = i32_bytes(&[-1000, 30000, 0, 5]);
        let mut original = [a, b].concat();
        original.extend([0xab, 0xcd]);
        let (md, data) = bit_width_encode(&original, ElementKind::I32, 16);
        let step = reverse(&md, &data, ElementKind::I32, 1 << 20).unwrap();
        assert_eq!(step.data.unwrap(), original);
    }

    #[test]
    fn unsigned_and_wide_types() {
        let values: Vec<u8> = [u64::MAX - 3, u64::MAX, u64::MAX - 200, 7]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        for window in [16, 24, 256] {
            let (md, data) = bit_width_encode(&values, ElementKind::U64, window);
            let step = reverse(&md, &data, ElementKind::U64, 1 << 20).unwrap();
            assert_eq!(step.data.unwrap(), values);
        }
        let values: Vec<u8> = [1u16, 2, 65535, 0]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        let (md, data) = bit_width_encode(&values, ElementKind::U16, 4);
        let step = reverse(&md, &data, ElementKind::U16, 1 << 20).unwrap();
        assert_eq!(step.data.unwrap(), values);
    }

    #[test]
    fn metadata_after_the_header_is_passed_on() {
        let values = i32_bytes(&[1, 2, 3]);
        let (mut md, data) = bit_width_encode(&values, ElementKind::I32, 256);
        let header = md.len();
        md.extend([1, 2, 3]);
        let step = reverse(&md, &data, ElementKind::I32, 1 << 20).unwrap();
        assert!(matches!(step.md, crate::filter::util::Md::Tail(n) if n == header));
    }

    #[test]
    fn corrupt_headers_are_errors() {
        let values = i32_bytes(&[1, 2, 3, 4]);
        let (md, data) = bit_width_encode(&values, ElementKind::I32, 256);
        assert!(reverse(&md[..md.len() - 1], &data, ElementKind::I32, 1 << 20).is_err());
        assert!(reverse(&md, &data[1..], ElementKind::I32, 1 << 20).is_err());
        assert!(reverse(&md, &[&data[..], &[0]].concat(), ElementKind::I32, 1 << 20).is_err());
        let mut bad = md.clone();
        bad[0..4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(reverse(&bad, &data, ElementKind::I32, 1 << 20).is_err());
        let mut bad = md.clone();
        bad[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(reverse(&bad, &data, ElementKind::I32, 1 << 20).is_err());
        let mut bad = md.clone();
        bad[12] = 12; // bit width 12
        assert!(reverse(&bad, &data, ElementKind::I32, 1 << 20).is_err());
    }
}
