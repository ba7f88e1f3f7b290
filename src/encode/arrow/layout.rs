//! The file as pieces ([`layout()`]): made bytes, raw ranges of `values.bin`, and slices
//! of [`body`](super::body).

use super::super::flatbuf::Builder;
use super::super::table::{Layout, Piece, Table};
use super::buffers::{group_plan, Src};
use super::messages::{
    dictionary, footer, message, record_batch_fb, schema_message, Block, CONTINUATION,
    HEADER_RECORD_BATCH,
};
use super::types::{corrupt, fields, padding, too_big};
use crate::error::Result;

const MAGIC: &[u8] = b"ARROW1";
const ZEROS: [u8; 8] = [0; 8];

/// Appends a Body piece, joined to the one before if it continues it.
fn push_body(out: &mut Layout, group: usize, column: usize, at: u64, len: u64) {
    if let Some(Piece::Body {
        group: g,
        column: c,
        at: a,
        len: l,
    }) = out.pieces.last_mut()
    {
        if (*g, *c) == (group, column) && *a + *l == at {
            *l += len;
            out.size += len;
            return;
        }
    }
    out.push(Piece::Body {
        group,
        column,
        at,
        len,
    });
}

/// Lays out the file of `table` (see the module's doc): the pieces and the size.
pub fn layout(table: &Table) -> Result<Layout> {
    let fields = fields(table)?;
    let mut out = Layout::default();
    out.push_bytes(MAGIC);
    out.push_bytes(&[0, 0]);
    out.push_bytes(&schema_message(table)?);
    let mut dictionaries = Vec::new();
    for f in &fields {
        if let (Some(labels), Some(d)) = (&f.col.labels, f.dict) {
            let (meta, body) = dictionary(f, labels, d.id)?;
            dictionaries.push(Block {
                offset: out.size,
                meta: meta.len() as u64,
                body: body.len() as u64,
            });
            out.push_bytes(&meta);
            out.push_bytes(&body);
        }
    }
    let mut batches = Vec::with_capacity(table.groups.len());
    let mut first_row = 0u64;
    for (g, group) in table.groups.iter().enumerate() {
        if group.chunks.len() != fields.len() {
            return Err(corrupt(format!(
                "group {g} has {} chunks for {} columns",
                group.chunks.len(),
                fields.len()
            )));
        }
        let end_row = first_row
            .checked_add(group.rows)
            .ok_or_else(|| too_big("the rows"))?;
        let mut plans = Vec::with_capacity(fields.len());
        let (mut nodes, mut buffers, mut body) = (Vec::new(), Vec::new(), 0u64);
        for (f, chunk) in fields.iter().zip(&group.chunks) {
            let plan = group_plan(f, g, group.rows, chunk)?;
            for (k, &len) in plan.nodes.iter().enumerate() {
                nodes.push((len, if k == 0 { chunk.nulls } else { 0 }));
            }
            for buf in &plan.bufs {
                buffers.push((body, buf.len));
                body = body
                    .checked_add(buf.len + padding(buf.len))
                    .ok_or_else(|| too_big("a record batch"))?;
            }
            plans.push(plan);
        }
        let mut b = Builder::new();
        let batch = record_batch_fb(&mut b, group.rows, &nodes, &buffers)?;
        let meta = message(b, HEADER_RECORD_BATCH, batch, body)?;
        batches.push(Block {
            offset: out.size,
            meta: meta.len() as u64,
            body,
        });
        out.push_bytes(&meta);
        for (c, ((plan, f), chunk)) in plans.iter().zip(&fields).zip(&group.chunks).enumerate() {
            // Where the group's values start in the column's values.bin.
            let base = if f.col.is_var() {
                chunk.var_start
            } else {
                first_row
                    .checked_mul(f.col.cell_size())
                    .ok_or_else(|| too_big("a column"))?
            };
            let mut at = 0;
            for buf in &plan.bufs {
                let pad = padding(buf.len);
                match &buf.src {
                    Src::Empty => {}
                    Src::Raw(r) => {
                        let range = base
                            .checked_add(r.start)
                            .zip(base.checked_add(r.end))
                            .ok_or_else(|| too_big("a column"))?;
                        out.push(Piece::Raw {
                            column: c,
                            range: range.0..range.1,
                        });
                        out.push_bytes(&ZEROS[..pad as usize]);
                    }
                    _ => {
                        push_body(&mut out, g, c, at, buf.len + pad);
                        at += buf.len + pad;
                    }
                }
            }
        }
        first_row = end_row;
    }
    out.push_bytes(&CONTINUATION);
    out.push_bytes(&[0; 4]);
    let footer = footer(table, &fields, &dictionaries, &batches)?;
    out.push_bytes(&footer);
    out.push_bytes(&(footer.len() as i32).to_le_bytes());
    out.push_bytes(MAGIC);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::buffers::body;
    use super::*;
    use crate::encode::table::{CellsRef, Chunk, Column, Group};
    use crate::format::enumeration::Enumeration;
    use crate::format::schema::VAR_NUM;
    use crate::format::Datatype;

    fn col(name: &str, datatype: Datatype, cell_val_num: u32, nullable: bool) -> Column {
        Column {
            name: name.into(),
            datatype,
            cell_val_num,
            nullable,
            labels: None,
        }
    }

    fn labels() -> Enumeration {
        Enumeration {
            version: 0,
            name: "e".into(),
            path_name: "__e_0".into(),
            datatype: Datatype::StringUtf8,
            cell_val_num: VAR_NUM,
            ordered: false,
            data: b"redgreen".to_vec(),
            offsets: vec![0, 3],
        }
    }

    /// Columns: nullable INT32, var UTF-8 (nullable), BOOL, DATETIME_DAY, var INT16 list,
    /// enumerated UINT8; groups of `rows`, each var cell 3 bytes (list cells 2 values).
    fn table(rows: &[u64], nulls: u64) -> Table {
        let mut e = col("e", Datatype::UInt8, 1, false);
        e.labels = Some(labels());
        let columns = vec![
            col("i", Datatype::Int32, 1, true),
            col("s", Datatype::StringUtf8, VAR_NUM, true),
            col("b", Datatype::Bool, 1, false),
            col("d", Datatype::DatetimeDay, 1, false),
            col("l", Datatype::Int16, VAR_NUM, false),
            e,
        ];
        let mut starts = [0u64; 6];
        let groups = rows
            .iter()
            .map(|&r| Group {
                rows: r,
                chunks: (0..6)
                    .map(|c| {
                        let var = [0u64, 3, 0, 0, 4, 0][c].saturating_mul(r);
                        let chunk = Chunk {
                            nulls: if [0, 1, 5].contains(&c) {
                                nulls.min(r)
                            } else {
                                0
                            },
                            var_bytes: var,
                            var_start: starts[c],
                            ..Chunk::default()
                        };
                        starts[c] = starts[c].saturating_add(var);
                        chunk
                    })
                    .collect(),
            })
            .collect();
        Table {
            columns,
            groups,
            key_value: vec![("k".into(), "v".into())],
            created_by: "fragfs test".into(),
        }
    }

    /// Each piece's kind, place and length: everything but the made bytes' values.
    fn shape(l: &Layout) -> Vec<(u8, u64, String)> {
        let mut at = 0;
        l.pieces
            .iter()
            .map(|p| {
                let here = at;
                at += p.len();
                match p {
                    Piece::Bytes(b) => (0, here, b.len().to_string()),
                    other => (1, here, format!("{other:?}")),
                }
            })
            .collect()
    }

    #[test]
    fn sizes_and_offsets_do_not_depend_on_null_counts() {
        let none = layout(&table(&[5, 0, 9], 0)).unwrap();
        let some = layout(&table(&[5, 0, 9], 3)).unwrap();
        assert_eq!(none.size, some.size);
        assert_eq!(shape(&none), shape(&some));
        assert_ne!(none.pieces, some.pieces, "the null counts are written");
        assert_eq!(none.pieces.iter().map(Piece::len).sum::<u64>(), none.size);
        // Aligned to 8 up to the footer's end, then its length and the magic.
        assert_eq!(none.size % 8, (4 + 6) % 8);
    }

    /// The cells of column `c` in a group of `r` rows, as `table` describes them.
    struct Owned {
        values: Vec<u8>,
        bounds: Option<Vec<u64>>,
        validity: Option<Vec<u8>>,
    }

    fn cells(c: usize, r: u64, nulls: u64) -> Owned {
        let r = r as usize;
        let validity = [0, 1]
            .contains(&c)
            .then(|| (0..r).map(|i| u8::from(i as u64 >= nulls)).collect());
        let (values, bounds) = match c {
            0 => ((0..r as i32).flat_map(|i| i.to_le_bytes()).collect(), None),
            1 => (
                b"abc".repeat(r),
                Some((0..=r as u64).map(|i| 3 * i).collect()),
            ),
            2 => ((0..r).map(|i| (i % 2) as u8).collect(), None),
            3 => ((0..r as i64).flat_map(|i| i.to_le_bytes()).collect(), None),
            4 => (
                (0..2 * r as i16).flat_map(|i| i.to_le_bytes()).collect(),
                Some((0..=r as u64).map(|i| 4 * i).collect()),
            ),
            // Codes 0, 1, then 2 (no label) for the first `nulls`.
            _ => (
                (0..r)
                    .map(|i| if (i as u64) < nulls { 2 } else { (i % 2) as u8 })
                    .collect(),
                None,
            ),
        };
        Owned {
            values,
            bounds,
            validity,
        }
    }

    fn cells_ref(o: &Owned) -> CellsRef<'_> {
        CellsRef {
            values: &o.values,
            bounds: o.bounds.as_deref(),
            validity: o.validity.as_deref(),
        }
    }

    #[test]
    fn bodies_are_as_long_as_the_layout_says() {
        for nulls in [0, 2] {
            let t = table(&[5, 0, 9], nulls);
            let l = layout(&t).unwrap();
            for (g, group) in t.groups.iter().enumerate() {
                for c in 0..t.columns.len() {
                    let o = cells(c, group.rows, nulls);
                    let body = body(&t, g, c, &cells_ref(&o)).unwrap();
                    let mut want = 0;
                    for p in &l.pieces {
                        if let Piece::Body {
                            group,
                            column,
                            at,
                            len,
                        } = *p
                        {
                            if (group, column) == (g, c) {
                                assert_eq!(at, want, "contiguous");
                                want += len;
                            }
                        }
                    }
                    assert_eq!(body.len() as u64, want, "group {g} column {c}");
                    assert_eq!(body.len() % 8, 0);
                }
            }
        }
    }

    #[test]
    fn made_buffers_hold_bits_and_offsets() {
        let t = table(&[9], 2);
        // The validity of column 0: two nulls, then 7 valid.
        let o = cells(0, 9, 2);
        assert_eq!(
            body(&t, 0, 0, &cells_ref(&o)).unwrap(),
            [0xfc, 1, 0, 0, 0, 0, 0, 0]
        );
        // Strings: the validity, then offsets 0, 3, .. 27.
        let o = cells(1, 9, 2);
        let b = body(&t, 0, 1, &cells_ref(&o)).unwrap();
        assert_eq!(b.len(), 8 + 80);
        let offsets: Vec<i64> = b[8..]
            .chunks(8)
            .map(|c| i64::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(offsets, (0..10).map(|i| 3 * i).collect::<Vec<_>>());
        // Bounds as values.bin has them (not from 0) are rebased: the same body.
        let mut shifted = cells(1, 9, 2);
        shifted.bounds = Some((0..10).map(|i| 100 + 3 * i).collect());
        assert_eq!(body(&t, 0, 1, &cells_ref(&shifted)).unwrap(), b);
        // Booleans 0,1,0,1...: bits 0b10101010, 0.
        let o = cells(2, 9, 0);
        assert_eq!(body(&t, 0, 2, &cells_ref(&o)).unwrap()[..2], [0xaa, 0]);
        // Days are raw int64: nothing made.
        let o = cells(3, 9, 0);
        assert!(body(&t, 0, 3, &cells_ref(&o)).unwrap().is_empty());
        // A list of 2 INT16 per cell: offsets count values.
        let o = cells(4, 9, 0);
        let b = body(&t, 0, 4, &cells_ref(&o)).unwrap();
        assert_eq!(b[8..16], 2i64.to_le_bytes());
        // The enumerated column: codes without a label are null.
        let o = cells(5, 9, 2);
        assert_eq!(
            body(&t, 0, 5, &cells_ref(&o)).unwrap(),
            [0xfc, 1, 0, 0, 0, 0, 0, 0]
        );
    }

    #[test]
    fn cells_that_do_not_match_the_table_are_errors() {
        let t = table(&[4], 1);
        let err = |c: usize, o: &Owned| body(&t, 0, c, &cells_ref(o)).unwrap_err().to_string();
        let mut o = cells(0, 4, 1);
        o.values.pop();
        assert!(
            err(0, &o).contains("15 bytes of values for 4 cells"),
            "{}",
            err(0, &o)
        );
        let mut o = cells(0, 4, 1);
        o.validity = None;
        assert!(err(0, &o).contains("no validity"));
        let mut o = cells(0, 4, 1);
        o.validity = Some(vec![1; 4]);
        assert!(err(0, &o).contains("0 cells are null where the table says 1"));
        let mut o = cells(1, 4, 1);
        o.bounds = Some(vec![0, 3, 2, 9, 12]);
        assert!(err(1, &o).contains("decrease"));
        let mut o = cells(1, 4, 1);
        o.bounds = Some(vec![0, 3, 6, 9]);
        assert!(err(1, &o).contains("4 cell bounds"));
        let mut o = cells(1, 4, 1);
        o.bounds = None;
        assert!(err(1, &o).contains("no cell bounds"));
        let mut o = cells(2, 4, 0);
        o.validity = Some(vec![1; 4]);
        assert!(err(2, &o).contains("validity for a non-nullable"));
        // NaT (TileDB's fill) and a day past ±2^31 are days like any other.
        let mut o = cells(3, 4, 0);
        o.values[..8].copy_from_slice(&i64::MIN.to_le_bytes());
        o.values[8..16].copy_from_slice(&(1i64 << 40).to_le_bytes());
        assert!(body(&t, 0, 3, &cells_ref(&o)).unwrap().is_empty());
        let mut o = cells(4, 4, 0);
        o.bounds = Some(vec![0, 3, 8, 12, 16]);
        assert!(err(4, &o).contains("cell 0 is not a whole number of 2-byte values"));
        let o = cells(5, 4, 0);
        assert!(err(5, &o).contains("0 cells are null or have no label where the table says 1"));
        assert!(body(&t, 1, 0, &cells_ref(&cells(0, 4, 1))).is_err());
        assert!(body(&t, 0, 6, &cells_ref(&cells(0, 4, 1))).is_err());
    }

    #[test]
    fn tables_arrow_cannot_hold_are_errors() {
        let mut t = table(&[2], 0);
        t.groups[0].chunks[2].nulls = 1;
        assert!(layout(&t).unwrap_err().to_string().contains("non-nullable"));
        let mut t = table(&[2], 0);
        t.groups[0].chunks[4].var_bytes = 7;
        assert!(layout(&t)
            .unwrap_err()
            .to_string()
            .contains("not a whole number"));
        let mut t = table(&[2], 0);
        t.groups[0].chunks.pop();
        assert!(layout(&t).is_err());
        let mut t = table(&[2], 0);
        t.columns[0].labels = Some(labels());
        t.columns[0].datatype = Datatype::Float32;
        assert!(layout(&t)
            .unwrap_err()
            .to_string()
            .contains("one integer per cell"));
        let mut t = table(&[2], 0);
        t.columns[0].cell_val_num = 0;
        assert!(layout(&t).is_err());
        let t = table(&[u64::MAX], 0);
        assert!(layout(&t).is_err());
        let t = table(&[u64::MAX / 4, u64::MAX / 4], 0);
        assert!(layout(&t).is_err());
    }

    #[test]
    fn zero_groups_is_a_file_with_the_schema_alone() {
        let l = layout(&table(&[], 0)).unwrap();
        assert!(l.pieces.iter().all(|p| matches!(p, Piece::Bytes(_))));
        let Piece::Bytes(file) = &l.pieces[0] else {
            unreachable!()
        };
        assert_eq!(&file[..8], b"ARROW1\0\0");
        assert_eq!(&file[file.len() - 6..], b"ARROW1");
        let schema = schema_message(&table(&[], 0)).unwrap();
        assert_eq!(&file[8..8 + schema.len()], &schema[..]);
        assert_eq!(schema[..4], [0xff; 4]);
        assert_eq!(schema.len() % 8, 0);
    }
}
