"""Checks a mounted fragfs tree's zarr/ (and at/<T>/zarr/) with zarr-python 3, as
Zarr v2 and as Zarr v3, against what TileDB reads.

Usage: check_zarr.py SPEC.json
SPEC is a list of {"mount", "array", "merged", "key", "every_state"}: a mount of ARRAY
(or the URL of `fragfs serve` serving it over HTTP, read with fsspec as browsers and
clusters do), its <array>.merged.json (TileDB's reads of the non-empty part of every
state) and the encryption key, if any. For every state of merged.json that TileDB could
read ("every_state" false: the latest and the first earlier one; absent: every one):

* each attribute is an array of the schema domain's shape, with the space tiles as
  chunks: fixed-size values as their NumPy type, with one more, last dimension when a
  cell holds several (FLOAT32 x3: shape + [3]); CHAR x n as `|Sn`; var-size strings
  (STRING_UTF8, STRING_ASCII) as strings, var-size CHAR as bytes. Over the non-empty
  domain it holds TileDB's values (and its `__validity` array the validity), everywhere
  else the attribute's fill value;
* where TileDB-Py opens the array and the domain is small, `arr[...]` equals TileDB-Py's
  own `A[:]` (whole domain, fill values included), at the same timestamp. Two TileDB-Py
  conventions are undone first: it reads a var cell of one NUL byte (the fill value of
  var strings) as empty, and STRING_ASCII as bytes; in formats <= 5, where one NUL byte
  is the stored empty value and the fill value, zarr/ reads as TileDB-Py does (empty)
  and is compared exactly, and TileDB's raw reads are taken with that cell empty; where TileDB-Py cannot decode a
  STRING_UTF8 attribute (bytes that are not UTF-8) TileDB's raw read is the reference;
* each dimension has a 1-D coordinate array `lower..upper`;
* attributes not shown (var-size numbers, other string types) are absent, and
  array.json says why; strings and several values per cell are always shown.

Prints one line per state checked; exits 1 with the first mismatch.
"""

import json
import math
import os
import sys
import warnings

import numpy as np
import zarr

from check_text_npy import encode_name, states_to_check, DATETIME_UNITS, NPY_DTYPES

# The two versions share a folder: each reader warns about the other's files.
warnings.filterwarnings("ignore", message=".*not recognized as a component.*")

# Whole-domain comparisons up to this many cells (beyond, the non-empty part and a
# margin around it).
WHOLE = 1 << 22


def dtype_of(datatype):
    if datatype in NPY_DTYPES:
        return np.dtype(NPY_DTYPES[datatype])
    unit = datatype.split("_")[-1]
    if datatype.startswith("DATETIME_"):
        return np.dtype("<M8[%s]" % DATETIME_UNITS[unit])
    if datatype.startswith("TIME_"):
        return np.dtype("<m8[%s]" % DATETIME_UNITS[unit])
    return None


def as_array(values, dtype, shape):
    """merged.json's values (NaN spelled as a string, datetimes as int64, null cells as
    None: 0 here, they are compared through the validity) as numpy."""
    values = [0 if v is None else v for v in values]
    if dtype.kind in "Mm":
        return np.array(values, dtype=np.int64).view(dtype).reshape(shape)
    if dtype.kind == "f":
        values = [float(v) if isinstance(v, str) else v for v in values]
    return np.array(values, dtype=dtype).reshape(shape)


def is_var(f):
    return f["cell_val_num"] == "var"


def is_text(f):
    """Var-size strings: Zarr's variable-length UTF-8 strings."""
    return is_var(f) and f["datatype"] in ("STRING_UTF8", "STRING_ASCII")


def must_show(f):
    """Attributes zarr/ always shows: numbers and times of any fixed count per cell,
    CHAR of any count (var-size too) and var-size strings."""
    if f["datatype"] == "CHAR" or is_text(f):
        return True
    return not is_var(f) and dtype_of(f["datatype"]) is not None


def values_per_cell(f):
    """The length of the last dimension Zarr adds (None: none added)."""
    n = f["cell_val_num"]
    return n if isinstance(n, int) and n > 1 and f["datatype"] != "CHAR" else None


def text_value(v):
    """A string as zarr/ shows it: merged.json spells bytes that are not UTF-8 as a
    list of byte values; zarr/ replaces each bad sequence with U+FFFD."""
    return bytes(v).decode("utf-8", "replace") if isinstance(v, list) else v


