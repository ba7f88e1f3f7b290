//! TileDB's global order of sparse cells: space tiles in tile order (a tile is a cell of
//! the grid the dimensions' tile extents draw; string dimensions have no tiles), then
//! cells in cell order. Each fragment stores its cells in this order; the merged view
//! merges fragments by it (TileDB's `GlobalCmp`).

use std::cmp::Ordering;

use crate::format::datatype::decode_int;
use crate::format::schema::{ArraySchema, Layout};
use crate::format::Datatype;

#[derive(Debug, Clone)]
enum Kind {
    Int {
        low: i128,
        extent: Option<i128>,
    },
    Float {
        low: f64,
        extent: Option<f64>,
    },
    /// Strings: compared as bytes, no tiles.
    Bytes,
}

#[derive(Debug, Clone)]
struct Dim {
    datatype: Datatype,
    kind: Kind,
}

/// A cell's place on one dimension, as integers: its tile, and its value (floats mapped
/// to integers that order as `f64::total_cmp` does).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key {
    pub tile: i128,
    pub value: i128,
}

/// `x` as an integer in the order of `f64::total_cmp`.
fn total_order(x: f64) -> i128 {
    let bits = x.to_bits() as i64;
    (bits ^ (((bits >> 63) as u64) >> 1) as i64) as i128
}

/// The dimensions `0..n`, forward or backward, without an allocation.
#[derive(Debug, Clone)]
pub struct Axes {
    range: std::ops::Range<usize>,
    reverse: bool,
}

impl Axes {
    fn new(n: usize, reverse: bool) -> Axes {
        Axes {
            range: 0..n,
            reverse,
        }
    }
}

impl Iterator for Axes {
    type Item = usize;
    fn next(&mut self) -> Option<usize> {
        if self.reverse {
            self.range.next_back()
        } else {
            self.range.next()
        }
    }
}

/// Compares cells, given as their coordinates (the bytes of each dimension's value).
#[derive(Debug, Clone)]
pub struct GlobalOrder {
    dims: Vec<Dim>,
    tile_col_major: bool,
    cell_col_major: bool,
}

fn float(bytes: &[u8], t: Datatype) -> f64 {
    match t {
        Datatype::Float32 => bytes
            .get(..4)
            .map_or(0.0, |b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64),
        _ => bytes
            .get(..8)
            .map_or(0.0, |b| f64::from_le_bytes(b.try_into().unwrap_or([0; 8]))),
    }
}

impl GlobalOrder {
    /// The global order of `schema`'s cells; `Err` names what is not supported.
    pub fn new(schema: &ArraySchema) -> Result<GlobalOrder, String> {
        if schema.cell_order == Layout::Hilbert || schema.tile_order == Layout::Hilbert {
            return Err("the Hilbert cell order is not supported by the merged view".into());
        }
        let dims = schema
            .dimensions
            .iter()
            .map(|d| {
                let t = d.datatype;
                let size = t.size() as usize;
                let kind = if d.is_var() || t.is_string() {
                    Kind::Bytes
                } else if t.is_float() {
                    Kind::Float {
                        low: float(d.domain.get(..size).unwrap_or(&[]), t),
                        extent: d.tile_extent.as_deref().map(|e| float(e, t)),
                    }
                } else {
                    Kind::Int {
                        low: decode_int(d.domain.get(..size).unwrap_or(&[]), t).unwrap_or(0),
                        extent: d
                            .tile_extent
                            .as_deref()
                            .and_then(|e| decode_int(e, t))
                            .filter(|&e| e > 0),
                    }
                };
                Dim { datatype: t, kind }
            })
            .collect();
        Ok(GlobalOrder {
            dims,
            tile_col_major: schema.tile_order == Layout::ColMajor,
            cell_col_major: schema.cell_order == Layout::ColMajor,
        })
    }

