//! `filo_fragment.json`, the manifest of a Filo fragment directory (FORMAT.md §9.3).
//!
//! Filo has no container of its own, and its chunks do not record their column types,
//! so fragfs defines a directory of one chunk file per column plus this manifest:
//!
//! ```json
//! {"format": "filo", "format_version": "velvia-filo-0.3", "num_rows": 6,
//!  "columns": [{"name": "id", "type": "int", "file": "id.filo"}, ...]}
//! ```
//!
//! `format` must be `"filo"`; `format_version` defaults to `velvia-filo-0.3`, and a
//! column may override it with its own `format_version`. Unknown keys are ignored so a
//! later version can add some. File names are relative paths inside the directory; the
//! parser rejects absolute paths and `..` so a manifest cannot point outside it.

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::column::DecodedColumn;
use super::column_type::ColumnType;
use super::decode::decode_vector_with;
use super::error::{FiloError, Result};
use super::options::{DecodeOptions, FormatVersion};

/// The manifest's file name inside a fragment directory.
pub const MANIFEST_FILE: &str = "filo_fragment.json";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    pub format_version: FormatVersion,
    /// Rows of every column.
    pub num_rows: u64,
    pub columns: Vec<ManifestColumn>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestColumn {
    pub name: String,
    pub column_type: ColumnType,
    /// Path of the chunk file, relative to the fragment directory.
    pub file: String,
    /// The column's own `format_version`, or the fragment's.
    pub format_version: FormatVersion,
}

impl ManifestColumn {
    /// Options to decode this column's chunk with.
    pub fn decode_options(&self) -> DecodeOptions {
        DecodeOptions {
            version: self.format_version,
            ..DecodeOptions::default()
        }
    }
}

impl Manifest {
    /// Decodes the chunk of `column` and checks it has `num_rows` rows.
    pub fn decode_column(&self, column: &ManifestColumn, bytes: &[u8]) -> Result<DecodedColumn> {
        let decoded = decode_vector_with(bytes, column.column_type, &column.decode_options())?;
        self.check_rows(column, decoded.length)?;
        Ok(decoded)
    }

    /// Every column has the fragment's `num_rows` rows.
    pub fn check_rows(&self, column: &ManifestColumn, rows: u64) -> Result<()> {
        if rows != self.num_rows {
            return Err(FiloError::RowCount {
                column: column.name.clone(),
                found: rows,
                expected: self.num_rows,
            });
        }
        Ok(())
    }
}

/// Parses `filo_fragment.json`.
pub fn parse_manifest(json: &[u8]) -> Result<Manifest> {
    let value: Value =
        serde_json::from_slice(json).map_err(|e| err("", format!("not valid JSON: {e}")))?;
    let top = value
        .as_object()
        .ok_or_else(|| err("", "expected a JSON object"))?;
    let format = string(top, "", "format")?;
    if format != "filo" {
        return Err(err("format", format!("{format:?}, expected \"filo\"")));
    }
    let format_version = version(top, "")?.unwrap_or_default();
    let num_rows = top
        .get("num_rows")
        .ok_or_else(|| err("num_rows", "missing"))?
        .as_u64()
        .ok_or_else(|| err("num_rows", "expected a non-negative integer"))?;
    let list = top
        .get("columns")
        .ok_or_else(|| err("columns", "missing"))?
        .as_array()
        .ok_or_else(|| err("columns", "expected an array"))?;
    let mut names = HashSet::new();
    let mut columns = Vec::with_capacity(list.len());
    for (i, c) in list.iter().enumerate() {
        let path = format!("columns[{i}]");
        let c = c
            .as_object()
            .ok_or_else(|| err(&path, "expected an object"))?;
        let name = string(c, &path, "name")?.to_string();
        if name.is_empty() {
            return Err(err(&format!("{path}.name"), "empty"));
        }
        if !names.insert(name.clone()) {
            return Err(err(
                &format!("{path}.name"),
                format!("{name:?} names two columns"),
            ));
        }
        let type_name = string(c, &path, "type")?;
        let column_type = ColumnType::from_name(type_name).ok_or_else(|| {
            let known: Vec<_> = ColumnType::ALL.iter().map(|t| t.name()).collect();
            err(
                &format!("{path}.type"),
                format!(
                    "unknown column type {type_name:?} (known: {})",
                    known.join(", ")
                ),
            )
        })?;
        let file = string(c, &path, "file")?.to_string();
        check_file(&file)
            .map_err(|reason| err(&format!("{path}.file"), format!("{file:?}: {reason}")))?;
        columns.push(ManifestColumn {
            name,
            column_type,
            file,
            format_version: version(c, &path)?.unwrap_or(format_version),
        });
    }
    Ok(Manifest {
        format_version,
        num_rows,
        columns,
    })
}

