//! `array.h5`: every state as an HDF5 file, read by real readers through real mounts.
//! h5py (values, dtypes, shapes, fill values, attributes, dimension scales) against
//! TileDB's reads (merged.json) of every dense and sparse fixture and every shared corpus
//! array, latest and every earlier `at/<T>/`, in tests/check_hdf5.py; `h5dump -H`,
//! `h5dump -d`, `gdalinfo` and `gdal_translate` on every fixture (latest and earliest
//! `at/<T>/`) and on every 24th corpus array (latest); netCDF4-python and `ncdump -h`
//! opening the file as netCDF-4 with named dimensions; a slice read by h5py decoding only
//! the tiles under it; a damaged tile failing the reads that touch it (EIO) while the
//! header and the rest still read; `stat` exact without decoding.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::mounting::*;
use common::*;
use serde_json::Value;

/// Runs tests/check_hdf5.py over the arrays with TileDB's merged reads; `tools(k)`:
/// whether to run the CLI tools on the k-th array, and at which states. Returns the
/// number of arrays checked.
fn check(
    python: &str,
    merged: &[(PathBuf, Value)],
    expected: &[(PathBuf, Value)],
    tools: impl Fn(usize) -> Option<&'static str> + Sync,
) -> usize {
    let (stdout, _) = check_in_batches(python, "check_hdf5.py", merged, expected, |k, _| {
        Some(serde_json::json!({ "tools": tools(k) }))
    });
    print!("{stdout}");
    stdout.lines().filter(|l| l.starts_with("ok ")).count()
}

fn tools_or_skip() -> bool {
    ["h5dump", "gdalinfo", "gdal_translate"]
        .iter()
        .all(|t| tool_available(t, "array.h5 through the CLI tools"))
}

#[test]
fn fixtures_read_in_h5py_h5dump_and_gdal_as_tiledb_reads_them() {
    if !fuse_available("h5py through the mount") {
        return;
    }
    let Some(python) = python_with("h5py") else {
        return;
    };
    let tools = tools_or_skip();
    let (mut arrays, mut merged) = fixture_files();
    let zarr = repo().join("tests/fixtures/zarr");
    arrays.extend(expected_files(&zarr));
    merged.extend(merged_files(&zarr));
    let ok = check(&python, &merged, &arrays, |_| {
        tools.then_some("latest+earliest")
    });
    assert_eq!(ok, merged.len());
    assert!(ok >= 30, "{ok} fixtures checked");
}

#[test]
fn shared_corpus_reads_in_h5py_as_tiledb_reads_it() {
    let Some(corpus) = shared_or_skip(shared_corpus()) else {
        return;
    };
    if !fuse_available("h5py through the mount") {
        return;
    }
    let Some(python) = python_with("h5py") else {
        return;
    };
    let tools = tools_or_skip();
    let (arrays, merged) = corpus_files(&corpus);
    let ok = check(&python, &merged, &arrays, |k| {
        (tools && k % 24 == 0).then_some("latest")
    });
    println!("{ok} corpus arrays match through array.h5");
    assert_eq!(ok, merged.len());
}

/// netCDF4-python opens array.h5 as netCDF-4: the dimension scales are its named
/// dimensions and coordinate variables, the attributes its variables along them, with
/// the values h5py reads; `ncdump -h` prints the same. Dense 2-D and 3-D, and sparse.
#[test]
fn netcdf4_sees_named_dimensions_and_coordinates() {
    if !fuse_available("netCDF4 through the mount") {
        return;
    }
    let Some(python) = python_with("netCDF4") else {
        return;
    };
    let ncdump = tool_available("ncdump", "ncdump -h of array.h5");
    let script = r#"
import sys, json, warnings
import numpy as np, h5py, netCDF4
warnings.filterwarnings("ignore")
path = sys.argv[1] + "/latest/array.h5"
with h5py.File(path, "r") as h:
    scales = {k for k in h if h[k].attrs.get("CLASS") == b"DIMENSION_SCALE"}
    with netCDF4.Dataset(path) as nc:
        assert set(nc.dimensions) >= scales, (nc.dimensions.keys(), scales)
        for name in scales:
            assert len(nc.dimensions[name]) == h[name].shape[0]
        for name, ds in h.items():
            v = nc.variables[name]
            axes = [list(d.keys())[0] for d in ds.dims if len(d)]
            assert list(v.dimensions[: len(axes)]) == axes, (name, v.dimensions, axes)
            if ds.dtype.kind == "S":
                # netCDF-C reads fixed-length strings as NC_STRING and cannot decode
                # their values (docs/hdf5.md): their names and dimensions only.
                continue
            v.set_auto_mask(False)
            got = v[...]
            want = ds[...]
            assert np.array_equal(np.asarray(got), want, equal_nan=want.dtype.kind == "f"), name
print("ok", len(scales))
"#;
    for name in [
        "merge_dense_overlap",
        "merge_dense_3d",
        "merge_sparse_overlap",
        "merge_fill_types",
    ] {
        let m = mount_feature(name);
        let out = run_python(&python, script, &[m.path()]);
        assert!(out.starts_with("ok "), "{name}: {out}");
        if ncdump {
            let out = Command::new("ncdump")
                .arg("-h")
                .arg(m.path().join("latest/array.h5"))
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success() && text.contains("dimensions:"),
                "{name}: {text}"
            );
        }
    }
}

