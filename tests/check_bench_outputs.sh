#!/usr/bin/env bash
# check_bench_outputs.sh OUTDIR COMMAND...
#
# Runs a benchmark's smoke run (COMMAND) with --csv OUTDIR/bench.csv and
# --png OUTDIR/bench.png. It must exit 0 and write a CSV of a header and at
# least one row (besides # comments), every row with the header's number of
# fields, and a PNG (SKIP where gnuplot is missing: the benchmark then notes
# it and succeeds).
set -u
out=$1
shift
rm -rf "$out"
mkdir -p "$out"
csv=$out/bench.csv png=$out/bench.png
"$@" --csv "$csv" --png "$png" || { echo "FAIL: exit status $?"; exit 1; }
awk -F, '/^#/ { next }
         ++rows == 1 { n = NF }
         NF != n { print "FAIL: line " NR " has " NF " fields, the header " n; bad = 1 }
         END { if (rows < 2) { print "FAIL: " rows + 0 " lines besides comments"; bad = 1 }
               exit bad }' "$csv" || exit 1
if command -v gnuplot > /dev/null; then
    [ "$(od -An -c -N4 "$png" 2> /dev/null | tr -d ' ')" = "211PNG" ] ||
        { echo "FAIL: $png is missing or not a PNG"; exit 1; }
    echo "CSV ($(grep -vc '^#' "$csv") lines with the header) and PNG written"
else
    echo "SKIP the PNG check: no gnuplot on PATH"
fi
