//! The netCDF classic header writer and the layout of a file's data: pure code over
//! byte slices, no tree access, so the layout is checked without a mount (see
//! `docs/netcdf.md`).
//!
//! Written from Unidata's "NetCDF Classic Format Specification" ("The Format in
//! Detail", "Note on vsize", "Notes on Computing File Offsets", "The 64-bit Offset
//! Format") and PnetCDF's "CDF-5 file format specification". Only fixed-size
//! variables are written, except in a file whose single dimension has no cells (a
//! sparse state with none): that dimension is then the record dimension with no
//! records, since a fixed dimension of length 0 cannot be written (`dim_length` 0
//! names the record dimension). Every variable's data is contiguous at its `begin`,
//! in the order of the header, padded to 4 bytes; the header is followed at once by
//! the first variable's data (no alignment gap: readers take `begin` as written).

use crate::error::{Error, Place, Result};

/// The two versions written: CDF-2 (64-bit offsets; what most readers take), and
/// CDF-5 (64-bit counts and the unsigned and 64-bit integer types; netCDF-C 4.4+,
/// not scipy) only where a variable needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    Cdf2,
    Cdf5,
}

impl Version {
    pub fn name(self) -> &'static str {
        match self {
            Version::Cdf2 => "CDF-2",
            Version::Cdf5 => "CDF-5",
        }
    }

    /// Bytes of a `NON_NEG` (counts, lengths, dimension ids, `vsize`).
    fn non_neg(self) -> usize {
        match self {
            Version::Cdf2 => 4,
            Version::Cdf5 => 8,
        }
    }
}

/// A netCDF external type (`nc_type`); 7 to 11 only in CDF-5.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NcType {
    Byte = 1,
    Char = 2,
    Short = 3,
    Int = 4,
    Float = 5,
    Double = 6,
    UByte = 7,
    UShort = 8,
    UInt = 9,
    Int64 = 10,
    UInt64 = 11,
}

impl NcType {
    /// Bytes per value (`extsize`).
    pub fn size(self) -> u64 {
        match self {
            NcType::Byte | NcType::Char | NcType::UByte => 1,
            NcType::Short | NcType::UShort => 2,
            NcType::Int | NcType::Float | NcType::UInt => 4,
            NcType::Double | NcType::Int64 | NcType::UInt64 => 8,
        }
    }

    /// Whether only CDF-5 has the type.
    pub fn cdf5_only(self) -> bool {
        (self as u32) >= 7
    }

    /// The CDL name (what `ncdump` prints).
    pub fn name(self) -> &'static str {
        match self {
            NcType::Byte => "byte",
            NcType::Char => "char",
            NcType::Short => "short",
            NcType::Int => "int",
            NcType::Float => "float",
            NcType::Double => "double",
            NcType::UByte => "ubyte",
            NcType::UShort => "ushort",
            NcType::UInt => "uint",
            NcType::Int64 => "int64",
            NcType::UInt64 => "uint64",
        }
    }
}

/// A dimension. Length 0 is the record dimension (at most one, see the module doc).
#[derive(Debug, Clone, PartialEq)]
pub struct Dim {
    pub name: String,
    pub len: u64,
}

/// An attribute: `nelems` values of `ty`, already big-endian (text: its bytes).
#[derive(Debug, Clone, PartialEq)]
pub struct Attr {
    pub name: String,
    pub ty: NcType,
    pub values: Vec<u8>,
}

impl Attr {
    pub fn text(name: &str, text: &str) -> Attr {
        Attr {
            name: name.to_string(),
            ty: NcType::Char,
            values: text.as_bytes().to_vec(),
        }
    }

    /// Values given little-endian (TileDB's byte order), of `ty`'s width: swapped.
    pub fn from_le(name: &str, ty: NcType, le: &[u8]) -> Attr {
        let mut values = le.to_vec();
        // Big-endian: each value's bytes reversed (attributes are a few values, so
        // the plain loop; the reader swaps the data in bulk).
        let width = (ty.size() as usize).max(1);
        values.chunks_exact_mut(width).for_each(<[u8]>::reverse);
        Attr {
            name: name.to_string(),
            ty,
            values,
        }
    }

    pub fn double(name: &str, v: f64) -> Attr {
        Attr {
            name: name.to_string(),
            ty: NcType::Double,
            values: v.to_be_bytes().to_vec(),
        }
    }

