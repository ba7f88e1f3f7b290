//! The fields a fragment stores (attributes, dimensions, `t`/`dt`/`dci`), with their data
//! files and pipelines, as decided by the fragment's own schema and version
//! (`07-data-files-and-cells.md` §1-2).

use crate::format::coords::{CoordsLayout, CoordsSlice};
use crate::format::footer::Footer;
use crate::format::schema::{ArraySchema, VAR_NUM};
use crate::format::{Datatype, FilterPipeline};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldRole {
    Attribute,
    Dimension,
    /// `__timestamps`, `__delete_timestamps`, `__delete_condition_index`.
    Special,
}

impl FieldRole {
    pub fn name(self) -> &'static str {
        match self {
            FieldRole::Attribute => "attribute",
            FieldRole::Dimension => "dimension",
            FieldRole::Special => "special",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Field {
    pub name: String,
    pub role: FieldRole,
    /// Index into the per-slot lists of the fragment metadata.
    pub slot: usize,
    pub datatype: Datatype,
    pub cell_val_num: u32,
    pub nullable: bool,
    /// Pipeline of the data (fixed values, or var bytes of a var field).
    pub filters: FilterPipeline,
    /// Data file name without `.tdb` (`a0`, `d1`, `t`, the field name before v9, or
    /// `__coords` for the dimensions of sparse fragments before v5).
    pub file_base: String,
    /// False for the dimensions of dense fragments, which store no coordinates.
    pub stored: bool,
    /// Dimensions of sparse fragments before v5: where this dimension lies in the
    /// combined `__coords.tdb` tiles (shared by every dimension, slot A).
    pub coords: Option<CoordsSlice>,
}

impl Field {
    pub fn is_var(&self) -> bool {
        self.cell_val_num == VAR_NUM
    }

    /// Bytes per cell of `values.bin` (8 for the offsets of var fields).
    pub fn cell_size(&self) -> u64 {
        if self.is_var() {
            8
        } else {
            self.cell_val_num as u64 * self.datatype.size()
        }
    }

    /// Bytes per cell of the data file: as [`cell_size`](Self::cell_size), except in
    /// `__coords.tdb`, where a cell holds the coordinates of every dimension.
    pub fn file_cell_size(&self) -> u64 {
        match &self.coords {
            Some(c) => c.cell_size(),
            None => self.cell_size(),
        }
    }

    pub fn data_file(&self) -> String {
        format!("{}.tdb", self.file_base)
    }

    pub fn var_file(&self) -> String {
        format!("{}_var.tdb", self.file_base)
    }

    pub fn validity_file(&self) -> String {
        format!("{}_validity.tdb", self.file_base)
    }
}

/// TileDB's percent-encoding of field names in format 8 file names (`encode_name`),
/// odd choices included.
pub fn encode_v8_name(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        let code = match c {
            '!' => "%21",
            '#' => "%23",
            '$' => "%24",
            '%' => "%25",
            '&' => "%26",
            '\'' => "%27",
            '(' => "%28",
            ')' => "%29",
            '*' => "%2A",
            '+' => "%2B",
            ',' => "%2C",
            '/' => "%2F",
            ':' => "%3A",
            ';' => "%3B",
            '=' => "%3D",
            '?' => "%3F",
            '@' => "%40",
            '[' => "%5B",
            ']' => "%5D",
            '"' => "%22",
            '<' => "%20",
            '>' => "%2D",
            '\\' => "%30",
            '|' => "%3C",
            _ => {
                out.push(c);
                continue;
            }
        };
        out.push_str(code);
    }
    out
}

/// Lists the fields of a fragment in tree order: dimensions, attributes, then the special
/// fields the footer announces.
pub fn fragment_fields(schema: &ArraySchema, footer: &Footer) -> Vec<Field> {
    let v = footer.version;
    let a = schema.attributes.len();
    let base = |by_index: String, name: &str| -> String {
        match v {
            9.. => by_index,
            8 => encode_v8_name(name),
            _ => name.to_string(),
        }
    };
    let mut fields = Vec::new();
    let dims = schema.dimensions.len() as u64;
    let coords_layout =
        (v < 5 && !footer.dense).then(|| CoordsLayout::of(v, &schema.coords_filters));
    for (j, d) in schema.dimensions.iter().enumerate() {
        let coords = coords_layout.map(|layout| CoordsSlice {
            layout,
            dim: j as u64,
            dims,
            value_size: d.datatype.size(),
        });
        fields.push(Field {
            name: d.name.clone(),
            role: FieldRole::Dimension,
            slot: if coords.is_some() { a } else { a + 1 + j },
            datatype: d.datatype,
            cell_val_num: d.cell_val_num,
            nullable: false,
            filters: schema.dimension_filters(d),
            file_base: match coords {
                Some(_) => "__coords".to_string(),
                None => base(format!("d{j}"), &d.name),
            },
            stored: !footer.dense,
            coords,
        });
    }
    for (i, at) in schema.attributes.iter().enumerate() {
        fields.push(Field {
            name: at.name.clone(),
            role: FieldRole::Attribute,
            slot: i,
            datatype: at.datatype,
            cell_val_num: at.cell_val_num,
            nullable: at.nullable,
            filters: at.filters.clone(),
            file_base: base(format!("a{i}"), &at.name),
            stored: true,
            coords: None,
        });
    }
    let mut slot = a + 1 + schema.dimensions.len();
    let mut special = |name: &str, file: &str| {
        fields.push(Field {
            name: name.to_string(),
            role: FieldRole::Special,
            slot,
            datatype: Datatype::UInt64,
            cell_val_num: 1,
            nullable: false,
            filters: schema.coords_filters.clone(),
            file_base: file.to_string(),
            stored: true,
            coords: None,
        });
        slot += 1;
    };
    if footer.has_timestamps {
        special("__timestamps", "t");
    }
    if footer.has_delete_meta {
        special("__delete_timestamps", "dt");
        special("__delete_condition_index", "dci");
    }
    fields
}
