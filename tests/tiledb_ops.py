"""TileDB operations for the live-mount tests: what a writer does to an array while
fragfs shows it. Usage: tiledb_ops.py COMMAND ARRAY [TIMESTAMP]; ARRAY may be an s3://
URI on the tests' S3 server (FRAGFS_TEST_S3_ENDPOINT, keys in AWS_ACCESS_KEY_ID and
AWS_SECRET_ACCESS_KEY).

  create       a 1-D dense array, x in 0..99 (tiles of 10), one INT64 attribute v
  write T      write cells 10*(T-1) .. 10*T-1 at timestamp T, v = 1000*T + x
  consolidate  consolidate the fragments into one
  vacuum       remove the consolidated fragments
"""

import os
import sys

import numpy as np
import tiledb

cmd, uri = sys.argv[1], sys.argv[2]
# An s3:// array on the tests' S3 server: FRAGFS_TEST_S3_ENDPOINT and the AWS_* keys.
config = {}
endpoint = os.environ.get("FRAGFS_TEST_S3_ENDPOINT")
if uri.startswith("s3://") and endpoint:
    scheme, host = endpoint.split("://", 1)
    config = {
        "vfs.s3.endpoint_override": host,
        "vfs.s3.scheme": scheme,
        "vfs.s3.use_virtual_addressing": "false",
        "vfs.s3.aws_access_key_id": os.environ["AWS_ACCESS_KEY_ID"],
        "vfs.s3.aws_secret_access_key": os.environ["AWS_SECRET_ACCESS_KEY"],
        "vfs.s3.region": os.environ.get("AWS_REGION", "us-east-1"),
    }
ctx = tiledb.Ctx(tiledb.Config(config))
if cmd == "create":
    dom = tiledb.Domain(tiledb.Dim("x", domain=(0, 99), tile=10, dtype=np.int32))
    schema = tiledb.ArraySchema(domain=dom, sparse=False,
                                attrs=[tiledb.Attr("v", dtype=np.int64, filters=[tiledb.ZstdFilter()])])
    tiledb.Array.create(uri, schema, ctx=ctx)
elif cmd == "write":
    t = int(sys.argv[3])
    lo = 10 * (t - 1)
    with tiledb.open(uri, "w", timestamp=t, ctx=ctx) as A:
        A[lo:lo + 10] = {"v": 1000 * t + np.arange(lo, lo + 10, dtype=np.int64)}
elif cmd == "consolidate":
    tiledb.consolidate(uri, ctx=ctx)
elif cmd == "vacuum":
    tiledb.vacuum(uri, ctx=ctx)
else:
    sys.exit("unknown command " + cmd)
