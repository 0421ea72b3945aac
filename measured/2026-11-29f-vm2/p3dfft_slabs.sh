#!/bin/bash
# Slabs with FFT-x and FFT-y fused: the Y-Z stage of a variable cut into
# X-slabs used to give up the fused X-Y stage on 1 x n grids (it needed one
# slab); now the fused stage cuts its output into the slabs' blocks. Two
# builds (OLD_BUILD before, NEW_BUILD after), each in turn, ROUNDS rounds,
# p3dfft_bench on 2 ranks (1x2), N = 128 and 256, nv = 4, 1 and 2 slabs,
# every mode. From the top of a checkout:
#   measured/2026-11-29f-vm2/p3dfft_slabs.sh OLD_BUILD NEW_BUILD [ROUNDS]
# writes p3dfft_slabs/np2_{old,new}_runK.{csv,log}; medians:
#   ci/bench-repeat --from DIR measured/2026-11-29f-vm2/p3dfft_slabs/np2_V_run*.csv
set -euo pipefail
old=$1 new=$2 rounds=${3:-3}
out=$(dirname "$0")/p3dfft_slabs
mkdir -p "$out"
source ci/mpi_env.sh
for r in $(seq 1 "$rounds"); do
    for v in old new; do
        b=${!v}
        { date -u +'%F %H:%M UTC'; } >"$out/np2_${v}_run$r.log"
        mpirun -np 2 "$b/p3dfft_patch/bench/p3dfft_bench" --n 128,256 --nv 4 --slabs 1,2 \
            --iters 5 --csv "$out/np2_${v}_run$r.csv" >>"$out/np2_${v}_run$r.log"
    done
done
