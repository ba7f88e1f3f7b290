//! TileDB's `Datatype` enum (`02-enums.md`): ids, sizes, names and the element kinds
//! that type-dependent filters work on.

use super::error::{FormatError, Result};

macro_rules! datatypes {
    ($($id:literal $variant:ident $name:literal $size:literal),* $(,)?) => {
        /// A TileDB datatype, stored on disk as one byte.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Datatype { $($variant),* }

        impl Datatype {
            pub fn from_u8(id: u8) -> Option<Datatype> {
                match id { $($id => Some(Datatype::$variant),)* _ => None }
            }
            pub fn id(self) -> u8 {
                match self { $(Datatype::$variant => $id),* }
            }
            /// The name TileDB uses (`INT32`, `STRING_UTF8`, `DATETIME_MS`, ...).
            pub fn name(self) -> &'static str {
                match self { $(Datatype::$variant => $name),* }
            }
            /// Bytes per element.
            pub fn size(self) -> u64 {
                match self { $(Datatype::$variant => $size),* }
            }
            /// The datatype TileDB names `name` (the inverse of [`Datatype::name`]).
            pub fn from_name(name: &str) -> Option<Datatype> {
                match name { $($name => Some(Datatype::$variant),)* _ => None }
            }
        }
    };
}

datatypes! {
    0 Int32 "INT32" 4, 1 Int64 "INT64" 8, 2 Float32 "FLOAT32" 4, 3 Float64 "FLOAT64" 8,
    4 Char "CHAR" 1, 5 Int8 "INT8" 1, 6 UInt8 "UINT8" 1, 7 Int16 "INT16" 2,
    8 UInt16 "UINT16" 2, 9 UInt32 "UINT32" 4, 10 UInt64 "UINT64" 8,
    11 StringAscii "STRING_ASCII" 1, 12 StringUtf8 "STRING_UTF8" 1,
    13 StringUtf16 "STRING_UTF16" 2, 14 StringUtf32 "STRING_UTF32" 4,
    15 StringUcs2 "STRING_UCS2" 2, 16 StringUcs4 "STRING_UCS4" 4, 17 Any "ANY" 1,
    18 DatetimeYear "DATETIME_YEAR" 8, 19 DatetimeMonth "DATETIME_MONTH" 8,
    20 DatetimeWeek "DATETIME_WEEK" 8, 21 DatetimeDay "DATETIME_DAY" 8,
    22 DatetimeHr "DATETIME_HR" 8, 23 DatetimeMin "DATETIME_MIN" 8,
    24 DatetimeSec "DATETIME_SEC" 8, 25 DatetimeMs "DATETIME_MS" 8,
    26 DatetimeUs "DATETIME_US" 8, 27 DatetimeNs "DATETIME_NS" 8,
    28 DatetimePs "DATETIME_PS" 8, 29 DatetimeFs "DATETIME_FS" 8,
    30 DatetimeAs "DATETIME_AS" 8,
    31 TimeHr "TIME_HR" 8, 32 TimeMin "TIME_MIN" 8, 33 TimeSec "TIME_SEC" 8,
    34 TimeMs "TIME_MS" 8, 35 TimeUs "TIME_US" 8, 36 TimeNs "TIME_NS" 8,
    37 TimePs "TIME_PS" 8, 38 TimeFs "TIME_FS" 8, 39 TimeAs "TIME_AS" 8,
    40 Blob "BLOB" 1, 41 Bool "BOOL" 1, 42 GeomWkb "GEOM_WKB" 1, 43 GeomWkt "GEOM_WKT" 1,
}

/// The machine type of one element, as the type-dependent filters and the statistics
/// see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElementKind {
    I8,
    U8,
    I16,
    U16,
    I32,
    U32,
    I64,
    U64,
    F32,
    F64,
}

impl ElementKind {
    pub fn size(self) -> usize {
        match self {
            ElementKind::I8 | ElementKind::U8 => 1,
            ElementKind::I16 | ElementKind::U16 => 2,
            ElementKind::I32 | ElementKind::U32 | ElementKind::F32 => 4,
            ElementKind::I64 | ElementKind::U64 | ElementKind::F64 => 8,
        }
    }

    pub fn is_signed(self) -> bool {
        matches!(
            self,
            ElementKind::I8 | ElementKind::I16 | ElementKind::I32 | ElementKind::I64
        )
    }

