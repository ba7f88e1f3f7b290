//! Inputs the fuzz targets (`fuzz/`) once found a panic, hang or unbounded allocation
//! with, replayed through the very code the targets run (`fuzz/src/lib.rs` is included
//! here): each must now return, with an error or not. Targets without a finding keep
//! hand-made guards (counts of 0xFF.., inputs cut short), so every target replays some.
//!
//! A new finding goes to `tests/fuzz_regressions/<target>/<what-it-was>`, minimised
//! (`cargo fuzz tmin`), next to the fix.

#[path = "../fuzz/src/lib.rs"]
mod harness;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::path::Path;

/// The fuzz runs use `-malloc_limit_mb=512`: one allocation larger than that, for input
/// of a few bytes, is a finding. The fuzzer saw it through its malloc hooks; here a
/// recording allocator sees it (reserving is enough: a huge `Vec::with_capacity` that
/// is never touched succeeds on Linux, but is still unbounded allocation).
const MALLOC_LIMIT: usize = 512 << 20;

thread_local! {
    /// The largest single allocation this thread asked for since the last reset.
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

fn note(size: usize) {
    let _ = LARGEST.try_with(|l| l.set(l.get().max(size)));
}

struct Recording;

// SAFETY: every call is forwarded unchanged to the system allocator.
unsafe impl GlobalAlloc for Recording {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size);
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Recording = Recording;

/// Runs every saved input of `target` through it; each that panics or makes an
/// allocation over [`MALLOC_LIMIT`] is named, and fails the test. Every target has
/// saved inputs (fuzzer findings, or hand-made guards: counts of 0xFF.., inputs cut
/// short): a folder gone missing fails rather than replay nothing.
fn replay(target: &str, run: fn(&[u8])) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fuzz_regressions")
        .join(target);
    let entries = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e} (the saved inputs of {target})", dir.display()));
    let mut paths: Vec<_> = entries.map(|e| e.unwrap().path()).collect();
    assert!(!paths.is_empty(), "{}: no saved input", dir.display());
    paths.sort();
    let mut failures = Vec::new();
    for path in paths {
        let bytes = std::fs::read(&path).unwrap();
        LARGEST.with(|l| l.set(0));
        let outcome = std::panic::catch_unwind(|| run(&bytes));
        let largest = LARGEST.with(Cell::get);
        if outcome.is_err() {
            failures.push(format!("{}: panicked", path.display()));
        } else if largest > MALLOC_LIMIT {
            failures.push(format!(
                "{}: one allocation of {largest} bytes",
                path.display()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
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

/// Not fuzzer findings but the same guard: Filo chunks whose counts claim gigabytes (a
/// ConstVector of 2³¹ − 1 rows, an LZ4 frame of 4 GiB) are refused or served lazily,
/// never allocated.
#[test]
fn filo() {
    replay("filo", harness::filo);
}
