#!/usr/bin/env python3
"""Hand-built TileDB arrays for the format versions no installable TileDB writes.

* Format 1 (TileDB 1.4): tiledb-py never shipped a wheel for it (`docs/corpus.md`).
* Format 23 (TileDB 2.31+): not released as a wheel installable here yet.

Every byte is laid out from the format digest in `docs/tiledb-format/` (section numbers
in the comments), with only the Python standard library: no TileDB, and nothing taken
from fragfs. Each array gets an `<array>.expected.json` in the corpus format
(`docs/corpus.md`) holding the values this script wrote, which the tests
compare with what fragfs serves.

Output is deterministic (fixed UUIDs and timestamps); run from anywhere:

    python3 scripts/make_handbuilt_fixtures.py    # rewrites tests/fixtures/handbuilt/
"""

import json
import shutil
import struct
import zlib
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "handbuilt"

# Datatype ids and sizes (02-enums.md).
INT32, INT64, FLOAT64, CHAR, UINT16, STRING_ASCII = 0, 1, 3, 4, 8, 11
TYPES = {
    INT32: ("INT32", "<i", 4),
    INT64: ("INT64", "<q", 8),
    FLOAT64: ("FLOAT64", "<d", 8),
    CHAR: ("CHAR", "<b", 1),
    UINT16: ("UINT16", "<H", 2),
    STRING_ASCII: ("STRING_ASCII", "<B", 1),
}
VAR = 0xFFFFFFFF
ROW_MAJOR, COL_MAJOR = 0, 1
DENSE, SPARSE = 0, 1
GZIP = 1  # filter type and compressor id


def u8(v):
    return struct.pack("<B", v)


def u32(v):
    return struct.pack("<I", v)


def u64(v):
    return struct.pack("<Q", v)


def values_bytes(values, datatype):
    fmt = TYPES[datatype][1]
    return b"".join(struct.pack(fmt, v) for v in values)


# --- filter pipelines and chunked tiles (03 §5-6, 05 §1, §3.2) -----------------------


def pipeline(filters):
    """Serialized pipeline; `filters` is a list of filter types (only GZIP or none)."""
    out = u32(65536) + u32(len(filters))
    for f in filters:
        assert f == GZIP
        out += u8(GZIP) + u32(5) + u8(GZIP) + struct.pack("<i", 1)
    return out


def chunk(raw, filters):
    """One chunk: header, metadata, filtered data."""
    if not filters:
        return u32(len(raw)) + u32(len(raw)) + u32(0) + raw
    compressed = zlib.compress(raw, 1)
    # Compression header: 0 metadata parts, 1 data part (uncompressed, compressed size).
    md = u32(0) + u32(1) + u32(len(raw)) + u32(len(compressed))
    return u32(len(raw)) + u32(len(compressed)) + u32(len(md)) + md + compressed


def chunked_tile(chunks, filters):
    """A data tile: u64 chunk count, then the chunks (each a list element of bytes)."""
    return u64(len(chunks)) + b"".join(chunk(c, filters) for c in chunks)


def generic_tile(version, payload):
    """04: a generic tile as TileDB writes it: GZIP level 1, CHAR data of cell size 1,
    64 KiB chunks."""
    chunks = [payload[i : i + 65536] for i in range(0, len(payload), 65536)] or [b""]
    data = chunked_tile(chunks, [GZIP])
    pipe = pipeline([GZIP])
    header = u32(version) + u64(len(data)) + u64(len(payload)) + u8(CHAR) + u64(1)
    header += u8(0) + u32(len(pipe)) + pipe
    return header + data


# --- cells ----------------------------------------------------------------------------


class Field:
    def __init__(self, name, datatype, values, cell_val_num=1, filters=(), nullable=False,
                 validity=None):
        self.name, self.datatype, self.values = name, datatype, values
        self.cell_val_num, self.filters = cell_val_num, list(filters)
        self.nullable, self.validity = nullable, validity

    @property
    def var(self):
        return self.cell_val_num == VAR

    @property
    def size(self):
        return TYPES[self.datatype][2]

    def cell(self, i):
        """Bytes of cell i."""
        v = self.values[i]
        if self.var:
            return v.encode() if isinstance(v, str) else bytes(v)
        vals = v if isinstance(v, list) else [v]
        return values_bytes(vals, self.datatype)


