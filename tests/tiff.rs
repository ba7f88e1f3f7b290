//! `<attr>/values.tif`: dense 2-D/3-D single-value numeric attributes as TIFF, read by
//! real readers through real mounts: tifffile and PIL (tests/check_tiff.py) against
//! TileDB's reads (merged.json) and TileDB-Py's fill values, at the latest state and at
//! every earlier timestamp merged.json holds; libtiff's `tiffinfo` and GDAL's GTiff
//! driver (`gdalinfo -json`, `gdal_translate -of ENVI`) on every values.tif of the latest
//! state of every fixture (tests/fixtures/{tiledb,features,hilbert,soma,zarr,tiff}) and
//! of every 16th array of the shared corpus. Also: a per-fragment values.tif, a window
//! read decoding only the tiles under its strips, a damaged tile (EIO, the header and
//! other fields still read), sizes from metadata, what array.json / read.json say, and the BigTIFF
//! layout (forced on a small raster) read by tifffile, tiffinfo and GDAL.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::mounting::*;
use common::*;
use serde_json::Value;

fn tiff_fixtures() -> PathBuf {
    repo().join("tests/fixtures/tiff")
}

/// Counts from the checker's "ok" lines: arrays checked, and files (by tifffile, PIL,
/// the command-line tools).
#[derive(Default, Debug, Clone, Copy)]
struct Counts {
    arrays: usize,
    files: usize,
    pil: usize,
    cli: usize,
}

fn count(stdout: &str) -> Counts {
    let mut c = Counts::default();
    for line in stdout.lines().filter(|l| l.starts_with("ok ")) {
        c.arrays += 1;
        let n = |what: &str| -> usize {
            let at = line.find(what).unwrap_or_else(|| panic!("{line}"));
            line[..at]
                .trim_end()
                .rsplit(' ')
                .next()
                .and_then(|x| x.parse().ok())
                .unwrap_or_else(|| panic!("{line}"))
        };
        c.files += n(" files");
        c.pil += n(" by PIL");
        c.cli += n(" by tiffinfo");
    }
    c
}

/// Runs tests/check_tiff.py over the arrays with TileDB's merged reads; `cli(i)` says
/// whether array `i` also goes through tiffinfo and GDAL.
fn check(
    python: &str,
    merged: &[(PathBuf, Value)],
    expected: &[(PathBuf, Value)],
    cli: impl Fn(usize) -> bool + Sync,
) -> Counts {
    let (stdout, _) = check_in_batches(python, "check_tiff.py", merged, expected, |i, _| {
        Some(serde_json::json!({ "cli": cli(i) }))
    });
    count(&stdout)
}

/// Whether the readers are here: tifffile and PIL in the test Python, tiffinfo and GDAL.
fn readers() -> Option<String> {
    if !fuse_available("values.tif through the mount") {
        return None;
    }
    let python = python_with("tifffile")?;
    python_with("PIL")?;
    if !tool_available("gdalinfo", "GDAL reads values.tif")
        || !tool_available("gdal_translate", "GDAL reads values.tif")
    {
        return None;
    }
    // tiffinfo has no --version: asked with no file, it prints its usage.
    if Command::new("tiffinfo").output().is_err() {
        let reason = "tiffinfo is not installed (libtiff-tools): it reads values.tif";
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI=true but {reason}"
        );
        skip(reason);
        return None;
    }
    Some(python)
}

#[test]
fn fixtures_read_in_tifffile_pil_tiffinfo_and_gdal_as_tiledb_reads_them() {
    let Some(python) = readers() else { return };
    let (mut arrays, mut merged) = fixture_files();
    for dir in [repo().join("tests/fixtures/zarr"), tiff_fixtures()] {
        arrays.extend(expected_files(&dir));
        merged.extend(merged_files(&dir));
    }
    let c = check(&python, &merged, &arrays, |_| true);
    println!("{c:?}");
    assert_eq!(c.arrays, merged.len());
    // Every fixture's files at the latest state went through the command-line tools.
    assert!(c.cli >= 20 && c.cli < c.files, "{c:?}");
    assert!(c.files >= 70, "{c:?}");
    assert!(c.pil >= 3, "{c:?}");
}

