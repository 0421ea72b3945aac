#!/bin/bash
# P3DFFT's offload mode where the host's transparent huge pages are
# "never" (the library's advice to its work buffers is then ignored): the
# rendezvous by cma (what P3DFFT's context asked for wherever its buffers
# were advised, P3DFFT_HUGEPAGES=1) against the shared-memory FIFO.
# Root: it sets /sys/kernel/mm/transparent_hugepage/enabled to "never" for
# the runs and restores it. From the top of a checkout:
#   measured/2026-11-29h-vm2/p3dfft_thp_never.sh BUILD OUTDIR [ROUNDS]
# writes OUTDIR/{cma,shm}_runR.csv (p3dfft_bench --n 256 --nv 4 --modes
# blocking,offload, grids 1x2 and 2x2) and prints the host's setting.
set -euo pipefail
build=$(realpath "$1") out=$2 rounds=${3:-3}
thp=/sys/kernel/mm/transparent_hugepage/enabled
was=$(sed 's/.*\[\(.*\)\].*/\1/' "$thp")
trap 'echo "$was" > "$thp"; echo "THP restored: $(cat "$thp")"' EXIT
source ci/mpi_env.sh
mkdir -p "$out"
echo never > "$thp"
echo "THP for the runs: $(cat "$thp")"
for r in $(seq 1 "$rounds"); do
    for path in cma shm; do
        for dims in 1x2 2x2; do
            np=$(( ${dims%x*} * ${dims#*x} ))
            mpirun --oversubscribe -x OC_INTRANODE=$path -np "$np" \
                "$build/p3dfft_patch/bench/p3dfft_bench" --n 256 --nv 4 --dims "$dims" \
                --modes blocking,offload --iters 5 --csv "$out/${path}_${dims}_run$r.csv" >/dev/null
        done
    done
done
