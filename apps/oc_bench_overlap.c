/*
 * oc_bench_overlap: how much of an Alltoall hides behind computation, by the
 * OSU non-blocking-collective procedure (DESIGN.md, "How overlap is
 * measured"), for four implementations side by side in one run:
 *
 *   mpi_blocking  MPI_Alltoall (overlap not applicable: its latency only)
 *   mpi_nb        MPI_Ialltoall + MPI_Wait
 *   oc_inline     offcoll, progress only inside oc_wait (host-based baseline)
 *   oc_thread     offcoll, sleeping progress thread
 *
 * Per block size and implementation: pure communication time T_comm
 * (start + wait), then start + calibrated CPU-bound compute lasting T_comm +
 * wait, overlap = max(0, 100 - 100 (T_overall - T_compute) / T_comm), all
 * times averaged over ranks. Beside it: the bound this host allows when every
 * byte must be copied by a CPU (1 - T_memcpy / T_comm), the progress thread's
 * CPU time and the task lists and wake-ups per iteration. Every iteration's
 * received data is checked, outside the timed interval.
 */
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

#ifndef OC_PLOT_SCRIPT_INSTALLED
#define OC_PLOT_SCRIPT_INSTALLED "/usr/local/share/offcoll/plot_overlap.gp"
#endif
#define PLOT_SCRIPT_NAME "plot_overlap.gp"

#define PROG "oc_bench_overlap"
#define MIN_TIMED_ITERS 10 /* below this a mean says little, whatever the budget */
#define STAMP_BYTES 8      /* one 64-bit stamp */
#define STAMP_STRIDE 4096  /* a stamp per page: a lost fragment is at least that long */
#define POISON 0xA5

extern char **environ;

/* ---- implementations ------------------------------------------------------ */

enum { IMPL_MPI_BLOCKING, IMPL_MPI_NB, IMPL_OC_INLINE, IMPL_OC_THREAD, IMPL_COUNT };

typedef struct impl impl_t;
struct impl {
    const char *name;
    int nonblocking;            /* the overlapped phase applies */
    int offcoll;                /* oc_progress_mode_t below is meaningful */
    oc_progress_mode_t mode;
    void (*start)(impl_t *im, const void *sbuf, void *rbuf, size_t block);
    void (*wait)(impl_t *im);
    oc_context_t *ctx;
    oc_team_t *team;
    oc_request_t *oreq;
    MPI_Request mreq;
    oc_alg_t alg;               /* what offcoll chose for the last start */
};

/* Where the benchmark is, for every error message. */
static struct {
    int rank;
    const char *impl, *phase;
    size_t block;
    long iter;
} where = {0, "-", "set-up", 0, -1};

/* One write, so that the lines of several ranks do not interleave. */
static void die(const char *fmt, ...)
{
    char msg[1536];
    int n = snprintf(msg, sizeof(msg), PROG ": rank %d: ", where.rank);
    va_list ap;
    va_start(ap, fmt);
    n += vsnprintf(msg + n, sizeof(msg) - (size_t)n, fmt, ap);
    va_end(ap);
    if (n < (int)sizeof(msg))
        n += snprintf(msg + n, sizeof(msg) - (size_t)n, " [impl %s, %s", where.impl, where.phase);
    if (n < (int)sizeof(msg) && where.block > 0)
        n += snprintf(msg + n, sizeof(msg) - (size_t)n, ", block %zu B", where.block);
    if (n < (int)sizeof(msg) && where.iter >= 0)
        n += snprintf(msg + n, sizeof(msg) - (size_t)n, ", iteration %ld", where.iter);
    if (n < (int)sizeof(msg))
        snprintf(msg + n, sizeof(msg) - (size_t)n, "]\n");
    fputs(msg, stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1); /* not reached */
}

static void oc_check(oc_status_t st, const char *call)
{
    if (st != OC_OK)
        die("%s failed: %s: %s", call, oc_status_string(st), oc_last_error());
}

static void mpi_blocking_start(impl_t *im, const void *sbuf, void *rbuf, size_t block)
{
    (void)im;
    MPI_Alltoall(sbuf, (int)block, MPI_BYTE, rbuf, (int)block, MPI_BYTE, MPI_COMM_WORLD);
}

static void mpi_blocking_wait(impl_t *im)
{
    (void)im;
}

static void mpi_nb_start(impl_t *im, const void *sbuf, void *rbuf, size_t block)
{
    MPI_Ialltoall(sbuf, (int)block, MPI_BYTE, rbuf, (int)block, MPI_BYTE, MPI_COMM_WORLD,
                  &im->mreq);
}

static void mpi_nb_wait(impl_t *im)
{
    MPI_Wait(&im->mreq, MPI_STATUS_IGNORE);
}

