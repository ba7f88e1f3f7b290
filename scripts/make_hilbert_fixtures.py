#!/usr/bin/env python3
"""Write sparse arrays with the HILBERT cell order into OUTDIR: point clouds as
PDAL's TileDB writer makes them (FLOAT64 X / Y / Z, no tile extents, a small
capacity, LAS point attributes) and integer / string ones, with overlapping
fragments, duplicates, deletes, consolidation and time travel; each with its
`<array>.expected.json` (per fragment) and `<array>.merged.json` (TileDB's merged
reads at the latest state and every timestamp), as the feature fixtures have.

Plus `orders.json`: for several domains, points written in one fragment and read
back in TileDB's global order (the Hilbert order TileDB sorted them in): the unit
tests of fragfs's Hilbert order compare against it.

Usage: make_hilbert_fixtures.py OUTDIR   (OUTDIR is deleted and rewritten)
Run it through scripts/make_hilbert_fixtures.sh (pinned tiledb-py from PyPI).
"""

import json
import os
import shutil
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_feature_fixtures as ff  # noqa: E402
import make_fixtures as mf  # noqa: E402
import make_merged_json as mm  # noqa: E402
import tiledb  # noqa: E402

SEED = 20261126
ZSTD = [tiledb.ZstdFilter(level=7)]


def rng(k):
    return np.random.default_rng(SEED + k)


def pdal_schema(meta, dups, capacity=64, domain=(-1000.0, 1000.0)):
    """A point cloud schema as PDAL's writers.tiledb creates it: X, Y, Z FLOAT64
    without tile extents, HILBERT cell order, zstd filters."""
    dims = [tiledb.Dim(n, domain=domain, dtype=np.float64, filters=ZSTD) for n in "XYZ"]
    attrs = [tiledb.Attr("Intensity", dtype=np.uint16, filters=ZSTD),
             tiledb.Attr("Classification", dtype=np.uint8, filters=ZSTD),
             tiledb.Attr("GpsTime", dtype=np.float64, filters=ZSTD),
             tiledb.Attr("UserData", dtype=np.uint8, nullable=True, filters=ZSTD)]
    return mf.mk_schema(meta, domain=tiledb.Domain(*dims), attrs=attrs, sparse=True, capacity=capacity,
                        cell_order="hilbert", allows_duplicates=dups)


def write_points(uri, t, pts, seed):
    g = rng(seed)
    n = len(pts)
    with tiledb.open(uri, "w", timestamp=t) as A:
        A[pts[:, 0], pts[:, 1], pts[:, 2]] = {
            "Intensity": g.integers(0, 65536, n).astype(np.uint16),
            "Classification": g.choice(np.array([1, 2, 6, 7, 9], dtype=np.uint8), n),
            "GpsTime": np.round(g.uniform(1e8, 2e8, n), 3),
            "UserData": np.array([None if i % 5 == 0 else int(v) for i, v in enumerate(g.integers(0, 256, n))],
                                 dtype=object)}


def cloud(g, n, center, spread):
    """n points around `center`, rounded to centimetres as LAS scales them."""
    return np.round(g.normal(center, spread, (n, 3)).clip(-999.0, 999.0), 2)


