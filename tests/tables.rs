//! `cells.parquet` and `cells.arrow`, beside every `cells.csv` (each fragment folder,
//! `latest/`, `at/<T>/`, group members, dimension labels), read by real readers through
//! real mounts and over `fragfs serve`'s HTTP door:
//!
//! * tests/check_tables.py (pyarrow: `pq.read_table`, `pa.ipc.open_file` of a memory
//!   map) over every fixture and the shared corpus: columns, rows, types, row groups,
//!   statistics, key-value metadata and sizes, every cell against the field folders'
//!   `values.bin`/`offsets.bin`/`validity.bin` (and enumerations' labels);
//! * DuckDB SQL (through the mount and over HTTP with its httpfs extension), polars
//!   (`scan_parquet` with a filter, `scan_ipc` memory-mapped), pandas (categoricals of
//!   enumerated attributes; TileDB-SOMA's `obs`/`var` as tiledbsoma and TileDB-Py read
//!   them), PySpark in local mode, Dask on two worker processes over HTTP: their answers
//!   equal what the field files give;
//! * what a selective read costs, counted in tiles decoded by an in-process mount: a
//!   filter on a sorted dimension decodes only the tiles of the row groups it matches,
//!   a read of one column only that column's tiles.

mod common;

use std::path::{Path, PathBuf};

use common::mounting::*;
use common::*;
use serde_json::{json, Value};

/// Runs tests/check_tables.py over the arrays with merged reads (every state where
/// `every_state`, else the latest and the first earlier one); returns the arrays checked.
fn check(
    python: &str,
    arrays: &[(PathBuf, Value)],
    merged: &[(PathBuf, Value)],
    every_state: bool,
) -> usize {
    let (stdout, given) = check_in_batches(python, "check_tables.py", merged, arrays, |_, _| {
        Some(json!({"every_state": every_state}))
    });
    let ok = stdout.lines().filter(|l| l.starts_with("ok ")).count();
    assert_eq!(ok, given, "{stdout}");
    ok
}

#[test]
fn fixtures_tables_hold_the_field_files_cells() {
    if !fuse_available("pyarrow through the mount") {
        return;
    }
    let Some(python) = python_with("pyarrow") else {
        return;
    };
    let mut total = 0;
    for dir in [
        fixtures(),
        features(),
        hilbert_fixtures(),
        soma_fixtures(),
        repo().join("tests/fixtures/zarr"),
        repo().join("tests/fixtures/consolidation"),
    ] {
        let n = check(&python, &expected_files(&dir), &merged_files(&dir), true);
        assert!(n > 0, "{}: nothing checked", dir.display());
        total += n;
    }
    println!(
        "{total} fixtures: cells.parquet and cells.arrow of every folder equal its field files"
    );
    assert!(total >= 60, "{total}");
}

#[test]
fn shared_corpus_tables_hold_the_field_files_cells() {
    let Some(corpus) = shared_or_skip(shared_corpus()) else {
        return;
    };
    if !fuse_available("pyarrow through the mount") {
        return;
    }
    let Some(python) = python_with("pyarrow") else {
        return;
    };
    let (arrays, merged) = corpus_files(&corpus);
    let n = check(&python, &arrays, &merged, false);
    println!("{n} corpus arrays: every fragment's, the latest and an earlier state's tables equal the field files");
    assert!(n > 400, "{n}");
}

/// Group members: the feature fixture `soma_experiment` mounted as the group it is,
/// each member array's folder (`obs/`, `ms/RNA/var/`, `ms/RNA/X/data/`) checked by
/// tests/check_tables.py at every state, as through a mount of the array alone.
#[test]
fn group_members_tables_hold_the_field_files_cells() {
    if !fuse_available("pyarrow through a group mount") {
        return;
    }
    let Some(python) = python_with("pyarrow") else {
        return;
    };
    let m = TreeMount::new(open_source_tree(
        &features().join("soma_experiment"),
        16 << 20,
    ));
    let jsons = tempfile::tempdir().unwrap();
    let mut specs = Vec::new();
    for (i, (array, merged)) in merged_files(&features()).into_iter().enumerate() {
        let Ok(rel) = array.strip_prefix(features().join("soma_experiment")) else {
            continue;
        };
        let path = jsons.path().join(format!("{i}.merged.json"));
        std::fs::write(&path, serde_json::to_vec(&merged).unwrap()).unwrap();
        specs.push(json!({
            "mount": m.path().join(rel),
            "array": array,
            "merged": path,
            "every_state": true,
        }));
    }
    assert!(specs.len() >= 3, "{specs:?}");
    let spec = jsons.path().join("spec.json");
    std::fs::write(&spec, serde_json::to_vec(&specs).unwrap()).unwrap();
    let out = run_ok(
        std::process::Command::new(&python)
            .arg(repo().join("tests/check_tables.py"))
            .arg(&spec),
    );
    assert_eq!(
        out.lines().filter(|l| l.starts_with("ok ")).count(),
        specs.len(),
        "{out}"
    );
}

