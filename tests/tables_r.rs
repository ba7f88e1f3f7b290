//! R's arrow reads `cells.parquet` and `cells.arrow` through real mounts, as pyarrow
//! does: every column of every type (the `merge_fill_types` fixture: integers of every
//! width, floats, booleans, timestamps, fixed-size binary and lists, strings, blobs,
//! nullable fields), enumerations as factors (ordered where TileDB says so), a fragment's
//! table and merged states' tables, and one column read alone.
//!
//! R comes from Debian unstable in a root folder of its own (scripts/install_r_arrow.sh,
//! run by scripts/test.sh, which sets FRAGFS_TEST_R_ROOT): Debian 12 has no
//! r-cran-arrow and CRAN is not reachable. `Rscript` runs there with chroot, in a
//! private mount namespace where the mounts are bound under its `/mnt`
//! (tests/check_tables.R prints every value in a canonical form); pyarrow, which
//! tests/tables.rs holds to the field files cell by cell, reads the same files, and
//! every value must agree.

mod common;

use std::path::{Path, PathBuf};

use common::mounting::*;
use common::*;

/// The R root folder, or why the test cannot run (a failure under CI).
fn r_root() -> Option<PathBuf> {
    let root = std::env::var_os("FRAGFS_TEST_R_ROOT").map(PathBuf::from);
    match root {
        Some(root) if root.join("usr/bin/Rscript").exists() => Some(root),
        _ => {
            let reason = "no R with arrow (FRAGFS_TEST_R_ROOT, set by scripts/test.sh from \
                          scripts/install_r_arrow.sh, which needs root)";
            if std::env::var("CI").as_deref() == Ok("true") {
                panic!("CI=true but {reason}");
            }
            skip(reason);
            None
        }
    }
}

/// Runs tests/check_tables.R in `root` over `files`, each a path under one of `mounts`
/// (bound at `/mnt/0`, `/mnt/1`, ... in the order given, on a tmpfs over the root's
/// `/mnt`, so the root folder itself is never written); its JSON output.
fn run_r(root: &Path, mounts: &[&Path], files: &[String]) -> String {
    let script = r#"
set -e
root=$1; count=$2; shift 2
mount -t tmpfs tmpfs "$root/mnt"
mount -t proc proc "$root/proc"
cp "$0" "$root/mnt/check_tables.R"
i=0
while [ "$i" -lt "$count" ]; do
    mkdir "$root/mnt/$i"
    mount --bind "$1" "$root/mnt/$i"
    i=$((i + 1)); shift
done
exec chroot "$root" Rscript /mnt/check_tables.R "$@"
"#;
    run_ok(
        std::process::Command::new("unshare")
            .args(["--mount", "--propagation", "private", "sh", "-c", script])
            .arg(repo().join("tests/check_tables.R"))
            .arg(root)
            .arg(mounts.len().to_string())
            .args(mounts)
            .args(files),
    )
}

/// Compares R's values (argv[1]: JSON) with pyarrow's read of the same files (argv[2]:
/// the host path of `/mnt`'s bound mounts, a JSON list).
const COMPARE: &str = r#"
import json, math, sys
import pyarrow as pa, pyarrow.ipc as ipc, pyarrow.parquet as pq
got = json.loads(open(sys.argv[1]).read())
mounts = json.loads(sys.argv[2])

def host(path):
    k, rest = path[len("/mnt/"):].split("/", 1)
    return mounts[int(k)] + "/" + rest

def seconds(col):
    unit = {"s": 1, "ms": 1e3, "us": 1e6, "ns": 1e9}[col.type.unit]
    return [None if v is None else v / unit for v in col.cast(pa.int64()).to_pylist()]

# R marks a missing integer with the type's smallest value (NA_integer_ is INT32_MIN,
# bit64's NA is INT64_MIN): those values, TileDB's fill values for the two types, read
# as NA in R.
R_NA_INTEGERS = {-(1 << 31), -(1 << 63)}

