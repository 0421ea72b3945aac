#!/usr/bin/env bash
# seg/run.sh OUT ROUNDS: UCX's 8 KB shared-memory fragments (UCX_MM_SEG_SIZE=8256,
# as before offcoll set 32 KB) against offcoll's 32 KB, in turn, on 2 ranks
# and on 4 sharing the 2 vCPUs, each pair after a cache-line ping-pong that
# tells the host's spell (../pingpong.c, built as /tmp/pingpong). Run from the
# repository root after ci/build.
set -u
out=$1 rounds=$2
source ci/mpi_env.sh
mkdir -p "$out"
for r in $(seq 1 "$rounds"); do
    for seg in def 32k; do
        x=()
        [ $seg = def ] && x=(-x UCX_MM_SEG_SIZE=8256)
        echo "r$r $seg $(date +%H:%M:%S) $(/tmp/pingpong)" >> "$out/pingpong.txt"
        for np in 2 4; do
            mpirun --oversubscribe -np $np "${x[@]}" build/apps/oc_bench_overlap --min 1K --max 4M \
                --impl mpi_blocking,oc_inline,oc_thread --budget 0.1 --csv "$out/np${np}_${seg}_r$r.csv" \
                > "$out/np${np}_${seg}_r$r.log" 2>&1
        done
    done
done
echo "end $(date +%H:%M:%S) $(/tmp/pingpong)" >> "$out/pingpong.txt"
