//! Inputs the fuzz targets (`fuzz/`) once found a panic, hang or unbounded allocation
//! with, replayed through the very code the targets run (`fuzz/src/lib.rs` is included
//! here): each must now return, with an error or not. Targets without a finding keep
//! hand-made guards (counts of 0xFF.., inputs cut short), so every target replays some.
//!
//! A new finding goes to `tests/fuzz_regressions/<target>/<what-it-was>`, minimised
//! (`cargo fuzz tmin`), next to the fix.
//!
//! Each target then runs its seeds (cut from the fixtures as cargo-fuzz's are) and a few
//! deterministic mutations of each: see [`mutants`].

mod common;
#[path = "../fuzz/src/lib.rs"]
mod harness;

use common::rng::Rng;

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

/// Why running `input` through `run` is a finding (a panic, or one allocation over
/// [`MALLOC_LIMIT`]), if it is.
fn finding(run: fn(&[u8]), input: &[u8]) -> Option<String> {
    LARGEST.with(|l| l.set(0));
    let outcome = std::panic::catch_unwind(|| run(input));
    let largest = LARGEST.with(Cell::get);
    if outcome.is_err() {
        Some("panicked".into())
    } else if largest > MALLOC_LIMIT {
        Some(format!("one allocation of {largest} bytes"))
    } else {
        None
    }
}

/// Runs every saved input of `target` through it; each that panics or makes an
/// allocation over [`MALLOC_LIMIT`] is named, and fails the test. Every target has
/// saved inputs (fuzzer findings, or hand-made guards: counts of 0xFF.., inputs cut
/// short): a folder gone missing fails rather than replay nothing. Then the seeds of
/// the target and their mutations ([`mutants`]).
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
        if let Some(why) = finding(run, &bytes) {
            failures.push(format!("{}: {why}", path.display()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    mutants(target, run);
}

/// Mutations per seed.
const MUTATIONS: u64 = 6;

/// The seeds of every target, cut from the fixtures once (`fuzz/src/seeds.rs`, as
/// `scripts/fuzz-smoke.sh` seeds cargo-fuzz).
fn seeds() -> &'static harness::seeds::Seeds {
    static SEEDS: std::sync::OnceLock<harness::seeds::Seeds> = std::sync::OnceLock::new();
    SEEDS.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        let mut arrays = Vec::new();
        harness::seeds::find_arrays(&root, &mut arrays);
        let mut seeds = harness::seeds::Seeds::default();
        for array in &arrays {
            // Fixtures made to be refused (pre-1.4 arrays, corrupt ones) give no seeds.
            let _ = harness::seeds::seed_array(array, &mut seeds);
        }
        harness::seeds::seed_filo(&root, &mut seeds);
        harness::seeds::seed_wire(&arrays, &mut seeds);
        seeds
    })
}

/// A fuzzer's first moves, made deterministic (a fixed random source per seed), run on
/// every test: each seed of `target` as it is and [`MUTATIONS`] times changed (bits
/// flipped, a run of bytes set to 0x00 or 0xFF, a count-sized field set to an extreme,
/// the input cut short, a slice repeated). Not coverage-guided like cargo-fuzz
/// (`scripts/fuzz-smoke.sh`, run by hand), but a few thousand inputs near real bytes
/// through every target body on every change, in seconds. A finding is written to
/// `target/tmp/fuzz-mutants/<target>/` to be kept in `tests/fuzz_regressions/`.
fn mutants(target: &str, run: fn(&[u8])) {
    let inputs = seeds()
        .0
        .get(target)
        .unwrap_or_else(|| panic!("no seed for {target} in tests/fixtures"));
    let mut failures = Vec::new();
    for (hash, seed) in inputs {
        let mut rng = Rng(hash | 1);
        for m in 0..=MUTATIONS {
            let input = if m == 0 {
                seed.clone()
            } else {
                mutate(seed, &mut rng)
            };
            if let Some(why) = finding(run, &input) {
                let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
                    .join("fuzz-mutants")
                    .join(target);
                std::fs::create_dir_all(&dir).unwrap();
                let path = dir.join(format!("{hash:016x}-{m}"));
                std::fs::write(&path, &input).unwrap();
                failures.push(format!("{}: {why}", path.display()));
            }
        }
    }
    let total = inputs.len() as u64 * (MUTATIONS + 1);
    assert!(
        failures.is_empty(),
        "{} of {total} inputs near the seeds of {target}:\n{}",
        failures.len(),
        failures.join("\n")
    );
    eprintln!("{target}: {} seeds, {total} inputs", inputs.len());
}

/// `seed` with one change.
fn mutate(seed: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut out = seed.to_vec();
    if out.is_empty() {
        out.push(rng.next() as u8);
        return out;
    }
    let at = rng.below(out.len());
    match rng.below(5) {
        0 => {
            for _ in 0..1 + rng.below(4) {
                let i = rng.below(out.len());
                out[i] ^= 1 << rng.below(8);
            }
        }
        1 => {
            let fill = if rng.below(2) == 0 { 0x00 } else { 0xFF };
            let end = (at + 1 + rng.below(8)).min(out.len());
            out[at..end].fill(fill);
        }
        2 => {
            // Counts, lengths and offsets are 4 or 8 bytes, little-endian.
            let extremes = [
                0,
                1,
                0x7FFF_FFFF,
                0xFFFF_FFFF,
                0x8000_0000_0000_0000,
                u64::MAX,
            ];
            let v = extremes[rng.below(extremes.len())].to_le_bytes();
            let width = if rng.below(2) == 0 { 4 } else { 8 };
            let end = (at + width).min(out.len());
            out[at..end].copy_from_slice(&v[..end - at]);
        }
        3 => out.truncate(at),
        _ => {
            let end = (at + 1 + rng.below(64)).min(out.len());
            let slice = out[at..end].to_vec();
            out.splice(at..at, slice);
        }
    }
    out
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

/// The network doors' parsers (`src/wire/`): hand-made guards (a Range of 25 digits, a
/// PROPFIND of 10,000 properties, `Basic` and 10 KiB of `=`, a record mark claiming
/// 2 GiB, ...) and the seeds of real clients with their mutations, through the same
/// invariants cargo-fuzz checks.
#[test]
fn request_path() {
    replay("request_path", harness::request_path);
}

#[test]
fn range_header() {
    replay("range_header", harness::range_header);
}

#[test]
fn propfind_body() {
    replay("propfind_body", harness::propfind_body);
}

#[test]
fn basic_auth() {
    replay("basic_auth", harness::basic_auth);
}

#[test]
fn rpc_record() {
    replay("rpc_record", harness::rpc_record);
}

/// The fuzz crate builds fragfs without the `serve` feature, so it cannot name the
/// connection's bound: its copy must be the same number.
#[test]
fn rpc_record_takes_the_connections_bound() {
    assert_eq!(
        harness::MAX_RECORD,
        fragfs::serve::nfs::connection::MAX_RECORD
    );
}