#[test]
fn shared_corpus_reads_in_tifffile_as_tiledb_reads_it() {
    let Some(corpus) = shared_or_skip(shared_corpus()) else {
        return;
    };
    let Some(python) = readers() else { return };
    let (arrays, merged) = corpus_files(&corpus);
    let c = check(&python, &merged, &arrays, |i| i % 16 == 0);
    println!("corpus through values.tif: {c:?}");
    assert_eq!(c.arrays, merged.len());
    assert!(c.files > 300 && c.cli > 10, "{c:?}");
}

fn mount_tiff(name: &str) -> InProcess {
    InProcess::new(&tiff_fixtures().join(name), &Value::Null, 16 << 20, 2)
}

/// The folders of `fragments/`, oldest first.
fn fragment_folders(mnt: &Path) -> Vec<PathBuf> {
    let mut f: Vec<PathBuf> = std::fs::read_dir(mnt.join("fragments"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    f.sort();
    f
}

/// tiff_strips, latest and at every timestamp, and the fragment written at 2 (rows 3-4 of
/// one tile column: its values.bin is a raster), read by tifffile equal to TileDB-Py's
/// read; the fragment of several tile columns (written at 1) has no values.tif.
#[test]
fn several_strips_and_a_fragment_read_as_tiledb_py_reads_them() {
    let Some(python) = readers() else { return };
    let m = mount_tiff("tiff_strips");
    let frags = fragment_folders(m.path());
    assert_eq!(frags.len(), 3);
    assert!(!frags[0].join("f32/values.tif").exists());
    assert!(!frags[0].join("f32/values.hdr").exists());
    assert!(frags[1].join("f32/values.tif").exists());
    assert!(frags[2].join("u16/values.tif").exists());
    let script = r#"
import sys, numpy as np, tifffile, tiledb
mnt, array, frag = sys.argv[1:4]
for ts, state in [(None, "latest"), (1, "at/1"), (2, "at/2"), (3, "at/3")]:
    with tiledb.open(array, timestamp=None if ts is None else (0, ts)) as A:
        data = A[:]
        fills = {a.name: a.fill for a in A.schema}
    for name in ("u16", "f32", "i8"):
        with tifffile.TiffFile("%s/%s/%s/values.tif" % (mnt, state, name)) as t:
            page = t.pages[0]
            got = page.asarray()
            assert np.array_equal(got, data[name]), (state, name)
            assert page.dtype == data[name].dtype, (state, name, page.dtype)
            assert float(page.nodata) == float(fills[name][0]), (state, name, page.nodata)
            # Several strips, contiguous, right after the header.
            assert len(page.dataoffsets) > 1 or name == "i8", (name, page.dataoffsets)
            assert list(np.diff(page.dataoffsets)) == list(page.databytecounts[:-1]), name
print("states ok")
with tiledb.open(array, timestamp=(2, 2)) as A:
    want = A[3:5, 1:10001]["f32"]
got = tifffile.imread(frag + "/f32/values.tif")
assert np.array_equal(got, want), (got, want)
raw = np.fromfile(frag + "/f32/values.bin", dtype="<f4").reshape(got.shape)
assert np.array_equal(got, raw)
print("fragment ok", got.shape)
"#;
    let out = run_python(
        &python,
        script,
        &[m.path(), &tiff_fixtures().join("tiff_strips"), &frags[1]],
    );
    assert!(
        out.contains("states ok") && out.contains("fragment ok (2, 10000)"),
        "{out}"
    );
}

/// A window of rows read by tifffile (through its Zarr store) and by GDAL
/// (`gdal_translate -srcwin`) reads the header and the strips under it. Through the
/// kernel, reads come in blocks and with read-ahead (Python reads the header as a buffer
/// of 128 KiB, which in this small file reaches into row 0, and the strip in buffers of
/// 128 KiB, past its end), so the bounds are made by the view itself, without the kernel:
/// at least the chunks that reading the strip alone decodes, at most those of the file up
/// to two rows past the strip (rows 0-4: the tiles of r 1-4 and the first chunks of
/// r 5-6), fewer than half the raster's (12 rows in 6 rows of tiles).
#[test]
fn a_window_decodes_only_the_tiles_under_its_strips() {
    use fragfs::view::{ArrayTree, FileTree};
    let Some(python) = readers() else { return };
    // f32 rows are 160,000 bytes, one a strip; row 2 (r = 3) is in the tiles of r 3-4.
    let row = 160_000u64;
    let decoded = |from_row: Option<u64>, to_row: u64| {
        let t = ArrayTree::open_path(
            &tiff_fixtures().join("tiff_strips"),
            Default::default(),
            16 << 20,
        )
        .unwrap();
        let ino = t.resolve("latest/f32/values.tif").unwrap();
        let data_at = t.stat(ino).unwrap().size - 12 * row;
        // None: from the file's start, the header included.
        let from = from_row.map_or(0, |r| data_at + r * row);
        let got = t.read_at(ino, from, data_at + to_row * row - from).unwrap();
        assert_eq!(got.len() as u64, data_at + to_row * row - from);
        t.chunks_decoded()
    };
    let (strip, upper, whole) = (decoded(Some(2), 3), decoded(None, 5), decoded(None, 12));
    assert!(
        strip > 0 && upper <= whole / 2,
        "strip {strip}, upper {upper}, all {whole}"
    );
    let script = r#"
import sys, numpy as np, tifffile, zarr
store = tifffile.imread(sys.argv[1] + "/latest/f32/values.tif", aszarr=True)
z = zarr.open(store, mode="r")
print(float(np.asarray(z[2:3, 100:200]).sum()))
"#;
    // Through the kernel, its read-ahead may reach a row of tiles further than the
    // reader asked (still in flight when the reader is done: with both cores busy it
    // once decoded 21 chunks against the 20 up to row 4), so the bound of the reads
    // through the mount is one row of tiles more, and still not the whole raster.
    let kernel_upper = decoded(None, 7);
    assert!(kernel_upper < whole, "{kernel_upper} of {whole}");
    let m = mount_tiff("tiff_strips");
    run_python(&python, script, &[m.path()]);
    let got = m.view.chunks_decoded();
    assert!(
        strip <= got && got <= kernel_upper,
        "tifffile {got}: strip {strip}, upper {kernel_upper}"
    );
    let m = mount_tiff("tiff_strips");
    let out = tempfile::tempdir().unwrap();
    run_ok(
        Command::new("gdal_translate")
            .args(["-q", "-of", "ENVI", "-srcwin", "0", "2", "40000", "1"])
            .arg(m.path().join("latest/f32/values.tif"))
            .arg(out.path().join("row.bin")),
    );
    let got = m.view.chunks_decoded();
    assert!(
        strip <= got && got <= kernel_upper,
        "GDAL {got}: strip {strip}, upper {kernel_upper}"
    );
    assert_eq!(
        std::fs::read(out.path().join("row.bin")).unwrap().len() as u64,
        row
    );
}

/// A damaged tile: a read of values.tif that touches it fails with EIO, never other
/// bytes; the header, the strips elsewhere and the other fields' files still read.
#[test]
fn a_damaged_tile_gives_eio_and_the_rest_reads() {
    if !fuse_available("a damaged values.tif through the mount") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let array = tmp.path().join("tiff_strips");
    copy_dir(&tiff_fixtures().join("tiff_strips"), &array);
    let last = std::fs::read_dir(array.join("__fragments"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .max()
        .unwrap();
    // f32 (a1.tdb, SHA-256 checked) of the fragment written at 3: its one tile is r 5-6,
    // c 30001-40000, the last two rows, far enough from the header that the kernel's
    // read-ahead after a header read does not reach it.
    corrupt_first_chunk(&last.join("a1.tdb"));
    let good = mount_tiff("tiff_strips");
    let m = InProcess::new(&array, &Value::Null, 16 << 20, 2);
    let file = |mnt: &Path, p: &str| mnt.join("latest").join(p);
    // The header, rows 0-3 (r 1-4) and 6-11 (r 7-12) read as intact.
    let want = std::fs::read(file(good.path(), "f32/values.tif")).unwrap();
    let read_at = |p: &Path, at: u64, len: usize| -> std::io::Result<Vec<u8>> {
        use std::os::unix::fs::FileExt;
        let f = std::fs::File::open(p)?;
        let mut buf = vec![0u8; len];
        let n = f.read_at(&mut buf, at)?;
        buf.truncate(n);
        Ok(buf)
    };
    let tif = file(m.path(), "f32/values.tif");
    let header = read_at(&tif, 0, 4096).unwrap();
    assert_eq!(header, want[..4096]);
    let data_at = want.len() as u64 - 12 * 160_000;
    let head = read_at(&tif, data_at, 4 * 160_000).unwrap();
    assert_eq!(
        head,
        want[data_at as usize..(data_at + 4 * 160_000) as usize]
    );
    let tail = read_at(&tif, data_at + 6 * 160_000, 6 * 160_000).unwrap();
    assert_eq!(tail, want[(data_at + 6 * 160_000) as usize..]);
    // Row 4's strip is under the damaged chunk.
    let err = read_at(&tif, data_at + 4 * 160_000 + 120_000, 4096).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EIO), "{err}");
    let err = std::fs::read(&tif).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EIO), "{err}");
    // The other fields' files read whole.
    assert_eq!(
        std::fs::read(file(m.path(), "u16/values.tif")).unwrap(),
        std::fs::read(file(good.path(), "u16/values.tif")).unwrap()
    );
}