def element_values(f, values, shape):
    """merged.json's values of field `f` as the NumPy array zarr/ should hold (null
    cells: 0, empty or None, compared through the validity)."""
    if is_text(f):
        out = np.empty(len(values), dtype=object)
        out[:] = ["" if v is None else text_value(v) for v in values]
        return out.reshape(shape)
    if f["datatype"] == "CHAR" and is_var(f):
        out = np.empty(len(values), dtype=object)
        out[:] = [b"" if v is None else bytes(v) for v in values]
        return out.reshape(shape)
    if f["datatype"] == "CHAR":
        n = f["cell_val_num"]
        return np.array([bytes(v or [0] * n) for v in values], dtype="S%d" % n).reshape(shape)
    dtype = dtype_of(f["datatype"])
    n = values_per_cell(f)
    if n:
        values = [v if v is not None else [0] * n for v in values]
        values = [x for v in values for x in v]
        shape = tuple(shape) + (n,)
    return as_array(values, dtype, shape)


def zarr_dtype_ok(f, got, fmt):
    """Whether an array's NumPy dtype is the one zarr-python gives the field's Zarr type."""
    if is_text(f):
        # Object (v2's `|O`) or NumPy 2's variable-length StringDType.
        return got.kind in "OT"
    if is_var(f):
        return got.kind == "O"
    if f["datatype"] == "CHAR":
        return got == np.dtype("S%d" % f["cell_val_num"])
    want = dtype_of(f["datatype"])
    if fmt == 3 and want.kind in "Mm":
        # Zarr v3 has no datetime type: int64, the unit in the attributes.
        want = np.dtype("<i8")
    return got == want


def as_objects(got):
    """An array of strings (StringDType or objects) or bytes as plain Python objects."""
    got = np.asarray(got)
    out = np.empty(got.shape, dtype=object)
    out[...] = got.tolist() if got.ndim else got.item()
    return out


def tiledb_py_view(f, values):
    """What TileDB-Py's `A[:]` makes of zarr/'s values of var field `f`: a cell of one
    NUL byte reads as empty (TileDB-Py's convention: it is the fill value of var
    strings, and what old formats stored for an empty cell)."""
    values = as_objects(values)
    nul = "\x00" if is_text(f) else b"\x00"
    empty = "" if is_text(f) else b""
    flat = [empty if v == nul else v for v in values.ravel()]
    out = np.empty(len(flat), dtype=object)
    out[:] = flat
    return out.reshape(values.shape)


def nul_is_empty(merged):
    """Formats <= 5 (libtiledb < 2.1) store an empty var cell as one NUL byte, which is
    also their fill value: zarr/ gives it as empty, what TileDB-Py reads, with no
    convention to undo."""
    return merged["format_version"] <= 5


def from_tiledb_py(f, data):
    """TileDB-Py's values of field `f` as zarr/ holds them: STRING_ASCII decoded (it
    reads as bytes), several values per cell as a last dimension (it reads a
    structured array)."""
    data = np.asarray(data)
    if is_text(f):
        flat = [v.decode("utf-8", "replace") if isinstance(v, bytes) else v for v in data.ravel()]
        out = np.empty(len(flat), dtype=object)
        out[:] = flat
        return out.reshape(data.shape)
    if data.dtype.names:
        from numpy.lib import recfunctions
        return recfunctions.structured_to_unstructured(data)
    return data


def same_cells(f, got, want):
    """`same` for any field: strings and bytes compared as Python objects."""
    if is_var(f):
        got, want = as_objects(got), as_objects(want)
        return got.shape == want.shape and all(a == b for a, b in zip(got.ravel(), want.ravel()))
    return same(got, want)


def as_int(x):
    """An integer coordinate (datetimes by their int64)."""
    x = np.asarray(x)
    return int(x.view(np.int64)) if x.dtype.kind in "Mm" else int(x)


def same(got, want):
    """Bit-equal values, NaN equal to NaN (fill values are NaN for floats); datetimes
    by their int64 (v3 stores them so)."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return False
    if got.dtype.kind in "Mm" or want.dtype.kind in "Mm":
        as_i8 = lambda x: x.view(np.int64) if x.dtype.kind in "Mm" else x.astype(np.int64)
        return np.array_equal(as_i8(got), as_i8(want))
    if got.dtype.kind == "f":
        return np.array_equal(got, want.astype(got.dtype), equal_nan=True)
    return np.array_equal(got, want)


def fail(where, what):
    raise AssertionError("%s: %s" % (where, what))


def open_tiledb(spec, timestamp):
    """TileDB-Py's array at `timestamp`, or None where it cannot open it."""
    try:
        import tiledb
    except ImportError:
        return None
    kwargs = {}
    if spec.get("key"):
        kwargs["config"] = tiledb.Config({"sm.encryption_type": "AES_256_GCM",
                                          "sm.encryption_key": spec["key"]})
    try:
        ctx = tiledb.Ctx(kwargs["config"]) if kwargs else None
        if timestamp is None:
            return tiledb.open(spec["array"], ctx=ctx)
        return tiledb.open(spec["array"], timestamp=(0, timestamp), ctx=ctx)
    except Exception:  # an array TileDB-Py's libtiledb cannot open: merged.json only
        return None


