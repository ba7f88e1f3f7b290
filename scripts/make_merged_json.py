#!/usr/bin/env python3
"""Print `<array>.merged.json` of an existing TileDB array: the array as
TileDB reads it (all visible fragments combined), in the format of the
shared corpus (`shared/corpus/README.md`, section "`<array>.merged.json`").

Usage: make_merged_json.py ARRAY [KEY] > ARRAY.merged.json

KEY is the AES-256-GCM key of an encrypted array. The array is only opened
for reading (nothing under ARRAY is written).

States (`reads`): the latest state (array opened without a timestamp), then
one state per distinct timestamp T, increasing, with the array opened at
`timestamp=(0, T)`. The timestamps are every t1 / t2 of the fragment folders
on disk (`__fragments/`), of the delete commits (`__commits/*.del` and the
`.del` entries embedded in `__commits/*.con`), plus any `extra_timestamps`
a caller passes (make_feature_fixtures.py passes the timestamps of writes
that a consolidation folded into one fragment).

Per state, every value is taken from TileDB's raw result buffers
(tiledb.main.PyQuery, the same reader scripts/make_fixtures.py uses):
  * dense: the box `A.nonempty_domain()` read in row-major layout (first
    dimension slowest), whatever the schema's orders; the dimension values
    are the coordinates TileDB returns with the cells;
  * sparse: every cell, TileDB global order.
"""

import json
import os
import re
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_fixtures as mf  # noqa: E402  (value encoding shared with the per-fragment JSON)
import tiledb  # noqa: E402
import tiledb.libtiledb as lt  # noqa: E402
from tiledb.main import PyQuery  # noqa: E402

NAME_RE = re.compile(r"^__(\d+)_(\d+)_([0-9a-f]{32})(?:_(\d+))?(\.\w+)?$")


def parse_con(path):
    """Entries of a consolidated-commits file (`.con`): list of
    (relative path, payload bytes or None)."""
    b = open(path, "rb").read()
    p = 0
    out = []
    while p < len(b):
        e = b.index(b"\n", p)
        name = b[p:e].decode()
        p = e + 1
        payload = None
        if name.endswith(".del") or name.endswith(".upd"):
            (n,) = struct.unpack_from("<Q", b, p)
            p += 8
            payload = b[p:p + n]
            p += n
        out.append((name, payload))
    return out


def fragment_dirs(uri):
    d = os.path.join(uri, "__fragments")
    return sorted(os.listdir(d)) if os.path.isdir(d) else []


def delete_commits(uri):
    """[(t1, t2, where)] of every delete commit: `__commits/<name>.del`, or
    `__commits/<con>.con:<entry>` for one embedded in a consolidated-commits file."""
    out = []
    cdir = os.path.join(uri, "__commits")
    if not os.path.isdir(cdir):
        return out
    for fn in sorted(os.listdir(cdir)):
        if fn.endswith(".del"):
            m = NAME_RE.match(fn)
            out.append((int(m.group(1)), int(m.group(2)), "__commits/" + fn))
        elif fn.endswith(".con"):
            for name, _ in parse_con(os.path.join(cdir, fn)):
                if name.endswith(".del"):
                    m = NAME_RE.match(os.path.basename(name))
                    out.append((int(m.group(1)), int(m.group(2)), "__commits/%s:%s" % (fn, name)))
    return out


def state_timestamps(uri, extra=()):
    ts = set(int(t) for t in extra)
    for fn in fragment_dirs(uri):
        m = NAME_RE.match(fn)
        ts.update((int(m.group(1)), int(m.group(2))))
    for t1, t2, _ in delete_commits(uri):
        ts.update((t1, t2))
    return sorted(ts)


def format_version(uri):
    vs = set()
    for fn in fragment_dirs(uri):
        with open(os.path.join(uri, "__fragments", fn, "__fragment_metadata.tdb"), "rb") as fh:
            vs.add(struct.unpack("<I", fh.read(4))[0])
    return vs.pop() if len(vs) == 1 else (sorted(vs) if vs else None)


def field_info(schema, name):
    if schema.domain.has_dim(name):
        obj = schema.domain.dim(name)
        return obj, "dimension", ("var" if obj.isvar else 1), False
    obj = schema.attr(name)
    return obj, "attribute", ("var" if obj.isvar else int(obj.ncells)), bool(obj.isnullable)


def enc_ned(schema, ned):
    if ned is None:
        return None
    out = []
    for i, (lo, hi) in enumerate(ned):
        d = schema.domain.dim(i)
        dt = d._tiledb_dtype.name
        if d.isvar:
            out.append([lo.decode() if isinstance(lo, bytes) else lo,
                        hi.decode() if isinstance(hi, bytes) else hi])
        elif dt.startswith("FLOAT"):
            out.append([mf.enc_scalar(lo, dt), mf.enc_scalar(hi, dt)])
        elif isinstance(lo, np.datetime64):
            out.append([int(lo.astype("int64")), int(hi.astype("int64"))])
        else:
            out.append([int(lo), int(hi)])
    return out


