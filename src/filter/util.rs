//! Helpers shared by the reverse filters: header reading that reports errors against the
//! filter, part lists, the result type of one reverse step, and little-endian integers of
//! any width up to 8 bytes.

use super::FilterError;
use crate::format::{Datatype, ElementKind, FormatError, Reader};

/// The `Corrupt` error with the filter's name, so every message says which filter choked.
pub(crate) fn corrupt(filter: &'static str, reason: impl Into<String>) -> FilterError {
    FilterError::Corrupt {
        filter,
        reason: reason.into(),
    }
}

pub(crate) fn unsupported(filter: &'static str, reason: impl Into<String>) -> FilterError {
    FilterError::Unsupported {
        filter,
        reason: reason.into(),
    }
}

/// Header fields are read with [`Reader`], whose errors already say which field was
/// short and where; this only attaches the filter's name.
pub(crate) trait ForFilter<T> {
    fn for_filter(self, filter: &'static str) -> Result<T, FilterError>;
}

impl<T> ForFilter<T> for Result<T, FormatError> {
    fn for_filter(self, filter: &'static str) -> Result<T, FilterError> {
        self.map_err(|e| corrupt(filter, e.to_string()))
    }
}

/// What a reverse step leaves for the filters before it.
///
/// Most filters consume a header from the front of the metadata and pass the rest on;
/// compression and encryption rebuild the metadata from their own data. Returning an
/// offset instead of a copy keeps pass-through steps free.
#[derive(Debug)]
pub(crate) enum Md {
    /// The input metadata minus its first `n` bytes.
    Tail(usize),
    /// Metadata recovered from the data (compression, encryption).
    New(Vec<u8>),
}

#[derive(Debug)]
pub(crate) struct Step {
    pub md: Md,
    /// `None` when the data passes through unchanged (checksums, no-op filters).
    pub data: Option<Vec<u8>>,
}

impl Step {
    /// A filter that did nothing in this context (NONE, or a type it does not act on).
    pub fn passthrough() -> Step {
        Step {
            md: Md::Tail(0),
            data: None,
        }
    }

    pub fn tail(consumed: usize, data: Vec<u8>) -> Step {
        Step {
            md: Md::Tail(consumed),
            data: Some(data),
        }
    }
}

/// Reads the `u32` part count and `u32` part sizes that BYTESHUFFLE, BITSHUFFLE, XOR,
/// SCALE_FLOAT and WEBP put in front of the metadata. The count is checked against the
/// bytes present before anything is allocated.
pub(crate) fn read_part_sizes(
    r: &mut Reader,
    filter: &'static str,
) -> Result<Vec<usize>, FilterError> {
    let at = r.offset();
    let count = r.u32("part count").for_filter(filter)?;
    r.check_count(count as u64, 4, "part count", at)
        .for_filter(filter)?;
    (0..count)
        .map(|_| r.u32("part size").map(|s| s as usize).for_filter(filter))
        .collect()
}

/// Cuts `data` into consecutive parts of the given sizes, which must cover it exactly: a
/// filter's data is exactly what its forward run produced, so any difference means the
/// header and the data disagree.
pub(crate) fn split_parts<'a>(
    data: &'a [u8],
    sizes: &[usize],
    filter: &'static str,
) -> Result<Vec<&'a [u8]>, FilterError> {
    let total = sizes
        .iter()
        .try_fold(0usize, |acc, &s| acc.checked_add(s))
        .ok_or_else(|| corrupt(filter, "part sizes overflow"))?;
    if total != data.len() {
        return Err(corrupt(
            filter,
            format!(
                "header lists {} parts totalling {total} bytes, but the data is {} bytes",
                sizes.len(),
                data.len()
            ),
        ));
    }
    let mut rest = data;
    let mut parts = Vec::with_capacity(sizes.len());
    for &size in sizes {
        let (part, tail) = rest
            .split_at_checked(size)
            .ok_or_else(|| corrupt(filter, "part extends past the data"))?;
        parts.push(part);
        rest = tail;
    }
    Ok(parts)
}

/// Reads a little-endian unsigned integer of 1 to 8 bytes.
pub(crate) fn le_uint(bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .rev()
        .fold(0u64, |acc, &b| (acc << 8) | u64::from(b))
}

/// Reads a big-endian unsigned integer of 1 to 8 bytes (string-mode lengths and ids).
pub(crate) fn be_uint(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0u64, |acc, &b| (acc << 8) | u64::from(b))
}

/// Appends the low `width` bytes of `value`, little-endian.
pub(crate) fn push_le(out: &mut Vec<u8>, value: u64, width: usize) {
    out.extend(value.to_le_bytes().iter().take(width));
}

/// All-ones in the low `width` bytes: arithmetic "in T" is arithmetic mod 2^(8·width).
pub(crate) fn mask(width: usize) -> u64 {
    if width >= 8 {
        u64::MAX
    } else {
        (1u64 << (8 * width)) - 1
    }
}

