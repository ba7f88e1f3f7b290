//! A dense state's space tiles as the fragments store them: whether one fragment's
//! stored tile holds a tile of the merged array whole (every cell of it in the domain
//! comes from that fragment, none is fill), so a reader can be pointed at the stored
//! bytes instead of the merge; and if not, why. What `fragfs refs` references.

use crate::error::{Error, Result};
use crate::format::datatype::decode_int;
use crate::read::tile::FileRole;
use crate::read::tile_ref::{StandardSpan, StoredTile};

use super::merged::{Merged, Shape};

/// Where a space tile of a merged dense state comes from.
#[derive(Debug)]
pub enum RegionTile {
    /// One fragment's stored tile holds it whole: the tile, where a standard codec
    /// reads it (if one can), and the fragment's name.
    Stored {
        tile: Box<StoredTile>,
        standard: Option<StandardSpan>,
        fragment: String,
    },
    /// No stored tile does: why (its cells come from several fragments, or some are
    /// fill values, or the one fragment's tile cannot be read as it is).
    Merge(String),
}

impl Merged {
    /// The stored tile holding the cells of `region` (one space tile, clipped to the
    /// schema's domain: cells past it are no one's) of fixed-size attribute `f`, its
    /// values or (`validity`) its validity, or why none does.
    pub fn region_tile(
        &self,
        f: usize,
        validity: bool,
        region: &[(i128, i128)],
    ) -> Result<RegionTile> {
        let Shape::Dense(d) = &self.shape else {
            return Err(Error::NotFound("a tile of a sparse array".into()));
        };
        let field = self.field(f)?;
        let merge = |why: String| Ok(RegionTile::Merge(why));
        if field.is_var() {
            return merge(format!("{} is a var-size attribute", field.name));
        }
        let (sources, fill) = d.region_sources(region);
        let names = |s: &[usize]| {
            s.iter()
                .map(|&i| self.sources[i].fragment.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let s = match (sources.as_slice(), fill) {
            ([s], false) => *s,
            ([], _) => return merge("no fragment wrote its cells: fill values".into()),
            (s, true) => {
                return merge(format!(
                    "cells of fragment {} and fill values (cells no fragment wrote)",
                    names(s)
                ))
            }
            (s, false) => return merge(format!("cells of {} fragments: {}", s.len(), names(s))),
        };
        let source = &self.sources[s];
        let name = &source.fragment.name;
        if source.partial {
            return merge(format!(
                "fragment {name} is visible only in part at this time"
            ));
        }
        let Some(i) = field.sources.get(s).copied().flatten() else {
            return merge(format!("fragment {name} predates attribute {}", field.name));
        };
        let corner: Vec<i128> = region.iter().map(|&(lo, _)| lo).collect();
        let Some(k) = d.tile_at(s, &corner) else {
            return merge(format!("fragment {name} holds no tile starting there"));
        };
        // The fragment's tiles are this state's space tiles only on the same grid.
        let grid = |schema: &crate::format::schema::ArraySchema| -> Vec<Option<(i128, i128)>> {
            schema
                .dimensions
                .iter()
                .map(|dim| {
                    let t = dim.datatype;
                    let lo = decode_int(dim.domain.get(..t.size() as usize)?, t)?;
                    Some((lo, decode_int(dim.tile_extent.as_deref()?, t)?))
                })
                .collect()
        };
        if grid(&source.meta.schema) != grid(&self.schema) {
            return merge(format!(
                "fragment {name} was written with another domain or tile extents"
            ));
        }
        let reader = self.engine.field(&source.fragment, &source.meta, i)?;
        let stored = reader.field;
        if stored.datatype != field.datatype
            || stored.cell_val_num != field.cell_val_num
            || (validity && !stored.nullable)
        {
            return merge(format!(
                "fragment {name} stores {} with another type",
                field.name
            ));
        }
        let role = if validity {
            FileRole::Validity
        } else {
            FileRole::Data
        };
        let tile = reader.stored_tile(role, k)?;
        if tile.encrypted {
            return merge(format!(
                "fragment {name} is encrypted: its tiles need the key, which no reference carries"
            ));
        }
        let standard = reader.standard_span(role, k, &tile)?;
        Ok(RegionTile::Stored {
            tile: Box::new(tile),
            standard,
            fragment: name.clone(),
        })
    }
}
