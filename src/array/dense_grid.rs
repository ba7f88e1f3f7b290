//! Where each stored cell of a dense fragment sits (`07` §4). Dense fragments store no
//! coordinates: a fragment holds every space tile that intersects its non-empty domain,
//! tiles in tile order, cells in cell order within a tile. So the coordinates of cell `n`
//! are arithmetic on `n`, computed on demand for any range without a table.

use crate::format::datatype::decode_int;
use crate::format::footer::Footer;
use crate::format::schema::{ArraySchema, Layout};
use crate::format::Datatype;

#[derive(Debug, Clone)]
struct Axis {
    datatype: Datatype,
    domain_low: i128,
    extent: i128,
    /// Index of the fragment's first tile along this axis, counted from the domain low.
    first_tile: i128,
    /// Tiles of the fragment along this axis.
    tiles: u64,
    /// How many tiles (cells within a tile) one step along this axis skips, in the
    /// fragment's tile (cell) order.
    tile_stride: u64,
    cell_stride: u64,
}

/// The tile grid of one dense fragment.
#[derive(Debug, Clone)]
pub struct DenseGrid {
    axes: Vec<Axis>,
    cells_per_tile: u64,
}

impl DenseGrid {
    /// The grid of a dense fragment written with `schema`, from its footer.
    pub fn new(schema: &ArraySchema, footer: &Footer) -> Result<DenseGrid, String> {
        if footer.non_empty_domain.len() != schema.dimensions.len() {
            return Err("dense fragment has no non-empty domain".into());
        }
        let mut axes = Vec::with_capacity(schema.dimensions.len());
        let mut cells_per_tile: u64 = 1;
        for (d, (lo, hi)) in schema.dimensions.iter().zip(&footer.non_empty_domain) {
            let t = d.datatype;
            let num = |b: &[u8]| {
                decode_int(b, t).ok_or(format!(
                    "dense dimension {} has non-integer type {}",
                    d.name,
                    t.name()
                ))
            };
            let domain_low = num(d.domain.get(..t.size() as usize).unwrap_or(&[]))?;
            let extent = match &d.tile_extent {
                Some(e) => num(e)?,
                None => return Err(format!("dense dimension {} has no tile extent", d.name)),
            };
            if extent <= 0 {
                return Err(format!("dimension {} has tile extent {extent}", d.name));
            }
            let (lo, hi) = (num(lo)?, num(hi)?);
            if hi < lo || lo < domain_low {
                return Err(format!(
                    "non-empty domain [{lo}, {hi}] of {} is outside the domain",
                    d.name
                ));
            }
            let first_tile = (lo - domain_low) / extent;
            let tiles = u64::try_from((hi - domain_low) / extent - first_tile + 1)
                .map_err(|_| format!("dimension {}: tile count out of range", d.name))?;
            cells_per_tile = u64::try_from(extent)
                .ok()
                .and_then(|e| cells_per_tile.checked_mul(e))
                .ok_or("dense tile cell count overflows")?;
            axes.push(Axis {
                datatype: t,
                domain_low,
                extent,
                first_tile,
                tiles,
                tile_stride: 0,
                cell_stride: 0,
            });
        }
        axes.iter()
            .try_fold(1u64, |n, a| n.checked_mul(a.tiles))
            .ok_or("dense tile count overflows")?;
        // Only row- and column-major exist for dense arrays: row-major moves the last
        // axis fastest, column-major the first.
        let tile_strides = strides(axes.iter().map(|a| a.tiles), schema.tile_order);
        let cell_strides = strides(axes.iter().map(|a| a.extent as u64), schema.cell_order);
        for (a, (t, c)) in axes
            .iter_mut()
            .zip(tile_strides.into_iter().zip(cell_strides))
        {
            a.tile_stride = t;
            a.cell_stride = c;
        }
        Ok(DenseGrid {
            axes,
            cells_per_tile,
        })
    }

    pub fn tile_count(&self) -> u64 {
        self.axes.iter().map(|a| a.tiles).product()
    }

    pub fn cells_per_tile(&self) -> u64 {
        self.cells_per_tile
    }

    pub fn datatype(&self, dim: usize) -> Option<Datatype> {
        self.axes.get(dim).map(|a| a.datatype)
    }

    /// The coordinate along dimension `dim` of stored cell `n` (storage order).
    pub fn coordinate(&self, n: u64, dim: usize) -> Option<i128> {
        let a = self.axes.get(dim)?;
        let per_tile = self.cells_per_tile.max(1);
        let tile = (n / per_tile / a.tile_stride.max(1)) % a.tiles.max(1);
        let cell = (n % per_tile / a.cell_stride.max(1)) % (a.extent as u64).max(1);
        Some(a.domain_low + (a.first_tile + tile as i128) * a.extent + cell as i128)
    }
}

impl DenseGrid {
    /// The stored cell holding `coords` (one per dimension), or `None` outside the
    /// fragment's tiles: the inverse of [`DenseGrid::coordinate`].
    pub fn cell_of(&self, coords: &[i128]) -> Option<u64> {
        if coords.len() != self.axes.len() {
            return None;
        }
        let (mut tile, mut cell) = (0u64, 0u64);
        for (a, &c) in self.axes.iter().zip(coords) {
            let from_low = c.checked_sub(a.domain_low)?;
            if from_low < 0 {
                return None;
            }
            let t = from_low / a.extent - a.first_tile;
            if t < 0 || t >= a.tiles as i128 {
                return None;
            }
            tile = tile.checked_add((t as u64).checked_mul(a.tile_stride)?)?;
            cell = cell.checked_add(((from_low % a.extent) as u64).checked_mul(a.cell_stride)?)?;
        }
        tile.checked_mul(self.cells_per_tile)?.checked_add(cell)
    }