static void oc_start_a2a(impl_t *im, const void *sbuf, void *rbuf, size_t block)
{
    oc_check(oc_ialltoall(im->team, sbuf, rbuf, block, &im->oreq), "oc_ialltoall");
    im->alg = oc_request_alg(im->oreq);
}

/* Freeing belongs to completion, as MPI_Wait frees a non-blocking request. */
static void oc_wait_a2a(impl_t *im)
{
    oc_check(oc_wait(im->oreq), "oc_wait");
    oc_check(oc_request_free(im->oreq), "oc_request_free");
    im->oreq = NULL;
}

static impl_t impls[IMPL_COUNT] = {
    [IMPL_MPI_BLOCKING] = {.name = "mpi_blocking", .start = mpi_blocking_start,
                           .wait = mpi_blocking_wait},
    [IMPL_MPI_NB] = {.name = "mpi_nb", .nonblocking = 1, .start = mpi_nb_start,
                     .wait = mpi_nb_wait},
    [IMPL_OC_INLINE] = {.name = "oc_inline", .nonblocking = 1, .offcoll = 1,
                        .mode = OC_PROGRESS_INLINE, .start = oc_start_a2a, .wait = oc_wait_a2a},
    [IMPL_OC_THREAD] = {.name = "oc_thread", .nonblocking = 1, .offcoll = 1,
                        .mode = OC_PROGRESS_THREAD, .start = oc_start_a2a, .wait = oc_wait_a2a},
};

static void impl_open(impl_t *im)
{
    oc_config_t cfg;
    if (!im->offcoll)
        return;
    where.impl = im->name;
    oc_check(oc_config_init(&cfg), "oc_config_init");
    cfg.progress = im->mode;
    oc_check(oc_init(&cfg, &im->ctx), "oc_init");
    oc_check(oc_team_create_mpi(im->ctx, MPI_COMM_WORLD, &im->team), "oc_team_create_mpi");
    where.impl = "-";
}

static void impl_close(impl_t *im)
{
    if (im->team != NULL)
        oc_check(oc_team_free(im->team), "oc_team_free");
    if (im->ctx != NULL)
        oc_check(oc_finalize(im->ctx), "oc_finalize");
    im->team = NULL;
    im->ctx = NULL;
}

/* ---- options ---------------------------------------------------------------- */

typedef struct {
    size_t min, max;
    long iters, warmup;
    double budget_s;
    const char *csv, *png;
    int check;
    int use[IMPL_COUNT];
} opts_t;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: " PROG " [options]\n"
            "  --min SIZE      smallest block per peer (default 1; suffixes K, M, G)\n"
            "  --max SIZE      largest block per peer (default 1M); sizes double\n"
            "  --iters N       timed iterations per phase at most (default 1000)\n"
            "  --warmup N      warm-up iterations at most (default 100)\n"
            "  --budget S      seconds per timed phase that set fewer iterations for\n"
            "                  large sizes (default 0.25; 0 = always --iters)\n"
            "  --impl LIST     comma-separated: mpi_blocking,mpi_nb,oc_inline,oc_thread\n"
            "                  (default all)\n"
            "  --csv PATH      write one row per size and implementation\n"
            "  --png PATH      plot with gnuplot (overlap and latency vs size)\n"
            "  --check, --no-check  validate every iteration's data (default on)\n"
            "The OC_* environment variables (README) configure both offcoll contexts,\n"
            "except the progress mode, which each implementation sets.\n");
}

/* "64", "4K", "1M", "2MiB": 1024-based. 0 when malformed. */
static size_t parse_size(const char *s)
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

/* Option errors: every rank parses the same command line, rank 0 says why. */
static int opt_error(const char *fmt, ...)
{
    va_list ap;
    if (where.rank != 0)
        return 2;
    va_start(ap, fmt);
    fputs(PROG ": ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs(" (--help lists the options)\n", stderr);
    va_end(ap);
    return 2;
}

static int parse_count(const char *opt, const char *s, long *out)
{
    char *end;
    errno = 0;
    *out = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || *out < 0)
        return opt_error("%s needs a count >= 0, not '%s'", opt, s);
    return 0;
}

static int parse_impls(const char *list, int *use)
{
    char *copy = strdup(list), *save = NULL, *tok;
    int i, rc = 0;
    memset(use, 0, IMPL_COUNT * sizeof(*use));
    for (tok = strtok_r(copy, ",", &save); tok != NULL && rc == 0;
         tok = strtok_r(NULL, ",", &save)) {
        for (i = 0; i < IMPL_COUNT && strcmp(tok, impls[i].name) != 0; i++)
            ;
        if (strcmp(tok, "all") == 0)
            for (i = 0; i < IMPL_COUNT; i++)
                use[i] = 1;
        else if (i == IMPL_COUNT)
            rc = opt_error("--impl: unknown implementation '%s' (known: mpi_blocking, mpi_nb, "
                           "oc_inline, oc_thread, all)", tok);
        else
            use[i] = 1;
    }
    free(copy);
    return rc;
}

