//! Enumeration files, `__schema/__enumerations/<path name>` (format 20+;
//! `03-array-schema.md` §8, TileDB `tiledb/sm/array_schema/enumeration.cc`).
//!
//! An attribute with an enumeration stores integer indexes; the enumeration file holds
//! the values they stand for. Each file is one generic tile. Its payload:
//! `u32` enumeration version (only 0 exists, `constants::enumerations_version`), `u32`
//! name length + name, `u32` path-name length + path name (the file's own name),
//! `u8` datatype, `u32` cell_val_num (`u32::MAX` = var), `u8` ordered, `u64` data size +
//! data, and only for var-size values `u64` offsets size + offsets (`u64` byte offsets
//! into the data, one per value). The layout has not changed since enumerations
//! appeared (TileDB 2.17); extending an enumeration writes a new file with a new path
//! name.

use std::collections::HashSet;

use super::datatype::Datatype;
use super::error::{FormatError, Result};
use super::reader::Reader;
use super::schema::VAR_NUM;

/// Newest enumeration version TileDB writes (and reads).
pub const ENUMERATION_VERSION: u32 = 0;

#[derive(Debug, Clone, PartialEq)]
pub struct Enumeration {
    pub version: u32,
    /// The name attributes refer to it by.
    pub name: String,
    /// The file name under `__schema/__enumerations/` (`__<uuid>_<version>`).
    pub path_name: String,
    pub datatype: Datatype,
    /// Elements per value, or [`VAR_NUM`].
    pub cell_val_num: u32,
    /// Whether `<`, `<=`, `>`, `>=` conditions may compare by position.
    pub ordered: bool,
    /// The values, back to back.
    pub data: Vec<u8>,
    /// Var-size only: the byte offset in `data` where each value starts; value `i` ends
    /// where value `i + 1` starts, the last one at the end of `data`. Empty for
    /// fixed-size enumerations.
    pub offsets: Vec<u64>,
}

impl Enumeration {
    /// Parses an enumeration payload and checks it as TileDB does when it loads one
    /// (`Enumeration::validate`, `generate_value_map`).
    pub fn parse(payload: &[u8]) -> Result<Enumeration> {
        let mut r = Reader::new(payload);
        let at = r.offset();
        let version = r.u32("enumeration version")?;
        if version > ENUMERATION_VERSION {
            return Err(FormatError::Invalid {
                field: "enumeration version",
                offset: at,
                reason: format!(
                    "version {version} is newer than {ENUMERATION_VERSION}, the only one TileDB writes"
                ),
            });
        }
        let at = r.offset();
        let name = r.string_u32("enumeration name")?;
        if name.is_empty() {
            return Err(FormatError::Invalid {
                field: "enumeration name",
                offset: at,
                reason: "empty name".into(),
            });
        }
        let at = r.offset();
        let path_name = r.string_u32("enumeration path name")?;
        if path_name.is_empty() || path_name.contains('/') {
            return Err(FormatError::Invalid {
                field: "enumeration path name",
                offset: at,
                reason: format!("{path_name:?} is not a file name"),
            });
        }
        let at = r.offset();
        let datatype = Datatype::parse(r.u8("enumeration datatype")?, "enumeration datatype", at)?;
        let at = r.offset();
        let cell_val_num = r.u32("enumeration cell_val_num")?;
        if cell_val_num == 0 {
            return Err(FormatError::Invalid {
                field: "enumeration cell_val_num",
                offset: at,
                reason: "0 elements per value".into(),
            });
        }
        let ordered = r.bool("enumeration ordered flag")?;
        let data_at = r.offset();
        let data_size = r.u64("enumeration data size")?;
        let data = r.bytes(data_size, "enumeration data")?.to_vec();
        let mut offsets = Vec::new();
        if cell_val_num == VAR_NUM {
            let at = r.offset();
            let offsets_size = r.u64("enumeration offsets size")?;
            if offsets_size % 8 != 0 {
                return Err(FormatError::Invalid {
                    field: "enumeration offsets size",
                    offset: at,
                    reason: format!("{offsets_size} is not a multiple of 8"),
                });
            }
            offsets = r.u64_vec(offsets_size / 8, "enumeration offsets")?;
            check_offsets(&offsets, data_size, at + 8)?;
        } else {
            let cell_size = datatype.size().checked_mul(cell_val_num as u64);
            if cell_size.is_none_or(|c| data_size % c != 0) {
                return Err(FormatError::Invalid {
                    field: "enumeration data size",
                    offset: data_at,
                    reason: format!(
                        "{data_size} bytes is not a whole number of {cell_val_num} × {} values",
                        datatype.name()
                    ),
                });
            }
        }
        if !r.is_empty() {
            return Err(r.invalid(
                "enumeration",
                format!("{} bytes after the values", r.remaining()),
            ));
        }
        let e = Enumeration {
            version,
            name,
            path_name,
            datatype,
            cell_val_num,
            ordered,
            data,
            offsets,
        };
        e.check_unique(data_at)?;
        Ok(e)
    }