    /// The fragment's tiles as one box, per dimension its first coordinate and its
    /// length, when the stored cells are exactly that box in row-major order (the last
    /// dimension fastest): the cells of a tile in row-major order, and one tile along
    /// every dimension but the first. `None` otherwise: the cells then go tile by tile.
    pub fn row_major_box(&self) -> Option<Vec<(i128, u64)>> {
        let mut stride = 1u64;
        for (d, a) in self.axes.iter().enumerate().rev() {
            if a.cell_stride != stride || (d > 0 && a.tiles != 1) {
                return None;
            }
            stride = stride.checked_mul(a.extent as u64)?;
        }
        self.axes
            .iter()
            .map(|a| {
                let low = a.domain_low + a.first_tile * a.extent;
                Some((low, a.tiles.checked_mul(a.extent as u64)?))
            })
            .collect()
    }

    /// How far apart, in storage order, two cells are that differ by one along `dim`
    /// within a tile.
    pub fn cell_stride(&self, dim: usize) -> u64 {
        self.axes.get(dim).map_or(1, |a| a.cell_stride)
    }

    /// The last coordinate along `dim` of the tile holding coordinate `c`.
    pub fn tile_end(&self, dim: usize, c: i128) -> i128 {
        match self.axes.get(dim) {
            Some(a) => {
                let from_low = c - a.domain_low;
                c + (a.extent - 1 - from_low.rem_euclid(a.extent))
            }
            None => c,
        }
    }
}

/// Per axis, the index step of one move along it in a row- or column-major walk over a
/// grid of `sizes`.
fn strides(sizes: impl Iterator<Item = u64>, order: Layout) -> Vec<u64> {
    let sizes: Vec<u64> = sizes.collect();
    let mut strides = vec![1u64; sizes.len()];
    let mut step = 1u64;
    let axes: Vec<usize> = if order == Layout::ColMajor {
        (0..sizes.len()).collect()
    } else {
        (0..sizes.len()).rev().collect()
    };
    for i in axes {
        strides[i] = step;
        step = step.saturating_mul(sizes[i].max(1));
    }
    strides
}

/// Tile count and cells per tile of a dense fragment: every space tile that intersects the
/// non-empty domain, anchored at the domain's low value (`07` §4).
pub(crate) fn dense_tiling(
    schema: &ArraySchema,
    footer: &Footer,
) -> std::result::Result<(u64, u64, u64), String> {
    let grid = DenseGrid::new(schema, footer)?;
    Ok((
        grid.tile_count(),
        grid.cells_per_tile(),
        grid.cells_per_tile(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cell_of_inverts_coordinate() {
        use crate::format::schema::{Attribute, Dimension};
        let dim = |name: &str, lo: i32, hi: i32, ext: i32| Dimension {
            name: name.into(),
            datatype: Datatype::Int32,
            cell_val_num: 1,
            filters: Default::default(),
            domain: [lo.to_le_bytes(), hi.to_le_bytes()].concat(),
            tile_extent: Some(ext.to_le_bytes().to_vec()),
        };
        for (tile_order, cell_order) in [
            (Layout::RowMajor, Layout::RowMajor),
            (Layout::ColMajor, Layout::RowMajor),
            (Layout::RowMajor, Layout::ColMajor),
        ] {
            let schema = ArraySchema {
                version: 22,
                allows_dups: false,
                array_type: crate::format::schema::ArrayType::Dense,
                tile_order,
                cell_order,
                capacity: 10000,
                coords_filters: Default::default(),
                offsets_filters: Default::default(),
                validity_filters: Default::default(),
                dimensions: vec![dim("x", 1, 20, 3), dim("y", -5, 30, 4)],
                attributes: Vec::<Attribute>::new(),
                labels: Vec::new(),
                enumerations: Vec::new(),
                current_domain: None,
            };
            let footer = Footer {
                non_empty_domain: vec![
                    (2i32.to_le_bytes().to_vec(), 9i32.to_le_bytes().to_vec()),
                    (0i32.to_le_bytes().to_vec(), 10i32.to_le_bytes().to_vec()),
                ],
                dense: true,
                ..Footer::default()
            };
            let g = DenseGrid::new(&schema, &footer).unwrap();
            for n in 0..g.tile_count() * g.cells_per_tile() {
                let c = [g.coordinate(n, 0).unwrap(), g.coordinate(n, 1).unwrap()];
                assert_eq!(g.cell_of(&c), Some(n), "{c:?}");
            }
            assert_eq!(g.cell_of(&[0, 0]), None);
            assert_eq!(g.tile_end(1, 0), 2);
        }
    }

    #[test]
    fn strides_of_both_orders() {
        assert_eq!(strides([2, 3, 4].into_iter(), Layout::RowMajor), [12, 4, 1]);
        assert_eq!(strides([2, 3, 4].into_iter(), Layout::ColMajor), [1, 2, 6]);
    }
}
