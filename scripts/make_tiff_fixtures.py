#!/usr/bin/env python3
"""Write the fixtures of `values.tif` into OUTDIR (tests/fixtures/tiff/): dense arrays
whose rasters span several TIFF strips, and a 3-D array of every datatype a TIFF sample
holds beside attributes it cannot.

  tiff_strips  2-D dense r 1-12 (tile 2) x c 1-40000 (tile 10000): UINT16 (3 rows a
               strip), FLOAT32 with fill -9999.5 and a SHA-256 checksum (one 160 KB row
               a strip), INT8. Written
               whole at 1; at 2 rows 3-4 of columns 1-10000 (one tile column: that
               fragment's values.bin is a raster, so it has a values.tif too); at 3
               columns 30001-40000 of rows 5-6. A window of rows reads its strips and
               decodes only the tiles under them.
  tiff_types   3-D dense band 1-2 x r 1-3 (tile 3) x c 1-4 (tile 2): INT8, UINT8
               (nullable), INT64, UINT64, FLOAT64, DATETIME_MS, BOOL, with fill values;
               INT16 x2, var STRING_UTF8 and CHAR, which a TIFF cannot hold. Two
               writes, cells no write covered (fill values).

Per array, `<array>.expected.json` (make_feature_fixtures.py's `describe()`) and
`<array>.merged.json` (scripts/make_merged_json.py: TileDB's reads at every timestamp),
except for tiff_strips, whose 480,000 cells would make 60 MB of JSON: its tests read
TileDB-Py's values of the same window instead.

Usage: make_tiff_fixtures.py OUTDIR   (OUTDIR is deleted and rewritten)
Run it through scripts/make_tiff_fixtures.sh, which pins tiledb-py and numpy.
"""

import os
import shutil
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_feature_fixtures as mff  # noqa: E402
import make_fixtures as mf  # noqa: E402
import tiledb  # noqa: E402


def zstd(checksum=False):
    """Shuffled zstd; with a SHA-256 checksum, a damaged chunk cannot read as other
    values (the corruption test needs an EIO, never wrong bytes)."""
    filters = [tiledb.ByteShuffleFilter(), tiledb.ZstdFilter(level=7)]
    return tiledb.FilterList(filters + ([tiledb.ChecksumSHA256Filter()] if checksum else []))


def gen_tiff_strips(uri):
    meta = {}
    dom = tiledb.Domain(tiledb.Dim("r", domain=(1, 12), tile=2, dtype=np.int32),
                        tiledb.Dim("c", domain=(1, 40000), tile=10000, dtype=np.int32))
    attrs = [tiledb.Attr("u16", dtype=np.uint16, filters=zstd()),
             tiledb.Attr("f32", dtype=np.float32, fill=-9999.5, filters=zstd(checksum=True)),
             tiledb.Attr("i8", dtype=np.int8, filters=zstd())]
    schema = mf.mk_schema(meta, domain=dom, attrs=attrs, sparse=False)
    tiledb.Array.create(uri, schema)

    def data(r0, r1, c0, c1, t):
        r, c = np.meshgrid(np.arange(r0, r1 + 1), np.arange(c0, c1 + 1), indexing="ij")
        return {"u16": ((r * 977 + c * 3 + t) % 65536).astype(np.uint16),
                "f32": (r * 100 + c * 0.25 + t).astype(np.float32),
                "i8": ((r + c + t) % 256 - 128).astype(np.int8)}

    with tiledb.open(uri, "w", timestamp=1) as A:
        A[1:13, 1:40001] = data(1, 12, 1, 40000, 1)
    with tiledb.open(uri, "w", timestamp=2) as A:
        A[3:5, 1:10001] = data(3, 4, 1, 10000, 2)
    with tiledb.open(uri, "w", timestamp=3) as A:
        A[5:7, 30001:40001] = data(5, 6, 30001, 40000, 3)
    meta["notes"] = ("2-D dense r 1-12 (tile 2) x c 1-40000 (tile 10000), UINT16 / FLOAT32 (fill -9999.5) / "
                     "INT8, written whole at 1, rows 3-4 x c 1-10000 at 2 (one tile column: a raster "
                     "fragment), rows 5-6 x c 30001-40000 at 3 (whole tiles: no padding): values.tif of several strips.")
    return meta


