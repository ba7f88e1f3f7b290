"""Checks a mounted fragfs tree's values.npy, values.txt and cells.csv against the
<array>.expected.json that TileDB's read-back produced.

Usage: check_text_npy.py MOUNTPOINT JSON [MOUNTPOINT JSON ...]
JSON is an <array>.expected.json (each fragment's files) or an <array>.merged.json (the
merged view: latest/ and at/<T>/, TileDB's reads of the whole array; values.npy of a dense
array is shaped like its non-empty domain). Prints one line per checked file; exits 1 with
the first mismatch.

The expected text is computed here independently of fragfs: numpy renders datetimes,
Python parses floats back, and the escaping rules are written out again below.
"""

import csv
import json
import math
import os
import sys

import numpy as np

DATETIME_UNITS = {
    "YEAR": "Y", "MONTH": "M", "WEEK": "W", "DAY": "D", "HR": "h", "MIN": "m",
    "SEC": "s", "MS": "ms", "US": "us", "NS": "ns", "PS": "ps", "FS": "fs", "AS": "as",
}
TEXT_TYPES = {"STRING_ASCII", "STRING_UTF8", "CHAR", "GEOM_WKT"}
BYTE_TYPES = {"BLOB", "GEOM_WKB", "ANY"}
NPY_DTYPES = {
    "INT8": "i1", "UINT8": "u1", "INT16": "<i2", "UINT16": "<u2", "INT32": "<i4",
    "UINT32": "<u4", "INT64": "<i8", "UINT64": "<u8", "FLOAT32": "<f4", "FLOAT64": "<f8",
    "BOOL": "?",
}


def encode_name(name):
    if name == "":
        return "%anonymous"
    if name in (".", ".."):
        return "".join("%%%02X" % b for b in name.encode())
    return name.replace("%", "%25").replace("/", "%2F").replace("\0", "%00")



def states_to_check(merged, every_state):
    """The reads of a merged.json that the reader checkers (netCDF, Zarr) go through:
    those TileDB could make, every one (`every_state`: the fixtures, built to cover the
    merge rules) or the latest and the first earlier one (the corpus: the suite's time;
    every state of every corpus array is compared byte for byte by tests/merged.rs)."""
    earlier = False
    for read in merged["reads"]:
        if "error" in read:
            continue
        if read["timestamp"] is not None:
            if earlier and not every_state:
                continue
            earlier = True
        yield read

def escape(raw):
    out = []
    text = raw.decode("utf-8", errors="surrogateescape")
    for ch in text:
        code = ord(ch)
        if 0xDC80 <= code <= 0xDCFF:  # a byte that is not UTF-8
            out.append("\\x%02x" % (code - 0xDC00))
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\\":
            out.append("\\\\")
        elif code < 0x20 or code == 0x7F:
            out.append("\\x%02x" % code)
        else:
            out.append(ch)
    return "".join(out)


def cell_bytes(value):
    if isinstance(value, str):
        return value.encode()
    return bytes(value)


def float_matches(line, want, single):
    if isinstance(want, str):
        return line == {"NaN": "nan", "Infinity": "inf", "-Infinity": "-inf"}[want]
    if line in ("nan", "inf", "-inf"):
        return False
    if single:
        return np.float32(float(line)) == np.float32(want) and str(np.float32(want)) != ""
    return float(line) == float(want) and math.copysign(1, float(line)) == math.copysign(1, want)