def gen_pointcloud_dups(uri):
    """PDAL's default: duplicates allowed; overlapping tiles of a survey, a noise
    delete, a partial consolidation kept beside its fragments (not vacuumed)."""
    meta, deletes = {}, []
    tiledb.Array.create(uri, pdal_schema(meta, dups=True))
    g = rng(1)
    first = cloud(g, 150, (0, 0, 10), 40)
    write_points(uri, 1, first, 11)
    write_points(uri, 2, cloud(g, 120, (30, -20, 12), 40), 12)
    # A rescan of part of the first strip: the same points again (kept: duplicates).
    write_points(uri, 3, np.concatenate([first[:40], cloud(g, 30, (-50, 60, 5), 20)]), 13)
    ff.do_delete(uri, 4, "Classification == 7", deletes)
    write_points(uri, 5, cloud(g, 100, (10, 10, 0), 60), 15)
    cfg = {"sm.consolidation.with_timestamps": "true", "sm.consolidation.timestamp_start": "2",
           "sm.consolidation.timestamp_end": "3"}
    tiledb.consolidate(uri, config=tiledb.Config(cfg))
    meta["deletes_processed_by_consolidation"] = len(deletes)
    meta["deletes"] = deletes
    meta["operations"] = [{"op": "consolidate", "config": cfg, "vacuumed": False, "keeps_timestamps": True}]
    meta["notes"] = ("PDAL-style point cloud: X/Y/Z FLOAT64 (-1000..1000, no tile extents), HILBERT, capacity 64, "
                     "duplicates allowed; writes t=1, 2, 3 (t=3 repeats 40 points of t=1), delete "
                     "'Classification == 7' at t=4, write t=5; fragments t=2..3 consolidated with timestamps, "
                     "not vacuumed.")
    return meta


def gen_pointcloud_versions(uri):
    """No duplicates: rewritten points take the newest version; a delete by an
    attribute condition; consolidation with timestamps, vacuumed."""
    meta, deletes = {}, []
    tiledb.Array.create(uri, pdal_schema(meta, dups=False, capacity=32, domain=(-500.0, 500.0)))
    g = rng(2)
    base = np.round(g.uniform(-499, 499, (160, 3)), 1)
    base = np.unique(base, axis=0)
    write_points(uri, 1, base[:100], 21)
    write_points(uri, 2, base[60:140], 22)
    ff.do_delete(uri, 3, "Intensity < 8000", deletes)
    write_points(uri, 4, np.concatenate([base[::7], np.array([[-499.0, -499.0, -499.0], [499.0, 499.0, 499.0],
                                                             [0.0, 0.0, 0.0], [-0.5, 0.25, 0.0]])]), 24)
    cfg = {"sm.consolidation.with_timestamps": "true", "sm.consolidation.timestamp_start": "1",
           "sm.consolidation.timestamp_end": "2"}
    tiledb.consolidate(uri, config=tiledb.Config(cfg))
    meta["deletes_processed_by_consolidation"] = len(deletes)
    tiledb.vacuum(uri)
    write_points(uri, 5, base[130:], 25)
    ff.do_delete(uri, 6, "Classification == 2 and GpsTime > 150000000.0", deletes)
    meta["deletes"] = deletes
    meta["operations"] = [{"op": "consolidate", "config": cfg, "vacuumed": True, "keeps_timestamps": True}]
    meta["extra_timestamps"] = [1, 2]
    meta["notes"] = ("Point cloud without duplicates (X/Y/Z FLOAT64 -500..500, HILBERT, capacity 32): writes t=1, 2 "
                     "(overlapping: later wins), delete 'Intensity < 8000' at t=3, write t=4 (every 7th point again, "
                     "the domain's corners and the origin); t=1..2 consolidated with timestamps and vacuumed; write "
                     "t=5, delete 'Classification == 2 and GpsTime > 1.5e8' at t=6.")
    return meta


