# Plots the CSV of oc_bench_overlap: overlap % and pure-communication latency
# against the block size, one line per implementation.
#   gnuplot -c plot_overlap.gp results.csv results.png ["title"]
# oc_bench_overlap --png runs it; it also works by hand on any of its CSVs.
# offcoll @VERSION@ (meson fills this in where it copies the script)

if (ARGC < 2) {
    print "usage: gnuplot -c plot_overlap.gp CSV PNG [TITLE]"
    exit status 2
}
csv = ARG1
png = ARG2
title = ARGC >= 3 ? ARG3 : "Alltoall overlap (OSU procedure)"

# pngcairo draws smoother lines; plain png (libgd) is the fallback.
if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) {
    set terminal pngcairo size 1500,600 noenhanced font "Sans,11" linewidth 1.5
} else {
    set terminal png size 1500,600 noenhanced font "Sans,11"
}
set output png

set datafile separator ","
# Rows of all implementations interleave: a row of another one (NaN below)
# or an empty field must not break a line.
set datafile missing NaN
set datafile columnheaders

impls = "mpi_blocking mpi_nb oc_inline oc_thread oc_persist"
colour(i) = word("#000000 #1f77b4 #ff7f0e #2ca02c #9467bd", i)
pick(name, col) = strcol(1) eq name ? column(col) : NaN

# Tics at every power of 4, labelled 1, 4, ... 256, 1K, 4K ... 1M, 4M ...
size_label(e) = e >= 30 ? sprintf("%dG", 2**(e - 30)) : e >= 20 ? sprintf("%dM", 2**(e - 20)) : \
                e >= 10 ? sprintf("%dK", 2**(e - 10)) : sprintf("%d", 2**e)
set logscale x 2
set xtics ()
do for [e = 0:32:2] { set xtics add (size_label(e) 2.0**e) }
set xlabel "block per peer (bytes)"
set grid
set key outside right top vertical Left reverse samplen 2

# Overlap applies only to the non-blocking implementations: without a row of
# one (--impl mpi_blocking) that panel would have no point and gnuplot would
# fail, so only the latency is drawn.
stats csv using (strcol(1) ne "mpi_blocking" ? 1 : 0) nooutput
nonblocking_rows = STATS_sum

set multiplot layout 1,(nonblocking_rows > 0 ? 2 : 1) title title font ",13"

if (nonblocking_rows > 0) {
    set title "Overlap (higher is better; dashed: copy bound of this host)"
    set ylabel "overlap %"
    set yrange [0:105]
    plot for [i=2:5] csv using 3:(pick(word(impls, i), "overlap_pct")) \
            with linespoints lw 2 pt 7 ps 0.8 lc rgb colour(i) title word(impls, i), \
         for [i=3:5] csv using 3:(pick(word(impls, i), "bound_pct")) \
            with lines dt 2 lc rgb colour(i) title "bound ".word(impls, i)
}

set title "Pure communication time (start + wait)"
set ylabel "latency (us)"
set logscale y 10
set yrange [*:*]
set format y "%g"
plot for [i=1:5] csv using 3:(pick(word(impls, i), "pure_us")) \
        with linespoints lw 2 pt 7 ps 0.8 lc rgb colour(i) title word(impls, i)

unset multiplot
