/*
 * What the benchmarks share (oc_bench_overlap, oc_bench_halo): start-up and
 * the error exit, the options both take, the calibrated dummy compute of the
 * OSU procedure (DESIGN.md, "How overlap is measured"), reductions over ranks,
 * the timing of a set-up (setup_us) and the iteration budget, the copy time
 * behind the copy bound, the offcoll contexts' tear-down, table and CSV rows,
 * and the end of a run with its gnuplot run. Header-only; not part of the
 * library.
 *
 * The including file defines PROG (its name, for messages) first, calls
 * bench_init, and keeps bench_at current (implementation, phase, what is
 * measured, the round) for every fatal message.
 */
#ifndef OC_BENCH_COMMON_H
#define OC_BENCH_COMMON_H

#ifndef PROG
#error "define PROG (the program's name) before including oc_bench_common.h"
#endif

#include <errno.h>
#include <limits.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "offcoll_mpi.h"

extern char **environ;

#define MIN_TIMED_ITERS 10 /* below this a mean says little, whatever the budget */

/* ---- fatal errors ------------------------------------------------------------ */

static int bench_rank;

/* Where the benchmark is, for every fatal message: " [impl X, phase, what,
 * step N]". The benchmark keeps it current. */
static struct {
    const char *impl, *phase;
    char what[48];    /* the configuration being measured ("block 4096 B"); "" for none */
    const char *step; /* what one timed round is called ("iteration", "exchange") */
    long iter;        /* the round, -1 outside the timed loops */
} bench_at = {"-", "set-up", "", "iteration", -1};

static inline void bench_where(char *buf, size_t len)
{
    int n = snprintf(buf, len, " [impl %s, %s", bench_at.impl, bench_at.phase);
    if (n < (int)len && bench_at.what[0] != '\0')
        n += snprintf(buf + n, len - (size_t)n, ", %s", bench_at.what);
    if (n < (int)len && bench_at.iter >= 0)
        n += snprintf(buf + n, len - (size_t)n, ", %s %ld", bench_at.step, bench_at.iter);
    if (n < (int)len)
        snprintf(buf + n, len - (size_t)n, "]");
}

/* One write, so that the lines of several ranks do not interleave. */
static inline void die(const char *fmt, ...)
{
    char msg[1536];
    int n = snprintf(msg, sizeof(msg), PROG ": rank %d: ", bench_rank);
    va_list ap;
    va_start(ap, fmt);
    n += vsnprintf(msg + n, sizeof(msg) - (size_t)n, fmt, ap);
    va_end(ap);
    if (n < (int)sizeof(msg) - 2)
        bench_where(msg + n, sizeof(msg) - 1 - (size_t)n);
    n = (int)strlen(msg);
    snprintf(msg + n, sizeof(msg) - (size_t)n, "\n");
    fputs(msg, stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1); /* not reached */
}

/* MPI_Init; the rank goes into fatal messages, step names a timed round. */
static inline void bench_init(int *argc, char ***argv, int *rank, int *nranks, const char *step)
{
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, nranks);
    bench_rank = *rank;
    bench_at.step = step;
}

/* main's exit status when the options say not to run (rc: 1 after --help, 2
 * on a bad command line). */
static inline int bench_quit(int rc)
{
    MPI_Finalize();
    return rc == 1 ? 0 : 2;
}

static inline void oc_check(oc_status_t st, const char *call)
{
    if (st != OC_OK)
        die("%s failed: %s: %s", call, oc_status_string(st), oc_last_error());
}

/* The context's statistics; zeros for an implementation without one. */
static inline void bench_stats(oc_context_t *ctx, oc_stats_t *s)
{
    memset(s, 0, sizeof(*s));
    if (ctx != NULL)
        oc_check(oc_context_stats(ctx, s), "oc_context_stats");
}

/* Frees an implementation's team and context, where it has them. */
static inline void bench_oc_close(oc_team_t **team, oc_context_t **ctx)
{
    if (*team != NULL)
        oc_check(oc_team_free(*team), "oc_team_free");
    if (*ctx != NULL)
        oc_check(oc_finalize(*ctx), "oc_finalize");
    *team = NULL;
    *ctx = NULL;
}

