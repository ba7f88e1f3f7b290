"""fragfs as an fsspec filesystem: ``fsspec.filesystem("fragfs", array=URI, **options)``.

The options are ``fragfs.Tree``'s (``endpoint_url``, ``region``, ``access_key_id``...).
Paths are those of the mounted tree (``latest/cells.parquet``, ``zarr``, ...), with or
without a leading ``fragfs://``. Read-only: every write is refused with ``EROFS``, as
the mount refuses it.

    fs = fsspec.filesystem("fragfs", array="s3://bucket/array", region="eu-west-1")
    ds = xr.open_zarr(fs.get_mapper("zarr"), zarr_format=3, consolidated=False)
    df = pd.read_parquet(fs.open("latest/cells.parquet"))
"""

import errno

from fsspec.spec import AbstractBufferedFile, AbstractFileSystem

from ._fragfs import Tree


def _read_only(path, what):
    return OSError(
        errno.EROFS,
        f"fragfs is read-only: cannot {what} {path!r}",
    )


class FragfsFileSystem(AbstractFileSystem):
    """The tree of files of one array (``array``), read in-process through
    ``fragfs.Tree``."""

    protocol = "fragfs"
    root_marker = ""

    def __init__(self, array, **options):
        super().__init__(array=array, **options)
        self.array = array
        self.tree = Tree(array, **options)

    @classmethod
    def _strip_protocol(cls, path):
        path = super()._strip_protocol(path)
        return path.strip("/")

    def ls(self, path, detail=True, **kwargs):
        entries = self.tree.ls(self._strip_protocol(path))
        if detail:
            return entries
        return [e["name"] for e in entries]

    def info(self, path, **kwargs):
        return self.tree.info(self._strip_protocol(path))

    def cat_file(self, path, start=None, end=None, **kwargs):
        return self.tree.cat(self._strip_protocol(path), start, end)

    def _open(
        self,
        path,
        mode="rb",
        block_size=None,
        autocommit=True,
        cache_options=None,
        **kwargs,
    ):
        if mode != "rb":
            raise _read_only(path, f"open with mode {mode!r}")
        return FragfsFile(
            self,
            self._strip_protocol(path),
            mode=mode,
            block_size=block_size,
            cache_options=cache_options,
            **kwargs,
        )

    # Everything that would change the tree.

    def pipe_file(self, path, value, mode="overwrite", **kwargs):
        raise _read_only(path, "write")

    def put_file(self, lpath, rpath, callback=None, mode="overwrite", **kwargs):
        raise _read_only(rpath, "write")

    def cp_file(self, path1, path2, **kwargs):
        raise _read_only(path2, "copy to")

    def mv(self, path1, path2, recursive=False, maxdepth=None, **kwargs):
        raise _read_only(path1, "move")

    def rm_file(self, path):
        raise _read_only(path, "remove")

    def _rm(self, path):
        raise _read_only(path, "remove")

    def rm(self, path, recursive=False, maxdepth=None):
        raise _read_only(path, "remove")

    def rmdir(self, path):
        raise _read_only(path, "remove")

    def mkdir(self, path, create_parents=True, **kwargs):
        raise _read_only(path, "make a folder at")

    def makedirs(self, path, exist_ok=False):
        raise _read_only(path, "make a folder at")

    def touch(self, path, truncate=True, **kwargs):
        raise _read_only(path, "touch")


class FragfsFile(AbstractBufferedFile):
    """A file of the tree, read by ranges through ``Tree.cat``."""

    def _fetch_range(self, start, end):
        return self.fs.tree.cat(self.path, start, end)