static int parse_opt(opts_t *o, const char *a, const char *v)
{
    if (strcmp(a, "--min") == 0 || strcmp(a, "--max") == 0) {
        size_t s = parse_size(v);
        if (s == 0 || s > INT_MAX) /* MPI counts are int */
            return opt_error("%s: '%s' is not a size in 1..2G-1 (e.g. 64, 4K, 1M)", a, v);
        *(a[3] == 'i' ? &o->min : &o->max) = s;
    } else if (strcmp(a, "--iters") == 0)
        return parse_count(a, v, &o->iters);
    else if (strcmp(a, "--warmup") == 0)
        return parse_count(a, v, &o->warmup);
    else if (strcmp(a, "--budget") == 0) {
        char *end;
        o->budget_s = strtod(v, &end);
        if (end == v || *end != '\0' || !(o->budget_s >= 0))
            return opt_error("--budget needs seconds >= 0, not '%s'", v);
    } else if (strcmp(a, "--impl") == 0)
        return parse_impls(v, o->use);
    else if (strcmp(a, "--csv") == 0)
        o->csv = v;
    else if (strcmp(a, "--png") == 0)
        o->png = v;
    else
        return opt_error("unknown option '%s'", a);
    return 0;
}

/* 0 to run, 1 after --help, 2 on a bad command line. */
static int parse_opts(int argc, char **argv, opts_t *o)
{
    int i, rc = 0;
    *o = (opts_t){.min = 1, .max = (size_t)1 << 20, .iters = 1000, .warmup = 100,
                  .budget_s = 0.25, .check = 1};
    parse_impls("all", o->use);
    for (i = 1; i < argc && rc == 0; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--check") == 0 || strcmp(a, "--no-check") == 0)
            o->check = a[2] == 'c';
        else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            if (where.rank == 0)
                usage(stdout);
            return 1;
        } else if (i + 1 == argc)
            rc = opt_error("%s needs a value", a);
        else
            rc = parse_opt(o, a, argv[++i]);
    }
    if (rc == 0 && o->min > o->max)
        rc = opt_error("--min %zu is above --max %zu", o->min, o->max);
    if (rc == 0 && o->iters < 1)
        rc = opt_error("--iters must be at least 1");
    return rc;
}

/* ---- benchmark state -------------------------------------------------------- */

typedef struct {
    int rank, nranks;
    opts_t o;
    unsigned char *sbuf, *rbuf;  /* the collective's buffers */
    unsigned char *expect;       /* what rbuf must hold after an iteration */
    unsigned char *csrc, *cdst;  /* the copy-bound buffers, apart from those */
    uint64_t seq;                /* iterations so far, equal on all ranks: stamps never repeat */
    double fp_s_per_iter;        /* calibrated dummy compute */
    double t0;                   /* start of the run, for progress lines */
} bench_t;

/* What is measured per iteration on each rank, then averaged over ranks. */
enum { M_COMM, M_OVERALL, M_COMPUTE, M_PE_CPU, M_LISTS, M_WAKEUPS, M_COUNT };

typedef struct {
    long iters;
    double m[M_COUNT]; /* seconds or counts per iteration, mean over ranks */
    double copy;       /* memcpy of the received bytes, s, mean over ranks */
    oc_alg_t alg;
} result_t;

static unsigned char *buf_alloc(size_t bytes)
{
    size_t page = 4096, len = (bytes + page - 1) / page * page;
    unsigned char *p = aligned_alloc(page, len);
    if (p == NULL)
        die("cannot allocate %zu bytes", bytes);
    memset(p, 0, len); /* fault the pages in before any timing */
    return p;
}

/* ---- data pattern and check ---------------------------------------------------
 * A block holds a background byte pattern of (src, dst, byte), written once per
 * size, and 8-byte stamps of (iteration, src, dst, byte) at the start of every
 * page of the block and in its last 8 bytes, rewritten every iteration: the
 * fill costs a few words per block. The receiver keeps the image of what it
 * must receive, patched with the same stamps, and compares every byte with it
 * after every iteration. A wrong block (peer or place) or a corrupted byte
 * fails anywhere; a stale block (an earlier iteration) or a lost fragment
 * fails on a stamp. On the first and last iterations of the untimed phases
 * (probe, warm-up) the receive buffer is also poisoned first, which catches
 * any byte never written; the timed phases skip that, so that a full-buffer
 * memset does not change what they measure.
 */

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static uint64_t stamp_value(uint64_t seq, int src, int dst, size_t off)
{
    return mix64(mix64(seq) ^ mix64(((uint64_t)(uint32_t)src << 32) | (uint32_t)dst) ^
                 mix64(off + 1));
}