def tiles_of(cells, capacity):
    return [list(range(i, min(i + capacity, cells))) for i in range(0, cells, capacity)]


def write_field_files(folder, base, field, tiles):
    """Writes <base>.tdb (and _var, _validity); returns per-file tile offsets, file sizes
    and var tile sizes (07 §1, §5)."""
    data, var, validity = b"", b"", b""
    offsets, var_offsets, var_sizes, validity_offsets = [], [], [], []
    for cells in tiles:
        offsets.append(len(data))
        if field.var:
            starts, blob = [], b""
            for i in cells:
                starts.append(len(blob))
                blob += field.cell(i)
            data += chunked_tile([values_bytes(starts, INT64)], [])
            var_offsets.append(len(var))
            var_sizes.append(len(blob))
            var += chunked_tile([blob] if blob else [], field.filters)
        else:
            data += chunked_tile([b"".join(field.cell(i) for i in cells)], field.filters)
        if field.nullable:
            validity_offsets.append(len(validity))
            validity += chunked_tile([bytes(field.validity[i] for i in cells)], [])
    (folder / f"{base}.tdb").write_bytes(data)
    if field.var:
        (folder / f"{base}_var.tdb").write_bytes(var)
    if field.nullable:
        (folder / f"{base}_validity.tdb").write_bytes(validity)
    return {
        "offsets": offsets, "size": len(data),
        "var_offsets": var_offsets if field.var else [0] * len(tiles),
        "var_size": len(var), "var_sizes": var_sizes if field.var else [0] * len(tiles),
        "validity_offsets": validity_offsets if field.nullable else [0] * len(tiles),
        "validity_size": len(validity),
    }


def expected_field(field, role, files, stored=True):
    out = {"name": field.name, "role": role, "datatype": TYPES[field.datatype][0],
           "cell_val_num": "var" if field.var else field.cell_val_num,
           "nullable": field.nullable, "filters": [], "stored": stored}
    if not stored:
        return out
    out["cell_count"] = len(field.values)
    out["values"] = [
        None if field.nullable and not field.validity[i] else
        (v if not field.var or isinstance(v, str) else list(v))
        for i, v in enumerate(field.values)
    ]
    if field.var:
        starts, total = [], 0
        for i in range(len(field.values)):
            starts.append(total)
            total += len(field.cell(i))
        out["offsets"], out["var_bytes"] = starts, total
    if field.nullable:
        out["validity"] = list(field.validity)
    out["files"] = files
    return out


def write_expected(name, doc):
    (OUT / f"{name}.expected.json").write_text(json.dumps(doc, indent=1) + "\n")


# --- format 1 (03 §1-3 for v1, 06 §5, 07 §7) -----------------------------------------


def v1_schema(array_type, tile_order, cell_order, capacity, coords_filters, dim_type,
              dims, attrs):
    """dims: [(name, lo, hi, extent)]; attrs: [Field]."""
    fmt = TYPES[dim_type][1]
    p = u32(1) + u8(array_type) + u8(tile_order) + u8(cell_order) + u64(capacity)
    p += pipeline(coords_filters) + pipeline([])  # coords, offsets
    p += u8(dim_type) + u32(len(dims))
    for name, lo, hi, extent in dims:
        p += u32(len(name)) + name.encode() + struct.pack("<" + fmt[1:] * 2, lo, hi)
        p += u8(0) + struct.pack(fmt, extent)
    p += u32(len(attrs))
    for a in attrs:
        p += u32(len(a.name)) + a.name.encode() + u8(a.datatype) + u32(a.cell_val_num)
        p += pipeline(a.filters)
    return generic_tile(1, p)


