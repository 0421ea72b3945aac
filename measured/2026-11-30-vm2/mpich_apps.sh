#!/bin/bash
# The science codes with MPICH as the MPI beside Open MPI: p3dfft_bench (N =
# 128 and 256, nv = 4, grid 1x2; FFTW-MPI's transform in the Open MPI build
# only, as Debian's FFTW-MPI is built for it) and awp_bench (64^3-128^3 cells
# a rank, 50 steps), each on 2 ranks, the Open MPI build (OMPI_BUILD) and the
# MPICH build (MPICH_BUILD: meson setup -Dmpi_pkg=mpich) in turn, ROUNDS
# rounds. From the top of a checkout:
#   measured/2026-11-30-vm2/mpich_apps.sh OMPI_BUILD MPICH_BUILD OUTDIR [ROUNDS]
# writes OUTDIR/{p3dfft,awp}_{ompi,mpich}_runR.csv and their medians
# (ci/bench-repeat --from) OUTDIR/{p3dfft,awp}_{ompi,mpich}_median.csv.
set -euo pipefail
ompi=$(realpath "$1") mpich=$(realpath "$2") out=$3 rounds=${4:-3}
source ci/mpi_env.sh
mkdir -p "$out"
p3=(--n 128,256 --nv 4 --dims 1x2 --iters 5)
awp=(--n 64,96,128 --steps 50)
for r in $(seq 1 "$rounds"); do
    rm -f "$out"/*_run$r.csv # awp_bench appends to its CSV
    mpirun -np 2 "$ompi/p3dfft_patch/bench/p3dfft_bench" "${p3[@]}" \
        --csv "$out/p3dfft_ompi_run$r.csv" >/dev/null
    mpiexec.mpich -np 2 "$mpich/p3dfft_patch/bench/p3dfft_bench" "${p3[@]}" \
        --csv "$out/p3dfft_mpich_run$r.csv" >/dev/null
    mpirun -np 2 "$ompi/awp_odc_patch/awp_bench" "${awp[@]}" --csv "$out/awp_ompi_run$r.csv" >/dev/null
    mpiexec.mpich -np 2 "$mpich/awp_odc_patch/awp_bench" "${awp[@]}" \
        --csv "$out/awp_mpich_run$r.csv" >/dev/null
    echo "round $r done: $(date -u +%H:%M:%S)"
done
for v in p3dfft_ompi p3dfft_mpich awp_ompi awp_mpich; do
    ci/bench-repeat --from "$out/median.tmp" "$out/${v}"_run*.csv >/dev/null
    mv "$out/median.tmp/median.csv" "$out/${v}_median.csv"
    rmdir "$out/median.tmp"
done
