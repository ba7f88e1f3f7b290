"""Issue 44's cluster: a Dask LocalCluster of 2 worker processes reads a TileDB array
straight from the S3 server of the tests through a kerchunk reference set made by
`fragfs.refs`, with no fragfs process running: each worker fetches its chunks' stored
tiles from S3 and decodes them with the `fragfs_tile` codec (numcodecs finds it through
the package's entry point); the values equal TileDB-Py's."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import tiledb

import fragfs
from conftest import FIXTURES
from test_s3 import ACCESS_KEY, SECRET_KEY, s3s  # noqa: F401  (the S3 server fixture)

# Runs in its own process, as a cluster's client would (it imports nothing of fragfs
# itself; zarr finds the codec through its entry point).
CLIENT = r"""
import json, sys
import numpy as np
import xarray as xr
from distributed import Client, LocalCluster

refs_file, endpoint, key, secret, out = sys.argv[1:]
if __name__ == "__main__":
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        client.wait_for_workers(2)
        # zarr reads `reference://` asynchronously: so must its S3 target.
        remote = {"key": key, "secret": secret, "asynchronous": True,
                  "client_kwargs": {"endpoint_url": endpoint, "region_name": "us-east-1"}}
        ds = xr.open_dataset(
            "reference://", engine="zarr", chunks={}, mask_and_scale=False,
            backend_kwargs={"consolidated": False, "storage_options": {
                "fo": json.load(open(refs_file)), "remote_protocol": "s3",
                "remote_options": remote}})
        values = {name: ds[name].compute().values for name in ds.data_vars}
        # Which processes decoded: the workers (each loaded the codec), not this one.
        loaded = client.run(lambda: "fragfs._fragfs" in sys.modules)
    np.savez(out, **values)
    print(json.dumps({"workers_loaded_codec": sorted(loaded.values())}))
"""


def test_two_dask_workers_read_an_array_on_s3_through_references(s3s, tmp_path):
    root, endpoint = s3s
    name = "dense_2d"
    local = FIXTURES / "tiledb" / name
    shutil.copytree(local, Path(root) / "fixtures" / name)
    refs = fragfs.refs(
        f"s3://fixtures/{name}",
        endpoint_url=endpoint,
        region="us-east-1",
        access_key_id=ACCESS_KEY,
        secret_access_key=SECRET_KEY,
        virtual_hosted=False,
    )
    # Stored tiles in S3 are referenced (not everything inlined).
    s3_refs = [v for v in refs["refs"].values()
               if isinstance(v, list) and str(v[0]).startswith("s3://fixtures/")]
    assert s3_refs, "no chunk refers to a stored tile in S3"
    refs_file = tmp_path / "refs.json"
    refs_file.write_text(json.dumps(refs))
    out = tmp_path / "values.npz"
    run = subprocess.run(
        [sys.executable, "-c", CLIENT, str(refs_file), endpoint, ACCESS_KEY, SECRET_KEY, str(out)],
        capture_output=True, text=True, timeout=600,
    )
    assert run.returncode == 0, run.stderr[-4000:]
    report = json.loads(run.stdout.strip().splitlines()[-1])
    assert report == {"workers_loaded_codec": [True, True]}
    got = np.load(out)
    with tiledb.open(str(local)) as a:
        want = a[:]
        assert sorted(got.files) == sorted(a.schema.attr(i).name for i in range(a.schema.nattr))
    for attr in got.files:
        np.testing.assert_array_equal(got[attr], want[attr], err_msg=attr)
