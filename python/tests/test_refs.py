"""Kerchunk reference sets (``fragfs.refs``, ``fragfs refs``) read through fsspec's
``reference://`` by zarr-python and xarray, against TileDB-Py and TileDB's own reads.

* Every dense array of the fixtures and of the shared corpus, at the latest state and
  at every fragment timestamp: zarr-python's reads through the references are checked
  as tests/check_zarr.py checks ``zarr/`` (shape, chunks, dtypes, coordinates, TileDB's
  merged read over the non-empty domain, TileDB-Py's ``A[:]`` over the whole domain at
  that timestamp, fill values included), and xarray's ``open_dataset("reference://",
  engine="zarr")`` gives the same values.
* An array in S3 (s3s-fs): references to ``s3://`` URLs, read with
  ``remote_protocol="s3"``.
* Chunks served by a running ``fragfs serve`` (``serve_url``, ``inline_limit=0``).
* Arrays under standard codecs read by an interpreter where ``fragfs`` is never
  imported, and the entry point that finds ``fragfs_tile`` without an import.
* A fragment vacuumed (its folder deleted) after the references were made: a clear
  error naming the file, never values; a data file truncated or altered: the codec's
  error."""

import json
import os
import shutil
import subprocess
import sys
import types
import warnings

import numpy as np
import pytest
import tiledb
import xarray as xr
import zarr

import fragfs
from conftest import FIXTURES, FIXTURE_KEY, REPO, fragfs_bin, required

sys.path.insert(0, str(REPO / "tests"))
import check_zarr  # noqa: E402
from check_text_npy import encode_name, states_to_check  # noqa: E402

CORPUS = REPO.parent / "shared" / "corpus" / "tiledb"
REFS = FIXTURES / "refs"

warnings.filterwarnings("ignore", message=".*not recognized as a component.*")


def reference_group(refs, protocol="file", **remote):
    """The store of a reference set, as zarr-python opens a URL."""
    options = {"fo": refs, "remote_protocol": protocol}
    if remote:
        options["remote_options"] = remote
    return zarr.open_group("reference://", mode="r", zarr_format=2, storage_options=options)


def reference_dataset(refs, protocol="file", **remote):
    options = {"fo": refs, "remote_protocol": protocol}
    if remote:
        options["remote_options"] = remote
    return xr.open_dataset(
        "reference://",
        engine="zarr",
        backend_kwargs={"consolidated": False, "storage_options": options},
        chunks={},
        mask_and_scale=False,
    )


def dense_arrays(folder):
    """The dense arrays of a folder with their merged JSON, and the key of encrypted
    ones."""
    out = []
    for merged_path in sorted(folder.glob("**/*.merged.json")):
        merged = json.loads(merged_path.read_text())
        if merged.get("array_type") != "dense":
            continue
        array = merged_path.parent / merged_path.name[: -len(".merged.json")]
        expected = merged_path.parent / (array.name + ".expected.json")
        key = None
        if expected.exists():
            key = (json.loads(expected.read_text()).get("encryption") or {}).get("key")
        if array.is_dir():
            out.append((array, merged, key))
    return out


def zarr_summary(array, key):
    """What array.json says of zarr/: the arrays shown, and those not shown with why."""
    options = {"encryption_key": key} if key else {}
    return json.loads(fragfs.Tree(str(array), **options).cat("array.json"))["zarr"]


def check_state(array, merged, read, key, refs, group, dataset, summary=None):
    """One state read through its references, by zarr-python as check_zarr.py checks
    zarr/ (TileDB-Py at that timestamp and merged.json), then by xarray against it."""
    summary = summary or zarr_summary(array, key)
    if not summary.get("shown"):
        return 0
    shown, not_shown = set(summary["arrays"]), summary["not_shown"]
    spec = {"array": str(array), "key": key, "mount": "reference:"}
    stats = {"cells": 0, "whole": 0, "undecodable": 0}
    A = check_zarr.open_tiledb(spec, read["timestamp"])
    real = check_zarr.zarr
    check_zarr.zarr = types.SimpleNamespace(open_group=lambda base, **kw: group)
    try:
        check_zarr.check_state(spec, merged, read, shown, not_shown, 2, stats, A, {})
    finally:
        check_zarr.zarr = real
        if A is not None:
            A.close()
    where = "%s at %s" % (array, read["timestamp"])
    dataset = dataset.load()
    arrays = dict(group.arrays())
    for f in read["fields"]:
        name = encode_name(f["name"])
        if f["role"] != "attribute" or name not in shown:
            continue
        got = dataset[name].values
        want = np.asarray(arrays[name][...])
        if got.dtype.kind in "Mm":
            # xarray holds datetimes in seconds at the coarsest (DATETIME_DAY's days too).
            want = want.astype(got.dtype)
        assert check_zarr.same_cells(f, got, want), "%s: xarray's %s" % (where, name)
    return stats["whole"]


