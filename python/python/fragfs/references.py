"""``storage_options`` for fsspec's ``reference://`` over a reference set of
``fragfs.refs``: one remote protocol (local files, ``s3://``, ``http://``) is fsspec's
``remote_protocol``; several at once (local tiles and chunks served by ``fragfs serve``)
need one filesystem per protocol, each asynchronous, which fsspec does not make itself.
zarr opens ``reference://`` asynchronous, so an asynchronous target (s3fs, HTTP) must
be made so too (``"asynchronous": True`` in its ``remote_options``).

    refs = fragfs.refs("data/array", serve_url="http://127.0.0.1:8080", inline_limit=0)
    ds = xr.open_dataset("reference://", engine="zarr", chunks={},
                         backend_kwargs={"consolidated": False,
                                         "storage_options": fragfs.reference_options(refs)})
"""

import fsspec
from fsspec.core import split_protocol
from fsspec.implementations.asyn_wrapper import AsyncFileSystemWrapper


def protocols(refs):
    """The protocols of the objects a reference set points at (``"file"`` for local
    paths)."""
    out = set()
    for value in refs["refs"].values():
        if isinstance(value, list) and value:
            out.add(split_protocol(value[0])[0] or "file")
    return out


def reference_options(refs, **remote_options):
    """The ``storage_options`` of ``reference://`` (zarr, xarray) for ``refs``.
    ``remote_options`` are per protocol: ``s3={"key": ..., "secret": ...,
    "client_kwargs": {"endpoint_url": ...}}``, ``http={...}``."""
    used = protocols(refs) or {"file"}
    if len(used) == 1:
        (protocol,) = used
        options = {"fo": refs, "remote_protocol": protocol}
        remote = dict(remote_options.get(protocol) or {})
        # zarr opens reference:// asynchronous: so must its target be (s3fs, HTTP).
        if fsspec.get_filesystem_class(protocol).async_impl:
            remote.setdefault("asynchronous", True)
        if remote:
            options["remote_options"] = remote
        return options
    filesystems = {}
    for protocol in sorted(used):
        cls = fsspec.get_filesystem_class(protocol)
        kwargs = dict(remote_options.get(protocol) or {})
        if cls.async_impl:
            fs = cls(asynchronous=True, **kwargs)
        else:
            fs = AsyncFileSystemWrapper(cls(**kwargs), asynchronous=True)
        # Local paths have no protocol: fsspec looks them up under None.
        filesystems[None if protocol == "file" else protocol] = fs
    return {"fo": refs, "fs": filesystems}
