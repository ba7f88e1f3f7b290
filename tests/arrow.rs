//! The Arrow IPC writer (src/encode/arrow.rs) alone, before any face serves it: a table
//! with a column of every type mapping (integers of every width at their extremes,
//! floats, booleans, timestamps of each unit, days, times, UTF-8 with non-ASCII and
//! empty strings, blobs, fixed CHAR, fixed and var lists, nullable columns, two
//! enumerated ones with nulls and codes without a label) in four record batches, one
//! of them empty, laid out and filled as a face will fill it (raw pieces from a
//! `values.bin` per column, the rest from `body`), written and read back by pyarrow:
//! types, nullability, metadata, every value of every batch, pandas (categoricals),
//! polars where installed, the schema message alone, and a large file read through a
//! memory map without copying its buffers.

mod common;

use std::collections::HashMap;

use common::*;
use fragfs::encode::arrow::{body, layout, schema_message};
use fragfs::encode::table::{null_count, CellsRef, Chunk, Column, Group, Layout, Piece, Table};
use fragfs::format::enumeration::Enumeration;
use fragfs::format::schema::VAR_NUM;
use fragfs::format::Datatype;
use serde_json::{json, Value};

const GROUPS: [usize; 4] = [3, 0, 5, 2];
const ROWS: usize = 10;

/// A column's cells as TileDB's files hold them, and what pyarrow should show.
struct Field {
    column: Column,
    /// `values.bin`.
    values: Vec<u8>,
    /// Var-size: where each cell starts in `values.bin`, then the end.
    offsets: Option<Vec<u64>>,
    validity: Option<Vec<u8>>,
    /// Per row: the value pyarrow shows (temporal types as integers, bytes as lists).
    want: Vec<Value>,
}

/// One cell: its bytes, its validity and what pyarrow shows.
type Cell = (Vec<u8>, bool, Value);

fn field(
    name: &str,
    datatype: Datatype,
    cell_val_num: u32,
    nullable: bool,
    cell: impl Fn(usize) -> Cell,
) -> Field {
    let mut f = Field {
        column: Column {
            name: name.into(),
            datatype,
            cell_val_num,
            nullable,
            labels: None,
        },
        values: Vec::new(),
        offsets: (cell_val_num == VAR_NUM).then(Vec::new),
        validity: nullable.then(Vec::new),
        want: Vec::new(),
    };
    for r in 0..ROWS {
        let (bytes, valid, want) = cell(r);
        if let Some(o) = &mut f.offsets {
            o.push(f.values.len() as u64);
        }
        f.values.extend_from_slice(&bytes);
        if let Some(v) = &mut f.validity {
            v.push(u8::from(valid));
        }
        f.want.push(if valid { want } else { Value::Null });
    }
    if let Some(o) = &mut f.offsets {
        o.push(f.values.len() as u64);
    }
    f
}

fn le<const N: usize>(values: &[[u8; N]]) -> Vec<u8> {
    values.concat()
}

fn labels(values: &[&str], ordered: bool) -> Enumeration {
    let mut offsets = Vec::new();
    let mut data = Vec::new();
    for v in values {
        offsets.push(data.len() as u64);
        data.extend_from_slice(v.as_bytes());
    }
    Enumeration {
        version: 0,
        name: "labels".into(),
        path_name: "__labels_0".into(),
        datatype: Datatype::StringUtf8,
        cell_val_num: VAR_NUM,
        ordered,
        data,
        offsets,
    }
}

macro_rules! ints {
    ($name:literal, $t:ty, $dt:ident) => {
        field($name, Datatype::$dt, 1, false, |r| {
            let v: $t = match r % 4 {
                0 => <$t>::MIN,
                1 => <$t>::MAX,
                2 => 0,
                _ => r as $t,
            };
            (v.to_le_bytes().to_vec(), true, json!(v))
        })
    };
}

fn i64_cell(v: i64) -> Cell {
    (v.to_le_bytes().to_vec(), true, json!(v))
}

