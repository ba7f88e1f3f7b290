//! HDF5 datatypes and their Datatype message (IV.A.2.d).

/// An HDF5 datatype (IV.A.2.d, "Datatype Message").
#[derive(Debug, Clone, PartialEq)]
pub enum H5Type {
    /// Class 0, fixed-point: little-endian, `size` bytes.
    Int { size: u32, signed: bool },
    /// Class 1, IEEE floating point, little-endian: 4 or 8 bytes.
    Float { size: u32 },
    /// Class 3, a fixed-length string of `len` bytes, NUL-padded (`nul_term`:
    /// NUL-terminated), ASCII or UTF-8.
    Str {
        len: u32,
        utf8: bool,
        nul_term: bool,
    },
    /// Class 7, an object reference (an object header's address).
    ObjRef,
    /// Class 9, a variable-length sequence of a base type (its elements live in a global
    /// heap).
    Vlen(Box<H5Type>),
    /// Class 6, members at byte offsets within `size` bytes.
    Compound {
        size: u32,
        members: Vec<(String, u32, H5Type)>,
    },
}

impl H5Type {
    /// Bytes per element in the file.
    pub fn size(&self) -> u32 {
        match self {
            H5Type::Int { size, .. } | H5Type::Float { size } => *size,
            H5Type::Str { len, .. } => *len,
            H5Type::ObjRef => 8,
            // Sequence length (4), then a global heap ID: collection address and index.
            H5Type::Vlen(_) => 16,
            H5Type::Compound { size, .. } => *size,
        }
    }

    /// The Datatype message's bytes: class and version, class bit field, size, properties.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let head = |out: &mut Vec<u8>, class: u8, version: u8, bits: [u8; 3], size: u32| {
            out.push(class | version << 4);
            out.extend_from_slice(&bits);
            out.extend_from_slice(&size.to_le_bytes());
        };
        match self {
            H5Type::Int { size, signed } => {
                // Bit 0: byte order (0 little-endian); bit 3: signed.
                head(out, 0, 1, [u8::from(*signed) << 3, 0, 0], *size);
                out.extend_from_slice(&0u16.to_le_bytes()); // bit offset
                out.extend_from_slice(&(*size as u16 * 8).to_le_bytes()); // bit precision
            }
            H5Type::Float { size } => {
                // (sign location, exponent location, exponent size, mantissa size, bias)
                let (sign, eloc, esize, msize, bias): (u8, u8, u8, u8, u32) = match size {
                    4 => (31, 23, 8, 23, 127),
                    _ => (63, 52, 11, 52, 1023),
                };
                // Bits 4-5 of the first byte: mantissa normalization 2 (msb implied).
                head(out, 1, 1, [0x20, sign, 0], *size);
                out.extend_from_slice(&0u16.to_le_bytes());
                out.extend_from_slice(&(*size as u16 * 8).to_le_bytes());
                out.extend_from_slice(&[eloc, esize, 0, msize]);
                out.extend_from_slice(&bias.to_le_bytes());
            }
            H5Type::Str {
                len,
                utf8,
                nul_term,
            } => {
                // Bits 0-3: padding (0 NUL-terminated, 1 NUL-padded); bits 4-7: charset.
                let pad = if *nul_term { 0 } else { 1 };
                head(out, 3, 1, [pad | u8::from(*utf8) << 4, 0, 0], *len);
            }
            H5Type::ObjRef => head(out, 7, 1, [0, 0, 0], 8),
            H5Type::Vlen(base) => {
                // Bits 0-3: type 0, a sequence.
                head(out, 9, 1, [0, 0, 0], 16);
                base.encode(out);
            }
            H5Type::Compound { size, members } => {
                let n = members.len() as u16;
                head(out, 6, 3, [n as u8, (n >> 8) as u8, 0], *size);
                // Version 3: names unpadded, offsets in as few bytes as the size needs.
                let width = offset_width(*size);
                for (name, offset, t) in members {
                    out.extend_from_slice(name.as_bytes());
                    out.push(0);
                    out.extend_from_slice(&offset.to_le_bytes()[..width]);
                    t.encode(out);
                }
            }
        }
    }
}

/// Bytes of a compound member's offset in a version-3 compound datatype: as libhdf5's
/// `H5VM_limit_enc_size(size)`, `log2(size) / 8 + 1`.
fn offset_width(size: u32) -> usize {
    let log2 = 31 - size.max(1).leading_zeros();
    (log2 / 8 + 1) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datatypes_encode_as_the_spec_lays_them_out() {
        let mut out = Vec::new();
        H5Type::Int {
            size: 2,
            signed: true,
        }
        .encode(&mut out);
        assert_eq!(out, [0x10, 0x08, 0, 0, 2, 0, 0, 0, 0, 0, 16, 0]);
        out.clear();
        H5Type::Float { size: 8 }.encode(&mut out);
        assert_eq!(
            out,
            [0x11, 0x20, 63, 0, 8, 0, 0, 0, 0, 0, 64, 0, 52, 11, 0, 52, 0xff, 3, 0, 0]
        );
        out.clear();
        H5Type::Str {
            len: 5,
            utf8: true,
            nul_term: false,
        }
        .encode(&mut out);
        assert_eq!(out, [0x13, 0x11, 0, 0, 5, 0, 0, 0]);
        assert_eq!(offset_width(12), 1);
        assert_eq!(offset_width(256), 2);
    }
}