def gen_hilbert_ints(uri):
    """Signed and unsigned dimensions of different widths, with tile extents (the
    Hilbert order ignores them), negative values; consolidation without
    timestamps, not vacuumed."""
    meta, deletes = {}, []
    dom = tiledb.Domain(tiledb.Dim("a", domain=(-100, 100), tile=10, dtype=np.int8),
                        tiledb.Dim("b", domain=(0, 60000), tile=1000, dtype=np.uint16),
                        tiledb.Dim("c", domain=(-(1 << 40), 1 << 40), tile=1 << 30, dtype=np.int64))
    attrs = [tiledb.Attr("v", dtype=np.int32), tiledb.Attr("s", dtype=str)]
    schema = mf.mk_schema(meta, domain=dom, attrs=attrs, sparse=True, capacity=16, cell_order="hilbert")
    tiledb.Array.create(uri, schema)
    g = rng(3)
    pts = np.unique(np.stack([g.integers(-100, 101, 120), g.integers(0, 60001, 120),
                              g.integers(-(1 << 40), (1 << 40) + 1, 120)], axis=1), axis=0)
    pts = np.concatenate([pts, [[-100, 0, -(1 << 40)], [100, 60000, 1 << 40], [0, 0, 0], [-1, 1, -1]]])

    def w(t, sel):
        with tiledb.open(uri, "w", timestamp=t) as A:
            A[sel[:, 0].astype(np.int8), sel[:, 1].astype(np.uint16), sel[:, 2].astype(np.int64)] = {
                "v": np.array([t * 1000 + i for i in range(len(sel))], dtype=np.int32),
                "s": np.array(["t%d.%d" % (t, i) if i % 4 else "" for i in range(len(sel))], dtype=object)}
    w(1, pts[:80])
    w(2, pts[50:])
    ff.do_delete(uri, 3, "v < 1040", deletes)
    w(4, pts[::5])
    tiledb.consolidate(uri, config=tiledb.Config({"sm.consolidation.timestamp_start": "1",
                                                  "sm.consolidation.timestamp_end": "2"}))
    meta["deletes_processed_by_consolidation"] = len(deletes)
    w(5, pts[100:110])
    meta["deletes"] = deletes
    meta["operations"] = [{"op": "consolidate", "config": {"timestamp_start": 1, "timestamp_end": 2},
                           "vacuumed": False, "keeps_timestamps": False}]
    meta["notes"] = ("3-D sparse HILBERT: a INT8 (-100..100, tile 10), b UINT16 (0..60000, tile 1000), c INT64 "
                     "(-2^40..2^40, tile 2^30), no duplicates, capacity 16; writes t=1, 2 (overlapping), delete "
                     "'v < 1040' at t=3, write t=4 (every 5th point), t=1..2 consolidated without timestamps "
                     "(not vacuumed), write t=5.")
    return meta


def gen_hilbert_strings(uri):
    """A string dimension (its first 8 bytes make its Hilbert coordinate, bytes
    above 0x7f included) beside an integer one; strings sharing 8-byte prefixes
    tie on the Hilbert value and fall back to the row-major order."""
    meta, deletes = {}, []
    dom = tiledb.Domain(tiledb.Dim("name", domain=(None, None), tile=None, dtype="ascii"),
                        tiledb.Dim("k", domain=(-50, 50), tile=5, dtype=np.int32))
    attrs = [tiledb.Attr("v", dtype=np.float32)]
    schema = mf.mk_schema(meta, domain=dom, attrs=attrs, sparse=True, capacity=8, cell_order="hilbert")
    tiledb.Array.create(uri, schema)
    words = ["", "a", "ab", "abcdefgh", "abcdefghij", "abcdefghik", "zz", "station-001", "station-002",
             "station-010", "Zebra", "caf\u00e9", "na\u00efve", "\u00fcber", "~tilde", "0", "00000000x"]
    g = rng(4)

    def w(t, n):
        names = [words[i] for i in g.integers(0, len(words), n)]
        ks = g.integers(-50, 51, n).astype(np.int32)
        keep = sorted({(s, int(k)) for s, k in zip(names, ks)})
        with tiledb.open(uri, "w", timestamp=t) as A:
            # As bytes: TileDB-Py refuses non-ASCII str for an ASCII dimension, not bytes.
            A[np.array([s.encode() for s, _ in keep], dtype=object), np.array([k for _, k in keep], dtype=np.int32)] = {
                "v": np.array([t + i / 8 for i in range(len(keep))], dtype=np.float32)}
    w(1, 60)
    w(2, 40)
    ff.do_delete(uri, 3, "v < 1.5", deletes)
    w(4, 20)
    meta["deletes"] = deletes
    meta["notes"] = ("2-D sparse HILBERT: name STRING_ASCII (var; UTF-8 bytes above 0x7f, shared 8-byte prefixes), "
                     "k INT32 (-50..50, tile 5), capacity 8, no duplicates; writes t=1, 2, delete 'v < 1.5' at t=3, "
                     "write t=4.")
    return meta


