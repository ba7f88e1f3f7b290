//! The reverse ("un-filter") pipeline: one file per filter, `pipeline.rs` chains them over
//! one chunk of a tile (`05-tile-and-filters.md`).
//!
//! Everything here works on byte slices handed in by the caller: no files, no caching.
//! Every size or count read from the data is checked against the bytes present (or
//! against a cap derived from the chunk's unfiltered length) before anything is
//! allocated, and every failure is a [`FilterError`] naming the filter, never a panic.

mod bit_width_reduction;
mod bitshuffle;
mod byteshuffle;
mod checksum;
mod compression;
mod delta;
mod double_delta;
mod encryption;
pub mod error;
pub mod pipeline;
mod positive_delta;
mod rle;
mod scale_float;
mod string_mode;
mod util;
mod webp;
mod xor;

#[cfg(test)]
mod test_support;

pub use error::FilterError;
pub use pipeline::{
    stage_input, unfilter_chunk, unfilter_chunk_into, unfilter_string_chunk, ChunkContext,
};
pub use string_mode::StringChunk;
