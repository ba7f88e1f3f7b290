//! `array.nc`: every merged state as a netCDF classic file (CDF-2, CDF-5 where a 64-bit
//! integer needs it), read by real readers through real mounts: netCDF4-python (raw,
//! bit for bit), xarray (`netcdf4` and, for CDF-2, `scipy` engines, decoded as CF
//! says), `ncdump -h` / `ncdump -v` and `gdalinfo` (every bundled fixture:
//! tests/fixtures/tiledb, features and zarr; every 25th array of the shared corpus),
//! GDAL's netCDF driver (`gdal_translate` of a 2-D variable of merge_dense_overlap)
//! against TileDB's merged reads (merged.json): every state (`latest/` and each
//! `at/<T>/`) of the fixtures; the latest and the first earlier state of every corpus
//! array. Also: a slice decodes only the tiles it needs, a damaged tile fails with
//! EIO while the header and other variables still read, and `ls -l` sizes the file
//! from metadata.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::mounting::*;
use common::*;
use serde_json::Value;

/// Runs tests/check_netcdf.py over the arrays (dense and sparse ones with TileDB's
/// merged reads), the CLI tools on every `cli_every`-th, every state where that is 1;
/// returns the arrays checked.
fn check(
    python: &str,
    arrays: &[(PathBuf, Value)],
    merged: &[(PathBuf, Value)],
    cli_every: usize,
) -> usize {
    let (stdout, given) = check_in_batches(python, "check_netcdf.py", merged, arrays, |i, m| {
        (m["array_type"] == "dense" || m["array_type"] == "sparse")
            .then(|| serde_json::json!({"cli": i % cli_every == 0, "every_state": cli_every == 1}))
    });
    let ok = stdout.lines().filter(|l| l.starts_with("ok ")).count();
    assert_eq!(ok, given, "{stdout}");
    ok
}

fn with_merged(dir: &Path) -> (JsonFiles, JsonFiles) {
    let merged = merged_files(dir);
    let arrays = expected_files(dir)
        .into_iter()
        .filter(|(a, _)| merged.iter().any(|(m, _)| m == a))
        .collect();
    (arrays, merged)
}

#[test]
fn fixtures_read_in_netcdf4_xarray_and_ncdump_as_tiledb_reads_them() {
    if !fuse_available("netCDF readers through the mount")
        || !tool_available("ncdump", "ncdump -h / -v of array.nc")
        || !tool_available("gdalinfo", "GDAL's netCDF driver on the fixtures")
    {
        return;
    }
    let Some(python) = python_with("netCDF4") else {
        return;
    };
    let mut total = 0;
    for dir in [fixtures(), features(), repo().join("tests/fixtures/zarr")] {
        let (arrays, merged) = with_merged(&dir);
        let n = check(&python, &arrays, &merged, 1);
        assert!(n > 0, "{}: nothing checked", dir.display());
        total += n;
    }
    println!("{total} fixtures: every state's array.nc equals TileDB's reads");
    assert!(total >= 30, "{total}");
}

#[test]
fn shared_corpus_reads_in_netcdf4_and_xarray_as_tiledb_reads_it() {
    let Some(corpus) = shared_or_skip(shared_corpus()) else {
        return;
    };
    if !fuse_available("netCDF readers through the mount") {
        return;
    }
    let Some(python) = python_with("netCDF4") else {
        return;
    };
    let (arrays, merged) = corpus_files(&corpus);
    let n = check(&python, &arrays, &merged, 25);
    println!(
        "{n} corpus arrays: array.nc of the latest and an earlier state equals TileDB's reads"
    );
    assert!(n > 400, "{n}");
}

/// A 1024 x 1024 float64 array (8 MiB) in tiles of 16 rows under an MD5 checksum,
/// written by TileDB-Py in two fragments: rows 0-511 at 1, rows 512-1023 at 2.
fn big_array(python: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let array = dir.path().join("big");
    run_python(
        python,
        r#"
import sys, numpy as np, tiledb
dom = tiledb.Domain(tiledb.Dim(name="y", domain=(0, 1023), tile=16, dtype=np.int32),
                    tiledb.Dim(name="x", domain=(0, 1023), tile=1024, dtype=np.int32))
attr = tiledb.Attr("v", np.float64, filters=tiledb.FilterList([tiledb.ChecksumMD5Filter()]))
tiledb.Array.create(sys.argv[1], tiledb.ArraySchema(domain=dom, attrs=[attr]))
v = np.arange(1 << 20, dtype=np.float64).reshape(1024, 1024)
for t, rows in ((1, slice(0, 512)), (2, slice(512, 1024))):
    with tiledb.open(sys.argv[1], "w", timestamp=t) as A:
        A[rows, :] = v[rows]
"#,
        &[&array],
    );
    (dir, array)
}