fn fields() -> Vec<Field> {
    let color = ["red", "green", "", "blue"];
    let level = ["lo", "mid", "hi"];
    let mut fields = vec![
        ints!("i8", i8, Int8),
        ints!("u8", u8, UInt8),
        ints!("i16", i16, Int16),
        ints!("u16", u16, UInt16),
        ints!("i32", i32, Int32),
        ints!("u32", u32, UInt32),
        ints!("i64", i64, Int64),
        ints!("u64", u64, UInt64),
        field("f32", Datatype::Float32, 1, false, |r| {
            let v = r as f32 * 0.5 - 1.25;
            (v.to_le_bytes().to_vec(), true, json!(v))
        }),
        field("f64", Datatype::Float64, 1, false, |r| {
            let v = r as f64 / 8.0 - 1e10;
            (v.to_le_bytes().to_vec(), true, json!(v))
        }),
        field("flag", Datatype::Bool, 1, false, |r| {
            (vec![u8::from(r % 3 == 0)], true, json!(r % 3 == 0))
        }),
        field("ts_s", Datatype::DatetimeSec, 1, false, |r| {
            i64_cell(r as i64 * 86_400 - 300_000)
        }),
        field("ts_ms", Datatype::DatetimeMs, 1, false, |r| {
            i64_cell(1_700_000_000_000 + r as i64)
        }),
        field("ts_us", Datatype::DatetimeUs, 1, false, |r| {
            i64_cell(-1_000_000 * r as i64)
        }),
        field("ts_ns", Datatype::DatetimeNs, 1, false, |r| {
            i64_cell(1_700_000_000_000_000_000 + r as i64)
        }),
        // Days are Int64, not Date32 (int32): NaT (i64::MIN, TileDB's fill value, also
        // in the null cells) and a day past ±2^31 pass through.
        field("day", Datatype::DatetimeDay, 1, true, |r| match r {
            _ if r % 3 == 1 => (i64::MIN.to_le_bytes().to_vec(), false, Value::Null),
            0 => i64_cell(i64::MIN),
            2 => i64_cell(1 << 40),
            _ => i64_cell((r as i64 - 5) * 1000),
        }),
        field("year", Datatype::DatetimeYear, 1, false, |r| {
            i64_cell(r as i64 * 7 - 20)
        }),
        field("t_ns", Datatype::TimeNs, 1, false, |r| {
            i64_cell(r as i64 * 1_000_000_007)
        }),
        field("t_hr", Datatype::TimeHr, 1, false, |r| {
            i64_cell(r as i64 - 3)
        }),
        field("text", Datatype::StringUtf8, VAR_NUM, true, |r| {
            let s = ["", "héllo", "日本語", "a", "🦀 x"][r % 5];
            // A null cell's bytes stay in the data: Arrow allows it.
            (s.as_bytes().to_vec(), r % 4 != 3, json!(s))
        }),
        field("blob", Datatype::Blob, VAR_NUM, false, |r| {
            let b: Vec<u8> = (0..r % 4).map(|i| (r * 60 + i) as u8 ^ 0xf0).collect();
            (b.clone(), true, json!(b))
        }),
        field("c3", Datatype::Char, 3, false, |r| {
            let b = format!("c{r:02}").into_bytes();
            (b.clone(), true, json!(b))
        }),
        field("pair", Datatype::Int32, 2, false, |r| {
            let v = [r as i32, -(r as i32) * 1000];
            (le(&v.map(i32::to_le_bytes)), true, json!(v))
        }),
        field("bits2", Datatype::Bool, 2, false, |r| {
            let v = [r % 2 == 0, r % 3 == 0];
            (v.map(u8::from).to_vec(), true, json!(v))
        }),
        field("vl", Datatype::Float64, VAR_NUM, false, |r| {
            let v: Vec<f64> = (0..r % 3).map(|k| r as f64 + k as f64 / 2.0).collect();
            let bytes = le(&v.iter().map(|x| x.to_le_bytes()).collect::<Vec<_>>());
            (bytes, true, json!(v))
        }),
        field("days", Datatype::DatetimeDay, VAR_NUM, false, |r| {
            let v: Vec<i64> = match r {
                5 => vec![i64::MIN, 1 << 40],
                _ => (0..r % 3)
                    .map(|k| r as i64 * 100 - k as i64 * 50 - 200)
                    .collect(),
            };
            let bytes = le(&v.iter().map(|x| x.to_le_bytes()).collect::<Vec<_>>());
            (bytes, true, json!(v))
        }),
        field("ni", Datatype::Int32, 1, true, |r| {
            if r % 2 == 1 {
                (i32::MAX.to_le_bytes().to_vec(), false, Value::Null)
            } else {
                ((r as i32).to_le_bytes().to_vec(), true, json!(r))
            }
        }),
        // Codes: a null at row 2, a code without a label (7) at row 5.
        field("color", Datatype::Int16, 1, true, move |r| {
            let code: i16 = if r == 5 { 7 } else { (r % 4) as i16 };
            let want = color.get(code as usize).map_or(Value::Null, |s| json!(s));
            (code.to_le_bytes().to_vec(), r != 2, want)
        }),
        // Not nullable, but code 9 at row 4 has no label: null all the same.
        field("level", Datatype::UInt8, 1, false, move |r| {
            let code = if r == 4 { 9 } else { (r % 3) as u8 };
            let want = level.get(code as usize).map_or(Value::Null, |s| json!(s));
            (vec![code], true, want)
        }),
    ];
    let n = fields.len();
    fields[n - 2].column.labels = Some(labels(&color, false));
    fields[n - 1].column.labels = Some(labels(&level, true));
    fields
}

