"""Checks a mounted fragfs tree's `array.nc` (latest/ and every at/<T>/ of merged.json)
with real readers, against what TileDB reads (merged.json: TileDB-Py 0.36.1's merged
reads of every state).

Usage: check_netcdf.py SPEC.json
SPEC is a list of {"mount", "array", "merged", "cli", "every_state"}. For every state
TileDB could read ("every_state" false: the latest and the first earlier one):

* netCDF4-python, raw (no masking, no scaling): the dimensions (dense: one per TileDB
  dimension, sized like the state's box, its coordinate variable `low..high`; sparse:
  `cells`, the state's cell count), and every fixed-size attribute (sparse: dimension
  too) as a variable whose every value equals TileDB's, bit for bit, fill values
  included (a cell of several values: one more, last dimension; unsigned types as the
  signed type of their width with `_Unsigned = "true"` in CDF-2); nullable attributes
  compared where valid, and `<attr>_validity` equal to TileDB's validity;
* xarray, `netcdf4` engine and (where the file is CDF-2) `scipy` engine (every state
  with "cli", else the latest and the first earlier one), decoding as CF says:
  values equal TileDB's where they are not the `_FillValue`, and masked where
  they are; dates and times decoded to TileDB-Py's datetime64/timedelta64 values;
* fields left out (var-size, types netCDF lacks) are named in read.json's "netcdf";
  fixed-size numbers and CHAR are never left out;
* with "cli": `ncdump -h` lists every variable, `ncdump -v` of one numeric variable
  prints TileDB's values (`_` where they equal the fill value), and (dense, latest)
  `gdalinfo` opens a 2-D attribute as a raster of the box's size.

Prints one "ok" line per array; exits 1 with the first mismatch.
"""

import json
import math
import re
import subprocess
import sys
import warnings

import netCDF4
import numpy as np
import xarray as xr

from check_text_npy import DATETIME_UNITS, NPY_DTYPES, encode_name, states_to_check

warnings.filterwarnings("ignore")

TEXT = ("CHAR", "STRING_ASCII")
SHOWN_TYPES = set(NPY_DTYPES) | set(TEXT)


def fail(where, what):
    raise AssertionError("%s: %s" % (where, what))


def is_temporal(dt):
    return dt.startswith(("DATETIME_", "TIME_"))


def valid_name(name):
    """netCDF's rule for names ("Note on names"); the anonymous attribute is shown as
    `anonymous`."""
    if name == "":
        return True
    first = name[0]
    if not (first.isascii() and (first.isalnum() or first == "_") or not first.isascii()):
        return False
    return not name.endswith(" ") and not any(c < " " or c in "/\x7f" for c in name)


def must_show(f):
    n = f["cell_val_num"]
    return n != "var" and valid_name(f["name"]) and (f["datatype"] in SHOWN_TYPES or is_temporal(f["datatype"]))


def var_name(f):
    return "anonymous" if f["name"] == "" else f["name"]


def storage_dtype(f):
    """The little-endian numpy type of the field's values (TileDB's bits)."""
    dt = f["datatype"]
    if dt in TEXT or dt == "BOOL":
        return np.dtype("u1")
    if is_temporal(dt):
        return np.dtype("<i8")
    return np.dtype(NPY_DTYPES[dt])


def truth(f, shape):
    """merged.json's values as numpy (TileDB's bits), null cells as 0."""
    n = f["cell_val_num"]
    dtype = storage_dtype(f)
    values = f["values"]
    if n != 1:
        values = [[0] * n if v is None else v for v in values]
        values = [x for v in values for x in v]
        shape = tuple(shape) + (n,)
    else:
        values = [0 if v is None else (v[0] if isinstance(v, list) else v) for v in values]
    if dtype.kind == "f":
        values = [float(v) if isinstance(v, str) else v for v in values]
    return np.array(values, dtype=dtype).reshape(shape)


