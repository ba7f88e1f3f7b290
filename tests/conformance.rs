//! Every stored field of every fragment, as served by `read_at`, equals what TileDB read
//! back (the `*.expected.json` files): the repo's fixtures always, and every array of
//! the shared corpus (formats 2 to 22) when `../shared` is present; CI requires it
//! (`FRAGFS_REQUIRE_CORPUS=1` in `.ci/run`). `fragfs info` must name each fragment's
//! format version and layout.

mod common;

use std::collections::BTreeMap;

use common::*;

/// [`check_array`] through the in-memory test store instead of the local folder: every
/// file access goes through the storage seam, whatever the store.
fn check_array_in_memory(
    array: &std::path::Path,
    expected: &serde_json::Value,
) -> Result<usize, String> {
    let (tree, _store) = open_in_memory(array, expected).map_err(|e| format!("open: {e}"))?;
    check_tree(&tree, expected)
}

#[test]
fn repo_fixtures_match_tiledb_through_the_test_store() {
    let arrays = expected_files(&fixtures());
    assert!(arrays.len() >= 5);
    let failures: Vec<String> = arrays
        .iter()
        .filter_map(|(array, expected)| {
            let n = check_array_in_memory(array, expected);
            match n {
                Ok(0) => Some(format!("{}: no field checked", array.display())),
                Ok(_) => None,
                Err(e) => Some(format!("{}: {e}", array.display())),
            }
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn shared_corpus_matches_tiledb_through_the_test_store() {
    let Some(corpus) = shared_or_skip(shared_corpus()) else {
        return;
    };
    let arrays = corpus_arrays(&corpus);
    assert_eq!(arrays.len(), CORPUS_ARRAYS);
    let mut fields = 0;
    let mut failures = Vec::new();
    for (version, array, expected) in &arrays {
        match check_array_in_memory(array, expected) {
            Ok(n) => fields += n,
            Err(e) => failures.push(format!(
                "v{version}/{}: {e}",
                array.file_name().unwrap().to_string_lossy()
            )),
        }
    }
    println!(
        "through the test store: {} arrays, {fields} fields checked",
        arrays.len()
    );
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Every array of the feature fixtures (their per-fragment `expected.json`).
#[test]
fn feature_fixtures_match_tiledb() {
    let arrays = expected_files(&features());
    assert!(arrays.len() >= 20, "feature fixtures missing");
    let mut failures = Vec::new();
    for (array, expected) in &arrays {
        match check_array(array, expected).and_then(|n| {
            let view = open_view(array, expected).map_err(|e| e.to_string())?;
            walk_tree(&view)?;
            check_info(&view, expected).map(|_| n)
        }) {
            Ok(_) => {}
            Err(e) => failures.push(format!("{}: {e}", array.display())),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn repo_fixtures_match_tiledb() {
    let arrays = expected_files(&fixtures());
    assert!(
        arrays.len() >= 5,
        "fixtures missing under {}",
        fixtures().display()
    );
    let mut failures = Vec::new();
    for (array, expected) in &arrays {
        let checked = check_array(array, expected).and_then(|n| {
            let view = open_view(array, expected).map_err(|e| e.to_string())?;
            check_info(&view, expected).map(|_| n)
        });
        match checked {
            Ok(n) => assert!(n > 0, "{}: no field checked", array.display()),
            Err(e) => failures.push(format!("{}: {e}", array.display())),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Arrays in the shared corpus: every format TileDB wrote from 2 to 22 (format 1 has no
/// installable writer; see `legacy.rs` for its fixtures).
const CORPUS_ARRAYS: usize = 525;
const CORPUS_VERSIONS: std::ops::RangeInclusive<u32> = 2..=22;

/// `(version, array, expected)` for every array of the corpus.
fn corpus_arrays(corpus: &std::path::Path) -> Vec<(u32, std::path::PathBuf, serde_json::Value)> {
    let mut out = Vec::new();
    for (version, dir) in corpus_versions(corpus) {
        for (array, expected) in expected_files(&dir) {
            out.push((version, array, expected));
        }
    }
    out.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    out
}

#[test]
fn shared_corpus_matches_tiledb() {
    let Some(corpus) = shared_or_skip(shared_corpus()) else {
        return;
    };
    let mut report: BTreeMap<u32, (usize, usize)> = BTreeMap::new();
    let mut failures = Vec::new();
    let mut fields = 0;
    for (version, array, expected) in corpus_arrays(&corpus) {
        let r = report.entry(version).or_default();
        match check_array(&array, &expected) {
            Ok(n) => {
                r.0 += 1;
                fields += n;
            }
            Err(e) => {
                r.1 += 1;
                failures.push(format!(
                    "v{version}/{}: {e}",
                    array.file_name().unwrap().to_string_lossy()
                ));
            }
        }
    }
    for (v, (ok, bad)) in &report {
        println!("v{v}: {ok} arrays pass, {bad} fail");
    }
    println!("{fields} fields checked");
    let total: usize = report.values().map(|(ok, bad)| ok + bad).sum();
    assert_eq!(
        report.keys().copied().collect::<Vec<_>>(),
        CORPUS_VERSIONS.collect::<Vec<_>>(),
        "a version folder is missing"
    );
    assert_eq!(
        total, CORPUS_ARRAYS,
        "expected the {CORPUS_ARRAYS} arrays of the corpus"
    );
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn shared_corpus_tree_lists_and_renders() {
    let Some(corpus) = shared_or_skip(shared_corpus()) else {
        return;
    };
    let mut failures = Vec::new();
    let arrays = corpus_arrays(&corpus);
    for (_, array, expected) in &arrays {
        let result = open_view(array, expected)
            .map_err(|e| e.to_string())
            .and_then(|view| {
                walk_tree(&view)?;
                check_info(&view, expected)
            });
        if let Err(e) = result {
            failures.push(format!("{}: {e}", array.display()));
        }
    }
    assert_eq!(arrays.len(), CORPUS_ARRAYS);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
