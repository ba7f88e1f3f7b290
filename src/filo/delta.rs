//! Vectors of offsets from a line: DiffPrimitiveVector (FORMAT.md §5.6, a constant base)
//! and DeltaDeltaVector (§6.5, base + slope·row).
//!
//! Both add in wrapping 64-bit arithmetic, the exact inverse of the writers'
//! `value − line` (see [`Source`]). Filo's own reader computed `slope·row` in 32 bits
//! and so returned wrong values once `|slope·row| ≥ 2³¹` (daily timestamps in ms after
//! 25 rows, FORMAT.md §11 item 3); we return what was written.

use super::column::{ColumnInfo, NaEncoding};
use super::column_type::ColumnType;
use super::ctx::Ctx;
use super::element::Element;
use super::error::Result;
use super::flatbuffers::{data_info, na_mask, Table};
use super::layout::{Parts, Source, Validity};
use super::primitive::sub_vector;
use super::span::Span;

/// DiffPrimitiveVector: `{0: len, 1: naMask, 2: base (i64, default 0), 3: info, 4: data}`,
/// `value[i] = base + delta[i]`.
pub(crate) fn diff(body: Span, cx: &Ctx) -> Result<Parts> {
    cx.require(&[ColumnType::Int, ColumnType::Long, ColumnType::Timestamp])?;
    let t = Table::root(body)?;
    let rows = t.count("len", 0)?;
    let (validity, na) = na_mask(t.table("naMask", 1)?)?;
    let base = t.i64("base", 2, 0)?;
    let format = data_info(&t, "info", 3)?
        .ok_or_else(|| t.invalid("info", "field info (DataInfo) is absent"))?;
    let data = t.bytes_or_empty("data", 4)?;
    let values = Source::new(&data, "data", Element::Int(format), rows, true)?.with_line(base, 0);
    Ok(Parts {
        rows,
        validity,
        values: Some(values),
        zones: None,
        info: ColumnInfo {
            element: Some(Element::Int(format)),
            base: Some(base),
            ..ColumnInfo::new(na)
        },
    })
}

/// DeltaDeltaVector: `i64 init, i32 slope`, then a sub-vector of residuals,
/// `value[i] = init + slope·i + residual[i]`. No NA.
pub(crate) fn delta_delta(body: Span, cx: &Ctx) -> Result<Parts> {
    cx.require(&[ColumnType::Long, ColumnType::Timestamp])?;
    let init = body.i64("initial value", 0)?;
    let slope = i64::from(body.i32("slope", 8)?);
    let residuals = sub_vector(body.tail("residual sub-vector", 12)?)?;
    let element = Element::Int(residuals.format);
    let values = Source::new(&residuals.data, "residuals", element, residuals.count, true)?
        .with_line(init, slope);
    Ok(Parts {
        rows: residuals.count,
        validity: Validity::AllValid,
        values: Some(values),
        zones: None,
        info: ColumnInfo {
            element: Some(element),
            base: Some(init),
            slope: Some(slope),
            ..ColumnInfo::new(NaEncoding::None)
        },
    })
}
