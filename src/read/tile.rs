//! Data tiles of one field file of a fragment: where tile k lies (tile offsets and file
//! sizes from the fragment metadata), where its chunks lie (chunk headers, read without
//! decoding), and un-filtering one chunk. Bytes come from the fragment's store.

use std::sync::Arc;

use crate::array::field::Field;
use crate::array::fragment::{Fragment, FragmentMeta, TileList, METADATA_FILE};
use crate::error::{Error, Place, Result};
use crate::filter::{
    unfilter_chunk, unfilter_chunk_into, unfilter_string_chunk, ChunkContext, StringChunk,
};
use crate::format::chunked::{parse_chunk_count, parse_chunk_header, Chunk, CHUNK_HEADER_LEN};
use crate::format::{Datatype, Filter, FilterPipeline};
use crate::storage::Store;

/// The most of a tile the chunk-header walk asks the store to read ahead first.
const WALK_AHEAD: u64 = 16 << 20;

/// The three files a field may have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FileRole {
    /// Fixed values, or the per-tile offsets of a var field.
    Data,
    /// Var-size bytes.
    Var,
    /// One byte per cell, nullable fields.
    Validity,
}

/// Chunks of one tile, with offsets relative to the file.
#[derive(Debug, Clone)]
pub struct TileChunks {
    pub chunks: Vec<Chunk>,
    /// Start of each chunk's output within the unfiltered tile, plus the total at the end.
    pub starts: Vec<u64>,
}

impl TileChunks {
    pub fn unfiltered_len(&self) -> u64 {
        self.starts.last().copied().unwrap_or(0)
    }
}

/// One data file of a field, ready to serve tiles.
#[derive(Debug)]
pub struct TileFile {
    store: Arc<dyn Store>,
    /// The file's key in the store.
    pub key: String,
    pub file_name: String,
    /// The file size recorded in the footer: the end of the last tile.
    pub recorded_size: u64,
    pub offsets: Arc<Vec<u64>>,
    pub pipeline: FilterPipeline,
    pub ctx: ChunkContext,
    /// `fragment X, a0.tdb`: where every error about this file happens.
    pub place: Place,
}

impl TileFile {
    pub fn open(
        fragment: &Fragment,
        meta: &FragmentMeta,
        field: &Field,
        role: FileRole,
    ) -> Result<TileFile> {
        let schema = &meta.schema;
        let f = &meta.footer;
        let (file_name, list, sizes, pipeline, field_type, cell_size) = match role {
            FileRole::Data if field.is_var() => (
                field.data_file(),
                TileList::Offsets,
                &f.file_sizes,
                schema.offsets_filters.clone(),
                Datatype::UInt64,
                8,
            ),
            FileRole::Data => (
                field.data_file(),
                TileList::Offsets,
                &f.file_sizes,
                field.filters.clone(),
                field.datatype,
                field.file_cell_size(),
            ),
            FileRole::Var => (
                field.var_file(),
                TileList::VarOffsets,
                &f.file_var_sizes,
                field.filters.clone(),
                field.datatype,
                field.datatype.size(),
            ),
            FileRole::Validity => (
                field.validity_file(),
                TileList::ValidityOffsets,
                &f.file_validity_sizes,
                schema.validity_filters.clone(),
                Datatype::UInt8,
                1,
            ),
        };
        let place = meta.place().clone().in_file(file_name.as_str());
        let recorded_size = *sizes.get(field.slot).ok_or_else(|| {
            Error::corrupt(place.clone(), "footer has no file size for this field")
        })?;
        let offsets = meta.tile_list(list, field.slot)?;
        if (offsets.len() as u64) < meta.tile_count {
            // Named by the first tile without an offset, as every error about a tile is.
            return Err(Error::corrupt(
                place.clone().tile(offsets.len() as u64),
                format!(
                    "{METADATA_FILE} lists {} tile offsets for {} tiles",
                    offsets.len(),
                    meta.tile_count
                ),
            ));
        }
        Ok(TileFile {
            store: meta.store().clone(),
            key: fragment.file_key(&file_name),
            file_name,
            recorded_size,
            offsets,
            pipeline: if meta.key().is_some() {
                pipeline.with_encryption()
            } else {
                pipeline
            },
            ctx: ChunkContext {
                field_type,
                cell_size,
                format_version: f.version,
                key: meta.key(),
            },
            place,
        })
    }

