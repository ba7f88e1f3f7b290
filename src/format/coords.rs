//! Legacy combined coordinates (`07-data-files-and-cells.md` §7): before format 5 a
//! sparse fragment keeps every dimension in one file, `__coords.tdb`, whose tile k holds
//! the coordinates of all cells of data tile k. fragfs shows each dimension as its own
//! folder, as for newer fragments, so it must find one dimension's bytes in such a tile.

use super::pipeline::{Filter, FilterPipeline};

/// How the coordinates of one tile are arranged once un-filtered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CoordsLayout {
    /// Cell by cell: `x0 y0 x1 y1 …` (format 1 without a compression filter).
    Zipped,
    /// Dimension by dimension: all `x` of the tile, then all `y` (every other case).
    Split,
}

impl CoordsLayout {
    /// The layout of a fragment's coordinate tiles. TileDB 1.4 (format 1) split them
    /// only to help a compressor; from format 2 they are always split.
    pub fn of(fragment_version: u32, coords_filters: &FilterPipeline) -> CoordsLayout {
        let compresses = coords_filters.filters.iter().any(|f| {
            matches!(
                f,
                Filter::Gzip { .. }
                    | Filter::Zstd { .. }
                    | Filter::Lz4 { .. }
                    | Filter::Rle { .. }
                    | Filter::Bzip2 { .. }
                    | Filter::DoubleDelta { .. }
                    | Filter::Delta { .. }
                    | Filter::Dictionary { .. }
            )
        });
        if fragment_version == 1 && !compresses {
            CoordsLayout::Zipped
        } else {
            CoordsLayout::Split
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            CoordsLayout::Zipped => "zipped",
            CoordsLayout::Split => "split per tile",
        }
    }
}

/// Where one dimension lies in the combined coordinate tiles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CoordsSlice {
    pub layout: CoordsLayout,
    /// Index of the dimension.
    pub dim: u64,
    /// Number of dimensions (all stored in each tile).
    pub dims: u64,
    /// Bytes of one coordinate (every dimension has dimension 0's type before format 5).
    pub value_size: u64,
}

impl CoordsSlice {
    /// Bytes per cell of the combined tile.
    pub fn cell_size(&self) -> u64 {
        self.dims.saturating_mul(self.value_size)
    }

    /// The bytes of the un-filtered coordinate tile (of `cells` cells) needed to serve
    /// bytes `[a, b)` of this dimension's values in that tile.
    pub fn source_range(&self, cells: u64, a: u64, b: u64) -> (u64, u64) {
        let size = self.value_size.max(1);
        match self.layout {
            CoordsLayout::Split => {
                let base = self.dim.saturating_mul(cells).saturating_mul(size);
                (base.saturating_add(a), base.saturating_add(b))
            }
            CoordsLayout::Zipped => {
                let cell = self.cell_size();
                (
                    (a / size).saturating_mul(cell),
                    b.div_ceil(size).saturating_mul(cell),
                )
            }
        }
    }

    /// Bytes `[a, b)` of this dimension's values in a tile, from `source`: the bytes of
    /// [`source_range`](Self::source_range) for the same `a`, `b`. `None` if `source`
    /// is too short.
    pub fn extract(&self, a: u64, b: u64, source: &[u8]) -> Option<Vec<u8>> {
        let size = self.value_size.max(1) as usize;
        match self.layout {
            CoordsLayout::Split => Some(source.to_vec()),
            CoordsLayout::Zipped => {
                let from = self.dim as usize * size;
                let values: Vec<u8> = source
                    .chunks_exact(self.cell_size().max(1) as usize)
                    .flat_map(|cell| cell.get(from..from + size).unwrap_or(&[]))
                    .copied()
                    .collect();
                let skip = (a % size as u64) as usize;
                values
                    .get(skip..skip + (b - a) as usize)
                    .map(<[u8]>::to_vec)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tile bytes of TileDB's `non_split_coords_v1_4_0` (`07` §7): (1,10) (2,10) (3,10)
    /// (4,10) as zipped INT32 pairs.
    fn zipped_tile() -> Vec<u8> {
        [1, 10, 2, 10, 3, 10, 4, 10]
            .iter()
            .flat_map(|v: &i32| v.to_le_bytes())
            .collect()
    }

    fn slice(layout: CoordsLayout, dim: u64) -> CoordsSlice {
        CoordsSlice {
            layout,
            dim,
            dims: 2,
            value_size: 4,
        }
    }

    fn read(s: CoordsSlice, tile: &[u8], cells: u64, a: u64, b: u64) -> Vec<u8> {
        let (from, to) = s.source_range(cells, a, b);
        s.extract(a, b, &tile[from as usize..to as usize]).unwrap()
    }

    fn i32s(v: &[i32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn de_interleaves_zipped_tiles_at_any_byte_range() {
        let tile = zipped_tile();
        let d1 = slice(CoordsLayout::Zipped, 0);
        let d2 = slice(CoordsLayout::Zipped, 1);
        assert_eq!(read(d1, &tile, 4, 0, 16), i32s(&[1, 2, 3, 4]));
        assert_eq!(read(d2, &tile, 4, 0, 16), i32s(&[10, 10, 10, 10]));
        // Ranges that start and end inside a value.
        let all = i32s(&[1, 2, 3, 4]);
        for a in 0..16 {
            for b in a..=16 {
                assert_eq!(read(d1, &tile, 4, a, b), &all[a as usize..b as usize]);
            }
        }
    }

    #[test]
    fn slices_split_tiles() {
        // 3 cells: x = 1 2 3, y = 7 8 9.
        let tile = i32s(&[1, 2, 3, 7, 8, 9]);
        let y = slice(CoordsLayout::Split, 1);
        assert_eq!(read(y, &tile, 3, 0, 12), i32s(&[7, 8, 9]));
        assert_eq!(read(y, &tile, 3, 5, 9), i32s(&[8, 9])[1..5].to_vec());
        assert_eq!(y.source_range(3, 0, 12), (12, 24));
    }

    #[test]
    fn only_format_1_without_compression_is_zipped() {
        let none = FilterPipeline::default();
        let mut gzip = FilterPipeline::default();
        gzip.filters.push(Filter::Gzip { level: 1 });
        let mut shuffle = FilterPipeline::default();
        shuffle.filters.push(Filter::ByteShuffle);
        assert_eq!(CoordsLayout::of(1, &none), CoordsLayout::Zipped);
        assert_eq!(CoordsLayout::of(1, &shuffle), CoordsLayout::Zipped);
        assert_eq!(CoordsLayout::of(1, &gzip), CoordsLayout::Split);
        assert_eq!(CoordsLayout::of(2, &none), CoordsLayout::Split);
        assert_eq!(CoordsLayout::of(4, &none), CoordsLayout::Split);
    }
}
