#!/usr/bin/env bash
# The test suite: unit tests, the fixture conformance test, error tests, real FUSE mounts,
# arrays on a real S3 server (s3s-fs, installed here), and (when ../shared is beside the
# repo) the shared-corpus tests; under CI=true, then every fuzz target for a few seconds.
#
#   bash scripts/test.sh               the whole suite, its test binaries side by side
#                                      (FRAGFS_TEST_LANES of them at once, default 3)
#   bash scripts/test.sh ARGS...       `cargo test` of the suite's targets with ARGS,
#                                      e.g. `--test zarr` or `-- some_test_name`
#
# The .npy / text checks need numpy, the live-mount test TileDB-Py, the Zarr checks
# zarr-python and xarray, the Python package's tests pytest and maturin: all are installed
# here (from PyPI, scripts/test-requirements.txt) on first use, so a fresh machine needs
# nothing but cargo and python3.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v cargo >/dev/null; then
    echo "cargo is required (https://rustup.rs)" >&2
    exit 1
fi
# The Python packages (scripts/test-requirements.txt) go into a venv in the cargo home, one
# per version of that file: like s3s-fs below, a one-time install that a fresh clone on
# the same machine finds again (it takes about 90 seconds).
req=scripts/test-requirements.txt
VENV="${CARGO_HOME:-$HOME/.cargo}/fragfs-test-venv/$(sha256sum "$req" | cut -c1-16)"
if ! [ -e "$VENV/.complete" ]; then
    rm -rf "$VENV"
    if python3 -m venv "$VENV" &&
        "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r "$req"; then
        touch "$VENV/.complete"
        echo "installed the Python packages of $req into $VENV"
    else
        echo "could not install the Python packages of $req into $VENV: the checks that need them will say so" >&2
    fi
fi
export FRAGFS_TEST_PYTHON="$VENV/bin/python"
# The Python package (python/: `import fragfs`, the fsspec filesystem) built and installed
# into that venv for tests/python_package.rs, as a user would (`pip install ./python`),
# but in the dev profile and target/ of the tests' own build (python/Cargo.toml keeps
# the same profile), so the dependencies both need are compiled once;
# skipped while its inputs (Cargo.lock, Cargo.toml, src/, python/ but its tests) hash as
# at the last install. A failed build leaves the package out: that test says so (a
# failure under CI).
if [ -e "$VENV/.complete" ]; then
    stamp=$(find Cargo.lock Cargo.toml src python -type f ! -path 'python/tests/*' \
        ! -path '*/__pycache__/*' ! -path '*/.pytest_cache/*' -print0 |
        sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16)
    if [ "$(cat "$VENV/.fragfs-package" 2>/dev/null)" != "$stamp" ]; then
        rm -f "$VENV/.fragfs-package"
        # maturin from the venv (pinned in $req): on the PATH, with no build isolation.
        if PATH="$VENV/bin:$PATH" CARGO_TARGET_DIR="$PWD/target" \
            MATURIN_PEP517_ARGS="--profile dev" \
            "$VENV/bin/python" -m pip install --quiet \
            --disable-pip-version-check --no-build-isolation --no-deps --force-reinstall ./python; then
            echo "$stamp" >"$VENV/.fragfs-package"
            echo "installed the Python package (python/) into $VENV"
        else
            echo "could not build the Python package (python/): tests/python_package.rs will say so" >&2
        fi
    fi
fi
# Tools the tests run, from Debian: GDAL reads the merged view's ENVI rasters and Zarr
# (through the mount and over HTTP); curl, headless Chromium, rclone and davfs2 (mounted
# where root and /dev/fuse allow) and libnfs's nfs-ls/nfs-cat/nfs-cp (an NFS client
# that needs none in the kernel) are clients of `fragfs serve`; ncdump, h5dump and
# tiffinfo read array.nc, array.h5 and values.tif; Java runs PySpark (local mode), a
# reader of cells.parquet.
# "command:package" pairs; only the missing ones are installed, in one apt-get call.
debs=()
for pair in gdalinfo:gdal-bin curl:curl chromium:chromium rclone:rclone mount.davfs:davfs2 \
    nfs-cat:libnfs-utils ncdump:netcdf-bin h5dump:hdf5-tools tiffinfo:libtiff-tools \
    java:openjdk-17-jre-headless; do
    command -v "${pair%%:*}" >/dev/null || debs+=("${pair#*:}")
