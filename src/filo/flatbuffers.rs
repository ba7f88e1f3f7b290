//! A minimal, bounds-checked FlatBuffers table reader (FORMAT.md §5.1).
//!
//! Filo's old vectors are a FlatBuffer behind the header word. Only what those schemas
//! use is needed: tables with scalar, struct, table, vector and string fields. Every
//! offset is checked against the buffer before it is followed, and the schema has no
//! recursion, so a hostile buffer can neither make a read go out of bounds nor loop.
//! Vtables may be trimmed (Python/C++ builders) or keep trailing empty slots (Java), and
//! may be shared between tables: the reader only trusts what the vtable says.

use super::bitpack::IntFormat;
use super::column::NaEncoding;
use super::error::{FiloError, Result};
use super::layout::Validity;
use super::span::Span;

/// A table inside the FlatBuffer `buf` (whose byte 0 is FlatBuffers offset 0).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Table<'a> {
    buf: Span<'a>,
    /// Position of the table in `buf`.
    pos: usize,
    /// Position of its vtable in `buf`.
    vtable: usize,
    vtable_len: usize,
    /// Bytes of the table itself: every field must lie inside it.
    table_len: usize,
}

/// A vector field: where its elements start and how many there are, already checked to
/// fit in the buffer for the element size asked for.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Vector<'a> {
    pub elems: Span<'a>,
    pub count: u64,
}

