//! The format versions no installable TileDB writes, and the ends of the version range.
//!
//! * Format 1 (TileDB 1.4): TileDB's own v1 test array (`tests/fixtures/tiledb-test-inputs`,
//!   values hand-decoded in the spec's fixture README), and arrays **hand-built from the
//!   spec** by `scripts/make_handbuilt_fixtures.py` (`tests/fixtures/handbuilt`): sparse
//!   with zipped and with split coordinates, dense.
//! * Format 23 (TileDB 2.31+): arrays **hand-built from the spec** by the same script:
//!   sparse with global-order bounds, dense with an optional footer section of unknown id.
//! * Older than 1 (TileDB 1.3) or newer than 23: refused with one line naming the version
//!   found and the range supported.
//!
//! The hand-built arrays' expected JSON holds the values the script wrote, so these tests
//! check fragfs against the spec, not against itself.

mod common;

use std::path::Path;
use std::process::Command;

use common::*;
use fragfs::array::OpenOptions;
use fragfs::view::{ArrayTree, FileTree};
use serde_json::Value;

/// Every array of `dir` reads as its expected JSON says, and `info` names the format
/// version and layout of each fragment. Returns the format versions seen.
fn check_all(dir: &Path) -> Vec<u64> {
    let arrays = expected_files(dir);
    assert!(!arrays.is_empty(), "no arrays under {}", dir.display());
    let mut failures = Vec::new();
    let mut versions = Vec::new();
    for (array, expected) in &arrays {
        let checked = check_array(array, expected).and_then(|n| {
            let view = open_view(array, expected).map_err(|e| e.to_string())?;
            walk_tree(&view)?;
            check_info(&view, expected).map(|_| n)
        });
        match checked {
            Ok(n) => assert!(n > 0, "{}: no field checked", array.display()),
            Err(e) => failures.push(format!("{}: {e}", array.display())),
        }
        versions.push(expected["format_version"].as_u64().unwrap());
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    versions.sort();
    versions.dedup();
    versions
}

#[test]
fn tiledbs_v1_test_array_reads_as_hand_decoded() {
    assert_eq!(check_all(&tiledb_test_inputs()), [1]);
}

#[test]
fn hand_built_v1_and_v23_arrays_read_as_written() {
    assert_eq!(check_all(&handbuilt()), [1, 23]);
}

fn view(array: &Path) -> ArrayTree {
    ArrayTree::open_path(array, OpenOptions::default(), 1 << 20).unwrap()
}

fn json_file(view: &ArrayTree, path: &str) -> Value {
    let node = view.resolve(path).unwrap();
    serde_json::from_slice(&read_all(view, node).unwrap()).unwrap()
}

fn only_fragment(view: &ArrayTree) -> String {
    let frags = view.list(view.resolve("fragments").unwrap()).unwrap();
    assert_eq!(frags.len(), 1);
    frags[0].name.clone()
}

/// `06` §4: v23 sparse fragments store, per dimension and tile, the first and the last
/// coordinate in global order. They must be the first and last cell of each tile, as
/// the script wrote them (cells are in global order).
#[test]
fn v23_global_order_bounds_are_each_tiles_first_and_last_coordinates() {
    let name = "v23_sparse_global_order";
    let array = handbuilt().join(name);
    let expected: Value = serde_json::from_slice(
        &std::fs::read(handbuilt().join(format!("{name}.expected.json"))).unwrap(),
    )
    .unwrap();
    let ef = &expected["fragments"][0];
    let counts: Vec<usize> = ef["tile_cell_counts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_u64().unwrap() as usize)
        .collect();
    assert!(counts.len() > 1, "the fixture should have several tiles");
    let view = view(&array);
    let tiles = json_file(
        &view,
        &format!("fragments/{}/tiles.json", only_fragment(&view)),
    );
    let mut dims = 0;
    for field in ef["fields"].as_array().unwrap() {
        let values = field["values"].as_array().unwrap();
        let shown = tiles["fields"][field["name"].as_str().unwrap()]
            .as_array()
            .unwrap();
        assert_eq!(shown.len(), counts.len());
        if field["role"] != "dimension" {
            assert!(shown.iter().all(|t| t.get("global_order_min").is_none()));
            continue;
        }
        dims += 1;
        let mut start = 0;
        for (k, &n) in counts.iter().enumerate() {
            assert_eq!(shown[k]["global_order_min"], values[start], "tile {k}");
            assert_eq!(
                shown[k]["global_order_max"],
                values[start + n - 1],
                "tile {k}"
            );
            start += n;
        }
    }
    assert_eq!(dims, 2, "INT32 and string dimensions");
}

/// `06` §3.4: optional footer sections of unknown identifiers are skipped (and listed).
#[test]
fn v23_unknown_optional_section_is_skipped() {
    let view = view(&handbuilt().join("v23_dense"));
    let frag = only_fragment(&view);
    let footer = json_file(&view, &format!("fragments/{frag}/footer.json"));
    assert_eq!(
        footer["optional_sections"],
        serde_json::json!([{"id": 7, "size": 5}])
    );
    let tiles = json_file(&view, &format!("fragments/{frag}/tiles.json"));
    assert!(tiles["fields"]["v"][0].get("global_order_min").is_none());
}

/// Processed conditions (v16+) name the delete commits a consolidation applied: in the
/// TileDB-written `timestamps_deletes` fixture, the fragment holding delete metadata
/// applied every `.del` up to its last timestamp; a plain later write applied none.
#[test]
fn processed_conditions_name_the_deletes_a_consolidation_applied() {
    let array = fixtures().join("timestamps_deletes");
    let view = view(&array);
    let deletes: Vec<(u64, String)> = std::fs::read_dir(array.join("__commits"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".del"))
        .map(|n| {
            let t = n.trim_start_matches("__").split('_').next().unwrap();
            (t.parse().unwrap(), format!("__commits/{n}"))
        })
        .collect();
    assert_eq!(deletes.len(), 2);
    let mut consolidated = 0;
    for (i, f) in view.array().fragments.iter().enumerate() {
        let meta = f.meta(&view.array().schemas).unwrap();
        let tiles = json_file(&view, &format!("fragments/{}/tiles.json", f.name));
        let shown: Vec<&str> = tiles["processed_conditions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap())
            .collect();
        let want: Vec<&str> = if meta.footer.has_delete_meta {
            consolidated += 1;
            deletes
                .iter()
                .filter(|(t, _)| *t <= f.timestamps.t2)
                .map(|(_, n)| n.as_str())
                .collect()
        } else {
            Vec::new()
        };
        assert_eq!(shown, want, "fragment #{i} {}", f.name);
    }
    assert_eq!(consolidated, 1);
}

fn cli(args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_fragfs"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

fn assert_one_line(stderr: &str, parts: &[&str]) {
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert_names(stderr, parts);
}

#[test]
fn arrays_older_than_format_1_are_refused_in_one_line() {
    let array = tiledb_test_inputs().join("dense_array_v1_3_0");
    for cmd in ["ls", "info"] {
        let (ok, stderr) = cli(&[cmd, array.to_str().unwrap()]);
        assert!(!ok);
        assert_one_line(
            &stderr,
            &["format version 0", "TileDB 1.3", "versions 1 to 23"],
        );
    }
}

/// A private copy of a hand-built array.
fn copy_handbuilt(name: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let array = tmp.path().join(name);
    copy_dir(&handbuilt().join(name), &array);
    (tmp, array)
}

#[test]
fn fragments_newer_than_format_23_are_refused_in_one_line() {
    // A fragment whose name claims format 24: renamed folder and commit file.
    let (_tmp, array) = copy_handbuilt("v23_dense");
    let old = std::fs::read_dir(array.join("__fragments"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .file_name()
        .into_string()
        .unwrap();
    let new = format!("{}_24", old.strip_suffix("_23").unwrap());
    std::fs::rename(
        array.join("__fragments").join(&old),
        array.join("__fragments").join(&new),
    )
    .unwrap();
    std::fs::rename(
        array.join("__commits").join(format!("{old}.wrt")),
        array.join("__commits").join(format!("{new}.wrt")),
    )
    .unwrap();
    let (ok, stderr) = cli(&["ls", "-R", array.to_str().unwrap()]);
    assert!(!ok);
    assert_one_line(&stderr, &[&new, "format version 24", "versions 1 to 23"]);

    // A footer whose version says 24 under a name that says 23.
    let (_tmp, array) = copy_handbuilt("v23_dense");
    let frag = array.join("__fragments").join(&old);
    let meta = frag.join("__fragment_metadata.tdb");
    let mut bytes = std::fs::read(&meta).unwrap();
    let n = bytes.len();
    let footer_len = u64::from_le_bytes(bytes[n - 8..].try_into().unwrap()) as usize;
    let start = n - 8 - footer_len;
    assert_eq!(bytes[start..start + 4], 23u32.to_le_bytes());
    bytes[start..start + 4].copy_from_slice(&24u32.to_le_bytes());
    std::fs::write(&meta, bytes).unwrap();
    let (ok, stderr) = cli(&["info", array.to_str().unwrap()]);
    assert!(
        ok,
        "info reports unreadable fragments and carries on: {stderr}"
    );
    let (ok, stderr) = cli(&[
        "cat",
        array.to_str().unwrap(),
        &format!("fragments/{old}/v/values.bin"),
    ]);
    assert!(!ok);
    assert_one_line(&stderr, &[&old, "format version 24", "versions 1 to 23"]);
}

/// Corrupt legacy files give one error naming the fragment, the file and (for data) the
/// tile, never a panic or wrong bytes.
#[test]
fn corrupt_legacy_files_are_named() {
    let (_tmp, array) = copy_handbuilt("v1_sparse_zipped");
    let frag = std::fs::read_dir(&array)
        .unwrap()
        .map(|e| e.unwrap())
        .find(|e| e.file_type().unwrap().is_dir())
        .unwrap()
        .file_name()
        .into_string()
        .unwrap();
    let truncate = |file: &str, len: u64| {
        let path = array.join(&frag).join(file);
        let saved = std::fs::read(&path).unwrap();
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(len)
            .unwrap();
        saved
    };
    let array_arg = array.to_str().unwrap();

    // Whole-file metadata cut in half: the fragment, not the array, fails.
    let saved = truncate("__fragment_metadata.tdb", 100);
    let (ok, stderr) = cli(&["ls", array_arg, &format!("fragments/{frag}")]);
    assert!(!ok);
    assert_one_line(&stderr, &[&frag, "__fragment_metadata.tdb", "truncated"]);
    std::fs::write(array.join(&frag).join("__fragment_metadata.tdb"), saved).unwrap();

    // __coords.tdb cut inside tile 1: every dimension names the file and the tile.
    truncate("__coords.tdb", 50);
    for dim in ["r", "c"] {
        let (ok, stderr) = cli(&[
            "cat",
            array_arg,
            &format!("fragments/{frag}/{dim}/values.bin"),
        ]);
        assert!(!ok);
        assert_one_line(&stderr, &[&frag, "__coords.tdb", "tile 1", "truncated"]);
    }
    // The attributes still read.
    let (ok, stderr) = cli(&["cat", array_arg, &format!("fragments/{frag}/a/values.bin")]);
    assert!(ok, "{stderr}");
}