static unsigned char background(int src, int dst, size_t off)
{
    return (unsigned char)(off * 131 + (off >> 8) * 7 + (size_t)src * 37 + (size_t)dst * 101 + 1);
}

static void write_stamp(unsigned char *blk, size_t block, size_t base, uint64_t v)
{
    size_t i;
    for (i = 0; i < STAMP_BYTES && base + i < block; i++)
        blk[base + i] = (unsigned char)(v >> (8 * i));
}

/* The stamps of one block; the tail one last, so it wins where they overlap. */
static void stamp_block(unsigned char *blk, size_t block, uint64_t seq, int src, int dst)
{
    size_t base, tail = block > STAMP_BYTES ? block - STAMP_BYTES : 0;
    for (base = 0; base < tail; base += STAMP_STRIDE)
        write_stamp(blk, block, base, stamp_value(seq, src, dst, base));
    write_stamp(blk, block, tail, stamp_value(seq, src, dst, tail));
}

static int is_stamp(size_t block, size_t off)
{
    return off % STAMP_STRIDE < STAMP_BYTES || off + STAMP_BYTES >= block;
}

/* The n blocks of buf as this rank sends them (block p goes to rank p), or,
 * with receiving, as it must receive them (block p comes from rank p). */
static void write_pattern(const bench_t *b, unsigned char *buf, size_t block, int receiving,
                          int stamps_only)
{
    int p;
    size_t i;
    for (p = 0; p < b->nranks; p++) {
        unsigned char *blk = buf + (size_t)p * block;
        int src = receiving ? p : b->rank, dst = receiving ? b->rank : p;
        if (!stamps_only)
            for (i = 0; i < block; i++)
                blk[i] = background(src, dst, i);
        stamp_block(blk, block, b->seq, src, dst);
    }
}

static void mismatch(const bench_t *b, int src, size_t block, size_t off)
{
    unsigned char got = b->rbuf[(size_t)src * block + off];
    unsigned char want = b->expect[(size_t)src * block + off];
    die("DATA MISMATCH in the block from peer %d: byte %zu of %zu (%s): expected 0x%02x, got "
        "0x%02x%s", src, off, block, is_stamp(block, off) ? "iteration stamp" : "background",
        want, got, got == POISON ? " (the poison: never written)" : "");
}

static void check_recv(const bench_t *b, size_t block)
{
    int src;
    size_t off;
    for (src = 0; src < b->nranks; src++) {
        const unsigned char *r = b->rbuf + (size_t)src * block, *e = b->expect + (size_t)src * block;
        if (memcmp(r, e, block) == 0)
            continue;
        for (off = 0; r[off] == e[off]; off++)
            ;
        mismatch(b, src, block, off);
    }
}

/* ---- dummy compute ---------------------------------------------------------------
 * A dependent floating-point chain: CPU-bound, no memory traffic, no MPI or
 * offcoll call inside (as OSU's default), so only a progress thread can move
 * the collective meanwhile.
 */

static volatile double fp_sink = 1.0;

static void fp_work(uint64_t n)
{
    double x = fp_sink;
    uint64_t i;
    for (i = 0; i < n; i++)
        x = x * 0.9999999 + 1e-7;
    fp_sink = x;
}

static int cmp_double(const void *a, const void *b)
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
            fp_work(n);
        s[r] = (MPI_Wtime() - t) / ((double)reps * (double)n);
    }
    qsort(s, CAL_ROUNDS, sizeof(s[0]), cmp_double);
    return s[CAL_ROUNDS / 2];
}

/* A first estimate, from 4 ms runs. */
static double fp_calibrate(void)
{
    fp_work((uint64_t)1 << 16);
    return fp_rate((uint64_t)1 << 20, 1);
}

/* Steps that last target seconds in the overlapped phase, measured as that
 * phase runs them: all ranks computing at once in bursts of that length,
 * right before it (OSU likewise sizes its compute per message size). */
static uint64_t fp_steps_for(const bench_t *b, double target)
{
    uint64_t n = (uint64_t)(target / b->fp_s_per_iter) + 1;
    long reps = target < 1e-3 ? (long)(1e-3 / target) + 1 : 1;
    return (uint64_t)(target / fp_rate(n, reps < 1000 ? reps : 1000) + 0.5);
}

/* ---- timed phases ------------------------------------------------------------ */

