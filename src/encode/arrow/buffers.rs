//! The buffers of a column in a batch: which are raw bytes of `values.bin` and which are
//! made, and the made ones from a group's cells ([`body`]).

use std::ops::Range;

use super::super::table::{label_index, CellsRef, Chunk, Table};
use super::types::{corrupt, field, padding, Field, Leaf, Ty};
use crate::error::Result;

/// How one buffer of a batch is made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Src {
    /// An empty buffer (a non-nullable field's validity).
    Empty,
    /// These bytes of the cells' values, as they are.
    Raw(Range<u64>),
    /// The validity bitmap, LSB first.
    Validity,
    /// Int64 offsets, one per cell and one more, counting bytes / `per`.
    Offsets { per: u64 },
    /// Each byte of the values as a bit.
    Bits,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Buf {
    /// Bytes, before padding.
    pub(super) len: u64,
    pub(super) src: Src,
}

/// The FieldNodes' lengths (the column's, then its child's) and the buffers of a column
/// in one batch.
#[derive(Debug)]
pub(super) struct Plan {
    pub(super) nodes: Vec<u64>,
    pub(super) bufs: Vec<Buf>,
}

/// The values buffer of `m` elements of `size` bytes each in TileDB.
fn leaf_data(leaf: Leaf, m: u64, size: u64) -> Option<Buf> {
    Some(match leaf {
        Leaf::Bool => Buf {
            len: m.div_ceil(8),
            src: Src::Bits,
        },
        _ => {
            let len = m.checked_mul(size)?;
            Buf {
                len,
                src: Src::Raw(0..len),
            }
        }
    })
}

/// The plan of a column of type `ty` holding `rows` cells, `var_bytes` bytes of them if
/// var-size, each TileDB element `size` bytes. `None` on overflow.
pub(super) fn plan(ty: Ty, nullable: bool, rows: u64, var_bytes: u64, size: u64) -> Option<Plan> {
    let validity = Buf {
        len: if nullable { rows.div_ceil(8) } else { 0 },
        src: if nullable { Src::Validity } else { Src::Empty },
    };
    let empty = Buf {
        len: 0,
        src: Src::Empty,
    };
    let offsets = |per| {
        Some(Buf {
            len: rows.checked_add(1)?.checked_mul(8)?,
            src: Src::Offsets { per },
        })
    };
    let plan = match ty {
        Ty::Leaf(l) => Plan {
            nodes: vec![rows],
            bufs: vec![validity, leaf_data(l, rows, size)?],
        },
        Ty::Utf8 | Ty::Binary => Plan {
            nodes: vec![rows],
            bufs: vec![
                validity,
                offsets(1)?,
                Buf {
                    len: var_bytes,
                    src: Src::Raw(0..var_bytes),
                },
            ],
        },
        Ty::FixedBinary(w) => {
            let len = rows.checked_mul(w as u64)?;
            Plan {
                nodes: vec![rows],
                bufs: vec![
                    validity,
                    Buf {
                        len,
                        src: Src::Raw(0..len),
                    },
                ],
            }
        }
        Ty::FixedList(k, l) => {
            let m = rows.checked_mul(k as u64)?;
            Plan {
                nodes: vec![rows, m],
                bufs: vec![validity, empty, leaf_data(l, m, size)?],
            }
        }
        Ty::List(l) => {
            let m = var_bytes / size.max(1);
            Plan {
                nodes: vec![rows, m],
                bufs: vec![validity, offsets(size)?, empty, leaf_data(l, m, size)?],
            }
        }
    };
    // Every length fits an i64 (as Arrow writes it), so padding one never overflows.
    plan.bufs
        .iter()
        .all(|b| i64::try_from(b.len).is_ok())
        .then_some(plan)
}

