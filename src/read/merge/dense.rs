//! Dense arrays: every cell of the non-empty domain's box, row-major (first dimension
//! slowest) whatever the schema's orders; each cell from the newest fragment whose
//! domain holds it, or the fill value. Which fragment supplies which cells follows from
//! the fragments' domains alone, row by row along the last dimension, so a read of any
//! byte range knows at once which tiles of which fragments it needs.

use crate::array::dense_grid::DenseGrid;
use crate::format::datatype::decode_int;
use crate::format::schema::ArraySchema;
use crate::format::Datatype;

use super::runs::{Run, Source};

#[derive(Debug)]
struct DenseSource {
    grid: DenseGrid,
    /// The fragment's non-empty domain: the cells it wrote.
    domain: Vec<(i128, i128)>,
}

#[derive(Debug)]
pub struct DenseLayout {
    /// The non-empty domain of the whole array (the union box), per dimension.
    bounds: Vec<(i128, i128)>,
    /// Per source (same order), its geometry; `None` for a fragment that wrote nothing.
    sources: Vec<Option<DenseSource>>,
    dims: usize,
}

impl DenseLayout {
    pub fn new(schema: &ArraySchema, sources: &[Source]) -> Result<DenseLayout, String> {
        let mut bounds: Option<Vec<(i128, i128)>> = None;
        let mut layouts = Vec::with_capacity(sources.len());
        for s in sources {
            let footer = &s.meta.footer;
            if !footer.dense {
                return Err(format!(
                    "fragment {}: a sparse fragment in a dense array is not supported by the merged view",
                    s.fragment.name
                ));
            }
            if s.meta.cell_count() == 0 || footer.non_empty_domain.is_empty() {
                layouts.push(None);
                continue;
            }
            let domain: Vec<(i128, i128)> = footer
                .non_empty_domain
                .iter()
                .zip(&s.meta.schema.dimensions)
                .map(|((lo, hi), d)| {
                    Some((decode_int(lo, d.datatype)?, decode_int(hi, d.datatype)?))
                })
                .collect::<Option<_>>()
                .ok_or_else(|| {
                    format!("fragment {}: a non-integer dense domain", s.fragment.name)
                })?;
            if domain.len() != schema.dimensions.len() {
                return Err(format!(
                    "fragment {}: {} dimensions, the schema has {}",
                    s.fragment.name,
                    domain.len(),
                    schema.dimensions.len()
                ));
            }
            bounds = Some(match bounds {
                None => domain.clone(),
                Some(b) => b
                    .iter()
                    .zip(&domain)
                    .map(|(&(a, b), &(c, d))| (a.min(c), b.max(d)))
                    .collect(),
            });
            let grid = DenseGrid::new(&s.meta.schema, footer)
                .map_err(|r| format!("fragment {}: {r}", s.fragment.name))?;
            layouts.push(Some(DenseSource { grid, domain }));
        }
        let bounds = bounds.unwrap_or_default();
        // The box must be countable: its cells, in u64.
        bounds
            .iter()
            .try_fold(1u64, |n, &(lo, hi)| {
                u64::try_from(hi - lo + 1)
                    .ok()
                    .and_then(|e| n.checked_mul(e))
            })
            .ok_or("the non-empty domain holds more than 2^64 cells")?;
        Ok(DenseLayout {
            bounds,
            sources: layouts,
            dims: schema.dimensions.len(),
        })
    }

    /// Cells along each dimension of the box (zero along each when nothing is visible).
    pub fn extents(&self) -> Vec<u64> {
        if self.bounds.is_empty() {
            return vec![0; self.dims];
        }
        self.bounds
            .iter()
            .map(|&(lo, hi)| (hi - lo + 1) as u64)
            .collect()
    }

    pub fn cell_count(&self) -> u64 {
        if self.bounds.is_empty() {
            return 0;
        }
        self.extents().iter().product()
    }

    /// The coordinates of output cell `n`.
    fn coords(&self, n: u64) -> Vec<i128> {
        let extents = self.extents();
        let mut rest = n;
        let mut out = vec![0i128; extents.len()];
        for d in (0..extents.len()).rev() {
            out[d] = self.bounds[d].0 + (rest % extents[d].max(1)) as i128;
            rest /= extents[d].max(1);
        }
        out
    }

    /// Appends the coordinates along dimension `dim` (of type `t`) of output cells
    /// `[first, first + n)`.
    pub fn coordinates(&self, dim: usize, t: Datatype, first: u64, n: u64, out: &mut Vec<u8>) {
        let size = (t.size() as usize).min(8);
        let end = first.saturating_add(n).min(self.cell_count());
        if first >= end {
            return;
        }
        // Row-major: the last dimension moves fastest, an odometer over the box.
        let mut c = self.coords(first);
        for _ in first..end {
            out.extend_from_slice(&(c[dim] as i64).to_le_bytes()[..size]);
            for d in (0..c.len()).rev() {
                if c[d] < self.bounds[d].1 {
                    c[d] += 1;
                    break;
                }
                c[d] = self.bounds[d].0;
            }
        }
    }

    /// Where output cells `[first, first + n)` come from.
    pub fn runs(&self, first: u64, n: u64) -> Vec<Run> {
        let total = self.cell_count();
        let end = first.saturating_add(n).min(total);
        let mut out: Vec<Run> = Vec::new();
        let last = self.bounds.len().saturating_sub(1);
        let mut cell = first;
        while cell < end {
            // The rest of this row along the last dimension.
            let coords = self.coords(cell);
            let row_end = self.bounds[last].1;
            let len = ((row_end - coords[last] + 1) as u64).min(end - cell);
            self.row_runs(&coords, len, &mut out);
            cell += len;
        }
        out
    }

