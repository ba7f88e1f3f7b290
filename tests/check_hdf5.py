"""Checks a mounted fragfs tree's array.h5 (latest/ and every at/<T>/) with h5py,
h5dump and GDAL's HDF5 driver against what TileDB reads.

Usage: check_hdf5.py SPEC.json
SPEC is a list of {"mount", "array", "merged", "tools"}: a mount of ARRAY, its
<array>.merged.json (TileDB's reads of every state) and where to run the CLI tools
(h5dump, gdalinfo, gdal_translate) too: null (nowhere), "latest", "latest+earliest"
(and the earliest at/<T>/). For every state TileDB could read:

* the file opens in h5py; the root group names the array and the state;
* dense: one 1-D dataset per dimension, lower..upper of the state's non-empty domain,
  a dimension scale (h5py `.dims` name every axis of every attribute by them); sparse:
  `cells` (0..n-1, the scale) and one dataset per fixed-size dimension;
* every fixed-size attribute the state's read.json "hdf5" lists is a dataset of the
  state's shape (one more, last dimension for several values per cell; CHAR x n as
  `|Sn`), the right dtype, holding TileDB's values (nullable: where valid, and
  `<attr>_validity` holds TileDB's validity), `fillvalue` and `_FillValue` equal to the
  fill value read.json gives; datetimes carry CF `units`;
* what read.json leaves out is absent and every field is shown or left out;
* tools: `h5dump -H` lists every dataset, `h5dump -d` prints the values of the first
  numeric dataset, `gdalinfo`/`gdal_translate` read a 2-D dataset with its values.

Prints one line per array; exits 1 with the first mismatch.
"""

import json
import math
import os
import re
import subprocess
import sys
import tempfile

import h5py
import numpy as np

from check_text_npy import encode_name, NPY_DTYPES

H5_DTYPES = dict(NPY_DTYPES, BOOL="u1")


def fail(where, what):
    raise AssertionError("%s: %s" % (where, what))


def dtype_of(f):
    t = f["datatype"]
    if t in H5_DTYPES:
        return np.dtype(H5_DTYPES[t])
    if t.startswith(("DATETIME_", "TIME_")):
        return np.dtype("<i8")
    if t in ("CHAR", "STRING_ASCII", "STRING_UTF8"):
        return np.dtype("S%d" % f["cell_val_num"])
    return None


def shown_type(f):
    return f["cell_val_num"] != "var" and dtype_of(f) is not None


def extra(f):
    n = f["cell_val_num"]
    return n if n != 1 and dtype_of(f).kind != "S" else None


def expected(f, shape):
    """merged.json's values of `f` as the dataset should hold them (null cells: 0)."""
    dtype = dtype_of(f)
    values = f["values"]
    if dtype.kind == "S":
        n = f["cell_val_num"]
        cell = lambda v: v.encode() if isinstance(v, str) else bytes(v or [0] * n)
        return np.array([cell(v) for v in values], dtype=dtype).reshape(shape)
    n = extra(f)
    if n:
        values = [x for v in values for x in (v if v is not None else [0] * n)]
        shape = tuple(shape) + (n,)
    values = [0 if v is None else float(v) if isinstance(v, str) else v for v in values]
    return np.array(values, dtype=dtype).reshape(shape)


def same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape or got.dtype != want.dtype:
        return False
    if got.dtype.kind == "f":
        return np.array_equal(got, want, equal_nan=True)
    return np.array_equal(got, want)


def fill_of(f, read):
    """The fill value read.json gives for attribute `f`, as one element."""
    v = read["fill_values"][encode_name(f["name"])]
    dtype = dtype_of(f)
    if dtype.kind == "S":
        return None
    if isinstance(v, list):
        v = v[0]
    if isinstance(v, str):
        v = float(v)
    if isinstance(v, bool):
        v = int(v)
    return np.array(v, dtype=dtype)


