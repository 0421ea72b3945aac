# Plots the CSV of p3dfft_bench: forward + backward time per variable (left)
# and, for the library's modes, the communication time the transform waited
# for (right); one group of bars per (N, nv), one bar per implementation.
#   gnuplot -c plot_p3dfft.gp results.csv results.png ["title"]
# p3dfft_bench --png runs it. The implementations are listed in the CSV's
# first line (impls="...").
# offcoll @VERSION@ (meson fills this in where it copies the script)

if (ARGC < 2) {
    print "usage: gnuplot -c plot_p3dfft.gp CSV PNG [TITLE]"
    exit status 2
}
csv = ARG1
png = ARG2
title = ARGC >= 3 ? ARG3 : "P3DFFT-compatible 3D FFT"
# The CSV's path goes to the shell in single quotes, each quote in it as '\''
# (the path may hold any character).
q = "'"
shell_quote(s) = q . shell_quote_rest(s) . q
shell_quote_rest(s) = strstrt(s, q) == 0 ? s : \
    s[1:strstrt(s, q) - 1] . q . "\\" . q . q . shell_quote_rest(s[strstrt(s, q) + 1:])
impls = system("sed -n '1s/.*impls=\"\\([^\"]*\\)\".*/\\1/p' " . shell_quote(csv))
if (words(impls) == 0) {
    print "plot_p3dfft.gp: ", csv, " names no implementations in its first line (impls=\"...\")"
    exit status 1
}
n = words(impls)
# the library's modes (FFTW-MPI, always listed last, has no split timers)
nlib = words(impls) - (word(impls, words(impls)) eq "fftw_mpi" ? 1 : 0)

if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) {
    set terminal pngcairo size 1500,600 noenhanced font "Sans,11" linewidth 1.5
} else {
    set terminal png size 1500,600 noenhanced font "Sans,11"
}
set output png

set datafile separator ","
set datafile missing NaN
set datafile columnheaders

colour(i) = word("#000000 #1f77b4 #2ca02c #d62728 #ff7f0e #9467bd #8c564b #e377c2 #17becf", (i - 1) % 9 + 1)
pick(name, col) = strcol(1) eq name ? column(col) : NaN
bw = 0.8 / n
xpos(i) = column("config") + (i - (n + 1) / 2.0) * bw
label(dummy) = sprintf("N=%s nv=%s", strcol("n"), strcol("nv"))

set style fill solid 0.85 border -1
set boxwidth bw * 0.9 absolute
set xtics scale 0
set xrange [-0.6:*]
set autoscale xfixmax
set offsets 0, 0.4, 0, 0
set grid ytics
set key outside right top vertical Left reverse samplen 2
set logscale y 10
set format y "%g"

set multiplot layout 1,2 title title font ",13"

set title "Forward + backward time per variable"
set ylabel "ms per variable"
plot csv using (column("config")):(column("time_ms")):(""):xtic(label(0)) with labels notitle, \
     for [i=1:n] csv using (xpos(i)):(pick(word(impls, i), "time_ms")) \
        with boxes lc rgb colour(i) title word(impls, i)

set title "Time spent in (or waiting for) the transposes"
set ylabel "ms per variable"
plot csv using (column("config")):(column("time_ms")):(""):xtic(label(0)) with labels notitle, \
     for [i=1:nlib] csv using (xpos(i)):(pick(word(impls, i), "comm_ms")) \
        with boxes lc rgb colour(i) title word(impls, i)

unset multiplot
