#!/usr/bin/env python3
"""Write the TileDB fixtures of two coming fragfs features into OUTDIR:

  A. "what people's arrays hold": groups (nested, absolute member outside the
     group, a missing member), a TileDB-SOMA experiment, array metadata of
     every datatype (consolidated, vacuumed), enumerations (extended by schema
     evolution), dimension labels, delete conditions, from_numpy / from_pandas;
  B. the merged view ("the array as TileDB reads it", latest/ and at/<T>/):
     overlapping dense / sparse writes, fill values, equal timestamps,
     consolidation with and without per-cell timestamps, deletes around
     consolidations.

Usage: make_feature_fixtures.py OUTDIR   (OUTDIR is deleted and rewritten)

Run it through scripts/make_feature_fixtures.sh, which pins tiledb-py /
numpy / pandas (and, for the SOMA experiment, tiledbsoma in a second venv:
set SOMA_PYTHON to that venv's python; without it the experiment is a
SOMA-like layout written by TileDB-Py).

Every expected value is what TileDB(-Py) reads back from the arrays written
here; the only hand-made inputs recorded in the JSON are the delete condition
strings (what was passed to TileDB) and the operation log. See
tests/fixtures/features/README.md for the JSON formats.
"""

import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import warnings
import zlib

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_fixtures as mf  # noqa: E402
import make_merged_json as mm  # noqa: E402
import tiledb  # noqa: E402
import tiledb.libtiledb as lt  # noqa: E402
from tiledb.main import PyQuery  # noqa: E402

warnings.filterwarnings("ignore", category=UserWarning, module="tiledb.dataframe_")
OUT = None  # set in main(): the output folder (absolute)
SEED = 20250101


def rng(k):
    return np.random.default_rng(SEED + k)


def rel(path):
    return os.path.relpath(os.path.abspath(path), OUT)


def writer_info():
    return {"tiledb_py": tiledb.__version__, "libtiledb": "%d.%d.%d" % lt.version()}


# ---------------------------------------------------------------------------
# JSON encoding helpers


