//! The Parquet writer (src/encode/parquet) alone, before any face serves it: a table
//! with a column of every mapping (integers of every width at their extremes, floats,
//! booleans, datetimes of ms/us/ns/day/sec, a time, UTF-8 and ASCII strings, a var
//! blob, CHAR × 3, a fixed and two var lists, nullable fixed and var columns with null
//! cells that hold bytes, an enumerated column with a null and a code no label has),
//! in row groups of different sizes (one of 0 rows, left out) with a ZSTD and an LZ4
//! stored page. Laid out, filled as a face fills it (raw pieces from a fake
//! `values.bin`, body pieces from `body()`, stored pieces from the compressed pages),
//! written, and read back by pyarrow (every value and type, nullability, the
//! dictionary, statistics, key-value metadata, codecs) and by DuckDB (the same values,
//! the statistics through `parquet_metadata`).

mod common;

use std::cmp::Ordering;
use std::collections::HashMap;

use common::*;
use fragfs::encode::parquet::{body, layout};
use fragfs::encode::table::{
    null_count, var_counts, Bounds, CellsRef, Chunk, Codec, Column, Group, Layout, Piece, Stored,
    StoredPage, Table,
};
use fragfs::format::enumeration::Enumeration;
use fragfs::format::schema::VAR_NUM;
use fragfs::format::Datatype;
use serde_json::{json, Value};

/// Rows of each group: the 0-row group is left out of the file.
const GROUPS: [u64; 4] = [4, 0, 6, 3];
const ROWS: usize = 13;

/// How a cell's value orders, for the bounds.
#[derive(Debug, Clone, PartialEq, PartialOrd)]
enum Key {
    I(i128),
    F(f64),
    B(Vec<u8>),
}

struct Cell {
    valid: bool,
    /// Its bytes in `values.bin` (a null cell's too).
    bytes: Vec<u8>,
    /// What the readers give, normalised (see CHECK).
    want: Value,
    key: Option<Key>,
}

struct Spec {
    column: Column,
    cells: Vec<Cell>,
    /// pyarrow's type, as `str()` prints it.
    ty: &'static str,
    /// How CHECK normalises values: "", "ts_ms", "ts_us", "ts_ns", "bin".
    mode: &'static str,
    /// Statistics: "" (null count only), "val" (min/max as pyarrow gives them),
    /// "raw" (min_raw/max_raw: temporal types).
    stats: &'static str,
}

fn column(name: &str, datatype: Datatype, cell_val_num: u32, nullable: bool) -> Column {
    Column {
        name: name.into(),
        datatype,
        cell_val_num,
        nullable,
        labels: None,
    }
}

fn spec(
    col: Column,
    ty: &'static str,
    mode: &'static str,
    stats: &'static str,
    cells: Vec<Cell>,
) -> Spec {
    assert_eq!(cells.len(), ROWS);
    Spec {
        column: col,
        cells,
        ty,
        mode,
        stats,
    }
}

fn valid(bytes: Vec<u8>, want: Value, key: Key) -> Cell {
    Cell {
        valid: true,
        bytes,
        want,
        key: Some(key),
    }
}

fn null(bytes: Vec<u8>) -> Cell {
    Cell {
        valid: false,
        bytes,
        want: Value::Null,
        key: None,
    }
}

/// Row r of an integer column: the type's minimum, maximum, then a spread.
macro_rules! int_column {
    ($name:expr, $dt:expr, $t:ty, $ty:expr) => {{
        let cells = (0..ROWS)
            .map(|r| {
                let v: $t = match r {
                    0 => <$t>::MIN,
                    1 => <$t>::MAX,
                    _ => (r as i64 * 37 - 200) as $t,
                };
                valid(v.to_le_bytes().to_vec(), json!(v), Key::I(v as i128))
            })
            .collect();
        spec(column($name, $dt, 1, false), $ty, "", "val", cells)
    }};
}

fn i64_cells(f: impl Fn(usize) -> i64) -> Vec<Cell> {
    (0..ROWS)
        .map(|r| {
            let v = f(r);
            valid(v.to_le_bytes().to_vec(), json!(v), Key::I(v.into()))
        })
        .collect()
}

