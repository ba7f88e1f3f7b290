//! A dense fragment's stored tile as something to point at: the object that holds it,
//! where it lies, and the [`TileCodec`] that decodes it; and, where the tile is one
//! filter chunk that a standard codec reads as it is (the bytes of one zstd frame, one
//! zlib stream, raw values), where those bytes lie. A kerchunk reference set is made of
//! these (`view/tiledb/zarr/refs.rs`): nothing here decodes a tile, the few bytes read
//! are chunk headers and a filter's own metadata.

use crate::error::{Error, Place, Result};
use crate::format::chunked::Chunk;
use crate::format::datatype::decode_int;
use crate::format::schema::Layout;
use crate::format::Filter;

use super::chunk_cache::Cached;
use super::field::FieldReader;
use super::tile::{FileRole, TileFile};
use super::tile_codec::TileCodec;

/// Where a stored tile lies and how it decodes.
#[derive(Debug, Clone)]
pub struct StoredTile {
    /// The object holding it: the store's URI and the file's key (`file:///data/a/
    /// __fragments/F/a0.tdb`, `s3://bucket/a/__fragments/F/a0.tdb`).
    pub uri: String,
    pub offset: u64,
    pub len: u64,
    pub codec: TileCodec,
    /// The fragment is encrypted: its tiles need the key, which no reference carries.
    pub encrypted: bool,
    /// `fragment F, a0.tdb, tile k`, for messages.
    pub place: Place,
}

impl StoredTile {
    /// The object as a reader opens it: a local file by its absolute path, an object
    /// by its URL (`s3://bucket/key`).
    pub fn url(&self) -> String {
        self.uri
            .strip_prefix("file://")
            .unwrap_or(&self.uri)
            .to_string()
    }
}

/// A standard codec that reads a one-chunk tile's stored bytes as they are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Standard {
    /// No filter: the values themselves.
    Raw,
    /// ZSTD alone: one zstd frame (numcodecs `zstd`).
    Zstd,
    /// GZIP alone: TileDB writes a zlib stream (`deflateInit`; numcodecs `zlib`).
    Zlib,
    /// BYTESHUFFLE then ZSTD: one zstd frame of the shuffled values (numcodecs
    /// `shuffle` of `elementsize`, then `zstd`).
    ShuffleZstd { elementsize: u64 },
}

/// The bytes of a one-chunk tile that [`Standard`] decodes: where they lie in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StandardSpan {
    pub standard: Standard,
    pub offset: u64,
    pub len: u64,
}

/// The zstd frame magic number, as stored.
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