    fn tile_cmp(&self, d: &Dim, a: &[u8], b: &[u8]) -> Ordering {
        match d.kind {
            Kind::Int {
                low,
                extent: Some(e),
            } => {
                let ta = (decode_int(a, d.datatype).unwrap_or(0) - low).div_euclid(e);
                let tb = (decode_int(b, d.datatype).unwrap_or(0) - low).div_euclid(e);
                ta.cmp(&tb)
            }
            Kind::Float {
                low,
                extent: Some(e),
            } if e > 0.0 => {
                let ta = ((float(a, d.datatype) - low) / e).floor();
                let tb = ((float(b, d.datatype) - low) / e).floor();
                ta.total_cmp(&tb)
            }
            _ => Ordering::Equal,
        }
    }

    fn value_cmp(d: &Dim, a: &[u8], b: &[u8]) -> Ordering {
        match d.kind {
            Kind::Int { .. } => decode_int(a, d.datatype).cmp(&decode_int(b, d.datatype)),
            Kind::Float { .. } => float(a, d.datatype).total_cmp(&float(b, d.datatype)),
            Kind::Bytes => a.cmp(b),
        }
    }

    /// The order keys of cells on dimension `d` (given as the dimension's values back to
    /// back, `size` bytes each): per cell its tile and its value as integers that
    /// compare as [`GlobalOrder::cmp`] does. `None` for string dimensions, which compare
    /// as bytes. A merge computes them once per block of cells rather than decoding and
    /// dividing on each comparison (an i128 division per dimension per comparison was
    /// most of a sparse merge's time).
    pub fn keys(&self, d: usize, values: &[u8], size: usize) -> Option<Vec<Key>> {
        let dim = self.dims.get(d)?;
        if size == 0 {
            return None;
        }
        match dim.kind {
            Kind::Bytes => None,
            Kind::Int { low, extent } => Some(
                values
                    .chunks_exact(size)
                    .map(|v| {
                        let x = decode_int(v, dim.datatype).unwrap_or(0);
                        Key {
                            tile: extent.map_or(0, |e| (x - low).div_euclid(e)),
                            value: x,
                        }
                    })
                    .collect(),
            ),
            Kind::Float { low, extent } => Some(
                values
                    .chunks_exact(size)
                    .map(|v| {
                        let x = float(v, dim.datatype);
                        let tile = match extent {
                            Some(e) if e > 0.0 => total_order(((x - low) / e).floor()),
                            _ => 0,
                        };
                        Key {
                            tile,
                            value: total_order(x),
                        }
                    })
                    .collect(),
            ),
        }
    }

    /// The dimensions in the order tiles are compared, then in the order cells are.
    pub fn axes(&self) -> (Axes, Axes) {
        let n = self.dims.len();
        (
            Axes::new(n, self.tile_col_major),
            Axes::new(n, self.cell_col_major),
        )
    }

    /// Whether dimension `d` has tiles (string dimensions and dimensions without a tile
    /// extent compare equal on tiles).
    fn tiled(&self, d: usize) -> bool {
        self.dims.get(d).is_some_and(|dim| match dim.kind {
            Kind::Int { extent, .. } => extent.is_some(),
            Kind::Float { extent, .. } => extent.is_some_and(|e| e > 0.0),
            Kind::Bytes => false,
        })
    }

    /// Whether every dimension is numeric: then a cell's place in the order is one
    /// list of integers ([`GlobalOrder::head_into`]), compared as a list.
    pub fn numeric(&self) -> bool {
        self.dims.iter().all(|d| !matches!(d.kind, Kind::Bytes))
    }

    /// A cell's place in the order of a [`GlobalOrder::numeric`] schema, from its keys
    /// per dimension: its tiles in tile order, then its values in cell order. Two cells
    /// compare as these lists do, and are the same cell when the lists are equal.
    pub fn head_into(&self, key: impl Fn(usize) -> Key, out: &mut Vec<i128>) {
        out.clear();
        let (tiles, cells) = self.axes();
        for d in tiles.filter(|&d| self.tiled(d)) {
            out.push(key(d).tile);
        }
        for d in cells {
            out.push(key(d).value);
        }
    }

