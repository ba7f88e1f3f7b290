//! Cells as readable text, for `values.txt` and `cells.csv`: integers in decimal, floats
//! in the shortest text that reads back to the same bits, datetimes in ISO 8601 in the
//! field's unit, strings as UTF-8 with the bytes that would break a line escaped.

use std::io::Write;

use crate::format::Datatype;

/// What null cells read as.
pub const NULL: &str = "NULL";

/// Appends the text of one cell: `bytes` are its value (all elements of a fixed
/// multi-value cell, or the bytes of a var cell).
pub fn cell(out: &mut Vec<u8>, t: Datatype, bytes: &[u8]) {
    if is_text(t) {
        return text(out, t, bytes);
    }
    if is_bytes(t) {
        for b in bytes {
            let _ = write!(out, "{b:02x}");
        }
        return;
    }
    let size = (t.size() as usize).max(1);
    for (i, e) in bytes.chunks(size).enumerate() {
        if i > 0 {
            out.push(b',');
        }
        element(out, t, e);
    }
}

/// A time in milliseconds since the epoch as ISO 8601 UTC, e.g. `2026-11-22T09:07:33.123Z`.
pub fn iso_ms(ms: u64) -> String {
    let mut out = Vec::new();
    datetime(
        &mut out,
        Datatype::DatetimeMs,
        ms.min(i64::MAX as u64) as i64,
    );
    out.push(b'Z');
    String::from_utf8_lossy(&out).into_owned()
}

/// Types shown as one string per cell.
pub fn is_text(t: Datatype) -> bool {
    t.is_string() || matches!(t, Datatype::Char | Datatype::GeomWkt)
}

/// Types shown as hex digits.
fn is_bytes(t: Datatype) -> bool {
    matches!(t, Datatype::Blob | Datatype::GeomWkb | Datatype::Any)
}

fn element(out: &mut Vec<u8>, t: Datatype, e: &[u8]) {
    let mut le = [0u8; 8];
    let n = e.len().min(8);
    le[..n].copy_from_slice(&e[..n]);
    let u = u64::from_le_bytes(le);
    let signed = |bits: u32| ((u << (64 - bits)) as i64) >> (64 - bits);
    let _ = match t {
        Datatype::Bool => write!(out, "{}", if u != 0 { "true" } else { "false" }),
        Datatype::Float32 => return float(out, f32::from_bits(u as u32) as f64, true),
        Datatype::Float64 => return float(out, f64::from_bits(u), false),
        Datatype::Int8 => write!(out, "{}", signed(8)),
        Datatype::Int16 => write!(out, "{}", signed(16)),
        Datatype::Int32 => write!(out, "{}", signed(32)),
        Datatype::UInt8 | Datatype::UInt16 | Datatype::UInt32 | Datatype::UInt64 => {
            write!(out, "{u}")
        }
        // The smallest int64 is NumPy's "not a time", and TileDB's fill value.
        t if t.is_temporal() && u as i64 == i64::MIN => write!(out, "NaT"),
        t if t.is_datetime() => return datetime(out, t, u as i64),
        t if t.is_time() => return time_of_day(out, t, u as i64),
        _ => write!(out, "{}", u as i64),
    };
}

/// The shortest of the plain and exponent forms that reads back to the same value.
fn float(out: &mut Vec<u8>, v: f64, single: bool) {
    if v.is_nan() {
        return out.extend_from_slice(b"nan");
    }
    if v.is_infinite() {
        return out.extend_from_slice(if v > 0.0 { b"inf" } else { b"-inf" });
    }
    let (plain, exp) = if single {
        let s = v as f32;
        (format!("{s}"), format!("{s:e}"))
    } else {
        (format!("{v}"), format!("{v:e}"))
    };
    out.extend_from_slice(if exp.len() < plain.len() { exp } else { plain }.as_bytes());
}

/// Units per second and digits after the seconds' point for sub-second units, or the
/// length of the calendar prefix for coarse ones.
fn datetime(out: &mut Vec<u8>, t: Datatype, v: i64) {
    let v = v as i128;
    let (y, m, d, secs_of_day, frac, digits) = match t {
        Datatype::DatetimeYear => {
            let _ = write!(out, "{}", 1970 + v);
            return;
        }
        Datatype::DatetimeMonth => {
            let (y, m) = (1970 + v.div_euclid(12), v.rem_euclid(12) + 1);
            let _ = write!(out, "{y}-{m:02}");
            return;
        }
        Datatype::DatetimeWeek => with_days(v * 7, 0, 0, 0),
        Datatype::DatetimeDay => with_days(v, 0, 0, 0),
        Datatype::DatetimeHr => split_secs(v * 3600, 1, 0),
        Datatype::DatetimeMin => split_secs(v * 60, 1, 0),
        Datatype::DatetimeSec => split_secs(v, 1, 0),
        Datatype::DatetimeMs => split_secs(v, 1_000, 3),
        Datatype::DatetimeUs => split_secs(v, 1_000_000, 6),
        Datatype::DatetimeNs => split_secs(v, 1_000_000_000, 9),
        Datatype::DatetimePs => split_secs(v, 1_000_000_000_000, 12),
        Datatype::DatetimeFs => split_secs(v, 1_000_000_000_000_000, 15),
        _ => split_secs(v, 1_000_000_000_000_000_000, 18),
    };
    let _ = write!(out, "{y:04}-{m:02}-{d:02}");
    match t {
        Datatype::DatetimeWeek | Datatype::DatetimeDay => {}
        Datatype::DatetimeHr => {
            let _ = write!(out, "T{:02}", secs_of_day / 3600);
        }
        Datatype::DatetimeMin => {
            let _ = write!(
                out,
                "T{:02}:{:02}",
                secs_of_day / 3600,
                secs_of_day / 60 % 60
            );
        }
        _ => {
            clock(out, secs_of_day, frac, digits, 'T');
        }
    }
}

