//! The tree of a TileDB array (`docs/DESIGN.md`, "The mounted tree"): array-level JSON, every
//! schema, one folder per live fragment, the merged states (`latest/`, `at/<T>/`), the
//! dimension labels and `zarr/`. Bytes come from the read engine; this folder decides
//! what is where: the tree's shape, and which node a path names.
//!
//! This file is the folder's index. [`ArrayTree`] (`array_tree.rs`) holds the tree's
//! state; its nodes are `node.rs`'s, sorted once into the groups that answer for them
//! (`Served`); every other file answers one concern as an `impl ArrayTree`: the tree's
//! shape (`shape.rs`), the `FileTree` questions (`file_tree.rs`), sizing and reading a
//! file node (`files.rs`), the faces of fragment, state and field folders (`faces/`),
//! rescans (`rescan.rs`), open files kept readable (`pinning.rs`), read-ahead
//! (`readahead.rs`), dimension labels (`labels.rs`), merged states (`merged.rs`,
//! `states.rs`), text files (`textfiles.rs`), enumerations (`enums.rs`, `codes.rs`),
//! disk-cache keys (`cachekeys.rs`), Zarr (`zarr.rs`, with its reference sets) and a
//! fragment's stored tiles as references (`stored_tiles.rs`).

mod array_tree;
mod cachekeys;
mod cell_table;
mod codes;
mod enums;
mod faces;
mod file_tree;
mod files;
pub mod json;
mod labels;
mod merged;
mod node;
mod picture;
mod pinning;
mod readahead;
mod rescan;
mod shape;
mod states;
mod stored_tiles;
mod textfiles;
mod tile_bounds;
pub mod zarr;

pub use array_tree::{ArrayTree, Clock, REFRESH_INTERVAL};
pub use zarr::refs::{
    RefOptions, Refs, Summary as RefsSummary, DEFAULT_INLINE_LIMIT, ENVELOPE, ENVELOPE_QUERY,
};
