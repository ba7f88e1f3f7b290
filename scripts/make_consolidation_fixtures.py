#!/usr/bin/env python3
"""Write the consolidation fixtures into OUTDIR (tests/fixtures/consolidation/):
small arrays that TileDB-Py wrote, consolidated and (or not) vacuumed, with
deletes and later writes, each with

  * `<array>.expected.json`: every live fragment, as `describe()` of
    scripts/make_feature_fixtures.py writes it (imported, not copied);
  * `<array>.merged.json`: TileDB's own merged read of the array, latest and
    at every timestamp T from 0 to one past the last operation
    (scripts/make_merged_json.py with those timestamps as extra ones), so
    every t1, t2, t1 - 1, t2 + 1 of every fragment and every timestamp inside
    a consolidated range is a state TileDB read.

Usage: make_consolidation_fixtures.py OUTDIR   (OUTDIR is deleted and rewritten)

Run it through scripts/make_consolidation_fixtures.sh, which pins tiledb-py /
numpy / pandas. Every write, delete and consolidation is stamped explicitly
(`tiledb.open(uri, 'w', timestamp=t)`), so the states are the same on every
run; only fragment names (UUIDs) and schema file names change.

What libtiledb 2.30 can write bounds what is here: a sparse consolidation
always keeps per-cell timestamps (`sm.consolidation.with_timestamps` is no
longer read; TileDB sets it for every sparse array of format 15 or later),
and a dense one never does. Sparse consolidations without timestamps (formats
up to 14) are in the shared corpus, written by the libraries of their time.
"""

import os
import shutil
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_feature_fixtures as ff  # noqa: E402  (describe, finish_array, write_json)
import make_fixtures as mf  # noqa: E402
import make_merged_json as mm  # noqa: E402
import tiledb  # noqa: E402
import tiledb.libtiledb as lt  # noqa: E402

# ---------------------------------------------------------------------------
# the arrays: one schema per kind, writes whose values name their write


def create(uri, meta, kind):
    """`sparse`, `dups` (sparse allowing duplicates) or `dense`: x INT32, a INT32 and
    s a var UTF-8 string."""
    attrs = [tiledb.Attr("a", dtype=np.int32), tiledb.Attr("s", dtype=str)]
    if kind == "dense":
        dom = tiledb.Domain(tiledb.Dim("x", domain=(0, 15), tile=4, dtype=np.int32))
        schema = mf.mk_schema(meta, offsets=[], domain=dom, attrs=attrs, sparse=False)
    else:
        dom = tiledb.Domain(tiledb.Dim("x", domain=(0, 63), tile=8, dtype=np.int32))
        # capacity 4: a coordinate's versions in a consolidated fragment span tiles
        schema = mf.mk_schema(meta, offsets=[], coords=[], domain=dom, attrs=attrs,
                              sparse=True, capacity=4, allows_duplicates=(kind == "dups"))
    tiledb.Array.create(uri, schema)


def values(t, xs, k):
    """Cell values of write k (0 unless several share a timestamp) at t:
    a = 1000 k + 100 t + x, s = 't<t>x<x>' (then 'w<k>' for k > 0)."""
    tag = "w%d" % k if k else ""
    return {"a": np.array([1000 * k + 100 * t + x for x in xs], dtype=np.int32),
            "s": np.array(["t%dx%d%s" % (t, x, tag) for x in xs], dtype=object)}


def write(uri, t, xs, dense, k=0):
    with tiledb.open(uri, "w", timestamp=t) as A:
        if dense:
            lo, hi = xs
            A[lo:hi + 1] = values(t, range(lo, hi + 1), k)
        else:
            A[np.array(xs, dtype=np.int32)] = values(t, xs, k)


# ---------------------------------------------------------------------------
# operations: ("w", t, xs[, k]) writes (dense: xs = (lo, hi); k tells writes at one
# timestamp apart), ("d", t, cond)
# deletes, ("c", config) consolidates, ("v", config) vacuums


