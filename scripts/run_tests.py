#!/usr/bin/env python3
"""Runs the built test binaries of the suite side by side, in lanes.

`cargo test` runs one test binary after another, and most of ours spend their time
waiting: on FUSE mounts, on Python readers, on servers they start. In sequence the
suite's time is the sum of the binaries' times; in lanes, the longest binaries start
first and the rest fill in beside them. Each binary still runs its own tests on
threads as cargo would, from the package root.

    scripts/run_tests.py CARGO_JSON LANES

CARGO_JSON is what `cargo test --no-run --message-format=json` printed: the test
executables are read from it. Each binary's output is printed whole when it ends (with
cargo's "Running" line and its time), so its `test result:` line can be summed. Exits
non-zero if any binary failed.
"""

import json
import os
import subprocess
import sys
import threading
import time

# The binaries known to take longest, longest first (from the suite's own timings,
# printed at each binary's end): started first, they do not finish last alone.
# A binary not named here follows, in cargo's order.
LONGEST_FIRST = [
    "soak",
    "s3",
    "disk_cache",
    "corruption",
    "zarr",
    "serve_nfs",
    "serve_s3",
    "text_files",
    "scale",
    "mount",
    "serve_clients",
    "serve_webdav",
    "netcdf",
    "serve",
    "filo",
    "hdf5",
    "tiff",
    "conformance",
    "merged",
]


def executables(cargo_json):
    """(name, kind, path to source, executable) of every test binary, in cargo's order."""
    out = []
    with open(cargo_json) as f:
        for line in f:
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if msg.get("reason") != "compiler-artifact" or not msg.get("executable"):
                continue
            if not msg.get("profile", {}).get("test"):
                continue
            target = msg["target"]
            out.append((target["name"], target["kind"][0], target["src_path"], msg["executable"]))
    return out


def order(binaries):
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    return sorted(
        enumerate(binaries),
        key=lambda item: (rank.get(item[1][0], len(rank)), item[0]),
    )


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    cargo_json, lanes = sys.argv[1], int(sys.argv[2])
    queue = [b for _, b in order(executables(cargo_json))]
    if not queue:
        sys.exit("run_tests.py: no test executables in " + cargo_json)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    lock = threading.Lock()
    failed = []

    def lane():
        while True:
            with lock:
                if not queue:
                    return
                name, kind, src, exe = queue.pop(0)
            start = time.monotonic()
            run = subprocess.run(
                [exe],
                cwd=root,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
            )
            took = time.monotonic() - start
            with lock:
                rel = os.path.relpath(src, root)
                print(f"     Running {rel} ({os.path.relpath(exe, root)})", flush=True)
                sys.stdout.buffer.write(run.stdout)
                print(f"     {kind} {name}: {took:.1f} s, exit {run.returncode}", flush=True)
                if run.returncode != 0:
                    failed.append(name)

    threads = [threading.Thread(target=lane) for _ in range(max(1, lanes))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failed:
        print("failed test binaries: " + ", ".join(failed), flush=True)
        sys.exit(101)


if __name__ == "__main__":
    main()