/* One start + (compute) + wait; data prepared and checked outside the timing. */
static double iteration(bench_t *b, impl_t *im, size_t block, int full, uint64_t fp_iters,
                        double *t_compute)
{
    double t, tc = 0;
    if (b->o.check) {
        write_pattern(b, b->sbuf, block, 0, 1);
        write_pattern(b, b->expect, block, 1, 1);
        if (full)
            memset(b->rbuf, POISON, (size_t)b->nranks * block);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    t = MPI_Wtime();
    im->start(im, b->sbuf, b->rbuf, block);
    if (fp_iters > 0) {
        tc = MPI_Wtime();
        fp_work(fp_iters);
        tc = MPI_Wtime() - tc;
    }
    im->wait(im);
    t = MPI_Wtime() - t;
    if (b->o.check)
        check_recv(b, block);
    b->seq++;
    if (t_compute != NULL)
        *t_compute += tc;
    return t;
}

typedef struct {
    const char *name;
    int timed;          /* untimed phases also check every byte (see above) */
    uint64_t fp_iters;  /* dummy compute per iteration, 0 for none */
} phase_t;

static const phase_t PROBE = {"probe", 0, 0}, WARM_UP = {"warm-up", 0, 0}, PURE = {"pure", 1, 0};

/* Mean time per iteration on this rank; *compute_mean likewise when given. */
static double phase(bench_t *b, impl_t *im, size_t block, const phase_t *ph, long iters,
                    double *compute_mean)
{
    double total = 0, compute = 0;
    long it;
    where.phase = ph->name;
    for (it = 0; it < iters; it++) {
        int full = !ph->timed && (it == 0 || it == iters - 1);
        where.iter = it;
        total += iteration(b, im, block, full, ph->fp_iters, &compute);
    }
    where.iter = -1;
    if (compute_mean != NULL)
        *compute_mean = iters > 0 ? compute / (double)iters : 0;
    return iters > 0 ? total / (double)iters : 0;
}

static double max_over_ranks(double v)
{
    double m;
    MPI_Allreduce(&v, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return m;
}

/* Iterations that fit the time budget at t_iter each, within [lo, hi]. All
 * ranks pass the same t_iter (a maximum over ranks), so all agree. */
static long fit_budget(double budget, double t_iter, long lo, long hi)
{
    double n;
    if (budget <= 0 || t_iter <= 0)
        return hi;
    n = budget / t_iter;
    if (n > (double)hi)
        return hi;
    return n < (double)lo ? (lo < hi ? lo : hi) : (long)n;
}

/* Warm-up, then the number of timed iterations the budget allows. */
static long warm_up(bench_t *b, impl_t *im, size_t block)
{
    double probe = max_over_ranks(phase(b, im, block, &PROBE, 1, NULL));
    long warm = fit_budget(b->o.budget_s / 4, probe, 1, b->o.warmup);
    double t = warm > 0 ? phase(b, im, block, &WARM_UP, warm, NULL) : probe;
    return fit_budget(b->o.budget_s, max_over_ranks(t), MIN_TIMED_ITERS, b->o.iters);
}

static void stats_of(const impl_t *im, oc_stats_t *s)
{
    memset(s, 0, sizeof(*s));
    if (im->ctx != NULL)
        oc_check(oc_context_stats(im->ctx, s), "oc_context_stats");
}

/* Sums v[0..n) over ranks into rank 0, as means. */
static void mean_over_ranks(bench_t *b, double *v, int n)
{
    int i;
    MPI_Reduce(b->rank == 0 ? MPI_IN_PLACE : v, v, n, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    for (i = 0; i < n; i++)
        v[i] /= b->nranks;
}

static result_t measure(bench_t *b, impl_t *im, size_t block)
{
    result_t r = {0};
    double *m = r.m;

    r.iters = warm_up(b, im, block);
    m[M_COMM] = phase(b, im, block, &PURE, r.iters, NULL);
    if (im->nonblocking) {
        /* Each rank computes for its own T_comm, as OSU does. */
        phase_t overlapped = {"overlapped", 1, fp_steps_for(b, m[M_COMM])};
        oc_stats_t s0, s1;
        stats_of(im, &s0);
        m[M_OVERALL] = phase(b, im, block, &overlapped, r.iters, &m[M_COMPUTE]);
        stats_of(im, &s1);
        m[M_PE_CPU] = (s1.progress_cpu_s - s0.progress_cpu_s) / (double)r.iters;
        m[M_LISTS] = (double)(s1.lists_posted - s0.lists_posted) / (double)r.iters;
        m[M_WAKEUPS] = (double)(s1.wakeups - s0.wakeups) / (double)r.iters;
    }
    mean_over_ranks(b, m, M_COUNT);
    r.alg = im->alg;
    return r;
}

/* Called through a volatile pointer so that no copy of the loop is elided. */
static void *(*volatile copy_fn)(void *, const void *, size_t) = memcpy;

/* Time to memcpy what one rank receives (all n blocks) between two buffers of
 * that size, every rank at once as when all cores are busy; mean over ranks. */
static double copy_time(bench_t *b, size_t block)
{
    size_t bytes = (size_t)b->nranks * block;
    double t, target = 2e-3;
    long reps = 0;

    copy_fn(b->cdst, b->csrc, bytes);
    MPI_Barrier(MPI_COMM_WORLD);
    t = MPI_Wtime();
    do {
        copy_fn(b->cdst, b->csrc, bytes);
        reps++;
    } while (reps < 1000 && (reps < 3 || MPI_Wtime() - t < target));
    t = (MPI_Wtime() - t) / (double)reps;
    mean_over_ranks(b, &t, 1);
    return t;
}

/* ---- output ---------------------------------------------------------------------- */

static const char *size_str(size_t s, char *buf, size_t len)
{
    if (s >= ((size_t)1 << 20) && s % ((size_t)1 << 20) == 0)
        snprintf(buf, len, "%zuM", s >> 20);
    else if (s >= 1024 && s % 1024 == 0)
        snprintf(buf, len, "%zuK", s >> 10);
    else
        snprintf(buf, len, "%zu", s);
    return buf;
}

static double overlap_pct(const result_t *r)
{
    double o = 100.0 - 100.0 * (r->m[M_OVERALL] - r->m[M_COMPUTE]) / r->m[M_COMM];
    return r->m[M_COMM] > 0 && o > 0 ? o : 0;
}

static double bound_pct(const result_t *r)
{
    double o = 100.0 * (1.0 - r->copy / r->m[M_COMM]);
    return r->m[M_COMM] > 0 && o > 0 ? o : 0;
}

/* The columns of the table and of the CSV; the table leaves out those of
 * width 0 and shows a figure that does not apply as "-", the CSV leaves it
 * empty (gnuplot then skips it). */
enum { C_IMPL, C_ALG, C_SIZE, C_RANKS, C_ITERS, C_PURE, C_OVERALL, C_COMPUTE, C_OVERLAP,
       C_COPY, C_BOUND, C_PE_CPU, C_LISTS, C_WAKEUPS, C_COUNT };

static const struct {
    const char *table, *csv;
    int width; /* negative: left-aligned */
} columns[C_COUNT] = {
    [C_IMPL] = {"impl", "impl", -12},           [C_ALG] = {"alg", "alg", -8},
    [C_SIZE] = {"size", "block_bytes", 6},      [C_RANKS] = {"", "ranks", 0},
    [C_ITERS] = {"iters", "iters", 6},          [C_PURE] = {"pure_us", "pure_us", 10},
    [C_OVERALL] = {"overall_us", "overall_us", 10},
    [C_COMPUTE] = {"compute_us", "compute_us", 10},
    [C_OVERLAP] = {"overlap%", "overlap_pct", 8}, [C_COPY] = {"", "copy_us", 0},
    [C_BOUND] = {"bound%", "bound_pct", 7},
    [C_PE_CPU] = {"pe_cpu_us", "pe_cpu_us_per_iter", 10},
    [C_LISTS] = {"lists/it", "lists_per_iter", 8},
    [C_WAKEUPS] = {"wakeup/it", "wakeups_per_iter", 9},
};

typedef char field_t[32];

static void set_field(field_t f, int applies, int decimals, double v)
{
    if (applies)
        snprintf(f, sizeof(field_t), "%.*f", decimals, v);
    else
        f[0] = '\0';
}

/* One row as text; the table shows sizes as 4K, the CSV in bytes. */
static void row_fields(const bench_t *b, const impl_t *im, size_t block, const result_t *r,
                       int table, field_t f[C_COUNT])
{
    const double *m = r->m;
    int nb = im->nonblocking, oc = im->offcoll, thread = oc && im->mode == OC_PROGRESS_THREAD;

    snprintf(f[C_IMPL], sizeof(field_t), "%s", im->name);
    snprintf(f[C_ALG], sizeof(field_t), "%s", oc ? oc_alg_name(r->alg) : "");
    if (table)
        size_str(block, f[C_SIZE], sizeof(field_t));
    else
        snprintf(f[C_SIZE], sizeof(field_t), "%zu", block);
    snprintf(f[C_RANKS], sizeof(field_t), "%d", b->nranks);
    snprintf(f[C_ITERS], sizeof(field_t), "%ld", r->iters);
    set_field(f[C_PURE], 1, 2, m[M_COMM] * 1e6);
    set_field(f[C_OVERALL], nb, 2, m[M_OVERALL] * 1e6);
    set_field(f[C_COMPUTE], nb, 2, m[M_COMPUTE] * 1e6);
    set_field(f[C_OVERLAP], nb, 1, overlap_pct(r));
    set_field(f[C_COPY], 1, 3, r->copy * 1e6);
    set_field(f[C_BOUND], oc, 1, bound_pct(r));
    set_field(f[C_PE_CPU], thread, 2, m[M_PE_CPU] * 1e6);
    set_field(f[C_LISTS], oc, 2, m[M_LISTS]);
    set_field(f[C_WAKEUPS], oc, 2, m[M_WAKEUPS]);
}

static void table_line(field_t f[C_COUNT])
{
    int c;
    for (c = 0; c < C_COUNT; c++)
        if (columns[c].width != 0)
            printf("%s%*s", c > 0 ? " " : "", columns[c].width, f[c][0] ? f[c] : "-");
    printf("\n");
}

static void csv_line(FILE *out, field_t f[C_COUNT])
{
    int c;
    for (c = 0; c < C_COUNT; c++)
        fprintf(out, "%s%s", c > 0 ? "," : "", f[c]);
    fprintf(out, "\n");
}

static void print_header(const bench_t *b, const char *backend)
{
    field_t f[C_COUNT];
    int c;
    printf("# " PROG ": Alltoall overlap, OSU non-blocking-collective procedure, %d ranks\n",
           b->nranks);
    printf("# offcoll backend: %s\n", backend);
    printf("# dummy compute: %.3f ns per loop step (calibrated); budget %.2f s per phase, "
           "iterations %d..%ld\n", b->fp_s_per_iter * 1e9, b->o.budget_s, MIN_TIMED_ITERS,
           b->o.iters);
    printf("# times: us per iteration, mean over ranks; overlap = max(0, 100 - 100*(overall - "
           "compute)/pure)\n# bound = 100*(1 - memcpy of the received bytes/pure); per-iteration "
           "progress figures are of the overlapped phase\n");
    for (c = 0; c < C_COUNT; c++)
        snprintf(f[c], sizeof(field_t), "%s", columns[c].table);
    table_line(f);
    fflush(stdout);
}

static FILE *csv_open(const bench_t *b, const char *path, const char *backend)
{
    char host[256] = "unknown", date[64] = "unknown";
    time_t now = time(NULL);
    struct tm tm;
    field_t f[C_COUNT];
    int c;
    FILE *out = fopen(path, "w");

    if (out == NULL) {
        fprintf(stderr, PROG ": cannot write %s: %s\n", path, strerror(errno));
        return NULL;
    }
    gethostname(host, sizeof(host) - 1);
    if (gmtime_r(&now, &tm) != NULL)
        strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", &tm);
    fprintf(out, "# " PROG " ranks=%d date=%s host=%s backend=\"%s\" check=%s\n", b->nranks,
            date, host, backend, b->o.check ? "on" : "off");
    for (c = 0; c < C_COUNT; c++)
        snprintf(f[c], sizeof(field_t), "%s", columns[c].csv);
    csv_line(out, f);
    return out;
}

static void report_row(const bench_t *b, const impl_t *im, size_t block, const result_t *r,
                       FILE *csv)
{
    field_t f[C_COUNT];
    row_fields(b, im, block, r, 1, f);
    table_line(f);
    if (csv != NULL) {
        row_fields(b, im, block, r, 0, f);
        csv_line(csv, f);
        fflush(csv);
    }
}

/* ---- plotting (rank 0, after MPI_Finalize, so no MPI process forks) ---------- */

static int readable(const char *path)
{
    return access(path, R_OK) == 0;
}

/* Next to the binary (build tree), else where meson installs it. */
static int find_plot_script(char *out, size_t len)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n > 0) {
        char *slash;
        exe[n] = '\0';
        slash = strrchr(exe, '/');
        if (slash != NULL) {
            *slash = '\0';
            snprintf(out, len, "%s/" PLOT_SCRIPT_NAME, exe);
            if (readable(out))
                return 1;
        }
    }
    snprintf(out, len, "%s", OC_PLOT_SCRIPT_INSTALLED);
    return readable(out);
}

/* Runs gnuplot without a shell, so no path needs quoting. Returns 0 when the
 * PNG was written; notes why not otherwise, and the benchmark still succeeds. */
static int plot(const char *csv, const char *png, const char *title)
{
    char script[PATH_MAX + 64];
    char *argv[] = {"gnuplot", "-c", script, (char *)csv, (char *)png, (char *)title, NULL};
    pid_t pid;
    int rc, status;

    if (!find_plot_script(script, sizeof(script))) {
        fprintf(stderr, PROG ": note: no PNG: " PLOT_SCRIPT_NAME " is neither next to the "
                        "binary nor at " OC_PLOT_SCRIPT_INSTALLED "\n");
        return 1;
    }
    rc = posix_spawnp(&pid, "gnuplot", NULL, NULL, argv, environ);
    if (rc != 0) {
        fprintf(stderr, PROG ": note: no PNG: cannot run gnuplot (%s)%s\n", strerror(rc),
                rc == ENOENT ? "; install gnuplot-nox (ci/setup does)" : "");
        return 1;
    }
    if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, PROG ": note: gnuplot failed on %s; no PNG written\n", script);
        return 1;
    }
    return 0;
}

