#!/usr/bin/env bash
# Regenerate tests/fixtures/hilbert/: sparse arrays with the HILBERT cell order (point
# clouds as PDAL writes them, integer and string dimensions) and orders.json, written
# and read back by pinned tiledb-py from PyPI (the venv of make_feature_fixtures.sh).
# Idempotent: the folder is deleted and rewritten; fragment names change on every run,
# contents do not.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/target/feature-fixture-venv"
PY="${PYTHON:-python3}"

if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
  "numpy==2.4.6" "packaging==26.3" "tiledb==0.36.1" "pandas==2.3.3"

cd "$ROOT"
"$VENV/bin/python" scripts/make_hilbert_fixtures.py tests/fixtures/hilbert
du -sh --apparent-size tests/fixtures/hilbert
