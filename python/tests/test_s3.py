"""An array in S3-compatible object storage (s3s-fs on 127.0.0.1 with SigV4 keys, as
tests/common/s3.rs starts it; scripts/test.sh installs it): `Tree("s3://...")` with the
keys as keyword arguments reads every file as the local Tree does."""

import errno
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import fsspec
import pytest

import fragfs
from conftest import FIXTURES, required, tree_walk

ACCESS_KEY = "fragfs-test-key"
SECRET_KEY = "fragfs-test-secret"
# Files that name where the array is: their bytes differ between the two (tests/s3.rs).
SAYS_WHERE = ("array.json", "group.json", ".zattrs", "zarr.json")


def s3s_binary():
    candidates = [
        os.environ.get("FRAGFS_TEST_S3S"),
        shutil.which("s3s-fs"),
        os.path.join(os.environ.get("CARGO_HOME", os.path.expanduser("~/.cargo")), "bin/s3s-fs"),
    ]
    for c in candidates:
        if c and os.path.isfile(c):
            return c
    required("s3s-fs is not installed (scripts/test.sh installs it)")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def s3s(tmp_path):
    """A running s3s-fs over `tmp_path` (each folder in it a bucket): its endpoint."""
    binary = s3s_binary()
    for _attempt in range(5):
        port = free_port()
        server = subprocess.Popen(
            [binary, "--host", "127.0.0.1", "--port", str(port)]
            + ["--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY, str(tmp_path)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            # Up once it accepts connections; one that exited lost the port race.
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and server.poll() is None:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    time.sleep(0.02)
            if server.poll() is None:
                yield tmp_path, f"http://127.0.0.1:{port}"
                return
        finally:
            if server.poll() is None:
                server.kill()
            server.wait()
    pytest.fail("s3s-fs did not start")


def test_an_array_on_s3_reads_as_the_local_folder(s3s):
    root, endpoint = s3s
    local_path = FIXTURES / "tiledb" / "sparse_var_nullable"
    shutil.copytree(local_path, Path(root) / "fixtures" / "sparse_var_nullable")
    options = dict(
        endpoint_url=endpoint,
        region="us-east-1",
        access_key_id=ACCESS_KEY,
        secret_access_key=SECRET_KEY,
        virtual_hosted=False,
        retry_timeout=10,
    )
    remote = fragfs.Tree("s3://fixtures/sparse_var_nullable", **options)
    local = fragfs.Tree(str(local_path))
    listed = tree_walk(remote)
    want = tree_walk(local)
    assert sorted(listed) == sorted(want)
    files = [p for p, e in want.items() if e["type"] == "file"]
    assert len(files) > 100
    for path in files:
        if path.endswith(SAYS_WHERE):
            assert remote.info(path)["type"] == "file"
            continue
        data = local.cat(path)
        assert remote.cat(path) == data, path
        assert remote.info(path)["size"] == len(data), path
        assert remote.cat(path, -9, None) == data[-9:], path
    # And through fsspec, with the same keyword arguments.
    fs = fsspec.filesystem("fragfs", array="s3://fixtures/sparse_var_nullable", **options)
    assert fs.cat_file("latest/cells.parquet") == local.cat("latest/cells.parquet")


def test_wrong_keys_are_refused_with_the_reason(s3s):
    root, endpoint = s3s
    shutil.copytree(FIXTURES / "tiledb" / "dense_2d", Path(root) / "fixtures" / "dense_2d")
    with pytest.raises(PermissionError) as e:
        fragfs.Tree(
            "s3://fixtures/dense_2d",
            endpoint_url=endpoint,
            region="us-east-1",
            access_key_id=ACCESS_KEY,
            secret_access_key="not-the-secret",
            retry_timeout=0,
        )
    assert e.value.errno == errno.EACCES
    assert "s3://fixtures/dense_2d" in str(e.value)
    assert "403 Forbidden" in str(e.value)
