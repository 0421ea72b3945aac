#!/bin/sh
# Runs an upstream-style driver in a scratch directory holding its input
# files, and passes only if it prints "Results are correct".
#   run_driver.sh MPIEXEC NP DRIVER "nx ny nz ndim n" [DIMS] -- [mpiexec args...]
set -eu
mpiexec=$1 np=$2 driver=$(realpath "$3") problem=$4 dims=$5
shift 5
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
echo "$problem" > "$dir/stdin"
[ -n "$dims" ] && echo "$dims" > "$dir/dims"
cd "$dir"
out=$("$mpiexec" "$@" -np "$np" "$driver" 2>&1) || { echo "$out"; exit 1; }
echo "$out"
echo "$out" | grep -q "^Results are correct$"
