"""Writes the two benchmark arrays with TileDB-Py.

    python make_arrays.py big   <uri>   # 64M cells, 3 attributes, 8 fragments
    python make_arrays.py many  <uri>   # 10,000 fragments of 4 cells each

The big array is dense and 1-D, with 1,048,576-cell tiles, written as 8 fragments of
8M cells (8 space tiles each):

    walk   float64  ZSTD   a smooth random walk (sensor-like), 512 MiB
    count  int64    LZ4    a counter with noise, 512 MiB
    raw    int32    none   random integers, 256 MiB

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
        # Random walk with 4 significant decimals, like a sensor reading: ZSTD gets
        # the sign/exponent and high mantissa bytes, not the noisy low ones.
        walk = walk_end + np.cumsum(rng.normal(0.0, 0.01, per))
        walk = np.round(walk, 4)
        walk_end = float(walk[-1])
        # Event counter: mostly +1..+3 per cell, occasional bursts.
        steps = rng.integers(1, 4, per, dtype=np.int64)
        steps[rng.random(per) < 0.001] += rng.integers(100, 10_000)
        count = count_end + np.cumsum(steps)
        count_end = int(count[-1])
        raw = rng.integers(-(2**31), 2**31 - 1, per, dtype=np.int32)
        with tiledb.open(uri, "w") as a:
            a[f * per : (f + 1) * per] = {"walk": walk, "count": count, "raw": raw}
        print(f"  fragment {f + 1}/{FRAGMENTS} written in {time.monotonic() - t0:.1f} s",
              flush=True)


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


def main() -> None:
    if len(sys.argv) != 3 or sys.argv[1] not in ("big", "many"):
        sys.exit(__doc__)
    {"big": big, "many": many}[sys.argv[1]](sys.argv[2])


if __name__ == "__main__":
    main()
