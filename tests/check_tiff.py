"""Checks a mounted fragfs tree's `<attr>/values.tif` files (in latest/ and at/<T>/) with
tifffile, PIL, and (where asked) libtiff's `tiffinfo` and GDAL's GTiff driver
(`gdalinfo -json`, `gdal_translate -of ENVI`), against what TileDB reads.

Usage: check_tiff.py SPEC.json
SPEC is a list of {"mount", "array", "merged", "key", "cli"}: a mount of ARRAY, its
<array>.merged.json (TileDB's reads of the non-empty part of every state), the
encryption key if any, and whether to run the command-line tools on it. For every state
of merged.json that TileDB could read:

* a dense state with cells visible, of 2 or 3 dimensions, has `<attr>/values.tif` for
  exactly the attributes of one value per cell of a number, datetime or BOOL type; the
  others are absent and array.json's and read.json's "tiff" say why;
* tifffile reads one page of the box's shape ((bands,) rows, columns), of the
  attribute's NumPy type (datetimes: int64), holding TileDB's values (where valid), with
  the attribute's fill value as GDAL_NODATA (TileDB-Py's `attr.fill` where TileDB-Py
  opens the array);
* PIL reads 2-D 8/16-bit rasters as the same values;
* with "cli", at the latest state: tiffinfo shows the size, bits, sample format and planar configuration;
  gdalinfo the size, band count, type and NoData; gdal_translate's raw output holds the
  same values.

Prints one line per array checked; exits 1 with the first mismatch.
"""

import json
import math
import os
import re
import subprocess
import sys
import tempfile
import warnings

import numpy as np
import tifffile

from check_text_npy import encode_name, NPY_DTYPES

warnings.filterwarnings("ignore")

GDAL_TYPES = {
    "uint8": "Byte", "int8": "Byte", "uint16": "UInt16", "int16": "Int16",
    "uint32": "UInt32", "int32": "Int32", "uint64": "UInt64", "int64": "Int64",
    "float32": "Float32", "float64": "Float64",
}
SAMPLE_FORMAT = {"u": "unsigned integer", "i": "signed integer", "f": "IEEE floating point"}


def dtype_of(datatype):
    """The NumPy type values.tif holds for a TileDB datatype, or None where it has none."""
    if datatype.startswith(("DATETIME_", "TIME_")):
        return np.dtype("<i8")
    if datatype == "BOOL":
        return np.dtype("u1")
    if datatype in NPY_DTYPES and datatype not in ("CHAR", "STRING_ASCII", "STRING_UTF8"):
        d = np.dtype(NPY_DTYPES[datatype])
        return d if d.kind in "iuf" else None
    return None


def fits(f):
    return f["role"] == "attribute" and f["cell_val_num"] == 1 and dtype_of(f["datatype"]) is not None


def fail(where, what):
    raise AssertionError("%s: %s" % (where, what))


def open_tiledb(spec, timestamp):
    try:
        import tiledb
    except ImportError:
        return None
    try:
        ctx = None
        if spec.get("key"):
            ctx = tiledb.Ctx(tiledb.Config({"sm.encryption_type": "AES_256_GCM",
                                            "sm.encryption_key": spec["key"]}))
        if timestamp is None:
            return tiledb.open(spec["array"], ctx=ctx)
        return tiledb.open(spec["array"], timestamp=(0, timestamp), ctx=ctx)
    except Exception:  # an array this libtiledb cannot open: merged.json only
        return None


def truth(f, shape):
    """merged.json's values of attribute `f` over the box, and the validity mask."""
    dtype = dtype_of(f["datatype"])
    values = [0 if v is None else v for v in f["values"]]
    if dtype.kind == "f":
        values = [float(v) if isinstance(v, str) else v for v in values]
    elif f["datatype"] == "BOOL":
        values = [int(v) for v in values]
    want = np.array(values, dtype=dtype).reshape(shape)
    valid = np.array(f.get("validity") or [1] * len(values), dtype=bool).reshape(shape)
    return want, valid


