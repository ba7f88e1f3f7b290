#!/usr/bin/env bash
# Regenerate the consolidation fixtures in tests/fixtures/consolidation/ (arrays
# consolidated with and without vacuuming, purging, commits consolidation, deletes
# and time travel; each with its TileDB-read expected.json and merged.json) with
# pinned tiledb-py / numpy / pandas from PyPI. Idempotent: the output folder is
# deleted and rewritten; fragment and schema file names change on every run,
# contents do not.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/target/feature-fixture-venv"
OUT="$ROOT/tests/fixtures/consolidation"
PY="${PYTHON:-python3}"

# The venv of make_feature_fixtures.sh, same pins.
if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
  "numpy==2.4.6" "packaging==26.3" "tiledb==0.36.1" "pandas==2.3.3"

cd "$ROOT"
"$VENV/bin/python" scripts/make_consolidation_fixtures.py "$OUT"
du -sh --apparent-size "$OUT"