/// A sparse array written here by TileDB-Py: `cells` cells of a sorted int64 dimension
/// `x` (0, 1, 2...) in one fragment at timestamp 1, with the capacity `capacity` (so
/// tile `k` holds x in `k*capacity..(k+1)*capacity`, ranges disjoint), and six
/// attributes whose values are functions of x (see [`EXPECT`]): `a` int32, `b`
/// float64, `c` int64, `s` UTF-8 strings, `u` uint16, `f` nullable float32. Every field
/// is ZSTD-compressed: alone (a writer may copy such tiles as stored compressed pages,
/// nothing decoded), or after a byte shuffle (`decoded`: every tile a read touches is
/// decoded, so the decode counter counts them).
fn table_array(
    python: &str,
    cells: u64,
    capacity: u64,
    decoded: bool,
) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let array = dir.path().join("table");
    let script = r#"
import sys, numpy as np, pyarrow as pa, tiledb
uri, cells, capacity, decoded = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
z = tiledb.FilterList(([tiledb.ByteShuffleFilter()] if decoded else []) + [tiledb.ZstdFilter()])
dom = tiledb.Domain(tiledb.Dim(name="x", domain=(0, 1 << 40), tile=1 << 20, dtype=np.int64,
                               filters=z))
attrs = [tiledb.Attr("a", np.int32, filters=z), tiledb.Attr("b", np.float64, filters=z),
         tiledb.Attr("c", np.int64, filters=z), tiledb.Attr("s", str, var=True, filters=z),
         tiledb.Attr("u", np.uint16, filters=z),
         tiledb.Attr("f", np.float32, nullable=True, filters=z)]
tiledb.Array.create(uri, tiledb.ArraySchema(domain=dom, sparse=True, attrs=attrs,
                                            capacity=capacity))
x = np.arange(cells, dtype=np.int64)
f = (x * 0.5).astype(np.float32)
with tiledb.open(uri, "w", timestamp=1) as A:
    A[x] = {"a": (x * 7 % 1000 - 500).astype(np.int32), "b": x / 3.0, "c": x * x,
            "s": np.array(["s%d" % (v % 100) for v in x], dtype=object),
            "u": (x % 65536).astype(np.uint16),
            "f": pa.array(f, mask=(x % 10 == 0), type=pa.float32())}
"#;
    run_ok(
        std::process::Command::new(python)
            .args(["-c", script])
            .arg(&array)
            .args([
                cells.to_string(),
                capacity.to_string(),
                (decoded as u8).to_string(),
            ]),
    );
    (dir, array)
}

/// The values of [`table_array`]'s columns as Python functions of a numpy array `x`.
const EXPECT: &str = r#"
import numpy as np
def expect(x):
    x = np.asarray(x, dtype=np.int64)
    return {"x": x, "a": (x * 7 % 1000 - 500).astype(np.int32), "b": x / 3.0, "c": x * x,
            "s": ["s%d" % (v % 100) for v in x], "u": (x % 65536).astype(np.uint16),
            "f": [None if v % 10 == 0 else float(np.float32(v * 0.5)) for v in x]}
"#;