    fn nelems(&self) -> u64 {
        self.values.len() as u64 / self.ty.size()
    }
}

/// A variable: its dimensions (indices into the file's), attributes and type.
#[derive(Debug, Clone, PartialEq)]
pub struct Var {
    pub name: String,
    pub dims: Vec<usize>,
    pub attrs: Vec<Attr>,
    pub ty: NcType,
    /// One value, big-endian: what pads the data to 4 bytes (the spec pads data with
    /// the variable's fill value). Empty: zeros.
    pub pad: Vec<u8>,
}

/// A whole file's description.
#[derive(Debug, Clone, PartialEq)]
pub struct NcFile {
    pub version: Version,
    pub dims: Vec<Dim>,
    pub attrs: Vec<Attr>,
    pub vars: Vec<Var>,
}

/// What bytes `[offset, offset + len)` of a file are made of, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// Bytes `[from, to)` of the header.
    Header { from: u64, to: u64 },
    /// Bytes `[from, to)` of variable `var`'s data (big-endian values, row-major).
    Data { var: usize, from: u64, to: u64 },
    /// `n` bytes of variable `var`'s padding, starting `at` bytes into it.
    Pad { var: usize, at: u64, n: u64 },
}

fn too_big(what: &str) -> Error {
    Error::corrupt(
        Place::file("array.nc"),
        format!("{what}: too large for a netCDF file"),
    )
}

/// Whether netCDF allows `name` ("Note on names"): a first character that is a letter,
/// a digit, `_` or a multi-byte UTF-8 character; no control character, no `/`, no DEL;
/// no trailing space. (NFC normalisation is not checked: TileDB names are kept as
/// they are.)
pub fn valid_name(name: &str) -> bool {
    let Some(first) = name.chars().next() else {
        return false;
    };
    if !(first.is_ascii_alphanumeric() || first == '_' || !first.is_ascii()) {
        return false;
    }
    !name.ends_with(' ') && !name.chars().any(|c| c < ' ' || c == '/' || c == '\x7f')
}

/// Rounds up to a multiple of 4.
fn pad4(n: u64) -> Option<u64> {
    n.checked_add(3).map(|v| v & !3)
}

impl NcFile {
    /// The record dimension, if one (a dimension of length 0).
    fn record_dim(&self) -> Option<usize> {
        self.dims.iter().position(|d| d.len == 0)
    }

    fn is_record(&self, v: &Var) -> bool {
        self.record_dim()
            .is_some_and(|r| v.dims.first() == Some(&r))
    }

    /// Bytes of variable `i`'s data (no padding): the product of its dimensions'
    /// lengths (the record dimension left out) times the type's size.
    pub fn data_len(&self, i: usize) -> Result<u64> {
        let v = &self.vars[i];
        let record = self.is_record(v);
        let mut n = v.ty.size();
        for (k, &d) in v.dims.iter().enumerate() {
            if record && k == 0 {
                continue;
            }
            let len = self.dims.get(d).map(|d| d.len).ok_or_else(|| {
                Error::corrupt(
                    Place::file("array.nc"),
                    format!("variable {}: no dimension {d}", v.name),
                )
            })?;
            n = n.checked_mul(len).ok_or_else(|| too_big(&v.name))?;
        }
        Ok(n)
    }

    /// Variable `i`'s `vsize` as the header holds it: its data rounded up to 4 bytes
    /// (in CDF-2 2^32 - 1 where that does not fit 32 bits: "Note on vsize").
    fn vsize(&self, i: usize) -> Result<u64> {
        pad4(self.data_len(i)?).ok_or_else(|| too_big(&self.vars[i].name))
    }

    /// The header, with every `begin` computed.
    pub fn header(&self) -> Result<Vec<u8>> {
        let len = self.encode(&vec![0; self.vars.len()])?.len() as u64;
        let begins = self.begins(len)?;
        self.encode(&begins)
    }

    /// Where each variable's data starts, for a header of `header_len` bytes: the
    /// fixed-size variables one after the other, then the record variables (whose
    /// `begin` is their place in the first record).
    pub fn begins(&self, header_len: u64) -> Result<Vec<u64>> {
        let mut begins = vec![0; self.vars.len()];
        let mut at = header_len;
        for record in [false, true] {
            for (i, v) in self.vars.iter().enumerate() {
                if self.is_record(v) != record {
                    continue;
                }
                begins[i] = at;
                at = at
                    .checked_add(self.vsize(i)?)
                    .ok_or_else(|| too_big(&v.name))?;
            }
        }
        Ok(begins)
    }

