#!/usr/bin/env python3
"""Write the fixtures of `fragfs refs` (kerchunk references to stored tiles) into OUTDIR
(tests/fixtures/refs/): dense arrays whose tiles a reference set points at whole, read
by standard numcodecs codecs or by fragfs's own `fragfs_tile` codec.

  refs_standard   2-D dense r 1-8 (tile 4) x c 1-6 (tile 3), row-major: ZSTD alone
                  (INT32, and FLOAT32 x3), GZIP alone (FLOAT64), BYTESHUFFLE + ZSTD
                  (INT16), no filter (UINT8), a nullable FLOAT32 with ZSTD (validity
                  filters: ZSTD); every tile one filter chunk. t=1 writes the whole
                  domain, t=2 r 2-3 c 2-3: at t=1 every chunk is a stored tile, at t=2
                  tile (0, 0) is a merge of both fragments.
  refs_colmajor   2-D dense r 1-6 (tile 3) x c 1-4 (tile 2), column-major cells and
                  tiles: ZSTD INT32, no-filter INT64. t=1 the whole domain, t=2 r 4-5.
  refs_big_tile   1-D dense x 0-39999 (tile 20000), INT64 with ZSTD: a tile of three
                  filter chunks (160,000 bytes). t=1 writes x 0-29999: tile 1 is partly
                  written (its chunk is a merge, larger than the default inline limit).

Per array but refs_big_tile (whose 60,000 values would take 700 KB), `<array>.merged.json`
(scripts/make_merged_json.py: the array as TileDB reads it at every timestamp). No `<array>.expected.json`: its writer reads the padding of
partly written tiles raw, which these filtered attributes do not allow.

Usage: make_refs_fixtures.py OUTDIR   (OUTDIR is deleted and rewritten)
Run it through scripts/make_refs_fixtures.sh, which pins tiledb-py and numpy.
"""

import os
import shutil
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_fixtures as mf  # noqa: E402
import make_merged_json as mm  # noqa: E402
import tiledb  # noqa: E402


def zstd():
    return tiledb.FilterList([tiledb.ZstdFilter(level=3)])


def gen_refs_standard(uri):
    meta = {}
    dom = tiledb.Domain(tiledb.Dim("r", domain=(1, 8), tile=4, dtype=np.int32),
                        tiledb.Dim("c", domain=(1, 6), tile=3, dtype=np.int32))
    attrs = [tiledb.Attr("zstd_i32", dtype=np.int32, filters=zstd()),
             tiledb.Attr("zstd_rgb", dtype=np.dtype("f4,f4,f4"), filters=zstd()),
             tiledb.Attr("gzip_f64", dtype=np.float64,
                         filters=tiledb.FilterList([tiledb.GzipFilter(level=6)])),
             tiledb.Attr("shuffle_zstd_i16", dtype=np.int16,
                         filters=tiledb.FilterList([tiledb.ByteShuffleFilter(), tiledb.ZstdFilter()])),
             tiledb.Attr("raw_u8", dtype=np.uint8, filters=tiledb.FilterList([])),
             tiledb.Attr("n_f32", dtype=np.float32, nullable=True, filters=zstd())]
    schema = mf.mk_schema(meta, offsets=[], validity=[tiledb.ZstdFilter()], domain=dom, attrs=attrs,
                          sparse=False)
    tiledb.Array.create(uri, schema)
    for t, (r0, r1, c0, c1) in [(1, (1, 8, 1, 6)), (2, (2, 3, 2, 3))]:
        cells = [(r, c) for r in range(r0, r1 + 1) for c in range(c0, c1 + 1)]
        data = {
            "zstd_i32": np.array([r * 1000 + c * 10 + t for r, c in cells], dtype=np.int32),
            "zstd_rgb": np.array([(r, c * 0.5, -t) for r, c in cells], dtype="f4,f4,f4"),
            "gzip_f64": np.array([r / 3 + c * t for r, c in cells], dtype=np.float64),
            "shuffle_zstd_i16": np.array([(r * 300 - c * 7) * t for r, c in cells], dtype=np.int16),
            "raw_u8": np.array([(r * 16 + c + t) % 256 for r, c in cells], dtype=np.uint8),
            "n_f32": np.ma.masked_array(np.array([r + c / 8 + t for r, c in cells], dtype=np.float32),
                                        mask=[(r + c + t) % 3 == 0 for r, c in cells]),
        }
        with tiledb.open(uri, "w", timestamp=t) as A:
            A[r0:r1 + 1, c0:c1 + 1] = data
    meta["notes"] = ("2-D dense r 1-8 (tile 4) x c 1-6 (tile 3), row-major; ZSTD INT32 and FLOAT32 x3, GZIP "
                     "FLOAT64, BYTESHUFFLE+ZSTD INT16, unfiltered UINT8, nullable ZSTD FLOAT32 (validity "
                     "ZSTD). t=1 writes the whole domain, t=2 r 2-3 c 2-3.")
    return meta