def gen_hilbert_mixed(uri):
    """FLOAT32 and INT16 dimensions, duplicates allowed, per-cell timestamps
    consolidated and vacuumed."""
    meta = {}
    dom = tiledb.Domain(tiledb.Dim("x", domain=(-1.5, 2.5), tile=0.5, dtype=np.float32),
                        tiledb.Dim("y", domain=(-300, 300), tile=None, dtype=np.int16))
    attrs = [tiledb.Attr("w", dtype=np.uint64)]
    schema = mf.mk_schema(meta, domain=dom, attrs=attrs, sparse=True, capacity=10, cell_order="hilbert",
                          allows_duplicates=True)
    tiledb.Array.create(uri, schema)
    g = rng(5)
    for t in (1, 2, 3):
        n = 40
        xs = np.round(g.uniform(-1.5, 2.5, n), 3).astype(np.float32)
        ys = g.integers(-300, 301, n).astype(np.int16)
        if t == 3:
            xs[:5], ys[:5] = -1.5, -300
        with tiledb.open(uri, "w", timestamp=t) as A:
            A[xs, ys] = {"w": np.arange(n, dtype=np.uint64) + t * 100}
    cfg = {"sm.consolidation.with_timestamps": "true"}
    tiledb.consolidate(uri, config=tiledb.Config(cfg))
    meta["deletes_processed_by_consolidation"] = 0
    tiledb.vacuum(uri)
    meta["operations"] = [{"op": "consolidate", "config": cfg, "vacuumed": True, "keeps_timestamps": True}]
    meta["extra_timestamps"] = [1, 2, 3]
    meta["notes"] = ("2-D sparse HILBERT with duplicates: x FLOAT32 (-1.5..2.5, tile 0.5), y INT16 (-300..300, no "
                     "tile extent), capacity 10; writes t=1, 2, 3 (t=3: five copies of the domain's low corner), "
                     "all consolidated with timestamps and vacuumed.")
    return meta


# ---------------------------------------------------------------------------
# orders.json: TileDB's Hilbert order of single fragments


ORDER_CASES = [
    ("float64 x3, PDAL", [("X", np.float64, (-1000.0, 1000.0)), ("Y", np.float64, (-1000.0, 1000.0)),
                          ("Z", np.float64, (-1000.0, 1000.0))]),
    ("float64 x1", [("x", np.float64, (-1e6, 3.5e6))]),
    ("float32 x2, narrow", [("x", np.float32, (0.0, 1.0)), ("y", np.float32, (-2.0, -1.0))]),
    ("int8, uint16, int64", [("a", np.int8, (-128, 126)), ("b", np.uint16, (0, 65534)),
                             ("c", np.int64, (-(1 << 62), 1 << 62))]),
    ("uint64, int32", [("u", np.uint64, (5, (1 << 63) + 12345)), ("i", np.int32, (-(1 << 31), (1 << 31) - 2))]),
    ("int16 x4", [("p", np.int16, (-5, 5)), ("q", np.int16, (-5, 5)), ("r", np.int16, (0, 3)),
                  ("s", np.int16, (-1000, 1000))]),
    ("string, uint8", [("s", "ascii", None), ("u", np.uint8, (0, 254))]),
]