/* For the CSV's first line, after "check=...": where each implementation's
 * progress engine ran (name_of(i): implementation i's name), so that a row
 * measured with its thread on the computing CPU can be told from the data. */
static inline void bench_engines(char *buf, size_t size, const char *check, int n,
                                 oc_context_t *(*ctx_of)(int i), const char *(*name_of)(int i))
{
    size_t len = (size_t)snprintf(buf, size, "check=%s engines=\"", check);
    int i;
    for (i = 0; i < n && len < size; i++)
        if (ctx_of(i) != NULL)
            len += (size_t)snprintf(buf + len, size - len, "%s%s: %s",
                                    buf[len - 1] == '"' ? "" : "; ", name_of(i),
                                    oc_context_progress_info(ctx_of(i)));
    if (len < size)
        snprintf(buf + len, size - len, "\"");
}

/* For the header and the CSV: the backend of the first of n implementations
 * with a context (ctx_of(i): implementation i's, NULL without one). */
static inline const char *bench_backend(int n, oc_context_t *(*ctx_of)(int i))
{
    int i;
    for (i = 0; i < n; i++)
        if (ctx_of(i) != NULL)
            return oc_context_backend_info(ctx_of(i));
    return "not used";
}

/* ---- options ------------------------------------------------------------------- */

/* Option errors: every rank parses the same command line, rank 0 says why. */
static inline int opt_error(const char *fmt, ...)
{
    va_list ap;
    if (bench_rank != 0)
        return 2;
    va_start(ap, fmt);
    fputs(PROG ": ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs(" (--help lists the options)\n", stderr);
    va_end(ap);
    return 2;
}

/* An on/off switch ("--check", "--no-check") setting an int of the options. */
typedef struct {
    const char *on, *off;
    size_t offset;
} bench_flag_t;

/* Parses the command line: the switches, --help, and "--name value" pairs,
 * which go to parse_opt (0, or opt_error's 2). 0 to run, 1 after --help, 2 on
 * a bad command line. */
static inline int bench_parse_args(int argc, char **argv, void *opts, const bench_flag_t *flags,
                                   int nflags,
                                   int (*parse_opt)(void *opts, const char *name, const char *v),
                                   void (*usage)(FILE *f))
{
    int i, k, rc = 0;
    for (i = 1; i < argc && rc == 0; i++) {
        const char *a = argv[i];
        for (k = 0; k < nflags; k++)
            if (strcmp(a, flags[k].on) == 0 || strcmp(a, flags[k].off) == 0)
                break;
        if (k < nflags)
            *(int *)((char *)opts + flags[k].offset) = strcmp(a, flags[k].on) == 0;
        else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            if (bench_rank == 0)
                usage(stdout);
            return 1;
        } else if (i + 1 == argc)
            rc = opt_error("%s needs a value", a);
        else
            rc = parse_opt(opts, a, argv[++i]);
    }
    return rc;
}

/* "64", "4K", "1M", "2MiB": 1024-based. 0 when malformed. */
static inline size_t parse_size(const char *s)
{
    char *end;
    unsigned long long v;
    size_t mult = 1;

    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno != 0 || end == s || *s == '-')
        return 0;
    switch (*end) {
    case 'k': case 'K': mult = (size_t)1 << 10; end++; break;
    case 'm': case 'M': mult = (size_t)1 << 20; end++; break;
    case 'g': case 'G': mult = (size_t)1 << 30; end++; break;
    default: break;
    }
    if (mult > 1 && *end == 'i')
        end++;
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end != '\0' || v > SIZE_MAX / mult)
        return 0;
    return (size_t)v * mult;
}

static inline int parse_count(const char *opt, const char *s, long *out)
{
    char *end;
    errno = 0;
    *out = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || *out < 0)
        return opt_error("%s needs a count >= 0, not '%s'", opt, s);
    return 0;
}

