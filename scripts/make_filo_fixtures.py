#!/usr/bin/env python3
"""Write the Filo test fixtures: small chunks of every vector type, with the values
they hold, encoded from docs/filo-format/FORMAT.md by code independent of fragfs.

Usage: python3 scripts/make_filo_fixtures.py [OUTDIR]   (default tests/fixtures/filo;
       OUTDIR is deleted and rewritten). Needs only the Python standard library.

Outputs:
    vectors/<name>.filo      one chunk per file (exact length, no padding)
    expected.json            per chunk: file, column_type, header, kind, num_bytes,
                             length, values (null = NA), validity, and where they apply
                             tz_quarter_hours and format_version
    fragment/                a fragment directory (FORMAT.md 9.3): filo_fragment.json,
                             chunk files (one in a sub-folder, one LZ4-framed) and
                             expected.json {"columns": {name: record}}

Floats that JSON numbers cannot carry exactly (NaN payloads, infinities, -0.0) are
written as "bits:0x<hex of the stored f32/f64>".

How this differs from make_filo_samples.py (the shared corpus): its FlatBuffers come
from the flatbuffers package's back-to-front builder; here a small forward writer lays
tables out front to back, puts vtables before or after their table, keeps trailing
empty vtable slots (as the Java builder does), omits defaulted fields and shares
string objects. So the decoder is checked on layouts the other corpus lacks. The
values here are the encoders' inputs: the ground truth.
"""
import json
import math
import os
import shutil
import struct
import sys

# FORMAT.md section 2
T_EMPTY, T_SIMPLE, T_DICT, T_CONST, T_DIFF, T_BINSIMPLE, T_BINDICT, T_DELTA2 = 1, 2, 3, 4, 5, 6, 7, 8
S_PRIMITIVE, S_STRING, S_UTF8, S_FIXEDMAXUTF8, S_DATETIME = 0, 1, 2, 3, 4
S_PRIMITIVE_NOMASK, S_REPEATED, S_INT, S_INT_NOMASK = 5, 6, 7, 8
ALL_ZEROES, SIMPLE_BIT_MASK, ALL_ONES = 0, 1, 2
NA_WORD = 0x80000000


def header(major, sub):
    return struct.pack('<I', (sub << 8) | major)


class Bits:
    """A float given by its exact stored bits (NaN payloads, -0.0, infinities)."""

    def __init__(self, bits):
        self.bits = bits


def pack_float(v, width):
    if isinstance(v, Bits):
        return struct.pack('<I' if width == 32 else '<Q', v.bits)
    return struct.pack('<f' if width == 32 else '<d', v)


def json_value(v, width=None):
    """What expected.json says for a stored value."""
    if isinstance(v, Bits):
        return 'bits:0x%x' % v.bits
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v) or (v == 0 and math.copysign(1, v) < 0)):
        return 'bits:0x%s' % pack_float(v, width)[::-1].hex()
    return v


def wrap(v, nbits, signed):
    v &= (1 << nbits) - 1
    if signed and v >= 1 << (nbits - 1):
        v -= 1 << nbits
    return v


def pack_ints(values, nbits):
    """Little-endian integers of nbits (8/16/32/64), two's complement."""
    fmt = {8: 'B', 16: 'H', 32: 'I', 64: 'Q'}[nbits]
    return b''.join(struct.pack('<' + fmt, v & ((1 << nbits) - 1)) for v in values)


def bitmap_words(na_rows, n, words=None):
    words = words if words is not None else (n + 63) // 64
    w = [0] * words
    for i in na_rows:
        w[i >> 6] |= 1 << (i & 63)
    return w


# ---------------------------------------------------------------------------
# A forward FlatBuffers writer (FORMAT.md 5.1)
# ---------------------------------------------------------------------------
class Table:
    """fields[id] = None (absent) or one of:
         ('i8'|'i32'|'i64', value)      inline scalar
         ('struct', bytes, align)       inline struct
         ('table', Table)               offset to a sub-table
         ('bytes', data, align)         [ubyte] vector
         ('u64s', [words])              [ulong] vector
         ('string', data)               string
         ('strings', [data | int k])    [string]; int k = the same string object as element k
    """

    def __init__(self, fields, trailing_slots=0, vtable_after=False):
        self.fields = fields
        self.trailing_slots = trailing_slots
        self.vtable_after = vtable_after


INLINE = {'i8': (1, 1), 'i32': (4, 4), 'i64': (8, 8)}


