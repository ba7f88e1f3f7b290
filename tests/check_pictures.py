"""Checks fragfs's quick looks (`values.png`) with a real PNG decoder (Pillow).

    python check_pictures.py SPEC.json

SPEC is a list of entries, one per `values.png`:

    {"png": path, "values": values.npy, "validity": validity.bin or null,
     "coords": [each dimension's values.npy] (a fragment's cells, in storage order) or
               null (a state's values.npy, shaped like its box),
     "low": [first coordinate of each dimension] (fragments), "fill": the fill value
     (JSON; NaN and the infinities as strings), "fill_valid": bool, "what": a label}

For each: the PNG decodes (8-bit RGBA); its size is the source's 2-D slice (the last
two dimensions, the others at their first coordinate) sampled every `s`-th row and
column, `s` the smallest stride that keeps both sides at most 1024; its text chunks give
the shape (`fragfs:shape`), the stride (`fragfs:method`) and the range
(`fragfs:range`), which must be the lowest and highest finite, valid, non-fill values
sampled; and every pixel is what the colour map makes of its cell: viridis (the table
read from src/encode/colormap.rs) at step floor((v - lo) / (hi - lo) * 255 + 0.5),
fill values and NaN transparent, nulls grey. The cells are found here from the files
beside the PNG, independently of how fragfs samples them: a fragment's by its
synthesized coordinates. Prints one line per PNG; exits 1 on the first mismatch.
"""

import json
import math
import pathlib
import re
import sys

import numpy as np
from PIL import Image

REPO = pathlib.Path(__file__).resolve().parent.parent
VIRIDIS = np.array(
    [
        [int(x) for x in m]
        for m in re.findall(
            r"\[(\d+), (\d+), (\d+)\]",
            (REPO / "src/encode/colormap.rs")
            .read_text()
            .split("pub static VIRIDIS")[1]
            .split("= [", 1)[1]
            .split("\n];")[0],
        )
    ],
    dtype=np.uint8,
)
assert VIRIDIS.shape == (256, 3), VIRIDIS.shape
NULL_GREY = (128, 128, 128, 255)


def fail(what, why):
    print(f"FAIL {what}: {why}")
    sys.exit(1)


def as_float(a):
    """Values as float64, as fragfs colours them (datetimes by their counts)."""
    if a.dtype.kind in "Mm":
        a = a.view(np.int64)
    return a.astype(np.float64)


def fill_array(fill, dtype):
    if isinstance(fill, str):
        fill = float(fill)  # "NaN", "Infinity", "-Infinity"
    if dtype.kind in "Mm":
        return np.array([fill], dtype=np.int64).view(dtype)
    return np.array([fill]).astype(dtype)


def slice_2d(e, shape):
    """The source's first 2-D slice: values and validity, each (rows, columns)."""
    values = np.load(e["values"])
    validity = None
    if e["validity"]:
        validity = np.frombuffer(pathlib.Path(e["validity"]).read_bytes(), dtype=np.uint8)
    n = len(shape)
    rows, cols = shape[-2], shape[-1]
    if e["coords"] is None:
        lead = (0,) * (n - 2)
        grid = values.reshape(shape)[lead]
        valid = validity.reshape(shape)[lead] if validity is not None else None
        return grid, valid
    coords = [np.load(c).astype(np.int64) for c in e["coords"]]
    low = e["low"]
    mask = np.ones(len(values), dtype=bool)
    for d in range(n - 2):
        mask &= coords[d] == low[d]
    r = coords[n - 2] - low[n - 2]
    c = coords[n - 1] - low[n - 1]
    mask &= (r >= 0) & (r < rows) & (c >= 0) & (c < cols)
    grid = np.zeros((rows, cols), dtype=values.dtype)
    seen = np.zeros((rows, cols), dtype=bool)
    grid[r[mask], c[mask]] = values[mask]
    seen[r[mask], c[mask]] = True
    if not seen.all():
        fail(e["what"], f"{(~seen).sum()} cells of the slice not stored in the fragment")
    valid = None
    if validity is not None:
        valid = np.zeros((rows, cols), dtype=np.uint8)
        valid[r[mask], c[mask]] = validity[mask]
    return grid, valid


