#!/usr/bin/env python3
"""Write the small TileDB fixture arrays used by the tests, plus one
`<name>.expected.json` per array in the format of the shared corpus
(see the corpus README, sections "<array>.expected.json" and
"How a reader should compare").

Usage: make_fixtures.py OUTDIR   (OUTDIR is deleted and rewritten)

Run it through scripts/make_fixtures.sh, which pins tiledb-py / numpy.

Where the expected values come from:
  * every cell value, offset and validity byte is what TileDB itself returns
    when the fragment is read alone (array opened at the fragment's
    timestamp range) in global order ('G') over the fragment's non-empty
    domain, taken from the raw read buffers (tiledb.main.PyQuery);
  * dense writes cover whole tiles, so the global-order read returns exactly
    the stored cells (no padding);
  * consolidated fragments that hold per-cell timestamps (t.tdb) may hold
    several versions of one coordinate, which a TileDB read deduplicates;
    they are read once per timestamp t (array opened at (t, t)) and the
    per-timestamp results are merged in global order, newest first;
  * `__timestamps` = the timestamp of the read that returned the cell;
    `__delete_timestamps` / `__delete_condition_index` cannot be read through
    TileDB: they come from the raw dt.tdb / dci.tdb (empty coords filter
    list) and are asserted equal to the delete conditions applied to the
    TileDB-read values.
Then every field whose filter list is empty (with empty offsets / validity /
coords lists where relevant) is checked byte for byte against the data
files, and the tile structure (chunk headers) of every data file is checked
against `tile_cell_counts`. Any mismatch aborts the script.
"""

import json
import math
import os
import re
import shutil
import struct
import sys

import numpy as np
import tiledb
import tiledb.libtiledb as lt
from tiledb.main import PyQuery

ENC_KEY = "0123456789abcdeF0123456789abcdeF"
U64_MAX = 2**64 - 1
DEFAULT_CHUNKSIZE = 65536

NP_OF = {
    "INT8": "<i1", "UINT8": "<u1", "INT16": "<i2", "UINT16": "<u2",
    "INT32": "<i4", "UINT32": "<u4", "INT64": "<i8", "UINT64": "<u8",
    "FLOAT32": "<f4", "FLOAT64": "<f8", "CHAR": "<u1", "STRING_ASCII": "<u1",
    "STRING_UTF8": "<u1", "BOOL": "<u1", "BLOB": "<u1",
}


def np_of(dt):
    if dt.startswith("DATETIME_") or dt.startswith("TIME_"):
        return "<i8"
    return NP_OF[dt]


def ctx_for(enc):
    if enc is None:
        return tiledb.Ctx()
    return tiledb.Ctx(tiledb.Config({"sm.encryption_type": "AES_256_GCM",
                                     "sm.encryption_key": enc}))


# ---------------------------------------------------------------------------
# filter descriptors


def filter_opts(f):
    n = type(f).__name__
    o = {}
    if isinstance(f, tiledb.CompressionFilter) and f.level != -1:
        o["level"] = int(f.level)
    if n in ("BitWidthReductionFilter", "PositiveDeltaFilter"):
        if f.window != 256:
            o["window"] = int(f.window)
    if n == "FloatScaleFilter":
        o = {"factor": f.factor, "offset": f.offset, "bytewidth": int(f.bytewidth)}
    if n in ("DeltaFilter", "DoubleDeltaFilter") and getattr(f, "reinterp_dtype", None) is not None:
        o["reinterp_dtype"] = str(np.dtype(f.reinterp_dtype))
    return o


def fl_names(fl):
    return [type(f).__name__ for f in fl]


def fl_desc(fl):
    return [[type(f).__name__, filter_opts(f)] for f in fl]


# ---------------------------------------------------------------------------
# raw tile parsing (for verification only)


def parse_tiles(path):
    """Data file -> list of tiles; each tile is a list of chunks
    (orig_size, filtered_size, metadata bytes, data bytes)."""
    b = open(path, "rb").read()
    p = 0
    tiles = []
    while p < len(b):
        (n,) = struct.unpack_from("<Q", b, p)
        p += 8
        chunks = []
        for _ in range(n):
            o, f, m = struct.unpack_from("<III", b, p)
            p += 12
            meta = b[p:p + m]
            p += m
            data = b[p:p + f]
            p += f
            chunks.append((o, f, meta, data))
        tiles.append(chunks)
    assert p == len(b), path
    return tiles


def raw_tiles(path):
    """Tiles of a file whose filter list is empty: the raw bytes of each tile."""
    out = []
    for chunks in parse_tiles(path):
        for o, f, m, d in chunks:
            assert o == f and not m, (path, o, f, len(m))
        out.append(b"".join(c[3] for c in chunks))
    return out


# ---------------------------------------------------------------------------
# value encoding


def enc_scalar(v, dt):
    if dt in ("FLOAT32", "FLOAT64"):
        x = float(v)
        if math.isnan(x):
            return "NaN"
        if math.isinf(x):
            return "Infinity" if x > 0 else "-Infinity"
        return x
    return int(v)


def enc_cell(raw, dt, cvn):
    """raw bytes of one cell -> JSON value."""
    if cvn == "var":
        if dt in ("STRING_UTF8", "STRING_ASCII"):
            try:
                return raw.decode("utf-8")
            except UnicodeDecodeError:
                return list(raw)
        if dt in ("CHAR", "BLOB", "UINT8"):
            return list(raw)
        arr = np.frombuffer(raw, np_of(dt))
        return [enc_scalar(x, dt) for x in arr]
    if dt == "CHAR":
        return list(raw)
    arr = np.frombuffer(raw, np_of(dt))
    if cvn == 1:
        return enc_scalar(arr[0], dt)
    return [enc_scalar(x, dt) for x in arr]


# ---------------------------------------------------------------------------
# schema description


def field_desc(obj, role, schema):
    dt = obj._tiledb_dtype.name
    if role == "dimension":
        cvn = "var" if obj.isvar else 1
        nullable = False
        filters = fl_names(obj.filters) if len(obj.filters) else "default(coords)"
        fl = obj.filters
    else:
        cvn = "var" if obj.isvar else int(obj.ncells)
        nullable = bool(obj.isnullable)
        filters = fl_names(obj.filters)
        fl = obj.filters
    d = {"name": obj.name, "role": role, "datatype": dt, "cell_val_num": cvn,
         "nullable": nullable, "filters": filters}
    if fl.chunksize is not None and fl.chunksize != DEFAULT_CHUNKSIZE:
        d["filter_chunksize"] = int(fl.chunksize)
    return d


def dim_desc(d):
    dt = d._tiledb_dtype.name
    if d.isvar:
        return {"name": d.name, "datatype": dt, "domain": None, "tile_extent": None}
    lo, hi = d.domain
    ext = d.tile
    conv = float if dt.startswith("FLOAT") else int
    return {"name": d.name, "datatype": dt, "domain": [conv(lo), conv(hi)],
            "tile_extent": None if ext is None else conv(ext)}


# ---------------------------------------------------------------------------
# reading fragments through TileDB