def element_text(value, datatype):
    if datatype == "BOOL":
        return "true" if value else "false"
    if datatype.startswith("DATETIME_"):
        return str(np.datetime64(int(value), DATETIME_UNITS[datatype.split("_")[1]]))
    if datatype.startswith("TIME_"):
        unit = DATETIME_UNITS[datatype.split("_")[1]]
        v = int(value)
        if v == -2**63:
            return "NaT"  # numpy's not-a-time, as for datetimes
        sign, v = ("-", -v) if v < 0 else ("", v)
        per_sec = {"h": None, "m": None, "s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9,
                   "ps": 10**12, "fs": 10**15, "as": 10**18}[unit]
        if per_sec is None:
            secs, frac, digits = v * (3600 if unit == "h" else 60), 0, 0
        else:
            secs, frac = divmod(v, per_sec)
            digits = len(str(per_sec)) - 1
        text = "%02d:%02d:%02d" % (secs // 3600, secs // 60 % 60, secs % 60)
        return sign + text + ("." + str(frac).zfill(digits) if digits else "")
    return str(int(value))


def check_line(line, value, field, empty_var):
    datatype = field["datatype"]
    if value is None:
        return line == "NULL"
    if datatype in TEXT_TYPES:
        raw = cell_bytes(value)
        if raw == b"" and field["cell_val_num"] == "var":
            raw = bytes(empty_var)
        return line == escape(raw)
    if datatype in BYTE_TYPES:
        return line == cell_bytes(value).hex()
    elements = value if isinstance(value, list) else [value]
    parts = line.split(",")
    if len(parts) != len(elements):
        return False
    if datatype in ("FLOAT32", "FLOAT64"):
        return all(float_matches(p, e, datatype == "FLOAT32") for p, e in zip(parts, elements))
    return parts == [element_text(e, datatype) for e in elements]


def check_fragment(mnt, fragment, empty_var):
    folder = os.path.join(mnt, "fragments", fragment["fragment_dir"].rsplit("/", 1)[-1])
    check_folder(folder, fragment, empty_var)


def check_state(mnt, read, empty_var, dense, dups):
    """One read of a merged.json: latest/ or at/<T>/."""
    t = read["timestamp"]
    folder = os.path.join(mnt, "latest" if t is None else os.path.join("at", str(t)))
    if dups:
        read = in_served_order(folder, read, empty_var)
    shape = None
    if dense:
        ndims = sum(1 for f in read["fields"] if f["role"] == "dimension")
        shape = (tuple(hi - lo + 1 for lo, hi in read["non_empty_domain"])
                 if read["cell_num"] else (0,) * ndims)
    check_folder(folder, read, empty_var, shape)


def in_served_order(folder, read, empty_var):
    """Duplicates: TileDB's order among equal coordinates is its own, so the expected
    cells are put in the order served, each served row matched to an unused expected one
    (failing when one has no match): a multiset comparison."""
    fields = read["fields"]
    n = read["cell_num"]
    lines, labels = [], []
    for field in fields:
        fdir = os.path.join(folder, encode_name(field["name"]))
        with open(os.path.join(fdir, "values.txt"), encoding="utf-8", newline="\n") as f:
            lines.append(f.read().split("\n")[:n])
        labels.append(enumeration_labels(fdir))

    def value(field, j):
        if field.get("nullable") and field["validity"][j] == 0:
            return None
        return field["values"][j]

    used, order = [False] * n, []
    for i in range(n):
        for j in range(n):
            if not used[j] and all(i < len(lines[k]) and check_cell_text(lines[k][i], value(f, j), f, empty_var, labels[k])
                                   for k, f in enumerate(fields)):
                used[j] = True
                order.append(j)
                break
        else:
            raise AssertionError("%s: served row %d matches no cell TileDB read" % (folder, i + 1))
    out = dict(read)
    out["fields"] = []
    for field in fields:
        g = dict(field)
        g["values"] = [field["values"][j] for j in order]
        if "validity" in field:
            g["validity"] = [field["validity"][j] for j in order]
        out["fields"].append(g)
    return out


def enumeration_labels(fdir):
    """The label lines of an enumerated attribute's enumeration/, or None."""
    path = os.path.join(fdir, "enumeration", "values.txt")
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8", newline="\n") as f:
        return f.read().split("\n")[:-1]


def check_cell_text(line, value, field, empty_var, labels):
    """values.txt shows an enumerated attribute's label, or the code outside it."""
    if labels is not None and value is not None:
        return line == (labels[value] if 0 <= value < len(labels) else str(value))
    return check_line(line, value, field, empty_var)


def check_folder(folder, fragment, empty_var, shape=None):
    cells = fragment["cell_num"]
    columns = []
    for field in fragment["fields"]:
        name = field["name"]
        where = "%s/%s" % (os.path.basename(folder), name)
        fdir = os.path.join(folder, encode_name(name))
        values = field["values"] if field.get("stored", True) else [
            c[[f["name"] for f in fragment["fields"]].index(name)] for c in fragment["storage_coords"]]
        with open(os.path.join(fdir, "values.txt"), encoding="utf-8", newline="\n") as f:
            lines = f.read().split("\n")
        if lines[-1] != "" or len(lines) - 1 != cells:
            raise AssertionError("%s: values.txt has %d lines for %d cells" % (where, len(lines) - 1, cells))
        lines.pop()
        labels = enumeration_labels(fdir)
        for i, (line, value) in enumerate(zip(lines, values)):
            if field.get("nullable") and field["validity"][i] == 0:
                value = None
            if not check_cell_text(line, value, field, empty_var, labels):
                raise AssertionError("%s: values.txt line %d is %r for %r" % (where, i + 1, line, value))
        columns.append(lines)
        if field["cell_val_num"] != "var":
            check_npy(fdir, field, values, cells, where, shape)
    with open(os.path.join(folder, "cells.csv"), encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f))
    header = [encode_name(f["name"]) for f in fragment["fields"]]
    if rows[0] != header:
        raise AssertionError("%s: cells.csv header %r, expected %r" % (folder, rows[0], header))
    if len(rows) - 1 != cells:
        raise AssertionError("%s: cells.csv has %d rows for %d cells" % (folder, len(rows) - 1, cells))
    for i, row in enumerate(rows[1:]):
        if row != [c[i] for c in columns]:
            raise AssertionError("%s: cells.csv row %d is %r" % (folder, i + 1, row))


