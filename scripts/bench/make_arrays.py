"""Writes the two benchmark arrays with TileDB-Py.

    python make_arrays.py big     <uri>   # 64M cells, 3 attributes, 8 fragments
    python make_arrays.py many    <uri>   # 10,000 fragments of 4 cells each
    python make_arrays.py overlap <uri>   # 64M cells, 2 attributes, 8 overlapping fragments
    python make_arrays.py sparse  <uri>   # 16M cells in 8 fragments, overlapping, a delete
    python make_arrays.py grid    <uri>   # 8192 x 8192 float64 ZSTD, 1024 x 1024 tiles
    python make_arrays.py pointcloud <uri> # 16M LiDAR points, HILBERT order, 8 fragments
    python make_arrays.py table   <uri>   # 16M rows of 6 fields, sparse, 2 fragments
    python make_arrays.py cluster <uri>   # 16384 x 32768 float64 ZSTD (4 GiB), 8 fragments

The big array is dense and 1-D, with 1,048,576-cell tiles, written as 8 fragments of
8M cells (8 space tiles each):

    walk   float64  ZSTD   a smooth random walk (sensor-like), 512 MiB
    count  int64    LZ4    a counter with noise, 512 MiB
    raw    int32    none   random integers, 256 MiB

The overlap array is the big one's `walk` and `count` written as 8 fragments that each
also overwrite the last 4M cells of the one before (so latest/ takes half of each
overlap from the newer fragment). The sparse array has 8 fragments of 2M random
coordinates in [0, 8M) (so fragments overlap and rewrite coordinates), one float64 ZSTD
attribute, and a delete of the cells with v < -0.9. The grid array is the `walk` data
reshaped 8192 x 8192, in 8 fragments of 1024 rows: the dense 2-D array of the Zarr bench.
The pointcloud array is a LiDAR survey as PDAL's TileDB writer stores it: X, Y, Z FLOAT64
dimensions without tile extents, the HILBERT cell order, Intensity UINT16,
Classification UINT8 and GpsTime FLOAT64 (ZSTD); 8 fragments of 2M points over
overlapping strips, each also rewriting 10% of the previous one's points (same
coordinates, new values; no duplicates, so the newer version wins).

The table array is the table benchmark's (`cells.parquet`, `cells.arrow`): sparse, one
INT64 dimension `x` (16M distinct random coordinates in [0, 2^34), written sorted, in 2
fragments of 8M that interleave, so the merged state merges) and 5 attributes, ZSTD: `v`
float64, `a` int32, `b` float32, `c` int64, `d` float64; capacity 100,000.

The cluster array is the cluster benchmark's (Dask workers reading through kerchunk
references, `fragfs serve` or TileDB-Py): dense 2-D, 16384 x 32768 float64 `v` (4 GiB),
2048 x 2048 tiles (32 MiB each, one Dask chunk), ZSTD, a random walk along each row
(4 decimals), written as 8 fragments of 2048 rows, so every tile comes whole from one
fragment (every chunk can be referenced).

The data is seeded, so every run writes the same values (fragment names differ). The
caller (bench.sh) writes to a temporary name and renames it when this succeeds, so a
half-written array is never reused.
"""

import sys
import time

import numpy as np
import tiledb

CELLS = 64 * 1024 * 1024
TILE = 1024 * 1024
FRAGMENTS = 8
SMALL_FRAGMENTS = 10_000
SMALL_CELLS = 4


def walk_and_count(rng, n: int, walk_end: float, count_end: int):
    """The `walk` and `count` series, continued from their last values. A random walk
    with 4 significant decimals, like a sensor reading (ZSTD gets the sign/exponent and
    high mantissa bytes, not the noisy low ones); an event counter, mostly +1..+3 per
    cell with occasional bursts."""
    walk = np.round(walk_end + np.cumsum(rng.normal(0.0, 0.01, n)), 4)
    steps = rng.integers(1, 4, n, dtype=np.int64)
    steps[rng.random(n) < 0.001] += rng.integers(100, 10_000)
    return walk, count_end + np.cumsum(steps)


def big(uri: str) -> None:
    dom = tiledb.Domain(
        tiledb.Dim(name="x", domain=(0, CELLS - 1), tile=TILE, dtype=np.int64)
    )
    schema = tiledb.ArraySchema(
        domain=dom,
        sparse=False,
        attrs=[
            tiledb.Attr(name="walk", dtype=np.float64, filters=[tiledb.ZstdFilter()]),
            tiledb.Attr(name="count", dtype=np.int64, filters=[tiledb.LZ4Filter()]),
            tiledb.Attr(name="raw", dtype=np.int32),
        ],
    )
    tiledb.Array.create(uri, schema)
    rng = np.random.default_rng(20240603)
    per = CELLS // FRAGMENTS
    walk_end, count_end = 100.0, 0
    for f in range(FRAGMENTS):
        t0 = time.monotonic()
        walk, count = walk_and_count(rng, per, walk_end, count_end)
        walk_end, count_end = float(walk[-1]), int(count[-1])
        raw = rng.integers(-(2**31), 2**31 - 1, per, dtype=np.int32)
        with tiledb.open(uri, "w") as a:
            a[f * per : (f + 1) * per] = {"walk": walk, "count": count, "raw": raw}
        print(f"  fragment {f + 1}/{FRAGMENTS} written in {time.monotonic() - t0:.1f} s",
              flush=True)


