"""TileDB-Py peer measurements, one per process so TileDB's threads and caches never
overlap a fragfs measurement. Prints one JSON object on stdout.

    python tdb.py whole  <uri> <attr> [--warm] # seconds to open + read the attribute
    python tdb.py random <uri> <attr> <cells>  # stdin: JSON list of start cells;
                                               # seconds per A[lo:lo+cells], array open
                                               # once, and the CRC-32 of what was read
    python tdb.py open   <uri>                 # seconds of tiledb.open
    python tdb.py sparse <uri> <attr>          # seconds to open + read every cell of a
                                               # sparse array in global order
    python tdb.py fields <uri> <f1,f2,..>     # seconds to open + read the fields (dimensions
                                               # and attributes) of every cell in global
                                               # order; CRC-32 per field
    python tdb.py first  <uri> <attr> <T>      # seconds to open at timestamp T and read
                                               # the first cell (time to first byte)
    python tdb.py h5     <file> <dataset>      # seconds for h5py to open + read a whole
                                               # dataset (array.h5 of the mount)
    python tdb.py zarr   <path>                # seconds for zarr-python to open + read a
                                               # whole Zarr array (a mount's or a copy)
    python tdb.py upload <folder> <s3-uri>     # copies a local folder's files to S3 by
                                               # PUT, through TileDB's VFS

An `s3://` URI is read from the server at $FRAGFS_BENCH_S3_ENDPOINT (path-style, http,
with the AWS_* keys of the environment).

Every measurement is cold: the page cache is dropped after the imports, right before
the clock starts (root only), as bench.sh does before each fragfs measurement; except
`whole --warm`, where the caller has just read the array's files into the page cache.
"""

import json
import os
import sys
import time
import zlib

import tiledb


def ctx() -> tiledb.Ctx:
    """TileDB's context: the bench's S3 server when one is given."""
    endpoint = os.environ.get("FRAGFS_BENCH_S3_ENDPOINT")
    if not endpoint:
        return tiledb.Ctx()
    scheme, host = endpoint.split("://", 1)
    return tiledb.Ctx({
        "vfs.s3.endpoint_override": host,
        "vfs.s3.scheme": scheme,
        "vfs.s3.use_virtual_addressing": "false",
        "vfs.s3.aws_access_key_id": os.environ["AWS_ACCESS_KEY_ID"],
        "vfs.s3.aws_secret_access_key": os.environ["AWS_SECRET_ACCESS_KEY"],
        "vfs.s3.region": os.environ.get("AWS_REGION", "us-east-1"),
    })


def drop_caches() -> None:
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3")


def whole(uri: str, attr: str, warm: bool) -> dict:
    if not warm:
        drop_caches()
    t0 = time.perf_counter()
    with tiledb.open(uri, ctx=ctx()) as a:
        values = a.query(attrs=[attr])[:][attr]
    seconds = time.perf_counter() - t0
    return {"seconds": seconds, "bytes": int(values.nbytes)}


def random_reads(uri: str, attr: str, cells: int, starts: list) -> dict:
    drop_caches()
    latencies, crc = [], 0
    with tiledb.open(uri, ctx=ctx()) as a:
        # Opening is not timed: the issue asks for reads "with the array already open".
        q = a.query(attrs=[attr])
        for lo in starts:
            t0 = time.perf_counter()
            v = q[lo : lo + cells][attr]
            latencies.append(time.perf_counter() - t0)
            if len(v) != cells:
                sys.exit(f"read {len(v)} cells at {lo}, wanted {cells}")
            crc = zlib.crc32(v.tobytes(), crc)
    # The CRC of every byte read lets the caller check both sides read the same cells.
    return {"latencies": latencies, "crc32": crc}


def open_time(uri: str) -> dict:
    drop_caches()
    t0 = time.perf_counter()
    a = tiledb.open(uri, ctx=ctx())
    seconds = time.perf_counter() - t0
    fragments = len(tiledb.array_fragments(uri))
    a.close()
    return {"seconds": seconds, "fragments": fragments}


