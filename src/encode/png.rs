//! A PNG writer (ISO/IEC 15948, the W3C PNG specification), sans-IO: 8-bit RGBA pixels
//! and text chunks in, the file's bytes out. It writes what the quick looks
//! (`values.png`) need and nothing more: one image, no interlacing, every row filtered
//! with "Up" (the difference from the row above, which smooth data compresses well),
//! one zlib stream (flate2, already a dependency) cut into `IDAT` chunks. The same
//! pixels and text always give the same bytes.

use std::io::Write;

/// The 8 bytes every PNG starts with.
pub const SIGNATURE: [u8; 8] = [0x89, b'P', b'N', b'G', b'\r', b'\n', 0x1a, b'\n'];

/// The most compressed bytes an `IDAT` chunk holds here (any split is valid; decoders
/// join them).
const IDAT_MAX: usize = 256 << 10;

/// One image to write.
pub struct Png<'a> {
    pub width: u32,
    pub height: u32,
    /// `width * height * 4` bytes: red, green, blue, alpha per pixel, top row first.
    pub rgba: &'a [u8],
    /// Keyword and text pairs, in order: `tEXt` where the text is ASCII, else `iTXt`
    /// (UTF-8). Keywords are 1 to 79 printable ASCII characters.
    pub text: &'a [(String, String)],
}

/// The PNG file of `png`, or why it cannot be one (a size of 0 or over 2^31 - 1, pixels
/// of the wrong length, a keyword PNG does not allow).
pub fn encode(png: &Png<'_>) -> Result<Vec<u8>, String> {
    let (w, h) = (png.width as usize, png.height as usize);
    if png.width == 0
        || png.height == 0
        || png.width > i32::MAX as u32
        || png.height > i32::MAX as u32
    {
        return Err(format!("a PNG of {}x{} pixels", png.width, png.height));
    }
    let row = w.checked_mul(4).ok_or("a PNG row too long")?;
    if Some(png.rgba.len()) != row.checked_mul(h) {
        return Err(format!(
            "{} bytes of pixels for {}x{} RGBA",
            png.rgba.len(),
            png.width,
            png.height
        ));
    }
    let mut out = SIGNATURE.to_vec();
    let mut ihdr = Vec::with_capacity(13);
    ihdr.extend_from_slice(&png.width.to_be_bytes());
    ihdr.extend_from_slice(&png.height.to_be_bytes());
    // Bit depth 8, colour type 6 (RGBA), deflate, adaptive filtering, no interlace.
    ihdr.extend_from_slice(&[8, 6, 0, 0, 0]);
    chunk(&mut out, b"IHDR", &ihdr);
    for (keyword, text) in png.text {
        check_keyword(keyword)?;
        if text.is_ascii() {
            let mut data = keyword.as_bytes().to_vec();
            data.push(0);
            data.extend_from_slice(text.as_bytes());
            chunk(&mut out, b"tEXt", &data);
        } else {
            // Keyword, NUL, not compressed (0, 0), no language tag, no translated
            // keyword (two NULs), then the UTF-8 text.
            let mut data = keyword.as_bytes().to_vec();
            data.extend_from_slice(&[0, 0, 0, 0, 0]);
            data.extend_from_slice(text.as_bytes());
            chunk(&mut out, b"iTXt", &data);
        }
    }
    let compressed = deflate_rows(png.rgba, row)?;
    for part in compressed.chunks(IDAT_MAX) {
        chunk(&mut out, b"IDAT", part);
    }
    chunk(&mut out, b"IEND", &[]);
    Ok(out)
}

/// The image data: each row behind its filter byte (2, "Up"), zlib-compressed.
fn deflate_rows(rgba: &[u8], row: usize) -> Result<Vec<u8>, String> {
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::new(6));
    let mut filtered = vec![0u8; row + 1];
    filtered[0] = 2;
    let mut above: &[u8] = &[];
    for line in rgba.chunks_exact(row) {
        for (i, &b) in line.iter().enumerate() {
            filtered[i + 1] = b.wrapping_sub(above.get(i).copied().unwrap_or(0));
        }
        z.write_all(&filtered).map_err(|e| e.to_string())?;
        above = line;
    }
    z.finish().map_err(|e| e.to_string())
}

fn check_keyword(keyword: &str) -> Result<(), String> {
    let ok = (1..=79).contains(&keyword.len())
        && keyword.bytes().all(|b| (32..=126).contains(&b))
        && !keyword.starts_with(' ')
        && !keyword.ends_with(' ')
        && !keyword.contains("  ");
    match ok {
        true => Ok(()),
        false => Err(format!("{keyword:?} is not a PNG text keyword")),
    }
}

