#!/usr/bin/env bash
# The benchmark suite (issue 3): fragfs against its peers, measured in one run and
# printed as ratios. Needs root (it mounts, and drops the page cache before every cold
# read) and /dev/fuse.
#
#   bash scripts/bench.sh [--regenerate] [--repeat N] [--only SECTIONS] [--profile]
#
#   --regenerate    rewrite the benchmark arrays even if present
#   --repeat N      runs per figure, the median is kept (default 5)
#   --only S,...    sections to run: seq,random,rss,many,listing,merged,sparse,
#                   pointcloud,ttfb,zarr,legacy,squash,cache,s3,serve,doors,tables,
#                   cluster,decode
#                   (default: all)
#   --profile       afterwards, profile the daemon during each sequential read
#                   (perf record -g, syscall counts) into target/bench/profile/, and
#                   split the whole machine's time per MiB against the zero FUSE
#                   file (ceiling.py, target/bench/profile/ceiling.txt)
#
# What it does: installs missing tools (apt-get), makes a venv with TileDB-Py in
# target/bench/venv, builds fragfs and the zero-serving baseline (examples/zerofs.rs),
# writes the arrays once into target/bench/ (about 3 GB; reused on later runs), runs
# `cargo bench --bench decode`, then scripts/bench/run.py, which measures and prints
# the table (also saved to target/bench/results.txt, raw figures in results.json).
# See scripts/bench/README.md. About 5 minutes once the data exists (--repeat 5).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BENCH="$ROOT/target/bench"
VENV="$BENCH/venv"
MNT="$BENCH/mnt"

regenerate=0
profile=0
only="seq,random,rss,many,listing,merged,sparse,pointcloud,ttfb,zarr,legacy,squash,cache,s3,serve,doors,tables,cluster,decode"
run_args=()
while [ $# -gt 0 ]; do
    case "$1" in
        --regenerate) regenerate=1 ;;
        --profile) profile=1 ;;
        --repeat | --only)
            [ $# -ge 2 ] || { echo "bench.sh: $1 needs a value" >&2; exit 2; }
            if [ "$1" = --only ]; then only="$2"; else run_args+=("$1" "$2"); fi
            shift
            ;;
        -h | --help)
            sed -n '2,20p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
            exit 0
            ;;
        *) echo "bench.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done

die() { echo "bench.sh: $*" >&2; exit 1; }
step() { printf '\n== %s\n' "$*"; }

[ "$(id -u)" -eq 0 ] || die "needs root: it mounts FUSE file systems and drops the page cache"
[ -e /dev/fuse ] || die "no /dev/fuse (load the fuse module; in a container pass the device)"
command -v cargo >/dev/null || die "cargo is required"

# Scheduling priority for the run. With autogroups (sched_autogroup_enabled), nice
# only ranks processes inside one session and every session competes as a whole, so
# other sessions' builds would take half the CPU whatever their nice level: raise this
# session's group weight too (nice -10), and put it back on exit.
group_nice=""
if [ -w /proc/self/autogroup ]; then
    group_nice="$(awk '{print $NF}' /proc/self/autogroup)"
    echo -10 >/proc/self/autogroup || group_nice=""
fi

# Whatever happens (error, Ctrl-C), leave no mount behind. A daemon whose mount is
# gone exits by itself, so unmounting is all the cleanup there is.
cleanup() {
    if mountpoint -q "$MNT" 2>/dev/null; then
        umount "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null || true
    fi
}
on_exit() {
    cleanup
    if [ -n "$group_nice" ]; then echo "$group_nice" >/proc/self/autogroup || true; fi
}
trap on_exit EXIT
trap 'exit 130' INT TERM

# --- tools: Debian packages, installed only when missing
need_pkgs=()
command -v python3 >/dev/null || need_pkgs+=(python3)
python3 -c 'import ensurepip, venv' 2>/dev/null || need_pkgs+=(python3-venv)
command -v mountpoint >/dev/null || need_pkgs+=(util-linux)
# squashfuse_ll: the FUSE peer that also decompresses (the squash section).
command -v squashfuse_ll >/dev/null || need_pkgs+=(squashfuse)
command -v mksquashfs >/dev/null || need_pkgs+=(squashfs-tools)
# The serve section: curl as the HTTP client, nginx as the static-file peer.
command -v curl >/dev/null || need_pkgs+=(curl)
command -v nginx >/dev/null || need_pkgs+=(nginx)
# The doors section: libnfs's nfs-ls as the NFS client.
command -v nfs-ls >/dev/null || need_pkgs+=(libnfs-utils)
if [ "$profile" -eq 1 ]; then
    command -v perf >/dev/null || need_pkgs+=(linux-perf)
    command -v strace >/dev/null || need_pkgs+=(strace)
    command -v lz4 >/dev/null || need_pkgs+=(lz4)
