//! The virtual trees of `docs/DESIGN.md`: one tree per kind of input (a TileDB array, a Filo
//! fragment), each owning its nodes through a [`NodeTable`](nodes::NodeTable), behind one
//! [`FileTree`] trait that `fragfs ls`/`cat`/`info` and the FUSE adapter both use, so a
//! mount and the command line serve the same bytes.
//!
//! This file is the folder's index: what each file holds is said at its top.

pub mod cache;
pub mod cached;
pub mod entry;
pub mod file_tree;
pub mod filo;
pub mod group;
pub mod held;
pub mod info;
pub mod listing;
pub mod locks;
pub mod mime;
pub mod names;
pub mod nodes;
pub mod open;
pub mod prefetch;
pub mod subtree;
pub mod text;
pub mod tiledb;

pub use entry::{Entry, Kind, Lifetime, OpenGuard, Stat};
pub use file_tree::FileTree;
pub use filo::FiloTree;
pub use group::GroupTree;
pub use info::Info;
pub use listing::Listing;
pub use nodes::{Ino, ROOT};
pub use open::{
    open_array, open_disk_cache, open_source, open_store, open_tree, ChunkOptions,
    DEFAULT_CACHE_SIZE,
};
pub use tiledb::{ArrayTree, REFRESH_INTERVAL};
