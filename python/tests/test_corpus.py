"""The shared corpus (`../shared/corpus/tiledb` beside the repository, when it is there):
one array of each format version, every file through `fragfs.Tree` byte for byte as
`fragfs cat` prints it, and its listing as `fragfs ls -lR`."""

import json
import os
from concurrent.futures import ThreadPoolExecutor

import pytest

import fragfs
from conftest import REPO, fragfs_cat, fragfs_ls, tree_walk

CORPUS = REPO.parent / "shared" / "corpus" / "tiledb"
# At most this many files of an array are compared (evenly spread over its listing):
# `fragfs cat` is a process per file.
MAX_FILES = 400


def sample():
    """(version folder, array): one array of each format version, the k-th (by name)
    of the k-th version, so the sample covers different kinds of arrays."""
    if not CORPUS.is_dir():
        return []
    versions = [
        v for v in CORPUS.iterdir() if v.name.startswith("v") and v.name[1:].isdigit()
    ]
    out = []
    for k, version in enumerate(sorted(versions, key=lambda v: int(v.name[1:]))):
        arrays = sorted(p.name[: -len(".expected.json")] for p in version.glob("*.expected.json"))
        if arrays:
            out.append((version.name, arrays[k % len(arrays)]))
    return out


def corpus_or_skip():
    if CORPUS.is_dir():
        return
    if os.environ.get("FRAGFS_REQUIRE_CORPUS"):
        pytest.fail(f"FRAGFS_REQUIRE_CORPUS is set but {CORPUS} is absent")
    pytest.skip(f"{CORPUS} is absent (the shared corpus beside the repository)")


@pytest.mark.parametrize("version,name", sample() or [("absent", "absent")])
def test_corpus_arrays_read_as_fragfs_cat_prints_them(version, name):
    corpus_or_skip()
    array = CORPUS / version / name
    expected = json.loads((CORPUS / version / f"{name}.expected.json").read_text())
    key = (expected.get("encryption") or {}).get("key")
    tree = fragfs.Tree(str(array), **({"encryption_key": key} if key else {}))
    shown = fragfs_ls(array, key)
    listed = tree_walk(tree)
    assert sorted(listed) == sorted(shown)
    for path, (kind, size) in shown.items():
        assert listed[path]["type"] == kind, path
        assert listed[path]["size"] == size or (listed[path]["size"] is None and size == 0), path
    files = sorted(p for p, (kind, _) in shown.items() if kind == "file")
    step = max(1, len(files) // MAX_FILES)
    files = files[::step]
    with ThreadPoolExecutor(4) as pool:
        printed = list(pool.map(lambda p: fragfs_cat(array, p, key), files))
    for path, want in zip(files, printed):
        assert tree.cat(path) == want, path
        assert tree.info(path)["size"] == len(want), path