    /// The file's size: the header and every fixed-size variable's padded data
    /// (records: none are written).
    pub fn size(&self, header_len: u64) -> Result<u64> {
        let mut at = header_len;
        for (i, v) in self.vars.iter().enumerate() {
            if !self.is_record(v) {
                at = at
                    .checked_add(self.vsize(i)?)
                    .ok_or_else(|| too_big(&v.name))?;
            }
        }
        Ok(at)
    }

    /// What bytes `[offset, offset + len)` are made of (clipped to the file's size).
    pub fn pieces(&self, header_len: u64, offset: u64, len: u64) -> Result<Vec<Piece>> {
        let end = offset.saturating_add(len);
        let mut out = Vec::new();
        if offset < header_len {
            out.push(Piece::Header {
                from: offset,
                to: end.min(header_len),
            });
        }
        let begins = self.begins(header_len)?;
        for (i, v) in self.vars.iter().enumerate() {
            if self.is_record(v) {
                continue;
            }
            let data = self.data_len(i)?;
            let (b, d_end, p_end) = (begins[i], begins[i] + data, begins[i] + self.vsize(i)?);
            if offset < d_end && end > b {
                out.push(Piece::Data {
                    var: i,
                    from: offset.max(b) - b,
                    to: end.min(d_end) - b,
                });
            }
            if offset < p_end && end > d_end {
                let from = offset.max(d_end);
                out.push(Piece::Pad {
                    var: i,
                    at: from - d_end,
                    n: end.min(p_end) - from,
                });
            }
        }
        Ok(out)
    }

    /// The header bytes with these `begin`s.
    fn encode(&self, begins: &[u64]) -> Result<Vec<u8>> {
        let mut w = Writer {
            out: Vec::new(),
            version: self.version,
        };
        w.out.extend_from_slice(match self.version {
            Version::Cdf2 => b"CDF\x02",
            Version::Cdf5 => b"CDF\x05",
        });
        // numrecs: no records are written (fixed-size variables only, or a record
        // dimension with no records).
        w.non_neg(0, "numrecs")?;
        if self.dims.is_empty() {
            w.absent();
        } else {
            w.tag(0x0A);
            w.non_neg(self.dims.len() as u64, "dimensions")?;
            for d in &self.dims {
                w.name(&d.name)?;
                w.non_neg(d.len, &d.name)?;
            }
        }
        w.attrs(&self.attrs)?;
        if self.vars.is_empty() {
            w.absent();
        } else {
            w.tag(0x0B);
            w.non_neg(self.vars.len() as u64, "variables")?;
            for (i, v) in self.vars.iter().enumerate() {
                if v.ty.cdf5_only() && self.version != Version::Cdf5 {
                    return Err(Error::corrupt(
                        Place::file("array.nc"),
                        format!("variable {}: type {} needs CDF-5", v.name, v.ty.name()),
                    ));
                }
                w.name(&v.name)?;
                w.non_neg(v.dims.len() as u64, &v.name)?;
                for &d in &v.dims {
                    w.non_neg(d as u64, &v.name)?;
                }
                w.attrs(&v.attrs)?;
                w.out.extend_from_slice(&(v.ty as u32).to_be_bytes());
                let vsize = self.vsize(i)?;
                match self.version {
                    Version::Cdf2 => {
                        let v32 = u32::try_from(vsize).unwrap_or(u32::MAX);
                        w.out.extend_from_slice(&v32.to_be_bytes());
                    }
                    Version::Cdf5 => w.non_neg(vsize, &v.name)?,
                }
                // begin: a 64-bit OFFSET in both versions.
                w.out
                    .extend_from_slice(&begins.get(i).copied().unwrap_or(0).to_be_bytes());
            }
        }
        Ok(w.out)
    }

