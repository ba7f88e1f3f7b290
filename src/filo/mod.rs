//! The Filo binary vector wire format (velvia/filo 0.2–0.3.7 and FiloDB's chunks), decoded
//! to fragfs's plain representation. Spec: `docs/filo-format/FORMAT.md`.
//!
//! A Filo chunk holds one column for a run of rows: a 4-byte header word naming the
//! vector kind, then either a FlatBuffer (old vectors) or a raw memory image (new-style
//! BinaryVectors). The chunk does not record the column's logical type and several
//! headers decode differently per type, so the type comes from outside: a
//! `filo_fragment.json` manifest ([`parse_manifest`]).
//!
//! * [`decode_vector`]: a whole chunk → values, validity, zones and encoding info, laid
//!   out as fragfs's `values.bin` / `validity.bin` / `timezone.bin` (see [`DecodedColumn`]
//!   and the byte layouts in `column.rs`).
//! * [`fixed_layout`]: for every non-string column, row `i` straight from the chunk
//!   without decoding the rest, so big vectors can be served lazily.
//!
//! Everything here works on byte slices, does no I/O and never panics on bad input:
//! every count and offset read from the bytes is checked against the bytes there, and
//! vectors that can expand (constants, dictionaries) are held to a byte budget.

mod bitpack;
mod column;
mod datetime;
mod delta;
mod error;
mod fbstring;
mod flatbuffers;
mod framing;
mod header;
mod layout;
mod manifest;
mod primitive;
mod span;
mod utf8;

use std::borrow::Cow;
use std::fmt;

pub use bitpack::IntFormat;
pub use column::{ColumnInfo, DecodedColumn, NaEncoding, Values};
pub use error::{FiloError, Result};
pub use framing::unframe;
pub use header::{Header, VectorKind, EMPTY_MAX_ROWS};
pub use layout::{Element, FixedLayout, RowBytes};
pub use manifest::{parse_manifest, Manifest, ManifestColumn, MANIFEST_FILE};

use column::{ColumnInfo as Info, Strings};
use layout::{Parts, Validity, Zones};
use span::Span;

/// The logical type of a column (FORMAT.md §1), named as in the manifest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ColumnType {
    /// u8 0/1.
    Bool,
    /// i32.
    Int,
    /// i64.
    Long,
    /// f32.
    Float,
    /// f64.
    Double,
    /// Old FlatBuffers string vectors (also accepts the new-style string vectors).
    String,
    /// New-style `ZeroCopyUTF8String` vectors (also accepts the FlatBuffers ones).
    Utf8,
    /// `java.sql.Timestamp`: i64 epoch milliseconds.
    Timestamp,
    /// Joda `DateTime`: i64 epoch milliseconds plus a per-row zone (`timezone.bin`).
    DateTime,
}

impl ColumnType {
    pub const ALL: [ColumnType; 9] = [
        ColumnType::Bool,
        ColumnType::Int,
        ColumnType::Long,
        ColumnType::Float,
        ColumnType::Double,
        ColumnType::String,
        ColumnType::Utf8,
        ColumnType::Timestamp,
        ColumnType::DateTime,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ColumnType::Bool => "bool",
            ColumnType::Int => "int",
            ColumnType::Long => "long",
            ColumnType::Float => "float",
            ColumnType::Double => "double",
            ColumnType::String => "string",
            ColumnType::Utf8 => "utf8",
            ColumnType::Timestamp => "timestamp",
            ColumnType::DateTime => "datetime",
        }
    }

    pub fn from_name(name: &str) -> Option<ColumnType> {
        ColumnType::ALL.into_iter().find(|t| t.name() == name)
    }

    /// Bytes per row in `values.bin`, or None for strings.
    pub fn elem_size(self) -> Option<usize> {
        match self {
            ColumnType::Bool => Some(1),
            ColumnType::Int | ColumnType::Float => Some(4),
            ColumnType::Long
            | ColumnType::Double
            | ColumnType::Timestamp
            | ColumnType::DateTime => Some(8),
            ColumnType::String | ColumnType::Utf8 => None,
        }
    }
}

impl fmt::Display for ColumnType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Which writer produced the chunks (the manifest's `format_version`, FORMAT.md §9.3).
///
/// It matters in one place only: UTF8Vector's short string words, which changed in
/// v0.3.2 and cannot be told apart from the bytes (FORMAT.md §6.6, §11 item 9).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum FormatVersion {
    /// `velvia-filo-0.3`: v0.3.2 and later (the default).
    #[default]
    Filo03,
    /// `velvia-filo-0.3.0`: v0.3.0–0.3.1, the old UTF8Vector small form.
    Filo030,
}

impl FormatVersion {
    pub fn name(self) -> &'static str {
        match self {
            FormatVersion::Filo03 => "velvia-filo-0.3",
            FormatVersion::Filo030 => "velvia-filo-0.3.0",
        }
    }

    pub fn from_name(name: &str) -> Option<FormatVersion> {
        [FormatVersion::Filo03, FormatVersion::Filo030]
            .into_iter()
            .find(|v| v.name() == name)
    }
}

/// Default output budget of [`decode_vector`]: 256 MiB, enough for the largest
/// EmptyVector (2²⁴ − 1 rows of 8 bytes plus validity) and far above real chunks.
pub const DEFAULT_MAX_DECODED_BYTES: u64 = 256 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodeOptions {
    pub version: FormatVersion,
    /// Most bytes decoding may produce (values + offsets + validity + zones), and the
    /// most an LZ4-framed blob may decompress to.
    pub max_decoded_bytes: u64,
}

impl Default for DecodeOptions {
    fn default() -> Self {
        DecodeOptions {
            version: FormatVersion::default(),
            max_decoded_bytes: DEFAULT_MAX_DECODED_BYTES,
        }
    }
}

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

/// What every vector parser is told: which vector, and which column type it is read as.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ctx {
    pub kind: VectorKind,
    pub header: u32,
    pub column_type: ColumnType,
}

impl Ctx {
    pub fn wrong_type(&self) -> FiloError {
        FiloError::WrongColumnType {
            kind: self.kind,
            header: self.header,
            column_type: self.column_type,
        }
    }

    /// Fails unless the column type is one of `allowed`.
    pub fn require(&self, allowed: &[ColumnType]) -> Result<()> {
        if allowed.contains(&self.column_type) {
            Ok(())
        } else {
            Err(self.wrong_type())
        }
    }
}

/// Column types whose values are integers or become them: an integer vector can be
/// read as any of these (an int column keeps the low 32 bits, a double column converts).
pub(crate) const INTEGRAL: [ColumnType; 4] = [
    ColumnType::Int,
    ColumnType::Long,
    ColumnType::Timestamp,
    ColumnType::Double,
];

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
