#!/bin/bash
# The fused X-Y stage's plane with an odd stride (p3_ld) where nx / 2 + 1 is
# even (a power of two at N = 126 and 254): two builds (OLD_BUILD before,
# NEW_BUILD after), each in turn, ROUNDS rounds; driver_rand on 2 ranks as
# 1x2, blocking mode, nv = 1, 3 loops. From the top of a checkout:
#   measured/2026-11-29g-vm2/p3dfft_nxh.sh OLD_BUILD NEW_BUILD [ROUNDS]
# prints one line per run: round, N, build, time per loop, the fused stage's
# forward (timer[5]) and backward (timer[12]) averages in seconds.
set -euo pipefail
old=$(realpath "$1") new=$(realpath "$2") rounds=${3:-3}
source ci/mpi_env.sh
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
echo "1 2" >dims
echo "round N build loop_s fused_fwd_s fused_bwd_s result"
for r in $(seq 1 "$rounds"); do
    for n in 126 254; do
        echo "$n $n $n 2 3" >stdin
        for v in old new; do
            P3DFFT_TRANSPOSE=blocking mpirun -np 2 "${!v}/p3dfft_patch/drivers/driver_rand" 2>&1 |
                awk -v r="$r" -v n="$n" -v b="$v" '
                    /Time per loop/ { split($0, a, "="); t = a[2] }
                    /^timer\[5\]/ { f = $3 }
                    /^timer\[12\]/ { g = $3 }
                    /^Results are/ { c = $3 }
                    END { print r, n, b, t, f, g, c }'
        done
    done
done