def sparse_all(uri: str, attr: str) -> dict:
    drop_caches()
    t0 = time.perf_counter()
    with tiledb.open(uri, ctx=ctx()) as a:
        values = a.query(attrs=[attr], order="G")[:][attr]
    seconds = time.perf_counter() - t0
    return {"seconds": seconds, "bytes": int(values.nbytes), "crc32": zlib.crc32(values)}


def fields_all(uri: str, names: list) -> dict:
    drop_caches()
    t0 = time.perf_counter()
    with tiledb.open(uri, ctx=ctx()) as a:
        dims = [n for n in names if a.schema.domain.has_dim(n)]
        attrs = [n for n in names if n not in dims]
        result = a.query(attrs=attrs, dims=dims, order="G")[:]
    seconds = time.perf_counter() - t0
    return {"seconds": seconds, "bytes": int(sum(result[n].nbytes for n in names)),
            "crc32": {n: zlib.crc32(result[n]) for n in names}}


def first(uri: str, attr: str, at: int) -> dict:
    drop_caches()
    t0 = time.perf_counter()
    with tiledb.open(uri, timestamp=at, ctx=ctx()) as a:
        value = a.query(attrs=[attr])[0:1][attr]
    seconds = time.perf_counter() - t0
    return {"seconds": seconds, "value": value.tolist()}


def zarr_whole(path: str) -> dict:
    import zarr  # only this measurement needs it

    drop_caches()
    t0 = time.perf_counter()
    values = zarr.open_array(path, mode="r", zarr_format=3)[...]
    seconds = time.perf_counter() - t0
    return {"seconds": seconds, "bytes": int(values.nbytes), "crc32": zlib.crc32(values)}


def tiff_whole(path: str) -> dict:
    import tifffile  # only this measurement needs it

    drop_caches()
    t0 = time.perf_counter()
    values = tifffile.imread(path)
    seconds = time.perf_counter() - t0
    return {"seconds": seconds, "bytes": int(values.nbytes), "crc32": zlib.crc32(values)}


def h5_whole(path: str, dataset: str) -> dict:
    import h5py  # only this measurement needs it

    drop_caches()
    t0 = time.perf_counter()
    with h5py.File(path, "r") as f:
        values = f[dataset][...]
    seconds = time.perf_counter() - t0
    return {"seconds": seconds, "bytes": int(values.nbytes), "crc32": zlib.crc32(values)}


def upload(folder: str, uri: str) -> dict:
    """PUTs every file of `folder` under `uri`. A server answers a GET with the ETag it
    stored at upload, as S3 does; s3s-fs computes it by hashing the whole object on every
    GET of a file that was copied into its folder instead, which would make every ranged
    read cost a read of the whole object, for fragfs and TileDB-Py alike."""
    vfs = tiledb.VFS(ctx=ctx())
    count = size = 0
    for parent, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(parent, name)
            key = os.path.relpath(path, folder)
            with open(path, "rb") as src, vfs.open(f"{uri}/{key}", "wb") as dst:
                data = src.read()
                dst.write(data)
            count, size = count + 1, size + len(data)
    return {"files": count, "bytes": size}


def main() -> None:
    args = sys.argv[1:]
    if args[:1] == ["whole"] and len(args) in (3, 4) and args[3:] in ([], ["--warm"]):
        out = whole(args[1], args[2], warm=len(args) == 4)
    elif args[:1] == ["random"] and len(args) == 4:
        out = random_reads(args[1], args[2], int(args[3]), json.load(sys.stdin))
    elif args[:1] == ["open"] and len(args) == 2:
        out = open_time(args[1])
    elif args[:1] == ["sparse"] and len(args) == 3:
        out = sparse_all(args[1], args[2])
    elif args[:1] == ["fields"] and len(args) == 3:
        out = fields_all(args[1], args[2].split(","))
    elif args[:1] == ["first"] and len(args) == 4:
        out = first(args[1], args[2], int(args[3]))
    elif args[:1] == ["zarr"] and len(args) == 2:
        out = zarr_whole(args[1])
    elif args[:1] == ["tiff"] and len(args) == 2:
        out = tiff_whole(args[1])
    elif args[:1] == ["h5"] and len(args) == 3:
        out = h5_whole(args[1], args[2])
    elif args[:1] == ["upload"] and len(args) == 3:
        out = upload(args[1], args[2])
    else:
        sys.exit(__doc__)
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
