//! Forward ("filter") implementations used only by the tests, written from the spec's
//! description of what TileDB writes, so each reverse filter can be checked against an
//! independently built input.

use aes_gcm::aead::AeadInPlace;
use aes_gcm::{Aes256Gcm, Key, KeyInit, Nonce};
use sha2::{Digest, Sha256};

use crate::format::ElementKind;

/// `u32` part count and sizes (BYTESHUFFLE, BITSHUFFLE, XOR, SCALE_FLOAT, WEBP).
pub fn part_header(sizes: &[usize]) -> Vec<u8> {
    let mut md = (sizes.len() as u32).to_le_bytes().to_vec();
    for &s in sizes {
        md.extend((s as u32).to_le_bytes());
    }
    md
}

/// Compression framing: every part compressed separately, header = counts and size
/// pairs, data = metadata parts then data parts.
pub fn compress_framing(
    md_parts: &[&[u8]],
    data_parts: &[&[u8]],
    compress: impl Fn(&[u8]) -> Vec<u8>,
) -> (Vec<u8>, Vec<u8>) {
    let mut md = (md_parts.len() as u32).to_le_bytes().to_vec();
    md.extend((data_parts.len() as u32).to_le_bytes());
    let mut data = Vec::new();
    for part in md_parts.iter().chain(data_parts) {
        let compressed = compress(part);
        md.extend((part.len() as u32).to_le_bytes());
        md.extend((compressed.len() as u32).to_le_bytes());
        data.extend(compressed);
    }
    (md, data)
}

