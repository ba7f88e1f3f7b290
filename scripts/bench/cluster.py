"""The `cluster` section of run.py (issue 44): a Dask LocalCluster sums the cluster
array's `v` (make_arrays.py cluster: 4 GiB of float64, ZSTD, 2048 x 2048 tiles, on the
S3 test server, s3s-fs), read three ways, each cold (page cache dropped right before
the sum, the cluster started and its workers' imports done before):

* through kerchunk references (`fragfs refs`): every worker fetches its chunks' stored
  tiles from S3 and decodes them (the `fragfs_tile` codec); no fragfs process runs;
* through `fragfs serve` over HTTP (`zarr/`), the one server decoding for everyone;
* TileDB-Py in each worker, one task per tile.

Rows: references vs TileDB-Py with 2 workers (target: at least 1.0x); `fragfs serve`
vs TileDB-Py (reported); references with 2 workers vs 1 (target: at least 1.6x). The
three sums must agree. The two cores of the machine also run the S3 server, so the
scaling row measures what is left of them.
"""

import json
import subprocess
import sys
import time
from pathlib import Path

CLIENT = Path(__file__).with_name("cluster_client.py")


def measure(python: str, method: str, workers: int, cfg: dict) -> dict:
    out = subprocess.run([python, str(CLIENT), method, str(workers), json.dumps(cfg)],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def section(run, rep, repeat: int) -> None:
    array = run.BENCH / "cluster"
    python = sys.executable
    keys = run.S3_KEYS
    with run.s3_server({"cluster": array}) as endpoint:
        uri = "s3://bench/cluster"
        s3_options = ["--endpoint-url", endpoint, "--region", "us-east-1"]
        env = {**run.os.environ, **keys}
        refs = run.BENCH / "cluster.refs.json"
        t0 = time.perf_counter()
        subprocess.run([run.FRAGFS, "refs", uri, *s3_options, "-o", refs], check=True, env=env,
                       stderr=subprocess.DEVNULL)
        refs_seconds = time.perf_counter() - t0
        s3 = {"endpoint": endpoint, "key": keys["AWS_ACCESS_KEY_ID"],
              "secret": keys["AWS_SECRET_ACCESS_KEY"]}
        runs = {"refs2": [], "refs1": [], "serve2": [], "tiledb2": []}
        sums = {}
        for _ in range(repeat):
            for workers in (2, 1):
                run.settle()
                got = measure(python, "refs", workers, {**s3, "refs": str(refs)})
                runs[f"refs{workers}"].append(got["seconds"])
                sums[f"refs{workers}"] = got["sum"]
            with run.fragfs_serve(uri, *s3_options, env=env) as (_, http):
                run.settle()
                got = measure(python, "serve", 2, {"http": http})
            runs["serve2"].append(got["seconds"])
            sums["serve2"] = got["sum"]
            run.settle()
            got = measure(python, "tiledb", 2, {**s3, "uri": uri})
            runs["tiledb2"].append(got["seconds"])
            sums["tiledb2"] = got["sum"]
            want = sums["tiledb2"]
            for name, total in sums.items():
                if abs(total - want) > 1e-9 * max(1.0, abs(want)):
                    raise RuntimeError(f"cluster: {name} summed {total}, TileDB-Py {want}")
    med = {k: run.median(v) for k, v in runs.items()}
    rep.details["cluster"] = {**runs, "refs_seconds": refs_seconds, "sum": sums["tiledb2"]}
    rep.row("cluster: Dask, 2 workers, sum of a 4 GiB ZSTD array on S3 through kerchunk "
            f"references (fragfs refs: {run.secs(refs_seconds)}) vs TileDB-Py in each worker",
            run.secs(med["refs2"]), f"TileDB-Py {run.secs(med['tiledb2'])}",
            med["tiledb2"] / med["refs2"], target=("≥ 1.00", lambda r: r >= 1.0))
    rep.row("cluster: the same through fragfs serve over HTTP vs TileDB-Py in each worker",
            run.secs(med["serve2"]), f"TileDB-Py {run.secs(med['tiledb2'])}",
            med["tiledb2"] / med["serve2"])
    rep.row("cluster: through references, 2 workers vs 1",
            run.secs(med["refs2"]), f"1 worker {run.secs(med['refs1'])}",
            med["refs1"] / med["refs2"], target=("≥ 1.60", lambda r: r >= 1.6))
