#!/bin/bash
# awp_bench with its timing reference, mode empty (the overlapped step with
# zero-byte messages): how much of each mode's visible communication is
# waiting for the neighbours rather than for data. From the top of a built
# checkout:
#   measured/2026-11-29f-vm2/awp_empty.sh [ROUNDS]
# writes awp_npN_runK.{csv,log} (N = 2, 4); medians:
#   ci/bench-repeat --from DIR measured/2026-11-29f-vm2/awp_npN_run*.csv
set -euo pipefail
rounds=${1:-3}
out=$(dirname "$0")
source ci/mpi_env.sh
for r in $(seq 1 "$rounds"); do
    for np in 2 4; do
        rm -f "$out/awp_np${np}_run$r.csv"
        { date -u +'%F %H:%M UTC'; git rev-parse --short HEAD; } >"$out/awp_np${np}_run$r.log"
        mpirun --oversubscribe -np "$np" build/awp_odc_patch/awp_bench --n 64,96 --steps 100 \
            --csv "$out/awp_np${np}_run$r.csv" >>"$out/awp_np${np}_run$r.log"
    done
done
