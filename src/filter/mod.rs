//! The reverse ("un-filter") pipeline: one file per filter, `pipeline.rs` chains them over
//! one chunk of a tile (`05-tile-and-filters.md`).
//!
//! Everything here works on byte slices handed in by the caller: no files, no caching.

pub mod error;
pub mod pipeline;

pub use error::FilterError;
pub use pipeline::{unfilter_chunk, unfilter_string_chunk, ChunkContext, StringChunk};
