#include "oc_bench_common.h"
#include "oc_bench_plot.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int bench_rank;
static const char *bench_prog = "benchmark";

bench_where_t bench_at = {"-", "set-up", "", "iteration", -1};

static void bench_where(char *buf, size_t len)
{
    int n = snprintf(buf, len, " [impl %s, %s", bench_at.impl, bench_at.phase);
    if (n < (int)len && bench_at.what[0] != '\0')
        n += snprintf(buf + n, len - (size_t)n, ", %s", bench_at.what);
    if (n < (int)len && bench_at.iter >= 0)
        n += snprintf(buf + n, len - (size_t)n, ", %s %ld", bench_at.step, bench_at.iter);
    if (n < (int)len)
        snprintf(buf + n, len - (size_t)n, "]");
}

void bench_die(const char *fmt, ...)
{
    char msg[1536];
    int n = snprintf(msg, sizeof(msg), "%s: rank %d: ", bench_prog, bench_rank);
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

void bench_init(int *argc, char ***argv, const char *prog, int *rank, int *nranks,
                const char *step)
{
    bench_prog = prog;
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, nranks);
    bench_rank = *rank;
    bench_at.step = step;
}

int bench_quit(int rc)
{
    MPI_Finalize();
    return rc == 1 ? 0 : 2;
}

void bench_check(oc_status_t st, const char *call)
{
    if (st != OC_OK)
        bench_die("%s failed: %s: %s", call, oc_status_string(st), oc_last_error());
}

void bench_stats(oc_context_t *ctx, oc_stats_t *s)
{
    memset(s, 0, sizeof(*s));
    if (ctx != NULL)
        bench_check(oc_context_stats(ctx, s), "oc_context_stats");
}

void bench_oc_close(oc_team_t **team, oc_context_t **ctx)
{
    if (*team != NULL)
        bench_check(oc_team_free(*team), "oc_team_free");
    if (*ctx != NULL)
        bench_check(oc_finalize(*ctx), "oc_finalize");
    *team = NULL;
    *ctx = NULL;
}

void bench_engines(char *buf, size_t size, const char *check, int n,
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

const char *bench_backend(int n, oc_context_t *(*ctx_of)(int i))
{
    int i;
    for (i = 0; i < n; i++)
        if (ctx_of(i) != NULL)
            return oc_context_backend_info(ctx_of(i));
    return "not used";
}

/* ---- options ------------------------------------------------------------------- */

int bench_opt_error(const char *fmt, ...)
{
    va_list ap;
    if (bench_rank != 0)
        return 2;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", bench_prog);
    vfprintf(stderr, fmt, ap);
    fputs(" (--help lists the options)\n", stderr);
    va_end(ap);
    return 2;
}

int bench_same_args(const char *prog, int argc, char **argv)
{
    uint64_t h = 14695981039346656037ull, h0; /* FNV-1a of the arguments, each with its NUL */
    int i, rank, differs, first = -1;
    for (i = 1; i < argc; i++) {
        const char *p = argv[i];
        do
            h = (h ^ (unsigned char)*p) * 1099511628211ull;
        while (*p++ != '\0');
    }
    h0 = h;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Bcast(&h0, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    differs = h != h0 ? rank : INT_MAX;
    MPI_Allreduce(&differs, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (first != INT_MAX && rank == 0)
        fprintf(stderr, "%s: rank %d was given other options than rank 0; every rank must be "
                "given the same\n", prog, first);
    return first == INT_MAX;
}

int bench_parse_args(int argc, char **argv, void *opts, const bench_flag_t *flags, int nflags,
                     int (*parse_opt)(void *opts, const char *name, const char *v),
                     void (*usage)(FILE *f))
{
    int i, k, rc = 0;
    if (!bench_same_args(bench_prog, argc, argv))
        return 2;
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
        } else if (i + 1 == argc) /* not a switch: an option missing its value, or none */
            rc = bench_opt_error("'%s' without a value: options are switches or '--name value'", a);
        else
            rc = parse_opt(opts, a, argv[++i]);
    }
    return rc;
}

size_t bench_parse_size(const char *s)
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

int bench_parse_count(const char *opt, const char *s, long *out)
{
    char *end;
    errno = 0;
    *out = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || *out < 0)
        return bench_opt_error("%s needs a count >= 0, not '%s'", opt, s);
    return 0;
}

static int parse_seconds(const char *opt, const char *s, double *out)
{
    char *end;
    *out = strtod(s, &end);
    if (end == s || *end != '\0' || !(*out >= 0))
        return bench_opt_error("%s needs seconds >= 0, not '%s'", opt, s);
    return 0;
}

int bench_parse_common_opt(bench_opts_t *c, const char *a, const char *v)
{
    if (strcmp(a, "--iters") == 0)
        return bench_parse_count(a, v, &c->iters);
    if (strcmp(a, "--warmup") == 0)
        return bench_parse_count(a, v, &c->warmup);
    if (strcmp(a, "--budget") == 0)
        return parse_seconds(a, v, &c->budget_s);
    if (strcmp(a, "--csv") == 0)
        c->csv = v;
    else if (strcmp(a, "--png") == 0)
        c->png = v;
    else
        return bench_opt_error("unknown option '%s'", a);
    return 0;
}

