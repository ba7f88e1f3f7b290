"""Checks a mounted fragfs tree's `cells.parquet` and `cells.arrow` (every fragment
folder, latest/ and the at/<T>/ of merged.json, and the same in each dimension label's
tree under labels/) against the field folders beside them: the truth is each field's
`values.bin` (fixed size: values back to back, little-endian; var size: the bytes),
`offsets.bin` (u64 start of each cell) and `validity.bin` (one byte per cell, 0 null),
which the conformance tests prove equal to TileDB's reads; an enumerated attribute's
labels are its `enumeration/` (`values.bin`, `offsets.bin` for var-size labels,
`enumeration.json`).

Usage: check_tables.py SPEC.json [--keep-going]   (or FRAGFS_TABLES_KEEP_GOING=1)
SPEC is a list of {"mount", "array", "merged", "key", "every_state"} (the list
tests/common's `check_in_batches` gives; "every_state" false: the latest and the first
earlier state, as the other reader checkers). For every folder checked:

* `cells.parquet` read by pyarrow (`pq.read_table`) and `cells.arrow` by
  `pa.ipc.open_file(pa.memory_map(...))`: the columns are cells.csv's header, in order;
  the rows are cells.csv's, and every cell equals the field folder's (nulls where the
  validity is 0, floats bit for bit, NaN included; an enumerated attribute shows its
  label, null for a code with no label);
* the Parquet schema: each column's physical and logical type as TileDB's datatype says
  (8/16-bit integers INT32 with their INT(bits, signed) annotation, unsigned ones
  annotated unsigned, DATETIME_MS/US/NS TIMESTAMP(unit) not adjusted to UTC,
  other temporal types (DATETIME_DAY too) INT64 with the TileDB type in the key
  `fragfs.units`, var strings STRING, var CHAR/BLOB plain BYTE_ARRAY, CHAR x n
  FIXED_LEN_BYTE_ARRAY(n), several values a list), nullable fields optional and others
  required; an enumerated attribute with string labels reads back as a dictionary (the
  `ARROW:schema` key; pyarrow restores no dictionary of numbers from Parquet);
  the key `tiledb.schema` holds JSON, `tiledb.metadata` too where the array has
  metadata;
* the Arrow file's types: integers of their own width, bool, timestamp[s/ms/us/ns],
  duration[s/ms/us/ns], int64 for the other temporal types (days too), large_string /
  large_binary, fixed_size_binary(n), fixed_size_list(n), large_list, dictionary for
  enumerated attributes; reading it allocates nothing (zero-copy from the mapping);
* row groups and record batches: a fragment's are its tiles (the cell counts of
  tiles.json), a merged state's 65536 rows each but the last; a sparse fragment's
  row-group statistics, where tiles.json has a tile's min/max (not of floats) or null
  count, are there; any
  statistics present, anywhere, are right: the null count the group's, no cell below
  the min or above the max (equal to the cells' where the file says they are exact);
* `os.stat` gives the size of the bytes read.

Prints one "ok" line per array; exits 1 with the first mismatch, naming the array,
folder, file, column and row.
"""

import csv
import json
import os
import sys

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from check_text_npy import encode_name, states_to_check

STATE_GROUP_ROWS = 65536

INTS = {
    "INT8": (8, True), "UINT8": (8, False), "INT16": (16, True), "UINT16": (16, False),
    "INT32": (32, True), "UINT32": (32, False), "INT64": (64, True), "UINT64": (64, False),
}
FLOATS = {"FLOAT32": "<f4", "FLOAT64": "<f8"}
UNITS = {"SEC": "s", "MS": "ms", "US": "us", "NS": "ns"}
STRINGS = {"STRING_ASCII", "STRING_UTF8"}
BYTES = {"CHAR", "BLOB"}
# Other byte-like types the contract leaves open: a string or a binary column.
OTHER_BYTES = {"GEOM_WKB", "GEOM_WKT", "ANY", "STRING_UTF16", "STRING_UTF32", "STRING_UCS2",
               "STRING_UCS4"}


class Mismatch(Exception):
    pass


def fail(where, what):
    raise Mismatch("%s: %s" % (where, what))


def char_size(dt):
    """Bytes of one character of a string type (one for every other byte-like type)."""
    return {"STRING_UTF16": 2, "STRING_UCS2": 2, "STRING_UTF32": 4, "STRING_UCS4": 4}.get(dt, 1)


