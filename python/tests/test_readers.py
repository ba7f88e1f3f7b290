"""What the fsspec filesystem is for: xarray, pandas and NumPy reading the tree's files
in-process, with no mount, against TileDB's own reads (the fixtures' `.merged.json`)
and the bytes `fragfs cat` prints."""

import io
import json

import fsspec
import numpy as np
import pandas as pd
import pytest
import xarray as xr

from conftest import FIXTURES, fragfs_cat

DENSE = FIXTURES / "tiledb" / "dense_2d"
SPARSE = FIXTURES / "tiledb" / "sparse_var_nullable"


def latest_read(array):
    """TileDB's read of the latest state (tests/fixtures/tiledb/README.md)."""
    merged = json.loads((array.parent / f"{array.name}.merged.json").read_text())
    (read,) = [r for r in merged["reads"] if r["timestamp"] is None]
    return read


def test_xarray_opens_the_zarr_store_as_tiledb_reads_the_array():
    fs = fsspec.filesystem("fragfs", array=str(DENSE))
    read = latest_read(DENSE)
    ds = xr.open_zarr(fs.get_mapper("zarr"), zarr_format=3, consolidated=False)
    (rows, cols) = read["non_empty_domain"]
    box = ds.sel(r=slice(*rows), c=slice(*cols))
    checked = 0
    for field in read["fields"]:
        if field["role"] != "attribute":
            continue
        got = box[field["name"]].values
        assert got.shape == (rows[1] - rows[0] + 1, cols[1] - cols[0] + 1)
        np.testing.assert_array_equal(got.ravel(), np.array(field["values"], dtype=got.dtype))
        checked += 1
    assert checked == 6
    # Zarr v2 metadata, the same values.
    v2 = xr.open_zarr(fs.get_mapper("fragfs://zarr"), zarr_format=2, consolidated=False)
    xr.testing.assert_equal(v2.load(), ds.load())


@pytest.mark.parametrize("array", [DENSE, SPARSE], ids=["dense_2d", "sparse_var_nullable"])
def test_pandas_reads_cells_parquet_as_fragfs_cat_prints_it(array):
    fs = fsspec.filesystem("fragfs", array=str(array))
    for path in ["latest/cells.parquet", "at/1/cells.parquet"]:
        with fs.open(path) as f:
            got = pd.read_parquet(f)
        want = pd.read_parquet(io.BytesIO(fragfs_cat(array, path)))
        pd.testing.assert_frame_equal(got, want)
        assert len(got) > 0
    read = latest_read(array)
    assert len(pd.read_parquet(fs.open("latest/cells.parquet"))) == read["cell_num"]


def test_pandas_reads_cells_parquet_through_the_filesystem_argument():
    fs = fsspec.filesystem("fragfs", array=str(DENSE))
    got = pd.read_parquet("latest/cells.parquet", filesystem=fs)
    plain = [f for f in latest_read(DENSE)["fields"] if f["name"] == "plain"][0]
    assert got["plain"].tolist() == plain["values"]


def test_numpy_loads_values_npy_as_values_bin():
    fs = fsspec.filesystem("fragfs", array=str(DENSE))
    read = latest_read(DENSE)
    (rows, cols) = read["non_empty_domain"]
    fragment = fs.ls("fragments", detail=False)[0]
    for folder in ["latest/plain", "latest/sha_gzip_f64", f"{fragment}/md5_i16"]:
        with fs.open(f"{folder}/values.npy") as f:
            got = np.load(f)
        assert got.tobytes() == fs.cat_file(f"{folder}/values.bin"), folder
        if folder.startswith("latest/"):
            assert got.shape == (rows[1] - rows[0] + 1, cols[1] - cols[0] + 1)
            name = folder.split("/")[1]
            (field,) = [f for f in read["fields"] if f["name"] == name]
            np.testing.assert_array_equal(got.ravel(), np.array(field["values"], got.dtype))