/* ---- main -------------------------------------------------------------------------- */

static int count_sizes(const opts_t *o)
{
    int n = 0;
    size_t s;
    for (s = o->min; s <= o->max && s > 0; s *= 2)
        n++;
    return n;
}

static void progress_line(const bench_t *b, int k, int nsizes, size_t block, const impl_t *im)
{
    char sz[24];
    if (b->rank == 0)
        fprintf(stderr, PROG ": [%2d/%d] %6s %-12s (%.1f s elapsed)\n", k, nsizes,
                size_str(block, sz, sizeof(sz)), im->name, MPI_Wtime() - b->t0);
}

static void run_size(bench_t *b, size_t block, int k, int nsizes, FILE *csv)
{
    result_t res[IMPL_COUNT];
    double copy = copy_time(b, block);
    int i;

    where.block = block;
    if (b->o.check) {
        write_pattern(b, b->sbuf, block, 0, 0);
        write_pattern(b, b->expect, block, 1, 0);
    }
    for (i = 0; i < IMPL_COUNT; i++) {
        if (!b->o.use[i])
            continue;
        where.impl = impls[i].name;
        progress_line(b, k, nsizes, block, &impls[i]);
        res[i] = measure(b, &impls[i], block);
        res[i].copy = copy;
    }
    where.impl = "-";
    if (b->rank != 0)
        return;
    for (i = 0; i < IMPL_COUNT; i++)
        if (b->o.use[i])
            report_row(b, &impls[i], block, &res[i], csv);
    printf("\n");
    fflush(stdout);
}

