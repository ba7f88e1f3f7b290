//! New-style string vectors: UTF8Vector (FORMAT.md §6.6), FixedMaxUTF8Vector (§6.7),
//! DictUTF8Vector (§6.8) and ConstVector under a string column (§6.4).
//!
//! String bytes are passed through unchanged: UTF-8 by convention, never checked by Filo.

use super::column::{ColumnInfo, NaEncoding, Strings, StringsBuilder};
use super::element::Element;
use super::error::Result;
use super::layout::Source;
use super::options::FormatVersion;
use super::primitive::sub_vector;
use super::span::Span;

/// The fixed word of an NA element (and of the NA dictionary entry).
const NA_WORD: u32 = 0x8000_0000;

/// A UTF8Vector: `i32 count`, one u32 fixed word per element, then the string bytes.
/// Its offsets are relative to its own first byte, which is the body for a standalone
/// vector and body + 8 for a dictionary.
struct Utf8Table<'a> {
    span: Span<'a>,
    count: u64,
    version: FormatVersion,
}

impl<'a> Utf8Table<'a> {
    fn parse(span: Span<'a>, version: FormatVersion) -> Result<Utf8Table<'a>> {
        let count = span.count_i32("count", 0)?;
        span.entries("offset table", 4, count, 4)?;
        Ok(Utf8Table {
            span,
            count,
            version,
        })
    }

    /// Where the string bytes start: right after the fixed words.
    fn var_start(&self) -> u64 {
        4 + 4 * self.count
    }

    /// Element `i` (< count): its bytes, or None for NA.
    fn get(&self, i: u64) -> Result<Option<&'a [u8]>> {
        let rel = 4 + 4 * i as usize;
        let word = self.span.u32("fixed word", rel)?;
        if word == NA_WORD {
            return Ok(None);
        }
        let (start, len) = if word & NA_WORD != 0 {
            // Small form: bit 31, offset, length in one word. v0.3.2 made it 20 + 11 bits.
            match self.version {
                FormatVersion::Filo03 => {
                    (u64::from((word >> 11) & 0xF_FFFF), u64::from(word & 0x7FF))
                }
                FormatVersion::Filo030 => {
                    (u64::from((word >> 16) & 0x7FFF), u64::from(word & 0xFFFF))
                }
            }
        } else {
            // Large form: an offset to `i32 length` + bytes.
            let at = u64::from(word);
            self.check(rel, i, at, 4)?;
            let len = self.span.i32("string length", at as usize)?;
            let len = u64::try_from(len).map_err(|_| {
                self.span.invalid(
                    "string length",
                    at as usize,
                    format!("negative length {len}"),
                )
            })?;
            (at + 4, len)
        };
        self.check(rel, i, start, len)?;
        Ok(Some(
            &self.span.bytes()[start as usize..(start + len) as usize],
        ))
    }

    /// Strings live after the fixed words, inside this vector.
    fn check(&self, rel: usize, row: u64, start: u64, len: u64) -> Result<()> {
        let end = start.saturating_add(len);
        if start < self.var_start() || end > self.span.len() as u64 {
            return Err(self.span.invalid(
                "fixed word",
                rel,
                format!(
                    "element {row} points to bytes {}..{}, outside the string area {}..{}",
                    self.span.at(0) + start,
                    self.span.at(0).saturating_add(end),
                    self.span.at(0) + self.var_start(),
                    self.span.at(self.span.len()),
                ),
            ));
        }
        Ok(())
    }
}

/// 0x0206 UTF8Vector. Bytes after the last string are allowed: the format never needs
/// the total length.
pub(crate) fn utf8_vector(
    body: Span,
    version: FormatVersion,
    limit: u64,
) -> Result<(u64, Strings)> {
    let table = Utf8Table::parse(body, version)?;
    let mut out = StringsBuilder::new(body.part(), table.count, limit)?;
    for i in 0..table.count {
        out.push(table.get(i)?)?;
    }
    Ok((
        table.count,
        Strings::new(out, ColumnInfo::new(NaEncoding::Utf8NaWord)),
    ))
}

