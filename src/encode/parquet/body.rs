//! The bytes of a column chunk's data page that are neither made from the facts alone
//! nor `values.bin`'s as they are: levels, widened or narrowed values, booleans, byte
//! arrays behind their lengths, dictionary indices. Made from one group's cells of one
//! column, and exactly as long as [`super::plan`] promised, or an error.

use super::hybrid;
use super::kind::Shape;
use super::plain::Values;
use super::plan::{bad, plan, Plan};
use crate::encode::table::{label_index, null_count, var_counts, CellsRef, Chunk, Column, Table};
use crate::error::Result;

/// The non-raw bytes of column `column`'s chunk in group `group` (what the layout's
/// Body pieces of it index into), made from that group's cells of that column: the
/// page's repetition and definition levels, then its values unless they are raw.
/// Empty for a chunk of stored pages and for a group of no rows. Exactly as long as
/// the layout says, else an error: cells that disagree with the facts (their count,
/// their nulls, their bytes) are one.
pub fn body(table: &Table, group: usize, column: usize, cells: &CellsRef<'_>) -> Result<Vec<u8>> {
    let p = plan(table, group, column)?;
    let (col, _, chunk) = super::plan::at(table, group, column)?;
    if chunk.stored.is_some() {
        return Ok(Vec::new());
    }
    check_shape(col, group, &p, cells, chunk.var_bytes)?;
    check_facts(col, group, chunk, cells)?;
    if p.rows == 0 {
        // The layout leaves a group of no rows out.
        return Ok(Vec::new());
    }
    let first_row: u64 = table.groups[..group].iter().map(|g| g.rows).sum();
    let list = matches!(p.leaf.shape, Shape::List(_));
    let max_def = p.leaf.max_def();
    let mut rep: Vec<u32> = Vec::with_capacity(if list { p.entries as usize } else { 0 });
    let mut def: Vec<u32> = Vec::with_capacity(if max_def > 0 { p.entries as usize } else { 0 });
    let mut indices: Vec<u32> = Vec::new();
    let mut values = Values::new(p.leaf.kind, if p.raw { 0 } else { p.values_len as usize });
    let size = p.leaf.kind.size as usize;
    let row_error =
        |i: usize, what: String| bad(col, group, format!("row {}: {what}", first_row + i as u64));
    for i in 0..p.rows as usize {
        let cell = cells.value(col, i);
        let mut valid = cells.is_valid(i);
        if p.leaf.dictionary {
            let index = if valid { label_index(col, cell) } else { None };
            valid = index.is_some();
            def.push(u32::from(valid));
            if let Some(index) = index {
                indices.push(index as u32);
            }
            continue;
        }
        match p.leaf.shape {
            Shape::Flat => {
                if max_def > 0 {
                    def.push(u32::from(valid));
                }
                if valid && !p.raw {
                    values.push(cell).map_err(|e| row_error(i, e))?;
                }
            }
            Shape::List(_) => {
                if !valid {
                    rep.push(0);
                    def.push(0);
                    continue;
                }
                if !cell.len().is_multiple_of(size) {
                    return Err(row_error(
                        i,
                        format!("{} bytes are not whole values", cell.len()),
                    ));
                }
                if cell.is_empty() {
                    rep.push(0);
                    def.push(max_def - 1);
                }
                for (j, element) in cell.chunks(size).enumerate() {
                    rep.push(u32::from(j > 0));
                    def.push(max_def);
                    if !p.raw {
                        values.push(element).map_err(|e| row_error(i, e))?;
                    }
                }
            }
        }
    }
    let mut out = Vec::with_capacity(p.body_len() as usize);
    if list {
        check_count(col, group, "repetition levels", rep.len(), p.entries)?;
        hybrid::levels(&rep, 1, &mut out);
    }
    if max_def > 0 {
        check_count(col, group, "definition levels", def.len(), p.entries)?;
        hybrid::levels(&def, hybrid::width(max_def.into()), &mut out);
    }
    if p.leaf.dictionary {
        check_count(col, group, "labelled cells", indices.len(), p.values)?;
        out.push(p.index_width);
        hybrid::encode(&indices, p.index_width, &mut out);
    } else if !p.raw {
        out.extend_from_slice(&values.finish());
    }
    if out.len() as u64 != p.body_len() {
        return Err(bad(
            col,
            group,
            format!(
                "the cells make {} bytes, the facts say {}",
                out.len(),
                p.body_len()
            ),
        ));
    }
    Ok(out)
}

fn check_count(col: &Column, group: usize, what: &str, have: usize, want: u64) -> Result<()> {
    if have as u64 == want {
        return Ok(());
    }
    Err(bad(
        col,
        group,
        format!("the cells make {have} {what}, the facts say {want}"),
    ))
}

/// The cells are as many as the group's rows, their bytes as many as the facts say,
/// their validity one byte a cell where the column is nullable.
fn check_shape(
    col: &Column,
    group: usize,
    p: &Plan,
    cells: &CellsRef<'_>,
    var_bytes: u64,
) -> Result<()> {
    let rows = p.rows;
    let fail = |what: String| Err(bad(col, group, format!("{what} for {rows} rows")));
    if col.is_var() {
        let Some(bounds) = cells.bounds else {
            return fail("no cell bounds".into());
        };
        if bounds.len() as u64 != rows + 1 {
            return fail(format!("{} cell bounds", bounds.len()));
        }
        if cells.values.len() as u64 != var_bytes {
            return fail(format!(
                "{} bytes of values, the facts say {var_bytes},",
                cells.values.len()
            ));
        }
        let ordered = bounds.windows(2).all(|w| w[0] <= w[1]);
        if !ordered || bounds.last().is_some_and(|&e| e > var_bytes) {
            return fail("cell bounds out of order or past the values".into());
        }
    } else {
        let want = rows.checked_mul(col.cell_size());
        if cells.bounds.is_some() || want != Some(cells.values.len() as u64) {
            return fail(format!("{} bytes of values", cells.values.len()));
        }
    }
    if col.nullable && cells.validity.is_none_or(|v| v.len() as u64 != rows) {
        let n = cells.validity.map(<[u8]>::len);
        return fail(format!("validity of {n:?} bytes"));
    }
    Ok(())
}

/// The cells' nulls (with the codes no label has), the bytes of their null cells and
/// their empty cells are what the facts say.
fn check_facts(col: &Column, group: usize, chunk: &Chunk, cells: &CellsRef<'_>) -> Result<()> {
    let nulls = null_count(col, cells);
    let (null_bytes, empty) = var_counts(col, cells);
    let want = if col.is_var() {
        (chunk.nulls, chunk.null_bytes, chunk.empty)
    } else {
        (chunk.nulls, 0, 0)
    };
    if (nulls, null_bytes, empty) != want {
        return Err(bad(
            col,
            group,
            format!(
                "the cells have {nulls} nulls, {null_bytes} bytes in null cells and {empty} \
                 empty cells; the facts say {}, {} and {}",
                want.0, want.1, want.2
            ),
        ));
    }
    Ok(())
}
