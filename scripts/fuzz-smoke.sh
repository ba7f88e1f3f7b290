#!/usr/bin/env bash
# A short run of every cargo-fuzz target (fuzz/), seeded from real arrays and real
# clients' bytes, with the limits of the fuzz runs: a crash (a panic, a broken
# invariant), a hang (10 s on one input), an RSS over 512 MiB or one allocation over
# 512 MiB fails the script, which prints where the input was saved
# (fuzz/artifacts/<target>/). scripts/test.sh runs it after the suite under CI=true.
#
#   bash scripts/fuzz-smoke.sh                              # every target, 8 s each, 2 at once
#   FUZZ_SECONDS=60 bash scripts/fuzz-smoke.sh rpc_record   # chosen targets, longer
#   FUZZ_SANITIZER=address bash scripts/fuzz-smoke.sh       # with AddressSanitizer
#
# The targets are those of fuzz/Cargo.toml (`cargo fuzz list`): a new one is run without
# editing this script.
#
# Built once into the cargo home (FUZZ_TARGET_DIR, default
# $CARGO_HOME/fragfs-fuzz-target), as the suite's venv and s3s-fs are: a later run, from
# this clone or a fresh one, rebuilds only fragfs and the fuzz crate. Measured on the
# 2-core machine shared with two other builds (load 4-7), wall (user CPU):
#
#                        cold (every dependency)   warm (fragfs changed / a new clone)
#   -s none              5 min 30 s (3 min 24 s)   1 min 17-38 s (53-66 s)
#   -s address           6 min 11 s (4 min 49 s)   1 min 26 s (1 min 17 s)
#
# So `-s none` is the default: AddressSanitizer costs 40 % more build CPU (and slows
# every input), and finds little more here, since the code fuzzed is safe
# Rust (out-of-bounds reads and overflows are panics: cargo-fuzz builds with debug
# assertions and overflow checks). The one check libFuzzer takes from a sanitizer's
# hooks, one allocation over the limit, the fuzz crate's own allocator makes
# (fuzz/src/malloc_limit.rs). The whole script: 1 min 23 s with nothing to rebuild,
# 2 min 15 s from a fresh clone (CI's case), 4 min 46 s cold (docs/testing.md#fuzzing).
#
# The seed corpus (fuzz/corpus/<target>/, git-ignored; the fuzzer adds to it) is cut
# from tests/fixtures and, when present, ../shared/corpus/tiledb (FRAGFS_SHARED_CORPUS
# names another folder) by fuzz/examples/seed_corpus.rs. Saved regressions
# (tests/fuzz_regressions/<target>/) are run with the seeds.
#
# Needs only stable Rust: cargo-fuzz is installed into the cargo home when missing, and
# the stable compiler is allowed cargo-fuzz's -Z flags (RUSTC_BOOTSTRAP=1; stable's
# rust-std ships the AddressSanitizer runtime). One toolchain for the suite and the
# fuzzers, so the cached build is never that of a toolchain this machine lacks.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
SECONDS_EACH=${FUZZ_SECONDS:-8}
SANITIZER=${FUZZ_SANITIZER:-none}
SHARED=${FRAGFS_SHARED_CORPUS:-$ROOT/../shared/corpus/tiledb}
TARGET_DIR=${FUZZ_TARGET_DIR:-${CARGO_HOME:-$HOME/.cargo}/fragfs-fuzz-target}
CARGO_FUZZ_VERSION=0.13.2
export RUSTC_BOOTSTRAP=1
# AddressSanitizer's default 256 MiB quarantine alone nearly fills the 512 MiB RSS
# limit; a small one keeps that limit about fragfs's own memory.
export ASAN_OPTIONS=${ASAN_OPTIONS:-quarantine_size_mb=16:detect_odr_violation=0}

if ! cargo fuzz --version 2>/dev/null | grep -q "$CARGO_FUZZ_VERSION"; then
    echo "installing cargo-fuzz $CARGO_FUZZ_VERSION into ${CARGO_HOME:-$HOME/.cargo}/bin"
    cargo install cargo-fuzz --version "$CARGO_FUZZ_VERSION" --locked --quiet
fi

