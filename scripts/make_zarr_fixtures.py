#!/usr/bin/env python3
"""Write the fixtures of `zarr/`'s string and multi-value attributes into OUTDIR
(tests/fixtures/zarr/): dense arrays whose attributes Zarr shows as variable-length
strings or bytes, fixed-length bytes, or one more dimension per cell's values, with
cells no fragment wrote.

  zarr_cells         2-D dense r 1-6 (tile 3) x c 1-8 (tile 4): FLOAT32 x3, INT16 x2
                     (and INT16 x2 with a fill of two different values), CHAR x4, var
                     STRING_UTF8 / STRING_ASCII / CHAR, nullable var STRING_UTF8 /
                     STRING_ASCII and nullable FLOAT32 x3; three writes, two tiles never
                     written (absent chunks) and cells of written tiles no write covered.
  zarr_big_chunk     1-D dense x 0-5999 (tile 4500), var STRING_UTF8: chunks of 4500
                     cells (more than one block of 4096 rendered), the last running 3000
                     cells past the domain.
  zarr_invalid_utf8  1-D dense, STRING_UTF8 and STRING_ASCII cells that are not UTF-8
                     (TileDB stores any bytes; TileDB-Py cannot read the UTF-8 one back).

Per array, `<array>.expected.json` (the fragments, as make_feature_fixtures.py's
`describe()` writes it) and `<array>.merged.json` (scripts/make_merged_json.py: the
array as TileDB reads it at every timestamp).

Usage: make_zarr_fixtures.py OUTDIR   (OUTDIR is deleted and rewritten)
Run it through scripts/make_zarr_fixtures.sh, which pins tiledb-py and numpy.
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


def text(r, c, t):
    """A string per cell: non-ASCII, empty, embedded NUL, longer ones."""
    k = (r * 7 + c * 3 + t) % 6
    return ["é%d·%d" % (r, c), "", "t%d\x00r%dc%d" % (t, r, c), "日本%d" % t, "x" * (r + c), "ok"][k]


def gen_zarr_cells(uri):
    meta = {}
    dom = tiledb.Domain(tiledb.Dim("r", domain=(1, 6), tile=3, dtype=np.int32),
                        tiledb.Dim("c", domain=(1, 8), tile=4, dtype=np.int32))
    attrs = [tiledb.Attr("rgb", dtype=np.dtype("f4,f4,f4")),
             tiledb.Attr("pair", dtype=np.dtype("i2,i2")),
             tiledb.Attr("pair_fill", dtype=np.dtype("i2,i2"),
                         fill=np.array([(7, -7)], dtype="i2,i2")[0]),
             tiledb.Attr("code", dtype="S4"),
             tiledb.Attr("s", dtype=str),
             tiledb.Attr("ascii", dtype="ascii", var=True),
             tiledb.Attr("raw", dtype=bytes, var=True),
             tiledb.Attr("n_s", dtype=str, nullable=True),
             tiledb.Attr("n_ascii", dtype="ascii", var=True, nullable=True),
             tiledb.Attr("n_rgb", dtype=np.dtype("f4,f4,f4"), nullable=True)]
    # No filters: describe() reads the padding of the partly written tiles raw.
    schema = mf.mk_schema(meta, offsets=[], validity=[], domain=dom, attrs=attrs, sparse=False)
    tiledb.Array.create(uri, schema)
    writes = [(1, (1, 2, 1, 3)), (2, (5, 6, 6, 8)), (3, (2, 3, 2, 3))]
    for t, (r0, r1, c0, c1) in writes:
        cells = [(r, c) for r in range(r0, r1 + 1) for c in range(c0, c1 + 1)]

        def grid(values, dtype=object):
            # Flat, in row-major order: TileDB-Py takes the nulls (None) of a nullable
            # var attribute only from a 1-D object array, and a dense write's buffers
            # are row-major whatever their NumPy shape.
            return np.array(values, dtype=dtype)

        data = {
            "rgb": grid([(r + 0.5, c * 0.25, -t) for r, c in cells], "f4,f4,f4"),
            "pair": grid([(r * 100 + c, -t) for r, c in cells], "i2,i2"),
            "pair_fill": grid([(c, r * t) for r, c in cells], "i2,i2"),
            # Short codes leave NULs at the end (NumPy's S4 drops them, as TileDB-Py does).
            "code": grid([("c%d%d" % (r, c) if (r + c) % 3 else "%d" % t).encode() for r, c in cells], "S4"),
            "s": grid([text(r, c, t) for r, c in cells]),
            "ascii": grid([("a%d,%d" % (r, c) if (r * c + t) % 4 else "").encode() for r, c in cells]),
            "raw": grid([bytes([0, r, 255, c, 128][: 1 + (r + c + t) % 5]) for r, c in cells]),
            "n_s": grid([None if (r + c + t) % 3 == 0 else text(c, r, t) for r, c in cells]),
            "n_ascii": grid([None if (r * c) % 4 == 1 else ("n%d" % (r * c)).encode() for r, c in cells]),
            "n_rgb": grid([(r, c, t) for r, c in cells], "f4,f4,f4"),
        }
        with tiledb.open(uri, "w", timestamp=t) as A:
            A[r0:r1 + 1, c0:c1 + 1] = data
    meta["writes"] = [{"timestamp": t, "box": [[w[0], w[1]], [w[2], w[3]]]} for t, w in writes]
    meta["notes"] = ("2-D dense r 1-6 (tile 3) x c 1-8 (tile 4) with the attributes zarr/ shows as strings, "
                     "bytes or a dimension of a cell's values: FLOAT32 x3, INT16 x2 (pair_fill: fill (7, -7)), "
                     "CHAR x4, var STRING_UTF8 (non-ASCII, empty, embedded NUL), STRING_ASCII, CHAR (bytes), "
                     "nullable var STRING_UTF8 / STRING_ASCII and nullable FLOAT32 x3. Writes t=1 r1-2 c1-3, "
                     "t=2 r5-6 c6-8, t=3 r2-3 c2-3: tiles (r1-3, c5-8) and (r4-6, c1-4) are never written, "
                     "and the non-empty box r1-6 c1-8 holds fill values.")
    return meta


def gen_zarr_big_chunk(uri):
    meta = {}
    dom = tiledb.Domain(tiledb.Dim("x", domain=(0, 5999), tile=4500, dtype=np.int32))
    # No filters: describe() reads the padding of the partly written tiles raw.
    schema = mf.mk_schema(meta, offsets=[], domain=dom, attrs=[tiledb.Attr("s", dtype=str)], sparse=False)
    tiledb.Array.create(uri, schema)
    xs = np.arange(5, 4601)
    with tiledb.open(uri, "w", timestamp=1) as A:
        A[5:4601] = {"s": np.array(["v%d" % x if x % 97 else "" for x in xs], dtype=object)}
    meta["notes"] = ("1-D dense x 0-5999 (tile 4500), var STRING_UTF8 written at x 5-4600: a Zarr chunk holds "
                     "4500 cells (rendered in more than one block of 4096), the second runs 3000 cells past the "
                     "domain's end; cells x 0-4 and 4601-5999 hold the fill value.")
    return meta


def gen_zarr_invalid_utf8(uri):
    meta = {}
    dom = tiledb.Domain(tiledb.Dim("x", domain=(0, 5), tile=3, dtype=np.int32))
    attrs = [tiledb.Attr("s", dtype=str), tiledb.Attr("ascii", dtype="ascii", var=True)]
    schema = mf.mk_schema(meta, offsets=[], domain=dom, attrs=attrs, sparse=False)
    tiledb.Array.create(uri, schema)
    with tiledb.open(uri, "w", timestamp=1) as A:
        A[0:4] = {"s": np.array([b"ok", b"\xff\xfeab", "é".encode(), b"a\xc3"], dtype=object),
                  "ascii": np.array([b"plain", b"caf\xe9", b"", b"\x80"], dtype=object)}
    meta["notes"] = ("1-D dense x 0-5 (tile 3): STRING_UTF8 and STRING_ASCII cells that are not UTF-8 (TileDB "
                     "stores the bytes as given; TileDB-Py's read of `s` fails to decode them). zarr/ shows them "
                     "with U+FFFD in place of each bad sequence.")
    return meta


FIXTURES = (("zarr_cells", gen_zarr_cells),
            ("zarr_big_chunk", gen_zarr_big_chunk),
            ("zarr_invalid_utf8", gen_zarr_invalid_utf8))


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_zarr_fixtures.py OUTDIR")
    out = os.path.abspath(sys.argv[1])
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    # describe() names paths relative to the output folder.
    mff.OUT = out
    tmp = tempfile.mkdtemp(prefix="zarr-fixtures-")
    docs = []
    try:
        for name, gen in FIXTURES:
            meta = gen(os.path.join(out, name))
            mff.finish_array(out, name, meta, tmp, docs)
            print("%-20s fragments %s states %s" % (name, docs[-1]["fragments"], docs[-1]["states"]),
                  flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
