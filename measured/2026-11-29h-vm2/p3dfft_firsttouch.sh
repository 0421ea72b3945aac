#!/bin/bash
# Where the backward FFT-y+FFT-x stage's 1.6-2.2x of p3dfft_thp.sh (the
# driver's arrays on huge pages by glibc's advice) comes from: the first
# loop's page faults of the driver's output array, which its first
# Cp3dfft_btran_c2r writes before anything else does. From the top of a
# checkout:
#   measured/2026-11-29h-vm2/p3dfft_firsttouch.sh BUILD [ROUNDS]
# prints, per round:
#  1. driver_rand 256^3 on 1x2, blocking, 1, 8 and 16 loops, the driver's
#     arrays on ordinary pages ("plain") and on huge pages
#     (GLIBC_TUNABLES=glibc.malloc.hugetlb=1, "glibc"): time per loop and
#     the averages of timer[8] (forward FFT-z, which writes the output
#     array first), timer[9] (backward FFT-z) and timer[12] (backward
#     FFT-y+FFT-x, which writes the real output first), seconds;
#  2. p3dfft_bench (2 warm-up iterations untimed) 1x2, N = 256, nv = 4,
#     blocking and offload, plain and glibc: ms per variable;
#  3. first touch of 256 MB (one write per 4 KB) mapped afresh, on ordinary
#     pages and advised for huge pages, five times each without unmapping
#     (memory the process has not had before), ms;
# then the kernel's counters of direct compaction and of huge-page faults.
set -euo pipefail
build=$(realpath "$1") rounds=${2:-3}
source ci/mpi_env.sh
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cat >"$dir/touch.c" <<'C'
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
int main(int argc, char **argv)
{
    size_t sz = 256UL << 20, i, huge = 2UL << 20;
    int advise = atoi(argv[1]), r;
    for (r = 0; r < 5; r++) {
        char *m = mmap(NULL, sz + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        char *a = (char *)(((unsigned long)m + huge - 1) & ~(huge - 1));
        double t;
        if (m == MAP_FAILED) return 1;
        madvise(a, sz, advise ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
        t = now();
        for (i = 0; i < sz; i += 4096) a[i] = 1;
        printf(" %.1f", (now() - t) * 1e3);
    }
    printf("\n");
    return 0;
}
C
cc -O2 -o "$dir/touch" "$dir/touch.c"
grep -E '^(compact_stall|thp_fault_alloc|thp_fault_fallback) ' /proc/vmstat | tr '\n' ' '; echo
echo "THP $(cat /sys/kernel/mm/transparent_hugepage/enabled), defrag $(cat /sys/kernel/mm/transparent_hugepage/defrag)"
cd "$dir"
echo "1 2" >dims
for r in $(seq 1 "$rounds"); do
    for loops in 1 8 16; do
        echo "256 256 256 2 $loops" >stdin
        for set in plain glibc; do
            env=(-x P3DFFT_TRANSPOSE=blocking)
            [ $set = glibc ] && env+=(-x GLIBC_TUNABLES=glibc.malloc.hugetlb=1)
            mpirun "${env[@]}" -np 2 "$build/p3dfft_patch/drivers/driver_rand" 2>&1 |
                awk -v r="$r" -v l="$loops" -v s="$set" '
                    /Time per loop/ { split($0, a, "="); t = a[2] }
                    /^timer\[/ { split($1, k, /[][]/); v[k[2]] = $3 }
                    /^Results are/ { c = $3 }
                    END { print "driver round", r, "loops", l, s, "loop_s", t, "z_fwd_s", v[8],
                                "z_bwd_s", v[9], "xy_bwd_s", v[12], c }'
        done
    done
    for set in plain glibc; do
        env=()
        [ $set = glibc ] && env+=(-x GLIBC_TUNABLES=glibc.malloc.hugetlb=1)
        mpirun "${env[@]}" -np 2 "$build/p3dfft_patch/bench/p3dfft_bench" --n 256 --nv 4 \
            --dims 1x2 --modes blocking,offload --iters 5 2>&1 |
            awk -v r="$r" -v s="$set" '$1 == "blocking" || $1 == "offload" {
                print "bench round", r, s, $1, "ms_per_var", $6 }'
    done
    echo "touch round $r ordinary pages ms:$(./touch 0)"
    echo "touch round $r huge pages ms:$(./touch 1)"
done
grep -E '^(compact_stall|thp_fault_alloc|thp_fault_fallback) ' /proc/vmstat | tr '\n' ' '; echo
