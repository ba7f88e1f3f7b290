//! Row-addressable fixed-width vectors.
//!
//! Every non-string Filo vector computes row `i` from the bytes of row `i` alone plus a
//! few constants: `value[i] = base + slope·i + element[i or 0]`, with validity from one
//! bit (or a constant). Diff deltas come from one base, not from the previous row, and
//! delta-delta residuals from a straight line, so no vector needs a running sum.
//! A [`FixedLayout`] records where the elements are and how to turn them into the plain
//! little-endian value of the column type; the eager decoder is a loop over it, so the
//! lazy and the eager path cannot disagree.

use std::borrow::Cow;
use std::ops::{Deref, Range};

use super::bitpack::bit;
use super::column::{ColumnInfo, DecodedColumn, Values};
use super::column_type::ColumnType;
use super::element::Element;
use super::error::{FiloError, Result};
use super::kind::VectorKind;
use super::span::Span;

/// Which rows are NA.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Validity {
    AllValid,
    AllNa,
    /// u64 LE words in the chunk, bit set = NA. Words missing at the end read as 0.
    Bitmap(Range<usize>),
}

impl Validity {
    pub fn is_valid(&self, chunk: &[u8], row: u64) -> bool {
        match self {
            Validity::AllValid => true,
            Validity::AllNa => false,
            Validity::Bitmap(r) => !bit(chunk.get(r.clone()).unwrap_or(&[]), row),
        }
    }
}

/// Where a vector's elements are, checked to hold every element a row may read.
#[derive(Debug, Clone)]
pub(crate) struct Source {
    data: Range<usize>,
    element: Element,
    /// false: every row reads element 0 (the constant vectors).
    per_row: bool,
    /// Integers only: `value[i] = base + slope·i + element`, in wrapping i64 arithmetic.
    /// The writers compute `element = value − (base + slope·i)` the same way, so wrapping
    /// addition gives back exactly the value written, overflow or not.
    base: i64,
    slope: i64,
}

impl Source {
    /// Elements in `data` for `rows` rows (or one element when `!per_row`). Fails, naming
    /// `field`, if the bytes cannot hold them.
    pub fn new(
        data: &Span,
        field: &'static str,
        element: Element,
        rows: u64,
        per_row: bool,
    ) -> Result<Source> {
        let count = if per_row { rows } else { rows.min(1) };
        let needed = match element {
            Element::Int(f) => f.bytes_for(count),
            Element::F32 => count.saturating_mul(4),
            Element::F64 => count.saturating_mul(8),
            Element::Bit => count.div_ceil(8),
        };
        if needed > data.len() as u64 {
            let what = if per_row {
                format!("{rows} rows")
            } else {
                "the constant".to_string()
            };
            return Err(data.invalid(
                field,
                0,
                format!(
                    "{what} need {needed} bytes of {}, only {} are there",
                    element_name(element),
                    data.len()
                ),
            ));
        }
        Ok(Source {
            data: data.range(),
            element,
            per_row,
            base: 0,
            slope: 0,
        })
    }

    pub fn with_line(self, base: i64, slope: i64) -> Source {
        Source {
            base,
            slope,
            ..self
        }
    }

    /// Integer value of row `row` (for integer elements; others read as the line).
    pub fn int(&self, chunk: &[u8], row: u64) -> i64 {
        let stored = match self.element {
            Element::Int(format) => {
                let data = chunk.get(self.data.clone()).unwrap_or(&[]);
                format.read(data, if self.per_row { row } else { 0 })
            }
            _ => 0,
        };
        self.base
            .wrapping_add(self.slope.wrapping_mul(row as i64))
            .wrapping_add(stored)
    }

    fn raw<const N: usize>(&self, chunk: &[u8], row: u64) -> [u8; N] {
        let index = if self.per_row { row } else { 0 };
        let start = usize::try_from(index)
            .unwrap_or(usize::MAX)
            .saturating_mul(N);
        let mut out = [0u8; N];
        if let Some(bytes) = chunk
            .get(self.data.clone())
            .and_then(|d| d.get(start..start.saturating_add(N)))
        {
            out.copy_from_slice(bytes);
        }
        out
    }
}

