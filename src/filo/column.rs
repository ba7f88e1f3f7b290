//! What a decoded chunk becomes: fragfs's plain representation.
//!
//! * `values.bin`: little-endian, one fixed-size value per row (u8 0/1 for bool, i32,
//!   i64, f32, f64, i64 epoch milliseconds for timestamp and datetime); for strings the
//!   concatenated bytes, with one u64 start offset per row (TileDB's convention: a row
//!   ends where the next starts, the last at the end of the bytes).
//! * `validity.bin`: one byte per row, 1 = valid, 0 = NA, whatever Filo's own NA
//!   convention was (bitmap bit, code 0, marker word, marker slot, EmptyVector).
//! * `timezone.bin` (datetime columns): one i8 per row, the row's fixed UTC offset in
//!   quarter hours east of UTC (e.g. 22 = +05:30, −20 = −05:00); 0 for NA rows. This is
//!   exactly what Filo keeps: the zone's offset at the Unix epoch (FORMAT.md §5.10).
//!
//! NA rows hold a fill value: zero bytes, or an empty string.

use serde_json::{json, Map, Value};

use super::bitpack::IntFormat;
use super::column_type::ColumnType;
use super::element::Element;
use super::error::{FiloError, Result};
use super::kind::VectorKind;

/// One decoded chunk.
///
/// `values` is `values.bin`: little-endian u8 0/1 (bool), i32, i64, f32, f64, or i64 epoch
/// milliseconds (timestamp, datetime); strings as bytes plus one u64 start offset per
/// row. `validity` is `validity.bin` (1 valid, 0 NA) and `timezone` is `timezone.bin`
/// (datetime only: i8 quarter hours east of UTC, 0 for NA rows). NA rows hold zeros or "".
#[derive(Debug, Clone, PartialEq)]
pub struct DecodedColumn {
    pub kind: VectorKind,
    pub header: u32,
    pub column_type: ColumnType,
    /// Rows.
    pub length: u64,
    pub values: Values,
    /// One byte per row: 1 valid, 0 NA.
    pub validity: Vec<u8>,
    /// Datetime columns: per row, the UTC offset in quarter hours (0 for NA rows).
    pub timezone: Option<Vec<i8>>,
    pub info: ColumnInfo,
}

/// The bytes of `values.bin`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Values {
    /// `length · elem_size` bytes.
    Fixed { elem_size: usize, bytes: Vec<u8> },
    /// Strings: `offsets[i]` is where row `i` starts in `bytes`.
    Var { offsets: Vec<u64>, bytes: Vec<u8> },
}

impl Values {
    /// The bytes of row `row`, if there is such a row.
    pub fn row(&self, row: usize) -> Option<&[u8]> {
        match self {
            Values::Fixed { elem_size, bytes } => {
                let start = row.checked_mul(*elem_size)?;
                bytes.get(start..start.checked_add(*elem_size)?)
            }
            Values::Var { offsets, bytes } => {
                let start = usize::try_from(*offsets.get(row)?).ok()?;
                let end = match offsets.get(row + 1) {
                    Some(&e) => usize::try_from(e).ok()?,
                    None => bytes.len(),
                };
                bytes.get(start..end)
            }
        }
    }
}

/// How a vector marks NA rows (shown in JSON; the decoded validity is always 1/0 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NaEncoding {
    /// EmptyVector: every row is NA.
    EmptyVector,
    /// The vector type cannot hold NA (0x0506, 0x0806, 0x0606, 0x0808).
    None,
    /// FlatBuffers vector without its naMask field: read as all available.
    NaMaskAbsent,
    /// FlatBuffers NaMask AllZeroes: no NA.
    NaMaskAllZeroes,
    /// FlatBuffers NaMask AllOnes: every row NA.
    NaMaskAllOnes,
    /// FlatBuffers NaMask SimpleBitMask: bit set = NA.
    NaMaskBitmap,
    /// New-style NA bitmap in front of the data: bit set = NA.
    Bitmap,
    /// Dictionary vectors: code 0 = NA.
    DictCodeZero,
    /// UTF8Vector: fixed word 0x80000000 = NA.
    Utf8NaWord,
    /// FixedMaxUTF8Vector: slot starting `00 FF` = NA.
    FixedMaxNaSlot,
}

impl NaEncoding {
    pub fn name(self) -> &'static str {
        match self {
            NaEncoding::EmptyVector => "empty-vector",
            NaEncoding::None => "none",
            NaEncoding::NaMaskAbsent => "namask-absent",
            NaEncoding::NaMaskAllZeroes => "namask-all-zeroes",
            NaEncoding::NaMaskAllOnes => "namask-all-ones",
            NaEncoding::NaMaskBitmap => "namask-bitmap",
            NaEncoding::Bitmap => "bitmap",
            NaEncoding::DictCodeZero => "code-0",
            NaEncoding::Utf8NaWord => "word-0x80000000",
            NaEncoding::FixedMaxNaSlot => "slot-00ff",
        }
    }
}

/// Encoding parameters of a chunk, for `fragment.json`. Fields that do not apply to the
/// vector kind are `None`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnInfo {
    /// Bytes of the blob as stored (the file), framing included.
    pub stored_bytes: u64,
    /// Bytes of the Filo chunk itself (after LZ4 unframing).
    pub chunk_bytes: u64,
    /// Whether the blob was FiloDB's 0xFF + length + LZ4 framing.
    pub lz4_framed: bool,
    pub na: NaEncoding,
    /// How each stored element is encoded: the values, the Diff deltas, the delta-delta
    /// residuals, or the dictionary codes.
    pub element: Option<Element>,
    /// Diff base, delta-delta initial value, or DiffDateTime base millis.
    pub base: Option<i64>,
    /// Delta-delta slope per row.
    pub slope: Option<i64>,
    /// Dictionary vectors: entries, including the NA entry 0.
    pub dictionary_entries: Option<u64>,
    /// FixedMaxUTF8Vector: bytes per slot.
    pub slot_bytes: Option<u8>,
    /// DiffDateTime: base zone in quarter hours.
    pub base_tz: Option<i8>,
    /// DiffDateTime: storage of the per-row zone deltas, when zones differ.
    pub tz_element: Option<IntFormat>,
}

