//! `enumeration/` in the folder of an enumerated attribute (format 20+): the labels its
//! codes stand for, as in the schema the fragment (or the merged state) was read with:
//! `values.bin`, `offsets.bin` (var-size labels), `values.txt` and `enumeration.json`.
//! The attribute's own `values.bin`/`values.npy` keep the raw codes; its `values.txt` and
//! `cells.csv` show the labels.

use std::sync::Arc;

use serde_json::{json, Map, Value};

use super::array_tree::ArrayTree;
use super::node::{EnumFile, FieldOf, Folder};
use crate::array::ENUMERATIONS_DIR;
use crate::error::{Error, Result};
use crate::format::enumeration::Enumeration;
use crate::format::schema::{ArraySchema, VAR_NUM};
use crate::view::{names, text};

impl ArrayTree {
    /// The enumeration of a field folder's attribute, and the schema it comes from.
    pub(super) fn field_enumeration(
        &self,
        of: &FieldOf,
    ) -> Result<Option<(Arc<Enumeration>, String)>> {
        let Some((schema, schema_name, enumeration)) = self.field_enumeration_name(of)? else {
            return Ok(None);
        };
        Ok(Some((
            self.array().enumeration(&schema, &enumeration)?,
            schema_name,
        )))
    }

    /// Whether a field folder's attribute has an enumeration, from the schemas alone: the
    /// schema its labels come from, that schema's name and the enumeration's name.
    /// Listings ask this, so a bad enumeration file fails the labels, not the folder that
    /// holds the codes.
    ///
    /// A merged state's labels come from the schema it is read with. A fragment's come
    /// from the schema TileDB opens the array with at the fragment's end timestamp
    /// ([`Array::schema_at`](crate::array::Array::schema_at)), not from the one its footer
    /// names: TileDB-SOMA extends an enumeration by a schema evolution stamped with the
    /// write's own timestamp, and the fragment names the schema from before, which lacks
    /// the new labels (or has none at all). The footer's schema still gives the fields and
    /// their layout. Where the schema at the end timestamp has no attribute of that name
    /// and type (dropped, or replaced by another), the footer's schema gives the labels.
    pub(super) fn field_enumeration_name(
        &self,
        of: &FieldOf,
    ) -> Result<Option<(Arc<ArraySchema>, String, String)>> {
        let i = of.index;
        let (schema, schema_name, enumeration) = match of.folder {
            Folder::Fragment(f) => {
                let (fragment, meta) = self.meta(f)?;
                let field = meta
                    .fields
                    .get(i)
                    .ok_or_else(|| Error::NotFound(format!("field #{i}")))?;
                let Some(own) = meta.schema.attributes.iter().find(|a| a.name == field.name) else {
                    return Ok(None);
                };
                let array = self.array();
                let at = array.schema_at(fragment.timestamps.t2);
                match at
                    .schema
                    .attributes
                    .iter()
                    .find(|a| a.name == own.name && a.datatype == own.datatype)
                {
                    Some(a) => (at.schema.clone(), at.name.clone(), a.enumeration.clone()),
                    None => (
                        meta.schema.clone(),
                        meta.schema_name.clone(),
                        own.enumeration.clone(),
                    ),
                }
            }
            Folder::State(w) => {
                let merged = self.merged(w)?;
                let field = merged
                    .fields
                    .get(i)
                    .ok_or_else(|| Error::NotFound(format!("field #{i}")))?;
                let Some(attr) = merged
                    .schema
                    .attributes
                    .iter()
                    .find(|a| a.name == field.name)
                else {
                    return Ok(None);
                };
                (
                    merged.schema.clone(),
                    merged.schema_name.clone(),
                    attr.enumeration.clone(),
                )
            }
        };
        Ok(enumeration.map(|enumeration| (schema, schema_name, enumeration)))
    }

    /// What `footer.json` (under `derived`) and `read.json` say of a folder's labels: per
    /// enumerated attribute, its enumeration and the schema the labels come from; `null`
    /// when no attribute is enumerated.
    pub(super) fn enumerations_json(&self, folder: Folder) -> Result<Value> {
        let fields = self.field_names(folder)?;
        let mut out = Map::new();
        for (i, name) in fields.iter().enumerate() {
            if let Some((_, schema, enumeration)) =
                self.field_enumeration_name(&FieldOf::new(folder, i))?
            {
                out.insert(
                    names::encode(name),
                    json!({"enumeration": enumeration, "labels_schema": schema}),
                );
            }
        }
        Ok(match out.is_empty() {
            true => Value::Null,
            false => Value::Object(out),
        })
    }

    /// The bytes of a file of `enumeration/`.
    pub(super) fn enum_file(&self, of: &FieldOf, file: EnumFile) -> Result<Vec<u8>> {
        let (e, schema) = self
            .field_enumeration(of)?
            .ok_or_else(|| Error::NotFound("enumeration".into()))?;
        Ok(match file {
            EnumFile::Values => e.data.clone(),
            EnumFile::Offsets => e.offsets.iter().flat_map(|o| o.to_le_bytes()).collect(),
            EnumFile::Text => {
                let mut out = Vec::new();
                for v in e.values() {
                    text::cell(&mut out, e.datatype, v);
                    out.push(b'\n');
                }
                out
            }
            EnumFile::Json => crate::view::tiledb::json::to_bytes(&json!({
                "name": e.name,
                "datatype": e.datatype.name(),
                "cell_val_num": if e.cell_val_num == VAR_NUM { json!("var") } else { json!(e.cell_val_num) },
                "ordered": e.ordered,
                "values": e.len(),
                "file": format!("{ENUMERATIONS_DIR}/{}", e.path_name),
                "schema": schema,
            })),
        })
    }
}