def check_state(spec, merged, state, tools, stats):
    ts = state["timestamp"]
    folder = spec["mount"] + ("/latest" if ts is None else "/at/%d" % ts)
    path = folder + "/array.h5"
    where = "%s %s" % (spec["array"], "latest" if ts is None else "at/%d" % ts)
    read = json.load(open(folder + "/read.json"))
    summary = read["hdf5"]
    listed = set(summary["datasets"])
    left_out = summary["left_out"]
    dense = merged["array_type"] == "dense"
    fields = state["fields"]
    dims = [f for f in fields if f["role"] == "dimension"]
    attrs = [f for f in fields if f["role"] == "attribute"]
    if os.path.getsize(path) != os.stat(path).st_size or os.stat(path).st_size == 0:
        fail(where, "size")
    with h5py.File(path, "r") as h:
        if h.attrs["tiledb_state"].decode() != ("latest" if ts is None else "at/%d" % ts):
            fail(where, "tiledb_state is %r" % h.attrs["tiledb_state"])
        names = set(h.keys())
        if names != listed:
            fail(where, "datasets %s, read.json lists %s" % (sorted(names), sorted(listed)))
        if dense:
            box = state["non_empty_domain"]
            shape = tuple(hi - lo + 1 for lo, hi in box) if box else tuple(0 for _ in dims)
            for d, (lo, hi) in zip(dims, box or [(0, -1)] * len(dims)):
                c = h[encode_name(d["name"])]
                if c.attrs.get("CLASS") != b"DIMENSION_SCALE":
                    fail(where, "%s is not a dimension scale" % d["name"])
                if not np.array_equal(c[...].astype(np.int64), np.arange(lo, hi + 1)):
                    fail(where, "coordinates of %s are not %d..%d" % (d["name"], lo, hi))
            axes = [encode_name(d["name"]) for d in dims]
        else:
            n = state["cell_num"]
            shape = (n,)
            cells = [k for k in names if re.fullmatch("cells_*", k) and k not in
                     {encode_name(f["name"]) for f in fields}]
            if len(cells) != 1 or not np.array_equal(h[cells[0]][...], np.arange(n)):
                fail(where, "no cells scale 0..%d" % n)
            axes = cells
        rows = []
        for f in (attrs if dense else fields):
            name = encode_name(f["name"])
            if not shown_type(f):
                if name in names or name not in left_out:
                    fail(where, "%s (%s x %s) should be left out, said why" % (name, f["datatype"], f["cell_val_num"]))
                continue
            ds = h[name]
            want = expected(f, shape)
            if ds.dtype != want.dtype or ds.shape != want.shape:
                fail(where, "%s is %s %s, expected %s %s" % (name, ds.dtype, ds.shape, want.dtype, want.shape))
            got = ds[...]
            if ds.attrs["tiledb_datatype"].decode() != f["datatype"]:
                fail(where, "%s: tiledb_datatype %r" % (name, ds.attrs["tiledb_datatype"]))
            if f["datatype"].startswith("DATETIME_") and f["datatype"][9:] in ("DAY", "HR", "MIN", "SEC", "MS", "US", "NS"):
                if b" since 1970-01-01T00:00:00" not in ds.attrs["units"]:
                    fail(where, "%s: units %r" % (name, ds.attrs["units"]))
            scales = [list(dim.keys()) for dim in ds.dims]
            want_scales = [[a] for a in axes] + ([[name + "_values"]] if extra(f) else [])
            if scales != want_scales:
                fail(where, "%s: dimension scales %s, expected %s" % (name, scales, axes))
            if any(not np.array_equal(dim[0][...], h[a][...]) for dim, a in zip(ds.dims, axes)):
                fail(where, "%s: a dimension scale is not %s" % (name, axes))
            if extra(f) and not np.array_equal(h[name + "_values"][...], np.arange(extra(f))):
                fail(where, "%s_values is not 0..%d" % (name, extra(f)))
            if f["role"] == "attribute":
                fill = fill_of(f, read)
                if fill is not None:
                    if not same(np.array(ds.fillvalue, dtype=fill.dtype), fill):
                        fail(where, "%s: fillvalue %r, read.json %r" % (name, ds.fillvalue, fill))
                    if not same(ds.attrs["_FillValue"], fill):
                        fail(where, "%s: _FillValue %r" % (name, ds.attrs["_FillValue"]))
            if f.get("nullable"):
                validity = np.array(f["validity"], dtype=np.uint8).reshape(shape)
                v = h[name + "_validity"]
                if not np.array_equal(v[...], validity):
                    fail(where, "%s_validity differs from TileDB's validity" % name)
                mask = validity == 1
                if merged.get("allows_duplicates") and not dense:
                    # Rows keep every cell: null ones compare as 0.
                    got = got.copy()
                    got[~mask] = want[~mask]
                else:
                    got, want = got[mask], want[mask]
            if merged.get("allows_duplicates") and not dense:
                rows.append((got, want))
            elif not same(got, want):
                bad = np.argwhere(~(np.asarray(got) == want))[:3].tolist()
                fail(where, "%s differs from TileDB's read at %s" % (name, bad))
            stats["values"] += int(np.prod(want.shape))
        if rows:
            # Duplicates: TileDB's order among equal coordinates is its own; compare
            # rows as multisets.
            key = lambda cols: sorted(zip(*[[x.tobytes() for x in c.reshape(len(c), -1)] for c in cols]))
            if key([g for g, _ in rows]) != key([w for _, w in rows]):
                fail(where, "the cells differ from TileDB's (as a multiset of rows)")
    if tools:
        check_tools(where, path, names, stats)


