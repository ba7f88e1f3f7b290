//! FlatBuffers string vectors: SimpleStringVector (FORMAT.md §5.7), ConstStringVector
//! (§5.8) and DictStringVector (§5.9).

use super::column::{ColumnInfo, NaEncoding, Strings, StringsBuilder};
use super::element::Element;
use super::error::Result;
use super::flatbuffers::{data_info, na_mask, string_element, Table};
use super::layout::Source;
use super::span::Span;

/// `{0: naMask, 1: data [string]}`; the row count is the vector's. NA rows store "".
pub(crate) fn simple(body: Span, limit: u64) -> Result<(u64, Strings)> {
    let t = Table::root(body)?;
    let (validity, na) = na_mask(t.table("naMask", 0)?)?;
    let data = t.vector("data", 1, 4)?;
    let rows = data.map_or(0, |v| v.count);
    let chunk = body.whole_chunk();
    let mut out = StringsBuilder::new(body.part(), rows, limit)?;
    if let Some(data) = data {
        for row in 0..rows {
            // NA rows store "": read it anyway, so a damaged offset is noticed.
            let s = string_element(&t.buffer(), &data, "data", row)?;
            out.push(validity.is_valid(chunk, row).then_some(s))?;
        }
    }
    Ok((rows, Strings::new(out, ColumnInfo::new(na))))
}

/// `{0: len, 1: naMask, 2: str}`: `str` in every valid row.
pub(crate) fn constant(body: Span, limit: u64) -> Result<(u64, Strings)> {
    let t = Table::root(body)?;
    let rows = t.count("len", 0)?;
    let (validity, na) = na_mask(t.table("naMask", 1)?)?;
    let chunk = body.whole_chunk();
    let mut out = StringsBuilder::new(body.part(), rows, limit)?;
    let value = t.string("str", 2)?;
    let needs_value = (0..rows).any(|row| validity.is_valid(chunk, row));
    let value = match value {
        Some(v) => v,
        None if !needs_value => &[],
        None => return Err(t.invalid("str", "field str is absent but some rows are valid")),
    };
    out.expect_bytes(rows.saturating_mul(value.len() as u64))?;
    for row in 0..rows {
        out.push(validity.is_valid(chunk, row).then_some(value))?;
    }
    Ok((rows, Strings::new(out, ColumnInfo::new(na))))
}

/// `{0: len, 1: dictionary [string], 2: info, 3: codes}`: code 0 is NA (dictionary
/// entry 0 is a reserved ""). The dictionary is in no particular order.
pub(crate) fn dict(body: Span, limit: u64) -> Result<(u64, Strings)> {
    let t = Table::root(body)?;
    let rows = t.count("len", 0)?;
    // Dictionary entries are bounded by the buffer (4 bytes of offset each).
    let entries = match t.vector("dictionary", 1, 4)? {
        Some(d) => (0..d.count)
            .map(|i| string_element(&t.buffer(), &d, "dictionary", i))
            .collect::<Result<Vec<_>>>()?,
        None => Vec::new(),
    };
    let format = data_info(&t, "info", 2)?
        .ok_or_else(|| t.invalid("info", "field info (DataInfo) is absent"))?;
    let codes = t.bytes_or_empty("codes", 3)?;
    let source = Source::new(&codes, "codes", Element::Int(format), rows, true)?;
    let chunk = body.whole_chunk();
    let mut out = StringsBuilder::new(body.part(), rows, limit)?;
    for row in 0..rows {
        let code = source.int(chunk, row);
        if code == 0 {
            out.push(None)?;
            continue;
        }
        let entry = usize::try_from(code)
            .ok()
            .and_then(|c| entries.get(c))
            .ok_or_else(|| {
                codes.invalid(
                    "codes",
                    0,
                    format!(
                        "row {row} has code {code}, the dictionary has {} entries",
                        entries.len()
                    ),
                )
            })?;
        out.push(Some(entry))?;
    }
    let info = ColumnInfo {
        element: Some(Element::Int(format)),
        dictionary_entries: Some(entries.len() as u64),
        ..ColumnInfo::new(NaEncoding::DictCodeZero)
    };
    Ok((rows, Strings::new(out, info)))
}
