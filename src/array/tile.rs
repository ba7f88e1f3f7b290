//! Data tiles of one field file: where tile k lies (tile offsets + file sizes from the
//! fragment metadata), where its chunks lie (chunk headers, read without decoding), and
//! un-filtering one chunk.

use std::path::PathBuf;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::filter::{
    unfilter_chunk, unfilter_chunk_into, unfilter_string_chunk, ChunkContext, StringChunk,
};
use crate::format::chunked::{parse_chunk_count, parse_chunk_header, Chunk, CHUNK_HEADER_LEN};
use crate::format::{Datatype, Filter, FilterPipeline};

use super::field::Field;
use super::fragment::{FragmentMeta, TileList, METADATA_FILE};
use super::storage::DataFile;

/// The most of a tile the chunk-header walk reads in one pass first.
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
    pub path: PathBuf,
    pub file_name: String,
    /// The file size recorded in the footer: the end of the last tile.
    pub recorded_size: u64,
    pub offsets: Arc<Vec<u64>>,
    pub pipeline: FilterPipeline,
    pub ctx: ChunkContext,
    /// "fragment X, a0.tdb": prefixed to every error.
    pub context: String,
}

impl TileFile {
    pub fn open(
        meta: &FragmentMeta,
        field: &Field,
        role: FileRole,
        dir: &std::path::Path,
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
        let context = format!("{}, {}", meta.context(), file_name);
        let recorded_size = *sizes
            .get(field.slot)
            .ok_or_else(|| Error::corrupt(&context, "footer has no file size for this field"))?;
        let offsets = meta.tile_list(list, field.slot)?;
        if (offsets.len() as u64) < meta.tile_count {
            // Named by the first tile without an offset, as every error about a tile is.
            return Err(Error::corrupt(
                format!("{context}, tile {}", offsets.len()),
                format!(
                    "{METADATA_FILE} lists {} tile offsets for {} tiles",
                    offsets.len(),
                    meta.tile_count
                ),
            ));
        }
        Ok(TileFile {
            path: dir.join(&file_name),
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
            context,
        })
    }

    /// Start and persisted length of tile `k` in the file.
    pub fn tile_span(&self, k: u64) -> Result<(u64, u64)> {
        let start = *self
            .offsets
            .get(k as usize)
            .ok_or_else(|| Error::corrupt(self.tile_context(k), "no tile offset"))?;
        let end = match self.offsets.get(k as usize + 1) {
            Some(&next) if (k as usize + 1) < self.offsets.len() => next,
            _ => self.recorded_size,
        };
        if end < start {
            return Err(Error::corrupt(
                self.tile_context(k),
                format!("tile offsets go backwards ({start} then {end})"),
            ));
        }
        Ok((start, end - start))
    }

    pub fn tile_context(&self, k: u64) -> String {
        format!("{}, tile {k}", self.context)
    }