def same(got, want, valid):
    got = np.asarray(got)
    if got.shape != want.shape or got.dtype != want.dtype:
        return False
    if got.dtype.kind == "f":
        return np.array_equal(got[valid], want[valid], equal_nan=True)
    return np.array_equal(got[valid], want[valid])


def same_number(a, b):
    a, b = float(a), float(b)
    return (math.isnan(a) and math.isnan(b)) or a == b


def fill_of(A, name):
    """TileDB-Py's fill value of attribute `name` (None where it cannot say)."""
    if A is None:
        return None
    try:
        fill = A.schema.attr(name).fill
    except Exception:
        return None
    fill = np.asarray(fill).ravel()
    if fill.dtype.kind in "Mm":
        fill = fill.view(np.int64)
    return fill[0].item() if fill.size else None


def run(cmd):
    out = subprocess.run(cmd, capture_output=True, text=True)
    # GDAL says ERROR on stderr for some failures and still exits 0.
    if out.returncode != 0 or "ERROR" in out.stderr:
        raise AssertionError("%s failed: %s%s" % (" ".join(cmd), out.stdout, out.stderr))
    return out.stdout


def check_cli(where, path, shape, dtype, want, valid, nodata):
    bands, rows, cols = shape if len(shape) == 3 else (1,) + tuple(shape)
    info = run(["tiffinfo", path])
    for line in ["Image Width: %d Image Length: %d" % (cols, rows),
                 "Bits/Sample: %d" % (dtype.itemsize * 8),
                 "Sample Format: %s" % SAMPLE_FORMAT[dtype.kind],
                 "Samples/Pixel: %d" % bands,
                 "Planar Configuration: %s" % ("separate image planes" if bands > 1
                                               else "single image plane")]:
        if line not in info:
            fail(where, "tiffinfo lacks %r:\n%s" % (line, info))
    g = json.loads(run(["gdalinfo", "-json", path]))
    if g["driverShortName"] != "GTiff" or g["size"] != [cols, rows] or len(g["bands"]) != bands:
        fail(where, "gdalinfo: %s %s, %d bands" % (g["driverShortName"], g["size"], len(g["bands"])))
    for b in g["bands"]:
        if b["type"] != GDAL_TYPES[dtype.name]:
            fail(where, "gdalinfo: band type %s for %s" % (b["type"], dtype))
        if nodata is not None:
            got = b.get("noDataValue")
            if got is None or not same_number(got, nodata):
                fail(where, "gdalinfo: NoData %r, fill %r" % (got, nodata))
    with tempfile.TemporaryDirectory() as d:
        if dtype.itemsize == 8 and dtype.kind in "iu":
            # GDAL 3.6's ENVI driver writes no 64-bit integers: a plain GTiff instead.
            out = os.path.join(d, "out.tif")
            run(["gdal_translate", "-q", "-of", "GTiff", "-co", "INTERLEAVE=BAND", path, out])
            got = tifffile.imread(out).reshape(want.shape)
        else:
            raw = os.path.join(d, "out.bin")
            run(["gdal_translate", "-q", "-of", "ENVI", path, raw])
            got = np.fromfile(raw, dtype=dtype).reshape(want.shape)
        if not same(got, want, valid):
            fail(where, "gdal_translate's values differ from TileDB's")
    return 1


def check_pil(where, path, want, valid):
    """PIL's modes for one band of 8 or 16 bits."""
    from PIL import Image
    if want.ndim != 2 or want.dtype.itemsize > 2:
        return 0
    with Image.open(path) as im:
        got = np.array(im)
    if got.dtype != want.dtype:
        got = got.astype(want.dtype)  # PIL has I;16 as uint16, int8 as "L"
    if not same(got, want, valid):
        fail(where, "PIL's values differ from TileDB's")
    return 1


