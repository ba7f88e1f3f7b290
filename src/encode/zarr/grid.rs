//! One array of the store: its type, shape and regular chunk grid over the domain, which
//! chunks have a file given the boxes the fragments wrote, and the chunks' sizes.

use std::collections::BTreeSet;
use std::fmt;

use super::dtype::{Elements, ZType};

/// Coordinate arrays list every chunk up to this many (beyond, those under fragments;
/// any other chunk still opens by name).
pub const COORD_LIST_ALL: u64 = 4096;

/// An array of the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ZArray {
    /// A fixed-size attribute's values (index among the merged fields).
    Values(usize),
    /// A nullable attribute's validity bytes, `<attr>__validity` (merged field index).
    Validity(usize),
    /// A dimension's coordinates (dimension index).
    Coords(usize),
}

/// Names an array in messages where its name is not at hand (a node that outlived the
/// state it was looked up in).
impl fmt::Display for ZArray {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ZArray::Values(i) => write!(f, "the values of field {i}"),
            ZArray::Validity(i) => write!(f, "the validity of field {i}"),
            ZArray::Coords(d) => write!(f, "the coordinates of dimension {d}"),
        }
    }
}

/// One array of the store: its name, type, grid and fill value.
pub struct ZDesc {
    pub name: String,
    pub array: ZArray,
    pub ty: ZType,
    /// Per dimension of the domain: the coordinate of index 0.
    pub origin: Vec<i128>,
    /// Per Zarr dimension: the domain's, then (several values per cell) the values of
    /// a cell: the length and the chunk length.
    pub shape: Vec<u64>,
    pub chunks: Vec<u64>,
    /// One element, or `None` (v2 `null`: coordinate arrays, which xarray would
    /// otherwise mask where a coordinate equals it).
    pub fill: Option<Vec<u8>>,
    pub dimension_names: Vec<String>,
    /// Every chunk has a file, written or not: coordinate arrays, and arrays whose
    /// fill (a cell of several values that differ) no one element can say.
    pub every_chunk: bool,
    /// A variable-length element of one NUL byte is empty: the stored empty value (and
    /// fill value) of formats <= 5, as TileDB-Py reads it.
    pub nul_is_empty: bool,
}

impl ZDesc {
    /// Chunks per dimension (the last one may be partial).
    pub fn chunk_counts(&self) -> Vec<u64> {
        self.shape
            .iter()
            .zip(&self.chunks)
            .map(|(&n, &c)| n.div_ceil(c.max(1)))
            .collect()
    }

    /// Cells of the domain per chunk (Zarr chunks are whole, even past the shape's
    /// end), saturating.
    pub fn chunk_cells(&self) -> u64 {
        self.chunks[..self.origin.len()]
            .iter()
            .try_fold(1u64, |n, &c| n.checked_mul(c))
            .unwrap_or(u64::MAX)
    }

    /// Bytes per cell of the domain: one element, or a cell's values.
    pub fn cell_bytes(&self) -> u64 {
        self.shape[self.origin.len()..]
            .iter()
            .try_fold(self.ty.size, |n, &c| n.checked_mul(c))
            .unwrap_or(u64::MAX)
    }

    /// The size of every chunk file of fixed-size elements (saturating); `None` for
    /// variable-length ones, whose size is known once the chunk is rendered.
    pub fn fixed_chunk_bytes(&self) -> Option<u64> {
        match self.ty.elements {
            Elements::Fixed => Some(self.chunk_cells().saturating_mul(self.cell_bytes())),
            Elements::VlenUtf8 | Elements::VlenBytes => None,
        }
    }

    /// The box (first and last coordinate per dimension of the domain) chunk `c`
    /// covers; with fewer coordinates than dimensions, the leading dimensions' part of
    /// it. (A cell's values are whole in every chunk: their coordinate is always 0.)
    pub fn region(&self, c: &[u64]) -> Vec<(i128, i128)> {
        c.iter()
            .zip(&self.origin)
            .zip(&self.chunks)
            .map(|((&k, &o), &n)| {
                let lo = o + i128::from(k) * i128::from(n);
                (lo, lo + i128::from(n) - 1)
            })
            .collect()
    }

