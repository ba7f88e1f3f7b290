//! From fragments to bytes and cells: the chunk engine every view reads through.
//!
//! A read of a byte range of a field's file maps to the tiles it overlaps, each tile to
//! the chunks it needs, and only those chunks are un-filtered: straight into the reply
//! when the read covers them whole, through the bounded [`ChunkCache`] when it cuts
//! them. Above the bytes, [`cells`] gives cells `i..j` of a field with their validity,
//! which the text renderers (and every view that needs values) use.

pub mod cells;
mod chunk_cache;
pub mod endian;
mod engine;
pub mod field;
pub mod merge;
mod raw_file;
pub mod spill;
pub mod stored;
pub mod tile;
pub mod tile_codec;
pub mod tile_ref;

pub use chunk_cache::{CacheKey, Cached, ChunkCache, Item};
pub use engine::{ReadEngine, ResultSpill};
pub use field::FieldReader;
pub use raw_file::RawFile;
