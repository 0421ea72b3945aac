#!/usr/bin/env bash
# percall/run.sh OUT ROUNDS: the library before 16279b4 (the error detail
# copied twice a pass, the deadline's clock read at each wait's start) against
# 16279b4, in turn, each set after a cache-line ping-pong that tells the
# host's spell (../../2026-11-29c-vm2/pingpong.c, built as /tmp/pingpong).
# Libraries: /tmp/lib_base (git worktree add /tmp/wt-base 5b538ac; meson
# setup -Dbuildtype=debugoptimized; ninja liboffcoll.so.0.1.0) and
# /tmp/lib_new (the same at 16279b4); both chosen by LD_LIBRARY_PATH, which
# the binaries' RUNPATH yields to. The micro-benchmark
# (../../2026-11-28c-vm2/idle/micro_alltoall.c, built as /tmp/micro: mpicc -O2
# -I include ... -L build -loffcoll) calls oc_ialltoall + oc_wait back to back;
# base_t0 is the old library with OC_TIMEOUT_S=0 (no deadline to read).
# Then oc_bench_overlap's pure communication, 1-64 KB, on 4 ranks sharing
# the 2 vCPUs. Run from the repository root after ci/build.
set -u
out=$1 rounds=$2
source ci/mpi_env.sh
mkdir -p "$out"
for r in $(seq 1 "$rounds"); do
    for v in base new base_t0; do
        lib=${v%_t0}
        to=300
        [ $v = base_t0 ] && to=0
        echo "r$r $v $(date +%H:%M:%S) $(/tmp/pingpong)" >> "$out/pingpong.txt"
        for case in "2 1024 200000" "4 1024 40000" "4 256 40000"; do
            set -- $case
            echo "r$r $v np=$1 bytes=$2 $(mpirun --oversubscribe -np $1 -x LD_LIBRARY_PATH=/tmp/lib_$lib \
                -x OC_TIMEOUT_S=$to /tmp/micro $2 $3 | tail -1)" >> "$out/micro.txt"
        done
        [ $v = base_t0 ] && continue
        mpirun --oversubscribe -np 4 -x LD_LIBRARY_PATH=/tmp/lib_$lib build/apps/oc_bench_overlap \
            --min 1K --max 64K --impl mpi_blocking,oc_thread --budget 0.1 \
            --csv "$out/np4_${v}_r$r.csv" > "$out/np4_${v}_r$r.log" 2>&1
    done
done
echo "end $(date +%H:%M:%S) $(/tmp/pingpong)" >> "$out/pingpong.txt"
