"""TileDB operations for the live-mount test: what a writer does to an array while
fragfs shows it. Usage: tiledb_ops.py COMMAND ARRAY [TIMESTAMP]

  create       a 1-D dense array, x in 0..99 (tiles of 10), one INT64 attribute v
  write T      write cells 10*(T-1) .. 10*T-1 at timestamp T, v = 1000*T + x
  consolidate  consolidate the fragments into one
  vacuum       remove the consolidated fragments
"""

import sys

import numpy as np
import tiledb

cmd, uri = sys.argv[1], sys.argv[2]
if cmd == "create":
    dom = tiledb.Domain(tiledb.Dim("x", domain=(0, 99), tile=10, dtype=np.int32))
    schema = tiledb.ArraySchema(domain=dom, sparse=False,
                                attrs=[tiledb.Attr("v", dtype=np.int64, filters=[tiledb.ZstdFilter()])])
    tiledb.Array.create(uri, schema)
elif cmd == "write":
    t = int(sys.argv[3])
    lo = 10 * (t - 1)
    with tiledb.open(uri, "w", timestamp=t) as A:
        A[lo:lo + 10] = {"v": 1000 * t + np.arange(lo, lo + 10, dtype=np.int64)}
elif cmd == "consolidate":
    tiledb.consolidate(uri)
elif cmd == "vacuum":
    tiledb.vacuum(uri)
else:
    sys.exit("unknown command " + cmd)
