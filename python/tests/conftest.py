"""What the tests of the Python package share: the repository, the `fragfs` binary they
compare against (FRAGFS_BIN, which tests/python_package.rs sets), and that binary's
`ls -lR` and `cat` of a tree."""

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"
# Encrypted fixtures' key (tests/fixtures/tiledb/README.md).
FIXTURE_KEY = "0123456789abcdeF0123456789abcdeF"


def required(what):
    """Skips, saying why, where `what` is missing; under CI=true that is a failure."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true but {what}")
    pytest.skip(what)


def fragfs_bin():
    path = os.environ.get("FRAGFS_BIN")
    if path and os.path.exists(path):
        return path
    built = REPO / "target" / "debug" / "fragfs"
    if built.exists():
        return str(built)
    required("no fragfs binary (FRAGFS_BIN, or target/debug/fragfs: cargo build)")


def cli_args(encryption_key=None):
    return ["--encryption-key", encryption_key] if encryption_key else []


def fragfs_cat(array, path, encryption_key=None, env=None):
    """`fragfs cat ARRAY PATH`: the bytes the command prints."""
    out = subprocess.run(
        [fragfs_bin(), "cat", str(array), path, *cli_args(encryption_key)],
        capture_output=True,
        check=True,
        env=env,
    )
    return out.stdout


def fragfs_ls(array, encryption_key=None, env=None):
    """`fragfs ls -lR ARRAY` as {path: (type, size)}: paths without a leading `/`, the
    size a file shows before it was read (0 for a text file not built yet)."""
    out = subprocess.run(
        [fragfs_bin(), "ls", "-lR", str(array), *cli_args(encryption_key)],
        capture_output=True,
        check=True,
        text=True,
        env=env,
    ).stdout
    listing = {}
    folder = None
    for line in out.split("\n"):
        if not line:
            continue
        if line.startswith("/") and line.endswith(":"):
            folder = line[:-1].strip("/")
            continue
        kind, rest = line[0], line[2:].lstrip(" ")
        size, name = rest.split(" ", 1)
        path = f"{folder}/{name}" if folder else name
        listing[path] = ("directory" if kind == "d" else "file", int(size))
    assert listing, f"fragfs ls -lR {array} listed nothing"
    return listing


def tree_walk(tree, path=""):
    """Every entry under `path` through `Tree.ls`, as {path: entry}."""
    out = {}
    for entry in tree.ls(path):
        out[entry["name"]] = entry
        if entry["type"] == "directory":
            out.update(tree_walk(tree, entry["name"]))
    return out