    /// Where the cells of `region` (a box, per dimension its first and last coordinate)
    /// come from, in row-major order; cells no visible fragment wrote (outside the
    /// domain too) are fill. A Zarr chunk is such a box: one space tile.
    pub fn region_runs(&self, region: &[(i128, i128)]) -> Vec<Run> {
        let mut out = Vec::new();
        if region.len() != self.dims || region.iter().any(|&(lo, hi)| lo > hi) {
            return out;
        }
        let last = self.dims - 1;
        let len = (region[last].1 - region[last].0 + 1) as u64;
        let mut row: Vec<i128> = region.iter().map(|&(lo, _)| lo).collect();
        loop {
            self.row_runs(&row, len, &mut out);
            // The next row: an odometer over every dimension but the last.
            let mut d = last;
            loop {
                if d == 0 {
                    return out;
                }
                d -= 1;
                if row[d] < region[d].1 {
                    row[d] += 1;
                    break;
                }
                row[d] = region[d].0;
            }
        }
    }

    /// Where the cells of `region` come from: the sources that supply some (by index,
    /// sorted), and whether some are fill (no visible fragment wrote them).
    pub fn region_sources(&self, region: &[(i128, i128)]) -> (Vec<usize>, bool) {
        let runs = self.region_runs(region);
        let mut sources: Vec<usize> = runs.iter().filter_map(|r| r.source).collect();
        sources.sort_unstable();
        sources.dedup();
        (sources, runs.iter().any(|r| r.source.is_none()))
    }

    /// The number of source `s`'s stored tile whose first cell is at `corner` (a space
    /// tile's first coordinates), if the fragment holds that tile.
    pub fn tile_at(&self, s: usize, corner: &[i128]) -> Option<u64> {
        let grid = &self.sources.get(s)?.as_ref()?.grid;
        let cell = grid.cell_of(corner)?;
        let per = grid.cells_per_tile().max(1);
        (cell % per == 0).then_some(cell / per)
    }

    /// The domains of the visible fragments that wrote cells.
    pub fn written_domains(&self) -> impl Iterator<Item = &[(i128, i128)]> {
        self.sources.iter().flatten().map(|s| &s.domain[..])
    }

    /// Runs for `len` cells from `coords` along the last dimension.
    fn row_runs(&self, coords: &[i128], len: u64, out: &mut Vec<Run>) {
        let last = coords.len() - 1;
        let (a, b) = (coords[last], coords[last] + len as i128 - 1);
        // Fragments whose domain holds this row, with their span on it; newest last.
        let covering: Vec<(usize, i128, i128)> = self
            .sources
            .iter()
            .enumerate()
            .filter_map(|(i, s)| {
                let s = s.as_ref()?;
                let in_row =
                    (0..last).all(|d| s.domain[d].0 <= coords[d] && coords[d] <= s.domain[d].1);
                let (lo, hi) = (s.domain[last].0.max(a), s.domain[last].1.min(b));
                (in_row && lo <= hi).then_some((i, lo, hi))
            })
            .collect();
        let mut breaks: Vec<i128> = vec![a, b + 1];
        for &(_, lo, hi) in &covering {
            breaks.push(lo);
            breaks.push(hi + 1);
        }
        breaks.sort_unstable();
        breaks.dedup();
        let mut at = coords.to_vec();
        for w in breaks.windows(2) {
            let (p, q) = (w[0], w[1]);
            if p < a || q > b + 1 {
                continue;
            }
            let winner = covering
                .iter()
                .rev()
                .find(|&&(_, lo, hi)| lo <= p && q - 1 <= hi)
                .map(|&(i, ..)| i);
            match winner {
                None => push(
                    out,
                    Run {
                        source: None,
                        cell: 0,
                        stride: 0,
                        count: (q - p) as u64,
                    },
                ),
                Some(i) => {
                    let Some(s) = &self.sources[i] else { continue };
                    // Within one tile the cells along the last dimension are evenly
                    // spaced in storage order; a run per tile.
                    let mut c = p;
                    while c < q {
                        let stop = s.grid.tile_end(last, c).min(q - 1);
                        at[last] = c;
                        let Some(cell) = s.grid.cell_of(&at) else {
                            // Outside the fragment's tiles (cannot happen inside its
                            // domain): fill rather than wrong cells.
                            push(
                                out,
                                Run {
                                    source: None,
                                    cell: 0,
                                    stride: 0,
                                    count: (stop - c + 1) as u64,
                                },
                            );
                            c = stop + 1;
                            continue;
                        };
                        push(
                            out,
                            Run {
                                source: Some(i),
                                cell,
                                stride: s.grid.cell_stride(last),
                                count: (stop - c + 1) as u64,
                            },
                        );
                        c = stop + 1;
                    }
                }
            }
        }
    }
}

/// Appends a run, joining it to the last one when it continues it (one fragment's
/// cells, evenly spaced: a 1-D array's tiles make one run).
fn push(out: &mut Vec<Run>, run: Run) {
    if let Some(prev) = out.last_mut() {
        if prev.source == run.source {
            if run.source.is_none() {
                prev.count += run.count;
                return;
            }
            let stride = if prev.count > 1 {
                prev.stride
            } else {
                run.stride
            };
            if stride > 0
                && (run.count == 1 || run.stride == stride)
                && run.cell == prev.cell + prev.count * stride
            {
                prev.stride = stride;
                prev.count += run.count;
                return;
            }
        }
    }
    out.push(run);
}