def v1_metadata(dim_type, ned, mbrs, bounding, attr_files, coords_files, last_tile_cells):
    """06 §5: the whole-file payload, as one generic tile."""
    fmt = TYPES[dim_type][1]
    rect = lambda ranges: b"".join(struct.pack("<" + fmt[1:] * 2, lo, hi) for lo, hi in ranges)
    p = u32(1)
    ned_bytes = rect(ned)
    p += u64(len(ned_bytes)) + ned_bytes
    p += u64(len(mbrs)) + b"".join(rect(m) for m in mbrs)
    # Bounding coords: first cell's coordinates, then the last cell's.
    p += u64(len(bounding))
    p += b"".join(values_bytes(first + last, dim_type) for first, last in bounding)
    lists = lambda key, files: b"".join(u64(len(f[key])) + b"".join(map(u64, f[key]))
                                        for f in files)
    p += lists("offsets", attr_files + [coords_files])
    p += lists("var_offsets", attr_files) + lists("var_sizes", attr_files)
    p += u64(last_tile_cells)
    p += b"".join(u64(f["size"]) for f in attr_files + [coords_files])
    p += b"".join(u64(f["var_size"]) for f in attr_files)
    return generic_tile(1, p)


def global_order(coords, extents, lows):
    """Sorts cell indices in global order: row-major tiles, then row-major cells."""
    def key(i):
        c = coords[i]
        tile = tuple((x - lo) // e for x, lo, e in zip(c, lows, extents))
        return tile, tuple(c)
    return sorted(range(len(coords)), key=key)


def v1_sparse(name, coords_filters, dims, coords, attrs, capacity, note):
    folder = OUT / name
    frag = "__0123456789abcdef0123456789abcdef_1541540586869"
    fdir = folder / frag
    fdir.mkdir(parents=True)
    dim_type = INT32
    order = global_order(coords, [d[3] for d in dims], [d[1] for d in dims])
    coords = [coords[i] for i in order]
    for a in attrs:
        a.values = [a.values[i] for i in order]
    tiles = tiles_of(len(coords), capacity)
    attr_files = [write_field_files(fdir, a.name, a, tiles) for a in attrs]
    zipped = GZIP not in coords_filters  # 07 §7: v1 zips unless a compressor is present
    data, offsets = b"", []
    for cells in tiles:
        offsets.append(len(data))
        if zipped:
            raw = b"".join(values_bytes(coords[i], dim_type) for i in cells)
            data += chunked_tile([raw], coords_filters)
        else:
            # TileDB 1.4 wrote one chunk per dimension (`fixtures/README.md`).
            per_dim = [values_bytes([coords[i][d] for i in cells], dim_type)
                       for d in range(len(dims))]
            data += chunked_tile(per_dim, coords_filters)
    (fdir / "__coords.tdb").write_bytes(data)
    coords_files = {"offsets": offsets, "size": len(data)}
    mbrs = [[(min(coords[i][d] for i in t), max(coords[i][d] for i in t))
             for d in range(len(dims))] for t in tiles]
    bounding = [(coords[t[0]], coords[t[-1]]) for t in tiles]
    ned = [(min(c[d] for c in coords), max(c[d] for c in coords)) for d in range(len(dims))]
    (fdir / "__fragment_metadata.tdb").write_bytes(
        v1_metadata(dim_type, ned, mbrs, bounding, attr_files, coords_files, len(tiles[-1])))
    (folder / "__array_schema.tdb").write_bytes(
        v1_schema(SPARSE, ROW_MAJOR, ROW_MAJOR, capacity, coords_filters, dim_type, dims,
                  attrs))
    (folder / "__lock.tdb").write_bytes(b"")
    layout = "zipped" if zipped else "split_per_tile"
    fields = [
        dict(expected_field(Field(d[0], dim_type, [c[j] for c in coords]), "dimension",
                            {"data": "__coords.tdb"}),
             coords_file_layout=layout, coords_index=j)
        for j, d in enumerate(dims)
    ]
    fields += [expected_field(a, "attribute", {"data": f"{a.name}.tdb"}) for a in attrs]
    write_expected(name, {
        "array": name, "array_type": "sparse", "format_version": 1,
        "hand_built": "scripts/make_handbuilt_fixtures.py", "capacity": capacity,
        "empty_var_cell_stored_bytes": [0], "encryption": None,
        "fragments": [{
            "fragment": frag, "fragment_dir": frag, "fragment_format_version": 1,
            "type": "sparse", "cell_num": len(coords),
            "tile_cell_counts": [len(t) for t in tiles],
            "non_empty_domain": [list(r) for r in ned], "fields": fields,
        }],
        "notes": note,
    })


def v1_dense(name):
    """2-D dense, INT32 dims r [1,4] extent 2 and c [1,6] extent 3, row-major tiles,
    col-major cells; the whole domain written: 4 tiles of 6 cells (07 §4)."""
    folder = OUT / name
    frag = "__fedcba9876543210fedcba9876543210_1541540590000"
    fdir = folder / frag
    fdir.mkdir(parents=True)
    dims = [("r", 1, 4, 2), ("c", 1, 6, 3)]
    storage = []  # coordinates in storage order
    for tr in range(2):
        for tc in range(2):
            for c in range(3):  # col-major cells: first dimension fastest
                for r in range(2):
                    storage.append((1 + 2 * tr + r, 1 + 3 * tc + c))
    v = Field("v", UINT16, [r * 100 + c for r, c in storage], filters=[GZIP])
    label = Field("label", CHAR, [f"r{r}c{c}" * (1 + (r + c) % 3) for r, c in storage],
                  cell_val_num=VAR)
    pair = Field("pair", FLOAT64, [[r + 0.5, -c / 4] for r, c in storage], cell_val_num=2)
    attrs = [v, label, pair]
    tiles = tiles_of(len(storage), 6)
    attr_files = [write_field_files(fdir, a.name, a, tiles) for a in attrs]
    no_coords = {"offsets": [], "size": 0}
    (fdir / "__fragment_metadata.tdb").write_bytes(
        v1_metadata(INT32, [(1, 4), (1, 6)], [], [], attr_files, no_coords, 6))
    (folder / "__array_schema.tdb").write_bytes(
        v1_schema(DENSE, ROW_MAJOR, COL_MAJOR, 10000, [], INT32, dims, attrs))
    (folder / "__lock.tdb").write_bytes(b"")
    fields = [expected_field(Field(d[0], INT32, []), "dimension", None, stored=False)
              for d in dims]
    fields += [expected_field(a, "attribute", {"data": f"{a.name}.tdb"}) for a in attrs]
    write_expected(name, {
        "array": name, "array_type": "dense", "format_version": 1,
        "hand_built": "scripts/make_handbuilt_fixtures.py",
        "empty_var_cell_stored_bytes": [0], "encryption": None,
        "fragments": [{
            "fragment": frag, "fragment_dir": frag, "fragment_format_version": 1,
            "type": "dense", "cell_num": len(storage), "tile_cell_counts": [6] * 4,
            "non_empty_domain": [[1, 4], [1, 6]], "storage_coords": storage,
            "fields": fields,
        }],
        "notes": "format 1 dense: whole-file fragment metadata without MBRs, no "
                 "__coords.tdb (which is what makes a v1 fragment dense), GZIP UINT16, "
                 "var CHAR, FLOAT64 x2 attributes; 2x2 tiles of 2x3 cells, col-major cells",
    })


# --- format 23 (03 §1-7, 06 §2-4, 07) -------------------------------------------------

SCHEMA_NAME = "__1700000000000_1700000000000_00000000000000000000000000000023"


def v23_schema(array_type, capacity, dims, attrs):
    """dims: [(name, datatype, domain (lo, hi) or None for strings, extent or None)]."""
    p = u32(23) + u8(0) + u8(array_type) + u8(ROW_MAJOR) + u8(ROW_MAJOR) + u64(capacity)
    p += pipeline([]) + pipeline([]) + pipeline([])  # coords, offsets, validity
    p += u32(len(dims))
    for name, dt, domain, extent in dims:
        fmt = TYPES[dt][1]
        p += u32(len(name)) + name.encode() + u8(dt)
        p += u32(VAR if domain is None else 1) + pipeline([])
        dom = b"" if domain is None else struct.pack("<" + fmt[1:] * 2, *domain)
        p += u64(len(dom)) + dom
        p += u8(1) if extent is None else u8(0) + struct.pack(fmt, extent)
    p += u32(len(attrs))
    for a in attrs:
        fill = values_bytes([-(2 ** 31)], INT32) if a.datatype == INT32 else b"\x80"
        p += u32(len(a.name)) + a.name.encode() + u8(a.datatype) + u32(a.cell_val_num)
        p += pipeline(a.filters) + u64(len(fill)) + fill + u8(a.nullable) + u8(0)
        p += u8(0) + u32(0)  # order, no enumeration
    p += u32(0) + u32(0)  # dimension labels, enumerations
    p += u32(0) + u8(1)  # current domain: version 0, empty
    return generic_tile(23, p)


def bounds_tile(cells_per_tile, field):
    """06 §4 tile mins/maxes layout: u64 fixed size, u64 var size, fixed, var."""
    if field.var:
        fixed, var = b"", b""
        for cell in cells_per_tile:
            fixed += u64(len(var))
            var += cell
        return u64(len(fixed)) + u64(len(var)) + fixed + var
    fixed = b"".join(cells_per_tile)
    return u64(len(fixed)) + u64(0) + fixed


def v23_fragment(folder, frag, schema_dims, dims, attrs, tiles, dense, ned, sections):
    """Writes one v23 fragment. dims: [Field] stored dimensions (empty when dense);
    attrs: [Field]; ned: per schema dimension, bytes of one range (06 §3.2)."""
    fdir = folder / "__fragments" / frag
    fdir.mkdir(parents=True)
    (folder / "__commits").mkdir(exist_ok=True)
    (folder / "__commits" / f"{frag}.wrt").write_bytes(b"")
    # Slots (06 §1): attributes, __coords, dimensions.
    files = [write_field_files(fdir, f"a{i}", a, tiles) for i, a in enumerate(attrs)]
    empty = {"offsets": [0] * len(tiles), "size": 0, "var_offsets": [0] * len(tiles),
             "var_size": 0, "var_sizes": [0] * len(tiles),
             "validity_offsets": [0] * len(tiles), "validity_size": 0}
    files.append(empty)  # __coords
    for j, _ in enumerate(schema_dims):
        files.append(write_field_files(fdir, f"d{j}", dims[j], tiles) if dims else empty)
    slot_fields = attrs + [None] + (dims or [None] * len(schema_dims))
    n = len(slot_fields)

    meta = b""

    def put(payload):
        nonlocal meta
        at = len(meta)
        meta += generic_tile(23, payload)
        return at

    # R-tree (06 §4, v5+): fanout, levels root first; leaves = one MBR per tile.
    def mbr(cells):
        out = b""
        for d in dims:
            vals = sorted(d.cell(i) for i in cells) if d.var else [d.values[i] for i in cells]
            if d.var:
                lo, hi = vals[0], vals[-1]
                out += u64(len(lo) + len(hi)) + u64(len(lo)) + lo + hi
            else:
                out += values_bytes([min(vals), max(vals)], d.datatype)
        return out
    if dense:
        rtree = u32(10) + u32(0)
    else:
        leaves = [mbr(t) for t in tiles]
        root = mbr([i for t in tiles for i in t])
        rtree = u32(10) + u32(2) + u64(1) + root + u64(len(leaves)) + b"".join(leaves)
    rtree_at = put(rtree)
    lists = lambda key: [put(u64(len(f[key])) + b"".join(map(u64, f[key]))) for f in files]
    offsets_at, var_offsets_at = lists("offsets"), lists("var_offsets")
    var_sizes_at, validity_at = lists("var_sizes"), lists("validity_offsets")

    # Tile statistics (06 §4): min/max for attributes (var CHAR too: the min/max
    # strings), sums for fixed numeric fields (dimensions included), null counts for
    # nullable fields; only non-null cells count.
    has_min_max = lambda f: f is not None and f in attrs
    has_sum = lambda f: f is not None and not f.var and f.datatype == INT32
    live = lambda f, t: [i for i in t if not f.nullable or f.validity[i]]
    none = u64(0) + u64(0)

    def stats(f):
        if has_min_max(f):
            mins = bounds_tile([min(f.cell(i) if f.var else f.values[i] for i in live(f, t))
                                for t in tiles], f) if f.var else bounds_tile(
                [values_bytes([min(f.values[i] for i in live(f, t))], INT32) for t in tiles], f)
            maxs = bounds_tile([max(f.cell(i) for i in live(f, t)) for t in tiles], f) \
                if f.var else bounds_tile(
                [values_bytes([max(f.values[i] for i in live(f, t))], INT32) for t in tiles], f)
        else:
            mins = maxs = none
        sums = (u64(len(tiles)) + b"".join(struct.pack("<q", sum(f.values[i] for i in live(f, t)))
                                           for t in tiles)) if has_sum(f) else u64(0)
        nulls = (u64(len(tiles)) + b"".join(u64(sum(1 - f.validity[i] for i in t))
                                            for t in tiles)
                 if f is not None and f.nullable else u64(0))
        return mins, maxs, sums, nulls
    all_stats = [stats(f) for f in slot_fields]
    mins_at = [put(s[0]) for s in all_stats]
    maxs_at = [put(s[1]) for s in all_stats]

    # Global-order bounds (06 §2, §4, v23 sparse): per dimension, the first and the last
    # coordinate of each tile in global order, laid out like tile mins.
    go_min_at, go_max_at = [], []
    if not dense:
        for d in dims:
            go_min_at.append(put(bounds_tile([d.cell(t[0]) for t in tiles], d)))
        for d in dims:
            go_max_at.append(put(bounds_tile([d.cell(t[-1]) for t in tiles], d)))
    sums_at = [put(s[2]) for s in all_stats]
    nulls_at = [put(s[3]) for s in all_stats]

    # Fragment statistics (v12+): per slot min, max, sum, null count.
    frag_stats = b""
    for f in slot_fields:
        every = [i for t in tiles for i in live(f, t)] if f is not None else []
        if has_min_max(f):
            cells_ = [f.cell(i) for i in every]
            lo, hi = (min(cells_), max(cells_)) if f.var else (
                values_bytes([min(f.values[i] for i in every)], INT32),
                values_bytes([max(f.values[i] for i in every)], INT32))
            frag_stats += u64(len(lo)) + lo + u64(len(hi)) + hi
        else:
            frag_stats += u64(0) + u64(0)
        frag_stats += struct.pack("<q", sum(f.values[i] for i in every) if has_sum(f) else 0)
        frag_stats += u64(sum(1 - v for v in f.validity) if f is not None and f.nullable
                          else 0)
    frag_stats_at = put(frag_stats)
    conditions_at = put(u64(0))  # no processed conditions

    # Footer (06 §3.1), v23 fields in order, then its u64 length.
    cells = sum(len(t) for t in tiles)
    footer = u32(23) + u64(len(SCHEMA_NAME)) + SCHEMA_NAME.encode() + u8(dense) + u8(0)
    footer += b"".join(ned)
    footer += u64(0 if dense else len(tiles)) + u64(len(tiles[-1]))
    footer += u8(0) + u8(0)  # has timestamps, has delete meta
    footer += b"".join(u64(f["size"]) for f in files)
    footer += b"".join(u64(f["var_size"]) for f in files)
    footer += b"".join(u64(f["validity_size"]) for f in files)
    footer += u64(rtree_at)
    for group in (offsets_at, var_offsets_at, var_sizes_at, validity_at, mins_at, maxs_at,
                  sums_at, nulls_at):
        assert len(group) == n
        footer += b"".join(map(u64, group))
    footer += u64(frag_stats_at) + u64(conditions_at)
    all_sections = list(sections)
    if not dense:
        all_sections.insert(0, (0, b"".join(map(u64, go_min_at + go_max_at))))
    footer += u32(len(all_sections))
    for ident, data in all_sections:
        footer += u64(ident) + u32(len(data)) + data
    meta += footer + u64(len(footer))
    (fdir / "__fragment_metadata.tdb").write_bytes(meta)
    return cells


def v23_sparse(name):
    folder = OUT / name
    (folder / "__schema").mkdir(parents=True)
    schema_dims = [("x", INT32, (0, 99), 10), ("name", STRING_ASCII, None, None)]
    raw = [(37, "kiwi"), (3, "apple"), (12, "fig"), (3, "banana"), (58, "cherry"),
           (12, "date"), (91, "elderberry"), (37, "grape"), (5, "honeydew"), (58, "lime")]
    # Global order: x's space tiles (extent 10 from 0), then row-major cells (x, name);
    # string dimensions have no tiles.
    raw.sort(key=lambda c: (c[0] // 10, c[0], c[1]))
    x = Field("x", INT32, [c[0] for c in raw])
    nm = Field("name", STRING_ASCII, [c[1] for c in raw], cell_val_num=VAR)
    validity = [0 if i % 4 == 2 else 1 for i in range(len(raw))]
    n_attr = Field("n", INT32, [(i * 7) % 11 - 5 if validity[i] else -(2 ** 31)
                                for i in range(len(raw))], nullable=True, validity=validity)
    note_attr = Field("note", CHAR, [c[1][:2].upper() * (1 + i % 2)
                                     for i, c in enumerate(raw)], cell_val_num=VAR)
    attrs = [n_attr, note_attr]
    tiles = tiles_of(len(raw), 4)
    ned_x = values_bytes([min(x.values), max(x.values)], INT32)
    lo, hi = min(nm.values).encode(), max(nm.values).encode()
    ned_name = u64(len(lo) + len(hi)) + u64(len(lo)) + lo + hi
    frag = "__1700000000001_1700000000001_0000000000000000000000000000a023_23"
    cells = v23_fragment(folder, frag, schema_dims, [x, nm], attrs, tiles, False,
                         [ned_x, ned_name], [])
    (folder / "__schema" / SCHEMA_NAME).write_bytes(v23_schema(SPARSE, 4, schema_dims, attrs))
    fields = [expected_field(x, "dimension", {"data": "d0.tdb"}),
              expected_field(nm, "dimension", {"data": "d1.tdb", "var": "d1_var.tdb"})]
    fields += [expected_field(a, "attribute", {"data": f"a{i}.tdb"})
               for i, a in enumerate(attrs)]
    write_expected(name, {
        "array": name, "array_type": "sparse", "format_version": 23,
        "hand_built": "scripts/make_handbuilt_fixtures.py", "capacity": 4,
        "empty_var_cell_stored_bytes": [], "encryption": None,
        "fragments": [{
            "fragment": frag, "fragment_dir": f"__fragments/{frag}",
            "fragment_format_version": 23, "type": "sparse", "cell_num": cells,
            "tile_cell_counts": [len(t) for t in tiles],
            "non_empty_domain": [[min(x.values), max(x.values)], [min(nm.values),
                                                                    max(nm.values)]],
            "fields": fields,
        }],
        "notes": "format 23 sparse: footer optional section 0 with the global-order "
                 "min/max tiles of both dimensions (INT32 x, var STRING_ASCII name), "
                 "between the tile maxes and the tile sums; nullable INT32 with tile "
                 "min/max/sum/null counts and fragment statistics; var CHAR; 3 tiles",
    })


def v23_dense(name):
    folder = OUT / name
    (folder / "__schema").mkdir(parents=True)
    schema_dims = [("i", INT32, (1, 8), 4)]
    validity = [1, 1, 0, 1, 1, 1, 1, 0]
    v = Field("v", INT32, [10, 20, -(2 ** 31), 40, 50, 60, 70, -(2 ** 31)], nullable=True,
              validity=validity)
    attrs = [v]
    tiles = tiles_of(8, 4)
    frag = "__1700000000002_1700000000002_0000000000000000000000000000d023_23"
    # An optional section with an identifier readers do not know: must be skipped.
    unknown = [(7, b"later")]
    cells = v23_fragment(folder, frag, schema_dims, [], attrs, tiles, True,
                         [values_bytes([1, 8], INT32)], unknown)
    (folder / "__schema" / SCHEMA_NAME).write_bytes(v23_schema(DENSE, 10000, schema_dims,
                                                               attrs))
    fields = [expected_field(Field("i", INT32, []), "dimension", None, stored=False)]
    fields += [expected_field(v, "attribute", {"data": "a0.tdb"})]
    write_expected(name, {
        "array": name, "array_type": "dense", "format_version": 23,
        "hand_built": "scripts/make_handbuilt_fixtures.py",
        "empty_var_cell_stored_bytes": [], "encryption": None,
        "fragments": [{
            "fragment": frag, "fragment_dir": f"__fragments/{frag}",
            "fragment_format_version": 23, "type": "dense", "cell_num": cells,
            "tile_cell_counts": [4, 4], "non_empty_domain": [[1, 8]],
            "storage_coords": [[i] for i in range(1, 9)], "fields": fields,
        }],
        "notes": "format 23 dense: no global-order bounds (sparse only); the footer has "
                 "one optional section of unknown identifier 7 that readers must skip",
    })


README = """# Hand-built arrays (formats 1 and 23)

No installable TileDB writes format 1 (TileDB 1.4) or format 23 (TileDB 2.31+), so these
arrays are **built by hand from the spec** (`docs/tiledb-format/`) by
`scripts/make_handbuilt_fixtures.py`, standard-library Python, without TileDB and
without fragfs. Each `<array>.expected.json` (corpus format, `docs/corpus.md`)
holds the values the script wrote; `tests/format_versions.rs` reads them back through
fragfs. Regenerate (deterministic output) with

    python3 scripts/make_handbuilt_fixtures.py

| array | covers |
|---|---|
| `v1_sparse_zipped` | format 1 sparse, empty coords pipeline: `__coords.tdb` zipped; whole-file metadata; fixed, var, 2-value attributes; 3 tiles |
| `v1_sparse_split_gzip` | format 1 sparse, GZIP coords pipeline: `__coords.tdb` split per tile (a chunk per dimension); 3 dimensions |
| `v1_dense` | format 1 dense (no `__coords.tdb`, no MBRs): 2x2 tiles, col-major cells, GZIP, var and 2-value attributes |
| `v23_sparse_global_order` | format 23 sparse: global-order min/max tiles of an INT32 and a string dimension (footer optional section 0), tile and fragment statistics, nullable and var attributes |
| `v23_dense` | format 23 dense: no global-order bounds; an optional footer section of unknown id 7 |
"""


def main():
    if OUT.exists():
        shutil.rmtree(OUT)
    OUT.mkdir(parents=True)
    (OUT / "README.md").write_text(README)
    v1_sparse(
        "v1_sparse_zipped", [],
        [("r", 1, 100, 10), ("c", 1, 100, 10)],
        [(4, 9), (1, 2), (15, 3), (2, 2), (4, 1), (33, 40), (15, 15)],
        [Field("a", INT32, [40, 10, 50, 20, 30, 70, 60]),
         Field("s", CHAR, ["four-nine", "one", "fifteen", "two", "4", "thirty-three", "xv"],
               cell_val_num=VAR),
         Field("p", FLOAT64, [[i + 0.25, -i * 1.5] for i in range(7)], cell_val_num=2)],
        3,
        "format 1 sparse, empty coords pipeline: __coords.tdb zipped (x0 y0 x1 y1 ...), "
        "whole-file fragment metadata, 3 tiles (capacity 3), fixed, var and 2-value "
        "attributes")
    v1_sparse(
        "v1_sparse_split_gzip", [GZIP],
        [("x", -50, 49, 25), ("y", 0, 9, 5), ("z", 0, 999, 1000)],
        [(-50, 0, 7), (-3, 9, 0), (24, 4, 999), (25, 5, 1), (49, 9, 500), (-1, 1, 2),
         (0, 0, 0), (30, 6, 31), (-26, 2, 8), (10, 3, 77)],
        [Field("a", INT64, [i * 1000 - 4321 for i in range(10)], filters=[GZIP])],
        4,
        "format 1 sparse, GZIP coords pipeline: __coords.tdb split per tile (one chunk "
        "per dimension, as TileDB 1.4 wrote), 3 INT32 dimensions, GZIP INT64 attribute, "
        "3 tiles (capacity 4)")
    v1_dense("v1_dense")
    v23_sparse("v23_sparse_global_order")
    v23_dense("v23_dense")


if __name__ == "__main__":
    main()
