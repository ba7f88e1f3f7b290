//! WEBP (`05` §3.14, `webp_filter.cc`): each part is a complete WebP image of one tile
//! of a 2-D UINT8 attribute, whose rows are `x extent` bytes of RGB, BGR, RGBA or BGRA
//! pixels. Decoded with the pure-Rust `image-webp`; lossless images come back exactly,
//! lossy ones as that decoder reconstructs them (it upsamples chroma like libwebp's
//! default, but bit-exactness with libwebp is not guaranteed).

use std::io::Cursor;

use image_webp::WebPDecoder;

use super::util::{corrupt, read_part_sizes, split_parts, unsupported, Step};
use super::FilterError;
use crate::format::pipeline::WebpOptions;
use crate::format::{Datatype, Reader};

const NAME: &str = "WEBP";

pub(crate) fn reverse(
    md: &[u8],
    data: &[u8],
    options: &WebpOptions,
    input_type: Datatype,
    limit: usize,
) -> Result<Step, FilterError> {
    if input_type != Datatype::UInt8 {
        return Err(unsupported(
            NAME,
            format!(
                "only UINT8 data can be WebP images, not {}",
                input_type.name()
            ),
        ));
    }
    // Input formats: 1 RGB, 2 BGR, 3 RGBA, 4 BGRA.
    let (depth, swap_red_blue) = match options.input_format {
        1 => (3, false),
        2 => (3, true),
        3 => (4, false),
        4 => (4, true),
        f => return Err(corrupt(NAME, format!("unknown input format {f}"))),
    };
    let mut r = Reader::new(md);
    let sizes = read_part_sizes(&mut r, NAME)?;
    let parts = split_parts(data, &sizes, NAME)?;
    let mut out = Vec::new();
    for (i, part) in parts.iter().enumerate() {
        let image = decode(part, depth, limit.saturating_sub(out.len()))
            .map_err(|e| corrupt(NAME, format!("image {i}: {e}")))?;
        out.extend_from_slice(&image);
    }
    if swap_red_blue {
        for pixel in out.chunks_exact_mut(depth) {
            pixel.swap(0, 2);
        }
    }
    Ok(Step::tail(r.offset() as usize, out))
}

/// Decodes one image to `depth` bytes per pixel, refusing images larger than `limit`.
fn decode(image: &[u8], depth: usize, limit: usize) -> Result<Vec<u8>, String> {
    let mut decoder = WebPDecoder::new(Cursor::new(image)).map_err(|e| e.to_string())?;
    if decoder.is_animated() {
        return Err("animated WebP images are not tile data".into());
    }
    let (width, height) = decoder.dimensions();
    let size = decoder
        .output_buffer_size()
        .filter(|&n| n <= limit)
        .ok_or_else(|| format!("{width}×{height} pixels is more than this chunk can hold"))?;
    decoder.set_memory_limit(limit.saturating_mul(2));
    let mut pixels = vec![0u8; size];
    decoder.read_image(&mut pixels).map_err(|e| e.to_string())?;
    let decoded_depth = if decoder.has_alpha() { 4 } else { 3 };
    Ok(match (decoded_depth, depth) {
        (3, 4) => pixels
            .chunks_exact(3)
            .flat_map(|p| p.iter().copied().chain([0xff]))
            .collect(),
        (4, 3) => pixels
            .chunks_exact(4)
            .flat_map(|p| p.iter().copied().take(3))
            .collect(),
        _ => pixels,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::test_support::part_header;
    use image_webp::{ColorType, WebPEncoder};

    fn options(input_format: u8) -> WebpOptions {
        WebpOptions {
            quality: 100.0,
            input_format,
            lossless: true,
            y_extent: 3,
            x_extent: 12,
        }
    }

    fn encode(pixels: &[u8], width: u32, height: u32, color: ColorType) -> Vec<u8> {
        let mut out = Vec::new();
        WebPEncoder::new(&mut out)
            .encode(pixels, width, height, color)
            .unwrap();
        out
    }

    #[test]
    fn lossless_rgb_bgr_rgba_bgra() {
        // 4 × 3 pixels.
        let rgb: Vec<u8> = (0..36).map(|i| (i * 7) as u8).collect();
        let image = encode(&rgb, 4, 3, ColorType::Rgb8);
        let md = part_header(&[image.len()]);
        let step = reverse(&md, &image, &options(1), Datatype::UInt8, 1 << 20).unwrap();
        assert_eq!(step.data.unwrap(), rgb);

        let bgr: Vec<u8> = rgb.chunks(3).flat_map(|p| [p[2], p[1], p[0]]).collect();
        let step = reverse(&md, &image, &options(2), Datatype::UInt8, 1 << 20).unwrap();
        assert_eq!(step.data.unwrap(), bgr);

        // An opaque image read as RGBA gets alpha 255.
        let step = reverse(&md, &image, &options(3), Datatype::UInt8, 1 << 20).unwrap();
        let rgba: Vec<u8> = rgb
            .chunks(3)
            .flat_map(|p| [p[0], p[1], p[2], 255])
            .collect();
        assert_eq!(step.data.unwrap(), rgba);

        let rgba: Vec<u8> = (0..48).map(|i| (i * 5 + 1) as u8).collect();
        let image = encode(&rgba, 4, 3, ColorType::Rgba8);
        let md = part_header(&[image.len()]);
        let step = reverse(&md, &image, &options(4), Datatype::UInt8, 1 << 20).unwrap();
        let bgra: Vec<u8> = rgba
            .chunks(4)
            .flat_map(|p| [p[2], p[1], p[0], p[3]])
            .collect();
        assert_eq!(step.data.unwrap(), bgra);
    }

    #[test]
    fn bad_input_is_an_error() {
        let rgb = vec![9u8; 12];
        let image = encode(&rgb, 2, 2, ColorType::Rgb8);
        let md = part_header(&[image.len()]);
        assert!(reverse(&md, &image, &options(1), Datatype::Int8, 1 << 20).is_err());
        assert!(reverse(&md, &image, &options(0), Datatype::UInt8, 1 << 20).is_err());
        assert!(reverse(&md, &image, &options(1), Datatype::UInt8, 4).is_err());
        let mut broken = image.clone();
        broken.truncate(image.len() - 3);
        let md_broken = part_header(&[broken.len()]);
        assert!(reverse(&md_broken, &broken, &options(1), Datatype::UInt8, 1 << 20).is_err());
        let garbage = vec![0x42u8; 40];
        assert!(reverse(
            &part_header(&[40]),
            &garbage,
            &options(1),
            Datatype::UInt8,
            1 << 20
        )
        .is_err());
    }
}
