//! The files inside a field folder (`values.bin`, `values.npy`, `values.txt`...) and
//! inside a fragment's or a state's folder (`footer.json`, `cells.csv`...): one [`Face`]
//! per kind of file, registered in one table per kind of folder. The per-fragment field
//! folders and the merged ones (`latest/`, `at/<T>/`) list from the same table; what
//! differs between a fragment's field and a merged field is answered once, by
//! [`At<FieldOf>`](At) (see `field.rs`).
//!
//! Adding a kind of file is one module with its face and one line in `table.rs`: the tree lists, looks up, sizes, reads and caches it from there
//! (`docs/DESIGN.md`, "The Face table"). This file is the folder's index.

mod columnar;
mod envi;
mod face;
mod field;
mod hdf5;
mod id;
mod netcdf;
mod npy;
mod quicklook;
mod raw;
mod rendered;
mod spliced;
mod table;
mod text;
mod tiff;

pub(super) use face::{At, Face, Summary};
pub(super) use id::FaceId;
pub(super) use table::{lifetime, present, summaries, Table};