static inline int parse_seconds(const char *opt, const char *s, double *out)
{
    char *end;
    *out = strtod(s, &end);
    if (end == s || *end != '\0' || !(*out >= 0))
        return opt_error("%s needs seconds >= 0, not '%s'", opt, s);
    return 0;
}

/* The options every benchmark takes (its opts_t holds them as .common). */
typedef struct {
    long iters, warmup;
    double budget_s;
    const char *csv, *png;
    int check;
} bench_opts_t;

/* Where a benchmark's parse_opt sends every name it does not take itself:
 * one of the common options, or an unknown one. */
static inline int parse_common_opt(bench_opts_t *c, const char *a, const char *v)
{
    if (strcmp(a, "--iters") == 0)
        return parse_count(a, v, &c->iters);
    if (strcmp(a, "--warmup") == 0)
        return parse_count(a, v, &c->warmup);
    if (strcmp(a, "--budget") == 0)
        return parse_seconds(a, v, &c->budget_s);
    if (strcmp(a, "--csv") == 0)
        c->csv = v;
    else if (strcmp(a, "--png") == 0)
        c->png = v;
    else
        return opt_error("unknown option '%s'", a);
    return 0;
}

/* Sets use[i] for every name of the comma-separated list ("all": every one). */
static inline int parse_names(const char *opt, const char *list, const char *const *names,
                              int count, int *use)
{
    char *copy = strdup(list), *save = NULL, *tok;
    int i, rc = 0;
    memset(use, 0, (size_t)count * sizeof(*use));
    for (tok = strtok_r(copy, ",", &save); tok != NULL && rc == 0;
         tok = strtok_r(NULL, ",", &save)) {
        for (i = 0; i < count && strcmp(tok, names[i]) != 0; i++)
            ;
        if (strcmp(tok, "all") == 0)
            for (i = 0; i < count; i++)
                use[i] = 1;
        else if (i < count)
            use[i] = 1;
        else {
            char known[512] = "";
            for (i = 0; i < count; i++)
                snprintf(known + strlen(known), sizeof(known) - strlen(known), "%s, ", names[i]);
            rc = opt_error("%s: unknown implementation '%s' (known: %sall)", opt, tok, known);
        }
    }
    free(copy);
    /* An empty list ("," or "") would run nothing and look like success. */
    for (i = 0; rc == 0 && i < count && !use[i]; i++)
        ;
    if (rc == 0 && i == count)
        rc = opt_error("%s '%s' names no implementation (\"all\" runs every one)", opt, list);
    return rc;
}

/* ---- dummy compute ---------------------------------------------------------------
 * A dependent floating-point chain: CPU-bound, no memory traffic, no MPI or
 * offcoll call inside (as OSU's default), so only a progress thread can move
 * the communication meanwhile.
 */

static volatile double fp_sink = 1.0;

static inline void fp_work(uint64_t n)
{
    double x = fp_sink;
    uint64_t i;
    for (i = 0; i < n; i++)
        x = x * 0.9999999 + 1e-7;
    fp_sink = x;
}

static inline int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Seconds per loop step when every rank runs n steps at once, reps times in a
 * row: the median of CAL_ROUNDS rounds, because cores shared with other
 * virtual machines (or SMT siblings) make single runs vary by 2-4x. */
#define CAL_ROUNDS 5
static inline double fp_rate(uint64_t n, long reps)
{
    double s[CAL_ROUNDS];
    long k;
    int r;
    for (r = 0; r < CAL_ROUNDS; r++) {
        double t;
        MPI_Barrier(MPI_COMM_WORLD);
        t = MPI_Wtime();
        for (k = 0; k < reps; k++)
            fp_work(n);
        s[r] = (MPI_Wtime() - t) / ((double)reps * (double)n);
    }
    qsort(s, CAL_ROUNDS, sizeof(s[0]), cmp_double);
    return s[CAL_ROUNDS / 2];
}

/* A first estimate, from 4 ms runs. */
static inline double fp_calibrate(void)
{
    fp_work((uint64_t)1 << 16);
    return fp_rate((uint64_t)1 << 20, 1);
}