def is_temporal(dt):
    return dt.startswith(("DATETIME_", "TIME_"))


def is_bytes_like(dt):
    return dt in STRINGS or dt in BYTES or dt in OTHER_BYTES


def storage_dtype(dt):
    """numpy dtype of one value of a number type, as values.bin stores it."""
    if dt in INTS:
        bits, signed = INTS[dt]
        return np.dtype("%s%s%d" % ("<" if bits > 8 else "|", "i" if signed else "u", bits // 8))
    if dt in FLOATS:
        return np.dtype(FLOATS[dt])
    if dt == "BOOL":
        return np.dtype("u1")
    if is_temporal(dt):
        return np.dtype("<i8")
    return None


# ---------------------------------------------------------------- the truth


class Field:
    def __init__(self, name, datatype, cell_val_num, nullable):
        self.name = name  # as shown (encoded), cells.csv's header
        self.datatype = datatype
        self.var = cell_val_num == "var"
        self.n = None if self.var else int(cell_val_num)
        self.nullable = bool(nullable)
        self.labels = None  # (Field of the labels, [canonical label]) when enumerated

    def describe(self):
        return "%s %s x %s%s%s" % (self.name, self.datatype, "var" if self.var else self.n,
                                   " nullable" if self.nullable else "",
                                   " enumerated" if self.labels else "")


def element(dt, raw):
    """One value of a number type as compared: ints as ints, floats as their bits, BOOL
    as a bool."""
    if dt in FLOATS:
        return bytes(raw)
    v = np.frombuffer(raw, dtype=storage_dtype(dt))[0]
    if dt == "BOOL":
        return bool(v)
    return int(v)


def elements(dt, raw):
    size = storage_dtype(dt).itemsize
    return [element(dt, raw[i:i + size]) for i in range(0, len(raw), size)]


def canonical(f, raw):
    """One cell's bytes (as values.bin holds them) as compared."""
    if is_bytes_like(f.datatype):
        return bytes(raw)
    values = elements(f.datatype, raw)
    if f.var or f.n != 1:
        return values
    return values[0]


def read_file(path):
    with open(path, "rb") as fh:
        return fh.read()


def cell_bytes(fdir, f, count):
    """Each cell's raw bytes from the field folder `fdir`, and its validity."""
    values = read_file(os.path.join(fdir, "values.bin"))
    if f.var:
        starts = np.frombuffer(read_file(os.path.join(fdir, "offsets.bin")), dtype="<u8").tolist()
        if len(starts) != count:
            fail(fdir, "offsets.bin has %d cells, cells.csv %d" % (len(starts), count))
        ends = starts[1:] + [len(values)]
        raws = [values[a:b] for a, b in zip(starts, ends)]
    else:
        size = f.n * (char_size(f.datatype) if is_bytes_like(f.datatype)
                      else storage_dtype(f.datatype).itemsize)
        if len(values) != size * count:
            fail(fdir, "values.bin has %d bytes, %d cells of %d" % (len(values), count, size))
        raws = [values[i * size:(i + 1) * size] for i in range(count)]
    valid = [True] * count
    if f.nullable:
        validity = read_file(os.path.join(fdir, "validity.bin"))
        if len(validity) != count:
            fail(fdir, "validity.bin has %d cells, cells.csv %d" % (len(validity), count))
        valid = [b != 0 for b in validity]
    return raws, valid


def enumeration(fdir):
    """The labels of an enumerated attribute's folder, as compared, or None."""
    edir = os.path.join(fdir, "enumeration")
    if not os.path.isdir(edir):
        return None
    info = json.load(open(os.path.join(edir, "enumeration.json")))
    count = info["count"] if "count" in info else info["values"]
    n = info.get("cell_val_num")
    var = os.path.exists(os.path.join(edir, "offsets.bin"))
    if n is None:
        n = "var" if var else None
    if n is None:
        size = os.path.getsize(os.path.join(edir, "values.bin"))
        one = storage_dtype(info["datatype"])
        n = size // max(count, 1) // (one.itemsize if one is not None else 1)
    lf = Field("labels", info["datatype"], "var" if var else n, False)
    if not is_bytes_like(lf.datatype) and (lf.datatype == "BOOL" or lf.var or lf.n != 1):
        # Labels that are booleans or several values: no reader takes such a
        # dictionary, the table shows the codes (docs/tables.md).
        return None
    raws, _ = cell_bytes(edir, lf, count)
    return lf, [canonical(lf, r) for r in raws]


def truth(folder, f, count):
    """Every cell of the field `f` of `folder` as compared (None for null)."""
    fdir = os.path.join(folder, f.name)
    raws, valid = cell_bytes(fdir, f, count)
    if f.labels is None:
        return [canonical(f, r) if ok else None for r, ok in zip(raws, valid)]
    _, labels = f.labels
    out = []
    for r, ok in zip(raws, valid):
        code = canonical(f, r) if ok else None
        out.append(labels[code] if code is not None and 0 <= code < len(labels) else None)
    return out


def csv_table(folder):
    with open(os.path.join(folder, "cells.csv"), encoding="utf-8", errors="surrogateescape",
              newline="") as fh:
        rows = csv.reader(fh)
        header = next(rows)
        count = sum(1 for _ in rows)
    return header, count


def schema_fields(doc):
    """Fields of a schema JSON (schema.json, schemas/<name>.json) or of a footer's
    `derived`, by shown name."""
    out = {}
    items = doc.get("fields")
    if items is None:
        items = (doc.get("domain", {}).get("dimensions") or doc.get("dimensions") or []) + \
            (doc.get("attributes") or [])
    for x in items:
        name = encode_name(x["name"])
        out[name] = Field(name, x["datatype"], x["cell_val_num"], x.get("nullable", False))
    return out


def fragment_fields(folder):
    return schema_fields(json.load(open(os.path.join(folder, "footer.json")))["derived"])


def state_fields(tree, folder, read):
    """A state's fields: TileDB's read of it (merged.json) where there is one, else the
    schema read.json names."""
    if read is not None:
        return {encode_name(x["name"]): Field(encode_name(x["name"]), x["datatype"],
                                              x["cell_val_num"], x.get("nullable", False))
                for x in read["fields"]}
    name = json.load(open(os.path.join(folder, "read.json")))["schema"]
    path = os.path.join(tree, "schemas", name + ".json")
    if not os.path.exists(path):
        path = os.path.join(tree, "schema.json")
    return schema_fields(json.load(open(path)))


# ---------------------------------------------------------------- the files


def got_cells(arr):
    """Every cell of a column read from a file, as compared."""
    if isinstance(arr, pa.ChunkedArray):
        if pa.types.is_dictionary(arr.type):
            # Each chunk may have a dictionary of its own.
            arr = pa.chunked_array([c.dictionary_decode() for c in arr.chunks],
                                   type=arr.type.value_type)
        arr = arr.combine_chunks() if arr.num_chunks else pa.array([], type=arr.type)
    t = arr.type
    if pa.types.is_dictionary(t):
        arr = arr.dictionary_decode()
        t = arr.type
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) or \
            pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        if not pa.types.is_fixed_size_binary(t):
            arr = arr.cast(pa.large_binary())
        return arr.to_pylist()
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        lengths = pc.list_value_length(arr).to_pylist()
        flat = got_cells(pc.list_flatten(arr))
        out, at = [], 0
        for n in lengths:
            if n is None:
                out.append(None)
            else:
                out.append(flat[at:at + n])
                at += n
        return out
    if pa.types.is_floating(t):
        dt = np.dtype("<f%d" % (t.bit_width // 8))
        buf = arr.buffers()[1]
        data = np.frombuffer(buf, dtype=dt)[arr.offset:arr.offset + len(arr)] if buf else \
            np.zeros(0, dt)
        nulls = arr.is_null().to_pylist()
        return [None if nulls[i] else data[i:i + 1].tobytes() for i in range(len(arr))]
    if pa.types.is_timestamp(t) or pa.types.is_duration(t) or pa.types.is_time64(t):
        arr = arr.cast(pa.int64())
    elif pa.types.is_date32(t) or pa.types.is_time32(t):
        arr = arr.cast(pa.int32())
    elif pa.types.is_date64(t):
        arr = arr.cast(pa.int64())
    return arr.to_pylist()


def arrow_element_type(dt):
    if dt in INTS:
        bits, signed = INTS[dt]
        return getattr(pa, "%sint%d" % ("" if signed else "u", bits))()
    if dt == "FLOAT32":
        return pa.float32()
    if dt == "FLOAT64":
        return pa.float64()
    if dt == "BOOL":
        return pa.bool_()
    unit = dt.split("_", 1)[1] if is_temporal(dt) else None
    if dt.startswith("DATETIME_") and unit in UNITS:
        return pa.timestamp(UNITS[unit])
    if dt.startswith("TIME_") and unit in UNITS:
        return pa.duration(UNITS[unit])
    if is_temporal(dt):
        return pa.int64()
    return None


def arrow_types(f):
    """The Arrow types the contract allows for the field in cells.arrow."""
    dt = f.datatype
    if f.labels is not None:
        return None  # a dictionary: checked by its own rule
    if is_bytes_like(dt):
        if not f.var:
            return [pa.binary(f.n * char_size(dt))]
        if dt in STRINGS:
            return [pa.large_string()]
        if dt in BYTES:
            return [pa.large_binary()]
        return [pa.large_string(), pa.large_binary()]
    e = arrow_element_type(dt)
    if f.var:
        return [pa.large_list(e)]
    if f.n != 1:
        return [pa.list_(e, f.n)]
    return [e]


def parquet_leaf_rule(f):
    """(physical types, logical-type check) the contract gives a field's leaf column."""
    dt = f.datatype

    def logical(kind, **want):
        def ok(lt):
            j = json.loads(lt.to_json())
            if kind is None:
                return j.get("Type") in ("None", None) or j == {}
            if j.get("Type") != kind:
                return False
            return all(j.get(k) == v for k, v in want.items())
        ok.__doc__ = "%s %s" % (kind, want)
        return ok

    def either(*checks):
        def ok(lt):
            return any(c(lt) for c in checks)
        ok.__doc__ = " or ".join(c.__doc__ for c in checks)
        return ok

    if is_bytes_like(dt):
        if not f.var:
            return ({"FIXED_LEN_BYTE_ARRAY"}, either(logical(None), logical("String")))
        if dt in STRINGS:
            return ({"BYTE_ARRAY"}, logical("String"))
        if dt in BYTES:
            return ({"BYTE_ARRAY"}, logical(None))
        return ({"BYTE_ARRAY"}, either(logical(None), logical("String")))
    if dt in INTS:
        bits, signed = INTS[dt]
        phys = "INT64" if bits == 64 else "INT32"
        rule = logical("Int", bitWidth=bits, isSigned=signed)
        if signed and bits in (32, 64):
            rule = either(logical(None), rule)
        return ({phys}, rule)
    if dt == "FLOAT32":
        return ({"FLOAT"}, logical(None))
    if dt == "FLOAT64":
        return ({"DOUBLE"}, logical(None))
    if dt == "BOOL":
        return ({"BOOLEAN"}, logical(None))
    unit = dt.split("_", 1)[1]
    if dt in ("DATETIME_MS", "DATETIME_US", "DATETIME_NS"):
        name = {"MS": "milliseconds", "US": "microseconds", "NS": "nanoseconds"}[unit]
        return ({"INT64"}, logical("Timestamp", isAdjustedToUTC=False, timeUnit=name))
    return ({"INT64"}, logical(None))


def read_all_bytes(where, path):
    """The file's bytes; its stat size, after the read, must be their count."""
    data = read_file(path)
    size = os.stat(path).st_size
    if size != len(data):
        fail(where, "os.stat says %d bytes, a read gives %d" % (size, len(data)))
    return data


def compare_columns(where, table, header, fields, truths, count):
    names = list(table.column_names)
    if names != header:
        fail(where, "columns %r, cells.csv's header %r" % (names, header))
    if table.num_rows != count:
        fail(where, "%d rows, cells.csv %d" % (table.num_rows, count))
    for name in header:
        got = got_cells(table.column(name))
        want = truths[name]
        for i, (g, w) in enumerate(zip(got, want)):
            if g != w:
                fail("%s column %s row %d" % (where, name, i),
                     "%r, the field folder %r (%s)" % (g, w, fields[name].describe()))


def check_parquet(where, path, header, fields, truths, count, groups, tiles, has_metadata):
    read_all_bytes(where, path)
    table = pq.read_table(path)
    compare_columns(where, table, header, fields, truths, count)
    pf = pq.ParquetFile(path)
    md = pf.metadata
    sizes = [md.row_group(g).num_rows for g in range(md.num_row_groups)]
    if not groups_match(sizes, groups):
        fail(where, "row groups of %s rows, expected %s" % (sizes, groups))
    kv = {k.decode("utf-8", "replace"): v for k, v in (md.metadata or {}).items()}
    if "tiledb.schema" not in kv:
        fail(where, "no tiledb.schema key (keys %s)" % sorted(kv))
    try:
        json.loads(kv["tiledb.schema"])
    except ValueError as e:
        fail(where, "tiledb.schema is not JSON: %s" % e)
    if has_metadata:
        if "tiledb.metadata" not in kv:
            fail(where, "the array has metadata but no tiledb.metadata key (keys %s)" % sorted(kv))
        try:
            json.loads(kv["tiledb.metadata"])
        except ValueError as e:
            fail(where, "tiledb.metadata is not JSON: %s" % e)
    if "ARROW:schema" not in kv:
        fail(where, "no ARROW:schema key")
    units = json.loads(kv["fragfs.units"]) if "fragfs.units" in kv else {}
    schema = pf.schema
    leaves = {}
    for i in range(len(schema)):
        col = schema.column(i)
        leaves.setdefault(col.path.split(".")[0], []).append((i, col))
    arrow_schema = table.schema
    for name in header:
        f = fields[name]
        cw = "%s column %s" % (where, name)
        if name not in leaves or len(leaves[name]) != 1:
            fail(cw, "%d leaf columns in the Parquet schema" % len(leaves.get(name, [])))
        i, col = leaves[name][0]
        t = arrow_schema.field(name).type
        if f.labels is not None:
            # pyarrow restores a dictionary from ARROW:schema where its values are
            # strings or bytes (the labels of a number type read back as those numbers).
            if not pa.types.is_dictionary(t) and is_bytes_like(f.labels[0].datatype):
                fail(cw, "an enumerated attribute reads back as %s, not a dictionary" % t)
            continue
        physical, logical = parquet_leaf_rule(f)
        if col.physical_type not in physical or not logical(col.logical_type):
            fail(cw, "Parquet %s %s, for %s expected %s %s"
                 % (col.physical_type, col.logical_type.to_json(), f.describe(),
                    "/".join(sorted(physical)), logical.__doc__))
        listed = f.var and not is_bytes_like(f.datatype) or (not f.var and f.n != 1 and
                                                             not is_bytes_like(f.datatype))
        if listed != (col.max_repetition_level == 1):
            fail(cw, "repetition level %d for %s" % (col.max_repetition_level, f.describe()))
        if not listed and col.max_definition_level != (1 if f.nullable else 0):
            fail(cw, "definition level %d for %s (nullable: optional, else required)"
                 % (col.max_definition_level, f.describe()))
        if is_temporal(f.datatype) and f.datatype not in (
                "DATETIME_MS", "DATETIME_US", "DATETIME_NS"):
            if units.get(name) != f.datatype:
                fail(cw, "fragfs.units says %r for %s (key value %r)"
                     % (units.get(name), f.datatype, kv.get("fragfs.units")))
        if not listed:
            check_statistics(cw, md, i, f, truths[name], groups,
                             tiles.get(name) if tiles is not None else None)


def groups_match(sizes, groups):
    if groups == "state":
        total = sum(sizes)
        if total == 0:
            return sizes in ([], [0])
        return all(s == STATE_GROUP_ROWS for s in sizes[:-1]) and 0 < sizes[-1] <= STATE_GROUP_ROWS
    return sizes == groups


def expected_groups(groups, count):
    if groups != "state":
        return groups
    full, rest = divmod(count, STATE_GROUP_ROWS)
    return [STATE_GROUP_ROWS] * full + ([rest] if rest else [])


def stat_value(f, st, which):
    """A statistic as compared with the cells (see `element`)."""
    raw = getattr(st, which + "_raw")
    dt = f.datatype
    if dt in FLOATS:
        return float(raw)
    if dt == "BOOL":
        return bool(raw)
    if is_bytes_like(dt):
        return raw.encode("utf-8", "surrogateescape") if isinstance(raw, str) else bytes(raw)
    if dt in INTS:
        bits, signed = INTS[dt]
        v = int(raw)
        if not signed:
            v &= (1 << max(bits, 32 if bits < 64 else 64)) - 1  # physical ints are signed
        return v
    return int(raw)


def as_number(f, v):
    if f.datatype in FLOATS:
        return float(np.frombuffer(v, dtype=FLOATS[f.datatype])[0])
    return v


def check_statistics(where, md, leaf, f, cells, groups, tiles):
    """Row-group statistics present are right; a fragment's tiles with min/max or a
    null count in tiles.json have them."""
    sizes = [md.row_group(g).num_rows for g in range(md.num_row_groups)]
    # An enumerated column's values are its labels.
    vf = f.labels[0] if f.labels is not None else f
    at = 0
    for g, rows in enumerate(sizes):
        part = cells[at:at + rows]
        at += rows
        st = md.row_group(g).column(leaf).statistics
        gw = "%s row group %d" % (where, g)
        tile = tiles[g] if tiles is not None and g < len(tiles) else None
        valid = [as_number(vf, c) for c in part if c is not None]
        if vf.datatype in FLOATS:
            valid = [v for v in valid if v == v]
        if tile is not None and f.labels is None:
            # NaN bounds (tiles.json shows them as text) give no statistics.
            bounded = all(isinstance(tile.get(k), (int, float)) and tile[k] == tile[k]
                          for k in ("min", "max"))
            # A float tile's min/max go wrong once it holds a NaN: not required.
            if bounded and not is_bytes_like(f.datatype) and valid and \
                    vf.datatype not in FLOATS and \
                    (st is None or not st.has_min_max):
                fail(gw, "tiles.json has min/max %r..%r, the row group no statistics"
                     % (tile["min"], tile["max"]))
            if f.nullable and tile.get("null_count") is not None and \
                    (st is None or not st.has_null_count):
                fail(gw, "tiles.json has a null count %r, the row group none" % tile["null_count"])
        if st is None:
            continue
        if st.has_null_count and st.null_count != rows - sum(1 for c in part if c is not None):
            fail(gw, "statistics null_count %d, the cells %d"
                 % (st.null_count, rows - sum(1 for c in part if c is not None)))
        if st.has_min_max and valid:
            exact = (getattr(st, "is_min_value_exact", None), getattr(st, "is_max_value_exact", None))
            lo, hi = stat_value(vf, st, "min"), stat_value(vf, st, "max")
            # Bounds, as Parquet defines them (a reader skips the group on them): no
            # cell below the min or above the max; exact where they say they are.
            if lo > min(valid) or (exact[0] is True and lo != min(valid)):
                fail(gw, "statistics min %r, the cells' %r" % (lo, min(valid)))
            if hi < max(valid) or (exact[1] is True and hi != max(valid)):
                fail(gw, "statistics max %r, the cells' %r" % (hi, max(valid)))


def check_arrow(where, path, header, fields, truths, count, groups):
    read_all_bytes(where, path)
    before = pa.total_allocated_bytes()
    with pa.memory_map(path) as source:
        reader = pa.ipc.open_file(source)
        batches = [reader.get_batch(i) for i in range(reader.num_record_batches)]
        allocated = pa.total_allocated_bytes() - before
        table = pa.Table.from_batches(batches, schema=reader.schema)
        if allocated > 0:
            fail(where, "reading the record batches allocated %d bytes: not zero-copy" % allocated)
        sizes = [b.num_rows for b in batches]
        if not groups_match(sizes, groups):
            fail(where, "record batches of %s rows, expected %s" % (sizes, groups))
        compare_columns(where, table, header, fields, truths, count)
        for name in header:
            f = fields[name]
            t = table.schema.field(name).type
            if f.labels is not None:
                lf, _ = f.labels
                if not pa.types.is_dictionary(t) or t.index_type != arrow_element_type(f.datatype):
                    fail("%s column %s" % (where, name),
                         "%s, expected a dictionary with %s indices" % (t, f.datatype))
                continue
            allowed = arrow_types(f)
            if not any(same_type(t, a) for a in allowed):
                fail("%s column %s" % (where, name),
                     "type %s, for %s expected %s" % (t, f.describe(), " or ".join(map(str, allowed))))
        del table, batches, reader


def same_type(got, want):
    """Equal types, a list's item field's name and nullability aside."""
    for kind in (pa.types.is_fixed_size_list, pa.types.is_large_list, pa.types.is_list):
        if kind(want):
            return kind(got) and getattr(got, "list_size", None) == getattr(want, "list_size", None) \
                and same_type(got.value_type, want.value_type)
    return got == want


def check_folder(where, folder, fields, groups, tiles, has_metadata):
    header, count = csv_table(folder)
    missing = [h for h in header if h not in fields]
    if missing:
        fail(where, "cells.csv columns %s have no field description" % missing)
    truths = {}
    for name in header:
        f = fields[name]
        f.labels = enumeration(os.path.join(folder, name))
        truths[name] = truth(folder, f, count)
    if groups != "state" and sum(groups) != count:
        fail(where, "tiles.json's tiles hold %d cells, cells.csv %d" % (sum(groups), count))
    guarded(where + " cells.parquet", check_parquet, os.path.join(folder, "cells.parquet"),
            header, fields, truths, count, groups, tiles, has_metadata)
    guarded(where + " cells.arrow", check_arrow, os.path.join(folder, "cells.arrow"), header,
            fields, truths, count, groups)
    return count


# `--keep-going` (or FRAGFS_TABLES_KEEP_GOING=1 in the environment, which a test run
# passes on): every file's first mismatch is printed, and the exit status is 1 at the
# end (a survey for the writers); without it the first mismatch ends the run.
KEEP_GOING = "--keep-going" in sys.argv or os.environ.get("FRAGFS_TABLES_KEEP_GOING") == "1"
FAILED = []


def guarded(where, check, *args):
    """A reader's error (a file missing, pyarrow refusing it) as a mismatch naming the
    array, folder and file."""
    try:
        try:
            check(where, *args)
        except Mismatch:
            raise
        except Exception as e:
            fail(where, "%s: %s" % (type(e).__name__, e))
    except Mismatch as e:
        if not KEEP_GOING:
            raise
        print("MISMATCH", e)
        FAILED.append(e)


def fragment_tiles(folder):
    """(cells of each tile, per tile the statistics tiles.json gives per field)."""
    tj = json.load(open(os.path.join(folder, "tiles.json")))
    fields = tj["fields"]
    if not fields:
        return [], {}
    first = next(iter(fields.values()))
    # TileDB's min/max of a dense fragment's tiles leave out the cells outside the
    # written domain, which the folder shows: they bound nothing, and the table's
    # statistics do not come from them (docs/tables.md).
    if json.load(open(os.path.join(folder, "footer.json"))).get("dense"):
        fields = {name: [{k: v for k, v in t.items() if k not in ("min", "max")} for t in ts]
                  for name, ts in fields.items()}
    return [t["cells"] for t in first], fields


def check_tree(where, tree, merged, every_state):
    """Every fragment and the states of one array's tree; returns (folders, cells)."""
    folders = cells = 0
    meta_path = os.path.join(tree, "metadata.json")
    has_metadata = os.path.exists(meta_path) and bool(json.load(open(meta_path)))
    fdir = os.path.join(tree, "fragments")
    for name in sorted(os.listdir(fdir)) if os.path.isdir(fdir) else []:
        folder = os.path.join(fdir, name)
        sizes, stats = fragment_tiles(folder)
        fields = fragment_fields(folder)
        cells += check_folder("%s fragments/%s" % (where, name), folder, fields, sizes, stats,
                              has_metadata)
        folders += 1
    reads = list(states_to_check(merged, every_state)) if merged else [{"timestamp": None}]
    for read in reads:
        ts = read["timestamp"]
        rel = "latest" if ts is None else "at/%d" % ts
        folder = os.path.join(tree, rel)
        fields = state_fields(tree, folder, read if "fields" in read else None)
        cells += check_folder("%s %s" % (where, rel), folder, fields, "state", None, has_metadata)
        folders += 1
    return folders, cells


def main():
    specs = json.load(open([a for a in sys.argv[1:] if not a.startswith("--")][0]))
    for spec in specs:
        merged = json.load(open(spec["merged"])) if spec.get("merged") else None
        mnt = spec["mount"]
        every = spec.get("every_state", True)
        folders, cells = check_tree(spec["array"], mnt, merged, every)
        labels = os.path.join(mnt, "labels")
        if os.path.isdir(labels):
            for label in sorted(os.listdir(labels)):
                f, c = check_tree("%s labels/%s" % (spec["array"], label),
                                  os.path.join(labels, label), None, False)
                folders, cells = folders + f, cells + c
        print("%s %s: %d folders, %d cells" % ("checked" if FAILED else "ok", spec["array"],
                                               folders, cells))
    if FAILED:
        sys.exit(1)


if __name__ == "__main__":
    try:
        main()
    except Mismatch as e:
        print("MISMATCH", e)
        sys.exit(1)