def run(args):
    out = subprocess.run(args, capture_output=True, text=True)
    if out.returncode != 0:
        raise AssertionError("%s: %s%s" % (" ".join(args), out.stdout[-2000:], out.stderr[-2000:]))
    return out.stdout


def check_tools(where, path, names, stats):
    header = run(["h5dump", "-H", path])
    for n in names:
        if 'DATASET "%s"' % n not in header:
            fail(where, "h5dump -H does not list %s" % n)
    with h5py.File(path, "r") as h:
        numeric = [n for n in sorted(names) if h[n].dtype.kind in "iuf" and h[n].size > 0]
        raster = [n for n in numeric if h[n].ndim == 2 and h[n].dtype.str[1:] in
                  ("u1", "i2", "u2", "i4", "u4", "f4", "f8")]
        if numeric:
            n = numeric[-1]
            want = h[n][...].ravel()
            text = run(["h5dump", "-d", "/" + n, "-y", "-w", "0", "-m", "%.17g", path])
            body = text[text.index("DATA {") + 6: text.rindex("}")]
            body = body[: body.index("}")] if "}" in body else body
            got = np.array([float(x) for x in body.replace("\n", " ").split(",") if x.strip()])
            if not np.array_equal(got, want.astype(np.float64), equal_nan=True):
                fail(where, "h5dump -d /%s prints other values" % n)
            stats["h5dump"] += 1
        if raster:
            n = raster[0]
            want = h[n][...]
            name = 'HDF5:"%s"://%s' % (path, n)
            info = run(["gdalinfo", name])
            if "Size is %d, %d" % (want.shape[1], want.shape[0]) not in info:
                fail(where, "gdalinfo %s: %s" % (n, info[:400]))
            with tempfile.TemporaryDirectory() as tmp:
                out = os.path.join(tmp, "x.bin")
                run(["gdal_translate", "-q", "-of", "ENVI", name, out])
                got = np.fromfile(out, dtype=want.dtype).reshape(want.shape)
            if not same(got, want):
                fail(where, "gdal_translate of %s differs" % n)
            stats["gdal"] += 1


def main():
    specs = json.load(open(sys.argv[1]))
    for spec in specs:
        merged = json.load(open(spec["merged"]))
        stats = {"values": 0, "h5dump": 0, "gdal": 0}
        states = 0
        for state in merged["reads"]:
            if "error" in state:
                continue
            # The CLI tools at the latest state and the earliest at/<T>/.
            when = spec.get("tools") or ""
            tools = (state["timestamp"] is None and "latest" in when) or (
                states == 1 and "earliest" in when)
            check_state(spec, merged, state, tools, stats)
            states += 1
        print("ok %s: %d states, %d values, %d h5dump, %d gdal"
              % (spec["array"], states, stats["values"], stats["h5dump"], stats["gdal"]))


if __name__ == "__main__":
    main()
