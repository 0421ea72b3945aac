#!/bin/bash
# Transparent huge pages for P3DFFT's work buffers, and for the driver's own
# arrays too: driver_rand 256^3 on 2 ranks as 1x2, blocking and offload,
# 4 loops, ROUNDS rounds of three settings in turn: P3DFFT_HUGEPAGES=0,
# P3DFFT_HUGEPAGES=1 (the default), and that with glibc advising every large
# malloc (GLIBC_TUNABLES=glibc.malloc.hugetlb=1). From the top of a checkout:
#   measured/2026-11-29g-vm2/p3dfft_thp.sh BUILD [ROUNDS]
# prints one line per run: round, mode, setting, time per loop and the
# averages of timer[2] (Y-Z transpose), timer[3] (Z-Y), timer[5] (FFT-x+y
# forward), timer[8] (FFT-z forward), timer[9] (FFT-z backward), timer[12]
# (FFT-y+x backward), in seconds.
set -euo pipefail
build=$(realpath "$1") rounds=${2:-3}
source ci/mpi_env.sh
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
echo "1 2" >dims
echo "256 256 256 2 4" >stdin
echo "round mode setting loop_s yz_s zy_s xy_fwd_s z_fwd_s z_bwd_s xy_bwd_s result"
for r in $(seq 1 "$rounds"); do
    for mode in blocking offload; do
        for set in off on glibc; do
            env=(-x P3DFFT_TRANSPOSE=$mode -x P3DFFT_HUGEPAGES=$([ $set = off ] && echo 0 || echo 1))
            [ $set = glibc ] && env+=(-x GLIBC_TUNABLES=glibc.malloc.hugetlb=1)
            mpirun "${env[@]}" -np 2 "$build/p3dfft_patch/drivers/driver_rand" 2>&1 |
                awk -v r="$r" -v m="$mode" -v s="$set" '
                    /Time per loop/ { split($0, a, "="); t = a[2] }
                    /^timer\[/ { split($1, k, /[][]/); v[k[2]] = $3 }
                    /^Results are/ { c = $3 }
                    END { print r, m, s, t, v[2], v[3], v[5], v[8], v[9], v[12], c }'
        done
    done
done
