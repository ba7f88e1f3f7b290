//! Runs a filter pipeline backwards over one chunk. (Stub: being written.)

use super::FilterError;
use crate::format::{Datatype, FilterPipeline};

/// What the filters need to know about the tile a chunk belongs to.
#[derive(Debug, Clone)]
pub struct ChunkContext {
    /// Datatype of the values entering the pipeline (the field's datatype; UINT64 for
    /// offsets and t/dt/dci; UINT8 for validity; CHAR for generic tiles).
    pub field_type: Datatype,
    /// The tile's cell size in bytes (RLE's value width): `cell_val_num × type size` for
    /// fixed data, the type size for var data, 8 for offsets, 1 for validity and
    /// generic tiles, `D × coord size` for legacy `__coords`.
    pub cell_size: u64,
    /// Format version of the tile (fragment version for data tiles, header version for
    /// generic tiles): BIT_WIDTH_REDUCTION and POSITIVE_DELTA act on DATETIME/TIME
    /// values only from version 20.
    pub format_version: u32,
    /// AES-256-GCM key, for encrypted arrays.
    pub key: Option<[u8; 32]>,
}

/// A var-size string tile decoded in "string mode" (RLE/DICTIONARY with embedded offsets).
#[derive(Debug, Clone, PartialEq)]
pub struct StringChunk {
    /// Concatenated string bytes.
    pub bytes: Vec<u8>,
    /// Start of each string in `bytes` (first is 0), one per cell, no end entry.
    pub offsets: Vec<u64>,
}

/// Un-filters one chunk: `metadata` and `data` are the chunk's metadata and filtered
/// bytes; the result must be exactly `unfiltered_len` bytes.
pub fn unfilter_chunk(
    _pipeline: &FilterPipeline,
    _ctx: &ChunkContext,
    _metadata: &[u8],
    _data: &[u8],
    _unfiltered_len: u32,
) -> Result<Vec<u8>, FilterError> {
    Err(FilterError::Unsupported {
        filter: "pipeline",
        reason: "not written yet".into(),
    })
}

/// Un-filters one chunk of a var-size string tile whose first filter (RLE or DICTIONARY)
/// ran in string mode and swallowed the offsets (`05` §4).
pub fn unfilter_string_chunk(
    _pipeline: &FilterPipeline,
    _ctx: &ChunkContext,
    _metadata: &[u8],
    _data: &[u8],
    _unfiltered_len: u32,
) -> Result<StringChunk, FilterError> {
    Err(FilterError::Unsupported {
        filter: "pipeline",
        reason: "not written yet".into(),
    })
}
