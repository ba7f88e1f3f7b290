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
from ._fragfs import stored_tiles as _stored_tiles

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


def reference_options(refs, **remote_options):
    """The ``storage_options`` of fsspec's ``reference://`` (zarr, xarray) for the
    reference set ``refs``: ``remote_protocol`` where it points at one kind of object,
    one asynchronous filesystem per protocol where it mixes them (local tiles and
    chunks of a ``fragfs serve``). ``remote_options`` per protocol: ``s3={...}``.
    Needs fsspec (``fragfs.references``)."""
    from .references import reference_options as options

    return options(refs, **remote_options)


def stored_tiles(uri, **options):
    """The stored tiles of the array ``uri``'s fragments, per fragment and fixed-size
    stored field (attributes, sparse fragments' dimensions, and the validity of
    nullable ones): a list of dicts with ``fragment`` (its folder's name), ``field``,
    ``path`` (the field's folder in the tree: ``fragments/<fragment>/<field>``),
    ``validity`` and ``tiles``, each tile a dict: ``url`` (a local file's absolute path,
    or an object's URL), ``offset`` and ``length`` of the tile in it, and ``codec``, the
    ``fragfs_tile`` configuration that decodes it (a dense tile into a row-major chunk,
    a sparse one into its cells). What a reference set of one's own is made of.
    ``options`` are ``Tree``'s."""
    return [
        {
            "fragment": fragment,
            "field": field,
            "path": "fragments/%s/%s" % (fragment, shown),
            "validity": validity,
            "tiles": [
                {"url": url, "offset": offset, "length": length, "codec": json.loads(codec)}
                for url, offset, length, codec in tiles
            ],
        }
        for fragment, field, shown, validity, tiles in _stored_tiles(uri, **options)
    ]


__all__ = [
    "DEFAULT_CACHE_SIZE",
    "DEFAULT_INLINE_LIMIT",
    "Tree",
    "__version__",
    "reference_options",
    "refs",
    "stored_tiles",
]
