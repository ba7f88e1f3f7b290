"""``fragfs_tile``: the numcodecs codec of a TileDB fragment's stored tile, which the
kerchunk reference sets of ``fragfs refs`` / ``fragfs.refs`` name in ``.zarray``.

A chunk's reference points at a dense fragment's stored tile; this codec un-filters its
chunks with TileDB's filter pipeline, described in its configuration, and puts the
cells in row-major order: the Rust decoder every fragfs read uses, run with the GIL
released. A chunk that is a merge of fragments comes decoded, behind an 8-byte envelope.

The codec is registered with numcodecs when ``fragfs`` is imported, and through the
``numcodecs.codecs`` entry point, so zarr finds it without an import. It only decodes:
fragfs is read-only.
"""

import json

import numpy as np
from numcodecs.abc import Codec
from numcodecs.compat import ensure_contiguous_ndarray, ndarray_copy
from numcodecs.registry import register_codec

from ._fragfs import TileDecoder

__all__ = ["FragfsTile"]


class FragfsTile(Codec):
    """Decodes a stored TileDB tile as its configuration describes it (datatype, cell
    size, format version, filter pipeline, tile shape, cell order): see docs/python.md."""

    codec_id = "fragfs_tile"

    def __init__(self, **config):
        config.pop("id", None)
        self._config = dict(sorted(config.items()))
        self._decoder = TileDecoder(json.dumps(self._config))

    def get_config(self):
        return {"id": self.codec_id, **self._config}

    def encode(self, buf):
        raise NotImplementedError(
            "fragfs_tile only decodes: fragfs is read-only (it reads TileDB tiles, it does not write them)"
        )

    def decode(self, buf, out=None):
        # fsspec hands over bytes: given to Rust as they are, not copied.
        data = buf if isinstance(buf, bytes) else ensure_contiguous_ndarray(buf).view("u1").tobytes()
        # The decoder's own buffer, wrapped by numpy without a copy.
        decoded = np.asarray(self._decoder.decode(data))
        return ndarray_copy(decoded, out)

    def __reduce__(self):
        # Dask and multiprocessing ship codecs to their workers by pickling: by
        # configuration, the Rust decoder made anew on the other side.
        return (_from_config, (self.get_config(),))

    def __repr__(self):
        cfg = self._config
        return "FragfsTile(datatype=%r, filters=%r, tile_shape=%r, cell_order=%r)" % (
            cfg.get("datatype"),
            cfg.get("filters"),
            cfg.get("tile_shape"),
            cfg.get("cell_order"),
        )


def _from_config(config):
    return FragfsTile(**config)


register_codec(FragfsTile)