def under(spec, rel):
    """A path (or URL) below the mount."""
    return spec["mount"].rstrip("/") + "/" + rel


def over_http(spec):
    return spec["mount"].startswith("http://")


def read_json(spec, rel):
    if over_http(spec):
        import fsspec
        with fsspec.open(under(spec, rel)) as f:
            return json.load(f)
    return json.load(open(under(spec, rel)))


def exists(spec, rel):
    if over_http(spec):
        import fsspec
        return fsspec.filesystem("http").exists(under(spec, rel) + "/")
    return os.path.exists(under(spec, rel))


def check_state(spec, merged, read, shown, not_shown, fmt, stats, A, tiledb_reads):
    """One state as Zarr v`fmt`; `A` is TileDB-Py's array at that state (or None), and
    `tiledb_reads` its reads by attribute, kept for the other Zarr version."""
    ts = read["timestamp"]
    base = under(spec, "zarr" if ts is None else "at/%d/zarr" % ts)
    where = "%s %s v%d" % (spec["array"], "latest" if ts is None else "at/%d" % ts, fmt)
    g = zarr.open_group(base, mode="r", zarr_format=fmt)
    # Every member opened once (each open reads its metadata through the mount).
    arrays = dict(g.arrays())
    names = set(arrays)
    dims = [f for f in read["fields"] if f["role"] == "dimension"]
    attrs = [f for f in read["fields"] if f["role"] == "attribute"]
    # The schema domain, from the coordinate arrays, checked against TileDB-Py's.
    lows, shape = [], []
    for d in dims:
        c = arrays[encode_name(d["name"])]
        if c.ndim != 1:
            fail(where, "coordinate array %s has %d dimensions" % (d["name"], c.ndim))
        lows.append(as_int(c[0]))
        shape.append(c.shape[0])
        if c.shape[0] <= WHOLE:
            got = np.asarray(c[...])
            got = got.view(np.int64) if got.dtype.kind in "Mm" else got
            if not np.array_equal(got, np.arange(lows[-1], lows[-1] + c.shape[0])):
                fail(where, "coordinate array %s is not lower..upper" % d["name"])
    if A is not None:
        for i, (low, n, d) in enumerate(zip(lows, shape, dims)):
            lo, hi = (as_int(x) for x in A.schema.domain.dim(i).domain)
            if (lo, hi - lo + 1) != (low, n):
                fail(where, "dimension %s: zarr domain %d+%d, TileDB %d..%d" % (d["name"], low, n, lo, hi))
    box = read.get("non_empty_domain")
    cells = math.prod(shape)
    for f in attrs:
        name = encode_name(f["name"])
        if name not in shown:
            if must_show(f):
                fail(where, "%s (%s x %s) is not shown" % (name, f["datatype"], f["cell_val_num"]))
            if name in names:
                fail(where, "%s is in zarr/ but array.json says it is not shown" % name)
            if name not in not_shown:
                fail(where, "%s is neither shown nor said not to be" % name)
            continue
        a = arrays[name]
        n = values_per_cell(f)
        a_shape = shape + ([n] if n else [])
        if fmt == 3 and f["datatype"].startswith(("DATETIME_", "TIME_")):
            unit = np.datetime_data(dtype_of(f["datatype"]))[0]
            if a.attrs.get("units") != unit:
                fail(where, "%s has units %r" % (name, a.attrs.get("units")))
        if not zarr_dtype_ok(f, a.dtype, fmt) or list(a.shape) != a_shape:
            fail(where, "%s is %s %s, expected %s x %s %s" % (
                name, a.dtype, a.shape, f["datatype"], f["cell_val_num"], a_shape))
        if n and a.chunks[-1] != n:
            fail(where, "%s: chunks %s do not hold whole cells" % (name, a.chunks))
        valid_name = name + "__validity"
        v = arrays[valid_name] if f.get("nullable") else None
        if f.get("nullable") and (v.dtype != np.uint8 or list(v.shape) != shape):
            fail(where, "%s is %s %s" % (valid_name, v.dtype, v.shape))
        # A domain small enough is read whole, once: the non-empty part is a slice of it.
        whole = np.asarray(a[...]) if cells <= WHOLE else None
        whole_v = np.asarray(v[...]) if whole is not None and v is not None else None
        # The non-empty part: TileDB's values.
        if box:
            idx = tuple(slice(lo - low, hi - low + 1) for (lo, hi), low in zip(box, lows))
            box_shape = tuple(hi - lo + 1 for lo, hi in box)
            got = a[idx] if whole is None else whole[idx]
            want = element_values(f, f["values"], box_shape)
            if is_var(f) and nul_is_empty(merged):
                want = tiledb_py_view(f, want)
            if f.get("nullable"):
                validity = np.array(f["validity"], dtype=np.uint8).reshape(box_shape)
                if not np.array_equal(v[idx] if whole_v is None else whole_v[idx], validity):
                    fail(where, "%s differs from TileDB's validity" % valid_name)
                mask = validity == 1
                if not same_cells(f, np.asarray(got)[mask], want[mask]):
                    fail(where, "%s differs from TileDB's values where valid" % name)
            elif not same_cells(f, got, want):
                fail(where, "%s differs from TileDB's values over the non-empty domain" % name)
            stats["cells"] += int(np.prod(box_shape))
        # Everywhere: TileDB-Py's own read of the whole domain.
        if A is not None and cells <= WHOLE:
            try:
                if f["name"] not in tiledb_reads:
                    tiledb_reads[f["name"]] = A.query(attrs=[f["name"]])[:]
                data = tiledb_reads[f["name"]]
            except UnicodeDecodeError:
                # Bytes that are not UTF-8 in a STRING_UTF8 attribute: TileDB-Py cannot
                # read them; TileDB's raw read (merged.json) was the reference above.
                stats["undecodable"] += 1
                continue
            # One anonymous attribute comes back as the array itself.
            data = data[f["name"]] if isinstance(data, dict) else data
            got = whole
            if is_var(f) and not nul_is_empty(merged):
                got = tiledb_py_view(f, got)
            if isinstance(data, np.ma.MaskedArray):
                mask = np.ma.getmaskarray(data)
                if mask.dtype.names:  # several values per cell: one mask per value
                    from numpy.lib import recfunctions
                    mask = recfunctions.structured_to_unstructured(mask).any(axis=-1)
                valid = (~mask).astype(np.uint8)
                if not np.array_equal(whole_v, valid):
                    fail(where, "%s differs from TileDB-Py's mask" % valid_name)
                keep = valid == 1
                want = from_tiledb_py(f, np.ma.getdata(data))
                if not same_cells(f, np.asarray(got)[keep], want[keep]):
                    fail(where, "%s differs from TileDB-Py's A[:] where valid" % name)
            elif not same_cells(f, got, from_tiledb_py(f, data)):
                bad = np.argwhere(~(np.asarray(got) == from_tiledb_py(f, data)))[:3].tolist()
                fail(where, "%s differs from TileDB-Py's A[:] at %s" % (name, bad))
            stats["whole"] += 1


