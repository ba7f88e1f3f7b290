#!/usr/bin/env python3
"""Write a tiny TileDB-SOMA experiment with tiledbsoma (run in the SOMA venv,
which has no tiledb-py): make_soma_fixture.py PATH

Called by make_feature_fixtures.py (SOMA_PYTHON=<soma venv python>); prints
one JSON line with the library versions. Every object is written with
tiledb_timestamp=1.
"""

import json
import sys

import numpy as np
import pandas as pd
import pyarrow as pa
import tiledbsoma as soma

T = 1


def main():
    path = sys.argv[1]
    obs = pd.DataFrame({
        "soma_joinid": np.arange(6, dtype=np.int64),
        "obs_id": ["cell_%d" % i for i in range(6)],
        "cell_type": pd.Categorical(["B", "T", "B", "NK", "T", "B"], categories=["B", "NK", "T"]),
        "batch": pd.Categorical(["b1", "b2", "b1", "b1", "b2", "b2"], categories=["b1", "b2"], ordered=True),
        "n_genes": np.array([120, 98, 143, 77, 101, 130], dtype=np.int32),
    })
    var = pd.DataFrame({
        "soma_joinid": np.arange(4, dtype=np.int64),
        "var_id": ["ENSG0001", "ENSG0002", "ERCC-0001", "ENSG0004"],
        "feature_type": pd.Categorical(["gene", "gene", "spike_in", "gene"]),
    })
    with soma.Experiment.create(path, tiledb_timestamp=T) as exp:
        o = exp.add_new_dataframe("obs", schema=pa.Schema.from_pandas(obs, preserve_index=False),
                                  index_column_names=["soma_joinid"], domain=[(0, 5)])
        o.write(pa.Table.from_pandas(obs, preserve_index=False))
        ms = exp.add_new_collection("ms")
        rna = ms.add_new_collection("RNA", soma.Measurement)
        v = rna.add_new_dataframe("var", schema=pa.Schema.from_pandas(var, preserve_index=False),
                                  index_column_names=["soma_joinid"], domain=[(0, 3)])
        v.write(pa.Table.from_pandas(var, preserve_index=False))
        X = rna.add_new_collection("X")
        m = X.add_new_sparse_ndarray("data", type=pa.float32(), shape=(6, 4))
        m.write(pa.Table.from_pydict({
            "soma_dim_0": pa.array([0, 0, 1, 2, 3, 5, 5], pa.int64()),
            "soma_dim_1": pa.array([0, 3, 1, 1, 2, 0, 2], pa.int64()),
            "soma_data": pa.array([1.0, 2.5, 3.0, 0.5, 4.0, 7.25, 1.0], pa.float32())}))
    print(json.dumps({"tiledbsoma": soma.__version__,
                      "libtiledb": ".".join(str(v) for v in soma.pytiledbsoma.tiledb_version()),
                      "pandas": pd.__version__, "pyarrow": pa.__version__, "numpy": np.__version__}))


if __name__ == "__main__":
    main()
