//! Compressed chunks as a fragment stores them, handed out without decompressing: a
//! field whose only filter is ZSTD or LZ4 holds, in each chunk, its cells' values
//! compressed as one ZSTD stream or one LZ4 block — what a Parquet page body of
//! PLAIN values compressed with ZSTD or LZ4_RAW is. `cells.parquet` copies those bytes,
//! so serving them costs no decompression and a reader over the network moves the
//! compressed bytes.

use std::ops::Range;

use crate::error::{Error, Result};
use crate::format::Filter;

use super::chunk_cache::Cached;
use super::field::FieldReader;
use super::tile::FileRole;

/// How the stored chunks of a field are compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoredCodec {
    Zstd,
    Lz4,
}

/// One stored chunk: where its compressed values lie in the field's data file, and
/// how many bytes of values they decompress to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredChunk {
    pub range: Range<u64>,
    pub unfiltered: u64,
}

impl FieldReader<'_> {
    /// The codec of the field's stored chunks, if they can be handed out as they are:
    /// a stored, fixed-size, non-nullable field of a plain (not encrypted) fragment whose
    /// pipeline is one ZSTD or LZ4 filter and nothing else.
    pub fn stored_codec(&self) -> Option<StoredCodec> {
        let f = self.field;
        if !f.stored || f.is_var() || f.nullable || f.coords.is_some() || self.meta.key().is_some()
        {
            return None;
        }
        match f.filters.filters.as_slice() {
            [Filter::Zstd { .. }] => Some(StoredCodec::Zstd),
            [Filter::Lz4 { .. }] => Some(StoredCodec::Lz4),
            _ => None,
        }
    }

    /// Tile `k`'s chunks as stored compressed bytes, if each is one: the filter kept no
    /// metadata of its own besides its part sizes, and (LZ4) compressed the chunk as one
    /// block. `None` where a chunk is otherwise (then the values are decoded and served
    /// uncompressed). Reads the chunk headers and each chunk's few bytes of filter
    /// metadata, never the compressed data.
    pub fn stored_chunks(&self, k: u64) -> Result<Option<Vec<StoredChunk>>> {
        let Some(codec) = self.stored_codec() else {
            return Ok(None);
        };
        let index = self.tile_chunk_headers(FileRole::Data, k)?;
        let Cached::Chunks(tile) = &*index else {
            return Err(Error::corrupt(
                self.place().in_file(self.field.data_file()).tile(k),
                "the chunk cache holds another kind of item than a chunk index",
            ));
        };
        let mut out = Vec::with_capacity(tile.chunks.len());
        for (i, chunk) in tile.chunks.iter().enumerate() {
            let md = chunk.metadata_range();
            let mut header = Vec::new();
            self.read_data_file_into(md.start, md.end - md.start, &mut header)
                .map_err(|e| {
                    e.at(self
                        .place()
                        .in_file(self.field.data_file())
                        .tile(k)
                        .chunk(i))
                })?;
            let u32_at = |at: usize| -> Option<u64> {
                Some(u32::from_le_bytes(header.get(at..at + 4)?.try_into().ok()?).into())
            };
            let (Some(md_parts), Some(data_parts)) = (u32_at(0), u32_at(4)) else {
                return Ok(None);
            };
            let one_stream = md_parts == 0
                && data_parts >= 1
                && (codec == StoredCodec::Zstd || data_parts == 1)
                && header.len() as u64 == 8 + 8 * data_parts;
            if !one_stream {
                return Ok(None);
            }
            let compressed: u64 = (0..data_parts as usize)
                .map(|p| u32_at(12 + 8 * p).unwrap_or(0))
                .sum();
            let data = chunk.data_range();
            if compressed != data.end - data.start {
                return Ok(None);
            }
            out.push(StoredChunk {
                range: data,
                unfiltered: u64::from(chunk.unfiltered_len),
            });
        }
        Ok(Some(out))
    }

    /// Appends bytes `[offset, offset + len)` of the field's data file, as stored.
    pub fn read_data_file_into(&self, offset: u64, len: u64, out: &mut Vec<u8>) -> Result<()> {
        let key = self.fragment.file_key(&self.field.data_file());
        self.fragment.store.read_into(&key, offset, len, out)
    }
}
