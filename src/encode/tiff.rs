//! `values.tif`: the layout of an uncompressed, strip-organised TIFF (TIFF 6.0) or BigTIFF
//! file whose image data is a raster's `values.bin` as it is. Pure code over numbers and
//! byte slices: the face (`view/tiledb/faces/tiff.rs`) feeds it a raster's shape and type
//! and splices the values after the header this module computes.
//!
//! The file is: the image file header (TIFF 6.0 section 2 "Image File Header"; BigTIFF:
//! version 43, 8-byte offsets), one IFD right after it, the IFD's out-of-line values
//! (small arrays and strings, then StripOffsets and StripByteCounts), zero padding to
//! [`DATA_ALIGN`], then the image data: band after band (PlanarConfiguration 2), row
//! after row, little-endian ("II"). Every strip is `RowsPerStrip` whole rows of one band
//! (the last strip of a band may be shorter), so strip `k` starts at
//! `data + k / spb * band_bytes + k % spb * RowsPerStrip * row_bytes`: offsets are
//! computed, and the strip arrays are never held whole (a BigTIFF of 10^5 strips has a
//! header of megabytes; a read of 4 KiB of it makes 4 KiB).

/// What a TIFF sample is: `BitsPerSample` and `SampleFormat` (1 unsigned, 2 signed,
/// 3 IEEE float; TIFF 6.0 section 19 "Data Sample Format").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    pub bits: u16,
    pub format: u16,
}

impl Sample {
    pub const fn uint(bits: u16) -> Sample {
        Sample { bits, format: 1 }
    }
    pub const fn int(bits: u16) -> Sample {
        Sample { bits, format: 2 }
    }
    pub const fn float(bits: u16) -> Sample {
        Sample { bits, format: 3 }
    }
    fn bytes(self) -> u64 {
        u64::from(self.bits / 8)
    }
}

/// The raster a file describes.
#[derive(Debug, Clone, PartialEq)]
pub struct Image {
    /// Bands (1 for a 2-D raster), rows (ImageLength), columns (ImageWidth).
    pub bands: u64,
    pub rows: u64,
    pub cols: u64,
    pub sample: Sample,
    /// `ImageDescription` (ASCII; a NUL inside is replaced).
    pub description: String,
    /// The `GDAL_NODATA` text (tag 42113, as GDAL writes it), if any.
    pub nodata: Option<String>,
    /// The model coordinates of the first pixel's upper-left corner, with a pixel size of
    /// 1: `ModelTiepointTag` (0, 0, 0, x, y, 0) and `ModelPixelScaleTag` (1, 1, 0), which
    /// GDAL reports as the origin (no GeoKeyDirectory: no CRS).
    pub origin: Option<(f64, f64)>,
}

/// Classic TIFF while the whole file stays below 4 GiB (every offset and byte count is
/// then a LONG); BigTIFF above.
pub const CLASSIC_LIMIT: u64 = u32::MAX as u64;

/// Where the image data starts is rounded up to this (readers that map the file get
/// aligned samples).
pub const DATA_ALIGN: u64 = 16;

/// A strip holds whole rows, about this many bytes (at least one row).
pub const STRIP_TARGET: u64 = 256 << 10;

// TIFF field types (TIFF 6.0 section 2; LONG8 from BigTIFF).
const ASCII: u16 = 2;
const SHORT: u16 = 3;
const LONG: u16 = 4;
const RATIONAL: u16 = 5;
const DOUBLE: u16 = 12;
const LONG8: u16 = 16;

/// One IFD entry's value: inline when it fits in the entry, else at `offset`.
#[derive(Debug)]
enum Payload {
    Bytes(Vec<u8>),
    /// The strip arrays, computed element by element (see [`Layout::strip`]).
    StripOffsets,
    StripByteCounts,
}

#[derive(Debug)]
struct Entry {
    tag: u16,
    kind: u16,
    count: u64,
    payload: Payload,
    /// Where the value is when it does not fit in the entry.
    offset: Option<u64>,
}