    /// Walks the chunk headers of tile `k` (a few small reads, no decoding).
    pub fn chunks(&self, file: &DataFile, k: u64) -> Result<TileChunks> {
        let (start, len) = self.tile_span(k)?;
        let ctx = || self.tile_context(k);
        if len == 0 {
            return Ok(TileChunks {
                chunks: Vec::new(),
                starts: vec![0],
            });
        }
        // The chunk count is checked against the tile length, and so that length against
        // the bytes really present: a lying offset or file size cannot make a garbage
        // count reserve memory.
        if start.saturating_add(len) > file.len() {
            return Err(Error::corrupt(
                ctx(),
                format!(
                    "truncated file: the tile needs bytes {start}..{} but the file has {} bytes",
                    start.saturating_add(len),
                    file.len()
                ),
            ));
        }
        // The headers are spread over the whole tile: on a cold file each small read
        // below is a disk round trip of its own. Reading the tile first (the data is
        // needed next anyway) turns them into one pass; a cached tile costs a probe.
        file.read_ahead(start, len.min(WALK_AHEAD));
        let count = parse_chunk_count(&self.read(file, &ctx(), start, 8.min(len))?, len)
            .map_err(|e| Error::format(ctx(), e))?;
        let mut chunks = Vec::with_capacity(count as usize);
        let mut starts = Vec::with_capacity(count as usize + 1);
        let mut offset = 8u64;
        let mut total = 0u64;
        for i in 0..count {
            let what = format!("{}, chunk {i}", ctx());
            let header = self.read(
                file,
                &what,
                start + offset,
                CHUNK_HEADER_LEN.min(len - offset),
            )?;
            let chunk = parse_chunk_header(&header, offset, len)
                .map_err(|e| Error::format(format!("{}, chunk {i}", ctx()), e))?;
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

    /// Opens the data file to read tile `k`; a missing file names the tile that needed it.
    pub fn open_file(&self, k: u64) -> Result<DataFile> {
        DataFile::open(&self.path).map_err(|e| match e {
            Error::Io { message, .. } => Error::corrupt(
                self.tile_context(k),
                format!("cannot open {}: {message}", self.path.display()),
            ),
            e => e,
        })
    }

    /// Reads bytes of the file; a short file is reported with `what` (tile and chunk).
    fn read(&self, file: &DataFile, what: &str, offset: u64, len: u64) -> Result<Vec<u8>> {
        file.read(offset, len).map_err(|e| match e {
            Error::Corrupt { reason, .. } => Error::corrupt(what, reason),
            e => e,
        })
    }

    /// A chunk's metadata and filtered data, which lie back to back: one read, and the
    /// length of the metadata at its front.
    fn chunk_bytes(&self, file: &DataFile, what: &str, chunk: &Chunk) -> Result<(Vec<u8>, usize)> {
        let span = chunk.metadata_range().start..chunk.end();
        let bytes = self.read(file, what, span.start, span.end - span.start)?;
        Ok((bytes, chunk.metadata_len as usize))
    }

    /// Un-filters chunk `i` of tile `k`.
    pub fn decode_chunk(
        &self,
        file: &DataFile,
        k: u64,
        i: usize,
        chunk: &Chunk,
    ) -> Result<Vec<u8>> {
        let what = format!("{}, chunk {i}", self.tile_context(k));
        let (bytes, md_len) = self.chunk_bytes(file, &what, chunk)?;
        // Unfiltered data is the chunk as stored: hand the read buffer over, uncopied.
        if self.pipeline.filters.is_empty()
            && md_len == 0
            && bytes.len() == chunk.unfiltered_len as usize
        {
            return Ok(bytes);
        }
        let (md, data) = bytes.split_at(md_len.min(bytes.len()));
        unfilter_chunk(&self.pipeline, &self.ctx, md, data, chunk.unfiltered_len)
            .map_err(|e| Error::filter(what, e))
    }

    /// Appends chunk `i` of tile `k`, un-filtered, to `out`. Unfiltered chunks are read
    /// straight into it: serving a plain tile then costs one copy out of the page cache.
    pub fn decode_chunk_into(
        &self,
        file: &DataFile,
        k: u64,
        i: usize,
        chunk: &Chunk,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        if self.pipeline.filters.is_empty() && chunk.metadata_len == 0 {
            let span = chunk.metadata_range().start..chunk.end();
            if span.end - span.start == u64::from(chunk.unfiltered_len) {
                let what = || format!("{}, chunk {i}", self.tile_context(k));
                return file
                    .read_into(span.start, span.end - span.start, out)
                    .map_err(|e| match e {
                        Error::Corrupt { reason, .. } => Error::corrupt(what(), reason),
                        e => e,
                    });
            }
        }
        let what = format!("{}, chunk {i}", self.tile_context(k));
        let (bytes, md_len) = self.chunk_bytes(file, &what, chunk)?;
        let (md, data) = bytes.split_at(md_len.min(bytes.len()));
        unfilter_chunk_into(
            &self.pipeline,
            &self.ctx,
            md,
            data,
            chunk.unfiltered_len,
            out,
        )
        .map_err(|e| Error::filter(what, e))
    }

    /// Un-filters chunk `i` of a var tile whose offsets are embedded (string mode).
    pub fn decode_string_chunk(
        &self,
        file: &DataFile,
        k: u64,
        i: usize,
        chunk: &Chunk,
    ) -> Result<StringChunk> {
        let what = format!("{}, chunk {i}", self.tile_context(k));
        let (bytes, md_len) = self.chunk_bytes(file, &what, chunk)?;
        let (md, data) = bytes.split_at(md_len.min(bytes.len()));
        unfilter_string_chunk(&self.pipeline, &self.ctx, md, data, chunk.unfiltered_len)
            .map_err(|e| Error::filter(what, e))
    }

    /// True when the pipeline can carry embedded offsets (RLE or DICTIONARY first).
    pub fn may_embed_offsets(&self) -> bool {
        matches!(
            self.pipeline.filters.first(),
            Some(Filter::Rle { .. }) | Some(Filter::Dictionary { .. })
        )
    }
}