def gen_tiff_types(uri):
    meta = {}
    dom = tiledb.Domain(tiledb.Dim("band", domain=(1, 2), tile=1, dtype=np.int32),
                        tiledb.Dim("r", domain=(1, 3), tile=3, dtype=np.int32),
                        tiledb.Dim("c", domain=(1, 4), tile=2, dtype=np.int32))
    attrs = [tiledb.Attr("i8", dtype=np.int8, fill=-1),
             tiledb.Attr("u8", dtype=np.uint8, nullable=True),
             tiledb.Attr("i64", dtype=np.int64),
             tiledb.Attr("u64", dtype=np.uint64, fill=12345678901234567890),
             tiledb.Attr("f64", dtype=np.float64, fill=np.inf),
             tiledb.Attr("ms", dtype="datetime64[ms]"),
             tiledb.Attr("ok", dtype=np.bool_),
             tiledb.Attr("pair", dtype=np.dtype("i2,i2")),
             tiledb.Attr("s", dtype=str),
             tiledb.Attr("code", dtype="S1")]
    schema = mf.mk_schema(meta, offsets=[], validity=[], domain=dom, attrs=attrs, sparse=False)
    tiledb.Array.create(uri, schema)
    writes = [(1, (1, 2, 1, 2, 1, 4)), (2, (2, 2, 2, 3, 3, 4))]
    for t, (b0, b1, r0, r1, c0, c1) in writes:
        b, r, c = np.meshgrid(np.arange(b0, b1 + 1), np.arange(r0, r1 + 1), np.arange(c0, c1 + 1),
                              indexing="ij")
        k = b * 100 + r * 10 + c + t * 1000
        shape = k.shape
        data = {"i8": (k % 100 - 50).astype(np.int8),
                "u8": np.ma.masked_array((k % 256).astype(np.uint8), mask=(k % 3 == 0)),
                "i64": (k * -10 ** 12).astype(np.int64),
                "u64": k.astype(np.uint64) + np.uint64(2 ** 63),
                "f64": k / 8.0,
                "ms": (k * 86400000).astype("datetime64[ms]"),
                "ok": (k % 2 == 0),
                "pair": np.array([(x, -x) for x in k.ravel()], dtype="i2,i2").reshape(shape),
                "s": np.array(["s%d" % x for x in k.ravel()], dtype=object).reshape(shape),
                "code": np.array([b"abc"[x % 3:x % 3 + 1] for x in k.ravel()], dtype="S1").reshape(shape)}
        with tiledb.open(uri, "w", timestamp=t) as A:
            A[b0:b1 + 1, r0:r1 + 1, c0:c1 + 1] = data
    meta["notes"] = ("3-D dense band 1-2 x r 1-3 x c 1-4: every TIFF sample type (INT8, nullable UINT8, "
                     "INT64, UINT64, FLOAT64 with fill inf, DATETIME_MS, BOOL) and INT16 x2, var "
                     "STRING_UTF8, CHAR, which values.tif cannot hold; two writes leave cells unwritten.")
    return meta


# Arrays too big for truth files (see the module's doc).
NO_JSON = ("tiff_strips",)

FIXTURES = (("tiff_strips", gen_tiff_strips),
            ("tiff_types", gen_tiff_types))


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_tiff_fixtures.py OUTDIR")
    out = os.path.abspath(sys.argv[1])
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    # describe() names paths relative to the output folder.
    mff.OUT = out
    tmp = tempfile.mkdtemp(prefix="tiff-fixtures-")
    docs = []
    try:
        for name, gen in FIXTURES:
            meta = gen(os.path.join(out, name))
            if name in NO_JSON:
                mf.remove_empty_dirs(os.path.join(out, name))
                print("%-20s (no JSON)" % name, flush=True)
                continue
            mff.finish_array(out, name, meta, tmp, docs)
            print("%-20s fragments %s states %s" % (name, docs[-1]["fragments"], docs[-1]["states"]),
                  flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
