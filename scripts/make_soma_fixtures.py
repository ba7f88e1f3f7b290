#!/usr/bin/env python3
"""Write tests/fixtures/soma/: a TileDB-SOMA experiment whose categorical
columns tiledbsoma extended over several writes, and what TileDB-SOMA and
TileDB-Py read from it, per fragment and per merged state.

Usage: make_soma_fixtures.py OUTDIR   (OUTDIR is deleted and rewritten)

Run it through scripts/make_soma_fixtures.sh: this script runs in a venv
with tiledb-py (it imports make_feature_fixtures and make_merged_json) and
calls scripts/make_soma_enum_experiment.py in a second venv with tiledbsoma
(SOMA_PYTHON) to write the experiment and to read it back.

Written, per DataFrame X of the experiment (obs, ms/RNA/var), beside the
experiment folder:
  experiment.X.expected.json   per fragment, as make_feature_fixtures.py's
                               describe() writes it (raw codes)
  experiment.X.merged.json     every merged state (make_merged_json.py)
  experiment.X.labels.json     the labels, see README.md
and experiment.soma.json (versions, the writes).
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_feature_fixtures as mff  # noqa: E402
import make_fixtures as mf  # noqa: E402
import make_merged_json as mm  # noqa: E402
import tiledb  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
EXPERIMENT = "experiment"
DATAFRAMES = ["obs", "ms/RNA/var"]


def soma(*args):
    """Runs make_soma_enum_experiment.py in the SOMA venv; its JSON output."""
    py = os.environ.get("SOMA_PYTHON")
    if not py:
        sys.exit("SOMA_PYTHON must name the python of a venv with tiledbsoma (make_soma_fixtures.sh sets it)")
    r = subprocess.run([py, os.path.join(HERE, "make_soma_enum_experiment.py"), *args],
                       check=True, capture_output=True, text=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


def solo_with_metadata(uri, fragment, tmp):
    """make_feature_fixtures.solo_copy (the schema folder, the fragment and its
    commit) plus the array's metadata, without which tiledbsoma does not take
    the copy for a SOMA DataFrame."""
    solo = mff.solo_copy(uri, fragment, tmp)
    shutil.copytree(os.path.join(uri, "__meta"), os.path.join(solo, "__meta"))
    return solo


def tiledb_py_reads(uri, timestamp):
    """What TileDB-Py reads with the array opened at `timestamp` (None, T or
    (t1, t2)): the enumerations of its schema, and `A[:]` (which decodes the
    enumerated attributes into their labels; a code outside the enumeration
    fails it) ordered by soma_joinid, or why it failed."""
    with tiledb.open(uri, timestamp=timestamp) as A:
        attrs, enums = mff.schema_enums(A)
        got = {"schema_attributes": attrs, "enumerations": enums}
        try:
            res = A[:]
        except Exception as e:
            got["labels_error"] = "%s: %s" % (type(e).__name__, str(e).splitlines()[0])
            return got
    order = np.argsort(res["soma_joinid"], kind="stable")
    got["soma_joinid"] = [int(res["soma_joinid"][k]) for k in order]
    got["labels"] = {}
    for a in attrs:
        col = res[a]
        mask = np.ma.getmaskarray(col)
        data = col.data if isinstance(col, np.ma.MaskedArray) else col
        got["labels"][a] = [None if mask[k] else mff.label_json(data[k]) for k in order]
    return got


def labels_doc(name, uri, tmp):
    """What TileDB says of the array's enumerations per schema file (as in
    make_feature_fixtures' enumeration_report), and per fragment and per state
    what TileDB-Py and TileDB-SOMA read."""
    rep = mff.enumeration_report(uri, tmp)
    doc = {"array": name, "schema_files": rep["schema_files"], "enumeration_files": rep["enumeration_files"],
           "schemas": rep["schemas"], "fragments": [], "states": []}
    asks = []
    solos = []
    for fr in rep["fragments"]:
        t1, t2 = fr["timestamp_range"]
        solo = solo_with_metadata(uri, fr["fragment"], tmp)
        solos.append(solo)
        entry = {k: fr[k] for k in ("fragment", "timestamp_range", "array_schema_name", "codes")}
        # the fragment alone, as TileDB opens the array at its end timestamp
        entry["tiledb_py"] = tiledb_py_reads(solo, t2)
        entry["tiledb_py_latest_schema"] = {k.replace("labels_latest_schema", "labels"): v
                                            for k, v in fr.items() if k.startswith("labels_latest_schema")}
        doc["fragments"].append(entry)
        asks.append({"uri": solo, "timestamp": t2})
    for ts in [None] + mm.state_timestamps(uri):
        doc["states"].append({"timestamp": ts, "tiledb_py": tiledb_py_reads(uri, None if ts is None else (0, ts))})
        asks.append({"uri": uri, "timestamp": ts})
    spec = os.path.join(tmp, "asks.json")
    with open(spec, "w") as fh:
        json.dump(asks, fh)
    reads = soma("read", spec)
    for entry, got in zip(doc["fragments"] + doc["states"], reads):
        entry["tiledbsoma"] = got
    for solo in solos:
        shutil.rmtree(solo)
    return doc


README = r"""# A TileDB-SOMA experiment whose categories grow over several writes

