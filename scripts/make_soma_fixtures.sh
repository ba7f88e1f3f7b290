#!/usr/bin/env bash
# Regenerate tests/fixtures/soma/ (a TileDB-SOMA experiment whose categorical
# columns grow over several writes, and what TileDB-SOMA and TileDB-Py read
# from it) with pinned packages from PyPI in two venvs: tiledb-py for the
# fixture JSON (scripts/make_soma_fixtures.py), tiledbsoma (its own libtiledb
# wheel, no tiledb-py) to write and read the experiment
# (scripts/make_soma_enum_experiment.py). Idempotent: the folder is deleted and
# rewritten; fragment, schema and metadata file names (UUIDs, the creation
# schemas' wall-clock timestamps) change on every run, contents do not.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/target/feature-fixture-venv"
SOMA_VENV="$ROOT/target/soma-fixture-venv"
OUT="$ROOT/tests/fixtures/soma"
PY="${PYTHON:-python3}"

if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
  "numpy==2.4.6" "packaging==26.3" "tiledb==0.36.1" "pandas==2.3.3"

if [ ! -x "$SOMA_VENV/bin/python" ]; then
  "$PY" -m venv "$SOMA_VENV"
fi
"$SOMA_VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
  "tiledbsoma==2.3.0" "numpy==2.4.6" "pandas==2.3.3" "pyarrow==26.0.1"

cd "$ROOT"
SOMA_PYTHON="$SOMA_VENV/bin/python" "$VENV/bin/python" scripts/make_soma_fixtures.py "$OUT"
du -sh --apparent-size "$OUT"
