//! The files inside a field folder (`values.bin`, `values.npy`, `values.txt`...) and
//! inside a fragment's or a state's folder (`footer.json`, `cells.csv`...): one [`Face`]
//! per kind of file, registered in one table per kind of folder. The per-fragment field
//! folders and the merged ones (`latest/`, `at/<T>/`) list from the same table; what
//! differs between a fragment's field and a merged field is answered once, by
//! [`At<FieldOf>`](At) (see `field.rs`).
//!
//! Adding a kind of file is one module with its face and one line in [`FIELD_FACES`] or
//! [`FOLDER_FACES`]: the tree lists, looks up, sizes, reads and caches it from there
//! (`docs/DESIGN.md`, "The Face table").

mod envi;
mod field;
mod hdf5;
pub(super) mod netcdf;
mod npy;
mod raw;
mod rendered;
mod spliced;
mod text;
mod tiff;

use super::{ArrayTree, FieldOf, Folder};
use crate::error::Result;
use crate::view::nodes::Ino;
use crate::view::Lifetime;

pub(super) use hdf5::summary as hdf5_summary;
pub(super) use tiff::{state_summary as tiff_state_summary, summary as tiff_summary};

/// Where a face's file is: the tree, the file's inode number (the key of what the views
/// cache for it) and its folder (a field, or a fragment or state folder).
pub(super) struct At<'a, P> {
    pub tree: &'a ArrayTree,
    pub ino: Ino,
    pub place: P,
}

/// A kind of file in every folder of one kind. `P` is what names such a folder:
/// [`FieldOf`] for field folders, [`Folder`] for fragment and state folders.
pub(super) trait Face<P>: Sync {
    /// The file's name in its folder.
    fn name(&self) -> &'static str;

    /// Whether the folder at `place` has this file. Every listing asks it, so it looks
    /// at metadata only: never a pass over cells, never a decoded tile.
    fn exists(&self, tree: &ArrayTree, place: P) -> Result<bool>;

    /// The size if it is known without rendering the file or counting cells, else `None`:
    /// `stat` then shows 0 and the mount serves the file with direct I/O (as procfs does)
    /// until a read or [`Face::size`] learns it.
    fn known_size(&self, at: &At<'_, P>) -> Result<Option<u64>>;

    /// The exact size, rendering or counting what it must.
    fn size(&self, at: &At<'_, P>) -> Result<u64>;

    /// Appends bytes `[offset, offset + len)` of the file (fewer at its end) to `out`.
    fn read_into(&self, at: &At<'_, P>, offset: u64, len: u64, out: &mut Vec<u8>) -> Result<()>;

    /// Prepares what a read of the range will need, for a sequential reader. Files
    /// rendered whole have nothing to prepare: the default.
    fn read_ahead(&self, _at: &At<'_, P>, _offset: u64, _len: u64) -> Result<()> {
        Ok(())
    }
}

/// A face's number in its table: what a node stores, so nodes stay small, hashable and
/// comparable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct FaceId(u8);

/// The files of a field folder, in listing order (the `enumeration/` folder of an
/// enumerated attribute follows them).
static FIELD_FACES: [&dyn Face<FieldOf>; 7] = [
    &raw::VALUES,
    &raw::OFFSETS,
    &raw::VALIDITY,
    &npy::NPY,
    &text::VALUES_TXT,
    &envi::ENVI_HDR,
    &tiff::VALUES_TIF,
];

/// The files of a fragment folder and of a state folder, in listing order (the field
/// folders follow them).
static FOLDER_FACES: [&dyn Face<Folder>; 6] = [
    &rendered::FOOTER_JSON,
    &rendered::TILES_JSON,
    &rendered::READ_JSON,
    &text::CELLS_CSV,
    &netcdf::ARRAY_NC,
    &hdf5::ARRAY_H5,
];

/// One table of faces, and the ids of its entries.
pub(super) trait Table<P: 'static> {
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
pub(super) fn lifetime(folder: Folder) -> Lifetime {
    match folder {
        Folder::Fragment(_) => Lifetime::Immutable,
        Folder::State(_) => Lifetime::Snapshot,
    }
}

/// The faces of a table that the folder at `place` has, with their ids, in listing order.
pub(super) fn present<P: Table<P> + Copy + 'static>(
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
