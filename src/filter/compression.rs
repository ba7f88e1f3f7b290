//! The compression family (`05` §3.2): GZIP, ZSTD, LZ4, BZIP2, RLE, DOUBLE_DELTA and
//! DELTA share one framing. Forward, every metadata part and every data part is
//! compressed separately and the filter's header (part counts, then an (uncompressed,
//! compressed) size pair per part) becomes the whole output metadata; the earlier
//! filters' metadata survives only inside the compressed data.

use std::io::Read;

use super::util::{corrupt, ForFilter, Md, Step};
use super::{delta, double_delta, rle, FilterError};
use crate::format::Reader;

/// How one part was compressed, with what the codec needs to know about the values.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Codec {
    Gzip,
    Zstd,
    Lz4,
    Bzip2,
    /// Fixed-width RLE over values of the tile's cell size.
    Rle {
        value_size: u64,
    },
    DoubleDelta {
        width: usize,
    },
    Delta {
        width: usize,
    },
}

struct PartHeader {
    uncompressed: usize,
    compressed: usize,
}

/// Reverses one compression-family filter. `limit` caps the total decompressed size the
/// header may claim, so a corrupt size cannot trigger a huge allocation or let a small
/// "zip bomb" expand without bound.
pub(crate) fn reverse(
    filter: &'static str,
    codec: Codec,
    md: &[u8],
    data: &[u8],
    limit: usize,
) -> Result<Step, FilterError> {
    let mut new_data = Vec::new();
    let new_md = reverse_into(filter, codec, md, data, limit, &mut new_data)?;
    Ok(Step {
        md: Md::New(new_md),
        data: Some(new_data),
    })
}

/// `reverse`, appending the decompressed data parts to `out` (the filter that runs last
/// decompresses straight into a reply) and returning the decompressed metadata. On an
/// error `out` may hold part of the output.
pub(crate) fn reverse_into(
    filter: &'static str,
    codec: Codec,
    md: &[u8],
    data: &[u8],
    limit: usize,
    out: &mut Vec<u8>,
) -> Result<Vec<u8>, FilterError> {
    let mut r = Reader::new(md);
    let md_parts = r.u32("metadata part count").for_filter(filter)?;
    let data_parts = r.u32("data part count").for_filter(filter)?;
    let total = u64::from(md_parts) + u64::from(data_parts);
    r.check_count(total, 8, "part count", 0)
        .for_filter(filter)?;
    let headers = (0..total)
        .map(|_| {
            Ok(PartHeader {
                uncompressed: r.u32("uncompressed part size").for_filter(filter)? as usize,
                compressed: r.u32("compressed part size").for_filter(filter)? as usize,
            })
        })
        .collect::<Result<Vec<_>, FilterError>>()?;

    let claimed: u64 = headers.iter().map(|h| h.uncompressed as u64).sum();
    if claimed > limit as u64 {
        return Err(corrupt(
            filter,
            format!("header claims {claimed} uncompressed bytes, more than this chunk can hold ({limit})"),
        ));
    }
    let compressed: u64 = headers.iter().map(|h| h.compressed as u64).sum();
    if compressed != data.len() as u64 {
        return Err(corrupt(
            filter,
            format!(
                "header lists {compressed} compressed bytes, but the data is {} bytes",
                data.len()
            ),
        ));
    }

    let (md_headers, data_headers) = headers.split_at(md_parts as usize);
    let mut rest = data;
    let mut decode_all =
        |headers: &[PartHeader], kind: &str, out: &mut Vec<u8>| -> Result<(), FilterError> {
            for (i, h) in headers.iter().enumerate() {
                let (input, tail) = rest.split_at_checked(h.compressed).ok_or_else(|| {
                    corrupt(filter, format!("{kind} part {i} extends past the data"))
                })?;
                rest = tail;
                let start = out.len();
                decompress_into(codec, input, h.uncompressed, out)
                    .map_err(|e| corrupt(filter, format!("{kind} part {i}: {e}")))?;
                let got = out.len() - start;
                if got != h.uncompressed {
                    return Err(corrupt(
                        filter,
                        format!(
                            "{kind} part {i} decompressed to {got} bytes, header says {}",
                            h.uncompressed
                        ),
                    ));
                }
            }
            Ok(())
        };
    // Grown as parts decode, not sized by the header: its sizes are only claims, and a
    // few bytes of header could otherwise reserve gigabytes.
    let mut new_md = Vec::new();
    decode_all(md_headers, "metadata", &mut new_md)?;
    decode_all(data_headers, "data", out)?;
    Ok(new_md)
}

/// What a decoder reserves before it has output: a whole chunk of TileDB's
/// default size (64 KiB) and then some, so real chunks rarely need to grow the buffer.
const PREALLOCATE_AT_MOST: usize = 1 << 20;