fn strings(values: &[Option<&str>]) -> Vec<Cell> {
    values
        .iter()
        .cycle()
        .take(ROWS)
        .map(|s| match s {
            Some(s) => valid(
                s.as_bytes().to_vec(),
                json!(s),
                Key::B(s.as_bytes().to_vec()),
            ),
            None => null(b"zz".to_vec()),
        })
        .collect()
}

fn specs() -> Vec<Spec> {
    let mut out = vec![
        int_column!("i8", Datatype::Int8, i8, "int8"),
        int_column!("u8", Datatype::UInt8, u8, "uint8"),
        int_column!("i16", Datatype::Int16, i16, "int16"),
        int_column!("u16", Datatype::UInt16, u16, "uint16"),
        int_column!("i32", Datatype::Int32, i32, "int32"),
        int_column!("u32", Datatype::UInt32, u32, "uint32"),
        int_column!("i64", Datatype::Int64, i64, "int64"),
        int_column!("u64", Datatype::UInt64, u64, "uint64"),
    ];
    let f32s = (0..ROWS)
        .map(|r| {
            let v = match r {
                0 => f32::MIN,
                1 => f32::MAX,
                2 => -0.0,
                _ => r as f32 * 0.5 - 3.25,
            };
            valid(v.to_le_bytes().to_vec(), json!(v as f64), Key::F(v.into()))
        })
        .collect();
    out.push(spec(
        column("f32", Datatype::Float32, 1, false),
        "float",
        "",
        "val",
        f32s,
    ));
    let f64s = (0..ROWS)
        .map(|r| {
            let v = match r {
                0 => f64::MIN_POSITIVE,
                1 => f64::MAX,
                _ => r as f64 / 4.0 - 1.0,
            };
            valid(v.to_le_bytes().to_vec(), json!(v), Key::F(v))
        })
        .collect();
    out.push(spec(
        column("f64", Datatype::Float64, 1, false),
        "double",
        "",
        "val",
        f64s,
    ));
    let bools = (0..ROWS)
        .map(|r| {
            let v = r % 3 == 1;
            valid(vec![u8::from(v)], json!(v), Key::I(v.into()))
        })
        .collect();
    out.push(spec(
        column("b", Datatype::Bool, 1, false),
        "bool",
        "",
        "val",
        bools,
    ));
    let times = |r: usize| {
        1_700_000_000_000 + r as i64 * 1_234
            - if r.is_multiple_of(2) {
                3_000_000_000_000
            } else {
                0
            }
    };
    out.push(spec(
        column("ms", Datatype::DatetimeMs, 1, false),
        "timestamp[ms]",
        "ts_ms",
        "raw",
        i64_cells(times),
    ));
    out.push(spec(
        column("us", Datatype::DatetimeUs, 1, false),
        "timestamp[us]",
        "ts_us",
        "raw",
        i64_cells(|r| times(r) * 1000 + 7),
    ));
    out.push(spec(
        column("ns", Datatype::DatetimeNs, 1, false),
        "timestamp[ns]",
        "ts_ns",
        "raw",
        i64_cells(|r| times(r) * 1_000_000 - 9),
    ));
    // Year 1 and year 9999, NaT (TileDB's fill) and a day past ±2^31, which no DATE
    // (i32) holds, then days around 1970: a plain INT64 passes them all through.
    let days = i64_cells(|r| match r {
        0 => -719_162,
        1 => 2_932_896,
        2 => i64::MIN,
        3 => 1 << 40,
        _ => r as i64 * 1000 - 5000,
    });
    out.push(spec(
        column("day", Datatype::DatetimeDay, 1, false),
        "int64",
        "",
        "val",
        days,
    ));
    out.push(spec(
        column("sec", Datatype::DatetimeSec, 1, false),
        "int64",
        "",
        "val",
        i64_cells(|r| r as i64 * 86_400 - 1),
    ));
    out.push(spec(
        column("tns", Datatype::TimeNs, 1, false),
        "int64",
        "",
        "val",
        i64_cells(|r| r as i64 * 3_600_000_000_000),
    ));
    let utf8 = strings(&[
        Some("été"),
        Some(""),
        Some("日本語"),
        Some("a"),
        Some("zebra ü"),
    ]);
    out.push(spec(
        column("s", Datatype::StringUtf8, VAR_NUM, false),
        "string",
        "",
        "val",
        utf8,
    ));
    let blobs = (0..ROWS)
        .map(|r| {
            let b: Vec<u8> = (0..r % 4).map(|k| (r * 50 + k) as u8).collect();
            valid(b.clone(), json!(hex(&b)), Key::B(b))
        })
        .collect();
    out.push(spec(
        column("blob", Datatype::Blob, VAR_NUM, false),
        "binary",
        "bin",
        "val",
        blobs,
    ));
    let chars = (0..ROWS)
        .map(|r| {
            let b = vec![b'a' + r as u8, b'x', 0xff - r as u8];
            valid(b.clone(), json!(hex(&b)), Key::B(b))
        })
        .collect();
    out.push(spec(
        column("c3", Datatype::Char, 3, false),
        "fixed_size_binary[3]",
        "bin",
        "val",
        chars,
    ));
    let pairs = (0..ROWS)
        .map(|r| {
            let v = [r as i32 - 5, i32::MAX - r as i32];
            let bytes = v.iter().flat_map(|x| x.to_le_bytes()).collect();
            valid(bytes, json!(v), Key::I(0))
        })
        .collect();
    out.push(spec(
        column("pair", Datatype::Int32, 2, false),
        "list<element: int32 not null>",
        "",
        "",
        pairs,
    ));
    let var_lists = (0..ROWS)
        .map(|r| {
            let v: Vec<i16> = (0..r % 4)
                .map(|k| (r as i16 - 6) * 1000 + k as i16)
                .collect();
            let bytes = v.iter().flat_map(|x| x.to_le_bytes()).collect();
            valid(bytes, json!(v), Key::I(0))
        })
        .collect();
    out.push(spec(
        column("vl", Datatype::Int16, VAR_NUM, false),
        "list<element: int16 not null>",
        "",
        "",
        var_lists,
    ));
    let nullable_ints = (0..ROWS)
        .map(|r| {
            let v = r as i32 * -11;
            if r % 3 == 2 {
                null(v.to_le_bytes().to_vec())
            } else {
                valid(v.to_le_bytes().to_vec(), json!(v), Key::I(v.into()))
            }
        })
        .collect();
    out.push(spec(
        column("ni", Datatype::Int32, 1, true),
        "int32",
        "",
        "val",
        nullable_ints,
    ));
    let ascii = strings(&[Some("x"), None, Some(""), Some("hello"), None, Some("b")]);
    out.push(spec(
        column("na", Datatype::StringAscii, VAR_NUM, true),
        "string",
        "",
        "val",
        ascii,
    ));
    let nullable_lists = (0..ROWS)
        .map(|r| {
            let v: Vec<f64> = (0..r % 3).map(|k| r as f64 + k as f64 / 8.0).collect();
            let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
            if r % 4 == 3 {
                null(bytes)
            } else {
                valid(bytes, json!(v), Key::I(0))
            }
        })
        .collect();
    out.push(spec(
        column("nvl", Datatype::Float64, VAR_NUM, true),
        "list<element: double not null>",
        "",
        "",
        nullable_lists,
    ));
    let nullable_pairs = (0..ROWS)
        .map(|r| {
            let v = [r as i16, -(r as i16)];
            let bytes = v.iter().flat_map(|x| x.to_le_bytes()).collect();
            if r % 5 == 4 {
                null(bytes)
            } else {
                valid(bytes, json!(v), Key::I(0))
            }
        })
        .collect();
    out.push(spec(
        column("npair", Datatype::Int16, 2, true),
        "list<element: int16 not null>",
        "",
        "",
        nullable_pairs,
    ));
    let labels = ["red", "green", "blüe"];
    let codes = (0..ROWS)
        .map(|r| match r {
            5 => null(vec![1]),
            8 => Cell {
                // A code no label has: written null.
                valid: true,
                bytes: vec![7],
                want: Value::Null,
                key: None,
            },
            r => valid(vec![(r % 3) as u8], json!(labels[r % 3]), Key::I(0)),
        })
        .collect();
    let mut enumerated = column("enum", Datatype::UInt8, 1, true);
    enumerated.labels = Some(Enumeration {
        version: 0,
        name: "colours".into(),
        path_name: "__colours_0".into(),
        datatype: Datatype::StringUtf8,
        cell_val_num: VAR_NUM,
        ordered: false,
        data: labels.concat().into_bytes(),
        offsets: vec![0, 3, 8],
    });
    out.push(spec(enumerated, "string", "", "", codes));
    out
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// One group's cells of one column, owned.
struct Cells {
    values: Vec<u8>,
    bounds: Option<Vec<u64>>,
    validity: Option<Vec<u8>>,
}

impl Cells {
    fn as_ref(&self) -> CellsRef<'_> {
        CellsRef {
            values: &self.values,
            bounds: self.bounds.as_deref(),
            validity: self.validity.as_deref(),
        }
    }
}

