//! The footer, `FileMetaData` in the Thrift compact protocol: version 2, the schema
//! (logical types and, where one means the same, the legacy converted type), the row
//! groups with each column chunk's metadata and statistics, the key-value metadata
//! (with `fragfs.units` where a type could not carry its unit), `created_by`, and a
//! TypeDefinedOrder for every leaf.

use super::kind::{Kind, Leaf, Logical, Physical, Shape, Unit};
use crate::encode::table::Table;
use crate::encode::thrift::{Type, Writer};
use crate::error::{Error, Place, Result};

/// One column chunk's place and metadata.
#[derive(Debug, Clone)]
pub struct ChunkMeta {
    /// The chunk's first byte (its dictionary page, if any).
    pub start: u64,
    pub data_page: u64,
    pub dictionary_page: Option<u64>,
    pub num_values: u64,
    /// Headers and pages, before and after compression.
    pub uncompressed: u64,
    pub compressed: u64,
    /// Parquet's `CompressionCodec`: 0 none, 6 ZSTD, 7 LZ4_RAW.
    pub codec: i32,
    pub encodings: &'static [i32],
    pub nulls: u64,
    /// Statistics' min_value and max_value, PLAIN.
    pub bounds: Option<(Vec<u8>, Vec<u8>)>,
}

impl ChunkMeta {
    /// Moves the chunk `by` bytes on: its offsets were counted from where it was laid
    /// out alone (padding goes before it, outside its sizes).
    pub fn shift(&mut self, by: u64) {
        self.start = self.start.saturating_add(by);
        self.data_page = self.data_page.saturating_add(by);
        self.dictionary_page = self.dictionary_page.map(|d| d.saturating_add(by));
    }
}

/// One row group: its rows and its chunks, one per column.
#[derive(Debug, Clone)]
pub struct GroupMeta {
    pub rows: u64,
    pub chunks: Vec<ChunkMeta>,
}

fn i64_of(v: u64) -> Result<i64> {
    i64::try_from(v).map_err(|_| {
        Error::corrupt(
            Place::file("cells.parquet"),
            format!("{v} is too large for a Parquet footer"),
        )
    })
}

/// `fragfs.units`: a JSON object of the columns whose unit no Parquet type carries
/// (TileDB's datatype name by column name), or None where there are none.
pub fn units(table: &Table, leaves: &[Leaf]) -> Option<String> {
    let map: serde_json::Map<String, serde_json::Value> = table
        .columns
        .iter()
        .zip(leaves)
        .filter_map(|(c, l)| Some((c.name.clone(), l.kind.unit?.into())))
        .collect();
    (!map.is_empty()).then(|| serde_json::Value::Object(map).to_string())
}

fn logical(w: &mut Writer, l: Logical) {
    w.field_struct(10, |w| match l {
        Logical::String => w.field_struct(1, |_| {}),
        Logical::Timestamp(unit) => w.field_struct(8, |w| {
            w.field_bool(1, false); // isAdjustedToUTC
            let id = match unit {
                Unit::Millis => 1,
                Unit::Micros => 2,
                Unit::Nanos => 3,
            };
            w.field_struct(2, |w| w.field_struct(id, |_| {}));
        }),
        Logical::Int { bits, signed } => w.field_struct(10, |w| {
            w.field_i8(1, bits as i8);
            w.field_bool(2, signed);
        }),
    });
}

/// A leaf SchemaElement.
fn leaf_element(w: &mut Writer, kind: &Kind, repetition: i32, name: &str) {
    w.elem_struct(|w| {
        w.field_i32(1, kind.physical.code());
        if let Physical::Fixed(n) = kind.physical {
            w.field_i32(2, n.try_into().unwrap_or(i32::MAX));
        }
        w.field_i32(3, repetition);
        w.field_string(4, name);
        if let Some(c) = kind.logical.and_then(Logical::converted) {
            w.field_i32(6, c);
        }
        if let Some(l) = kind.logical {
            logical(w, l);
        }
    });
}

/// A group SchemaElement.
fn group_element(w: &mut Writer, repetition: i32, name: &str, list: bool) {
    w.elem_struct(|w| {
        w.field_i32(3, repetition);
        w.field_string(4, name);
        w.field_i32(5, 1); // num_children
        if list {
            w.field_i32(6, 3); // converted_type: LIST
            w.field_struct(10, |w| w.field_struct(3, |_| {}));
        }
    });
}

const REQUIRED: i32 = 0;
const OPTIONAL: i32 = 1;
const REPEATED: i32 = 2;

