//! Data types: a TileDB datatype as Zarr's (v2's NumPy `dtype`, v3's `data_type`), how
//! elements lie in a chunk, and fill values as Zarr metadata spells them.

use serde_json::{json, Value};

use crate::encode::{npy, value};
use crate::format::schema::VAR_NUM;
use crate::format::Datatype;

/// How a Zarr array's elements lie in its chunk files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Elements {
    /// Fixed-size, little-endian, back to back: v3's `bytes` codec, v2 with no filter.
    Fixed,
    /// Variable-length strings: numcodecs' `VLenUTF8` (a v2 filter on dtype `|O`),
    /// v3's `vlen-utf8` codec (data type `string`).
    VlenUtf8,
    /// Variable-length bytes: `VLenBytes` (v2), `vlen-bytes` (v3,
    /// `variable_length_bytes`).
    VlenBytes,
}

impl Elements {
    /// The codec's id (v2 filter and v3 codec alike) of a variable-length type.
    pub fn codec(self) -> Option<&'static str> {
        match self {
            Elements::Fixed => None,
            Elements::VlenUtf8 => Some("vlen-utf8"),
            Elements::VlenBytes => Some("vlen-bytes"),
        }
    }
}

/// The data type of a Zarr array: v2's NumPy `dtype`, v3's `data_type`, the element
/// size, and what the attributes add (v3 has no datetime type: int64 plus units).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZType {
    pub v2: String,
    /// A name, or (fixed-length bytes) a name with its configuration.
    pub v3: Value,
    /// Bytes per element; 0 for variable-length ones.
    pub size: u64,
    pub units: Option<&'static str>,
    pub datatype: Datatype,
    pub elements: Elements,
}

/// The Zarr type of one value of a TileDB datatype, or `None` where Zarr has none
/// (strings, blobs, geometries, `ANY`: [`attribute_type`] gives strings theirs).
pub fn ztype(t: Datatype) -> Option<ZType> {
    use Datatype::*;
    let (v2, v3) = match t {
        Int8 => ("|i1", "int8"),
        UInt8 => ("|u1", "uint8"),
        Int16 => ("<i2", "int16"),
        UInt16 => ("<u2", "uint16"),
        Int32 => ("<i4", "int32"),
        UInt32 => ("<u4", "uint32"),
        Int64 => ("<i8", "int64"),
        UInt64 => ("<u8", "uint64"),
        Float32 => ("<f4", "float32"),
        Float64 => ("<f8", "float64"),
        Bool => ("|b1", "bool"),
        t if t.is_datetime() || t.is_time() => {
            let unit = npy::unit_code(t);
            let kind = if t.is_datetime() { "M8" } else { "m8" };
            return Some(ZType {
                v2: format!("<{kind}[{unit}]"),
                v3: json!("int64"),
                size: 8,
                units: Some(unit),
                datatype: t,
                elements: Elements::Fixed,
            });
        }
        _ => return None,
    };
    Some(ZType {
        v2: v2.to_string(),
        v3: json!(v3),
        size: t.size(),
        units: None,
        datatype: t,
        elements: Elements::Fixed,
    })
}

/// The Zarr type of an attribute, and how many values a cell holds when that is more
/// than one (they become a last dimension), or why Zarr has no type for it:
///
/// * var-size STRING_UTF8 and STRING_ASCII: variable-length strings (ASCII is UTF-8);
///   var-size CHAR: variable-length bytes (CHAR holds any bytes);
/// * CHAR of `n` per cell: one fixed-length `n`-byte string per cell, NumPy's `|Sn`,
///   as TileDB-Py reads it (v3: `null_terminated_bytes`);
/// * `n` values of a numeric or time type: `n` elements along a last dimension.
pub fn attribute_type(t: Datatype, cell_val_num: u32) -> Result<(ZType, Option<u64>), String> {
    let vlen = |v2: &str, v3: &str, elements| ZType {
        v2: v2.to_string(),
        v3: json!(v3),
        size: 0,
        units: None,
        datatype: t,
        elements,
    };
    match (t, cell_val_num) {
        (Datatype::StringUtf8 | Datatype::StringAscii, VAR_NUM) => {
            Ok((vlen("|O", "string", Elements::VlenUtf8), None))
        }
        (Datatype::Char, VAR_NUM) => Ok((
            vlen("|O", "variable_length_bytes", Elements::VlenBytes),
            None,
        )),
        (t, VAR_NUM) => Err(format!(
            "var-size {}: Zarr's variable-length types hold strings and bytes",
            t.name()
        )),
        (Datatype::Char, n) => Ok((
            ZType {
                v2: format!("|S{n}"),
                v3: json!({
                    "name": "null_terminated_bytes",
                    "configuration": { "length_bytes": n },
                }),
                size: u64::from(n),
                units: None,
                datatype: t,
                elements: Elements::Fixed,
            },
            None,
        )),
        (t, n) => {
            let ty = ztype(t).ok_or_else(|| format!("datatype {}: no Zarr data type", t.name()))?;
            match n {
                0 => Err("0 values per cell".into()),
                1 => Ok((ty, None)),
                n => Ok((ty, Some(u64::from(n)))),
            }
        }
    }
}