/// A slice read by h5py decodes only the tiles under it (and those the kernel's
/// read-ahead of the file's first bytes brings), not the dataset's: a 1024x1024 float64
/// array in tiles of 128x128 written here by TileDB-Py.
#[test]
fn a_slice_decodes_only_the_tiles_it_needs() {
    if !fuse_available("h5py slices") {
        return;
    }
    let Some(python) = python_with("tiledb") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let array = big_array(&python, dir.path());
    let slice = r#"
import sys, h5py
with h5py.File(sys.argv[1] + "/latest/array.h5", "r") as h:
    print(h["v"][600:603, 700:704].sum())
"#;
    let whole = {
        let m = InProcess::new(&array, &Value::Null, 64 << 20, 2);
        std::fs::read(m.path().join("latest/array.h5")).unwrap();
        m.view.chunks_decoded()
    };
    let m = InProcess::new(&array, &Value::Null, 64 << 20, 2);
    let out = run_python(&python, slice, &[m.path()]);
    let want: f64 = (600..603)
        .flat_map(|y| (700..704).map(move |x| (y * 1024 + x) as f64))
        .sum();
    assert_eq!(out.trim().parse::<f64>().unwrap(), want);
    let slice_tiles = m.view.chunks_decoded();
    // Reading the file whole decodes every tile of `v` at least once; the slice at most
    // three rows of 8 tiles: its own, and those under the kernel's read-ahead of the
    // file's first bytes and of the metadata after the data.
    assert!(whole >= 64, "{whole} tiles decoded reading the whole file");
    assert!(
        slice_tiles > 0 && slice_tiles <= 24,
        "{slice_tiles} tiles decoded"
    );
}

/// A damaged tile: reads that touch it fail with EIO (h5py raises), never wrong bytes;
/// the header and the rest of the dataset still read. The tile lies in the middle of
/// the generated array's `v`, far from the header (a read the kernel makes of the first
/// bytes, read-ahead included, does not reach it).
#[test]
fn a_damaged_tile_fails_only_the_reads_that_touch_it() {
    if !fuse_available("array.h5 over a damaged tile") {
        return;
    }
    let Some(python) = python_with("tiledb") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let array = big_array(&python, dir.path());
    let fragments = array.join("__fragments");
    let fragment = std::fs::read_dir(&fragments)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let data = fragment.join("a0.tdb");
    let mut bytes = std::fs::read(&data).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x10;
    std::fs::write(&data, bytes).unwrap();
    let m = InProcess::new(&array, &Value::Null, 16 << 20, 2);
    let script = r#"
import sys, h5py, numpy as np
with h5py.File(sys.argv[1] + "/latest/array.h5", "r") as h:
    assert sorted(h.keys()) == ["v", "x", "y"], sorted(h.keys())
    assert np.array_equal(h["y"][...], np.arange(1024))
    v = h["v"]
    assert np.array_equal(v[0:4], np.arange(4096, dtype=np.float64).reshape(4, 1024))
    assert np.array_equal(v[1020:], np.arange(1020 * 1024, 1 << 20, dtype=np.float64).reshape(4, 1024))
    try:
        v[...]
        print("read the damaged dataset")
    except OSError as e:
        print("EIO", e)
"#;
    let out = run_python(&python, script, &[m.path()]);
    assert!(out.starts_with("EIO ") && out.contains("rrno = 5"), "{out}");
}

/// A 1024x1024 float64 array `v` (`v[y, x] = y * 1024 + x`) in tiles of 128x128, each
/// with a SHA-256 checksum, written by TileDB-Py into `dir`.
fn big_array(python: &str, dir: &Path) -> PathBuf {
    let array = dir.join("big");
    run_python(
        python,
        r#"
import sys, numpy as np, tiledb
dom = tiledb.Domain(tiledb.Dim(name="y", domain=(0, 1023), tile=128, dtype=np.int32), tiledb.Dim(name="x", domain=(0, 1023), tile=128, dtype=np.int32))
attr = tiledb.Attr("v", np.float64, filters=tiledb.FilterList([tiledb.ChecksumSHA256Filter()]))
tiledb.Array.create(sys.argv[1], tiledb.ArraySchema(domain=dom, attrs=[attr]))
with tiledb.open(sys.argv[1], "w") as A:
    A[:] = np.arange(1 << 20, dtype=np.float64).reshape(1024, 1024)
"#,
        &[&array],
    );
    array
}

/// `stat` of array.h5 gives its exact size without decoding a tile (libhdf5 checks the
/// file's size against the superblock's end-of-file address at open), dense and sparse
/// (before the sparse cells are counted); the bytes read match it.
#[test]
fn stat_gives_the_exact_size_without_decoding() {
    use fragfs::view::FileTree;
    for name in [
        "merge_dense_overlap",
        "merge_sparse_overlap",
        "merge_dense_3d",
        "merge_fill_types",
    ] {
        let t = fragfs::view::ArrayTree::open_path(
            &features().join(name),
            Default::default(),
            16 << 20,
        )
        .unwrap();
        let ino = t.resolve("latest/array.h5").unwrap();
        let stat = t.stat(ino).unwrap();
        assert_eq!(t.chunks_decoded(), 0, "{name}: stat decoded a tile");
        let bytes = t.read_at(ino, 0, u64::MAX >> 1).unwrap();
        assert_eq!(stat.size, bytes.len() as u64, "{name}");
        assert_eq!(
            &bytes[28..36],
            &stat.size.to_le_bytes(),
            "{name}: end of file address"
        );
    }
}
