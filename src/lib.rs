//! fragfs: TileDB array fragments as plain decoded files.
//!
//! Data flows one way: disk bytes -> [`format`] (what is where) -> [`filter`] (un-filtered
//! chunk) -> [`view`] (bytes of a virtual file) -> FUSE or the CLI.

pub mod filter;
pub mod format;
