//! Runs a filter pipeline backwards over one chunk (`05` §2).
//!
//! The state is a (metadata, data) pair, starting as the chunk's metadata and filtered
//! bytes. Filters are reversed last to first; each consumes its own header from the
//! front of the metadata. After the first filter the data is the chunk's unfiltered
//! bytes and every byte of metadata must have been used.

use std::borrow::Cow;

use super::checksum::{self, Algorithm};
use super::compression::{self, Codec};
pub use super::string_mode::StringChunk;
use super::string_mode::{self, Mode};
use super::util::{
    bit_width_kind, corrupt, delta_width, positive_delta_width, unsupported, Md, Step,
};
use super::{
    bit_width_reduction, bitshuffle, byteshuffle, encryption, positive_delta, scale_float, webp,
    xor, FilterError,
};
use crate::format::{Datatype, Filter, FilterPipeline};

/// What the filters need to know about the tile a chunk belongs to.
#[derive(Debug, Clone)]
pub struct ChunkContext {
    /// Datatype of the values entering the pipeline (the field's datatype; UINT64 for
    /// offsets and t/dt/dci; UINT8 for validity; CHAR for generic tiles).
    pub field_type: Datatype,
    /// The tile's cell size in bytes (RLE's value width): `cell_val_num × type size` for
    /// fixed data, the type size for var data, 8 for offsets, 1 for validity and
    /// generic tiles, `D × coord size` for legacy `__coords`.
    pub cell_size: u64,
    /// Format version of the tile (fragment version for data tiles, header version for
    /// generic tiles): BIT_WIDTH_REDUCTION and POSITIVE_DELTA act on DATETIME/TIME
    /// values only from version 20.
    pub format_version: u32,
    /// AES-256-GCM key, for encrypted arrays.
    pub key: Option<[u8; 32]>,
}

/// No filter chain TileDB writes expands a chunk by more than a few times in between
/// (the worst is fixed RLE over 1-byte values: 3×, plus headers), so any size a header
/// claims beyond this is corruption, refused before allocating.
const EXPANSION_FACTOR: usize = 16;
const EXPANSION_SLACK: usize = 1 << 20;
/// String mode can hold many more cells than string bytes (empty strings), each costing
/// up to an 8-byte id in the encoded data before it is decoded.
const STRING_MODE_SLACK: usize = 32 << 20;

fn output_limit(unfiltered_len: usize) -> usize {
    unfiltered_len
        .saturating_mul(EXPANSION_FACTOR)
        .saturating_add(EXPANSION_SLACK)
}

/// Un-filters one chunk: `metadata` and `data` are the chunk's metadata and filtered
/// bytes; the result must be exactly `unfiltered_len` bytes.
pub fn unfilter_chunk(
    pipeline: &FilterPipeline,
    ctx: &ChunkContext,
    metadata: &[u8],
    data: &[u8],
    unfiltered_len: u32,
) -> Result<Vec<u8>, FilterError> {
    let mut out = Vec::new();
    unfilter_chunk_into(pipeline, ctx, metadata, data, unfiltered_len, &mut out)?;
    Ok(out)
}

/// `unfilter_chunk`, appending the chunk to `out` (left as it was on an error). When the
/// pipeline starts with a byte compressor, the usual case, the chunk is decompressed
/// straight into `out`: serving a read then copies no decoded byte in user space.
pub fn unfilter_chunk_into(
    pipeline: &FilterPipeline,
    ctx: &ChunkContext,
    metadata: &[u8],
    data: &[u8],
    unfiltered_len: u32,
    out: &mut Vec<u8>,
) -> Result<(), FilterError> {
    let expected = unfiltered_len as usize;
    let limit = output_limit(expected);
    let start = out.len();
    let result = (|| {
        let md_left = match pipeline.filters.first().and_then(byte_codec) {
            Some((name, codec)) => {
                let (md, data) = reverse_filters(pipeline, ctx, metadata, data, 1, limit)?;
                compression::reverse_into(name, codec, &md, &data, limit, out)?.len()
            }
            None => {
                let (md, data) = reverse_filters(pipeline, ctx, metadata, data, 0, limit)?;
                match data {
                    Cow::Owned(bytes) if out.is_empty() => *out = bytes,
                    data => out.extend_from_slice(&data),
                }
                md.len()
            }
        };
        if md_left != 0 {
            return Err(corrupt(
                "pipeline",
                format!("{md_left} bytes of chunk metadata left over after un-filtering"),
            ));
        }
        let got = out.len() - start;
        if got != expected {
            return Err(corrupt(
                "pipeline",
                format!("chunk un-filtered to {got} bytes, its header says {expected}"),
            ));
        }
        Ok(())
    })();
    if result.is_err() {
        out.truncate(start);
    }
    result
}