/// The plan of column `f` in a group of `rows` rows, checking the chunk's facts.
pub(super) fn group_plan(f: &Field, group: usize, rows: u64, chunk: &Chunk) -> Result<Plan> {
    let col = f.col;
    let bad = |why: String| corrupt(format!("column {:?}, group {group}: {why}", col.name));
    if chunk.nulls > rows || (!f.nullable && chunk.nulls > 0) {
        return Err(bad(format!(
            "{} nulls in {rows} rows of a {}nullable column",
            chunk.nulls,
            if f.nullable { "" } else { "non-" }
        )));
    }
    let size = col.datatype.size();
    let var_bytes = if col.is_var() { chunk.var_bytes } else { 0 };
    if matches!(f.batch, Ty::List(_)) && var_bytes % size != 0 {
        return Err(bad(format!(
            "{var_bytes} bytes are not a whole number of {size}-byte values"
        )));
    }
    plan(f.batch, f.nullable, rows, var_bytes, size).ok_or_else(|| bad("too many rows".into()))
}

/// The cells of one column in one batch, checked against the facts the layout has.
pub(super) struct Cells<'a> {
    pub(super) values: &'a [u8],
    /// Var-size: where each cell starts in `values`, from 0, then where the last ends.
    pub(super) bounds: Option<Vec<u64>>,
    /// Fixed-size: bytes per cell.
    pub(super) cell_size: usize,
    /// Whether each cell is shown (not null, and for a dictionary, has a label).
    pub(super) valid: Vec<bool>,
}

impl Cells<'_> {
    fn cell(&self, i: usize) -> &[u8] {
        let range = match &self.bounds {
            Some(b) => match (b.get(i), b.get(i + 1)) {
                (Some(&from), Some(&to)) => from as usize..to as usize,
                _ => return &[],
            },
            None => i * self.cell_size..(i + 1) * self.cell_size,
        };
        self.values.get(range).unwrap_or_default()
    }

    /// `values` as `rows` cells of a column of cells `cell_size` bytes, or var-size
    /// (`bounds` given) and `var_bytes` long; all valid, so far.
    pub(super) fn new<'a>(
        values: &'a [u8],
        bounds: Option<&[u64]>,
        rows: u64,
        cell_size: u64,
        var_bytes: Option<u64>,
    ) -> std::result::Result<Cells<'a>, String> {
        let n = usize::try_from(rows).map_err(|_| "too many rows".to_string())?;
        let bounds = match (var_bytes, bounds) {
            (Some(var_bytes), Some(b)) => {
                if rows.checked_add(1) != Some(b.len() as u64) {
                    return Err(format!(
                        "{} cell bounds for {rows} cells (one more is needed)",
                        b.len()
                    ));
                }
                let first = b.first().copied().unwrap_or(0);
                if b.windows(2).any(|w| w[1] < w[0]) {
                    return Err("the cell bounds decrease".into());
                }
                let span = b.last().copied().unwrap_or(0) - first;
                if span != var_bytes || values.len() as u64 != var_bytes {
                    return Err(format!(
                        "{} bytes of values and cells spanning {span} bytes, where the table says {var_bytes}",
                        values.len()
                    ));
                }
                Some(b.iter().map(|&x| x - first).collect())
            }
            (None, None) => {
                let want = rows.checked_mul(cell_size);
                if want != Some(values.len() as u64) {
                    return Err(format!(
                        "{} bytes of values for {rows} cells of {cell_size} bytes",
                        values.len()
                    ));
                }
                None
            }
            (Some(_), None) => return Err("no cell bounds for a var-size column".into()),
            (None, Some(_)) => return Err("cell bounds for a fixed-size column".into()),
        };
        Ok(Cells {
            values,
            bounds,
            cell_size: cell_size as usize,
            valid: vec![true; n],
        })
    }
}

/// LSB-first bits of `bits`, appended to `out`.
pub(super) fn push_bits(out: &mut Vec<u8>, bits: impl Iterator<Item = bool>) {
    let mut byte = 0u8;
    let mut k = 0;
    for bit in bits {
        byte |= u8::from(bit) << k;
        k += 1;
        if k == 8 {
            out.push(byte);
            byte = 0;
            k = 0;
        }
    }
    if k > 0 {
        out.push(byte);
    }
}

