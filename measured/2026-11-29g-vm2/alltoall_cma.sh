#!/bin/bash
# The rendezvous on the host through UCX's shared-memory FIFO (OC_INTRANODE=
# shm) or by cma's kernel copy (OC_INTRANODE=cma), with the benchmark's
# buffers (MPI's too) on ordinary pages (small), on huge pages through
# glibc's malloc advising every large allocation (huge:
# GLIBC_TUNABLES=glibc.malloc.hugetlb=1), or with transparent huge pages
# "always" for the whole host (always: needs root; the script sets
# /sys/kernel/mm/transparent_hugepage/enabled for those runs and restores
# it): oc_bench_overlap on 2 ranks, 64 KB-4 MB, blocking MPI_Alltoall and
# offcoll's thread mode, ROUNDS rounds of the six in turn. From the top of
# a checkout, after ci/build:
#   measured/2026-11-29g-vm2/alltoall_cma.sh [ROUNDS]
# writes alltoall_cma/{small,huge,always}_{shm,cma}_runK.csv; medians:
#   ci/bench-repeat --from DIR measured/2026-11-29g-vm2/alltoall_cma/P_I_run*.csv
set -euo pipefail
rounds=${1:-3}
out=$(dirname "$0")/alltoall_cma
thp=/sys/kernel/mm/transparent_hugepage/enabled
mkdir -p "$out"
source ci/mpi_env.sh
was=$(sed 's/.*\[\(.*\)\].*/\1/' "$thp")
trap 'echo "$was" > "$thp"' EXIT
for r in $(seq 1 "$rounds"); do
    for pages in small huge always; do
        echo "$([ $pages = always ] && echo always || echo "$was")" > "$thp"
        for path in shm cma; do
            mpirun -np 2 -x GLIBC_TUNABLES=glibc.malloc.hugetlb=$([ $pages = huge ] && echo 1 || echo 0) \
                -x OC_INTRANODE=$path build/apps/oc_bench_overlap --min 64K --max 4M \
                --impl mpi_blocking,oc_thread --csv "$out/${pages}_${path}_run$r.csv" >/dev/null 2>&1
        done
    done
done