/// The metadata and data that filter `stage` of the pipeline un-filters in this chunk:
/// what reversing the filters after it leaves. For looking at one filter's input alone:
/// the fuzz seeds give each filter its real input from the fixtures, where the chunk as
/// stored only shows the last filter's.
pub fn stage_input(
    pipeline: &FilterPipeline,
    ctx: &ChunkContext,
    metadata: &[u8],
    data: &[u8],
    unfiltered_len: u32,
    stage: usize,
) -> Result<(Vec<u8>, Vec<u8>), FilterError> {
    let limit = output_limit(unfiltered_len as usize);
    let (md, data) = reverse_filters(pipeline, ctx, metadata, data, stage + 1, limit)?;
    Ok((md.into_owned(), data.into_owned()))
}

/// The byte compressors, which can decompress into a caller's buffer.
fn byte_codec(filter: &Filter) -> Option<(&'static str, Codec)> {
    let codec = match filter {
        Filter::Gzip { .. } => Codec::Gzip,
        Filter::Zstd { .. } => Codec::Zstd,
        Filter::Lz4 { .. } => Codec::Lz4,
        Filter::Bzip2 { .. } => Codec::Bzip2,
        _ => return None,
    };
    Some((filter.name(), codec))
}

/// Un-filters one chunk of a var-size string tile whose first filter (RLE or DICTIONARY)
/// ran in string mode and swallowed the offsets (`05` §4).
pub fn unfilter_string_chunk(
    pipeline: &FilterPipeline,
    ctx: &ChunkContext,
    metadata: &[u8],
    data: &[u8],
    unfiltered_len: u32,
) -> Result<StringChunk, FilterError> {
    let mode =
        match pipeline.filters.first() {
            Some(Filter::Rle { .. }) => Mode::Rle,
            Some(Filter::Dictionary { .. }) => Mode::Dictionary,
            Some(other) => {
                return Err(unsupported(
                    other.name(),
                    "string mode needs RLE or DICTIONARY as the first filter",
                ))
            }
            None => return Err(unsupported(
                "pipeline",
                "string mode needs RLE or DICTIONARY as the first filter, the pipeline is empty",
            )),
        };
    let expected = unfiltered_len as usize;
    let limit = output_limit(expected).saturating_add(STRING_MODE_SLACK);
    let (md, data) = reverse_filters(pipeline, ctx, metadata, data, 1, limit)?;
    let (chunk, used) = string_mode::decode(mode, &md, &data, expected)?;
    if used != md.len() {
        return Err(corrupt(
            "pipeline",
            format!(
                "{} bytes of chunk metadata left over after un-filtering",
                md.len().saturating_sub(used)
            ),
        ));
    }
    Ok(chunk)
}

/// A chunk's (metadata, data) pair between two reverse steps: borrowed from the tile
/// until a filter has to produce new bytes.
type State<'a> = (Cow<'a, [u8]>, Cow<'a, [u8]>);

/// Reverses filters `pipeline.filters[first..]`, last to first.
fn reverse_filters<'a>(
    pipeline: &FilterPipeline,
    ctx: &ChunkContext,
    metadata: &'a [u8],
    data: &'a [u8],
    first: usize,
    limit: usize,
) -> Result<State<'a>, FilterError> {
    let types = pipeline.input_types(ctx.field_type);
    let mut md = Cow::Borrowed(metadata);
    let mut data = Cow::Borrowed(data);
    for (filter, &input_type) in pipeline.filters.iter().zip(&types).skip(first).rev() {
        let step = reverse_one(filter, input_type, ctx, &md, &data, limit)?;
        md = match step.md {
            Md::Tail(used) => drop_front(md, used),
            Md::New(new) => Cow::Owned(new),
        };
        if let Some(new) = step.data {
            data = Cow::Owned(new);
        }
    }
    Ok((md, data))
}