def main():
    specs = json.load(open(sys.argv[1]))
    for spec in specs:
        merged = json.load(open(spec["merged"]))
        summary = read_json(spec, "array.json")["zarr"]
        if merged["array_type"] != "dense":
            if exists(spec, "zarr") or summary.get("shown"):
                fail(spec["array"], "a sparse array has zarr/")
            continue
        if not summary.get("shown"):
            # An array whose domain Zarr cannot hold: said why, and no folder.
            if exists(spec, "zarr"):
                fail(spec["array"], "zarr/ is there but array.json says %s" % summary)
            print("not shown %s: %s" % (spec["array"], summary.get("why")))
            continue
        shown, not_shown = set(summary["arrays"]), summary["not_shown"]
        stats = {"cells": 0, "whole": 0, "undecodable": 0}
        states = 0
        for read in states_to_check(merged, spec.get("every_state", True)):
            # TileDB-Py's array and reads at this state, for both versions.
            A = open_tiledb(spec, read["timestamp"])
            tiledb_reads = {}
            for fmt in (2, 3):
                check_state(spec, merged, read, shown, not_shown, fmt, stats, A, tiledb_reads)
            if A is not None:
                A.close()
            states += 1
        print("ok %s: %d states, %d cells, %d whole-domain compares with TileDB-Py%s"
              % (spec["array"], states, stats["cells"], stats["whole"],
                 " (%d attribute reads TileDB-Py could not decode)" % stats["undecodable"]
                 if stats["undecodable"] else ""))


if __name__ == "__main__":
    main()