/// The cells of rows `rows` of `f`, as a face gives them.
fn cells<'a>(f: &'a Field, rows: std::ops::Range<usize>, bounds: &'a mut Vec<u64>) -> CellsRef<'a> {
    let (values, bounds) = match &f.offsets {
        Some(o) => {
            let (from, to) = (o[rows.start], o[rows.end]);
            *bounds = o[rows.clone()]
                .iter()
                .chain([&to])
                .map(|b| b - from)
                .collect();
            (&f.values[from as usize..to as usize], Some(&bounds[..]))
        }
        None => {
            let size = f.column.cell_size() as usize;
            (&f.values[rows.start * size..rows.end * size], None)
        }
    };
    CellsRef {
        values,
        bounds,
        validity: f.validity.as_ref().map(|v| &v[rows]),
    }
}

fn table(fields: &[Field], groups: &[usize], key_value: Vec<(String, String)>) -> Table {
    let mut first = 0;
    let groups = groups
        .iter()
        .map(|&rows| {
            let chunks = fields
                .iter()
                .map(|f| {
                    let mut b = Vec::new();
                    let c = cells(f, first..first + rows, &mut b);
                    let start = f.offsets.as_ref().map_or(0, |o| o[first]);
                    Chunk {
                        nulls: null_count(&f.column, &c),
                        var_bytes: if f.offsets.is_some() {
                            c.values.len() as u64
                        } else {
                            0
                        },
                        var_start: start,
                        ..Chunk::default()
                    }
                })
                .collect();
            first += rows;
            Group {
                rows: rows as u64,
                chunks,
            }
        })
        .collect();
    Table {
        columns: fields.iter().map(|f| f.column.clone()).collect(),
        groups,
        key_value,
        created_by: "fragfs test".into(),
    }
}

/// The file, filled as a face fills it.
fn fill(t: &Table, fields: &[Field], l: &Layout) -> Vec<u8> {
    let mut bodies: HashMap<(usize, usize), Vec<u8>> = HashMap::new();
    let firsts: Vec<usize> = t
        .groups
        .iter()
        .scan(0, |at, g| {
            let first = *at;
            *at += g.rows as usize;
            Some(first)
        })
        .collect();
    let mut out = Vec::new();
    for p in &l.pieces {
        match p {
            Piece::Bytes(b) => out.extend_from_slice(b),
            Piece::Raw { column, range } => out.extend_from_slice(
                &fields[*column].values[range.start as usize..range.end as usize],
            ),
            &Piece::Body {
                group,
                column,
                at,
                len,
            } => {
                let body = bodies.entry((group, column)).or_insert_with(|| {
                    let first = firsts[group];
                    let rows = first..first + t.groups[group].rows as usize;
                    let mut b = Vec::new();
                    body(t, group, column, &cells(&fields[column], rows, &mut b)).unwrap()
                });
                out.extend_from_slice(&body[at as usize..(at + len) as usize]);
            }
            Piece::Stored { .. } => panic!("an Arrow file has no stored pages"),
        }
    }
    assert_eq!(out.len() as u64, l.size);
    out
}

const CHECK: &str = r#"
import sys, json, datetime
import pyarrow as pa

path, want_path, schema_path = sys.argv[1:4]
want = json.load(open(want_path))
f = pa.ipc.open_file(pa.memory_map(path))
s = f.schema

def item(t):
    return pa.field("item", t, nullable=False)