def check_npy(fdir, field, values, cells, where, shape=None):
    datatype = field["datatype"]
    n = field["cell_val_num"]
    arr = np.load(os.path.join(fdir, "values.npy"), mmap_mode="r")
    if not isinstance(arr, np.memmap):
        raise AssertionError("%s: values.npy did not memory-map" % where)
    with open(os.path.join(fdir, "values.bin"), "rb") as f:
        raw = f.read()
    if arr.tobytes() != raw:
        raise AssertionError("%s: values.npy data differs from values.bin" % where)
    if datatype in TEXT_TYPES:
        want_dtype, want_shape = np.dtype("S%d" % n), (cells,)
    elif datatype.startswith("DATETIME_"):
        want_dtype = np.dtype("<M8[%s]" % DATETIME_UNITS[datatype.split("_")[1]])
        want_shape = (cells,) if n == 1 else (cells, n)
    elif datatype in NPY_DTYPES:
        want_dtype = np.dtype(NPY_DTYPES[datatype])
        want_shape = (cells,) if n == 1 else (cells, n)
    else:
        return
    if shape is not None:
        # A dense merged array: shaped like its box (plus the cell's values).
        want_shape = shape + want_shape[1:]
    if arr.dtype != want_dtype or arr.shape != want_shape:
        raise AssertionError("%s: values.npy is %s %s, expected %s %s"
                             % (where, arr.dtype, arr.shape, want_dtype, want_shape))
    if shape is not None:
        arr = arr.reshape((cells,) + want_shape[len(shape):])
    if datatype in NPY_DTYPES and datatype != "BOOL":
        for i, value in enumerate(values):
            if value is None or (field.get("nullable") and field["validity"][i] == 0):
                continue
            got = np.asarray(arr[i]).ravel().tolist()
            want = value if isinstance(value, list) else [value]
            for g, w in zip(got, want):
                if isinstance(w, str) or (isinstance(g, float) and math.isnan(g)):
                    ok = isinstance(g, float) and str(np.float64(g)) == {"NaN": "nan", "Infinity": "inf", "-Infinity": "-inf"}.get(w, "?")
                else:
                    ok = g == w
                if not ok:
                    raise AssertionError("%s: values.npy[%d] = %r, expected %r" % (where, i, got, want))


def main():
    args = sys.argv[1:]
    for mnt, expected_path in zip(args[::2], args[1::2]):
        with open(expected_path) as f:
            expected = json.load(f)
        empty_var = expected.get("empty_var_cell_stored_bytes") or []
        try:
            if expected_path.endswith(".merged.json"):
                dense = expected["array_type"] == "dense"
                dups = bool(expected.get("allows_duplicates"))
                reads = [r for r in expected["reads"] if "error" not in r]
                for read in reads:
                    check_state(mnt, read, empty_var, dense, dups)
                print("ok %s: %d reads" % (expected_path, len(reads)))
                continue
            for fragment in expected["fragments"]:
                check_fragment(mnt, fragment, empty_var)
        except AssertionError as e:
            raise AssertionError("%s: %s" % (expected_path, e))
        print("ok %s: %d fragments" % (expected_path, len(expected["fragments"])))


if __name__ == "__main__":
    try:
        main()
    except AssertionError as e:
        print("MISMATCH", e)
        sys.exit(1)
