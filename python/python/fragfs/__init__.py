"""fragfs in a Python process: the files a ``fragfs mount`` shows of a TileDB array
(every fragment decoded, ``latest/``, ``at/<T>/``, ``zarr/``...), read in-process with
no FUSE and no server.

    >>> import fragfs
    >>> tree = fragfs.Tree("tests/fixtures/tiledb/sample")
    >>> tree.cat("latest/temperature/values.npy")[:6]
    b'\\x93NUMPY'

``fragfs.fsspec.FragfsFileSystem`` (``fsspec.filesystem("fragfs", array=...)``) puts
the same tree behind fsspec, for xarray, pandas, pyarrow, Dask and zarr.
``fragfs.refs(...)`` makes a kerchunk reference set of a dense array's Zarr store, read
through ``reference://`` straight from the fragments' files with the ``fragfs_tile``
codec (``fragfs.codec.FragfsTile``, registered with numcodecs here when numcodecs is
installed). See docs/python.md.
"""

import json

from ._fragfs import DEFAULT_CACHE_SIZE, DEFAULT_INLINE_LIMIT, Tree, __version__, refs_json

try:  # The codec needs numcodecs (zarr brings it); refs() and Tree do not.
    from . import codec  # noqa: F401  (registers fragfs_tile with numcodecs)
except ImportError:
    pass


def refs(uri, at=None, serve_url=None, inline_limit=DEFAULT_INLINE_LIMIT, **options):
    """The kerchunk reference set (version 1, a dict) of the Zarr v2 store of the dense
    array ``uri`` at timestamp ``at`` (ms since the epoch; ``None``, the latest), as
    ``fragfs refs`` writes it. ``options`` are ``Tree``'s (S3, ``encryption_key``).

    Chunks that are merges of fragments are given inline up to ``inline_limit`` decoded
    bytes, else as URLs of the ``fragfs serve`` at ``serve_url``; if one can be neither,
    ``ValueError`` names each such chunk and why (a reference set without it would read
    its fill value). Runs with the GIL released."""
    return json.loads(refs_json(uri, at, serve_url, inline_limit, **options))


__all__ = ["DEFAULT_CACHE_SIZE", "DEFAULT_INLINE_LIMIT", "Tree", "__version__", "refs"]
