/*
 * What the MPI benchmarks share (oc_bench_overlap, oc_bench_halo,
 * p3dfft_bench): start-up and the error exit, option parsing, the calibrated
 * dummy compute of the OSU procedure (DESIGN.md, "How overlap is measured"),
 * reductions over ranks, the timing of a set-up (setup_us) and the iteration
 * budget, the copy time behind the copy bound, the offcoll contexts'
 * tear-down, table and CSV rows, and the end of a run with its plot. Not
 * part of the library; every call is for the benchmark's main thread.
 *
 * A benchmark calls bench_init first and keeps bench_at current
 * (implementation, phase, what is measured, the round) for every fatal
 * message. Calls that reduce over ranks are collective over MPI_COMM_WORLD.
 */
#ifndef OC_BENCH_COMMON_H
#define OC_BENCH_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "offcoll_mpi.h"

#define BENCH_MIN_TIMED_ITERS 10 /* below this a mean says little, whatever the budget */

/* ---- start, end, fatal errors ------------------------------------------------- */

/* Where the benchmark is, for every fatal message: " [impl X, phase, what,
 * step N]". The benchmark keeps it current. */
typedef struct {
    const char *impl, *phase;
    char what[48];    /* the configuration being measured ("block 4096 B"); "" for none */
    const char *step; /* what one timed round is called ("iteration", "exchange") */
    long iter;        /* the round, -1 outside the timed loops */
} bench_where_t;
extern bench_where_t bench_at;

/* MPI_Init; prog names the program in every message, the rank goes into
 * fatal messages, step names a timed round. */
void bench_init(int *argc, char ***argv, const char *prog, int *rank, int *nranks,
                const char *step);

/* main's exit status when the options say not to run (rc: 1 after --help, 2
 * on a bad command line), after MPI_Finalize. */
int bench_quit(int rc);

/* "PROG: rank R: <message> [where]" in one write, so that the lines of
 * several ranks do not interleave; then MPI_Abort. */
void bench_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* bench_die with oc_last_error() unless st is OC_OK. */
void bench_check(oc_status_t st, const char *call);

/* The context's statistics; zeros for an implementation without one (NULL). */
void bench_stats(oc_context_t *ctx, oc_stats_t *s);

/* Frees an implementation's team and context where it has them; NULLs both. */
void bench_oc_close(oc_team_t **team, oc_context_t **ctx);

/* For the CSV's first line, after "check=...": where each implementation's
 * progress engine ran (name_of(i): implementation i's name), so that a row
 * measured with its thread on the computing CPU can be told from the data. */
void bench_engines(char *buf, size_t size, const char *check, int n,
                   oc_context_t *(*ctx_of)(int i), const char *(*name_of)(int i));

/* The backend of the first of n implementations with a context (ctx_of(i):
 * implementation i's, NULL without one); "not used" when none has one. */
const char *bench_backend(int n, oc_context_t *(*ctx_of)(int i));

/* ---- options ----------------------------------------------------------------- */

/* Every rank parses the same command line; rank 0 prints "PROG: <message>
 * (--help lists the options)". Returns 2, the exit status of a bad line. */
int bench_opt_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Collective: whether every rank of MPI_COMM_WORLD was given rank 0's
 * command line (an MPMD launch may give each its own); if not, rank 0 says
 * which rank differs. Ranks that parsed different options would wait for
 * each other in different collectives, or fail on a bad value alone. */
int bench_same_args(const char *prog, int argc, char **argv);

/* An on/off switch ("--check", "--no-check") setting an int of the options. */
typedef struct {
    const char *on, *off;
    size_t offset;
} bench_flag_t;

/* Collective: parses the command line, once bench_same_args has found it the
 * same on every rank: the switches, --help (rank 0 prints usage), and
 * "--name value" pairs, which go to parse_opt (0, or bench_opt_error's 2).
 * 0 to run, 1 after --help, 2 on a bad command line. */
int bench_parse_args(int argc, char **argv, void *opts, const bench_flag_t *flags, int nflags,
                     int (*parse_opt)(void *opts, const char *name, const char *v),
                     void (*usage)(FILE *f));

/* "64", "4K", "1M", "2MiB": 1024-based. 0 when malformed. */
size_t bench_parse_size(const char *s);

/* A count >= 0 for option opt; else bench_opt_error's 2. */
int bench_parse_count(const char *opt, const char *s, long *out);

/* The options every overlap benchmark takes (its opts_t holds them as .common). */
typedef struct {
    long iters, warmup;
    double budget_s;
    const char *csv, *png;
    int check;
} bench_opts_t;

/* Where a benchmark's parse_opt sends every name it does not take itself:
 * one of the common options, or an unknown one. */
