//! `zarr/`: dense arrays as a Zarr store, read by real readers through real mounts.
//! zarr-python 3 (as Zarr v2 and v3) against TileDB's reads (merged.json) and TileDB-Py's
//! own `A[:]` (tests/check_zarr.py: every state of the fixtures, the latest and the first
//! earlier state of the corpus arrays), xarray's dims and coordinates, GDAL's Zarr driver,
//! and a slice read decoding only the tiles of the chunks it needs. Strings, bytes and
//! cells of several values also over tests/fixtures/zarr/ (scripts/make_zarr_fixtures.py),
//! and their chunk files byte by byte.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::mounting::*;
use common::*;
use serde_json::Value;

/// Runs tests/check_zarr.py over the arrays with TileDB's merged reads, every state or
/// (`every_state` false) the latest and the first earlier one; returns the checker's
/// "ok" lines (dense arrays checked) and "not shown" lines.
fn check(
    python: &str,
    arrays: &[(PathBuf, Value)],
    merged: &[(PathBuf, Value)],
    every_state: bool,
) -> (usize, usize) {
    let (stdout, _) = check_in_batches(python, "check_zarr.py", merged, arrays, |_, _| {
        Some(serde_json::json!({ "every_state": every_state }))
    });
    let count = |start: &str| stdout.lines().filter(|l| l.starts_with(start)).count();
    (count("ok "), count("not shown "))
}

fn dense_count(merged: &[(PathBuf, Value)]) -> usize {
    merged
        .iter()
        .filter(|(_, m)| m["array_type"] == "dense")
        .count()
}

#[test]
fn fixtures_open_in_zarr_python_as_tiledb_reads_them() {
    if !fuse_available("zarr-python through the mount") {
        return;
    }
    let Some(python) = python_with("zarr") else {
        return;
    };
    let (arrays, merged) = fixture_files();
    let (ok, not_shown) = check(&python, &arrays, &merged, true);
    assert!(ok >= 10, "{ok} dense fixtures checked");
    assert_eq!(ok + not_shown, dense_count(&merged));
}

#[test]
fn shared_corpus_opens_in_zarr_python_as_tiledb_reads_it() {
    let Some(corpus) = shared_or_skip(shared_corpus()) else {
        return;
    };
    if !fuse_available("zarr-python through the mount") {
        return;
    }
    let Some(python) = python_with("zarr") else {
        return;
    };
    let (arrays, merged) = corpus_files(&corpus);
    // The latest and the first earlier state (every state is compared byte for byte by
    // tests/merged.rs; zarr/ of every state of the fixtures above).
    let (ok, not_shown) = check(&python, &arrays, &merged, false);
    println!(
        "{ok} dense corpus arrays match through zarr/ at the latest and an earlier state \
         ({not_shown} have none, said why)"
    );
    assert_eq!(ok + not_shown, dense_count(&merged));
    assert!(ok > 200, "{ok}");
}

/// Arrays written by `scripts/make_zarr_fixtures.py`: strings, bytes and cells of
/// several values, with cells no fragment wrote.
fn zarr_fixtures() -> PathBuf {
    repo().join("tests/fixtures/zarr")
}

#[test]
fn string_and_multi_value_fixtures_open_in_zarr_python_as_tiledb_reads_them() {
    if !fuse_available("zarr-python through the mount") {
        return;
    }
    let Some(python) = python_with("zarr") else {
        return;
    };
    let arrays = expected_files(&zarr_fixtures());
    let merged = merged_files(&zarr_fixtures());
    let (ok, not_shown) = check(&python, &arrays, &merged, true);
    assert_eq!((ok, not_shown), (arrays.len(), 0));
    assert_eq!(dense_count(&merged), 3);
}

