"""fragfs in a Python process: the files a ``fragfs mount`` shows of a TileDB array
(every fragment decoded, ``latest/``, ``at/<T>/``, ``zarr/``...), read in-process with
no FUSE and no server.

    >>> import fragfs
    >>> tree = fragfs.Tree("tests/fixtures/tiledb/sample")
    >>> tree.cat("latest/temperature/values.npy")[:6]
    b'\\x93NUMPY'

``fragfs.fsspec.FragfsFileSystem`` (``fsspec.filesystem("fragfs", array=...)``) puts
the same tree behind fsspec, for xarray, pandas, pyarrow, Dask and zarr. See
docs/python.md.
"""

from ._fragfs import DEFAULT_CACHE_SIZE, Tree, __version__

__all__ = ["DEFAULT_CACHE_SIZE", "Tree", "__version__"]
