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
