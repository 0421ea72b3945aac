# Draws one wavefield slice written by awp_run (a matrix of values, one
# line per row) as a colour map symmetric about zero: rows along the
# horizontal axis, columns down the vertical one (depth down for x and y
# slices).
#   gnuplot -c plot_awp_snapshot.gp SLICE.dat OUT.png TITLE H ROW_AXIS COLUMN_AXIS
# offcoll @VERSION@ (meson fills this in where it copies the script)

if (ARGC < 2) {
    print "usage: gnuplot -c plot_awp_snapshot.gp SLICE.dat OUT.png [TITLE [H [ROW_AXIS COLUMN_AXIS]]]"
    exit status 2
}
title = ARGC >= 3 ? ARG3 : ARG1
h = ARGC >= 4 ? real(ARG4) : 1.0

if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) {
    set terminal pngcairo size 800,700 noenhanced font "Sans,11"
} else {
    set terminal png size 800,700 noenhanced font "Sans,11"
}
set output ARG2

stats ARG1 matrix using 3 nooutput
m = abs(STATS_min) > abs(STATS_max) ? abs(STATS_min) : abs(STATS_max)
m = m > 0 ? m : 1
set cbrange [-m:m]
set palette defined (0 "#2166ac", 0.5 "#f7f7f7", 1 "#b2182b")
set title title
set xlabel (ARGC >= 5 ? ARG5 : "row") . " (m)"
set ylabel (ARGC >= 6 ? ARG6 : "column") . " (m)"
set yrange [*:*] reverse
set size ratio -1
set autoscale fix
plot ARG1 matrix using ($2 * h):($1 * h):3 with image notitle