fn element_name(e: Element) -> String {
    match e {
        Element::Int(f) => format!("{}-bit integers", f.nbits),
        Element::F32 => "f32".into(),
        Element::F64 => "f64".into(),
        Element::Bit => "bits".into(),
    }
}

/// DateTime rows' zones in quarter hours: `base`, or `baseTz + delta[i]` when the zones
/// differ (a source whose line is baseTz), checked to fit at build time.
#[derive(Debug, Clone)]
pub(crate) struct Zones {
    pub base: i8,
    pub deltas: Option<Source>,
}

/// What a vector parser found: enough to read any row.
#[derive(Debug, Clone)]
pub(crate) struct Parts {
    pub rows: u64,
    pub validity: Validity,
    /// None: no stored values (EmptyVector); every row reads as zero.
    pub values: Option<Source>,
    /// DateTime columns only.
    pub zones: Option<Zones>,
    pub info: ColumnInfo,
}

/// The bytes of one row of `values.bin` (at most 8).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowBytes {
    bytes: [u8; 8],
    len: u8,
}

impl Deref for RowBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

/// A fixed-width vector whose rows can be read one by one, straight from the chunk.
///
/// Every non-string column allows this: all kinds but the six string kinds
/// (SimpleString, ConstString, DictString, UTF8Vector, FixedMaxUTF8Vector, DictUTF8Vector,
/// and ConstVector / EmptyVector under a string column). Strings need the lengths of all
/// earlier rows to place row `i` in `values.bin`, so they are decoded whole.
/// Reading a row costs a few loads; nothing is allocated, so even a constant vector of
/// 2³¹ rows is served without expanding it.
#[derive(Debug, Clone)]
pub struct FixedLayout<'a> {
    chunk: Cow<'a, [u8]>,
    kind: VectorKind,
    header: u32,
    column_type: ColumnType,
    elem_size: usize,
    parts: Parts,
}

impl<'a> FixedLayout<'a> {
    pub(crate) fn new(
        chunk: Cow<'a, [u8]>,
        kind: VectorKind,
        header: u32,
        column_type: ColumnType,
        elem_size: usize,
        parts: Parts,
    ) -> Self {
        FixedLayout {
            chunk,
            kind,
            header,
            column_type,
            elem_size,
            parts,
        }
    }

    pub fn kind(&self) -> VectorKind {
        self.kind
    }

    pub fn header(&self) -> u32 {
        self.header
    }

    pub fn column_type(&self) -> ColumnType {
        self.column_type
    }

    pub fn rows(&self) -> u64 {
        self.parts.rows
    }

    /// Bytes per row in `values.bin`.
    pub fn elem_size(&self) -> usize {
        self.elem_size
    }

    /// Size of `values.bin`: `rows · elem_size`.
    pub fn values_len(&self) -> u64 {
        self.parts.rows * self.elem_size as u64
    }

    pub fn info(&self) -> &ColumnInfo {
        &self.parts.info
    }

    pub(crate) fn info_mut(&mut self) -> &mut ColumnInfo {
        &mut self.parts.info
    }

    /// Whether `row` holds a value (false past the end).
    pub fn is_valid(&self, row: u64) -> bool {
        row < self.parts.rows && self.parts.validity.is_valid(&self.chunk, row)
    }