/// A computed file: sizes and offsets, and the header bytes on demand.
#[derive(Debug)]
pub struct Layout {
    pub big: bool,
    pub image: Image,
    pub rows_per_strip: u64,
    /// Strips per band, and in all.
    pub strips_per_band: u64,
    pub strips: u64,
    pub row_bytes: u64,
    pub band_bytes: u64,
    /// The header's length: where the image data (`values.bin`) starts.
    pub data_offset: u64,
    /// The image data's length: `values.bin`'s size.
    pub data_len: u64,
    entries: Vec<Entry>,
    /// The small out-of-line values, placed right after the IFD.
    extra: Vec<u8>,
    extra_at: u64,
}

fn overflow(what: &str) -> String {
    format!("{what}: the size overflows")
}

fn mul(a: u64, b: u64, what: &str) -> Result<u64, String> {
    a.checked_mul(b).ok_or_else(|| overflow(what))
}

fn add(a: u64, b: u64, what: &str) -> Result<u64, String> {
    a.checked_add(b).ok_or_else(|| overflow(what))
}

fn round_up(x: u64, to: u64, what: &str) -> Result<u64, String> {
    Ok(add(x, to - 1, what)? / to * to)
}

impl Layout {
    /// The layout of `image`: classic TIFF if the whole file is below [`CLASSIC_LIMIT`],
    /// else BigTIFF. `Err` says why the raster cannot be a TIFF (a dimension beyond what
    /// its tag holds, a size that overflows).
    pub fn new(image: Image) -> Result<Layout, String> {
        // A classic layout exists only below the limit (`with` checks it).
        match Layout::with(image.clone(), false) {
            Ok(classic) => Ok(classic),
            Err(_) => Layout::with(image, true),
        }
    }

