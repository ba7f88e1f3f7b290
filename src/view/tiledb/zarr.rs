//! `zarr/` (and `at/<T>/zarr/`): a dense array as a Zarr store that zarr-python, xarray,
//! GDAL and TensorStore open without TileDB. TileDB's space tiles are a regular chunk
//! grid already, so each chunk file is one space tile of the merged array (newest
//! fragment wins, row-major, fill values where nobody wrote), decoded only when read.
//!
//! Both Zarr versions sit side by side in one folder: `.zgroup`/`.zarray`/`.zattrs`
//! with chunk keys `i.j` (v2) and `zarr.json` with keys `c/i/j` (v3). Per fixed-size,
//! single-value attribute one array; per nullable one also `<attr>__validity` (uint8);
//! per dimension a 1-D coordinate array of its values, so xarray labels the axes.
//! Tiles no visible fragment touches have no chunk file (readers fill them), and a
//! listing never walks the domain, only the fragments' boxes.
//!
//! [`refs`] makes a kerchunk reference set of a state's store (`fragfs refs`).
//!
//! [`tree`] puts the store in the tree (listing, lookup, sizes, reads); what the store
//! holds is worked out in [`crate::encode::zarr`] without I/O, once per state ([`stores`]).

mod node;
mod place;
pub mod refs;
mod stores;
mod tree;
mod vlen;

pub(super) use self::node::ZNode;
pub(super) use self::stores::ZarrStores;
pub(super) use self::tree::summary;