int bench_parse_names(const char *opt, const char *list, const char *const *names, int count,
                      int *use)
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
            rc = bench_opt_error("%s: unknown implementation '%s' (known: %sall)", opt, tok, known);
        }
    }
    free(copy);
    /* An empty list ("," or "") would run nothing and look like success. */
    for (i = 0; rc == 0 && i < count && !use[i]; i++)
        ;
    if (rc == 0 && i == count)
        rc = bench_opt_error("%s '%s' names no implementation (\"all\" runs every one)", opt, list);
    return rc;
}

/* ---- dummy compute -------------------------------------------------------------- */

static volatile double fp_sink = 1.0;

void bench_fp_work(uint64_t n)
{
    double x = fp_sink;
    uint64_t i;
    for (i = 0; i < n; i++)
        x = x * 0.9999999 + 1e-7;
    fp_sink = x;
}

int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Seconds per loop step when every rank runs n steps at once, reps times in a
 * row: the median of CAL_ROUNDS rounds, because cores shared with other
 * virtual machines (or SMT siblings) make single runs vary by 2-4x. */
#define CAL_ROUNDS 5
static double fp_rate(uint64_t n, long reps)
{
    double s[CAL_ROUNDS];
    long k;
    int r;
    for (r = 0; r < CAL_ROUNDS; r++) {
        double t;
        MPI_Barrier(MPI_COMM_WORLD);
        t = MPI_Wtime();
        for (k = 0; k < reps; k++)
            bench_fp_work(n);
        s[r] = (MPI_Wtime() - t) / ((double)reps * (double)n);
    }
    qsort(s, CAL_ROUNDS, sizeof(s[0]), bench_cmp_double);
    return s[CAL_ROUNDS / 2];
}

/* A first estimate, from 4 ms runs. */
double bench_fp_calibrate(void)
{
    bench_fp_work((uint64_t)1 << 16);
    return fp_rate((uint64_t)1 << 20, 1);
}

uint64_t bench_fp_steps_for(double s_per_step, double target)
{
    uint64_t n = (uint64_t)(target / s_per_step) + 1;
    long reps = target < 1e-3 ? (long)(1e-3 / target) + 1 : 1;
    return (uint64_t)(target / fp_rate(n, reps < 1000 ? reps : 1000) + 0.5);
}

/* ---- reductions, budget, copy time ------------------------------------------------ */