pub fn le_i64s(bytes: &[u8]) -> Vec<i64> {
    bytes
        .chunks_exact(8)
        .map(|c| i64::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

pub fn le_i16s(bytes: &[u8]) -> Vec<i64> {
    bytes
        .chunks_exact(2)
        .map(|c| i64::from(i16::from_le_bytes(c.try_into().unwrap())))
        .collect()
}

pub fn sha256(bytes: &[u8]) -> Vec<u8> {
    Sha256::digest(bytes).to_vec()
}

fn push(out: &mut Vec<u8>, value: i64, width: usize) {
    out.extend(value.to_le_bytes().into_iter().take(width));
}

/// Fixed-width RLE: runs of up to 65535 equal values, count big-endian.
pub fn rle_encode(input: &[u8], value_size: usize) -> Vec<u8> {
    let mut out = Vec::new();
    let mut values = input.chunks_exact(value_size).peekable();
    while let Some(v) = values.next() {
        let mut count = 1u16;
        while count < u16::MAX && values.peek() == Some(&v) {
            values.next();
            count += 1;
        }
        out.extend_from_slice(v);
        out.extend(count.to_be_bytes());
    }
    out
}

/// DOUBLE_DELTA as `dd_compressor.cc` writes it. `values` are the elements as TileDB's
/// `int64_t(in[i])` sees them; they are stored truncated to `width`.
pub fn dd_encode(values: &[i64], width: usize) -> Vec<u8> {
    let n = values.len();
    let dds: Vec<i64> = (2..n)
        .map(|i| {
            let cur = values[i].wrapping_sub(values[i - 1]);
            cur.wrapping_sub(values[i - 1].wrapping_sub(values[i - 2]))
        })
        .collect();
    let mut bitsize = 0u32;
    if n > 2 {
        let mut max = dds.iter().map(|d| d.unsigned_abs()).max().unwrap();
        loop {
            bitsize += 1;
            max >>= 1;
            if max == 0 {
                break;
            }
        }
    }
    let mut out = vec![bitsize as u8];
    out.extend((n as u64).to_le_bytes());
    if bitsize >= 8 * width as u32 - 1 {
        for &v in values {
            push(&mut out, v, width);
        }
        return out;
    }
    for &v in values.iter().take(2) {
        push(&mut out, v, width);
    }
    if n <= 2 {
        return out;
    }
    let mut bits: Vec<bool> = Vec::new();
    for &dd in &dds {
        bits.push(dd < 0);
        for b in (0..bitsize).rev() {
            bits.push(dd.unsigned_abs() >> b & 1 == 1);
        }
    }
    for word_bits in bits.chunks(64) {
        let mut word = 0u64;
        for (i, &bit) in word_bits.iter().enumerate() {
            if bit {
                word |= 1 << (63 - i);
            }
        }
        out.extend(word.to_le_bytes());
    }
    out
}

/// DELTA: count, first value, then differences truncated to `width`.
pub fn delta_encode(values: &[i64], width: usize) -> Vec<u8> {
    let mut out = (values.len() as u64).to_le_bytes().to_vec();
    for (i, &v) in values.iter().enumerate() {
        let d = if i == 0 {
            v
        } else {
            v.wrapping_sub(values[i - 1])
        };
        push(&mut out, d, width);
    }
    out
}

/// BYTESHUFFLE of one part: byte j of element i goes to `j·n + i`; tail unchanged.
pub fn byteshuffle(input: &[u8], s: usize) -> Vec<u8> {
    let n = input.len() / s;
    let mut out = vec![0; input.len()];
    for i in 0..n {
        for j in 0..s {
            out[j * n + i] = input[i * s + j];
        }
    }
    out[n * s..].copy_from_slice(&input[n * s..]);
    out
}

/// BITSHUFFLE of one part whose size is a multiple of 8 and of `s`, by the spec's
/// plane formula, in 8192-byte blocks with leftover elements copied.
pub fn bitshuffle(input: &[u8], s: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for block in input.chunks(8192) {
        let n = block.len() / s;
        let n8 = n - n % 8;
        let mut planes = vec![0u8; n8 * s];
        for j in 0..n8 {
            for b in 0..s {
                for k in 0..8 {
                    if block[j * s + b] >> k & 1 == 1 {
                        let plane = b * 8 + k;
                        planes[plane * (n8 / 8) + j / 8] |= 1 << (j % 8);
                    }
                }
            }
        }
        out.extend(planes);
        out.extend_from_slice(&block[n8 * s..]);
    }
    out
}

/// BIT_WIDTH_REDUCTION of one part, as `bit_width_reduction_filter.cc` chooses widths.
pub fn bit_width_encode(input: &[u8], kind: ElementKind, max_window: usize) -> (Vec<u8>, Vec<u8>) {
    let size = kind.size();
    let window_size = input.len().min(max_window) / size * size;
    let mut md = (input.len() as u32).to_le_bytes().to_vec();
    let mut windows = Vec::new();
    let mut data = Vec::new();
    for window in input.chunks(window_size) {
        let read = |c: &[u8]| -> i128 {
            let mut b = [0u8; 8];
            b[..size].copy_from_slice(c);
            let u = u64::from_le_bytes(b);
            if kind.is_signed() {
                let shift = 64 - 8 * size;
                i128::from(((u << shift) as i64) >> shift)
            } else {
                i128::from(u)
            }
        };
        let values: Vec<i128> = window.chunks_exact(size).map(read).collect();
        let (min, max) = (
            values.iter().copied().min().unwrap_or(0),
            values.iter().copied().max().unwrap_or(0),
        );
        let range = max - min;
        let fits = |w: usize| {
            if kind.is_signed() {
                range < (1i128 << (8 * w - 1)) - 1
            } else {
                range < (1i128 << (8 * w)) - 1
            }
        };
        let width = [1usize, 2, 4, 8]
            .into_iter()
            .find(|&w| fits(w))
            .unwrap_or(8);
        let bits = 8 * width;
        let mut header = (min as i64).to_le_bytes()[..size].to_vec();
        header.push(bits as u8);
        header.extend((window.len() as u32).to_le_bytes());
        windows.push(header);
        if bits >= 8 * size || window.len() % size != 0 {
            data.extend_from_slice(window);
        } else {
            for v in values {
                push(&mut data, (v - min) as i64, width);
            }
        }
    }
    md.extend((windows.len() as u32).to_le_bytes());
    md.extend(windows.concat());
    (md, data)
}

/// POSITIVE_DELTA of one part: base = first element, deltas from the previous value.
pub fn positive_delta_encode(input: &[u8], width: usize, max_window: usize) -> (Vec<u8>, Vec<u8>) {
    let window_size = input.len().min(max_window) / width * width;
    let window_size = window_size.max(1);
    let read = |c: &[u8]| {
        let mut b = [0u8; 8];
        b[..c.len()].copy_from_slice(c);
        u64::from_le_bytes(b)
    };
    let mut md = Vec::new();
    let mut data = Vec::new();
    let windows: Vec<&[u8]> = input.chunks(window_size).collect();
    md.extend((windows.len() as u32).to_le_bytes());
    for window in windows {
        let base = read(&window[..width.min(window.len())]);
        md.extend(&base.to_le_bytes()[..width]);
        md.extend((window.len() as u32).to_le_bytes());
        if window.len() % width != 0 {
            data.extend_from_slice(window);
            continue;
        }
        let mut prev = base;
        for c in window.chunks_exact(width) {
            let v = read(c);
            push(&mut data, v.wrapping_sub(prev) as i64, width);
            prev = v;
        }
    }
    (md, data)
}

/// XOR of one part with the previous element.
pub fn xor_encode(input: &[u8], width: usize) -> Vec<u8> {
    let mut out = Vec::new();
    let mut prev = vec![0u8; width];
    for c in input.chunks_exact(width) {
        out.extend(c.iter().zip(&prev).map(|(a, b)| a ^ b));
        prev = c.to_vec();
    }
    out
}

/// Checksum header: counts, then (size, digest) per metadata part and data part.
pub fn checksum_header(
    md_parts: &[&[u8]],
    data_parts: &[&[u8]],
    digest: impl Fn(&[u8]) -> Vec<u8>,
) -> Vec<u8> {
    let mut md = (md_parts.len() as u32).to_le_bytes().to_vec();
    md.extend((data_parts.len() as u32).to_le_bytes());
    for part in md_parts.iter().chain(data_parts) {
        md.extend((part.len() as u64).to_le_bytes());
        md.extend(digest(part));
    }
    md
}

/// AES-256-GCM framing with a fixed, per-part distinct IV.
pub fn encrypt_framing(
    key: &[u8; 32],
    md_parts: &[&[u8]],
    data_parts: &[&[u8]],
) -> (Vec<u8>, Vec<u8>) {
    let cipher = Aes256Gcm::new(Key::<Aes256Gcm>::from_slice(key));
    let mut md = (md_parts.len() as u32).to_le_bytes().to_vec();
    md.extend((data_parts.len() as u32).to_le_bytes());
    let mut data = Vec::new();
    for (i, part) in md_parts.iter().chain(data_parts).enumerate() {
        let iv = [i as u8 + 1; 12];
        let mut buf = part.to_vec();
        let tag = cipher
            .encrypt_in_place_detached(Nonce::from_slice(&iv), b"", &mut buf)
            .unwrap();
        md.extend((part.len() as u32).to_le_bytes());
        md.extend((buf.len() as u32).to_le_bytes());
        md.extend(iv);
        md.extend(tag);
        data.extend(buf);
    }
    (md, data)
}

fn byte_width(max: u64) -> usize {
    match max {
        0..=0xff => 1,
        0x100..=0xffff => 2,
        0x1_0000..=0xffff_ffff => 4,
        _ => 8,
    }
}

fn be(value: u64, width: usize) -> Vec<u8> {
    value.to_be_bytes()[8 - width..].to_vec()
}

fn string_mode_header(strings: &[&[u8]], encoded: usize) -> Vec<u8> {
    let total: usize = strings.iter().map(|s| s.len()).sum();
    let mut md = 0u32.to_le_bytes().to_vec();
    md.extend(1u32.to_le_bytes());
    md.extend((total as u32).to_le_bytes());
    md.extend((encoded as u32).to_le_bytes());
    md.extend((strings.len() as u32 * 8).to_le_bytes());
    md
}

/// String-mode RLE: `[run BE][length BE][bytes]` records, widths chosen from the
/// largest run and string length.
pub fn rle_string_encode(strings: &[&[u8]]) -> (Vec<u8>, Vec<u8>) {
    let mut runs: Vec<(&[u8], u64)> = Vec::new();
    for s in strings {
        match runs.last_mut() {
            Some((last, n)) if last == s => *n += 1,
            _ => runs.push((s, 1)),
        }
    }
    let run_width = byte_width(runs.iter().map(|r| r.1).max().unwrap_or(0));
    let len_width = byte_width(strings.iter().map(|s| s.len() as u64).max().unwrap_or(0));
    let mut data = Vec::new();
    for (s, n) in runs {
        data.extend(be(n, run_width));
        data.extend(be(s.len() as u64, len_width));
        data.extend_from_slice(s);
    }
    let mut md = string_mode_header(strings, data.len());
    md.extend([run_width as u8, len_width as u8]);
    (md, data)
}

/// String-mode DICTIONARY: ids (BE) in data, `[length BE][bytes]` entries in metadata.
pub fn dictionary_string_encode(strings: &[&[u8]]) -> (Vec<u8>, Vec<u8>) {
    let id_width = byte_width(strings.len() as u64);
    let len_width = byte_width(strings.iter().map(|s| s.len() as u64).max().unwrap_or(0));
    let mut words: Vec<&[u8]> = Vec::new();
    let mut data = Vec::new();
    for s in strings {
        let id = match words.iter().position(|w| w == s) {
            Some(id) => id,
            None => {
                words.push(s);
                words.len() - 1
            }
        };
        data.extend(be(id as u64, id_width));
    }
    let mut dict = Vec::new();
    for w in words {
        dict.extend(be(w.len() as u64, len_width));
        dict.extend_from_slice(w);
    }
    let mut md = string_mode_header(strings, data.len());
    md.extend([id_width as u8, len_width as u8]);
    md.extend((dict.len() as u32).to_le_bytes());
    md.extend(dict);
    (md, data)
}
