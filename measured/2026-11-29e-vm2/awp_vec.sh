#!/bin/bash
# Two builds of the AWP-ODC kernel (README.md here: scalar against 16-byte
# vectors; TAG _avx2: 16-byte vectors only against the AVX2 clones too):
# awp_bench on 1 rank (two-sided: the kernel alone) and on 2 ranks (every
# mode), each build in turn, ROUNDS rounds. From the top of a
# checkout, with the two builds' directories (e.g. a `git worktree` of the
# commit before, built with `meson setup build -Dbuildtype=debugoptimized`):
#   measured/2026-11-29e-vm2/awp_vec.sh OLD_BUILD NEW_BUILD [ROUNDS] [TAG]
# writes awpTAG_npN_{old,new}_runK.{csv,log}; medians:
#   ci/bench-repeat --from DIR measured/2026-11-29e-vm2/awpTAG_npN_V_run*.csv
set -euo pipefail
old=$1 new=$2 rounds=${3:-3} tag=${4:-}
out=$(dirname "$0")
source ci/mpi_env.sh
for r in $(seq 1 "$rounds"); do
    for v in old new; do
        b=${!v}
        rm -f "$out/awp${tag}_np1_${v}_run$r.csv" "$out/awp${tag}_np2_${v}_run$r.csv"
        mpirun -np 1 "$b/awp_odc_patch/awp_bench" --n 64,96,128 --steps 50 --modes two-sided \
            --csv "$out/awp${tag}_np1_${v}_run$r.csv" >"$out/awp${tag}_np1_${v}_run$r.log"
        mpirun -np 2 "$b/awp_odc_patch/awp_bench" --n 64,96,128 --steps 50 \
            --csv "$out/awp${tag}_np2_${v}_run$r.csv" >"$out/awp${tag}_np2_${v}_run$r.log"
    done
done