    pub fn is_float(self) -> bool {
        matches!(self, ElementKind::F32 | ElementKind::F64)
    }
}

impl Datatype {
    pub fn parse(id: u8, field: &'static str, offset: u64) -> Result<Datatype> {
        Datatype::from_u8(id).ok_or_else(|| FormatError::Invalid {
            field,
            offset,
            reason: format!("unknown datatype id {id}"),
        })
    }

    pub fn is_datetime(self) -> bool {
        (18..=30).contains(&self.id())
    }

    pub fn is_time(self) -> bool {
        (31..=39).contains(&self.id())
    }

    /// DATETIME_* or TIME_*: stored as `i64` counts of a unit.
    pub fn is_temporal(self) -> bool {
        self.is_datetime() || self.is_time()
    }

    pub fn is_string(self) -> bool {
        (11..=16).contains(&self.id())
    }

    pub fn is_float(self) -> bool {
        matches!(self, Datatype::Float32 | Datatype::Float64)
    }

    /// The element kind as TileDB's filters see it (`02-enums.md`: CHAR is signed 8-bit,
    /// strings, ANY and the byte types are unsigned 8-bit, dates and times are `i64`).
    pub fn element_kind(self) -> ElementKind {
        use Datatype::*;
        match self {
            Int8 | Char => ElementKind::I8,
            Int16 => ElementKind::I16,
            UInt16 => ElementKind::U16,
            Int32 => ElementKind::I32,
            UInt32 => ElementKind::U32,
            Int64 => ElementKind::I64,
            UInt64 => ElementKind::U64,
            Float32 => ElementKind::F32,
            Float64 => ElementKind::F64,
            t if t.is_temporal() => ElementKind::I64,
            StringUtf16 | StringUcs2 => ElementKind::U16,
            StringUtf32 | StringUcs4 => ElementKind::U32,
            _ => ElementKind::U8,
        }
    }

    /// The signed integer type of `bytes` width (what SCALE_FLOAT and XOR output).
    pub fn signed_of_width(bytes: u64) -> Option<Datatype> {
        match bytes {
            1 => Some(Datatype::Int8),
            2 => Some(Datatype::Int16),
            4 => Some(Datatype::Int32),
            8 => Some(Datatype::Int64),
            _ => None,
        }
    }
}

/// Reads one integer value of an integer-like datatype (integers, DATETIME, TIME) from
/// its little-endian bytes; `None` for other types or short input.
pub fn decode_int(bytes: &[u8], t: Datatype) -> Option<i128> {
    let arr = |n: usize| -> Option<[u8; 8]> {
        let mut a = [0u8; 8];
        a[..n].copy_from_slice(bytes.get(..n)?);
        Some(a)
    };
    Some(match t.element_kind() {
        _ if t.is_string() || t.is_float() => return None,
        ElementKind::I8 => bytes.first().map(|&b| b as i8 as i128)?,
        ElementKind::U8 => *bytes.first()? as i128,
        ElementKind::I16 => i16::from_le_bytes(arr(2)?[..2].try_into().ok()?) as i128,
        ElementKind::U16 => u16::from_le_bytes(arr(2)?[..2].try_into().ok()?) as i128,
        ElementKind::I32 => i32::from_le_bytes(arr(4)?[..4].try_into().ok()?) as i128,
        ElementKind::U32 => u32::from_le_bytes(arr(4)?[..4].try_into().ok()?) as i128,
        ElementKind::I64 => i64::from_le_bytes(arr(8)?) as i128,
        ElementKind::U64 => u64::from_le_bytes(arr(8)?) as i128,
        ElementKind::F32 | ElementKind::F64 => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_id_round_trips() {
        for id in 0..=43u8 {
            let t = Datatype::from_u8(id).unwrap();
            assert_eq!(t.id(), id);
            assert_eq!(Datatype::from_name(t.name()), Some(t));
        }
        assert_eq!(Datatype::from_name("int32"), None);
        assert_eq!(Datatype::from_u8(44), None);
        assert_eq!(Datatype::DatetimeMs.name(), "DATETIME_MS");
        assert_eq!(Datatype::StringUtf16.size(), 2);
        assert_eq!(Datatype::TimeAs.element_kind(), ElementKind::I64);
    }
}
