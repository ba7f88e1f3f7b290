//! RLE and DICTIONARY in "string mode" (`05` §4): the first filter of a var-size
//! ASCII/UTF-8 string tile encodes whole strings and swallows the offsets tile, so
//! decoding yields both the string bytes and one offset per cell.
//!
//! Header (read from the front of the metadata): `u32` 0 metadata parts, `u32` 1 data
//! part, `u32` string bytes, `u32` encoded bytes, `u32` offsets bytes (8 per cell), then
//! for RLE the run-length and string-length widths (`u8` each), for DICTIONARY the
//! word-id and string-length widths, a `u32` dictionary size and the dictionary. All
//! lengths and ids inside the data and dictionary are big-endian.

use super::util::{be_uint, corrupt, ForFilter};
use super::FilterError;
use crate::format::Reader;

/// A var-size string tile decoded in "string mode" (RLE/DICTIONARY with embedded offsets).
#[derive(Debug, Clone, PartialEq)]
pub struct StringChunk {
    /// Concatenated string bytes.
    pub bytes: Vec<u8>,
    /// Start of each string in `bytes` (first is 0), one per cell, no end entry.
    pub offsets: Vec<u64>,
}

/// Cells an encoded tile may claim beyond one per string byte. Empty strings cost no
/// string bytes and RLE can repeat one for free, so the cell count is not bounded by
/// anything else in the chunk; this cap bounds the offsets allocation (8 bytes per
/// cell) for corrupt input while leaving room for tiles of millions of empty strings.
const MAX_EXTRA_CELLS: u64 = 1 << 22;

#[derive(Debug, Clone, Copy)]
pub(crate) enum Mode {
    Rle,
    Dictionary,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Rle => "RLE",
            Mode::Dictionary => "DICTIONARY",
        }
    }
}

/// Decodes the strings of one chunk, which must total `expected` bytes. Returns them with
/// the number of metadata bytes the header used.
pub(crate) fn decode(
    mode: Mode,
    md: &[u8],
    data: &[u8],
    expected: usize,
) -> Result<(StringChunk, usize), FilterError> {
    let name = mode.name();
    let mut r = Reader::new(md);
    let md_parts = r.u32("metadata part count").for_filter(name)?;
    let data_parts = r.u32("data part count").for_filter(name)?;
    if (md_parts, data_parts) != (0, 1) {
        return Err(corrupt(
            name,
            format!(
                "string-mode header lists {md_parts} metadata and {data_parts} data parts, expected 0 and 1"
            ),
        ));
    }
    let string_bytes = r.u32("string bytes").for_filter(name)?;
    let encoded_bytes = r.u32("encoded bytes").for_filter(name)?;
    let offsets_bytes = r.u32("offsets bytes").for_filter(name)?;
    if string_bytes as usize != expected {
        return Err(corrupt(
            name,
            format!("header says {string_bytes} string bytes, the chunk says {expected}"),
        ));
    }
    if encoded_bytes as usize != data.len() {
        return Err(corrupt(
            name,
            format!(
                "header says {encoded_bytes} encoded bytes, but the data is {} bytes",
                data.len()
            ),
        ));
    }
    if offsets_bytes % 8 != 0 {
        return Err(corrupt(
            name,
            format!("offsets size {offsets_bytes} is not a multiple of 8"),
        ));
    }
    let cells = u64::from(offsets_bytes / 8);
    if cells > expected as u64 + MAX_EXTRA_CELLS {
        return Err(corrupt(
            name,
            format!("{cells} cells for {expected} string bytes is implausible"),
        ));
    }
    let mut out = Output::new(name, cells, expected);
    match mode {
        Mode::Rle => {
            let run_width = width(&mut r, name, "run-length width")?;
            let len_width = width(&mut r, name, "string-length width")?;
            let mut rest = data;
            while !rest.is_empty() {
                let run = take(&mut rest, run_width, name, "run length")?;
                let len = take(&mut rest, len_width, name, "string length")?;
                let string = usize::try_from(len)
                    .ok()
                    .and_then(|len| rest.split_at_checked(len))
                    .map(|(s, tail)| {
                        rest = tail;
                        s
                    })
                    .ok_or_else(|| {
                        corrupt(name, format!("string of {len} bytes runs past the data"))
                    })?;
                out.push(string, run)?;
            }
        }
        Mode::Dictionary => {
            let id_width = width(&mut r, name, "word-id width")?;
            let len_width = width(&mut r, name, "string-length width")?;
            let dict_len = r.u32("dictionary size").for_filter(name)?;
            let dict = r
                .bytes(u64::from(dict_len), "dictionary")
                .for_filter(name)?;
            let words = parse_dictionary(dict, len_width, name)?;
            if !data.len().is_multiple_of(id_width) {
                return Err(corrupt(
                    name,
                    format!(
                        "{} bytes is not a whole number of {id_width}-byte ids",
                        data.len()
                    ),
                ));
            }
            for id in data.chunks_exact(id_width) {
                let id = be_uint(id);
                let word = usize::try_from(id)
                    .ok()
                    .and_then(|i| words.get(i))
                    .ok_or_else(|| {
                        corrupt(
                            name,
                            format!("word id {id}, but the dictionary has {} words", words.len()),
                        )
                    })?;
                out.push(word, 1)?;
            }
        }
    }
    Ok((out.finish()?, r.offset() as usize))
}

