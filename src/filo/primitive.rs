//! Plain numeric vectors: FlatBuffers Simple/ConstPrimitiveVector (FORMAT.md §5.4, §5.5),
//! the new-style primitive sub-vector with and without an NA bitmap (§6.1–§6.3), and
//! ConstVector (§6.4).

use super::bitpack::IntFormat;
use super::column::{ColumnInfo, NaEncoding};
use super::column_type::{ColumnType, INTEGRAL};
use super::ctx::Ctx;
use super::element::Element;
use super::error::Result;
use super::flatbuffers::{data_info, na_mask, Table};
use super::kind::VectorKind;
use super::layout::{Parts, Source, Validity};
use super::span::Span;

/// SimplePrimitiveVector (one element per row) and ConstPrimitiveVector (element 0 for
/// every row): same table, `{0: len, 1: naMask, 2: info, 3: data}`.
pub(crate) fn flatbuffer(body: Span, cx: &Ctx) -> Result<Parts> {
    use ColumnType::*;
    cx.require(&[Bool, Int, Long, Float, Double, Timestamp])?;
    let t = Table::root(body)?;
    let rows = t.count("len", 0)?;
    let (validity, na) = na_mask(t.table("naMask", 1)?)?;
    let format = data_info(&t, "info", 2)?
        .ok_or_else(|| t.invalid("info", "field info (DataInfo) is absent"))?;
    // Floats and bools are stored at their natural width; info must agree.
    let (element, width) = match cx.column_type {
        Bool => (Element::Bit, 64),
        Float => (Element::F32, 32),
        Double => (Element::F64, 64),
        _ => (Element::Int(format), format.nbits),
    };
    if format.nbits != width {
        return Err(t.invalid(
            "info",
            format!(
                "nbits {} for a {} column, expected {width}",
                format.nbits, cx.column_type
            ),
        ));
    }
    let data = t.bytes_or_empty("data", 3)?;
    let per_row = cx.kind == VectorKind::SimplePrimitiveVector;
    let values = Source::new(&data, "data", element, rows, per_row)?;
    Ok(Parts {
        rows,
        validity,
        values: Some(values),
        zones: None,
        info: ColumnInfo {
            element: Some(element),
            ..ColumnInfo::new(na)
        },
    })
}

/// The new-style primitive sub-vector (§6.1): `u16 nbits, u8 signed, u8 bitShift`, then
/// packed data. It has no count: the count follows from the byte length, which is why
/// chunks are stored without padding.
pub(crate) struct SubVector<'a> {
    pub format: IntFormat,
    pub data: Span<'a>,
    pub count: u64,
}

pub(crate) fn sub_vector(span: Span) -> Result<SubVector> {
    let nbits = span.u16("nbits", 0)?;
    let signed = span.u8("signed flag", 2)? != 0;
    let shift = span.u8("bitShift", 3)? & 7;
    let format = IntFormat::new(&span, "nbits", 0, nbits, signed, true)?;
    let data = span.tail("data", 4)?;
    // bitShift = bits used in the last byte (0 = all 8).
    let unused = if shift == 0 { 0 } else { 8 - u64::from(shift) };
    let bits = (data.len() as u64 * 8).checked_sub(unused).ok_or_else(|| {
        span.invalid(
            "bitShift",
            3,
            format!("{shift} bits used in the last data byte, but there is no data byte"),
        )
    })?;
    Ok(SubVector {
        format,
        data,
        count: bits / u64::from(format.nbits),
    })
}

/// 0x0806 IntBinaryVector and 0x0506 PrimitiveAppendableVector: the body is one
/// sub-vector, every row valid.
pub(crate) fn unmasked(body: Span, cx: &Ctx) -> Result<Parts> {
    binary(body, cx, Validity::AllValid, NaEncoding::None)
}

/// 0x0706 and 0x0006: `u32 subOff`, NA bitmap words up to `subOff`, then the sub-vector.
/// The row count comes from the sub-vector; the bitmap may be longer (an appendable
/// vector sized for its capacity) but must cover every row.
pub(crate) fn masked(body: Span, cx: &Ctx) -> Result<Parts> {
    let sub_off = body.u32("sub-vector offset", 0)? as usize;
    if sub_off < 4 || !(sub_off - 4).is_multiple_of(8) {
        return Err(body.invalid(
            "sub-vector offset",
            0,
            format!("{sub_off}: the NA bitmap from body byte 4 up to it must be whole u64 words"),
        ));
    }
    let bitmap = body.sub("NA bitmap", 4, sub_off - 4)?;
    let sub = body.tail("sub-vector", sub_off)?;
    let parts = binary(
        sub,
        cx,
        Validity::Bitmap(bitmap.range()),
        NaEncoding::Bitmap,
    )?;
    let covered = (bitmap.len() as u64 / 8) * 64;
    if covered < parts.rows {
        return Err(bitmap.invalid(
            "NA bitmap",
            0,
            format!(
                "{} words cover {covered} rows, the data holds {}",
                bitmap.len() / 8,
                parts.rows
            ),
        ));
    }
    Ok(parts)
}

fn binary(sub: Span, cx: &Ctx, validity: Validity, na: NaEncoding) -> Result<Parts> {
    cx.require(&INTEGRAL)?;
    let v = sub_vector(sub)?;
    let integer_subtype = matches!(
        cx.kind,
        VectorKind::IntBinaryVector | VectorKind::MaskedIntBinaryVector
    );
    // Under a double column the INT subtypes hold integral doubles as integers; the
    // PRIMITIVE subtypes hold IEEE doubles. Under int/long both hold integers (the
    // PRIMITIVE subtypes are the pre-0.3.3 Int form).
    let element = if cx.column_type == ColumnType::Double && !integer_subtype {
        if v.format.nbits != 64 {
            return Err(sub.invalid(
                "nbits",
                0,
                format!("{} bits, a double column needs 64", v.format.nbits),
            ));
        }
        Element::F64
    } else {
        Element::Int(v.format)
    };
    let values = Source::new(&v.data, "data", element, v.count, true)?;
    Ok(Parts {
        rows: v.count,
        validity,
        values: Some(values),
        zones: None,
        info: ColumnInfo {
            element: Some(element),
            ..ColumnInfo::new(na)
        },
    })
}

/// 0x0606 ConstVector under a numeric column: `i32 count`, then one value whose size
/// the column type fixes (string columns: utf8.rs).
pub(crate) fn constant(body: Span, cx: &Ctx) -> Result<Parts> {
    cx.require(&INTEGRAL)?;
    let rows = body.count_i32("count", 0)?;
    let value = body.tail("value", 4)?;
    let (element, size) = match cx.column_type {
        ColumnType::Int => (
            Element::Int(IntFormat {
                nbits: 32,
                signed: true,
            }),
            4,
        ),
        ColumnType::Double => (Element::F64, 8),
        _ => (
            Element::Int(IntFormat {
                nbits: 64,
                signed: true,
            }),
            8,
        ),
    };
    if value.len() != size {
        return Err(value.invalid(
            "value",
            0,
            format!(
                "{} bytes, a {} constant has {size}",
                value.len(),
                cx.column_type
            ),
        ));
    }
    let values = Source::new(&value, "value", element, rows, false)?;
    Ok(Parts {
        rows,
        validity: Validity::AllValid,
        values: Some(values),
        zones: None,
        info: ColumnInfo {
            element: Some(element),
            ..ColumnInfo::new(NaEncoding::None)
        },
    })
}