    /// Row `row` of `values.bin`: the little-endian value, or zeros for an NA row.
    /// None past the end.
    pub fn row_bytes(&self, row: u64) -> Option<RowBytes> {
        if row >= self.parts.rows {
            return None;
        }
        let mut out = RowBytes {
            bytes: [0; 8],
            len: self.elem_size as u8,
        };
        let Some(source) = self.parts.values.as_ref().filter(|_| self.is_valid(row)) else {
            return Some(out);
        };
        let chunk: &[u8] = &self.chunk;
        match source.element {
            Element::Int(_) => {
                let v = source.int(chunk, row);
                match self.column_type {
                    // Java narrowing: an int column keeps the low 32 bits.
                    ColumnType::Int => out.bytes[..4].copy_from_slice(&(v as i32).to_le_bytes()),
                    ColumnType::Double => out.bytes = (v as f64).to_le_bytes(),
                    ColumnType::Float => out.bytes[..4].copy_from_slice(&(v as f32).to_le_bytes()),
                    ColumnType::Bool => out.bytes[0] = u8::from(v != 0),
                    _ => out.bytes = v.to_le_bytes(),
                }
            }
            Element::F32 => out.bytes[..4].copy_from_slice(&source.raw::<4>(chunk, row)),
            Element::F64 => out.bytes = source.raw::<8>(chunk, row),
            Element::Bit => {
                let index = if source.per_row { row } else { 0 };
                let data = chunk.get(source.data.clone()).unwrap_or(&[]);
                // A u64-word bitset, in the same bit order as an NA bitmap.
                out.bytes[0] = u8::from(bit(data, index));
            }
        }
        Some(out)
    }

    /// Zone of `row` in quarter hours east of UTC (DateTime columns; 0 for NA rows).
    /// None for other column types and past the end.
    pub fn timezone(&self, row: u64) -> Option<i8> {
        let zones = self
            .parts
            .zones
            .as_ref()
            .filter(|_| row < self.parts.rows)?;
        if !self.is_valid(row) {
            return Some(0);
        }
        Some(match &zones.deltas {
            None => zones.base,
            // Checked to fit when the layout was built (datetime.rs).
            Some(source) => source.int(&self.chunk, row) as i8,
        })
    }

    /// Copies `values.bin[offset ..]` into `buf` (like `pread`); returns the bytes copied,
    /// 0 at or past the end.
    pub fn read_values_at(&self, offset: u64, buf: &mut [u8]) -> usize {
        let es = self.elem_size as u64;
        let end = self
            .values_len()
            .min(offset.saturating_add(buf.len() as u64));
        let mut pos = offset;
        while pos < end {
            let row = pos / es;
            let within = (pos % es) as usize;
            let take = ((end - pos) as usize).min(self.elem_size - within);
            let bytes = self.row_bytes(row).unwrap_or(RowBytes {
                bytes: [0; 8],
                len: 8,
            });
            let at = (pos - offset) as usize;
            buf[at..at + take].copy_from_slice(&bytes[within..within + take]);
            pos += take as u64;
        }
        (end.saturating_sub(offset)) as usize
    }

    /// Decodes every row, failing if the output would exceed `limit` bytes.
    pub fn decode(&self, limit: u64) -> Result<DecodedColumn> {
        let rows = self.parts.rows;
        let per_row = self.elem_size as u64 + 1 + u64::from(self.parts.zones.is_some());
        let bytes = rows.saturating_mul(per_row);
        if bytes > limit {
            return Err(FiloError::TooLarge {
                part: self.kind.name(),
                rows,
                bytes,
                limit,
            });
        }
        // rows * per_row <= limit, and a limit larger than memory is the caller's choice.
        let n = rows as usize;
        let mut values = Vec::with_capacity(n * self.elem_size);
        let mut validity = Vec::with_capacity(n);
        for row in 0..rows {
            values.extend_from_slice(&self.row_bytes(row).unwrap_or(RowBytes {
                bytes: [0; 8],
                len: 0,
            }));
            validity.push(u8::from(self.is_valid(row)));
        }
        let timezone = self.parts.zones.as_ref().map(|_| {
            (0..rows)
                .map(|row| self.timezone(row).unwrap_or(0))
                .collect()
        });
        Ok(DecodedColumn {
            kind: self.kind,
            header: self.header,
            column_type: self.column_type,
            length: rows,
            values: Values::Fixed {
                elem_size: self.elem_size,
                bytes: values,
            },
            validity,
            timezone,
            info: self.parts.info.clone(),
        })
    }

    /// The same layout owning its bytes, e.g. to keep it in a cache.
    pub fn into_owned(self) -> FixedLayout<'static> {
        FixedLayout {
            chunk: Cow::Owned(self.chunk.into_owned()),
            kind: self.kind,
            header: self.header,
            column_type: self.column_type,
            elem_size: self.elem_size,
            parts: self.parts,
        }
    }
}
