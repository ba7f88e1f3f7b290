#!/usr/bin/env bash
# Before/after of two fragfs builds on one command, in the same run: each round mounts
# the array afresh with one build, times the command, unmounts, then does the same with
# the other build; the array's own files stay in the page cache (read once first), so
# what differs is fragfs. Prints each build's times, sorted, and their medians.
#
#   bash scripts/bench/ab.sh OLD_FRAGFS NEW_FRAGFS ARRAY 'COMMAND' [ROUNDS]
#
# COMMAND runs in a shell with $MNT set to the mount point, e.g.
#   bash scripts/bench/ab.sh /tmp/old/fragfs target/release/fragfs target/bench/big \
#       'cat $MNT/fragments/*/count/values.bin' 8
# Needs root and /dev/fuse; run it on an idle machine (nothing building or testing).
set -euo pipefail
[ $# -ge 4 ] || { sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
old=$1 new=$2 array=$3 command=$4 rounds=${5:-6}
MNT=$(mktemp -d)
export MNT
trap 'mountpoint -q "$MNT" && umount "$MNT"; rmdir "$MNT"' EXIT
find "$array" -type f -exec cat {} + >/dev/null
declare -A times
for _ in $(seq "$rounds"); do
    for build in old new; do
        bin=${!build}
        "$bin" mount "$array" "$MNT"
        start=$(date +%s.%N)
        bash -c "$command" >/dev/null
        end=$(date +%s.%N)
        "$bin" umount "$MNT"
        times[$build]+=" $(echo "$end - $start" | bc)"
    done
done
for build in old new; do
    sorted=$(tr ' ' '\n' <<<"${times[$build]}" | grep . | sort -n | tr '\n' ' ')
    median=$(tr ' ' '\n' <<<"$sorted" | grep . | awk '{v[NR]=$1} END {print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}')
    printf '%s median %.3f s: %s\n' "$build" "$median" "$sorted"
done
