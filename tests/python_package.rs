//! The Python package (`python/`: `fragfs.Tree`, the fsspec filesystem), installed into
//! the test venv by scripts/test.sh, checked by its own pytest suite (`python/tests`)
//! against this build's `fragfs` binary: every file of several fixtures byte for byte as
//! `fragfs cat` prints it, listings as `fragfs ls -lR`, a sample of the shared corpus,
//! an array over S3 (s3s-fs), xarray, pandas and NumPy through fsspec, and the errors;
//! the `fragfs_tile` codec against every filter pipeline of the corpus, and reference
//! sets (`fragfs.refs`) of every dense fixture and corpus array at every state read by
//! zarr-python and xarray against TileDB-Py, over S3, served, without fragfs.
//!
//! Without the package (a venv scripts/test.sh did not make, a build that failed) the
//! test says why and skips; under CI=true that is a failure. The parts pytest skips (no
//! corpus, no s3s-fs) are listed as this test's skips, with pytest's reasons.

mod common;

use std::process::Command;

use common::*;

#[test]
fn python_package_reads_as_fragfs_cat() {
    let Some(python) = python_with("fragfs") else {
        return;
    };
    if !Command::new(&python)
        .args(["-c", "import fragfs.fsspec, pytest"])
        .output()
        .is_ok_and(|o| o.status.success())
    {
        skip_part(&format!("{python} has fragfs but not fsspec or pytest"));
        return;
    }
    let mut cmd = Command::new(&python);
    cmd.args(["-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider"])
        .arg(repo().join("python/tests"))
        .env("FRAGFS_BIN", env!("CARGO_BIN_EXE_fragfs"))
        .current_dir(repo());
    let out = cmd.output().expect("run pytest");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}{stderr}");
    assert!(
        out.status.success(),
        "pytest python/tests failed:\n{stdout}\n{stderr}"
    );
    // `-rs`: one "SKIPPED [n] file:line: reason" line per skipped test.
    for line in stdout.lines().filter(|l| l.starts_with("SKIPPED")) {
        skip(&format!("pytest: {line}"));
    }
    assert!(
        stdout.lines().any(|l| l.contains(" passed")),
        "pytest ran no test:\n{stdout}"
    );
}