def run(uri, kind, ops):
    """Creates the array and applies `ops`; returns the fixture's meta (schema
    filters, deletes, operations, the deletes each consolidation processed)."""
    meta, deletes, log = {}, [], []
    create(uri, meta, kind)
    processed = None
    for op in ops:
        if op[0] == "w":
            write(uri, op[1], op[2], kind == "dense", *op[3:])
            log.append({"op": "write", "timestamp": op[1],
                        "x": list(op[2]) if kind != "dense" else "%d-%d" % op[2]})
        elif op[0] == "d":
            ff.do_delete(uri, op[1], op[2], deletes)
            log.append({"op": "delete", "timestamp": op[1], "condition": op[2]})
        elif op[0] == "c":
            cfg = dict(op[1])
            tiledb.consolidate(uri, config=tiledb.Config(cfg))
            entry = {"op": "consolidate", "config": cfg}
            if cfg.get("sm.consolidation.mode", "fragments") == "fragments":
                if kind != "dense" and cfg.get("sm.consolidation.purge_deleted_cells") != "true":
                    processed = len(deletes)
                entry["keeps_timestamps"] = kind != "dense"
            log.append(entry)
        elif op[0] == "v":
            cfg = dict(op[1])
            tiledb.vacuum(uri, config=tiledb.Config(cfg) if cfg else None)
            log.append({"op": "vacuum", "config": cfg})
        else:
            raise ValueError(op)
    meta["deletes"] = deletes
    meta["operations"] = log
    if processed is not None:
        meta["deletes_processed_by_consolidation"] = processed
    last = max(op[1] for op in ops if op[0] in ("w", "d"))
    meta["extra_timestamps"] = list(range(0, last + 2))
    return meta


WITH_TS = {"sm.consolidation.with_timestamps": "true"}
PURGE = {"sm.consolidation.with_timestamps": "true", "sm.consolidation.purge_deleted_cells": "true"}
NO_PURGE = {"sm.consolidation.with_timestamps": "true", "sm.consolidation.purge_deleted_cells": "false"}
VACUUM = ("v", {})
COMMITS = [("c", {"sm.consolidation.mode": "commits"}), ("v", {"sm.vacuum.mode": "commits"})]
FRAGMENT_META = ("c", {"sm.consolidation.mode": "fragment_meta"})


def window(t1, t2, base=None):
    cfg = dict(base or {})
    cfg.update({"sm.consolidation.timestamp_start": str(t1), "sm.consolidation.timestamp_end": str(t2)})
    return ("c", cfg)


# Several versions of a coordinate: x 5 is written at t 1, 2, 3 and 4.
VERSIONS = [("w", 1, list(range(0, 10))), ("w", 2, list(range(5, 15))),
            ("w", 3, [2, 5, 6, 7, 8, 12, 20]), ("w", 4, [5, 30])]
# Deletes between writes: t 3 removes x 0-5 of t 1; t 5 removes x 10-13 of t 2.
DELETES = [("w", 1, list(range(0, 12))), ("w", 2, list(range(6, 18))), ("d", 3, "a < 106"),
           ("w", 4, [1, 3, 7, 20]), ("d", 5, "a >= 210 and a < 214")]
LATER = [("w", 7, [0, 5, 11, 40]), ("d", 8, "s == 't4x20' or a == 209")]
DUPS = [("w", 1, [1, 3, 3, 5, 7, 7, 9]), ("w", 2, [3, 5, 5, 9, 30]), ("d", 3, "a == 203 or a == 107"),
        ("w", 4, [5, 7, 31])]
DENSE = [("w", 1, (0, 5)), ("w", 2, (4, 9)), ("w", 3, (2, 3))]
DENSE_LATER = [("w", 5, (8, 13))]