def check_array(array, merged, key, every_state=True):
    states = whole = 0
    summary = zarr_summary(array, key)
    for read in states_to_check(merged, every_state):
        options = {"encryption_key": key} if key else {}
        refs = fragfs.refs(str(array), at=read["timestamp"], inline_limit=1 << 20, **options)
        group = reference_group(refs)
        whole += check_state(array, merged, read, key, refs, group, reference_dataset(refs), summary)
        states += 1
    return states, whole


def check_arrays(arrays, name):
    """check_array over `arrays`; the whole-domain compares made."""
    states = whole = 0
    for array, merged, key in arrays:
        s, w = check_array(array, merged, key)
        states, whole = states + s, whole + w
    print("%d %s arrays, %d states, %d whole-domain compares with TileDB-Py" % (len(arrays), name, states, whole))
    return whole


def test_every_dense_fixture_at_every_state_reads_as_tiledb_py():
    arrays = dense_arrays(FIXTURES)
    assert len(arrays) > 20
    assert check_arrays(arrays, "fixture") > 50


def test_every_dense_corpus_array_at_every_state_reads_as_tiledb_py():
    if not CORPUS.is_dir():
        required("no shared corpus at %s" % CORPUS)
    arrays = dense_arrays(CORPUS)
    assert len(arrays) > 250
    assert check_arrays(arrays, "corpus") > 500


def check_states(array, merged, key=None, open_refs=None, **refs_options):
    """Every state of `array` through references made with `refs_options`, opened by
    `open_refs(refs)` (a storage_options maker; default fragfs.reference_options)."""
    open_refs = open_refs or fragfs.reference_options
    states = 0
    for read in states_to_check(merged, True):
        refs = fragfs.refs(str(array), at=read["timestamp"], **refs_options)
        options = open_refs(refs)
        group = zarr.open_group("reference://", mode="r", zarr_format=2, storage_options=options)
        dataset = xr.open_dataset("reference://", engine="zarr", chunks={}, mask_and_scale=False,
                                  backend_kwargs={"consolidated": False, "storage_options": options})
        check_state(array, merged, read, key, refs, group, dataset)
        states += 1
    return states


def merged_of(array):
    return json.loads((array.parent / (array.name + ".merged.json")).read_text())


def chunk_urls(refs):
    return {k: v[0] for k, v in refs["refs"].items() if isinstance(v, list)}