Written by `scripts/make_soma_fixtures.sh` (do not edit: it deletes and rewrites this
folder): tiledbsoma {tiledbsoma} (libtiledb {libtiledb}, pandas {pandas}, pyarrow
{pyarrow}, numpy {numpy}) writes the experiment (`scripts/make_soma_enum_experiment.py`)
and reads it back; TileDB-Py {tiledb_py} (libtiledb {py_libtiledb}) reads it too and
writes the JSON (`scripts/make_soma_fixtures.py`). Checked by `tests/soma.rs`.

`experiment/` (a SOMA Experiment):

* `obs`: 12 cells in three writes at `tiledb_timestamp` 1, 2 and 3 (soma_joinid 0-3,
  4-7, 8-11). Categorical columns, each write with its own category list: `cell_type`
  (B T; B NK T; DC NK T), ordered `batch` (b1; b1 b2; b1 b2 b3), `qc_bin` with int32
  categories (10 20; 10 20 30; 30 40, and two missing values: null cells).
* `ms/RNA/var`: 5 features in two writes at 1 and 3, categorical `feature_type` (gene;
  spike_in gene).

Per DataFrame `X` (`obs`, `ms.RNA.var`):

| file | what |
|---|---|
| `experiment.X.expected.json` | per fragment, the raw cells (codes) as TileDB reads the fragment alone (`make_feature_fixtures.py`'s `describe()`, the corpus format) |
| `experiment.X.merged.json` | every merged state, raw (`scripts/make_merged_json.py`) |
| `experiment.X.labels.json` | the labels, below |

`experiment.soma.json`: the versions, the writes (rows and categories of each), the group
tree, and these file names per DataFrame.

### `experiment.X.labels.json`

| key | what |
|---|---|
| `schema_files`, `enumeration_files` | files of `__schema/` and `__schema/__enumerations/` |
| `schemas[]` | per schema file, as TileDB loads it alone: `attributes` (attribute -> enumeration), `enumerations` (name -> `{{datatype, cell_val_num, ordered, values}}`) |
| `fragments[]` | per fragment: `fragment`, `timestamp_range`, `array_schema_name` (the schema its footer names), `codes` (raw, global order), and the reads below of a copy of the array holding only that fragment (plus the array metadata, which tiledbsoma needs) opened at the fragment's end timestamp `(0, t2)`; `tiledb_py_latest_schema`: TileDB-Py's `A[:]` of that copy opened without a timestamp |
| `states[]` | per merged state (`timestamp` null: now; else `(0, T)` for every T at which the array changed): the same reads of the array |
| `tiledb_py` | `schema_attributes` and `enumerations` of the schema TileDB opened with; `labels`: `A[:]` (TileDB-Py decodes enumerated attributes into labels) per enumerated attribute, ordered by `soma_joinid`; null for a null cell |
| `tiledbsoma` | `rows`: `read(result_order="row-major").concat()`, every column; `enumerations`: `get_enumeration_values` of the categorical columns |

### What TileDB does here

* tiledbsoma extends each categorical column's enumeration by a schema evolution stamped
  with the write's own timestamp (`__2_2_*` for the write at 2) and the fragment's footer
  names the schema it was opened with, from before the extension: the t=1 fragment names
  the creation schema (whose enumerations are empty), the t=2 fragment `__1_1_*` (no NK,
  b2, 30). A write maps its own category list onto the stored enumeration and appends the
  new labels: NK is code 1 of write 2's pandas categories and code 2 on disk.
* The creation schema has a wall-clock name although the experiment was created with
  `tiledb_timestamp=1`: it sorts before `__1_1_*` by name and is newer than every write by
  timestamp, so TileDB never opens the array with it.
* TileDB-Py and TileDB-SOMA agree on every fragment and every state: the labels come from
  the schema TileDB opens the array with at the read's end timestamp (the last schema file,
  in name order, whose t2 is not after it), never from the fragment's own.
"""


def write_readme(out, info):
    with open(os.path.join(out, "README.md"), "w") as fh:
        fh.write(README.format(py_libtiledb=mff.writer_info()["libtiledb"], tiledb_py=tiledb.__version__,
                               **{k: info[k] for k in ("tiledbsoma", "libtiledb", "pandas", "pyarrow", "numpy")}))


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_soma_fixtures.py OUTDIR")
    out = os.path.abspath(sys.argv[1])
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    mff.OUT = out
    exp = os.path.join(out, EXPERIMENT)
    info = soma("write", exp)
    mf.remove_empty_dirs(exp)
    tmp = tempfile.mkdtemp(prefix="soma-fixtures-")
    docs = []
    try:
        doc = {"experiment": EXPERIMENT}
        doc.update(info)
        doc["reader"] = mff.writer_info()
        doc["root"] = mff.describe_group(exp)
        doc["arrays"] = {}
        for df in DATAFRAMES:
            name = EXPERIMENT + "/" + df
            jn = name.replace("/", ".")
            mff.finish_array(out, name, {"notes": "DataFrame %s of the SOMA experiment (tiledbsoma %s)"
                                         % (df, info["tiledbsoma"])}, tmp, docs, json_name=jn)
            mff.write_json(os.path.join(out, jn + ".labels.json"), labels_doc(name, os.path.join(out, name), tmp))
            doc["arrays"][name] = {"expected_json": jn + ".expected.json", "merged_json": jn + ".merged.json",
                                   "labels_json": jn + ".labels.json"}
        mff.write_json(os.path.join(out, EXPERIMENT + ".soma.json"), doc)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    write_readme(out, info)
    for d in docs:
        print("%-34s fragments %s states %s" % (d["array"], d["fragments"], d["states"]))


if __name__ == "__main__":
    main()