impl<'a> Table<'a> {
    /// The root table of the FlatBuffer `buf`.
    pub fn root(buf: Span<'a>) -> Result<Table<'a>> {
        let target = deref(&buf, "root offset", 0)?;
        Table::at(buf, target)
    }

    fn at(buf: Span<'a>, pos: usize) -> Result<Table<'a>> {
        let soffset = buf.i32("table vtable offset", pos)?;
        let vtable = i64::try_from(pos)
            .ok()
            .and_then(|p| p.checked_sub(i64::from(soffset)))
            .and_then(|v| usize::try_from(v).ok())
            .filter(|&v| v < buf.len())
            .ok_or_else(|| {
                buf.invalid(
                    "table vtable offset",
                    pos,
                    format!("vtable at {pos} - ({soffset}) is outside the buffer"),
                )
            })?;
        let vtable_len = usize::from(buf.u16("vtable size", vtable)?);
        let table_len = usize::from(buf.u16("vtable table size", vtable + 2)?);
        if vtable_len < 4 || vtable_len % 2 != 0 {
            return Err(buf.invalid(
                "vtable size",
                vtable,
                format!("{vtable_len} is not an even number >= 4"),
            ));
        }
        buf.sub("vtable", vtable, vtable_len)?;
        if table_len < 4 {
            return Err(buf.invalid(
                "vtable table size",
                vtable + 2,
                format!("{table_len} is smaller than the table's own vtable offset"),
            ));
        }
        buf.sub("table", pos, table_len)?;
        Ok(Table {
            buf,
            pos,
            vtable,
            vtable_len,
            table_len,
        })
    }

    /// The whole FlatBuffer (for errors about positions inside it).
    pub fn buffer(&self) -> Span<'a> {
        self.buf
    }

    /// The bytes of field `id` (`size` of them) if the field is present. A field beyond
    /// the vtable, or with offset 0, is absent and takes the schema's default.
    fn field(&self, field: &'static str, id: usize, size: usize) -> Result<Option<Span<'a>>> {
        let slot = 4 + 2 * id;
        if slot + 2 > self.vtable_len {
            return Ok(None);
        }
        let off = usize::from(self.buf.u16(field, self.vtable + slot)?);
        if off == 0 {
            return Ok(None);
        }
        if off + size > self.table_len {
            return Err(self.buf.invalid(
                field,
                self.vtable + slot,
                format!(
                    "field offset {off} + {size} bytes is past the table's {} bytes",
                    self.table_len
                ),
            ));
        }
        self.buf.sub(field, self.pos + off, size).map(Some)
    }

    /// Position of field `id` in the buffer, if present (for offset fields).
    fn field_pos(&self, field: &'static str, id: usize, size: usize) -> Result<Option<usize>> {
        Ok(self
            .field(field, id, size)?
            .map(|s| (s.at(0) - self.buf.at(0)) as usize))
    }

    /// An error about the table (for a missing or inconsistent field).
    pub fn invalid(&self, field: &'static str, reason: impl Into<String>) -> FiloError {
        self.buf.invalid(field, self.pos, reason)
    }

    /// A non-negative i32 count field (default 0).
    pub fn count(&self, field: &'static str, id: usize) -> Result<u64> {
        match self.field(field, id, 4)? {
            Some(s) => s.count_i32(field, 0),
            None => Ok(0),
        }
    }

    /// A `[ubyte]` data vector, or no bytes (at the table) when the field is absent, so
    /// the caller's size check reports the missing data.
    pub fn bytes_or_empty(&self, field: &'static str, id: usize) -> Result<Span<'a>> {
        match self.vector(field, id, 1)? {
            Some(v) => Ok(v.elems),
            None => self.buf.sub(field, self.pos, 0),
        }
    }

    pub fn i8(&self, field: &'static str, id: usize, default: i8) -> Result<i8> {
        Ok(match self.field(field, id, 1)? {
            Some(s) => s.u8(field, 0)? as i8,
            None => default,
        })
    }

    pub fn i64(&self, field: &'static str, id: usize, default: i64) -> Result<i64> {
        Ok(match self.field(field, id, 8)? {
            Some(s) => s.i64(field, 0)?,
            None => default,
        })
    }

    /// An inline struct of `size` bytes.
    pub fn structure(
        &self,
        field: &'static str,
        id: usize,
        size: usize,
    ) -> Result<Option<Span<'a>>> {
        self.field(field, id, size)
    }

    /// A sub-table field.
    pub fn table(&self, field: &'static str, id: usize) -> Result<Option<Table<'a>>> {
        match self.field_pos(field, id, 4)? {
            Some(p) => Ok(Some(Table::at(self.buf, deref(&self.buf, field, p)?)?)),
            None => Ok(None),
        }
    }

    /// A vector field of `elem_size`-byte elements, its count checked against the buffer.
    pub fn vector(
        &self,
        field: &'static str,
        id: usize,
        elem_size: usize,
    ) -> Result<Option<Vector<'a>>> {
        match self.field_pos(field, id, 4)? {
            Some(p) => Ok(Some(vector_at(
                &self.buf,
                field,
                deref(&self.buf, field, p)?,
                elem_size,
            )?)),
            None => Ok(None),
        }
    }

    /// A string field: its bytes (UTF-8 by convention, passed through unchecked).
    pub fn string(&self, field: &'static str, id: usize) -> Result<Option<&'a [u8]>> {
        match self.field_pos(field, id, 4)? {
            Some(p) => Ok(Some(string_at(&self.buf, field, p)?)),
            None => Ok(None),
        }
    }
}

/// Element `i` of a `[string]` vector: each element is an offset relative to itself.
pub(crate) fn string_element<'a>(
    buf: &Span<'a>,
    vector: &Vector<'a>,
    field: &'static str,
    i: u64,
) -> Result<&'a [u8]> {
    let pos = (vector.elems.at(0) - buf.at(0)) as usize + (i as usize) * 4;
    string_at(buf, field, pos)
}

/// Follows the uoffset stored at `pos`.
fn deref(buf: &Span, field: &'static str, pos: usize) -> Result<usize> {
    let off = buf.u32(field, pos)?;
    let target = pos as u64 + u64::from(off);
    if target >= buf.len() as u64 {
        return Err(buf.invalid(
            field,
            pos,
            format!(
                "offset {off} points to {target}, past the buffer's {} bytes",
                buf.len()
            ),
        ));
    }
    Ok(target as usize)
}

fn vector_at<'a>(
    buf: &Span<'a>,
    field: &'static str,
    pos: usize,
    elem_size: usize,
) -> Result<Vector<'a>> {
    let count = u64::from(buf.u32(field, pos)?);
    let elems = buf.entries(field, pos + 4, count, elem_size)?;
    Ok(Vector { elems, count })
}

/// The string whose uoffset is stored at `pos`.
///
/// Like FlatBuffers' own verifier we require the NUL terminator, so a string cut short
/// is an error rather than a shorter value.
fn string_at<'a>(buf: &Span<'a>, field: &'static str, pos: usize) -> Result<&'a [u8]> {
    let start = deref(buf, field, pos)?;
    let s = vector_at(buf, field, start, 1)?.elems;
    let end = start + 4 + s.len();
    if buf.u8(field, end)? != 0 {
        return Err(buf.invalid(
            field,
            end,
            format!(
                "the {}-byte string at byte {} is not NUL-terminated",
                s.len(),
                buf.at(start)
            ),
        ));
    }
    Ok(s.bytes())
}

