//! A field as the faces see it: a fragment's (its stored files, decoded) or a merged
//! state's (the merge engine's cells). This is the one place where the two differ, so a
//! face written once serves both kinds of field folder.

use crate::array::dense_grid::DenseGrid;
use crate::array::field::FieldRole;
use crate::error::{Error, Result};
use crate::format::datatype::decode_int;
use crate::format::schema::VAR_NUM;
use crate::format::Datatype;
use crate::read::endian::ByteOrder;
use crate::read::RawFile;

use super::super::array_tree::ArrayTree;
use super::super::node::{FieldOf, Folder};
use super::At;

/// What a face needs to know of a field, from metadata.
pub(in crate::view::tiledb) struct FieldFacts {
    pub name: String,
    pub role: FieldRole,
    pub datatype: Datatype,
    pub cell_val_num: u32,
    pub nullable: bool,
    /// One cell of the attribute's fill value (empty for dimensions).
    pub fill: Vec<u8>,
    /// The validity a cell no fragment wrote has (nullable attributes).
    pub fill_valid: bool,
}

impl FieldFacts {
    pub fn is_var(&self) -> bool {
        self.cell_val_num == VAR_NUM
    }
}

/// A field's `values.bin` seen as a raster: a dense field whose values are a box of 2
/// dimensions (3: the first is the bands) in row-major order.
pub(in crate::view::tiledb) struct Raster {
    /// Cells along each dimension, slowest first (2 or 3 of them).
    pub shape: Vec<u64>,
    /// The first coordinate along each dimension.
    pub low: Vec<i128>,
    /// The dimensions' names.
    pub dims: Vec<String>,
}

impl ArrayTree {
    /// The facts of field `of`.
    pub(in crate::view::tiledb) fn field_facts(&self, of: FieldOf) -> Result<FieldFacts> {
        let missing = || Error::NotFound(format!("field #{}", of.index));
        match of.folder {
            Folder::Fragment(f) => {
                let (_, meta) = self.meta(f)?;
                let field = meta.fields.get(of.index).ok_or_else(missing)?;
                let attribute = meta
                    .schema
                    .attributes
                    .iter()
                    .find(|a| a.name == field.name && field.role == FieldRole::Attribute);
                let fill = attribute.map(|a| a.fill_value.clone()).unwrap_or_default();
                let fill_valid = attribute.is_some_and(|a| a.fill_value_validity);
                Ok(FieldFacts {
                    name: field.name.clone(),
                    role: field.role,
                    datatype: field.datatype,
                    cell_val_num: field.cell_val_num,
                    nullable: field.nullable,
                    fill,
                    fill_valid,
                })
            }
            Folder::State(w) => {
                let merged = self.merged(w)?;
                let field = merged.fields.get(of.index).ok_or_else(missing)?;
                Ok(FieldFacts {
                    name: field.name.clone(),
                    role: field.role,
                    datatype: field.datatype,
                    cell_val_num: field.cell_val_num,
                    nullable: field.nullable,
                    fill: field.fill.clone(),
                    fill_valid: field.fill_valid,
                })
            }
        }
    }

    /// Field `of`'s values as a raster, if they are one (see [`Raster`]).
    pub(in crate::view::tiledb) fn raster(&self, of: FieldOf) -> Result<Option<Raster>> {
        let (schema, boxed) = match of.folder {
            Folder::Fragment(f) => {
                let (_, meta) = self.meta(f)?;
                if !meta.footer.dense {
                    return Ok(None);
                }
                let Ok(grid) = DenseGrid::new(&meta.schema, &meta.footer) else {
                    return Ok(None);
                };
                (meta.schema.clone(), grid.row_major_box())
            }
            Folder::State(w) => {
                let merged = self.merged(w)?;
                let boxed = match (merged.is_dense(), merged.non_empty_domain()) {
                    (true, Some(domain)) => {
                        let dims = &merged.schema.dimensions;
                        let low: Option<Vec<i128>> = domain
                            .iter()
                            .zip(dims)
                            .map(|((lo, _), d)| decode_int(lo, d.datatype))
                            .collect();
                        low.zip(merged.shape())
                            .map(|(low, shape)| low.into_iter().zip(shape).collect())
                    }
                    // Nothing visible: no raster to describe.
                    _ => None,
                };
                (merged.schema.clone(), boxed)
            }
        };
        let Some(boxed) = boxed else { return Ok(None) };
        if !(2..=3).contains(&boxed.len()) || boxed.len() != schema.dimensions.len() {
            return Ok(None);
        }
        Ok(Some(Raster {
            shape: boxed.iter().map(|&(_, n)| n).collect(),
            low: boxed.iter().map(|&(lo, _)| lo).collect(),
            dims: schema.dimensions.iter().map(|d| d.name.clone()).collect(),
        }))
    }
}