/// `stat` of a state folder's values.tif is exact and costs no decoded tile; the file
/// reads to exactly that size.
#[test]
fn sizes_come_from_metadata() {
    use fragfs::view::{ArrayTree, FileTree};
    let t = ArrayTree::open_path(
        &tiff_fixtures().join("tiff_strips"),
        Default::default(),
        16 << 20,
    )
    .unwrap();
    let mut sizes = Vec::new();
    for p in [
        "latest/f32/values.tif",
        "at/2/u16/values.tif",
        "latest/i8/values.tif",
    ] {
        let ino = t.resolve(p).unwrap();
        let st = t.stat(ino).unwrap();
        assert!(st.exact_size, "{p}");
        sizes.push((ino, st.size));
    }
    for p in ["latest", "at/1/f32"] {
        t.list(t.resolve(p).unwrap()).unwrap();
    }
    assert_eq!(t.chunks_decoded(), 0);
    for (ino, size) in sizes {
        assert_eq!(read_all(&t, ino).unwrap().len() as u64, size);
    }
    // f32: 12 x 40000 x 4 bytes after the header.
    let f32 = t.resolve("latest/f32/values.tif").unwrap();
    assert!(t.stat(f32).unwrap().size - 1_920_000 < 1024);
}

/// array.json and read.json name the attributes with a values.tif, and why the others
/// have none; sparse arrays and arrays of other dimension counts have none.
#[test]
fn array_json_and_read_json_say_what_is_left_out() {
    use fragfs::view::{ArrayTree, FileTree};
    let json = |t: &ArrayTree, p: &str| -> Value {
        serde_json::from_slice(&t.read_at(t.resolve(p).unwrap(), 0, 1 << 20).unwrap()).unwrap()
    };
    let t = ArrayTree::open_path(
        &tiff_fixtures().join("tiff_types"),
        Default::default(),
        16 << 20,
    )
    .unwrap();
    let a = json(&t, "array.json")["tiff"].clone();
    assert_eq!(a["shown"], true, "{a}");
    assert_eq!(
        a["files"],
        serde_json::json!([
            "i8/values.tif",
            "u8/values.tif",
            "i64/values.tif",
            "u64/values.tif",
            "f64/values.tif",
            "ms/values.tif",
            "ok/values.tif"
        ])
    );
    let why = |k: &str| a["not_shown"][k].as_str().unwrap_or_default().to_string();
    assert!(why("pair").contains("2 values per cell"), "{a}");
    assert!(why("s").contains("var-size"), "{a}");
    assert!(why("code").contains("CHAR"), "{a}");
    for state in ["latest", "at/1"] {
        let r = json(&t, &format!("{state}/read.json"))["tiff"].clone();
        assert_eq!(r["files"], a["files"], "{state}");
        assert!(t.resolve(&format!("{state}/ms/values.tif")).is_ok());
        assert!(t.resolve(&format!("{state}/pair/values.tif")).is_err());
    }
    for (dir, name, why) in [
        (features(), "merge_sparse_overlap", "sparse"),
        (fixtures(), "dense_basic", "1 dimensions"),
    ] {
        let Ok(t) = ArrayTree::open_path(&dir.join(name), Default::default(), 16 << 20) else {
            panic!("{name}")
        };
        let a = json(&t, "array.json")["tiff"].clone();
        assert_eq!(a["shown"], false, "{name}: {a}");
        assert!(a["why"].as_str().unwrap().contains(why), "{name}: {a}");
        let r = json(&t, "latest/read.json")["tiff"].clone();
        assert_eq!(r["shown"], false, "{name}: {r}");
    }
}