fn drop_front(bytes: Cow<'_, [u8]>, n: usize) -> Cow<'_, [u8]> {
    match bytes {
        Cow::Borrowed(b) => Cow::Borrowed(b.get(n..).unwrap_or_default()),
        Cow::Owned(mut v) => {
            v.drain(..n.min(v.len()));
            Cow::Owned(v)
        }
    }
}

/// Reverses one filter whose input datatype is `input_type`.
fn reverse_one(
    filter: &Filter,
    input_type: Datatype,
    ctx: &ChunkContext,
    md: &[u8],
    data: &[u8],
    limit: usize,
) -> Result<Step, FilterError> {
    let name = filter.name();
    let compress = |codec| compression::reverse(name, codec, md, data, limit);
    match filter {
        Filter::None => Ok(Step::passthrough()),
        Filter::Gzip { .. } => compress(Codec::Gzip),
        Filter::Zstd { .. } => compress(Codec::Zstd),
        Filter::Lz4 { .. } => compress(Codec::Lz4),
        Filter::Bzip2 { .. } => compress(Codec::Bzip2),
        Filter::Rle { .. } => compress(Codec::Rle {
            value_size: ctx.cell_size,
        }),
        Filter::DoubleDelta { reinterpret } => compress(Codec::DoubleDelta {
            width: delta_width(reinterpret.unwrap_or(input_type), name)?,
        }),
        Filter::Delta { reinterpret } => compress(Codec::Delta {
            width: delta_width(reinterpret.unwrap_or(input_type), name)?,
        }),
        Filter::Dictionary { .. } => Err(unsupported(
            name,
            "DICTIONARY only applies to var-size string tiles decoded in string mode",
        )),
        Filter::BitWidthReduction { .. } => match bit_width_kind(input_type, ctx.format_version) {
            Some(kind) => bit_width_reduction::reverse(md, data, kind, limit),
            None => Ok(Step::passthrough()),
        },
        Filter::PositiveDelta { .. } => {
            match positive_delta_width(input_type, ctx.format_version) {
                Some(width) => positive_delta::reverse(md, data, width),
                None => Ok(Step::passthrough()),
            }
        }
        Filter::BitShuffle => bitshuffle::reverse(md, data, input_type.size() as usize),
        Filter::ByteShuffle => byteshuffle::reverse(md, data, input_type.size() as usize),
        Filter::Xor => xor::reverse(md, data, input_type.size() as usize),
        Filter::ScaleFloat {
            scale,
            offset,
            byte_width,
        } => scale_float::reverse(md, data, input_type.size(), *scale, *offset, *byte_width),
        Filter::ChecksumMd5 => checksum::reverse(md, data, Algorithm::Md5),
        Filter::ChecksumSha256 => checksum::reverse(md, data, Algorithm::Sha256),
        Filter::Encryption => encryption::reverse(md, data, ctx.key.as_ref()),
        Filter::Webp(options) => webp::reverse(md, data, options, input_type, limit),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::test_support::*;

    fn ctx(field_type: Datatype, cell_size: u64) -> ChunkContext {
        ChunkContext {
            field_type,
            cell_size,
            format_version: 22,
            key: None,
        }
    }

    fn pipeline(filters: Vec<Filter>) -> FilterPipeline {
        FilterPipeline {
            max_chunk_size: 65536,
            filters,
        }
    }

    fn zstd(b: &[u8]) -> Vec<u8> {
        zstd::bulk::compress(b, 1).unwrap()
    }

    fn i64_bytes(v: &[i64]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn empty_pipeline_is_the_identity() {
        let p = pipeline(vec![]);
        let c = ctx(Datatype::Int32, 4);
        assert_eq!(unfilter_chunk(&p, &c, &[], b"abcd", 4).unwrap(), b"abcd");
        let err = unfilter_chunk(&p, &c, &[], b"abcd", 8).unwrap_err();
        assert!(
            err.to_string().contains("4 bytes, its header says 8"),
            "{err}"
        );
        assert!(unfilter_chunk(&p, &c, &[1], b"abcd", 4).is_err());
    }

    #[test]
    fn byteshuffle_double_delta_zstd_chain() {
        let values: Vec<i64> = (0..500).map(|i| 1_000_000 + i * 37 - (i % 7) * 3).collect();
        let original = i64_bytes(&values);
        // Forward: BYTESHUFFLE (one part) → DOUBLE_DELTA (its metadata part and data
        // part, as INT64) → ZSTD (one metadata part, one data part).
        let md1 = part_header(&[original.len()]);
        let data1 = byteshuffle(&original, 8);
        let dd = |b: &[u8]| dd_encode(&le_i64s(b), 8);
        let (md2, data2) = compress_framing(&[&md1], &[&data1], dd);
        let (md3, data3) = compress_framing(&[&md2], &[&data2], zstd);

        let p = pipeline(vec![
            Filter::ByteShuffle,
            Filter::DoubleDelta { reinterpret: None },
            Filter::Zstd { level: 1 },
        ]);
        let out = unfilter_chunk(
            &p,
            &ctx(Datatype::Int64, 8),
            &md3,
            &data3,
            original.len() as u32,
        );
        assert_eq!(out.unwrap(), original);
    }

    #[test]
    fn reinterpret_type_and_scale_float_typing() {
        // SCALE_FLOAT (f64 → 2-byte ints) then DELTA: DELTA sees INT16 from the typing.
        let values = [10.0f64, 10.5, 11.0, 9.5];
        let original: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let q: Vec<i64> = values.iter().map(|v| ((v - 10.0) / 0.5) as i64).collect();
        let data1: Vec<u8> = q.iter().flat_map(|v| (*v as i16).to_le_bytes()).collect();
        let md1 = part_header(&[data1.len()]);
        let delta = |b: &[u8]| delta_encode(&le_i16s(b), 2);
        let (md2, data2) = compress_framing(&[&md1], &[&data1], delta);
        let p = pipeline(vec![
            Filter::ScaleFloat {
                scale: 0.5,
                offset: 10.0,
                byte_width: 2,
            },
            Filter::Delta { reinterpret: None },
        ]);
        let out = unfilter_chunk(&p, &ctx(Datatype::Float64, 8), &md2, &data2, 32).unwrap();
        assert_eq!(out, original);

        // DOUBLE_DELTA on FLOAT64 is refused unless reinterpreted as an integer type.
        let p = pipeline(vec![Filter::DoubleDelta { reinterpret: None }]);
        let raw = i64_bytes(&[1, 2, 3]);
        let (md, data) = compress_framing(&[], &[&raw], |b| dd_encode(&le_i64s(b), 8));
        let err = unfilter_chunk(&p, &ctx(Datatype::Float64, 8), &md, &data, 24).unwrap_err();
        assert!(matches!(
            err,
            FilterError::Unsupported {
                filter: "DOUBLE_DELTA",
                ..
            }
        ));
        let p = pipeline(vec![Filter::DoubleDelta {
            reinterpret: Some(Datatype::Int64),
        }]);
        assert_eq!(
            unfilter_chunk(&p, &ctx(Datatype::Float64, 8), &md, &data, 24).unwrap(),
            raw
        );
    }

    #[test]
    fn fixed_rle_uses_the_cell_size() {
        let cell: Vec<u8> = (0u8..12).collect();
        let original = [cell.clone(), cell.clone(), cell].concat();
        let (md, data) = compress_framing(&[], &[&original], |b| rle_encode(b, 12));
        let p = pipeline(vec![Filter::Rle { level: 0 }]);
        assert_eq!(
            unfilter_chunk(&p, &ctx(Datatype::Int32, 12), &md, &data, 36).unwrap(),
            original
        );
        // With the type size instead, the runs do not parse.
        assert!(unfilter_chunk(&p, &ctx(Datatype::Int32, 4), &md, &data, 36).is_err());
    }

    #[test]
    fn no_op_filters_depend_on_type_and_version() {
        let original = b"\x01\x02\x03\x04\x05\x06\x07\x08".to_vec();
        for filter in [
            Filter::BitWidthReduction { max_window: 256 },
            Filter::PositiveDelta { max_window: 256 },
        ] {
            let p = pipeline(vec![filter.clone()]);
            for (t, version) in [
                (Datatype::Float64, 22),
                (Datatype::Char, 22),
                (Datatype::StringAscii, 22),
                (Datatype::DatetimeMs, 19),
                (Datatype::TimeNs, 12),
            ] {
                let mut c = ctx(t, t.size());
                c.format_version = version;
                let out = unfilter_chunk(&p, &c, &[], &original, 8);
                assert_eq!(out.unwrap(), original, "{filter:?} {t:?} v{version}");
            }
            // DATETIME from version 20 on is active: no header → error.
            let mut c = ctx(Datatype::DatetimeMs, 8);
            c.format_version = 20;
            assert!(unfilter_chunk(&p, &c, &[], &original, 8).is_err());
        }
        // 8-bit integers: BIT_WIDTH_REDUCTION is a no-op, POSITIVE_DELTA is not.
        let p = pipeline(vec![Filter::BitWidthReduction { max_window: 256 }]);
        assert_eq!(
            unfilter_chunk(&p, &ctx(Datatype::UInt8, 1), &[], &original, 8).unwrap(),
            original
        );
        let p = pipeline(vec![Filter::PositiveDelta { max_window: 256 }]);
        assert!(unfilter_chunk(&p, &ctx(Datatype::Int8, 1), &[], &original, 8).is_err());
        let (md, data) = positive_delta_encode(&original, 1, 256);
        assert_eq!(
            unfilter_chunk(&p, &ctx(Datatype::Int8, 1), &md, &data, 8).unwrap(),
            original
        );
    }

    #[test]
    fn checksums_and_encryption_in_a_pipeline() {
        let key = *b"0123456789abcdeF0123456789abcdeF";
        let original = b"tile payload, tile payload".to_vec();
        // Forward: SHA256 then AES (as TileDB appends it last).
        let md1 = checksum_header(&[], &[&original], sha256);
        let (md2, data2) = encrypt_framing(&key, &[&md1], &[&original]);
        let p = pipeline(vec![Filter::ChecksumSha256, Filter::Encryption]);
        let mut c = ctx(Datatype::Char, 1);
        assert_eq!(
            unfilter_chunk(&p, &c, &md2, &data2, 26).unwrap_err(),
            FilterError::KeyNeeded
        );
        c.key = Some(key);
        assert_eq!(unfilter_chunk(&p, &c, &md2, &data2, 26).unwrap(), original);
        c.key = Some([7; 32]);
        assert_eq!(
            unfilter_chunk(&p, &c, &md2, &data2, 26).unwrap_err(),
            FilterError::Decrypt
        );
    }

    #[test]
    fn string_mode_rle_then_zstd() {
        let strings: Vec<&[u8]> = vec![b"alpha", b"alpha", b"", b"beta", b"beta", b"beta"];
        let (md1, data1) = rle_string_encode(&strings);
        let (md2, data2) = compress_framing(&[&md1], &[&data1], zstd);
        let p = pipeline(vec![Filter::Rle { level: 0 }, Filter::Zstd { level: 1 }]);
        let c = ctx(Datatype::StringAscii, 1);
        let chunk = unfilter_string_chunk(&p, &c, &md2, &data2, 22).unwrap();
        assert_eq!(chunk.bytes, b"alphaalphabetabetabeta");
        assert_eq!(chunk.offsets, [0, 5, 10, 10, 14, 18]);
        assert!(unfilter_string_chunk(&p, &c, &md2, &data2, 21).is_err());
    }

    #[test]
    fn string_mode_dictionary_alone_and_misuse() {
        let strings: Vec<&[u8]> = vec![b"x", b"yy", b"x"];
        let (md, data) = dictionary_string_encode(&strings);
        let p = pipeline(vec![Filter::Dictionary { level: 0 }]);
        let c = ctx(Datatype::StringUtf8, 1);
        let chunk = unfilter_string_chunk(&p, &c, &md, &data, 4).unwrap();
        assert_eq!(chunk.offsets, [0, 1, 3]);
        // Outside string mode DICTIONARY cannot be reversed.
        assert!(matches!(
            unfilter_chunk(&p, &c, &md, &data, 4),
            Err(FilterError::Unsupported { .. })
        ));
        // String mode needs RLE or DICTIONARY first.
        let p = pipeline(vec![Filter::Zstd { level: 1 }]);
        assert!(unfilter_string_chunk(&p, &c, &md, &data, 4).is_err());
        assert!(unfilter_string_chunk(&pipeline(vec![]), &c, &md, &data, 4).is_err());
    }

    /// The serving path decodes into a reply that already holds earlier chunks: the
    /// chunk must be appended after them, and an error must leave them as they were.
    #[test]
    fn unfilter_into_appends_and_leaves_the_buffer_alone_on_errors() {
        let original: Vec<u8> = (0..20_000u32).flat_map(|i| (i / 7).to_le_bytes()).collect();
        let c = ctx(Datatype::UInt32, 4);
        type Compress = fn(&[u8]) -> Vec<u8>;
        let lz4: Compress = |b| lz4_flex::block::compress(b);
        let cases: [(Vec<Filter>, Compress); 3] = [
            (vec![Filter::Zstd { level: 1 }], zstd),
            (vec![Filter::Lz4 { level: 1 }], lz4),
            // Not a byte compressor first: decoded, then appended.
            (vec![Filter::ByteShuffle, Filter::Zstd { level: 1 }], zstd),
        ];
        for (filters, compress) in cases {
            let p = pipeline(filters.clone());
            let (md, data) = if filters.len() == 2 {
                let md1 = part_header(&[original.len()]);
                compress_framing(&[&md1], &[&byteshuffle(&original, 4)], compress)
            } else {
                compress_framing(&[], &[&original], compress)
            };
            let mut out = b"earlier".to_vec();
            unfilter_chunk_into(&p, &c, &md, &data, original.len() as u32, &mut out).unwrap();
            assert_eq!(&out[..7], b"earlier", "{filters:?}");
            assert_eq!(&out[7..], &original[..], "{filters:?}");
            // A header that claims one byte more: an error, and `out` untouched.
            let before = out.clone();
            let err = unfilter_chunk_into(&p, &c, &md, &data, original.len() as u32 + 1, &mut out);
            assert!(err.is_err(), "{filters:?}");
            assert_eq!(out, before, "{filters:?}: left as it was");
            // Corrupt data, likewise.
            let mut bad = data.clone();
            let n = bad.len();
            bad[n / 2..].fill(0xFF);
            let _ = unfilter_chunk_into(&p, &c, &md, &bad, original.len() as u32, &mut out)
                .map(|()| out.truncate(before.len()));
            assert_eq!(out, before, "{filters:?}: left as it was after bad data");
        }
    }

    /// Every filter fed garbage, truncated headers or absurd sizes must fail cleanly.
    #[test]
    fn garbage_never_panics() {
        let filters = vec![
            Filter::Gzip { level: 1 },
            Filter::Zstd { level: 1 },
            Filter::Lz4 { level: 1 },
            Filter::Bzip2 { level: 1 },
            Filter::Rle { level: 1 },
            Filter::DoubleDelta { reinterpret: None },
            Filter::Delta { reinterpret: None },
            Filter::BitWidthReduction { max_window: 256 },
            Filter::PositiveDelta { max_window: 256 },
            Filter::BitShuffle,
            Filter::ByteShuffle,
            Filter::Xor,
            Filter::ScaleFloat {
                scale: 1.0,
                offset: 0.0,
                byte_width: 4,
            },
            Filter::ChecksumMd5,
            Filter::ChecksumSha256,
            Filter::Encryption,
            Filter::Dictionary { level: 1 },
            Filter::Webp(crate::format::pipeline::WebpOptions {
                quality: 1.0,
                input_format: 1,
                lossless: true,
                y_extent: 1,
                x_extent: 3,
            }),
        ];
        let mut seed = 0x1234_5678u32;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            seed
        };
        let mut c = ctx(Datatype::Int32, 4);
        c.key = Some([1; 32]);
        for filter in &filters {
            let p = pipeline(vec![filter.clone()]);
            let types = [Datatype::Int32, Datatype::Float32, Datatype::UInt8];
            for round in 0..300 {
                let md_len = (next() % 40) as usize;
                let data_len = (next() % 80) as usize;
                let mut md: Vec<u8> = (0..md_len).map(|_| next() as u8).collect();
                let data: Vec<u8> = (0..data_len).map(|_| next() as u8).collect();
                // Half the time, plausible small counts with absurd sizes.
                if round % 2 == 0 && md.len() >= 16 {
                    md[0..4].copy_from_slice(&(next() % 3).to_le_bytes());
                    md[4..8].copy_from_slice(&(next() % 3).to_le_bytes());
                    md[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
                }
                c.field_type = types[round % 3];
                let _ = unfilter_chunk(&p, &c, &md, &data, next() % 100);
                let _ = unfilter_string_chunk(&p, &c, &md, &data, next() % 100);
            }
        }
    }
}