fi
if [ ${#need_pkgs[@]} -gt 0 ]; then
    step "installing ${need_pkgs[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_pkgs[@]}" >/dev/null
fi

# --- TileDB-Py in its own venv (the versions the fixtures use)
if ! "$VENV/bin/python" -c 'import tiledb, numpy, zarr, fsspec, aiohttp, boto3, requests, tifffile, netCDF4, h5py, duckdb, polars, pyarrow, pandas, dask, distributed, xarray, s3fs' 2>/dev/null; then
    step "creating $VENV with TileDB-Py, zarr-python and the clients of fragfs serve"
    rm -rf "$VENV"
    python3 -m venv "$VENV"
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
        "numpy==2.4.6" "packaging==26.3" "tiledb==0.36.1" "zarr==3.1.6" \
        "fsspec==2026.9.0" "aiohttp==3.14.5" "boto3==1.43.117" "requests==2.34.2" \
        "tifffile==2026.3.3" "netCDF4==1.7.5.1.post1" "h5py==3.16.0" \
        "duckdb==1.5.5" "polars==1.44.2" "pyarrow==26.0.1" "pandas==2.3.3" \
        "dask[array]==2026.8.0" "distributed==2026.8.0" "xarray==2026.9.0" \
        "s3fs==2026.9.0" "maturin==1.16.0"
fi

# --- binaries
step "building fragfs and the zero baseline (release)"
(cd "$ROOT" && cargo build --release --quiet --bin fragfs --example zerofs)

# --- the Python package (python/, release build) in the venv, for the cluster
# section's workers (the fragfs_tile codec); rebuilt when its inputs change
if [[ ",$only," == *,cluster,* ]]; then
    stamp="$VENV/.fragfs-python-inputs"
    inputs="$(cd "$ROOT" && cat Cargo.toml Cargo.lock python/Cargo.toml python/Cargo.lock \
        python/pyproject.toml $(find src python/src python/python -type f | sort) |
        sha256sum | cut -c1-16)"
    if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$inputs" ]; then
        step "installing the fragfs Python package into $VENV (release build)"
        # maturin (in the venv) is found on PATH by the build backend.
        PATH="$VENV/bin:$PATH" "$VENV/bin/python" -m pip install --quiet \
            --disable-pip-version-check --no-build-isolation --no-deps --force-reinstall \
            "$ROOT/python"
        echo "$inputs" >"$stamp"
    fi
fi

# --- the S3 server of the s3 and cluster sections: s3s-fs from crates.io, built once
# into the cargo home (as scripts/test.sh does)
if [[ ",$only," == *,s3,* || ",$only," == *,cluster,* ]] && ! command -v s3s-fs >/dev/null &&
    [ ! -x "${CARGO_HOME:-$HOME/.cargo}/bin/s3s-fs" ]; then
    step "cargo install s3s-fs (once, several minutes)"
    cargo install s3s-fs --version 0.14.1 --features binary --locked --quiet
fi

# --- arrays: written under a temporary name, renamed when complete
make_array() { # kind dir
    local kind="$1" dir="$2"
    if [ "$regenerate" -eq 1 ] || [ ! -d "$dir" ]; then
        step "writing the '$kind' array to $dir (TileDB-Py)"
        rm -rf "$dir" "$dir.tmp"
        "$VENV/bin/python" "$ROOT/scripts/bench/make_arrays.py" "$kind" "$dir.tmp"
        mv "$dir.tmp" "$dir"
    fi
}
mkdir -p "$BENCH" "$MNT"
cleanup # a mount left by an earlier, killed run
make_array big "$BENCH/big"
make_array many "$BENCH/many"
make_array overlap "$BENCH/overlap"
make_array sparse "$BENCH/sparse"
make_array grid "$BENCH/grid"
make_array pointcloud "$BENCH/pointcloud"
make_array table "$BENCH/table"
# 4 GiB: written only for the section that reads it.
if [[ ",$only," == *,cluster,* ]]; then make_array cluster "$BENCH/cluster"; fi

# --- decode throughput (cargo bench); run.py reads the figures from decode.txt
if [[ ",$only," == *,decode,* ]]; then
    step "cargo bench --bench decode"
    (cd "$ROOT" && nice -n -10 cargo bench --quiet --bench decode) | tee "$BENCH/decode.txt"
fi

# --- the measurements. At a higher priority than the rest of the machine: on a shared
# 2-core box, background builds otherwise land inside the timings.
step "measuring (cold reads: page cache dropped before each)"
nice -n -10 "$VENV/bin/python" "$ROOT/scripts/bench/run.py" --only "$only" "${run_args[@]}"

if [ "$profile" -eq 1 ]; then
    step "profiling the daemon during the sequential reads"
    nice -n -10 "$VENV/bin/python" "$ROOT/scripts/bench/profile.py"
    step "where each MiB goes, against the zero FUSE file (ceiling.py)"
    nice -n -10 "$VENV/bin/python" "$ROOT/scripts/bench/ceiling.py"
fi
