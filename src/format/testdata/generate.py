"""Writes the small real TileDB files the pure parsers of src/format/ test against:
delete commits (conditions/), array and group metadata (metadata/), group details
(group/) and enumerations (enumerations/). Only the generic-tile files are kept, not
whole arrays. Written with tiledb-py 0.36.1 (libtiledb 2.30.0), the version pinned by
scripts/make_fixtures.sh:

    python -m venv /tmp/v && /tmp/v/bin/pip install tiledb==0.36.1
    /tmp/v/bin/python src/format/testdata/generate.py src/format/testdata

The arrays are built under /tmp/fragfs-testdata (that path appears inside the group
details files, which store absolute member URIs). UUIDs in the file names change on
every run; the tests list the folders instead of naming files. What each file holds
is written to the JSON manifests beside it and asserted in the Rust tests.
"""

import json
import os
import shutil
import sys

import numpy as np
import tiledb

out = os.path.abspath(sys.argv[1])
work = "/tmp/fragfs-testdata"
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
for sub in ("conditions", "metadata", "group", "enumerations"):
    shutil.rmtree(os.path.join(out, sub), ignore_errors=True)


def keep(src, dst_rel):
    dst = os.path.join(out, dst_rel)
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    shutil.copyfile(src, dst)


def keep_dir(src, dst_rel):
    for name in sorted(os.listdir(src)):
        if os.path.isfile(os.path.join(src, name)):
            keep(os.path.join(src, name), os.path.join(dst_rel, name))


# ---- delete conditions: one .del per condition, then a .con of all commits ----
arr = os.path.join(work, "deletes")
dom = tiledb.Domain(tiledb.Dim("d", domain=(0, 99), tile=10, dtype=np.int32))
colors = tiledb.Enumeration("colors", False, ["red", "green", "blue"])
attrs = [
    tiledb.Attr("a", dtype=np.int32),
    tiledb.Attr("f", dtype=np.float64),
    tiledb.Attr("g", dtype=np.float32),
    tiledb.Attr("u", dtype=np.uint64),
    tiledb.Attr("i8", dtype=np.int8),
    tiledb.Attr("s", dtype=str, var=True, nullable=True),
    tiledb.Attr("n", dtype=np.int64, nullable=True),
    tiledb.Attr("color", dtype=np.uint8, enum_label="colors"),
]
tiledb.Array.create(
    arr, tiledb.ArraySchema(domain=dom, sparse=True, enums=[colors], attrs=attrs)
)
with tiledb.open(arr, "w", timestamp=1) as A:
    A[np.arange(10)] = {
        "a": np.arange(10, dtype=np.int32),
        "f": np.arange(10.0),
        "g": np.arange(10, dtype=np.float32),
        "u": np.arange(10, dtype=np.uint64),
        "i8": np.arange(10, dtype=np.int8),
        "s": np.array(["x"] * 10, dtype=object),
        "n": np.arange(10, dtype=np.int64),
        "color": np.zeros(10, dtype=np.uint8),
    }
conditions = [
    "a < 5",
    "a <= -7",
    "f > 1.5",
    "g >= 0.1",
    "u == 18446744073709551615",
    "i8 != -128",
    "s == 'x'",
    "s != \"it's\"",
    "n == None",
    "n != None",
    "s == ''",
    "a in [1, 2, 3]",
    "a not in [4, 5]",
    "s in ['p', 'qq']",
    "a < 5 and f > 1.5",
    "(a < 5 and f > 1.5) or s != 'q'",
    "a < 5 and (f > 1.5 or s != 'q')",
    "not (a < 5)",
    "a < 1 or a > 8 or n == 3",
    "color == 'green'",
]
deletes = []
for i, cond in enumerate(conditions):
    ts = 10 + i
    with tiledb.open(arr, "d", timestamp=ts) as A:
        A.query(cond=cond).submit()
    [name] = [
        n
        for n in os.listdir(os.path.join(arr, "__commits"))
        if n.startswith(f"__{ts}_{ts}_") and n.endswith(".del")
    ]
    keep(os.path.join(arr, "__commits", name), f"conditions/{name}")
    deletes.append({"file": name, "timestamp": ts, "condition": cond})