cd fuzz
TARGETS=("$@")
if [ ${#TARGETS[@]} -eq 0 ]; then
    mapfile -t TARGETS < <(cargo fuzz list)
fi
TRIPLE=$(rustc -vV | sed -n 's/^host: //p')

# fragfs and the fuzz crate are built anew for every clone (their artifacts' names
# depend on the source folder): those of another clone are only disk, about 550 MB a
# clone (eleven linked targets), so they go. The dependencies stay.
stamp="$TARGET_DIR/fragfs-source"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" != "$ROOT" ]; then
    for d in "$TARGET_DIR/seeds/debug" "$TARGET_DIR/$TRIPLE/release"; do
        [ -d "$d" ] || continue
        rm -rf "$d"/.fingerprint/fragfs-* "$d"/deps/*fragfs* "$d"/examples/seed_corpus-*
        for t in "${TARGETS[@]}"; do
            rm -f "$d/deps/$t"-*
        done
    done
fi
mkdir -p "$TARGET_DIR"
echo "$ROOT" >"$stamp"

started=$SECONDS
SOURCES=("$ROOT/tests/fixtures")
[ -d "$SHARED" ] && SOURCES+=("$SHARED")
# The seeds (a plain build of the seed_corpus example, in a target dir of its own so
# that cargo's lock does not serialise the two builds) are made while the targets build:
# each build mostly keeps one core busy.
seeds_log=$(mktemp)
trap 'rm -f "$seeds_log"' EXIT
cargo run --quiet --target-dir "$TARGET_DIR/seeds" --example seed_corpus -- corpus "${SOURCES[@]}" \
    >"$seeds_log" 2>&1 &
seeding=$!
echo "building ${#TARGETS[@]} targets (-s $SANITIZER) in $TARGET_DIR"
# One target alone is built alone; several are all built (one cargo call builds every
# target in parallel, and cargo fuzz build takes one name or none).
only=()
[ ${#TARGETS[@]} -eq 1 ] && only=("${TARGETS[0]}")
cargo fuzz build --sanitizer "$SANITIZER" --target-dir "$TARGET_DIR" "${only[@]}"
seeded=0
wait "$seeding" || seeded=$?
echo "seed corpus from ${SOURCES[*]}: $(grep -v '^seed_corpus: skipping' "$seeds_log" | tr '\n' ' ')"
if [ "$seeded" -ne 0 ]; then
    cat "$seeds_log" >&2
    echo "making the seed corpus failed" >&2
    exit "$seeded"
fi
built=$((SECONDS - started))
echo "seeded and built in ${built} s"

# Each target on a core of its own, FUZZ_LANES at a time (default: every core; after
# the suite CI's machine has nothing else to run).
LANES=${FUZZ_LANES:-$(nproc)}

# Runs target $1 for SECONDS_EACH seconds; its exit status says whether it found nothing.
fuzz_one() {
    local t=$1 dirs=("corpus/$1")
    [ -d "$ROOT/tests/fuzz_regressions/$t" ] && dirs+=("$ROOT/tests/fuzz_regressions/$t")
    mkdir -p "corpus/$t" "artifacts/$t"
    # The outer timeout only guards against libFuzzer itself never stopping.
    timeout $((SECONDS_EACH + 120)) "$TARGET_DIR/$TRIPLE/release/$t" "${dirs[@]}" \
        -max_total_time="$SECONDS_EACH" -rss_limit_mb=512 -malloc_limit_mb=512 -timeout=10 \
        -artifact_prefix="artifacts/$t/" >"artifacts/$t.log" 2>&1
}

# Prints what target $1 did, given its exit status $2.
report() {
    local t=$1 status=$2 log=artifacts/$1.log
    if [ "$status" -eq 0 ]; then
        echo "== $t: $(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -1)"
        return
    fi
    failed+=("$t")
    echo "== $t: FOUND SOMETHING (exit status $status; log: fuzz/$log)"
    grep -E 'panicked at|^==.*(ERROR|fragfs-fuzz)|^SUMMARY|out-of-memory|timeout after' -A1 "$log" |
        head -8 | sed 's/^/   /' || true
    local saved
    saved=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -1)
    echo "   input saved in fuzz/${saved:-artifacts/$t/}"
    echo "   replay: $TARGET_DIR/$TRIPLE/release/$t fuzz/${saved:-artifacts/$t/<file>}"
}

echo "fuzzing ${#TARGETS[@]} targets, ${SECONDS_EACH} s each, $LANES at a time"
failed=()
declare -A running=()
# Waits for one running target and reports it.
finish_one() {
    local pid status=0
    wait -n -p pid || status=$?
    report "${running[$pid]}" "$status"
    unset "running[$pid]"
}
fuzzing_started=$SECONDS
for t in "${TARGETS[@]}"; do
    [ ${#running[@]} -ge "$LANES" ] && finish_one
    fuzz_one "$t" &
    running[$!]=$t
done
while [ ${#running[@]} -gt 0 ]; do
    finish_one
done
echo "fuzzed in $((SECONDS - fuzzing_started)) s (after ${built} s of seeding and building)"
if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz targets that found something: ${failed[*]}"
fi
# One line in the form the suite's closing line sums (scripts/test.sh).
echo "fuzz targets: $((${#TARGETS[@]} - ${#failed[@]})) passed, ${#failed[@]} failed"
[ ${#failed[@]} -eq 0 ]
