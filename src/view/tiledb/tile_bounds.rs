//! What a fragment's metadata says bounds the values of one field in one tile, for the
//! statistics of the table files' row groups: the tiles' min and max (format 11 on),
//! a sparse tile's MBR for a dimension (every version), a dense tile's box for a
//! dimension (its first and last cells are the box's corners). And the union of such
//! bounds, for a group of a merged state made of several tiles.

use std::cmp::Ordering;
use std::collections::HashMap;

use crate::array::dense_grid::DenseGrid;
use crate::array::field::{Field, FieldRole};
use crate::array::fragment::FragmentMeta;
use crate::encode::table::{Bounds, Column, Group};
use crate::error::Result;
use crate::format::condition_eval::compare_values;
use crate::format::datatype::decode_int;
use crate::format::fragment_metadata::{Mbr, TileBounds};
use crate::format::Datatype;

use super::array_tree::ArrayTree;
use super::node::When;

/// One group's sources in a sparse state: (source, first cell, last cell) each.
pub(super) use crate::read::merge::Spans;

/// The bounds one field's tiles have in one fragment's metadata, loaded once.
pub(super) struct TileBoundsOf {
    field: Field,
    tiles: usize,
    cells_per_tile: u64,
    /// The tiles' mins and maxes, if the metadata has them.
    min_max: Option<(TileBounds, TileBounds)>,
    /// A dimension's index, with the sparse tiles' MBRs or the dense grid.
    dim: Option<(usize, Option<Vec<Mbr>>, Option<DenseGrid>)>,
}

impl TileBoundsOf {
    /// The bounds of field `index` of a fragment (none for fields of several values
    /// a cell: no statistics describe a list).
    pub fn new(meta: &FragmentMeta, index: usize) -> Result<TileBoundsOf> {
        let field = meta.fields[index].clone();
        let flat = field.cell_val_num == 1 || field.is_var();
        // TileDB's tile min/max are not bounds of every value a folder shows: a dense
        // tile's leave out its cells outside the written domain (which the fragment
        // folder shows), and a float tile's go wrong once the tile holds a NaN. A
        // dimension's bounds come from the MBRs or the box instead.
        let trusted = !meta.footer.dense && !field.datatype.is_float();
        let min_max = if flat && trusted {
            Some(meta.tile_bounds(field.slot)?).filter(|(min, _)| !min.is_empty())
        } else {
            None
        };
        let dim = match field.role {
            FieldRole::Dimension if flat => {
                let d = meta.fields[..index]
                    .iter()
                    .filter(|f| f.role == FieldRole::Dimension)
                    .count();
                if meta.footer.dense {
                    Some((d, None, DenseGrid::new(&meta.schema, &meta.footer).ok()))
                } else {
                    let leaves = meta.rtree().ok().map(|t| t.leaves().to_vec());
                    Some((d, leaves, None))
                }
            }
            _ => None,
        };
        Ok(TileBoundsOf {
            field,
            tiles: meta.tile_count as usize,
            cells_per_tile: meta.cells_per_tile,
            min_max,
            dim,
        })
    }

    /// Tile `k`'s bounds, of `rows` cells, where the metadata has them.
    pub fn get(&self, k: usize, rows: u64) -> Option<Bounds> {
        if let Some((min, max)) = &self.min_max {
            let f = &self.field;
            let get = |b: &TileBounds| {
                b.get(k, f.is_var(), f.cell_size() as usize, self.tiles)
                    .map(<[u8]>::to_vec)
            };
            if let (Some(min), Some(max)) = (get(min), get(max)) {
                return Some(Bounds { min, max });
            }
        }
        let (dim, mbrs, grid) = self.dim.as_ref()?;
        match (mbrs, grid) {
            (_, Some(grid)) => {
                let first = k as u64 * self.cells_per_tile;
                let last = first + rows.max(1) - 1;
                let corner = |n: u64| {
                    grid.coordinate(n, *dim)
                        .and_then(|v| int_bytes(v, self.field.datatype))
                };
                Some(Bounds {
                    min: corner(first)?,
                    max: corner(last)?,
                })
            }
            (Some(leaves), None) => leaves
                .get(k)?
                .get(*dim)
                .filter(|(lo, hi)| !lo.is_empty() && !hi.is_empty())
                .map(|(min, max)| Bounds {
                    min: min.clone(),
                    max: max.clone(),
                }),
            (None, None) => None,
        }
    }

