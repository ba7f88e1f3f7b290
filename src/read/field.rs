//! Bytes of a field's raw files (`values.bin`, `offsets.bin`, `validity.bin`), served
//! lazily: a byte range is mapped to the tiles it overlaps, each tile to the chunks it
//! needs, and only those chunks are un-filtered (through the shared cache).

use std::sync::Arc;

use crate::array::dense_grid::DenseGrid;
use crate::array::field::Field;
use crate::array::fragment::{Fragment, FragmentMeta};
use crate::error::{Error, Place, Result};
use crate::filter::StringChunk;
use crate::format::chunked::Chunk;

use super::chunk_cache::{CacheKey, Cached, Item};
use super::engine::ReadEngine;
use super::raw_file::RawFile;
use super::spill::SpillKey;
use super::tile::{FileRole, TileFile};

/// Bytes a read reserves up front at most.
const READ_RESERVE: usize = 4 << 20;

/// Reads the raw files of one field of one fragment (made by [`ReadEngine::field`]).
pub struct FieldReader<'a> {
    pub fragment: &'a Fragment,
    pub meta: &'a FragmentMeta,
    pub field: &'a Field,
    pub engine: &'a ReadEngine,
}

impl FieldReader<'_> {
    /// Exact size of a virtual file, from metadata alone.
    pub fn size(&self, file: RawFile) -> Result<u64> {
        self.check_tile_count()?;
        let cells = self.meta.cell_count();
        Ok(match file {
            RawFile::Values if self.field.is_var() => *self.var_starts()?.last().unwrap_or(&0),
            RawFile::Values => cells.saturating_mul(self.field.cell_size()),
            RawFile::Offsets => cells.saturating_mul(8),
            RawFile::Validity => cells,
        })
    }

    /// Sizes come from the tile count, which the footer gives (sparse) or the non-empty
    /// domain implies (dense); a corrupt one could promise trillions of cells that no
    /// tile holds (and endless synthesized coordinates). The tile offsets the metadata
    /// lists for the first attribute (one list per fragment, metadata only, no tile read)
    /// must cover every tile.
    fn check_tile_count(&self) -> Result<()> {
        self.meta.check_tile_count()
    }

    /// Start of each var tile in `values.bin`, plus the total at the end (computed once
    /// per fragment and field).
    fn var_starts(&self) -> Result<Arc<Vec<u64>>> {
        self.meta
            .var_tile_starts(self.field.slot, &self.field.var_file())
    }

    /// `fragment F`: where errors about this field happen.
    pub(super) fn place(&self) -> Place {
        self.meta.place().clone()
    }

    /// Bytes per tile of `file` when all tiles but the last have the same size.
    fn uniform_tile_len(&self, file: RawFile) -> u64 {
        let per_cell = match file {
            RawFile::Values => self.field.cell_size(),
            RawFile::Offsets => 8,
            RawFile::Validity => 1,
        };
        self.meta.cells_per_tile.saturating_mul(per_cell)
    }

    /// Reads `[offset, offset + len)` of a virtual file (clipped to its size).
    pub fn read(&self, file: RawFile, offset: u64, len: u64) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.read_into(file, offset, len, &mut out)?;
        Ok(out)
    }

    /// Appends `[offset, offset + len)` of a virtual file (clipped to its size) to `out`.
    /// Chunks the range covers whole and the cache does not hold are un-filtered straight
    /// into `out` and not cached: a sequential reader never reads them again (the
    /// kernel keeps the pages), so caching them would only cost a copy and fresh memory.
    pub fn read_into(&self, file: RawFile, offset: u64, len: u64, out: &mut Vec<u8>) -> Result<()> {
        let size = self.size(file)?;
        let end = offset.saturating_add(len).min(size);
        if offset >= end {
            return Ok(());
        }
        if !self.field.stored {
            out.extend_from_slice(&self.synthesized(offset, end)?);
            return Ok(());
        }
        // Plain tiles go straight from their chunks into the output; the others (offsets,
        // strings, legacy coordinates) are assembled.
        let direct_role = match file {
            RawFile::Validity => Some(FileRole::Validity),
            RawFile::Values if !self.field.is_var() && self.field.coords.is_none() => {
                Some(FileRole::Data)
            }
            _ => None,
        };
        let var_starts = self.var_starts_of(file)?;
        // Reserved up to a bound, then grown as tiles really decode: the size comes from
        // metadata, and a lying var size (a "1 TiB tile") must fail on its chunks, not
        // reserve a terabyte first.
        out.reserve(((end - offset) as usize).min(READ_RESERVE));
        let mut pos = offset;
        while pos < end {
            let (k, tile_start, tile_end) =
                self.tile_at(file, pos, var_starts.as_ref().map(|s| s.as_slice()))?;
            let a = pos - tile_start;
            let b = end.min(tile_end) - tile_start;
            match direct_role {
                Some(role) => self.tile_bytes_into(role, k, a, b, out)?,
                None => out.extend_from_slice(&self.tile_range(
                    file,
                    k,
                    a,
                    b,
                    var_starts.as_ref().map(|s| s.as_slice()),
                )?),
            }
            pos = tile_start + b;
        }
        Ok(())
    }

    /// Read-ahead for a sequential reader, run by a worker thread: brings the stored
    /// tiles that a read of `[offset, offset + len)` will need into the page cache and
    /// walks their chunk headers, so the reader's own reads of them wait neither for the
    /// disk nor for the walk. Nothing is decoded.
    pub fn read_ahead(&self, file: RawFile, offset: u64, len: u64) -> Result<()> {
        let end = offset.saturating_add(len).min(self.size(file)?);
        if offset >= end || !self.field.stored {
            return Ok(());
        }
        let var_starts = self.var_starts_of(file)?;
        let (first, ..) = self.tile_at(file, offset, var_starts.as_ref().map(|s| s.as_slice()))?;
        let (last, ..) = self.tile_at(file, end - 1, var_starts.as_ref().map(|s| s.as_slice()))?;
        let roles: &[FileRole] = match file {
            RawFile::Values if self.field.is_var() => &[FileRole::Var, FileRole::Data],
            RawFile::Values | RawFile::Offsets => &[FileRole::Data],
            RawFile::Validity => &[FileRole::Validity],
        };
        let files = roles
            .iter()
            .map(|&role| Ok((role, self.tile_file(role)?)))
            .collect::<Result<Vec<_>>>()?;
        // An object store fetches read-ahead in the background: the whole range is asked
        // for first, so all its requests are in flight while the headers are walked. A
        // local store reads ahead on this thread: tile by tile, in the reader's order,
        // each tile brought in and then its chunk headers walked (a small read per
        // chunk, from the page cache now), so each tile's index is ready as soon as its
        // bytes are, not once the whole range is in.
        let remote = self.meta.store().is_remote();
        if remote {
            for (_, tf) in &files {
                let (start, _) = tf.tile_span(first)?;
                let (last_start, last_len) = tf.tile_span(last)?;
                let stop = last_start.saturating_add(last_len);
                if stop > start {
                    tf.read_ahead(start, stop - start);
                }
            }
        }
        for k in first..=last {
            for (role, tf) in &files {
                if !remote {
                    let (start, len) = tf.tile_span(k)?;
                    tf.read_ahead(start, len);
                }
                self.chunk_index(tf, *role, k, false)?;
            }
        }
        Ok(())
    }

    /// The var tiles' starts in `values.bin` when `file` is that of a var field.
    fn var_starts_of(&self, file: RawFile) -> Result<Option<Arc<Vec<u64>>>> {
        Ok(if file == RawFile::Values && self.field.is_var() {
            Some(self.var_starts()?)
        } else {
            None
        })
    }

    /// The tile holding byte `pos` of a virtual file: its number, and where it starts and
    /// ends in the file.
    fn tile_at(
        &self,
        file: RawFile,
        pos: u64,
        var_starts: Option<&[u64]>,
    ) -> Result<(u64, u64, u64)> {
        let (k, start, end) = match var_starts {
            Some(starts) => {
                // Last tile whose start is <= pos (skipping empty tiles).
                let k = starts.partition_point(|&s| s <= pos).saturating_sub(1);
                let end = starts.get(k + 1).copied().unwrap_or(0);
                (k as u64, starts.get(k).copied().unwrap_or(0), end)
            }
            None => {
                let stride = self.uniform_tile_len(file).max(1);
                let k = (pos / stride).min(self.meta.tile_count.saturating_sub(1));
                let start = k * stride;
                let tile_len = self.meta.tile_cells(k) * (stride / self.meta.cells_per_tile.max(1));
                (k, start, start + tile_len)
            }
        };
        if end <= pos {
            return Err(Error::corrupt(
                self.place().in_file(self.field.data_file()),
                format!("no tile holds byte {pos} of {}", file.name()),
            ));
        }
        Ok((k, start, end))
    }

    /// Bytes `[a, b)` of the coordinates of a dense fragment's dimension, which TileDB
    /// does not store: computed from the tile grid, cell by cell.
    fn synthesized(&self, a: u64, b: u64) -> Result<Vec<u8>> {
        let grid = DenseGrid::new(&self.meta.schema, &self.meta.footer)
            .map_err(|r| Error::corrupt(self.place(), r))?;
        let dim = self
            .meta
            .schema
            .dimensions
            .iter()
            .position(|d| d.name == self.field.name)
            .ok_or_else(|| {
                Error::corrupt(self.place(), format!("no dimension {}", self.field.name))
            })?;
        let size = self.field.datatype.size().max(1);
        let mut out = Vec::with_capacity((b - a) as usize);
        for cell in a / size..b.div_ceil(size) {
            let coordinate = grid.coordinate(cell, dim).unwrap_or_default();
            let bytes = (coordinate as i64).to_le_bytes();
            out.extend_from_slice(&bytes[..size as usize]);
        }
        let skip = (a % size) as usize;
        out.drain(..skip);
        out.truncate((b - a) as usize);
        Ok(out)
    }

    pub(super) fn tile_file(&self, role: FileRole) -> Result<TileFile> {
        TileFile::open(self.fragment, self.meta, self.field, role)
    }

    /// Bytes `[a, b)` of tile `k` of a virtual file.
    fn tile_range(
        &self,
        file: RawFile,
        k: u64,
        a: u64,
        b: u64,
        var_starts: Option<&[u64]>,
    ) -> Result<Vec<u8>> {
        match file {
            RawFile::Validity => self.tile_bytes(FileRole::Validity, k, a, b),
            RawFile::Values if !self.field.is_var() => match self.field.coords {
                Some(coords) => {
                    // One dimension of a legacy `__coords.tdb` tile (formats 1-4).
                    let (from, to) = coords.source_range(self.meta.tile_cells(k), a, b);
                    let source = self.tile_bytes(FileRole::Data, k, from, to)?;
                    coords.extract(a, b, &source).ok_or_else(|| {
                        Error::corrupt(
                            self.place().in_file(self.field.data_file()).tile(k),
                            "coordinate tile is shorter than its cells",
                        )
                    })
                }
                None => self.tile_bytes(FileRole::Data, k, a, b),
            },
            RawFile::Values => match self.string_tile(k)? {
                Some(tile) => {
                    let place = self.tile_file(FileRole::Var)?.tile_place(k);
                    slice(&tile.strings("a string tile")?.bytes, a, b, place)
                }
                None => self.tile_bytes(FileRole::Var, k, a, b),
            },
            RawFile::Offsets => {
                let base = match var_starts {
                    Some(s) => s[k as usize],
                    None => self.var_starts()?[k as usize],
                };
                let (a8, b8) = (a / 8 * 8, b.div_ceil(8) * 8);
                let raw = match self.string_tile(k)? {
                    Some(tile) => {
                        let offsets = tile.strings("a string tile")?.offsets.as_slice();
                        let (from, to) =
                            ((a8 / 8) as usize, ((b8 / 8) as usize).min(offsets.len()));
                        offsets
                            .get(from..to)
                            .unwrap_or(&[])
                            .iter()
                            .flat_map(|o| o.to_le_bytes())
                            .collect()
                    }
                    None => self.tile_bytes(FileRole::Data, k, a8, b8)?,
                };
                let shifted: Vec<u8> = raw
                    .chunks_exact(8)
                    .flat_map(|c| {
                        let v = u64::from_le_bytes(c.try_into().unwrap_or([0; 8]));
                        v.wrapping_add(base).to_le_bytes()
                    })
                    .collect();
                slice(
                    &shifted,
                    a - a8,
                    b - a8,
                    self.place()
                        .in_file(self.field.data_file())
                        .tile(k)
                        .detail("offsets"),
                )
            }
        }
    }

    /// The chunk index of tile `k` of the field's `role` file (cached), checked against
    /// the size the metadata promises.
    pub fn tile_chunks(&self, role: FileRole, k: u64) -> Result<Arc<Cached>> {
        let tf = self.tile_file(role)?;
        self.chunk_index(&tf, role, k, false)
    }

    /// [`FieldReader::tile_chunks`] for a caller that wants the chunk facts and not the
    /// data (`tiles.json`): a tile not walked yet is walked reading its headers only.
    pub fn tile_chunk_headers(&self, role: FileRole, k: u64) -> Result<Arc<Cached>> {
        let tf = self.tile_file(role)?;
        self.chunk_index(&tf, role, k, true)
    }

    /// The chunk index of tile `k` of a file, checked against the size metadata promises.
    fn chunk_index(
        &self,
        tf: &TileFile,
        role: FileRole,
        k: u64,
        headers_only: bool,
    ) -> Result<Arc<Cached>> {
        let key = self.key(role, k, Item::ChunkIndex);
        self.engine.cache().get_or_load(key, || {
            let file_len = self.fragment.file_size(&tf.file_name, &tf.tile_place(k))?;
            let chunks = tf.chunks(k, file_len, headers_only)?;
            let cells = self.meta.tile_cells(k);
            let expected = match role {
                FileRole::Data => cells.saturating_mul(self.field.file_cell_size()),
                FileRole::Validity => cells,
                FileRole::Var => self
                    .var_starts()
                    .map(|s| s[k as usize + 1] - s[k as usize])?,
            };
            let embedded_offsets =
                role == FileRole::Data && self.field.is_var() && chunks.chunks.is_empty();
            if chunks.unfiltered_len() != expected && !embedded_offsets {
                return Err(Error::corrupt(
                    tf.tile_place(k),
                    format!(
                        "chunks add up to {} bytes, metadata says {expected}",
                        chunks.unfiltered_len()
                    ),
                ));
            }
            Ok(Cached::Chunks(chunks))
        })
    }

    fn key(&self, role: FileRole, tile: u64, item: Item) -> CacheKey {
        CacheKey::Tile {
            fragment: self.fragment.id,
            slot: self.field.slot,
            role,
            tile,
            item,
        }
    }

    /// Un-filtered bytes `[a, b)` of tile `k` of one data file.
    fn tile_bytes(&self, role: FileRole, k: u64, a: u64, b: u64) -> Result<Vec<u8>> {
        let mut out = Vec::with_capacity(((b - a) as usize).min(READ_RESERVE));
        self.tile_bytes_into(role, k, a, b, &mut out)?;
        Ok(out)
    }

    /// Appends bytes `[a, b)` of tile `k` to `out`, decoding only the chunks they
    /// overlap: those covered whole straight into `out` (unless cached), the ones cut by
    /// the range into the cache, where the neighbouring read finds them.
    fn tile_bytes_into(
        &self,
        role: FileRole,
        k: u64,
        a: u64,
        b: u64,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        let tf = self.tile_file(role)?;
        let index = self.chunk_index(&tf, role, k, false)?;
        let index = index.chunks("a chunk index")?;
        let cache = self.engine.cache();
        let mut served = 0u64;
        // Chunks overlapping [a, b): the first is the last one starting at or before a.
        let first = index.starts.partition_point(|&s| s <= a).saturating_sub(1);
        for (i, chunk) in index.chunks.iter().enumerate().skip(first) {
            let (start, end) = (index.starts[i], index.starts[i + 1]);
            if start >= b {
                break;
            }
            if end <= a {
                continue;
            }
            let key = self.key(role, k, Item::Chunk(i));
            let (from, to) = (a.max(start) - start, b.min(end) - start);
            if !self.engine.cache_fits_chunk(end - start) {
                // Larger than the whole cache: kept in the spill, so the reads that cut
                // it do not each decode it again.
                let len = end - start;
                served += self.large_chunk_into(&tf, key, k, (i, chunk, len), (from, to), out)?;
                continue;
            }
            if a <= start && end <= b && !cache.contains(&key) {
                let before = out.len();
                self.engine.count_decoded();
                tf.decode_chunk_into(k, i, chunk, out)?;
                let got = (out.len() - before) as u64;
                if got != end - start {
                    return Err(Error::corrupt(
                        tf.tile_place(k).chunk(i),
                        format!("decoded {got} bytes, its header says {}", end - start),
                    ));
                }
                served += got;
                continue;
            }
            // A chunk this read finishes (it starts before the read and ends inside it)
            // is one a forward reader does not come back for: it leaves the cache once
            // served, so a long scan in reads that cut chunks does not fill the cache
            // (and the daemon's memory) with chunks nobody reads again. Only the chunk
            // cut at a read's end stays, for the next read.
            let finishes = start < a && end <= b;
            let decoded = cache.get_or_load(key.clone(), || {
                self.engine.count_decoded();
                tf.decode_chunk(k, i, chunk).map(Cached::Bytes)
            })?;
            if finishes {
                cache.remove(&key);
            }
            let bytes = decoded.bytes("a decoded chunk")?;
            let part = bytes.get(from as usize..to as usize).ok_or_else(|| {
                Error::corrupt(
                    tf.tile_place(k).chunk(i),
                    format!("decoded {} bytes, needed {from}..{to}", bytes.len()),
                )
            })?;
            out.extend_from_slice(part);
            served += part.len() as u64;
        }
        if served != b - a {
            return Err(Error::corrupt(
                tf.tile_place(k),
                format!("tile holds {served} of the bytes {a}..{b}"),
            ));
        }
        Ok(())
    }

    /// Appends bytes `[from, to)` of chunk `i` (of `len` decoded bytes) of tile `k`, a
    /// chunk larger than the engine cache, to `out`; returns how many. A plain chunk
    /// (stored as it decodes) is read by range from the store, nothing decoded. A read
    /// that covers the chunk whole and finds it in no spill decodes it straight into
    /// `out` (a sequential reader does not come back for it); any other decodes it once
    /// into the spill and reads its range from there. A chunk the spill could not keep
    /// is served from memory this once.
    fn large_chunk_into(
        &self,
        tf: &TileFile,
        key: CacheKey,
        k: u64,
        (i, chunk, len): (usize, &Chunk, u64),
        (from, to): (u64, u64),
        out: &mut Vec<u8>,
    ) -> Result<u64> {
        if tf.is_plain(chunk) {
            let before = out.len();
            tf.plain_range_into(k, i, chunk, (from, to), out)?;
            return Ok((out.len() - before) as u64);
        }
        let spill = self.engine.spill();
        let key = SpillKey::Chunk(key);
        if from == 0 && to == len && !spill.contains(&key) {
            let before = out.len();
            self.engine.count_decoded();
            tf.decode_chunk_into(k, i, chunk, out)?;
            let got = (out.len() - before) as u64;
            if got != len {
                return Err(Error::corrupt(
                    tf.tile_place(k).chunk(i),
                    format!("decoded {got} bytes, its header says {len}"),
                ));
            }
            return Ok(got);
        }
        let decoded = spill.get_or_load(key.clone(), || {
            self.engine.count_decoded();
            tf.decode_chunk(k, i, chunk)
        })?;
        if decoded.len() != len {
            // A spilled chunk is only kept if it decoded whole; this one did not.
            spill.remove(&key);
            return Err(Error::corrupt(
                tf.tile_place(k).chunk(i),
                format!("decoded {} bytes, its header says {len}", decoded.len()),
            ));
        }
        let before = out.len();
        decoded.read_into(from, to - from, out)?;
        Ok((out.len() - before) as u64)
    }

    /// For var fields: the tile decoded in string mode when its offsets are embedded in
    /// the var data (RLE/DICTIONARY strings, `05` §4), else `None`.
    fn string_tile(&self, k: u64) -> Result<Option<Arc<Cached>>> {
        let offsets_tf = self.tile_file(FileRole::Data)?;
        let index = self.chunk_index(&offsets_tf, FileRole::Data, k, false)?;
        let index = index.chunks("a chunk index")?;
        let cells = self.meta.tile_cells(k);
        if !index.chunks.is_empty() || cells == 0 {
            return Ok(None);
        }
        let var_tf = self.tile_file(FileRole::Var)?;
        if !var_tf.may_embed_offsets() {
            return Err(Error::corrupt(
                offsets_tf.tile_place(k),
                format!("offsets tile is empty but the tile has {cells} cells"),
            ));
        }
        let var_index = self.chunk_index(&var_tf, FileRole::Var, k, false)?;
        let var_index = var_index.chunks("a chunk index")?;
        let tile = self.engine.cache().get_or_load(
            self.key(FileRole::Var, k, Item::StringTile),
            || {
                let mut all = StringChunk {
                    bytes: Vec::new(),
                    offsets: Vec::new(),
                };
                for (i, chunk) in var_index.chunks.iter().enumerate() {
                    self.engine.count_decoded();
                    let part = var_tf.decode_string_chunk(k, i, chunk)?;
                    let base = all.bytes.len() as u64;
                    all.offsets.extend(part.offsets.iter().map(|o| o + base));
                    all.bytes.extend_from_slice(&part.bytes);
                }
                if all.offsets.len() as u64 != cells {
                    return Err(Error::corrupt(
                        var_tf.tile_place(k),
                        format!(
                            "embedded offsets give {} cells, metadata says {cells}",
                            all.offsets.len()
                        ),
                    ));
                }
                Ok(Cached::Strings(all))
            },
        )?;
        Ok(Some(tile))
    }
}

/// `bytes[a..b]` or a corruption error naming `place`.
fn slice(bytes: &[u8], a: u64, b: u64, place: Place) -> Result<Vec<u8>> {
    bytes
        .get(a as usize..b as usize)
        .map(|s| s.to_vec())
        .ok_or_else(|| {
            Error::corrupt(
                place,
                format!("decoded {} bytes, needed {a}..{b}", bytes.len()),
            )
        })
}
impl ReadEngine {
    /// Reads field `field` (an index into `meta.fields`) of a fragment.
    pub fn field<'a>(
        &'a self,
        fragment: &'a Fragment,
        meta: &'a FragmentMeta,
        field: usize,
    ) -> Result<FieldReader<'a>> {
        let f = meta.fields.get(field).ok_or_else(|| {
            Error::NotFound(format!("field #{field} of fragment {}", fragment.name))
        })?;
        Ok(FieldReader {
            fragment,
            meta,
            field: f,
            engine: self,
        })
    }
}
