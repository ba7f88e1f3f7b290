//! The delete and update commits of an array ([`ConditionCommit`]).

use std::sync::Arc;

use crate::error::{Error, Place, Result};
use crate::format::schema::ArraySchema;
use crate::storage::Store;

use super::generic_tile;

/// A delete (`.del`) or update (`.upd`) commit.
#[derive(Debug, Clone, PartialEq)]
pub struct ConditionCommit {
    /// `__commits/<name>.del`, as on disk or as named inside a `.con` file.
    pub rel_path: String,
    /// When it was committed (its timestamped name's).
    pub timestamp: u64,
    pub is_update: bool,
    /// Its bytes when a `.con` file holds them; else they are in the file.
    pub embedded: Option<Arc<Vec<u8>>>,
}

impl ConditionCommit {
    /// The commit's generic tile: embedded, or read from its file.
    pub fn bytes(&self, store: &dyn Store) -> Result<Arc<Vec<u8>>> {
        match &self.embedded {
            Some(bytes) => Ok(bytes.clone()),
            None => Ok(Arc::new(store.read_all(&self.rel_path)?)),
        }
    }

    /// The condition as stored: the negation of the user's (cells where it holds are
    /// kept). An update's condition likewise.
    pub fn stored_condition(
        &self,
        store: &dyn Store,
        key: Option<[u8; 32]>,
    ) -> Result<crate::format::condition::Condition> {
        let place = Place::file(self.rel_path.as_str());
        let bytes = self.bytes(store)?;
        let (_, payload) = generic_tile::decode_generic_tile(&bytes, key, &place)?;
        let parsed = if self.is_update {
            crate::format::condition::parse_update(&payload).map(|u| u.condition)
        } else {
            crate::format::condition::parse_delete_condition(&payload)
        };
        parsed.map_err(|e| Error::format(place, e))
    }

    /// The user's condition as text (`v < 40`, `name = 'x' AND n IS NULL`), with values
    /// typed by the fields of `schema`.
    pub fn condition_text(
        &self,
        store: &dyn Store,
        key: Option<[u8; 32]>,
        schema: &ArraySchema,
    ) -> Result<String> {
        let stored = self.stored_condition(store, key)?;
        let datatype_of = |name: &str| {
            schema
                .dimensions
                .iter()
                .map(|d| (&d.name, d.datatype))
                .chain(schema.attributes.iter().map(|a| (&a.name, a.datatype)))
                .find(|(n, _)| *n == name)
                .map(|(_, t)| t)
        };
        Ok(stored.negated().to_text(datatype_of))
    }
}