    /// The tiles cells `from..=to` of the fragment lie in.
    pub fn tiles_of(&self, from: u64, to: u64) -> std::ops::RangeInclusive<usize> {
        let cpt = self.cells_per_tile.max(1);
        (from / cpt) as usize..=(to / cpt) as usize
    }
}

/// The union of two bounds of values of `t` (`var`: byte strings): the smaller min,
/// the larger max. A NaN on either side makes it unknown.
pub(super) fn union(t: Datatype, var: bool, a: &Bounds, b: &Bounds) -> Option<Bounds> {
    let nan = |v: &[u8]| match t {
        Datatype::Float32 => v.try_into().map(f32::from_le_bytes).is_ok_and(f32::is_nan),
        Datatype::Float64 => v.try_into().map(f64::from_le_bytes).is_ok_and(f64::is_nan),
        _ => false,
    };
    if [&a.min, &a.max, &b.min, &b.max].iter().any(|v| nan(v)) {
        return None;
    }
    let pick = |x: &Vec<u8>, y: &Vec<u8>, want: Ordering| {
        if compare_values(t, var, x, y) == want {
            x.clone()
        } else {
            y.clone()
        }
    };
    Some(Bounds {
        min: pick(&a.min, &b.min, Ordering::Less),
        max: pick(&a.max, &b.max, Ordering::Greater),
    })
}

/// An integer coordinate as one value of `t`'s little-endian bytes, if it fits.
fn int_bytes(v: i128, t: Datatype) -> Option<Vec<u8>> {
    use crate::format::datatype::ElementKind::*;
    Some(match t.element_kind() {
        I8 => i8::try_from(v).ok()?.to_le_bytes().to_vec(),
        U8 => u8::try_from(v).ok()?.to_le_bytes().to_vec(),
        I16 => i16::try_from(v).ok()?.to_le_bytes().to_vec(),
        U16 => u16::try_from(v).ok()?.to_le_bytes().to_vec(),
        I32 => i32::try_from(v).ok()?.to_le_bytes().to_vec(),
        U32 => u32::try_from(v).ok()?.to_le_bytes().to_vec(),
        I64 => i64::try_from(v).ok()?.to_le_bytes().to_vec(),
        U64 => u64::try_from(v).ok()?.to_le_bytes().to_vec(),
        _ => return None,
    })
}

