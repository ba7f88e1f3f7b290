//! PLAIN values: TileDB's bytes of one value as Parquet writes them in a page, in a
//! dictionary page and in statistics.

use super::hybrid;
use super::kind::{Encode, Kind, Physical};
use crate::format::datatype::decode_int;
use crate::format::Datatype;

/// Bytes of `count` PLAIN values of `kind`; `bytes` is the sum of their lengths where
/// they are var-size. None on overflow.
pub fn len(kind: &Kind, count: u64, bytes: u64) -> Option<u64> {
    match kind.encode {
        Encode::Same(k) => count.checked_mul(k),
        Encode::Widen(_) => count.checked_mul(4),
        Encode::Bool => Some(count.div_ceil(8)),
        Encode::Bytes => count.checked_mul(4)?.checked_add(bytes),
    }
}

/// PLAIN values, written one by one.
pub struct Values {
    kind: Kind,
    out: Vec<u8>,
    /// Booleans, bit-packed at the end.
    bits: Vec<u32>,
}

impl Values {
    pub fn new(kind: Kind, capacity: usize) -> Values {
        Values {
            kind,
            out: Vec::with_capacity(capacity),
            bits: Vec::new(),
        }
    }

    /// Appends TileDB's bytes of one value; the reason where they cannot be written.
    pub fn push(&mut self, v: &[u8]) -> Result<(), String> {
        let k = &self.kind;
        if k.encode != Encode::Bytes && v.len() as u64 != k.size {
            return Err(format!("a value of {} bytes, not {}", v.len(), k.size));
        }
        match k.encode {
            Encode::Same(_) => self.out.extend_from_slice(v),
            Encode::Widen(ek) => {
                let t = match (ek.size(), ek.is_signed()) {
                    (1, true) => Datatype::Int8,
                    (1, false) => Datatype::UInt8,
                    (2, true) => Datatype::Int16,
                    _ => Datatype::UInt16,
                };
                let x = decode_int(v, t).and_then(|x| i32::try_from(x).ok());
                let x = x.ok_or_else(|| "a value that is no small integer".to_string())?;
                self.out.extend_from_slice(&x.to_le_bytes());
            }
            Encode::Bool => self.bits.push(u32::from(v.iter().any(|&b| b != 0))),
            Encode::Bytes => {
                let n =
                    u32::try_from(v.len()).map_err(|_| format!("a value of {} bytes", v.len()))?;
                self.out.extend_from_slice(&n.to_le_bytes());
                self.out.extend_from_slice(v);
            }
        }
        Ok(())
    }

    pub fn finish(mut self) -> Vec<u8> {
        if self.kind.encode == Encode::Bool {
            hybrid::pack(&self.bits, 1, &mut self.out);
        }
        self.out
    }
}

/// A statistics bound: TileDB's bytes of one value as Parquet's PLAIN of the physical
/// type (a byte array without its length, a boolean as one byte). None where it is
/// not one value of the type, or a NaN (which orders nowhere). A zero float bound is
/// written as the spec asks: -0.0 as a minimum, +0.0 as a maximum, so either sign of
/// zero in the data lies within.
pub fn bound(kind: &Kind, v: &[u8], is_min: bool) -> Option<Vec<u8>> {
    if kind.encode != Encode::Bytes && v.len() as u64 != kind.size {
        return None;
    }
    match (kind.encode, kind.physical) {
        (Encode::Bool, _) => Some(vec![u8::from(v.iter().any(|&b| b != 0))]),
        (Encode::Bytes, _) => Some(v.to_vec()),
        (_, Physical::Float) => {
            let x = f32::from_le_bytes(v.try_into().ok()?);
            if x.is_nan() {
                return None;
            }
            let zero = if is_min { -0.0 } else { 0.0 };
            let x = if x == 0.0 { zero } else { x };
            Some(x.to_le_bytes().to_vec())
        }
        (_, Physical::Double) => {
            let x = f64::from_le_bytes(v.try_into().ok()?);
            if x.is_nan() {
                return None;
            }
            let zero = if is_min { -0.0 } else { 0.0 };
            let x = if x == 0.0 { zero } else { x };
            Some(x.to_le_bytes().to_vec())
        }
        _ => {
            let mut values = Values::new(*kind, 8);
            values.push(v).ok()?;
            Some(values.finish())
        }
    }
}
