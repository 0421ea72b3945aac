# Plots the CSV of oc_bench_halo: overlap % (OSU's, the net one and the copy
# bound of this host) and the pure exchange time, one group of bars per configuration (number of
# fields exchanged together), one bar per implementation.
#   gnuplot -c plot_halo.gp results.csv results.png ["title"]
# oc_bench_halo --png runs it; it also works by hand on any of its CSVs.
# offcoll @VERSION@ (meson fills this in where it copies the script)

if (ARGC < 2) {
    print "usage: gnuplot -c plot_halo.gp CSV PNG [TITLE]"
    exit status 2
}
csv = ARG1
png = ARG2
title = ARGC >= 3 ? ARG3 : "Halo exchange overlap (OSU procedure)"

# pngcairo draws smoother lines; plain png (libgd) is the fallback.
if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) {
    set terminal pngcairo size 1500,600 noenhanced font "Sans,11" linewidth 1.5
} else {
    set terminal png size 1500,600 noenhanced font "Sans,11"
}
set output png

set datafile separator ","
# Rows of all implementations interleave: a row of another one (NaN below)
# or an empty field must not break a bar.
set datafile missing NaN
set datafile columnheaders

impls = "mpi_2sided mpi_rma oc_thread oc_loopback oc_inline"
n = words(impls)
colour(i) = word("#000000 #9467bd #2ca02c #d62728 #ff7f0e", i)
pick(name, col) = strcol(1) eq name ? column(col) : NaN
# Bar i of the group of configuration c (0, 1, ...), centred on c; the
# group's label comes from an invisible (empty) label at c.
bw = 0.8 / n
xpos(i) = column("config") + (i - (n + 1) / 2.0) * bw
fields_label(dummy) = sprintf("%s field%s", strcol("fields"), strcol("fields") eq "1" ? "" : "s")

set style fill solid 0.85 border -1
set boxwidth bw * 0.9 absolute
set xtics scale 0
set xrange [-0.6:*]
set autoscale xfixmax
set offsets 0, 0.28, 0, 0
set grid ytics
set key outside right top vertical Left reverse samplen 2

set multiplot layout 1,2 title title font ",13"

set title "Overlap %: OSU (bars), net (triangles), copy bound (hollow)"
set ylabel "overlap %"
set yrange [0:105]
plot csv using (column("config")):(column("overlap_pct")):(""):xtic(fields_label(0)) \
        with labels notitle, \
     for [i=1:n] csv using (xpos(i)):(pick(word(impls, i), "bound_pct")) \
        with boxes fill empty lc rgb colour(i) dt 2 notitle, \
     for [i=1:n] csv using (xpos(i)):(pick(word(impls, i), "overlap_pct")) \
        with boxes lc rgb colour(i) title word(impls, i), \
     for [i=1:n] csv using (xpos(i)):(pick(word(impls, i), "net_overlap_pct")) \
        with points pt 9 ps 1.6 lc rgb "#000000" title (i == 1 ? "net" : "")

set title "Pure exchange time (start + wait of all fields)"
set ylabel "time per exchange (us)"
set logscale y 10
set yrange [*:*]
set format y "%g"
plot csv using (column("config")):(column("pure_us")):(""):xtic(fields_label(0)) \
        with labels notitle, \
     for [i=1:n] csv using (xpos(i)):(pick(word(impls, i), "pure_us")) \
        with boxes lc rgb colour(i) title word(impls, i)

unset multiplot