class Writer:
    def __init__(self):
        self.buf = bytearray(4)  # root uoffset

    def pad_to(self, align, extra=0):
        while (len(self.buf) + extra) % align:
            self.buf.append(0)

    def uoffset(self, at, target):
        assert target > at
        struct.pack_into('<I', self.buf, at, target - at)

    def table(self, t):
        slots = [0] * (len(t.fields) + t.trailing_slots)
        placed = []
        off = 4
        inline = [(i, f) for i, f in enumerate(t.fields) if f is not None]
        # Widest first keeps every field aligned inside an 8-aligned table.
        def size_align(f):
            if f[0] in INLINE:
                return INLINE[f[0]]
            if f[0] == 'struct':
                return len(f[1]), f[2]
            return 4, 4
        for i, f in sorted(inline, key=lambda x: -size_align(x[1])[1]):
            size, align = size_align(f)
            off = (off + align - 1) // align * align
            slots[i] = off
            placed.append((i, f, off))
            off += size
        vtable = struct.pack('<HH', 4 + 2 * len(slots), off) + b''.join(struct.pack('<H', s) for s in slots)
        if not t.vtable_after:
            self.pad_to(2)
            vt = len(self.buf)
            self.buf += vtable
        self.pad_to(8)
        pos = len(self.buf)
        self.buf += bytes(off)
        if t.vtable_after:
            self.pad_to(2)
            vt = len(self.buf)
            self.buf += vtable
        struct.pack_into('<i', self.buf, pos, pos - vt)
        for i, f, o in placed:
            kind = f[0]
            if kind in INLINE:
                fmt = {'i8': '<b', 'i32': '<i', 'i64': '<q'}[kind]
                struct.pack_into(fmt, self.buf, pos + o, f[1])
            elif kind == 'struct':
                self.buf[pos + o:pos + o + len(f[1])] = f[1]
        for i, f, o in placed:
            kind = f[0]
            if kind in INLINE or kind == 'struct':
                continue
            if kind == 'table':
                target = self.table(f[1])
            elif kind == 'bytes':
                target = self.vector(f[1], len(f[1]), f[2])
            elif kind == 'u64s':
                target = self.vector(b''.join(struct.pack('<Q', w) for w in f[1]), len(f[1]), 8)
            elif kind == 'string':
                target = self.string(f[1])
            else:
                target = self.strings(f[1])
            self.uoffset(pos + o, target)
        return pos

    def vector(self, data, count, align):
        self.pad_to(4)
        self.pad_to(max(align, 4), 4)
        pos = len(self.buf)
        self.buf += struct.pack('<I', count) + data
        return pos

    def string(self, data):
        self.pad_to(4)
        pos = len(self.buf)
        self.buf += struct.pack('<I', len(data)) + data + b'\0'
        return pos

    def strings(self, items):
        pos = self.vector(bytes(4 * len(items)), len(items), 4)
        made = []
        for k, item in enumerate(items):
            target = made[item] if isinstance(item, int) else self.string(item)
            made.append(target)
            self.uoffset(pos + 4 + 4 * k, target)
        return pos

    def finish(self, root):
        self.uoffset(0, self.table(root))
        return bytes(self.buf)


def flatbuffer(major, sub, root):
    return header(major, sub) + Writer().finish(root)


def data_info(nbits, signed):
    return ('struct', struct.pack('<HBx', nbits, 1 if signed else 0), 2)


def na_mask(values, short_words=None, mask_type_written=True):
    """NaMask table for `values` (None = NA). AllOnes is the schema default, so it is
    left out; the others are written (or left out with mask_type_written=False for
    AllZeroes... which would then read as AllOnes, so only used for AllOnes)."""
    na = [i for i, v in enumerate(values) if v is None]
    if len(na) == len(values) and values:
        return Table([None])  # maskType absent = AllOnes
    if not na:
        return Table([('i8', ALL_ZEROES)])
    words = bitmap_words(na, len(values), short_words)
    return Table([('i8', SIMPLE_BIT_MASK), ('u64s', words)])


# ---------------------------------------------------------------------------
# Encoders, one per vector type
# ---------------------------------------------------------------------------
def enc_empty(n):
    return struct.pack('<I', (n << 8) | T_EMPTY)


