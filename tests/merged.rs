//! The merged view (`latest/`, `at/<T>/`): every read TileDB made of every array (its
//! `<array>.merged.json`: the latest state and every fragment timestamp) equals what
//! fragfs serves, byte for byte: the repo's fixtures, the feature fixtures that cover each
//! rule, and the whole shared corpus when it is beside the repo.

mod common;

use common::*;
use fragfs::view::FileTree;

/// Checks every array of `arrays`; failures listed, not stopping at the first.
fn check_all(arrays: &[(std::path::PathBuf, serde_json::Value)]) -> (usize, Vec<String>) {
    let mut reads = 0;
    let mut failures = Vec::new();
    for (array, merged) in arrays {
        let key = merged["encryption"]["key"].as_str().map(String::from);
        let expected = serde_json::json!({"encryption": {"key": key}});
        let result = open_view(array, &expected)
            .map_err(|e| format!("open: {e}"))
            .and_then(|tree| check_merged(&tree, merged));
        match result {
            Ok(n) => reads += n,
            Err(e) => failures.push(format!("{}: {e}", array.display())),
        }
    }
    (reads, failures)
}

#[test]
fn fixtures_read_merged_as_tiledb_reads_them() {
    let (_, arrays) = fixture_files();
    assert!(arrays.len() >= 30, "{} merged.json files", arrays.len());
    let (reads, failures) = check_all(&arrays);
    println!("{} arrays, {reads} reads", arrays.len());
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Arrays consolidated every way TileDB-Py 0.36.1 can (vacuumed or not, purging deleted
/// cells or not, twice, a window of timestamps, commits consolidated, dense and sparse,
/// duplicates allowed or not) with deletes and later writes, read by TileDB at every
/// timestamp from 0 to one past the last operation: every state equals fragfs's, and
/// every live fragment its `<array>.expected.json`.
#[test]
fn consolidation_fixtures_read_merged_as_tiledb_reads_them() {
    let dir = repo().join("tests/fixtures/consolidation");
    let arrays = merged_files(&dir);
    assert!(arrays.len() >= 20, "{} merged.json files", arrays.len());
    let (reads, mut failures) = check_all(&arrays);
    // Every array but one (sparse_equal_timestamps_vacuumed: see the folder's README).
    let expected = expected_files(&dir);
    assert_eq!(expected.len() + 1, arrays.len());
    for (array, doc) in &expected {
        let checked = open_view(array, doc)
            .map_err(|e| format!("open: {e}"))
            .and_then(|tree| check_tree(&tree, doc));
        if let Err(e) = checked {
            failures.push(format!("{} (fragments): {e}", array.display()));
        }
    }
    println!("{} arrays, {reads} reads", arrays.len());
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn shared_corpus_reads_merged_as_tiledb_reads_it() {
    let Some(corpus) = shared_or_skip(shared_corpus()) else {
        return;
    };
    let (_, arrays) = corpus_files(&corpus);
    assert_eq!(arrays.len(), 525);
    let (reads, failures) = check_all(&arrays);
    println!("{} arrays, {reads} reads", arrays.len());
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// GDAL opens `bin` through the `values.hdr` beside it as an ENVI raster of `(samples,
/// lines, bands)`, and what it copies out is exactly `bin`'s bytes.
fn gdal_reads_the_raster(
    bin: &std::path::Path,
    (samples, lines, bands): (u64, u64, usize),
    what: &str,
) {
    let info = run_ok(std::process::Command::new("gdalinfo").arg(bin));
    assert!(
        info.contains("Driver: ENVI/ENVI") && info.contains(&format!("Size is {samples}, {lines}")),
        "{what}:\n{info}"
    );
    assert_eq!(info.matches("\nBand ").count(), bands, "{what}:\n{info}");
    let out = tempfile::tempdir().unwrap();
    let copy = out.path().join("copy.bin");
    run_ok(
        std::process::Command::new("gdal_translate")
            .args(["-q", "-of", "ENVI"])
            .arg(bin)
            .arg(&copy),
    );
    assert_eq!(
        std::fs::read(&copy).unwrap(),
        std::fs::read(bin).unwrap(),
        "{what}: GDAL's copy differs from the values"
    );
}

/// GDAL (Debian's gdal-bin, which has no TileDB driver) opens `values.bin` of a dense 2-D
/// or 3-D attribute through its `values.hdr`: the size, bands and type it reports are the
/// array's, and what it translates is exactly the merged values (checked against TileDB's
/// read above).
#[test]
fn gdal_opens_dense_rasters_through_their_envi_headers() {
    use common::mounting::*;
    if !fuse_available("GDAL on the merged view") {
        return;
    }
    if !tool_available("gdalinfo", "GDAL (scripts/test.sh installs gdal-bin)") {
        return;
    }
    let cases = [
        ("merge_dense_overlap", vec!["i32", "f64", "n"], (8, 6, 1)),
        ("merge_dense_3d", vec!["u16", "f32"], (4, 4, 3)),
    ];
    for (name, attrs, (samples, lines, bands)) in cases {
        let (array, expected) = feature(name);
        let m = InProcess::new(&array, &expected, 16 << 20, 2);
        for attr in attrs {
            let dir = m.path().join("latest").join(attr);
            let bin = dir.join("values.bin");
            assert!(
                dir.join("values.hdr").is_file(),
                "{name}/{attr}: no values.hdr"
            );
            gdal_reads_the_raster(&bin, (samples, lines, bands), &format!("{name}/{attr}"));
        }
        // No header where GDAL has nothing to read: var-size attributes, dimensions.
        assert!(!m.path().join("latest/s/values.hdr").exists() || name != "merge_dense_overlap");
        assert!(!m
            .path()
            .join("latest")
            .join(if name == "merge_dense_3d" { "x" } else { "r" })
            .join("values.hdr")
            .exists());
    }
}

/// A dense fragment's `values.bin` is a raster where its tiles lie in row-major order (one
/// tile across every dimension but the first): there, and only there, it has a
/// `values.hdr`, and GDAL opens the fragment's values through it, copying exactly their
/// bytes. In `merge_dense_overlap` (r tile 3, c tile 4) the write of r 5-6, c 7-8 is one
/// tile (r 4-6 x c 5-8); every other write spans two tiles across c.
#[test]
fn gdal_opens_fragment_rasters_through_their_envi_headers() {
    use common::mounting::*;
    if !fuse_available("GDAL on fragment rasters") {
        return;
    }
    if !tool_available("gdalinfo", "GDAL (scripts/test.sh installs gdal-bin)") {
        return;
    }
    let (array, expected) = feature("merge_dense_overlap");
    let m = InProcess::new(&array, &expected, 16 << 20, 2);
    let mut fragments: Vec<_> = std::fs::read_dir(m.path().join("fragments"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    fragments.sort();
    assert_eq!(fragments.len(), 4, "four writes");
    let with_header: Vec<bool> = fragments
        .iter()
        .map(|f| f.join("i32/values.hdr").is_file())
        .collect();
    assert_eq!(with_header, [false, false, false, true], "{fragments:?}");
    let raster = &fragments[3];
    for attr in ["i32", "f64", "n"] {
        let bin = raster.join(attr).join("values.bin");
        gdal_reads_the_raster(&bin, (4, 3, 1), attr);
    }
    // Var-size attributes and dimensions have none.
    assert!(!raster.join("s/values.hdr").exists());
    assert!(!raster.join("r/values.hdr").exists());
    let header = std::fs::read_to_string(raster.join("i32/values.hdr")).unwrap();
    assert!(
        header.contains("map info = {Arbitrary, 1, 1, 5, 4, 1, 1, 0}"),
        "the raster starts at the tile's first cell, c 5 and r 4:\n{header}"
    );
}

/// `at/` lists the timestamps where the array changed; any other timestamp opens by
/// name; a name that is not a timestamp is not there.
#[test]
fn at_lists_change_timestamps_and_opens_any_other() {
    let (array, expected) = feature("merge_sparse_overlap");
    let tree = open_view(&array, &expected).unwrap();
    let at = tree.resolve("at").unwrap();
    let listed: Vec<String> = tree.list(at).unwrap().into_iter().map(|e| e.name).collect();
    let merged: serde_json::Value =
        serde_json::from_slice(&std::fs::read(array.with_extension("merged.json")).unwrap())
            .unwrap();
    for read in merged["reads"].as_array().unwrap() {
        if let Some(t) = read["timestamp"].as_u64() {
            assert!(
                listed.contains(&t.to_string()),
                "at/ lists {listed:?}, not {t}"
            );
        }
    }
    // A timestamp never listed: the state as of then (here: before the first write, so
    // empty; and far in the future: as latest).
    let before = tree.resolve("at/0/read.json").unwrap();
    let info: serde_json::Value =
        serde_json::from_slice(&read_all(&tree, before).unwrap()).unwrap();
    assert_eq!(info["cell_count"], 0);
    let future = tree.resolve("at/99999999999999/read.json").unwrap();
    let latest = tree.resolve("latest/read.json").unwrap();
    let cells = |node| {
        let v: serde_json::Value = serde_json::from_slice(&read_all(&tree, node).unwrap()).unwrap();
        v["cell_count"].clone()
    };
    assert_eq!(cells(future), cells(latest));
    for bad in ["abc", "-1", "01", "1.5"] {
        let err = tree.resolve(&format!("at/{bad}")).unwrap_err();
        assert_eq!(err.errno(), libc::ENOENT, "at/{bad}");
    }
}

/// A read of `latest/` decodes only the chunks of the fragments that supply its cells:
/// of cells several fragments wrote, the newest's.
#[test]
fn a_merged_read_decodes_only_the_newest_fragments_chunks() {
    let (array, expected) = feature("merge_dense_overlap");
    let tree = open_view(&array, &expected).unwrap();
    let node = tree.resolve("latest/i32/values.bin").unwrap();
    let size = tree.size(node).unwrap();
    assert_eq!(tree.chunks_decoded(), 0, "sizes decode nothing");
    // One cell, then the whole file: the whole file needs every fragment that supplies
    // a cell; one cell needs at most its own fragment's chunk.
    tree.read_at(node, 0, 4).unwrap();
    let one = tree.chunks_decoded();
    assert!(one <= 1, "one cell decoded {one} chunks");
    read_all(&tree, node).unwrap();
    assert!(tree.chunks_decoded() >= one);
    assert!(size > 0);
}

/// A merged state is merged once, whatever reads it: the pass that counts its cells
/// keeps a record of the merge (which source each cell comes from) and later reads
/// replay it. A table file's layout takes that pass (it finds the row groups'
/// statistics on the way) and nothing more, though four of its columns need facts
/// read from their cells; reading the file, or laying out the other, merges nothing
/// more. Where the record is over its budget (an eighth of the cache), reads merge
/// again: the layout's facts, a row group once for all its columns.
#[test]
fn a_state_is_merged_once_whatever_reads_it() {
    let (array, expected) = feature("merge_sparse_overlap");
    let count = |tree: &fragfs::view::tiledb::ArrayTree| {
        let info = tree.resolve("latest/read.json").unwrap();
        let v: serde_json::Value = serde_json::from_slice(&read_all(tree, info).unwrap()).unwrap();
        v["cell_count"].as_u64().unwrap()
    };
    let open = |cache: u64| {
        fragfs::view::tiledb::ArrayTree::open_path(&array, options_for(&expected), cache).unwrap()
    };
    for (cache, layout_passes) in [(64 << 20, 1), (64, 2)] {
        let tree = open(cache);
        let parquet = tree.resolve("latest/cells.parquet").unwrap();
        assert_eq!(tree.cells_merged(), 0, "a lookup merges nothing");
        tree.read_at(parquet, 0, 4).unwrap();
        let laid_out = tree.cells_merged();
        let cells = count(&tree);
        assert!(cells > 2, "{cells} cells");
        assert_eq!(
            laid_out,
            layout_passes * cells,
            "cache {cache}: laying out the table"
        );
        assert_eq!(tree.cells_merged(), laid_out, "the count was kept");
        let parquet_bytes = read_all(&tree, parquet).unwrap();
        let arrow = tree.resolve("latest/cells.arrow").unwrap();
        let arrow_bytes = read_all(&tree, arrow).unwrap();
        if cache > 64 {
            assert_eq!(tree.cells_merged(), laid_out, "reading merged again");
        }
        // The same bytes as a tree that merges for every read (with so small a cache,
        // nothing is kept: each read lays the file out again).
        let again = open(64);
        let read = |name: &str| read_all(&again, again.resolve(name).unwrap()).unwrap();
        assert!(
            read("latest/cells.parquet") == parquet_bytes,
            "cache {cache}"
        );
        assert!(read("latest/cells.arrow") == arrow_bytes, "cache {cache}");
    }
}

/// A corrupt tile in one fragment: the merged files that need it fail (EIO, naming the
/// fragment), the others are still served.
#[test]
fn a_corrupt_tile_fails_the_merged_files_that_need_it_only() {
    let (array, expected) = feature("merge_dense_overlap");
    let tmp = tempfile::tempdir().unwrap();
    let copy = tmp.path().join("a");
    copy_dir(&array, &copy);
    // The newest fragment's f64 file, its data bytes cut short.
    let newest = expected["fragments"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    let dir = copy.join(newest["fragment_dir"].as_str().unwrap());
    let f64_file = newest["fields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "f64")
        .unwrap()["files"]["data"]
        .as_str()
        .unwrap()
        .to_string();
    let bytes = std::fs::read(dir.join(&f64_file)).unwrap();
    std::fs::write(dir.join(&f64_file), &bytes[..bytes.len() / 2]).unwrap();
    let tree = open_view(&copy, &expected).unwrap();
    let bad = tree.resolve("latest/f64/values.bin").unwrap();
    let err = read_all(&tree, bad).unwrap_err();
    assert_eq!(err.errno(), libc::EIO);
    let name = newest["fragment_dir"]
        .as_str()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap();
    assert!(err.to_string().contains(name), "{err}");
    assert!(err.to_string().contains(&f64_file), "{err}");
    // The other attributes, and the same one as it was before that fragment, read.
    let good = tree.resolve("latest/i32/values.bin").unwrap();
    assert!(read_all(&tree, good).is_ok());
    let t = newest["timestamp_range"][0].as_u64().unwrap() - 1;
    let before = tree.resolve(&format!("at/{t}/f64/values.bin")).unwrap();
    assert!(read_all(&tree, before).is_ok());
}

/// A state stays merged (and its rendered files kept) across rescans that did not change
/// it: a writer committing later fragments every second would otherwise have every old
/// `at/<T>` merged and rendered again every second. A fragment visible at `T` (or gone
/// from it) changes the state, which is merged again, showing it.
#[test]
fn a_state_stays_merged_until_a_rescan_changes_it() {
    let tmp = tempfile::tempdir().unwrap();
    let array = tmp.path().join("many");
    many_fragments(&array, 10, 100);
    let tree = fragfs::view::ArrayTree::open_path(&array, Default::default(), 16 << 20)
        .unwrap()
        .with_refresh_interval(std::time::Duration::MAX);
    let read = |path: &str| read_all(&tree, tree.resolve(path).unwrap()).unwrap();
    let json = |path: &str| serde_json::from_slice::<serde_json::Value>(&read(path)).unwrap();
    let fragments = |v: &serde_json::Value| v["fragments"].as_array().unwrap().len();
    assert_eq!(fragments(&json("at/105/read.json")), 6);
    let renders = tree.files_rendered();
    // Later fragments: at/105 is what it was, and is not made again.
    many_fragments(&array, 5, 200);
    assert!(tree.refresh().unwrap(), "the rescan saw the new fragments");
    assert_eq!(fragments(&json("at/105/read.json")), 6);
    assert_eq!(tree.files_rendered(), renders, "at/105 rendered again");
    assert_eq!(fragments(&json("latest/read.json")), 15, "latest/ has them");
    // A fragment at 103: at/105 changed.
    let renders = tree.files_rendered();
    many_fragments(&array, 1, 50);
    let moved = array
        .join("__fragments")
        .join(format!("__103_103_{:032x}_22", 50u64));
    std::fs::rename(
        array
            .join("__fragments")
            .join(format!("__50_50_{:032x}_22", 50u64)),
        &moved,
    )
    .unwrap();
    std::fs::rename(
        array
            .join("__commits")
            .join(format!("__50_50_{:032x}_22.wrt", 50u64)),
        array
            .join("__commits")
            .join(format!("__103_103_{:032x}_22.wrt", 50u64)),
    )
    .unwrap();
    assert!(tree.refresh().unwrap());
    assert_eq!(fragments(&json("at/105/read.json")), 7);
    assert!(tree.files_rendered() > renders);
}
