"""Where the daemon's time goes during the sequential reads (bench.sh --profile).

    target/bench/venv/bin/python scripts/bench/profile.py [--attrs walk,count,raw] [--warm]

For each attribute, through a fresh foreground mount with the page cache dropped:
1. `cat` of every fragment's values.bin under `perf record --call-graph dwarf` of the
   daemon; the daemon's CPU time (user, system) against the wall time;
2. the same read under `strace -c -f` of the daemon: system calls by count.
Then the peak-RSS read of bench.sh twice: with glibc's default malloc and with
MALLOC_ARENA_MAX=1 (one heap for all threads), to tell the decoded-chunk cache from
memory the allocator keeps in its per-thread arenas.
Reports go to target/bench/profile/<attr>.txt (flat profile, inclusive profile, per
thread, syscalls); the perf data stays beside them for `perf report -i`. A short
summary is printed. With --warm the array's files are read into the page cache first
instead of dropping it, which leaves the disk out of the profile.
"""

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
# Imported after the sys.path line above, which makes run.py importable.
from run import (
    ATTRS,
    BENCH,
    BIG,
    boost,
    drop_caches,
    fragfs_foreground,
    fragments,
    rss_peak,
    values,
    warm_array,
)

OUT = BENCH / "profile"
TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> tuple[float, float]:
    """User and system CPU seconds of every thread of `pid` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) / TICK, int(fields[12]) / TICK


def attach(cmd: list) -> subprocess.Popen:
    """Starts a tracer and gives it time to attach before the read starts."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    time.sleep(0.5)
    if proc.poll() is not None:
        raise RuntimeError(f"{cmd[0]} exited: {proc.stderr.read()}")
    return proc


def stop(proc: subprocess.Popen) -> str:
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    return err


def perf_report(data: Path, *args: str) -> str:
    out = subprocess.run(["perf", "report", "-i", data, "--stdio", *args],
                         check=True, capture_output=True, text=True)
    return "\n".join(line for line in out.stdout.splitlines()
                     if line.strip() and not line.startswith("#"))


def profile(attr: str, warm: bool) -> str:
    files = [values(f, attr) for f in fragments()]
    mode = "warm" if warm else "cold"
    data = OUT / f"{attr}-{mode}.perf.data"

    def prepare() -> None:
        if warm:
            warm_array()
        else:
            drop_caches()

    with fragfs_foreground(BIG) as daemon:
        prepare()
        perf = attach(["perf", "record", "--call-graph", "dwarf,16384", "-F", "1999",
                       "-p", str(daemon.pid), "-o", data])
        u0, s0 = cpu_seconds(daemon.pid)
        t0 = time.perf_counter()
        subprocess.run(["cat", *files], check=True, stdout=subprocess.DEVNULL)
        wall = time.perf_counter() - t0
        u1, s1 = cpu_seconds(daemon.pid)
        stop(perf)
    with fragfs_foreground(BIG) as daemon:
        prepare()
        strace = attach(["strace", "-c", "-f", "-p", str(daemon.pid)])
        subprocess.run(["cat", *files], check=True, stdout=subprocess.DEVNULL)
        syscalls = stop(strace)
    flat = perf_report(data, "--no-children", "--sort", "dso,sym", "-g", "none",
                       "--percent-limit", "1")
    inclusive = perf_report(data, "--children", "--sort", "sym", "-g", "none",
                            "--percent-limit", "4")
    threads = perf_report(data, "--no-children", "--sort", "comm", "-g", "none")
    cpu = (f"wall {wall:.3f} s; daemon CPU: user {u1 - u0:.2f} s, system {s1 - s0:.2f} s "
           f"({(u1 - u0 + s1 - s0) / wall:.2f} cores busy on average)")
    report = (f"# {attr}: cat of {len(files)} values.bin, {mode}, fresh mount\n{cpu}\n\n"
              f"## flat profile (self time, dso and symbol)\n{flat}\n\n"
              f"## inclusive profile (time in a function and its callees)\n{inclusive}\n\n"
              f"## by thread\n{threads}\n\n## system calls (strace -c -f)\n{syscalls}\n")
    (OUT / f"{attr}-{mode}.txt").write_text(report)
    top = "\n".join("    " + line.strip() for line in flat.splitlines()[:8])
    return f"{attr} ({mode}): {cpu}\n  top self time:\n{top}\n  full report: " \
           f"{OUT / attr}-{mode}.txt"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--attrs", default=",".join(a for a, _, _ in ATTRS))
    ap.add_argument("--warm", action="store_true", help="array files in the page cache")
    ap.add_argument("--no-rss", action="store_true", help="skip the allocator experiment")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("profile.py: needs root")
    OUT.mkdir(parents=True, exist_ok=True)
    boost()  # as run.py; bench.sh restores the session's priority when it ends
    for attr in args.attrs.split(","):
        print(profile(attr, args.warm), flush=True)
    if args.no_rss:
        return
    lines = []
    for name, env in [("glibc default", None), ("MALLOC_ARENA_MAX=1", {"MALLOC_ARENA_MAX": "1"})]:
        seq, conc = rss_peak(env)
        lines.append(f"  {name:<20} VmHWM {seq:6.1f} MiB after the sequential read, "
                     f"{conc:6.1f} MiB after the concurrent one")
    text = "peak RSS with --cache-size 64M by allocator setting:\n" + "\n".join(lines)
    (OUT / "rss.txt").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
