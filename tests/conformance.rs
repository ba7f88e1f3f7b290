//! Every stored field of every fragment, as served by `read_at`, equals what TileDB read
//! back (the `*.expected.json` files): the repo's fixtures always, the shared corpus when
//! `../shared` is present.

mod common;

use std::collections::BTreeMap;

use common::*;

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
        match check_array(array, expected) {
            Ok(n) => assert!(n > 0, "{}: no field checked", array.display()),
            Err(e) => failures.push(format!("{}: {e}", array.display())),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Versions whose arrays must all pass; older folders are reported (issue: formats 1-7).
const REQUIRED_FROM: u32 = 8;

#[test]
fn shared_corpus_matches_tiledb() {
    let corpus = shared_corpus();
    if !corpus.is_dir() {
        println!(
            "SKIP: {} is absent (the shared corpus lives beside the repo)",
            corpus.display()
        );
        return;
    }
    let mut report: BTreeMap<u32, (usize, usize)> = BTreeMap::new();
    let mut required_failures = Vec::new();
    let mut other_failures = Vec::new();
    let mut fields = 0;
    for entry in std::fs::read_dir(&corpus).unwrap() {
        let dir = entry.unwrap().path();
        let Some(version) = dir
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_prefix('v'))
            .and_then(|v| v.parse::<u32>().ok())
        else {
            continue;
        };
        for (array, expected) in expected_files(&dir) {
            let r = report.entry(version).or_default();
            match check_array(&array, &expected) {
                Ok(n) => {
                    r.0 += 1;
                    fields += n;
                }
                Err(e) => {
                    r.1 += 1;
                    let line = format!(
                        "v{version}/{}: {e}",
                        array.file_name().unwrap().to_string_lossy()
                    );
                    if version >= REQUIRED_FROM {
                        required_failures.push(line);
                    } else {
                        other_failures.push(line);
                    }
                }
            }
        }
    }
    for (v, (ok, bad)) in &report {
        println!("v{v}: {ok} arrays pass, {bad} fail");
    }
    println!("{fields} fields checked");
    for f in &other_failures {
        println!("(not yet required) {f}");
    }
    let required: usize = report
        .range(REQUIRED_FROM..)
        .map(|(_, (ok, bad))| ok + bad)
        .sum();
    assert!(
        required >= 414,
        "expected the 414 arrays of v8..v22, found {required}"
    );
    assert!(
        required_failures.is_empty(),
        "{} failures:\n{}",
        required_failures.len(),
        required_failures.join("\n")
    );
}

#[test]
fn shared_corpus_tree_lists_and_renders() {
    let corpus = shared_corpus();
    if !corpus.is_dir() {
        println!(
            "SKIP: {} is absent (the shared corpus lives beside the repo)",
            corpus.display()
        );
        return;
    }
    let mut failures = Vec::new();
    let mut arrays = 0;
    for version in REQUIRED_FROM..=22 {
        for (array, expected) in expected_files(&corpus.join(format!("v{version}"))) {
            arrays += 1;
            let result = open_view(&array, &expected)
                .map_err(|e| e.to_string())
                .and_then(|view| {
                    walk_tree(&view)?;
                    let info = fragfs::info::render(&view.array);
                    assert!(info.contains("fragments"));
                    Ok(())
                });
            if let Err(e) = result {
                failures.push(format!("{}: {e}", array.display()));
            }
        }
    }
    assert!(arrays >= 414);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