def jnum(x):
    """numpy / python scalar -> JSON value (floats: NaN / Infinity as strings)."""
    if isinstance(x, (bool, np.bool_)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        return mf.enc_scalar(x, "FLOAT64")
    if isinstance(x, np.datetime64):
        return int(x.astype("int64"))
    if isinstance(x, np.timedelta64):
        return int(x.astype("int64"))
    if isinstance(x, (bytes, np.bytes_)):
        return list(bytes(x))
    if isinstance(x, (str, np.str_)):
        return str(x)
    if x is None or x is np.ma.masked:
        return None
    return int(x)


def jval(v):
    """Any value TileDB-Py returns (scalars, tuples, ndarrays, masked arrays) -> JSON."""
    if isinstance(v, np.ma.MaskedArray):
        return [None if m else jval(x) for x, m in zip(v.data.tolist() if v.dtype.kind not in "OUS" else list(v.data),
                                                        np.ma.getmaskarray(v))]
    if isinstance(v, np.ndarray):
        if v.ndim == 0:
            return jnum(v[()])
        return [jval(x) for x in v]
    if isinstance(v, (list, tuple)):
        return [jval(x) for x in v]
    return jnum(v)


def write_json(path, doc):
    with open(path, "w") as fh:
        mm.dump(doc, fh)


# ---------------------------------------------------------------------------
# metadata (arrays and groups): what TileDB returns, key by key

NUMERIC = set(mf.NP_OF) - {"CHAR", "STRING_ASCII", "STRING_UTF8", "BLOB"}


def meta_value(dt, raw):
    """Decode the raw value bytes TileDB returned for a metadata key."""
    if dt in ("STRING_UTF8", "STRING_ASCII"):
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            return list(raw)
    if dt in ("CHAR", "BLOB"):
        return list(raw)
    if dt.startswith("DATETIME_") or dt.startswith("TIME_"):
        return [int(x) for x in np.frombuffer(raw, "<i8")]
    if dt == "BOOL":
        return [int(x) for x in raw]
    return [mf.enc_scalar(x, dt) for x in np.frombuffer(raw, mf.np_of(dt))]


def read_metadata(obj):
    """obj: an open tiledb.Array or tiledb.Group. Returns {raw key: entry}.
    Raw keys are the keys as stored (TileDB-Py stores a numpy array `k` as
    `__np_flat_k` plus, if not 1-D, `__np_shape_k`)."""
    low = obj.array if isinstance(obj, tiledb.Array) else obj
    out = {}
    for i in range(low._metadata_num()):
        k = low._get_key_from_index(i)
        try:
            v, t = low._get_metadata(k, True)
            raw = v.tobytes()
        except Exception:
            v, t = low._get_metadata(k, False)
            raw = v.encode("utf-8") if isinstance(v, str) else bytes(v)
        dt = t.name
        size = 1 if dt not in mf.NP_OF and not (dt.startswith("DATETIME_") or dt.startswith("TIME_")) \
            else np.dtype(mf.np_of(dt)).itemsize
        e = {"datatype": dt, "value_num": len(raw) // size, "value": meta_value(dt, raw),
             "bytes_hex": raw.hex()}
        if k.startswith(obj.meta._NP_SHAPE_PREFIX):
            e["meta_key"] = None
        else:
            mk = k[len(obj.meta._NP_DATA_PREFIX):] if k.startswith(obj.meta._NP_DATA_PREFIX) else k
            e["meta_key"] = mk
            try:
                e["meta_value"] = jval(obj.meta[mk])
            except Exception as ex:  # TileDB-Py cannot return some types (see README)
                e["meta_error"] = "%s: %s" % (type(ex).__name__, str(ex).splitlines()[0])
        out[k] = e
    return out


# ---------------------------------------------------------------------------
# reading one fragment alone (a temporary array holding only that fragment)


def solo_copy(uri, frag, tmp):
    """A copy of the array with only fragment `frag` (schema folder, the
    fragment, a `.wrt` commit for it). Returns the copy's path."""
    dst = os.path.join(tmp, "solo_" + frag)
    if os.path.exists(dst):
        shutil.rmtree(dst)
    os.makedirs(os.path.join(dst, "__fragments"))
    os.makedirs(os.path.join(dst, "__commits"))
    shutil.copytree(os.path.join(uri, "__schema"), os.path.join(dst, "__schema"))
    shutil.copytree(os.path.join(uri, "__fragments", frag), os.path.join(dst, "__fragments", frag))
    open(os.path.join(dst, "__commits", frag + ".wrt"), "wb").close()
    return dst


def read_cells(uri, ctx, ts, layout, subarray=None, cond=None):
    """Raw cells of every field: {name: (list of cell bytes, validity list or None)}."""
    with tiledb.open(uri, timestamp=ts, ctx=ctx) as A:
        schema = A.schema
        dims = [schema.domain.dim(i).name for i in range(schema.domain.ndim)]
        attrs = [schema.attr(i).name for i in range(schema.nattr)]
        q = PyQuery(A.ctx, A, tuple(attrs), tuple(dims), layout, False)
        if subarray is not None:
            sub = tiledb.Subarray(A)
            sub.add_ranges([[tuple(r)] for r in subarray])
            q.set_subarray(sub)
        if cond is not None:
            q.set_cond(tiledb.QueryCondition(cond, ctx=A.ctx))
        q.submit()
        res = q.results()
        out = {}
        for nm in dims + attrs:
            obj, role, cvn, nullable = mm.field_info(schema, nm)
            dt = obj._tiledb_dtype.name
            data, offs, valid = res[nm]
            data = bytes(np.asarray(data).view(np.uint8))
            if cvn == "var":
                offs = [int(x) for x in offs]
                cells = [data[a:b] for a, b in zip(offs, offs[1:] + [len(data)])]
            else:
                size = np.dtype(mf.np_of(dt)).itemsize * cvn
                cells = [data[i:i + size] for i in range(0, len(data), size)]
            out[nm] = (cells, [int(x) for x in valid] if nullable else None)
        assert len({len(c) for c, _ in out.values()}) == 1
        return out


def raw_field_cells(fdir, files, cvn, dt, nullable):
    """Every stored cell of a field from its (unfiltered) tile files:
    (cell bytes list, validity list or None)."""
    if cvn == "var":
        otiles = mf.raw_tiles(os.path.join(fdir, files["data"]))
        vtiles = mf.raw_tiles(os.path.join(fdir, files["var"]))
        cells = []
        for ot, vt in zip(otiles, vtiles):
            offs = np.frombuffer(ot, "<u8").tolist()
            ends = offs[1:] + [len(vt)]
            cells += [vt[a:b] for a, b in zip(offs, ends)]
    else:
        size = np.dtype(mf.np_of(dt)).itemsize * cvn
        b = b"".join(mf.raw_tiles(os.path.join(fdir, files["data"])))
        cells = [b[i:i + size] for i in range(0, len(b), size)]
    valid = None
    if nullable:
        valid = list(b"".join(mf.raw_tiles(os.path.join(fdir, files["validity"]))))
    return cells, valid


def dense_storage_coords(dims, ned, tile_order, cell_order):
    """Coordinates of every cell of every tile that intersects `ned`, in
    storage order (tiles in tile order, cells in cell order)."""
    tranges = []
    for d, (a, b) in zip(dims, ned):
        lo, ext = int(d.domain[0]), int(d.tile)
        tranges.append(range((a - lo) // ext, (b - lo) // ext + 1))

    def walk(ranges, order):
        idx = [[]]
        rs = ranges if order == "row-major" else ranges[::-1]
        for r in rs:
            idx = [p + [v] for p in idx for v in r]
        return [p if order == "row-major" else p[::-1] for p in idx]

    out = []
    for t in walk(tranges, tile_order):
        boxes = []
        for d, ti in zip(dims, t):
            lo, ext = int(d.domain[0]), int(d.tile)
            boxes.append(range(lo + ti * ext, lo + (ti + 1) * ext))
        out += walk(boxes, cell_order)
    return out


# ---------------------------------------------------------------------------
# per-fragment description (corpus "<array>.expected.json")


def delete_files(uri):
    """{timestamp: location} of every delete commit."""
    out = {}
    for t1, t2, where in mm.delete_commits(uri):
        assert t1 == t2
        out.setdefault(t1, []).append(where)
    return out


def describe(uri, name, meta, tmp):
    ctx = tiledb.Ctx()
    schema = tiledb.ArraySchema.load(uri, ctx=ctx)
    sparse = schema.sparse
    dom = schema.domain
    dims = [dom.dim(i) for i in range(dom.ndim)]
    attrs = [schema.attr(i) for i in range(schema.nattr)]
    dim_names = [d.name for d in dims]
    attr_names = [a.name for a in attrs]
    dims_meta = [mf.dim_desc(d) for d in dims]
    dim_fields = [mf.field_desc(d, "dimension", schema) for d in dims]
    attr_fields = [mf.field_desc(a, "attribute", schema) for a in attrs]
    for a, fd in zip(attrs, attr_fields):
        if a.enum_label:
            fd["enumeration"] = a.enum_label  # extension of the corpus format
    sf = meta.get("schema_filters", {"offsets": None, "validity": None, "coords": None})
    offsets_empty = len(schema.offsets_filters) == 0
    validity_empty = len(schema.validity_filters) == 0
    coords_empty = len(schema.coords_filters) == 0

    deletes = meta.get("deletes", [])
    dfiles = delete_files(uri)
    for d in deletes:
        locs = dfiles.get(d["timestamp"], [])
        assert len(locs) == 1, (name, d, locs)
        d["commit"] = locs[0]

    doc = {
        "array": name,
        "array_type": "sparse" if sparse else "dense",
        "format_version": None,
        "tiledb_py": tiledb.__version__,
        "libtiledb": "%d.%d.%d" % lt.version(),
        "cell_order": schema.cell_order,
        "tile_order": schema.tile_order,
        "capacity": int(schema.capacity) if sparse else None,
        "allows_duplicates": bool(schema.allows_duplicates) if sparse else False,
        "encryption": None,
        "schema_filters": sf,
        "dimensions": dims_meta,
        "attributes": attr_fields,
        "fragments": [],
        "fragments_on_disk": [],
        "schema_files": sorted(
            "__schema/" + f for f in os.listdir(os.path.join(uri, "__schema"))
            if os.path.isfile(os.path.join(uri, "__schema", f))),
        "empty_var_cell_stored_bytes": [],
        "deletes": deletes,
        "operations": meta.get("operations", []),
        "notes": meta.get("notes", ""),
    }
    fdir_root = os.path.join(uri, "__fragments")
    on_disk = sorted(os.listdir(fdir_root), key=lambda n: (mf.frag_parts(n), n))
    for fn in on_disk:
        doc["fragments_on_disk"].append({
            "name": fn, "timestamp_range": list(mf.frag_parts(fn)),
            "fragment_dir": "__fragments/" + fn,
            "commit_file": ("__commits/%s.wrt" % fn
                            if os.path.exists(os.path.join(uri, "__commits", fn + ".wrt")) else None),
        })

    finfos = sorted(tiledb.FragmentInfoList(uri, ctx=ctx),
                    key=lambda f: (tuple(f.timestamp_range), os.path.basename(f.uri.rstrip("/"))))
    versions = set()
    raw_checks = 0
    for fi in finfos:
        fname = os.path.basename(fi.uri.rstrip("/"))
        fdir = os.path.join(fdir_root, fname)
        files = sorted(os.listdir(fdir))
        t1, t2 = fi.timestamp_range
        with open(os.path.join(fdir, "__fragment_metadata.tdb"), "rb") as fh:
            (fver,) = struct.unpack("<I", fh.read(4))
        versions.add(fver)
        ned = []
        for d, r in zip(dims, fi.nonempty_domain):
            lo, hi = r
            if d.isvar:
                ned.append([lo.decode() if isinstance(lo, bytes) else lo,
                            hi.decode() if isinstance(hi, bytes) else hi])
            else:
                conv = float if d._tiledb_dtype.name.startswith("FLOAT") else int
                ned.append([conv(lo), conv(hi)])
        has_t = "t.tdb" in files
        has_dm = "dt.tdb" in files
        solo = solo_copy(uri, fname, tmp)
        timestamps = None
        if sparse and has_t:
            cells = []
            for t in range(t1, t2 + 1):
                r = read_cells(solo, ctx, (t, t), lt.LayoutType.GLOBAL_ORDER)
                n = len(r[dim_names[0]][0])
                for i in range(n):
                    rec = {nm: (r[nm][0][i], None if r[nm][1] is None else r[nm][1][i]) for nm in r}
                    coords = [mf.decode_coord(rec[d.name][0], d._tiledb_dtype.name) for d in dims]
                    cells.append((mf.global_key(coords, dims_meta, schema.tile_order, schema.cell_order),
                                   -t, t, rec))
            cells.sort(key=lambda c: (c[0], c[1]))
            read = {nm: ([c[3][nm][0] for c in cells],
                         None if (not cells or cells[0][3][nm][1] is None) else [c[3][nm][1] for c in cells])
                    for nm in dim_names + attr_names}
            timestamps = [c[2] for c in cells]
        elif sparse:
            read = read_cells(solo, ctx, None, lt.LayoutType.GLOBAL_ORDER)
        else:
            assert not has_t, "t.tdb in a dense fragment is not handled"
            got = read_cells(solo, ctx, None, lt.LayoutType.ROW_MAJOR, subarray=ned)
            coords = dense_storage_coords(dims, ned, schema.tile_order, schema.cell_order)
            by_coord = {}
            for i in range(len(got[dim_names[0]][0])):
                c = tuple(mf.decode_coord(got[d][0][i], dd._tiledb_dtype.name) for d, dd in zip(dim_names, dims))
                by_coord[c] = i
            read = {}
            for a, fd in zip(attrs, attr_fields):
                i = attr_names.index(a.name)
                fl = {"data": "a%d.tdb" % i}
                if a.isvar:
                    fl["var"] = "a%d_var.tdb" % i
                if a.isnullable:
                    fl["validity"] = "a%d_validity.tdb" % i
                inside_all = all(tuple(c) in by_coord for c in coords)
                if inside_all:
                    rc, rv = None, None
                else:
                    # cells of the stored tiles outside the written box: TileDB
                    # cannot return them; take the stored bytes
                    assert (fd["filters"] == [] and (offsets_empty or not a.isvar)
                            and (validity_empty or not a.isnullable)), \
                        "%s: padding of a filtered field" % name
                    rc, rv = raw_field_cells(fdir, fl, fd["cell_val_num"], fd["datatype"], a.isnullable)
                    assert len(rc) == len(coords)
                cells_, valid_ = [], ([] if a.isnullable else None)
                for k, c in enumerate(coords):
                    j = by_coord.get(tuple(c))
                    if j is not None:
                        cells_.append(got[a.name][0][j])
                        if valid_ is not None:
                            valid_.append(got[a.name][1][j])
                    else:
                        cells_.append(rc[k])
                        if valid_ is not None:
                            valid_.append(rv[k])
                read[a.name] = (cells_, valid_)
            for d in dim_names:
                read[d] = ([None] * len(coords), None)
        cell_num = len(read[dim_names[0]][0])
        if sparse:
            assert cell_num == fi.cell_num, (name, fname, cell_num, fi.cell_num)
            cap = int(schema.capacity)
            tcc = [cap] * (cell_num // cap) + ([cell_num % cap] if cell_num % cap else [])
        else:
            per = int(np.prod([int(d.tile) for d in dims]))
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
            frag["storage_coords"] = coords
            frag["in_domain"] = [int(all(int(d.domain[0]) <= x <= int(d.domain[1]) for d, x in zip(dims, c)))
                                 for c in coords]
            frag["in_non_empty_domain"] = [int(tuple(c) in by_coord) for c in coords]
        fields = []
        for i, (d, fd) in enumerate(zip(dims, dim_fields)):
            f = dict(fd)
            if not sparse:
                f["stored"] = False
                fields.append(f)
                continue
            f["stored"] = True
            fields.append(mf.fill_field(f, read[d.name], cell_num,
                                        {"data": "d%d.tdb" % i, **({"var": "d%d_var.tdb" % i} if d.isvar else {})}))
        for i, (a, fd) in enumerate(zip(attrs, attr_fields)):
            f = dict(fd)
            f["stored"] = True
            fl = {"data": "a%d.tdb" % i}
            if a.isvar:
                fl["var"] = "a%d_var.tdb" % i
            if a.isnullable:
                fl["validity"] = "a%d_validity.tdb" % i
            if not sparse and a.isvar:
                # fill_field asserts null var cells are empty; dense padding may not be
                cells_, valid_ = read[a.name]
                f = fill_field_loose(f, (cells_, valid_), cell_num, fl)
            else:
                f = mf.fill_field(f, read[a.name], cell_num, fl)
            fields.append(f)
        special_filters = "default(coords)" if sf["coords"] is None else mf.fl_names(schema.coords_filters)
        if has_t:
            fields.append(mf.special_field("__timestamps", special_filters, timestamps, "t.tdb"))
        if has_dm:
            dts, dcis = delete_meta_by_tiledb(solo, dims, read, timestamps, deletes,
                                              meta["deletes_processed_by_consolidation"], tmp)
            fields.append(mf.special_field("__delete_timestamps", special_filters, dts, "dt.tdb"))
            fields.append(mf.special_field("__delete_condition_index", special_filters, dcis, "dci.tdb"))
        frag["fields"] = fields
        for f in fields:
            for v in f.get("files", {}).values():
                assert v is None or v in files, (name, fname, v, files)
        for fn in files:
            if fn.endswith(".tdb") and fn != "__fragment_metadata.tdb":
                assert any(fn in f.get("files", {}).values() for f in fields), (name, fn)
        raw_checks += mf.verify_raw(fdir, frag, schema, offsets_empty, validity_empty, coords_empty)
        doc["fragments"].append(frag)
        shutil.rmtree(solo)
    assert len(versions) == 1
    doc["format_version"] = versions.pop()
    for fr in doc["fragments"]:
        for f in fr["fields"]:
            f.pop("_raw", None)
    return doc, raw_checks


def fill_field_loose(f, rd, cell_num, files):
    """mf.fill_field, except that a null (validity 0) var cell may hold bytes
    (dense padding cells): offsets then advance by its stored length."""
    cells, valid = rd
    dt, cvn = f["datatype"], f["cell_val_num"]
    f["cell_count"] = cell_num
    f["values"] = [None if (valid is not None and valid[i] == 0) else mf.enc_cell(raw, dt, cvn)
                   for i, raw in enumerate(cells)]
    offs, pos = [], 0
    for raw in cells:
        offs.append(pos)
        pos += len(raw)
    f["offsets"] = offs
    f["var_bytes"] = pos
    if valid is not None:
        f["validity"] = list(valid)
    f["files"] = files
    f["_raw"] = cells
    return f


def to_writable(v):
    """A column TileDB-Py read -> a buffer TileDB-Py writes (nulls as None)."""
    if isinstance(v, np.ma.MaskedArray):
        mask = np.ma.getmaskarray(v)
        return np.array([None if m else x for x, m in zip(v.data, mask)], dtype=object)
    return v


def delete_matches(solo, t, cond, tmp):
    """Coordinates of the cells of the version-t state of a one-fragment array
    that delete condition `cond` removes, decided by TileDB itself: the cells
    (as TileDB reads them at (t, t)) are written into a scratch array with the
    same schema at t=1, `cond` is deleted at t=2, and the cells TileDB no
    longer returns are the ones that match. (TileDB-Py cannot negate an
    and/or/in condition for a plain read: see README.)"""
    scratch = os.path.join(tmp, "scratch_delete")
    if os.path.exists(scratch):
        shutil.rmtree(scratch)
    with tiledb.open(solo, timestamp=(t, t)) as A:
        schema = A.schema
        r = A[:]
    tiledb.Array.create(scratch, schema)
    dims = [schema.domain.dim(i).name for i in range(schema.domain.ndim)]
    attrs = [schema.attr(i).name for i in range(schema.nattr)]
    allc = set(zip(*[[x.item() if hasattr(x, "item") else x for x in r[d]] for d in dims]))
    with tiledb.open(scratch, "w", timestamp=1) as B:
        B[tuple(r[d] for d in dims)] = {a: to_writable(r[a]) for a in attrs}
    with tiledb.open(scratch, "d", timestamp=2) as B:
        B.query(cond=cond).submit()
    with tiledb.open(scratch) as B:
        q = B[:]
        left = set(zip(*[[x.item() if hasattr(x, "item") else x for x in q[d]] for d in dims]))
    shutil.rmtree(scratch)
    return allc - left


def delete_meta_by_tiledb(solo, dims, read, timestamps, deletes, nprocessed, tmp):
    """Expected __delete_timestamps / __delete_condition_index of a
    consolidated fragment. Its processed conditions are the deletes that
    existed when it was consolidated (also those with a timestamp after its
    t2), by timestamp; a cell version written at t is marked by the first
    processed delete after t that matches it (delete_matches). Checked
    against the raw dt.tdb / dci.tdb afterwards (verify_raw)."""
    processed = sorted(deletes[:nprocessed], key=lambda d: d["timestamp"])
    hits = {}
    for t in sorted(set(timestamps)):
        for k, d in enumerate(processed):
            if d["timestamp"] > t:
                hits[(t, k)] = delete_matches(solo, t, d["condition"], tmp)
    dts, dcis = [], []
    for i, t in enumerate(timestamps):
        key = tuple(mf.decode_coord(read[dd.name][0][i], dd._tiledb_dtype.name) for dd in dims)
        key = tuple(k.decode() if isinstance(k, bytes) else k for k in key)
        hit = None
        for k, d in enumerate(processed):
            if d["timestamp"] > t and key in hits[(t, k)]:
                hit = (d["timestamp"], k)
                break
        dts.append(mf.U64_MAX if hit is None else hit[0])
        dcis.append(mf.U64_MAX if hit is None else hit[1])
    return dts, dcis


# ---------------------------------------------------------------------------
# raw generic tiles (only used to cross-check names TileDB-Py does not expose)


def generic_tile_payload(path):
    """Unfiltered payload of a generic tile written by TileDB (GZIP pipeline)."""
    b = open(path, "rb").read()
    (k,) = struct.unpack_from("<I", b, 30)
    p = 34 + k
    (n,) = struct.unpack_from("<Q", b, p)
    p += 8
    out = b""
    for _ in range(n):
        o, f, m = struct.unpack_from("<III", b, p)
        p += 12 + m
        data = b[p:p + f]
        p += f
        for s in range(len(data)):
            try:
                d = zlib.decompressobj()
                r = d.decompress(data[s:])
                if len(r) == o:
                    out += r
                    break
            except zlib.error:
                continue
        else:
            raise ValueError("cannot unfilter %s" % path)
    return out


# ---------------------------------------------------------------------------
# groups


def object_kind(m):
    t = m.type
    if t is tiledb.Group or (isinstance(t, type) and issubclass(t, tiledb.Group)):
        return "group"
    if isinstance(t, type) and issubclass(t, tiledb.Array):
        return "array"
    return str(t)


def describe_group(path):
    path = os.path.abspath(path)
    payload = b"".join(generic_tile_payload(os.path.join(path, "__group", f))
                       for f in sorted(os.listdir(os.path.join(path, "__group"))))
    node = {"path_from_outdir": rel(path), "type": "group",
            "group_files": sorted("__group/" + f for f in os.listdir(os.path.join(path, "__group"))),
            "meta_files": sorted("__meta/" + f for f in os.listdir(os.path.join(path, "__meta")))
            if os.path.isdir(os.path.join(path, "__meta")) else []}
    with tiledb.Group(path) as G:
        node["metadata"] = read_metadata(G)
        members = {}
        order = []
        for i in range(len(G)):
            m = G[i]
            name = m.name
            assert name, "unnamed member in %s" % path
            order.append(name)
            relative = bool(G.is_relative(name))
            assert m.uri.startswith("file://"), m.uri
            local = m.uri[len("file://"):]
            stored = os.path.relpath(local, path) if relative else m.uri
            assert stored.encode() in payload, (path, stored)  # the string the group file holds
            # stored_uri: the string the group file holds (for an absolute
            # member it depends on where OUTDIR was: compare path_from_outdir)
            members[name] = {
                "name": name, "type": object_kind(m), "relative": relative, "stored_uri": stored,
                "path_from_group": os.path.relpath(local, path),
                "path_from_outdir": rel(local),
                "exists": os.path.exists(local),
                "object_type_on_disk": tiledb.object_type(local) if os.path.exists(local) else None}
        node["member_order"] = order
        node["members"] = members
    for name, e in node["members"].items():
        if e["type"] == "group" and e["exists"]:
            e["group"] = describe_group(os.path.join(OUT, e["path_from_outdir"]))
    return node


def group_doc(name, path, notes):
    d = {"group": name}
    d.update(writer_info())
    d["outdir_at_generation"] = OUT
    d["root"] = describe_group(path)
    d["notes"] = notes
    return d


def gcfg(t):
    return tiledb.Config({"sm.group.timestamp_start": "0", "sm.group.timestamp_end": str(t)})


def small_dense(uri, seed, n=4, ts=1, write=True):
    tiledb.Array.create(uri, tiledb.ArraySchema(
        domain=tiledb.Domain(tiledb.Dim("x", domain=(0, n - 1), tile=n, dtype=np.int32)),
        attrs=[tiledb.Attr("v", dtype=np.int32)], sparse=False))
    if not write:
        return
    with tiledb.open(uri, "w", timestamp=ts) as A:
        A[0:n] = {"v": (np.arange(n) * 10 + seed).astype(np.int32)}


def small_sparse(uri, seed, ts=1, write=True):
    tiledb.Array.create(uri, tiledb.ArraySchema(
        domain=tiledb.Domain(tiledb.Dim("k", domain=(0, 99), tile=10, dtype=np.int64)),
        attrs=[tiledb.Attr("s", dtype=str)], sparse=True))
    if not write:
        return
    with tiledb.open(uri, "w", timestamp=ts) as A:
        A[np.array([seed, seed + 7, seed + 30], dtype=np.int64)] = {
            "s": np.array(["m%d" % (seed + i) for i in range(3)], dtype=object)}


def gen_groups(out):
    """group_nested/ (+ group_outside_target/), group_missing_member/."""
    root = os.path.join(out, "group_nested")
    outside = os.path.join(out, "group_outside_target")
    tiledb.Group.create(root)
    small_dense(os.path.join(root, "dense_a"), 1)
    tiledb.Group.create(os.path.join(root, "level1"))
    small_sparse(os.path.join(root, "level1", "sparse_b"), 2, write=False)
    tiledb.Group.create(os.path.join(root, "level1", "level2"))
    small_dense(os.path.join(root, "level1", "level2", "leaf"), 3, n=2, write=False)
    small_dense(outside, 4, write=False)
    with tiledb.Group(os.path.join(root, "level1", "level2"), "w", config=gcfg(3)) as G:
        G.add("leaf", name="leaf", relative=True)
        G.meta["depth"] = np.uint8(2)
        G.meta["label"] = "deepest"
    with tiledb.Group(os.path.join(root, "level1"), "w", config=gcfg(4)) as G:
        G.add("sparse_b", name="sparse_b", relative=True)
        G.add("level2", name="level2", relative=True)
        G.meta["depth"] = np.uint8(1)
        G.meta["weights"] = (0.25, -1.5, float("nan"))
        G.meta["i16"] = np.int16(-300)
        G.meta["f32"] = np.float32(0.1)
        G.meta["u64"] = np.uint64(2**64 - 1)
    with tiledb.Group(root, "w", config=gcfg(5)) as G:
        G.add("dense_a", name="dense_a", relative=True)
        G.add("level1", name="level1", relative=True)
        G.add(os.path.abspath(outside), name="outside", relative=False)
        G.meta["title"] = "nested groups, ünïcode"
        G.meta["version"] = 3
        G.meta["scale"] = 0.5
        G.meta["ids"] = [1, -2, 3]
        G.meta["blob"] = b"\x00\xffab"
        G.meta["i8"] = np.int8(-7)
        G.meta["u32"] = np.uint32(4000000000)
        G.meta["matrix"] = np.arange(6, dtype=np.int16).reshape(2, 3)
        G.meta["empty"] = ""
    with tiledb.Group(root, "w", config=gcfg(6)) as G:
        G.meta["version"] = 4          # overwritten at a later timestamp
        del G.meta["empty"]            # deleted
    mf.remove_empty_dirs(root)
    mf.remove_empty_dirs(outside)
    write_json(os.path.join(out, "group_nested.group.json"), group_doc(
        "group_nested", root,
        "root group (metadata written at t=5, then at t=6 'version' overwritten and 'empty' deleted), "
        "members dense_a (array), level1 (group, metadata at t=4) with sparse_b (array) and level2 "
        "(group, metadata at t=3) with leaf (array); only dense_a holds a fragment, the other member arrays "
        "are schema-only; all relative, except 'outside', added by the "
        "absolute URI of ../group_outside_target (an array beside the group, not inside it). Member "
        "and metadata timestamps via sm.group.timestamp_end. stored_uri: the string the group file holds "
        "(relative path, or 'file://' + the absolute path at generation time, outdir_at_generation); "
        "compare absolute members through path_from_outdir."))

    miss = os.path.join(out, "group_missing_member")
    tiledb.Group.create(miss)
    small_dense(os.path.join(miss, "present"), 5, write=False)
    small_dense(os.path.join(miss, "gone"), 6, write=False)
    tiledb.Group.create(os.path.join(miss, "gone_group"))
    with tiledb.Group(miss, "w", config=gcfg(2)) as G:
        G.add("present", name="present", relative=True)
        G.add("gone", name="gone", relative=True)
        G.add("gone_group", name="gone_group", relative=True)
        G.meta["note"] = "members gone and gone_group were deleted from disk after being added"
    shutil.rmtree(os.path.join(miss, "gone"))
    shutil.rmtree(os.path.join(miss, "gone_group"))
    mf.remove_empty_dirs(miss)
    doc = group_doc("group_missing_member", miss,
                    "bad input: members 'gone' (array) and 'gone_group' (group) were added, then their folders "
                    "deleted (shutil.rmtree). TileDB-Py still lists them (type as recorded in the group).")
    try:
        tiledb.open(os.path.join(miss, "gone")).close()
        doc["open_missing_member_error"] = None
    except tiledb.TileDBError as e:
        doc["open_missing_member_error"] = str(e).splitlines()[0].replace(OUT, "<OUTDIR>")
    write_json(os.path.join(out, "group_missing_member.group.json"), doc)
    return ["group_nested", "group_missing_member", "group_outside_target"]


# ---------------------------------------------------------------------------
# array metadata of every datatype


def meta_values_t2():
    return [
        ("i8", np.int8(-128)), ("u8", np.uint8(255)), ("i16", np.int16(-300)), ("u16", np.uint16(65535)),
        ("i32", np.int32(-70000)), ("u32", np.uint32(4000000000)), ("i64", np.int64(-2**63)),
        ("u64", np.uint64(2**64 - 1)), ("f32", np.float32(0.1)), ("f64", np.float64(-2.5e-300)),
        ("py_int", 2**62), ("py_float", 0.1), ("py_bool", True), ("nan", float("nan")),
        ("neg_inf", float("-inf")), ("str_utf8", "ünïcode ✓"), ("str_np_ascii", np.str_("ascii")),
        ("str_np_nonascii", np.str_("héllo")), ("blob", b"\x00\x01\xfe\xff"),
        ("char_np", np.bytes_(b"ab\x00c")), ("bool_np", np.bool_(True)),
        ("dt_ms", np.datetime64(1700000000123, "ms")), ("dt_ns", np.datetime64(-5, "ns")),
        ("dt_day", np.datetime64("2024-02-29")), ("td_us", np.timedelta64(3, "us")),
        ("list_i", [1, -2, 3]), ("list_f", (1.5, float("nan"), float("-inf"))), ("empty_tuple", ()),
        ("empty_str", ""), ("empty_bytes", b""),
        ("arr_i8", np.array([-1, 0, 1], dtype=np.int8)), ("arr_u64", np.array([0, 2**64 - 1], dtype=np.uint64)),
        ("arr_f32", np.array([0.5, -0.0, np.inf], dtype=np.float32)), ("arr_bool", np.array([True, False, True])),
        ("arr_dt_s", np.array([0, 86400], dtype="datetime64[s]")),
        ("arr_2d", np.arange(6, dtype=np.int32).reshape(2, 3)), ("arr_empty", np.array([], dtype=np.int16)),
        ("arr_1", np.array([42], dtype=np.uint16)),
        ("ключ", "значение"), ("a key/with slash", 1), ("", "empty key"),
    ]


def gen_metadata(uri, vacuum):
    small_dense(uri, 9, write=False)  # schema only: metadata needs no fragment
    ops, errors = [], []

    def put(A, k, v, t):
        try:
            A.meta[k] = v
            return True
        except Exception as e:
            errors.append({"timestamp": t, "key": k, "value_type": type(v).__name__,
                           "error": "%s: %s" % (type(e).__name__, str(e).splitlines()[0])})
            return False

    with tiledb.open(uri, "w", timestamp=2) as A:
        ok = [k for k, v in meta_values_t2() if put(A, k, v, 2)]
        # STRING_ASCII has no public spelling: the private binding of Array.meta
        A.array._put_metadata("ascii_private_api", lt.DataType.STRING_ASCII, 5, b"ASCII")
        ok.append("ascii_private_api")
    ops.append({"timestamp": 2, "set": ok})
    with tiledb.open(uri, "w", timestamp=3) as A:
        sets = [("i32", np.int32(123)), ("str_utf8", "second value"), ("list_f", [1, 2]),
                ("arr_i8", np.array([7], dtype=np.int8)), ("added_t3", "added at t=3")]
        ops.append({"timestamp": 3, "set": [k for k, v in sets if put(A, k, v, 3)]})
    with tiledb.open(uri, "w", timestamp=4) as A:
        dels = ["u8", "blob", "arr_2d", "never_existed"]
        for k in dels:
            del A.meta[k]
        ops.append({"timestamp": 4, "deleted": dels})
    with tiledb.open(uri, "w", timestamp=5) as A:
        sets = [("u8", np.uint16(7)), ("f64", np.float64(1e300)), ("added_t3", "")]
        ops.append({"timestamp": 5, "set": [k for k, v in sets if put(A, k, v, 5)]})
    before = {}
    for t in (1, 2, 3, 4, 5):
        with tiledb.open(uri, timestamp=(0, t)) as A:
            before[t] = read_metadata(A)
    files_before = sorted(os.listdir(os.path.join(uri, "__meta")))
    cfg = {"sm.consolidation.mode": "array_meta"}
    tiledb.consolidate(uri, config=tiledb.Config(cfg))
    ops.append({"op": "consolidate", "config": cfg})
    if vacuum:
        vcfg = {"sm.vacuum.mode": "array_meta"}
        tiledb.vacuum(uri, config=tiledb.Config(vcfg))
        ops.append({"op": "vacuum", "config": vcfg})
    mf.remove_empty_dirs(uri)
    states, changed = [], []
    for t in (1, 2, 3, 4, 5):
        with tiledb.open(uri, timestamp=(0, t)) as A:
            m = read_metadata(A)
        if m != before[t]:
            changed.append(t)
        # compact: datatype and the value bytes (full entries: `metadata`)
        states.append({"timestamp": t, "metadata": {k: {"datatype": e["datatype"], "bytes_hex": e["bytes_hex"]}
                                                     for k, e in m.items()}})
    with tiledb.open(uri) as A:
        latest = read_metadata(A)
    doc = {"array": os.path.basename(uri)}
    doc.update(writer_info())
    doc.update({
        "operations": ops,
        "write_errors": errors,
        "meta_files_before_consolidation": ["__meta/" + f for f in files_before],
        "meta_files": sorted("__meta/" + f for f in os.listdir(os.path.join(uri, "__meta"))),
        "metadata": latest,
        "states": states,
        "states_changed_by_consolidation": changed,
        "notes": ("array metadata written at t=2..5 (keys overwritten at t=3 and t=5, some with another "
                  "datatype; deleted at t=4), then consolidated (sm.consolidation.mode=array_meta)"
                  + (" and vacuumed (sm.vacuum.mode=array_meta)" if vacuum else " (not vacuumed)")
                  + ". The array has no fragment (schema only). metadata = the array opened without a "
                  "timestamp; states[].metadata = opened at (0, T) after everything (datatype and value bytes "
                  "only); states_changed_by_consolidation = the T whose state differed before the "
                  "consolidation/vacuum (before, every state equals the one of metadata_types). Keys are the raw stored keys: TileDB-Py stores a numpy array value "
                  "under '__np_flat_<key>' (+ '__np_shape_<key>' when not 1-D); meta_key is the key "
                  "TileDB-Py's A.meta shows, meta_value what A.meta[meta_key] returns, meta_error when it "
                  "raises."),
    })
    write_json(uri + ".meta.json", doc)
    return doc


# ---------------------------------------------------------------------------
# enumerations


def enum_values(e):
    out = []
    for v in e.values():
        if isinstance(v, (bytes, np.bytes_)):
            try:
                out.append(bytes(v).decode("utf-8"))
            except UnicodeDecodeError:
                out.append(list(bytes(v)))
        else:
            out.append(jnum(v))
    return out


def enum_desc(e):
    cvn = int(e.cell_val_num)
    return {"datatype": e.type.name, "cell_val_num": "var" if cvn == 2**32 - 1 else cvn,
            "ordered": bool(e.ordered), "values": enum_values(e)}


def schema_enums(A):
    s = A.schema
    attrs = {s.attr(i).name: s.attr(i).enum_label for i in range(s.nattr) if s.attr(i).enum_label}
    return attrs, {lab: enum_desc(A.enum(lab)) for lab in sorted(set(attrs.values()))}


def label_json(v):
    if isinstance(v, (bytes, np.bytes_)):
        try:
            return bytes(v).decode("utf-8")
        except UnicodeDecodeError:
            return list(bytes(v))
    return jnum(v)


def deep_label(v):
    if isinstance(v, np.ndarray) and v.ndim > 0:
        return [deep_label(x) for x in v]
    return label_json(v)


def decode_labels(A, sl, sparse):
    """{"labels": {attr: [...]}} as TileDB-Py's A[...] gives them (enumerations
    decoded), or {"labels_error": ...} when TileDB-Py cannot decode."""
    try:
        res = A[sl] if not sparse else A[:]
    except Exception as e:
        return {"labels_error": "%s: %s" % (type(e).__name__, str(e).splitlines()[0])}
    s = A.schema
    out = {}
    for i in range(s.nattr):
        a = s.attr(i)
        if a.enum_label:
            col = res[a.name]
            if isinstance(col, np.ma.MaskedArray):
                mask = np.ma.getmaskarray(col)
                out[a.name] = [None if m else label_json(x) for x, m in zip(col.data, mask)]
            else:
                out[a.name] = [label_json(x) for x in col]
    return {"labels": out}


def enumeration_report(uri, tmp):
    """What TileDB says about the enumerations of one array: per schema file,
    per fragment, per state."""
    sdir = os.path.join(uri, "__schema")
    schema_files = sorted(f for f in os.listdir(sdir) if os.path.isfile(os.path.join(sdir, f)))
    edir = os.path.join(sdir, "__enumerations")
    enum_files = sorted(os.listdir(edir)) if os.path.isdir(edir) else []
    rep = {"schema_files": ["__schema/" + f for f in schema_files],
           "enumeration_files": ["__schema/__enumerations/" + f for f in enum_files], "schemas": []}
    for sf in schema_files:
        payload = generic_tile_payload(os.path.join(sdir, sf))
        mine = [e for e in enum_files if e.encode() in payload]
        # check the mapping through TileDB: a copy with only this schema and
        # only these enumeration files must open and load every enumeration
        dst = os.path.join(tmp, "schema_" + sf)
        os.makedirs(os.path.join(dst, "__schema", "__enumerations"))
        for d in ("__fragments", "__commits", "__meta"):
            os.makedirs(os.path.join(dst, d))
        shutil.copy(os.path.join(sdir, sf), os.path.join(dst, "__schema", sf))
        for e in mine:
            shutil.copy(os.path.join(edir, e), os.path.join(dst, "__schema", "__enumerations", e))
        with tiledb.open(dst) as A:
            attrs, enums = schema_enums(A)
        shutil.rmtree(dst)
        rep["schemas"].append({"schema_file": "__schema/" + sf,
                               "enumeration_files": ["__schema/__enumerations/" + e for e in mine],
                               "attributes": attrs, "enumerations": enums})
    schema = tiledb.ArraySchema.load(uri)
    sparse = schema.sparse
    frs = []
    for fi in sorted(tiledb.FragmentInfoList(uri), key=lambda f: (tuple(f.timestamp_range), f.uri)):
        fname = os.path.basename(fi.uri.rstrip("/"))
        solo = solo_copy(uri, fname, tmp)
        ned = [list(r) for r in fi.nonempty_domain]
        r = read_cells(solo, tiledb.Ctx(), None, lt.LayoutType.GLOBAL_ORDER if sparse else lt.LayoutType.ROW_MAJOR,
                       subarray=None if sparse else ned)
        codes = {}
        for i in range(schema.nattr):
            a = schema.attr(i)
            if a.enum_label:
                cells, valid = r[a.name]
                codes[a.name] = [None if (valid is not None and valid[j] == 0)
                                 else mf.enc_cell(c, a._tiledb_dtype.name, 1) for j, c in enumerate(cells)]
        with tiledb.open(solo) as A:
            sl = tuple(slice(int(lo), int(hi) + 1) for lo, hi in ned)
            labels = decode_labels(A, sl, sparse)
        shutil.rmtree(solo)
        fr = {"fragment": fname, "timestamp_range": list(fi.timestamp_range),
              "array_schema_name": fi.array_schema_name,
              "non_empty_domain": [[jnum(x) for x in rr] for rr in ned],
              "order": "global" if sparse else "row-major", "codes": codes}
        # decoded with the schema TileDB picks when the fragment is alone
        # (all schema files present, opened without a timestamp)
        fr.update({k.replace("labels", "labels_latest_schema"): v for k, v in labels.items()})
        frs.append(fr)
    rep["fragments"] = frs
    states = []
    for ts in [None] + mm.state_timestamps(uri):
        with tiledb.open(uri, timestamp=None if ts is None else (0, ts)) as A:
            attrs, enums = schema_enums(A)
            ned = A.nonempty_domain()
            st = {"timestamp": ts, "schema_attributes": attrs, "enumerations": enums}
            if ned is not None:
                st.update(decode_labels(A, tuple(slice(int(lo), int(hi) + 1) for lo, hi in ned), sparse))
        states.append(st)
    rep["states"] = states
    return rep


def gen_enumerations(uri, evolve_ts=2):
    """evolve_ts: explicit timestamp of the schema evolution, or None = wall clock."""
    meta = {}
    colors = tiledb.Enumeration("colors", False, ["red", "grün", "blue", ""])
    sizes = tiledb.Enumeration("sizes", True, np.array([10, 20, 30], dtype=np.int32))
    levels = tiledb.Enumeration("levels", False, [b"lo", b"mid"])
    dom = tiledb.Domain(tiledb.Dim("x", domain=(0, 7), tile=4, dtype=np.int32))
    attrs = [tiledb.Attr("color", dtype=np.uint8, enum_label="colors"),
             tiledb.Attr("size", dtype=np.int16, enum_label="sizes"),
             tiledb.Attr("level", dtype=np.int8, enum_label="levels", nullable=True),
             tiledb.Attr("plain", dtype=np.int32)]
    schema = mf.mk_schema(meta, offsets=[], validity=[], domain=dom, attrs=attrs, sparse=False,
                          enums=[colors, sizes, levels])
    tiledb.Array.create(uri, schema)
    with tiledb.open(uri, "w", timestamp=1) as A:
        A[0:4] = {"color": np.array([0, 1, 2, 3], dtype=np.uint8), "size": np.array([2, 0, 1, 2], dtype=np.int16),
                  "level": np.array([1, None, 0, 1], dtype=object), "plain": np.arange(4, dtype=np.int32)}
    with tiledb.open(uri) as A:
        se = tiledb.ArraySchemaEvolution()
        se.extend_enumeration(A.enum("colors").extend(["cyan", "magenta"]))
        se.extend_enumeration(A.enum("sizes").extend(np.array([40], dtype=np.int32)))
        se.extend_enumeration(A.enum("levels").extend([b"hi"]))
        if evolve_ts is not None:
            se.timestamp(evolve_ts)
        se.array_evolve(uri)
    with tiledb.open(uri, "w", timestamp=3) as A:
        A[4:8] = {"color": np.array([4, 5, 0, 4], dtype=np.uint8), "size": np.array([3, 3, 0, 1], dtype=np.int16),
                  "level": np.array([2, 2, None, 0], dtype=object), "plain": np.arange(4, 8, dtype=np.int32)}
    meta["operations"] = [{"op": "schema_evolution", "extend_enumeration": {"colors": ["cyan", "magenta"],
                                                                            "sizes": [40], "levels": ["hi"]},
                           "timestamp": "wall clock" if evolve_ts is None else evolve_ts}]
    meta["notes"] = ("1-D dense, tile 4. colors: STRING_UTF8 var enumeration (with an empty label) on a UINT8 "
                     "attribute; sizes: ordered INT32 enumeration on INT16; levels: STRING_ASCII var enumeration "
                     "on a nullable INT8. Written at t=1 (x 0-3), then the three enumerations were extended by "
                     "schema evolution, then x 4-7 written at t=3 with codes of the new labels. " +
                     ("The evolution has timestamp 2 (ArraySchemaEvolution.timestamp(2)): its schema file "
                      "__2_2_* is numerically older than the creation schema (wall-clock name) but sorts after "
                      "it as a string, and TileDB picks it as the latest schema (see README)."
                      if evolve_ts is not None else
                      "The evolution has the wall-clock timestamp (no ArraySchemaEvolution.timestamp()), so both "
                      "schema files are newer than every write: opened at (0, 3) TileDB uses the creation schema "
                      "(old labels) and TileDB-Py cannot decode the t=3 codes (labels_error)."))
    return meta


def enum_json(out, name, notes, tmp):
    uri = os.path.join(out, name)
    rep = {"array": name}
    rep.update(writer_info())
    rep.update(enumeration_report(uri, tmp))
    with tiledb.open(uri) as A:
        rep["metadata"] = read_metadata(A)
    rep["notes"] = notes
    write_json(os.path.join(out, name + ".enumerations.json"), rep)


def gen_enum_bad_code(uri):
    meta = {}
    e = tiledb.Enumeration("abc", False, ["a", "b", "c"])
    dom = tiledb.Domain(tiledb.Dim("x", domain=(0, 3), tile=4, dtype=np.int32))
    schema = mf.mk_schema(meta, domain=dom, attrs=[tiledb.Attr("v", dtype=np.uint8, enum_label="abc")],
                          sparse=False, enums=[e])
    tiledb.Array.create(uri, schema)
    with tiledb.open(uri, "w", timestamp=1) as A:
        A[0:4] = {"v": np.array([0, 2, 7, 255], dtype=np.uint8)}
    meta["notes"] = ("bad input: codes 7 and 255 of a 3-label enumeration; TileDB accepts the write (no check), "
                     "TileDB-Py's decoding read fails (labels_error).")
    return meta


# ---------------------------------------------------------------------------
# dimension labels


def gen_dimension_labels(uri):
    meta = {}
    dom = tiledb.Domain(tiledb.Dim("row", domain=(0, 3), tile=2, dtype=np.int32),
                        tiledb.Dim("col", domain=(0, 5), tile=3, dtype=np.int32))
    labels = {0: {"depth_m": tiledb.DimLabelSchema("increasing", label_dtype=np.float64, dim_dtype=np.int32,
                                                   dim_tile=2)},
              1: {"station": tiledb.DimLabelSchema("decreasing", label_dtype="ascii", dim_dtype=np.int32)}}
    schema = mf.mk_schema(meta, domain=dom, attrs=[tiledb.Attr("t", dtype=np.float32)], sparse=False,
                          dim_labels=labels)
    tiledb.Array.create(uri, schema)
    rr, cc = np.meshgrid(np.arange(4), np.arange(6), indexing="ij")
    with tiledb.open(uri, "w", timestamp=1) as A:
        A[0:4, 0:6] = {"t": (rr * 10 + cc * 0.5).astype(np.float32),
                       "depth_m": np.array([0.5, 1.25, 2.0, 10.0]),
                       "station": np.array([b"zulu", b"yankee", b"x", b"whiskey", b"victor", b"uniform"], dtype=object)}
    with tiledb.open(uri, "w", timestamp=2) as A:
        A[1:3, 0:6] = {"t": np.full((2, 6), -1, dtype=np.float32)}
    meta["notes"] = ("2-D dense (row INT32 0-3, col INT32 0-5) with two dimension labels: depth_m "
                     "(increasing FLOAT64) on row, station (decreasing var STRING_ASCII) on col. t=1 writes the whole array and every label; t=2 writes rows 1-2 of t only.")
    return meta


def label_report(uri, names):
    """What TileDB-Py says about each dimension label (TileDB-Py cannot list
    them: `names` are the labels the generator created; the number of label
    folders is checked against it)."""
    out = {"array": os.path.basename(uri)}
    out.update(writer_info())
    assert len(os.listdir(os.path.join(uri, "__labels"))) == len(names)
    sfiles = [f for f in os.listdir(os.path.join(uri, "__schema"))
              if os.path.isfile(os.path.join(uri, "__schema", f))]
    assert len(sfiles) == 1
    payload = generic_tile_payload(os.path.join(uri, "__schema", sfiles[0]))
    labels = []
    with tiledb.open(uri) as A:
        s = A.schema
        for name in names:
            assert s.has_dim_label(name)
            L = s.dim_label(name)
            assert L.uri.startswith("file://")
            luri = L.uri[len("file://"):]
            lrel = os.path.relpath(luri, os.path.abspath(uri))
            assert lrel.encode() in payload  # the schema stores this relative URI
            e = {"name": name, "dim_index": int(L.dim_index), "dimension": s.domain.dim(int(L.dim_index)).name,
                 "order": L.order, "label_datatype": L._tiledb_label_dtype.name,
                 "label_cell_val_num": "var" if L.isvar else 1,
                 "label_attr_name": L.label_attr_name, "uri": lrel}
            with tiledb.open(luri) as LA:
                ls = LA.schema
                e["label_array"] = {
                    "array_type": "sparse" if ls.sparse else "dense",
                    "dimensions": [mf.dim_desc(ls.domain.dim(i)) for i in range(ls.domain.ndim)],
                    "attributes": [mf.field_desc(ls.attr(i), "attribute", ls) for i in range(ls.nattr)]}
                vals = LA[:] if ls.sparse else LA[LA.nonempty_domain()[0][0]:LA.nonempty_domain()[0][1] + 1]
                lv = vals[L.label_attr_name]
            lo, hi = min(lv), max(lv)
            sel = tuple(slice(lo, hi) if i == int(L.dim_index) else slice(None) for i in range(s.ndim))
            got = A.label_index([name])[sel]
            e["read_through_label"] = {"range": [label_json(lo), label_json(hi)],
                                       "result": {k: deep_label(v) for k, v in got.items()}}
            labels.append(e)
    out["labels"] = labels
    return out


def gen_dimension_labels_all(out, tmp, docs):
    name = "dimension_labels"
    uri = os.path.join(out, name)
    meta = gen_dimension_labels(uri)
    rep = label_report(uri, ["depth_m", "station"])
    rep["notes"] = meta["notes"]
    write_json(os.path.join(out, name + ".labels.json"), rep)
    finish_array(out, name, meta, tmp, docs)
    for e in rep["labels"]:
        lname = name + "/" + e["uri"]
        finish_array(out, lname, {"notes": "label array of %s (label %s)" % (name, e["name"])}, tmp, docs,
                     json_name=name + ".label_" + e["name"])


# ---------------------------------------------------------------------------
# delete conditions


def del_schema(meta, uri, hi=63, capacity=8):
    dom = tiledb.Domain(tiledb.Dim("x", domain=(0, hi), tile=16, dtype=np.int64))
    attrs = [tiledb.Attr("i", dtype=np.int32), tiledb.Attr("f", dtype=np.float64),
             tiledb.Attr("s", dtype=str), tiledb.Attr("n", dtype=np.int32, nullable=True),
             tiledb.Attr("ns", dtype=str, nullable=True)]
    schema = mf.mk_schema(meta, offsets=[], validity=[], coords=[], domain=dom, attrs=attrs, sparse=True,
                          capacity=capacity)
    tiledb.Array.create(uri, schema)


def del_write(uri, ts, xs, seed=0):
    x = np.array(xs, dtype=np.int64)
    with tiledb.open(uri, "w", timestamp=ts) as A:
        A[x] = {"i": ((x * 7 + seed) % 23).astype(np.int32), "f": x * 0.5 + seed,
                "s": np.array(["s%d" % ((v + seed) % 9) for v in x], dtype=object),
                "n": np.array([None if v % 5 == 0 else int((v + seed) % 13) for v in x], dtype=object),
                "ns": np.array([None if v % 6 == 0 else ("" if v % 7 == 3 else "v%d" % ((v + seed) % 4))
                                for v in x], dtype=object)}


def do_delete(uri, ts, cond, deletes):
    with tiledb.open(uri, "d", timestamp=ts) as A:
        A.query(cond=cond).submit()
    deletes.append({"timestamp": ts, "condition": cond})


DELETES_MAIN = [
    (2, "i < 2"), (3, "f >= 19.5"), (4, "s == 's3'"), (5, "i != 7 and f < 3.0"),
    (6, "i == 5 or s == 's6'"), (7, "not (f > 1.0)"),
    # write at t=8
    (9, "ns == None"), (10, "n < 2"), (11, "s not in ['s0', 's1', 's2', 's4', 's5', 's7']"),
    (12, "f in [5.5, 14.0]"), (13, "x >= 46"), (14, "n in [8, 9]"),
]


def gen_delete_conditions(uri):
    meta, deletes = {}, []
    del_schema(meta, uri)
    del_write(uri, 1, range(0, 40))
    for ts, c in DELETES_MAIN:
        if ts == 9:
            del_write(uri, 8, range(30, 48), seed=1)
        do_delete(uri, ts, c, deletes)
    meta["deletes"] = deletes
    meta["notes"] = ("1-D sparse (x INT64), attributes i INT32, f FLOAT64, s STRING_UTF8, n nullable INT32, ns "
                     "nullable STRING_UTF8. Write at t=1 (x 0-39), deletes at t=2-7, write at t=8 (x 30-47, "
                     "overwrites 30-39), deletes at t=9-14. Conditions: <, >=, ==, != inside and, or, not, "
                     "IS NULL (written 'ns == None'), IN, NOT IN, on INT32, FLOAT64, STRING_UTF8, a nullable "
                     "INT32 and the dimension. Each delete is a __commits/*.del file (deletes[].commit). "
                     "What TileDB does (merged.json): 'ns == None' at t=9 removes the null cells and also the "
                     "cells holding an empty string; 'n < 2' at t=10 also removes the cells where n is null.")
    return meta


def gen_delete_isnull_fixed(uri):
    meta, deletes = {}, []
    dom = tiledb.Domain(tiledb.Dim("x", domain=(0, 7), tile=8, dtype=np.int64))
    schema = mf.mk_schema(meta, domain=dom, attrs=[tiledb.Attr("n", dtype=np.int32, nullable=True)], sparse=True)
    tiledb.Array.create(uri, schema)
    with tiledb.open(uri, "w", timestamp=1) as A:
        A[np.arange(6, dtype=np.int64)] = {"n": np.array([1, None, 3, None, 5, 6], dtype=object)}
    do_delete(uri, 2, "n == None", deletes)
    meta["deletes"] = deletes
    meta["notes"] = ("bad input written by TileDB itself: delete 'n == None' (IS NULL) on a nullable fixed-size "
                     "INT32 attribute is accepted and committed, but every read at or after t=2 fails "
                     "(merged.json: error).")
    return meta


def gen_delete_isnotnull_var(uri):
    meta, deletes = {}, []
    dom = tiledb.Domain(tiledb.Dim("x", domain=(0, 7), tile=8, dtype=np.int64))
    schema = mf.mk_schema(meta, offsets=[], validity=[], domain=dom,
                          attrs=[tiledb.Attr("ns", dtype=str, nullable=True)], sparse=True)
    tiledb.Array.create(uri, schema)
    with tiledb.open(uri, "w", timestamp=1) as A:
        A[np.arange(6, dtype=np.int64)] = {"ns": np.array(["a", None, "", None, "e", "f"], dtype=object)}
    do_delete(uri, 2, "ns != None", deletes)
    meta["deletes"] = deletes
    meta["notes"] = ("delete 'ns != None' (IS NOT NULL) on a nullable var string: see merged.json for which "
                     "cells TileDB keeps.")
    return meta


def gen_deletes_consolidated(uri):
    meta, deletes = {}, []
    del_schema(meta, uri)
    del_write(uri, 1, range(0, 24))
    do_delete(uri, 2, "i < 3", deletes)
    do_delete(uri, 3, "ns == None or f == 4.5", deletes)
    del_write(uri, 4, range(16, 32), seed=2)
    do_delete(uri, 5, "s in ['s1', 's2']", deletes)
    cfg = {"sm.consolidation.with_timestamps": "true", "sm.consolidation.purge_deleted_cells": "false"}
    tiledb.consolidate(uri, config=tiledb.Config(cfg))
    meta["deletes_processed_by_consolidation"] = len(deletes)
    tiledb.vacuum(uri)
    del_write(uri, 6, [40, 41, 3], seed=3)
    do_delete(uri, 7, "n >= 10", deletes)
    ccfg = {"sm.consolidation.mode": "commits"}
    tiledb.consolidate(uri, config=tiledb.Config(ccfg))
    vcfg = {"sm.vacuum.mode": "commits"}
    tiledb.vacuum(uri, config=tiledb.Config(vcfg))
    meta["deletes"] = deletes
    meta["operations"] = [{"op": "consolidate", "config": cfg, "vacuumed": True, "keeps_timestamps": True},
                          {"op": "consolidate", "config": ccfg}, {"op": "vacuum", "config": vcfg}]
    meta["notes"] = ("writes t=1, t=4; deletes t=2, t=3, t=5; fragments consolidated with timestamps without "
                     "purging (the t=1/t=4 fragments become __1_4_*, which holds __timestamps and the delete "
                     "metadata dt.tdb / dci.tdb for the deletes at t=2, t=3 and also t=5 (later than its t2: every "
                     "delete committed before the consolidation is processed)) and "
                     "vacuumed; then a write at t=6 and a delete at t=7; then the commits were consolidated "
                     "(.con) and vacuumed, so every .wrt / .del lives only inside __commits/*.con "
                     "(deletes[].commit names the .con and the entry).")
    return meta


# ---------------------------------------------------------------------------
# from_numpy / from_pandas


def gen_from_numpy(uri):
    meta = {"schema_filters": {"offsets": None, "validity": None, "coords": None}}
    tiledb.from_numpy(uri, (np.arange(20, dtype=np.int32).reshape(4, 5) * 3 - 7), timestamp=1)
    meta["notes"] = ("tiledb.from_numpy of a 4x5 INT32 array at t=1: a dense array with one anonymous "
                     "attribute named '' and dimensions __dim_0 / __dim_1, as from_numpy names them.")
    return meta


def gen_from_pandas(uri):
    import pandas as pd
    meta = {"schema_filters": {"offsets": None, "validity": None, "coords": None}}
    df = pd.DataFrame({
        "name": ["alpha", "", "gämma", "delta", "eps"],
        "value": [1.5, np.nan, -0.25, 1e10, 3.0],
        "kind": pd.Categorical(["x", "y", "x", "z", "y"], categories=["x", "y", "z"], ordered=True),
        "when": pd.to_datetime(["2024-01-01T00:00:00", "2024-02-29T12:30:00", "1970-01-01T00:00:00",
                                "2030-12-31T23:59:59.123", "1969-07-20T20:17:00"], format="ISO8601"),
        "count": np.array([3, 0, -1, 7, 2], dtype=np.int64),
    })
    tiledb.from_pandas(uri, df, timestamp=1)
    meta["notes"] = ("tiledb.from_pandas at t=1 of a 5-row DataFrame (a dense array, Zstd on every field): string "
                     "column name (with an empty string), float column value (with NaN), ordered categorical kind "
                     "(INT32 codes with an enumeration 'kind', see from_pandas.enumerations.json), datetime column "
                     "when (DATETIME_NS), INT64 count; the index becomes the __tiledb_rows dimension. TileDB-Py "
                     "also writes array metadata __pandas_index_dims / __pandas_attribute_repr.")
    return meta


# ---------------------------------------------------------------------------
# SOMA experiment


def gen_soma(uri):
    """Real tiledbsoma when SOMA_PYTHON is set, else a SOMA-like layout."""
    py = os.environ.get("SOMA_PYTHON")
    if py:
        r = subprocess.run([py, os.path.join(os.path.dirname(os.path.abspath(__file__)), "make_soma_fixture.py"),
                            uri], check=True, capture_output=True, text=True)
        info = json.loads(r.stdout.strip().splitlines()[-1])
        info["writer"] = "tiledbsoma"
        return info
    # SOMA-like: the same tree, written by TileDB-Py
    cfg = gcfg(1)
    for g in ("", "ms", "ms/RNA", "ms/RNA/X"):
        tiledb.Group.create(os.path.join(uri, g))
    obs = os.path.join(uri, "obs")
    ct = tiledb.Enumeration("cell_type", False, ["B", "NK", "T"])
    bt = tiledb.Enumeration("batch", True, ["b1", "b2"])
    tiledb.Array.create(obs, tiledb.ArraySchema(
        domain=tiledb.Domain(tiledb.Dim("soma_joinid", domain=(0, 5), tile=6, dtype=np.int64)),
        attrs=[tiledb.Attr("obs_id", dtype=str), tiledb.Attr("cell_type", dtype=np.int8, enum_label="cell_type"),
               tiledb.Attr("batch", dtype=np.int8, enum_label="batch"), tiledb.Attr("n_genes", dtype=np.int32)],
        enums=[ct, bt], sparse=True))
    with tiledb.open(obs, "w", timestamp=1) as A:
        A[np.arange(6, dtype=np.int64)] = {
            "obs_id": np.array(["cell_%d" % i for i in range(6)], dtype=object),
            "cell_type": np.array([0, 2, 0, 1, 2, 0], dtype=np.int8), "batch": np.array([0, 1, 0, 0, 1, 1], dtype=np.int8),
            "n_genes": np.array([120, 98, 143, 77, 101, 130], dtype=np.int32)}
        A.meta["soma_object_type"] = "SOMADataFrame"
    var = os.path.join(uri, "ms", "RNA", "var")
    ft = tiledb.Enumeration("feature_type", False, ["gene", "spike_in"])
    tiledb.Array.create(var, tiledb.ArraySchema(
        domain=tiledb.Domain(tiledb.Dim("soma_joinid", domain=(0, 3), tile=4, dtype=np.int64)),
        attrs=[tiledb.Attr("var_id", dtype=str), tiledb.Attr("feature_type", dtype=np.int8, enum_label="feature_type")],
        enums=[ft], sparse=True))
    with tiledb.open(var, "w", timestamp=1) as A:
        A[np.arange(4, dtype=np.int64)] = {"var_id": np.array(["ENSG0001", "ENSG0002", "ERCC-0001", "ENSG0004"], dtype=object),
                                           "feature_type": np.array([0, 0, 1, 0], dtype=np.int8)}
        A.meta["soma_object_type"] = "SOMADataFrame"
    X = os.path.join(uri, "ms", "RNA", "X", "data")
    tiledb.Array.create(X, tiledb.ArraySchema(
        domain=tiledb.Domain(tiledb.Dim("soma_dim_0", domain=(0, 5), tile=6, dtype=np.int64),
                             tiledb.Dim("soma_dim_1", domain=(0, 3), tile=4, dtype=np.int64)),
        attrs=[tiledb.Attr("soma_data", dtype=np.float32)], sparse=True))
    with tiledb.open(X, "w", timestamp=1) as A:
        A[np.array([0, 0, 1, 2, 3, 5]), np.array([0, 3, 1, 1, 2, 0])] = {
            "soma_data": np.array([1.0, 2.5, 3.0, 0.5, 4.0, 7.25], dtype=np.float32)}
        A.meta["soma_object_type"] = "SOMASparseNDArray"
    for g, members, kind in (("ms/RNA/X", [("data", "data")], "SOMACollection"),
                             ("ms/RNA", [("var", "var"), ("X", "X")], "SOMAMeasurement"),
                             ("ms", [("RNA", "RNA")], "SOMACollection"),
                             ("", [("obs", "obs"), ("ms", "ms")], "SOMAExperiment")):
        with tiledb.Group(os.path.join(uri, g), "w", config=cfg) as G:
            for n, u in members:
                G.add(u, name=n, relative=True)
            G.meta["soma_object_type"] = kind
    return {"writer": "tiledb-py (SOMA-like layout; tiledbsoma not available)"}


def soma_report(out, name, info, tmp, docs):
    uri = os.path.join(out, name)
    doc = {"experiment": name}
    doc.update(info)
    doc["reader"] = "tiledb-py %s, libtiledb %s" % (tiledb.__version__, "%d.%d.%d" % lt.version())
    doc["outdir_at_generation"] = OUT
    doc["root"] = describe_group(uri)
    arrays = {}

    def walk(node):
        for m in node["members"].values():
            if m["type"] == "group":
                walk(m["group"])
            else:
                arrays[m["path_from_outdir"]] = None
    walk(doc["root"])
    for p in sorted(arrays):
        apath = os.path.join(out, p)
        jn = p.replace("/", ".")
        with tiledb.open(apath) as A:
            ameta = read_metadata(A)
        arrays[p] = {"expected_json": jn + ".expected.json", "merged_json": jn + ".merged.json",
                     "metadata": ameta, "enumerations": enumeration_report(apath, tmp)}
        finish_array(out, p, {"notes": "array %s of the SOMA experiment (%s)" % (p, info["writer"])}, tmp, docs,
                     json_name=jn)
    doc["arrays"] = arrays
    doc["notes"] = ("tiny SOMA experiment: obs (6 cells; categorical cell_type and ordered batch -> enumerations), "
                    "ms/RNA/var (4 features; categorical feature_type), ms/RNA/X/data (sparse float32 layer). "
                    "All written with tiledb_timestamp=1.")
    write_json(os.path.join(out, name + ".soma.json"), doc)


# ---------------------------------------------------------------------------
# B. merged view


def box(r0, r1, c0, c1):
    return np.meshgrid(np.arange(r0, r1 + 1), np.arange(c0, c1 + 1), indexing="ij")


def gen_merge_dense_overlap(uri):
    meta = {}
    dom = tiledb.Domain(tiledb.Dim("r", domain=(1, 6), tile=3, dtype=np.int32),
                        tiledb.Dim("c", domain=(1, 8), tile=4, dtype=np.int32))
    attrs = [tiledb.Attr("i32", dtype=np.int32, fill=-1),
             tiledb.Attr("f64", dtype=np.float64),
             tiledb.Attr("n", dtype=np.int32, nullable=True),
             tiledb.Attr("s", dtype=str)]
    schema = mf.mk_schema(meta, offsets=[], validity=[], domain=dom, attrs=attrs, sparse=False)
    tiledb.Array.create(uri, schema)
    writes = [(1, (1, 4, 1, 5)), (2, (3, 5, 4, 7)), (3, (2, 2, 2, 6)), (4, (5, 6, 7, 8))]
    for t, (r0, r1, c0, c1) in writes:
        rr, cc = box(r0, r1, c0, c1)
        with tiledb.open(uri, "w", timestamp=t) as A:
            A[r0:r1 + 1, c0:c1 + 1] = {
                "i32": (t * 1000 + rr * 10 + cc).astype(np.int32),
                "f64": t + rr * 0.25 + cc * 0.125,
                # TileDB-Py takes 2-D nulls of a dense write as NaN (masked_invalid)
                "n": np.array([[np.nan if (r + c + t) % 4 == 0 else float(r * c * t) for c in range(c0, c1 + 1)]
                               for r in range(r0, r1 + 1)]),
                "s": np.array([["" if (r * c) % 5 == 0 else "t%d·%d,%d" % (t, r, c) for c in range(c0, c1 + 1)]
                               for r in range(r0, r1 + 1)], dtype=object)}
    meta["writes"] = [{"timestamp": t, "box": [[w[0], w[1]], [w[2], w[3]]]} for t, w in writes]
    meta["notes"] = ("2-D dense r 1-6 (tile 3) x c 1-8 (tile 4); four overlapping writes, none tile aligned: "
                     "t=1 r1-4 c1-5, t=2 r3-5 c4-7, t=3 r2 c2-6, t=4 r5-6 c7-8. Later writes win; cells of "
                     "the union box no write covered (e.g. r1 c6-8, r6 c1-6) read as fill values: i32 has the "
                     "custom fill -1. A fragment's padding cells (the rest of its tiles) never show.")
    return meta


def gen_merge_dense_3d(uri):
    meta = {}
    dom = tiledb.Domain(tiledb.Dim("band", domain=(1, 3), tile=1, dtype=np.int32),
                        tiledb.Dim("y", domain=(0, 3), tile=2, dtype=np.int32),
                        tiledb.Dim("x", domain=(0, 3), tile=2, dtype=np.int32))
    attrs = [tiledb.Attr("u16", dtype=np.uint16), tiledb.Attr("f32", dtype=np.float32)]
    schema = mf.mk_schema(meta, domain=dom, attrs=attrs, sparse=False)
    tiledb.Array.create(uri, schema)
    g = rng(3)
    with tiledb.open(uri, "w", timestamp=1) as A:
        A[1:4, 0:4, 0:4] = {"u16": g.integers(0, 65535, (3, 4, 4)).astype(np.uint16),
                            "f32": np.round(g.normal(0, 100, (3, 4, 4)), 2).astype(np.float32)}
    with tiledb.open(uri, "w", timestamp=2) as A:
        A[2:4, 1:3, 1:4] = {"u16": np.full((2, 2, 3), 65535, dtype=np.uint16),
                            "f32": np.arange(12, dtype=np.float32).reshape(2, 2, 3) * -0.5}
    meta["notes"] = ("3-D dense (band 1-3 tile 1, y 0-3 tile 2, x 0-3 tile 2), UINT16 and FLOAT32; t=1 writes "
                     "everything, t=2 bands 2-3, y 1-2, x 1-3 (not tile aligned).")
    return meta


def gen_merge_dense_colmajor(uri):
    meta = {}
    dom = tiledb.Domain(tiledb.Dim("r", domain=(1, 4), tile=2, dtype=np.int64),
                        tiledb.Dim("c", domain=(1, 6), tile=3, dtype=np.int64))
    attrs = [tiledb.Attr("a", dtype=np.int32), tiledb.Attr("s", dtype=str)]
    schema = mf.mk_schema(meta, offsets=[], domain=dom, attrs=attrs, sparse=False,
                          cell_order="col-major", tile_order="col-major")
    tiledb.Array.create(uri, schema)
    for t, (r0, r1, c0, c1) in [(1, (1, 3, 1, 4)), (2, (2, 4, 3, 6))]:
        rr, cc = box(r0, r1, c0, c1)
        with tiledb.open(uri, "w", timestamp=t) as A:
            A[r0:r1 + 1, c0:c1 + 1] = {"a": (t * 100 + rr * 10 + cc).astype(np.int32),
                                       "s": np.array([["%d:%d%d" % (t, r, c) for c in range(c0, c1 + 1)]
                                                      for r in range(r0, r1 + 1)], dtype=object)}
    meta["notes"] = ("2-D dense, col-major cell and tile order (r 1-4 tile 2, c 1-6 tile 3); t=1 r1-3 c1-4, t=2 "
                     "r2-4 c3-6 (r1 c5-6 and r4 c1-2 never written: fill values). Fragments store cells col-major; "
                     "merged reads are row-major.")
    return meta


def gen_merge_fill_types(uri):
    meta = {}
    dom = tiledb.Domain(tiledb.Dim("x", domain=(0, 11), tile=4, dtype=np.int32))
    attrs = [tiledb.Attr(n, dtype=d) for n, d in [
        ("i8", np.int8), ("u8", np.uint8), ("i16", np.int16), ("u16", np.uint16), ("i32", np.int32),
        ("u32", np.uint32), ("i64", np.int64), ("u64", np.uint64), ("f32", np.float32), ("f64", np.float64),
        ("b", np.bool_), ("dt_ms", "datetime64[ms]"), ("dt_ns", "datetime64[ns]"), ("chr3", "S3"),
        ("i32x2", np.dtype("i4,i4"))]]
    attrs += [tiledb.Attr("s_utf8", dtype=str), tiledb.Attr("s_ascii", dtype="ascii", var=True),
              tiledb.Attr("bytes_var", dtype=bytes, var=True),
              tiledb.Attr("n_i32", dtype=np.int32, nullable=True), tiledb.Attr("n_f64", dtype=np.float64, nullable=True),
              tiledb.Attr("n_b", dtype=np.bool_, nullable=True), tiledb.Attr("n_s", dtype=str, nullable=True)]
    schema = mf.mk_schema(meta, offsets=[], validity=[], domain=dom, attrs=attrs, sparse=False)
    tiledb.Array.create(uri, schema)

    def data(xs, t):
        x = np.array(xs)
        return {
            "i8": (x - 3 * t).astype(np.int8), "u8": (x * 20 + t).astype(np.uint8),
            "i16": (x * -1000).astype(np.int16), "u16": (x * 3000 + t).astype(np.uint16),
            "i32": (x * -100000 - t).astype(np.int32), "u32": (x * 10**9 % 2**32).astype(np.uint32),
            "i64": (x.astype(np.int64) * -10**15), "u64": (x.astype(np.uint64) * np.uint64(10**18)),
            "f32": (x * 0.5 - t).astype(np.float32), "f64": x * -0.25 + t,
            "b": (x % 2 == 0), "dt_ms": (x * 86400000 + t).astype("datetime64[ms]"),
            "dt_ns": (x * 10**9 + t).astype("datetime64[ns]"),
            "chr3": np.array([bytes([97 + v, 98 + v, 48 + t]) for v in xs], dtype="S3"),
            "i32x2": np.array([(v, -v * t) for v in xs], dtype="i4,i4"),
            "s_utf8": np.array(["é%d" % v if v % 3 else "" for v in xs], dtype=object),
            "s_ascii": np.array([("a%d" % v).encode() for v in xs], dtype=object),
            "bytes_var": np.array([bytes([0, v, 255]) for v in xs], dtype=object),
            "n_i32": np.array([None if v % 2 else v * 7 for v in xs], dtype=object),
            "n_f64": np.array([None if v % 3 == 0 else v / 8 for v in xs], dtype=object),
            "n_b": np.array([None if v == 3 else bool(v % 2) for v in xs], dtype=object),
            "n_s": np.array([None if v % 2 == 0 else "n%d" % v for v in xs], dtype=object),
        }
    with tiledb.open(uri, "w", timestamp=1) as A:
        A[2:5] = data([2, 3, 4], 1)
    with tiledb.open(uri, "w", timestamp=2) as A:
        A[9:10] = data([9], 2)
    meta["notes"] = ("1-D dense x 0-11 (tile 4) with one attribute per fixed datatype TileDB-Py creates (INT8..UINT64, "
                     "FLOAT32/64, BOOL, DATETIME_MS/NS, CHAR[3], INT32[2]) plus var UTF-8 / ASCII / bytes and nullable "
                     "INT32 / FLOAT64 / BOOL / UTF-8. Only x 2-4 (t=1) and x 9 (t=2) are written, so x 5-8 of the "
                     "merged box 2-9 show each type's fill value.")
    return meta


def gen_merge_sparse_overlap(uri):
    meta, deletes = {}, []
    dom = tiledb.Domain(tiledb.Dim("r", domain=(0, 15), tile=4, dtype=np.int32),
                        tiledb.Dim("c", domain=(0, 15), tile=4, dtype=np.int32))
    attrs = [tiledb.Attr("a", dtype=np.int32), tiledb.Attr("s", dtype=str),
             tiledb.Attr("n", dtype=np.float64, nullable=True), tiledb.Attr("ns", dtype=str, nullable=True)]
    schema = mf.mk_schema(meta, offsets=[], validity=[], coords=[], domain=dom, attrs=attrs, sparse=True, capacity=4)
    tiledb.Array.create(uri, schema)
    g = rng(5)
    base = [(int(r), int(c)) for r, c in zip(g.integers(0, 16, 14), g.integers(0, 16, 14))]
    base = sorted(set(base))
    sets = {1: base[:10], 2: base[5:12] + [(0, 0), (15, 15)], 4: base[0:3] + base[8:10] + [(7, 8)],
            5: [base[1], (0, 0), (3, 3)]}
    for t in (1, 2, 4, 5):
        if t == 4:
            do_delete(uri, 3, "a < 2020", deletes)
        pts = sets[t]
        with tiledb.open(uri, "w", timestamp=t) as A:
            A[np.array([p[0] for p in pts], dtype=np.int32), np.array([p[1] for p in pts], dtype=np.int32)] = {
                "a": np.array([t * 1000 + p[0] * 16 + p[1] for p in pts], dtype=np.int32),
                "s": np.array(["t%d(%d,%d)" % (t, p[0], p[1]) if (p[0] + t) % 3 else "" for p in pts], dtype=object),
                "n": np.array([None if (p[1] + t) % 3 == 0 else p[0] + t / 4 for p in pts], dtype=object),
                "ns": np.array([None if (p[0] * p[1] + t) % 4 == 0 else "ν%d" % (p[0] * p[1]) for p in pts],
                               dtype=object)}
    meta["deletes"] = deletes
    meta["notes"] = ("2-D sparse INT32 r, c (0-15, tiles 4x4), capacity 4, no duplicates; fragments at t=1, 2, 4, 5 "
                     "with overlapping coordinates (later wins); delete 'a < 2020' at t=3 (removes cells of t=1 and "
                     "of t=2 with a < 2020 written before it; cells of t=4/5 stay).")
    return meta


def gen_merge_sparse_dups(uri):
    meta = {}
    dom = tiledb.Domain(tiledb.Dim("x", domain=(0, 31), tile=8, dtype=np.int32))
    attrs = [tiledb.Attr("a", dtype=np.int32), tiledb.Attr("s", dtype=str)]
    schema = mf.mk_schema(meta, offsets=[], coords=[], domain=dom, attrs=attrs, sparse=True, capacity=4,
                          allows_duplicates=True)
    tiledb.Array.create(uri, schema)
    for t, xs in ((1, [1, 3, 3, 5, 7, 7, 7, 9]), (2, [3, 5, 5, 7, 9, 30])):
        with tiledb.open(uri, "w", timestamp=t) as A:
            A[np.array(xs, dtype=np.int32)] = {"a": np.array([t * 100 + i for i in range(len(xs))], dtype=np.int32),
                                               "s": np.array(["t%d.%d" % (t, i) for i in range(len(xs))], dtype=object)}
    meta["notes"] = ("1-D sparse with allows_duplicates, capacity 4; t=1 x [1,3,3,5,7,7,7,9], t=2 "
                     "[3,5,5,7,9,30]: every version stays visible (no overwrite).")
    return meta


def gen_equal_ts(uri, dense, want=(2, 0, 1), tries=200):
    """Three writes at one timestamp (5). TileDB orders them by fragment name
    (random); the array is rewritten until the name order of the writes is
    `want` (write k's fragment is at position want[k] when sorted by name),
    so the content is deterministic and differs from the write order."""
    for attempt in range(tries):
        if os.path.exists(uri):
            shutil.rmtree(uri)
        meta = {}
        if dense:
            dom = tiledb.Domain(tiledb.Dim("x", domain=(0, 11), tile=4, dtype=np.int32))
            attrs = [tiledb.Attr("a", dtype=np.int32), tiledb.Attr("s", dtype=str)]
            schema = mf.mk_schema(meta, offsets=[], domain=dom, attrs=attrs, sparse=False)
            ws = [(0, 7), (4, 11), (2, 5)]
        else:
            dom = tiledb.Domain(tiledb.Dim("x", domain=(0, 31), tile=8, dtype=np.int32))
            attrs = [tiledb.Attr("a", dtype=np.int32), tiledb.Attr("s", dtype=str)]
            schema = mf.mk_schema(meta, offsets=[], coords=[], domain=dom, attrs=attrs, sparse=True, capacity=4)
            ws = [[0, 2, 4, 6, 8], [4, 6, 10], [2, 6, 12]]
        tiledb.Array.create(uri, schema)
        made = []
        for k, w in enumerate(ws):
            before = set(os.listdir(os.path.join(uri, "__fragments")))
            with tiledb.open(uri, "w", timestamp=5) as A:
                if dense:
                    lo, hi = w
                    A[lo:hi + 1] = {"a": np.full(hi - lo + 1, 100 * (k + 1), dtype=np.int32),
                                    "s": np.array(["write%d" % k] * (hi - lo + 1), dtype=object)}
                else:
                    A[np.array(w, dtype=np.int32)] = {"a": np.full(len(w), 100 * (k + 1), dtype=np.int32),
                                                      "s": np.array(["write%d" % k] * len(w), dtype=object)}
            made.append((set(os.listdir(os.path.join(uri, "__fragments"))) - before).pop())
        ts5 = sorted(made)
        if tuple(ts5.index(m) for m in made) == tuple(want):
            break
    else:
        raise RuntimeError("could not get fragment name order %s" % (want,))
    meta["write_order_fragments"] = made
    meta["notes"] = ("%s; three overlapping writes all at timestamp 5: write k "
                     "(a = 100*(k+1), s = 'write<k>') covers %s. TileDB orders fragments with the same "
                     "timestamps by fragment name (the uuid part, random): the generator rewrote the array "
                     "until the name order of the three writes was %s (write k is at that position), so in "
                     "the merged view the write whose fragment name sorts last wins, not the last write. "
                     "Write order of the fragments: %s (%d attempts)." % (
                         "1-D dense x 0-11 tile 4" if dense else "1-D sparse x 0-31 tile 8, capacity 4",
                         ws, list(want), made, attempt + 1))
    return meta


def gen_merge_consolidated_partial(uri):
    meta = {}
    dom = tiledb.Domain(tiledb.Dim("x", domain=(0, 63), tile=8, dtype=np.int32))
    attrs = [tiledb.Attr("a", dtype=np.int32), tiledb.Attr("s", dtype=str)]
    schema = mf.mk_schema(meta, offsets=[], coords=[], domain=dom, attrs=attrs, sparse=True, capacity=4)
    tiledb.Array.create(uri, schema)

    def w(t, xs):
        with tiledb.open(uri, "w", timestamp=t) as A:
            A[np.array(xs, dtype=np.int32)] = {"a": np.array([t * 100 + x for x in xs], dtype=np.int32),
                                               "s": np.array(["t%dx%d" % (t, x) for x in xs], dtype=object)}
    w(1, list(range(0, 10)))
    w(2, list(range(5, 15)))
    w(3, [2, 12, 20])
    w(4, [0, 30])
    cfg = {"sm.consolidation.with_timestamps": "true"}
    tiledb.consolidate(uri, config=tiledb.Config(cfg))
    tiledb.vacuum(uri)
    w(5, [1, 2, 40])
    meta["operations"] = [{"op": "consolidate", "config": cfg, "vacuumed": True, "keeps_timestamps": True}]
    meta["extra_timestamps"] = [2, 3]
    meta["notes"] = ("1-D sparse; writes at t=1 (x 0-9), 2 (x 5-14), 3 (x 2, 12, 20), 4 (x 0, 30) consolidated "
                     "with per-cell timestamps and vacuumed into __1_4_*, then t=5 (x 1, 2, 40). States 2 and 3 "
                     "(write timestamps that no longer name a fragment) are included: opened at (0, T) the "
                     "consolidated fragment shows only its cells with timestamp <= T.")
    return meta


def gen_merge_consolidated_partial_dense(uri):
    meta = {}
    dom = tiledb.Domain(tiledb.Dim("x", domain=(0, 15), tile=4, dtype=np.int32))
    attrs = [tiledb.Attr("a", dtype=np.int32), tiledb.Attr("s", dtype=str)]
    schema = mf.mk_schema(meta, offsets=[], validity=[], domain=dom, attrs=attrs, sparse=False)
    tiledb.Array.create(uri, schema)

    def w(t, lo, hi):
        with tiledb.open(uri, "w", timestamp=t) as A:
            A[lo:hi + 1] = {"a": np.arange(lo, hi + 1, dtype=np.int32) + t * 100,
                            "s": np.array(["t%dx%d" % (t, x) for x in range(lo, hi + 1)], dtype=object)}
    w(1, 0, 5)
    w(2, 4, 9)
    w(3, 2, 3)
    tiledb.consolidate(uri)
    tiledb.vacuum(uri)
    w(4, 8, 13)
    meta["operations"] = [{"op": "consolidate", "config": {}, "vacuumed": True, "keeps_timestamps": False}]
    meta["extra_timestamps"] = [2]
    meta["notes"] = ("1-D dense x 0-15 tile 4; writes t=1 x0-5, t=2 x4-9, t=3 x2-3 consolidated (no per-cell "
                     "timestamps) and vacuumed into __1_3_* (its stored tiles hold the fill value where no write "
                     "was), then t=4 x8-13. Opened at (0, 1) or (0, 2) nothing is visible (the consolidated "
                     "fragment needs T >= 3).")
    return meta


def gen_merge_deletes_consolidated(uri, purge):
    meta, deletes = {}, []
    dom = tiledb.Domain(tiledb.Dim("x", domain=(0, 63), tile=8, dtype=np.int32))
    attrs = [tiledb.Attr("a", dtype=np.int32), tiledb.Attr("s", dtype=str)]
    schema = mf.mk_schema(meta, offsets=[], coords=[], domain=dom, attrs=attrs, sparse=True, capacity=4)
    tiledb.Array.create(uri, schema)

    def w(t, xs, base):
        with tiledb.open(uri, "w", timestamp=t) as A:
            A[np.array(xs, dtype=np.int32)] = {"a": np.array([base + x for x in xs], dtype=np.int32),
                                               "s": np.array(["x%d" % (x % 8) for x in xs], dtype=object)}
    w(1, list(range(0, 16)), 0)
    w(2, list(range(8, 24)), 100)
    do_delete(uri, 3, "a < 4", deletes)
    w(4, list(range(20, 28)), 200)
    cfg = {"sm.consolidation.with_timestamps": "true",
           "sm.consolidation.purge_deleted_cells": "true" if purge else "false"}
    tiledb.consolidate(uri, config=tiledb.Config(cfg))
    meta["deletes_processed_by_consolidation"] = len(deletes)
    tiledb.vacuum(uri)
    do_delete(uri, 5, "a >= 215 and a < 225", deletes)
    w(6, [0, 1, 2, 3, 40], 300)
    do_delete(uri, 7, "s == 'x6'", deletes)
    meta["deletes"] = deletes
    meta["operations"] = [{"op": "consolidate", "config": cfg, "vacuumed": True, "keeps_timestamps": True}]
    meta["extra_timestamps"] = [2]
    meta["notes"] = ("1-D sparse; writes t=1 (x 0-15, a=x), t=2 (x 8-23, a=100+x), delete 'a < 4' at t=3, write "
                     "t=4 (x 20-27, a=200+x); consolidated with timestamps, purge_deleted_cells=%s, vacuumed; then "
                     "delete at t=5 (matches the newest versions of x 20-24, written at t=4, but not the older "
                     "t=2 versions of x 20-23), write t=6 (x 0-3 again and 40), delete at t=7. Deleted coordinates "
                     "rewritten later reappear with the new value." % ("true" if purge else "false"))
    return meta


def gen_merge_sparse_colmajor(uri):
    meta = {}
    dom = tiledb.Domain(tiledb.Dim("r", domain=(0, 7), tile=4, dtype=np.int32),
                        tiledb.Dim("c", domain=(0, 7), tile=4, dtype=np.int32))
    attrs = [tiledb.Attr("a", dtype=np.int32), tiledb.Attr("s", dtype=str)]
    schema = mf.mk_schema(meta, offsets=[], coords=[], domain=dom, attrs=attrs, sparse=True, capacity=4,
                          cell_order="col-major", tile_order="row-major")
    tiledb.Array.create(uri, schema)
    g = rng(7)
    pts1 = sorted(set((int(r), int(c)) for r, c in zip(g.integers(0, 8, 14), g.integers(0, 8, 14))))
    pts2 = pts1[::3] + [(7, 0), (0, 7)]
    for t, pts in ((1, pts1), (2, pts2)):
        with tiledb.open(uri, "w", timestamp=t) as A:
            A[np.array([p[0] for p in pts], dtype=np.int32), np.array([p[1] for p in pts], dtype=np.int32)] = {
                "a": np.array([t * 100 + p[0] * 8 + p[1] for p in pts], dtype=np.int32),
                "s": np.array(["t%d:%d,%d" % (t, p[0], p[1]) for p in pts], dtype=object)}
    meta["notes"] = ("2-D sparse, col-major cell order, row-major tile order (tiles 4x4), capacity 4; two "
                     "overlapping writes. Global order: tiles row-major, cells col-major within a tile.")
    return meta


def gen_merge_sparse_stringdim(uri):
    meta = {}
    dom = tiledb.Domain(tiledb.Dim("key", domain=(None, None), tile=None, dtype="ascii"),
                        tiledb.Dim("n", domain=(0, 9), tile=5, dtype=np.int32))
    attrs = [tiledb.Attr("a", dtype=np.int32), tiledb.Attr("s", dtype=str, nullable=True)]
    schema = mf.mk_schema(meta, offsets=[], validity=[], coords=[], domain=dom, attrs=attrs, sparse=True, capacity=4)
    tiledb.Array.create(uri, schema)
    writes = {1: [("pear", 1), ("apple", 3), ("fig", 0), ("apple", 9), ("", 2), ("zz", 5)],
              2: [("apple", 3), ("banana", 4), ("fig", 0), ("a", 7)],
              3: [("apple", 9), ("", 2), ("kiwi", 1)]}
    for t, pts in writes.items():
        with tiledb.open(uri, "w", timestamp=t) as A:
            A[np.array([k.encode() for k, _ in pts], dtype=object), np.array([n for _, n in pts], dtype=np.int32)] = {
                "a": np.array([t * 100 + i for i in range(len(pts))], dtype=np.int32),
                "s": np.array([None if (i + t) % 4 == 0 else "%s@%d" % (k, t) for i, (k, _) in enumerate(pts)],
                              dtype=object)}
    meta["notes"] = ("sparse, STRING_ASCII dimension key (with an empty key) + INT32 n (tile 5), capacity 4, no "
                     "duplicates; writes t=1, 2, 3 overwrite some (key, n).")
    return meta


# ---------------------------------------------------------------------------
# driver


def finish_array(out, name, meta, tmp, docs, json_name=None):
    """Write <json_name>.expected.json and .merged.json for the array OUT/name."""
    uri = os.path.join(out, name)
    jn = json_name or name
    mf.remove_empty_dirs(uri)
    doc, checks = describe(uri, name, meta, tmp)
    write_json(os.path.join(out, jn + ".expected.json"), doc)
    md = mm.merged_doc(uri, name=name, extra_timestamps=meta.get("extra_timestamps", ()))
    write_json(os.path.join(out, jn + ".merged.json"), md)
    docs.append({"array": name, "json": jn, "array_type": doc["array_type"],
                 "fragments": [f["cell_num"] for f in doc["fragments"]],
                 "states": [(r["timestamp"], r.get("cell_num", "error")) for r in md["reads"]],
                 "raw_checks": checks})
    return doc, md


def verify_all(out):
    """Open every array / group under OUT with TileDB-Py and read it."""
    lines = []
    for d, subdirs, files in os.walk(out):
        kind = tiledb.object_type(d)
        if kind == "array":
            try:
                with tiledb.open(d) as A:
                    ned = A.nonempty_domain()
                    n = None
                    if ned is not None:
                        r = A.query(attrs=[A.schema.attr(0).name])[:] if A.schema.sparse else None
                        n = len(next(iter(r.values()))) if r is not None else int(
                            np.prod([int(hi) - int(lo) + 1 for lo, hi in ned]))
                lines.append("array %-60s ok (%s cells)" % (rel(d), n))
            except Exception as e:
                lines.append("array %-60s READ FAILS: %s" % (rel(d), str(e).splitlines()[0][:90]))
            subdirs[:] = ["__labels"] if "__labels" in subdirs else []
        elif kind == "group":
            with tiledb.Group(d) as G:
                lines.append("group %-60s ok (%d members)" % (rel(d), len(G)))
    return lines


def main():
    global OUT
    if len(sys.argv) != 2:
        sys.exit("usage: make_feature_fixtures.py OUTDIR")
    OUT = os.path.abspath(sys.argv[1])
    if os.path.exists(OUT):
        shutil.rmtree(OUT)
    os.makedirs(OUT)
    tmp = tempfile.mkdtemp(prefix="feature-fixtures-")
    docs, extra = [], []
    try:
        # A. what people's arrays hold
        gen_groups(OUT)
        info = gen_soma(os.path.join(OUT, "soma_experiment"))
        mf.remove_empty_dirs(os.path.join(OUT, "soma_experiment"))
        soma_report(OUT, "soma_experiment", info, tmp, docs)
        extra.append(("soma_experiment", info["writer"]))
        gen_metadata(os.path.join(OUT, "metadata_types"), vacuum=False)
        gen_metadata(os.path.join(OUT, "metadata_vacuumed"), vacuum=True)
        for name, gen in (("enumerations", lambda u: gen_enumerations(u, 2)),
                          ("enumerations_wallclock", lambda u: gen_enumerations(u, None)),
                          ("enumerations_bad_code", gen_enum_bad_code)):
            uri = os.path.join(OUT, name)
            meta = gen(uri)
            mf.remove_empty_dirs(uri)
            enum_json(OUT, name, meta["notes"], tmp)
            finish_array(OUT, name, meta, tmp, docs)
        gen_dimension_labels_all(OUT, tmp, docs)
        for name, gen in (("delete_conditions", gen_delete_conditions),
                          ("delete_isnull_fixed", gen_delete_isnull_fixed),
                          ("delete_isnotnull_var", gen_delete_isnotnull_var),
                          ("deletes_consolidated", gen_deletes_consolidated),
                          ("from_numpy", gen_from_numpy),
                          ("from_pandas", gen_from_pandas),
                          # B. merged view
                          ("merge_dense_overlap", gen_merge_dense_overlap),
                          ("merge_dense_3d", gen_merge_dense_3d),
                          ("merge_dense_colmajor", gen_merge_dense_colmajor),
                          ("merge_fill_types", gen_merge_fill_types),
                          ("merge_sparse_overlap", gen_merge_sparse_overlap),
                          ("merge_sparse_dups", gen_merge_sparse_dups),
                          ("merge_equal_timestamps_dense", lambda u: gen_equal_ts(u, True)),
                          ("merge_equal_timestamps_sparse", lambda u: gen_equal_ts(u, False)),
                          ("merge_consolidated_partial", gen_merge_consolidated_partial),
                          ("merge_consolidated_partial_dense", gen_merge_consolidated_partial_dense),
                          ("merge_deletes_consolidated", lambda u: gen_merge_deletes_consolidated(u, False)),
                          ("merge_deletes_purged", lambda u: gen_merge_deletes_consolidated(u, True)),
                          ("merge_sparse_colmajor", gen_merge_sparse_colmajor),
                          ("merge_sparse_stringdim", gen_merge_sparse_stringdim)):
            meta = gen(os.path.join(OUT, name))
            finish_array(OUT, name, meta, tmp, docs)
            if name == "from_pandas":
                enum_json(OUT, name, meta["notes"], tmp)
            print("%-34s fragments %s" % (name, docs[-1]["fragments"]), flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    with open(os.path.join(OUT, "_summary.json"), "w") as fh:
        mm.dump({"writer": writer_info(), "arrays": docs, "extra": extra}, fh)
    lines = sorted(verify_all(OUT))
    for line in lines:
        print(line)
    write_readme(OUT, docs)
    print("ok: %d arrays with expected/merged JSON, %d raw field checks" % (
        len(docs), sum(d["raw_checks"] for d in docs)))


README = r"""# Feature fixtures: what people's arrays hold, and the merged view

Small TileDB arrays and groups for two coming fragfs features, written by
`scripts/make_feature_fixtures.py` (run it through `scripts/make_feature_fixtures.sh`,
which pins tiledb-py {tiledb_py} / libtiledb {libtiledb}, numpy 2.4.6, pandas 2.3.3, and
tiledbsoma 2.3.0 in a second venv for the SOMA experiment). Every array is on-disk
format {format}. Every expected value below is what TileDB(-Py) read back from these
folders; the only inputs recorded as written are the delete condition strings (what
the generator passed to TileDB), the operation logs and the notes.

Regenerate (needs PyPI; deletes and rewrites this folder; fragment / schema / metadata
file names change on every run, contents do not):

    bash scripts/make_feature_fixtures.sh        # NO_SOMA=1: SOMA-like layout without tiledbsoma

The same script also rewrites `tests/fixtures/tiledb/<array>.merged.json` (read-only
use of those arrays, via `scripts/make_merged_json.py ARRAY [KEY]`).

Size: {size} apparent (`du -sh --apparent-size`), of which {dirs} folders count 4 KiB
each; {files} bytes of file content. Empty folders (`__meta`, `__labels`, `__enumerations`,
...) are removed after writing, as git would drop them; TileDB opens the arrays
without them (checked: every array and group is reopened and read at the end).

## Fixtures

{table}

## Files

For an array `X/`: `X.expected.json` (per fragment) and `X.merged.json` (per state),
plus, depending on the fixture, `X.enumerations.json`, `X.labels.json`, `X.meta.json`;
for a group `G/`: `G.group.json`; the SOMA experiment: `soma_experiment.soma.json`
(and `soma_experiment.<member path with dots>.expected.json` / `.merged.json` per array).
Label arrays: `dimension_labels.label_<name>.expected.json` / `.merged.json`.
`_summary.json`: per array the cells per fragment and per state, and the raw checks.

### `X.expected.json` — per fragment, corpus format

Exactly the shared corpus format (`shared/corpus/README.md`, "`<array>.expected.json`"),
computed as in `scripts/make_fixtures.py`, with these differences:

* every fragment is read **alone** through TileDB: a temporary copy of the array that
  holds only the schema folder, that fragment and a `.wrt` for it (so fragments
  sharing one timestamp range, and fragments committed only inside a `.con`, are
  read one by one); fragments sharing a timestamp range are separate entries, in
  name order (`fragment` is always one name);
* dense fragments need not be tile aligned: the cells inside the fragment's
  non-empty domain come from TileDB; the other cells of its tiles (padding, which
  TileDB cannot return) are the stored bytes, taken from the unfiltered tile files
  (the generator requires an empty filter list for such fields). New key
  `in_non_empty_domain`: per storage cell, 1 if the write covered it;
* `attributes[]` / `fields[]` have `enumeration: <name>` for enumerated attributes;
* `deletes[]` have `commit`: `__commits/<name>.del`, or `__commits/<c>.con:__commits/<name>.del`
  when the delete lives only inside a consolidated-commits file; `commit_file` of a
  fragment is `null` when its commit lives only in a `.con`;
* `__delete_timestamps` / `__delete_condition_index` (dt.tdb / dci.tdb of a fragment
  consolidated with timestamps without purging): which delete removes which cell
  version is decided by TileDB (the cells of that version are written to a scratch
  array with the same schema, the condition is deleted there, the cells TileDB no
  longer returns match); processed conditions are all deletes committed before the
  consolidation, also those later than the fragment's t2
  (`deletes_processed_by_consolidation`). Checked against the raw files;
* extra keys: `writes`, `write_order_fragments`, `extra_timestamps`.

Every field with an empty filter list (and empty offsets / validity / coords lists where
relevant) is compared byte for byte with the tile files ({raw_checks} field checks).

### `X.merged.json` — per state, corpus format

Exactly the corpus format ("`<array>.merged.json`"), written by
`scripts/make_merged_json.py` (`merged_doc`). States: latest (`timestamp: null`), then
every distinct t1 / t2 of the fragment folders on disk **and of the delete commits**
(`.del` files and `.del` entries of `.con` files), plus, for
`merge_consolidated_partial*` and `merge_deletes_*`, the write timestamps a consolidation
folded into one fragment (`extra_timestamps` in the expected.json), increasing, each read
with `timestamp=(0, T)`. A state TileDB cannot read has `error` (first line of TileDB's
message) instead of the data.

### Metadata entries (`.group.json`, `.meta.json`, `.soma.json`, `.enumerations.json`)

`metadata` maps each **stored** key (TileDB-Py stores a numpy array value `k` under
`__np_flat_k`, plus `__np_shape_k` (INT64 shape) when it is not 1-D) to:

| key | meaning |
|---|---|
| `datatype` | TileDB datatype name TileDB returns for the key |
| `value_num` | number of values (bytes for strings / blobs) |
| `value` | numbers: always a list (NaN / Infinity as strings, datetimes as raw int64, BOOL 0/1); `STRING_UTF8` / `STRING_ASCII`: a string; `BLOB` / `CHAR`: a list of byte values |
| `bytes_hex` | the value bytes exactly as TileDB returned them (little-endian) |
| `meta_key` | the key TileDB-Py's `A.meta` shows (`null` for `__np_shape_*`) |
| `meta_value` | what `A.meta[meta_key]` returns (JSON; a numpy array as a (nested) list) |
| `meta_error` | instead of `meta_value` when TileDB-Py raises (BOOL, DATETIME_*, TIME_* scalars) |

### `G.group.json`

`{{group, tiledb_py, libtiledb, outdir_at_generation, root: NODE, notes}}`, with NODE =

| key | meaning |
|---|---|
| `path_from_outdir` | the group folder relative to this folder |
| `group_files`, `meta_files` | files in `__group/` and `__meta/` |
| `metadata` | group metadata (above) |
| `member_order` | member names in the order TileDB-Py lists them |
| `members` | name -> `{{name, type: "array"/"group" (as the group records it), relative, stored_uri, path_from_group, path_from_outdir, exists, object_type_on_disk, group: NODE (nested groups that exist)}}` |

`stored_uri` is the string the group file holds (checked in the decompressed group
file): the relative path for relative members, `file://` + the absolute path at
generation time for absolute ones (`outdir_at_generation` gives that prefix: compare
absolute members through `path_from_outdir`, which survives moving the repository).

### `X.meta.json` (metadata_types, metadata_vacuumed)

`{{array, tiledb_py, libtiledb, operations, write_errors, meta_files_before_consolidation,
meta_files, metadata, states, states_changed_by_consolidation, notes}}`: `operations` is the
write log (per timestamp the keys set / deleted, then consolidate / vacuum with their
config); `metadata` the array opened without a timestamp; `states[]` =
`{{timestamp: T, metadata: {{key: {{datatype, bytes_hex}}}}}}` opened at `(0, T)` after
everything; `states_changed_by_consolidation` the T whose state differed before the
consolidation (before it, both arrays had the same states).

### `X.enumerations.json`

| key | meaning |
|---|---|
| `schema_files`, `enumeration_files` | files in `__schema/` and `__schema/__enumerations/` |
| `schemas[]` | per schema file: `enumeration_files` it names (found in its decompressed payload, and verified: a copy holding only that schema and those files opens and loads every enumeration), `attributes` (attribute -> enumeration name) and `enumerations` (name -> `{{datatype, cell_val_num, ordered, values}}`) as TileDB loads them |
| `fragments[]` | per fragment: `array_schema_name` (the schema it was written with, from FragmentInfo), `non_empty_domain`, `order` of the cells (`row-major` dense box / `global` sparse), `codes` (attribute -> stored codes, `null` = null cell, from TileDB's raw buffers) and `labels_latest_schema` (what TileDB-Py's `A[...]` decodes for that fragment alone, with the schema TileDB picks) or `labels_latest_schema_error` |
| `states[]` | per state (as in merged.json): the `enumerations` and `schema_attributes` TileDB uses, and `labels` (TileDB-Py's decoded read of the non-empty domain) or `labels_error` |
| `metadata` | array metadata |

### `dimension_labels.labels.json`

`labels[]`: `{{name, dim_index, dimension, order, label_datatype, label_cell_val_num,
label_attr_name, uri (relative, as the schema stores it), label_array: {{array_type,
dimensions, attributes}}, read_through_label: {{range: [min, max] label, result: what
A.label_index([name])[...] returns over that range (label values and attribute t)}}}}`.
TileDB-Py cannot list the labels of a schema: the generator asks for the names it created
and checks that `__labels/` has that many arrays.

### `soma_experiment.soma.json`

`{{experiment, tiledbsoma, libtiledb, pandas, pyarrow, numpy, writer, reader,
outdir_at_generation, root: NODE (as in group.json), arrays: {{path: {{expected_json,
merged_json, metadata, enumerations: (as in enumerations.json)}}}}, notes}}`.

## What TileDB 2.30 / TileDB-Py 0.36.1 do here

{findings}
"""


FINDINGS = """\
* **Schema selection is by name, not by timestamp.** TileDB lists `__schema/` and picks
  the last file, in name (string) order, whose t2 is <= the open timestamp (if none
  qualifies, the first). A schema written with a small explicit timestamp
  (`ArraySchemaEvolution.timestamp(2)`, or tiledbsoma's `tiledb_timestamp=1`) is named
  `__2_2_...` / `__1_1_...`, which sorts after the creation schema's wall-clock name
  (`__17...`) although it is numerically older: TileDB uses it as the latest schema
  (`enumerations`, `soma_experiment`). With a wall-clock evolution
  (`enumerations_wallclock`) both schemas are newer than every write, so a read at
  (0, 3) uses the creation schema: its enumerations lack the new labels and TileDB-Py
  cannot decode the t=3 codes (`labels_error`).
* **tiledbsoma**: the obs / var fragments name the creation schema (whose enumerations
  are empty), and the labels live only in the `__1_1_*` schema added when writing:
  decoding codes with the fragment's own schema gives nothing.
* Enumeration codes are not checked on write: `enumerations_bad_code` stores codes 7
  and 255 for a 3-label enumeration; TileDB-Py's decoding read then raises IndexError.
* Delete `n == None` (IS NULL) on a nullable **fixed-size** attribute is accepted and
  committed, but every read at or after its timestamp fails
  (`delete_isnull_fixed`: "Value node condition value size mismatch: 4 != 0").
* On a nullable var string, delete `ns == None` removes the null cells **and the
  empty-string cells**; delete `ns != None` removes every cell except the empty
  strings, nulls included (`delete_conditions` t=9, `delete_isnotnull_var`).
* A comparison / IN delete on a nullable attribute also removes the null cells
  (`n < 2` at t=10 of `delete_conditions`): TileDB stores the negated condition (the
  cells to keep) and a null never satisfies it.
* A delete applies only to cells written before it: the t=8 write of
  `delete_conditions` is untouched by the deletes at t=2-7.
* Consolidation with timestamps, without purging, processes every delete committed
  before it, also those later than the new fragment's t2 (`deletes_consolidated`:
  dt.tdb holds 5 for cells matching the t=5 delete in fragment `__1_4_*`). Vacuuming
  fragments keeps the `.del` files; consolidating + vacuuming commits moves every
  `.wrt` / `.del` into one `.con`.
* `purge_deleted_cells=true` drops the deleted cells from the consolidated fragment:
  time travel to before the delete no longer shows them, and the fragment's
  non-empty domain shrinks (`merge_deletes_purged` states 1-2 vs
  `merge_deletes_consolidated`). The `.del` file stays.
* A delete removes the newest version of a coordinate only if it matches; older
  versions that do not match do not reappear (`merge_deletes_*` t=5).
* Time travel into a fragment consolidated with timestamps shows only its cells with
  timestamp <= T, but `non_empty_domain` is the whole fragment's
  (`merge_consolidated_partial` states 1-3). A dense consolidation (no timestamps)
  makes the state before its t2 empty (`merge_consolidated_partial_dense` states 1-2).
* Fragments with the same timestamps are applied in fragment-name order (the random
  uuid), not write order (`merge_equal_timestamps_*`).
* Fill values of a merged dense read (`merge_fill_types` x 5-8): each integer type's
  minimum, unsigned maximum, floats NaN, DATETIME INT64 minimum, BOOL 0, fixed CHAR
  0x80 per byte, var STRING_UTF8 / STRING_ASCII one NUL byte, var CHAR (bytes) one 0x80
  byte, nullable cells validity 0 (a nullable var cell still 1 byte long); the schema's
  fill value wins (`merge_dense_overlap` i32: -1). Dense padding stored in a partial
  tile: zeros, var cells one NUL byte, validity 0.
* Array metadata: consolidation without vacuum keeps the old `__meta` files and adds
  `__2_5_*` + `.vac`; after vacuuming, opened at (0, T) for T < 5 the array has **no**
  metadata at all (only the consolidated `__2_5_*` file remains).
* For an empty metadata value, TileDB-Py's `_get_metadata_from_index` returns a view of
  one value's size over no data; reading it crashes the process (segfault). The
  generator reads values with `_get_metadata`.

## What TileDB-Py 0.36.1 could not produce or read

* Delete / query conditions: `a is None` / `a is not None` ("the `is` operator is not
  supported"), `isnull(a)` ("Valid casts are attr(), dim(), or val())."), `a != a`
  (right-hand side must be a constant), `a & 1 == 0` ("Unable to parse expression
  component BinOp..."). IS NULL is written `a == None`, IS NOT NULL `a != None`.
  `not (...)` works on a single comparison only: `not (a == 1 or b == 2)` and
  `not (a == 1 and b < 3)` raise `RuntimeError: bad_function_call`, and
  `not (a in [1, 2])` / `not (s in ['x'])` crash the process (segfault), in reads and
  deletes alike. (So `delete_conditions` uses `not` on a comparison; NOT IN is written
  `s not in [...]`.)
* Metadata: every datatype is writable (numpy scalars give INT8..UINT64, FLOAT32/64,
  BOOL, CHAR (`np.bytes_`), DATETIME_* (`np.datetime64`), TIME_* (`np.timedelta64`);
  python int / float / list give INT64 / FLOAT64; `str` STRING_UTF8, `bytes` BLOB;
  empty tuple: INT32 with 0 values; numpy arrays of any of these), except STRING_ASCII,
  which only the private binding `Array._put_metadata(key, STRING_ASCII, n, buf)`
  writes (`ascii_private_api`). `A.meta[k]` raises "TileDB datatype not supported" for
  BOOL, DATETIME_* and TIME_* scalars (so `dict(A.meta)` fails on such an array;
  `meta_error`). `np.str_("héllo")` is stored truncated to 5 bytes, `"héll"`
  (`str_np_nonascii`: TileDB-Py passes the character count as the byte count). A python
  `True` is stored as INT64 1. An empty key `""` is accepted.
* Dense 2-D writes of a nullable attribute reject `None` in an object array
  ("NumPy array conversion check failed"); nulls are passed as NaN in a float array
  (`merge_dense_overlap` n).
* TileDB-Py has no API listing a schema's dimension labels (only `dim_label(name)` /
  `has_dim_label(name)`), nor the enumeration file names of a schema.
* The fixtures venv has no pyarrow: TileDB-Py's `.df[]` needs it (and pandas < 3), so
  labels are read with `A[...]`.
"""


def write_readme(out, docs):
    rows = ["| fixture | kind | fragments (cells) | states | covers |", "|---|---|---|---|---|"]
    notes = {}
    for fn in sorted(os.listdir(out)):
        if fn.endswith(".expected.json"):
            with open(os.path.join(out, fn)) as fh:
                notes[fn[:-len(".expected.json")]] = json.load(fh).get("notes", "")
    for fn, kind in (("group_nested.group.json", "group"), ("group_missing_member.group.json", "group"),
                     ("metadata_types.meta.json", "array metadata"), ("metadata_vacuumed.meta.json", "array metadata"),
                     ("soma_experiment.soma.json", "SOMA experiment")):
        with open(os.path.join(out, fn)) as fh:
            rows.append("| `%s` | %s | | | %s |" % (fn.split(".")[0], kind, json.load(fh)["notes"]))
    rows.append("| `group_outside_target` | array | 0 | | the array group_nested's member 'outside' points to "
                "by absolute URI (schema only) |")
    for d in docs:
        st = ", ".join("%s:%s" % ("latest" if t is None else t, n) for t, n in d["states"])
        rows.append("| `%s` | %s | %d (%s) | %s | %s |" % (
            d["array"], d["array_type"], len(d["fragments"]), ", ".join(map(str, d["fragments"])), st,
            notes.get(d["json"], "").replace("|", "\\|")))
    size = subprocess.run(["du", "-sh", "--apparent-size", out], capture_output=True, text=True).stdout.split()[0]
    ndirs = sum(len(ds) for _, ds, _ in os.walk(out))
    nbytes = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(out) for f in fs)
    fmt = sorted({json.load(open(os.path.join(out, d["json"] + ".expected.json")))["format_version"] for d in docs})
    text = README.format(tiledb_py=tiledb.__version__, libtiledb="%d.%d.%d" % lt.version(),
                         format=", ".join(map(str, fmt)), size=size, dirs=ndirs, files=nbytes,
                         raw_checks=sum(d["raw_checks"] for d in docs), table="\n".join(rows),
                         findings=FINDINGS)
    with open(os.path.join(out, "README.md"), "w") as fh:
        fh.write(text)


if __name__ == "__main__":
    main()