/// A slice through netCDF4-python decodes only the tiles under it (and what the
/// kernel's read-ahead brings), beyond what opening the file decodes. The array (1024 x
/// 1024 float64 in tiles of 16 rows, 8 MiB) is written here by TileDB-Py.
#[test]
fn a_slice_decodes_only_the_tiles_it_needs() {
    if !fuse_available("netCDF slices") {
        return;
    }
    let Some(python) = python_with("netCDF4") else {
        return;
    };
    let (_dir, array) = big_array(&python);
    let expected = serde_json::json!({});
    let slice = r#"
import sys, netCDF4
ds = netCDF4.Dataset(sys.argv[1] + "/latest/array.nc")
ds.set_auto_maskandscale(False)
v = ds.variables["v"][700, 10:20]
assert list(v) == [700 * 1024 + i for i in range(10, 20)], v
print(ds.variables["v"].shape)
"#;
    let whole = {
        let m = InProcess::new(&array, &expected, 16 << 20, 2);
        std::fs::read(m.path().join("latest/v/values.bin")).unwrap();
        m.view.chunks_decoded()
    };
    // netCDF-C reads the file's first 4 MiB when it opens it (and 8 bytes at every
    // power of two, looking for an HDF5 signature): those tiles are decoded by the
    // open, before any slice.
    let opened = {
        let m = InProcess::new(&array, &expected, 16 << 20, 2);
        let open = "import sys, netCDF4; netCDF4.Dataset(sys.argv[1] + '/latest/array.nc').close()";
        run_python(&python, open, &[m.path()]);
        m.view.chunks_decoded()
    };
    let m = InProcess::new(&array, &expected, 16 << 20, 2);
    let out = run_python(&python, slice, &[m.path()]);
    assert!(out.contains("(1024, 1024)"), "{out}");
    // Row 700 lies past the first 4 MiB: its own tile (2 chunks) and what the kernel
    // reads around it, no more. The kernel's read-ahead of the open (128 KiB, one
    // tile) may still be in flight when a reader exits, so each run's count of the open
    // may be a tile short: the difference is the slice's give or take one tile.
    let total = m.view.chunks_decoded();
    let sliced = total.saturating_sub(opened);
    assert!(
        sliced <= 6 && total < whole,
        "open {opened}, open and slice {total}, whole {whole}"
    );
}

/// GDAL's netCDF driver opens a 2-D variable: its size and type, and `gdal_translate`
/// to a raw ENVI file gives TileDB's values (GDAL flips nothing: the coordinates rise).
#[test]
fn gdal_reads_a_2d_variable() {
    if !fuse_available("GDAL through the mount")
        || !tool_available("gdalinfo", "GDAL's netCDF driver")
    {
        return;
    }
    let m = mount_feature("merge_dense_overlap");
    let dataset = format!(
        "NETCDF:\"{}\":i32",
        m.path().join("latest/array.nc").display()
    );
    let info = run_ok(Command::new("gdalinfo").arg(&dataset));
    assert!(
        info.contains("Driver: netCDF/Network Common Data Format"),
        "{info}"
    );
    assert!(info.contains("Size is 8, 6"), "{info}");
    assert!(info.contains("Type=Int32"), "{info}");
    assert!(info.contains("NoData Value=-1"), "{info}");
    let out = tempfile::tempdir().unwrap();
    let raw = out.path().join("i32.bin");
    run_ok(
        Command::new("gdal_translate")
            .args(["-q", "-of", "ENVI"])
            .arg(&dataset)
            .arg(&raw),
    );
    let got: Vec<i32> = std::fs::read(&raw)
        .unwrap()
        .chunks(4)
        .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let merged: Value = serde_json::from_slice(
        &std::fs::read(features().join("merge_dense_overlap.merged.json")).unwrap(),
    )
    .unwrap();
    let want: Vec<i32> = merged["reads"][0]["fields"]
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
    // GDAL writes rows north-up: with rising y coordinates (r 1..6) the last row first.
    let rows: Vec<&[i32]> = want.chunks(8).collect();
    let flipped: Vec<i32> = rows.iter().rev().flat_map(|r| r.iter().copied()).collect();
    assert!(got == want || got == flipped, "{got:?}\n{want:?}");
}