/// The made buffers of `plan` from `cells`, each padded to 8 bytes, and the raw ones
/// too if `raw` (a dictionary batch, all made).
pub(super) fn made(plan: &Plan, cells: &Cells, raw: bool) -> std::result::Result<Vec<u8>, String> {
    let mut out = Vec::new();
    for buf in &plan.bufs {
        let start = out.len();
        match &buf.src {
            Src::Empty => continue,
            Src::Raw(_) if !raw => continue,
            Src::Raw(r) => {
                let bytes = usize::try_from(r.start)
                    .ok()
                    .zip(usize::try_from(r.end).ok())
                    .and_then(|(a, b)| cells.values.get(a..b))
                    .ok_or("values shorter than the layout says")?;
                out.extend_from_slice(bytes);
            }
            Src::Validity => push_bits(&mut out, cells.valid.iter().copied()),
            Src::Bits => push_bits(&mut out, cells.values.iter().map(|&b| b != 0)),
            Src::Offsets { per } => {
                let bounds = cells.bounds.as_deref().unwrap_or_default();
                for (i, &b) in bounds.iter().enumerate() {
                    if b % per != 0 {
                        return Err(format!(
                            "cell {} is not a whole number of {per}-byte values",
                            i.saturating_sub(1)
                        ));
                    }
                    out.extend_from_slice(&((b / per) as i64).to_le_bytes());
                }
            }
        }
        if (out.len() - start) as u64 != buf.len {
            return Err(format!(
                "a buffer of {} bytes where the layout has {}",
                out.len() - start,
                buf.len
            ));
        }
        out.resize(out.len() + padding(buf.len) as usize, 0);
    }
    Ok(out)
}

/// The non-raw bytes of column `column`'s buffers in record batch `group`, made from
/// that group's cells of that column (what the layout's Body pieces of it index into):
/// exactly as long as the layout says, else an Error, as is a `cells` that does not
/// match the table (lengths, bounds, validity, or a null count other than the chunk's).
pub fn body(table: &Table, group: usize, column: usize, cells: &CellsRef<'_>) -> Result<Vec<u8>> {
    let col = table
        .columns
        .get(column)
        .ok_or_else(|| corrupt(format!("no column {column}")))?;
    let bad = |why: String| corrupt(format!("column {:?}, group {group}: {why}", col.name));
    let grp = table
        .groups
        .get(group)
        .ok_or_else(|| corrupt(format!("no group {group}")))?;
    let chunk = grp
        .chunks
        .get(column)
        .ok_or_else(|| bad("no chunk".into()))?;
    let f = field(column, col)?;
    let plan = group_plan(&f, group, grp.rows, chunk)?;
    let var_bytes = col.is_var().then_some(chunk.var_bytes);
    let mut c = Cells::new(
        cells.values,
        cells.bounds,
        grp.rows,
        col.cell_size(),
        var_bytes,
    )
    .map_err(bad)?;
    match (col.nullable, cells.validity) {
        (true, Some(v)) if v.len() == c.valid.len() => {
            c.valid.iter_mut().zip(v).for_each(|(a, &b)| *a = b != 0)
        }
        (true, Some(v)) => {
            return Err(bad(format!(
                "{} validity bytes for {} cells",
                v.len(),
                grp.rows
            )))
        }
        (true, None) => return Err(bad("no validity for a nullable column".into())),
        (false, Some(_)) => return Err(bad("validity for a non-nullable column".into())),
        (false, None) => {}
    }
    if col.labels.is_some() {
        let labelled: Vec<bool> = (0..c.valid.len())
            .map(|i| label_index(col, c.cell(i)).is_some())
            .collect();
        for (valid, labelled) in c.valid.iter_mut().zip(labelled) {
            *valid = *valid && labelled;
        }
    }
    let nulls = c.valid.iter().filter(|v| !**v).count() as u64;
    if nulls != chunk.nulls {
        return Err(bad(format!(
            "{nulls} cells are null{} where the table says {}",
            if col.labels.is_some() {
                " or have no label"
            } else {
                ""
            },
            chunk.nulls
        )));
    }
    made(&plan, &c, false).map_err(bad)
}