def read_state(uri, ctx, ts):
    """One state of the array: dict without the `timestamp` key."""
    with tiledb.open(uri, timestamp=None if ts is None else (0, ts), ctx=ctx) as A:
        schema = A.schema
        sparse = schema.sparse
        dims = [schema.domain.dim(i).name for i in range(schema.domain.ndim)]
        attrs = [schema.attr(i).name for i in range(schema.nattr)]
        ned = A.nonempty_domain()
        st = {"non_empty_domain": enc_ned(schema, ned),
              "layout": "global" if sparse else "row-major"}
        if ned is None:
            res = None
        else:
            layout = lt.LayoutType.GLOBAL_ORDER if sparse else lt.LayoutType.ROW_MAJOR
            q = PyQuery(A.ctx, A, tuple(attrs), tuple(dims), layout, False)
            if not sparse:
                sub = tiledb.Subarray(A)
                sub.add_ranges([[tuple(r)] for r in ned])
                q.set_subarray(sub)
            q.submit()
            res = q.results()
        fields = []
        ncells = set()
        for nm in dims + attrs:
            obj, role, cvn, nullable = field_info(schema, nm)
            dt = obj._tiledb_dtype.name
            f = {"name": nm, "role": role, "datatype": dt, "cell_val_num": cvn, "nullable": nullable}
            if res is None:
                cells, valid = [], ([] if nullable else None)
            else:
                data, offs, valid = res[nm]
                data = bytes(np.asarray(data).view(np.uint8))
                if cvn == "var":
                    offs = [int(x) for x in offs]
                    ends = offs[1:] + [len(data)]
                    cells = [data[a:b] for a, b in zip(offs, ends)]
                else:
                    size = np.dtype(mf.np_of(dt)).itemsize * cvn
                    assert len(data) % size == 0, (uri, nm)
                    cells = [data[i:i + size] for i in range(0, len(data), size)]
                valid = [int(x) for x in valid] if nullable else None
                if valid is not None:
                    assert len(valid) == len(cells), (uri, nm)
            vals = [None if (valid is not None and valid[i] == 0) else mf.enc_cell(c, dt, cvn)
                    for i, c in enumerate(cells)]
            f["cell_count"] = len(cells)
            f["values"] = vals
            if cvn == "var":
                offs, pos = [], 0
                for c in cells:
                    offs.append(pos)
                    pos += len(c)
                f["offsets"] = offs
                f["var_bytes"] = pos
            if valid is not None:
                f["validity"] = valid
            ncells.add(len(cells))
            fields.append(f)
        assert len(ncells) == 1, (uri, ts, ncells)
        st["cell_num"] = ncells.pop()
        st["fields"] = fields
        if not sparse and ned is not None:
            box = 1
            for lo, hi in ned:
                box *= int(hi) - int(lo) + 1
            assert st["cell_num"] == box, (uri, ts, st["cell_num"], box)
        return st


def merged_doc(uri, name=None, key=None, extra_timestamps=()):
    ctx = mf.ctx_for(key)
    schema = tiledb.ArraySchema.load(uri, ctx=ctx)
    doc = {
        "array": name or os.path.basename(os.path.normpath(uri)),
        "array_type": "sparse" if schema.sparse else "dense",
        "format_version": format_version(uri),
        "allows_duplicates": bool(schema.allows_duplicates) if schema.sparse else False,
        "cell_order": schema.cell_order,
        "tile_order": schema.tile_order,
    }
    if key is not None:
        doc["encryption"] = {"type": "AES_256_GCM", "key": key}
    if doc["allows_duplicates"]:
        doc["duplicates_order"] = "unspecified"
    doc["reader"] = "tiledb-py %s, libtiledb %d.%d.%d" % ((tiledb.__version__,) + lt.version())
    reads = []
    for ts in [None] + state_timestamps(uri, extra_timestamps):
        try:
            st = read_state(uri, ctx, ts)
        except tiledb.TileDBError as e:
            st = {"error": str(e).splitlines()[0]}
        reads.append(dict({"timestamp": ts}, **st))
    doc["reads"] = reads
    return doc


def to_json(o, ind=0):
    """JSON text in the corpus layout: objects (and lists holding objects)
    one entry per line, indented by one space per level; every other list on
    one line without spaces."""
    pad = " " * (ind + 1)
    if isinstance(o, dict) and o:
        items = ["%s%s: %s" % (pad, json.dumps(k, ensure_ascii=False), to_json(v, ind + 1))
                 for k, v in o.items()]
        return "{\n" + ",\n".join(items) + "\n" + " " * ind + "}"
    if isinstance(o, list) and any(isinstance(x, (dict, list)) and x and
                                   any(isinstance(y, dict) for y in (x if isinstance(x, list) else [x]))
                                   for x in o):
        return "[\n" + ",\n".join(pad + to_json(x, ind + 1) for x in o) + "\n" + " " * ind + "]"
    return json.dumps(o, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def dump(doc, fh):
    fh.write(to_json(doc))
    fh.write("\n")


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: make_merged_json.py ARRAY [KEY] > ARRAY.merged.json")
    uri = sys.argv[1]
    key = sys.argv[2] if len(sys.argv) == 3 else None
    dump(merged_doc(uri, key=key), sys.stdout)


if __name__ == "__main__":
    main()
