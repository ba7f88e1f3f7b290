"""Where each MiB of a sequential read goes, on the whole machine: fragfs against the
zero-serving FUSE file (issue 45's ceiling), for docs/performance.md.

    target/bench/venv/bin/python scripts/bench/ceiling.py [--attrs count,raw] [--rounds 3]

For each attribute, warm (the array's files in the page cache) and cold (page cache
dropped), `cat` of every fragment's values.bin through a fresh mount runs under
`perf record -a` (every CPU, cpu-clock samples, no call graphs); so does `cat` of the
zero file of the same size (`zerofs`, the same FUSE settings, nothing to decode or read).
Every sample is put in one bucket by its thread and function:

    reader      the `cat` process: its copy out of the mount's page cache, the kernel
                allocating and filling that cache's pages around it
    decode      the serving threads in user space: un-filtering, fragfs's own work
    file copy   the serving threads copying a stored file's bytes out of the page
                cache (`pread`): the compressed input, or unfiltered data as it is
    reply       the serving threads handing the reply to the kernel: pinning the
                buffer, copying it into the mount's page cache, the /dev/fuse calls
    read-ahead  fragfs's read-ahead threads (bringing the files in, walking headers)
    other       any other thread or kernel work
    idle        no CPU work at all (the disk, or a thread waiting for another)

and printed as milliseconds of CPU per MiB of the file, with the wall time per MiB and
what 0.7 of the zero file's speed leaves: its wall time per MiB times the cores is
the CPU a read may spend per MiB, whatever it spends it on. For an LZ4 attribute, the
reference decoder (liblz4's own `lz4 -b`, 64 KiB blocks as TileDB cuts its chunks) is
timed on 64 MiB of the attribute's values: what decoding this data costs in any
program. The perf data and the full split stay in target/bench/profile/ceiling-*.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
# Imported after the sys.path line above, which makes run.py importable.
from run import (  # noqa: E402
    ATTRS,
    BIG,
    MIB,
    MNT,
    TILE_CELLS,
    boost,
    drop_caches,
    fragfs_foreground,
    fragments,
    values,
    warm_array,
    zerofs,
)

OUT = BIG.parent / "profile"
FREQ = 1999
CORES = os.cpu_count() or 1
BUCKETS = ["reader", "decode", "file copy", "reply", "read-ahead", "other", "idle"]


def bucket(comm: str, dso: str, sym: str) -> str:
    kernel = dso == "[kernel.kallsyms]"
    if comm == "swapper":
        return "idle"
    if comm == "cat":
        return "reader"
    if comm.startswith("fragfs-ahead"):
        return "read-ahead"
    if comm.startswith("fuser"):
        if not kernel:
            return "decode"
        # In a serving thread's kernel time, copying out of the page cache is the
        # `pread` of a stored file; the rest is the reply (pinning the buffer, copying it
        # into the mount's page cache) and its /dev/fuse calls.
        if "_copy_to_iter" in sym or "copy_page_to_iter" in sym or "filemap_" in sym:
            return "file copy"
        return "reply"
    return "other"


# `cat` timed from inside the recording: perf's own start and stop stay out of the time.
TIMED_CAT = 's=$(date +%s%N); cat "$@" >/dev/null; e=$(date +%s%N); echo "ns $((e - s))" >&2'


def record(files: list, data: Path) -> float:
    """`cat` of `files` under `perf record -a`; its wall time."""
    perf = ["perf", "record", "-a", "-F", str(FREQ), "-o", str(data), "--"]
    out = subprocess.run(perf + ["sh", "-c", TIMED_CAT, "sh", *map(str, files)], check=True,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True).stderr
    ns = re.search(r"^ns (\d+)$", out, re.M)
    if ns is None:
        raise RuntimeError(f"no time from the timed cat: {out}")
    return int(ns[1]) / 1e9


def split(data: Path) -> dict:
    """CPU seconds per bucket, from the samples of `data`."""
    out = subprocess.run(["perf", "report", "-i", str(data), "--stdio", "-n", "--no-children",
                          "--sort", "comm,dso,sym", "-g", "none", "--percent-limit", "0"],
                         check=True, capture_output=True, text=True).stdout
    seconds = dict.fromkeys(BUCKETS, 0.0)
    row = re.compile(r"^\s*[\d.]+%\s+(\d+)\s+(\S+)\s+(\S+)\s+\[[.k]\]\s+(.*)$")
    for line in out.splitlines():
        m = row.match(line)
        if m:
            samples, comm, dso, sym = int(m[1]), m[2], m[3], m[4].strip()
            seconds[bucket(comm, dso, sym)] += samples / FREQ
    return seconds


def measure(name: str, cmd_files: list, prepare, mount, rounds: int) -> dict:
    """Median wall time and bucket split (of the median round) of `cat` over `rounds`."""
    runs = []
    for k in range(rounds):
        data = OUT / f"ceiling-{name}-{k}.perf.data"
        with mount():
            prepare()
            wall = record(cmd_files, data)
        runs.append((wall, data))
    runs.sort(key=lambda r: r[0])
    wall, data = runs[len(runs) // 2]
    return {"wall": wall, "walls": [r[0] for r in runs], "split": split(data)}


def reference_lz4(values_bin: Path) -> float | None:
    """liblz4's decode speed (MB/s, one core) on the first 64 MiB of `values_bin`,
    compressed by `lz4 -b` in 64 KiB blocks at level 1 (TileDB's LZ4 filter); None
    without the `lz4` command."""
    if shutil.which("lz4") is None:
        return None
    with tempfile.NamedTemporaryFile(dir=OUT, suffix=".bin") as sample:
        with open(values_bin, "rb") as f:
            sample.write(f.read(64 * MIB))
        sample.flush()
        out = subprocess.run(["lz4", "-b1", "-B4", "-i3", sample.name], check=True,
                             capture_output=True, text=True)
    found = re.findall(r"\(\s*[\d.]+\),\s*[\d.]+ MB/s\s*,\s*([\d.]+) MB/s",
                       out.stdout + out.stderr)
    return float(found[-1]) if found else None


def line(name: str, mib: float, got: dict) -> str:
    per = {k: v * 1e3 / mib for k, v in got["split"].items()}
    busy = sum(v for k, v in per.items() if k != "idle")
    parts = "  ".join(f"{k} {per[k]:.3f}" for k in BUCKETS)
    return (f"{name:<14} {mib / got['wall']:7.0f} MiB/s  wall {got['wall'] * 1e3 / mib:.3f} "
            f"ms/MiB  CPU {busy:.3f} ms/MiB: {parts}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--attrs", default="count,raw")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("ceiling.py: needs root")
    OUT.mkdir(parents=True, exist_ok=True)
    boost()
    frags = fragments()
    lines = [f"cores: {CORES}; ms of CPU (all cores) per MiB of the file, by bucket "
             "(scripts/bench/ceiling.py)"]
    for attr in args.attrs.split(","):
        cell = {a: c for a, _, c in ATTRS}[attr]
        nbytes = len(frags) * 8 * TILE_CELLS * cell
        mib = nbytes / MIB
        files = [values(f, attr) for f in frags]
        zlog: list = []
        zero = measure(f"zero-{attr}", [MNT / "zeros"], lambda: None,
                       lambda: zerofs(nbytes, zlog), args.rounds)
        lines.append(line(f"zero {mib:.0f} MiB", mib, zero))
        budget_wall = zero["wall"] / 0.7 * 1e3 / mib
        lines.append(f"  0.7 of it: wall {budget_wall:.3f} ms/MiB, so at most "
                     f"{budget_wall * CORES:.3f} ms of CPU per MiB on {CORES} cores")
        if {a: f for a, f, _ in ATTRS}[attr] == "LZ4":
            with fragfs_foreground(BIG):
                mbps = reference_lz4(files[0])
            if mbps:
                per_mib = MIB / 1e6 / mbps * 1e3
                lines.append(f"  liblz4 (lz4 -b, 64 KiB blocks) decodes {attr} at {mbps:.0f} MB/s "
                             f"a core: {per_mib:.3f} ms of CPU per MiB for decoding alone")
        for mode, prepare in [("warm", warm_array), ("cold", drop_caches)]:
            got = measure(f"{attr}-{mode}", files, prepare, lambda: fragfs_foreground(BIG),
                          args.rounds)
            lines.append(line(f"{attr} {mode}", mib, got))
            lines.append(f"  vs zero: {zero['wall'] / got['wall']:.2f}")
    text = "\n".join(lines)
    (OUT / "ceiling.txt").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