def bits(got, want):
    """`got` (any byte order, the signed type of an unsigned field in CDF-2, chars as
    S1) as `want`'s dtype, bit for bit."""
    got = np.asarray(got)
    if got.dtype.kind == "S":
        got = got.view(np.uint8)
    got = got.astype(got.dtype.newbyteorder("="))
    if got.dtype.itemsize != want.dtype.itemsize:
        return None
    return got.view(want.dtype)


def same(got, want):
    if got is None or got.shape != want.shape:
        return False
    if want.dtype.kind == "f":
        return np.array_equal(got.view(np.dtype("u%d" % want.dtype.itemsize)),
                              want.view(np.dtype("u%d" % want.dtype.itemsize))) or \
            np.array_equal(got, want, equal_nan=True)
    return np.array_equal(got, want)


def time_dtype(dt):
    unit = DATETIME_UNITS[dt.split("_")[-1]]
    return np.dtype(("M8[%s]" if dt.startswith("DATETIME_") else "m8[%s]") % unit)


def check_raw(where, ds, read, dense, shape, summary):
    """netCDF4-python without masking: every variable bit for bit. Returns the variables
    checked, `(field, name, TileDB's values)`, and their `_FillValue`s."""
    ds.set_auto_maskandscale(False)
    names = set(ds.variables)
    fields = read["fields"]
    if dense:
        dims = [f for f in fields if f["role"] == "dimension"]
        for f, (lo, hi) in zip(dims, read["non_empty_domain"]):
            name = var_name(f)
            if ds.dimensions[name].size != hi - lo + 1:
                fail(where, "dimension %s has %d cells, the box %d" % (name, ds.dimensions[name].size, hi - lo + 1))
            got = np.asarray(ds.variables[name][:]).astype(np.int64)
            if ds.variables[name].getncattr("tiledb_datatype") in ("UINT32",) and got.dtype.kind == "i":
                got = got & 0xFFFFFFFF
            if not np.array_equal(got, np.arange(lo, hi + 1)):
                fail(where, "coordinate variable %s is not %d..%d" % (name, lo, hi))
    else:
        if ds.dimensions["cells"].size != read["cell_num"]:
            fail(where, "cells: %d, TileDB %d" % (ds.dimensions["cells"].size, read["cell_num"]))
    checked, fills = [], {}
    for f in fields:
        if dense and f["role"] == "dimension":
            continue
        name = var_name(f)
        if name not in names:
            if must_show(f):
                fail(where, "%s (%s x %s) is not in the file" % (name, f["datatype"], f["cell_val_num"]))
            if f["name"] not in summary["left_out"]:
                fail(where, "%s is neither in the file nor said to be left out" % name)
            continue
        want = truth(f, shape)
        v = ds.variables[name]
        got = bits(v[:], want)
        if f.get("nullable"):
            validity = np.array(f["validity"], dtype=np.uint8).reshape(shape)
            vv = np.asarray(ds.variables[name + "_validity"][:]).astype(np.uint8)
            if not np.array_equal(vv, validity):
                fail(where, "%s_validity differs from TileDB's validity" % name)
            keep = validity == 1
            if got is None or not same(got[keep], want[keep]):
                fail(where, "%s differs from TileDB's values where valid" % name)
        elif not same(got, want):
            fail(where, "%s differs from TileDB's values: %s vs %s" % (name, None if got is None else got.ravel()[:8], want.ravel()[:8]))
        checked.append((f, name, want))
        fills[name] = np.asarray(v.getncattr("_FillValue") if "_FillValue" in v.ncattrs() else [])
    return checked, fills