/// The one fragment folder's name, and per field of tiles.json the chunks of its tiles
/// (summed over the tile's files), read through a mount of its own (so the mounts
/// that count decodes start cold).
fn fragment_and_chunks(array: &Path) -> (String, usize, std::collections::BTreeMap<String, u64>) {
    let m = InProcess::new(array, &json!({}), 16 << 20, 2);
    let fragments = Mounted(m.path().to_path_buf()).fragments().unwrap();
    assert_eq!(fragments.len(), 1, "{fragments:?}");
    let tiles: Value = serde_json::from_slice(
        &std::fs::read(
            m.path()
                .join(format!("fragments/{}/tiles.json", fragments[0])),
        )
        .unwrap(),
    )
    .unwrap();
    let mut chunks = std::collections::BTreeMap::new();
    let mut count = 0;
    for (field, list) in tiles["fields"].as_object().unwrap() {
        let list = list.as_array().unwrap();
        count = list.len();
        let n: u64 = list
            .iter()
            .flat_map(|t| t.as_object().unwrap().values())
            .filter_map(|f| f.get("chunks").and_then(Value::as_u64))
            .sum();
        chunks.insert(field.clone(), n);
    }
    (fragments[0].clone(), count, chunks)
}

/// DuckDB's SQL over `cells.parquet` through the mount and over the HTTP door of
/// `fragfs serve` (its httpfs extension from the pinned pip package, nothing
/// downloaded): `count(*)` and `sum(a)` of a range of `x` equal the same computed from
/// the field files.
#[test]
fn duckdb_sql_over_the_mount_and_over_http_equals_the_field_files() {
    if !fuse_available("DuckDB through the mount") {
        return;
    }
    let Some(python) = python_with("duckdb") else {
        return;
    };
    let (_dir, array) = table_array(&python, 300_000, 10_000, false);
    let m = InProcess::new(&array, &json!({}), 64 << 20, 2);
    let (_server, addr) = fragfs_serve(&array, &["--http", "127.0.0.1:0"]);
    let script = r#"
# np.fromfile would trust the size a file shows before it is read: read() does not.
import glob, os, sys, duckdb, duckdb_extension_httpfs, numpy as np
mnt, url = sys.argv[1], sys.argv[2]
x = np.frombuffer(open(mnt + "/latest/x/values.bin", "rb").read(), dtype="<i8")
a = np.frombuffer(open(mnt + "/latest/a/values.bin", "rb").read(), dtype="<i4")
lo, hi = 12345, 201234
sel = (x >= lo) & (x <= hi)
want = (int(sel.sum()), int(a[sel].astype(np.int64).sum()))
assert want[0] == hi - lo + 1, want
con = duckdb.connect()
con.sql("SET autoinstall_known_extensions=false")
con.sql("SET autoload_known_extensions=false")
q = "SELECT count(*), sum(a) FROM read_parquet('%s') WHERE x BETWEEN " + "%d AND %d" % (lo, hi)
got = con.sql(q % (mnt + "/latest/cells.parquet")).fetchone()
assert tuple(got) == want, ("mount", got, want)
print("ok duckdb mount", got)
ext = glob.glob(os.path.join(os.path.dirname(duckdb_extension_httpfs.__file__),
                             "extensions", "*", "httpfs.duckdb_extension"))
assert ext, "duckdb-extension-httpfs ships no httpfs.duckdb_extension"
con.sql("INSTALL '%s'" % ext[0])
con.sql("LOAD httpfs")
got = con.sql(q % (url + "/latest/cells.parquet")).fetchone()
assert tuple(got) == want, ("http", got, want)
print("ok duckdb http", got)
# The fragment's file too, over HTTP.
frag = sorted(os.listdir(mnt + "/fragments"))[0]
got = con.sql(q % ("%s/fragments/%s/cells.parquet" % (url, frag))).fetchone()
assert tuple(got) == want, ("http fragment", got, want)
print("ok duckdb http fragment", got)
"#;
    let url = format!("http://{addr}");
    let out = run_python(&python, script, &[m.path(), Path::new(&url)]);
    for line in [
        "ok duckdb mount",
        "ok duckdb http",
        "ok duckdb http fragment",
    ] {
        assert!(out.contains(line), "{out}");
    }
}