    /// The layout of `image` as classic TIFF (`big` false) or BigTIFF.
    pub fn with(image: Image, big: bool) -> Result<Layout, String> {
        if image.bands == 0 || image.rows == 0 || image.cols == 0 {
            return Err("an empty raster".into());
        }
        if !matches!(image.sample.bits, 8 | 16 | 32 | 64) {
            return Err(format!("{} bits per sample", image.sample.bits));
        }
        // ImageWidth and ImageLength are LONG, SamplesPerPixel a SHORT (also in BigTIFF).
        for (what, n, max) in [
            ("ImageWidth", image.cols, u64::from(u32::MAX)),
            ("ImageLength", image.rows, u64::from(u32::MAX)),
            ("SamplesPerPixel", image.bands, u64::from(u16::MAX)),
        ] {
            if n > max {
                return Err(format!("{what} {n} is more than a TIFF holds ({max})"));
            }
        }
        let row_bytes = mul(image.cols, image.sample.bytes(), "a row")?;
        let band_bytes = mul(row_bytes, image.rows, "a band")?;
        let data_len = mul(band_bytes, image.bands, "the image data")?;
        let rows_per_strip = (STRIP_TARGET / row_bytes).clamp(1, image.rows);
        let strips_per_band = image.rows.div_ceil(rows_per_strip);
        let strips = mul(strips_per_band, image.bands, "StripOffsets")?;
        let strip_bytes = mul(rows_per_strip, row_bytes, "a strip")?;
        if !big && strip_bytes > CLASSIC_LIMIT {
            return Err(format!("a strip of {strip_bytes} bytes in classic TIFF"));
        }

        let bands = image.bands as u16; // checked above
        let short = |v: u16| v.to_le_bytes().to_vec();
        let shorts = |v: u16, n: u16| -> Vec<u8> { (0..n).flat_map(|_| v.to_le_bytes()).collect() };
        let long = |v: u32| v.to_le_bytes().to_vec();
        let ascii = |s: &str| -> Vec<u8> {
            let mut b: Vec<u8> = s.bytes().map(|c| if c == 0 { b' ' } else { c }).collect();
            b.push(0);
            b
        };
        let doubles = |v: &[f64]| -> Vec<u8> { v.iter().flat_map(|x| x.to_le_bytes()).collect() };
        let rational_one = [1u32.to_le_bytes(), 1u32.to_le_bytes()].concat();
        let e = |tag: u16, kind: u16, count: u64, bytes: Vec<u8>| Entry {
            tag,
            kind,
            count,
            payload: Payload::Bytes(bytes),
            offset: None,
        };
        let strip_kind = if big { LONG8 } else { LONG };
        let description = ascii(&image.description);
        let mut entries = vec![
            e(256, LONG, 1, long(image.cols as u32)),
            e(257, LONG, 1, long(image.rows as u32)),
            e(
                258,
                SHORT,
                u64::from(bands),
                shorts(image.sample.bits, bands),
            ),
            // Compression: none.
            e(259, SHORT, 1, short(1)),
            // PhotometricInterpretation: BlackIsZero.
            e(262, SHORT, 1, short(1)),
            e(270, ASCII, description.len() as u64, description),
            Entry {
                tag: 273,
                kind: strip_kind,
                count: strips,
                payload: Payload::StripOffsets,
                offset: None,
            },
            e(277, SHORT, 1, short(bands)),
            e(278, LONG, 1, long(rows_per_strip as u32)),
            Entry {
                tag: 279,
                kind: strip_kind,
                count: strips,
                payload: Payload::StripByteCounts,
                offset: None,
            },
            // XResolution, YResolution 1/1, ResolutionUnit none: required by baseline
            // TIFF 6.0, meaningless here.
            e(282, RATIONAL, 1, rational_one.clone()),
            e(283, RATIONAL, 1, rational_one),
            // PlanarConfiguration: 1 (chunky) for one band, 2 (planar) for several.
            e(284, SHORT, 1, short(if bands > 1 { 2 } else { 1 })),
            e(296, SHORT, 1, short(1)),
        ];
        if bands > 1 {
            // ExtraSamples: unspecified; BlackIsZero has one colour channel, the other
            // bands are extra samples (as GDAL writes a multi-band grey image).
            entries.push(e(338, SHORT, u64::from(bands - 1), shorts(0, bands - 1)));
        }
        entries.push(e(
            339,
            SHORT,
            u64::from(bands),
            shorts(image.sample.format, bands),
        ));
        if let Some((x, y)) = image.origin {
            entries.push(e(33550, DOUBLE, 3, doubles(&[1.0, 1.0, 0.0])));
            entries.push(e(33922, DOUBLE, 6, doubles(&[0.0, 0.0, 0.0, x, y, 0.0])));
        }
        if let Some(nodata) = &image.nodata {
            let text = ascii(nodata);
            entries.push(e(42113, ASCII, text.len() as u64, text));
        }

        // Placement: header, IFD, small out-of-line values, strip arrays, padding.
        let (head, entry_len, count_len, next_len, inline) = if big {
            (16u64, 20u64, 8u64, 8u64, 8u64)
        } else {
            (8, 12, 2, 4, 4)
        };
        let ifd_len = count_len + entry_len * entries.len() as u64 + next_len;
        let extra_at = head + ifd_len;
        let mut extra = Vec::new();
        for entry in &mut entries {
            if let Payload::Bytes(bytes) = &entry.payload {
                if bytes.len() as u64 > inline {
                    entry.offset = Some(extra_at + extra.len() as u64);
                    extra.extend_from_slice(bytes);
                    // Values start on a word boundary (TIFF 6.0 section 2).
                    if extra.len() % 2 == 1 {
                        extra.push(0);
                    }
                }
            }
        }
        let width = if big { 8 } else { 4 };
        let arrays = mul(strips, width, "StripOffsets")?;
        let mut at = add(extra_at, extra.len() as u64, "the IFD values")?;
        for entry in &mut entries {
            if !matches!(entry.payload, Payload::Bytes(_)) {
                // One strip fits inline: the entry holds its value.
                if arrays > inline {
                    entry.offset = Some(at);
                    at = add(at, arrays, "StripByteCounts")?;
                }
            }
        }
        let data_offset = round_up(at, DATA_ALIGN, "the header")?;
        if !big && add(data_offset, data_len, "file size")? > CLASSIC_LIMIT {
            return Err("more than 4 GiB in classic TIFF".into());
        }
        Ok(Layout {
            big,
            image,
            rows_per_strip,
            strips_per_band,
            strips,
            row_bytes,
            band_bytes,
            data_offset,
            data_len,
            entries,
            extra,
            extra_at,
        })
    }