/// Where the stored pages are: (group, column name, codec).
const STORED: [(usize, &str, Codec); 2] = [(2, "i64", Codec::Zstd), (3, "f64", Codec::Lz4)];

/// A group whose f32 bounds are NaN: no min/max for it.
const NAN_GROUP: usize = 0;

struct Built {
    table: Table,
    cells: Vec<Vec<Cells>>,
    bins: Vec<Vec<u8>>,
    stored: HashMap<(usize, usize), Vec<Vec<u8>>>,
}

fn build(specs: &[Spec]) -> Built {
    let mut groups = Vec::new();
    let mut cells = Vec::new();
    let mut bins = vec![Vec::new(); specs.len()];
    let mut stored = HashMap::new();
    let mut first = 0usize;
    for (g, &n) in GROUPS.iter().enumerate() {
        let rows = first..first + n as usize;
        first = rows.end;
        let mut chunks = Vec::new();
        let mut group_cells = Vec::new();
        for (c, s) in specs.iter().enumerate() {
            let col = &s.column;
            let mine = &s.cells[rows.clone()];
            let mut values = Vec::new();
            let mut bounds = vec![0u64];
            for cell in mine {
                values.extend_from_slice(&cell.bytes);
                bounds.push(values.len() as u64);
            }
            let owned = Cells {
                values,
                bounds: col.is_var().then_some(bounds),
                validity: col
                    .nullable
                    .then(|| mine.iter().map(|c| u8::from(c.valid)).collect()),
            };
            let r = owned.as_ref();
            let (null_bytes, empty) = var_counts(col, &r);
            let keyed = mine.iter().filter_map(|c| Some((c.key.clone()?, &c.bytes)));
            let cmp = |a: &(Key, &Vec<u8>), b: &(Key, &Vec<u8>)| {
                a.0.partial_cmp(&b.0).unwrap_or(Ordering::Equal)
            };
            let mut bounds = match (keyed.clone().min_by(cmp), keyed.max_by(cmp)) {
                (Some(min), Some(max)) if !s.stats.is_empty() => Some(Bounds {
                    min: min.1.clone(),
                    max: max.1.clone(),
                }),
                _ => None,
            };
            if col.name == "f32" && g == NAN_GROUP {
                bounds = Some(Bounds {
                    min: f32::NAN.to_le_bytes().to_vec(),
                    max: 1f32.to_le_bytes().to_vec(),
                });
            }
            let mut chunk = Chunk {
                nulls: null_count(col, &r),
                var_bytes: if col.is_var() {
                    owned.values.len() as u64
                } else {
                    0
                },
                var_start: bins[c].len() as u64,
                null_bytes,
                empty,
                bounds,
                stored: None,
            };
            if let Some(&(_, _, codec)) = STORED
                .iter()
                .find(|(sg, name, _)| *sg == g && *name == col.name)
            {
                // ZSTD: two pages, of the first rows and the rest; LZ4: one.
                let size = col.cell_size() as usize;
                let parts: Vec<&[u8]> = match codec {
                    Codec::Zstd => {
                        let (a, b) = owned.values.split_at(size * (n as usize / 2));
                        vec![a, b]
                    }
                    Codec::Lz4 => vec![&owned.values[..]],
                };
                let pages: Vec<Vec<u8>> = parts
                    .iter()
                    .map(|p| match codec {
                        Codec::Zstd => zstd::bulk::compress(p, 3).unwrap(),
                        Codec::Lz4 => lz4_flex::block::compress(p),
                    })
                    .collect();
                chunk.stored = Some(Stored {
                    codec,
                    pages: parts
                        .iter()
                        .zip(&pages)
                        .map(|(p, z)| StoredPage {
                            compressed: z.len() as u64,
                            uncompressed: p.len() as u64,
                        })
                        .collect(),
                });
                stored.insert((g, c), pages);
            }
            bins[c].extend_from_slice(&owned.values);
            chunks.push(chunk);
            group_cells.push(owned);
        }
        groups.push(Group { rows: n, chunks });
        cells.push(group_cells);
    }
    let table = Table {
        columns: specs.iter().map(|s| s.column.clone()).collect(),
        groups,
        key_value: vec![
            ("fragfs.table".into(), "cells".into()),
            ("unicode".into(), "été".into()),
        ],
        created_by: "fragfs test".into(),
    };
    Built {
        table,
        cells,
        bins,
        stored,
    }
}