/// Appends one decompressed part to `out`: at most `expected` bytes (plus one, so an
/// over-long stream is detected rather than silently cut).
fn decompress_into(
    codec: Codec,
    input: &[u8],
    expected: usize,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    if input.is_empty() && expected == 0 {
        return Ok(());
    }
    match codec {
        // GZIP is a zlib stream (RFC 1950), not a gzip file.
        Codec::Gzip => read_bounded(flate2::read::ZlibDecoder::new(input), expected, out),
        Codec::Zstd => decompress_zstd(input, expected, out),
        Codec::Lz4 => {
            // A raw LZ4 block: no frame, no size prefix; the size comes from our header.
            // The output is sized first, so check the claim against the most a block can
            // expand to: each input byte yields at most 255 output bytes (a match-length
            // byte of 255).
            if expected > input.len().saturating_mul(255) {
                return Err(format!(
                    "{} bytes of LZ4 cannot expand to the {expected} the header says",
                    input.len()
                ));
            }
            let start = out.len();
            out.resize(start + expected, 0);
            match lz4_flex::block::decompress_into(input, &mut out[start..]) {
                Ok(n) => {
                    out.truncate(start + n);
                    Ok(())
                }
                Err(e) => {
                    out.truncate(start);
                    Err(e.to_string())
                }
            }
        }
        Codec::Bzip2 => read_bounded(bzip2::read::BzDecoder::new(input), expected, out),
        Codec::Rle { value_size } => {
            out.extend_from_slice(&rle::decode(input, value_size, expected)?);
            Ok(())
        }
        Codec::DoubleDelta { width } => {
            out.extend_from_slice(&double_delta::decode(input, width, expected)?);
            Ok(())
        }
        Codec::Delta { width } => {
            out.extend_from_slice(&delta::decode(input, width, expected)?);
            Ok(())
        }
    }
}

/// zstd's one-shot decoder writes into a buffer of fixed capacity, and `expected` is only
/// the header's claim: start small and double while zstd reports the buffer too small,
/// so memory follows the real output. An over-long frame still fails at `expected`.
/// The output goes straight into `out`'s spare capacity, after what it holds.
fn decompress_zstd(input: &[u8], expected: usize, out: &mut Vec<u8>) -> Result<(), String> {
    use zstd::zstd_safe::{self, zstd_sys::ZSTD_ErrorCode};
    // zstd returns error `e` as `-e` in a `size_t`.
    const TOO_SMALL: usize = (ZSTD_ErrorCode::ZSTD_error_dstSize_tooSmall as usize).wrapping_neg();
    thread_local! {
        // A decompression context costs a large allocation and its zeroing; made once per
        // thread it is reused for every chunk (about 1.2x faster on 64 KiB chunks).
        static DCTX: std::cell::RefCell<zstd_safe::DCtx<'static>> =
            std::cell::RefCell::new(zstd_safe::DCtx::create());
    }
    DCTX.with(|dctx| {
        let mut dctx = dctx.borrow_mut();
        let start = out.len();
        let mut room = expected.min(PREALLOCATE_AT_MOST);
        loop {
            out.reserve(room);
            // Writes into the spare capacity after `start`, and sets the length to what
            // zstd wrote there.
            let mut cursor = std::io::Cursor::new(&mut *out);
            cursor.set_position(start as u64);
            let result = dctx.decompress(&mut cursor, input);
            match result {
                Ok(_) => return Ok(()),
                Err(TOO_SMALL) if room < expected => {
                    out.truncate(start);
                    room = room.saturating_mul(2).min(expected);
                }
                Err(code) => {
                    out.truncate(start);
                    // A failed frame can leave the context mid-stream: start afresh.
                    let _ = dctx.reset(zstd_safe::ResetDirective::SessionAndParameters);
                    return Err(zstd_safe::get_error_name(code).to_string());
                }
            }
        }
    })
}