/// polars: `scan_parquet(...).filter(x < k).collect()` and `scan_ipc(...,
/// memory_map=True)` give the rows the field files hold, in their order.
#[test]
fn polars_scans_give_the_field_files_rows() {
    if !fuse_available("polars through the mount") {
        return;
    }
    let Some(python) = python_with("polars") else {
        return;
    };
    let (_dir, array) = table_array(&python, 50_000, 4_000, false);
    let m = InProcess::new(&array, &json!({}), 64 << 20, 2);
    let script = format!(
        "{EXPECT}{}",
        r#"
import os, sys, polars as pl
mnt = sys.argv[1]
k = 17_000
want = expect(np.arange(k))
frag = sorted(os.listdir(mnt + "/fragments"))[0]
for folder in ("latest", "fragments/" + frag):
    for how, frame in (
        ("scan_parquet", pl.scan_parquet(mnt + "/%s/cells.parquet" % folder)),
        ("scan_ipc", pl.scan_ipc(mnt + "/%s/cells.arrow" % folder, memory_map=True)),
    ):
        got = frame.filter(pl.col("x") < k).collect()
        assert got.columns == ["x", "a", "b", "c", "s", "u", "f"], (how, got.columns)
        assert got.height == k, (how, folder, got.height)
        for name, values in want.items():
            g = got[name].to_list()
            w = values.tolist() if hasattr(values, "tolist") else values
            assert g == w, (how, folder, name, g[:5], w[:5])
        print("ok polars", how, folder, got.height)
"#
    );
    let out = run_python(&python, &script, &[m.path()]);
    assert_eq!(out.matches("ok polars").count(), 4, "{out}");
}

/// Row-group statistics work: on a fragment of 60 tiles (x sorted, so each tile's
/// range is disjoint from the others'), polars' `filter(x < k)` over the fragment's
/// `cells.parquet`, matching 2 tiles, decodes at most the chunks of 4 tiles (the 2, and
/// one on each side that the kernel's read-around of a page fault may touch), where
/// reading the whole file decodes every chunk of every tile.
#[test]
fn a_filter_decodes_only_the_tiles_of_the_row_groups_it_matches() {
    if !fuse_available("polars row-group pruning") {
        return;
    }
    let Some(python) = python_with("polars") else {
        return;
    };
    let capacity = 20_000u64;
    let tiles = 60u64;
    let (_dir, array) = table_array(&python, capacity * tiles, capacity, true);
    let (fragment, count, chunks) = fragment_and_chunks(&array);
    assert_eq!(count as u64, tiles, "{chunks:?}");
    let all: u64 = chunks.values().sum();
    let per_tile = all / tiles;
    let file = format!("fragments/{fragment}/cells.parquet");
    let read = |filter: bool| {
        let m = InProcess::new(&array, &json!({}), 256 << 20, 2);
        let script = format!(
            "{EXPECT}{}",
            r#"
import sys, polars as pl
path, filtered = sys.argv[1], sys.argv[2] == "1"
k = 30_000
frame = pl.scan_parquet(path)
got = (frame.filter(pl.col("x") < k) if filtered else frame).collect()
n = k if filtered else 20_000 * 60
assert got.height == n, got.height
assert got["x"].to_list() == list(range(n))
assert got["c"].to_list() == expect(np.arange(n))["c"].tolist()
print("rows", got.height)
"#
        );
        let flag = PathBuf::from(if filter { "1" } else { "0" });
        let out = run_python(&python, &script, &[&m.path().join(&file), &flag]);
        assert!(out.contains("rows"), "{out}");
        m.view.chunks_decoded()
    };
    let whole = read(false);
    let filtered = read(true);
    println!("chunks: {all} in {tiles} tiles; whole read {whole}, filtered {filtered}");
    assert!(
        whole >= all,
        "the whole read decoded {whole} of {all} chunks"
    );
    assert!(
        filtered <= 4 * per_tile,
        "x < 30000 (tiles 0 and 1 of {tiles}) decoded {filtered} chunks; a tile has {per_tile}, the file {all}"
    );
}

