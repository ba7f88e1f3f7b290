#!/usr/bin/env python3
"""The TileDB-SOMA side of tests/fixtures/soma/ (run in the SOMA venv, which
has tiledbsoma and no tiledb-py; scripts/make_soma_fixtures.sh runs it):

  make_soma_enum_experiment.py write PATH   write the experiment at PATH
  make_soma_enum_experiment.py read SPEC    print, as JSON, what tiledbsoma
                                            reads where SPEC (a JSON file: a
                                            list of {uri, timestamp}) asks

The experiment: obs (12 cells) written in three writes at tiledb_timestamp
1, 2 and 3, whose categorical columns gain categories in every write
(cell_type: B T, then NK, then DC; ordered batch: b1, then b2, then b3;
qc_bin, integer categories: 10 20, then 30, then 40 and missing values),
and ms/RNA/var (5 features) written at 1 and 3 (feature_type: gene, then
spike_in). tiledbsoma extends each enumeration by a schema evolution at the
write's own timestamp, while the fragment's footer names the schema it was
opened with: the one from before the extension.

`read` opens each DataFrame asked for with tiledbsoma at (0, T) (its `open`
takes only an end; T null: now) and records `read().concat()` in row-major
order (by soma_joinid) and `get_enumeration_values` of the categorical
columns. make_soma_fixtures.py asks for every merged state of each array and,
per fragment, for a copy of the array holding that fragment alone opened at
the fragment's end. (A range (t1, t2) through tiledbsoma's handle cannot
stand in: the DataFrame's metadata, written at t=1, is outside it, and
tiledbsoma refuses the object as not a SOMADataFrame.)
"""

import json
import os
import sys

import numpy as np
import pandas as pd
import pyarrow as pa
import tiledbsoma as soma
from tiledbsoma import pytiledbsoma as clib

def obs_write(ids, cell_type, cell_types, batch, batches, qc_bin, qc_bins):
    return pd.DataFrame({
        "soma_joinid": np.array(ids, dtype=np.int64),
        "obs_id": ["cell_%d" % i for i in ids],
        "cell_type": pd.Categorical(cell_type, categories=cell_types),
        "batch": pd.Categorical(batch, categories=batches, ordered=True),
        "qc_bin": pd.Categorical(qc_bin, categories=np.array(qc_bins, dtype=np.int32)),
        "n_genes": np.array([100 + 7 * i for i in ids], dtype=np.int32),
    })


# Each write's own category list, in its own order: tiledbsoma maps them onto
# the stored enumeration and appends the new ones, so a write's pandas codes
# are not the stored codes (NK is 1 in write 2's categories, 2 on disk).
OBS_WRITES = [
    (1, obs_write([0, 1, 2, 3], ["B", "T", "B", "T"], ["B", "T"],
                  ["b1", "b1", "b1", "b1"], ["b1"], [10, 20, 20, 10], [10, 20])),
    (2, obs_write([4, 5, 6, 7], ["NK", "B", "NK", "T"], ["B", "NK", "T"],
                  ["b2", "b1", "b2", "b2"], ["b1", "b2"], [30, 10, 30, 20], [10, 20, 30])),
    (3, obs_write([8, 9, 10, 11], ["DC", "T", "NK", "DC"], ["DC", "NK", "T"],
                  ["b3", "b1", "b3", "b2"], ["b1", "b2", "b3"], [40, None, 30, None], [30, 40])),
]


def var_write(ids, names, feature_type, feature_types):
    return pd.DataFrame({
        "soma_joinid": np.array(ids, dtype=np.int64),
        "var_id": names,
        "feature_type": pd.Categorical(feature_type, categories=feature_types),
    })


VAR_WRITES = [
    (1, var_write([0, 1, 2], ["ENSG0001", "ENSG0002", "ENSG0003"], ["gene"] * 3, ["gene"])),
    (3, var_write([3, 4], ["ERCC-0001", "ENSG0005"], ["spike_in", "gene"], ["spike_in", "gene"])),
]

ARRAYS = {"obs": OBS_WRITES, "ms/RNA/var": VAR_WRITES}


def write(path):
    first = {name: writes[0][1] for name, writes in ARRAYS.items()}
    with soma.Experiment.create(path, tiledb_timestamp=1) as exp:
        exp.add_new_dataframe("obs", schema=pa.Schema.from_pandas(first["obs"], preserve_index=False),
                              index_column_names=["soma_joinid"], domain=[(0, 11)])
        ms = exp.add_new_collection("ms")
        rna = ms.add_new_collection("RNA", soma.Measurement)
        rna.add_new_dataframe("var", schema=pa.Schema.from_pandas(first["ms/RNA/var"], preserve_index=False),
                              index_column_names=["soma_joinid"], domain=[(0, 4)])
    for name, writes in ARRAYS.items():
        for t, df in writes:
            with soma.DataFrame.open(os.path.join(path, name), "w", tiledb_timestamp=t) as d:
                d.write(pa.Table.from_pandas(df, preserve_index=False))
    return {"tiledbsoma": soma.__version__,
            "libtiledb": ".".join(str(v) for v in clib.tiledb_version()),
            "pandas": pd.__version__, "pyarrow": pa.__version__, "numpy": np.__version__,
            "writes": {name: [{"tiledb_timestamp": t, "rows": int(len(df)),
                               "categories": {c: [jvalue(x) for x in df[c].cat.categories]
                                              for c in df.columns if isinstance(df[c].dtype, pd.CategoricalDtype)}}
                              for t, df in writes] for name, writes in ARRAYS.items()}}


def jvalue(x):
    if x is None or (isinstance(x, float) and np.isnan(x)):
        return None
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (np.floating,)):
        return float(x)
    return x


def what_soma_reads(uri, t):
    """`read().concat()` of the DataFrame at `uri` opened at (0, t) (t None: now),
    in row-major order (by soma_joinid), and the values of its enumerations."""
    with soma.DataFrame.open(uri, tiledb_timestamp=t) as d:
        table = d.read(result_order="row-major").concat()
        rows = {name: [jvalue(v) for v in table.column(name).to_pylist()] for name in table.column_names}
        categorical = [f.name for f in d.schema if pa.types.is_dictionary(f.type)]
        enums = d.get_enumeration_values(categorical) if categorical else {}
    return {"rows": rows, "enumerations": {c: [jvalue(v) for v in enums[c].to_pylist()] for c in categorical}}


def read(spec):
    """Every read a JSON list asks for ({uri, timestamp}), in its order."""
    return [what_soma_reads(r["uri"], r["timestamp"]) for r in spec]


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("write", "read"):
        sys.exit(__doc__)
    if sys.argv[1] == "write":
        doc = write(sys.argv[2])
    else:
        with open(sys.argv[2]) as fh:
            doc = read(json.load(fh))
    print(json.dumps(doc))


if __name__ == "__main__":
    main()