/// Appends at most `expected + 1` bytes. The buffer grows with the output instead of
/// being reserved up front: `expected` is the header's claim, and a stream may end far
/// sooner.
fn read_bounded(reader: impl Read, expected: usize, out: &mut Vec<u8>) -> Result<(), String> {
    out.reserve(expected.min(PREALLOCATE_AT_MOST));
    let start = out.len();
    reader
        .take(expected as u64 + 1)
        .read_to_end(out)
        .map_err(|e| {
            out.truncate(start);
            e.to_string()
        })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::test_support::compress_framing;
    use std::io::Write;

    fn gzip(b: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::new(1));
        e.write_all(b).unwrap();
        e.finish().unwrap()
    }
    fn zstd(b: &[u8]) -> Vec<u8> {
        zstd::bulk::compress(b, 3).unwrap()
    }
    fn lz4(b: &[u8]) -> Vec<u8> {
        lz4_flex::block::compress(b)
    }
    fn bzip2(b: &[u8]) -> Vec<u8> {
        let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::new(9));
        e.write_all(b).unwrap();
        e.finish().unwrap()
    }

    type Compress = fn(&[u8]) -> Vec<u8>;
    /// Each byte compressor with the crate that writes its streams.
    const BYTE_COMPRESSORS: [(Codec, Compress); 4] = [
        (Codec::Gzip, gzip),
        (Codec::Zstd, zstd),
        (Codec::Lz4, lz4),
        (Codec::Bzip2, bzip2),
    ];

    fn sample(len: usize, seed: u8) -> Vec<u8> {
        (0..len)
            .map(|i| ((i * 7) as u8 / 3).wrapping_add(seed))
            .collect()
    }

    /// Every byte compressor with one metadata part and two data parts (as after a
    /// BITSHUFFLE that split a tail off), including an empty one.
    #[test]
    fn byte_compressors_round_trip_with_several_parts() {
        let md_part = vec![1u8, 0, 0, 0, 9, 9, 9, 9];
        let parts = [sample(5000, 1), sample(3, 2), Vec::new()];
        for (codec, compress) in BYTE_COMPRESSORS {
            let (md, data) =
                compress_framing(&[&md_part], &parts.each_ref().map(|p| &p[..]), compress);
            let step = reverse("X", codec, &md, &data, 1 << 20).unwrap();
            let Md::New(new_md) = step.md else {
                panic!("compression rebuilds md")
            };
            assert_eq!(new_md, md_part, "{codec:?}");
            assert_eq!(step.data.unwrap(), parts.concat(), "{codec:?}");
        }
    }

    #[test]
    fn wrong_sizes_and_bad_streams_are_errors() {
        let part = sample(4096, 3);
        let (mut md, data) = compress_framing(&[], &[&part], zstd);
        // Claim 100 bytes instead of 4096: the stream is longer than claimed.
        md[8..12].copy_from_slice(&100u32.to_le_bytes());
        let err = reverse("ZSTD", Codec::Zstd, &md, &data, 1 << 20).unwrap_err();
        assert!(err.to_string().starts_with("ZSTD: data part 0"), "{err}");

        // GZIP stream that ends early.
        let (md, data) = compress_framing(&[], &[&part], gzip);
        let cut = data.len() - 10;
        let mut md_cut = md.clone();
        md_cut[12..16].copy_from_slice(&(cut as u32).to_le_bytes());
        assert!(reverse("GZIP", Codec::Gzip, &md_cut, &data[..cut], 1 << 20).is_err());

        // LZ4 producing fewer bytes than claimed.
        let (mut md, data) = compress_framing(&[], &[&part], lz4);
        md[8..12].copy_from_slice(&5000u32.to_le_bytes());
        let err = reverse("LZ4", Codec::Lz4, &md, &data, 1 << 20).unwrap_err();
        assert!(
            err.to_string().contains("4096 bytes, header says 5000"),
            "{err}"
        );
    }

    #[test]
    fn absurd_headers_are_refused_before_allocating() {
        // 0xFFFFFFFF-byte part with a 10-byte payload.
        let mut md = vec![0, 0, 0, 0, 1, 0, 0, 0];
        md.extend(u32::MAX.to_le_bytes());
        md.extend(10u32.to_le_bytes());
        let err = reverse("GZIP", Codec::Gzip, &md, &[0; 10], 1 << 20).unwrap_err();
        assert!(
            err.to_string().contains("more than this chunk can hold"),
            "{err}"
        );
        // A part count that cannot fit in the header.
        let md = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff];
        assert!(reverse("GZIP", Codec::Gzip, &md, &[], 1 << 20).is_err());
        // Truncated header.
        assert!(reverse("GZIP", Codec::Gzip, &[1, 0, 0], &[], 1 << 20).is_err());
        // Compressed sizes that do not cover the data.
        let (md, data) = compress_framing(&[], &[b"abc"], zstd);
        assert!(reverse(
            "ZSTD",
            Codec::Zstd,
            &md,
            &[&data[..], b"x"].concat(),
            1 << 20
        )
        .is_err());
    }

    /// Parts larger than the first reservation decode whole: the buffers grow (or, for
    /// zstd, the capacity doubles) until the real output fits.
    #[test]
    fn parts_larger_than_the_first_reservation() {
        let part = sample(3 * PREALLOCATE_AT_MOST + 5, 4);
        for (codec, compress) in BYTE_COMPRESSORS {
            let (md, data) = compress_framing(&[], &[&part], compress);
            let step = reverse("X", codec, &md, &data, 1 << 23).unwrap();
            assert_eq!(step.data.unwrap(), part, "{codec:?}");
        }
    }

    #[test]
    fn a_zip_bomb_stops_at_the_claimed_size() {
        let zeros = vec![0u8; 1 << 20];
        let (mut md, data) = compress_framing(&[], &[&zeros], zstd);
        md[8..12].copy_from_slice(&1000u32.to_le_bytes());
        assert!(reverse("ZSTD", Codec::Zstd, &md, &data, 1 << 21).is_err());
        let (mut md, data) = compress_framing(&[], &[&zeros], gzip);
        md[8..12].copy_from_slice(&1000u32.to_le_bytes());
        let err = reverse("GZIP", Codec::Gzip, &md, &data, 1 << 21).unwrap_err();
        assert!(
            err.to_string().contains("1001 bytes, header says 1000"),
            "{err}"
        );
    }
}