    /// Start and persisted length of tile `k` in the file.
    pub fn tile_span(&self, k: u64) -> Result<(u64, u64)> {
        let start = *self
            .offsets
            .get(k as usize)
            .ok_or_else(|| Error::corrupt(self.tile_place(k), "no tile offset"))?;
        let end = match self.offsets.get(k as usize + 1) {
            Some(&next) if (k as usize + 1) < self.offsets.len() => next,
            _ => self.recorded_size,
        };
        if end < start {
            return Err(Error::corrupt(
                self.tile_place(k),
                format!("tile offsets go backwards ({start} then {end})"),
            ));
        }
        Ok((start, end - start))
    }

    /// `fragment X, a0.tdb, tile k`.
    pub fn tile_place(&self, k: u64) -> Place {
        self.place.clone().tile(k)
    }

    /// Walks the chunk headers of tile `k` (no decoding). The headers sit between the
    /// chunks: they are parsed out of reads of the tile's start of the store's
    /// [walk window](Store::walk_window), a new read only where a header lies past the
    /// bytes read so far (object stores: one request for the whole tile). `file_len` is
    /// the data file's real size.
    ///
    /// `headers_only`: the walk is all the caller wants (`tiles.json`), not the data after
    /// it, so the first read is only the chunk count and first header: a tile of one
    /// chunk costs those few bytes even on an object store, where the whole tile would
    /// otherwise come with them. A tile of several chunks is then read on as usual.
    pub fn chunks(&self, k: u64, file_len: u64, headers_only: bool) -> Result<TileChunks> {
        let (start, len) = self.tile_span(k)?;
        let place = || self.tile_place(k);
        if len == 0 {
            return Ok(TileChunks {
                chunks: Vec::new(),
                starts: vec![0],
            });
        }
        // The chunk count is checked against the tile length, and so that length against
        // the bytes really present: a lying offset or file size cannot make a garbage
        // count reserve memory.
        if start.saturating_add(len) > file_len {
            return Err(Error::corrupt(
                place(),
                format!(
                    "truncated file: the tile needs bytes {start}..{} but the file has {file_len} bytes",
                    start.saturating_add(len),
                ),
            ));
        }
        let window = self.store.walk_window().max(8 + CHUNK_HEADER_LEN);
        // Small windows over a large tile: have the store fetch the tile once, so each
        // window is not a round trip of its own. Not for a walk of the headers alone on
        // object storage, where that fetch is a GET of the whole tile (a tile of one
        // chunk costs a GET of its first 20 bytes instead); on a local disk every window
        // would be a random read of its own (`ls -l` of a fragment folder of the bench,
        // cold: 2575 reads of 4 KiB, 0.19 s), where the tile is one sequential read.
        if len > window && !(headers_only && self.store.is_remote()) {
            self.store.read_ahead(&self.key, start, len.min(WALK_AHEAD));
        }
        // `bytes` holds the tile from offset `at` on.
        let mut at = 0u64;
        let mut bytes = if headers_only {
            self.store
                .read_alone(&self.key, start, len.min(8 + CHUNK_HEADER_LEN))
                .map_err(|e| e.at(place()))?
        } else {
            self.read(place(), start, len.min(window))?
        };
        let count = parse_chunk_count(bytes.get(..8).unwrap_or(&bytes), len)
            .map_err(|e| Error::format(place(), e))?;
        let mut chunks = Vec::with_capacity(count as usize);
        let mut starts = Vec::with_capacity(count as usize + 1);
        let mut offset = 8u64;
        let mut total = 0u64;
        for i in 0..count {
            let need = CHUNK_HEADER_LEN.min(len - offset);
            if offset + need > at + bytes.len() as u64 {
                at = offset;
                bytes = self.read(
                    place().chunk(i as usize),
                    start + offset,
                    (len - offset).min(window),
                )?;
            }
            let from = (offset - at) as usize;
            let header = &bytes[from..from + need as usize];
            let chunk = parse_chunk_header(header, offset, len)
                .map_err(|e| Error::format(place().chunk(i as usize), e))?;
            starts.push(total);
            total += chunk.unfiltered_len as u64;
            offset = chunk.end();
            chunks.push(Chunk {
                metadata_offset: chunk.metadata_offset + start,
                ..chunk
            });
        }
        starts.push(total);
        Ok(TileChunks { chunks, starts })
    }

    /// Reads bytes of the file; errors are said to happen at `place` (tile and chunk).
    fn read(&self, place: Place, offset: u64, len: u64) -> Result<Vec<u8>> {
        self.store
            .read_range(&self.key, offset, len)
            .map_err(|e| e.at(place))
    }

