#!/usr/bin/env bash
# A short run of every cargo-fuzz target (fuzz/), seeded from real arrays, with the
# limits the fuzz runs use: a crash, a hang (10 s) or one allocation above 512 MiB fails
# the script, leaving the input in fuzz/artifacts/<target>/.
#
#   bash scripts/fuzz-smoke.sh                          # every target, 20 s each
#   FUZZ_SECONDS=60 bash scripts/fuzz-smoke.sh filters  # chosen targets, longer
#
# The seed corpus (fuzz/corpus/<target>/, git-ignored; the fuzzer adds to it) is cut
# from tests/fixtures and, when present, ../shared/corpus/tiledb (FRAGFS_SHARED_CORPUS
# names another folder). Saved regressions (tests/fuzz_regressions/<target>/) are
# replayed first.
#
# Needs only stable Rust: cargo-fuzz is installed when missing, and without a nightly
# toolchain the stable compiler is allowed cargo-fuzz's -Z flags (RUSTC_BOOTSTRAP=1;
# stable's rust-std ships the AddressSanitizer runtime).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
SECONDS_EACH=${FUZZ_SECONDS:-20}
SHARED=${FRAGFS_SHARED_CORPUS:-$ROOT/../shared/corpus/tiledb}
TARGETS=("$@")
if [ ${#TARGETS[@]} -eq 0 ]; then
    TARGETS=(generic_tile schema fragment_metadata filters chunk_pipeline filo)
fi

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "installing cargo-fuzz"
    cargo install cargo-fuzz --locked
fi
if rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
    FUZZ=(cargo +nightly fuzz)
else
    echo "no nightly toolchain: using stable with RUSTC_BOOTSTRAP=1"
    export RUSTC_BOOTSTRAP=1
    FUZZ=(cargo fuzz)
fi

# AddressSanitizer's default 256 MiB quarantine alone nearly fills the 512 MiB RSS
# limit; a small one keeps that limit about fragfs's own memory.
export ASAN_OPTIONS=${ASAN_OPTIONS:-quarantine_size_mb=16}

cd fuzz
SOURCES=("$ROOT/tests/fixtures")
[ -d "$SHARED" ] && SOURCES+=("$SHARED")
echo "seed corpus from ${SOURCES[*]}"
cargo run --quiet --example seed_corpus -- corpus "${SOURCES[@]}"

mkdir -p target
failed=()
for t in "${TARGETS[@]}"; do
    dirs=("corpus/$t")
    [ -d "$ROOT/tests/fuzz_regressions/$t" ] && dirs+=("$ROOT/tests/fuzz_regressions/$t")
    log=target/smoke-$t.log
    echo "== $t: ${SECONDS_EACH}s (log: fuzz/$log)"
    if "${FUZZ[@]}" run "$t" "${dirs[@]}" -- -max_total_time="$SECONDS_EACH" \
        -rss_limit_mb=512 -malloc_limit_mb=512 -timeout=10 >"$log" 2>&1; then
        grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -1
    else
        failed+=("$t")
        grep -E 'panicked at|ERROR: libFuzzer|SUMMARY|^(thread|Error)' "$log" | head -5 || tail -20 "$log"
        echo "   input saved in fuzz/artifacts/$t/"
    fi
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "FAILED: ${failed[*]}"
    exit 1
fi
echo "all ${#TARGETS[@]} targets ran ${SECONDS_EACH}s without a finding"
