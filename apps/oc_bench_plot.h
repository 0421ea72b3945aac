/*
 * The PNG of every benchmark and of awp_run's snapshots: one gnuplot run,
 * written so that a failed plot never leaves a blank PNG over a good one.
 * Not part of the library; not thread-safe (it forks gnuplot and waits).
 */
#ifndef OC_BENCH_PLOT_H
#define OC_BENCH_PLOT_H

/* Runs "gnuplot -c SCRIPT DATA PNG EXTRA..." without a shell, so no path
 * needs quoting. SCRIPT is looked for next to the binary (the build tree),
 * then in the installed folder. Every script takes its data file first and
 * its PNG second. gnuplot opens its output before it plots, so it writes a
 * temporary file beside png, renamed over png only when gnuplot succeeded.
 * Returns 0 when png was written; otherwise prints "PROG: note: no PNG ..."
 * with the reason (the caller's run still succeeds). */
int bench_plot(const char *prog, const char *script, const char *data, const char *png,
               const char *const *extra, int nextra);

#endif