def gen_refs_colmajor(uri):
    meta = {}
    dom = tiledb.Domain(tiledb.Dim("r", domain=(1, 6), tile=3, dtype=np.int32),
                        tiledb.Dim("c", domain=(1, 4), tile=2, dtype=np.int32))
    attrs = [tiledb.Attr("zstd_i32", dtype=np.int32, filters=tiledb.FilterList([tiledb.ZstdFilter()])),
             tiledb.Attr("raw_i64", dtype=np.int64, filters=tiledb.FilterList([]))]
    schema = mf.mk_schema(meta, offsets=[], domain=dom, attrs=attrs, sparse=False,
                          cell_order="col-major", tile_order="col-major")
    tiledb.Array.create(uri, schema)
    for t, (r0, r1) in [(1, (1, 6)), (2, (4, 5))]:
        rows = np.arange(r0, r1 + 1)[:, None]
        cols = np.arange(1, 5)[None, :]
        with tiledb.open(uri, "w", timestamp=t) as A:
            A[r0:r1 + 1, 1:5] = {"zstd_i32": (rows * 100 + cols * t).astype(np.int32),
                                 "raw_i64": (rows * -7 + cols * 1000 + t).astype(np.int64)}
    meta["notes"] = ("2-D dense r 1-6 (tile 3) x c 1-4 (tile 2), column-major cells and tiles: ZSTD INT32, "
                     "unfiltered INT64. t=1 writes the whole domain, t=2 r 4-5.")
    return meta


def gen_refs_big_tile(uri):
    meta = {}
    dom = tiledb.Domain(tiledb.Dim("x", domain=(0, 39999), tile=20000, dtype=np.int64))
    attrs = [tiledb.Attr("v", dtype=np.int64, filters=tiledb.FilterList([tiledb.ZstdFilter()]))]
    schema = mf.mk_schema(meta, offsets=[], domain=dom, attrs=attrs, sparse=False)
    tiledb.Array.create(uri, schema)
    xs = np.arange(0, 30000, dtype=np.int64)
    with tiledb.open(uri, "w", timestamp=1) as A:
        A[0:30000] = {"v": xs * xs % 1000003}
    meta["notes"] = ("1-D dense x 0-39999 (tile 20000), INT64 with ZSTD: each tile 160,000 bytes in three "
                     "filter chunks. t=1 writes x 0-29999: tile 1 is partly written.")
    return meta


FIXTURES = (("refs_standard", gen_refs_standard),
            ("refs_colmajor", gen_refs_colmajor),
            ("refs_big_tile", gen_refs_big_tile))


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_refs_fixtures.py OUTDIR")
    out = os.path.abspath(sys.argv[1])
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    for name, gen in FIXTURES:
        uri = os.path.join(out, name)
        meta = gen(uri)
        mf.remove_empty_dirs(uri)
        if name == "refs_big_tile":
            print("%-20s (no merged.json)" % name, flush=True)
            continue
        md = mm.merged_doc(uri, name=name)
        md["notes"] = meta["notes"]
        with open(os.path.join(out, name + ".merged.json"), "w") as f:
            mm.dump(md, f)
        print("%-20s states %s" % (name, [(r["timestamp"], r.get("cell_num")) for r in md["reads"]]),
              flush=True)


if __name__ == "__main__":
    main()
