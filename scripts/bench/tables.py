"""The `tables` section of run.py (issue 43): `cells.parquet` and `cells.arrow` of the
table array (make_arrays.py table: 16M rows, an INT64 dimension and 5 attributes,
ZSTD, 2 interleaving fragments) against TileDB-Py, every figure cold (page cache
dropped, fragfs freshly mounted) and timed inside the reading process, imports left
out:

* DuckDB `SELECT count(*), avg(v) FROM 'latest/cells.parquet' WHERE x BETWEEN a AND b`
  (10% of the rows) vs TileDB-Py's query of the same range and attribute plus numpy's
  mean (target: at least 1.0x);
* DuckDB summing one column of six vs summing all six (target: at least 4x faster),
  cold, and once the state's layout is built (a footer-only query first, then the page
  cache dropped);
* polars `scan_ipc(latest/cells.arrow, memory_map=True)` of every column vs TileDB-Py
  `df[:]` (reported);
* the server's CPU per GB served over HTTP: a fragment's `cells.parquet`, whose ZSTD
  columns are passed through compressed, vs its `cells.arrow`, every column decoded
  (reported).
"""

import json
import subprocess
import sys
import time
import urllib.request

LO, HI = int(0.45 * 2**34), int(0.55 * 2**34)

DUCKDB_RANGE = """
import sys, time, json, duckdb
path, lo, hi = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
con = duckdb.connect()
t = time.perf_counter()
n, mean = con.sql(f"SELECT count(*), avg(v) FROM '{path}' WHERE x BETWEEN {lo} AND {hi}").fetchone()
print(json.dumps({"seconds": time.perf_counter() - t, "n": n, "mean": mean}))
"""

TILEDB_RANGE = """
import sys, time, json, numpy as np, tiledb
uri, lo, hi = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
t = time.perf_counter()
with tiledb.open(uri) as a:
    v = a.query(attrs=["v"], dims=[]).multi_index[lo:hi]["v"]
    mean = float(np.mean(v))
print(json.dumps({"seconds": time.perf_counter() - t, "n": len(v), "mean": mean}))
"""

DUCKDB_SUM = """
import sys, time, json, duckdb
path, columns = sys.argv[1], sys.argv[2].split(",")
sums = ", ".join(f"sum({c})" for c in columns if c) or "count(*)"
con = duckdb.connect()
t = time.perf_counter()
row = con.sql(f"SELECT {sums} FROM '{path}'").fetchone()
print(json.dumps({"seconds": time.perf_counter() - t, "sums": [float(s) for s in row]}))
"""

POLARS_IPC = """
import sys, time, json, polars as pl
t = time.perf_counter()
df = pl.scan_ipc(sys.argv[1], memory_map=True).select(pl.all().sum()).collect()
print(json.dumps({"seconds": time.perf_counter() - t, "rows": None}))
"""

TILEDB_DF = """
import sys, time, json, tiledb
t = time.perf_counter()
with tiledb.open(sys.argv[1]) as a:
    df = a.df[:]
    s = df.sum()
print(json.dumps({"seconds": time.perf_counter() - t, "rows": len(df)}))
"""