fn width(r: &mut Reader, name: &'static str, field: &'static str) -> Result<usize, FilterError> {
    match r.u8(field).for_filter(name)? {
        w @ (1 | 2 | 4 | 8) => Ok(usize::from(w)),
        w => Err(corrupt(name, format!("{field} is {w}, not 1, 2, 4 or 8"))),
    }
}

/// Takes a big-endian integer of `width` bytes off the front of `rest`.
fn take(
    rest: &mut &[u8],
    width: usize,
    name: &'static str,
    field: &str,
) -> Result<u64, FilterError> {
    let (bytes, tail) = rest
        .split_at_checked(width)
        .ok_or_else(|| corrupt(name, format!("data ends inside a {field}")))?;
    *rest = tail;
    Ok(be_uint(bytes))
}

/// Splits the dictionary into its words: `[length][bytes]` entries with no leading
/// count. A writer that did not trim its preallocated buffer leaves zero bytes at the
/// end; they read as empty words no id refers to, and a zero stub shorter than a length
/// field is ignored.
fn parse_dictionary<'a>(
    mut dict: &'a [u8],
    len_width: usize,
    name: &'static str,
) -> Result<Vec<&'a [u8]>, FilterError> {
    let mut words = Vec::new();
    while dict.len() >= len_width {
        let len = take(&mut dict, len_width, name, "dictionary word length")?;
        let (word, tail) = usize::try_from(len)
            .ok()
            .and_then(|len| dict.split_at_checked(len))
            .ok_or_else(|| {
                corrupt(
                    name,
                    format!("dictionary word of {len} bytes runs past the dictionary"),
                )
            })?;
        words.push(word);
        dict = tail;
    }
    if dict.iter().any(|&b| b != 0) {
        return Err(corrupt(name, "dictionary ends inside a word length"));
    }
    Ok(words)
}

/// Collects strings and their offsets, refusing to go past the header's cell count or
/// string size before anything is copied.
struct Output {
    name: &'static str,
    cells: u64,
    expected: usize,
    bytes: Vec<u8>,
    offsets: Vec<u64>,
}

impl Output {
    fn new(name: &'static str, cells: u64, expected: usize) -> Self {
        Output {
            name,
            cells,
            expected,
            // `expected` is the chunk header's claim, checked only as strings arrive:
            // reserve a bounded amount and let the bytes grow with the real output.
            bytes: Vec::with_capacity(expected.min(1 << 20)),
            offsets: Vec::with_capacity(cells.min(1 << 16) as usize),
        }
    }

    fn push(&mut self, string: &[u8], copies: u64) -> Result<(), FilterError> {
        let cells_left = self.cells - self.offsets.len() as u64;
        if copies > cells_left {
            return Err(corrupt(
                self.name,
                format!(
                    "more strings than the {} cells the header announces",
                    self.cells
                ),
            ));
        }
        let added = (string.len() as u64).checked_mul(copies);
        let bytes_left = (self.expected - self.bytes.len()) as u64;
        if added.is_none_or(|n| n > bytes_left) {
            return Err(corrupt(
                self.name,
                format!(
                    "strings exceed the {} bytes the header announces",
                    self.expected
                ),
            ));
        }
        for _ in 0..copies {
            self.offsets.push(self.bytes.len() as u64);
            self.bytes.extend_from_slice(string);
        }
        Ok(())
    }

