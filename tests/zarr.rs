//! `zarr/`: dense arrays as a Zarr store, read by real readers through real mounts.
//! zarr-python 3 (as Zarr v2 and v3) against TileDB's reads (merged.json) and TileDB-Py's
//! own `A[:]` (tests/check_zarr.py), xarray's dims and coordinates, GDAL's Zarr driver,
//! and a slice read decoding only the tiles of the chunks it needs.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::mounting::*;
use common::*;
use serde_json::Value;

/// Mounts the arrays a batch at a time and runs tests/check_zarr.py over each batch;
/// returns the checker's "ok" lines (dense arrays checked) and "not shown" lines.
fn check(python: &str, arrays: &[(PathBuf, Value)], merged: &[(PathBuf, Value)]) -> (usize, usize) {
    let script = repo().join("tests/check_zarr.py");
    let (mut ok, mut not_shown) = (0, 0);
    for batch in arrays.chunks(24) {
        let jsons = tempfile::tempdir().unwrap();
        let mut mounts = Vec::new();
        let mut specs = Vec::new();
        for (k, (array, expected)) in batch.iter().enumerate() {
            let Some((_, m)) = merged.iter().find(|(a, _)| a == array) else {
                continue;
            };
            let path = jsons.path().join(format!("{k}.merged.json"));
            std::fs::write(&path, serde_json::to_vec(m).unwrap()).unwrap();
            let mount = InProcess::new(array, expected, 16 << 20, 2);
            specs.push(serde_json::json!({
                "mount": mount.path(),
                "array": array,
                "merged": path,
                "key": expected["encryption"]["key"],
            }));
            mounts.push(mount);
        }
        let spec = jsons.path().join("spec.json");
        std::fs::write(&spec, serde_json::to_vec(&specs).unwrap()).unwrap();
        let out = Command::new(python)
            .arg(&script)
            .arg(&spec)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        ok += stdout.lines().filter(|l| l.starts_with("ok ")).count();
        not_shown += stdout
            .lines()
            .filter(|l| l.starts_with("not shown "))
            .count();
    }
    (ok, not_shown)
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
    let (ok, not_shown) = check(&python, &arrays, &merged);
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
    let (ok, not_shown) = check(&python, &arrays, &merged);
    println!("{ok} dense corpus arrays match through zarr/ ({not_shown} have none, said why)");
    assert_eq!(ok + not_shown, dense_count(&merged));
    assert!(ok > 200, "{ok}");
}

fn mount_feature(name: &str) -> InProcess {
    let array = features().join(name);
    let expected: Value = serde_json::from_slice(
        &std::fs::read(features().join(format!("{name}.expected.json"))).unwrap(),
    )
    .unwrap();
    InProcess::new(&array, &expected, 16 << 20, 2)
}

fn run_python(python: &str, script: &str, args: &[&Path]) -> String {
    let out = Command::new(python)
        .arg("-c")
        .arg(script)
        .args(args)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
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
mnt, array = sys.argv[1], sys.argv[2]
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
        assert list(v.dims) == [d.name for d in dims], (fmt, name, v.dims)
        got, want = v.values, data[a]
        assert np.array_equal(got, want, equal_nan=got.dtype.kind == "f"), (fmt, name)
    for d in dims:
        lo, hi = d.domain
        assert np.array_equal(ds[d.name].values, np.arange(lo, hi + 1)), (fmt, d.name, ds[d.name].values)
        assert ds.indexes[d.name].equals(ds[d.name].to_index())
    # Selection by TileDB coordinates, not positions.
    d0 = dims[0]
    sel = ds[attrs[0] or "%anonymous"].sel({d0.name: d0.domain[1]})
    assert np.array_equal(sel.values, data[attrs[0]][-1], equal_nan=True), fmt
    print("ok", fmt, len(attrs))
"#;
    for name in [
        "merge_dense_overlap",
        "merge_dense_3d",
        "from_numpy",
        "merge_dense_colmajor",
    ] {
        let m = mount_feature(name);
        let out = run_python(&python, script, &[m.path(), &features().join(name)]);
        assert_eq!(
            out.lines().filter(|l| l.starts_with("ok ")).count(),
            2,
            "{name}: {out}"
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
a = zarr.open_array(sys.argv[1] + "/zarr/f64", mode="r", zarr_format=int(sys.argv[2]))
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
    for version in ["2", "3"] {
        let m = mount_feature("merge_dense_overlap");
        run_python(&python, slice, &[m.path(), Path::new(version)]);
        assert_eq!(m.view.chunks_decoded(), one, "v{version}");
    }
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
