//! Zarr metadata: the store of a dense state as pure maths over its schema and fields:
//! which arrays it has (and which attributes it leaves out, and why), their data types,
//! chunk grids and fill values, chunk keys, and the metadata documents of both Zarr
//! versions. Nothing here reads a byte of the array, so every rule is unit-tested
//! without one on disk; `view/tiledb/zarr/` puts these facts in the tree and reads the
//! chunks.

mod description;
mod document;
mod dtype;
mod grid;
mod keys;
#[cfg(test)]
mod testing;
mod v2;
mod v3;

pub use description::{describe, has_store, schema_fields, summary, Description, Shown, ZField};
pub use document::ZMeta;
pub use dtype::{Elements, ZType};
pub use grid::{ZArray, ZDesc};
pub use keys::{key_v2, key_v3, parse_key};
