//! Typed values as JSON: numbers by datatype, NaN/Infinity spelled as strings (JSON has
//! no such numbers), text for strings, byte lists for bytes that are not UTF-8.

use serde_json::{json, Value};

use crate::format::{Datatype, ElementKind};

/// One element of `t` from its little-endian bytes.
pub fn element(bytes: &[u8], t: Datatype) -> Value {
    let b8 = |n: usize| -> [u8; 8] {
        let mut a = [0u8; 8];
        let n = n.min(bytes.len());
        a[..n].copy_from_slice(&bytes[..n]);
        a
    };
    let float = |f: f64| -> Value {
        if f.is_nan() {
            json!("NaN")
        } else if f.is_infinite() {
            json!(if f > 0.0 { "Infinity" } else { "-Infinity" })
        } else {
            json!(f)
        }
    };
    let a = b8(t.size() as usize);
    match t.element_kind() {
        ElementKind::I8 => json!(a[0] as i8),
        ElementKind::U8 => json!(a[0]),
        ElementKind::I16 => json!(i16::from_le_bytes([a[0], a[1]])),
        ElementKind::U16 => json!(u16::from_le_bytes([a[0], a[1]])),
        ElementKind::I32 => json!(i32::from_le_bytes([a[0], a[1], a[2], a[3]])),
        ElementKind::U32 => json!(u32::from_le_bytes([a[0], a[1], a[2], a[3]])),
        ElementKind::I64 => json!(i64::from_le_bytes(a)),
        ElementKind::U64 => json!(u64::from_le_bytes(a)),
        ElementKind::F32 => float(f32::from_le_bytes([a[0], a[1], a[2], a[3]]) as f64),
        ElementKind::F64 => float(f64::from_le_bytes(a)),
    }
}

/// A whole cell or range bound: strings as text, several elements as a list.
pub fn cell(bytes: &[u8], t: Datatype) -> Value {
    if matches!(
        t,
        Datatype::StringAscii | Datatype::StringUtf8 | Datatype::Char
    ) {
        return match std::str::from_utf8(bytes) {
            Ok(s) => json!(s),
            Err(_) => json!(bytes),
        };
    }
    let size = t.size() as usize;
    if bytes.len() == size {
        return element(bytes, t);
    }
    Value::Array(bytes.chunks(size.max(1)).map(|c| element(c, t)).collect())
}

/// An 8-byte tile sum, typed i64 / u64 / f64 by the field type (`06` §4).
pub fn sum(bytes: &[u8; 8], t: Datatype) -> Value {
    match t.element_kind() {
        ElementKind::F32 | ElementKind::F64 => element(bytes, Datatype::Float64),
        ElementKind::U8 | ElementKind::U16 | ElementKind::U32 | ElementKind::U64
            if !matches!(
                t,
                Datatype::Blob | Datatype::Bool | Datatype::GeomWkb | Datatype::GeomWkt
            ) =>
        {
            element(bytes, Datatype::UInt64)
        }
        _ => element(bytes, Datatype::Int64),
    }
}

pub fn range(lo: &[u8], hi: &[u8], t: Datatype) -> Value {
    json!([cell(lo, t), cell(hi, t)])
}

/// A metadata value as `metadata.json` shows it: text for CHAR and strings (base64 when
/// not UTF-8), base64 for BLOB and other raw bytes, booleans for BOOL, a number for
/// one element and a list for any other count (NaN and infinities as strings).
pub fn metadata(v: &crate::format::metadata::MetadataValue) -> Value {
    let t = v.datatype;
    if t.is_string() || matches!(t, Datatype::Char | Datatype::GeomWkt) {
        return match std::str::from_utf8(&v.bytes) {
            Ok(s) => json!(s),
            Err(_) => json!({ "base64": base64(&v.bytes) }),
        };
    }
    if matches!(t, Datatype::Blob | Datatype::GeomWkb | Datatype::Any) {
        return json!(base64(&v.bytes));
    }
    let size = (t.size() as usize).max(1);
    let one = |c: &[u8]| match t {
        Datatype::Bool => json!(c.first().copied().unwrap_or(0) != 0),
        _ => element(c, t),
    };
    let values: Vec<Value> = v.bytes.chunks_exact(size).map(one).collect();
    match values.as_slice() {
        [single] if v.count == 1 => single.clone(),
        _ => Value::Array(values),
    }
}

/// Standard base64 (RFC 4648, with padding).
pub fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc_4648() {
        for (raw, enc) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(raw.as_bytes()), enc);
        }
    }
}