def random_values(g, dtype, dom, n):
    if dtype == "ascii":
        alphabet = ["a", "b", "ab", "abcdefgh", "abcdefgi", "abcdefghij", "z", "\u00e9t\u00e9", "\u00e9", "A",
                    "", "0123456789", "~"]
        return [alphabet[i].encode() for i in g.integers(0, len(alphabet), n)]
    lo, hi = dom
    if np.issubdtype(dtype, np.floating):
        v = g.uniform(lo, hi, n).astype(dtype)
        v[:4] = [lo, hi, (lo + hi) / 2, lo]
        return v
    info = np.iinfo(dtype)
    v = np.array([int(lo) + int(x) for x in g.integers(0, int(hi) - int(lo) + 1, n, dtype=np.uint64)],
                 dtype=object) if info.bits == 64 else g.integers(int(lo), int(hi) + 1, n)
    v = np.array(v, dtype=dtype)
    v[:3] = [lo, hi, lo]
    return v


def json_value(v):
    if isinstance(v, (bytes, np.bytes_)):
        return list(bytes(v))
    if isinstance(v, str):
        return list(v.encode())
    if isinstance(v, (np.floating, float)):
        return float(v)
    return int(v)


def gen_orders(tmp):
    cases = []
    for k, (name, dims) in enumerate(ORDER_CASES):
        uri = os.path.join(tmp, "order%d" % k)
        tdims = []
        for dn, dt, dom in dims:
            if dt == "ascii":
                tdims.append(tiledb.Dim(dn, domain=(None, None), tile=None, dtype="ascii"))
            else:
                tdims.append(tiledb.Dim(dn, domain=dom, tile=None, dtype=dt))
        tiledb.Array.create(uri, tiledb.ArraySchema(domain=tiledb.Domain(*tdims),
                                                     attrs=[tiledb.Attr("written", dtype=np.uint32)], sparse=True,
                                                     capacity=1000, cell_order="hilbert",
                                                     allows_duplicates=True))
        g = rng(100 + k)
        n = 300
        cols = [random_values(g, dt, dom, n) for _, dt, dom in dims]
        with tiledb.open(uri, "w", timestamp=1) as A:
            A[tuple(np.array(c, dtype=object) if dims[j][1] == "ascii" else c for j, c in enumerate(cols))] = {
                "written": np.arange(n, dtype=np.uint32)}
        with tiledb.open(uri) as A:
            r = A.query(order="G")[:]
        order = [int(i) for i in r["written"]]
        cases.append({
            "name": name,
            "dimensions": [{"name": dn, "datatype": "STRING_ASCII" if dt == "ascii" else np.dtype(dt).name.upper(),
                            "domain": None if dom is None else [json_value(np.array(dom, dtype=dt)[0]),
                                                                json_value(np.array(dom, dtype=dt)[1])]}
                           for dn, dt, dom in dims],
            "points": [[json_value(cols[j][i]) for j in range(len(dims))] for i in range(n)],
            "tiledb_order": order,
        })
    return {"writer": ff.writer_info(),
            "notes": "Each case: points (written in this order, one fragment, duplicates allowed) and "
                     "tiledb_order, the indexes of the points in TileDB's global (Hilbert) order as a read "
                     "with order='G' returns them. Strings are lists of bytes; floats and integers as JSON "
                     "numbers (UINT64 / INT64 exact).",
            "cases": cases}


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_hilbert_fixtures.py OUTDIR")
    out = os.path.abspath(sys.argv[1])
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    ff.OUT = out
    tmp = tempfile.mkdtemp(prefix="hilbert-fixtures-")
    docs = []
    try:
        for name, gen in (("pointcloud_dups", gen_pointcloud_dups),
                          ("pointcloud_versions", gen_pointcloud_versions),
                          ("hilbert_ints", gen_hilbert_ints),
                          ("hilbert_strings", gen_hilbert_strings),
                          ("hilbert_mixed", gen_hilbert_mixed)):
            meta = gen(os.path.join(out, name))
            ff.finish_array(out, name, meta, tmp, docs)
            print("%-22s fragments %s states %s" % (name, docs[-1]["fragments"], docs[-1]["states"]), flush=True)
        with open(os.path.join(out, "orders.json"), "w") as fh:
            mm.dump(gen_orders(tmp), fh)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