/// Projection: pyarrow reading one column of six (`columns=["c"]`) decodes the chunks
/// of that column's tiles and none of the other fields'. The file is read through a
/// descriptor with `POSIX_FADV_RANDOM`, so the kernel reads only the pages asked for.
#[test]
fn reading_one_column_decodes_only_its_tiles() {
    if !fuse_available("projection through the mount") {
        return;
    }
    let Some(python) = python_with("pyarrow") else {
        return;
    };
    let capacity = 20_000u64;
    let (_dir, array) = table_array(&python, capacity * 20, capacity, true);
    let (fragment, _, chunks) = fragment_and_chunks(&array);
    let all: u64 = chunks.values().sum();
    let script = format!(
        "{EXPECT}{}",
        r#"
import os, sys, pyarrow as pa, pyarrow.parquet as pq
path, cols = sys.argv[1], sys.argv[2].split(",")
fd = os.open(path, os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
with os.fdopen(fd, "rb", buffering=0) as f:
    if cols == ["-"]:
        # The file opened, its footer read, no column.
        print("columns", pq.ParquetFile(f).metadata.num_rows)
        sys.exit(0)
    t = pq.read_table(f, columns=cols if cols != ["*"] else None, pre_buffer=False)
n = 20_000 * 20
assert t.num_rows == n, t.num_rows
want = expect(np.arange(n))
for name in t.column_names:
    assert t.column(name).to_pylist() == (want[name].tolist() if hasattr(want[name], "tolist") else want[name]), name
print("columns", t.column_names)
"#
    );
    let read = |cols: &str| {
        let m = InProcess::new(&array, &json!({}), 256 << 20, 2);
        let path = m.path().join(format!("fragments/{fragment}/cells.parquet"));
        let out = run_python(&python, &script, &[&path, Path::new(cols)]);
        assert!(out.contains("columns"), "{out}");
        m.view.chunks_decoded()
    };
    // What opening the file decodes (what its layout needs that metadata lacks), then
    // each read on a mount of its own.
    let opened = read("-");
    let whole = read("*");
    let one = read("c");
    println!("chunks per field {chunks:?}; opening {opened}, all columns {whole}, column c {one}");
    assert!(
        whole >= all,
        "reading every column decoded {whole} of {all} chunks"
    );
    assert!(
        one.saturating_sub(opened) <= chunks["c"],
        "column c has {} chunks; reading it decoded {one}, opening the file {opened} (every field: {all})",
        chunks["c"]
    );
}

/// pandas: `read_parquet` of the enumerations fixture's `latest/cells.parquet` gives
/// categoricals for the attributes with string labels (the enumeration's order flag
/// kept), and every enumerated column holds the labels TileDB-Py reads (`df[:]`).
#[test]
fn pandas_reads_enumerated_attributes_as_categoricals() {
    if !fuse_available("pandas through the mount") {
        return;
    }
    let Some(python) = python_with("pyarrow") else {
        return;
    };
    let (array, _) = feature("enumerations");
    let m = mount_feature("enumerations");
    let script = r#"
import json, os, sys, pandas as pd, tiledb
mnt, uri = sys.argv[1], sys.argv[2]
got = pd.read_parquet(mnt + "/latest/cells.parquet")
with tiledb.open(uri) as A:
    want = A.df[:]
    enums = {A.schema.attr(i).name: A.schema.attr(i).enum_label for i in range(A.schema.nattr)}
    ordered = {a: A.enum(e).ordered for a, e in enums.items() if e}
    strings = {a: all(isinstance(v, (str, bytes)) for v in A.enum(e).values())
               for a, e in enums.items() if e}
enumerated = [a for a, e in enums.items() if e]
assert any(strings.values()), strings
for a in enumerated:
    col = got[a]
    # pyarrow restores no dictionary of numbers from Parquet: those read as values.
    if strings[a]:
        assert isinstance(col.dtype, pd.CategoricalDtype), (a, col.dtype)
    if isinstance(col.dtype, pd.CategoricalDtype):
        assert col.cat.ordered == ordered[a], (a, col.cat.ordered, ordered[a])
    w = want[a]
    # TileDB-Py reads STRING_ASCII as bytes; the table's string column holds str.
    wl = [None if pd.isna(v) else v.decode() if isinstance(v, bytes) else v for v in w.astype(object)]
    gl = [None if pd.isna(v) else v for v in col.astype(object)]
    assert gl == wl, (a, gl[:10], wl[:10])
    if isinstance(w.dtype, pd.CategoricalDtype) and isinstance(col.dtype, pd.CategoricalDtype):
        wc = [c.decode() if isinstance(c, bytes) else c for c in w.cat.categories]
        assert list(col.cat.categories) == wc, (a, list(col.cat.categories), wc)
    print("ok categorical", a, len(col))
for name in want.columns:
    assert name in got.columns, (name, list(got.columns))
"#;
    let out = run_python(&python, script, &[m.path(), &array]);
    assert!(out.contains("ok categorical"), "{out}");
}

/// TileDB-SOMA's `obs` and `ms/RNA/var`, read by pandas from `latest/cells.parquet` of
/// the experiment mounted as a group: each column equals what tiledbsoma read when the
/// fixture was written (`experiment.X.labels.json`, its `read().concat()`), with the
/// categorical columns of string categories as categoricals of its categories, and what TileDB-Py's
/// `df[:]` reads now.
#[test]
fn pandas_reads_soma_dataframes_as_tiledbsoma_and_tiledb_py_do() {
    if !fuse_available("pandas through the mount") {
        return;
    }
    let Some(python) = python_with("pyarrow") else {
        return;
    };
    let tree = open_source_tree(&soma_fixtures().join("experiment"), 16 << 20);
    let m = TreeMount::new(tree);
    let script = r#"
import json, sys, pandas as pd, tiledb
mnt, fixtures = sys.argv[1], sys.argv[2]
soma = json.load(open(fixtures + "/experiment.soma.json"))
checked = 0
for name, files in soma["arrays"].items():
    rel = name.split("/", 1)[1]
    labels = json.load(open(fixtures + "/" + files["labels_json"]))
    state = [s for s in labels["states"] if s["timestamp"] is None][0]
    rows = state["tiledbsoma"]["rows"]
    cats = state["tiledbsoma"]["enumerations"]
    got = pd.read_parquet(mnt + "/" + rel + "/latest/cells.parquet")
    got = got.sort_values("soma_joinid").reset_index(drop=True)
    with tiledb.open(fixtures + "/" + name) as A:
        py = A.df[:].sort_values("soma_joinid").reset_index(drop=True)
    for col, want in rows.items():
        assert col in got.columns, (rel, col, list(got.columns))
        g = [None if pd.isna(v) else v for v in got[col].astype(object)]
        assert g == want, (rel, col, "tiledbsoma", g, want)
        p = [None if pd.isna(v) else v.decode() if isinstance(v, bytes) else v
             for v in py[col].astype(object)]
        assert g == p, (rel, col, "TileDB-Py", g, p)
        # Categories of strings come back as categoricals (pyarrow restores no
        # dictionary of numbers from Parquet: those read as their values, above).
        if col in cats and all(isinstance(c, str) for c in cats[col]):
            assert isinstance(got[col].dtype, pd.CategoricalDtype), (rel, col, got[col].dtype)
        if isinstance(got[col].dtype, pd.CategoricalDtype):
            assert list(got[col].cat.categories) == cats[col], (rel, col, list(got[col].cat.categories), cats[col])
    checked += 1
    print("ok soma", rel, len(got))
assert checked >= 2, checked
"#;
    let out = run_python(&python, script, &[m.path(), &soma_fixtures()]);
    assert_eq!(out.matches("ok soma").count(), 2, "{out}");
}

/// PySpark in local mode reads `latest/cells.parquet` through the mount: its count and
/// sums equal the field files'.
#[test]
fn spark_reads_the_table_through_the_mount() {
    if !fuse_available("Spark through the mount")
        || !tool_available(
            "java",
            "PySpark's local mode (scripts/test.sh installs Java)",
        )
    {
        return;
    }
    let Some(python) = python_with("pyspark") else {
        return;
    };
    let (_dir, array) = table_array(&python, 100_000, 10_000, false);
    let m = InProcess::new(&array, &json!({}), 64 << 20, 2);
    let script = r#"
import os, sys, numpy as np
from pyspark.sql import SparkSession, functions as F
mnt = sys.argv[1]
x = np.frombuffer(open(mnt + "/latest/x/values.bin", "rb").read(), dtype="<i8")
a = np.frombuffer(open(mnt + "/latest/a/values.bin", "rb").read(), dtype="<i4")
c = np.frombuffer(open(mnt + "/latest/c/values.bin", "rb").read(), dtype="<i8")
spark = (SparkSession.builder.master("local[1]").appName("fragfs")
         .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "1")
         .getOrCreate())
def check(path):
    # Spark takes the length a listing gives (Hadoop's getFileStatus) before it opens
    # the file.
    listed = os.stat(path).st_size
    try:
        df = spark.read.parquet(path)
        n = df.count()
    except Exception as e:
        causes = [l.strip() for l in str(e).splitlines() if l.strip().startswith("Caused by")]
        raise AssertionError("Spark on %s (size %d listed): %s"
                             % (path, listed, (causes or [str(e).strip()])[-1][:300]))
    assert n == len(x), (n, len(x))
    sums = df.agg(F.sum("a"), F.sum("c"), F.sum("x")).collect()[0]
    want = (int(a.astype(np.int64).sum()), int(c.sum()), int(x.sum()))
    assert tuple(int(v) for v in sums) == want, (sums, want)
    k = df.filter(F.col("x") < 12345).count()
    assert k == int((x < 12345).sum()), k
    return n, sums

try:
    # The one fragment's table: sized from metadata, Spark reads it as listed.
    frag = mnt + "/fragments/" + sorted(os.listdir(mnt + "/fragments"))[0]
    assert os.stat(frag + "/cells.parquet").st_size > 0
    check(frag + "/cells.parquet")
    # A sparse state's table is sized when first opened (counting its cells is a merge
    # pass, never done for a listing: docs/tables.md): opened once, Spark reads it.
    path = mnt + "/latest/cells.parquet"
    open(path, "rb").close()
    assert os.stat(path).st_size > 0
    n, sums = check(path)
    print("ok spark", n, tuple(sums))
finally:
    spark.stop()
"#;
    // Spark may write beside its working directory: a temporary one.
    let cwd = tempfile::tempdir().unwrap();
    let out = run_ok(
        std::process::Command::new(&python)
            .current_dir(cwd.path())
            .env("SPARK_LOCAL_IP", "127.0.0.1")
            .args(["-c", script])
            .arg(m.path()),
    );
    assert!(out.contains("ok spark"), "{out}");
}

