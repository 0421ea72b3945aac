#!/bin/bash
# p3dfft_bench with two builds (OLD_BUILD before a change, NEW_BUILD after),
# each in turn, ROUNDS rounds, every mode, N = 128 and 256, nv = 4, on each
# GRID: 1x1 (1 rank), 1x2, 1x2s2 (1x2 with 2 slabs), 2x1 (2 ranks), 2x2
# (4 ranks on the 2 vCPUs). A build may be followed by settings for its
# runs, BUILD,VAR=VALUE[,VAR=VALUE...] (one build twice: a setting's A/B).
# From the top of a checkout:
#   measured/2026-11-29g-vm2/p3dfft_ab.sh NAME OLD_BUILD NEW_BUILD ROUNDS GRID...
# writes NAME/{GRID}_{old,new}_runK.{csv,log}; medians:
#   ci/bench-repeat --from DIR measured/2026-11-29g-vm2/NAME/GRID_V_run*.csv
set -euo pipefail
name=$1 rounds=$4
IFS=, read -r -a old_side <<<"$2"
IFS=, read -r -a new_side <<<"$3"
shift 4
out=$(dirname "$0")/$name
mkdir -p "$out"
source ci/mpi_env.sh
for r in $(seq 1 "$rounds"); do
    for v in old new; do
        side=("${old_side[@]}")
        [ $v = new ] && side=("${new_side[@]}")
        b=${side[0]}/p3dfft_patch/bench/p3dfft_bench
        env=()
        for e in "${side[@]:1}"; do env+=(-x "$e"); done
        for g in "$@"; do
            case $g in
            1x1) args=(-np 1 "$b" --dims 1x1) ;;
            1x2) args=(-np 2 "$b" --dims 1x2) ;;
            1x2s2) args=(-np 2 "$b" --dims 1x2 --slabs 2) ;;
            2x1) args=(-np 2 "$b" --dims 2x1) ;;
            2x2) args=(--oversubscribe -np 4 "$b" --dims 2x2) ;;
            *) echo "p3dfft_ab.sh: unknown grid $g" >&2; exit 2 ;;
            esac
            date -u +'%F %H:%M UTC' >"$out/${g}_${v}_run$r.log"
            mpirun "${env[@]}" "${args[@]}" --n 128,256 --nv 4 --iters 5 \
                --csv "$out/${g}_${v}_run$r.csv" >>"$out/${g}_${v}_run$r.log"
        done
    done
done