fn fill(b: &Built, l: &Layout) -> Vec<u8> {
    let mut out = Vec::new();
    for p in &l.pieces {
        match p {
            Piece::Bytes(bytes) => out.extend_from_slice(bytes),
            Piece::Raw { column, range } => {
                out.extend_from_slice(&b.bins[*column][range.start as usize..range.end as usize])
            }
            Piece::Body {
                group,
                column,
                at,
                len,
            } => {
                let cells = &b.cells[*group][*column];
                let body = body(&b.table, *group, *column, &cells.as_ref()).unwrap();
                out.extend_from_slice(&body[*at as usize..(*at + *len) as usize]);
            }
            Piece::Stored {
                group,
                column,
                page,
                len,
            } => {
                let bytes = &b.stored[&(*group, *column)][*page];
                assert_eq!(bytes.len() as u64, *len);
                out.extend_from_slice(bytes);
            }
        }
    }
    assert_eq!(out.len() as u64, l.size);
    out
}

const CHECK: &str = r#"
import sys, json
import pyarrow as pa, pyarrow.parquet as pq

spec = json.load(open(sys.argv[1]))
path, groups, columns = spec["path"], spec["groups"], spec["columns"]
f = pq.ParquetFile(path)
md = f.metadata
assert md.num_row_groups == len(groups), md
assert [md.row_group(k).num_rows for k in range(len(groups))] == groups
assert md.num_rows == sum(groups)
assert md.created_by == "fragfs test", md.created_by
assert md.format_version in ("2.6", "2.4", "2.0"), md.format_version