def enc_fb_primitive(values, coltype, nbits=None, signed=False, const=False, mask=None, **table_opts):
    """SimplePrimitiveVector / ConstPrimitiveVector (FORMAT.md 5.4, 5.5)."""
    raw = [v for v in values if v is not None]
    fill = [(v if v is not None else (False if coltype == 'bool' else 0)) for v in values]
    data_values = [raw[0]] if const else fill
    if coltype == 'bool':
        words = bitmap_words([i for i, v in enumerate(data_values) if v], len(data_values))
        data, nbits, signed = b''.join(struct.pack('<Q', w) for w in words), 64, False
    elif coltype in ('float', 'double'):
        nbits = 32 if coltype == 'float' else 64
        data = b''.join(pack_float(v, nbits) for v in data_values)
    else:
        data = pack_ints(data_values, nbits)
    fields = [('i32', len(values)) if values else None,
              mask if mask is not None else ('table', na_mask(values)),
              data_info(nbits, signed),
              ('bytes', data, max(nbits // 8, 1))]
    if mask == 'absent':
        fields[1] = None
    return flatbuffer(T_CONST if const else T_SIMPLE, S_PRIMITIVE, Table(fields, **table_opts))


def enc_diff(values, nbits, signed, base_written=True):
    """DiffPrimitiveVector (FORMAT.md 5.6): base = min of the available values."""
    base = min(v for v in values if v is not None)
    deltas = [(v - base) if v is not None else (0 - base) for v in values]
    fields = [('i32', len(values)), ('table', na_mask(values)),
              ('i64', base) if base_written else None,
              data_info(nbits, signed), ('bytes', pack_ints(deltas, nbits), nbits // 8)]
    assert base_written or base == 0
    return flatbuffer(T_DIFF, S_PRIMITIVE, Table(fields))


def enc_ddt(values, millis_bits, tz_bits=None, empty_tz_vector=False):
    """DiffDateTimeVector (FORMAT.md 5.10); values = None or (millis, quarter_hours)."""
    avail = [v for v in values if v is not None]
    base_ms = min(m for m, _ in avail)
    base_tz = min(t for _, t in avail)
    millis = [v[0] - base_ms if v is not None else 0 for v in values]
    tzs = [(v[1] - base_tz) if v is not None else 0 for v in values]
    vars_ = struct.pack('<ib3xq', len(values), base_tz, base_ms)
    fields = [('table', na_mask(values)), ('struct', vars_, 8), data_info(*millis_bits),
              ('bytes', pack_ints(millis, millis_bits[0]), 8)]
    if tz_bits:
        fields += [data_info(*tz_bits), ('bytes', pack_ints(tzs, tz_bits[0]), 1)]
    elif empty_tz_vector:
        fields += [None, ('bytes', b'', 1)]
    return flatbuffer(T_DIFF, S_DATETIME, Table(fields))


def enc_simple_string(values, share=None):
    items = [(v if v is not None else '').encode() for v in values]
    for k, same_as in (share or {}).items():
        items[k] = same_as
    return flatbuffer(T_SIMPLE, S_STRING, Table([('table', na_mask(values)), ('strings', items)]))


def enc_const_string(values):
    s = next(v for v in values if v is not None).encode()
    return flatbuffer(T_CONST, S_STRING, Table([('i32', len(values)), ('table', na_mask(values)), ('string', s)],
                                               vtable_after=True))


def enc_dict_string(values, dictionary, nbits, signed):
    """DictStringVector (FORMAT.md 5.9): dictionary[0] = "" is NA; any order."""
    code = {s: i for i, s in enumerate(dictionary)}
    codes = [code[v] if v is not None else 0 for v in values]
    assert dictionary[0] == ''
    fields = [('i32', len(values)), ('strings', [s.encode() for s in dictionary]), data_info(nbits, signed),
              ('bytes', pack_ints(codes, nbits), nbits // 8)]
    return flatbuffer(T_DICT, S_STRING, Table(fields, trailing_slots=2))


def prim(values, nbits, signed):
    """Primitive sub-vector (FORMAT.md 6.1)."""
    n = len(values)
    if nbits >= 8:
        data = pack_ints(values, nbits)
        shift = 0
    else:
        data = bytearray((n * nbits + 7) // 8)
        for i, v in enumerate(values):
            bit = i * nbits
            data[bit >> 3] |= (v & ((1 << nbits) - 1)) << (bit & 7)
        shift = (n * nbits) % 8
    return struct.pack('<HBB', nbits, 1 if signed else 0, shift) + bytes(data)


def prim_f64(values):
    return struct.pack('<HBB', 64, 1, 0) + b''.join(pack_float(v, 64) for v in values)


def masked(values, sub, words=None):
    """NA bitmap + sub-vector (FORMAT.md 6.3); words > needed = an appendable's capacity."""
    w = bitmap_words([i for i, v in enumerate(values) if v is None], len(values), words)
    return struct.pack('<I', 4 + 8 * len(w)) + b''.join(struct.pack('<Q', x) for x in w) + sub


def enc_int_bv(values, nbits, signed, sub=None, words=None):
    """0x0806 / 0x0706, or with sub = S_PRIMITIVE(_NOMASK) the pre-0.3.3 int forms."""
    fill = [v if v is not None else 0 for v in values]
    has_na = any(v is None for v in values)
    if sub is None:
        sub = S_INT if has_na else S_INT_NOMASK
    body = prim(fill, nbits, signed)
    if has_na:
        body = masked(values, body, words)
    return header(T_BINSIMPLE, sub) + body


def enc_f64_bv(values):
    fill = [v if v is not None else 0.0 for v in values]
    if any(v is None for v in values):
        return header(T_BINSIMPLE, S_PRIMITIVE) + masked(values, prim_f64(fill))
    return header(T_BINSIMPLE, S_PRIMITIVE_NOMASK) + prim_f64(fill)


def enc_const_bv(n, value):
    return header(T_BINSIMPLE, S_REPEATED) + struct.pack('<i', n) + value


def enc_delta_delta(init, slope, residuals, nbits, signed):
    return header(T_DELTA2, S_INT_NOMASK) + struct.pack('<qi', init, slope) + prim(residuals, nbits, signed)


def utf8_body(values, old=False):
    """UTF8Vector (FORMAT.md 6.6). old=True: the pre-0.3.2 small form (15-bit offset,
    16-bit length, entries padded to 4 bytes)."""
    n = len(values)
    words, var = [], bytearray()
    start = 4 + 4 * n
    for v in values:
        if v is None:
            words.append(NA_WORD)
            continue
        data = v.encode()
        off = start + len(var)
        if old and off <= 0x7FFF and len(data) <= 0xFFFF:
            words.append(NA_WORD | (off << 16) | len(data))
            var += data
        elif not old and off <= 0xFFFFF and len(data) <= 0x7FF:
            words.append(NA_WORD | (off << 11) | len(data))
            var += data
        else:
            words.append(off)
            var += struct.pack('<i', len(data)) + data
        if old:
            var += bytes(-len(var) % 4)
    return struct.pack('<i', n) + b''.join(struct.pack('<I', w) for w in words) + bytes(var)


def enc_utf8(values, old=False):
    return header(T_BINSIMPLE, S_UTF8) + utf8_body(values, old)


def enc_fixed_max(values, slot=None):
    longest = max([len(v.encode()) for v in values if v is not None] + [1])
    p = slot or longest + 1
    out = bytearray([p])
    for v in values:
        s = bytearray(p)
        if v is None:
            s[1] = 0xFF
        else:
            d = v.encode()
            s[0] = len(d)
            s[1:1 + len(d)] = d
        out += s
    return header(T_BINSIMPLE, S_FIXEDMAXUTF8) + bytes(out)


def enc_dict_utf8(values, nbits, signed):
    uniques = []
    for v in values:
        if v is not None and v not in uniques:
            uniques.append(v)
    codes = [0 if v is None else uniques.index(v) + 1 for v in values]
    dictionary = utf8_body([None] + uniques)
    return (header(T_BINDICT, S_UTF8) + struct.pack('<ii', S_UTF8, 8 + len(dictionary)) + dictionary
            + prim(codes, nbits, signed))


# ---------------------------------------------------------------------------
# LZ4 framing (FORMAT.md 9.2): 0xFF, u32 big-endian length, one raw LZ4 block
# ---------------------------------------------------------------------------
def lz4_block(data):
    """Greedy LZ4 block compressor following the block format's end rules (the last
    5 bytes are literals; no match starts in the last 12 bytes)."""
    out = bytearray()

    def length(v):
        while v >= 255:
            out.append(255)
            v -= 255
        out.append(v)

    def sequence(lit, offset=0, mlen=0):
        token = min(len(lit), 15) << 4 | (min(mlen - 4, 15) if offset else 0)
        out.append(token)
        if len(lit) >= 15:
            length(len(lit) - 15)
        out.extend(lit)
        if offset:
            out.extend(struct.pack('<H', offset))
            if mlen - 4 >= 15:
                length(mlen - 4 - 15)

    n, i, anchor, seen = len(data), 0, 0, {}
    while i < n - 12:
        key = data[i:i + 4]
        cand = seen.get(key)
        seen[key] = i
        if cand is not None and i - cand <= 0xFFFF:
            m = 4
            while i + m < n - 5 and data[cand + m] == data[i + m]:
                m += 1
            sequence(data[anchor:i], i - cand, m)
            i += m
            anchor = i
        else:
            i += 1
    sequence(data[anchor:])
    return bytes(out)


def lz4_unblock(block, size):
    """Decompressor, only to check the compressor above."""
    out, i = bytearray(), 0
    while True:
        token = block[i]
        i += 1
        lit = token >> 4
        if lit == 15:
            while True:
                lit += block[i]
                i += 1
                if block[i - 1] != 255:
                    break
        out += block[i:i + lit]
        i += lit
        if i >= len(block):
            break
        offset = struct.unpack_from('<H', block, i)[0]
        i += 2
        m = token & 15
        if m == 15:
            while True:
                m += block[i]
                i += 1
                if block[i - 1] != 255:
                    break
        for _ in range(m + 4):
            out.append(out[-offset])
    assert len(out) == size
    return bytes(out)


def lz4_frame(chunk):
    block = lz4_block(chunk)
    assert lz4_unblock(block, len(chunk)) == chunk
    return b'\xff' + struct.pack('>I', len(chunk)) + block


# ---------------------------------------------------------------------------
# The catalogue
# ---------------------------------------------------------------------------
NAN_PAYLOAD = Bits(0x7FF8000000000123)
NEG_ZERO = Bits(0x8000000000000000)
INF = Bits(0x7FF0000000000000)
F32_NAN = Bits(0x7FC00001)
F32_NEG_INF = Bits(0xFF800000)
F32_MAX = struct.unpack('<f', struct.pack('<I', 0x7F7FFFFF))[0]
F32_TINY = struct.unpack('<f', struct.pack('<I', 0x00000001))[0]


def catalogue():
    S = []

    def add(name, coltype, kind, data, values, note, **extra):
        S.append(dict(name=name, coltype=coltype, kind=kind, data=data, values=values, note=note, extra=extra))

    add('empty_len3_datetime', 'datetime', 'EmptyVector', enc_empty(3), [None] * 3,
        'all NA datetime: zones read 0', tz_quarter_hours=[None] * 3)
    add('empty_len2_utf8', 'utf8', 'EmptyVector', enc_empty(2), [None] * 2, 'NA strings are empty')

    v = [None, -7, 300, None, 12]
    add('spv_int_na', 'int', 'SimplePrimitiveVector', enc_fb_primitive(v, 'int', 16, True), v,
        'nbits 16 signed, SimpleBitMask, forward layout (root offset at byte 4)')
    v = [-1, 5, 2147483647]
    add('spv_int_u32', 'int', 'SimplePrimitiveVector', enc_fb_primitive(v, 'int', 32, False), v,
        'nbits 32 signed=0 under an int column: the same 32 bits as i32 (FORMAT.md 4.3)')
    v = [i - 20 for i in range(70)]
    v[3] = None
    add('spv_long_short_mask', 'long', 'SimplePrimitiveVector',
        enc_fb_primitive(v, 'long', 8, True, mask=('table', na_mask(v, short_words=1))), v,
        '70 rows, bitMask holds 1 word: missing words are available (FORMAT.md 4.1)')
    v = [40000, 0, 65535]
    add('spv_long_no_namask', 'long', 'SimplePrimitiveVector',
        enc_fb_primitive(v, 'long', 16, False, mask='absent', trailing_slots=3), v,
        'naMask field absent = all available (FORMAT.md 11.7); vtable with 3 trailing empty slots')
    v = [None, None, None]
    add('spv_double_all_ones', 'double', 'SimplePrimitiveVector', enc_fb_primitive(v, 'double'), v,
        'NaMask maskType absent = default AllOnes = every row NA (FORMAT.md 11.6)')
    v = [NAN_PAYLOAD, INF, NEG_ZERO, 5e-324, -1.0000000000000002]
    add('spv_double_special', 'double', 'SimplePrimitiveVector', enc_fb_primitive(v, 'double'), v,
        'NaN payload, infinity, -0.0, subnormal: bit-exact')
    v = [F32_NAN, F32_NEG_INF, F32_MAX, None, F32_TINY]
    add('spv_float_special', 'float', 'SimplePrimitiveVector', enc_fb_primitive(v, 'float'), v,
        'f32 NaN payload, -inf, max, subnormal')
    v = [None, True, False, True]
    add('spv_bool_4', 'bool', 'SimplePrimitiveVector', enc_fb_primitive(v, 'bool'), v, 'bool bitset')
    v = [True, None, True]
    add('const_prim_bool', 'bool', 'ConstPrimitiveVector', enc_fb_primitive(v, 'bool', const=True), v,
        'bit 0 of a one-word bitset')
    v = [2.5] * 4
    add('const_prim_float', 'float', 'ConstPrimitiveVector', enc_fb_primitive(v, 'float', const=True), v,
        'one f32')
    v = [-9, -9]
    add('const_prim_int', 'int', 'ConstPrimitiveVector',
        enc_fb_primitive(v, 'int', 8, True, const=True, vtable_after=True), v,
        'vtable after its table (negative soffset)')

    v = [-5, None, 2 ** 40]
    add('diff_long', 'long', 'DiffPrimitiveVector', enc_diff(v, 64, False), v,
        'base -5, 64-bit deltas; NA slot holds 0 - base')
    v = [0, 10, 250]
    add('diff_timestamp_default_base', 'timestamp', 'DiffPrimitiveVector', enc_diff(v, 8, False, base_written=False),
        v, 'base field absent = default 0')
    v = [100, None, -2147483648]
    add('diff_int_i32_edge', 'int', 'DiffPrimitiveVector', enc_diff(v, 32, False), v,
        'int column: base + delta in i64, then the low 32 bits')

    v = [(-86400000, -48), None, (0, 56), (1, 0)]
    add('ddt_tz_na', 'datetime', 'DiffDateTimeVector', enc_ddt(v, (32, False), (8, False)),
        [x and x[0] for x in v], 'pre-1970 base millis, zones -12:00..+14:00 as u8 deltas from baseTz -48',
        tz_quarter_hours=[x and x[1] for x in v])
    v = [(1500000000000, 4), (1500000000001, 4)]
    add('ddt_empty_tz_vector', 'datetime', 'DiffDateTimeVector', enc_ddt(v, (8, True), empty_tz_vector=True),
        [x[0] for x in v], 'tz vector present but empty: baseTz for every row',
        tz_quarter_hours=[x[1] for x in v])

    v = ['a\u0000b', None, '\u65e5\u672c', 'a\u0000b', '']
    add('ssv_shared', 'string', 'SimpleStringVector', enc_simple_string(v, share={3: 0}), v,
        'embedded NUL, elements 0 and 3 share one string object')
    v = ['x', '', None]
    add('ssv_as_utf8', 'utf8', 'SimpleStringVector', enc_simple_string(v), v,
        'a FlatBuffers string vector under a utf8 column')
    v = [None, 'xyz', None]
    add('const_str_mask', 'string', 'ConstStringVector', enc_const_string(v), v,
        'bitmap mask, vtable after the table')
    v = ['q', 'p', None, 'q', 'r']
    add('dict_str_shuffled', 'string', 'DictStringVector', enc_dict_string(v, ['', 'r', 'q', 'p'], 8, True), v,
        'dictionary not in first-appearance order; 2 trailing vtable slots')

    v = [0, -128, 127, 5]
    add('int_nomask_8s', 'int', 'IntBinaryVector', enc_int_bv(v, 8, True), v, 'nbits 8 signed')
    v = [-2, 1, -1, 0, 1]
    add('int_nomask_2s', 'int', 'IntBinaryVector', enc_int_bv(v, 2, True), v,
        'signed 2-bit: never written upstream, sign-extended (FORMAT.md 11.5)')
    v = [-8, 7, -1]
    add('long_nomask_4s', 'long', 'IntBinaryVector', enc_int_bv(v, 4, True), v, 'signed 4-bit under long')
    v = [i % 7 - 3 for i in range(70)]
    for i in (1, 62, 63, 64, 65):
        v[i] = None
    add('int_masked_70', 'int', 'MaskedIntBinaryVector', enc_int_bv(v, 8, True), v,
        '70 rows, two bitmap words')
    v = [None, 3, 9, None, 1]
    add('int_masked_capacity', 'int', 'MaskedIntBinaryVector', enc_int_bv(v, 4, False, words=3), v,
        'appendable bitmap of 3 words for 5 rows: use subOff, not the row count')
    v = [1, -2, 3]
    add('int_as_prim_nomask', 'int', 'PrimitiveAppendableVector', enc_int_bv(v, 32, True, sub=S_PRIMITIVE_NOMASK),
        v, 'pre-0.3.3 Int form 0x0506')
    v = [None, 400]
    add('int_as_prim_masked', 'int', 'PrimitiveMaskVector', enc_int_bv(v, 16, True, sub=S_PRIMITIVE), v,
        'pre-0.3.3 Int form 0x0006')
    v = [-2 ** 63, 2 ** 63 - 1, 0]
    add('long_nomask', 'long', 'PrimitiveAppendableVector', enc_int_bv(v, 64, True, sub=S_PRIMITIVE_NOMASK), v,
        'i64 extremes')
    v = [None, -1, None]
    add('long_masked', 'long', 'PrimitiveMaskVector', enc_int_bv(v, 64, True, sub=S_PRIMITIVE), v, '0x0006 i64')
    v = [NAN_PAYLOAD, NEG_ZERO, 1e-300]
    add('double_nomask', 'double', 'PrimitiveAppendableVector', enc_f64_bv(v), v, '0x0506 f64, bit-exact')
    v = [None, INF]
    add('double_masked', 'double', 'PrimitiveMaskVector', enc_f64_bv(v), v, '0x0006 f64')
    v = [1.0, 15.0, 0.0]
    add('double_as_int_4bit', 'double', 'IntBinaryVector', enc_int_bv([1, 15, 0], 4, False), v,
        'integral doubles as 4-bit unsigned ints')
    v = [None, -70000.0]
    add('double_as_int_masked', 'double', 'MaskedIntBinaryVector', enc_int_bv([None, -70000], 32, True), v,
        '0x0706 under a double column')
    v = [None, -70000]
    add('long_as_int_masked', 'long', 'MaskedIntBinaryVector', enc_int_bv(v, 32, True), v, '0x0706 under long')
    add('int_const_zero_rows', 'int', 'ConstVector', enc_const_bv(0, struct.pack('<i', 7)), [], 'count 0')
    add('long_const', 'long', 'ConstVector', enc_const_bv(5, struct.pack('<q', -2 ** 40)), [-2 ** 40] * 5,
        '8-byte long constant')
    add('double_const_nan', 'double', 'ConstVector', enc_const_bv(2, pack_float(NAN_PAYLOAD, 64)),
        [NAN_PAYLOAD] * 2, 'NaN payload constant')
    add('timestamp_const', 'timestamp', 'ConstVector', enc_const_bv(2, struct.pack('<q', 1500000000000)),
        [1500000000000] * 2, 'a timestamp column reads long vectors')

    init, slope = 1500000000000, -1000
    res = [3, -300, 0, 32767, -32768, 1]
    add('deltadelta_negslope', 'long', 'DeltaDeltaVector', enc_delta_delta(init, slope, res, 16, True),
        [init + slope * i + r for i, r in enumerate(res)], 'negative slope, 16-bit signed residuals')
    init, slope = 0, 2 ** 31 - 1
    res = [0] * 40
    add('deltadelta_ts_big', 'timestamp', 'DeltaDeltaVector', enc_delta_delta(init, slope, res, 2, False),
        [init + slope * i for i in range(40)], 'slope 2^31-1 over 40 rows: slope*i needs 64 bits')

    v = ['h\u00e9llo', None, '', 'a' * 2048, 'z' * 2047]
    add('utf8', 'utf8', 'UTF8Vector', enc_utf8(v), v,
        'small form up to 2047 bytes, large form at 2048; element 0 word at byte 8')
    v = ['ab', None, 'c' * 3000, '']
    add('utf8_v030', 'utf8', 'UTF8Vector', enc_utf8(v, old=True), v,
        'pre-0.3.2 small form: 15-bit offset, 16-bit length, padded entries', format_version='velvia-filo-0.3.0')
    v = ['s', None]
    add('utf8_as_string', 'string', 'UTF8Vector', enc_utf8(v), v, 'a UTF8Vector under a string column')
    v = ['', None, '\u00e9', 'abcd']
    add('fixedmax_utf8', 'utf8', 'FixedMaxUTF8Vector', enc_fixed_max(v), v, '5-byte slots')
    v = [None, None]
    add('fixedmax_all_na', 'utf8', 'FixedMaxUTF8Vector', enc_fixed_max(v, slot=2), v, '2-byte slots, all NA')
    v = ['a', 'b', None, 'c', 'd', 'e', 'a', None]
    add('dict_utf8', 'utf8', 'DictUTF8Vector', enc_dict_utf8(v, 4, False), v, '4-bit codes; codeOff at byte 8')
    v = ['k%d' % (i % 130) for i in range(140)]
    add('dict_utf8_8u', 'utf8', 'DictUTF8Vector', enc_dict_utf8(v, 8, False), v, '130 entries: 8-bit unsigned codes')
    add('utf8_const', 'utf8', 'ConstVector', enc_const_bv(3, '\u65e5\u672c'.encode()), ['\u65e5\u672c'] * 3,
        'UTF-8 constant')
    add('utf8_const_empty', 'utf8', 'ConstVector', enc_const_bv(4, b''), [''] * 4, 'empty-string constant')

    v = ['repeat me ' * 20, None, 'repeat me ' * 30, 'x']
    add('framed_utf8', 'utf8', 'UTF8Vector', lz4_frame(enc_utf8(v)), v, 'LZ4-framed (FORMAT.md 9.2)')
    v = list(range(0, 4000, 40))
    add('framed_long', 'long', 'PrimitiveAppendableVector',
        lz4_frame(enc_int_bv(v, 64, True, sub=S_PRIMITIVE_NOMASK)), v, 'LZ4-framed 0x0506')
    return S


def float_width(coltype):
    return 32 if coltype == 'float' else 64


def record(s, file):
    w = float_width(s['coltype'])
    hdr = s['data'][:4] if s['data'][0] != 0xFF else lz4_unblock(s['data'][5:], struct.unpack('>I', s['data'][1:5])[0])[:4]
    rec = dict(file=file, column_type=s['coltype'], header='0x%08x' % struct.unpack('<I', hdr)[0], kind=s['kind'],
               num_bytes=len(s['data']), length=len(s['values']),
               values=[json_value(v, w) for v in s['values']],
               validity=[v is not None for v in s['values']])
    rec.update(s['extra'])
    rec['note'] = s['note']
    return rec


def fragment(outdir):
    """A fragment directory: 4 rows, 8 columns of different encodings."""
    d = os.path.join(outdir, 'fragment')
    os.makedirs(os.path.join(d, 'cols'))
    n = 4
    cols = [
        ('id', 'int', 'id.filo', 'DiffPrimitiveVector', enc_diff([7, 8, 9, 10], 8, True), [7, 8, 9, 10], {}),
        ('ts', 'timestamp', 'ts.filo', 'DiffPrimitiveVector', enc_diff([1, None, 3, 4], 8, True), [1, None, 3, 4], {}),
        ('when', 'datetime', 'when.filo', 'DiffDateTimeVector',
         enc_ddt([(10, 22), (20, 22), None, (40, -20)], (8, True), (8, True)), [10, 20, None, 40],
         dict(tz_quarter_hours=[22, 22, None, -20])),
        ('price', 'float', 'cols/price.filo', 'SimplePrimitiveVector',
         enc_fb_primitive([0.5, None, 1.5, 2.0], 'float'), [0.5, None, 1.5, 2.0], {}),
        ('name', 'string', 'name.filo', 'DictStringVector',
         enc_dict_string(['b', 'a', 'b', None], ['', 'a', 'b'], 8, True), ['b', 'a', 'b', None], {}),
        ('note', 'utf8', 'note.filo', 'UTF8Vector', enc_utf8(['x' * 2500, None, 'y', ''], old=True),
         ['x' * 2500, None, 'y', ''], dict(format_version='velvia-filo-0.3.0')),
        ('blob', 'utf8', 'blob.filo', 'FixedMaxUTF8Vector', lz4_frame(enc_fixed_max(['aaaa'] * 3 + [None])),
         ['aaaa'] * 3 + [None], {}),
        ('flag', 'bool', 'flag.filo', 'ConstPrimitiveVector', enc_fb_primitive([False, False, None, False], 'bool',
                                                                               const=True),
         [False, False, None, False], {}),
    ]
    columns, expected = [], {}
    for name, t, file, kind, data, values, extra in cols:
        assert len(values) == n
        with open(os.path.join(d, file), 'wb') as f:
            f.write(data)
        col = dict(name=name, type=t, file=file)
        if 'format_version' in extra:
            col['format_version'] = extra['format_version']
        columns.append(col)
        rec = record(dict(coltype=t, kind=kind, data=data, values=values, note='', extra={}), file)
        rec.update({k: v for k, v in extra.items() if k != 'format_version'})
        del rec['note']
        expected[name] = rec
    manifest = dict(format='filo', format_version='velvia-filo-0.3', num_rows=n, columns=columns)
    with open(os.path.join(d, 'filo_fragment.json'), 'w') as f:
        json.dump(manifest, f, indent=2)
        f.write('\n')
    with open(os.path.join(d, 'expected.json'), 'w') as f:
        json.dump({'columns': expected}, f, indent=1, ensure_ascii=False)
        f.write('\n')


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..', 'tests', 'fixtures',
                                                                  'filo')
    if os.path.exists(outdir):
        shutil.rmtree(outdir)
    os.makedirs(os.path.join(outdir, 'vectors'))
    records = []
    for s in catalogue():
        file = 'vectors/%s.filo' % s['name']
        with open(os.path.join(outdir, file), 'wb') as f:
            f.write(s['data'])
        records.append(record(s, file))
    with open(os.path.join(outdir, 'expected.json'), 'w') as f:
        f.write('{"generator": "scripts/make_filo_fixtures.py", "spec": "docs/filo-format/FORMAT.md",\n'
                ' "samples": [\n')
        f.write(',\n'.join('  ' + json.dumps(r, ensure_ascii=False, allow_nan=False) for r in records))
        f.write('\n ]}\n')
    fragment(outdir)
    print('wrote %d fixtures and a fragment to %s' % (len(records), outdir))


if __name__ == '__main__':
    main()