    fn finish(self) -> Result<StringChunk, FilterError> {
        if self.offsets.len() as u64 != self.cells || self.bytes.len() != self.expected {
            return Err(corrupt(
                self.name,
                format!(
                    "decoded {} strings of {} bytes, header says {} strings of {} bytes",
                    self.offsets.len(),
                    self.bytes.len(),
                    self.cells,
                    self.expected
                ),
            ));
        }
        Ok(StringChunk {
            bytes: self.bytes,
            offsets: self.offsets,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::test_support::{dictionary_string_encode, rle_string_encode};

    fn strings() -> Vec<&'static [u8]> {
        vec![b"ab", b"ab", b"ab", b"", b"xyz", b"xyz", b"ab", b""]
    }

    fn expected(strings: &[&[u8]]) -> StringChunk {
        let mut bytes = Vec::new();
        let mut offsets = Vec::new();
        for s in strings {
            offsets.push(bytes.len() as u64);
            bytes.extend_from_slice(s);
        }
        StringChunk { bytes, offsets }
    }

    #[test]
    fn rle_header_layout_and_decoding() {
        let s = strings();
        let (md, data) = rle_string_encode(&s);
        // 0 md parts, 1 data part, 14 string bytes, encoded size, 64 offset bytes, widths.
        assert_eq!(&md[..12], &[0, 0, 0, 0, 1, 0, 0, 0, 14, 0, 0, 0]);
        assert_eq!(&md[16..20], &[64, 0, 0, 0]);
        assert_eq!(&md[20..22], &[1, 1]);
        assert_eq!(md.len(), 22);
        // First record: 3 × "ab", big-endian single bytes.
        assert_eq!(&data[..4], &[3, 2, b'a', b'b']);
        let (chunk, used) = decode(Mode::Rle, &md, &data, 14).unwrap();
        assert_eq!(used, 22);
        assert_eq!(chunk, expected(&s));
    }

    #[test]
    fn rle_with_wide_big_endian_fields() {
        // 300 copies of a 260-byte string: both widths are 2 bytes.
        let long = vec![b'q'; 260];
        let s: Vec<&[u8]> = std::iter::repeat_n(&long[..], 300).collect();
        let (md, data) = rle_string_encode(&s);
        assert_eq!(&md[20..22], &[2, 2]);
        assert_eq!(&data[..4], &[0x01, 0x2c, 0x01, 0x04]);
        let (chunk, _) = decode(Mode::Rle, &md, &data, 260 * 300).unwrap();
        assert_eq!(chunk, expected(&s));
    }

    #[test]
    fn dictionary_header_layout_and_decoding() {
        let s = strings();
        let (md, data) = dictionary_string_encode(&s);
        // ids are 1 byte, lengths 1 byte, dictionary = [2]ab [0] [3]xyz.
        assert_eq!(&md[20..22], &[1, 1]);
        assert_eq!(&md[22..26], &[8, 0, 0, 0]);
        assert_eq!(&md[26..], &[2, b'a', b'b', 0, 3, b'x', b'y', b'z']);
        assert_eq!(data, [0, 0, 0, 1, 2, 2, 0, 1]);
        let (chunk, used) = decode(Mode::Dictionary, &md, &data, 14).unwrap();
        assert_eq!(used, md.len());
        assert_eq!(chunk, expected(&s));
    }

    #[test]
    fn dictionary_with_two_byte_ids_and_trailing_zeros() {
        let words: Vec<Vec<u8>> = (0..300u32).map(|i| i.to_string().into_bytes()).collect();
        let s: Vec<&[u8]> = words.iter().map(|w| &w[..]).collect();
        let (mut md, data) = dictionary_string_encode(&s);
        assert_eq!(md[20], 2, "300 strings need 2-byte ids");
        assert_eq!(&data[data.len() - 2..], &[0x01, 0x2b]); // id 299, big-endian
        let total: usize = s.iter().map(|w| w.len()).sum();
        let plain = decode(Mode::Dictionary, &md, &data, total).unwrap().0;
        // An untrimmed dictionary buffer: three zero bytes appended.
        let size = u32::from_le_bytes(md[22..26].try_into().unwrap()) + 3;
        md[22..26].copy_from_slice(&size.to_le_bytes());
        md.extend([0, 0, 0]);
        assert_eq!(
            decode(Mode::Dictionary, &md, &data, total).unwrap().0,
            plain
        );
        assert_eq!(plain, expected(&s));
    }

    #[test]
    fn corrupt_string_tiles_are_errors() {
        let s = strings();
        let (md, data) = rle_string_encode(&s);
        assert!(decode(Mode::Rle, &md, &data, 15).is_err()); // wrong string size
        assert!(decode(Mode::Rle, &md[..21], &data, 14).is_err()); // truncated header
        assert!(decode(Mode::Rle, &md, &data[..data.len() - 1], 14).is_err());
        let mut bad = md.clone();
        bad[16..20].copy_from_slice(&56u32.to_le_bytes()); // one cell fewer
        assert!(decode(Mode::Rle, &bad, &data, 14).is_err());
        let mut bad = md.clone();
        bad[16..20].copy_from_slice(&(!7u32).to_le_bytes()); // absurd cell count
        assert!(decode(Mode::Rle, &bad, &data, 14).is_err());
        let mut bad = md.clone();
        bad[20] = 3; // width 3
        assert!(decode(Mode::Rle, &bad, &data, 14).is_err());
        let mut huge_run = data.clone();
        huge_run[0] = 0xff;
        assert!(decode(Mode::Rle, &md, &huge_run, 14).is_err());
        // Not string mode at all: an ordinary compression header.
        assert!(decode(Mode::Rle, &[1, 0, 0, 0, 1, 0, 0, 0], &data, 14).is_err());

        let (md, data) = dictionary_string_encode(&s);
        let mut bad_id = data.clone();
        bad_id[0] = 9;
        assert!(decode(Mode::Dictionary, &md, &bad_id, 14).is_err());
        let mut bad_dict = md.clone();
        let last = bad_dict.len() - 4;
        bad_dict[last] = 200; // "xyz" entry claims 200 bytes
        assert!(decode(Mode::Dictionary, &bad_dict, &data, 14).is_err());
    }
}
