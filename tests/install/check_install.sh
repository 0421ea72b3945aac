#!/usr/bin/env bash
# meson install into a scratch prefix, then build and run a one-file program
# with nothing but `pkg-config --cflags --libs offcoll`, and one using the
# MPI helpers (offcoll_mpi.h) with mpicc.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
meson setup "$tmp/build" "$src" --prefix "$tmp/prefix" -Dtests=false -Dmpi=disabled >/dev/null
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
    mpicc -o "$tmp/hello_mpi" "$src/tests/install/hello_mpi.c" $flags
    LD_LIBRARY_PATH=$libdir mpirun -x LD_LIBRARY_PATH -np 2 "$tmp/hello_mpi"
    echo "install check: mpicc hello_mpi.c $flags -> ok"
else
    echo "install check: SKIP hello_mpi.c: no mpicc/mpirun"
fi
