#!/bin/bash
# The vectorized kernel computes what the scalar one did, bit for bit: the
# seismograms of small_layered.txt, enlarged to 40x36x44 cells and 120
# steps, from two builds (OLD_BUILD, NEW_BUILD), on 1 rank and on 2 ranks
# in the offload mode, compared with cmp. From the top of a checkout:
#   measured/2026-11-29e-vm2/awp_same.sh OLD_BUILD NEW_BUILD
set -euo pipefail
old=$(realpath "$1") new=$(realpath "$2")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source ci/mpi_env.sh
cd awp_odc_patch/scenarios
for np in 1 2; do
    for v in old new; do
        b=${!v}
        mpirun -np "$np" "$b/awp_odc_patch/awp_run" small_layered.txt grid="40 36 44" steps=120 \
            mode=offload output="$tmp/$v$np" >"$tmp/$v$np.log"
    done
    cmp "$tmp/old$np/small_layered_seismograms.csv" "$tmp/new$np/small_layered_seismograms.csv"
    echo "$np rank(s): the seismograms are the same; time per step, old then new:"
    grep "time per step" "$tmp/old$np.log" "$tmp/new$np.log" | sed "s#$tmp/##"
done
