//! `values.npy`, `values.txt` and `cells.csv` checked against TileDB's read-back by an
//! independent Python checker (`tests/check_text_npy.py`, numpy for the .npy files and
//! the datetime text), through real mounts: every fixture, and the shared corpus when
//! present. Without numpy the test says why and skips, except under CI=true.

mod common;

use std::process::Command;

use common::mounting::*;
use common::*;

/// Mounts `arrays` a batch at a time and runs the checker over each batch.
/// Returns how many expected.json and how many merged.json were checked.
fn check(
    python: &str,
    arrays: &[(std::path::PathBuf, serde_json::Value)],
    merged: &[(std::path::PathBuf, serde_json::Value)],
) -> (usize, usize) {
    let script = repo().join("tests/check_text_npy.py");
    let batches: Vec<_> = arrays.chunks(24).collect();
    sum_in_parallel(&batches, 2, |&batch| {
        let mounts: Vec<InProcess> = batch
            .iter()
            .map(|(a, e)| InProcess::new(a, e, 16 << 20, 2))
            .collect();
        let mut cmd = Command::new(python);
        cmd.arg(&script);
        // The JSON files, written out: arrays inside a group or another array are
        // described by files that are not named after their folder.
        let jsons = tempfile::tempdir().unwrap();
        for (k, (m, (array, expected))) in mounts.iter().zip(batch).enumerate() {
            let path = jsons.path().join(format!("{k}.expected.json"));
            std::fs::write(&path, serde_json::to_vec(expected).unwrap()).unwrap();
            cmd.arg(m.path());
            cmd.arg(path);
            // And the merged view (latest/, at/<T>/), where TileDB's reads are known.
            if let Some(merged) = merged.iter().find(|(a, _)| a == array).map(|(_, j)| j) {
                let path = jsons.path().join(format!("{k}.merged.json"));
                std::fs::write(&path, serde_json::to_vec(merged).unwrap()).unwrap();
                cmd.arg(m.path());
                cmd.arg(path);
            }
        }
        let out = cmd.output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let checked = stdout
            .lines()
            .filter(|l| l.starts_with("ok ") && !l.contains(".merged.json"))
            .count();
        let merged_checked = stdout
            .lines()
            .filter(|l| l.starts_with("ok ") && l.contains(".merged.json"))
            .count();
        (checked, merged_checked)
    })
}

#[test]
fn fixtures_npy_txt_and_csv_match_tiledb() {
    if !fuse_available("text files") {
        return;
    }
    let Some(python) = python_with("numpy") else {
        return;
    };
    let (arrays, merged) = fixture_files();
    let with_merged = arrays
        .iter()
        .filter(|(a, _)| merged.iter().any(|(m, _)| m == a))
        .count();
    assert_eq!(
        check(&python, &arrays, &merged),
        (arrays.len(), with_merged)
    );
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
    let (arrays, merged) = corpus_files(&corpus);
    // Every format version is read (formats 2 to 22 in the corpus): all 525 arrays.
    assert_eq!(arrays.len(), 525, "arrays in the corpus");
    let (checked, merged) = check(&python, &arrays, &merged);
    println!("{checked} arrays: values.npy, values.txt and cells.csv match ({merged} merged)");
    assert_eq!((checked, merged), (arrays.len(), arrays.len()));
}
