//! Cells of a field: cells `i..j` of one field of one fragment, fixed or var-size, with
//! their validity. The text renderers, and every view that needs values rather than
//! bytes, read through here; the bytes come from the field's raw files.

use crate::error::{Error, Place, Result};

use super::field::FieldReader;
use super::raw_file::RawFile;

/// A run of consecutive cells of one field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cells {
    /// The index of the first cell in the fragment.
    pub first: u64,
    /// Fixed-size fields: the cells' values back to back. Var-size: their bytes,
    /// concatenated.
    pub values: Vec<u8>,
    /// Var-size fields: where each cell starts in `values`, then where the last ends.
    pub bounds: Option<Vec<u64>>,
    /// Nullable fields: one byte per cell, 1 valid, 0 null.
    pub validity: Option<Vec<u8>>,
    /// Bytes per cell of a fixed-size field.
    cell_size: usize,
    count: usize,
}

impl Cells {
    /// Cells of a fixed size: `values` holds `count` values of `cell_size` bytes.
    pub fn fixed(
        first: u64,
        values: Vec<u8>,
        cell_size: usize,
        validity: Option<Vec<u8>>,
    ) -> Cells {
        let count = values.len().checked_div(cell_size).unwrap_or(0);
        Cells {
            first,
            values,
            bounds: None,
            validity,
            cell_size,
            count,
        }
    }

    /// Var-size cells: cell `i` is `values[bounds[i]..bounds[i + 1]]`.
    pub fn var(first: u64, values: Vec<u8>, bounds: Vec<u64>, validity: Option<Vec<u8>>) -> Cells {
        let count = bounds.len().saturating_sub(1);
        Cells {
            first,
            values,
            bounds: Some(bounds),
            validity,
            cell_size: 0,
            count,
        }
    }

    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The value of cell `i` of the run (all elements of a fixed multi-value cell; the
    /// bytes of a var cell). Out of range: empty.
    pub fn value(&self, i: usize) -> &[u8] {
        match &self.bounds {
            Some(b) => match (b.get(i), b.get(i + 1)) {
                // An offset below the one before (bad data) makes an empty cell.
                (Some(&from), Some(&to)) => self
                    .values
                    .get(from as usize..to.max(from) as usize)
                    .unwrap_or_default(),
                _ => &[],
            },
            None => self
                .values
                .get(i * self.cell_size..(i + 1) * self.cell_size)
                .unwrap_or_default(),
        }
    }

    /// Whether cell `i` of the run holds a value (not null).
    pub fn is_valid(&self, i: usize) -> bool {
        self.validity
            .as_ref()
            .is_none_or(|v| v.get(i).is_some_and(|&b| b != 0))
    }
}

impl FieldReader<'_> {
    /// Cells `first .. first + n` of the field (clipped to the fragment's cells).
    pub fn cells(&self, first: u64, n: u64) -> Result<Cells> {
        let field = self.field;
        let total = self.meta.cell_count();
        let n = n.min(total.saturating_sub(first));
        // Cells that do not fit what the metadata promises: named by the file holding
        // the offsets (or values) and the tile of the first cell concerned.
        let place = |cell: u64| -> Place {
            self.meta
                .place()
                .clone()
                .in_file(field.data_file())
                .tile(cell / self.meta.cells_per_tile.max(1))
                .detail(format!("field {}, cell {cell}", field.name))
        };
        // Byte positions of cells: counts come from the metadata, so a product that does
        // not fit 64 bits is bad data (not a wrapped offset, nor a panic).
        let at = |cell: u64, size: u64| -> Result<u64> {
            cell.checked_mul(size).ok_or_else(|| {
                Error::corrupt(
                    place(cell),
                    format!("cell {cell} of {size} bytes is past any file"),
                )
            })
        };
        let validity = if field.nullable {
            Some(self.read(RawFile::Validity, first, n)?)
        } else {
            None
        };
        let (values, bounds, cell_size) = if field.is_var() {
            let mut bounds: Vec<u64> = self
                .read(RawFile::Offsets, at(first, 8)?, at(n, 8)?)?
                .chunks_exact(8)
                .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
                .collect();
            let size = self.size(RawFile::Values)?;
            let end = if first + n < total {
                let next = self.read(RawFile::Offsets, at(first + n, 8)?, 8)?;
                u64::from_le_bytes(next.try_into().unwrap_or([0; 8]))
            } else {
                size
            };
            let base = bounds.first().copied().unwrap_or(end);
            if base > end || end > size {
                return Err(Error::corrupt(
                    place(first),
                    format!("offsets {base}..{end} out of order"),
                ));
            }
            bounds.push(end);
            // Relative to the first cell's start; each must stay within the bytes read.
            for (b, cell) in bounds.iter_mut().zip(first..) {
                *b = b
                    .checked_sub(base)
                    .filter(|&rel| rel <= end - base)
                    .ok_or_else(|| Error::corrupt(place(cell), "offsets out of order"))?;
            }
            let bytes = self.read(RawFile::Values, base, end - base)?;
            (bytes, Some(bounds), 0)
        } else {
            let size = field.cell_size().max(1);
            (
                self.read(RawFile::Values, at(first, size)?, at(n, size)?)?,
                None,
                size as usize,
            )
        };
        let cells = Cells {
            first,
            values,
            bounds,
            validity,
            cell_size,
            count: n as usize,
        };
        let short = match &cells.bounds {
            Some(b) => b.len() != cells.count + 1,
            None => cells.values.len() != cells.count * cells.cell_size,
        } || cells
            .validity
            .as_ref()
            .is_some_and(|v| v.len() != cells.count);
        if short {
            return Err(Error::corrupt(
                place(first),
                "fewer cells than the metadata promises",
            ));
        }
        Ok(cells)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::array::{Array, OpenOptions};
    use crate::read::ReadEngine;
    use crate::storage::LocalStore;

    /// A cell number whose byte position does not fit 64 bits (as a corrupt cell count
    /// in the metadata makes them) is an error or no cells, never an overflow: fixed,
    /// var-size and nullable fields alike.
    #[test]
    fn cell_positions_past_64_bits_are_errors_not_overflows() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/tiledb/sparse_var_nullable");
        let store = Arc::new(LocalStore::open(&path).unwrap());
        let array = Array::open(store, OpenOptions::default()).unwrap();
        let engine = ReadEngine::new(16 << 20);
        let fragment = &array.fragments[0];
        let meta = fragment.meta(&array.schemas).unwrap();
        assert!(meta.fields.iter().any(|f| f.is_var()));
        for i in 0..meta.fields.len() {
            let reader = engine.field(fragment, &meta, i).unwrap();
            for first in [u64::MAX / 2, u64::MAX - 1, u64::MAX] {
                if let Ok(cells) = reader.cells(first, 4) {
                    assert!(cells.is_empty(), "field {i}: cells past the end");
                }
            }
        }
    }
}
