//! The Arrow side of a column: its type, its field, and the errors of `cells.arrow`.

use super::super::table::{Column, Table};
use crate::error::{Error, Place, Result};
use crate::format::schema::VAR_NUM;
use crate::format::Datatype;

pub(super) const FILE: &str = "cells.arrow";

pub(super) fn corrupt(reason: impl Into<String>) -> Error {
    Error::corrupt(Place::file(FILE), reason)
}

pub(super) fn too_big(what: &str) -> Error {
    corrupt(format!("{what}: too large for an Arrow file"))
}

pub(super) fn i64_of(v: u64, what: &str) -> Result<i64> {
    i64::try_from(v).map_err(|_| too_big(what))
}

/// Zero bytes after `n` bytes to the next multiple of 8.
pub(super) fn padding(n: u64) -> u64 {
    (8 - n % 8) % 8
}

/// The element types a list can hold: one TileDB element each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Leaf {
    Int {
        bits: i32,
        signed: bool,
    },
    Float {
        double: bool,
    },
    Bool,
    /// TimeUnit: 0 SECOND, 1 MILLISECOND, 2 MICROSECOND, 3 NANOSECOND.
    Timestamp(i16),
    Duration(i16),
}

impl Leaf {
    /// The Arrow type of one element of `t`; `None` for the byte types (CHAR, strings,
    /// BLOB, ANY, GEOM_*), whose cells are binary as a whole.
    fn of(t: Datatype) -> Option<Leaf> {
        use Datatype::*;
        let int = |bits, signed| Some(Leaf::Int { bits, signed });
        match t {
            Int8 => int(8, true),
            UInt8 => int(8, false),
            Int16 => int(16, true),
            UInt16 => int(16, false),
            Int32 => int(32, true),
            UInt32 => int(32, false),
            Int64 => int(64, true),
            UInt64 => int(64, false),
            Float32 => Some(Leaf::Float { double: false }),
            Float64 => Some(Leaf::Float { double: true }),
            Bool => Some(Leaf::Bool),
            DatetimeSec => Some(Leaf::Timestamp(0)),
            DatetimeMs => Some(Leaf::Timestamp(1)),
            DatetimeUs => Some(Leaf::Timestamp(2)),
            DatetimeNs => Some(Leaf::Timestamp(3)),
            TimeSec => Some(Leaf::Duration(0)),
            TimeMs => Some(Leaf::Duration(1)),
            TimeUs => Some(Leaf::Duration(2)),
            TimeNs => Some(Leaf::Duration(3)),
            // DATETIME_DAY too: not Date32 (int32), as its fill value is i64::MIN (NaT),
            // which dense arrays hold where no fragment wrote, and days past ±2^31 are
            // legal.
            t if t.is_temporal() => int(64, true),
            _ => None,
        }
    }
}

/// The Arrow type of a column (see the module's doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ty {
    Leaf(Leaf),
    /// LargeUtf8.
    Utf8,
    /// LargeBinary.
    Binary,
    FixedBinary(i32),
    FixedList(i32, Leaf),
    /// LargeList.
    List(Leaf),
}

pub(super) fn ty_of(t: Datatype, cell_val_num: u32) -> std::result::Result<Ty, String> {
    let leaf = Leaf::of(t);
    if cell_val_num == VAR_NUM {
        return Ok(match leaf {
            Some(l) => Ty::List(l),
            None if matches!(t, Datatype::StringAscii | Datatype::StringUtf8) => Ty::Utf8,
            None => Ty::Binary,
        });
    }
    let n = i32::try_from(cell_val_num)
        .ok()
        .filter(|&n| n > 0)
        .ok_or_else(|| format!("{cell_val_num} values per cell"))?;
    Ok(match leaf {
        Some(l) if n == 1 => Ty::Leaf(l),
        Some(l) => Ty::FixedList(n, l),
        None => Ty::FixedBinary(
            u64::from(cell_val_num)
                .checked_mul(t.size())
                .and_then(|w| i32::try_from(w).ok())
                .ok_or_else(|| format!("{cell_val_num} values per cell"))?,
        ),
    })
}

/// Whether the Arrow type of `col` says its TileDB type, so no `tiledb_datatype` is
/// needed: the type a reader would turn it back into is the same.
pub(super) fn one_to_one(col: &Column) -> bool {
    use Datatype::*;
    match col.datatype {
        Int8 | UInt8 | Int16 | UInt16 | Int32 | UInt32 | Int64 | UInt64 | Float32 | Float64
        | Bool | DatetimeSec | DatetimeMs | DatetimeUs | DatetimeNs | Blob => true,
        StringUtf8 => col.is_var(),
        _ => false,
    }
}

/// A dictionary encoding: the index type is the attribute's integer type.
#[derive(Debug, Clone, Copy)]
pub(super) struct Dict {
    pub(super) id: i64,
    pub(super) bits: i32,
    pub(super) signed: bool,
    pub(super) ordered: bool,
}

/// A column as an Arrow field.
#[derive(Debug, Clone)]
pub(super) struct Field<'a> {
    pub(super) col: &'a Column,
    pub(super) nullable: bool,
    /// The schema's type: the labels' for a dictionary field.
    pub(super) ty: Ty,
    /// What the record batches hold: the indices for a dictionary field.
    pub(super) batch: Ty,
    pub(super) dict: Option<Dict>,
    pub(super) tiledb: Option<&'static str>,
}

pub(super) fn field(index: usize, col: &Column) -> Result<Field<'_>> {
    let bad = |why: String| corrupt(format!("column {:?}: {why}", col.name));
    let ty = ty_of(col.datatype, col.cell_val_num).map_err(bad)?;
    let Some(labels) = &col.labels else {
        return Ok(Field {
            col,
            nullable: col.nullable,
            ty,
            batch: ty,
            dict: None,
            tiledb: (!one_to_one(col)).then(|| col.datatype.name()),
        });
    };
    let (Ty::Leaf(Leaf::Int { bits, signed }), false) = (ty, col.datatype.is_temporal()) else {
        return Err(bad(format!(
            "an enumerated column holds one integer per cell, not {} × {}",
            col.cell_val_num,
            col.datatype.name()
        )));
    };
    let labels_ty = ty_of(labels.datatype, labels.cell_val_num)
        .map_err(|why| bad(format!("its enumeration has {why}")))?;
    Ok(Field {
        col,
        nullable: true,
        ty: labels_ty,
        batch: ty,
        dict: Some(Dict {
            id: i64_of(index as u64, "the columns")?,
            bits,
            signed,
            ordered: labels.ordered,
        }),
        tiledb: None,
    })
}

pub(super) fn fields(table: &Table) -> Result<Vec<Field<'_>>> {
    table
        .columns
        .iter()
        .enumerate()
        .map(|(i, c)| field(i, c))
        .collect()
}
