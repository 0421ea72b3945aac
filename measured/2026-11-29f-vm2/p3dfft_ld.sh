#!/bin/bash
# The packed lines and planes with an odd stride (p3_ld): two builds
# (OLD_BUILD before, NEW_BUILD after), each in turn, ROUNDS rounds, every
# mode, N = 128 and 256, nv = 4: p3dfft_bench on 2 ranks as 1x2 (1 and 2
# slabs) and 2x1, and on 4 ranks (on the 2 vCPUs) as 2x2. From the top of a
# checkout:
#   measured/2026-11-29f-vm2/p3dfft_ld.sh OLD_BUILD NEW_BUILD [ROUNDS]
# writes p3dfft_ld/{1x2,2x1,2x2}_{old,new}_runK.{csv,log}; medians:
#   ci/bench-repeat --from DIR measured/2026-11-29f-vm2/p3dfft_ld/G_V_run*.csv
set -euo pipefail
old=$1 new=$2 rounds=${3:-3}
out=$(dirname "$0")/p3dfft_ld
mkdir -p "$out"
source ci/mpi_env.sh
for r in $(seq 1 "$rounds"); do
    for v in old new; do
        b=${!v}/p3dfft_patch/bench/p3dfft_bench
        for g in 1x2 2x1 2x2; do
            case $g in
            1x2) args=(-np 2 "$b" --dims 1x2 --slabs 1,2) ;;
            2x1) args=(-np 2 "$b" --dims 2x1) ;;
            2x2) args=(--oversubscribe -np 4 "$b" --dims 2x2) ;;
            esac
            date -u +'%F %H:%M UTC' >"$out/${g}_${v}_run$r.log"
            mpirun "${args[@]}" --n 128,256 --nv 4 --iters 5 \
                --csv "$out/${g}_${v}_run$r.csv" >>"$out/${g}_${v}_run$r.log"
        done
    done
done