types = {
    "i8": pa.int8(), "u8": pa.uint8(), "i16": pa.int16(), "u16": pa.uint16(),
    "i32": pa.int32(), "u32": pa.uint32(), "i64": pa.int64(), "u64": pa.uint64(),
    "f32": pa.float32(), "f64": pa.float64(), "flag": pa.bool_(),
    "ts_s": pa.timestamp("s"), "ts_ms": pa.timestamp("ms"), "ts_us": pa.timestamp("us"),
    "ts_ns": pa.timestamp("ns"), "day": pa.int64(), "year": pa.int64(),
    "t_ns": pa.duration("ns"), "t_hr": pa.int64(), "text": pa.large_utf8(),
    "blob": pa.large_binary(), "c3": pa.binary(3),
    "pair": pa.list_(item(pa.int32()), 2), "bits2": pa.list_(item(pa.bool_()), 2),
    "vl": pa.large_list(item(pa.float64())), "days": pa.large_list(item(pa.int64())),
    "ni": pa.int32(),
    "color": pa.dictionary(pa.int16(), pa.large_utf8(), ordered=False),
    "level": pa.dictionary(pa.uint8(), pa.large_utf8(), ordered=True),
}
assert s.names == list(types), s.names
for name, t in types.items():
    assert s.field(name).type == t, (name, s.field(name).type, t)
nullable = {"day", "text", "ni", "color", "level"}
for field in s:
    assert field.nullable == (field.name in nullable), field
meta = {field.name: field.metadata for field in s if field.metadata}
assert meta == {
    n: {b"tiledb_datatype": t.encode()}
    for n, t in [
        ("day", "DATETIME_DAY"), ("year", "DATETIME_YEAR"), ("t_ns", "TIME_NS"),
        ("t_hr", "TIME_HR"), ("c3", "CHAR"), ("days", "DATETIME_DAY"),
    ]
}, meta
assert s.metadata == {b"fragfs.table": b"cells", b"empty": b"", b"unicode": "\u00e9t\u00e9".encode()}, s.metadata

def plain(t):
    """The type with temporal values as the integers TileDB stores."""
    if pa.types.is_timestamp(t) or pa.types.is_duration(t):
        return pa.int64()
    if pa.types.is_large_list(t):
        return pa.large_list(item(plain(t.value_type)))
    if pa.types.is_fixed_size_list(t):
        return pa.list_(item(plain(t.value_type)), t.list_size)
    return t

def norm(a):
    if not pa.types.is_dictionary(a.type):
        a = a.cast(plain(a.type))
    return [list(v) if isinstance(v, bytes) else v for v in a.to_pylist()]

assert f.num_record_batches == len(want), f.num_record_batches
for k, batch in enumerate(want):
    b = f.get_batch(k)
    b.validate(full=True)
    assert b.num_rows == batch["rows"], (k, b.num_rows)
    for i, name in enumerate(s.names):
        got = norm(b.column(i))
        assert got == batch["columns"][i], (k, name, got, batch["columns"][i])
        assert b.column(i).null_count == sum(v is None for v in batch["columns"][i]), (k, name)

t = f.read_all()
t.validate(full=True)
df = t.to_pandas()
assert df.shape == (sum(b["rows"] for b in want), len(types)), df.shape
assert str(df["color"].dtype) == "category", df.dtypes
assert list(df["color"].cat.categories) == ["red", "green", "", "blue"]
assert not df["color"].cat.ordered and df["level"].cat.ordered
colors = [None if v != v else v for v in df["color"].tolist()]
assert colors == [v for b in want for v in b["columns"][s.names.index("color")]], colors
assert df["u64"].tolist()[:2] == [0, 2**64 - 1], df["u64"].tolist()
assert str(df["ts_ns"].dtype) == "datetime64[ns]", df.dtypes
assert df["t_ns"].iloc[1] == __import__("pandas").Timedelta(1_000_000_007, "ns")
assert df["text"].tolist()[1] == "h\u00e9llo"

schema = pa.ipc.read_schema(pa.py_buffer(open(schema_path, "rb").read()))
assert schema.equals(s, check_metadata=True), (schema, s)

try:
    import polars as pl
except ImportError:
    print("skip: polars is not installed: the polars check did not run")
else:
    p = pl.read_ipc(path, memory_map=True)
    assert p.shape == df.shape, p.shape
    assert p["text"].to_list() == df["text"].where(df["text"].notna(), None).tolist()
    assert p["i64"].to_list() == df["i64"].tolist()
print("ok")
"#;