    /// The chunk index range (inclusive) that a box of coordinates meets along `d`,
    /// clamped to the grid (a fragment's box never leaves the domain, but a bad one
    /// must not name chunks that do not exist).
    pub fn chunk_span(&self, d: usize, (lo, hi): (i128, i128)) -> (u64, u64) {
        let n = i128::from(self.chunks[d].max(1));
        let first = ((lo - self.origin[d]).max(0) / n) as u64;
        let last = ((hi - self.origin[d]).max(0) / n) as u64;
        let count = self.chunk_counts()[d];
        (
            first.min(count.saturating_sub(1)),
            last.min(count.saturating_sub(1)),
        )
    }

    /// Whether chunk `c` (or, with fewer coordinates, a v3 key folder's leading ones)
    /// has a file, given the boxes the visible fragments wrote: every chunk of an
    /// array that has them all; data chunks when some fragment wrote inside their box
    /// (the rest readers fill with the fill value themselves).
    pub fn chunk_exists(&self, written: &[Vec<(i128, i128)>], c: &[u64]) -> bool {
        let counts = self.chunk_counts();
        if c.len() > counts.len() || c.iter().zip(&counts).any(|(k, n)| k >= n) {
            return false;
        }
        if self.every_chunk {
            return true;
        }
        let region = self.region(c);
        written.iter().any(|dom| {
            dom.iter()
                .zip(&region)
                .all(|(&(lo, hi), &(a, b))| lo <= b && a <= hi)
        })
    }

    /// The chunks that have a file, in key order. Only the written boxes are walked,
    /// never the whole grid, so a listing costs what the fragments cover; an array
    /// with every chunk lists them all up to [`COORD_LIST_ALL`] (beyond, those under
    /// the written boxes: any other still opens by name).
    pub fn chunk_files(&self, written: &[Vec<(i128, i128)>]) -> BTreeSet<Vec<u64>> {
        let mut out = BTreeSet::new();
        for spans in self.chunk_boxes(written) {
            odometer(&spans, &mut out);
        }
        out
    }

    /// The keys one level below `prefix` in the `c/` folders (v3) of the chunks that
    /// have a file: what [`ZDesc::chunk_files`] would give there, found from the boxes'
    /// spans without listing every chunk (a walk of a million-chunk grid's folders
    /// would otherwise list the million once per folder).
    pub fn next_keys(&self, written: &[Vec<(i128, i128)>], prefix: &[u64]) -> BTreeSet<u64> {
        let k = prefix.len();
        self.chunk_boxes(written)
            .into_iter()
            .filter(|spans| {
                k < spans.len()
                    && prefix
                        .iter()
                        .zip(spans)
                        .all(|(c, &(lo, hi))| lo <= *c && *c <= hi)
            })
            .flat_map(|spans| spans[k].0..=spans[k].1)
            .collect()
    }

    /// The boxes of chunk indexes (inclusive spans per dimension) whose chunks have a
    /// file: the whole grid when every chunk has one (and the grid is small enough to
    /// list, [`COORD_LIST_ALL`]), else those under each written box.
    pub fn chunk_boxes(&self, written: &[Vec<(i128, i128)>]) -> Vec<Vec<(u64, u64)>> {
        let counts = self.chunk_counts();
        let all = counts
            .iter()
            .try_fold(1u64, |n, &c| n.checked_mul(c))
            .is_some_and(|n| n <= COORD_LIST_ALL);
        let whole: Vec<(u64, u64)> = counts.iter().map(|&n| (0, n.saturating_sub(1))).collect();
        if self.every_chunk && all {
            return vec![whole];
        }
        written
            .iter()
            .filter_map(|dom| match self.array {
                ZArray::Coords(dim) => dom.get(dim).map(|&range| vec![self.chunk_span(0, range)]),
                // The dimensions of the domain, then a cell's values: one chunk.
                _ => Some(
                    (0..counts.len())
                        .map(|k| match dom.get(k) {
                            Some(&range) if k < self.origin.len() => self.chunk_span(k, range),
                            _ => whole[k],
                        })
                        .collect(),
                ),
            })
            .collect()
    }
}

