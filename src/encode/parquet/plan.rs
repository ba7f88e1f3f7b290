//! What one column chunk's data page holds, from the table's facts alone: its level
//! and value counts and the bytes of each part. [`super::layout`] lays the page out
//! from this, [`super::body`] makes its bytes and checks they are exactly these.

use super::hybrid;
use super::kind::{leaf, Encode, Leaf, Shape};
use super::plain;
use crate::encode::table::{Chunk, Column, Group, Table};
use crate::error::{Error, Place, Result};

/// An error about column `column` in group `group`.
pub fn bad(column: &Column, group: usize, what: impl std::fmt::Display) -> Error {
    Error::corrupt(
        Place::file("cells.parquet"),
        format!("column {:?}, group {group}: {what}", column.name),
    )
}

/// The column, the group and the chunk of column `column` in group `group`.
pub fn at(table: &Table, group: usize, column: usize) -> Result<(&Column, &Group, &Chunk)> {
    let place = || Place::file("cells.parquet");
    let col = table.columns.get(column).ok_or_else(|| {
        Error::corrupt(
            place(),
            format!("no column {column} in {}", table.columns.len()),
        )
    })?;
    let grp = table.groups.get(group).ok_or_else(|| {
        Error::corrupt(
            place(),
            format!("no group {group} in {}", table.groups.len()),
        )
    })?;
    let chunk = grp.chunks.get(column).ok_or_else(|| {
        bad(
            col,
            group,
            format!("the group has {} chunks", grp.chunks.len()),
        )
    })?;
    Ok((col, grp, chunk))
}

/// One column chunk's data page (not a stored one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub leaf: Leaf,
    pub rows: u64,
    /// Level entries: the page's and the chunk's `num_values` (rows, for a flat
    /// column; for a list, its elements plus one for each null or empty list).
    pub entries: u64,
    /// Bytes of the repetition levels with their 4-byte length (0: a flat column).
    pub rep: u64,
    /// Bytes of the definition levels with their length (0: REQUIRED and flat).
    pub def: u64,
    /// Values written: non-null cells, or the elements of non-null lists.
    pub values: u64,
    /// Their bytes (a dictionary column: its bit width byte and the indices).
    pub values_len: u64,
    /// The values are `values.bin`'s bytes as they are: a raw piece, not body.
    pub raw: bool,
    /// The statistics' null count: null cells, and for a list the empty ones too
    /// (Parquet counts the leaf slots without a value).
    pub nulls: u64,
    /// Bits per dictionary index.
    pub index_width: u8,
}

impl Plan {
    /// The page's bytes after its header.
    pub fn payload(&self) -> u64 {
        self.rep
            .saturating_add(self.def)
            .saturating_add(self.values_len)
    }

    /// What [`super::body`] makes of the page: all but raw values.
    pub fn body_len(&self) -> u64 {
        let values = if self.raw { 0 } else { self.values_len };
        self.rep.saturating_add(self.def).saturating_add(values)
    }
}

/// The data page of column `column` in group `group`, from the facts.
pub fn plan(table: &Table, group: usize, column: usize) -> Result<Plan> {
    let (col, grp, chunk) = at(table, group, column)?;
    let leaf = leaf(col)?;
    let big = || bad(col, group, "too large for a Parquet file");
    let rows = grp.rows;
    let nulls = chunk.nulls;
    if nulls > rows || (nulls > 0 && !leaf.optional) {
        return Err(bad(col, group, format!("{nulls} nulls in {rows} rows")));
    }
    let present = rows - nulls;
    let (null_bytes, empty) = if col.is_var() {
        (chunk.null_bytes, chunk.empty)
    } else {
        (0, 0)
    };
    if null_bytes > chunk.var_bytes || empty > present {
        return Err(bad(
            col,
            group,
            format!(
                "{null_bytes} bytes of nulls in {}, {empty} empty cells in {present}",
                chunk.var_bytes
            ),
        ));
    }
    let bytes = chunk.var_bytes - null_bytes;
    let mut index_width = 0;
    let (entries, values, values_len) = match leaf.shape {
        _ if leaf.dictionary => {
            let labels = col.labels.as_ref().map_or(0, |l| l.len() as u64);
            index_width = hybrid::width(labels.saturating_sub(1));
            let len = hybrid::len(present, index_width).checked_add(1);
            (rows, present, len.ok_or_else(big)?)
        }
        Shape::Flat => {
            let len = plain::len(&leaf.kind, present, bytes).ok_or_else(big)?;
            (rows, present, len)
        }
        Shape::List(n) => {
            let values = match n {
                Some(n) => present.checked_mul(n).ok_or_else(big)?,
                None if bytes % leaf.kind.size != 0 => {
                    return Err(bad(
                        col,
                        group,
                        format!(
                            "{bytes} bytes are not whole values of {}",
                            col.datatype.name()
                        ),
                    ))
                }
                None => bytes / leaf.kind.size,
            };
            let empty = if n.is_some() { 0 } else { empty };
            let entries = values.checked_add(nulls + empty).ok_or_else(big)?;
            let len = plain::len(&leaf.kind, values, 0).ok_or_else(big)?;
            (entries, values, len)
        }
    };
    let list = matches!(leaf.shape, Shape::List(_));
    let levels = |width: u8| hybrid::len(entries, width).checked_add(4).ok_or_else(big);
    let rep = if list { levels(1)? } else { 0 };
    let max_def = leaf.max_def();
    let def = if max_def > 0 {
        levels(hybrid::width(max_def.into()))?
    } else {
        0
    };
    let raw = !leaf.optional && !leaf.dictionary && matches!(leaf.kind.encode, Encode::Same(_));
    let plan = Plan {
        rows,
        entries,
        rep,
        def,
        values,
        values_len,
        raw,
        nulls: entries - values,
        index_width,
        leaf,
    };
    if plan.payload() > i32::MAX as u64 || entries > i32::MAX as u64 {
        return Err(big());
    }
    Ok(plan)
}
