//! The Parquet writer (src/encode/parquet.rs) alone, before any face serves it: a table
//! of four columns (INT32, INT64, FLOAT, DOUBLE) in three row groups of different sizes,
//! laid out, its runs of values filled as a face will fill them, written to a file and
//! read back by pyarrow: the schema's types, the row groups and their sizes, every
//! value, one row group read alone, the key-value metadata and `created_by`.

mod common;

use common::*;
use fragfs::encode::parquet::{layout, Column, Layout, Physical, Piece, Table};

const GROUPS: [u64; 3] = [5, 17, 1];

// The values of row r; check_parquet below computes the same ones.
fn int32(r: u64) -> i32 {
    r as i32 * 7 - 1000
}
fn int64(r: u64) -> i64 {
    r as i64 * 3_000_000_000 - 5
}
fn float(r: u64) -> f32 {
    r as f32 * 0.5 - 3.25
}
fn double(r: u64) -> f64 {
    r as f64 / 3.0
}

/// Column `c`'s rows `rows` as PLAIN little-endian values.
fn values(c: usize, rows: std::ops::Range<u64>) -> Vec<u8> {
    rows.flat_map(|r| match c {
        0 => int32(r).to_le_bytes().to_vec(),
        1 => int64(r).to_le_bytes().to_vec(),
        2 => float(r).to_le_bytes().to_vec(),
        _ => double(r).to_le_bytes().to_vec(),
    })
    .collect()
}

fn fill(l: &Layout) -> Vec<u8> {
    let mut out = Vec::new();
    for p in &l.pieces {
        match p {
            Piece::Bytes(b) => out.extend_from_slice(b),
            Piece::Values { column, rows, len } => {
                let v = values(*column, rows.clone());
                assert_eq!(v.len() as u64, *len, "column {column}, rows {rows:?}");
                out.extend_from_slice(&v);
            }
        }
    }
    assert_eq!(out.len() as u64, l.size);
    out
}

const CHECK: &str = r#"
import sys, json
import pyarrow as pa, pyarrow.parquet as pq

path, groups = sys.argv[1], [5, 17, 1]
f = pq.ParquetFile(path)
want_types = [pa.int32(), pa.int64(), pa.float32(), pa.float64()]
schema = f.schema_arrow
assert schema.names == ["i32", "i64", "f32", "f64"], schema
assert schema.types == want_types, schema.types
assert all(not field.nullable for field in schema), schema
assert f.metadata.num_row_groups == 3, f.metadata
assert [f.metadata.row_group(k).num_rows for k in range(3)] == groups
assert f.metadata.num_rows == sum(groups)
assert f.metadata.created_by == "fragfs test", f.metadata.created_by

def rows(rs):
    return {
        "i32": [r * 7 - 1000 for r in rs],
        "i64": [r * 3_000_000_000 - 5 for r in rs],
        "f32": [r * 0.5 - 3.25 for r in rs],
        "f64": [r / 3.0 for r in rs],
    }

t = pq.read_table(path)
assert t.num_rows == sum(groups)
assert t.to_pydict() == rows(range(sum(groups))), t.to_pydict()
g = f.read_row_group(1)
assert g.num_rows == 17
assert g.to_pydict() == rows(range(5, 22)), g.to_pydict()
one = f.read_row_group(2, columns=["f64"])
assert one.to_pydict() == {"f64": [22 / 3.0]}, one.to_pydict()

kv = f.metadata.metadata
assert kv == {b"fragfs.table": b"cells", b"empty": b"", b"unicode": "\u00e9t\u00e9".encode()}, kv
print("ok")
"#;

#[test]
fn pyarrow_reads_the_table_back_value_for_value() {
    let Some(python) = python_with("pyarrow") else {
        return;
    };
    let column = |name: &str, ty| Column {
        name: name.into(),
        ty,
    };
    let table = Table {
        columns: vec![
            column("i32", Physical::Int32),
            column("i64", Physical::Int64),
            column("f32", Physical::Float),
            column("f64", Physical::Double),
        ],
        row_groups: GROUPS.to_vec(),
        key_value: vec![
            ("fragfs.table".into(), "cells".into()),
            ("empty".into(), String::new()),
            ("unicode".into(), "été".into()),
        ],
        created_by: "fragfs test".into(),
    };
    let l = layout(&table).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cells.parquet");
    std::fs::write(&path, fill(&l)).unwrap();
    let out = run_python(&python, CHECK, &[&path]);
    assert_eq!(out.trim(), "ok", "{out}");
}
