#!/usr/bin/env bash
# check_run.sh OUTDIR SCENARIO AWP_RUN MPIEXEC [MPIEXEC ARGS...]
#
# What awp_run writes for a user, end to end: the scenario on 1 rank
# (two-sided) and on 2 ranks (offload, 2x1x1) with snapshots at steps 10 and
# 30 and a progress line every 10 steps. Each run must exit 0 and print where
# its seismograms went and the summary; the seismograms (a header of step,
# time and three velocities per receiver, one row per step, the source felt)
# and the slices (nx rows of nz values) must be the same, byte for byte, on
# both runs. The 1-rank run draws each slice's PNG through gnuplot (SKIP
# where there is none); in the 2-rank run gnuplot cannot write them (a
# folder is in the way), and the run must keep its slices, say so and still
# succeed.
set -u
out=$1 scenario=$2 awp_run=$3
shift 3
mpiexec=("$@")
fails=0

fail() {
    echo "FAIL: $*"
    fails=$((fails + 1))
}

slices="small_layered_w1_y12_step000010 small_layered_w1_y12_step000030"
rm -rf "$out"
# In the 2-rank run a folder stands where each PNG would go: gnuplot fails.
for slice in $slices; do
    mkdir -p "$out/two/$slice.png"
done

# run LABEL NP [key=value...]
run() {
    local label=$1 np=$2 rc needle
    shift 2
    "${mpiexec[@]}" -np "$np" "$awp_run" "$scenario" output="$out/$label" snapshots="10 30" \
        progress=10 "$@" > "$out/$label.stdout" 2> "$out/$label.stderr"
    rc=$?
    [ "$rc" -eq 0 ] || { fail "$label: exit status $rc"; cat "$out/$label.stdout" "$out/$label.stderr"; }
    for needle in "seismograms: $out/$label/small_layered_seismograms.csv" "summary: mode" \
                  "time per step" "communication" "computation"; do
        grep -qF -- "$needle" "$out/$label.stdout" || fail "$label: stdout lacks \"$needle\""
    done
    grep -qF "step 10/30" "$out/$label.stderr" || fail "$label: no progress line at step 10"
}

run one 1 mode=two-sided proc="1 1 1"
run two 2 mode=offload proc="2 1 1"

csv=small_layered_seismograms.csv
# 6 receivers in small_layered.txt: 2 + 18 columns, 30 steps
awk -F, -v want=20 'NR == 1 && ($1 != "step" || $2 != "time_s" || $3 != "r1_vx" || NF != want) {
                        print "header: " $0; bad = 1 }
                    NR > 1 && ($1 != NR - 1 || NF != want) { print "row " NR ": " $0; bad = 1 }
                    NR > 1 { for (i = 3; i <= NF; i++) if ($i + 0 != 0) moved = 1 }
                    END { if (NR != 31) { print NR - 1 " rows, not 30"; bad = 1 }
                          if (!moved) { print "every velocity is 0"; bad = 1 }
                          exit bad }' "$out/one/$csv" || fail "one: $csv is not as described"
cmp -s "$out/one/$csv" "$out/two/$csv" || fail "the seismograms of 1 and 2 ranks differ"

have_gnuplot=1
command -v gnuplot > /dev/null || { have_gnuplot=0; echo "SKIP the PNG checks: no gnuplot on PATH"; }
for slice in $slices; do
    dat=$slice.dat png=$slice.png
    awk 'NF != 24 { bad = 1 } END { exit bad || NR != 24 }' "$out/one/$dat" ||
        fail "one: $dat is not 24 rows of 24 values"
    cmp -s "$out/one/$dat" "$out/two/$dat" || fail "the slices $dat of 1 and 2 ranks differ"
    if [ "$have_gnuplot" = 1 ]; then
        [ "$(od -An -c -N4 "$out/one/$png" 2> /dev/null | tr -d ' ')" = "211PNG" ] ||
            fail "one: $png is missing or not a PNG"
    fi
    [ -d "$out/two/$png" ] || fail "two: $png written where it could not be"
done
grep -qF "no PNG" "$out/two.stderr" || fail "two: no note that the PNGs are missing"
grep -qF "snapshot: " "$out/two.stdout" && fail "two: names a PNG it could not draw"

[ "$fails" -eq 0 ] || exit 1
echo "awp_run: seismograms and slices the same on 1 and 2 ranks, summary and progress printed"