def tiledb_read(uri, ctx, ts, names, dims, subarray=None):
    """Global-order read of the array opened at `ts`. Returns per field a list
    of per-cell raw bytes and a validity list (or None), plus the raw offsets."""
    with tiledb.open(uri, timestamp=ts, ctx=ctx) as A:
        q = PyQuery(A.ctx, A, tuple(names), tuple(dims), lt.LayoutType.GLOBAL_ORDER, False)
        if subarray is not None:
            sub = tiledb.Subarray(A)
            sub.add_ranges([[tuple(r)] for r in subarray])
            q.set_subarray(sub)
        q.submit()
        res = q.results()
        schema = A.schema
        out = {}
        for nm in list(dims) + list(names):
            data, offs, valid = res[nm]
            data = bytes(np.asarray(data).view(np.uint8))
            if schema.domain.has_dim(nm):
                obj = schema.domain.dim(nm)
                cvn = "var" if obj.isvar else 1
            else:
                obj = schema.attr(nm)
                cvn = "var" if obj.isvar else int(obj.ncells)
            dt = obj._tiledb_dtype.name
            if cvn == "var":
                offs = [int(x) for x in offs]
                ends = offs[1:] + [len(data)]
                cells = [data[a:b] for a, b in zip(offs, ends)]
            else:
                size = np.dtype(np_of(dt)).itemsize * cvn
                assert len(data) % size == 0
                cells = [data[i:i + size] for i in range(0, len(data), size)]
            v = [int(x) for x in valid] if (not schema.domain.has_dim(nm) and obj.isnullable) else None
            if v is not None:
                assert len(v) == len(cells), nm
            out[nm] = (cells, v)
        ns = {len(c) for c, _ in out.values()}
        assert len(ns) == 1, ns
        return out


def decode_coord(raw, dt):
    if dt in ("STRING_ASCII", "STRING_UTF8", "CHAR"):
        return raw
    return np.frombuffer(raw, np_of(dt))[0].item()


def hilbert_value(coords, dims_meta):
    """TileDB's Hilbert value of a cell (tiledb/sm/misc/hilbert.h, John Skilling's
    transpose; each coordinate first mapped as Dimension::map_to_uint64 does:
    numbers by (c - low) / (high - low) * (2^bits - 1) in doubles, strings by their
    first 8 bytes, as signed chars, shifted down to `bits`)."""
    n = len(dims_meta)
    bits = 63 // n
    top = (1 << bits) - 1
    mask = (1 << 64) - 1
    x = []
    for c, d in zip(coords, dims_meta):
        if d["domain"] is None:
            b = c.encode() if isinstance(c, str) else bytes(c)
            v = 0
            for i in range(8):
                v = (v << 8) & mask
                if i < len(b):
                    v |= (b[i] - 256 if b[i] > 127 else b[i]) & mask
            x.append(v >> (64 - bits))
        else:
            lo, hi = (float(v) for v in d["domain"])
            x.append(int((float(c) - lo) / (hi - lo) * float(top)))
    # axes_to_transpose
    q = 1 << (bits - 1)
    while q > 1:
        p = q - 1
        if x[0] & q:
            x[0] ^= p
        for i in range(1, n):
            if x[i] & q:
                x[0] ^= p
            else:
                t = (x[0] ^ x[i]) & p
                x[0] ^= t
                x[i] ^= t
        q >>= 1
    for i in range(1, n):
        x[i] ^= x[i - 1]
    t = x[n - 1]
    i = 1
    while i < bits:
        x[n - 1] ^= x[n - 1] >> i
        i <<= 1
    t ^= x[n - 1]
    for i in range(n - 2, -1, -1):
        x[i] ^= t
    h, hbit = 0, 1
    for j in range(bits):
        for i in range(n - 1, -1, -1):
            if x[i] & (1 << j):
                h |= hbit
            hbit <<= 1
    return h


def global_key(coords, dims_meta, tile_order, cell_order):
    """Global-order sort key for one cell (only used to merge per-timestamp
    reads of a consolidated fragment; the result is checked against the raw
    coordinate files). The Hilbert order has no tiles: the Hilbert value, then
    the coordinates in row-major order."""
    if cell_order == "hilbert":
        return ((hilbert_value(coords, dims_meta),), tuple(coords))
    tiles = []
    for c, d in zip(coords, dims_meta):
        if d["domain"] is None:
            tiles.append(0)
        else:
            tiles.append(math.floor((c - d["domain"][0]) / d["tile_extent"]))
    cell = list(coords)
    if tile_order == "col-major":
        tiles = tiles[::-1]
    if cell_order == "col-major":
        cell = cell[::-1]
    return (tuple(tiles), tuple(cell))


# ---------------------------------------------------------------------------
# description of one array


def frag_parts(name):
    m = re.match(r"^__(\d+)_(\d+)_([0-9a-f]{32})_(\d+)$", name)
    assert m, name
    return int(m.group(1)), int(m.group(2))


def eval_cond(cond, values):
    """Tiny evaluator for the delete conditions used here: 'a < 5' style."""
    m = re.match(r"^\s*(\w+)\s*(<|<=|>|>=|==|!=)\s*(-?[\d.]+)\s*$", cond)
    assert m, cond
    v = values[m.group(1)]
    if v is None:
        return False
    x = float(m.group(3))
    return {"<": v < x, "<=": v <= x, ">": v > x, ">=": v >= x, "==": v == x, "!=": v != x}[m.group(2)]


