//! DiffDateTimeVector (FORMAT.md §5.10): Joda DateTimes as base millis + deltas, and
//! fixed UTC offsets as a base zone + deltas, both in a FlatBuffers table
//! `{0: naMask, 1: vars (DDTVars), 2: millisInfo, 3: millis, 4: tzInfo, 5: tz}`.
//!
//! A zone is kept as its offset at the Unix epoch in quarter hours, so that is all we can
//! give back: one i8 per row in `timezone.bin`.

use super::column::ColumnInfo;
use super::column_type::ColumnType;
use super::ctx::Ctx;
use super::element::Element;
use super::error::Result;
use super::flatbuffers::{data_info, na_mask, Table};
use super::layout::{Parts, Source, Zones};
use super::span::Span;

/// Joda accepts offsets up to ±23:59:59.999, i.e. ±95 quarter hours: a zone beyond that
/// cannot have been written and would make Filo's own reader throw.
const MAX_QUARTER_HOURS: i64 = 95;

pub(crate) fn diff_date_time(body: Span, cx: &Ctx) -> Result<Parts> {
    cx.require(&[ColumnType::DateTime])?;
    let t = Table::root(body)?;
    let (validity, na) = na_mask(t.table("naMask", 0)?)?;
    // DDTVars: i32 len, i8 baseTz, 3 pad, i64 baseMillis.
    let vars = t
        .structure("vars", 1, 16)?
        .ok_or_else(|| t.invalid("vars", "field vars (DDTVars) is absent"))?;
    let rows = vars.count_i32("vars.len", 0)?;
    let base_tz = vars.u8("vars.baseTz", 4)? as i8;
    let base_millis = vars.i64("vars.baseMillis", 8)?;

    let millis_format = data_info(&t, "millisInfo", 2)?
        .ok_or_else(|| t.invalid("millisInfo", "field millisInfo (DataInfo) is absent"))?;
    let millis = t.bytes_or_empty("millis", 3)?;
    let values = Source::new(&millis, "millis", Element::Int(millis_format), rows, true)?
        .with_line(base_millis, 0);

    // The tz vector is written only when the zones differ.
    let mut tz_format = None;
    let deltas = match t.vector("tz", 5, 1)? {
        Some(tz) if tz.count > 0 => {
            let format = data_info(&t, "tzInfo", 4)?
                .ok_or_else(|| t.invalid("tzInfo", "field tzInfo (DataInfo) is absent"))?;
            tz_format = Some(format);
            let source = Source::new(&tz.elems, "tz", Element::Int(format), rows, true)?;
            Some(source.with_line(i64::from(base_tz), 0))
        }
        _ => None,
    };
    let chunk = body.whole_chunk();
    for row in (0..rows).filter(|&r| validity.is_valid(chunk, r)) {
        let zone = deltas
            .as_ref()
            .map_or(i64::from(base_tz), |d| d.int(chunk, row));
        if zone.abs() > MAX_QUARTER_HOURS {
            return Err(t.invalid(
                "tz",
                format!(
                    "row {row} has zone {zone} quarter hours, beyond ±{MAX_QUARTER_HOURS} (±23:45)"
                ),
            ));
        }
    }
    Ok(Parts {
        rows,
        validity,
        values: Some(values),
        zones: Some(Zones {
            base: base_tz,
            deltas,
        }),
        info: ColumnInfo {
            element: Some(Element::Int(millis_format)),
            base: Some(base_millis),
            base_tz: Some(base_tz),
            tz_element: tz_format,
            ..ColumnInfo::new(na)
        },
    })
}