/// 0x0306 FixedMaxUTF8Vector: `u8 P`, then P-byte slots of `u8 length` + bytes.
/// A slot starting `00 FF` is NA. Trailing bytes that do not fill a slot are an error
/// (the reference ignores them): they can only come from truncation or damage.
pub(crate) fn fixed_max(body: Span, limit: u64) -> Result<(u64, Strings)> {
    let p = body.u8("bytes per slot", 0)?;
    if p < 2 {
        return Err(body.invalid("bytes per slot", 0, format!("{p}, expected 2 to 255")));
    }
    let p = usize::from(p);
    let slots = body.tail("slots", 1)?;
    if slots.len() % p != 0 {
        return Err(slots.invalid(
            "slots",
            slots.len() - slots.len() % p,
            format!("{} bytes do not make whole {p}-byte slots", slots.len()),
        ));
    }
    let rows = (slots.len() / p) as u64;
    let mut out = StringsBuilder::new(body.part(), rows, limit)?;
    for (i, slot) in slots.bytes().chunks_exact(p).enumerate() {
        match *slot {
            [0x00, 0xFF, ..] => out.push(None)?,
            [len, ref data @ ..] => {
                let s = data.get(..usize::from(len)).ok_or_else(|| {
                    slots.invalid(
                        "slot",
                        i * p,
                        format!("length {len} does not fit a {p}-byte slot"),
                    )
                })?;
                out.push(Some(s))?;
            }
            [] => {}
        }
    }
    let info = ColumnInfo {
        slot_bytes: Some(p as u8),
        ..ColumnInfo::new(NaEncoding::FixedMaxNaSlot)
    };
    Ok((rows, Strings::new(out, info)))
}

/// 0x0207 DictUTF8Vector: `i32 2`, `i32 codeOff`, a UTF8Vector dictionary (entry 0 is
/// NA), then a sub-vector of codes. Code 0 is NA.
pub(crate) fn dict(body: Span, version: FormatVersion, limit: u64) -> Result<(u64, Strings)> {
    let dict_sub = body.i32("dictionary subtype", 0)?;
    if dict_sub != 2 {
        return Err(body.invalid(
            "dictionary subtype",
            0,
            format!("{dict_sub}, expected 2 (UTF8Vector)"),
        ));
    }
    let code_off = body.i32("codes offset", 4)?;
    let code_off = usize::try_from(code_off)
        .ok()
        .filter(|&o| (12..=body.len()).contains(&o))
        .ok_or_else(|| {
            body.invalid(
                "codes offset",
                4,
                format!(
                    "{code_off}, expected 12 to {} (after the dictionary, inside the body)",
                    body.len()
                ),
            )
        })?;
    let dict_span = body
        .sub("dictionary", 8, code_off - 8)?
        .named("DictUTF8Vector dictionary");
    let dictionary = Utf8Table::parse(dict_span, version)?;
    // Entries are bounded by the dictionary's bytes (4 per fixed word).
    let entries = (0..dictionary.count)
        .map(|i| dictionary.get(i))
        .collect::<Result<Vec<_>>>()?;
    let codes = sub_vector(body.tail("codes", code_off)?.named("DictUTF8Vector codes"))?;
    let source = Source::new(
        &codes.data,
        "codes",
        Element::Int(codes.format),
        codes.count,
        true,
    )?;
    let chunk = body.whole_chunk();
    let mut out = StringsBuilder::new(body.part(), codes.count, limit)?;
    for row in 0..codes.count {
        let code = source.int(chunk, row);
        if code == 0 {
            out.push(None)?;
            continue;
        }
        // A code naming the NA entry is NA too.
        let entry = usize::try_from(code)
            .ok()
            .and_then(|c| entries.get(c))
            .ok_or_else(|| {
                codes.data.invalid(
                    "code",
                    0,
                    format!(
                        "row {row} has code {code}, the dictionary has {} entries",
                        entries.len()
                    ),
                )
            })?;
        out.push(*entry)?;
    }
    let info = ColumnInfo {
        element: Some(Element::Int(codes.format)),
        dictionary_entries: Some(dictionary.count),
        ..ColumnInfo::new(NaEncoding::DictCodeZero)
    };
    Ok((codes.count, Strings::new(out, info)))
}

/// 0x0606 ConstVector under a string column: `i32 count`, then the string's bytes (any
/// length, the rest of the chunk).
pub(crate) fn constant(body: Span, limit: u64) -> Result<(u64, Strings)> {
    let rows = body.count_i32("count", 0)?;
    let value = body.tail("value", 4)?.bytes();
    let mut out = StringsBuilder::new(body.part(), rows, limit)?;
    out.expect_bytes(rows.saturating_mul(value.len() as u64))?;
    for _ in 0..rows {
        out.push(Some(value))?;
    }
    Ok((rows, Strings::new(out, ColumnInfo::new(NaEncoding::None))))
}