/// The schema elements, depth first: the root, then each column (a list as its three
/// levels: `<rep> group name (LIST) { repeated group list { required element } }`).
fn schema(w: &mut Writer, table: &Table, leaves: &[Leaf]) -> Result<()> {
    let leaves_n: usize = leaves
        .iter()
        .map(|l| {
            if matches!(l.shape, Shape::List(_)) {
                3
            } else {
                1
            }
        })
        .sum();
    let n_columns = i32::try_from(table.columns.len())
        .map_err(|_| Error::corrupt(Place::file("cells.parquet"), "too many columns"))?;
    for leaf in leaves {
        if let Physical::Fixed(k) = leaf.kind.physical {
            if k > i32::MAX as u64 {
                return Err(Error::corrupt(
                    Place::file("cells.parquet"),
                    format!("cells of {k} bytes are too large for Parquet"),
                ));
            }
        }
    }
    let mut elements = Vec::with_capacity(leaves_n + 1);
    elements.push(None);
    for (c, l) in leaves.iter().enumerate() {
        match l.shape {
            Shape::Flat => elements.push(Some((c, 0))),
            Shape::List(_) => elements.extend([Some((c, 1)), Some((c, 2)), Some((c, 3))]),
        }
    }
    w.field_list(2, Type::Struct, &elements, |w, e| match *e {
        None => w.elem_struct(|w| {
            w.field_string(4, "schema");
            w.field_i32(5, n_columns);
        }),
        Some((c, part)) => {
            let (col, leaf) = (&table.columns[c], &leaves[c]);
            let rep = if leaf.optional { OPTIONAL } else { REQUIRED };
            match part {
                0 => leaf_element(w, &leaf.kind, rep, &col.name),
                1 => group_element(w, rep, &col.name, true),
                2 => group_element(w, REPEATED, "list", false),
                _ => leaf_element(w, &leaf.kind, REQUIRED, "element"),
            }
        }
    });
    Ok(())
}

/// The footer of `table` whose chunks are where `groups` says.
pub fn footer(table: &Table, leaves: &[Leaf], groups: &[GroupMeta]) -> Result<Vec<u8>> {
    let rows = i64_of(groups.iter().map(|g| g.rows).sum())?;
    // Everything that can fail, first: the closures below cannot.
    struct Sums {
        rows: i64,
        start: i64,
        uncompressed: i64,
        compressed: i64,
        chunks: Vec<[i64; 6]>,
    }
    let mut sums = Vec::with_capacity(groups.len());
    for g in groups {
        let mut chunks = Vec::with_capacity(g.chunks.len());
        for c in &g.chunks {
            chunks.push([
                i64_of(c.start)?,
                i64_of(c.data_page)?,
                i64_of(c.dictionary_page.unwrap_or(0))?,
                i64_of(c.num_values)?,
                i64_of(c.uncompressed)?,
                i64_of(c.compressed)?,
            ]);
        }
        let sum =
            |f: fn(&[i64; 6]) -> i64| chunks.iter().map(f).try_fold(0i64, |a, b| a.checked_add(b));
        let too_big = || Error::corrupt(Place::file("cells.parquet"), "a row group too large");
        sums.push(Sums {
            rows: i64_of(g.rows)?,
            start: chunks.first().map_or(0, |c| c[0]),
            uncompressed: sum(|c| c[4]).ok_or_else(too_big)?,
            compressed: sum(|c| c[5]).ok_or_else(too_big)?,
            chunks,
        });
    }
    let mut key_value = table.key_value.clone();
    if let Some(units) = units(table, leaves) {
        key_value.push(("fragfs.units".into(), units));
    }

    let mut w = Writer::new();
    w.field_i32(1, 2); // version
    schema(&mut w, table, leaves)?;
    w.field_i64(3, rows);
    let indexed: Vec<(&GroupMeta, &Sums)> = groups.iter().zip(&sums).collect();
    w.field_list(4, Type::Struct, &indexed, |w, &(g, s)| {
        w.elem_struct(|w| {
            let chunks: Vec<_> = g.chunks.iter().zip(&s.chunks).enumerate().collect();
            w.field_list(1, Type::Struct, &chunks, |w, &(c, (meta, n))| {
                let (col, leaf) = (&table.columns[c], &leaves[c]);
                w.elem_struct(|w| {
                    w.field_i64(2, n[0]); // file_offset: the chunk's first byte
                    w.field_struct(3, |w| {
                        w.field_i32(1, leaf.kind.physical.code());
                        w.field_list(2, Type::I32, meta.encodings, |w, &e| w.elem_i64(e.into()));
                        let path: Vec<&str> = match leaf.shape {
                            Shape::Flat => vec![&col.name],
                            Shape::List(_) => vec![&col.name, "list", "element"],
                        };
                        w.field_list(3, Type::Binary, &path, |w, s| w.elem_binary(s.as_bytes()));
                        w.field_i32(4, meta.codec);
                        w.field_i64(5, n[3]);
                        w.field_i64(6, n[4]);
                        w.field_i64(7, n[5]);
                        w.field_i64(9, n[1]);
                        if meta.dictionary_page.is_some() {
                            w.field_i64(11, n[2]);
                        }
                        w.field_struct(12, |w| {
                            w.field_i64(3, meta.nulls.try_into().unwrap_or(i64::MAX));
                            if let Some((min, max)) = &meta.bounds {
                                w.field_binary(5, max);
                                w.field_binary(6, min);
                            }
                        });
                    });
                })
            });
            w.field_i64(2, s.uncompressed); // total_byte_size
            w.field_i64(3, s.rows);
            w.field_i64(5, s.start); // file_offset
            w.field_i64(6, s.compressed);
        })
    });
    if !key_value.is_empty() {
        w.field_list(5, Type::Struct, &key_value, |w, (k, v)| {
            w.elem_struct(|w| {
                w.field_string(1, k);
                w.field_string(2, v);
            })
        });
    }
    w.field_string(6, &table.created_by);
    // column_orders: TypeDefinedOrder for every leaf.
    w.field_list(7, Type::Struct, leaves, |w, _| {
        w.elem_struct(|w| w.field_struct(1, |_| {}))
    });
    Ok(w.finish())
}
