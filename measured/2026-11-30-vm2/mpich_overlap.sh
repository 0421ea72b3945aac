#!/bin/bash
# offcoll's Alltoall against MPICH's, beside Open MPI's: oc_bench_overlap
# built with Open MPI (OMPI_BUILD, the default build) and with MPICH
# (MPICH_BUILD: meson setup -Dmpi_pkg=mpich), 1 KB to 4 MB, on NP ranks. Each
# round runs in turn: the Open MPI build (every implementation), the MPICH
# build (every implementation), and the MPICH build with MPICH's progress
# thread (MPIR_CVAR_ASYNC_PROGRESS=1; MPI's implementations only, as that
# thread polls and would take the CPU from offcoll's runs too). From the top
# of a checkout:
#   measured/2026-11-30-vm2/mpich_overlap.sh OMPI_BUILD MPICH_BUILD OUTDIR [ROUNDS] [NP]
# writes OUTDIR/{ompi,mpich,mpich_async}_npNP_runR.csv and the medians of
# each (ci/bench-repeat --from) in OUTDIR/{ompi,mpich,mpich_async}_npNP_median.csv;
# measured/2026-11-30-vm2/mpich_table.py OUTDIR NP prints them as tables.
set -euo pipefail
ompi=$(realpath "$1") mpich=$(realpath "$2") out=$3 rounds=${4:-3} np=${5:-2}
source ci/mpi_env.sh
mkdir -p "$out"
bench=(--min 1K --max 4M)
for r in $(seq 1 "$rounds"); do
    mpirun --oversubscribe -np "$np" "$ompi/apps/oc_bench_overlap" "${bench[@]}" \
        --csv "$out/ompi_np${np}_run$r.csv" >/dev/null 2>&1
    mpiexec.mpich -np "$np" "$mpich/apps/oc_bench_overlap" "${bench[@]}" \
        --csv "$out/mpich_np${np}_run$r.csv" >/dev/null 2>&1
    mpiexec.mpich -genv MPIR_CVAR_ASYNC_PROGRESS 1 -np "$np" "$mpich/apps/oc_bench_overlap" \
        "${bench[@]}" --impl mpi_blocking,mpi_nb --csv "$out/mpich_async_np${np}_run$r.csv" \
        >/dev/null 2>&1
    echo "round $r done: $(date -u +%H:%M:%S)"
done
for v in ompi mpich mpich_async; do
    ci/bench-repeat --from "$out/median.tmp" "$out/${v}_np${np}"_run*.csv >/dev/null
    mv "$out/median.tmp/median.csv" "$out/${v}_np${np}_median.csv"
    rmdir "$out/median.tmp"
done