def check_decoded(where, path, engine, checked, fills, shape):
    """xarray decoding as CF says: masked where the value is the fill value (`fills`:
    each variable's `_FillValue` as netCDF4-python read it), dates and times as
    TileDB-Py's, unsigned types as unsigned."""
    try:
        ds = xr.open_dataset(path, engine=engine, concat_characters=False, decode_timedelta=True)
        for _, name, _ in checked:
            ds[name].values
    except (ValueError, OverflowError):
        # Dates outside datetime64[ns] (xarray's resolution; TileDB-Py reads them in
        # their own unit): compared undecoded.
        ds = xr.open_dataset(path, engine=engine, concat_characters=False,
                             decode_times=False, decode_timedelta=False)
    try:
        for f, name, want in checked:
            dt = f["datatype"]
            if dt in TEXT:
                continue
            fill = fills[name]
            got = ds[name].values
            if fill.size:
                fb = np.asarray(fill).astype(fill.dtype.newbyteorder("=")).view(want.dtype)[()]
                mask = want == fb if want.dtype.kind != "f" else (want.view("u%d" % want.itemsize) == np.asarray(fb).view("u%d" % want.itemsize))
            else:
                mask = np.zeros(want.shape, dtype=bool)
            if f.get("nullable"):
                valid = np.array(f["validity"], dtype=np.uint8).reshape(shape)
                if f["cell_val_num"] != 1:
                    valid = np.repeat(valid[..., None], f["cell_val_num"], axis=-1)
                mask = mask | (valid == 0)
                keep_null = valid == 1
            else:
                keep_null = np.ones(want.shape, dtype=bool)
            if is_temporal(dt) and got.dtype.kind in "Mm":
                expect = want.view(time_dtype(dt))
                ok = np.isnat(got[mask & keep_null]).all() and np.array_equal(
                    got[~mask], expect[~mask].astype(got.dtype))
            else:
                expect = want.astype(np.float64) if got.dtype.kind == "f" else want
                gm = got[mask & keep_null]
                ok = (gm.dtype.kind != "f" or np.isnan(gm).all() or (want.dtype.kind == "f")) and \
                    np.array_equal(got[~mask], expect[~mask].astype(got.dtype), equal_nan=True)
            if not ok:
                fail(where, "%s engine=%s: decoded %s differs from TileDB's" % (name, engine, got.dtype))
    finally:
        ds.close()


NUMBER = re.compile(r"^-?(\d|NaN|Infinity|inf)")


def ncdump_values(text, name):
    """The values `ncdump -v name` prints for variable `name` ('_' for fill)."""
    body = text.split("data:", 1)[1].replace("\\", "")
    m = re.search(r"^ %s =\s*(.*?);" % re.escape(name), body, re.S | re.M)
    if not m:
        return None
    return [t for t in re.split(r"[,\s]+", m.group(1)) if t]


def check_cli(where, path, checked, gdal):
    head = subprocess.run(["ncdump", "-h", path], capture_output=True, text=True, errors="replace")
    if head.returncode != 0:
        fail(where, "ncdump -h: %s" % head.stderr)
    for _, name, _ in checked:
        # CDL escapes special characters with a backslash.
        if not re.search(r"\s%s\(" % re.escape(name), head.stdout.replace("\\", "")):
            fail(where, "ncdump -h does not list %s" % name)
    numeric = [c for c in checked if c[0]["datatype"] not in TEXT]
    if not numeric:
        return 0
    two_d = [c for c in numeric if c[2].ndim == 2 and c[0]["role"] == "attribute"
             and c[0]["cell_val_num"] == 1]
    if gdal and two_d:
        # GDAL's netCDF driver: the variable as a raster of the box's size.
        _, name, want = two_d[0]
        info = subprocess.run(["gdalinfo", 'NETCDF:"%s":%s' % (path, name)],
                              capture_output=True, text=True, errors="replace")
        size = "Size is %d, %d" % (want.shape[1], want.shape[0])
        if info.returncode != 0 or size not in info.stdout:
            fail(where, "gdalinfo %s: %s%s" % (name, info.stdout[:300], info.stderr[:300]))
    f, name, want = numeric[0]
    if want.size == 0:
        return 0  # no cells: ncdump prints no data
    out = subprocess.run(["ncdump", "-v", name, path], capture_output=True, text=True, errors="replace")
    if out.returncode != 0:
        fail(where, "ncdump -v %s: %s" % (name, out.stderr))
    tokens = ncdump_values(out.stdout, name)
    flat = want.ravel()
    if tokens is None or len(tokens) != flat.size:
        fail(where, "ncdump -v %s printed %s values, TileDB has %d" % (name, None if tokens is None else len(tokens), flat.size))
    valid = None
    if f.get("nullable"):
        valid = np.array(f["validity"], dtype=np.uint8)
        if f["cell_val_num"] != 1:
            valid = np.repeat(valid, f["cell_val_num"])
    kind = want.dtype.kind
    signed = flat.view("i%d" % flat.itemsize) if kind == "u" else flat
    for i, (t, x) in enumerate(zip(tokens, flat)):
        if valid is not None and not valid[i]:
            continue
        if t == "_":
            continue  # the fill value: checked bit for bit by netCDF4-python
        if kind == "f":
            g = float(t.rstrip("f"))
            ok = (math.isnan(g) and math.isnan(x)) or g == x or abs(g - x) <= 1e-6 * abs(x)
        else:
            g = int(t.rstrip("UBSL").rstrip("u"))
            ok = g == int(x) or g == int(signed[i])
        if not ok:
            fail(where, "ncdump -v %s: value %d is %s, TileDB %s" % (name, i, t, x))
    return 1


