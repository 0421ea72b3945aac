#!/usr/bin/env bash
# meson install into a scratch prefix, then build and run a one-file program
# with nothing but `pkg-config --cflags --libs offcoll`, one using the MPI
# helpers (offcoll_mpi.h) with mpicc, and a P3DFFT code with mpicc and
# `pkg-config --cflags --libs p3dfft`; the installed programs that draw
# find their installed plot scripts.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
meson setup "$tmp/build" "$src" --prefix "$tmp/prefix" -Dtests=false >/dev/null
ninja -C "$tmp/build" >/dev/null
meson install -C "$tmp/build" >/dev/null
pc=$(dirname "$(find "$tmp/prefix" -name offcoll.pc)")
flags=$(PKG_CONFIG_PATH=$pc pkg-config --cflags --libs offcoll)
cc -o "$tmp/hello" "$src/tests/install/hello.c" $flags
libdir=$(dirname "$(find "$tmp/prefix" -name 'liboffcoll.so' | head -1)")
LD_LIBRARY_PATH=$libdir "$tmp/hello"
echo "install check: cc hello.c $flags -> ok"
# The library exports the calls its header declares (OC_API), nothing else.
exported=$(nm -D --defined-only "$libdir/liboffcoll.so" | awk '$2 == "T" {print $3}' | sort)
declared=$(sed -nE 's/^OC_API [^(]*[ *](oc_[a-z0-9_]+)\(.*/\1/p' "$src/include/offcoll.h" | sort)
if [ "$exported" != "$declared" ]; then
    echo "install check: liboffcoll.so exports other functions than offcoll.h declares:"
    diff <(echo "$declared") <(echo "$exported") || true
    exit 1
fi
echo "install check: exports exactly the $(echo "$declared" | wc -l) calls of offcoll.h -> ok"
# The header-only MPI helpers, where MPI is installed: built with mpicc and
# the same flags, run on two ranks.
if command -v mpicc >/dev/null && command -v mpirun >/dev/null; then
    # As the MPI tests do (meson.build's mpi_test_args): CI runs as root.
    run() { LD_LIBRARY_PATH=$libdir mpirun --allow-run-as-root -x LD_LIBRARY_PATH "$@"; }
    mpicc -o "$tmp/hello_mpi" "$src/tests/install/hello_mpi.c" $flags
    run -np 2 "$tmp/hello_mpi"
    echo "install check: mpicc hello_mpi.c $flags -> ok"
    # A P3DFFT code, with its own pkg-config file (meson builds the patches
    # where MPI and FFTW are found; ci/setup installs both).
    if ! PKG_CONFIG_PATH=$pc pkg-config --exists p3dfft || [ ! -x "$tmp/prefix/bin/awp_run" ]; then
        echo "install check: no libp3dfft or awp_run installed (MPI or FFTW missing)"
        exit 1
    fi
    p3flags=$(PKG_CONFIG_PATH=$pc pkg-config --cflags --libs p3dfft)
    mpicc -o "$tmp/hello_p3dfft" "$src/tests/install/hello_p3dfft.c" $p3flags -lm
    run -np 2 "$tmp/hello_p3dfft"
    echo "install check: mpicc hello_p3dfft.c $p3flags -lm -> ok"
    # The installed programs that draw find their installed plot scripts
    # (the build tree's copies are next to the binaries there, not here).
    if ! command -v gnuplot >/dev/null; then
        echo "install check: SKIP the installed programs' PNGs: no gnuplot"
        exit 0
    fi
    draw() { run "$@" >/dev/null; }
    bin=$tmp/prefix/bin
    draw -np 1 "$bin/awp_run" "$src/awp_odc_patch/scenarios/small_layered.txt" steps=2 \
        snapshots=2 output="$tmp/png/awp_run" progress=0
    mv "$tmp"/png/awp_run/*.png "$tmp/png/awp_run.png" 2>/dev/null || true
    draw -np 2 "$bin/awp_bench" --n 8 --steps 2 --warmup 0 --modes two-sided \
        --csv "$tmp/png/awp_bench.csv" --png "$tmp/png/awp_bench.png"
    draw -np 2 "$bin/p3dfft_bench" --n 16 --nv 1 --iters 1 --warmup 0 --modes blocking \
        --csv "$tmp/png/p3dfft_bench.csv" --png "$tmp/png/p3dfft_bench.png"
    draw -np 2 "$bin/oc_bench_overlap" --min 1K --max 1K --iters 2 --warmup 0 --budget 0 \
        --csv "$tmp/png/oc_bench_overlap.csv" --png "$tmp/png/oc_bench_overlap.png"
    draw -np 2 "$bin/oc_bench_halo" --n 8 --fields 1 --iters 2 --warmup 0 --budget 0 \
        --csv "$tmp/png/oc_bench_halo.csv" --png "$tmp/png/oc_bench_halo.png"
    for p in awp_run awp_bench p3dfft_bench oc_bench_overlap oc_bench_halo; do
        [ -s "$tmp/png/$p.png" ] || { echo "install check: the installed $p drew no PNG"; exit 1; }
    done
    echo "install check: the installed awp_run, awp_bench, p3dfft_bench, oc_bench_overlap" \
         "and oc_bench_halo draw their PNGs -> ok"
else
    echo "install check: SKIP hello_mpi.c: no mpicc/mpirun"
fi