type Civil = (i128, i128, i128, i128, i128, usize);

/// A count of `per_sec` units since the epoch as date, seconds of the day and fraction.
fn split_secs(v: i128, per_sec: i128, digits: usize) -> Civil {
    let secs = v.div_euclid(per_sec);
    let frac = v.rem_euclid(per_sec);
    with_days(
        secs.div_euclid(86_400),
        secs.rem_euclid(86_400),
        frac,
        digits,
    )
}

fn with_days(days: i128, secs_of_day: i128, frac: i128, digits: usize) -> Civil {
    let (y, m, d) = civil_from_days(days);
    (y, m, d, secs_of_day, frac, digits)
}

/// Proleptic Gregorian date of a day count since 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(z: i128) -> (i128, i128, i128) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i128::from(m <= 2), m, d)
}

fn clock(out: &mut Vec<u8>, secs: i128, frac: i128, digits: usize, sep: char) {
    if sep != '\0' {
        out.push(sep as u8);
    }
    let _ = write!(
        out,
        "{:02}:{:02}:{:02}",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    );
    if digits > 0 {
        let _ = write!(out, ".{frac:0digits$}");
    }
}

/// TIME_* values: a time of day (hours may pass 24 for durations of more than a day).
fn time_of_day(out: &mut Vec<u8>, t: Datatype, v: i64) {
    let v = v as i128;
    if v < 0 {
        out.push(b'-');
    }
    let v = v.abs();
    let (per_sec, digits): (i128, usize) = match t {
        Datatype::TimeHr => return write_hms(out, v * 3600, 0, 0),
        Datatype::TimeMin => return write_hms(out, v * 60, 0, 0),
        Datatype::TimeSec => (1, 0),
        Datatype::TimeMs => (1_000, 3),
        Datatype::TimeUs => (1_000_000, 6),
        Datatype::TimeNs => (1_000_000_000, 9),
        Datatype::TimePs => (1_000_000_000_000, 12),
        Datatype::TimeFs => (1_000_000_000_000_000, 15),
        _ => (1_000_000_000_000_000_000, 18),
    };
    write_hms(out, v / per_sec, v % per_sec, digits);
}

fn write_hms(out: &mut Vec<u8>, secs: i128, frac: i128, digits: usize) {
    clock(out, secs, frac, digits, '\0');
}

/// A string cell: UTF-8 as is, but `\n`, `\t`, `\r`, `\\` and other control bytes, and
/// bytes that are not UTF-8, escaped, so one cell is always one line.
fn text(out: &mut Vec<u8>, t: Datatype, bytes: &[u8]) {
    let decoded;
    let bytes = match t {
        Datatype::StringUtf16 | Datatype::StringUcs2 => {
            let units: Vec<u16> = bytes
                .chunks_exact(2)
                .map(|c| u16::from_le_bytes([c[0], c[1]]))
                .collect();
            match String::from_utf16(&units) {
                Ok(s) => {
                    decoded = s;
                    decoded.as_bytes()
                }
                Err(_) => bytes,
            }
        }
        Datatype::StringUtf32 | Datatype::StringUcs4 => {
            let chars: Option<String> = bytes
                .chunks_exact(4)
                .map(|c| char::from_u32(u32::from_le_bytes([c[0], c[1], c[2], c[3]])))
                .collect();
            match chars {
                Some(s) => {
                    decoded = s;
                    decoded.as_bytes()
                }
                None => bytes,
            }
        }
        _ => bytes,
    };
    let mut rest = bytes;
    while !rest.is_empty() {
        let (valid, bad) = match std::str::from_utf8(rest) {
            Ok(s) => (s, 0),
            Err(e) => {
                let (ok, after) = rest.split_at(e.valid_up_to());
                let bad = e.error_len().unwrap_or(after.len());
                // `ok` is valid UTF-8 by the definition of `valid_up_to`.
                (std::str::from_utf8(ok).unwrap_or_default(), bad)
            }
        };
        for c in valid.chars() {
            match c {
                '\n' => out.extend_from_slice(b"\\n"),
                '\t' => out.extend_from_slice(b"\\t"),
                '\r' => out.extend_from_slice(b"\\r"),
                '\\' => out.extend_from_slice(b"\\\\"),
                c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                    let _ = write!(out, "\\x{:02x}", c as u32);
                }
                c => {
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                }
            }
        }
        let after = &rest[valid.len()..];
        for b in &after[..bad] {
            let _ = write!(out, "\\x{b:02x}");
        }
        rest = &after[bad..];
    }
}