def same(where, t, r, p):
    if r is None and pa.types.is_integer(t) and p in R_NA_INTEGERS:
        return
    if p is None or r is None:
        assert p is None and r is None, (where, r, p)
    elif pa.types.is_fixed_size_list(t) or pa.types.is_list(t) or pa.types.is_large_list(t):
        assert len(r) == len(p), (where, r, p)
        for a, b in zip(r, p):
            same(where, t.value_type, a, b)
    elif pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        assert r == p.hex(), (where, r, p)
    elif pa.types.is_string(t) or pa.types.is_large_string(t):
        # R's strings cannot hold NUL: check_tables.R strips them.
        assert r == p.replace("\0", ""), (where, r, p)
    elif pa.types.is_boolean(t):
        assert r is p, (where, r, p)
    elif pa.types.is_timestamp(t):
        assert abs(float(r) - p) <= 1e-6, (where, r, p)
    elif pa.types.is_floating(t):
        assert float(r) == p or (math.isnan(float(r)) and math.isnan(p)), (where, r, p)
    elif pa.types.is_integer(t):
        # R holds 64-bit and unsigned 32-bit integers as integer64 or double.
        assert int(r) == p if "e" not in r and "." not in r else float(r) == float(p), (where, r, p)
    else:
        raise AssertionError("%s: no rule for %s" % (where, t))

def check_table(where, table, r):
    assert r["rows"] == table.num_rows, (where, r["rows"], table.num_rows)
    assert list(r["columns"]) == table.column_names, (where, list(r["columns"]), table.column_names)
    for name in table.column_names:
        col = table.column(name).combine_chunks()
        rc = r["columns"][name]
        t = col.type
        if pa.types.is_dictionary(t):
            assert "factor" in rc["class"], (where, name, rc["class"])
            assert rc["ordered"] == t.ordered, (where, name, rc["ordered"], t.ordered)
            # A factor's levels are strings in R, whatever the dictionary holds.
            levels = [str(v) for v in col.dictionary.to_pylist()]
            assert rc["levels"] == levels, (where, name, rc["levels"], levels)
            want, t = col.to_pylist(), t.value_type
        elif pa.types.is_timestamp(t):
            assert "POSIXct" in rc["class"], (where, name, rc["class"])
            want = seconds(col)
        else:
            want = col.to_pylist()
        assert len(rc["values"]) == len(want), (where, name)
        for k, (a, b) in enumerate(zip(rc["values"], want)):
            same("%s %s row %d" % (where, name, k), t, a, b)

types = set()
for f in got:
    path = host(f["file"])
    table = (ipc.open_file(pa.memory_map(path)).read_all() if path.endswith(".arrow")
             else pq.read_table(path))
    check_table(f["file"], table, f["table"])
    one = f["projected"]
    assert one["names"] == [one["name"]], one["names"]
    check_table(f["file"] + " column " + one["name"], table.select([one["name"]]), one["table"])
    types |= {str(t) for t in table.schema.types}
    print("ok", f["file"], table.num_rows, "rows", table.num_columns, "columns")
print("types", sorted(types))
"#;

#[test]
fn r_arrow_reads_the_tables_as_pyarrow_does() {
    if !fuse_available("R's arrow through the mount") {
        return;
    }
    let Some(python) = python_with("pyarrow") else {
        return;
    };
    let Some(root) = r_root() else {
        return;
    };
    let names = ["merge_fill_types", "enumerations", "from_pandas"];
    let mounts: Vec<InProcess> = names.iter().map(|n| mount_feature(n)).collect();
    let paths: Vec<&Path> = mounts.iter().map(|m| m.path()).collect();
    let mut files = Vec::new();
    for (k, m) in mounts.iter().enumerate() {
        for table in ["cells.parquet", "cells.arrow"] {
            files.push(format!("/mnt/{k}/latest/{table}"));
        }
        let fragments = std::fs::read_dir(m.path().join("fragments")).unwrap();
        let mut fragments: Vec<String> = fragments
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        fragments.sort();
        files.push(format!("/mnt/{k}/fragments/{}/cells.parquet", fragments[0]));
    }
    let json = run_r(&root, &paths, &files);
    let dir = tempfile::tempdir().unwrap();
    let got = dir.path().join("r.json");
    std::fs::write(&got, &json).unwrap();
    let hosts: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    let out = run_ok(
        std::process::Command::new(&python)
            .args(["-c", COMPARE])
            .arg(&got)
            .arg(serde_json::to_string(&hosts).unwrap()),
    );
    assert_eq!(
        out.lines().filter(|l| l.starts_with("ok ")).count(),
        files.len(),
        "{out}"
    );
    // The types R was held to: every kind the tables write.
    for kind in [
        "dictionary<values=string, indices=int8, ordered=0>",
        "ordered=1",
        "timestamp[ns]",
        "timestamp[ms]",
        "fixed_size_binary[3]",
        "fixed_size_list<element: int32 not null>[2]",
        "large_binary",
        "large_string",
        "uint64",
        "bool",
        "float",
    ] {
        assert!(
            out.lines()
                .any(|l| l.starts_with("types") && l.contains(kind)),
            "{kind} not among the types read: {out}"
        );
    }
}
