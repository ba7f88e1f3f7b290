//! `array.h5`: the layout of an HDF5 file whose datasets are other files' bytes as they
//! are, written from the HDF5 File Format Specification version 3.0 (cited below by
//! section). Pure code over byte slices: nothing here reads an array, so every structure
//! is unit-tested without one; `view/tiledb/faces/hdf5.rs` feeds it from a state.
//!
//! The file, in order (`docs/hdf5.md`):
//!
//! 1. the superblock, version 2 (III.A.1), 48 bytes;
//! 2. the data regions: each dataset's elements, CONTIGUOUS and little-endian, starting
//!    on a multiple of 8 (zero bytes between them). Their offsets follow from the
//!    datasets' shapes and types alone, so a read of the data maps to the source files
//!    without the header being known;
//! 3. the metadata tail: the root group's object header (version 2, IV.A.1.b, with Link
//!    Info, Group Info and one Link message per dataset: the "compact" new-style group),
//!    one object header per dataset (Dataspace, Datatype, Fill Value, Data Layout and
//!    Attribute messages), and, where datasets name dimension scales, one global heap
//!    collection (III.E) holding the object references of their `DIMENSION_LIST`s.
//!
//! Every checksum is Jenkins' lookup3 `hashlittle` with an initial value of 0
//! (the specification's Appendix C), [`lookup3`].

mod checksum;
mod datatype;
mod layout;
mod messages;
mod metadata;

pub use checksum::lookup3;
pub use datatype::H5Type;
pub use layout::{pieces, regions, Dataset, File, Piece, Regions, SUPERBLOCK_LEN};
pub use messages::{Attr, MAX_MESSAGE};
pub use metadata::metadata;