impl FieldReader<'_> {
    /// Tile `k` of the field's `role` file (fixed-size values, or validity) of this
    /// fragment, with its codec: the field's type and cell size, the fragment's format
    /// version and pipeline, and the tile's shape: a dense fragment's tile extents and
    /// cell order, a sparse one's cells (one dimension). The
    /// tile's chunk headers are walked (and checked against the size the metadata
    /// promises), so a reference never points at a tile fragfs itself cannot read.
    pub fn stored_tile(&self, role: FileRole, k: u64) -> Result<StoredTile> {
        let place = || self.place().in_file(self.field.data_file()).tile(k);
        if self.field.is_var() || !self.field.stored || self.field.coords.is_some() {
            return Err(Error::corrupt(
                place(),
                "only the stored tiles of fixed-size fields can be referenced",
            ));
        }
        let tf = self.tile_file(role)?;
        self.tile_chunk_headers(role, k)?;
        let (offset, len) = tf.tile_span(k)?;
        let schema = &self.meta.schema;
        // A dense tile is a space tile, in the schema's cell order; a sparse one a list
        // of cells in global order (the last one partly full).
        let (tile_shape, col_major) = match self.meta.footer.dense {
            true => (
                schema
                    .dimensions
                    .iter()
                    .map(|d| {
                        d.tile_extent
                            .as_deref()
                            .and_then(|e| decode_int(e, d.datatype))
                            .and_then(|e| u64::try_from(e).ok())
                            .filter(|&e| e > 0)
                            .ok_or_else(|| {
                                Error::corrupt(
                                    place(),
                                    format!("dimension {}: no tile extent", d.name),
                                )
                            })
                    })
                    .collect::<Result<Vec<u64>>>()?,
                schema.cell_order == Layout::ColMajor,
            ),
            false => (vec![self.meta.tile_cells(k)], false),
        };
        let mut pipeline = tf.pipeline.clone();
        let encrypted = pipeline.filters.last() == Some(&Filter::Encryption);
        if encrypted {
            pipeline.filters.pop();
        }
        Ok(StoredTile {
            uri: format!("{}/{}", self.meta.store().uri(), tf.key),
            offset,
            len,
            codec: TileCodec {
                datatype: tf.ctx.field_type,
                cell_size: tf.ctx.cell_size,
                format_version: tf.ctx.format_version,
                pipeline,
                tile_shape,
                col_major,
            },
            encrypted,
            place: tf.tile_place(k),
        })
    }

    /// Where a standard codec finds tile `k` of `tile` (from [`FieldReader::stored_tile`])
    /// whole, if it can: the tile is one filter chunk, its pipeline one of [`Standard`]'s,
    /// and the filter's own metadata says one part (reads those few bytes, and the first
    /// bytes of the frame or stream, whose header is checked). `None` otherwise.
    pub fn standard_span(
        &self,
        role: FileRole,
        k: u64,
        tile: &StoredTile,
    ) -> Result<Option<StandardSpan>> {
        if tile.encrypted || !tile.codec.is_row_major() {
            return Ok(None);
        }
        let index = self.tile_chunk_headers(role, k)?;
        let Cached::Chunks(chunks) = &*index else {
            return Err(Error::corrupt(
                tile.place.clone(),
                "the chunk cache holds another kind of item than a chunk index",
            ));
        };
        let [chunk] = chunks.chunks.as_slice() else {
            return Ok(None);
        };
        let tf = self.tile_file(role)?;
        let span = |standard, offset, len| StandardSpan {
            standard,
            offset,
            len,
        };
        let data = chunk.data_range();
        let filters = tile.codec.pipeline.filters.as_slice();
        Ok(match filters {
            [] if chunk.metadata_len == 0 && chunk.filtered_len == chunk.unfiltered_len => {
                Some(span(Standard::Raw, data.start, data.end - data.start))
            }
            [Filter::Zstd { .. }] | [Filter::Gzip { .. }] => {
                let zstd = matches!(filters, [Filter::Zstd { .. }]);
                let Some(head) = self.filter_header(&tf, chunk, 4, tile)? else {
                    return Ok(None);
                };
                let one = head.md_parts == 0
                    && head.parts == [(chunk.unfiltered_len, chunk.filtered_len)];
                let magic_ok = match zstd {
                    true => head.first.starts_with(&ZSTD_MAGIC),
                    false => is_zlib_header(&head.first),
                };
                let standard = if zstd { Standard::Zstd } else { Standard::Zlib };
                (one && magic_ok).then(|| span(standard, data.start, data.end - data.start))
            }
            [Filter::ByteShuffle, Filter::Zstd { .. }] => self.shuffle_zstd(&tf, chunk, tile)?,
            _ => None,
        })
    }

    /// BYTESHUFFLE then ZSTD, one chunk: ZSTD's metadata part is BYTESHUFFLE's header,
    /// which must say one part of the whole chunk; the data part is one zstd frame.
    fn shuffle_zstd(
        &self,
        tf: &TileFile,
        chunk: &Chunk,
        tile: &StoredTile,
    ) -> Result<Option<StandardSpan>> {
        let Some(head) = self.filter_header(tf, chunk, 0, tile)? else {
            return Ok(None);
        };
        let [(md_raw, md_packed), (raw, packed)] = head.parts[..] else {
            return Ok(None);
        };
        if head.md_parts != 1 || md_raw != 8 || raw != chunk.unfiltered_len {
            return Ok(None);
        }
        let data = chunk.data_range();
        let packed_md = self.read_exact(tf, data.start, u64::from(md_packed) + 4, tile)?;
        let Ok(shuffle) = zstd::bulk::decompress(&packed_md[..md_packed as usize], 8) else {
            return Ok(None);
        };
        let mut want = 1u32.to_le_bytes().to_vec();
        want.extend(chunk.unfiltered_len.to_le_bytes());
        let frame_start = data.start + u64::from(md_packed);
        let elementsize = tile.codec.datatype.size();
        let whole = u64::from(chunk.unfiltered_len).is_multiple_of(elementsize);
        Ok((shuffle == want
            && packed_md[md_packed as usize..].starts_with(&ZSTD_MAGIC)
            && u64::from(packed) == data.end - frame_start
            && whole)
            .then_some(StandardSpan {
                standard: Standard::ShuffleZstd { elementsize },
                offset: frame_start,
                len: u64::from(packed),
            }))
    }

    /// The compression filter's header of a one-chunk tile (its part counts and each
    /// part's (uncompressed, compressed) sizes, which must add up to the chunk's data),
    /// and the first `peek` bytes of the data. `None` where the header is not one.
    fn filter_header(
        &self,
        tf: &TileFile,
        chunk: &Chunk,
        peek: u64,
        tile: &StoredTile,
    ) -> Result<Option<Header>> {
        let md = chunk.metadata_range();
        let peek = peek.min(u64::from(chunk.filtered_len));
        let bytes = self.read_exact(tf, md.start, md.end - md.start + peek, tile)?;
        let u32_at = |at: usize| -> Option<u32> {
            Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
        };
        let (Some(md_parts), Some(data_parts)) = (u32_at(0), u32_at(4)) else {
            return Ok(None);
        };
        let count = u64::from(md_parts) + u64::from(data_parts);
        if 8 + 8 * count != u64::from(chunk.metadata_len) {
            return Ok(None);
        }
        let parts: Vec<(u32, u32)> = (0..count as usize)
            .filter_map(|p| Some((u32_at(8 + 8 * p)?, u32_at(12 + 8 * p)?)))
            .collect();
        let packed: u64 = parts.iter().map(|&(_, c)| u64::from(c)).sum();
        if packed != u64::from(chunk.filtered_len) {
            return Ok(None);
        }
        let first = bytes[chunk.metadata_len as usize..].to_vec();
        Ok(Some(Header {
            md_parts,
            parts,
            first,
        }))
    }

    fn read_exact(
        &self,
        tf: &TileFile,
        offset: u64,
        len: u64,
        tile: &StoredTile,
    ) -> Result<Vec<u8>> {
        let bytes = self
            .meta
            .store()
            .read_range(&tf.key, offset, len)
            .map_err(|e| e.at(tile.place.clone()))?;
        if bytes.len() as u64 != len {
            return Err(Error::corrupt(
                tile.place.clone(),
                format!("{} bytes at {offset}, not {len}", bytes.len()),
            ));
        }
        Ok(bytes)
    }
}

