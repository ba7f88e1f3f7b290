//! Whole chunks: [`decode_vector`] (every value) and [`fixed_layout`] (row `i` on demand),
//! dispatching on the header word to each vector kind's parser.

use std::borrow::Cow;

use super::column::{self, ColumnInfo as Info, DecodedColumn, NaEncoding, Strings};
use super::column_type::ColumnType;
use super::ctx::Ctx;
use super::error::{FiloError, Result};
use super::framing::unframe;
use super::header::Header;
use super::kind::VectorKind;
use super::layout::{FixedLayout, Parts, Validity, Zones};
use super::options::DecodeOptions;
use super::span::Span;
use super::{datetime, delta, fbstring, primitive, utf8};

/// Decodes one chunk (optionally LZ4-framed) of a column of type `column_type`.
pub fn decode_vector(bytes: &[u8], column_type: ColumnType) -> Result<DecodedColumn> {
    decode_vector_with(bytes, column_type, &DecodeOptions::default())
}

/// [`decode_vector`] with an explicit writer version and output budget.
pub fn decode_vector_with(
    bytes: &[u8],
    column_type: ColumnType,
    options: &DecodeOptions,
) -> Result<DecodedColumn> {
    let chunk = unframe(bytes, options.max_decoded_bytes)?;
    let framed = matches!(chunk, Cow::Owned(_));
    let decoded = match column_type.elem_size() {
        Some(_) => fixed(Cow::Borrowed(&chunk), column_type)
            .and_then(|layout| layout.decode(options.max_decoded_bytes)),
        None => strings(&chunk, column_type, options),
    };
    let mut decoded = decoded.map_err(|e| in_frame(e, framed, chunk.len()))?;
    decoded.info.stored_bytes = bytes.len() as u64;
    decoded.info.chunk_bytes = chunk.len() as u64;
    decoded.info.lz4_framed = framed;
    Ok(decoded)
}

/// The row-addressable view of a chunk of a non-string column, or `None` for string
/// columns (see [`FixedLayout`]). An LZ4-framed blob is decompressed once, and the
/// layout keeps the decompressed chunk.
pub fn fixed_layout(bytes: &[u8], column_type: ColumnType) -> Result<Option<FixedLayout<'_>>> {
    fixed_layout_with(bytes, column_type, &DecodeOptions::default())
}

/// [`fixed_layout`] with explicit options (the budget bounds LZ4 decompression).
pub fn fixed_layout_with<'a>(
    bytes: &'a [u8],
    column_type: ColumnType,
    options: &DecodeOptions,
) -> Result<Option<FixedLayout<'a>>> {
    if column_type.elem_size().is_none() {
        return Ok(None);
    }
    let chunk = unframe(bytes, options.max_decoded_bytes)?;
    let framed = matches!(chunk, Cow::Owned(_));
    let chunk_len = chunk.len();
    let mut layout = fixed(chunk, column_type).map_err(|e| in_frame(e, framed, chunk_len))?;
    let info = layout.info_mut();
    info.stored_bytes = bytes.len() as u64;
    info.chunk_bytes = chunk_len as u64;
    info.lz4_framed = framed;
    Ok(Some(layout))
}

fn in_frame(e: FiloError, framed: bool, chunk_len: usize) -> FiloError {
    if framed {
        FiloError::InFramedChunk {
            chunk_bytes: chunk_len as u64,
            cause: Box::new(e),
        }
    } else {
        e
    }
}

