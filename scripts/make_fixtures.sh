#!/usr/bin/env bash
# Regenerate the TileDB fixture arrays in tests/fixtures/tiledb/ (and their
# <array>.expected.json) with pinned tiledb-py / numpy from PyPI.
# Idempotent: the output folder is deleted and rewritten. Fragment and schema
# names (UUIDs, schema timestamps) change on every run; contents do not.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/target/fixture-venv"
OUT="$ROOT/tests/fixtures/tiledb"
PY="${PYTHON:-python3}"

if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
  "numpy==2.4.6" "packaging==26.3" "tiledb==0.36.1"

cd "$ROOT"
"$VENV/bin/python" scripts/make_fixtures.py tests/fixtures/tiledb
du -sh --apparent-size "$OUT"
