//! `values.npy`: the bytes of `values.bin` behind a NumPy format 1.0 header, so
//! `np.load(path, mmap_mode='r')` maps the data without a copy. The header is padded so
//! the data starts on a 64-byte boundary, as NumPy itself writes it.

use crate::format::Datatype;

const MAGIC: &[u8] = b"\x93NUMPY\x01\x00";

/// The NumPy dtype and the per-cell shape of a fixed-size field, or `None` for types
/// NumPy has no view of.
fn descr(t: Datatype, cell_val_num: u32) -> (String, Option<u32>) {
    let n = cell_val_num;
    let multi = (n > 1).then_some(n);
    let unit = |u: &str| u.to_string();
    let code = match t {
        Datatype::Int8 => unit("|i1"),
        Datatype::UInt8 => unit("|u1"),
        Datatype::Int16 => unit("<i2"),
        Datatype::UInt16 => unit("<u2"),
        Datatype::Int32 => unit("<i4"),
        Datatype::UInt32 => unit("<u4"),
        Datatype::Int64 => unit("<i8"),
        Datatype::UInt64 => unit("<u8"),
        Datatype::Float32 => unit("<f4"),
        Datatype::Float64 => unit("<f8"),
        Datatype::Bool => unit("|b1"),
        // Fixed strings: one NumPy bytes scalar per cell.
        Datatype::Char | Datatype::StringAscii | Datatype::StringUtf8 => {
            return (format!("|S{n}"), None)
        }
        Datatype::StringUtf32 | Datatype::StringUcs4 => return (format!("<U{n}"), None),
        Datatype::StringUtf16 | Datatype::StringUcs2 => unit("<u2"),
        t if t.is_datetime() => format!("<M8[{}]", unit_code(t)),
        t if t.is_time() => format!("<m8[{}]", unit_code(t)),
        _ => unit("|u1"),
    };
    (code, multi)
}

/// NumPy's datetime unit code of a DATETIME_* / TIME_* type.
pub(crate) fn unit_code(t: Datatype) -> &'static str {
    let name = t.name();
    match name.rsplit('_').next().unwrap_or("") {
        "YEAR" => "Y",
        "MONTH" => "M",
        "WEEK" => "W",
        "DAY" => "D",
        "HR" => "h",
        "MIN" => "m",
        "SEC" => "s",
        "MS" => "ms",
        "US" => "us",
        "NS" => "ns",
        "PS" => "ps",
        "FS" => "fs",
        _ => "as",
    }
}

/// The complete header for `cells` cells of a fixed-size field.
pub fn header(t: Datatype, cell_val_num: u32, cells: u64) -> Vec<u8> {
    shaped_header(t, cell_val_num, &[cells])
}

/// The header of an array of `shape` cells (row-major), each a cell of the field.
pub fn shaped_header(t: Datatype, cell_val_num: u32, shape: &[u64]) -> Vec<u8> {
    let (code, multi) = descr(t, cell_val_num);
    let mut dims: Vec<String> = shape.iter().map(u64::to_string).collect();
    dims.extend(multi.map(|n| n.to_string()));
    let shape = match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    };
    let dict = format!("{{'descr': '{code}', 'fortran_order': False, 'shape': {shape}, }}");
    // magic + version (8) + header length (2) + dict + padding + '\n', to a multiple of 64.
    let unpadded = MAGIC.len() + 2 + dict.len() + 1;
    let total = unpadded.div_ceil(64) * 64;
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&((total - MAGIC.len() - 2) as u16).to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out.resize(total - 1, b' ');
    out.push(b'\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_are_aligned_and_describe_the_data() {
        let h = header(Datatype::Float64, 1, 96);
        assert_eq!(h.len() % 64, 0);
        assert!(h.starts_with(MAGIC));
        let len = u16::from_le_bytes([h[8], h[9]]) as usize;
        assert_eq!(10 + len, h.len());
        let text = std::str::from_utf8(&h[10..]).unwrap();
        assert!(text.starts_with("{'descr': '<f8', 'fortran_order': False, 'shape': (96,), }"));
        assert!(text.ends_with(" \n"));
        let h = String::from_utf8_lossy(&header(Datatype::Int32, 3, 5)).into_owned();
        assert!(h.contains("'<i4'") && h.contains("(5, 3)"));
        let h = String::from_utf8_lossy(&header(Datatype::Char, 4, 2)).into_owned();
        assert!(h.contains("'|S4'") && h.contains("(2,)"));
        let h = String::from_utf8_lossy(&header(Datatype::DatetimeMs, 1, 2)).into_owned();
        assert!(h.contains("'<M8[ms]'"));
        let h = String::from_utf8_lossy(&header(Datatype::TimeNs, 1, 2)).into_owned();
        assert!(h.contains("'<m8[ns]'"));
        let h = String::from_utf8_lossy(&shaped_header(Datatype::Int16, 2, &[3, 4])).into_owned();
        assert!(h.contains("(3, 4, 2)"));
        let h = String::from_utf8_lossy(&header(Datatype::Bool, 1, 2)).into_owned();
        assert!(h.contains("'|b1'"));
    }
}