/// Sign-extends the low `width` bytes of `value` to 64 bits.
pub(crate) fn sign_extend(value: u64, width: usize) -> u64 {
    if width == 0 || width >= 8 {
        return value;
    }
    let shift = 64 - 8 * width as u32;
    (((value << shift) as i64) >> shift) as u64
}

/// The element width DELTA and DOUBLE_DELTA work in (`05` §3.4). Signedness does not
/// matter for them: their arithmetic is done in `i64` and truncated to the width, which
/// is the same modulo 2^(8·width) whatever the extension. Strings of any width and ANY
/// are handled as bytes, exactly as TileDB's compressor switch does.
pub(crate) fn delta_width(t: Datatype, filter: &'static str) -> Result<usize, FilterError> {
    if t.is_float() {
        return Err(unsupported(
            filter,
            format!(
                "{} values cannot be delta-encoded (TileDB rejects floats)",
                t.name()
            ),
        ));
    }
    if t.is_string() || t == Datatype::Any {
        return Ok(1);
    }
    Ok(t.size() as usize)
}

/// The element type BIT_WIDTH_REDUCTION acts on, or `None` where it is a no-op
/// (`05` §3.7): 16- to 64-bit integers, and DATETIME/TIME only from format 20 on.
pub(crate) fn bit_width_kind(t: Datatype, format_version: u32) -> Option<ElementKind> {
    match t {
        Datatype::Int16 => Some(ElementKind::I16),
        Datatype::UInt16 => Some(ElementKind::U16),
        Datatype::Int32 => Some(ElementKind::I32),
        Datatype::UInt32 => Some(ElementKind::U32),
        Datatype::Int64 => Some(ElementKind::I64),
        Datatype::UInt64 => Some(ElementKind::U64),
        t if t.is_temporal() && format_version >= 20 => Some(ElementKind::I64),
        _ => None,
    }
}

/// The element width POSITIVE_DELTA acts on, or `None` where it is a no-op (`05` §3.8).
/// Unlike BIT_WIDTH_REDUCTION it does act on 8-bit integers and the byte types.
pub(crate) fn positive_delta_width(t: Datatype, format_version: u32) -> Option<usize> {
    match t {
        Datatype::Int8
        | Datatype::UInt8
        | Datatype::Bool
        | Datatype::Blob
        | Datatype::GeomWkb
        | Datatype::GeomWkt => Some(1),
        Datatype::Int16 | Datatype::UInt16 => Some(2),
        Datatype::Int32 | Datatype::UInt32 => Some(4),
        Datatype::Int64 | Datatype::UInt64 => Some(8),
        t if t.is_temporal() && format_version >= 20 => Some(8),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_of_any_width() {
        assert_eq!(le_uint(&[0x34, 0x12]), 0x1234);
        assert_eq!(be_uint(&[0x12, 0x34]), 0x1234);
        assert_eq!(sign_extend(0xff, 1), u64::MAX);
        assert_eq!(sign_extend(0x7f, 1), 0x7f);
        assert_eq!(mask(3), 0xff_ffff);
        let mut v = Vec::new();
        push_le(&mut v, 0x0102_0304, 3);
        assert_eq!(v, [4, 3, 2]);
    }

    #[test]
    fn part_lists_must_cover_the_data() {
        let md = [2, 0, 0, 0, 3, 0, 0, 0, 1, 0, 0, 0];
        let sizes = read_part_sizes(&mut Reader::new(&md), "X").unwrap();
        assert_eq!(sizes, [3, 1]);
        assert_eq!(
            split_parts(b"abcd", &sizes, "X").unwrap(),
            [&b"abc"[..], b"d"]
        );
        assert!(split_parts(b"abcde", &sizes, "X").is_err());
        // A count far larger than the header can hold is refused before allocating.
        let err = read_part_sizes(&mut Reader::new(&[0xff, 0xff, 0xff, 0xff]), "X").unwrap_err();
        assert!(err.to_string().starts_with("X: "), "{err}");
    }

    #[test]
    fn type_rules() {
        assert_eq!(bit_width_kind(Datatype::UInt8, 22), None);
        assert_eq!(bit_width_kind(Datatype::DatetimeMs, 19), None);
        assert_eq!(
            bit_width_kind(Datatype::DatetimeMs, 20),
            Some(ElementKind::I64)
        );
        assert_eq!(positive_delta_width(Datatype::Int8, 1), Some(1));
        assert_eq!(positive_delta_width(Datatype::Char, 22), None);
        assert_eq!(positive_delta_width(Datatype::Float32, 22), None);
        assert_eq!(positive_delta_width(Datatype::TimeNs, 19), None);
        assert_eq!(delta_width(Datatype::StringUtf16, "D").unwrap(), 1);
        assert!(delta_width(Datatype::Float64, "D").is_err());
    }
}
