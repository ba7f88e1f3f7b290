//! The array as TileDB reads it at a timestamp: every visible fragment merged with
//! TileDB's rules (`docs/DESIGN.md`, "Merged view"), served as the cells of one array.
//!
//! Everything is expressed as **runs**: output cells `[c, c + n)` come from cells of
//! one fragment (`cell`, `cell + stride`, ...) or are fill. A dense array's runs follow
//! from geometry alone ([`dense`]); a sparse array's from a k-way merge of its fragments
//! in global order ([`sparse`]). Every file (values, offsets, validity) is read by
//! gathering its runs from the fragments' own raw files, so only the chunks that supply
//! a read's cells are decoded.

pub mod dense;
mod gather;
pub mod hilbert;
mod merged;
pub mod order;
mod record;
mod runs;
mod spans;
pub mod sparse;
mod state;
mod stream;
mod tiles;

pub use merged::{Merged, MergedField};
pub use runs::{Run, Source, BLOCK};
pub use spans::Spans;
pub use state::{state_digest, state_key, state_time};
pub use tiles::RegionTile;
