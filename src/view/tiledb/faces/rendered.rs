//! The JSON files of a fragment folder (`footer.json`, `tiles.json`) and of a state
//! folder (`read.json`): rendered whole on first use and kept in the view cache.

use std::collections::HashMap;

use crate::error::Result;

use super::super::array_tree::ArrayTree;
use super::super::json;
use super::super::node::{FieldOf, Folder};
use super::{At, Face};

pub(super) struct Rendered {
    name: &'static str,
    /// Whether a folder has the file.
    applies: fn(Folder) -> bool,
    /// Whether rendering the file is cheap enough to answer `stat` (else `stat` shows 0,
    /// as for text files, until the file was read).
    sized_by_stat: fn(&At<'_, Folder>) -> Result<bool>,
    render: fn(&At<'_, Folder>) -> Result<Vec<u8>>,
}

pub(super) static FOOTER_JSON: Rendered = Rendered {
    name: "footer.json",
    applies: in_fragments,
    sized_by_stat: always,
    render: footer,
};

pub(super) static TILES_JSON: Rendered = Rendered {
    name: "tiles.json",
    applies: in_fragments,
    sized_by_stat: always,
    render: tiles,
};

pub(super) static READ_JSON: Rendered = Rendered {
    name: "read.json",
    applies: in_states,
    sized_by_stat: state_counted,
    render: read_json,
};

impl Face<Folder> for Rendered {
    fn name(&self) -> &'static str {
        self.name
    }

    fn mime(&self) -> &'static str {
        "application/json"
    }

    fn exists(&self, _tree: &ArrayTree, folder: Folder) -> Result<bool> {
        Ok((self.applies)(folder))
    }

    fn known_size(&self, at: &At<'_, Folder>) -> Result<Option<u64>> {
        match (self.sized_by_stat)(at)? {
            true => self.size(at).map(Some),
            false => Ok(None),
        }
    }

    fn size(&self, at: &At<'_, Folder>) -> Result<u64> {
        self.rendered(at)?.len(self.name)
    }

    fn read_into(
        &self,
        at: &At<'_, Folder>,
        offset: u64,
        len: u64,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        self.rendered(at)?.read_into(self.name, offset, len, out)
    }
}

impl Rendered {
    /// The file, rendered once and kept (in the view cache, or on disk when larger).
    fn rendered(&self, at: &At<'_, Folder>) -> Result<crate::view::cache::Rendered> {
        let generation = at.tree.generation_of(at.place);
        at.tree.rendered(at.ino, generation, || (self.render)(at))
    }
}

fn in_fragments(folder: Folder) -> bool {
    matches!(folder, Folder::Fragment(_))
}

fn in_states(folder: Folder) -> bool {
    matches!(folder, Folder::State(_))
}

fn always(_: &At<'_, Folder>) -> Result<bool> {
    Ok(true)
}

/// A sparse state's `read.json` holds its cell count: sized once the cells are counted.
fn state_counted(at: &At<'_, Folder>) -> Result<bool> {
    match at.place {
        Folder::State(w) => Ok(at.tree.merged(w)?.counted()),
        Folder::Fragment(_) => Ok(true),
    }
}

fn footer(at: &At<'_, Folder>) -> Result<Vec<u8>> {
    let id = at.tree.fragment_of(at.place)?;
    let (fragment, meta) = at.tree.meta(id)?;
    let enumerations = at.tree.enumerations_json(at.place)?;
    Ok(json::to_bytes(&json::footer(
        &fragment,
        &meta,
        enumerations,
    )))
}

fn tiles(at: &At<'_, Folder>) -> Result<Vec<u8>> {
    let id = at.tree.fragment_of(at.place)?;
    let (fragment, meta) = at.tree.meta(id)?;
    let mut labels = HashMap::new();
    for i in 0..meta.fields.len() {
        // A bad enumeration file fails the labels (values.txt says why), not the tile
        // facts: those tiles just show no flag.
        match at.tree.field_enumeration(&FieldOf::new(at.place, i)) {
            Ok(Some((e, _))) => {
                labels.insert(i, e);
            }
            Ok(None) => {}
            Err(e) => log::warn!("tiles.json of {}: {e}", fragment.name),
        }
    }
    Ok(json::to_bytes(&json::tiles(
        &at.tree.caches.engine,
        &fragment,
        &meta,
        &labels,
    )?))
}

fn read_json(at: &At<'_, Folder>) -> Result<Vec<u8>> {
    match at.place {
        Folder::State(w) => Ok(json::to_bytes(&at.tree.read_json(w)?)),
        Folder::Fragment(_) => Err(crate::error::Error::NotFound("read.json".into())),
    }
}
