//! An array's schema files: which there are, decoding them, and which is the legacy one.

use std::sync::Arc;

use crate::error::{Error, Place, Result};
use crate::format::name::TimestampedName;
use crate::format::schema::ArraySchema;
use crate::storage::{Listed, Store};

use super::generic_tile;
use super::options::OpenOptions;

/// A schema file of the array.
#[derive(Debug, Clone)]
pub struct SchemaFile {
    /// File name (`__array_schema.tdb` or the timestamped name in `__schema/`).
    pub name: String,
    /// Path relative to the array root.
    pub rel_path: String,
    pub schema: Arc<ArraySchema>,
    /// Written with AES-256-GCM.
    pub encrypted: bool,
}

pub const LEGACY_SCHEMA: &str = "__array_schema.tdb";

/// Where enumeration files are (`01-array-layout.md` §9).
pub const ENUMERATIONS_DIR: &str = "__schema/__enumerations";

/// Decodes every schema file; also tells whether the array is encrypted.
pub(crate) fn load_schemas(
    store: &dyn Store,
    root: &[Listed],
    options: &OpenOptions,
    known: &[SchemaFile],
) -> Result<(Vec<SchemaFile>, bool)> {
    let mut files = Vec::new();
    if root
        .iter()
        .any(|e| e.name == LEGACY_SCHEMA && !e.is_folder())
    {
        let size = root
            .iter()
            .find(|e| e.name == LEGACY_SCHEMA)
            .and_then(|e| e.size);
        files.push((
            LEGACY_SCHEMA.to_string(),
            LEGACY_SCHEMA.to_string(),
            None,
            size,
        ));
    }
    let mut timestamped = Vec::new();
    let has_schema_folder = root.iter().any(|e| e.name == "__schema" && e.is_folder());
    let listing = if has_schema_folder {
        store.list("__schema")?
    } else {
        Vec::new()
    };
    for Listed { name, size } in listing {
        if size.is_some() {
            let t2 = TimestampedName::parse(&name).map(|t| t.t2);
            timestamped.push((name.clone(), format!("__schema/{name}"), t2, size));
        }
    }
    // Latest = largest t2; stable for ties, so listing order breaks them.
    timestamped.sort_by_key(|(_, _, t2, _)| t2.unwrap_or(0));
    files.extend(timestamped);
    let mut encrypted = false;
    let schemas = files
        .into_iter()
        .map(|(name, rel_path, _, size)| {
            // Schema files are immutable: one decoded before is taken as it was.
            if let Some(old) = known.iter().find(|s| s.rel_path == rel_path) {
                encrypted |= old.encrypted;
                return Ok(old.clone());
            }
            // The size came with the listing: one request per schema.
            let bytes = match size {
                Some(size) => store.read_range(&rel_path, 0, size)?,
                None => store.read_all(&rel_path)?,
            };
            let place = Place::file(rel_path.as_str());
            let (header, payload) = generic_tile::decode_generic_tile(&bytes, options.key, &place)
                .map_err(Error::in_schema)?;
            encrypted |= header.encryption_type == 1;
            let schema = ArraySchema::parse(&payload).map_err(|e| Error::format(place, e))?;
            Ok(SchemaFile {
                name,
                rel_path,
                schema: Arc::new(schema),
                encrypted: header.encryption_type == 1,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((schemas, encrypted))
}