fn fixed(chunk: Cow<'_, [u8]>, column_type: ColumnType) -> Result<FixedLayout<'_>> {
    let header = Header::parse(&chunk)?;
    let cx = Ctx {
        kind: header.kind,
        header: header.word,
        column_type,
    };
    let elem_size = column_type.elem_size().ok_or_else(|| cx.wrong_type())?;
    let span = Span::chunk(&chunk, header.kind.name());
    let body = span.tail("body", 4)?;
    let mut parts = match header.kind {
        VectorKind::EmptyVector => empty(&span, header.empty_rows)?,
        VectorKind::SimplePrimitiveVector | VectorKind::ConstPrimitiveVector => {
            primitive::flatbuffer(body, &cx)?
        }
        VectorKind::DiffPrimitiveVector => delta::diff(body, &cx)?,
        VectorKind::DiffDateTimeVector => datetime::diff_date_time(body, &cx)?,
        VectorKind::IntBinaryVector | VectorKind::PrimitiveAppendableVector => {
            primitive::unmasked(body, &cx)?
        }
        VectorKind::MaskedIntBinaryVector | VectorKind::PrimitiveMaskVector => {
            primitive::masked(body, &cx)?
        }
        VectorKind::ConstVector => primitive::constant(body, &cx)?,
        VectorKind::DeltaDeltaVector => delta::delta_delta(body, &cx)?,
        VectorKind::SimpleStringVector
        | VectorKind::ConstStringVector
        | VectorKind::DictStringVector
        | VectorKind::UTF8Vector
        | VectorKind::FixedMaxUTF8Vector
        | VectorKind::DictUTF8Vector => return Err(cx.wrong_type()),
    };
    if column_type == ColumnType::DateTime && parts.zones.is_none() {
        // An all-NA datetime column still has a (zero) zone per row.
        parts.zones = Some(Zones {
            base: 0,
            deltas: None,
        });
    }
    Ok(FixedLayout::new(
        chunk,
        header.kind,
        header.word,
        column_type,
        elem_size,
        parts,
    ))
}

fn strings(
    chunk: &[u8],
    column_type: ColumnType,
    options: &DecodeOptions,
) -> Result<DecodedColumn> {
    let header = Header::parse(chunk)?;
    let cx = Ctx {
        kind: header.kind,
        header: header.word,
        column_type,
    };
    cx.require(&[ColumnType::String, ColumnType::Utf8])?;
    let span = Span::chunk(chunk, header.kind.name());
    let body = span.tail("body", 4)?;
    let limit = options.max_decoded_bytes;
    let (rows, s): (u64, Strings) = match header.kind {
        VectorKind::EmptyVector => {
            empty(&span, header.empty_rows)?;
            let mut b = column::StringsBuilder::new("EmptyVector", header.empty_rows, limit)?;
            for _ in 0..header.empty_rows {
                b.push(None)?;
            }
            (
                header.empty_rows,
                Strings::new(b, Info::new(NaEncoding::EmptyVector)),
            )
        }
        VectorKind::SimpleStringVector => fbstring::simple(body, limit)?,
        VectorKind::ConstStringVector => fbstring::constant(body, limit)?,
        VectorKind::DictStringVector => fbstring::dict(body, limit)?,
        VectorKind::UTF8Vector => utf8::utf8_vector(body, options.version, limit)?,
        VectorKind::FixedMaxUTF8Vector => utf8::fixed_max(body, limit)?,
        VectorKind::DictUTF8Vector => utf8::dict(body, options.version, limit)?,
        VectorKind::ConstVector => utf8::constant(body, limit)?,
        _ => return Err(cx.wrong_type()),
    };
    Ok(DecodedColumn {
        kind: header.kind,
        header: header.word,
        column_type,
        length: rows,
        values: s.values,
        validity: s.validity,
        timezone: None,
        info: s.info,
    })
}

/// EmptyVector (FORMAT.md §2): the header is the whole chunk.
fn empty(chunk: &Span, rows: u64) -> Result<Parts> {
    if chunk.len() != 4 {
        return Err(chunk.invalid(
            "body",
            4,
            format!(
                "{} bytes follow the header; an EmptyVector has none",
                chunk.len() - 4
            ),
        ));
    }
    Ok(Parts {
        rows,
        validity: Validity::AllNa,
        values: None,
        zones: None,
        info: Info::new(NaEncoding::EmptyVector),
    })
}