/* Steps that last target seconds in the overlapped phase, measured as that
 * phase runs them: all ranks computing at once in bursts of that length,
 * right before it (OSU likewise sizes its compute per message size).
 * s_per_step is fp_calibrate's estimate. */
static inline uint64_t fp_steps_for(double s_per_step, double target)
{
    uint64_t n = (uint64_t)(target / s_per_step) + 1;
    long reps = target < 1e-3 ? (long)(1e-3 / target) + 1 : 1;
    return (uint64_t)(target / fp_rate(n, reps < 1000 ? reps : 1000) + 0.5);
}

/* ---- reductions, budget, copy time ------------------------------------------------ */

static inline double max_over_ranks(double v)
{
    double m;
    MPI_Allreduce(&v, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return m;
}

/* A collective set-up as the benchmarks' setup_us column times it: every
 * rank starts together, and the slowest rank's time counts.
 * t0 = bench_setup_start(); <set-up>; seconds = bench_setup_end(t0). */
static inline double bench_setup_start(void)
{
    MPI_Barrier(MPI_COMM_WORLD);
    return MPI_Wtime();
}

static inline double bench_setup_end(double t0)
{
    return max_over_ranks(MPI_Wtime() - t0);
}

/* Sums v[0..n) over ranks into rank 0, as means. */
static inline void mean_over_ranks(double *v, int n)
{
    int i, rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Reduce(rank == 0 ? MPI_IN_PLACE : v, v, n, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    for (i = 0; i < n; i++)
        v[i] /= size;
}

/* Iterations that fit the time budget at t_iter each, within [lo, hi]. All
 * ranks pass the same t_iter (a maximum over ranks), so all agree. */
static inline long fit_budget(double budget, double t_iter, long lo, long hi)
{
    double n;
    if (budget <= 0 || t_iter <= 0)
        return hi;
    n = budget / t_iter;
    if (n > (double)hi)
        return hi;
    return n < (double)lo ? (lo < hi ? lo : hi) : (long)n;
}

/* Seconds per call of copy(arg), every rank copying at once as when all
 * cores are busy, after one call that brings the data into the cache; mean
 * over ranks (on rank 0). What the copy bound divides by the pure time. */
static inline double time_copies(void (*copy)(void *arg), void *arg)
{
    double t, target = 2e-3;
    long reps = 0;

    copy(arg);
    MPI_Barrier(MPI_COMM_WORLD);
    t = MPI_Wtime();
    do {
        copy(arg);
        reps++;
    } while (reps < 1000 && (reps < 3 || MPI_Wtime() - t < target));
    t = (MPI_Wtime() - t) / (double)reps;
    mean_over_ranks(&t, 1);
    return t;
}

/* Called through a volatile pointer so that no copy of the loop is elided. */
static void *(*volatile copy_fn)(void *, const void *, size_t) = memcpy;

typedef struct {
    void *dst;
    const void *src;
    size_t bytes;
} memcpy_args_t;

static inline void memcpy_once(void *arg)
{
    memcpy_args_t *a = arg;
    copy_fn(a->dst, a->src, a->bytes);
}

/* Time to memcpy bytes between two buffers of that size (time_copies). */
static inline double copy_time(void *dst, const void *src, size_t bytes)
{
    memcpy_args_t a = {dst, src, bytes};
    return time_copies(memcpy_once, &a);
}

static inline unsigned char *buf_alloc(size_t bytes)
{
    size_t page = 4096, len = (bytes + page - 1) / page * page;
    unsigned char *p = aligned_alloc(page, len > 0 ? len : page);
    if (p == NULL)
        die("cannot allocate %zu bytes", bytes);
    memset(p, 0, len); /* fault the pages in before any timing */
    return p;
}

/* overlap % = max(0, 100 - 100 (overall - compute) / pure). */
static inline double overlap_pct(double pure, double overall, double compute)
{
    double o = 100.0 - 100.0 * (overall - compute) / pure;
    return pure > 0 && o > 0 ? o : 0;
}

/* What this host allows when copy seconds of CPU copying cannot be hidden. */
static inline double bound_pct(double pure, double copy)
{
    double o = 100.0 * (1.0 - copy / pure);
    return pure > 0 && o > 0 ? o : 0;
}

/* ---- table and CSV ------------------------------------------------------------------
 * The columns of the table and of the CSV; the table leaves out those of
 * width 0 and shows a figure that does not apply as "-", the CSV leaves it
 * empty (gnuplot then skips it).
 */

typedef struct {
    const char *table, *csv;
    int width; /* negative: left-aligned */
} column_t;

typedef char field_t[32];

static inline void set_field(field_t f, int applies, int decimals, double v)
{
    if (applies)
        snprintf(f, sizeof(field_t), "%.*f", decimals, v);
    else
        f[0] = '\0';
}

static inline void table_line(const column_t *cols, int n, field_t *f)
{
    int c;
    for (c = 0; c < n; c++)
        if (cols[c].width != 0)
            printf("%s%*s", c > 0 ? " " : "", cols[c].width, f[c][0] ? f[c] : "-");
    printf("\n");
}

static inline void csv_line(FILE *out, int n, field_t *f)
{
    int c;
    for (c = 0; c < n; c++)
        fprintf(out, "%s%s", c > 0 ? "," : "", f[c]);
    fprintf(out, "\n");
}

/* One result: the table line, and the CSV line when there is a CSV. */
static inline void report_line(const column_t *cols, int n, field_t *table, field_t *csv_f,
                               FILE *csv)
{
    table_line(cols, n, table);
    if (csv != NULL) {
        csv_line(csv, n, csv_f);
        fflush(csv);
    }
}

/* The header line of the table (table names) or of the CSV (CSV names). */
static inline void header_fields(const column_t *cols, int n, int table, field_t *f)
{
    int c;
    for (c = 0; c < n; c++)
        snprintf(f[c], sizeof(field_t), "%s", table ? cols[c].table : cols[c].csv);
}

/* A CSV with a comment line (program, ranks, date, host, backend, and extra)
 * and the column names. NULL, with a note, when it cannot be written. */
static inline FILE *csv_open(const char *path, const column_t *cols, int n, int nranks,
                             const char *backend, const char *extra)
{
    char host[256] = "unknown", date[64] = "unknown";
    time_t now = time(NULL);
    struct tm tm;
    field_t f[64];
    FILE *out = fopen(path, "w");

    if (out == NULL) {
        fprintf(stderr, PROG ": cannot write %s: %s\n", path, strerror(errno));
        return NULL;
    }
    gethostname(host, sizeof(host) - 1);
    if (gmtime_r(&now, &tm) != NULL)
        strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", &tm);
    fprintf(out, "# " PROG " ranks=%d date=%s host=%s backend=\"%s\" %s\n", nranks, date, host,
            backend, extra);
    header_fields(cols, n < 64 ? n : 64, 0, f);
    csv_line(out, n < 64 ? n : 64, f);
    return out;
}

/* Rank 0: the CSV the table goes to (csv, or a temporary one in tmp, a
 * mkstemp template, when only a plot is asked); *path says which. */
static inline FILE *open_results(const char *csv, const char *png, char *tmp, const char **path,
                                 const column_t *cols, int n, int nranks, const char *backend,
                                 const char *extra)
{
    *path = csv;
    if (*path == NULL && png != NULL) {
        int fd = mkstemp(tmp);
        if (fd < 0) {
            fprintf(stderr, PROG ": note: no PNG: cannot create %s: %s\n", tmp, strerror(errno));
            return NULL;
        }
        close(fd);
        *path = tmp;
    }
    return *path != NULL ? csv_open(*path, cols, n, nranks, backend, extra) : NULL;
}

/* What open_results leaves for bench_end, which closes and plots it. */
typedef struct {
    FILE *csv;
    const char *path;
    char tmp[sizeof("/tmp/" PROG "_XXXXXX")];
} bench_out_t;

/* open_results for a benchmark with the common options. Rank 0 only. */
static inline void bench_open_results(bench_out_t *out, const bench_opts_t *o,
                                      const column_t *cols, int n, int nranks,
                                      const char *backend, const char *extra)
{
    memcpy(out->tmp, "/tmp/" PROG "_XXXXXX", sizeof(out->tmp));
    out->csv = open_results(o->csv, o->png, out->tmp, &out->path, cols, n, nranks, backend,
                            extra);
}

/* ---- plotting (rank 0, after MPI_Finalize, so no MPI process forks) ---------- */

static inline int readable(const char *path)
{
    return access(path, R_OK) == 0;
}

/* The script name next to the binary (build tree), else installed (a path). */
static inline int find_plot_script(const char *name, const char *installed, char *out,
                                   size_t len)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n > 0) {
        char *slash;
        exe[n] = '\0';
        slash = strrchr(exe, '/');
        if (slash != NULL) {
            *slash = '\0';
            snprintf(out, len, "%s/%s", exe, name);
            if (readable(out))
                return 1;
        }
    }
    snprintf(out, len, "%s", installed);
    return readable(out);
}