double bench_max_over_ranks(double v)
{
    double m;
    MPI_Allreduce(&v, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return m;
}

double bench_setup_start(void)
{
    MPI_Barrier(MPI_COMM_WORLD);
    return MPI_Wtime();
}

double bench_setup_end(double t0)
{
    return bench_max_over_ranks(MPI_Wtime() - t0);
}

void bench_mean_over_ranks(double *v, int n)
{
    int i, rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Reduce(rank == 0 ? MPI_IN_PLACE : v, v, n, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    for (i = 0; i < n; i++)
        v[i] /= size;
}

long bench_fit_budget(double budget, double t_iter, long lo, long hi)
{
    double n;
    if (budget <= 0 || t_iter <= 0)
        return hi;
    n = budget / t_iter;
    if (n > (double)hi)
        return hi;
    return n < (double)lo ? (lo < hi ? lo : hi) : (long)n;
}

double bench_time_copies(void (*copy)(void *arg), void *arg)
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
    bench_mean_over_ranks(&t, 1);
    return t;
}

/* Called through a volatile pointer so that no copy of the loop is elided. */
static void *(*volatile copy_fn)(void *, const void *, size_t) = memcpy;

typedef struct {
    void *dst;
    const void *src;
    size_t bytes;
} memcpy_args_t;

static void memcpy_once(void *arg)
{
    memcpy_args_t *a = arg;
    copy_fn(a->dst, a->src, a->bytes);
}

double bench_copy_time(void *dst, const void *src, size_t bytes)
{
    memcpy_args_t a = {dst, src, bytes};
    return bench_time_copies(memcpy_once, &a);
}

unsigned char *bench_buf_alloc(size_t bytes)
{
    size_t page = 4096, len = (bytes + page - 1) / page * page;
    unsigned char *p = aligned_alloc(page, len > 0 ? len : page);
    if (p == NULL)
        bench_die("cannot allocate %zu bytes", bytes);
    memset(p, 0, len); /* fault the pages in before any timing */
    return p;
}

double bench_overlap_pct(double pure, double overall, double compute)
{
    double o = 100.0 - 100.0 * (overall - compute) / pure;
    return pure > 0 && o > 0 ? o : 0;
}

double bench_bound_pct(double pure, double copy)
{
    double o = 100.0 * (1.0 - copy / pure);
    return pure > 0 && o > 0 ? o : 0;
}

/* ---- table and CSV ------------------------------------------------------------------ */

void bench_set_field(bench_field_t f, int applies, int decimals, double v)
{
    if (applies)
        snprintf(f, sizeof(bench_field_t), "%.*f", decimals, v);
    else
        f[0] = '\0';
}

static void table_line(const bench_column_t *cols, int n, bench_field_t *f)
{
    int c;
    for (c = 0; c < n; c++)
        if (cols[c].width != 0)
            printf("%s%*s", c > 0 ? " " : "", cols[c].width, f[c][0] ? f[c] : "-");
    printf("\n");
}

static void csv_line(FILE *out, int n, bench_field_t *f)
{
    int c;
    for (c = 0; c < n; c++)
        fprintf(out, "%s%s", c > 0 ? "," : "", f[c]);
    fprintf(out, "\n");
}

void bench_report_line(const bench_column_t *cols, int n, bench_field_t *table,
                       bench_field_t *csv_f, FILE *csv)
{
    table_line(cols, n, table);
    if (csv != NULL) {
        csv_line(csv, n, csv_f);
        fflush(csv);
    }
}

/* The most columns a header line shows. */
#define MAX_COLUMNS 64

/* The column names of the table (table: 1) or of the CSV, in f[MAX_COLUMNS];
 * how many (n, at most MAX_COLUMNS). */
static int header_fields(const bench_column_t *cols, int n, int table, bench_field_t *f)
{
    int c;
    if (n > MAX_COLUMNS)
        n = MAX_COLUMNS;
    for (c = 0; c < n; c++)
        snprintf(f[c], sizeof(bench_field_t), "%s", table ? cols[c].table : cols[c].csv);
    return n;
}

void bench_table_header(const bench_column_t *cols, int n)
{
    bench_field_t f[MAX_COLUMNS];
    n = header_fields(cols, n, 1, f);
    table_line(cols, n, f);
}

/* A CSV with a comment line (program, ranks, date, host, backend, and extra)
 * and the column names. NULL, with a note, when it cannot be written. */
static FILE *csv_open(const char *path, const bench_column_t *cols, int n, int nranks,
                      const char *backend, const char *extra)
{
    char host[256] = "unknown", date[64] = "unknown";
    time_t now = time(NULL);
    struct tm tm;
    bench_field_t f[MAX_COLUMNS];
    FILE *out = fopen(path, "w");

    if (out == NULL)
        return NULL;
    gethostname(host, sizeof(host) - 1);
    if (gmtime_r(&now, &tm) != NULL)
        strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", &tm);
    fprintf(out, "# %s ranks=%d date=%s host=%s backend=\"%s\" %s\n", bench_prog, nranks, date,
            host, backend, extra);
    n = header_fields(cols, n, 0, f);
    csv_line(out, n, f);
    return out;
}

void bench_open_results(bench_out_t *out, const char *csv, const char *png,
                        const bench_column_t *cols, int n, int nranks, const char *backend,
                        const char *extra)
{
    out->csv_name = csv;
    out->png = png;
    out->path = csv;
    if (csv == NULL && png != NULL) {
        int fd;
        snprintf(out->tmp, sizeof(out->tmp), "/tmp/%.40s_XXXXXX", bench_prog);
        if ((fd = mkstemp(out->tmp)) < 0) {
            fprintf(stderr, "%s: note: no PNG: cannot create %s: %s\n", bench_prog, out->tmp,
                    strerror(errno));
            return;
        }
        close(fd);
        out->path = out->tmp;
    }
    if (out->path == NULL)
        return;
    out->csv = csv_open(out->path, cols, n, nranks, backend, extra);
    /* a run whose results cannot be kept is not worth its time */
    if (out->csv == NULL && csv != NULL)
        bench_die("--csv %s: cannot write it: %s", csv, strerror(errno));
    if (out->csv == NULL)
        fprintf(stderr, "%s: note: no PNG: cannot write %s: %s\n", bench_prog, out->path,
                strerror(errno));
}

int bench_end(bench_out_t *out, double t0, const char *script, const char *title)
{
    int have_csv = out->csv != NULL;

    if (out->csv != NULL)
        fclose(out->csv);
    if (bench_rank == 0)
        fprintf(stderr, "%s: done in %.1f s\n", bench_prog, MPI_Wtime() - t0);
    /* Plotting forks gnuplot: after MPI_Finalize, so that no MPI process forks. */
    MPI_Finalize();

    if (bench_rank == 0 && have_csv && out->png != NULL) {
        char host[128] = "unknown", full[384];
        gethostname(host, sizeof(host) - 1);
        snprintf(full, sizeof(full), "%s on %s", title, host);
        const char *const extra[] = {full};
        if (bench_plot(bench_prog, script, out->path, out->png, extra, 1) == 0)
            printf("PNG: %s\n", out->png);
    }
    if (bench_rank == 0 && have_csv && out->csv_name != NULL)
        printf("CSV: %s\n", out->csv_name);
    if (out->path == out->tmp)
        unlink(out->tmp);
    return 0;
}