impl ColumnInfo {
    pub(crate) fn new(na: NaEncoding) -> ColumnInfo {
        ColumnInfo {
            stored_bytes: 0,
            chunk_bytes: 0,
            lz4_framed: false,
            na,
            element: None,
            base: None,
            slope: None,
            dictionary_entries: None,
            slot_bytes: None,
            base_tz: None,
            tz_element: None,
        }
    }

    /// A JSON object of the fields that apply.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("stored_bytes".into(), json!(self.stored_bytes));
        m.insert("chunk_bytes".into(), json!(self.chunk_bytes));
        m.insert("lz4_framed".into(), json!(self.lz4_framed));
        m.insert("na".into(), json!(self.na.name()));
        if let Some(e) = self.element {
            m.insert("element".into(), element_json(e));
        }
        let optional = [
            ("base", self.base.map(|v| json!(v))),
            ("slope", self.slope.map(|v| json!(v))),
            (
                "dictionary_entries",
                self.dictionary_entries.map(|v| json!(v)),
            ),
            ("slot_bytes", self.slot_bytes.map(|v| json!(v))),
            ("base_tz_quarter_hours", self.base_tz.map(|v| json!(v))),
            (
                "tz_element",
                self.tz_element.map(|f| element_json(Element::Int(f))),
            ),
        ];
        for (k, v) in optional {
            if let Some(v) = v {
                m.insert(k.into(), v);
            }
        }
        Value::Object(m)
    }
}

fn element_json(e: Element) -> Value {
    match e {
        Element::Int(f) => json!({"type": "int", "nbits": f.nbits, "signed": f.signed}),
        Element::F32 => json!({"type": "f32"}),
        Element::F64 => json!({"type": "f64"}),
        Element::Bit => json!({"type": "bit"}),
    }
}

impl DecodedColumn {
    /// Everything but the data, as JSON: what a `fragment.json` shows for the column.
    pub fn metadata_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("kind".into(), json!(self.kind.name()));
        m.insert("header".into(), json!(format!("{:#010x}", self.header)));
        m.insert("column_type".into(), json!(self.column_type.name()));
        m.insert("length".into(), json!(self.length));
        if let Value::Object(info) = self.info.to_json() {
            m.extend(info);
        }
        Value::Object(m)
    }
}

/// Builds a string column within a byte budget.
///
/// String vectors can point many rows at the same bytes (a dictionary, a constant, or
/// FlatBuffers/UTF8Vector offsets that repeat), so the output is not bounded by the
/// chunk size: each push checks the running total against the caller's limit.
pub(crate) struct StringsBuilder {
    part: &'static str,
    rows: u64,
    limit: u64,
    offsets: Vec<u64>,
    bytes: Vec<u8>,
    validity: Vec<u8>,
}

impl StringsBuilder {
    /// `rows` must already be checked against the chunk, or be the count of a constant
    /// vector: the budget check here covers the offsets and validity of every row.
    pub fn new(part: &'static str, rows: u64, limit: u64) -> Result<StringsBuilder> {
        let fixed = rows.saturating_mul(9);
        if fixed > limit {
            return Err(FiloError::TooLarge {
                part,
                rows,
                bytes: fixed,
                limit,
            });
        }
        Ok(StringsBuilder {
            part,
            rows,
            limit,
            offsets: Vec::with_capacity(rows as usize),
            bytes: Vec::new(),
            validity: Vec::with_capacity(rows as usize),
        })
    }

    /// Fails now if `bytes` more string bytes would break the budget (for constant
    /// vectors, whose total is known before the first row).
    pub fn expect_bytes(&mut self, bytes: u64) -> Result<()> {
        let total = (self.rows * 9).saturating_add(bytes);
        if total > self.limit {
            return Err(FiloError::TooLarge {
                part: self.part,
                rows: self.rows,
                bytes: total,
                limit: self.limit,
            });
        }
        self.bytes.reserve(bytes as usize);
        Ok(())
    }

    /// Appends a row: `None` is NA (stored as an empty string).
    pub fn push(&mut self, value: Option<&[u8]>) -> Result<()> {
        let s = value.unwrap_or(&[]);
        let total = (self.rows * 9)
            .saturating_add(self.bytes.len() as u64)
            .saturating_add(s.len() as u64);
        if total > self.limit {
            return Err(FiloError::TooLarge {
                part: self.part,
                rows: self.rows,
                bytes: total,
                limit: self.limit,
            });
        }
        self.offsets.push(self.bytes.len() as u64);
        self.bytes.extend_from_slice(s);
        self.validity.push(u8::from(value.is_some()));
        Ok(())
    }

    pub fn finish(self) -> (Values, Vec<u8>) {
        (
            Values::Var {
                offsets: self.offsets,
                bytes: self.bytes,
            },
            self.validity,
        )
    }
}

/// A decoded string column before the header fields are filled in.
pub(crate) struct Strings {
    pub values: Values,
    pub validity: Vec<u8>,
    pub info: ColumnInfo,
}

impl Strings {
    pub fn new(builder: StringsBuilder, info: ColumnInfo) -> Strings {
        let (values, validity) = builder.finish();
        Strings {
            values,
            validity,
            info,
        }
    }
}