def norm(col, arr):
    mode = col["mode"]
    if mode.startswith("ts"):
        arr = arr.cast(pa.int64())
    vals = arr.to_pylist()
    if mode == "bin":
        vals = [None if v is None else v.hex() for v in vals]
    return vals

t = pq.read_table(path)
for c, col in enumerate(columns):
    name = col["name"]
    field = t.schema.field(name)
    assert str(field.type) == col["type"], (name, str(field.type))
    assert field.nullable == col["nullable"], (name, field.nullable)
    got = norm(col, t.column(name))
    assert got == col["want"], (name, got, col["want"])
    # Statistics, row group by row group.
    at = 0
    for k, n in enumerate(groups):
        want = col["want"][at:at + n]
        at += n
        st = md.row_group(k).column(c).statistics
        assert st is not None and st.has_null_count, (name, k)
        nulls = sum(1 for v in want if v is None or v == [])
        assert st.null_count == nulls, (name, k, st.null_count, nulls)
        present = [v for v in want if v is not None]
        if not col["stats"] or not present or (name == "f32" and k == spec["nan_group"]):
            assert not st.has_min_max, (name, k, st)
            continue
        assert st.has_min_max, (name, k)
        lo, hi = (st.min_raw, st.max_raw) if col["stats"] == "raw" else (st.min, st.max)
        if col["mode"] == "bin":
            lo, hi = lo.hex(), hi.hex()
        assert (lo, hi) == (min(present), max(present)), (name, k, lo, hi, min(present), max(present))

# The dictionary column: the labels as the dictionary, its codes as indices.
d = pq.read_table(path, read_dictionary=["enum"]).column("enum")
assert pa.types.is_dictionary(d.type), d.type
for chunk in d.chunks:
    assert chunk.dictionary.to_pylist() == ["red", "green", "blüe"], chunk.dictionary
assert d.to_pylist() == columns[-1]["want"]
e = len(columns) - 1
for k in range(len(groups)):
    cc = md.row_group(k).column(e)
    assert cc.has_dictionary_page and "RLE_DICTIONARY" in cc.encodings, cc
    assert cc.dictionary_page_offset < cc.data_page_offset

