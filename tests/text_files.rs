//! `values.npy`, `values.txt` and `cells.csv` checked against TileDB's read-back by an
//! independent Python checker (`tests/check_text_npy.py`, numpy for the .npy files and
//! the datetime text), through real mounts: every fixture, and the shared corpus when
//! present. Without numpy the test says why and skips, except under CI=true.

mod common;

use std::process::Command;

use common::mounting::*;
use common::*;

/// Mounts `arrays` a batch at a time and runs the checker over each batch.
fn check(python: &str, arrays: &[(std::path::PathBuf, serde_json::Value)]) -> usize {
    let script = repo().join("tests/check_text_npy.py");
    let mut checked = 0;
    for batch in arrays.chunks(24) {
        let mounts: Vec<InProcess> = batch
            .iter()
            .map(|(a, e)| InProcess::new(a, e, 16 << 20, 2))
            .collect();
        let mut cmd = Command::new(python);
        cmd.arg(&script);
        for (m, (array, _)) in mounts.iter().zip(batch) {
            cmd.arg(m.path());
            cmd.arg(array.with_extension("expected.json"));
        }
        let out = cmd.output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        checked += stdout.lines().filter(|l| l.starts_with("ok ")).count();
    }
    checked
}

#[test]
fn fixtures_npy_txt_and_csv_match_tiledb() {
    if !fuse_available("text files") {
        return;
    }
    let Some(python) = python_with("numpy") else {
        return;
    };
    let arrays = expected_files(&fixtures());
    assert_eq!(check(&python, &arrays), arrays.len());
}

#[test]
fn shared_corpus_npy_txt_and_csv_match_tiledb() {
    let Some(corpus) = shared_or_skip(shared_corpus()) else {
        return;
    };
    if !fuse_available("text files") {
        return;
    }
    let Some(python) = python_with("numpy") else {
        return;
    };
    let mut arrays = Vec::new();
    for version in 1..=23 {
        arrays.extend(expected_files(&corpus.join(format!("v{version}"))));
    }
    // Every format version is read (formats 2 to 22 in the corpus): all 525 arrays.
    assert_eq!(arrays.len(), 525, "arrays in the corpus");
    let checked = check(&python, &arrays);
    println!("{checked} arrays: values.npy, values.txt and cells.csv match");
    assert_eq!(checked, arrays.len());
}