int bench_parse_common_opt(bench_opts_t *c, const char *name, const char *v);

/* Sets use[i] for every one of the count names in the comma-separated list
 * ("all": every one); refuses an unknown name and a list that names none. */
int bench_parse_names(const char *opt, const char *list, const char *const *names, int count,
                      int *use);

/* ---- dummy compute --------------------------------------------------------------
 * A dependent floating-point chain: CPU-bound, no memory traffic, no MPI or
 * offcoll call inside (as OSU's default), so only a progress thread can move
 * the communication meanwhile.
 */

void bench_fp_work(uint64_t steps);

/* A first estimate of seconds per step, every rank computing at once. */
double bench_fp_calibrate(void);

/* Steps that last target seconds in the overlapped phase, measured as that
 * phase runs them: all ranks computing at once in bursts of that length
 * (OSU likewise sizes its compute per message size). s_per_step is
 * bench_fp_calibrate's estimate. */
uint64_t bench_fp_steps_for(double s_per_step, double target);

/* ---- reductions, budget, copy time ------------------------------------------------ */

double bench_max_over_ranks(double v);

/* v[0..n) summed over ranks into rank 0, as means. */
void bench_mean_over_ranks(double *v, int n);

/* qsort's order of doubles. */
int bench_cmp_double(const void *a, const void *b);

/* A collective set-up as the setup_us columns time it: every rank starts
 * together, and the slowest rank's time counts.
 * t0 = bench_setup_start(); <set-up>; seconds = bench_setup_end(t0). */
double bench_setup_start(void);
double bench_setup_end(double t0);

/* Iterations that fit the time budget at t_iter each, within [lo, hi]. All
 * ranks pass the same t_iter (a maximum over ranks), so all agree. */
long bench_fit_budget(double budget, double t_iter, long lo, long hi);

/* Seconds per call of copy(arg), every rank copying at once as when all
 * cores are busy, after one call that brings the data into the cache; the
 * mean over ranks (on rank 0). What the copy bound divides by the pure time. */
double bench_time_copies(void (*copy)(void *arg), void *arg);

/* bench_time_copies of a memcpy of bytes from src to dst. */
double bench_copy_time(void *dst, const void *src, size_t bytes);

/* Zeroed page-aligned memory, its pages faulted in before any timing;
 * bench_die when there is none. The caller frees it. */
unsigned char *bench_buf_alloc(size_t bytes);

/* overlap % = max(0, 100 - 100 (overall - compute) / pure). */
double bench_overlap_pct(double pure, double overall, double compute);

/* What this host allows when copy seconds of CPU copying cannot be hidden. */
double bench_bound_pct(double pure, double copy);

/* ---- table and CSV ------------------------------------------------------------------
 * The columns of the table and of the CSV; the table leaves out those of
 * width 0 and shows a figure that does not apply as "-", the CSV leaves it
 * empty (gnuplot then skips it).
 */

typedef struct {
    const char *table, *csv;
    int width; /* negative: left-aligned */
} bench_column_t;

typedef char bench_field_t[32];

/* v with that many decimals, or empty when it does not apply. */
void bench_set_field(bench_field_t f, int applies, int decimals, double v);

/* The table's header line: the columns' table names (the first 64). */
void bench_table_header(const bench_column_t *cols, int n);

/* The CSV and PNG of a run, from bench_open_results to bench_end. Zero it on
 * every rank; only rank 0 opens one. */
typedef struct {
    FILE *csv;        /* NULL: no CSV (none asked, or it could not be written) */
    const char *path; /* the CSV written: the user's, or tmp when only a PNG is asked */
    const char *csv_name, *png; /* as asked; NULL for none */
    char tmp[64];
} bench_out_t;

/* Rank 0: opens csv (or a temporary one when only png is asked) with a
 * comment line (program, ranks, date, host, backend, extra) and the column
 * names. A csv that cannot be written ends the run (bench_die, naming
 * --csv); a temporary one costs only the PNG (a note, out->csv NULL). */
void bench_open_results(bench_out_t *out, const char *csv, const char *png,
                        const bench_column_t *cols, int n, int nranks, const char *backend,
                        const char *extra);

/* One result: the table line, and the CSV line when there is a CSV. */
void bench_report_line(const bench_column_t *cols, int n, bench_field_t *table,
                       bench_field_t *csv_f, FILE *csv);

/* main's end on every rank, once the CSV is complete: closes it and MPI (the
 * run began at t0), then rank 0 plots it with script (bench_plot), titled
 * "title on HOST", and says where the results are. Returns main's exit
 * status. */
int bench_end(bench_out_t *out, double t0, const char *script, const char *title);

#endif