# Stored pages keep their codec (pyarrow names LZ4_RAW "LZ4").
for k, c, codec in spec["stored"]:
    assert md.row_group(k).column(c).compression == codec, (k, c, md.row_group(k).column(c))
for k in range(len(groups)):
    assert md.row_group(k).column(0).compression == "UNCOMPRESSED"

kv = md.metadata
assert kv[b"fragfs.table"] == b"cells" and kv[b"unicode"] == "été".encode(), kv
units = {"day": "DATETIME_DAY", "sec": "DATETIME_SEC", "tns": "TIME_NS"}
assert json.loads(kv[b"fragfs.units"]) == units, kv

# Logical and converted types in the schema as written.
s = md.schema
for c, want in spec["logical"].items():
    got = str(s.column(int(c)).logical_type)
    assert got == want, (c, got, want)
for c, want in spec["converted"].items():
    got = s.column(int(c)).converted_type
    assert got == want, (c, got, want)

try:
    import duckdb
except ImportError:
    print("ok (no duckdb)")
    sys.exit(0)

con = duckdb.connect()
exprs = []
for col in columns:
    q = '"' + col["name"] + '"'
    mode = col["mode"]
    if mode.startswith("ts"):
        q = "epoch_" + mode[3:] + "(" + q + ")"
    elif mode == "bin":
        q = "lower(hex(" + q + "))"
    exprs.append(q)
rows = con.execute("SELECT " + ", ".join(exprs) + " FROM read_parquet(?)", [path]).fetchall()
assert len(rows) == sum(groups)
for c, col in enumerate(columns):
    got = [r[c] for r in rows]
    assert got == col["want"], ("duckdb", col["name"], got, col["want"])
meta = con.execute(
    "SELECT row_group_id, path_in_schema, stats_min_value, stats_max_value, stats_null_count "
    "FROM parquet_metadata(?)", [path]).fetchall()
stats = {(r[0], r[1]): r[2:] for r in meta}
i8 = columns[0]["want"]
assert stats[(0, "i8")] == (str(min(i8[:4])), str(max(i8[:4])), 0), stats[(0, "i8")]
s_want = [v for v in columns[[x["name"] for x in columns].index("s")]["want"][4:10]]
assert stats[(1, "s")][:2] == (min(s_want), max(s_want)), stats[(1, "s")]
ni = columns[[x["name"] for x in columns].index("ni")]["want"]
assert stats[(2, "ni")][2] == sum(1 for v in ni[10:] if v is None), stats[(2, "ni")]
print("ok")
"#;

