#!/usr/bin/env bash
# The test suite: unit tests, the fixture conformance test, error tests, real FUSE mounts,
# arrays on a real S3 server (s3s-fs, installed here), and (when ../shared is beside the
# repo) the shared-corpus tests.
#
# The .npy / text checks need numpy, the live-mount test TileDB-Py, the Zarr checks
# zarr-python and xarray: all are installed
# here into target/test-venv (from PyPI) on first use, so a fresh machine needs nothing
# but cargo and python3.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v cargo >/dev/null; then
    echo "cargo is required (https://rustup.rs)" >&2
    exit 1
fi
VENV=target/test-venv
if ! "$VENV/bin/python" -c 'import numpy, tiledb, pandas, zarr, xarray, boto3, s3fs, awscli, duckdb' 2>/dev/null; then
    if python3 -m venv "$VENV" &&
        "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
            "numpy==2.4.6" "packaging==26.3" "tiledb==0.36.1" "pandas==2.3.3" "zarr==3.1.6" "xarray==2026.9.0" \
            "boto3==1.43.117" "s3fs==2026.9.0" "awscli==1.46.3" \
            "duckdb==1.5.5" "duckdb-extension-httpfs==1.5.5"; then
        echo "installed numpy, tiledb, zarr and xarray into $VENV"
    else
        echo "could not install numpy/tiledb into $VENV: the checks that need them will say so" >&2
    fi
fi
export FRAGFS_TEST_PYTHON="$PWD/$VENV/bin/python"
# GDAL (Debian's gdal-bin) reads the merged view's ENVI rasters in the tests.
if ! command -v gdalinfo >/dev/null; then
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null &&
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gdal-bin >/dev/null; then
        echo "installed gdal-bin"
    else
        echo "could not install gdal-bin: the GDAL checks will say so" >&2
    fi
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
trap 'rm -f "$log" "$skips"' EXIT
# Tests that skip a check (no ../shared beside the repo, no FUSE, not root) say so here.
export FRAGFS_SKIP_LOG="$skips"
status=0
# Every target but the benchmark baseline example (it has no tests).
cargo test --no-fail-fast --lib --bins --tests --benches "$@" 2>&1 | tee "$log" || status=$?
if [ -s "$skips" ]; then
    echo "skipped checks:"
    sed 's/^/  /' "$skips"
fi
# One closing line for the whole suite, summed over every test binary.
awk -v skipped="$(wc -l <"$skips")" \
    '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i } }
     END { printf "tests: %d passed, %d failed, %d skipped\n", p, f, skipped }' "$log"
exit "$status"
