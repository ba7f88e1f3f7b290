#!/usr/bin/env bash
# R with the arrow package, for the tests that read cells.parquet and cells.arrow with
# R's arrow (tests/tables.rs). Debian 12, this machine's system, has no r-cran-arrow
# and CRAN is not reachable here; Debian unstable has it (r-cran-arrow, Apache Arrow's
# C++ library 25 with it). So this makes a minimal Debian unstable root folder
# (debootstrap) and installs R, arrow and jsonlite into it, without touching the
# system's own packages; the tests run `Rscript` in it with chroot, in a private mount
# namespace that binds the folders they read.
#
#   bash scripts/install_r_arrow.sh [DIR]    prints DIR when it is ready
#
# DIR defaults to $CARGO_HOME/fragfs-r-arrow: made once (about a minute and 700 MB),
# found again afterwards, like s3s-fs and the test venv. Needs root and debootstrap
# (installed from Debian when missing).
set -euo pipefail
# The folder's recipe: a change here makes a new one.
RECIPE="sid minbase r-base-core r-cran-arrow r-cran-jsonlite"
dir="${1:-${CARGO_HOME:-$HOME/.cargo}/fragfs-r-arrow}"
if [ "$(cat "$dir/.fragfs-complete" 2>/dev/null)" = "$RECIPE" ]; then
    echo "$dir"
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "install_r_arrow.sh: needs root (debootstrap, chroot)" >&2
    exit 1
fi
if ! command -v debootstrap >/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
fi
work="$dir.tmp"
rm -rf "$work"
# unstable, the smallest base; its package lists are signed with the same archive keys
# as the system's.
debootstrap --variant=minbase sid "$work" http://deb.debian.org/debian >"$work.log" 2>&1 || {
    tail -20 "$work.log" >&2
    exit 1
}
# The registry's mirror of unstable may lag: its Release file can be past its Valid-Until
# date, which apt refuses by default (debootstrap does not check it). The signature is
# still checked.
chroot "$work" /bin/sh -c '
    export DEBIAN_FRONTEND=noninteractive
    apt-get -o Acquire::Check-Valid-Until=false update -qq &&
    apt-get install -y -qq --no-install-recommends r-base-core r-cran-arrow r-cran-jsonlite
' >>"$work.log" 2>&1 || {
    tail -20 "$work.log" >&2
    exit 1
}
chroot "$work" Rscript -e 'stopifnot(arrow::arrow_info()$capabilities[["parquet"]])' >>"$work.log" 2>&1 || {
    echo "install_r_arrow.sh: R's arrow installed but cannot read Parquet" >&2
    tail -20 "$work.log" >&2
    exit 1
}
chroot "$work" apt-get clean
echo "$RECIPE" >"$work/.fragfs-complete"
rm -rf "$dir" "$work.log"
mv "$work" "$dir"
echo "$dir"
