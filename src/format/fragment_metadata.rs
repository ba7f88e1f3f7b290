//! Payloads of the generic tiles of fragment metadata (`06-fragment-metadata.md` §4):
//! tile offset lists, the R-tree, tile statistics and processed conditions.

use super::datatype::Datatype;
use super::error::Result;
use super::reader::Reader;
use super::schema::{parse_range, Dimension};

/// A `u64` count followed by that many `u64` values (tile offsets, var offsets, var
/// sizes, validity offsets, null counts).
pub fn parse_u64_list(bytes: &[u8], field: &'static str) -> Result<Vec<u64>> {
    let mut r = Reader::new(bytes);
    let n = r.count(8, field)?;
    r.u64_vec(n as u64, field)
}

/// One minimum bounding rectangle: `[low, high]` per dimension.
pub type Mbr = Vec<(Vec<u8>, Vec<u8>)>;

#[derive(Debug, Clone, PartialEq, Default)]
pub struct RTree {
    pub fanout: u32,
    /// Root level first, leaves last; leaf i bounds data tile i.
    pub levels: Vec<Vec<Mbr>>,
}

impl RTree {
    pub fn parse(bytes: &[u8], version: u32, dims: &[Dimension]) -> Result<RTree> {
        let mut r = Reader::new(bytes);
        let legacy_type = if version < 5 {
            r.u32("R-tree dimension count")?;
            let fanout = r.u32("R-tree fanout")?;
            let at = r.offset();
            let t = Datatype::parse(r.u8("R-tree datatype")?, "R-tree datatype", at)?;
            Some((fanout, t))
        } else {
            None
        };
        let fanout = match legacy_type {
            Some((fanout, _)) => fanout,
            None => r.u32("R-tree fanout")?,
        };
        let at = r.offset();
        let level_count = r.u32("R-tree level count")?;
        r.check_count(level_count as u64, 8, "R-tree level count", at)?;
        let mut levels = Vec::with_capacity(level_count as usize);
        for _ in 0..level_count {
            let n = r.count(2, "R-tree MBR count")?;
            let mut level = Vec::with_capacity(n);
            for _ in 0..n {
                let mbr = dims
                    .iter()
                    .map(|d| match legacy_type {
                        Some((_, t)) => parse_range(&mut r, false, t.size(), "R-tree MBR"),
                        None => parse_range(&mut r, d.is_var(), d.datatype.size(), "R-tree MBR"),
                    })
                    .collect::<Result<Mbr>>()?;
                level.push(mbr);
            }
            levels.push(level);
        }
        Ok(RTree { fanout, levels })
    }

    pub fn leaves(&self) -> &[Mbr] {
        self.levels.last().map_or(&[], |l| l.as_slice())
    }
}

/// Per-tile minimums or maximums: for fixed fields one cell per tile in `fixed`; for var
/// fields `fixed` holds a `u64` offset per tile into `var`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TileBounds {
    pub fixed: Vec<u8>,
    pub var: Vec<u8>,
}

impl TileBounds {
    pub fn parse(bytes: &[u8]) -> Result<TileBounds> {
        let mut r = Reader::new(bytes);
        let fixed_len = r.u64("tile bounds fixed size")?;
        let var_len = r.u64("tile bounds var size")?;
        Ok(TileBounds {
            fixed: r.bytes(fixed_len, "tile bounds fixed part")?.to_vec(),
            var: r.bytes(var_len, "tile bounds var part")?.to_vec(),
        })
    }

    pub fn is_empty(&self) -> bool {
        self.fixed.is_empty()
    }

    /// The bound of tile `i`: a cell of `cell_size` bytes, or the var string.
    pub fn get(&self, i: usize, var: bool, cell_size: usize, tiles: usize) -> Option<&[u8]> {
        if var {
            let off = |k: usize| -> Option<usize> {
                let b = self.fixed.get(k * 8..k * 8 + 8)?;
                Some(u64::from_le_bytes(b.try_into().ok()?) as usize)
            };
            let start = off(i)?;
            let end = if i + 1 < tiles {
                off(i + 1)?
            } else {
                self.var.len()
            };
            self.var.get(start..end)
        } else {
            self.fixed.get(i * cell_size..(i + 1) * cell_size)
        }
    }
}

/// Tile sums: 8 raw bytes per tile, typed by the field (i64, u64 or f64).
pub fn parse_sums(bytes: &[u8]) -> Result<Vec<[u8; 8]>> {
    let mut r = Reader::new(bytes);
    let n = r.count(8, "tile sums")?;
    (0..n).map(|_| r.array::<8>("tile sum")).collect()
}

/// Fragment-level statistics of one slot (v12+).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FieldStats {
    pub min: Vec<u8>,
    pub max: Vec<u8>,
    pub sum: [u8; 8],
    pub null_count: u64,
}

pub fn parse_fragment_stats(bytes: &[u8], slots: usize) -> Result<Vec<FieldStats>> {
    let mut r = Reader::new(bytes);
    (0..slots)
        .map(|_| {
            let min_len = r.u64("fragment min size")?;
            let min = r.bytes(min_len, "fragment min")?.to_vec();
            let max_len = r.u64("fragment max size")?;
            let max = r.bytes(max_len, "fragment max")?.to_vec();
            Ok(FieldStats {
                min,
                max,
                sum: r.array("fragment sum")?,
                null_count: r.u64("fragment null count")?,
            })
        })
        .collect()
}

/// Names of the delete/update conditions already applied to a fragment (v16+).
pub fn parse_processed_conditions(bytes: &[u8]) -> Result<Vec<String>> {
    let mut r = Reader::new(bytes);
    let n = r.count(8, "processed condition count")?;
    (0..n)
        .map(|_| r.string_u64("processed condition"))
        .collect()
}
