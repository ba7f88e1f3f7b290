//! The two tables of faces: the files of a field folder, and those of a fragment or state
//! folder. Adding a kind of file is one module with its face and one line here.

use crate::error::Result;
use crate::view::entry::Lifetime;

use super::super::array_tree::ArrayTree;
use super::super::node::{FieldOf, Folder};
use super::face::{Face, Summary};
use super::id::FaceId;
use super::{columnar, envi, hdf5, netcdf, npy, quicklook, raw, rendered, text, tiff};

/// The files of a field folder, in listing order (the `enumeration/` folder of an
/// enumerated attribute follows them).
static FIELD_FACES: [&dyn Face<FieldOf>; 8] = [
    &raw::VALUES,
    &raw::OFFSETS,
    &raw::VALIDITY,
    &npy::NPY,
    &text::VALUES_TXT,
    &envi::ENVI_HDR,
    &tiff::VALUES_TIF,
    &quicklook::VALUES_PNG,
];

/// The files of a fragment folder and of a state folder, in listing order (the field
/// folders follow them).
static FOLDER_FACES: [&dyn Face<Folder>; 8] = [
    &rendered::FOOTER_JSON,
    &rendered::TILES_JSON,
    &rendered::READ_JSON,
    &text::CELLS_CSV,
    &columnar::CELLS_PARQUET,
    &columnar::CELLS_ARROW,
    &netcdf::ARRAY_NC,
    &hdf5::ARRAY_H5,
];

/// One table of faces, and the ids of its entries.
pub(in crate::view::tiledb) trait Table<P: 'static> {
    fn faces() -> &'static [&'static dyn Face<P>];

    fn face(id: FaceId) -> &'static dyn Face<P> {
        // Ids come only from `ids()` below, so the index is always in range; the
        // fallback keeps a bad id from being a panic.
        Self::faces()
            .get(usize::from(id.0))
            .copied()
            .unwrap_or(Self::faces()[0])
    }

    fn ids() -> impl Iterator<Item = (FaceId, &'static dyn Face<P>)> {
        Self::faces()
            .iter()
            .enumerate()
            .map(|(i, f)| (FaceId(i as u8), *f))
    }
}

impl Table<FieldOf> for FieldOf {
    fn faces() -> &'static [&'static dyn Face<FieldOf>] {
        &FIELD_FACES
    }
}

impl Table<Folder> for Folder {
    fn faces() -> &'static [&'static dyn Face<Folder>] {
        &FOLDER_FACES
    }
}

/// How long the kernel may keep what it learns of a face's file: a fragment's files
/// never change; a state's are one state of a changing array (cached while open).
pub(in crate::view::tiledb) fn lifetime(folder: Folder) -> Lifetime {
    match folder {
        Folder::Fragment(_) => Lifetime::Immutable,
        Folder::State(_) => Lifetime::Snapshot,
    }
}

/// The faces of a table that the folder at `place` has, with their ids, in listing order.
pub(in crate::view::tiledb) fn present<P: Table<P> + Copy + 'static>(
    tree: &ArrayTree,
    place: P,
) -> Result<Vec<(FaceId, &'static dyn Face<P>)>> {
    let mut out = Vec::new();
    for (id, face) in P::ids() {
        if face.exists(tree, place)? {
            out.push((id, face));
        }
    }
    Ok(out)
}

/// The summary lines of every face that has one, field faces first, in table order:
/// the keys of `array.json` and `read.json` that say how the array shows as each kind
/// of file.
pub(in crate::view::tiledb) fn summaries() -> impl Iterator<Item = &'static Summary> {
    let field = FIELD_FACES.iter().filter_map(|f| f.summary());
    let folder = FOLDER_FACES.iter().filter_map(|f| f.summary());
    field.chain(folder)
}