/// xarray names the axes by the dimensions, with TileDB's coordinates, both versions.
#[test]
fn xarray_opens_zarr_with_dims_and_coordinates() {
    if !fuse_available("xarray through the mount") {
        return;
    }
    let Some(python) = python_with("xarray") else {
        return;
    };
    let script = r#"
import sys, warnings, json
import numpy as np, xarray as xr, tiledb
warnings.filterwarnings("ignore")
for mnt, array in zip(sys.argv[1::2], sys.argv[2::2]):
    with tiledb.open(array) as A:
        dims = [A.schema.domain.dim(i) for i in range(A.schema.ndim)]
        data = A[:]
        # One anonymous attribute comes back as the array itself.
        data = data if isinstance(data, dict) else {"": data}
        attrs = [a.name for a in A.schema if a.ncells == 1 and not a.isvar and a.dtype.kind in "iufbMm"]
    for fmt in (2, 3):
        ds = xr.open_zarr(mnt + "/zarr", consolidated=False, zarr_format=fmt, mask_and_scale=False)
        for a in attrs:
            name = a if a else "%anonymous"
            v = ds[name]
            assert list(v.dims) == [d.name for d in dims], (array, fmt, name, v.dims)
            got, want = v.values, data[a]
            assert np.array_equal(got, want, equal_nan=got.dtype.kind == "f"), (array, fmt, name)
        for d in dims:
            lo, hi = d.domain
            assert np.array_equal(ds[d.name].values, np.arange(lo, hi + 1)), (array, fmt, d.name, ds[d.name].values)
            assert ds.indexes[d.name].equals(ds[d.name].to_index())
        # Selection by TileDB coordinates, not positions.
        d0 = dims[0]
        sel = ds[attrs[0] or "%anonymous"].sel({d0.name: d0.domain[1]})
        assert np.array_equal(sel.values, data[attrs[0]][-1], equal_nan=True), (array, fmt)
        print("ok", array, fmt, len(attrs))
"#;
    let names = [
        "merge_dense_overlap",
        "merge_dense_3d",
        "from_numpy",
        "merge_dense_colmajor",
    ];
    // One Python for the four (its imports cost more than the checks).
    let mounts: Vec<InProcess> = names.iter().map(|n| mount_feature(n)).collect();
    let arrays: Vec<PathBuf> = names.iter().map(|n| features().join(n)).collect();
    let args: Vec<&Path> = mounts
        .iter()
        .zip(&arrays)
        .flat_map(|(m, a)| [m.path(), a.as_path()])
        .collect();
    let out = run_python(&python, script, &args);
    for array in &arrays {
        let ok = format!("ok {} ", array.display());
        assert_eq!(
            out.lines().filter(|l| l.starts_with(&ok)).count(),
            2,
            "{}: {out}",
            array.display()
        );
    }
}