    /// CDF-2 limits ("The 64-bit Offset Format"): dimension lengths and counts are
    /// 32-bit signed; every fixed-size variable but the last must fit in 2^32 - 4
    /// bytes. `None`: the file fits in CDF-2; else why it needs CDF-5.
    pub fn needs_cdf5(&self) -> Result<Option<String>> {
        if let Some(v) = self.vars.iter().find(|v| v.ty.cdf5_only()) {
            return Ok(Some(format!("{} is {}", v.name, v.ty.name())));
        }
        if let Some(d) = self.dims.iter().find(|d| d.len > i32::MAX as u64) {
            return Ok(Some(format!("dimension {} has {} cells", d.name, d.len)));
        }
        let fixed: Vec<usize> = (0..self.vars.len())
            .filter(|&i| !self.is_record(&self.vars[i]))
            .collect();
        for (k, &i) in fixed.iter().enumerate() {
            if k + 1 < fixed.len() && self.data_len(i)? > (u32::MAX - 3) as u64 {
                return Ok(Some(format!("{} holds more than 4 GiB", self.vars[i].name)));
            }
        }
        Ok(None)
    }
}

struct Writer {
    out: Vec<u8>,
    version: Version,
}

impl Writer {
    fn tag(&mut self, tag: u32) {
        self.out.extend_from_slice(&tag.to_be_bytes());
    }

    /// ABSENT: ZERO ZERO (CDF-5: ZERO ZERO64).
    fn absent(&mut self) {
        self.tag(0);
        self.out
            .extend(std::iter::repeat_n(0, self.version.non_neg()));
    }

    fn non_neg(&mut self, n: u64, what: &str) -> Result<()> {
        match self.version {
            Version::Cdf2 => {
                let n = i32::try_from(n).map_err(|_| too_big(what))?;
                self.out.extend_from_slice(&n.to_be_bytes());
            }
            Version::Cdf5 => {
                let n = i64::try_from(n).map_err(|_| too_big(what))?;
                self.out.extend_from_slice(&n.to_be_bytes());
            }
        }
        Ok(())
    }

    fn padded(&mut self, bytes: &[u8]) {
        self.out.extend_from_slice(bytes);
        let pad = (4 - bytes.len() % 4) % 4;
        self.out.extend(std::iter::repeat_n(0, pad));
    }

    fn name(&mut self, name: &str) -> Result<()> {
        self.non_neg(name.len() as u64, name)?;
        self.padded(name.as_bytes());
        Ok(())
    }

    fn attrs(&mut self, attrs: &[Attr]) -> Result<()> {
        if attrs.is_empty() {
            self.absent();
            return Ok(());
        }
        self.tag(0x0C);
        self.non_neg(attrs.len() as u64, "attributes")?;
        for a in attrs {
            self.name(&a.name)?;
            self.tag(a.ty as u32);
            self.non_neg(a.nelems(), &a.name)?;
            self.padded(&a.values);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The spec's own example ("Notes on Computing File Offsets", `tiny`), as CDF-2:
    /// `short vx(dim)`, dim = 5; the classic file is 92 bytes, CDF-2 adds 4 to `begin`.
    #[test]
    fn the_spec_example_byte_by_byte() {
        let f = NcFile {
            version: Version::Cdf2,
            dims: vec![Dim {
                name: "dim".into(),
                len: 5,
            }],
            attrs: vec![],
            vars: vec![Var {
                name: "vx".into(),
                dims: vec![0],
                attrs: vec![],
                ty: NcType::Short,
                pad: vec![0x80, 0x01],
            }],
        };
        let h = f.header().unwrap();
        let mut want = Vec::new();
        want.extend_from_slice(b"CDF\x02");
        want.extend_from_slice(&[0, 0, 0, 0]); // numrecs
        want.extend_from_slice(&[0, 0, 0, 0x0A, 0, 0, 0, 1]); // NC_DIMENSION, 1
        want.extend_from_slice(&[0, 0, 0, 3, b'd', b'i', b'm', 0, 0, 0, 0, 5]);
        want.extend_from_slice(&[0; 8]); // no global attributes (ABSENT)
        want.extend_from_slice(&[0, 0, 0, 0x0B, 0, 0, 0, 1]); // NC_VARIABLE, 1
        want.extend_from_slice(&[0, 0, 0, 2, b'v', b'x', 0, 0]);
        want.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0]); // 1 dimension, id 0
        want.extend_from_slice(&[0; 8]); // no attributes
        want.extend_from_slice(&[0, 0, 0, 3, 0, 0, 0, 12]); // NC_SHORT, vsize 12
        want.extend_from_slice(&84u64.to_be_bytes()); // begin: right after the header
        assert_eq!(h, want);
        assert_eq!(h.len(), 84);
        assert_eq!(f.size(84).unwrap(), 96);
        assert_eq!(
            f.pieces(84, 80, 100).unwrap(),
            vec![
                Piece::Header { from: 80, to: 84 },
                Piece::Data {
                    var: 0,
                    from: 0,
                    to: 10
                },
                Piece::Pad {
                    var: 0,
                    at: 0,
                    n: 2
                },
            ]
        );
        assert_eq!(f.needs_cdf5().unwrap(), None);
    }