def check(e):
    what = e["what"]
    im = Image.open(e["png"])
    im.load()
    if im.format != "PNG" or im.mode != "RGBA":
        fail(what, f"{im.format} {im.mode}")
    text = im.text
    shape = [int(x) for x in text["fragfs:shape"].split("x")]
    m = re.search(r"\(stride (\d+)\)", text["fragfs:method"])
    if not m:
        fail(what, f"no stride in {text['fragfs:method']!r}")
    s = int(m.group(1))
    rows, cols = shape[-2], shape[-1]
    if s != max(1, math.ceil(max(rows, cols) / 1024)):
        fail(what, f"stride {s} for {rows}x{cols}")
    width, height = im.size
    if (height, width) != (math.ceil(rows / s), math.ceil(cols / s)):
        fail(what, f"{width}x{height} pixels for {rows}x{cols} cells at stride {s}")
    if max(width, height) > 1024:
        fail(what, f"{width}x{height}: over 1024")
    if s > 1 and "not averaged" not in text["fragfs:method"]:
        fail(what, f"the method says {text['fragfs:method']!r}")
    grid, valid = slice_2d(e, shape)
    grid, valid = grid[::s, ::s], (valid[::s, ::s] if valid is not None else None)
    size = grid.dtype.itemsize
    fill = fill_array(e["fill"], grid.dtype)
    raw = np.ascontiguousarray(grid).view(np.uint8).reshape(grid.shape + (size,))
    is_fill = (raw == fill.view(np.uint8)).all(axis=-1)
    if valid is not None:
        is_fill &= (valid != 0) == bool(e["fill_valid"])
        is_null = (valid == 0) & ~is_fill
    else:
        is_null = np.zeros(grid.shape, dtype=bool)
    v = as_float(grid)
    is_nan = np.isnan(v) & ~is_fill & ~is_null
    is_value = ~is_fill & ~is_null & ~is_nan
    finite = is_value & np.isfinite(v)
    if finite.any():
        lo, hi = v[finite].min(), v[finite].max()
        got = text["fragfs:range"].split()
        if len(got) != 2 or float(got[0]) != lo or float(got[1]) != hi:
            fail(what, f"range {text['fragfs:range']!r}, the sampled values span {lo} {hi}")
        span = hi - lo
        with np.errstate(invalid="ignore", over="ignore"):
            step = np.floor((v - lo) / span * 255.0 + 0.5) if span > 0 else np.full(v.shape, 128.0)
        step = np.where(v == np.inf, 255, np.where(v == -np.inf, 0, step))
        step = np.clip(np.nan_to_num(step), 0, 255).astype(np.int64)
    else:
        if text["fragfs:range"] != "none":
            fail(what, f"range {text['fragfs:range']!r} with no finite value sampled")
        step = np.where(v > 0, 255, 0).astype(np.int64)
    want = np.zeros(grid.shape + (4,), dtype=np.uint8)
    want[..., :3] = VIRIDIS[step]
    want[..., 3] = 255
    want[is_fill | is_nan] = (0, 0, 0, 0)
    want[is_null] = NULL_GREY
    got = np.asarray(im)
    if got.shape != want.shape or (got != want).any():
        bad = np.argwhere((got != want).any(axis=-1))[:5]
        fail(what, "pixels differ at " + ", ".join(
            f"({r},{c}): {got[r, c].tolist()} not {want[r, c].tolist()} (cell {grid[r, c]!r})"
            for r, c in bad))
    kinds = {"values": int(finite.sum()), "fill": int(is_fill.sum()),
             "null": int(is_null.sum()), "nan": int(is_nan.sum())}
    print(f"ok {what}: {width}x{height}, stride {s}, shape {'x'.join(map(str, shape))}, "
          f"range {text['fragfs:range']}, {kinds}")
    return kinds


def main():
    spec = json.loads(pathlib.Path(sys.argv[1]).read_text())
    total = {"values": 0, "fill": 0, "null": 0, "nan": 0}
    for e in spec:
        for k, n in check(e).items():
            total[k] += n
    print(f"checked {len(spec)} quick looks: {total}")


if __name__ == "__main__":
    main()