def overlap(uri: str) -> None:
    dom = tiledb.Domain(
        tiledb.Dim(name="x", domain=(0, CELLS - 1), tile=TILE, dtype=np.int64)
    )
    schema = tiledb.ArraySchema(
        domain=dom,
        sparse=False,
        attrs=[
            tiledb.Attr(name="walk", dtype=np.float64, filters=[tiledb.ZstdFilter()]),
            tiledb.Attr(name="count", dtype=np.int64, filters=[tiledb.LZ4Filter()]),
        ],
    )
    tiledb.Array.create(uri, schema)
    rng = np.random.default_rng(20241124)
    per, back = CELLS // FRAGMENTS, 4 * TILE
    for f in range(FRAGMENTS):
        lo = max(0, f * per - back)
        walk, count = walk_and_count(rng, (f + 1) * per - lo, 100.0 + f, f * 10**9)
        with tiledb.open(uri, "w", timestamp=f + 1) as a:
            a[lo : (f + 1) * per] = {"walk": walk, "count": count}
        print(f"  fragment {f + 1}/{FRAGMENTS} written", flush=True)


SPARSE_CELLS = 2 * 1024 * 1024
SPARSE_SPAN = 8 * 1024 * 1024


def sparse(uri: str) -> None:
    dom = tiledb.Domain(
        tiledb.Dim(name="x", domain=(0, 2**40), tile=2**20, dtype=np.int64)
    )
    schema = tiledb.ArraySchema(
        domain=dom,
        sparse=True,
        capacity=100_000,
        attrs=[tiledb.Attr(name="v", dtype=np.float64, filters=[tiledb.ZstdFilter()])],
    )
    tiledb.Array.create(uri, schema)
    rng = np.random.default_rng(7)
    for f in range(FRAGMENTS):
        x = np.sort(rng.choice(SPARSE_SPAN, SPARSE_CELLS, replace=False)).astype(np.int64)
        v = np.round(rng.uniform(-1.0, 1.0, SPARSE_CELLS), 6)
        with tiledb.open(uri, "w", timestamp=f + 1) as a:
            a[x] = {"v": v}
        print(f"  fragment {f + 1}/{FRAGMENTS} written", flush=True)
    with tiledb.open(uri, "d", timestamp=FRAGMENTS + 1) as a:
        a.query(cond="v < -0.9").submit()


TABLE_CELLS = 16 * 1024 * 1024


def table(uri: str) -> None:
    dom = tiledb.Domain(tiledb.Dim(name="x", domain=(0, 2**34), tile=2**24, dtype=np.int64))
    zstd = [tiledb.ZstdFilter()]
    attrs = [
        tiledb.Attr(name=n, dtype=t, filters=zstd)
        for n, t in (("v", np.float64), ("a", np.int32), ("b", np.float32), ("c", np.int64),
                     ("d", np.float64))
    ]
    schema = tiledb.ArraySchema(domain=dom, sparse=True, capacity=100_000, attrs=attrs)
    tiledb.Array.create(uri, schema)
    rng = np.random.default_rng(11)
    xs = np.sort(rng.choice(2**34, TABLE_CELLS, replace=False)).astype(np.int64)
    for f in range(2):
        x = xs[f::2]
        n = len(x)
        with tiledb.open(uri, "w", timestamp=f + 1) as a:
            a[x] = {
                "v": np.round(rng.normal(0.0, 1.0, n), 6),
                "a": rng.integers(-(2**31), 2**31 - 1, n, dtype=np.int32),
                "b": rng.normal(0.0, 1.0, n).astype(np.float32),
                "c": np.cumsum(rng.integers(1, 4, n, dtype=np.int64)),
                "d": np.round(rng.uniform(0.0, 100.0, n), 2),
            }
        print(f"  fragment {f + 1}/2 written", flush=True)


GRID = 8192
GRID_TILE = 1024


def grid(uri: str) -> None:
    dom = tiledb.Domain(
        tiledb.Dim(name="y", domain=(0, GRID - 1), tile=GRID_TILE, dtype=np.int64),
        tiledb.Dim(name="x", domain=(0, GRID - 1), tile=GRID_TILE, dtype=np.int64),
    )
    schema = tiledb.ArraySchema(
        domain=dom,
        sparse=False,
        attrs=[tiledb.Attr(name="walk", dtype=np.float64, filters=[tiledb.ZstdFilter()])],
    )
    tiledb.Array.create(uri, schema)
    rng = np.random.default_rng(20240603)
    rows, walk_end = GRID // FRAGMENTS, 100.0
    for f in range(FRAGMENTS):
        walk, _ = walk_and_count(rng, rows * GRID, walk_end, 0)
        walk_end = float(walk[-1])
        with tiledb.open(uri, "w", timestamp=f + 1) as a:
            a[f * rows : (f + 1) * rows, :] = {"walk": walk.reshape(rows, GRID)}
        print(f"  fragment {f + 1}/{FRAGMENTS} written", flush=True)


