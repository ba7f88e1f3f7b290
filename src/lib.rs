//! fragfs: TileDB array fragments as plain decoded files.
//!
//! Data flows one way: store bytes ([`storage`]) -> [`format`](mod@format) (what is
//! where) -> [`filter`] (un-filtered chunk) -> [`array`](mod@array) (which fragments, their
//! metadata) -> [`read`] (bytes and cells of a field) -> [`view`] (the trees of files) ->
//! FUSE (`fuse`, `mount`: the `fuse` feature; [`daemon`]), the network doors ([`serve`]) or the command
//! line ([`info`], [`ls`]).
//! Lower layers never import higher ones.
//!
//! Comments cite the TileDB format digest in `docs/tiledb-format/` by file and section
//! (`06-fragment-metadata.md` §3), the Filo format in `docs/filo-format/FORMAT.md`, and
//! the architecture in `docs/DESIGN.md`.

pub mod array;
pub mod cache;
pub mod daemon;
pub mod encode;
pub mod error;
pub mod filo;
pub mod filter;
pub mod format;
#[cfg(feature = "fuse")]
pub mod fuse;
pub mod info;
pub mod lazy;
pub mod ls;
#[cfg(feature = "fuse")]
pub mod mount;
pub mod read;
pub mod secret;
pub mod serve;
pub mod storage;
pub mod view;
pub mod wire;

#[cfg(test)]
mod test_support;

pub use error::{Error, Result};