/// One CSV field: quoted (with doubled quotes) when it holds a comma or a quote.
pub fn csv_field(out: &mut Vec<u8>, text: &[u8]) {
    if text.iter().any(|&b| b == b',' || b == b'"') {
        out.push(b'"');
        for &b in text {
            if b == b'"' {
                out.push(b'"');
            }
            out.push(b);
        }
        out.push(b'"');
    } else {
        out.extend_from_slice(text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn show(t: Datatype, bytes: &[u8]) -> String {
        let mut out = Vec::new();
        cell(&mut out, t, bytes);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn numbers() {
        assert_eq!(show(Datatype::Int32, &(-5i32).to_le_bytes()), "-5");
        assert_eq!(
            show(Datatype::UInt64, &u64::MAX.to_le_bytes()),
            "18446744073709551615"
        );
        assert_eq!(show(Datatype::Int8, &[0x80]), "-128");
        assert_eq!(show(Datatype::Bool, &[1]), "true");
        assert_eq!(show(Datatype::Float64, &0.1f64.to_le_bytes()), "0.1");
        assert_eq!(show(Datatype::Float64, &1e300f64.to_le_bytes()), "1e300");
        assert_eq!(show(Datatype::Float64, &2.5f64.to_le_bytes()), "2.5");
        assert_eq!(show(Datatype::Float32, &0.1f32.to_le_bytes()), "0.1");
        assert_eq!(show(Datatype::Float64, &f64::NAN.to_le_bytes()), "nan");
        assert_eq!(
            show(Datatype::Float32, &f32::NEG_INFINITY.to_le_bytes()),
            "-inf"
        );
        let three: Vec<u8> = [1i16, -2, 3].iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(show(Datatype::Int16, &three), "1,-2,3");
        for v in [1.0 / 3.0, -123456.789e-200, 6.02214076e23, 5e-324] {
            let s = show(Datatype::Float64, &f64::to_le_bytes(v));
            assert_eq!(s.parse::<f64>().unwrap().to_bits(), v.to_bits(), "{s}");
        }
    }

    #[test]
    fn dates_and_times() {
        let ms = 1_700_000_000_123i64;
        assert_eq!(
            show(Datatype::DatetimeMs, &ms.to_le_bytes()),
            "2023-11-14T22:13:20.123"
        );
        assert_eq!(
            show(Datatype::DatetimeDay, &0i64.to_le_bytes()),
            "1970-01-01"
        );
        assert_eq!(
            show(Datatype::DatetimeDay, &(-1i64).to_le_bytes()),
            "1969-12-31"
        );
        assert_eq!(
            show(Datatype::DatetimeMonth, &(-1i64).to_le_bytes()),
            "1969-12"
        );
        assert_eq!(show(Datatype::DatetimeYear, &54i64.to_le_bytes()), "2024");
        assert_eq!(
            show(Datatype::DatetimeWeek, &1i64.to_le_bytes()),
            "1970-01-08"
        );
        assert_eq!(
            show(Datatype::DatetimeHr, &25i64.to_le_bytes()),
            "1970-01-02T01"
        );
        assert_eq!(
            show(Datatype::DatetimeNs, &(-1i64).to_le_bytes()),
            "1969-12-31T23:59:59.999999999"
        );
        assert_eq!(
            show(Datatype::DatetimeSec, &951_782_400i64.to_le_bytes()),
            "2000-02-29T00:00:00"
        );
        assert_eq!(
            show(Datatype::TimeMs, &45_296_789i64.to_le_bytes()),
            "12:34:56.789"
        );
        assert_eq!(
            show(Datatype::TimeMin, &(-61i64).to_le_bytes()),
            "-01:01:00"
        );
        assert_eq!(show(Datatype::DatetimeNs, &i64::MIN.to_le_bytes()), "NaT");
        assert_eq!(iso_ms(1_795_338_314_188), "2026-11-22T09:05:14.188Z");
        assert_eq!(show(Datatype::TimeSec, &i64::MIN.to_le_bytes()), "NaT");
    }

    #[test]
    fn strings_and_bytes() {
        assert_eq!(show(Datatype::StringUtf8, "héllo".as_bytes()), "héllo");
        assert_eq!(show(Datatype::StringUtf8, b"a\nb\tc\\d"), "a\\nb\\tc\\\\d");
        assert_eq!(show(Datatype::StringAscii, b"x\xffy\x01"), "x\\xffy\\x01");
        assert_eq!(show(Datatype::Char, b"ab\0\0"), "ab\\x00\\x00");
        assert_eq!(show(Datatype::Blob, &[0, 0xab]), "00ab");
        let utf16: Vec<u8> = "hé".encode_utf16().flat_map(|u| u.to_le_bytes()).collect();
        assert_eq!(show(Datatype::StringUtf16, &utf16), "hé");
        let mut csv = Vec::new();
        csv_field(&mut csv, b"a,\"b\"");
        assert_eq!(csv, b"\"a,\"\"b\"\"\"");
    }
}
