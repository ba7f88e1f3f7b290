"""The `cluster` section of run.py (issue 44): a Dask LocalCluster sums the cluster
array's `v` (make_arrays.py cluster: 4 GiB of float64, ZSTD, 2048 x 2048 tiles, on the
S3 test server, s3s-fs), read three ways, each cold (page cache dropped right before
the sum, the cluster started and its workers' imports done before):

* through kerchunk references (`fragfs refs`): every worker fetches its chunks' stored
  tiles from S3 and decodes them (the `fragfs_tile` codec); no fragfs process runs;
* through `fragfs serve` over HTTP (`zarr/`), the one server decoding for everyone;
* TileDB-Py in each worker, one task per tile.

Rows: references vs TileDB-Py with 2 workers (target: at least 1.0x); `fragfs serve`
vs TileDB-Py (reported); references with 2 workers vs 1 (target: at least 1.6x); and,
reported, references vs TileDB-Py with 2 threads in each worker (TileDB-Py runs its own
threads inside one task, a reference read one Python thread). The sums must agree.

The two cores of the machine also run the S3 server, so the scaling row measures what
is left of them: each measurement also records the CPU seconds the machine was busy,
and the scaling row prints the best any 2 workers could do with that work, both cores
busy all the time (busy CPU seconds / 2).
"""

import json
import subprocess
import sys
import time
from pathlib import Path

CLIENT = Path(__file__).with_name("cluster_client.py")


def measure(python: str, method: str, workers: int, cfg: dict, threads: int = 1) -> dict:
    out = subprocess.run([python, str(CLIENT), method, str(workers), json.dumps(cfg),
                          str(threads)], check=True, capture_output=True, text=True).stdout
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
        runs = {"refs2": [], "refs1": [], "serve2": [], "tiledb2": [], "refs2x2": [],
                "tiledb2x2": []}
        busy = {name: [] for name in runs}
        sums = {}

        def record(name: str, got: dict) -> None:
            runs[name].append(got["seconds"])
            busy[name].append(got["busy"])
            sums[name] = got["sum"]

        for _ in range(repeat):
            for workers in (2, 1):
                run.settle()
                record(f"refs{workers}", measure(python, "refs", workers, {**s3, "refs": str(refs)}))
            with run.fragfs_serve(uri, *s3_options, env=env) as (_, http):
                run.settle()
                record("serve2", measure(python, "serve", 2, {"http": http}))
            run.settle()
            record("tiledb2", measure(python, "tiledb", 2, {**s3, "uri": uri}))
            run.settle()
            record("refs2x2", measure(python, "refs", 2, {**s3, "refs": str(refs)}, threads=2))
            run.settle()
            record("tiledb2x2", measure(python, "tiledb", 2, {**s3, "uri": uri}, threads=2))
            want = sums["tiledb2"]
            for name, total in sums.items():
                if abs(total - want) > 1e-9 * max(1.0, abs(want)):
                    raise RuntimeError(f"cluster: {name} summed {total}, TileDB-Py {want}")
    med = {k: run.median(v) for k, v in runs.items()}
    cpu = {k: run.median(v) for k, v in busy.items()}
    rep.details["cluster"] = {**runs, "busy_cpu_seconds": busy, "refs_seconds": refs_seconds,
                              "sum": sums["tiledb2"]}

    def vs_tiledb(label: str, ours: str, theirs: str, target=None) -> None:
        rep.row(f"cluster: {label} vs TileDB-Py in each worker", run.secs(med[ours]),
                f"TileDB-Py {run.secs(med[theirs])}", med[theirs] / med[ours], target=target)

    vs_tiledb("Dask, 2 workers, sum of a 4 GiB ZSTD array on S3 through kerchunk references "
              f"(fragfs refs: {run.secs(refs_seconds)})", "refs2", "tiledb2",
              target=("≥ 1.00", lambda r: r >= 1.0))
    vs_tiledb("the same through fragfs serve over HTTP", "serve2", "tiledb2")
    rep.row("cluster: through references, 2 workers vs 1 (machine busy "
            f"{cpu['refs2']:.1f} vs {cpu['refs1']:.1f} CPU s: both cores busy throughout, "
            f"2 workers would take {run.secs(cpu['refs2'] / 2)}, "
            f"{med['refs1'] / (cpu['refs2'] / 2):.2f}x)",
            run.secs(med["refs2"]), f"1 worker {run.secs(med['refs1'])}",
            med["refs1"] / med["refs2"], target=("≥ 1.60", lambda r: r >= 1.6))
    vs_tiledb("2 workers of 2 threads each, references", "refs2x2", "tiledb2x2")