/// A compression filter's header, as much as the standard codecs need.
struct Header {
    md_parts: u32,
    /// Per part, metadata parts first: (uncompressed, compressed) bytes.
    parts: Vec<(u32, u32)>,
    /// The first bytes of the compressed data (a frame's or stream's header).
    first: Vec<u8>,
}

/// A zlib stream's two header bytes (RFC 1950): deflate, a window of at most 32 KiB, no
/// preset dictionary (which numcodecs could not supply), and the check bits.
fn is_zlib_header(b: &[u8]) -> bool {
    match b {
        [cmf, flg, ..] => {
            cmf & 0x0F == 8
                && cmf >> 4 <= 7
                && flg & 0x20 == 0
                && (u16::from(*cmf) << 8 | u16::from(*flg)) % 31 == 0
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zlib_headers_are_recognised() {
        let z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::new(6));
        let bytes = {
            use std::io::Write;
            let mut z = z;
            z.write_all(b"values").unwrap();
            z.finish().unwrap()
        };
        assert!(is_zlib_header(&bytes));
        assert!(!is_zlib_header(&[0x1f, 0x8b]), "gzip is not zlib");
        assert!(!is_zlib_header(&ZSTD_MAGIC));
        assert!(!is_zlib_header(&[0x78]));
    }
}