def python_timed(python: str, script: str, *args) -> dict:
    out = subprocess.run([python, "-c", script, *map(str, args)], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of process `pid` (/proc/<pid>/stat, clock ticks)."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    import os
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def fetch(url: str) -> int:
    """GETs `url` whole; returns the bytes received."""
    n = 0
    with urllib.request.urlopen(url) as r:
        while chunk := r.read(1 << 20):
            n += len(chunk)
    return n


def section(run, rep, repeat: int) -> None:
    table = run.BENCH / "table"
    python = sys.executable
    latest = run.MNT / "latest"

    # 1. A 10% range: DuckDB over the mount vs TileDB-Py's query.
    f_runs, t_runs = [], []
    for _ in range(repeat):
        with run.fragfs_foreground(table):
            run.drop_caches()
            run.settle()
            got = python_timed(python, DUCKDB_RANGE, latest / "cells.parquet", LO, HI)
        f_runs.append(got["seconds"])
        run.drop_caches()
        run.settle()
        want = python_timed(python, TILEDB_RANGE, table, LO, HI)
        t_runs.append(want["seconds"])
        if got["n"] != want["n"] or abs(got["mean"] - want["mean"]) > 1e-9 * max(1, abs(want["mean"])):
            raise RuntimeError(f"tables: DuckDB read {got}, TileDB-Py {want}")
    f, t = run.median(f_runs), run.median(t_runs)
    rep.details["tables_range"] = {"fragfs": f_runs, "tiledb": t_runs, "rows": got["n"]}
    rep.row(f"tables: DuckDB count/avg of 10% of 16M rows (x BETWEEN) on latest/cells.parquet "
            "vs TileDB-Py query + numpy mean", run.secs(f), f"TileDB-Py {run.secs(t)}",
            t / f, target=("≥ 1.00", lambda r: r >= 1.0))

    # 2. One column of six vs all six: cold (the state's one merge pass and its layout
    # included, as a first query pays them), and once the layout is built (a first
    # query that reads the footer only, then the page cache dropped: what each later
    # query pays).
    one, six, one_laid, six_laid = [], [], [], []
    for _ in range(repeat):
        for cold, laid, columns in ((one, one_laid, "a"), (six, six_laid, "x,v,a,b,c,d")):
            with run.fragfs_foreground(table):
                run.drop_caches()
                run.settle()
                cold.append(python_timed(python, DUCKDB_SUM, latest / "cells.parquet",
                                         columns)["seconds"])
            with run.fragfs_foreground(table):
                python_timed(python, DUCKDB_SUM, latest / "cells.parquet", "")
                run.drop_caches()
                run.settle()
                laid.append(python_timed(python, DUCKDB_SUM, latest / "cells.parquet",
                                         columns)["seconds"])
    o, s = run.median(one), run.median(six)
    ol, sl = run.median(one_laid), run.median(six_laid)
    rep.details["tables_projection"] = {"one": one, "six": six, "one_laid_out": one_laid,
                                        "six_laid_out": six_laid}
    rep.row("tables: DuckDB sum of one column of six vs all six (latest/cells.parquet, cold: "
            "the state's merge and layout included)",
            run.secs(o), f"six columns {run.secs(s)}", s / o,
            target=("≥ 4.00", lambda r: r >= 4.0))
    rep.row("tables: the same once the state's layout is built (page cache dropped)",
            run.secs(ol), f"six columns {run.secs(sl)}", sl / ol,
            target=("≥ 4.00", lambda r: r >= 4.0))

    # 3. polars over the memory-mapped cells.arrow vs TileDB-Py df[:].
    p_runs, d_runs = [], []
    for _ in range(repeat):
        with run.fragfs_foreground(table):
            run.drop_caches()
            run.settle()
            p_runs.append(python_timed(python, POLARS_IPC, latest / "cells.arrow")["seconds"])
        run.drop_caches()
        run.settle()
        d_runs.append(python_timed(python, TILEDB_DF, table)["seconds"])
    p, d = run.median(p_runs), run.median(d_runs)
    rep.details["tables_arrow"] = {"polars": p_runs, "tiledb_df": d_runs}
    rep.row("tables: polars scan_ipc(memory_map) of latest/cells.arrow, every column summed, "
            "vs TileDB-Py df[:]", run.secs(p), f"TileDB-Py {run.secs(d)}", d / p)

    # 4. The server's CPU per GB: passed-through ZSTD pages vs decoded columns.
    fragment = sorted(p.name for p in (table / "__fragments").iterdir())[0]
    per_gb = {}
    for name in ("cells.parquet", "cells.arrow"):
        runs = []
        for _ in range(repeat):
            run.drop_caches()
            with run.fragfs_serve(table) as (proc, host):
                url = f"http://{host}/fragments/{fragment}/{name}"
                c0 = cpu_seconds(proc.pid)
                n = fetch(url)
                runs.append((cpu_seconds(proc.pid) - c0) / (n / 1e9))
        per_gb[name] = run.median(runs)
    rep.details["tables_cpu_per_gb"] = per_gb
    rep.row("tables: server CPU per GB over HTTP, a fragment's cells.parquet (ZSTD pages "
            "passed through) vs its cells.arrow (decoded)",
            f"{per_gb['cells.parquet']:.2f} CPU-s/GB",
            f"decoded {per_gb['cells.arrow']:.2f} CPU-s/GB",
            per_gb["cells.arrow"] / max(per_gb["cells.parquet"], 1e-9))
