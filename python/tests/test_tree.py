"""`fragfs.Tree` and the fsspec filesystem against `fragfs cat` and `fragfs ls -lR`:
every file of several fixtures (dense, sparse with var and nullable fields, encrypted,
a group), its fragments, `latest/` and `at/<T>/` included, byte for byte."""

import subprocess
import zlib
from pathlib import Path
from concurrent.futures import ThreadPoolExecutor

import fsspec
import pytest

import fragfs
from conftest import FIXTURE_KEY, FIXTURES, fragfs_bin, fragfs_cat, fragfs_ls, tree_walk

CASES = [
    ("tiledb/dense_2d", None),
    ("tiledb/sparse_var_nullable", None),
    ("tiledb/encrypted", FIXTURE_KEY),
    ("features/group_nested", None),
]


def options(key):
    return {"encryption_key": key} if key else {}


def check_listing(tree, array, key):
    """The tree's listing, fresh (before any file was read), is `fragfs ls -lR`'s: the
    same paths and types, the same sizes where known (a file not built yet is `None`
    here, 0 there)."""
    shown = fragfs_ls(array, key)
    listed = tree_walk(tree)
    assert sorted(listed) == sorted(shown)
    for path, (kind, size) in shown.items():
        entry = listed[path]
        assert entry["type"] == kind, path
        if entry["size"] is None:
            assert kind == "file" and size == 0, path
        else:
            assert entry["size"] == size, path
    return shown


@pytest.mark.parametrize("name,key", CASES, ids=[c[0] for c in CASES])
def test_every_file_reads_as_fragfs_cat_prints_it(name, key):
    array = FIXTURES / name
    tree = fragfs.Tree(str(array), **options(key))
    shown = check_listing(tree, array, key)
    files = sorted(p for p, (kind, _) in shown.items() if kind == "file")
    if not name.startswith("features/group"):
        assert any(p.startswith("latest/") for p in files)
        assert any(p.startswith("at/") and p.count("/") >= 2 for p in files)
        assert any(p.startswith("fragments/") for p in files)
    with ThreadPoolExecutor(4) as pool:
        printed = dict(zip(files, pool.map(lambda p: fragfs_cat(array, p, key), files)))
    fs = fsspec.filesystem("fragfs", array=str(array), **options(key))
    for path in files:
        want = printed[path]
        assert tree.cat(path) == want, path
        assert tree.info(path) == {"name": path, "size": len(want), "type": "file"}
        # Python's slices, as fsspec's cat_file takes them.
        for start, end in [(1, None), (None, -1), (-7, None), (3, 11), (5, 2), (-3, -1)]:
            assert tree.cat(path, start, end) == want[start:end], (path, start, end)
        assert fs.cat_file(path) == want, path
        assert fs.cat_file(path, 2, -2) == want[2:-2], path
        with fs.open(path) as f:
            assert f.read() == want, path
        with fs.open(f"fragfs://{path}", block_size=5) as f:
            f.seek(len(want) // 2)
            assert f.read() == want[len(want) // 2 :], path
    # Once read, every size is known, and a listing says it.
    for path, entry in tree_walk(tree).items():
        if entry["type"] == "file":
            assert entry["size"] == len(printed[path]), path


def test_threads_share_one_tree():
    array = FIXTURES / "tiledb" / "sparse_var_nullable"
    tree = fragfs.Tree(str(array))
    files = sorted(p for p, e in tree_walk(tree).items() if e["type"] == "file")
    alone = {p: tree.cat(p) for p in files}
    fresh = fragfs.Tree(str(array))
    with ThreadPoolExecutor(8) as pool:
        together = list(pool.map(fresh.cat, files * 4))
    assert together == [alone[p] for p in files * 4]


def test_fsspec_lists_and_finds_as_the_tree():
    array = str(FIXTURES / "tiledb" / "dense_2d")
    tree = fragfs.Tree(array)
    # Fresh, as the tree: fsspec keeps instances, and one that read cells.csv knows its size.
    fs = fsspec.filesystem("fragfs", array=array, skip_instance_cache=True)
    assert fs.ls("latest", detail=False) == [e["name"] for e in tree.ls("latest")]
    assert fs.ls("/latest/", detail=True) == tree.ls("latest")
    assert fs.ls("") == tree.ls("")
    assert fs.info("latest/plain") == {"name": "latest/plain", "size": 0, "type": "directory"}
    assert fs.isdir("zarr") and fs.isfile("latest/read.json")
    assert not fs.exists("latest/nothing")
    assert set(fs.find("latest")) == {
        p for p, e in tree_walk(tree, "latest").items() if e["type"] == "file"
    }
    # A file's own listing is its entry.
    assert fs.ls("latest/read.json") == [tree.info("latest/read.json")]


def test_tree_says_what_it_is():
    array = str(FIXTURES / "tiledb" / "dense_2d")
    tree = fragfs.Tree(array)
    assert repr(tree) == f"fragfs.Tree({array!r})"
    assert array in tree.source
    assert fragfs.DEFAULT_CACHE_SIZE == 256 << 20
    # A small cache reads the same bytes.
    small = fragfs.Tree(array, cache_size=1 << 16)
    assert small.cat("latest/plain/values.bin") == tree.cat("latest/plain/values.bin")


def test_a_disk_cache_keeps_what_one_tree_read_for_the_next(tmp_path):
    """`cache_dir` is `--cache-dir`: a second Tree (as a second process would) reads
    the decoded bytes the first one kept there, the same bytes."""
    array = str(FIXTURES / "tiledb" / "dense_2d")
    cache = tmp_path / "cache"
    path = "latest/sha_gzip_f64/values.bin"
    want = fragfs.Tree(array).cat(path)
    first = fragfs.Tree(array, cache_dir=str(cache), cache_dir_size=16 << 20)
    assert first.cat(path) == want
    del first
    kept = [p for p in cache.rglob("*") if p.is_file() and p.stat().st_size >= len(want)]
    assert kept, "nothing kept in the cache folder"
    # Kept under this build of the decoder: the extension module's bytes, not python's.
    module = Path(fragfs._fragfs.__file__).read_bytes()
    build = b"%08x-%d" % (zlib.crc32(module), len(module))
    assert any(build in p.read_bytes() for p in cache.rglob("*.idx")), build
    assert fragfs.Tree(array, cache_dir=str(cache)).cat(path) == want
    with pytest.raises(ValueError, match="go with cache_dir"):
        fragfs.Tree(array, cache_dir_size=1 << 20)


def test_a_lone_filo_chunk_opens_with_its_type():
    """`filo_type` is `--filo-type`: a lone Filo chunk file has no fragment description
    to name its column's type."""
    lone = str(FIXTURES / "filo" / "fragment" / "id.filo")
    with pytest.raises(OSError, match="filo-type"):
        fragfs.Tree(lone)
    tree = fragfs.Tree(lone, filo_type="int")
    cli = subprocess.run([fragfs_bin(), "cat", "--filo-type", "int", lone, "id/values.txt"],
                         capture_output=True, check=True).stdout
    assert tree.cat("id/values.txt") == cli == b"7\n8\n9\n10\n"
    with pytest.raises(ValueError, match="unknown Filo type"):
        fragfs.Tree(lone, filo_type="complex")
