//! The chunked tile container (`05-tile-and-filters.md` §1): a `u64` chunk count, then per
//! chunk a 12-byte header, its metadata and its filtered data. Data tiles are bare chunked
//! tiles; generic tiles wrap one after their header.

use super::error::Result;
use super::reader::Reader;

/// Bytes of one chunk header (unfiltered, filtered and metadata lengths).
pub const CHUNK_HEADER_LEN: u64 = 12;

/// Where one chunk lies, relative to the start of its tile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chunk {
    /// Bytes this chunk yields once un-filtered.
    pub unfiltered_len: u32,
    pub filtered_len: u32,
    pub metadata_len: u32,
    /// Offset of the chunk's metadata (just after its header) from the tile start.
    pub metadata_offset: u64,
}

impl Chunk {
    pub fn metadata_range(&self) -> std::ops::Range<u64> {
        self.metadata_offset..self.metadata_offset + self.metadata_len as u64
    }

    pub fn data_range(&self) -> std::ops::Range<u64> {
        let start = self.metadata_offset + self.metadata_len as u64;
        start..start + self.filtered_len as u64
    }

    /// Offset just past this chunk.
    pub fn end(&self) -> u64 {
        self.data_range().end
    }
}

/// Parses a chunk header at `offset` within a tile of `tile_len` bytes, checking that the
/// chunk's metadata and data fit in the tile.
pub fn parse_chunk_header(header: &[u8], offset: u64, tile_len: u64) -> Result<Chunk> {
    let mut r = Reader::new(header);
    let chunk = Chunk {
        unfiltered_len: r.u32("chunk unfiltered length")?,
        filtered_len: r.u32("chunk filtered length")?,
        metadata_len: r.u32("chunk metadata length")?,
        metadata_offset: offset + CHUNK_HEADER_LEN,
    };
    if chunk.end() > tile_len {
        return Err(super::FormatError::Invalid {
            field: "chunk length",
            offset,
            reason: format!(
                "chunk claims {} metadata + {} data bytes, but the tile has only {} bytes after its header",
                chunk.metadata_len,
                chunk.filtered_len,
                tile_len.saturating_sub(chunk.metadata_offset)
            ),
        });
    }
    Ok(chunk)
}

/// Reads the chunk count at the start of a tile and checks it against the tile length
/// (every chunk takes at least a header).
pub fn parse_chunk_count(first8: &[u8], tile_len: u64) -> Result<u64> {
    let mut r = Reader::new(first8);
    let count = r.u64("chunk count")?;
    if count.saturating_mul(CHUNK_HEADER_LEN) > tile_len.saturating_sub(8) {
        return Err(super::FormatError::Invalid {
            field: "chunk count",
            offset: 0,
            reason: format!("{count} chunks cannot fit in a {tile_len}-byte tile"),
        });
    }
    Ok(count)
}

/// Walks all chunk headers of a tile held in memory.
pub fn parse_chunks(tile: &[u8]) -> Result<Vec<Chunk>> {
    let len = tile.len() as u64;
    let count = parse_chunk_count(tile, len)?;
    let mut chunks = Vec::with_capacity(count as usize);
    let mut offset = 8u64;
    for _ in 0..count {
        let header = tile.get(offset as usize..).unwrap_or(&[]);
        let chunk = parse_chunk_header(header, offset, len)?;
        offset = chunk.end();
        chunks.push(chunk);
    }
    Ok(chunks)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tile(chunks: &[(&[u8], &[u8])]) -> Vec<u8> {
        let mut t = (chunks.len() as u64).to_le_bytes().to_vec();
        for (md, data) in chunks {
            t.extend((data.len() as u32).to_le_bytes());
            t.extend((data.len() as u32).to_le_bytes());
            t.extend((md.len() as u32).to_le_bytes());
            t.extend(*md);
            t.extend(*data);
        }
        t
    }

    #[test]
    fn walks_chunks() {
        let t = tile(&[(b"m", b"abc"), (b"", b"de")]);
        let chunks = parse_chunks(&t).unwrap();
        assert_eq!(chunks.len(), 2);
        assert_eq!(&t[chunks[0].data_range().start as usize..][..3], b"abc");
        assert_eq!(&t[chunks[1].data_range().start as usize..][..2], b"de");
    }

    #[test]
    fn absurd_chunk_length_is_an_error() {
        let mut t = tile(&[(b"", b"abc")]);
        t[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
        let err = parse_chunks(&t).unwrap_err().to_string();
        assert!(err.contains("chunk claims"), "{err}");
        let mut t = tile(&[]);
        t[..8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(parse_chunks(&t).is_err());
    }
}