@pytest.fixture
def served():
    """`fragfs serve --http` of an array, as a function of the array: its URL."""
    servers = []

    def start(array):
        server = subprocess.Popen([fragfs_bin(), "serve", "--http", "127.0.0.1:0", str(array)],
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        servers.append(server)
        door, url = server.stdout.readline().split()
        assert door == "http", door
        return url

    yield start
    for server in servers:
        server.terminate()
        server.wait()


def test_chunks_served_by_fragfs_serve_read_as_tiledb_py(served):
    # Overlapping partial writes: every data chunk a merge, served as zarr/ serves it.
    overlap = FIXTURES / "features" / "merge_dense_overlap"
    url = served(overlap)
    merged = merged_of(overlap)
    assert check_states(overlap, merged, serve_url=url, inline_limit=0) == len(merged["reads"])
    refs = fragfs.refs(str(overlap), serve_url=url, inline_limit=0)
    urls = chunk_urls(refs)
    assert urls and all(u.startswith(url) and "envelope" not in u for u in urls.values())
    # Stored tiles and served merges in one array: fragfs_tile, the served ones behind
    # its envelope; read with one filesystem per protocol.
    standard = REFS / "refs_standard"
    url = served(standard)
    refs = fragfs.refs(str(standard), serve_url=url, inline_limit=0)
    served_urls = [u for u in chunk_urls(refs).values() if u.startswith("http")]
    assert len(served_urls) == 7 and all(u.endswith("?envelope=fragfs_tile") for u in served_urls)
    assert json.loads(refs["refs"]["zstd_i32/.zarray"])["compressor"]["id"] == "fragfs_tile"
    assert check_states(standard, merged_of(standard), serve_url=url, inline_limit=0) == 3


def s3_options(endpoint):
    from test_s3 import ACCESS_KEY, SECRET_KEY

    return dict(endpoint_url=endpoint, region="us-east-1", access_key_id=ACCESS_KEY,
                secret_access_key=SECRET_KEY, virtual_hosted=False, retry_timeout=10)


def test_references_to_s3_read_with_remote_protocol_s3(s3s):
    from test_s3 import ACCESS_KEY, SECRET_KEY

    root, endpoint = s3s
    local = FIXTURES / "tiledb" / "dense_2d"
    shutil.copytree(local, root / "fixtures" / "dense_2d")
    merged = merged_of(local)
    s3 = {"key": ACCESS_KEY, "secret": SECRET_KEY, "asynchronous": True,
          "client_kwargs": {"endpoint_url": endpoint, "region_name": "us-east-1"}}
    states = 0
    for read in states_to_check(merged, True):
        refs = fragfs.refs("s3://fixtures/dense_2d", at=read["timestamp"], **s3_options(endpoint))
        urls = chunk_urls(refs)
        assert urls and all(u.startswith("s3://fixtures/dense_2d/__fragments/") for u in urls.values())
        options = {"fo": refs, "remote_protocol": "s3", "remote_options": s3}
        group = zarr.open_group("reference://", mode="r", zarr_format=2, storage_options=options)
        dataset = xr.open_dataset("reference://", engine="zarr", chunks={}, mask_and_scale=False,
                                  backend_kwargs={"consolidated": False, "storage_options": options})
        assert fragfs.reference_options(refs, s3=s3) == options
        check_state(local, merged, read, None, refs, group, dataset)
        states += 1
    assert states == len(merged["reads"])


from test_s3 import s3s  # noqa: E402,F401  (the s3s-fs server fixture)


def run_python(code, *args):
    out = subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


# Reads every array of a reference set (a JSON file) with zarr-python, compares it with
# TileDB-Py's A[:], with `fragfs` unimportable: a finder refuses it.
WITHOUT_FRAGFS = r"""
import json, sys
class NoFragfs:
    def find_spec(self, name, path=None, target=None):
        if name == "fragfs" or name.startswith("fragfs."):
            raise ImportError("fragfs must not be imported here: " + name)
sys.meta_path.insert(0, NoFragfs())
import numpy as np, tiledb, zarr
refs = json.load(open(sys.argv[1]))
g = zarr.open_group("reference://", mode="r", zarr_format=2,
                    storage_options={"fo": refs, "remote_protocol": "file"})
with tiledb.open(sys.argv[2], timestamp=(0, int(sys.argv[3]))) as A:
    want = A[:]
n = 0
for name, a in g.arrays():
    if name in want:
        w = want[name]
        w = np.ma.getdata(w)
        if w.dtype.names:
            from numpy.lib import recfunctions
            w = recfunctions.structured_to_unstructured(w)
        got = a[...]
        ok = np.array_equal(got, w, equal_nan=got.dtype.kind == "f")
        if name.startswith("n_"):
            mask = ~np.ma.getmaskarray(want[name])
            ok = np.array_equal(got[mask], w[mask]) and np.array_equal(g[name + "__validity"][...], mask.astype("u1"))
        assert ok, name
        n += 1
assert not [m for m in sys.modules if m == "fragfs" or m.startswith("fragfs.")]
print(n, sorted({json.loads(refs["refs"][k])["compressor"]["id"] for k in refs["refs"] if k.endswith(".zarray") and json.loads(refs["refs"][k])["compressor"]}))
"""


def test_standard_codecs_are_read_without_fragfs(tmp_path):
    array = REFS / "refs_standard"
    for t in (1, 2):
        refs = fragfs.refs(str(array), at=t)
        codecs = {json.loads(v)["compressor"]["id"] if json.loads(v)["compressor"] else None
                  for k, v in refs["refs"].items() if k.endswith("/.zarray")}
        assert codecs == {"zstd", "zlib", None}, codecs
        path = tmp_path / ("refs-%d.json" % t)
        path.write_text(json.dumps(refs))
        out = run_python(WITHOUT_FRAGFS, path, array, t)
        assert out.split()[0] == "6", out


def test_zarr_finds_fragfs_tile_through_the_entry_point_without_an_import(tmp_path):
    array = FIXTURES / "tiledb" / "dense_2d"
    path = tmp_path / "refs.json"
    refs = fragfs.refs(str(array))
    path.write_text(json.dumps(refs))
    out = run_python(r"""
import json, sys
import numpy as np, tiledb, zarr
assert "fragfs" not in sys.modules
refs = json.load(open(sys.argv[1]))
g = zarr.open_group("reference://", mode="r", zarr_format=2,
                    storage_options={"fo": refs, "remote_protocol": "file"})
with tiledb.open(sys.argv[2]) as A:
    want = A[:]
for name in ["bs_dd_zstd", "pd_bwr_lz4", "f32_delta_zstd", "md5_i16", "sha_gzip_f64"]:
    assert type(g[name].metadata.compressor).__name__ == "FragfsTile", name
    assert np.array_equal(g[name][...], want[name]), name
print("fragfs.codec" in sys.modules)
""", path, array)
    assert out.strip() == "True"


def copy_array(src, tmp_path):
    dst = tmp_path / src.name
    shutil.copytree(src, dst)
    return dst


def causes(e):
    while e is not None:
        yield e
        e = e.__cause__ or e.__context__


def test_a_vacuumed_fragment_is_a_clear_error_never_values(tmp_path):
    array = copy_array(REFS / "refs_standard", tmp_path)
    refs = fragfs.refs(str(array), at=1)
    group = reference_group(refs)
    assert group["zstd_i32"][...].sum() != 0
    (first,) = [d for d in (array / "__fragments").iterdir() if d.name.startswith("__1_1_")]
    shutil.rmtree(first)  # what a vacuum does
    for name in ["zstd_i32", "gzip_f64", "n_f32__validity"]:
        with pytest.raises(Exception) as e:
            reference_group(refs)[name][...]
        missing = [c for c in causes(e.value) if isinstance(c, FileNotFoundError)]
        assert missing and str(first) in str(missing[0]), repr(e.value)


def test_a_truncated_or_altered_tile_is_the_codec_s_error(tmp_path):
    array = copy_array(FIXTURES / "tiledb" / "dense_2d", tmp_path)
    refs = fragfs.refs(str(array))
    url, offset, length = refs["refs"]["bs_dd_zstd/0.0"]
    assert reference_group(refs)["bs_dd_zstd"][...].any()
    original = open(url, "rb").read()
    # Truncated inside the first tile.
    with open(url, "r+b") as f:
        f.truncate(offset + length // 2)
    with pytest.raises(ValueError, match="fragfs_tile"):
        reference_group(refs)["bs_dd_zstd"][...]
    # Another fragment's bytes in its place: the chunk sizes disagree.
    with open(url, "wb") as f:
        f.write(original[:offset] + bytes(length) + original[offset + length:])
    with pytest.raises(ValueError, match="fragfs_tile"):
        reference_group(refs)["bs_dd_zstd"][...]
    # Compressed bytes altered: zstd says so (a checksummed pipeline would too).
    altered = bytearray(original)
    for i in range(offset + length - 12, offset + length):
        altered[i] ^= 0x5A
    open(url, "wb").write(bytes(altered))
    with pytest.raises(ValueError, match="ZSTD|DOUBLE_DELTA|BYTESHUFFLE"):
        reference_group(refs)["bs_dd_zstd"][...]
    # A standard codec's reference, truncated: numcodecs fails, never fill values.
    standard = copy_array(REFS / "refs_standard", tmp_path)
    refs = fragfs.refs(str(standard), at=1)
    url, offset, length = refs["refs"]["zstd_i32/1.1"]
    with open(url, "r+b") as f:
        f.truncate(offset + length - 3)
    with pytest.raises(Exception):
        reference_group(refs)["zstd_i32"][...]


def test_refs_refuses_what_it_cannot_reference_naming_each_chunk():
    with pytest.raises(ValueError) as e:
        fragfs.refs(str(REFS / "refs_big_tile"))
    message = str(e.value)
    assert "1 chunk can be neither referenced, inlined nor served" in message
    assert "zarr/v/1: cells of fragment __1_1_" in message
    with pytest.raises(OSError, match="a sparse array"):
        fragfs.refs(str(FIXTURES / "tiledb" / "sparse_var_nullable"))
    with pytest.raises(FileNotFoundError):
        fragfs.refs(str(FIXTURES / "no_such_array"))
    refs = fragfs.refs(str(FIXTURES / "tiledb" / "encrypted"), encryption_key=FIXTURE_KEY)
    assert not chunk_urls(refs), "encrypted tiles are never referenced"
    assert FIXTURE_KEY not in json.dumps(refs)
