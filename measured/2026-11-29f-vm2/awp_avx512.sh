#!/bin/bash
# An AVX-512 copy of the AWP kernel's two loops, tried: BUILD as it is
# (target_clones("avx2", "default")) against AVX512_BUILD, a build of the same
# commit with target_clones("avx512f", "avx2", "default") in awp_kernel.c.
# awp_bench on 1 rank (two-sided: the kernel alone), each build in turn,
# ROUNDS rounds: cells per rank and the median step in ms. From the top of a
# checkout:
#   measured/2026-11-29f-vm2/awp_avx512.sh BUILD AVX512_BUILD [ROUNDS]
# (bit for bit the same seismograms: measured/2026-11-29e-vm2/awp_same.sh
# BUILD AVX512_BUILD).
set -euo pipefail
rounds=${3:-3}
source ci/mpi_env.sh
for r in $(seq 1 "$rounds"); do
    for b in "$1" "$2"; do
        echo "$b: $(mpirun -np 1 "$b/awp_odc_patch/awp_bench" --n 64,96,128 --steps 50 \
            --modes two-sided | awk '$1 == "two-sided" { printf "%s %s  ", $4, $5 }')"
    done
done