/// `ls -l` of a state folder sizes `array.nc` from metadata (a dense state: exact at
/// once; a sparse one: once its cells are counted), and its size is the file's.
#[test]
fn the_size_is_known_from_metadata() {
    use fragfs::view::{ArrayTree, FileTree};
    let t = ArrayTree::open_path(
        &features().join("merge_dense_overlap"),
        Default::default(),
        16 << 20,
    )
    .unwrap();
    let ino = t.resolve("latest/array.nc").unwrap();
    let st = t.stat(ino).unwrap();
    assert!(st.exact_size && st.size > 0);
    assert_eq!(t.chunks_decoded(), 0, "stat decoded a tile");
    let whole = t.read_at(ino, 0, u64::MAX).unwrap();
    assert_eq!(whole.len() as u64, st.size);
    assert_eq!(&whole[..4], b"CDF\x02");
    // Any pieces give the same bytes.
    for step in [1u64, 3, 7, 100] {
        let mut pieces = Vec::new();
        let mut at = 0;
        while at < st.size + 5 {
            pieces.extend(t.read_at(ino, at, step).unwrap());
            at += step;
        }
        assert_eq!(pieces, whole, "pieces of {step}");
    }
    // Fragments have no array.nc.
    let frag = t.list(t.resolve("fragments").unwrap()).unwrap()[0]
        .name
        .clone();
    assert!(t.resolve(&format!("fragments/{frag}/array.nc")).is_err());
    let s = ArrayTree::open_path(
        &features().join("merge_sparse_overlap"),
        Default::default(),
        16 << 20,
    )
    .unwrap();
    let ino = s.resolve("latest/array.nc").unwrap();
    let size = s.size(ino).unwrap();
    assert_eq!(s.read_at(ino, 0, u64::MAX).unwrap().len() as u64, size);
    assert_eq!(s.stat(ino).unwrap().size, size);
}

/// A damaged tile (the first of the second fragment: rows 512-527, past the 4 MiB
/// netCDF-C reads when it opens the file): the reads over it fail with EIO, never wrong
/// bytes; the header, the coordinates and the other rows still read.
#[test]
fn a_corrupt_tile_fails_its_reads_only() {
    if !fuse_available("corrupt tiles through the mount") {
        return;
    }
    let Some(python) = python_with("netCDF4") else {
        return;
    };
    let (_dir, array) = big_array(&python);
    let second = std::fs::read_dir(array.join("__fragments"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .max()
        .unwrap();
    corrupt_first_chunk(&second.join("a0.tdb"));
    let m = InProcess::new(&array, &serde_json::json!({}), 16 << 20, 2);
    let script = r#"
import sys, netCDF4
ds = netCDF4.Dataset(sys.argv[1] + "/latest/array.nc")
ds.set_auto_maskandscale(False)
assert list(ds.variables["y"][:]) == list(range(1024))
v = ds.variables["v"]
assert v[0, 5] == 5 and v[900, 1] == 900 * 1024 + 1
try:
    v[520, :]
    print("read a damaged row")
except (RuntimeError, OSError) as e:
    print("failed", e)
"#;
    let out = run_python(&python, script, &[m.path()]);
    assert!(out.starts_with("failed"), "{out}");
    // The read itself is EIO; the header still reads.
    let f = std::fs::File::open(m.path().join("latest/array.nc")).unwrap();
    let mut header = [0u8; 4];
    std::os::unix::fs::FileExt::read_exact_at(&f, &mut header, 0).unwrap();
    assert_eq!(&header, b"CDF\x02");
    let mut buf = vec![0u8; 8192];
    let row = 4096 + 520 * 8192;
    let err = std::os::unix::fs::FileExt::read_exact_at(&f, &mut buf, row).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EIO), "{err}");
}