def describe(uri, name, meta):
    enc = meta.get("encryption_key")
    ctx = ctx_for(enc)
    schema = tiledb.ArraySchema.load(uri, ctx=ctx)
    sparse = schema.sparse
    dom = schema.domain
    dims = [dom.dim(i) for i in range(dom.ndim)]
    attrs = [schema.attr(i) for i in range(schema.nattr)]
    dims_meta = [dim_desc(d) for d in dims]
    dim_fields = [field_desc(d, "dimension", schema) for d in dims]
    attr_fields = [field_desc(a, "attribute", schema) for a in attrs]
    sf = meta["schema_filters"]
    coords_names = fl_names(schema.coords_filters)
    offsets_empty = len(schema.offsets_filters) == 0
    validity_empty = len(schema.validity_filters) == 0
    coords_empty = len(schema.coords_filters) == 0
    for key, fl in (("offsets", schema.offsets_filters), ("validity", schema.validity_filters),
                    ("coords", schema.coords_filters)):
        if sf[key] is not None:
            assert sf[key] == fl_desc(fl), (name, key, sf[key], fl_desc(fl))

    version_of = tiledb.libtiledb.version()
    doc = {
        "array": name,
        "array_type": "sparse" if sparse else "dense",
        "format_version": None,
        "tiledb_py": tiledb.__version__,
        "libtiledb": "%d.%d.%d" % version_of,
        "cell_order": schema.cell_order,
        "tile_order": schema.tile_order,
        "capacity": int(schema.capacity) if sparse else None,
        "allows_duplicates": bool(schema.allows_duplicates) if sparse else False,
        "encryption": None if enc is None else {"type": "AES_256_GCM", "key": enc},
        "schema_filters": sf,
        "dimensions": dims_meta,
        "attributes": attr_fields,
        "fragments": [],
        "fragments_on_disk": [],
        "schema_files": sorted(
            "__schema/" + f for f in os.listdir(os.path.join(uri, "__schema"))
            if os.path.isfile(os.path.join(uri, "__schema", f))),
        "empty_var_cell_stored_bytes": [],
        "deletes": meta.get("deletes", []),
        "operations": meta.get("operations", []),
        "notes": meta.get("notes", ""),
    }

    fdir_root = os.path.join(uri, "__fragments")
    on_disk = sorted(os.listdir(fdir_root), key=lambda n: (frag_parts(n), n))
    for fn in on_disk:
        doc["fragments_on_disk"].append({
            "name": fn, "timestamp_range": list(frag_parts(fn)),
            "fragment_dir": "__fragments/" + fn,
            "commit_file": ("__commits/%s.wrt" % fn
                            if os.path.exists(os.path.join(uri, "__commits", fn + ".wrt")) else None),
        })

    fis = tiledb.FragmentInfoList(uri, ctx=ctx)
    finfos = sorted(fis, key=lambda f: tuple(f.timestamp_range))
    ranges = [tuple(f.timestamp_range) for f in finfos]
    assert len(set(ranges)) == len(ranges), "two live fragments share a timestamp range"
    versions = set()
    raw_checks = 0
    for fi in finfos:
        fname = os.path.basename(fi.uri.rstrip("/"))
        fdir = os.path.join(fdir_root, fname)
        files = sorted(os.listdir(fdir))
        t1, t2 = fi.timestamp_range
        assert (t1, t2) == frag_parts(fname)
        with open(os.path.join(fdir, "__fragment_metadata.tdb"), "rb") as fh:
            (fver,) = struct.unpack("<I", fh.read(4))
        assert fver == fi.version, (fver, fi.version)
        versions.add(fver)
        ned = []
        for d, r in zip(dims, fi.nonempty_domain):
            lo, hi = r
            if d.isvar:
                lo = lo.decode() if isinstance(lo, bytes) else lo
                hi = hi.decode() if isinstance(hi, bytes) else hi
                ned.append([lo, hi])
            else:
                conv = float if d._tiledb_dtype.name.startswith("FLOAT") else int
                ned.append([conv(lo), conv(hi)])
        has_t = "t.tdb" in files
        has_dm = "dt.tdb" in files
        attr_names = [a.name for a in attrs]
        dim_names = [d.name for d in dims]

        timestamps = None
        if sparse and has_t:
            # one read per timestamp, merged in global order, newest first
            cells = []
            for t in range(t1, t2 + 1):
                r = tiledb_read(uri, ctx, (t, t), attr_names, dim_names)
                n = len(r[dim_names[0]][0])
                for i in range(n):
                    rec = {nm: (r[nm][0][i], None if r[nm][1] is None else r[nm][1][i])
                           for nm in r}
                    coords = [decode_coord(rec[d.name][0], d._tiledb_dtype.name) for d in dims]
                    cells.append((global_key(coords, dims_meta, schema.tile_order,
                                             schema.cell_order), -t, t, rec))
            cells.sort(key=lambda c: (c[0], c[1]))
            merged = {nm: ([c[3][nm][0] for c in cells],
                           None if cells and cells[0][3][nm][1] is None else [c[3][nm][1] for c in cells])
                      for nm in dim_names + attr_names}
            if not cells:
                merged = {nm: ([], None) for nm in dim_names + attr_names}
            timestamps = [c[2] for c in cells]
            read = merged
            # cross-check with one deduplicating read of the whole range
            whole = tiledb_read(uri, ctx, (t1, t2), attr_names, dim_names)
            seen = set()
            expect_whole = []
            for i, c in enumerate(cells):
                key = tuple(c[3][d][0] for d in dim_names)
                if key in seen:
                    continue
                seen.add(key)
                vals = {a.name: decode_cell_for_cond(c[3][a.name], a) for a in attrs}
                deleted = any(dl["timestamp"] > c[2] and dl["timestamp"] <= t2
                              and eval_cond(dl["condition"], vals)
                              for dl in meta.get("deletes", []))
                if not deleted:
                    expect_whole.append(i)
            for nm in dim_names + attr_names:
                assert whole[nm][0] == [read[nm][0][i] for i in expect_whole], (name, nm)
        elif sparse:
            read = tiledb_read(uri, ctx, (t1, t2), attr_names, dim_names)
        else:
            read = tiledb_read(uri, ctx, (t1, t2), attr_names, dim_names, subarray=ned)
        cell_num = len(read[dim_names[0]][0])
        assert cell_num == fi.cell_num, (name, fname, cell_num, fi.cell_num)

        # tile cell counts
        if sparse:
            cap = int(schema.capacity)
            tcc = [cap] * (cell_num // cap) + ([cell_num % cap] if cell_num % cap else [])
        else:
            per = 1
            for d, r in zip(dims, ned):
                ext = int(d.tile)
                assert (r[0] - int(d.domain[0])) % ext == 0 and (r[1] - r[0] + 1) % ext == 0, \
                    "dense write not tile aligned: %s %s" % (name, fname)
                per *= ext
            assert cell_num % per == 0
            tcc = [per] * (cell_num // per)

        frag = {
            "fragment": fname,
            "timestamp_range": [t1, t2],
            "type": "sparse" if sparse else "dense",
            "fragment_dir": "__fragments/" + fname,
            "fragment_format_version": fver,
            "commit_file": ("__commits/%s.wrt" % fname
                            if os.path.exists(os.path.join(uri, "__commits", fname + ".wrt")) else None),
            "files": files,
            "non_empty_domain": ned,
            "cell_num": cell_num,
            "tile_cell_counts": tcc,
        }
        if not sparse:
            coords = []
            in_dom = []
            for i in range(cell_num):
                c = [decode_coord(read[d.name][0][i], d._tiledb_dtype.name) for d in dims]
                coords.append(c)
                in_dom.append(int(all(int(d.domain[0]) <= x <= int(d.domain[1])
                                      for d, x in zip(dims, c))))
            frag["storage_coords"] = coords
            frag["in_domain"] = in_dom

        fields = []
        for i, (d, fd) in enumerate(zip(dims, dim_fields)):
            f = dict(fd)
            if not sparse:
                f["stored"] = False
                fields.append(f)
                continue
            f["stored"] = True
            fields.append(fill_field(f, read[d.name], cell_num,
                                     {"data": "d%d.tdb" % i,
                                      **({"var": "d%d_var.tdb" % i} if d.isvar else {})}))
        for i, (a, fd) in enumerate(zip(attrs, attr_fields)):
            f = dict(fd)
            f["stored"] = True
            fl = {"data": "a%d.tdb" % i}
            if a.isvar:
                fl["var"] = "a%d_var.tdb" % i
            if a.isnullable:
                fl["validity"] = "a%d_validity.tdb" % i
            fields.append(fill_field(f, read[a.name], cell_num, fl))
        # t / dt / dci use the coords filter list
        special_filters = "default(coords)" if sf["coords"] is None else coords_names
        if has_t:
            assert timestamps is not None, "t.tdb in a dense fragment is not handled"
            f = special_field("__timestamps", special_filters, timestamps, "t.tdb")
            fields.append(f)
        if has_dm:
            dts, dcis = delete_meta_expected(read, attrs, timestamps, meta.get("deletes", []), t2)
            dfl = special_filters
            fields.append(special_field("__delete_timestamps", dfl, dts, "dt.tdb"))
            fields.append(special_field("__delete_condition_index", dfl, dcis, "dci.tdb"))
        frag["fields"] = fields
        for f in fields:
            for v in f.get("files", {}).values():
                assert v is None or v in files, (name, fname, v, files)
        for fn in files:
            if fn.endswith(".tdb") and fn != "__fragment_metadata.tdb":
                assert any(fn in f.get("files", {}).values() for f in fields), (name, fn)

        for an, min_chunks in meta.get("multichunk", {}).items():
            if fi is finfos[0]:
                i = [a.name for a in attrs].index(an)
                fn = "a%d_var.tdb" % i if attrs[i].isvar else "a%d.tdb" % i
                n = max(len(t) for t in parse_tiles(os.path.join(fdir, fn)))
                assert n >= min_chunks, (name, fn, n)

        # ---- verification against the raw files
        if enc is None:
            raw_checks += verify_raw(fdir, frag, schema, offsets_empty, validity_empty, coords_empty)
        doc["fragments"].append(frag)

    assert len(versions) == 1
    doc["format_version"] = versions.pop()
    return doc, raw_checks


def decode_cell_for_cond(cell, attr):
    raw, valid = cell
    if valid == 0:
        return None
    if attr.isvar:
        return raw
    return np.frombuffer(raw, np_of(attr._tiledb_dtype.name))[0].item()


def delete_meta_expected(read, attrs, timestamps, deletes, t2):
    """Expected dt / dci per cell from the delete conditions (processed
    conditions are the delete commits up to the fragment's end timestamp,
    sorted by timestamp); checked against the raw files in verify_raw."""
    processed = sorted([d for d in deletes if d["timestamp"] <= t2], key=lambda d: d["timestamp"])
    dts, dcis = [], []
    for i, t in enumerate(timestamps):
        vals = {a.name: decode_cell_for_cond((read[a.name][0][i],
                                              None if read[a.name][1] is None else read[a.name][1][i]), a)
                for a in attrs}
        hit = None
        for k, d in enumerate(processed):
            if d["timestamp"] > t and eval_cond(d["condition"], vals):
                hit = (d["timestamp"], k)
                break
        dts.append(U64_MAX if hit is None else hit[0])
        dcis.append(U64_MAX if hit is None else hit[1])
    return dts, dcis


def special_field(name, filters, values, file):
    return {"name": name, "role": "special", "datatype": "UINT64", "filters": filters,
            "cell_val_num": 1, "nullable": False, "stored": True,
            "cell_count": len(values), "values": [int(v) for v in values],
            "files": {"data": file},
            "_raw": [struct.pack("<Q", int(v)) for v in values]}  # checked in verify_raw


def fill_field(f, rd, cell_num, files):
    cells, valid = rd
    assert len(cells) == cell_num
    dt, cvn = f["datatype"], f["cell_val_num"]
    vals = []
    for i, raw in enumerate(cells):
        if valid is not None and valid[i] == 0:
            vals.append(None)
        else:
            vals.append(enc_cell(raw, dt, cvn))
    f["cell_count"] = cell_num
    f["values"] = vals
    if cvn == "var":
        offs, pos = [], 0
        for i, raw in enumerate(cells):
            if valid is not None and valid[i] == 0:
                assert len(raw) == 0
            offs.append(pos)
            pos += len(raw)
        f["offsets"] = offs
        f["var_bytes"] = pos
    if valid is not None:
        f["validity"] = list(valid)
    f["files"] = files
    f["_raw"] = cells  # removed before writing the JSON
    return f


def verify_raw(fdir, frag, schema, offsets_empty, validity_empty, coords_empty):
    checks = 0
    tcc = frag["tile_cell_counts"]
    for f in frag["fields"]:
        if not f["stored"]:
            continue
        cvn, dt = f["cell_val_num"], f["datatype"]
        files = f["files"]
        fl = f["filters"]
        empty = fl == [] or (fl == "default(coords)" and coords_empty)
        data_path = os.path.join(fdir, files["data"])
        tiles = parse_tiles(data_path)
        assert len(tiles) == len(tcc), (data_path, len(tiles), tcc)
        # unfiltered size of every tile (chunk headers), fixed-size fields and
        # var offsets tiles (except the embedded-offsets string modes)
        if cvn != "var":
            size = np.dtype(np_of(dt)).itemsize * cvn
            for t, n in zip(tiles, tcc):
                assert sum(c[0] for c in t) == n * size, (data_path, n, size)
        elif not (fl != "default(coords)" and any(x in ("RleFilter", "DictionaryFilter") for x in fl)):
            for t, n in zip(tiles, tcc):
                assert sum(c[0] for c in t) == n * 8, (data_path, n)
        raw_cells = f["_raw"]
        validity = f.get("validity")
        if f.get("nullable"):
            vt = parse_tiles(os.path.join(fdir, files["validity"]))
            assert len(vt) == len(tcc)
            for t, n in zip(vt, tcc):
                assert sum(c[0] for c in t) == n
            if validity_empty:
                vb = b"".join(raw_tiles(os.path.join(fdir, files["validity"])))
                assert list(vb) == validity, (fdir, f["name"])
                checks += 1
        if not empty:
            continue
        if cvn != "var":
            got = raw_tiles(data_path)
            size = np.dtype(np_of(dt)).itemsize * cvn
            allb = b"".join(got)
            assert len(allb) == len(raw_cells) * size
            for i, raw in enumerate(raw_cells):
                if validity is not None and validity[i] == 0:
                    continue
                assert allb[i * size:(i + 1) * size] == raw, (data_path, i)
            checks += 1
        else:
            vtiles = raw_tiles(os.path.join(fdir, files["var"]))
            varb = b"".join(vtiles)
            assert len(varb) == f["var_bytes"], (fdir, f["name"], len(varb), f["var_bytes"])
            assert varb == b"".join(raw_cells), (fdir, f["name"])
            if offsets_empty:
                otiles = raw_tiles(data_path)
                offs = []
                base = 0
                for ot, vt_ in zip(otiles, vtiles):
                    offs += [base + x for x in np.frombuffer(ot, "<u8").tolist()]
                    base += len(vt_)
                assert offs == f["offsets"], (fdir, f["name"], offs, f["offsets"])
            checks += 1
    return checks


# ---------------------------------------------------------------------------
# array definitions

RNG = np.random.default_rng(20240611)
WORDS = ["alpha", "beta", "gamma", "delta", "", "épsilon", "zeta", "η-eta", "theta", "iota",
         "kappa", "lambda", "mu", "nu", "", "omicron", "pi", "rho", "sigma", "tau"]
ASCII_WORDS = ["red", "green", "blue", "red", "", "cyan", "green", "red", "magenta", "blue"]


def mk_schema(meta, offsets=None, validity=None, coords=None, **kw):
    """Create a schema, recording which of the schema-wide filter lists were
    set explicitly (None = library default)."""
    sf = {}
    for key, val in (("offsets", offsets), ("validity", validity), ("coords", coords)):
        if val is None:
            sf[key] = None
        else:
            kw[key + "_filters"] = tiledb.FilterList(val)
            sf[key] = fl_desc(kw[key + "_filters"])
    meta["schema_filters"] = sf
    return tiledb.ArraySchema(**kw)


# Writers cut tiles into chunks of at most 64 KiB (the chunk size set on a
# filter list is recorded in the schema but not used by libtiledb 2.30).
# Var data is cut at cell boundaries: with these two cells the first chunk
# (32769 bytes, more than half full) cannot take the second cell (the result
# would exceed 1.5 x 64 KiB), so tile 0 of big_zstd has two chunks.
BIG_CELLS = {0: 32769, 1: 65536}


def big_text(n):
    words = []
    i = 0
    while sum(len(w) for w in words) < n:
        words.append("lorem ipsum dolor sit amet %05d; " % i)
        i += 1
    return "".join(words)[:n].encode()


def gen_dense_basic(uri):
    meta = {"notes": "", "multichunk": {"big_zstd": 2}}
    dom = tiledb.Domain(tiledb.Dim("x", domain=(0, 63), tile=16, dtype=np.int32))
    attrs = [
        tiledb.Attr("i32", dtype=np.int32),
        tiledb.Attr("f64_zstd", dtype=np.float64, filters=tiledb.FilterList([tiledb.ZstdFilter(level=3)], chunksize=48)),
        tiledb.Attr("i64_lz4", dtype=np.int64, filters=tiledb.FilterList([tiledb.LZ4Filter()], chunksize=64)),
        tiledb.Attr("u16_gzip", dtype=np.uint16, filters=[tiledb.GzipFilter()]),
        tiledb.Attr("i32x3", dtype=np.dtype("i4,i4,i4")),
        tiledb.Attr("chr4", dtype="S4"),
        tiledb.Attr("f32", dtype=np.float32, filters=tiledb.FilterList([], chunksize=40)),
        tiledb.Attr("big_zstd", dtype="ascii", var=True, filters=[tiledb.ZstdFilter()]),
    ]
    schema = mk_schema(meta, offsets=[], validity=[], domain=dom, attrs=attrs, sparse=False)
    tiledb.Array.create(uri, schema)

    def data(lo, hi, seed):
        n = hi - lo + 1
        x = np.arange(lo, hi + 1)
        f32 = (x * 0.25 - 3).astype(np.float32)
        f32[x % 13 == 0] = np.nan
        f32[x % 17 == 0] = np.inf
        f32[x % 19 == 0] = -np.inf
        f32[x % 23 == 0] = np.float32(1.0 / 3.0)
        return {
            "i32": (x * 1000 - 20000 + seed).astype(np.int32),
            "f64_zstd": np.round(np.sin(x / 5.0) * 100 + seed, 3),
            "i64_lz4": (x.astype(np.int64) * 123456789 - 2**40 + seed),
            "u16_gzip": ((x * 37 + seed) % 65536).astype(np.uint16),
            "i32x3": np.array([(int(v), -int(v), int(v) * seed) for v in x], dtype="i4,i4,i4"),
            "chr4": np.array([bytes([65 + (v % 26), 97 + (v % 26), 48 + (v % 10), 0 if v % 4 == 0 else 33])
                              for v in x], dtype="S4"),
            "f32": f32,
            "big_zstd": np.array([big_text(BIG_CELLS[v]) if (seed == 1 and v in BIG_CELLS)
                                  else ("c%d-%d" % (v, seed)) * (v % 3) for v in x], dtype=object),
        }
    with tiledb.open(uri, "w", timestamp=1) as A:
        A[0:64] = data(0, 63, 1)
    with tiledb.open(uri, "w", timestamp=2) as A:
        A[16:48] = data(16, 47, 2)
    meta["notes"] = ("1-D dense, 4 tiles of 16 cells. Fragment 1 writes the whole domain, fragment 2 "
                     "tiles 1-2. f64_zstd has filter chunk size 48, i64_lz4 64 and f32 (no filters) 40, "
                     "so their tiles have several chunks. i32x3 is INT32 with cell_val_num 3; chr4 is CHAR "
                     "with cell_val_num 4 (some cells end in a NUL byte). f32 holds NaN and +-Infinity. The filter "
                     "chunk sizes are stored in the schema but libtiledb 2.30 ignores them when writing "
                     "(it always uses 64 KiB chunks), so every tile of those attributes is a single chunk; "
                     "instead big_zstd (STRING_ASCII, Zstd) has cells of 32769 and 65536 bytes at x=0,1 of "
                     "fragment 1, so its var tile 0 there is written as 2 chunks (checked by the generator).")
    return meta


def gen_dense_2d(uri):
    meta = {}
    dom = tiledb.Domain(tiledb.Dim("r", domain=(1, 8), tile=4, dtype=np.int32),
                        tiledb.Dim("c", domain=(1, 12), tile=3, dtype=np.int32))
    attrs = [
        tiledb.Attr("plain", dtype=np.int32),
        tiledb.Attr("bs_dd_zstd", dtype=np.int32,
                    filters=[tiledb.ByteShuffleFilter(), tiledb.DoubleDeltaFilter(), tiledb.ZstdFilter()]),
        tiledb.Attr("pd_bwr_lz4", dtype=np.uint32,
                    filters=[tiledb.PositiveDeltaFilter(window=8), tiledb.BitWidthReductionFilter(window=8), tiledb.LZ4Filter()]),
        tiledb.Attr("f32_delta_zstd", dtype=np.float32,
                    filters=tiledb.FilterList([tiledb.ByteShuffleFilter(), tiledb.DeltaFilter(reinterp_dtype=np.int32), tiledb.ZstdFilter()], chunksize=16)),
        tiledb.Attr("md5_i16", dtype=np.int16, filters=[tiledb.ChecksumMD5Filter()]),
        tiledb.Attr("sha_gzip_f64", dtype=np.float64, filters=[tiledb.ChecksumSHA256Filter(), tiledb.GzipFilter()]),
    ]
    schema = mk_schema(meta, domain=dom, attrs=attrs, sparse=False,
                       tile_order="col-major", cell_order="row-major")
    tiledb.Array.create(uri, schema)

    def data(r0, r1, c0, c1, seed):
        rr, cc = np.meshgrid(np.arange(r0, r1 + 1), np.arange(c0, c1 + 1), indexing="ij")
        lin = (rr - 1) * 12 + (cc - 1)
        return {
            "plain": (rr * 100 + cc + seed * 10000).astype(np.int32),
            "bs_dd_zstd": (lin * 7 + seed + (lin % 5) * 3).astype(np.int32),
            "pd_bwr_lz4": (lin * 3 + 1000 * seed).astype(np.uint32),
            "f32_delta_zstd": (lin * 0.5 - 10 + seed).astype(np.float32),
            "md5_i16": (lin * 11 - 500 + seed).astype(np.int16),
            "sha_gzip_f64": np.round(np.cos(lin / 7.0) * 1000 + seed, 4),
        }
    with tiledb.open(uri, "w", timestamp=1) as A:
        A[1:9, 1:13] = data(1, 8, 1, 12, 1)
    with tiledb.open(uri, "w", timestamp=2) as A:
        A[5:9, 4:10] = data(5, 8, 4, 9, 2)
    meta["notes"] = ("2-D dense, tile extents 4x3 (12 cells per tile), tile order col-major, cell order "
                     "row-major, 8 tiles. Fragment 2 covers tiles (r 5-8, c 4-9). Chained pipelines; "
                     "pd_bwr_lz4 is [PositiveDelta, BitWidthReduction, LZ4] (window 8 bytes each; "
                     "[BitWidthReduction, PositiveDelta, ...] fails to write in libtiledb 2.30: 'Positive "
                     "delta filter error: delta is not positive', as the bit-packed output is not "
                     "monotonic); f32_delta_zstd "
                     "uses DeltaFilter(reinterp_dtype=INT32) and filter chunk size 16. md5_i16 / sha_gzip_f64 "
                     "carry checksums. Schema offsets/validity/coords filter lists are the library defaults.")
    return meta


def gen_sparse_var_nullable(uri):
    meta = {}
    dom = tiledb.Domain(tiledb.Dim("x", domain=(0, 999), tile=100, dtype=np.int64),
                        tiledb.Dim("y", domain=(0.0, 100.0), tile=50.0, dtype=np.float64))
    attrs = [
        tiledb.Attr("s_utf8_zstd", dtype=str, filters=[tiledb.ZstdFilter()]),
        tiledb.Attr("s_plain", dtype=str),
        tiledb.Attr("n_i32", dtype=np.int32, nullable=True),
        tiledb.Attr("ns_rle", dtype=str, nullable=True, filters=[tiledb.RleFilter()]),
        tiledb.Attr("asc_dict", dtype="ascii", var=True, filters=[tiledb.DictionaryFilter()]),
        tiledb.Attr("f32_bitshuf_zstd", dtype=np.float32, filters=[tiledb.BitShuffleFilter(), tiledb.ZstdFilter()]),
        tiledb.Attr("f64_xor", dtype=np.float64, filters=[tiledb.XORFilter()]),
        tiledb.Attr("f64_floatscale", dtype=np.float64,
                    filters=[tiledb.FloatScaleFilter(factor=0.5, offset=10.0, bytewidth=4)]),
        tiledb.Attr("ns_plain", dtype=str, nullable=True),
    ]
    schema = mk_schema(meta, offsets=[], validity=[], coords=[], domain=dom, attrs=attrs,
                       sparse=True, capacity=8)
    tiledb.Array.create(uri, schema)

    def write(ts, xs, ys, seed):
        n = len(xs)
        i = np.arange(n) + seed
        with tiledb.open(uri, "w", timestamp=ts) as A:
            A[np.array(xs, dtype=np.int64), np.array(ys, dtype=np.float64)] = {
                "s_utf8_zstd": np.array([WORDS[k % len(WORDS)] + ("" if k % 3 else str(k)) for k in i], dtype=object),
                "s_plain": np.array([WORDS[(k * 7) % len(WORDS)] for k in i], dtype=object),
                "n_i32": np.array([None if k % 4 == 1 else int(k * 37 - 400) for k in i], dtype=object),
                "ns_rle": np.array([None if k % 5 == 2 else ("aaa" if k % 3 else "") + "b" * (k % 4) for k in i], dtype=object),
                "asc_dict": np.array([ASCII_WORDS[k % len(ASCII_WORDS)].encode() for k in i], dtype=object),
                "f32_bitshuf_zstd": (i * 1.25 - 7).astype(np.float32),
                "f64_xor": np.sin(i.astype(np.float64)) * 1e3,
                "f64_floatscale": (i % 40) * 0.5 + 10.0,
                "ns_plain": np.array([None if k % 6 == 3 else WORDS[(k * 3) % len(WORDS)] for k in i], dtype=object),
            }
    xs = [int(v) for v in RNG.choice(1000, 37, replace=False)]
    ys = [float(np.round(v, 2)) for v in RNG.uniform(0, 100, 37)]
    write(1, xs, ys, 0)
    write(2, [5, 150, 999], [99.5, 0.0, 100.0], 100)
    meta["notes"] = ("2-D sparse (INT64 x tile 100, FLOAT64 y tile 50), capacity 8. Schema offsets, validity "
                     "and coords filter lists are explicitly empty. ns_rle (RLE on a nullable var string) and "
                     "asc_dict (Dictionary on STRING_ASCII) use TileDB's string-specific filter modes. "
                     "f64_floatscale values are multiples of 0.5 so FloatScale(factor 0.5, offset 10, "
                     "bytewidth 4) is lossless. Empty strings and nulls included.")
    return meta


def gen_sparse_string_dim(uri):
    meta = {}
    dom = tiledb.Domain(tiledb.Dim("key", domain=(None, None), tile=None, dtype="ascii"),
                        tiledb.Dim("n", domain=(0, 99), tile=10, dtype=np.int32))
    attrs = [tiledb.Attr("v", dtype=np.int32),
             tiledb.Attr("w", dtype=np.float64, filters=[tiledb.ZstdFilter()])]
    schema = mk_schema(meta, offsets=[], coords=[], domain=dom, attrs=attrs, sparse=True,
                       capacity=4, allows_duplicates=True)
    tiledb.Array.create(uri, schema)
    keys1 = ["apple", "banana", "apple", "cherry", "a", "zebra", "apple", "banana", "kiwi", "date",
             "apple", "fig", "grape", "banana", ""]
    ns1 = [3, 7, 3, 1, 0, 99, 15, 7, 42, 5, 3, 8, 61, 7, 0]
    with tiledb.open(uri, "w", timestamp=1) as A:
        A[np.array([k.encode() for k in keys1], dtype=object), np.array(ns1, dtype=np.int32)] = {
            "v": np.arange(len(keys1), dtype=np.int32) * 10,
            "w": np.arange(len(keys1), dtype=np.float64) / 4.0}
    keys2 = ["mango", "apple", "mango", "aa"]
    ns2 = [1, 3, 1, 50]
    with tiledb.open(uri, "w", timestamp=2) as A:
        A[np.array([k.encode() for k in keys2], dtype=object), np.array(ns2, dtype=np.int32)] = {
            "v": np.arange(len(keys2), dtype=np.int32) + 1000,
            "w": -np.arange(len(keys2), dtype=np.float64)}
    meta["notes"] = ("var STRING_ASCII dimension 'key' (no tiles) + INT32 dimension 'n' (tile 10), "
                     "allows_duplicates, capacity 4. Fragment 1 holds ('apple',3) three times and "
                     "('banana',7) three times, and an empty-string key; fragment 2 holds ('mango',1) twice. "
                     "Offsets and coords filter lists are explicitly empty.")
    return meta


def gen_consolidated(uri):
    meta = {}
    dom = tiledb.Domain(tiledb.Dim("x", domain=(0, 99), tile=10, dtype=np.int32))
    attrs = [tiledb.Attr("a", dtype=np.int32),
             tiledb.Attr("s", dtype="ascii", var=True, filters=[tiledb.GzipFilter()])]
    schema = mk_schema(meta, offsets=[], coords=[], domain=dom, attrs=attrs, sparse=True, capacity=4)
    tiledb.Array.create(uri, schema)

    def write(ts, xs):
        with tiledb.open(uri, "w", timestamp=ts) as A:
            A[np.array(xs, dtype=np.int32)] = {
                "a": np.array([x * 10 + ts for x in xs], dtype=np.int32),
                "s": np.array([("t%d-x%d" % (ts, x)).encode() for x in xs], dtype=object)}
    write(1, [0, 4, 8, 12, 16, 20, 24])
    write(2, [2, 12, 22, 32, 42])          # 12 overwrites fragment 1
    write(3, [1, 12, 33, 50, 51])          # 12 again
    cfg = {"sm.consolidation.with_timestamps": "true"}
    tiledb.consolidate(uri, config=tiledb.Config(cfg))
    tiledb.vacuum(uri)
    write(4, [90, 91])
    write(5, [95])
    cfg2 = {"sm.consolidation.mode": "fragment_meta"}
    tiledb.consolidate(uri, config=tiledb.Config(cfg2))
    meta["operations"] = [{"op": "consolidate", "config": cfg, "vacuumed": True, "keeps_timestamps": True},
                          {"op": "consolidate", "config": cfg2}]
    meta["notes"] = ("fragments written at t=1,2,3 (x=12 written three times) were consolidated (with "
                     "timestamps) and vacuumed into __1_3_*, which holds every version of x=12, newest "
                     "first, and __timestamps (t.tdb); then fragments at t=4 and t=5 were written and the "
                     "fragment metadata of all live fragments consolidated into __fragment_meta/*.meta "
                     "(not vacuumed). Values of the consolidated fragment: one TileDB read per timestamp, "
                     "merged in global order newest first, checked against the raw d0/a0/t files.")
    return meta


def gen_timestamps_deletes(uri):
    meta = {}
    dom = tiledb.Domain(tiledb.Dim("x", domain=(0, 99), tile=10, dtype=np.int32))
    attrs = [tiledb.Attr("a", dtype=np.int32),
             tiledb.Attr("b", dtype=np.float64, filters=[tiledb.ZstdFilter()])]
    schema = mk_schema(meta, coords=[], domain=dom, attrs=attrs, sparse=True, capacity=4,
                       allows_duplicates=False)
    tiledb.Array.create(uri, schema)

    def write(ts, xs, avals):
        with tiledb.open(uri, "w", timestamp=ts) as A:
            A[np.array(xs, dtype=np.int32)] = {"a": np.array(avals, dtype=np.int32),
                                               "b": np.array(avals, dtype=np.float64) / 8.0 + ts}
    write(1, [1, 6, 10, 12, 18, 22, 36], [1, 11, 7, 3, 12, 4, 8])
    write(2, [12, 22, 29, 36, 40], [9, 2, 10, 6, 4])
    deletes = [{"timestamp": 3, "condition": "a < 5"}]
    with tiledb.open(uri, "d", timestamp=3) as A:
        A.query(cond="a < 5").submit()
    write(4, [1, 60, 61, 40], [2, 6, 4, 20])
    cfg = {"sm.consolidation.with_timestamps": "true", "sm.consolidation.purge_deleted_cells": "false"}
    tiledb.consolidate(uri, config=tiledb.Config(cfg))
    tiledb.vacuum(uri)
    write(5, [3, 70], [1, 50])
    with tiledb.open(uri, "d", timestamp=6) as A:
        A.query(cond="a > 40").submit()
    deletes.append({"timestamp": 6, "condition": "a > 40"})
    meta["deletes"] = deletes
    meta["operations"] = [{"op": "consolidate", "config": cfg, "vacuumed": True, "keeps_timestamps": True}]
    meta["notes"] = ("writes at t=1,2,4 (x=1,12,22,36,40 overwritten), delete 'a < 5' at t=3, then "
                     "consolidation with timestamps and without purging deleted cells, vacuumed: "
                     "__1_4_* holds every version (newest first), __timestamps (t.tdb) and delete metadata "
                     "__delete_timestamps (dt.tdb) / __delete_condition_index (dci.tdb): 3 / 0 for cells "
                     "written before t=3 with a < 5, 2^64-1 otherwise. Then a write at t=5 and a second "
                     "delete 'a > 40' at t=6 that stays a .del commit (not applied to any fragment's "
                     "files). Values: one TileDB read per timestamp merged in global order; dt/dci come "
                     "from the raw files (TileDB cannot return them; coords filter list empty) and are "
                     "asserted equal to the delete condition applied to the TileDB-read values.")
    return meta


def gen_encrypted(uri):
    meta = {"encryption_key": ENC_KEY}
    ctx = ctx_for(ENC_KEY)
    dom = tiledb.Domain(tiledb.Dim("r", domain=(1, 4), tile=2, dtype=np.int32, ctx=ctx),
                        tiledb.Dim("c", domain=(1, 6), tile=3, dtype=np.int32, ctx=ctx), ctx=ctx)
    attrs = [tiledb.Attr("a", dtype=np.int32, ctx=ctx),
             tiledb.Attr("s", dtype=str, filters=tiledb.FilterList([tiledb.ZstdFilter()], ctx=ctx), ctx=ctx)]
    schema = mk_schema(meta, domain=dom, attrs=attrs, sparse=False, ctx=ctx)
    tiledb.Array.create(uri, schema, ctx=ctx)
    with tiledb.open(uri, "w", timestamp=1, ctx=ctx) as A:
        rr, cc = np.meshgrid(np.arange(1, 5), np.arange(1, 7), indexing="ij")
        A[1:5, 1:7] = {"a": (rr * 10 + cc).astype(np.int32),
                       "s": np.array([["secret-%d-%d" % (r, c) if (r + c) % 5 else ""
                                       for c in range(1, 7)] for r in range(1, 5)], dtype=object)}
    with tiledb.open(uri, "w", timestamp=2, ctx=ctx) as A:
        A[3:5, 4:7] = {"a": np.full((2, 3), -7, dtype=np.int32),
                       "s": np.array([["ñ%d" % (r * c) for c in range(4, 7)] for r in range(3, 5)], dtype=object)}
    meta["notes"] = ("2-D dense, encrypted with AES-256-GCM (whole array: schema, fragment metadata, "
                     "data files). Fragment 2 covers one tile (r 3-4, c 4-6). No raw checks (encrypted); "
                     "values read through TileDB with the key.")
    return meta


def gen_sample(uri):
    meta = {}
    dom = tiledb.Domain(tiledb.Dim("row", domain=(0, 7), tile=4, dtype=np.int32),
                        tiledb.Dim("col", domain=(0, 11), tile=4, dtype=np.int32))
    attrs = [tiledb.Attr("temperature", dtype=np.float64, filters=[tiledb.ZstdFilter()]),
             tiledb.Attr("station", dtype=np.int32),
             tiledb.Attr("name", dtype=str, filters=[tiledb.ZstdFilter()])]
    schema = mk_schema(meta, domain=dom, attrs=attrs, sparse=False)
    tiledb.Array.create(uri, schema)
    cities = ["Oslo", "Lima", "Pune", "Kyiv", "Baku", "Rome", "Nice", "Bern", "Riga", "Doha", "Lagos", "São Paulo"]
    rr, cc = np.meshgrid(np.arange(8), np.arange(12), indexing="ij")
    temp = np.round(15 + 10 * np.sin(rr / 2.0) - cc * 0.75, 1)
    with tiledb.open(uri, "w", timestamp=1) as A:
        A[0:8, 0:12] = {"temperature": temp, "station": (rr * 100 + cc).astype(np.int32),
                        "name": np.array([["%s-%d" % (cities[c], r) for c in range(12)] for r in range(8)],
                                         dtype=object)}
    with tiledb.open(uri, "w", timestamp=2) as A:
        A[0:4, 4:8] = {"temperature": temp[0:4, 4:8] + 0.5,
                       "station": (rr[0:4, 4:8] * 100 + cc[0:4, 4:8] + 5000).astype(np.int32),
                       "name": np.array([["%s-%d (revised)" % (cities[c], r) for c in range(4, 8)]
                                         for r in range(0, 4)], dtype=object)}
    meta["notes"] = ("friendly 'weather grid' for the README: 8x12 dense grid, tiles 4x4 (6 tiles). "
                     "Fragment 1 writes the whole grid at t=1, fragment 2 rewrites the tile rows 0-3, cols 4-7 "
                     "at t=2. Schema filter lists are the library defaults.")
    return meta


def gen_odd_names(uri):
    """Names a file system cannot show as they are: fragfs percent-encodes `/`, NUL,
    `%`, `.` and `..` and keeps everything else (spaces, unicode) as written."""
    meta = {}
    dom = tiledb.Domain(tiledb.Dim("row index", domain=(0, 7), tile=4, dtype=np.int32))
    attrs = [
        tiledb.Attr("with space", dtype=np.int32),
        tiledb.Attr("température °C", dtype=np.float64),
        tiledb.Attr("a/b", dtype=np.int64),
        tiledb.Attr("50%", dtype=np.uint8),
        tiledb.Attr("..", dtype=np.int16),
        tiledb.Attr("名前", dtype=str),
    ]
    schema = mk_schema(meta, domain=dom, attrs=attrs, sparse=False)
    tiledb.Array.create(uri, schema)
    x = np.arange(8)
    with tiledb.open(uri, "w", timestamp=1) as A:
        A[0:8] = {
            "with space": (x * 3).astype(np.int32),
            "température °C": x * 0.5 - 1.25,
            "a/b": x.astype(np.int64) * -7,
            "50%": (x * 30).astype(np.uint8),
            "..": (x - 4).astype(np.int16),
            "名前": np.array(["名前%d" % v if v % 2 else "x,\"y\"\n" for v in x], dtype=object),
        }
    meta["notes"] = ("1-D dense with a dimension and attributes named with spaces, unicode, '/', "
                     "'%' and '..'; string cells hold a comma, quotes and a newline.")
    return meta


def gen_checksums(uri):
    """Every file of every fragment under a checksum, so any altered byte of a data file
    must fail the read (the corruption suite relies on it)."""
    meta = {}
    dom = tiledb.Domain(tiledb.Dim("x", domain=(0, 999), tile=100, dtype=np.int64,
                                   filters=[tiledb.ChecksumSHA256Filter()]))
    attrs = [
        tiledb.Attr("sha_i64", dtype=np.int64, filters=[tiledb.ChecksumSHA256Filter()]),
        tiledb.Attr("md5_str", dtype=str, filters=[tiledb.ChecksumMD5Filter()]),
        tiledb.Attr("zstd_sha_f32", dtype=np.float32,
                    filters=[tiledb.ZstdFilter(), tiledb.ChecksumSHA256Filter()]),
        tiledb.Attr("md5_null_i32", dtype=np.int32, nullable=True, filters=[tiledb.ChecksumMD5Filter()]),
    ]
    schema = mk_schema(meta, offsets=[tiledb.ChecksumSHA256Filter()],
                       validity=[tiledb.ChecksumMD5Filter()],
                       domain=dom, attrs=attrs, sparse=True, capacity=8)
    tiledb.Array.create(uri, schema)

    def write(ts, xs, seed):
        i = np.arange(len(xs)) + seed
        with tiledb.open(uri, "w", timestamp=ts) as A:
            A[np.array(xs, dtype=np.int64)] = {
                "sha_i64": (i * 1000003 - 7).astype(np.int64),
                "md5_str": np.array([WORDS[k % len(WORDS)] * (k % 3) for k in i], dtype=object),
                "zstd_sha_f32": (i * 0.75 - 3).astype(np.float32),
                "md5_null_i32": np.array([None if k % 4 == 1 else int(k * 9 - 50) for k in i], dtype=object),
            }
    write(1, [int(v) for v in range(3, 1000, 47)], 0)
    write(2, [10, 500, 990], 100)
    meta["notes"] = ("1-D sparse (INT64 x, tile 100), capacity 8, every file of every fragment under a "
                     "checksum: sha_i64 CHECKSUM_SHA256, md5_str (var UTF-8) CHECKSUM_MD5, zstd_sha_f32 "
                     "[Zstd, CHECKSUM_SHA256] (the checksum covers the compressed bytes), md5_null_i32 "
                     "nullable CHECKSUM_MD5; offsets filters CHECKSUM_SHA256, validity filters "
                     "CHECKSUM_MD5, dimension x CHECKSUM_SHA256.")
    return meta


ARRAYS = [
    ("dense_basic", gen_dense_basic),
    ("dense_2d", gen_dense_2d),
    ("sparse_var_nullable", gen_sparse_var_nullable),
    ("sparse_string_dim", gen_sparse_string_dim),
    ("consolidated", gen_consolidated),
    ("timestamps_deletes", gen_timestamps_deletes),
    ("encrypted", gen_encrypted),
    ("sample", gen_sample),
    ("odd_names", gen_odd_names),
    ("checksums", gen_checksums),
]


README = """\
# TileDB fixture arrays

Small TileDB arrays for the tests, so they run on a fresh clone without the
shared corpus. Written by `scripts/make_fixtures.py` with tiledb-py {tiledb_py}
(libtiledb {libtiledb}, on-disk format version {format}), pinned in
`scripts/make_fixtures.sh`.

Each array `<name>/` has `<name>.expected.json` beside it, in exactly the format
of the shared corpus (`docs/corpus.md`, sections "`<array>.expected.json`"
and "How a reader should compare"): every live fragment with its fields, cell
values in storage (global) order, var offsets / var bytes, validity, the files
that hold them and the tile cell counts. Values come from TileDB reading each
fragment alone in global order; every field whose filter list is empty was
also checked byte for byte against the data files when the fixtures were made
({raw_checks} field checks). Each JSON's `notes` says what the array covers.

| array | type | fragments (cells) | covers |
|---|---|---|---|
{table}

Regenerate (needs PyPI; deletes and rewrites this folder; fragment UUIDs and
schema timestamps change on every run, contents do not):

    bash scripts/make_fixtures.sh

Empty folders (`__meta`, `__labels`, ...) are removed after writing, as git
would drop them anyway; TileDB opens the arrays without them.
"""

COVERS = {
    "dense_basic": "1-D dense; INT32/FLOAT64/INT64/UINT16/FLOAT32, 3xINT32 cells, CHAR[4], var ASCII; "
                   "Zstd/LZ4/Gzip; NaN/Inf; a var tile of 3 chunks; filter chunk sizes in the schema",
    "dense_2d": "2-D dense, col-major tiles / row-major cells; chained pipelines "
                "(ByteShuffle+DoubleDelta+Zstd, PositiveDelta+BitWidthReduction+LZ4, "
                "ByteShuffle+Delta+Zstd), MD5 and SHA256 checksums",
    "sparse_var_nullable": "2-D sparse (INT64, FLOAT64 dims), capacity 8; var UTF-8/ASCII, nullable fixed "
                           "and var, RLE and Dictionary string modes, BitShuffle, XOR, FloatScale; "
                           "empty strings, nulls",
    "sparse_string_dim": "var ASCII dimension + INT32 dimension, duplicates allowed",
    "consolidated": "3 fragments consolidated (with timestamps, several versions of one cell) and vacuumed, "
                    "2 later fragments, consolidated fragment metadata (`__fragment_meta/*.meta`)",
    "timestamps_deletes": "delete commits, consolidation keeping timestamps (t.tdb) and delete metadata "
                          "(dt.tdb, dci.tdb), a pending `.del`",
    "encrypted": "2-D dense encrypted with AES-256-GCM, key `{key}`",
    "sample": "friendly 8x12 'weather' grid (temperature, station, name) for the README quick start",
    "checksums": "1-D sparse, every file of every fragment under CHECKSUM_MD5 or CHECKSUM_SHA256 "
                 "(fixed, var, nullable, Zstd then SHA256; offsets and validity filter lists too)",
    "odd_names": "1-D dense; a dimension and attributes named with spaces, unicode, '/', '%' and '..'; "
                 "strings holding a comma, quotes and a newline",
}


def write_readme(out, docs, raw_checks):
    rows = []
    for d in docs:
        frs = ", ".join(str(f["cell_num"]) for f in d["fragments"])
        rows.append("| `%s` | %s | %d (%s) | %s |" % (d["array"], d["array_type"], len(d["fragments"]), frs,
                                                     COVERS[d["array"]].format(key=ENC_KEY)))
    d0 = docs[0]
    with open(os.path.join(out, "README.md"), "w") as fh:
        fh.write(README.format(tiledb_py=d0["tiledb_py"], libtiledb=d0["libtiledb"],
                               format=d0["format_version"], raw_checks=raw_checks,
                               table="\n".join(rows)))


def remove_empty_dirs(root):
    # git does not keep empty folders: remove them so the tree on disk is the
    # tree a fresh clone has (TileDB reads such arrays fine; verified below).
    for d, subdirs, files in os.walk(root, topdown=False):
        if d != root and not os.listdir(d):
            os.rmdir(d)


def strip_raw(doc):
    for fr in doc["fragments"]:
        for f in fr["fields"]:
            f.pop("_raw", None)
    return doc


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_fixtures.py OUTDIR")
    out = sys.argv[1]
    only = os.environ.get("FIXTURES_ONLY")
    # FIXTURES_ONLY=a,b regenerates just those arrays and leaves the others in place.
    if os.path.exists(out) and not only:
        shutil.rmtree(out)
    os.makedirs(out, exist_ok=True)
    for name in (only.split(",") if only else []):
        for stale in (os.path.join(out, name), os.path.join(out, name + ".expected.json")):
            if os.path.isdir(stale):
                shutil.rmtree(stale)
            elif os.path.exists(stale):
                os.remove(stale)
    total_checks = 0
    docs = []
    for name, gen in ARRAYS:
        if only and name not in only.split(","):
            continue
        uri = os.path.join(out, name)
        meta = gen(uri)
        remove_empty_dirs(uri)
        doc, checks = describe(uri, name, meta)
        total_checks += checks
        doc = strip_raw(doc)
        docs.append(doc)
        with open(os.path.join(out, name + ".expected.json"), "w") as fh:
            json.dump(doc, fh, indent=1, ensure_ascii=False, allow_nan=False)
            fh.write("\n")
        print("%-22s fragments=%d cells=%s raw_checks=%d" % (
            name, len(doc["fragments"]), [f["cell_num"] for f in doc["fragments"]], checks))
    if not only:
        write_readme(out, docs, total_checks)
    print("ok: %d raw field checks" % total_checks)


if __name__ == "__main__":
    main()