    pub fn is_var(&self) -> bool {
        self.cell_val_num == VAR_NUM
    }

    /// Bytes of one fixed-size value.
    fn cell_size(&self) -> u64 {
        self.datatype.size() * self.cell_val_num as u64
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        if self.is_var() {
            self.offsets.len()
        } else {
            // cell_size is non-zero and divides the data: checked by `parse`.
            (self.data.len() as u64)
                .checked_div(self.cell_size())
                .unwrap_or(0) as usize
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes of value `i` (the value an attribute index `i` stands for), or `None`
    /// past the end. Never panics, also on an `Enumeration` built by hand.
    pub fn value(&self, i: usize) -> Option<&[u8]> {
        let (start, end) = if self.is_var() {
            let start = *self.offsets.get(i)?;
            let end = match self.offsets.get(i + 1) {
                Some(&next) => next,
                None => self.data.len() as u64,
            };
            (start, end)
        } else {
            let size = self.cell_size();
            let start = (i as u64).checked_mul(size)?;
            (start, start.checked_add(size)?)
        };
        let start = usize::try_from(start).ok()?;
        let end = usize::try_from(end).ok()?;
        self.data.get(start..end)
    }

    /// Every value, in index order.
    pub fn values(&self) -> impl Iterator<Item = &[u8]> + '_ {
        (0..self.len()).map_while(|i| self.value(i))
    }

    /// TileDB refuses an enumeration holding a value twice ("Invalid duplicated value in
    /// enumeration", `add_value_to_map`).
    fn check_unique(&self, data_at: u64) -> Result<()> {
        let mut seen = HashSet::with_capacity(self.len());
        for (i, v) in self.values().enumerate() {
            if !seen.insert(v) {
                return Err(FormatError::Invalid {
                    field: "enumeration data",
                    offset: data_at,
                    reason: format!("value {i} repeats an earlier value"),
                });
            }
        }
        Ok(())
    }
}

/// Offsets must not decrease and must lie within the data: TileDB only checks the last
/// one against the data size, then computes each length as the difference of
/// neighbours, which a decreasing offset would wrap around. Data with no offsets is
/// refused like TileDB does ("Var sized enumeration values require a non-null offsets
/// pointer"); no data and no offsets is an empty enumeration.
fn check_offsets(offsets: &[u64], data_size: u64, at: u64) -> Result<()> {
    let invalid = |i: usize, reason: String| FormatError::Invalid {
        field: "enumeration offsets",
        offset: at + 8 * i as u64,
        reason,
    };
    if offsets.is_empty() && data_size > 0 {
        return Err(invalid(
            0,
            format!("{data_size} bytes of var-size values but no offsets"),
        ));
    }
    let mut previous = 0;
    for (i, &o) in offsets.iter().enumerate() {
        if o < previous {
            return Err(invalid(
                i,
                format!("offset {o} is below the previous {previous}"),
            ));
        }
        if o > data_size {
            return Err(invalid(
                i,
                format!("offset {o} is past the {data_size} data bytes"),
            ));
        }
        previous = o;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{file_tile_payload, format_testdata, shared_corpus_or_skip};
    use std::path::Path;

    fn payload(
        version: u32,
        name: &str,
        path: &str,
        datatype: u8,
        cell_val_num: u32,
        data: &[u8],
        offsets: Option<&[u64]>,
    ) -> Vec<u8> {
        let mut b = version.to_le_bytes().to_vec();
        b.extend((name.len() as u32).to_le_bytes());
        b.extend(name.as_bytes());
        b.extend((path.len() as u32).to_le_bytes());
        b.extend(path.as_bytes());
        b.push(datatype);
        b.extend(cell_val_num.to_le_bytes());
        b.push(1);
        b.extend((data.len() as u64).to_le_bytes());
        b.extend(data);
        if let Some(offsets) = offsets {
            b.extend((offsets.len() as u64 * 8).to_le_bytes());
            for o in offsets {
                b.extend(o.to_le_bytes());
            }
        }
        b
    }

    fn var_sample() -> Vec<u8> {
        payload(
            0,
            "colors",
            "__a_0",
            12,
            VAR_NUM,
            b"redgreen",
            Some(&[0, 3, 8]),
        )
    }

    fn fixed_sample() -> Vec<u8> {
        let data: Vec<u8> = [1i16, 2, 3, 4]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        payload(0, "pairs", "__b_0", 7, 2, &data, None)
    }

    #[test]
    fn parses_var_size() {
        let e = Enumeration::parse(&var_sample()).unwrap();
        assert_eq!(e.version, 0);
        assert_eq!(e.name, "colors");
        assert_eq!(e.path_name, "__a_0");
        assert_eq!(e.datatype, Datatype::StringUtf8);
        assert!(e.is_var());
        assert!(e.ordered);
        assert_eq!(e.offsets, [0, 3, 8]);
        assert_eq!(e.len(), 3);
        assert_eq!(e.value(0), Some(&b"red"[..]));
        assert_eq!(e.value(1), Some(&b"green"[..]));
        assert_eq!(e.value(2), Some(&b""[..]));
        assert_eq!(e.value(3), None);
        assert_eq!(e.values().count(), 3);
    }

    #[test]
    fn parses_fixed_size() {
        let e = Enumeration::parse(&fixed_sample()).unwrap();
        assert_eq!(
            (e.datatype, e.cell_val_num, e.is_var()),
            (Datatype::Int16, 2, false)
        );
        assert!(e.offsets.is_empty());
        assert_eq!(e.len(), 2);
        assert_eq!(e.value(1), Some(&[3, 0, 4, 0][..]));
        assert_eq!(e.value(2), None);
        assert_eq!(e.value(usize::MAX), None);
    }

    #[test]
    fn empty_enumerations() {
        let e = Enumeration::parse(&payload(0, "e", "__c_0", 12, VAR_NUM, b"", Some(&[]))).unwrap();
        assert!(e.is_empty());
        let e = Enumeration::parse(&payload(0, "e", "__c_0", 0, 1, b"", None)).unwrap();
        assert!(e.is_empty());
        // One empty string.
        let e =
            Enumeration::parse(&payload(0, "e", "__c_0", 12, VAR_NUM, b"", Some(&[0]))).unwrap();
        assert_eq!(e.values().collect::<Vec<_>>(), vec![&b""[..]]);
    }

    #[test]
    fn truncation_at_every_byte_is_an_error() {
        for sample in [var_sample(), fixed_sample()] {
            for cut in 0..sample.len() {
                assert!(Enumeration::parse(&sample[..cut]).is_err(), "cut at {cut}");
            }
            let mut long = sample.clone();
            long.push(0);
            assert!(Enumeration::parse(&long).is_err());
        }
    }

    fn err(bytes: &[u8]) -> String {
        Enumeration::parse(bytes).unwrap_err().to_string()
    }

    #[test]
    fn invalid_enumerations_are_errors() {
        let v = VAR_NUM;
        assert!(err(&payload(1, "e", "__c_0", 12, v, b"", Some(&[]))).contains("newer than 0"));
        assert!(err(&payload(0, "", "__c_0", 12, v, b"", Some(&[]))).contains("empty name"));
        assert!(err(&payload(0, "e", "a/b", 12, v, b"", Some(&[]))).contains("not a file name"));
        assert!(err(&payload(0, "e", "__c_0", 99, v, b"", Some(&[])))
            .contains("unknown datatype id 99"));
        assert!(err(&payload(0, "e", "__c_0", 0, 0, b"", None)).contains("0 elements"));
        assert!(err(&payload(0, "e", "__c_0", 0, 1, b"abc", None))
            .contains("not a whole number of 1 × INT32 values"));
        assert!(
            err(&payload(0, "e", "__c_0", 0, u32::MAX - 1, b"abc", None))
                .contains("not a whole number")
        );
        // Offsets: decreasing, past the data, missing, not a multiple of 8.
        assert!(
            err(&payload(0, "e", "__c_0", 12, v, b"abc", Some(&[0, 2, 1])))
                .contains("offset 1 is below the previous 2")
        );
        assert!(err(&payload(0, "e", "__c_0", 12, v, b"abc", Some(&[0, 4])))
            .contains("offset 4 is past the 3 data bytes"));
        assert!(err(&payload(0, "e", "__c_0", 12, v, b"abc", Some(&[]))).contains("but no offsets"));
        let mut b = payload(0, "e", "__c_0", 12, v, b"", None);
        b.extend(3u64.to_le_bytes());
        b.extend([0; 3]);
        assert!(err(&b).contains("3 is not a multiple of 8"));
        let mut b = payload(0, "e", "__c_0", 12, v, b"", None);
        b.extend(u64::MAX.to_le_bytes());
        b.extend([0; 8]);
        assert!(err(&b).contains("not a multiple of 8"));
        let mut b = payload(0, "e", "__c_0", 12, v, b"", None);
        b.extend((u64::MAX - 7).to_le_bytes());
        b.extend([0; 8]);
        assert!(
            err(&b).starts_with("truncated enumeration offsets"),
            "{}",
            err(&b)
        );
        // Duplicates.
        assert!(
            err(&payload(0, "e", "__c_0", 12, v, b"aba", Some(&[0, 1, 2])))
                .contains("value 2 repeats")
        );
    }

    #[test]
    fn value_never_panics_on_hand_built_enumerations() {
        let e = Enumeration {
            version: 0,
            name: "e".into(),
            path_name: "p".into(),
            datatype: Datatype::Int64,
            cell_val_num: VAR_NUM,
            ordered: false,
            data: vec![1, 2, 3],
            offsets: vec![2, 1, 9, u64::MAX],
        };
        assert_eq!(e.value(0), None);
        assert_eq!(e.value(2), None);
        assert_eq!(e.value(3), None);
        assert_eq!(e.values().count(), 0);
        let fixed = Enumeration {
            cell_val_num: u32::MAX - 1,
            offsets: vec![],
            ..e
        };
        assert_eq!(fixed.value(usize::MAX), None);
        let _ = fixed.len();
    }

    /// Real files written by TileDB-Py (`testdata/generate.py`): `colors` (var UTF-8,
    /// with an empty string), the same extended by `cyan` (a new file), `levels` (INT16,
    /// ordered) and `empty`.
    #[test]
    fn real_enumerations() {
        let dir = format_testdata("enumerations");
        let mut found = Vec::new();
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let e = Enumeration::parse(&file_tile_payload(&path)).unwrap();
            assert_eq!(e.path_name, path.file_name().unwrap().to_string_lossy());
            let values: Vec<String> = match e.datatype {
                Datatype::StringUtf8 => e
                    .values()
                    .map(|v| String::from_utf8(v.to_vec()).unwrap())
                    .collect(),
                Datatype::Int16 => e
                    .values()
                    .map(|v| i16::from_le_bytes(v.try_into().unwrap()).to_string())
                    .collect(),
                other => panic!("unexpected {other:?}"),
            };
            found.push((e.name.clone(), e.ordered, e.is_var(), values.join(",")));
        }
        found.sort();
        assert_eq!(
            found,
            vec![
                ("colors".into(), false, true, "red,green,,blue".into()),
                ("colors".into(), false, true, "red,green,,blue,cyan".into()),
                ("empty".into(), false, true, "".into()),
                ("levels".into(), true, false, "10,-20,30".into()),
            ]
        );
    }

    /// Every enumeration of the repository's fixtures and of the shared corpus (which
    /// had none when this was written): the fixtures make sure some are parsed.
    #[test]
    fn every_enumeration_of_the_fixtures_and_the_corpus_parses() {
        let mut stack = vec![Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")];
        stack.extend(shared_corpus_or_skip());
        let mut count = 0;
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    stack.push(path);
                } else if path.parent().and_then(|p| p.file_name())
                    == Some("__enumerations".as_ref())
                {
                    Enumeration::parse(&file_tile_payload(&path))
                        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                    count += 1;
                }
            }
        }
        assert!(count > 0, "no enumeration found to parse");
        println!("parsed {count} enumerations");
    }
}