def check_state(spec, dense, read, tiff, stats):
    ts = read["timestamp"]
    state = "latest" if ts is None else "at/%d" % ts
    base = os.path.join(spec["mount"], state)
    where = "%s %s" % (spec["array"], state)
    box = read.get("non_empty_domain")
    dims = [f for f in read["fields"] if f["role"] == "dimension"]
    attrs = [f for f in read["fields"] if f["role"] == "attribute"]
    rj = json.load(open(os.path.join(base, "read.json")))["tiff"]
    if not dense or not box or not (2 <= len(dims) <= 3):
        for f in attrs:
            if os.path.exists(os.path.join(base, encode_name(f["name"]), "values.tif")):
                fail(where, "%s has values.tif but no raster" % f["name"])
        if rj.get("shown"):
            fail(where, "read.json shows a tiff for no raster: %s" % rj)
        return
    shape = tuple(hi - lo + 1 for lo, hi in box)
    A = open_tiledb(spec, ts) if spec.get("tiledb", True) else None
    for f in attrs:
        name = encode_name(f["name"])
        path = os.path.join(base, name, "values.tif")
        listed = "%s/values.tif" % name in rj.get("files", [])
        if not fits(f):
            if os.path.exists(path):
                fail(where, "%s (%s x %s) has a values.tif" % (name, f["datatype"], f["cell_val_num"]))
            if name not in rj.get("not_shown", {}) or name not in tiff.get("not_shown", {}):
                fail(where, "%s: no values.tif, and no reason given: %s" % (name, rj))
            continue
        if not os.path.exists(path) or not listed:
            fail(where, "%s has no values.tif (read.json: %s)" % (name, rj))
        w = "%s %s" % (where, name)
        want, valid = truth(f, shape)
        if os.path.getsize(path) < want.nbytes:
            fail(w, "file of %d bytes" % os.path.getsize(path))
        with tifffile.TiffFile(path) as t:
            if len(t.pages) != 1:
                fail(w, "%d pages" % len(t.pages))
            page = t.pages[0]
            got = page.asarray()
            if got.shape != want.shape or got.dtype != want.dtype:
                fail(w, "tifffile: %s %s, TileDB %s %s" % (got.shape, got.dtype, want.shape, want.dtype))
            if not same(got, want, valid):
                bad = np.argwhere(got != want)[:3].tolist()
                fail(w, "tifffile's values differ from TileDB's at %s" % bad)
            nodata = page.nodata
            fill = fill_of(A, f["name"])
            if fill is not None and (nodata is None or not same_number(nodata, fill)):
                fail(w, "GDAL_NODATA %r, TileDB-Py's fill %r" % (nodata, fill))
            desc = page.description
            if "attribute %s" % name not in desc or (state if ts is None else str(ts)) not in desc:
                fail(w, "ImageDescription %r" % desc)
        stats["files"] += 1
        stats["cells"] += int(valid.sum())
        stats["pil"] += check_pil(w, path, want, valid)
        # The command-line tools at the latest state (one process each: the time goes there).
        if spec.get("cli") and ts is None:
            stats["cli"] += check_cli(w, path, shape, want.dtype, want, valid, nodata)
    if A is not None:
        A.close()


def main():
    specs = json.load(open(sys.argv[1]))
    for spec in specs:
        merged = json.load(open(spec["merged"]))
        tiff = json.load(open(os.path.join(spec["mount"], "array.json")))["tiff"]
        if merged["array_type"] != "dense":
            if tiff["shown"] or "sparse" not in tiff.get("why", ""):
                fail(spec["array"], "a sparse array: array.json's tiff says %s" % tiff)
        stats = {"files": 0, "cells": 0, "pil": 0, "cli": 0}
        states = 0
        for read in merged["reads"]:
            if "error" in read:
                continue
            check_state(spec, merged["array_type"] == "dense", read, tiff, stats)
            states += 1
        print("ok %s: %d states, %d files, %d cells, %d by PIL, %d by tiffinfo+GDAL"
              % (spec["array"], states, stats["files"], stats["cells"], stats["pil"], stats["cli"]))


if __name__ == "__main__":
    main()