/// GDAL's Zarr driver sees the raster, its size, block, nodata and georeferencing from
/// the coordinate arrays, and `gdal_translate` gives TileDB's values.
#[test]
fn gdal_reads_a_2d_attribute_through_zarr() {
    if !fuse_available("GDAL through the mount") {
        return;
    }
    if Command::new("gdalinfo").arg("--version").output().is_err() {
        let reason = "no gdalinfo (scripts/test.sh installs gdal-bin)";
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI=true but {reason}"
        );
        skip(reason);
        return;
    }
    let m = mount_feature("merge_dense_overlap");
    let dataset = format!("ZARR:\"{}\"", m.path().join("zarr/i32").display());
    let info = run_ok(Command::new("gdalinfo").arg(&dataset));
    assert!(info.contains("Driver: Zarr/Zarr"), "{info}");
    assert!(info.contains("Size is 8, 6"), "{info}");
    assert!(info.contains("Block=4x3 Type=Int32"), "{info}");
    assert!(info.contains("NoData Value=-1"), "{info}");
    // Column c=1 is centred at x=1: the pixel's corner at 0.5.
    assert!(
        info.contains("Origin = (0.500000000000000,0.500000000000000)"),
        "{info}"
    );
    let out = tempfile::tempdir().unwrap();
    let raw = out.path().join("i32.bin");
    run_ok(
        Command::new("gdal_translate")
            .args(["-q", "-of", "ENVI"])
            .arg(&dataset)
            .arg(&raw),
    );
    // The whole domain is this array's non-empty box: latest/'s values.bin is TileDB's read.
    let want = std::fs::read(m.path().join("latest/i32/values.bin")).unwrap();
    assert_eq!(std::fs::read(&raw).unwrap(), want);
    let merged: Value = serde_json::from_slice(
        &std::fs::read(features().join("merge_dense_overlap.merged.json")).unwrap(),
    )
    .unwrap();
    let values: Vec<i32> = merged["reads"][0]["fields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "i32")
        .unwrap()["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap() as i32)
        .collect();
    let got: Vec<i32> = want
        .chunks(4)
        .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(got, values);
}

/// A slice reads the chunk files it covers, and decodes only their tiles: as many as
/// reading those chunk files alone, fewer than the whole array.
#[test]
fn a_slice_decodes_only_the_chunks_it_needs() {
    if !fuse_available("zarr slices") {
        return;
    }
    let Some(python) = python_with("zarr") else {
        return;
    };
    let slice = r#"
import sys, warnings, zarr
warnings.filterwarnings("ignore")
# The same slice as Zarr v2 through one mount, as v3 through another.
for mnt, fmt in ((sys.argv[1], 2), (sys.argv[2], 3)):
    a = zarr.open_array(mnt + "/zarr/f64", mode="r", zarr_format=fmt)
    print(a[0:3, 0:4].sum())
"#;
    let whole = {
        let m = mount_feature("merge_dense_overlap");
        let listed: Vec<String> = std::fs::read_dir(m.path().join("zarr/f64"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        for chunk in ["0.0", "0.1", "1.0", "1.1"] {
            assert!(listed.iter().any(|n| n == chunk), "{chunk}: {listed:?}");
            std::fs::read(m.path().join("zarr/f64").join(chunk)).unwrap();
        }
        m.view.chunks_decoded()
    };
    let one = {
        let m = mount_feature("merge_dense_overlap");
        std::fs::read(m.path().join("zarr/f64/0.0")).unwrap();
        m.view.chunks_decoded()
    };
    assert!(one > 0 && one < whole, "one chunk {one}, all {whole}");
    let (v2, v3) = (
        mount_feature("merge_dense_overlap"),
        mount_feature("merge_dense_overlap"),
    );
    run_python(&python, slice, &[v2.path(), v3.path()]);
    assert_eq!(v2.view.chunks_decoded(), one, "v2");
    assert_eq!(v3.view.chunks_decoded(), one, "v3");
}

/// `at/<T>/zarr/` is the store at T; sparse arrays have none, and say so.
#[test]
fn time_travel_and_sparse_arrays() {
    use fragfs::view::FileTree;
    let t = fragfs::view::ArrayTree::open_path(
        &features().join("merge_consolidated_partial_dense"),
        Default::default(),
        16 << 20,
    )
    .unwrap();
    let names = |p: &str| -> Vec<String> {
        t.list(t.resolve(p).unwrap())
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect()
    };
    // x 0-15 in tiles of 4: at 3 the consolidated writes cover x 0-9 (chunks 0-2), the
    // write at 4 adds x 8-13 (chunk 3); at 1 nothing is visible yet: no chunk file.
    assert_eq!(names("at/3/zarr/a")[3..], ["c", "0", "1", "2"]);
    assert_eq!(names("zarr/a")[3..], ["c", "0", "1", "2", "3"]);
    assert_eq!(names("at/1/zarr/a"), [".zarray", ".zattrs", "zarr.json"]);
    assert!(t.resolve("at/3/zarr/a/3").is_err() && t.resolve("at/3/zarr/a/c/3").is_err());
    assert!(t.resolve("zarr/a/3").is_ok() && t.resolve("zarr/a/c/3").is_ok());
    let read = |p: &str| t.read_at(t.resolve(p).unwrap(), 0, 1 << 20).unwrap();
    // Chunk 2 (x 8-11) changed at 4; v2 and v3 keys hold the same bytes.
    assert_ne!(read("at/3/zarr/a/2"), read("zarr/a/2"));
    assert_eq!(read("zarr/a/2"), read("zarr/a/c/2"));
    let sparse = fragfs::view::ArrayTree::open_path(
        &features().join("merge_sparse_overlap"),
        Default::default(),
        16 << 20,
    )
    .unwrap();
    assert!(sparse.resolve("zarr").is_err());
    let array: Value = serde_json::from_slice(
        &sparse
            .read_at(sparse.resolve("array.json").unwrap(), 0, 1 << 20)
            .unwrap(),
    )
    .unwrap();
    assert_eq!(array["zarr"]["shown"], false, "{array}");
    assert!(
        array["zarr"]["why"].as_str().unwrap().contains("sparse"),
        "{array}"
    );
}

/// xarray sees strings, bytes and a cell's values (one more dimension, named after the
/// attribute) in both Zarr versions, equal to TileDB-Py's `A[:]` (a var cell of one NUL
/// byte, the fill value, read as empty as TileDB-Py does; STRING_ASCII decoded).
#[test]
fn xarray_opens_strings_and_cells_of_several_values() {
    if !fuse_available("xarray through the mount") {
        return;
    }
    let Some(python) = python_with("xarray") else {
        return;
    };
    let script = r#"
import sys, warnings
import numpy as np, xarray as xr, tiledb
from numpy.lib import recfunctions
warnings.filterwarnings("ignore")
mnt, array = sys.argv[1], sys.argv[2]
with tiledb.open(array) as A:
    data = A[:]
    dims = [A.schema.domain.dim(i).name for i in range(A.schema.ndim)]

def objects(values, shape):
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out.reshape(shape)

def from_tiledb_py(x):
    """Several values per cell as a last dimension; STRING_ASCII (bytes) decoded."""
    x = np.ma.getdata(x)
    if x.dtype.names:
        return recfunctions.structured_to_unstructured(x)
    if x.dtype == object:
        return objects([v.decode() if isinstance(v, bytes) and name == "ascii" else v
                        for v in x.ravel()], x.shape)
    return x

def tiledb_py_view(x):
    """TileDB-Py reads a var cell of one NUL byte (the fill value) as empty."""
    x = np.asarray(x)
    return objects(["" if v == "\x00" else b"" if v == b"\x00" else v for v in x.ravel().tolist()], x.shape)

for fmt in (2, 3):
    ds = xr.open_zarr(mnt + "/zarr", consolidated=False, zarr_format=fmt, mask_and_scale=False)
    checked = 0
    for name in ["rgb", "pair", "pair_fill", "code", "s", "ascii", "raw", "n_s", "n_rgb"]:
        v = ds[name]
        extra = [name + "__values"] if name in ("rgb", "pair", "pair_fill", "n_rgb") else []
        assert list(v.dims) == dims + extra, (fmt, name, v.dims)
        mask = np.ma.getmaskarray(data[name])
        if mask.dtype.names:
            mask = recfunctions.structured_to_unstructured(mask).any(axis=-1)
        keep = ~mask
        want = from_tiledb_py(data[name])
        got = v.values
        if got.dtype.kind in "OT":
            got = tiledb_py_view(got)
            ok = got[keep].tolist() == want[keep].tolist()
        else:
            ok = np.array_equal(got[keep], want[keep], equal_nan=got.dtype.kind == "f")
        assert ok, (fmt, name, got, want)
        if name.startswith("n_"):
            assert np.array_equal(ds[name + "__validity"].values, keep.astype(np.uint8)), (fmt, name)
        checked += 1
    # Selection by TileDB coordinates reaches the strings too.
    row = tiledb_py_view(ds["s"].sel(r=1, c=slice(1, 3)).values).tolist()
    assert row == list(data["s"][0, 0:3]), (fmt, row)
    print("ok", fmt, checked)
"#;
    let m = mount_fixture(&zarr_fixtures(), "zarr_cells");
    let out = run_python(
        &python,
        script,
        &[m.path(), &zarr_fixtures().join("zarr_cells")],
    );
    assert_eq!(
        out.lines()
            .filter(|l| l.starts_with("ok "))
            .collect::<Vec<_>>(),
        ["ok 2 9", "ok 3 9"],
        "{out}"
    );
}

/// The elements of a chunk of strings or bytes: numcodecs' VLen encoding (u32 count,
/// then per element u32 length and bytes).
fn vlen_elements(chunk: &[u8]) -> Vec<Vec<u8>> {
    let u32_at = |at: usize| u32::from_le_bytes(chunk[at..at + 4].try_into().unwrap()) as usize;
    let mut at = 4;
    let mut out = Vec::new();
    for _ in 0..u32_at(0) {
        let len = u32_at(at);
        out.push(chunk[at + 4..at + 4 + len].to_vec());
        at += 4 + len;
    }
    assert_eq!(at, chunk.len(), "bytes after the last element");
    out
}

/// TileDB's merged values of a var field at the latest state, as bytes per cell.
fn merged_bytes(array: &str, field: &str) -> Vec<Vec<u8>> {
    let merged: Value = serde_json::from_slice(
        &std::fs::read(zarr_fixtures().join(format!("{array}.merged.json"))).unwrap(),
    )
    .unwrap();
    merged["reads"][0]["fields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == field)
        .unwrap()["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| match v {
            Value::String(s) => s.as_bytes().to_vec(),
            Value::Array(b) => b.iter().map(|x| x.as_u64().unwrap() as u8).collect(),
            Value::Null => Vec::new(),
            other => panic!("{other}"),
        })
        .collect()
}

/// A chunk of strings is sized once rendered (`stat` says 0 and not exact until then),
/// holds its tile's cells in row-major order (fill values where no fragment wrote, past
/// the domain's end too), reads the same in any pieces across its blocks of cells, and
/// a read past its end returns fewer bytes.
#[test]
fn string_chunks_are_rendered_lazily_and_read_in_any_pieces() {
    use fragfs::view::{ArrayTree, FileTree};
    let t = ArrayTree::open_path(
        &zarr_fixtures().join("zarr_big_chunk"),
        Default::default(),
        16 << 20,
    )
    .unwrap();
    let ino = t.resolve("zarr/s/0").unwrap();
    let before = t.stat(ino).unwrap();
    assert_eq!((before.size, before.exact_size), (0, false));
    let whole = t.read_at(ino, 0, u64::MAX).unwrap();
    let after = t.stat(ino).unwrap();
    assert_eq!((after.size, after.exact_size), (whole.len() as u64, true));
    assert_eq!(t.size(ino).unwrap(), whole.len() as u64);
    // x 0-5999 in tiles of 4500: chunk 0 is x 0-4499, TileDB's cells as merged.
    let cells = merged_bytes("zarr_big_chunk", "s");
    let elements = vlen_elements(&whole);
    assert_eq!(elements.len(), 4500);
    // The non-empty box starts at x 5: before it, the fill value (one NUL byte).
    assert_eq!(&elements[..5], vec![vec![0u8]; 5].as_slice());
    assert_eq!(&elements[5..], &cells[..4495]);
    // Pieces that cut elements, headers and blocks of 4096 cells give the same bytes.
    for step in [1usize, 7, 4096, 20000] {
        let mut pieces = Vec::new();
        let mut at = 0u64;
        while at < whole.len() as u64 + 10 {
            pieces.extend(t.read_at(ino, at, step as u64).unwrap());
            at += step as u64;
        }
        assert_eq!(pieces, whole, "pieces of {step}");
    }
    assert!(t.read_at(ino, whole.len() as u64, 100).unwrap().is_empty());
    assert_eq!(
        t.read_at(ino, whole.len() as u64 - 3, 100).unwrap().len(),
        3
    );
    // The last chunk runs 3000 cells past the domain: fill values, like x 4601-5999.
    let last = vlen_elements(
        &t.read_at(t.resolve("zarr/s/c/1").unwrap(), 0, u64::MAX)
            .unwrap(),
    );
    assert_eq!(last.len(), 4500);
    assert_eq!(&last[..101], &cells[4495..]);
    assert!(
        last[101..].iter().all(|e| e == &[0u8]),
        "fill past the writes"
    );
    assert_eq!(
        last,
        vlen_elements(
            &t.read_at(t.resolve("zarr/s/1").unwrap(), 0, u64::MAX)
                .unwrap()
        )
    );
}

/// Bytes (var CHAR) and strings that are not UTF-8: bytes as stored, strings with
/// U+FFFD in place of each bad sequence (a reader would fail on the chunk otherwise);
/// fixed-size chunks cut at any offset, past their end fewer bytes.
#[test]
fn chunks_of_bytes_and_of_bad_utf8() {
    use fragfs::view::{ArrayTree, FileTree};
    let open = |name: &str| {
        ArrayTree::open_path(&zarr_fixtures().join(name), Default::default(), 16 << 20).unwrap()
    };
    let t = open("zarr_invalid_utf8");
    let read = |t: &ArrayTree, p: &str| t.read_at(t.resolve(p).unwrap(), 0, u64::MAX).unwrap();
    let s = vlen_elements(&read(&t, "zarr/s/0"));
    let want: Vec<Vec<u8>> = merged_bytes("zarr_invalid_utf8", "s")[..3]
        .iter()
        .map(|b| String::from_utf8_lossy(b).into_owned().into_bytes())
        .collect();
    assert_eq!(s, want);
    assert_eq!(s[1], "\u{fffd}\u{fffd}ab".as_bytes());
    let ascii = vlen_elements(&read(&t, "zarr/ascii/c/0"));
    assert_eq!(ascii[1], "caf\u{fffd}".as_bytes());
    // var CHAR: the bytes themselves, 0xFF and NUL included.
    let t = open("zarr_cells");
    let raw = vlen_elements(&read(&t, "zarr/raw/0.0"));
    let cells = merged_bytes("zarr_cells", "raw");
    // Chunk 0.0 is r 1-3, c 1-4; the merged box's rows are c 1-8.
    let want: Vec<Vec<u8>> = (0..3)
        .flat_map(|r| cells[r * 8..r * 8 + 4].to_vec())
        .collect();
    assert_eq!(raw, want);
    assert!(raw.iter().any(|b| b.contains(&255)) && raw.contains(&vec![128]));
    // A cell of three floats: chunks of 3 x 4 x 3 float32s, cut anywhere.
    let ino = t.resolve("zarr/rgb/0.0.0").unwrap();
    assert_eq!(t.stat(ino).unwrap().size, 3 * 4 * 3 * 4);
    let whole = t.read_at(ino, 0, u64::MAX).unwrap();
    assert_eq!(whole.len(), 144);
    assert_eq!(t.read_at(ino, 5, 6).unwrap(), whole[5..11]);
    assert_eq!(t.read_at(ino, 140, 100).unwrap(), whole[140..]);
    assert!(t.read_at(ino, 144, 1).unwrap().is_empty());
    assert_eq!(
        t.stat(t.resolve("zarr/code/0.0").unwrap()).unwrap().size,
        3 * 4 * 4
    );
}

/// array.json names every attribute of the fixtures as shown, and the store has the
/// arrays: tiles no fragment wrote have no chunk file, except where a cell's fill value
/// of differing values cannot be one Zarr fill value (`pair_fill`).
#[test]
fn array_json_shows_strings_and_cells_of_several_values() {
    use fragfs::view::{ArrayTree, FileTree};
    let t = ArrayTree::open_path(
        &zarr_fixtures().join("zarr_cells"),
        Default::default(),
        16 << 20,
    )
    .unwrap();
    let array: Value = serde_json::from_slice(
        &t.read_at(t.resolve("array.json").unwrap(), 0, 1 << 20)
            .unwrap(),
    )
    .unwrap();
    assert_eq!(array["zarr"]["not_shown"], serde_json::json!({}), "{array}");
    let shown: Vec<&str> = array["zarr"]["arrays"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    for name in [
        "rgb",
        "pair",
        "pair_fill",
        "code",
        "s",
        "ascii",
        "raw",
        "n_s",
        "n_s__validity",
        "n_ascii",
        "n_rgb",
        "n_rgb__validity",
        "r",
        "c",
    ] {
        assert!(shown.contains(&name), "{name}: {shown:?}");
    }
    let names = |p: &str| -> Vec<String> {
        t.list(t.resolve(p).unwrap())
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect()
    };
    // Tiles (r 1-3, c 5-8) and (r 4-6, c 1-4) were never written.
    assert_eq!(names("zarr/s")[3..], ["c", "0.0", "1.1"]);
    assert_eq!(names("zarr/rgb")[3..], ["c", "0.0.0", "1.1.0"]);
    assert_eq!(names("zarr/rgb/c/1"), ["1"]);
    assert_eq!(names("zarr/rgb/c/1/1"), ["0"]);
    assert_eq!(
        names("zarr/pair_fill")[3..],
        ["c", "0.0.0", "0.1.0", "1.0.0", "1.1.0"]
    );
    let zarray = |p: &str| -> Value {
        serde_json::from_slice(&t.read_at(t.resolve(p).unwrap(), 0, 1 << 20).unwrap()).unwrap()
    };
    let rgb = zarray("zarr/rgb/.zarray");
    assert_eq!(rgb["shape"], serde_json::json!([6, 8, 3]));
    assert_eq!(rgb["chunks"], serde_json::json!([3, 4, 3]));
    let s = zarray("zarr/s/zarr.json");
    assert_eq!(s["data_type"], "string");
    assert_eq!(s["fill_value"], "\u{0}");
    assert_eq!(s["codecs"][0]["name"], "vlen-utf8");
    assert_eq!(zarray("zarr/raw/.zarray")["filters"][0]["id"], "vlen-bytes");
    assert_eq!(zarray("zarr/raw/.zarray")["fill_value"], "gA==");
    assert_eq!(zarray("zarr/code/.zarray")["dtype"], "|S4");
}

/// Formats 4 and 5 store an empty var cell as one NUL byte, and it is their fill value:
/// `zarr/` gives it as `""`, what TileDB-Py's `A[:]` reads, in the chunks and as
/// `fill_value`, both versions (tests/fixtures/zarr_unwritten_var/: x 1..20 in tiles of
/// 4, cells 6..9 and 18..20 written).
#[test]
fn unwritten_var_cells_of_formats_4_and_5_read_as_empty() {
    use fragfs::view::{ArrayTree, FileTree};
    let dir = repo().join("tests/fixtures/zarr_unwritten_var");
    for array in ["v4_dense_1d", "v5_dense_1d"] {
        let t = ArrayTree::open_path(&dir.join(array), Default::default(), 16 << 20).unwrap();
        let read = |path: &str| {
            let ino = t
                .resolve(path)
                .unwrap_or_else(|e| panic!("{array}/{path}: {e}"));
            t.read_at(ino, 0, u64::MAX).unwrap()
        };
        let json = |path: &str| serde_json::from_slice::<Value>(&read(path)).unwrap();
        assert_eq!(json("zarr/s/.zarray")["fill_value"], "", "{array}");
        assert_eq!(json("zarr/s/zarr.json")["fill_value"], "", "{array}");
        let s = |v: &[&str]| v.iter().map(|x| x.as_bytes().to_vec()).collect::<Vec<_>>();
        for key in ["zarr/s/1", "zarr/s/c/1"] {
            // x 5..8: x 5 unwritten.
            let want = s(&["", "delta-delta0", "q", "alpha"]);
            assert_eq!(vlen_elements(&read(key)), want, "{array}/{key}");
        }
        for key in ["zarr/s/2", "zarr/s/c/2"] {
            // x 9..12: x 10..12 unwritten, inside the non-empty domain.
            let want = s(&["hello world", "", "", ""]);
            assert_eq!(vlen_elements(&read(key)), want, "{array}/{key}");
        }
    }
}

/// The same through a mount, by zarr-python against TileDB's reads and TileDB-Py's `A[:]`
/// compared exactly (tests/check_zarr.py: no NUL convention to undo in these formats).
#[test]
fn unwritten_var_cells_of_formats_4_and_5_open_in_zarr_python_as_tiledb_py_reads_them() {
    if !fuse_available("zarr-python through the mount") {
        return;
    }
    let Some(python) = python_with("zarr") else {
        return;
    };
    let merged = merged_files(&repo().join("tests/fixtures/zarr_unwritten_var"));
    let (ok, not_shown) = check(&python, &[], &merged, true);
    assert_eq!((ok, not_shown), (2, 0));
}