done
if [ ${#debs[@]} -gt 0 ]; then
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null &&
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${debs[@]}" >/dev/null; then
        echo "installed ${debs[*]}"
    else
        echo "could not install ${debs[*]}: the checks that need them will say so" >&2
    fi
fi
# R's arrow, a reader of cells.parquet and cells.arrow (tests/tables_r.rs): Debian 12 has
# no r-cran-arrow, so Debian unstable's, in a root folder of its own in the cargo home,
# made once (about a minute) by scripts/install_r_arrow.sh (root only).
if [ "$(id -u)" -eq 0 ] && r_root=$(bash scripts/install_r_arrow.sh); then
    export FRAGFS_TEST_R_ROOT="$r_root"
else
    echo "could not install R's arrow: tests/tables_r.rs will say so" >&2
fi
# A real S3 server for tests/s3.rs: s3s-fs from crates.io, built once into the cargo home
# (about 8 minutes) and found there afterwards.
S3S_VERSION=0.14.1
s3s_bin="${CARGO_HOME:-$HOME/.cargo}/bin/s3s-fs"
if ! { [ -x "$s3s_bin" ] && "$s3s_bin" --version 2>/dev/null | grep -q "$S3S_VERSION"; }; then
    if cargo install s3s-fs --version "$S3S_VERSION" --features binary --locked --quiet; then
        echo "installed s3s-fs $S3S_VERSION into ${CARGO_HOME:-$HOME/.cargo}/bin"
    else
        echo "could not install s3s-fs: the S3 tests will say so" >&2
    fi
fi
if [ -x "$s3s_bin" ]; then
    export FRAGFS_TEST_S3S="$s3s_bin"
fi
log=$(mktemp)
skips=$(mktemp)
built=$(mktemp)
trap 'rm -f "$log" "$skips" "$built"' EXIT
# Tests that skip a check (no ../shared beside the repo, no FUSE, not root) say so here.
export FRAGFS_SKIP_LOG="$skips"
status=0
# Every target but the benchmark baseline example (it has no tests).
targets=(--lib --bins --tests --benches)
if [ $# -eq 0 ]; then
    # The whole suite: built once, then its test binaries run side by side in lanes
    # (scripts/run_tests.py), longest first, since most of them wait on mounts,
    # readers and servers rather than compute; in sequence the suite took their sum.
    cargo test --no-run "${targets[@]}" --message-format=json-render-diagnostics >"$built" ||
        status=$?
    if [ "$status" -eq 0 ]; then
        python3 scripts/run_tests.py "$built" "${FRAGFS_TEST_LANES:-3}" 2>&1 | tee "$log" ||
            status=$?
    fi
else
    cargo test --no-fail-fast "${targets[@]}" "$@" 2>&1 | tee "$log" || status=$?
fi
# Then every cargo-fuzz target for a few seconds (scripts/fuzz-smoke.sh; about 2 minutes
# once its build is cached in the cargo home, 5 the first time on a machine), when the
# whole suite runs under CI=true: there it must run, and fails the run on a finding.
# Elsewhere it is skipped, saying so (FRAGFS_FUZZ=1 runs it): the suite is what a
# developer runs before each commit, on 2 cores shared with other builds, and the fuzz
# build alone would add 1 to 6 minutes to it for what CI then does on every submission
# anyway; a finding there names the saved input, which replays here
# (docs/testing.md#fuzzing).
if [ $# -eq 0 ]; then
    if [ "${CI:-}" = true ] || [ "${FRAGFS_FUZZ:-}" = 1 ]; then
        bash scripts/fuzz-smoke.sh 2>&1 | tee -a "$log" || status=$?
    else
        echo "fuzz targets: not run outside CI (FRAGFS_FUZZ=1 bash scripts/test.sh, or bash scripts/fuzz-smoke.sh)" >>"$skips"
    fi
fi
if [ -s "$skips" ]; then
    echo "skipped checks:"
    sed 's/^/  /' "$skips"
fi
# One closing line for the whole suite, summed over every test binary (and every fuzz
# target, as one test each).
awk -v skipped="$(wc -l <"$skips")" \
    '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i } }
     /^fuzz targets: [0-9]+ passed, [0-9]+ failed$/ { p += $3; f += $5 }
     END { printf "tests: %d passed, %d failed, %d skipped\n", p, f, skipped }' "$log"
exit "$status"