#[test]
fn pyarrow_reads_every_type_back_value_for_value() {
    let Some(python) = python_with("pyarrow") else {
        return;
    };
    let fields = fields();
    let key_value = vec![
        ("fragfs.table".into(), "cells".into()),
        ("empty".into(), String::new()),
        ("unicode".into(), "été".into()),
    ];
    let t = table(&fields, &GROUPS, key_value);
    let l = layout(&t).unwrap();
    let file = fill(&t, &fields, &l);
    let mut want = Vec::new();
    let mut first = 0;
    for &rows in &GROUPS {
        let columns: Vec<Value> = fields
            .iter()
            .map(|f| Value::Array(f.want[first..first + rows].to_vec()))
            .collect();
        want.push(json!({"rows": rows, "columns": columns}));
        first += rows;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cells.arrow");
    let want_path = dir.path().join("want.json");
    let schema_path = dir.path().join("schema.bin");
    std::fs::write(&path, &file).unwrap();
    std::fs::write(&want_path, Value::Array(want).to_string()).unwrap();
    std::fs::write(&schema_path, schema_message(&t).unwrap()).unwrap();
    let out = run_python(&python, CHECK, &[&path, &want_path, &schema_path]);
    for line in out.lines() {
        if let Some(reason) = line.strip_prefix("skip: ") {
            skip_part(reason);
        }
    }
    assert_eq!(out.lines().last(), Some("ok"), "{out}");
}

#[test]
fn no_batches_is_a_file_with_the_schema() {
    let Some(python) = python_with("pyarrow") else {
        return;
    };
    let fields = fields();
    let t = table(&fields, &[], Vec::new());
    let l = layout(&t).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cells.arrow");
    std::fs::write(&path, fill(&t, &fields, &l)).unwrap();
    let check = r#"
import sys, pyarrow as pa
f = pa.ipc.open_file(pa.memory_map(sys.argv[1]))
assert f.num_record_batches == 0
t = f.read_all()
assert t.num_rows == 0 and t.num_columns == 29, t.schema
assert str(t.schema.field("color").type) == "dictionary<values=large_string, indices=int16, ordered=0>"
print("ok")
"#;
    let out = run_python(&python, check, &[&path]);
    assert_eq!(out.trim(), "ok", "{out}");
}

/// 2^20 rows of INT64 and of nullable 4-byte strings: read through a memory map,
/// pyarrow allocates next to nothing (its buffers are the file's bytes).
#[test]
fn a_memory_mapped_file_is_read_without_copying() {
    let Some(python) = python_with("pyarrow") else {
        return;
    };
    const N: usize = 1 << 20;
    let column = |name: &str, datatype, cell_val_num, nullable| Column {
        name: name.into(),
        datatype,
        cell_val_num,
        nullable,
        labels: None,
    };
    let fields = vec![
        Field {
            column: column("n", Datatype::Int64, 1, false),
            values: (0..N as i64).flat_map(|i| i.to_le_bytes()).collect(),
            offsets: None,
            validity: None,
            want: Vec::new(),
        },
        Field {
            column: column("s", Datatype::StringUtf8, VAR_NUM, true),
            values: (0..N)
                .flat_map(|i| format!("{:04}", i % 10_000).into_bytes())
                .collect(),
            offsets: Some((0..=N as u64).map(|i| 4 * i).collect()),
            validity: Some((0..N).map(|i| u8::from(i % 7 != 0)).collect()),
            want: Vec::new(),
        },
    ];
    let t = table(&fields, &[N / 2, N / 2], Vec::new());
    let l = layout(&t).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cells.arrow");
    std::fs::write(&path, fill(&t, &fields, &l)).unwrap();
    let check = r#"
import sys, pyarrow as pa
before = pa.total_allocated_bytes()
t = pa.ipc.open_file(pa.memory_map(sys.argv[1])).read_all()
grew = pa.total_allocated_bytes() - before
assert t.num_rows == 1 << 20
assert t.column("n")[12345].as_py() == 12345
assert t.column("s")[7].as_py() is None and t.column("s")[12345].as_py() == "2345"
assert t.column("s").null_count == ((1 << 20) + 6) // 7
size = t.nbytes
assert grew < size // 100, (grew, size)
print("ok", grew, size)
"#;
    let out = run_python(&python, check, &[&path]);
    assert!(out.starts_with("ok "), "{out}");
    println!("allocated, table bytes: {}", out.trim());
}