/* Runs gnuplot -c script csv png title without a shell, so no path needs
 * quoting. gnuplot opens its output before it plots, so it writes to a
 * temporary name beside png, renamed over png only when gnuplot succeeded:
 * a failed plot leaves no blank PNG and an earlier good one in place.
 * Returns 0 when the PNG was written; notes why not otherwise, and the
 * benchmark still succeeds. */
static inline int plot(const char *name, const char *installed, const char *csv,
                       const char *png, const char *title)
{
    char script[PATH_MAX + 64], tmp[PATH_MAX + 32];
    char *argv[] = {"gnuplot", "-c", script, (char *)csv, tmp, (char *)title, NULL};
    pid_t pid;
    int rc, status;

    if (!find_plot_script(name, installed, script, sizeof(script))) {
        fprintf(stderr, PROG ": note: no PNG: %s is neither next to the binary nor at %s\n",
                name, installed);
        return 1;
    }
    if (snprintf(tmp, sizeof(tmp), "%s.tmp%ld", png, (long)getpid()) >= (int)sizeof(tmp)) {
        fprintf(stderr, PROG ": note: no PNG: the path %s is too long\n", png);
        return 1;
    }
    rc = posix_spawnp(&pid, "gnuplot", NULL, NULL, argv, environ);
    if (rc != 0) {
        fprintf(stderr, PROG ": note: no PNG: cannot run gnuplot (%s)%s\n", strerror(rc),
                rc == ENOENT ? "; install gnuplot-nox (ci/setup does)" : "");
        return 1;
    }
    if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        unlink(tmp);
        fprintf(stderr, PROG ": note: gnuplot failed on %s; no PNG written (%s untouched)\n",
                script, png);
        return 1;
    }
    if (rename(tmp, png) != 0) {
        fprintf(stderr, PROG ": note: no PNG: cannot rename %s to %s: %s\n", tmp, png,
                strerror(errno));
        unlink(tmp);
        return 1;
    }
    return 0;
}

/* main's end on every rank, once the CSV is complete: closes it and MPI (the
 * run began at t0), then rank 0 plots it with the script name (installed as
 * in plot), titled "title on HOST", and says where the results are. Returns
 * main's exit status. */
static inline int bench_end(bench_out_t *out, const bench_opts_t *o, double t0, const char *name,
                            const char *installed, const char *title)
{
    int have_csv = out->csv != NULL;

    if (out->csv != NULL)
        fclose(out->csv);
    if (bench_rank == 0)
        fprintf(stderr, PROG ": done in %.1f s\n", MPI_Wtime() - t0);
    MPI_Finalize();

    if (bench_rank == 0 && have_csv && o->png != NULL) {
        char host[128] = "unknown", full[384];
        gethostname(host, sizeof(host) - 1);
        snprintf(full, sizeof(full), "%s on %s", title, host);
        if (plot(name, installed, out->path, o->png, full) == 0)
            printf("PNG: %s\n", o->png);
    }
    if (bench_rank == 0 && have_csv && o->csv != NULL)
        printf("CSV: %s\n", o->csv);
    if (out->path == out->tmp)
        unlink(out->tmp);
    return 0;
}

#endif