FIXTURES = [
    # (name, kind, operations, notes)
    ("sparse_versions_vacuumed", "sparse", VERSIONS + [("c", WITH_TS), VACUUM, ("w", 6, [5, 40])],
     "Writes t 1-4 give x 5 four versions; consolidated (per-cell timestamps: the fragment __1_4 holds "
     "every version) and vacuumed; a write at t 6. Each state shows the version of x 5 with the largest "
     "timestamp <= T."),
    ("sparse_versions_unvacuumed", "sparse", VERSIONS + [("c", WITH_TS), ("w", 6, [5, 40])],
     "As sparse_versions_vacuumed, not vacuumed: the four fragments it replaced are still on disk."),
    ("sparse_purge_unvacuumed", "sparse", DELETES + [("c", PURGE)] + LATER,
     "Deletes at t 3 and t 5 between writes; consolidated with purge_deleted_cells (the deleted cells are "
     "not in __1_4), not vacuumed; then a write at t 7 and a delete at t 8."),
    ("sparse_purge_vacuumed", "sparse", DELETES + [("c", PURGE), VACUUM] + LATER,
     "As sparse_purge_unvacuumed, vacuumed."),
    ("sparse_deletes_unvacuumed", "sparse", DELETES + [("c", NO_PURGE)] + LATER,
     "As sparse_purge_unvacuumed without purging: __1_4 keeps the deleted cells with their delete "
     "timestamps; not vacuumed."),
    ("sparse_deletes_vacuumed", "sparse", DELETES + [("c", NO_PURGE), VACUUM] + LATER,
     "As sparse_deletes_unvacuumed, vacuumed."),
    ("sparse_twice_unvacuumed", "sparse",
     VERSIONS[:2] + [("c", WITH_TS)] + VERSIONS[2:] + [("d", 5, "a == 205"), ("c", NO_PURGE), ("w", 6, [5])],
     "Writes t 1, 2 consolidated into __1_2; writes t 3, 4 and a delete at t 5; everything consolidated "
     "again into __1_4 (its .vac lists __1_2, __3_3, __4_4; __1_1 and __2_2 stay listed in the first .vac); "
     "nothing vacuumed; a write at t 6."),
    ("sparse_window_unvacuumed", "sparse", VERSIONS + [("w", 5, [5, 6]), window(2, 4, WITH_TS)],
     "Writes t 1-5; only t 2-4 consolidated (timestamp_start 2, timestamp_end 4) into __2_4, inside the "
     "array's range; not vacuumed."),
    ("sparse_window_vacuumed", "sparse", VERSIONS + [("w", 5, [5, 6]), window(2, 4, WITH_TS), VACUUM],
     "As sparse_window_unvacuumed, vacuumed."),
    ("sparse_commits_unvacuumed", "sparse", DELETES + [("c", NO_PURGE)] + LATER + COMMITS + [FRAGMENT_META],
     "As sparse_deletes_unvacuumed, then the commits consolidated and vacuumed (every .wrt and .del lives "
     "in a .con; the replaced fragments stay committed by it, and the .vac stays) and the fragment "
     "metadata consolidated; fragments not vacuumed."),
    ("sparse_commits_vacuumed", "sparse", DELETES + [("c", PURGE), VACUUM] + LATER + COMMITS,
     "Purging consolidation, vacuumed, later write and delete, then commits consolidated and vacuumed."),
    ("sparse_equal_timestamps_vacuumed", "sparse",
     [("w", 5, [1, 2, 3, 4], k) for k in (1, 2, 3)] + [("c", WITH_TS), VACUUM, ("w", 6, [2, 9])],
     "Three writes at t 5 of x 1-4, consolidated and vacuumed: each coordinate holds three versions "
     "with one timestamp, and with tiles of 4 cells the versions of x 2 and x 3 straddle tiles. TileDB "
     "keeps the first of each tile, then the later tile's at each boundary. Which write that is depends "
     "on the fragment names (UUIDs), so values change between runs; TileDB's read is the truth each time."),
    ("dups_unvacuumed", "dups", DUPS + [("c", NO_PURGE)] + [("w", 5, [3, 9]), ("d", 6, "s == 't4x7'")],
     "Allows duplicates: writes with repeated coordinates, a delete at t 3, consolidated (per-cell "
     "timestamps, delete metadata) and not vacuumed; a write at t 5 and a delete at t 6."),
    ("dups_vacuumed", "dups", DUPS + [("c", NO_PURGE), VACUUM, ("w", 5, [3, 9]), ("d", 6, "s == 't4x7'")],
     "As dups_unvacuumed, vacuumed."),
    ("dups_purge_unvacuumed", "dups", DUPS + [("c", PURGE), ("w", 5, [3, 9])],
     "Allows duplicates, consolidated with purge_deleted_cells, not vacuumed."),
    ("dense_unvacuumed", "dense", DENSE + [("c", {}), ("w", 4, (8, 13))],
     "Dense writes t 1-3 consolidated into __1_3 (no per-cell timestamps), not vacuumed; a write at t 4."),
    ("dense_vacuumed", "dense", DENSE + [("c", {}), VACUUM, ("w", 4, (8, 13))],
     "As dense_unvacuumed, vacuumed: nothing shows before t 3."),
    ("dense_twice_unvacuumed", "dense", DENSE[:2] + [("c", {})] + DENSE[2:] + [("w", 4, (12, 15)), ("c", {})]
     + DENSE_LATER, "Dense t 1-2 consolidated, t 3-4 written, all consolidated again; nothing vacuumed."),
    ("dense_window_unvacuumed", "dense", [("w", 1, (0, 1))] + DENSE[1:] + [("w", 4, (0, 1)), window(2, 3)],
     "Dense t 1 (x 0-1), t 2 (x 4-9), t 3 (x 2-3), t 4 (x 0-1); only t 2-3 consolidated into __2_3 (TileDB "
     "consolidates a dense window only where no older fragment meets its box), not vacuumed."),
    ("dense_commits_unvacuumed", "dense", DENSE + [("c", WITH_TS)] + DENSE_LATER + COMMITS,
     "Dense consolidated (with_timestamps asked for: ignored for dense arrays), fragments not vacuumed, "
     "commits consolidated and vacuumed."),
]