impl ArrayTree {
    /// The bounds of a merged state's groups where they follow without reading values:
    /// a dense state's dimensions, from where each group's cells lie in the box
    /// (row-major: the first dimension runs from the first cell's coordinate to the
    /// last's; a later one too while the group stays inside one run of it, else over
    /// the box). `first_rows[g]` is group `g`'s first cell.
    pub(super) fn dense_state_bounds(
        &self,
        w: When,
        groups: &mut [Group],
        first_rows: &[u64],
    ) -> Result<()> {
        let merged = self.merged(w)?;
        let (Some(domain), Some(shape), true) =
            (merged.non_empty_domain(), merged.shape(), merged.is_dense())
        else {
            return Ok(());
        };
        let dims = &merged.schema.dimensions;
        let lows: Option<Vec<i128>> = domain
            .iter()
            .zip(dims)
            .map(|((lo, _), d)| decode_int(lo, d.datatype))
            .collect();
        let Some(lows) = lows else { return Ok(()) };
        // Cells per step of each dimension, and per whole run of it.
        let mut stride = vec![1u64; shape.len()];
        for d in (0..shape.len().saturating_sub(1)).rev() {
            stride[d] = stride[d + 1].saturating_mul(shape[d + 1]);
        }
        for (g, group) in groups.iter_mut().enumerate() {
            let (Some(&first), rows) = (first_rows.get(g), group.rows) else {
                continue;
            };
            if rows == 0 {
                continue;
            }
            let last = first + rows - 1;
            for (d, dim) in dims.iter().enumerate() {
                let coord = |n: u64| lows[d] + i128::from((n / stride[d]) % shape[d].max(1));
                let one_run = d == 0 || first / stride[d - 1] == last / stride[d - 1];
                let (lo, hi) = if one_run {
                    (coord(first), coord(last))
                } else {
                    (lows[d], lows[d] + i128::from(shape[d]) - 1)
                };
                // The merged fields list the dimensions first, in order.
                if let (Some(chunk), Some(min), Some(max)) = (
                    group.chunks.get_mut(d),
                    int_bytes(lo, dim.datatype),
                    int_bytes(hi, dim.datatype),
                ) {
                    chunk.bounds = Some(Bounds { min, max });
                }
            }
        }
        Ok(())
    }

    /// Where each group of a sparse state takes its cells from, per source the first
    /// and last cell it takes, gathered in one merge pass over every cell (the pass
    /// that counts them, if they are not yet): `None` for a dense state.
    ///
    /// A merge takes each source's cells in their order, so a group's cells of one
    /// source lie between the first and the last it takes: the tiles of that span
    /// bound them (the cells the merge skips in it only widen the bounds). A state
    /// whose fragments interleave has a run a cell: spans, not runs, keep this cheap.
    pub(super) fn sparse_state_spans(&self, w: When, rows: u64) -> Result<Option<Vec<Spans>>> {
        let merged = self.merged(w)?;
        if merged.is_dense() {
            return Ok(None);
        }
        Ok(Some(merged.group_spans(rows)?))
    }

    /// The bounds of a sparse state's groups from their [`spans`](Self::sparse_state_spans):
    /// the union of the bounds of the source tiles each group's cells come from, where
    /// every one of those has bounds.
    pub(super) fn sparse_state_bounds(
        &self,
        w: When,
        groups: &mut [Group],
        columns: &[Column],
        spans: &[Spans],
    ) -> Result<()> {
        let merged = self.merged(w)?;
        let mut of_source: HashMap<(usize, usize), Option<TileBoundsOf>> = HashMap::new();
        for (group, spans) in groups.iter_mut().zip(spans) {
            for (c, column) in columns.iter().enumerate() {
                let Some(field) = merged.fields.get(c) else {
                    continue;
                };
                if column.labels.is_some() || !(column.cell_val_num == 1 || column.is_var()) {
                    continue;
                }
                let mut acc: Option<Bounds> = None;
                let mut known = true;
                'sources: for &(s, lo, hi) in spans {
                    let bounds = of_source.entry((s, c)).or_insert_with(|| {
                        let meta = &merged.sources.get(s)?.meta;
                        let i = meta
                            .fields
                            .iter()
                            .position(|f| f.name == field.name && f.role == field.role)?;
                        TileBoundsOf::new(meta, i).ok()
                    });
                    let Some(bounds) = bounds else {
                        known = false;
                        break;
                    };
                    for k in bounds.tiles_of(lo, hi) {
                        let Some(b) = bounds.get(k, bounds.cells_per_tile) else {
                            known = false;
                            break 'sources;
                        };
                        acc = match acc {
                            None => Some(b),
                            Some(a) => union(column.datatype, column.is_var(), &a, &b),
                        };
                        if acc.is_none() {
                            known = false;
                            break 'sources;
                        }
                    }
                }
                if known {
                    if let Some(chunk) = group.chunks.get_mut(c) {
                        chunk.bounds = acc;
                    }
                }
            }
        }
        Ok(())
    }
}
