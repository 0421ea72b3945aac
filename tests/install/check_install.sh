#!/usr/bin/env bash
# meson install into a scratch prefix, then build and run a one-file program
# with nothing but `pkg-config --cflags --libs offcoll`.
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
LD_LIBRARY_PATH=$(dirname "$(find "$tmp/prefix" -name 'liboffcoll.so' | head -1)") "$tmp/hello"
echo "install check: cc hello.c $flags -> ok"
