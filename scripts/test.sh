#!/usr/bin/env bash
# The test suite: unit tests, the fixture conformance test, error tests, and (when
# ../shared is beside the repo) the shared-corpus conformance test.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v cargo >/dev/null; then
    echo "cargo is required (https://rustup.rs)" >&2
    exit 1
fi
cargo test --all-targets "$@" 2>&1