/// Adds every chunk of the box `spans` (per dimension, the first and last index).
fn odometer(spans: &[(u64, u64)], out: &mut BTreeSet<Vec<u64>>) {
    let mut c: Vec<u64> = spans.iter().map(|s| s.0).collect();
    'odometer: loop {
        out.insert(c.clone());
        for k in (0..c.len()).rev() {
            if c[k] < spans[k].1 {
                c[k] += 1;
                continue 'odometer;
            }
            c[k] = spans[k].0;
        }
        break;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encode::zarr::testing::*;

    #[test]
    fn chunk_counts_regions_and_sizes() {
        let store = grid_store();
        let a = array(&store, "a");
        assert_eq!(
            (a.origin.clone(), a.shape.clone(), a.chunks.clone()),
            (vec![1, -5], vec![20, 36], vec![3, 4])
        );
        // 20 / 3 leaves a partial chunk; 36 / 4 does not.
        assert_eq!(a.chunk_counts(), [7, 9]);
        assert_eq!(a.fixed_chunk_bytes(), Some(3 * 4 * 4));
        assert_eq!(a.region(&[1, 2]), [(4, 6), (3, 6)]);
        // The last chunk runs past the domain: Zarr chunks are whole.
        assert_eq!(a.region(&[6, 8]), [(19, 21), (27, 30)]);
        // A key folder's leading coordinates.
        assert_eq!(a.region(&[2]), [(7, 9)]);
        // Coordinate arrays: one chunk up to 2^20 cells.
        let x = array(&store, "x");
        assert_eq!(
            (x.shape.clone(), x.chunks.clone(), x.chunk_counts()),
            (vec![20], vec![20], vec![1])
        );
        let t = array(&store, "t");
        assert_eq!(t.fixed_chunk_bytes(), Some(8 * 12));
        let huge = ZDesc {
            chunks: vec![u64::MAX, 2],
            ..grid_store().arrays.remove(0)
        };
        assert_eq!(
            huge.fixed_chunk_bytes(),
            Some(u64::MAX),
            "overflow saturates"
        );
    }

    #[test]
    fn chunk_spans_clamp_to_the_grid() {
        let store = grid_store();
        let a = array(&store, "a");
        assert_eq!(a.chunk_span(0, (2, 9)), (0, 2));
        assert_eq!(a.chunk_span(0, (4, 4)), (1, 1));
        assert_eq!(a.chunk_span(1, (-5, -5)), (0, 0));
        assert_eq!(a.chunk_span(1, (0, 10)), (1, 3));
        assert_eq!(a.chunk_span(0, (-100, 100)), (0, 6));
        assert_eq!(a.chunk_span(1, (30, 30)), (8, 8));
    }

    /// A grid of 10^12 chunks written whole: a `c/<i>` folder lists its million keys
    /// from the written box's spans (listing them by filtering every chunk of the grid
    /// would walk 10^12).
    #[test]
    fn keys_of_a_huge_grid_are_listed_one_level_at_a_time() {
        let s = schema(
            ArrayType::Dense,
            vec![
                dim("x", Datatype::Int64, 0, 999_999, Some(1)),
                dim("y", Datatype::Int64, 0, 999_999, Some(1)),
            ],
            vec![attr("a", Datatype::Int32, 1, false, vec![0; 4])],
        );
        let store = store(&s, &fields(&s)).unwrap();
        let a = array(&store, "a");
        let written = vec![vec![(0, 999_999), (0, 999_999)]];
        let top = a.next_keys(&written, &[]);
        assert_eq!(top.len(), 1_000_000);
        let below = a.next_keys(&written, &[123_456]);
        assert_eq!(below.len(), 1_000_000);
        assert_eq!(below.iter().next_back(), Some(&999_999));
        assert!(
            a.next_keys(&written, &[1_000_000]).is_empty(),
            "past the grid"
        );
    }

    #[test]
    fn chunk_files_are_those_under_written_boxes() {
        let store = grid_store();
        let a = array(&store, "a");
        let written = vec![vec![(2, 9), (0, 10)], vec![(19, 20), (30, 30)]];
        let files = a.chunk_files(&written);
        let mut want: Vec<Vec<u64>> = Vec::new();
        for i in 0..=2 {
            for j in 1..=3 {
                want.push(vec![i, j]);
            }
        }
        want.push(vec![6, 8]);
        assert_eq!(files.into_iter().collect::<Vec<_>>(), want);
        // One level at a time, as the `c/` folders list them, the same keys.
        let top = a.next_keys(&written, &[]);
        assert_eq!(top.iter().copied().collect::<Vec<_>>(), [0, 1, 2, 6]);
        for i in top {
            let below: Vec<u64> = a.next_keys(&written, &[i]).into_iter().collect();
            let want_below: Vec<u64> = want.iter().filter(|c| c[0] == i).map(|c| c[1]).collect();
            assert_eq!(below, want_below, "under {i}");
            assert!(
                a.next_keys(&written, &[i, below[0]]).is_empty(),
                "chunks: no level below"
            );
        }
        assert!(a.next_keys(&written, &[4]).is_empty(), "4 holds no chunk");
        assert!(a.chunk_exists(&written, &[1, 2]));
        assert!(a.chunk_exists(&written, &[6, 8]));
        assert!(
            !a.chunk_exists(&written, &[0, 0]),
            "y -5..-2 was not written"
        );
        assert!(
            !a.chunk_exists(&written, &[3, 1]),
            "x 10..12 was not written"
        );
        // Key folders: leading coordinates.
        assert!(a.chunk_exists(&written, &[2]));
        assert!(!a.chunk_exists(&written, &[4]));
        assert!(a.chunk_exists(&written, &[]));
        // Out of the grid, or too many coordinates.
        assert!(!a.chunk_exists(&written, &[7, 0]));
        assert!(!a.chunk_exists(&written, &[0, 1, 0]));
        assert!(a.chunk_files(&[]).is_empty());
        assert!(!a.chunk_exists(&[], &[0, 1]));
    }

    #[test]
    fn coordinate_chunks_exist_whatever_was_written() {
        let store = grid_store();
        let x = array(&store, "x");
        assert_eq!(
            x.chunk_files(&[]).into_iter().collect::<Vec<_>>(),
            [vec![0]]
        );
        assert!(x.chunk_exists(&[], &[0]));
        assert!(!x.chunk_exists(&[], &[1]));
        // Past COORD_LIST_ALL chunks only those under fragments are listed, but any
        // opens by name.
        let s = schema(
            ArrayType::Dense,
            vec![dim("x", Datatype::Int64, 0, (1 << 33) - 1, Some(1 << 20))],
            Vec::new(),
        );
        let big = store_of(&s);
        let x = array(&big, "x");
        assert_eq!(x.chunk_counts(), [8192]);
        let written = vec![vec![(3 << 20, (3 << 20) + 5)]];
        assert_eq!(
            x.chunk_files(&written).into_iter().collect::<Vec<_>>(),
            [vec![3]]
        );
        assert!(x.chunk_exists(&written, &[8191]));
    }

    #[test]
    fn arrays_the_state_lacks_are_described_readably() {
        let store = grid_store();
        assert!(store.get(ZArray::Values(9)).is_none());
        assert_eq!(ZArray::Values(9).to_string(), "the values of field 9");
        assert_eq!(
            ZArray::Coords(1).to_string(),
            "the coordinates of dimension 1"
        );
        assert_eq!(
            crate::encode::zarr::ZMeta::ZarrJson.file_name(),
            "zarr.json"
        );
    }
}