    /// The whole file's size.
    pub fn file_len(&self) -> u64 {
        self.data_offset.saturating_add(self.data_len)
    }

    /// Strip `k`'s offset in the file and its byte count (`k` < `strips`).
    pub fn strip(&self, k: u64) -> (u64, u64) {
        let (band, s) = (k / self.strips_per_band, k % self.strips_per_band);
        let first_row = s * self.rows_per_strip;
        let rows = self.rows_per_strip.min(self.image.rows - first_row);
        // No overflow: every strip lies inside the data, whose end was checked.
        let offset = self.data_offset + band * self.band_bytes + first_row * self.row_bytes;
        (offset, rows * self.row_bytes)
    }

    /// The bytes of one strip array element (offset or byte count of strip `k`).
    fn strip_element(&self, counts: bool, k: u64, out: &mut Vec<u8>) {
        let (offset, count) = self.strip(k);
        let v = if counts { count } else { offset };
        if self.big {
            out.extend_from_slice(&v.to_le_bytes());
        } else {
            // Classic files are below 4 GiB: every offset and count fits.
            out.extend_from_slice(&(v as u32).to_le_bytes());
        }
    }

    /// The IFD and the file header, which are small: made whole.
    fn head(&self) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(b"II");
        if self.big {
            out.extend_from_slice(&43u16.to_le_bytes());
            out.extend_from_slice(&8u16.to_le_bytes());
            out.extend_from_slice(&0u16.to_le_bytes());
            out.extend_from_slice(&16u64.to_le_bytes());
            out.extend_from_slice(&(self.entries.len() as u64).to_le_bytes());
        } else {
            out.extend_from_slice(&42u16.to_le_bytes());
            out.extend_from_slice(&8u32.to_le_bytes());
            out.extend_from_slice(&(self.entries.len() as u16).to_le_bytes());
        }
        let inline = if self.big { 8 } else { 4 };
        for entry in &self.entries {
            out.extend_from_slice(&entry.tag.to_le_bytes());
            out.extend_from_slice(&entry.kind.to_le_bytes());
            if self.big {
                out.extend_from_slice(&entry.count.to_le_bytes());
            } else {
                out.extend_from_slice(&(entry.count as u32).to_le_bytes());
            }
            let mut value = Vec::with_capacity(inline);
            match (entry.offset, &entry.payload) {
                (Some(at), _) if self.big => value.extend_from_slice(&at.to_le_bytes()),
                (Some(at), _) => value.extend_from_slice(&(at as u32).to_le_bytes()),
                (None, Payload::Bytes(bytes)) => value.extend_from_slice(bytes),
                (None, Payload::StripOffsets) => self.strip_element(false, 0, &mut value),
                (None, Payload::StripByteCounts) => self.strip_element(true, 0, &mut value),
            }
            value.resize(inline, 0);
            out.extend_from_slice(&value);
        }
        // The next IFD: none.
        out.extend_from_slice(&vec![0u8; if self.big { 8 } else { 4 }]);
        out
    }

    /// Appends bytes `[offset, offset + len)` of the header (the file before
    /// `data_offset`; clipped to it) to `out`. Only the strip array elements under the
    /// range are computed.
    pub fn read_header(&self, offset: u64, len: u64, out: &mut Vec<u8>) {
        let end = offset.saturating_add(len).min(self.data_offset);
        if offset >= end {
            return;
        }
        let head = self.head();
        let mut sections: Vec<(u64, u64, Section<'_>)> = vec![
            (0, head.len() as u64, Section::Bytes(&head)),
            (
                self.extra_at,
                self.extra.len() as u64,
                Section::Bytes(&self.extra),
            ),
        ];
        let width = if self.big { 8 } else { 4 };
        for entry in &self.entries {
            let counts = match entry.payload {
                Payload::StripOffsets => false,
                Payload::StripByteCounts => true,
                Payload::Bytes(_) => continue,
            };
            if let Some(at) = entry.offset {
                sections.push((at, self.strips * width, Section::Strips(counts)));
            }
        }
        let mut pos = offset;
        for (start, slen, section) in sections {
            let send = start + slen;
            if send <= pos || start >= end {
                continue;
            }
            // Padding between sections (and before the data) is zeros.
            if start > pos {
                out.resize(out.len() + (start - pos) as usize, 0);
                pos = start;
            }
            let stop = send.min(end);
            match section {
                Section::Bytes(b) => {
                    out.extend_from_slice(&b[(pos - start) as usize..(stop - start) as usize])
                }
                Section::Strips(counts) => {
                    let (first, last) = ((pos - start) / width, (stop - start).div_ceil(width));
                    let mut elements = Vec::with_capacity(((last - first) * width) as usize);
                    for k in first..last {
                        self.strip_element(counts, k, &mut elements);
                    }
                    let skip = ((pos - start) - first * width) as usize;
                    out.extend_from_slice(&elements[skip..skip + (stop - pos) as usize]);
                }
            }
            pos = stop;
        }
        if end > pos {
            out.resize(out.len() + (end - pos) as usize, 0);
        }
    }
}