/// A fill value as Zarr metadata has it: a number (NaN and infinities as strings), a
/// boolean for bool; datetimes as their int64; a string for variable-length strings
/// (invalid UTF-8 replaced, as in their chunks); base64 for bytes, fixed-length or not
/// (zarr-python's spelling in both versions).
pub fn fill_json(bytes: &[u8], ty: &ZType) -> Value {
    match (ty.elements, ty.datatype) {
        (Elements::VlenUtf8, _) => json!(String::from_utf8_lossy(bytes)),
        (Elements::VlenBytes, _) | (Elements::Fixed, Datatype::Char) => {
            json!(value::base64(bytes))
        }
        (Elements::Fixed, Datatype::Bool) => json!(bytes.first().copied().unwrap_or(0) != 0),
        _ if ty.units.is_some() => value::element(bytes, Datatype::Int64),
        (Elements::Fixed, t) => value::element(bytes, t),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dtypes_map_to_both_zarr_versions() {
        let t = |t| ztype(t).map(|z| (z.v2, z.v3, z.size, z.units));
        let some = |v2: &str, v3: &str, size, units| Some((v2.to_string(), json!(v3), size, units));
        assert_eq!(t(Datatype::Int8), some("|i1", "int8", 1, None));
        assert_eq!(t(Datatype::UInt16), some("<u2", "uint16", 2, None));
        assert_eq!(t(Datatype::Int32), some("<i4", "int32", 4, None));
        assert_eq!(t(Datatype::UInt64), some("<u8", "uint64", 8, None));
        assert_eq!(t(Datatype::Float32), some("<f4", "float32", 4, None));
        assert_eq!(t(Datatype::Bool), some("|b1", "bool", 1, None));
        // v3 has no datetimes: int64, with the unit in the attributes.
        assert_eq!(
            t(Datatype::DatetimeMs),
            some("<M8[ms]", "int64", 8, Some("ms"))
        );
        assert_eq!(t(Datatype::TimeNs), some("<m8[ns]", "int64", 8, Some("ns")));
        assert_eq!(t(Datatype::DatetimeDay).map(|z| z.0), Some("<M8[D]".into()));
        for none in [
            Datatype::StringAscii,
            Datatype::Char,
            Datatype::Blob,
            Datatype::Any,
        ] {
            assert_eq!(t(none), None, "{none:?}");
        }
    }

    #[test]
    fn strings_bytes_and_cells_of_several_values_have_zarr_types() {
        let t =
            |t, n| attribute_type(t, n).map(|(z, values)| (z.v2, z.v3, z.size, z.elements, values));
        // Var-size strings: v2 objects with the VLenUTF8 filter, v3 `string`.
        for s in [Datatype::StringUtf8, Datatype::StringAscii] {
            assert_eq!(
                t(s, VAR_NUM),
                Ok(("|O".into(), json!("string"), 0, Elements::VlenUtf8, None))
            );
        }
        // Var-size CHAR holds any bytes.
        assert_eq!(
            t(Datatype::Char, VAR_NUM),
            Ok((
                "|O".into(),
                json!("variable_length_bytes"),
                0,
                Elements::VlenBytes,
                None
            ))
        );
        // CHAR x 4: one fixed-length byte string per cell, as TileDB-Py reads it.
        assert_eq!(
            t(Datatype::Char, 4),
            Ok((
                "|S4".into(),
                json!({ "name": "null_terminated_bytes", "configuration": { "length_bytes": 4 } }),
                4,
                Elements::Fixed,
                None
            ))
        );
        assert_eq!(t(Datatype::Char, 1).map(|z| z.0), Ok("|S1".into()));
        // Several numbers: the element type, and the count for a last dimension.
        assert_eq!(
            t(Datatype::Float32, 3),
            Ok(("<f4".into(), json!("float32"), 4, Elements::Fixed, Some(3)))
        );
        assert_eq!(t(Datatype::Int16, 2).map(|z| z.4), Ok(Some(2)));
        assert_eq!(t(Datatype::Int16, 1).map(|z| z.4), Ok(None));
        // What stays out, and why.
        assert_eq!(
            t(Datatype::Int32, VAR_NUM),
            Err("var-size INT32: Zarr's variable-length types hold strings and bytes".into())
        );
        assert_eq!(
            t(Datatype::StringAscii, 4),
            Err("datatype STRING_ASCII: no Zarr data type".into())
        );
        assert_eq!(
            t(Datatype::Blob, VAR_NUM).err().unwrap(),
            "var-size BLOB: Zarr's variable-length types hold strings and bytes"
        );
    }

    #[test]
    fn fill_values_as_zarr_spells_them() {
        let t = |d| ztype(d).unwrap();
        assert_eq!(fill_json(&[1], &t(Datatype::Bool)), json!(true));
        assert_eq!(fill_json(&[0], &t(Datatype::Bool)), json!(false));
        assert_eq!(
            fill_json(&f64::NAN.to_le_bytes(), &t(Datatype::Float64)),
            json!("NaN")
        );
        assert_eq!(
            fill_json(&f32::NEG_INFINITY.to_le_bytes(), &t(Datatype::Float32)),
            json!("-Infinity")
        );
        assert_eq!(
            fill_json(&u16::MAX.to_le_bytes(), &t(Datatype::UInt16)),
            json!(65535)
        );
        assert_eq!(
            fill_json(&7i64.to_le_bytes(), &t(Datatype::TimeSec)),
            json!(7)
        );
        let a = |d, n| attribute_type(d, n).unwrap().0;
        // Strings as strings (bad UTF-8 replaced, as in the chunks), bytes in base64.
        assert_eq!(
            fill_json(b"\xffa", &a(Datatype::StringUtf8, VAR_NUM)),
            json!("\u{fffd}a")
        );
        assert_eq!(
            fill_json(&[0], &a(Datatype::StringAscii, VAR_NUM)),
            json!("\u{0}")
        );
        assert_eq!(
            fill_json(&[0, 1, 2], &a(Datatype::Char, VAR_NUM)),
            json!("AAEC")
        );
        assert_eq!(fill_json(&[0x80; 3], &a(Datatype::Char, 3)), json!("gICA"));
    }
}