static const char *backend_of(void)
{
    int i;
    for (i = 0; i < IMPL_COUNT; i++)
        if (impls[i].ctx != NULL)
            return oc_context_backend_info(impls[i].ctx);
    return "not used";
}

/* Rank 0: the CSV the table goes to; a temporary one when only a plot is asked. */
static FILE *open_results(const bench_t *b, char *tmp, const char **path)
{
    *path = b->o.csv;
    if (*path == NULL && b->o.png != NULL) {
        int fd = mkstemp(tmp);
        if (fd < 0) {
            fprintf(stderr, PROG ": note: no PNG: cannot create %s: %s\n", tmp, strerror(errno));
            return NULL;
        }
        close(fd);
        *path = tmp;
    }
    return *path != NULL ? csv_open(b, *path, backend_of()) : NULL;
}

static void plot_results(const bench_t *b, const char *csv_path)
{
    char host[128] = "unknown", title[200];
    gethostname(host, sizeof(host) - 1);
    snprintf(title, sizeof(title), "Alltoall overlap (OSU procedure), %d ranks on %s", b->nranks,
             host);
    if (plot(csv_path, b->o.png, title) == 0)
        printf("PNG: %s\n", b->o.png);
}

int main(int argc, char **argv)
{
    bench_t b = {0};
    char csv_tmp[] = "/tmp/oc_bench_overlap_XXXXXX";
    const char *csv_path = NULL;
    FILE *csv = NULL;
    size_t block, bytes;
    int i, k = 0, nsizes, have_csv, rc;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &b.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &b.nranks);
    where.rank = b.rank;
    rc = parse_opts(argc, argv, &b.o);
    if (rc != 0) {
        MPI_Finalize();
        return rc == 1 ? 0 : 2;
    }
    b.t0 = MPI_Wtime();

    bytes = (size_t)b.nranks * b.o.max;
    b.sbuf = buf_alloc(bytes);
    b.rbuf = buf_alloc(bytes);
    b.csrc = buf_alloc(bytes);
    b.cdst = buf_alloc(bytes);
    b.expect = b.o.check ? buf_alloc(bytes) : NULL;
    for (i = 0; i < IMPL_COUNT; i++)
        if (b.o.use[i])
            impl_open(&impls[i]);
    b.fp_s_per_iter = fp_calibrate();
    if (b.rank == 0) {
        print_header(&b, backend_of());
        csv = open_results(&b, csv_tmp, &csv_path);
    }
    have_csv = csv != NULL;

    nsizes = count_sizes(&b.o);
    for (block = b.o.min; block <= b.o.max && block > 0; block *= 2)
        run_size(&b, block, ++k, nsizes, csv);

    for (i = 0; i < IMPL_COUNT; i++)
        impl_close(&impls[i]);
    free(b.sbuf);
    free(b.rbuf);
    free(b.csrc);
    free(b.cdst);
    free(b.expect);
    if (csv != NULL)
        fclose(csv);
    if (b.rank == 0)
        fprintf(stderr, PROG ": done in %.1f s\n", MPI_Wtime() - b.t0);
    MPI_Finalize();

    if (b.rank == 0 && have_csv && b.o.png != NULL)
        plot_results(&b, csv_path);
    if (b.rank == 0 && have_csv && b.o.csv != NULL)
        printf("CSV: %s\n", b.o.csv);
    if (csv_path == csv_tmp)
        unlink(csv_tmp);
    return 0;
}
