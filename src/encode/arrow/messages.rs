//! The flatbuffers of `cells.arrow`: the Schema, DictionaryBatch and RecordBatch
//! messages, encapsulated, and the Footer.

use super::super::flatbuf::{Builder, Off, Val};
use super::super::table::Table;
use super::buffers::{made, plan, Cells};
use super::types::{corrupt, fields, i64_of, padding, too_big, Dict, Field, Leaf, Ty};
use crate::error::Result;
use crate::format::enumeration::Enumeration;

/// MetadataVersion V5.
pub(super) const V5: i16 = 4;
/// What starts every encapsulated message (and the end-of-stream marker).
pub(super) const CONTINUATION: [u8; 4] = [0xff; 4];

// Message header and Type union tags (Message.fbs, Schema.fbs).
pub(super) const HEADER_SCHEMA: u8 = 1;
pub(super) const HEADER_DICTIONARY: u8 = 2;
pub(super) const HEADER_RECORD_BATCH: u8 = 3;

/// Where a message is in the file (a Footer's Block).
pub(super) struct Block {
    pub(super) offset: u64,
    pub(super) meta: u64,
    pub(super) body: u64,
}

/// A KeyValue vector.
pub(super) fn key_values(b: &mut Builder, kv: &[(&str, &str)]) -> Off {
    let items: Vec<Off> = kv
        .iter()
        .map(|(k, v)| {
            let k = b.string(k);
            let v = b.string(v);
            b.table(&[(0, Val::Off(k)), (1, Val::Off(v))])
        })
        .collect();
    b.offsets(&items)
}

/// The Type union's tag and table.
pub(super) fn type_fb(b: &mut Builder, ty: Ty) -> (u8, Off) {
    let unit = |b: &mut Builder, tag, unit| (tag, b.table(&[(0, Val::I16(unit))]));
    match ty {
        Ty::Leaf(Leaf::Int { bits, signed }) => {
            (2, b.table(&[(0, Val::I32(bits)), (1, Val::Bool(signed))]))
        }
        Ty::Leaf(Leaf::Float { double }) => unit(b, 3, if double { 2 } else { 1 }),
        Ty::Leaf(Leaf::Bool) => (6, b.table(&[])),
        Ty::Leaf(Leaf::Timestamp(u)) => unit(b, 10, u),
        Ty::Leaf(Leaf::Duration(u)) => unit(b, 18, u),
        Ty::FixedBinary(w) => (15, b.table(&[(0, Val::I32(w))])),
        Ty::FixedList(n, _) => (16, b.table(&[(0, Val::I32(n))])),
        Ty::Binary => (19, b.table(&[])),
        Ty::Utf8 => (20, b.table(&[])),
        Ty::List(_) => (21, b.table(&[])),
    }
}

/// A Field table.
pub(super) fn field_fb(
    b: &mut Builder,
    name: &str,
    nullable: bool,
    ty: Ty,
    dict: Option<Dict>,
    tiledb: Option<&str>,
) -> Off {
    let name = b.string(name);
    let (tag, t) = type_fb(b, ty);
    let children = match ty {
        Ty::FixedList(_, l) | Ty::List(l) => {
            vec![field_fb(b, "item", false, Ty::Leaf(l), None, None)]
        }
        _ => Vec::new(),
    };
    let children = b.offsets(&children);
    let dict = dict.map(|d| {
        let index = b.table(&[(0, Val::I32(d.bits)), (1, Val::Bool(d.signed))]);
        b.table(&[
            (0, Val::I64(d.id)),
            (1, Val::Off(index)),
            (2, Val::Bool(d.ordered)),
            (3, Val::I16(0)), // DenseArray
        ])
    });
    let metadata = tiledb.map(|t| key_values(b, &[("tiledb_datatype", t)]));
    let mut fields = vec![
        (0, Val::Off(name)),
        (1, Val::Bool(nullable)),
        (2, Val::U8(tag)),
        (3, Val::Off(t)),
    ];
    fields.extend(dict.map(|d| (4, Val::Off(d))));
    fields.push((5, Val::Off(children)));
    fields.extend(metadata.map(|m| (6, Val::Off(m))));
    b.table(&fields)
}

/// A Schema table.
pub(super) fn schema_fb(b: &mut Builder, table: &Table, fields: &[Field]) -> Off {
    let items: Vec<Off> = fields
        .iter()
        .map(|f| field_fb(b, &f.col.name, f.nullable, f.ty, f.dict, f.tiledb))
        .collect();
    let items = b.offsets(&items);
    let kv: Vec<(&str, &str)> = table
        .key_value
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let kv = key_values(b, &kv);
    b.table(&[(0, Val::I16(0)), (1, Val::Off(items)), (2, Val::Off(kv))])
}

