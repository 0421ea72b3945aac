# Plots the CSV of awp_bench: per configuration (ranks, cells per rank) one
# bar per mode, split into computation (solid) and the communication the
# application sees (light); the label on top is the median time per step.
#   gnuplot -c plot_awp_bench.gp results.csv results.png ["title"]
# offcoll @VERSION@ (meson fills this in where it copies the script)

if (ARGC < 2) {
    print "usage: gnuplot -c plot_awp_bench.gp CSV PNG [TITLE]"
    exit status 2
}
csv = ARG1
title = ARGC >= 3 ? ARG3 : "AWP-ODC kernel: time per step by exchange mode"

if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) {
    set terminal pngcairo size 1100,600 noenhanced font "Sans,11"
} else {
    set terminal png size 1100,600 noenhanced font "Sans,11"
}
set output ARG2
set datafile separator ","
set datafile columnheaders

# Only the modes the CSV has (awp_bench --modes): a labels plot without a
# single point crashes gnuplot 5.4.
modes = ""
do for [m in "two-sided offload rma empty"] {
    stats csv using (strcol("mode") eq m ? 1 : 0) nooutput
    if (STATS_sum > 0) { modes = modes . " " . m }
}
n = words(modes)
if (n == 0) {
    print "plot_awp_bench.gp: no rows of a known mode in ", csv
    exit status 1
}
# a mode keeps its colours whichever modes are present
known(i) = word(modes, i) eq "two-sided" ? 1 : word(modes, i) eq "offload" ? 2 : \
           word(modes, i) eq "rma" ? 3 : 4
colour(i) = word("#4d4d4d #2ca02c #6a51a3 #d95f02", known(i))
light(i) = word("#bdbdbd #a1d99b #bcbddc #fdd0a2", known(i))
pick(name, col) = strcol("mode") eq name ? column(col) : NaN
bw = 0.8 / n
xpos(i) = column("config") + (i - (n + 1) / 2.0) * bw

set style fill solid 0.9 border -1
set boxwidth bw * 0.9 absolute
set xtics scale 0
set xrange [-0.6:*]
set autoscale xfixmax
set offsets 0, 0.6, 0, 0
set yrange [0:*]
set grid ytics
set ylabel "time per step (ms), mean over ranks"
set key outside right top vertical Left reverse
set title title

plot csv using (column("config")):(0):(""):xtic(strcol("label")) with labels notitle, \
     for [i=1:n] csv using (xpos(i)):(pick(word(modes, i), "step_ms_mean")) \
        with boxes lc rgb light(i) title word(modes, i) . ": communication seen", \
     for [i=1:n] csv using (xpos(i)):(pick(word(modes, i), "compute_ms")) \
        with boxes lc rgb colour(i) title word(modes, i) . ": computation", \
     for [i=1:n] csv using (xpos(i)):(pick(word(modes, i), "step_ms_mean")): \
        (sprintf("%.3g", pick(word(modes, i), "step_ms_median"))) \
        with labels offset 0,0.7 notitle
