//! The stored tiles of an array's fragments as references: where each lies and the
//! `fragfs_tile` codec that decodes it, per fragment and fixed-size stored field
//! (attributes and sparse fragments' dimensions; their validity too). What a program
//! that builds its own reference sets needs (`fragfs.stored_tiles` in Python), and how
//! the codec is tested against every filter pipeline of the corpus.

use crate::error::Result;
use crate::read::tile::FileRole;
use crate::read::tile_ref::StoredTile;
use crate::view::names;

use super::array_tree::ArrayTree;

/// The stored tiles of one file of one field of one fragment.
#[derive(Debug)]
pub struct FieldTiles {
    /// The fragment's folder name.
    pub fragment: String,
    /// The field's name in the schema, and its folder's in the tree.
    pub field: String,
    pub shown: String,
    /// The validity tiles (else the values').
    pub validity: bool,
    pub tiles: Vec<StoredTile>,
}

impl ArrayTree {
    /// The stored tiles of every fixed-size stored field of every fragment, oldest
    /// fragment first, fields in the fragment's order (values, then validity). Fields
    /// that have none to reference are left out: var-size ones (offsets and bytes are
    /// two files), dense dimensions (computed) and formats 1-4's `__coords.tdb`
    /// (every dimension in one tile).
    pub fn stored_tiles(&self) -> Result<Vec<FieldTiles>> {
        let array = self.array();
        let mut out = Vec::new();
        for f in &array.fragments {
            let meta = f.meta(&array.schemas)?;
            for (i, field) in meta.fields.iter().enumerate() {
                if field.is_var() || !field.stored || field.coords.is_some() {
                    continue;
                }
                let reader = self.caches.engine.field(f, &meta, i)?;
                let roles: &[FileRole] = match field.nullable {
                    true => &[FileRole::Data, FileRole::Validity],
                    false => &[FileRole::Data],
                };
                for &role in roles {
                    let tiles = (0..meta.tile_count)
                        .map(|k| reader.stored_tile(role, k))
                        .collect::<Result<Vec<_>>>()?;
                    out.push(FieldTiles {
                        fragment: f.name.clone(),
                        field: field.name.clone(),
                        shown: names::encode(&field.name),
                        validity: role == FileRole::Validity,
                        tiles,
                    });
                }
            }
        }
        Ok(out)
    }
}