impl At<'_, FieldOf> {
    pub fn facts(&self) -> Result<FieldFacts> {
        self.tree.field_facts(self.place)
    }

    /// The size of raw file `raw` if it is known without a pass over cells (a fragment's
    /// always is: it follows from the tile sizes).
    pub fn raw_known_size(&self, raw: RawFile) -> Result<Option<u64>> {
        match self.place.folder {
            Folder::Fragment(_) => self.raw_size(raw).map(Some),
            Folder::State(w) => Ok(self.tree.merged(w)?.known_size(self.place.index, raw)),
        }
    }

    pub fn raw_size(&self, raw: RawFile) -> Result<u64> {
        let i = self.place.index;
        match self.place.folder {
            Folder::Fragment(f) => self.tree.with_field(f, i, |r| r.size(raw)),
            Folder::State(w) => self.tree.merged(w)?.size(i, raw),
        }
    }

    /// Appends bytes `[offset, offset + len)` of raw file `raw` (clipped to its size).
    pub fn read_raw(&self, raw: RawFile, offset: u64, len: u64, out: &mut Vec<u8>) -> Result<()> {
        let i = self.place.index;
        match self.place.folder {
            Folder::Fragment(f) => self
                .tree
                .with_field(f, i, |r| r.read_into(raw, offset, len, out)),
            Folder::State(w) => self.tree.merged(w)?.read_into(i, raw, offset, len, out),
        }
    }

    /// [`At::read_raw`] of `values.bin` with the values in byte order `order`: a
    /// merged state's put in order run by run as they are gathered, a fragment's (as
    /// they are read, straight from the chunks) once read.
    pub fn read_values_ordered(
        &self,
        offset: u64,
        len: u64,
        order: ByteOrder,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        match self.place.folder {
            Folder::Fragment(_) => {
                let start = out.len();
                self.read_raw(RawFile::Values, offset, len, out)?;
                order.apply(&mut out[start..]);
                Ok(())
            }
            Folder::State(w) => self.tree.merged(w)?.read_ordered_into(
                self.place.index,
                RawFile::Values,
                offset,
                len,
                order,
                out,
            ),
        }
    }

    /// Read-ahead of a range of raw file `raw`: a fragment's stored tiles are brought in
    /// ahead of the reader (and the next fragment's at the file's end); a merged file's,
    /// those of the fragments its cells come from.
    pub fn read_ahead_raw(&self, raw: RawFile, offset: u64, len: u64) -> Result<()> {
        let i = self.place.index;
        match self.place.folder {
            Folder::Fragment(f) => self.tree.read_ahead_field(f, i, raw, offset, len),
            Folder::State(w) => self.tree.merged(w)?.read_ahead(i, raw, offset, len),
        }
    }

    /// Cells of the field (a sparse state's are counted by one merge pass).
    pub fn cell_count(&self) -> Result<u64> {
        match self.place.folder {
            Folder::Fragment(f) => Ok(self.tree.meta(f)?.1.cell_count()),
            Folder::State(w) => self.tree.merged(w)?.cell_count(),
        }
    }

    /// The shape `values.bin` has as an n-d array: a dense state's box; `None` for a
    /// list of cells (fragments, sparse states).
    pub fn shape(&self) -> Result<Option<Vec<u64>>> {
        match self.place.folder {
            Folder::Fragment(_) => Ok(None),
            Folder::State(w) => Ok(self.tree.merged(w)?.shape()),
        }
    }

    pub fn raster(&self) -> Result<Option<Raster>> {
        self.tree.raster(self.place)
    }
}