#[test]
fn pyarrow_and_duckdb_read_every_mapping_back() {
    let Some(python) = python_with("pyarrow") else {
        return;
    };
    let specs = specs();
    let built = build(&specs);
    let l = layout(&built.table).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cells.parquet");
    std::fs::write(&path, fill(&built, &l)).unwrap();

    let index = |name: &str| specs.iter().position(|s| s.column.name == name).unwrap();
    // Parquet row groups: the table's groups with rows.
    let rg = |g: usize| GROUPS[..g].iter().filter(|&&n| n > 0).count();
    let stored: Vec<Value> = STORED
        .iter()
        .map(|(g, name, codec)| {
            json!([
                rg(*g),
                index(name),
                match codec {
                    Codec::Zstd => "ZSTD",
                    Codec::Lz4 => "LZ4",
                }
            ])
        })
        .collect();
    let logical = json!({
        index("i8").to_string(): "Int(bitWidth=8, isSigned=true)",
        index("u64").to_string(): "Int(bitWidth=64, isSigned=false)",
        index("ms").to_string(): "Timestamp(isAdjustedToUTC=false, timeUnit=milliseconds, is_from_converted_type=false, force_set_converted_type=false)",
        index("day").to_string(): "None",
        index("s").to_string(): "String",
        index("sec").to_string(): "None",
        index("f64").to_string(): "None",
    });
    let converted = json!({
        index("i8").to_string(): "INT_8",
        index("u16").to_string(): "UINT_16",
        index("u64").to_string(): "UINT_64",
        index("day").to_string(): "NONE",
        index("s").to_string(): "UTF8",
        index("ns").to_string(): "NONE",
        index("c3").to_string(): "NONE",
    });
    let spec = json!({
        "path": path,
        "groups": GROUPS.iter().filter(|&&n| n > 0).collect::<Vec<_>>(),
        "nan_group": rg(NAN_GROUP),
        "stored": stored,
        "logical": logical,
        "converted": converted,
        "columns": specs.iter().map(|s| json!({
            "name": s.column.name,
            "type": s.ty,
            "nullable": s.column.nullable || s.column.labels.is_some(),
            "mode": s.mode,
            "stats": s.stats,
            "want": s.cells.iter().map(|c| c.want.clone()).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    });
    let spec_path = dir.path().join("spec.json");
    std::fs::write(&spec_path, spec.to_string()).unwrap();
    let out = run_python(&python, CHECK, &[&spec_path]);
    assert!(out.trim().starts_with("ok"), "{out}");
    if out.contains("no duckdb") {
        skip_part("the DuckDB half of the Parquet check: the test Python has no duckdb");
    }
}

/// 3 INT64 columns × 2 row groups × 5000 rows: every chunk is 40 KB, so every chunk
/// starts on a 4 KiB page (the mount's page cache reads whole pages: a reader of one
/// column then touches no page of another's). pyarrow and DuckDB read the values
/// through the padding, and pyarrow's offsets are the aligned starts.
#[test]
fn large_chunks_start_on_4_kib_and_readers_skip_the_padding() {
    let Some(python) = python_with("pyarrow") else {
        return;
    };
    const ROWS: u64 = 5000;
    let value = |c: u64, r: u64| (c as i64 + 1) * 1_000_003 * r as i64 - 7;
    let columns: Vec<Column> = (0..3)
        .map(|c| column(&format!("c{c}"), Datatype::Int64, 1, false))
        .collect();
    let bins: Vec<Vec<u8>> = (0..3)
        .map(|c| {
            (0..2 * ROWS)
                .flat_map(|r| value(c, r).to_le_bytes())
                .collect()
        })
        .collect();
    let groups = (0..2)
        .map(|g| Group {
            rows: ROWS,
            chunks: (0..3)
                .map(|c| {
                    let at = |r: u64| value(c, r).to_le_bytes().to_vec();
                    Chunk {
                        bounds: Some(Bounds {
                            min: at(g * ROWS),
                            max: at(g * ROWS + ROWS - 1),
                        }),
                        ..Chunk::default()
                    }
                })
                .collect(),
        })
        .collect();
    let table = Table {
        columns,
        groups,
        key_value: Vec::new(),
        created_by: "fragfs test".into(),
    };
    let l = layout(&table).unwrap();
    let built = Built {
        table,
        cells: Vec::new(),
        bins,
        stored: HashMap::new(),
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cells.parquet");
    std::fs::write(&path, fill(&built, &l)).unwrap();
    let check = r#"
import sys
import pyarrow.parquet as pq
path = sys.argv[1]
rows = 5000
def value(c, r):
    return (c + 1) * 1_000_003 * r - 7
want = {"c%d" % c: [value(c, r) for r in range(2 * rows)] for c in range(3)}
md = pq.ParquetFile(path).metadata
assert md.num_row_groups == 2 and md.num_columns == 3, md
for g in range(2):
    for c in range(3):
        cc = md.row_group(g).column(c)
        assert cc.data_page_offset % 4096 == 0, (g, c, cc.data_page_offset)
        assert not cc.has_dictionary_page, cc
        st = cc.statistics
        assert (st.min, st.max) == (value(c, g * rows), value(c, g * rows + rows - 1)), st
assert pq.read_table(path).to_pydict() == want
for c in range(3):
    assert pq.read_table(path, columns=["c%d" % c]).column(0).to_pylist() == want["c%d" % c]
try:
    import duckdb
except ImportError:
    print("ok (no duckdb)")
    sys.exit(0)
got = duckdb.connect().execute("SELECT c0, c1, c2 FROM read_parquet(?)", [path]).fetchall()
assert [list(r) for r in got] == [list(x) for x in zip(want["c0"], want["c1"], want["c2"])]
print("ok")
"#;
    let out = run_python(&python, check, &[&path]);
    assert!(out.trim().starts_with("ok"), "{out}");
    if out.contains("no duckdb") {
        skip_part("the DuckDB half of the aligned Parquet check: the test Python has no duckdb");
    }
}