/// Appends one chunk: length, type, data, and the CRC-32 of type and data.
fn chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
    out.extend_from_slice(kind);
    out.extend_from_slice(data);
    let mut crc = crc32fast::Hasher::new();
    crc.update(kind);
    crc.update(data);
    out.extend_from_slice(&crc.finalize().to_be_bytes());
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;

    /// The chunks of a PNG file: type and data, each CRC checked.
    fn chunks(png: &[u8]) -> Vec<([u8; 4], Vec<u8>)> {
        assert_eq!(png[..8], SIGNATURE);
        let mut out = Vec::new();
        let mut at = 8;
        while at < png.len() {
            let len = u32::from_be_bytes(png[at..at + 4].try_into().unwrap()) as usize;
            let kind: [u8; 4] = png[at + 4..at + 8].try_into().unwrap();
            let data = png[at + 8..at + 8 + len].to_vec();
            let crc = u32::from_be_bytes(png[at + 8 + len..at + 12 + len].try_into().unwrap());
            let mut h = crc32fast::Hasher::new();
            h.update(&kind);
            h.update(&data);
            assert_eq!(
                h.finalize(),
                crc,
                "CRC of {}",
                String::from_utf8_lossy(&kind)
            );
            out.push((kind, data));
            at += 12 + len;
        }
        out
    }

    /// A 3x2 image: the chunks in order, the text as written, and the rows unfiltered
    /// back to the pixels.
    #[test]
    fn writes_a_valid_file() {
        let rgba: Vec<u8> = (0..24).map(|i| (i * 10) as u8).collect();
        let text = vec![
            ("fragfs:range".to_string(), "-1 2.5".to_string()),
            ("fragfs:source".to_string(), "attribute é".to_string()),
        ];
        let png = encode(&Png {
            width: 3,
            height: 2,
            rgba: &rgba,
            text: &text,
        })
        .unwrap();
        let c = chunks(&png);
        let kinds: Vec<&[u8]> = c.iter().map(|(k, _)| &k[..]).collect();
        assert_eq!(kinds, [&b"IHDR"[..], b"tEXt", b"iTXt", b"IDAT", b"IEND"]);
        assert_eq!(c[0].1, [0, 0, 0, 3, 0, 0, 0, 2, 8, 6, 0, 0, 0]);
        assert_eq!(c[1].1, b"fragfs:range\0-1 2.5");
        assert_eq!(c[2].1, "fragfs:source\0\0\0\0\0attribute é".as_bytes());
        let mut raw = Vec::new();
        flate2::read::ZlibDecoder::new(&c[3].1[..])
            .read_to_end(&mut raw)
            .unwrap();
        assert_eq!(raw.len(), 2 * 13);
        let mut pixels = Vec::new();
        let mut above = vec![0u8; 12];
        for line in raw.chunks(13) {
            assert_eq!(line[0], 2, "Up");
            let row: Vec<u8> = line[1..]
                .iter()
                .zip(&above)
                .map(|(d, a)| d.wrapping_add(*a))
                .collect();
            pixels.extend_from_slice(&row);
            above = row;
        }
        assert_eq!(pixels, rgba);
        assert_eq!(
            png,
            encode(&Png {
                width: 3,
                height: 2,
                rgba: &rgba,
                text: &text
            })
            .unwrap(),
            "the same bytes every time"
        );
    }

    #[test]
    fn refuses_what_png_cannot_hold() {
        let p = |w, h, n: usize, k: &str| {
            encode(&Png {
                width: w,
                height: h,
                rgba: &vec![0; n],
                text: &[(k.to_string(), String::new())],
            })
        };
        assert!(p(0, 1, 0, "k").is_err());
        assert!(p(2, 2, 15, "k").is_err());
        assert!(p(1, 1, 4, "").is_err());
        assert!(p(1, 1, 4, "a\0b").is_err());
        assert!(p(1, 1, 4, &"k".repeat(80)).is_err());
        assert!(p(1, 1, 4, "fragfs:method").is_ok());
    }

    /// Larger images are cut into several `IDAT` chunks that join into one stream.
    #[test]
    fn large_images_span_several_idat_chunks() {
        let (w, h) = (1024u32, 1024u32);
        let mut state = 1u32;
        let rgba: Vec<u8> = (0..w * h * 4)
            .map(|_| {
                state = state.wrapping_mul(1_103_515_245).wrapping_add(12345);
                (state >> 24) as u8
            })
            .collect();
        let png = encode(&Png {
            width: w,
            height: h,
            rgba: &rgba,
            text: &[],
        })
        .unwrap();
        let idat: Vec<u8> = chunks(&png)
            .into_iter()
            .filter(|(k, _)| k == b"IDAT")
            .flat_map(|(_, d)| d)
            .collect();
        assert!(idat.len() > IDAT_MAX);
        let mut raw = Vec::new();
        flate2::read::ZlibDecoder::new(&idat[..])
            .read_to_end(&mut raw)
            .unwrap();
        assert_eq!(raw.len(), (w as usize * 4 + 1) * h as usize);
    }
}