/// Filo's `NaMask` table (FORMAT.md §5.3) turned into a validity rule.
///
/// A missing naMask field crashes the reference reader; we read it as "all available"
/// (FORMAT.md §11 item 7). `maskType` defaults to AllOnes when the writer omitted it,
/// and AllOnes means every row is NA, as the schema intends (§11 item 6).
pub(crate) fn na_mask(mask: Option<Table<'_>>) -> Result<(Validity, NaEncoding)> {
    let Some(mask) = mask else {
        return Ok((Validity::AllValid, NaEncoding::NaMaskAbsent));
    };
    let mask_type = mask.i8("NaMask maskType", 0, MASK_ALL_ONES)?;
    Ok(match mask_type {
        MASK_ALL_ZEROES => (Validity::AllValid, NaEncoding::NaMaskAllZeroes),
        MASK_ALL_ONES => (Validity::AllNa, NaEncoding::NaMaskAllOnes),
        MASK_SIMPLE_BIT_MASK => {
            // Words missing at the end mean "available", so any word count is fine.
            let range = match mask.vector("NaMask bitMask", 1, 8)? {
                Some(v) => v.elems.range(),
                None => 0..0,
            };
            (Validity::Bitmap(range), NaEncoding::NaMaskBitmap)
        }
        other => {
            return Err(mask.buffer().invalid(
                "NaMask maskType",
                mask.pos,
                format!(
                    "mask type {other}, expected 0 (AllZeroes), 1 (SimpleBitMask) or 2 (AllOnes)"
                ),
            ));
        }
    })
}

const MASK_ALL_ZEROES: i8 = 0;
const MASK_SIMPLE_BIT_MASK: i8 = 1;
const MASK_ALL_ONES: i8 = 2;

/// Filo's `DataInfo` struct (u16 nbits, bool signed, pad) at field `id`: how the
/// integers of a data vector are stored. FlatBuffers data never uses sub-byte widths.
pub(crate) fn data_info(
    table: &Table<'_>,
    field: &'static str,
    id: usize,
) -> Result<Option<IntFormat>> {
    let Some(s) = table.structure(field, id, 4)? else {
        return Ok(None);
    };
    let nbits = s.u16(field, 0)?;
    let signed = s.u8(field, 2)? != 0;
    IntFormat::new(&s, field, 0, nbits, signed, false).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hand-laid buffer: root -> table {0: i32 7, 2: string "hi"}, vtable with a
    /// trailing empty slot (Java style).
    fn sample() -> Vec<u8> {
        let mut b = Vec::new();
        b.extend(16u32.to_le_bytes()); // 0: root offset -> table at 16
                                       // 4: vtable: size 10, table size 12, field0 at 4, field1 absent, field2 at 8
        for v in [10u16, 12, 4, 0, 8] {
            b.extend(v.to_le_bytes());
        }
        b.extend([0, 0]); // 14: pad
        b.extend(12i32.to_le_bytes()); // 16: table: vtable at 16 - 12 = 4
        b.extend(7i32.to_le_bytes()); // 20: field 0
        b.extend(4u32.to_le_bytes()); // 24: field 2 -> string at 28
        b.extend(2u32.to_le_bytes()); // 28: string length
        b.extend(b"hi\0\0");
        b
    }

    #[test]
    fn reads_fields_and_defaults() {
        let buf = sample();
        let t = Table::root(Span::chunk(&buf, "T")).unwrap();
        assert_eq!(t.count("a", 0).unwrap(), 7);
        assert_eq!(t.i8("b", 1, -1).unwrap(), -1); // zero offset: absent
        assert_eq!(t.string("c", 2).unwrap(), Some(&b"hi"[..]));
        assert_eq!(t.i64("d", 9, 5).unwrap(), 5); // beyond the vtable: absent
    }

    #[test]
    fn bad_offsets_are_errors_not_panics() {
        let good = sample();
        for (at, value) in [
            (0usize, 0xFFFF_FFF0u32),
            (16, 0x7FFF_FFFF),
            (16, 0x8000_0000),
            (24, 1000),
            (28, 1000),
        ] {
            let mut buf = good.clone();
            buf[at..at + 4].copy_from_slice(&value.to_le_bytes());
            let r = Table::root(Span::chunk(&buf, "T")).and_then(|t| {
                t.count("a", 0)?;
                t.string("c", 2)
            });
            assert!(r.is_err(), "offset {at} = {value:#x} accepted");
        }
        // Field offset past the table's size.
        let mut buf = good.clone();
        buf[8..10].copy_from_slice(&40u16.to_le_bytes());
        let t = Table::root(Span::chunk(&buf, "T")).unwrap();
        let err = t.count("len", 0).unwrap_err().to_string();
        assert!(err.contains("T: len at byte 8"), "{err}");
    }
}
