"""One measurement of the cluster section (cluster.py): a Dask LocalCluster of N worker
processes (one thread each, unless told) sums the cluster array's `v`, read one way:

    python cluster_client.py refs   N '{"refs": FILE, "endpoint": URL, "key": K, "secret": S}' [THREADS]
    python cluster_client.py serve  N '{"http": "host:port"}' [THREADS]
    python cluster_client.py tiledb N '{"uri": "s3://...", "endpoint": URL, "key": K, "secret": S}' [THREADS]

THREADS is the threads of each worker, 1 unless given (Dask's own default here: the
machine's cores shared among the workers).

- refs: xarray over fsspec's `reference://` filesystem (a kerchunk reference set made
  by `fragfs refs`), every worker fetching its chunks' stored tiles from S3 and
  decoding them itself (the `fragfs_tile` codec); no fragfs process runs;
- serve: xarray over `fragfs serve`'s HTTP door (`zarr/`), the server decoding;
- tiledb: TileDB-Py in each worker, one task per tile.

The cluster is started and every worker has imported what its method needs before the
clock starts; the page cache is dropped right before it (the S3 server then reads from
disk). Prints one JSON line: seconds, the sum, the cells, and the CPU seconds the
machine was busy meanwhile (every process, the S3 server's too).
"""

import json
import os
import sys
import time
from pathlib import Path

TILE = 2048


def read_tile(uri: str, config: dict, y: int, x: int):
    """Tile (y, x) of `v` with TileDB-Py (in a worker)."""
    import tiledb

    with tiledb.open(uri, ctx=tiledb.Ctx(config)) as a:
        return a[y : y + TILE, x : x + TILE]["v"]


def tiledb_config(cfg: dict) -> dict:
    return {
        "vfs.s3.endpoint_override": cfg["endpoint"].removeprefix("http://"),
        "vfs.s3.scheme": "http",
        "vfs.s3.use_virtual_addressing": "false",
        "vfs.s3.region": "us-east-1",
        "vfs.s3.aws_access_key_id": cfg["key"],
        "vfs.s3.aws_secret_access_key": cfg["secret"],
    }


def array(method: str, cfg: dict):
    """The dask array of `v`, chunked by tile, read by `method`."""
    import dask
    import dask.array as da
    import numpy as np
    import xarray as xr

    if method == "refs":
        refs = json.loads(Path(cfg["refs"]).read_text())
        # zarr reads `reference://` asynchronously: so must its S3 target.
        remote = {"key": cfg["key"], "secret": cfg["secret"], "asynchronous": True,
                  "client_kwargs": {"endpoint_url": cfg["endpoint"], "region_name": "us-east-1"}}
        ds = xr.open_dataset(
            "reference://", engine="zarr", chunks={}, mask_and_scale=False,
            backend_kwargs={"consolidated": False, "storage_options": {
                "fo": refs, "remote_protocol": "s3", "remote_options": remote}})
        return ds["v"].data
    if method == "serve":
        ds = xr.open_zarr(f"http://{cfg['http']}/zarr", consolidated=False, zarr_format=2,
                          chunks={}, mask_and_scale=False)
        return ds["v"].data
    if method == "tiledb":
        import tiledb

        config = tiledb_config(cfg)
        with tiledb.open(cfg["uri"], ctx=tiledb.Ctx(config)) as a:
            (y0, y1), (x0, x1) = a.nonempty_domain()
        rows = [
            [da.from_delayed(dask.delayed(read_tile)(cfg["uri"], config, y, x),
                             shape=(min(TILE, y1 + 1 - y), min(TILE, x1 + 1 - x)),
                             dtype=np.float64)
             for x in range(x0, x1 + 1, TILE)]
            for y in range(y0, y1 + 1, TILE)
        ]
        return da.block(rows)
    raise SystemExit(f"unknown method {method}")


def warm(method: str) -> None:
    """Imports in a worker what its reads will need (not part of the read)."""
    import numpy  # noqa: F401
    if method == "refs":
        import fragfs  # noqa: F401  (the codec)
        import s3fs  # noqa: F401
        import zarr  # noqa: F401
    elif method == "serve":
        import aiohttp  # noqa: F401
        import zarr  # noqa: F401
    else:
        import tiledb  # noqa: F401


def main() -> None:
    from distributed import Client, LocalCluster

    method, workers, cfg = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
    threads = int(sys.argv[4]) if len(sys.argv) > 4 else 1
    with LocalCluster(n_workers=workers, threads_per_worker=threads, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        client.wait_for_workers(workers)
        client.run(warm, method)
        v = array(method, cfg)
        Path("/proc/sys/vm/drop_caches").write_text("3")
        busy0 = busy_seconds()
        t0 = time.perf_counter()
        total = float(v.sum().compute())
        seconds = time.perf_counter() - t0
        busy = busy_seconds() - busy0
    print(json.dumps({"seconds": seconds, "sum": total, "cells": int(v.size), "busy": busy}))


def busy_seconds() -> float:
    """CPU seconds the whole machine has spent busy (every process: the workers, the
    S3 server), from /proc/stat: with the wall time, how much of the cores a read used."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle, iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


if __name__ == "__main__":
    main()
