#!/usr/bin/env bash
# Regenerate tests/fixtures/refs/ (the dense arrays of `fragfs refs`: tiles standard
# codecs read, column-major and multi-chunk tiles, with their merged JSON) with pinned tiledb-py / numpy from
# PyPI. Idempotent: the output folder is deleted and rewritten. Fragment and schema
# file names (UUIDs, wall-clock schema timestamps) change on every run; contents do not.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/target/refs-fixture-venv"
OUT="$ROOT/tests/fixtures/refs"
PY="${PYTHON:-python3}"

if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
  "numpy==2.4.6" "packaging==26.3" "tiledb==0.36.1"

cd "$ROOT"
"$VENV/bin/python" scripts/make_refs_fixtures.py "$OUT"
du -sh --apparent-size "$OUT"