keep_dir(os.path.join(arr, "__schema"), "conditions/__schema")
tiledb.consolidate(arr, config=tiledb.Config({"sm.consolidation.mode": "commits"}))
[con] = [n for n in os.listdir(os.path.join(arr, "__commits")) if n.endswith(".con")]
keep(os.path.join(arr, "__commits", con), f"conditions/{con}")
with open(os.path.join(out, "conditions", "deletes.json"), "w") as f:
    json.dump(
        {
            "fields": {a.name: str(np.dtype(a.dtype)) for a in attrs},
            "consolidated": con,
            "deletes": deletes,
        },
        f,
        indent=1,
    )
    f.write("\n")

# ---- array metadata (two writes, a consolidation, a later delete), enumerations ----
arr = os.path.join(work, "meta_arr")
dom = tiledb.Domain(tiledb.Dim("d", domain=(0, 9), tile=10, dtype=np.int32))
enums = [
    tiledb.Enumeration("colors", False, ["red", "green", "", "blue"]),
    tiledb.Enumeration("levels", True, np.array([10, -20, 30], dtype=np.int16)),
    tiledb.Enumeration("empty", False, dtype=np.dtype("U")),
]
schema = tiledb.ArraySchema(
    domain=dom,
    sparse=False,
    enums=enums,
    attrs=[
        tiledb.Attr("c", dtype=np.uint8, enum_label="colors"),
        tiledb.Attr("l", dtype=np.int32, enum_label="levels"),
        tiledb.Attr("e", dtype=np.int32, enum_label="empty"),
    ],
)
tiledb.Array.create(arr, schema)
meta_steps = []
with tiledb.open(arr, "w", timestamp=1) as A:
    A.meta["int"] = 7
    A.meta["float"] = 2.5
    A.meta["str"] = "h\u00e9llo"
    A.meta["bytes"] = b"\x00\x01"
    A.meta["arr"] = np.array([1, 2, 3], dtype=np.int16)
    A.meta["gone"] = 1
meta_steps.append(sorted(os.listdir(os.path.join(arr, "__meta"))))
with tiledb.open(arr, "w", timestamp=2) as A:
    A.meta["int"] = 8
    del A.meta["gone"]
    A.meta["empty"] = ""
tiledb.consolidate(arr, config=tiledb.Config({"sm.consolidation.mode": "array_meta"}))
with tiledb.open(arr, "w", timestamp=3) as A:
    del A.meta["float"]
with tiledb.open(arr, "r") as A:
    final = {k: repr(v) for k, v in A.meta.items()}
keep_dir(os.path.join(arr, "__meta"), "metadata/array")
with open(os.path.join(out, "metadata", "array.json"), "w") as f:
    json.dump({"tiledb_py_view": final}, f, indent=1)
    f.write("\n")

se = tiledb.ArraySchemaEvolution()
with tiledb.open(arr, "r") as A:
    se.extend_enumeration(A.enum("colors").extend(["cyan"]))
se.array_evolve(arr)
keep_dir(os.path.join(arr, "__schema", "__enumerations"), "enumerations")

# ---- a group: three members, then one removed; group metadata ----
grp = os.path.join(work, "grp")
tiledb.Group.create(grp)
tiledb.Array.create(
    os.path.join(grp, "a1"),
    tiledb.ArraySchema(domain=dom, attrs=[tiledb.Attr("x", dtype=np.int32)]),
)
tiledb.Group.create(os.path.join(grp, "sub"))


def at(t):
    return tiledb.Config({"sm.group.timestamp_end": str(t)})


with tiledb.Group(grp, "w", config=at(5)) as G:
    G.add("a1", name="first", relative=True)
    G.add(os.path.join(grp, "sub"), relative=False)
    G.add(arr, name="meta_arr")
    G.meta["k"] = "v"
with tiledb.Group(grp, "w", config=at(6)) as G:
    G.remove("meta_arr")
    G.meta["k2"] = 3
with tiledb.Group(grp, "r") as G:
    members = sorted([m.uri, m.type.__name__, m.name] for m in G)
keep_dir(os.path.join(grp, "__group"), "group/__group")
keep_dir(os.path.join(grp, "__meta"), "metadata/group")
with open(os.path.join(out, "group", "group.json"), "w") as f:
    json.dump({"tiledb_py_members": members}, f, indent=1)
    f.write("\n")
print("wrote", out)