/// A RecordBatch table: `rows`, the FieldNodes (length, null count) and the Buffers
/// (offset in the body, length).
pub(super) fn record_batch_fb(
    b: &mut Builder,
    rows: u64,
    nodes: &[(u64, u64)],
    buffers: &[(u64, u64)],
) -> Result<Off> {
    let mut structs = |pairs: &[(u64, u64)], what| -> Result<Off> {
        let mut bytes = Vec::with_capacity(16 * pairs.len());
        for &(a, z) in pairs {
            bytes.extend_from_slice(&i64_of(a, what)?.to_le_bytes());
            bytes.extend_from_slice(&i64_of(z, what)?.to_le_bytes());
        }
        Ok(b.structs(&bytes, pairs.len(), 8))
    };
    let nodes = structs(nodes, "a column")?;
    let buffers = structs(buffers, "a record batch")?;
    Ok(b.table(&[
        (0, Val::I64(i64_of(rows, "a record batch")?)),
        (1, Val::Off(nodes)),
        (2, Val::Off(buffers)),
    ]))
}

/// The encapsulated message of `header` (built in `b`): continuation, length, the
/// flatbuffer (already a multiple of 8 bytes, so no padding follows).
pub(super) fn message(mut b: Builder, tag: u8, header: Off, body: u64) -> Result<Vec<u8>> {
    let root = b.table(&[
        (0, Val::I16(V5)),
        (1, Val::U8(tag)),
        (2, Val::Off(header)),
        (3, Val::I64(i64_of(body, "a record batch")?)),
    ]);
    let fb = b.finish(root).ok_or_else(|| too_big("the metadata"))?;
    let mut out = Vec::with_capacity(8 + fb.len());
    out.extend_from_slice(&CONTINUATION);
    out.extend_from_slice(&(fb.len() as i32).to_le_bytes());
    out.extend_from_slice(&fb);
    Ok(out)
}

/// The IPC-encapsulated Schema message (continuation 0xFFFFFFFF, length, flatbuffer,
/// padding): what Parquet files carry base64'd in their `ARROW:schema` key so pyarrow
/// restores types (dictionary columns as categoricals).
pub fn schema_message(table: &Table) -> Result<Vec<u8>> {
    let fields = fields(table)?;
    let mut b = Builder::new();
    let schema = schema_fb(&mut b, table, &fields);
    message(b, HEADER_SCHEMA, schema, 0)
}

/// The DictionaryBatch of an enumerated column: its message and body, all made.
pub(super) fn dictionary(f: &Field, labels: &Enumeration, id: i64) -> Result<(Vec<u8>, Vec<u8>)> {
    let bad = |why: String| corrupt(format!("column {:?}, labels: {why}", f.col.name));
    let rows = labels.len() as u64;
    let size = labels.datatype.size();
    let cell_size = u64::from(labels.cell_val_num).saturating_mul(size);
    let (bounds, var_bytes) = if labels.is_var() {
        let mut b = labels.offsets.clone();
        b.push(labels.data.len() as u64);
        (Some(b), Some(labels.data.len() as u64))
    } else {
        (None, None)
    };
    let cells =
        Cells::new(&labels.data, bounds.as_deref(), rows, cell_size, var_bytes).map_err(bad)?;
    if matches!(f.ty, Ty::List(_)) && var_bytes.unwrap_or(0) % size != 0 {
        return Err(bad("not a whole number of values".into()));
    }
    let plan = plan(f.ty, false, rows, var_bytes.unwrap_or(0), size)
        .ok_or_else(|| bad("too many labels".into()))?;
    let body = made(&plan, &cells, true).map_err(bad)?;
    let nodes: Vec<(u64, u64)> = plan.nodes.iter().map(|&n| (n, 0)).collect();
    let mut at = 0;
    let buffers: Vec<(u64, u64)> = plan
        .bufs
        .iter()
        .map(|buf| {
            let here = at;
            at += buf.len + padding(buf.len);
            (here, buf.len)
        })
        .collect();
    let mut b = Builder::new();
    let batch = record_batch_fb(&mut b, rows, &nodes, &buffers)?;
    let header = b.table(&[
        (0, Val::I64(id)),
        (1, Val::Off(batch)),
        (2, Val::Bool(false)),
    ]);
    let meta = message(b, HEADER_DICTIONARY, header, body.len() as u64)?;
    Ok((meta, body))
}

/// The Footer flatbuffer.
pub(super) fn footer(
    table: &Table,
    fields: &[Field],
    dictionaries: &[Block],
    batches: &[Block],
) -> Result<Vec<u8>> {
    let mut b = Builder::new();
    let schema = schema_fb(&mut b, table, fields);
    let mut blocks = |blocks: &[Block]| -> Result<Off> {
        let mut bytes = Vec::with_capacity(24 * blocks.len());
        for block in blocks {
            bytes.extend_from_slice(&i64_of(block.offset, "the file")?.to_le_bytes());
            let meta = i32::try_from(block.meta).map_err(|_| too_big("the metadata"))?;
            bytes.extend_from_slice(&meta.to_le_bytes());
            bytes.extend_from_slice(&[0; 4]);
            bytes.extend_from_slice(&i64_of(block.body, "a record batch")?.to_le_bytes());
        }
        Ok(b.structs(&bytes, blocks.len(), 8))
    };
    let dictionaries = blocks(dictionaries)?;
    let batches = blocks(batches)?;
    let root = b.table(&[
        (0, Val::I16(V5)),
        (1, Val::Off(schema)),
        (2, Val::Off(dictionaries)),
        (3, Val::Off(batches)),
    ]);
    b.finish(root).ok_or_else(|| too_big("the footer"))
}