    /// A chunk's metadata and filtered data, which lie back to back: one read, and the
    /// length of the metadata at its front.
    fn chunk_bytes(&self, place: &Place, chunk: &Chunk) -> Result<(Vec<u8>, usize)> {
        let span = chunk.metadata_range().start..chunk.end();
        let bytes = self.read(place.clone(), span.start, span.end - span.start)?;
        Ok((bytes, chunk.metadata_len as usize))
    }

    /// Un-filters chunk `i` of tile `k`.
    pub fn decode_chunk(&self, k: u64, i: usize, chunk: &Chunk) -> Result<Vec<u8>> {
        let place = self.tile_place(k).chunk(i);
        let (bytes, md_len) = self.chunk_bytes(&place, chunk)?;
        // Unfiltered data is the chunk as stored: hand the read buffer over, uncopied.
        if self.pipeline.filters.is_empty()
            && md_len == 0
            && bytes.len() == chunk.unfiltered_len as usize
        {
            return Ok(bytes);
        }
        let (md, data) = bytes.split_at(md_len.min(bytes.len()));
        unfilter_chunk(&self.pipeline, &self.ctx, md, data, chunk.unfiltered_len)
            .map_err(|e| Error::filter(place, e))
    }

    /// Whether chunk `chunk` is stored exactly as it decodes (no filter, no metadata):
    /// any range of it can then be read from the store as it is.
    pub fn is_plain(&self, chunk: &Chunk) -> bool {
        let span = chunk.metadata_range().start..chunk.end();
        self.pipeline.filters.is_empty()
            && chunk.metadata_len == 0
            && span.end - span.start == u64::from(chunk.unfiltered_len)
    }

    /// Appends bytes `[from, to)` of plain chunk `i` of tile `k` (see
    /// [`TileFile::is_plain`]) to `out`, read from the store: nothing is decoded and
    /// nothing else of the chunk is read.
    pub fn plain_range_into(
        &self,
        k: u64,
        i: usize,
        chunk: &Chunk,
        (from, to): (u64, u64),
        out: &mut Vec<u8>,
    ) -> Result<()> {
        let start = chunk.metadata_range().start;
        self.store
            .read_into(&self.key, start + from, to.saturating_sub(from), out)
            .map_err(|e| e.at(self.tile_place(k).chunk(i)))
    }

    /// Appends chunk `i` of tile `k`, un-filtered, to `out`. Unfiltered chunks are read
    /// straight into it: serving a plain tile then costs one copy out of the page cache.
    pub fn decode_chunk_into(
        &self,
        k: u64,
        i: usize,
        chunk: &Chunk,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        let place = self.tile_place(k).chunk(i);
        if self.pipeline.filters.is_empty() && chunk.metadata_len == 0 {
            let span = chunk.metadata_range().start..chunk.end();
            if span.end - span.start == u64::from(chunk.unfiltered_len) {
                return self
                    .store
                    .read_into(&self.key, span.start, span.end - span.start, out)
                    .map_err(|e| e.at(place));
            }
        }
        let (bytes, md_len) = self.chunk_bytes(&place, chunk)?;
        let (md, data) = bytes.split_at(md_len.min(bytes.len()));
        unfilter_chunk_into(
            &self.pipeline,
            &self.ctx,
            md,
            data,
            chunk.unfiltered_len,
            out,
        )
        .map_err(|e| Error::filter(place, e))
    }

    /// Un-filters chunk `i` of a var tile whose offsets are embedded (string mode).
    pub fn decode_string_chunk(&self, k: u64, i: usize, chunk: &Chunk) -> Result<StringChunk> {
        let place = self.tile_place(k).chunk(i);
        let (bytes, md_len) = self.chunk_bytes(&place, chunk)?;
        let (md, data) = bytes.split_at(md_len.min(bytes.len()));
        unfilter_string_chunk(&self.pipeline, &self.ctx, md, data, chunk.unfiltered_len)
            .map_err(|e| Error::filter(place, e))
    }

    /// Asks the store to fetch `[start, start + len)` of the file ahead of a reader.
    pub fn read_ahead(&self, start: u64, len: u64) {
        self.store.read_ahead(&self.key, start, len);
    }

    /// True when the pipeline can carry embedded offsets (RLE or DICTIONARY first).
    pub fn may_embed_offsets(&self) -> bool {
        matches!(
            self.pipeline.filters.first(),
            Some(Filter::Rle { .. }) | Some(Filter::Dictionary { .. })
        )
    }
}