POINTS = 2 * 1024 * 1024


def pointcloud(uri: str) -> None:
    zstd = [tiledb.ZstdFilter()]
    dims = [tiledb.Dim(name=n, domain=(-10000.0, 10000.0), dtype=np.float64, filters=zstd)
            for n in "XYZ"]
    schema = tiledb.ArraySchema(
        domain=tiledb.Domain(*dims),
        sparse=True,
        cell_order="hilbert",
        capacity=100_000,
        allows_duplicates=False,
        attrs=[tiledb.Attr(name="Intensity", dtype=np.uint16, filters=zstd),
               tiledb.Attr(name="Classification", dtype=np.uint8, filters=zstd),
               tiledb.Attr(name="GpsTime", dtype=np.float64, filters=zstd)],
    )
    tiledb.Array.create(uri, schema)
    rng = np.random.default_rng(11)
    previous = None
    for f in range(FRAGMENTS):
        # A strip 2,000 m wide every 1,500 m: neighbouring strips overlap.
        xyz = np.empty((POINTS, 3))
        xyz[:, 0] = rng.uniform(-8000 + 1500 * f, -6000 + 1500 * f, POINTS)
        xyz[:, 1] = rng.uniform(-9000, 9000, POINTS)
        xyz[:, 2] = rng.normal(200, 30, POINTS)
        xyz = np.round(xyz, 2)
        if previous is not None:
            xyz[: POINTS // 10] = previous[rng.choice(POINTS, POINTS // 10, replace=False)]
        xyz = np.unique(xyz, axis=0)
        n = len(xyz)
        with tiledb.open(uri, "w", timestamp=f + 1) as a:
            a[xyz[:, 0], xyz[:, 1], xyz[:, 2]] = {
                "Intensity": rng.integers(0, 65536, n).astype(np.uint16),
                "Classification": rng.choice(np.array([1, 2, 3, 5, 6, 9], dtype=np.uint8), n),
                "GpsTime": np.round(rng.uniform(3e8, 3.1e8, n), 6),
            }
        previous = xyz
        print(f"  fragment {f + 1}/{FRAGMENTS} written ({n:,} points)", flush=True)


def many(uri: str) -> None:
    n = SMALL_FRAGMENTS * SMALL_CELLS
    dom = tiledb.Domain(
        tiledb.Dim(name="x", domain=(0, n - 1), tile=SMALL_CELLS, dtype=np.int64)
    )
    schema = tiledb.ArraySchema(
        domain=dom, sparse=False, attrs=[tiledb.Attr(name="v", dtype=np.int32)]
    )
    tiledb.Array.create(uri, schema)
    t0 = time.monotonic()
    # One array handle, one write query (= one fragment) per loop step. Explicit,
    # increasing timestamps keep the fragment order deterministic.
    for i in range(SMALL_FRAGMENTS):
        lo = i * SMALL_CELLS
        with tiledb.open(uri, "w", timestamp=i + 1) as a:
            a[lo : lo + SMALL_CELLS] = np.arange(lo, lo + SMALL_CELLS, dtype=np.int32)
        if (i + 1) % 1000 == 0:
            print(f"  {i + 1}/{SMALL_FRAGMENTS} fragments, {time.monotonic() - t0:.0f} s",
                  flush=True)


CLUSTER_ROWS, CLUSTER_COLS, CLUSTER_TILE = 16384, 32768, 2048


def cluster(uri: str) -> None:
    dom = tiledb.Domain(
        tiledb.Dim(name="y", domain=(0, CLUSTER_ROWS - 1), tile=CLUSTER_TILE, dtype=np.int64),
        tiledb.Dim(name="x", domain=(0, CLUSTER_COLS - 1), tile=CLUSTER_TILE, dtype=np.int64),
    )
    schema = tiledb.ArraySchema(
        domain=dom,
        sparse=False,
        attrs=[tiledb.Attr(name="v", dtype=np.float64, filters=[tiledb.ZstdFilter()])],
    )
    tiledb.Array.create(uri, schema)
    rng = np.random.default_rng(44)
    bands = CLUSTER_ROWS // CLUSTER_TILE
    for f in range(bands):
        lo = f * CLUSTER_TILE
        band = np.round(np.cumsum(rng.normal(0.0, 1.0, (CLUSTER_TILE, CLUSTER_COLS)), axis=1), 4)
        with tiledb.open(uri, "w", timestamp=f + 1) as a:
            a[lo : lo + CLUSTER_TILE, :] = band
        print(f"  fragment {f + 1}/{bands} written", flush=True)


def main() -> None:
    kinds = {"cluster": cluster, "big": big, "many": many, "overlap": overlap, "sparse": sparse, "grid": grid,
             "pointcloud": pointcloud, "table": table}
    if len(sys.argv) != 3 or sys.argv[1] not in kinds:
        sys.exit(__doc__)
    kinds[sys.argv[1]](sys.argv[2])


if __name__ == "__main__":
    main()