/// Dask's `read_parquet` of `latest/cells.parquet` over the HTTP door, computed on a
/// LocalCluster of two worker processes, equals pandas' read of the same URL (and
/// holds the array's cells).
#[test]
fn dask_reads_the_table_over_http_on_two_workers() {
    let Some(python) = python_with("distributed") else {
        return;
    };
    let (_dir, array) = table_array(&python, 150_000, 10_000, false);
    let (_server, addr) = fragfs_serve(&array, &["--http", "127.0.0.1:0"]);
    let script = format!(
        "{EXPECT}{}",
        r#"
import sys, pandas as pd, dask.dataframe as dd
from dask.distributed import Client, LocalCluster
url = sys.argv[1] + "/latest/cells.parquet"
if __name__ == "__main__":
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster):
        ddf = dd.read_parquet(url)
        got = ddf.compute()
        total = int(ddf["c"].sum().compute())
    ref = pd.read_parquet(url)
    assert len(got) == len(ref) == 150_000, (len(got), len(ref))
    got, ref = got.reset_index(drop=True), ref.reset_index(drop=True)
    assert list(got.columns) == list(ref.columns), (list(got.columns), list(ref.columns))
    for name in ref.columns:
        g, r = got[name], ref[name]
        if r.dtype == object or pd.api.types.is_string_dtype(g.dtype):
            # Dask may hold strings as pyarrow strings: compared as values.
            assert g.astype(object).tolist() == r.astype(object).tolist(), name
        else:
            assert g.dtype == r.dtype, (name, g.dtype, r.dtype)
            assert np.array_equal(g.to_numpy(), r.to_numpy(), equal_nan=g.dtype.kind == "f"), name
    assert total == int(expect(np.arange(150_000))["c"].sum()), total
    print("ok dask", len(got), total)
"#
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("dask_tables.py");
    std::fs::write(&file, script).unwrap();
    let out = run_ok(
        std::process::Command::new(&python)
            .arg(&file)
            .arg(format!("http://{addr}")),
    );
    assert!(out.contains("ok dask"), "{out}");
}