    /// The order of two cells from their keys (`key(cell, d)`, `None` on a string
    /// dimension) and, on string dimensions, their bytes: the same as
    /// [`GlobalOrder::cmp`].
    pub fn cmp_keyed<'a>(
        &self,
        key: impl Fn(bool, usize) -> Option<Key>,
        bytes: impl Fn(bool, usize) -> &'a [u8],
    ) -> Ordering {
        let (tiles, cells) = self.axes();
        for d in tiles {
            if !self.tiled(d) {
                continue;
            }
            if let (Some(a), Some(b)) = (key(false, d), key(true, d)) {
                match a.tile.cmp(&b.tile) {
                    Ordering::Equal => {}
                    other => return other,
                }
            }
        }
        for d in cells {
            let order = match (key(false, d), key(true, d)) {
                (Some(a), Some(b)) => a.value.cmp(&b.value),
                _ => bytes(false, d).cmp(bytes(true, d)),
            };
            match order {
                Ordering::Equal => {}
                other => return other,
            }
        }
        Ordering::Equal
    }

    /// The order of two cells; `coord(cell, d)` gives a cell's value on dimension `d`.
    pub fn cmp<'a>(
        &self,
        a: impl Fn(usize) -> &'a [u8],
        b: impl Fn(usize) -> &'a [u8],
    ) -> Ordering {
        let n = self.dims.len();
        let axes = |col_major: bool| -> Box<dyn Iterator<Item = usize>> {
            if col_major {
                Box::new((0..n).rev())
            } else {
                Box::new(0..n)
            }
        };
        for i in axes(self.tile_col_major) {
            let d = &self.dims[i];
            match self.tile_cmp(d, a(i), b(i)) {
                Ordering::Equal => {}
                other => return other,
            }
        }
        for i in axes(self.cell_col_major) {
            match Self::value_cmp(&self.dims[i], a(i), b(i)) {
                Ordering::Equal => {}
                other => return other,
            }
        }
        Ordering::Equal
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keys (and heads) order cells exactly as decoding and dividing on each comparison
    /// does, for tiled and untiled, integer and float dimensions, both layouts.
    #[test]
    fn keys_and_heads_order_as_cmp_does() {
        let int = |low: i128, extent: Option<i128>| Dim {
            datatype: Datatype::Int64,
            kind: Kind::Int { low, extent },
        };
        let flt = Dim {
            datatype: Datatype::Float64,
            kind: Kind::Float {
                low: -10.0,
                extent: Some(2.5),
            },
        };
        let values: Vec<Vec<u8>> = vec![
            [-7i64, 3, 0, 3, 12, -1, 5, 4]
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect(),
            [-9.5f64, 0.0, -0.0, 7.25, 2.5, 2.4, 1e300, -3.0]
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect(),
            [1i64, 1, 2, 2, 3, 3, 4, 4]
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect(),
        ];
        for (tile_col_major, cell_col_major) in [(false, false), (true, false), (false, true)] {
            let order = GlobalOrder {
                dims: vec![int(-8, Some(5)), flt.clone(), int(0, None)],
                tile_col_major,
                cell_col_major,
            };
            assert!(order.numeric());
            let keys: Vec<Vec<Key>> = (0..3)
                .map(|d| order.keys(d, &values[d], 8).unwrap())
                .collect();
            let coord = |cell: usize, d: usize| &values[d][cell * 8..cell * 8 + 8];
            let head = |cell: usize| {
                let mut h = Vec::new();
                order.head_into(|d| keys[d][cell], &mut h);
                h
            };
            for a in 0..8 {
                for b in 0..8 {
                    let want = order.cmp(|d| coord(a, d), |d| coord(b, d));
                    let keyed = order.cmp_keyed(
                        |second, d| Some(keys[d][if second { b } else { a }]),
                        |second, d| coord(if second { b } else { a }, d),
                    );
                    assert_eq!(keyed, want, "cells {a} and {b}");
                    assert_eq!(head(a).cmp(&head(b)), want, "heads of cells {a} and {b}");
                }
            }
        }
    }
}
