"""Errors as Python's: a missing path is FileNotFoundError, a folder read as a file
IsADirectoryError, a bad byte OSError(EIO) worded as `fragfs cat` words it; writes
through fsspec are refused."""

import errno
import shutil
import subprocess

import fsspec
import pytest

import fragfs
from conftest import FIXTURES, fragfs_bin

DENSE = str(FIXTURES / "tiledb" / "dense_2d")


def test_a_missing_path_is_file_not_found():
    tree = fragfs.Tree(DENSE)
    for call in [
        lambda: tree.cat("latest/nothing/values.bin"),
        lambda: tree.info("nothing"),
        lambda: tree.ls("fragments/nothing"),
    ]:
        with pytest.raises(FileNotFoundError) as e:
            call()
        assert e.value.errno == errno.ENOENT
        assert "nothing" in str(e.value)
    fs = fsspec.filesystem("fragfs", array=DENSE)
    with pytest.raises(FileNotFoundError):
        fs.cat_file("latest/nothing")
    with pytest.raises(FileNotFoundError):
        fs.open("latest/nothing")


def test_a_missing_array_is_file_not_found():
    with pytest.raises(FileNotFoundError):
        fragfs.Tree(str(FIXTURES / "tiledb" / "no_such_array"))


def test_a_folder_read_as_a_file_is_a_directory():
    tree = fragfs.Tree(DENSE)
    with pytest.raises(IsADirectoryError) as e:
        tree.cat("latest")
    assert e.value.errno == errno.EISDIR
    with pytest.raises(IsADirectoryError):
        fsspec.filesystem("fragfs", array=DENSE).cat_file("latest/plain")


def test_a_file_used_as_a_folder_is_not_a_directory():
    tree = fragfs.Tree(DENSE)
    with pytest.raises(NotADirectoryError) as e:
        tree.ls("latest/read.json/x")
    assert e.value.errno == errno.ENOTDIR


def test_a_missing_key_is_permission_denied():
    with pytest.raises(PermissionError) as e:
        fragfs.Tree(str(FIXTURES / "tiledb" / "encrypted"))
    assert e.value.errno == errno.EACCES
    assert "encryption key" in str(e.value)


def test_bad_options_are_value_errors():
    with pytest.raises(ValueError):
        fragfs.Tree("s3://bucket/array", access_key_id="id")
    with pytest.raises(ValueError):
        fragfs.Tree(DENSE, encryption_key="short")
    with pytest.raises(ValueError):
        fragfs.Tree("s3://bucket/array", retry_timeout=-1)


def test_a_corrupt_tile_is_an_io_error_worded_as_fragfs_cat_words_it(tmp_path):
    array = tmp_path / "dense_basic"
    shutil.copytree(FIXTURES / "tiledb" / "dense_basic", array)
    tree = fragfs.Tree(str(array))
    fragment = tree.ls("fragments")[0]["name"]
    data = array / "__fragments" / fragment.split("/")[-1] / "a1.tdb"
    raw = bytearray(data.read_bytes())
    # The first chunk's data (tests/common/mod.rs, corrupt_first_chunk).
    at = 20 + int.from_bytes(raw[16:20], "little")
    raw[at : at + 8] = b"\xaa" * 8
    data.write_bytes(bytes(raw))
    path = f"{fragment}/f64_zstd/values.bin"
    with pytest.raises(OSError) as e:
        fragfs.Tree(str(array)).cat(path)
    assert e.value.errno == errno.EIO
    message = e.value.strerror
    for part in [fragment.split("/")[-1], "a1.tdb", "tile 0", "chunk 0", "ZSTD"]:
        assert part in message, message
    printed = subprocess.run(
        [fragfs_bin(), "cat", str(array), path], capture_output=True, text=True
    )
    assert printed.returncode != 0
    assert printed.stderr.strip() == f"fragfs: {message}"


def test_writes_through_fsspec_are_refused():
    fs = fsspec.filesystem("fragfs", array=DENSE)
    for call in [
        lambda: fs.open("latest/new.bin", "wb"),
        lambda: fs.open("latest/read.json", "ab"),
        lambda: fs.pipe_file("latest/new.bin", b"x"),
        lambda: fs.pipe("latest/read.json", b"x"),
        lambda: fs.rm("latest/read.json"),
        lambda: fs.rm_file("latest/read.json"),
        lambda: fs.mkdir("latest/new"),
        lambda: fs.makedirs("latest/new"),
        lambda: fs.touch("latest/new"),
        lambda: fs.mv("latest/read.json", "latest/moved.json"),
        lambda: fs.copy("latest/read.json", "latest/copied.json"),
    ]:
        with pytest.raises(OSError) as e:
            call()
        assert e.value.errno == errno.EROFS
        assert "read-only" in str(e.value)
    assert fs.cat_file("latest/read.json")
