//! An array on disk: its schemas, which fragments are live, and lazily loaded fragment
//! metadata. Nothing here knows about the virtual tree.

pub mod dense_grid;
pub mod field;
pub mod fragment;
pub mod generic_tile;
pub mod layout;
pub mod liveness;
pub mod storage;
pub mod tile;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::format::name::TimestampedName;
use crate::format::schema::ArraySchema;

pub use fragment::Fragment;
pub use liveness::Ignored;

/// Options that change how an array is read.
#[derive(Debug, Clone, Default)]
pub struct OpenOptions {
    /// AES-256-GCM key for encrypted arrays.
    pub key: Option<[u8; 32]>,
}

/// Parses a user-supplied key: exactly 32 bytes of text (as TileDB takes it) or 64 hex
/// digits.
pub fn parse_key(text: &str) -> Result<[u8; 32]> {
    let bytes = text.as_bytes();
    if bytes.len() == 32 {
        let mut key = [0u8; 32];
        key.copy_from_slice(bytes);
        return Ok(key);
    }
    if bytes.len() == 64 && text.chars().all(|c| c.is_ascii_hexdigit()) {
        let mut key = [0u8; 32];
        for (i, k) in key.iter_mut().enumerate() {
            *k = u8::from_str_radix(&text[2 * i..2 * i + 2], 16)
                .map_err(|e| Error::InvalidArgument(format!("encryption key: {e}")))?;
        }
        return Ok(key);
    }
    Err(Error::InvalidArgument(format!(
        "encryption key must be 32 bytes (or 64 hex digits), got {} bytes",
        bytes.len()
    )))
}

/// A schema file of the array.
#[derive(Debug)]
pub struct SchemaFile {
    /// File name (`__array_schema.tdb` or the timestamped name in `__schema/`).
    pub name: String,
    /// Path relative to the array root.
    pub rel_path: String,
    pub schema: Arc<ArraySchema>,
}

/// An opened array: schemas decoded, live fragments found, fragment metadata not read yet.
#[derive(Debug)]
pub struct Array {
    pub root: PathBuf,
    pub options: OpenOptions,
    /// Oldest first; the last is the latest.
    pub schemas: Vec<SchemaFile>,
    pub fragments: Vec<Arc<Fragment>>,
    pub ignored: Vec<Ignored>,
    /// Relative paths of delete/update commits.
    pub conditions: Vec<String>,
}

pub const LEGACY_SCHEMA: &str = "__array_schema.tdb";

impl Array {
    pub fn open(root: &Path, options: OpenOptions) -> Result<Array> {
        let meta = std::fs::metadata(root).map_err(|e| Error::io(root, e))?;
        if !meta.is_dir() {
            return Err(Error::NotAnArray(format!(
                "{}: not a TileDB array (not a folder)",
                root.display()
            )));
        }
        let (schemas, encrypted) = load_schemas(root, &options)?;
        // The key is applied to data tiles only when the array really is encrypted.
        let key = if encrypted { options.key } else { None };
        if schemas.is_empty() {
            return Err(Error::NotAnArray(format!(
                "{}: not a TileDB array (no __schema/ folder and no {LEGACY_SCHEMA})",
                root.display()
            )));
        }
        let live = liveness::find_fragments(root)?;
        let fragments = live
            .live
            .into_iter()
            .enumerate()
            .map(|(index, f)| {
                Arc::new(Fragment::new(
                    index,
                    root.join(&f.rel_dir),
                    f.name,
                    f.rel_dir,
                    f.timestamps,
                    key,
                ))
            })
            .collect();
        Ok(Array {
            root: root.to_path_buf(),
            options,
            schemas,
            fragments,
            ignored: live.ignored,
            conditions: live.conditions.into_iter().map(|(p, _)| p).collect(),
        })
    }

    pub fn latest_schema(&self) -> &SchemaFile {
        // `open` refuses arrays without schemas.
        &self.schemas[self.schemas.len() - 1]
    }

    /// The schema a fragment was written with: by name from v10 (the footer names it),
    /// `__array_schema.tdb` before.
    pub fn schema_named(&self, name: Option<&str>) -> Option<&SchemaFile> {
        match name {
            Some(n) => {
                let n = n.trim_start_matches('/');
                self.schemas.iter().find(|s| s.name == n)
            }
            None => self.schemas.iter().find(|s| s.name == LEGACY_SCHEMA),
        }
    }
}

/// Decodes every schema file; also tells whether the array is encrypted.
fn load_schemas(root: &Path, options: &OpenOptions) -> Result<(Vec<SchemaFile>, bool)> {
    let mut files = Vec::new();
    if root.join(LEGACY_SCHEMA).is_file() {
        files.push((LEGACY_SCHEMA.to_string(), LEGACY_SCHEMA.to_string(), None));
    }
    let mut timestamped = Vec::new();
    for (name, is_dir) in storage::list_dir(&root.join("__schema"))? {
        if !is_dir {
            let t2 = TimestampedName::parse(&name).map(|t| t.t2);
            timestamped.push((name.clone(), format!("__schema/{name}"), t2));
        }
    }
    // Latest = largest t2; stable for ties, so listing order breaks them.
    timestamped.sort_by_key(|(_, _, t2)| t2.unwrap_or(0));
    files.extend(timestamped);
    let mut encrypted = false;
    let schemas = files
        .into_iter()
        .map(|(name, rel_path, _)| {
            let bytes = storage::read_file(&root.join(&rel_path))?;
            let (header, payload) =
                generic_tile::decode_generic_tile(&bytes, options.key, &rel_path)?;
            encrypted |= header.encryption_type == 1;
            let schema = ArraySchema::parse(&payload).map_err(|e| Error::format(&rel_path, e))?;
            Ok(SchemaFile {
                name,
                rel_path,
                schema: Arc::new(schema),
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((schemas, encrypted))
}