# Arrays without `<array>.expected.json`: describe() reads a fragment's cells back
# through TileDB one timestamp at a time, and TileDB returns one version per
# coordinate and timestamp, so a fragment holding tied versions cannot be described.
UNDESCRIBED = {"sparse_equal_timestamps_vacuumed"}


def finish_merged_only(out, name, meta, docs):
    """finish_array without the per-fragment JSON."""
    uri = os.path.join(out, name)
    mf.remove_empty_dirs(uri)
    md = mm.merged_doc(uri, name=name, extra_timestamps=meta.get("extra_timestamps", ()))
    ff.write_json(os.path.join(out, name + ".merged.json"), md)
    docs.append({"array": name, "json": name, "array_type": md["array_type"],
                 "fragments": [None] * len(os.listdir(os.path.join(uri, "__fragments"))),
                 "states": [(r["timestamp"], r.get("cell_num", "error")) for r in md["reads"]],
                 "raw_checks": 0})


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_consolidation_fixtures.py OUTDIR")
    out = os.path.abspath(sys.argv[1])
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    ff.OUT = out
    tmp = tempfile.mkdtemp(prefix="consolidation-fixtures-")
    docs = []
    try:
        for name, kind, ops, notes in FIXTURES:
            uri = os.path.join(out, name)
            meta = run(uri, kind, ops)
            meta["notes"] = notes
            if name in UNDESCRIBED:
                finish_merged_only(out, name, meta, docs)
            else:
                ff.finish_array(out, name, meta, tmp, docs)
            print("%-28s fragments %s, states %s" % (
                name, docs[-1]["fragments"], [n for _, n in docs[-1]["states"]]), flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    with open(os.path.join(out, "_summary.json"), "w") as fh:
        mm.dump({"writer": ff.writer_info(), "arrays": docs}, fh)
    write_readme(out, docs)


def write_readme(out, docs):
    rows = []
    by_name = {d["array"]: d for d in docs}
    for name, kind, ops, notes in FIXTURES:
        d = by_name[name]
        rows.append("| `%s` | %s | %s | %s |" % (name, kind, len(d["fragments"]), notes))
    text = README.format(tiledb_py=tiledb.__version__, libtiledb="%d.%d.%d" % lt.version(),
                         table="\n".join(rows))
    with open(os.path.join(out, "README.md"), "w") as fh:
        fh.write(text)


README = """# Consolidation fixtures: the merged view around consolidations

Written by `scripts/make_consolidation_fixtures.py` (run it through
`scripts/make_consolidation_fixtures.sh`: tiledb-py {tiledb_py} / libtiledb {libtiledb},
numpy 2.4.6, pandas 2.3.3). Every array was written with explicit timestamps; the
operations (writes, deletes, consolidations, vacuums) are listed in its
`<array>.expected.json` (`operations`).

Per array: `<array>.expected.json`, its live fragments in the shared corpus format
(`describe()` of `scripts/make_feature_fixtures.py`; not for
`sparse_equal_timestamps_vacuumed`, whose fragment holds versions TileDB cannot return one
by one), and `<array>.merged.json`, TileDB's
merged read of the array now and at every timestamp from 0 to one past the last
operation. `tests/merged.rs` (`consolidation_fixtures_read_merged_as_tiledb_reads_them`)
checks that fragfs serves every one of those states byte for byte.

Values name their write: `a = 100 t + x`, `s = 't<t>x<x>'` (writes sharing a timestamp
add `1000 k` and `w<k>`). Fragment names (UUIDs) change on every run; contents do not,
but for `sparse_equal_timestamps_vacuumed`, whose winners follow the names.

| array | kind | live fragments | what it holds |
|---|---|---|---|
{table}
"""


if __name__ == "__main__":
    main()
