#!/usr/bin/env bash
# Regenerate the feature fixtures in tests/fixtures/features/ (groups, SOMA,
# metadata, enumerations, dimension labels, deletes, from_numpy / from_pandas,
# merged-view arrays) with pinned tiledb-py / numpy / pandas from PyPI, and the
# <array>.merged.json of the existing fixtures in tests/fixtures/tiledb/
# (read only; make_fixtures.sh rewrites that folder, so run this after it).
# Idempotent: the output folder is deleted and rewritten. Fragment, schema and
# metadata file names (UUIDs, wall-clock schema timestamps) change on every
# run; contents do not.
#
# The SOMA experiment is written by tiledbsoma in a second venv (its own
# libtiledb 2.30 wheel, no tiledb-py). NO_SOMA=1 skips it: the experiment is
# then a SOMA-like layout written by TileDB-Py.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/target/feature-fixture-venv"
SOMA_VENV="$ROOT/target/soma-fixture-venv"
OUT="$ROOT/tests/fixtures/features"
PY="${PYTHON:-python3}"

if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
  "numpy==2.4.6" "packaging==26.3" "tiledb==0.36.1" "pandas==2.3.3"

if [ -z "${NO_SOMA:-}" ]; then
  if [ ! -x "$SOMA_VENV/bin/python" ]; then
    "$PY" -m venv "$SOMA_VENV"
  fi
  "$SOMA_VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
    "tiledbsoma==2.3.0" "numpy==2.4.6" "pandas==2.3.3" "pyarrow==26.0.1"
  export SOMA_PYTHON="$SOMA_VENV/bin/python"
fi

cd "$ROOT"
"$VENV/bin/python" scripts/make_feature_fixtures.py "$OUT"

for d in tests/fixtures/tiledb/*/; do
  a="${d%/}"
  key=$("$VENV/bin/python" -c "import json,sys; e=json.load(open(sys.argv[1]))['encryption']; print(e['key'] if e else '')" "$a.expected.json")
  "$VENV/bin/python" scripts/make_merged_json.py "$a" $key > "$a.merged.json"
done

du -sh --apparent-size "$OUT"