    /// CDF-5: 64-bit counts and lengths, ZERO ZERO64 for an absent list, the 64-bit
    /// types; attributes padded to 4 bytes.
    #[test]
    fn cdf5_counts_are_64_bit() {
        let f = NcFile {
            version: Version::Cdf5,
            dims: vec![Dim {
                name: "x".into(),
                len: 2,
            }],
            attrs: vec![Attr::text("t", "abcde")],
            vars: vec![Var {
                name: "v".into(),
                dims: vec![0],
                attrs: vec![],
                ty: NcType::Int64,
                pad: vec![],
            }],
        };
        let h = f.header().unwrap();
        let be = |n: u64| n.to_be_bytes().to_vec();
        let mut want = b"CDF\x05".to_vec();
        want.extend(be(0)); // numrecs
        want.extend([0, 0, 0, 0x0A]);
        want.extend(be(1));
        want.extend(be(1));
        want.extend(b"x\0\0\0");
        want.extend(be(2));
        want.extend([0, 0, 0, 0x0C]);
        want.extend(be(1));
        want.extend(be(1));
        want.extend(b"t\0\0\0");
        want.extend([0, 0, 0, 2]);
        want.extend(be(5));
        want.extend(b"abcde\0\0\0");
        want.extend([0, 0, 0, 0x0B]);
        want.extend(be(1));
        want.extend(be(1));
        want.extend(b"v\0\0\0");
        want.extend(be(1));
        want.extend(be(0));
        want.extend([0, 0, 0, 0]);
        want.extend(be(0)); // ABSENT attributes: ZERO ZERO64
        want.extend([0, 0, 0, 10]);
        want.extend(be(16)); // vsize
        let len = want.len() as u64 + 8;
        want.extend(be(len));
        assert_eq!(h, want);
        assert_eq!(f.size(len).unwrap(), len + 16);
        assert!(f.needs_cdf5().unwrap().is_some());
        let two = NcFile {
            version: Version::Cdf2,
            ..f
        };
        assert!(two.header().is_err(), "int64 in CDF-2");
    }

    /// Several variables follow each other at their padded sizes; a record variable
    /// (no records) takes no bytes.
    #[test]
    fn begins_follow_padded_sizes() {
        let var = |name: &str, dims: Vec<usize>, ty| Var {
            name: name.into(),
            dims,
            attrs: vec![],
            ty,
            pad: vec![],
        };
        let f = NcFile {
            version: Version::Cdf2,
            dims: vec![
                Dim {
                    name: "a".into(),
                    len: 3,
                },
                Dim {
                    name: "b".into(),
                    len: 0,
                },
            ],
            attrs: vec![],
            vars: vec![
                var("x", vec![0], NcType::Byte),
                var("r", vec![1], NcType::Double),
                var("y", vec![0], NcType::Double),
            ],
        };
        let begins = f.begins(100).unwrap();
        assert_eq!(begins, vec![100, 128, 104]);
        assert_eq!(f.size(100).unwrap(), 128);
        assert_eq!(
            f.pieces(100, 103, 3).unwrap(),
            vec![
                Piece::Pad {
                    var: 0,
                    at: 0,
                    n: 1
                },
                Piece::Data {
                    var: 2,
                    from: 0,
                    to: 2
                }
            ]
        );
        assert!(f.pieces(100, 128, 10).unwrap().is_empty());
    }

    #[test]
    fn names_netcdf_forbids() {
        for ok in ["a", "_x", "1b", "é", "a b", "a.b-c+d@"] {
            assert!(valid_name(ok), "{ok}");
        }
        for bad in ["", " a", "a/b", "a ", ".a", "a\u{1}", "-x"] {
            assert!(!valid_name(bad), "{bad:?}");
        }
    }
}