fn err(path: &str, reason: impl Into<String>) -> FiloError {
    FiloError::Manifest {
        path: if path.is_empty() {
            "(top)".into()
        } else {
            path.into()
        },
        reason: reason.into(),
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.into()
    } else {
        format!("{path}.{key}")
    }
}

fn string<'a>(obj: &'a Map<String, Value>, path: &str, key: &str) -> Result<&'a str> {
    obj.get(key)
        .ok_or_else(|| err(&join(path, key), "missing"))?
        .as_str()
        .ok_or_else(|| err(&join(path, key), "expected a string"))
}

fn version(obj: &Map<String, Value>, path: &str) -> Result<Option<FormatVersion>> {
    let Some(v) = obj.get("format_version") else {
        return Ok(None);
    };
    let name = v
        .as_str()
        .ok_or_else(|| err(&join(path, "format_version"), "expected a string"))?;
    FormatVersion::from_name(name).map(Some).ok_or_else(|| {
        err(
            &join(path, "format_version"),
            format!(
                "unsupported {name:?} (supported: {}, {})",
                FormatVersion::Filo03.name(),
                FormatVersion::Filo030.name()
            ),
        )
    })
}

/// A chunk file must stay inside the fragment directory.
fn check_file(file: &str) -> std::result::Result<(), &'static str> {
    if file.is_empty() {
        return Err("empty");
    }
    if file.starts_with('/') {
        return Err("absolute paths are not allowed");
    }
    if file.contains('\0') {
        return Err("contains a NUL byte");
    }
    if file
        .split('/')
        .any(|c| c.is_empty() || c == "." || c == "..")
    {
        return Err("every path component must be a plain name (no '', '.' or '..')");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"{"format": "filo", "format_version": "velvia-filo-0.3", "num_rows": 2,
        "columns": [{"name": "a", "type": "int", "file": "a.filo"},
                    {"name": "b/c", "type": "utf8", "file": "b/c.filo", "format_version": "velvia-filo-0.3.0"}],
        "future": true}"#;

    #[test]
    fn parses_columns_and_versions() {
        let m = parse_manifest(GOOD.as_bytes()).unwrap();
        assert_eq!(m.num_rows, 2);
        assert_eq!(m.columns.len(), 2);
        assert_eq!(m.columns[0].column_type, ColumnType::Int);
        assert_eq!(m.columns[0].format_version, FormatVersion::Filo03);
        assert_eq!(m.columns[1].name, "b/c");
        assert_eq!(m.columns[1].format_version, FormatVersion::Filo030);
        let m = parse_manifest(br#"{"format":"filo","num_rows":0,"columns":[]}"#).unwrap();
        assert_eq!(m.format_version, FormatVersion::Filo03);
    }

    #[test]
    fn errors_name_the_json_path() {
        let cases = [
            (GOOD.replace("\"int\"", "\"int8\""), "columns[0].type"),
            (GOOD.replace("a.filo", "../a.filo"), "columns[0].file"),
            (GOOD.replace("a.filo", "/etc/passwd"), "columns[0].file"),
            (GOOD.replace("\"b/c\"", "\"a\""), "columns[1].name"),
            (GOOD.replace("\"filo\"", "\"tiledb\""), "format"),
            (
                GOOD.replace("velvia-filo-0.3\"", "filodb-0.9\""),
                "format_version",
            ),
            (
                GOOD.replace("\"num_rows\": 2", "\"num_rows\": -2"),
                "num_rows",
            ),
            (
                GOOD.replace("\"file\": \"a.filo\"", "\"file\": 3"),
                "columns[0].file",
            ),
            ("[]".to_string(), "(top)"),
            ("{".to_string(), "(top)"),
        ];
        for (json, path) in cases {
            let e = parse_manifest(json.as_bytes()).unwrap_err().to_string();
            assert!(
                e.starts_with(&format!("filo_fragment.json: {path}: ")),
                "{e}"
            );
        }
    }
}