enum Section<'a> {
    Bytes(&'a [u8]),
    /// A strip array: byte counts (`true`) or offsets.
    Strips(bool),
}

/// The `GDAL_NODATA` text of a fill value, as GDAL writes it: integers in decimal,
/// floats so that the double read back is the value (`nan`, `inf`, `-inf` spelled as C
/// and GDAL spell them).
pub fn nodata_text_float(v: f64) -> String {
    if v.is_nan() {
        "nan".into()
    } else if v.is_infinite() {
        if v > 0.0 { "inf" } else { "-inf" }.into()
    } else {
        // Rust's shortest round-trip form; `{:?}` keeps exponents for large magnitudes.
        format!("{v:?}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image(bands: u64, rows: u64, cols: u64, sample: Sample) -> Image {
        Image {
            bands,
            rows,
            cols,
            sample,
            description: "d".into(),
            nodata: Some("-1".into()),
            origin: None,
        }
    }

    fn header(l: &Layout) -> Vec<u8> {
        let mut out = Vec::new();
        l.read_header(0, l.data_offset, &mut out);
        out
    }

    fn u16_at(b: &[u8], at: usize) -> u16 {
        u16::from_le_bytes([b[at], b[at + 1]])
    }

    fn u32_at(b: &[u8], at: usize) -> u32 {
        u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
    }

    fn u64_at(b: &[u8], at: usize) -> u64 {
        u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
    }

    /// A 2 x 3 INT16 raster, byte by byte against TIFF 6.0: header, IFD of 16 entries
    /// in ascending tag order, the out-of-line values, padding to the data.
    #[test]
    fn a_tiny_file_byte_by_byte() {
        let l = Layout::new(image(1, 2, 3, Sample::int(16))).unwrap();
        let h = header(&l);
        assert!(!l.big);
        assert_eq!(h.len() as u64, l.data_offset);
        // Image file header: "II", 42, the IFD at 8.
        assert_eq!(&h[..8], &[b'I', b'I', 42, 0, 8, 0, 0, 0]);
        let n = u16_at(&h, 8) as usize;
        assert_eq!(n, 16);
        let entry = |i: usize| {
            let at = 10 + 12 * i;
            (
                u16_at(&h, at),
                u16_at(&h, at + 2),
                u32_at(&h, at + 4),
                u32_at(&h, at + 8),
            )
        };
        let tags: Vec<u16> = (0..n).map(|i| entry(i).0).collect();
        assert_eq!(
            tags,
            [256, 257, 258, 259, 262, 270, 273, 277, 278, 279, 282, 283, 284, 296, 339, 42113]
        );
        let ifd_end = 10 + 12 * n + 4;
        assert_eq!(u32_at(&h, ifd_end - 4), 0, "no next IFD");
        assert_eq!(entry(0), (256, LONG, 1, 3));
        assert_eq!(entry(1), (257, LONG, 1, 2));
        assert_eq!(entry(2), (258, SHORT, 1, 16));
        assert_eq!(entry(3), (259, SHORT, 1, 1));
        assert_eq!(entry(4), (262, SHORT, 1, 1));
        // "d\0" fits inline.
        assert_eq!(entry(5), (270, ASCII, 2, u32::from_le_bytes(*b"d\0\0\0")));
        // One strip of the whole image: its offset and count inline.
        assert_eq!(entry(6), (273, LONG, 1, l.data_offset as u32));
        assert_eq!(entry(7), (277, SHORT, 1, 1));
        assert_eq!(entry(8), (278, LONG, 1, 2));
        assert_eq!(entry(9), (279, LONG, 1, 12));
        // The two RATIONALs are out of line, right after the IFD, then nothing else.
        let (tag, kind, count, at) = entry(10);
        assert_eq!((tag, kind, count, at as usize), (282, RATIONAL, 1, ifd_end));
        assert_eq!(entry(11).3 as usize, ifd_end + 8);
        assert_eq!(&h[ifd_end..ifd_end + 8], &[1, 0, 0, 0, 1, 0, 0, 0]);
        assert_eq!(entry(12), (284, SHORT, 1, 1));
        assert_eq!(entry(13), (296, SHORT, 1, 1));
        assert_eq!(entry(14), (339, SHORT, 1, 2));
        assert_eq!(entry(15), (42113, ASCII, 3, u32::from_le_bytes(*b"-1\0\0")));
        // Zeros up to the data, which starts aligned.
        assert_eq!(l.data_offset, (ifd_end as u64 + 16).div_ceil(16) * 16);
        assert!(h[ifd_end + 16..].iter().all(|&b| b == 0));
        assert_eq!(l.file_len(), l.data_offset + 12);
    }

    /// Several strips and bands: the strip arrays out of line, each strip whole rows of
    /// one band, contiguous, the last of each band shorter; pieces of the header read
    /// at any offset are the same bytes.
    #[test]
    fn strips_and_bands() {
        // 3 bands of 1000 x 100 FLOAT64: 800-byte rows, 327 rows a strip, 4 a band.
        let l = Layout::new(image(3, 1000, 100, Sample::float(64))).unwrap();
        assert_eq!(
            (l.rows_per_strip, l.strips_per_band, l.strips),
            (327, 4, 12)
        );
        let h = header(&l);
        let n = u16_at(&h, 8) as usize;
        let find = |tag: u16| {
            (0..n)
                .map(|i| 10 + 12 * i)
                .find(|&at| u16_at(&h, at) == tag)
                .unwrap()
        };
        let offsets = u32_at(&h, find(273) + 8) as usize;
        let counts = u32_at(&h, find(279) + 8) as usize;
        let mut expect = l.data_offset;
        for k in 0..12 {
            let (o, c) = (u32_at(&h, offsets + 4 * k), u32_at(&h, counts + 4 * k));
            assert_eq!(u64::from(o), expect, "strip {k}");
            let rows = if k % 4 == 3 { 1000 - 3 * 327 } else { 327 };
            assert_eq!(u64::from(c), rows * 800, "strip {k}");
            expect += u64::from(c);
        }
        assert_eq!(expect, l.file_len());
        // PlanarConfiguration 2, ExtraSamples for the two bands past the first,
        // BitsPerSample and SampleFormat per band.
        assert_eq!(u16_at(&h, find(284) + 8), 2);
        assert_eq!(u32_at(&h, find(338) + 4), 2);
        assert_eq!(u32_at(&h, find(338) + 8), 0);
        let bits = u32_at(&h, find(258) + 8) as usize;
        assert_eq!([u16_at(&h, bits), u16_at(&h, bits + 4)], [64, 64]);
        let format = u32_at(&h, find(339) + 8) as usize;
        assert_eq!([u16_at(&h, format), u16_at(&h, format + 4)], [3, 3]);
        for step in [1u64, 3, 7, 64, 1000] {
            let mut pieces = Vec::new();
            let mut at = 0;
            while at < l.data_offset + 10 {
                l.read_header(at, step, &mut pieces);
                at += step;
            }
            assert_eq!(pieces, h, "pieces of {step}");
        }
    }

    /// Above 4 GiB the file is a BigTIFF (version 43, 8-byte offsets, LONG8 strip
    /// arrays); the header needs no data, so a huge shape is laid out without any.
    #[test]
    fn bigtiff_above_4_gib() {
        // 100000 x 100000 FLOAT64: 80 GB, one 800 KB row a strip.
        let l = Layout::new(image(1, 100_000, 100_000, Sample::float(64))).unwrap();
        assert!(l.big);
        assert_eq!((l.rows_per_strip, l.strips), (1, 100_000));
        // Reading the start of the header does not need the strip arrays whole.
        let mut h = Vec::new();
        l.read_header(0, 16, &mut h);
        assert_eq!(
            &h[..],
            &[b'I', b'I', 43, 0, 8, 0, 0, 0, 16, 0, 0, 0, 0, 0, 0, 0]
        );
        let h = header(&l);
        let n = u64_at(&h, 16) as usize;
        let find = |tag: u16| {
            (0..n)
                .map(|i| 24 + 20 * i)
                .find(|&at| u16_at(&h, at) == tag)
                .unwrap()
        };
        let at = find(273);
        assert_eq!(u16_at(&h, at + 2), LONG8);
        assert_eq!(u64_at(&h, at + 4), 100_000);
        let offsets = u64_at(&h, at + 12) as usize;
        let counts = u64_at(&h, find(279) + 12) as usize;
        assert_eq!(u64_at(&h, offsets), l.data_offset);
        assert_eq!(
            u64_at(&h, offsets + 8 * 99_999),
            l.data_offset + 99_999 * 800_000
        );
        assert_eq!(u64_at(&h, counts + 8 * 5), 800_000);
        assert_eq!(l.file_len(), l.data_offset + 80_000_000_000);
        // Both arrays are in the header: 1.6 MB of it.
        assert!(l.data_offset > 1_600_000 && l.data_offset < 1_600_000 + 4096);
    }

    /// The threshold is the whole file's size: just below 4 GiB classic, just above big.
    #[test]
    fn the_threshold_is_the_file_size() {
        // 65000 x 65535 UINT8 is 4259775000 bytes: with its header, below 2^32 - 1.
        let below = Layout::new(image(1, 65_000, 65_535, Sample::uint(8))).unwrap();
        assert!(!below.big && below.file_len() <= CLASSIC_LIMIT);
        // 65535 x 65535 is 4294836225 bytes, but its 16384 strips' arrays push it over.
        let over = Layout::new(image(1, 65_535, 65_535, Sample::uint(8))).unwrap();
        assert!(over.big && over.data_len < CLASSIC_LIMIT);
        let above = Layout::new(image(1, 65_536, 65_536, Sample::uint(8))).unwrap();
        assert!(above.big);
        assert!(Layout::with(image(1, 65_536, 65_536, Sample::uint(8)), false).is_err());
    }

    #[test]
    fn what_a_tiff_cannot_hold() {
        assert!(Layout::new(image(70_000, 2, 2, Sample::uint(8)))
            .unwrap_err()
            .contains("SamplesPerPixel"));
        assert!(Layout::new(image(1, 2, 1 << 33, Sample::uint(8)))
            .unwrap_err()
            .contains("ImageWidth"));
        // A row of 34 GB: one row a strip, BigTIFF.
        let wide = Layout::new(image(1, 1000, u32::MAX.into(), Sample::float(64))).unwrap();
        assert!(wide.big && wide.rows_per_strip == 1);
        assert!(Layout::new(image(
            65_535,
            u32::MAX.into(),
            u32::MAX.into(),
            Sample::float(64)
        ))
        .unwrap_err()
        .contains("overflows"));
    }

    #[test]
    fn nodata_text() {
        assert_eq!(nodata_text_float(f64::NAN), "nan");
        assert_eq!(nodata_text_float(f64::NEG_INFINITY), "-inf");
        assert_eq!(nodata_text_float(-1.5), "-1.5");
        let f = f64::from(f32::MIN);
        assert_eq!(nodata_text_float(f).parse::<f64>().unwrap(), f);
    }
}
