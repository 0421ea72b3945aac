#!/bin/bash
# The AWP-ODC kernel vectorized (ivdep, -fvect-cost-model=cheap) against the
# build before it: awp_bench on 1 rank (two-sided: the kernel alone) and on
# 2 ranks (every mode), each build in turn, ROUNDS rounds. From the top of a
# checkout, with the two builds' directories (e.g. a `git worktree` of the
# commit before, built with `meson setup build -Dbuildtype=debugoptimized`):
#   measured/2026-11-29e-vm2/awp_vec.sh OLD_BUILD NEW_BUILD [ROUNDS]
# Medians: ci/bench-repeat --from DIR measured/2026-11-29e-vm2/awp_npN_V_run*.csv
set -euo pipefail
old=$1 new=$2 rounds=${3:-3}
out=$(dirname "$0")
source ci/mpi_env.sh
for r in $(seq 1 "$rounds"); do
    for v in old new; do
        b=${!v}
        rm -f "$out/awp_np1_${v}_run$r.csv" "$out/awp_np2_${v}_run$r.csv"
        mpirun -np 1 "$b/awp_odc_patch/awp_bench" --n 64,96,128 --steps 50 --modes two-sided \
            --csv "$out/awp_np1_${v}_run$r.csv" >"$out/awp_np1_${v}_run$r.log"
        mpirun -np 2 "$b/awp_odc_patch/awp_bench" --n 64,96,128 --steps 50 \
            --csv "$out/awp_np2_${v}_run$r.csv" >"$out/awp_np2_${v}_run$r.log"
    done
done
