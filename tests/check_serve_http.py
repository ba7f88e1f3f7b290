"""Reads a tree served by `fragfs serve` over HTTP with the Python clients people use,
and compares what they get with the bytes the tree serves (written beside, by the test)
and with TileDB-Py.

Usage: check_serve_http.py SPEC.json
SPEC: {"url": "http://127.0.0.1:PORT", "expected": DIR, "files": [tree paths],
       "array": ARRAY, "attr": NAME, "csv": tree path of a cells.csv}
DIR/<path> holds the tree's bytes of each path of "files".

Checks, printing one line each ("ok ..."); exits 1 at the first mismatch:
* requests: GET of every file equals its bytes; a Range answers 206 with its slice;
* fsspec HTTPFileSystem: `ls` of the folders lists the tree's names (from the HTML
  listing), `cat_file` and a seek/read of an open file equal the bytes;
* xarray.open_zarr over HTTP, Zarr v2 and v3: the attribute with its named dimensions,
  equal to TileDB-Py's read of the whole domain;
* Dask: the same dataset, its mean computed on a LocalCluster of 2 worker processes,
  equals TileDB-Py's mean;
* DuckDB: read_csv of the cells.csv over HTTP with its own httpfs extension (from PyPI's
  duckdb-extension-httpfs: no download at run time) has the rows pandas reads from the
  tree's bytes.
"""

import json
import os
import sys

import numpy as np


def fail(what):
    print("FAIL " + what)
    sys.exit(1)


def main():
    spec = json.load(open(sys.argv[1]))
    url, expected = spec["url"].rstrip("/"), spec["expected"]

    def want(path):
        return open(os.path.join(expected, path), "rb").read()

    import requests

    s = requests.Session()
    for path in spec["files"]:
        r = s.get(url + "/" + path)
        if r.status_code != 200 or r.content != want(path):
            fail("requests GET %s: %d, %d bytes" % (path, r.status_code, len(r.content)))
        body = want(path)
        if len(body) > 10:
            r = s.get(url + "/" + path, headers={"Range": "bytes=3-9"})
            if r.status_code != 206 or r.content != body[3:10]:
                fail("requests Range %s: %d" % (path, r.status_code))
    print("ok requests: %d files, ranges" % len(spec["files"]))

    import fsspec

    fs = fsspec.filesystem("http")
    for path in spec["files"]:
        if fs.cat_file(url + "/" + path) != want(path):
            fail("fsspec cat_file " + path)
        body = want(path)
        with fs.open(url + "/" + path, "rb", block_size=7) as f:
            f.seek(len(body) // 2)
            if f.read(11) != body[len(body) // 2:len(body) // 2 + 11]:
                fail("fsspec seek/read " + path)
    for folder, names in spec["listings"].items():
        listed = sorted(
            e["name"].rstrip("/").rsplit("/", 1)[-1]
            for e in fs.ls(url + "/" + folder, detail=True)
        )
        if listed != sorted(names):
            fail("fsspec ls %s: %s, the tree: %s" % (folder, listed, sorted(names)))
    print("ok fsspec: cat, seek/read, ls of %d folders" % len(spec["listings"]))

    import tiledb
    import xarray as xr

    attr = spec["attr"]
    with tiledb.open(spec["array"]) as A:
        truth = A[:][attr]
    for fmt in (2, 3):
        ds = xr.open_zarr(url + "/zarr", consolidated=False, zarr_format=fmt, mask_and_scale=False)
        got = ds[attr].values
        if got.shape != truth.shape or not np.array_equal(got, truth):
            fail("xarray v%d: %s %s, TileDB-Py %s" % (fmt, attr, got.shape, truth.shape))
        if list(ds[attr].dims) != spec["dims"]:
            fail("xarray v%d: dims %s, want %s" % (fmt, list(ds[attr].dims), spec["dims"]))
    print("ok xarray: %s %s, Zarr v2 and v3" % (attr, truth.shape))

    from dask.distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster):
        ds = xr.open_zarr(url + "/zarr", consolidated=False, zarr_format=3, mask_and_scale=False)
        mean = float(ds[attr].astype("float64").mean().compute())
    want_mean = float(truth.astype("float64").mean())
    if not np.isclose(mean, want_mean, rtol=1e-12, atol=0):
        fail("dask mean %r, TileDB-Py %r" % (mean, want_mean))
    print("ok dask: mean on 2 workers %r" % mean)

    import duckdb
    import duckdb_extension_httpfs
    import glob
    import io
    import pandas as pd

    con = duckdb.connect()
    ext = glob.glob(os.path.join(os.path.dirname(duckdb_extension_httpfs.__file__),
                                 "extensions", "*", "httpfs.duckdb_extension"))
    if not ext:
        fail("duckdb-extension-httpfs ships no httpfs.duckdb_extension")
    con.sql("INSTALL '%s'" % ext[0])
    con.sql("LOAD httpfs")
    got = con.sql("SELECT * FROM read_csv('%s/%s', all_varchar=true)" % (url, spec["csv"])).df()
    ref = pd.read_csv(io.BytesIO(want(spec["csv"])), dtype=str, keep_default_na=False)
    got = got.fillna("")
    if list(got.columns) != list(ref.columns) or got.values.tolist() != ref.values.tolist():
        fail("duckdb read_csv: %d rows %s, pandas %d rows %s"
             % (len(got), list(got.columns), len(ref), list(ref.columns)))
    print("ok duckdb: %d rows of %s" % (len(got), spec["csv"]))


if __name__ == "__main__":
    main()