/// The BigTIFF layout (used above 4 GiB, forced here on a small raster) read by tifffile,
/// tiffinfo and GDAL: the header from `fragfs::encode::tiff`, then the values, as the face
/// serves them. 3 bands of 1000 x 300 UINT16 in 3 strips a band (436, 436, 128 rows).
#[test]
fn bigtiff_layout_reads_in_tifffile_tiffinfo_and_gdal() {
    use fragfs::encode::tiff::{Image, Layout, Sample};
    let Some(python) = readers() else { return };
    let image = Image {
        bands: 3,
        rows: 1000,
        cols: 300,
        sample: Sample::uint(16),
        description: "big".into(),
        nodata: Some("65535".into()),
        origin: Some((10.0, 20.0)),
    };
    let l = Layout::with(image, true).unwrap();
    assert!(l.big && l.strips_per_band == 3 && l.rows_per_strip == 436);
    let mut file = Vec::new();
    l.read_header(0, l.data_offset, &mut file);
    let values: Vec<u16> = (0..3 * 1000 * 300u32)
        .map(|i| (i * 7 % 65521) as u16)
        .collect();
    file.extend(values.iter().flat_map(|v| v.to_le_bytes()));
    assert_eq!(file.len() as u64, l.file_len());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.tif");
    std::fs::write(&path, &file).unwrap();
    let script = r#"
import sys, numpy as np, tifffile
with tifffile.TiffFile(sys.argv[1]) as t:
    assert t.is_bigtiff
    page = t.pages[0]
    a = page.asarray()
    want = (np.arange(3 * 1000 * 300, dtype=np.uint64) * 7 % 65521).astype(np.uint16)
    assert a.shape == (3, 1000, 300) and a.dtype == np.uint16, (a.shape, a.dtype)
    assert np.array_equal(a.ravel(), want)
    assert page.nodata == 65535, page.nodata
print("ok")
"#;
    assert_eq!(run_python(&python, script, &[&path]).trim(), "ok");
    let info = run_ok(Command::new("tiffinfo").arg(&path));
    // The first IFD at 16: a BigTIFF header (a classic one points to 8).
    assert!(
        info.contains("TIFF Directory at offset 0x10 (16)"),
        "{info}"
    );
    assert!(
        info.contains("Image Width: 300 Image Length: 1000"),
        "{info}"
    );
    let g = run_ok(Command::new("gdalinfo").arg(&path));
    assert!(g.contains("Size is 300, 1000"), "{g}");
    assert!(g.contains("Band 3 Block=300x436 Type=UInt16"), "{g}");
    assert!(g.contains("NoData Value=65535"), "{g}");
    assert!(
        g.contains("Origin = (10.000000000000000,20.000000000000000)"),
        "{g}"
    );
}
