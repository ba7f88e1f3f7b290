//! What the tests of the store build their schemas and stores from.

use super::description::{describe, schema_fields, summary, Description, ZField};
use super::grid::ZDesc;
// What every test module here names, one glob away.
pub use crate::format::schema::{ArraySchema, ArrayType, Attribute, Dimension, VAR_NUM};
pub use crate::format::Datatype;

/// Names shown as they are (the tree's encoding is tested with the tree).
pub fn plain(name: &str) -> String {
    name.to_string()
}

/// The store of `schema` with these fields, names shown plainly.
pub fn store(schema: &ArraySchema, fields: &[ZField<'_>]) -> Result<Description, String> {
    describe(schema, fields, plain)
}

/// What `array.json` says of the store of `schema`, names shown plainly.
pub fn summary_of(schema: &ArraySchema) -> serde_json::Value {
    summary(schema, plain)
}

pub fn dim(name: &str, t: Datatype, lo: i64, hi: i64, extent: Option<i64>) -> Dimension {
    let size = t.size() as usize;
    let bytes = |v: i64| v.to_le_bytes()[..size].to_vec();
    Dimension {
        name: name.into(),
        datatype: t,
        cell_val_num: 1,
        filters: Default::default(),
        domain: [bytes(lo), bytes(hi)].concat(),
        tile_extent: extent.map(bytes),
    }
}

pub fn attr(
    name: &str,
    t: Datatype,
    cell_val_num: u32,
    nullable: bool,
    fill: Vec<u8>,
) -> Attribute {
    Attribute {
        name: name.into(),
        datatype: t,
        cell_val_num,
        filters: Default::default(),
        fill_value: fill,
        nullable,
        fill_value_validity: false,
        order: 0,
        enumeration: None,
    }
}

pub fn schema(
    array_type: ArrayType,
    dimensions: Vec<Dimension>,
    attributes: Vec<Attribute>,
) -> ArraySchema {
    ArraySchema {
        version: 22,
        allows_dups: false,
        array_type,
        tile_order: crate::format::schema::Layout::RowMajor,
        cell_order: crate::format::schema::Layout::RowMajor,
        capacity: 10000,
        coords_filters: Default::default(),
        offsets_filters: Default::default(),
        validity_filters: Default::default(),
        dimensions,
        attributes,
        labels: Vec::new(),
        enumerations: Vec::new(),
        current_domain: None,
    }
}

pub fn fields(schema: &ArraySchema) -> Vec<ZField<'_>> {
    schema_fields(schema)
}

/// x in 1..=20 by tiles of 3, y in -5..=30 by tiles of 4; a nullable int32 `a`
/// (fill -1), a var-size string, a pair of floats, a timestamp and var-size int32s.
pub fn grid() -> ArraySchema {
    schema(
        ArrayType::Dense,
        vec![
            dim("x", Datatype::Int32, 1, 20, Some(3)),
            dim("y", Datatype::Int64, -5, 30, Some(4)),
        ],
        vec![
            attr(
                "a",
                Datatype::Int32,
                1,
                true,
                (-1i32).to_le_bytes().to_vec(),
            ),
            attr("s", Datatype::StringUtf8, VAR_NUM, false, vec![0]),
            attr("pair", Datatype::Float64, 2, false, vec![0; 16]),
            attr(
                "t",
                Datatype::DatetimeMs,
                1,
                false,
                i64::MIN.to_le_bytes().to_vec(),
            ),
            attr("vi", Datatype::Int32, VAR_NUM, false, vec![0; 4]),
        ],
    )
}

pub fn grid_store() -> Description {
    let s = grid();
    store(&s, &fields(&s)).unwrap()
}

pub fn array<'s>(store: &'s Description, name: &str) -> &'s ZDesc {
    store.arrays.iter().find(|d| d.name == name).unwrap()
}

pub fn store_of(s: &ArraySchema) -> Description {
    store(s, &fields(s)).unwrap()
}
