//! fragfs: TileDB array fragments as plain decoded files.
//!
//! Data flows one way: disk bytes -> [`format`](mod@format) (what is where) -> [`filter`] (un-filtered
//! chunk) -> [`array`](mod@array) (an array on disk) -> [`view`] (bytes of a virtual file) -> FUSE or
//! the CLI.

pub mod array;
pub mod daemon;
pub mod error;
pub mod filo;
pub mod filter;
pub mod format;
pub mod fuse;
pub mod info;
pub mod listing;
pub mod mount;
pub mod view;

pub use error::{Error, Result};
