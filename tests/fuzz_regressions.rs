//! Inputs the fuzz targets (`fuzz/`) once found a panic, hang or unbounded allocation
//! with, replayed through the very code the targets run (`fuzz/src/lib.rs` is included
//! here): each must now return, with an error or not.
//!
//! A new finding goes to `tests/fuzz_regressions/<target>/<what-it-was>`, minimised
//! (`cargo fuzz tmin`), next to the fix.

#[path = "../fuzz/src/lib.rs"]
mod harness;

use std::path::Path;

/// Runs every saved input of `target` through it; a panic fails the test and names
/// the input.
fn replay(target: &str, run: fn(&[u8])) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fuzz_regressions")
        .join(target);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return;
    };
    let mut paths: Vec<_> = entries.map(|e| e.unwrap().path()).collect();
    paths.sort();
    for path in paths {
        let bytes = std::fs::read(&path).unwrap();
        eprintln!("replaying {}", path.display());
        run(&bytes);
    }
}

#[test]
fn generic_tile() {
    replay("generic_tile", harness::generic_tile);
}

#[test]
fn schema() {
    replay("schema", harness::schema);
}

#[test]
fn fragment_metadata() {
    replay("fragment_metadata", harness::fragment_metadata);
}

#[test]
fn filters() {
    replay("filters", harness::filters);
}

#[test]
fn chunk_pipeline() {
    replay("chunk_pipeline", harness::chunk_pipeline);
}