def main():
    specs = json.load(open(sys.argv[1]))
    for spec in specs:
        merged = json.load(open(spec["merged"]))
        dense = merged["array_type"] == "dense"
        states = dumps = 0
        for read in states_to_check(merged, spec["every_state"]):
            ts = read["timestamp"]
            rel = "latest" if ts is None else "at/%d" % ts
            where = "%s %s" % (spec["array"], rel)
            path = "%s/%s/array.nc" % (spec["mount"], rel)
            summary = json.load(open("%s/%s/read.json" % (spec["mount"], rel)))["netcdf"]
            box = read.get("non_empty_domain")
            ds = netCDF4.Dataset(path)
            try:
                fmt = ds.data_model
                if fmt != {"CDF-2": "NETCDF3_64BIT_OFFSET", "CDF-5": "NETCDF3_64BIT_DATA"}[summary["format"]]:
                    fail(where, "data model %s, read.json says %s" % (fmt, summary["format"]))
                if dense and not box:
                    if ds.variables:
                        fail(where, "an empty state has variables %s" % list(ds.variables))
                    states += 1
                    continue
                shape = [hi - lo + 1 for lo, hi in box] if dense else [read["cell_num"]]
                if not dense and merged.get("allows_duplicates"):
                    # Equal coordinates come in TileDB's order: compare as a multiset.
                    ds.set_auto_maskandscale(False)
                    if rows(ds, read) != rows(None, read):
                        fail(where, "cells differ from TileDB's as a multiset")
                    states += 1
                    continue
                checked, fills = check_raw(where, ds, read, dense, shape, summary)
            finally:
                ds.close()
            # xarray with both engines on every state checked.
            engines = ["netcdf4"] + (["scipy"] if summary["format"] == "CDF-2" else [])
            for engine in engines:
                check_decoded(where, path, engine, checked, fills, shape)
            if spec.get("cli"):
                dumps += check_cli(where, path, checked, dense and ts is None)
            states += 1
        print("ok %s: %d states%s" % (spec["array"], states, ", %d ncdump -v" % dumps if spec.get("cli") else ""))


def rows(ds, read):
    """A sparse state's cells as sorted rows of the fields shown (each cell's bytes;
    a null cell's none): TileDB's (`ds` None) or the file's."""
    cols = []
    for f in read["fields"]:
        if not must_show(f):
            continue
        want = truth(f, [read["cell_num"]])
        got = want if ds is None else bits(ds.variables[var_name(f)][:], want)
        if got is None or got.shape != want.shape:
            return None
        valid = np.array(f["validity"], dtype=bool) if f.get("nullable") else np.ones(len(got), bool)
        cols.append([g.tobytes() if ok else b"" for g, ok in zip(got, valid)])
    return sorted(zip(*cols))


if __name__ == "__main__":
    main()
