/*
 * oc_bench_overlap: how much of an Alltoall hides behind computation, by the
 * OSU non-blocking-collective procedure (DESIGN.md, "How overlap is
 * measured"), for five implementations side by side in one run:
 *
 *   mpi_blocking  MPI_Alltoall (overlap not applicable: its latency only)
 *   mpi_nb        MPI_Ialltoall + MPI_Wait
 *   oc_inline     offcoll, progress only inside oc_wait (host-based baseline)
 *   oc_thread     offcoll, sleeping progress thread
 *   oc_persist    oc_thread with a persistent request per block size
 *                 (oc_alltoall_init once, oc_start + oc_wait per iteration)
 *
 * Per block size and implementation: pure communication time T_comm
 * (start + wait), then start + calibrated CPU-bound compute lasting T_comm +
 * wait, overlap = max(0, 100 - 100 (T_overall - T_compute) / T_comm), all
 * times averaged over ranks. Beside it: the bound this host allows when every
 * byte must be copied by a CPU (1 - T_memcpy / T_comm), the progress thread's
 * CPU time and the task lists and wake-ups per iteration. Every iteration's
 * received data is checked, outside the timed interval.
 */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROG "oc_bench_overlap"
#define STAMP_BYTES 8      /* one 64-bit stamp */
#define STAMP_STRIDE 4096  /* a stamp per page: a lost fragment is at least that long */
#define POISON 0xA5

#include "oc_bench_common.h"

/* ---- implementations ------------------------------------------------------ */

enum { IMPL_MPI_BLOCKING, IMPL_MPI_NB, IMPL_OC_INLINE, IMPL_OC_THREAD, IMPL_OC_PERSIST,
       IMPL_COUNT };

typedef struct impl impl_t;
struct impl {
    const char *name;
    int nonblocking;            /* the overlapped phase applies */
    int offcoll;                /* oc_progress_mode_t below is meaningful */
    oc_progress_mode_t mode;
    /* once per size before its first start, timed on its own; NULL: none */
    void (*setup)(impl_t *im, const void *sbuf, void *rbuf, size_t block);
    void (*start)(impl_t *im, const void *sbuf, void *rbuf, size_t block);
    void (*wait)(impl_t *im);
    oc_context_t *ctx;
    oc_team_t *team;
    oc_request_t *oreq;
    MPI_Request mreq;
    oc_alg_t alg;               /* what offcoll chose for the last start */
};

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
    bench_check(oc_ialltoall(im->team, sbuf, rbuf, block, &im->oreq), "oc_ialltoall");
    im->alg = oc_request_alg(im->oreq);
}

/* Freeing belongs to completion, as MPI_Wait frees a non-blocking request. */
static void oc_wait_a2a(impl_t *im)
{
    bench_check(oc_wait(im->oreq), "oc_wait");
    bench_check(oc_request_free(im->oreq), "oc_request_free");
    im->oreq = NULL;
}

/* The buffers are the same in every iteration, as in a code that sets up its
 * transposes once. */
static void oc_persist_setup(impl_t *im, const void *sbuf, void *rbuf, size_t block)
{
    if (im->oreq != NULL)
        bench_check(oc_request_free(im->oreq), "oc_request_free");
    bench_check(oc_alltoall_init(im->team, sbuf, rbuf, block, &im->oreq), "oc_alltoall_init");
    im->alg = oc_request_alg(im->oreq);
}

static void oc_persist_start(impl_t *im, const void *sbuf, void *rbuf, size_t block)
{
    (void)sbuf;
    (void)rbuf;
    (void)block;
    bench_check(oc_start(im->oreq), "oc_start");
}

static void oc_persist_wait(impl_t *im)
{
    bench_check(oc_wait(im->oreq), "oc_wait");
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
    [IMPL_OC_PERSIST] = {.name = "oc_persist", .nonblocking = 1, .offcoll = 1,
                         .mode = OC_PROGRESS_THREAD, .setup = oc_persist_setup,
                         .start = oc_persist_start,
                         .wait = oc_persist_wait},
};

static void impl_open(impl_t *im)
{
    oc_config_t cfg;
    if (!im->offcoll)
        return;
    bench_at.impl = im->name;
    bench_check(oc_config_init(&cfg), "oc_config_init");
    cfg.progress = im->mode;
    bench_check(oc_init(&cfg, &im->ctx), "oc_init");
    bench_check(oc_team_create_mpi(im->ctx, MPI_COMM_WORLD, &im->team), "oc_team_create_mpi");
    bench_at.impl = "-";
}

static oc_context_t *ctx_of(int i)
{
    return impls[i].ctx;
}

static const char *name_of(int i)
{
    return impls[i].name;
}

/* ---- options ---------------------------------------------------------------- */

typedef struct {
    size_t min, max;
    bench_opts_t common;
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
            "  --impl LIST     comma-separated: mpi_blocking,mpi_nb,oc_inline,oc_thread,\n"
            "                  oc_persist\n"
            "                  (default all)\n"
            "  --csv PATH      write one row per size and implementation\n"
            "  --png PATH      plot with gnuplot (overlap and latency vs size)\n"
            "  --check, --no-check  validate every iteration's data (default on)\n"
            "The OC_* environment variables (README) configure the offcoll contexts,\n"
            "except the progress mode, which each implementation sets.\n");
}

static int parse_impls(const char *list, int *use)
{
    const char *names[IMPL_COUNT];
    int i;
    for (i = 0; i < IMPL_COUNT; i++)
        names[i] = impls[i].name;
    return bench_parse_names("--impl", list, names, IMPL_COUNT, use);
}

static int parse_opt(void *opts, const char *a, const char *v)
{
    opts_t *o = opts;
    if (strcmp(a, "--min") == 0 || strcmp(a, "--max") == 0) {
        size_t s = bench_parse_size(v);
        if (s == 0 || s > INT_MAX) /* MPI counts are int */
            return bench_opt_error("%s: '%s' is not a size in 1..2G-1 (e.g. 64, 4K, 1M)", a, v);
        *(a[3] == 'i' ? &o->min : &o->max) = s;
        return 0;
    }
    if (strcmp(a, "--impl") == 0)
        return parse_impls(v, o->use);
    return bench_parse_common_opt(&o->common, a, v);
}

/* 0 to run, 1 after --help, 2 on a bad command line. */
static int parse_opts(int argc, char **argv, opts_t *o)
{
    static const bench_flag_t flags[] = {
        {"--check", "--no-check", offsetof(opts_t, common.check)}};
    int rc;
    *o = (opts_t){.min = 1, .max = (size_t)1 << 20,
                  .common = {.iters = 1000, .warmup = 100, .budget_s = 0.25, .check = 1}};
    parse_impls("all", o->use);
    rc = bench_parse_args(argc, argv, o, flags, 1, parse_opt, usage);
    if (rc == 0 && o->min > o->max)
        rc = bench_opt_error("--min %zu is above --max %zu", o->min, o->max);
    if (rc == 0 && o->common.iters < 1)
        rc = bench_opt_error("--iters must be at least 1");
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
    double setup;      /* impl_t's setup, s, the slowest rank's (one sample) */
    oc_alg_t alg;
} result_t;

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
    bench_die("DATA MISMATCH in the block from peer %d: byte %zu of %zu (%s): expected 0x%02x, got "
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

/* ---- timed phases ------------------------------------------------------------ */

/* One start + (compute) + wait; data prepared and checked outside the timing. */
static double iteration(bench_t *b, impl_t *im, size_t block, int full, uint64_t fp_iters,
                        double *t_compute)
{
    double t, tc = 0;
    if (b->o.common.check) {
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
        bench_fp_work(fp_iters);
        tc = MPI_Wtime() - tc;
    }
    im->wait(im);
    t = MPI_Wtime() - t;
    if (b->o.common.check)
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
    bench_at.phase = ph->name;
    for (it = 0; it < iters; it++) {
        int full = !ph->timed && (it == 0 || it == iters - 1);
        bench_at.iter = it;
        total += iteration(b, im, block, full, ph->fp_iters, &compute);
    }
    bench_at.iter = -1;
    if (compute_mean != NULL)
        *compute_mean = iters > 0 ? compute / (double)iters : 0;
    return iters > 0 ? total / (double)iters : 0;
}

/* Warm-up, then the number of timed iterations the budget allows. */
static long warm_up(bench_t *b, impl_t *im, size_t block)
{
    double probe = bench_max_over_ranks(phase(b, im, block, &PROBE, 1, NULL));
    long warm = bench_fit_budget(b->o.common.budget_s / 4, probe, 1, b->o.common.warmup);
    double t = warm > 0 ? phase(b, im, block, &WARM_UP, warm, NULL) : probe;
    return bench_fit_budget(b->o.common.budget_s, bench_max_over_ranks(t), BENCH_MIN_TIMED_ITERS,
                            b->o.common.iters);
}

static result_t measure(bench_t *b, impl_t *im, size_t block)
{
    result_t r = {0};
    double *m = r.m;

    if (im->setup != NULL) {
        bench_at.phase = "set-up";
        r.setup = bench_setup_start();
        im->setup(im, b->sbuf, b->rbuf, block);
        r.setup = bench_setup_end(r.setup);
    }
    r.iters = warm_up(b, im, block);
    m[M_COMM] = phase(b, im, block, &PURE, r.iters, NULL);
    if (im->nonblocking) {
        /* Each rank computes for its own T_comm, as OSU does. */
        phase_t overlapped = {"overlapped", 1, bench_fp_steps_for(b->fp_s_per_iter, m[M_COMM])};
        oc_stats_t s0, s1;
        bench_stats(im->ctx, &s0);
        m[M_OVERALL] = phase(b, im, block, &overlapped, r.iters, &m[M_COMPUTE]);
        bench_stats(im->ctx, &s1);
        m[M_PE_CPU] = (s1.progress_cpu_s - s0.progress_cpu_s) / (double)r.iters;
        m[M_LISTS] = (double)(s1.lists_posted - s0.lists_posted) / (double)r.iters;
        m[M_WAKEUPS] = (double)(s1.wakeups - s0.wakeups) / (double)r.iters;
    }
    bench_mean_over_ranks(m, M_COUNT);
    r.alg = im->alg;
    return r;
}

/* Time to memcpy what one rank receives (all n blocks) between two buffers of
 * that size, every rank at once as when all cores are busy; mean over ranks. */
static double copy_time_of(bench_t *b, size_t block)
{
    return bench_copy_time(b->cdst, b->csrc, (size_t)b->nranks * block);
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

/* The columns of the table and of the CSV (oc_bench_common.h). */
enum { C_IMPL, C_ALG, C_SIZE, C_RANKS, C_ITERS, C_PURE, C_OVERALL, C_COMPUTE, C_OVERLAP,
       C_COPY, C_BOUND, C_PE_CPU, C_LISTS, C_WAKEUPS, C_SETUP, C_COUNT };

static const bench_column_t columns[C_COUNT] = {
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
    [C_SETUP] = {"setup_us", "setup_us", 9},
};

static void row_fields(const bench_t *b, const impl_t *im, size_t block, const result_t *r,
                       int table, bench_field_t f[C_COUNT])
{
    const double *m = r->m;
    int nb = im->nonblocking, oc = im->offcoll, thread = oc && im->mode == OC_PROGRESS_THREAD;

    snprintf(f[C_IMPL], sizeof(bench_field_t), "%s", im->name);
    snprintf(f[C_ALG], sizeof(bench_field_t), "%s", oc ? oc_alg_name(r->alg) : "");
    if (table)
        size_str(block, f[C_SIZE], sizeof(bench_field_t));
    else
        snprintf(f[C_SIZE], sizeof(bench_field_t), "%zu", block);
    snprintf(f[C_RANKS], sizeof(bench_field_t), "%d", b->nranks);
    snprintf(f[C_ITERS], sizeof(bench_field_t), "%ld", r->iters);
    bench_set_field(f[C_PURE], 1, 2, m[M_COMM] * 1e6);
    bench_set_field(f[C_OVERALL], nb, 2, m[M_OVERALL] * 1e6);
    bench_set_field(f[C_COMPUTE], nb, 2, m[M_COMPUTE] * 1e6);
    bench_set_field(f[C_OVERLAP], nb, 1, bench_overlap_pct(m[M_COMM], m[M_OVERALL], m[M_COMPUTE]));
    bench_set_field(f[C_COPY], 1, 3, r->copy * 1e6);
    bench_set_field(f[C_BOUND], oc, 1, bench_bound_pct(m[M_COMM], r->copy));
    bench_set_field(f[C_PE_CPU], thread, 2, m[M_PE_CPU] * 1e6);
    bench_set_field(f[C_LISTS], oc, 2, m[M_LISTS]);
    bench_set_field(f[C_WAKEUPS], oc, 2, m[M_WAKEUPS]);
    bench_set_field(f[C_SETUP], im->setup != NULL, 0, r->setup * 1e6);
}

/* Each context's engine: one whose thread shares the computing CPU cannot
 * overlap, and says so. */
static void print_header(const bench_t *b, const char *backend)
{
    int i;
    printf("# " PROG ": Alltoall overlap, OSU non-blocking-collective procedure, %d ranks\n",
           b->nranks);
    printf("# offcoll backend: %s\n", backend);
    for (i = 0; i < IMPL_COUNT; i++)
        if (impls[i].ctx != NULL)
            printf("# progress engine of %s (rank 0): %s\n", impls[i].name,
                   oc_context_progress_info(impls[i].ctx));
    printf("# dummy compute: %.3f ns per loop step (calibrated); budget %.2f s per phase, "
           "iterations %d..%ld\n", b->fp_s_per_iter * 1e9, b->o.common.budget_s,
           BENCH_MIN_TIMED_ITERS, b->o.common.iters);
    printf("# times: us per iteration, mean over ranks; overlap = max(0, 100 - 100*(overall - "
           "compute)/pure)\n# bound = 100*(1 - memcpy of the received bytes/pure); per-iteration "
           "progress figures are of the overlapped phase\n# setup = the persistent request's "
           "oc_alltoall_init, once per size, the slowest rank's\n");
    bench_table_header(columns, C_COUNT);
    fflush(stdout);
}

static void report_row(const bench_t *b, const impl_t *im, size_t block, const result_t *r,
                       FILE *csv)
{
    bench_field_t table[C_COUNT], csv_f[C_COUNT];
    row_fields(b, im, block, r, 1, table);
    row_fields(b, im, block, r, 0, csv_f);
    bench_report_line(columns, C_COUNT, table, csv_f, csv);
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
    double copy = copy_time_of(b, block);
    int i;

    snprintf(bench_at.what, sizeof(bench_at.what), "block %zu B", block);
    if (b->o.common.check) {
        write_pattern(b, b->sbuf, block, 0, 0);
        write_pattern(b, b->expect, block, 1, 0);
    }
    for (i = 0; i < IMPL_COUNT; i++) {
        if (!b->o.use[i])
            continue;
        bench_at.impl = impls[i].name;
        progress_line(b, k, nsizes, block, &impls[i]);
        res[i] = measure(b, &impls[i], block);
        res[i].copy = copy;
    }
    bench_at.impl = "-";
    if (b->rank != 0)
        return;
    for (i = 0; i < IMPL_COUNT; i++)
        if (b->o.use[i])
            report_row(b, &impls[i], block, &res[i], csv);
    printf("\n");
    fflush(stdout);
}

int main(int argc, char **argv)
{
    bench_t b = {0};
    bench_out_t out = {0};
    char title[128], extra[2048];
    size_t block, bytes;
    int i, k = 0, nsizes, rc;

    bench_init(&argc, &argv, PROG, &b.rank, &b.nranks, "iteration");
    rc = parse_opts(argc, argv, &b.o);
    if (rc != 0)
        return bench_quit(rc);
    b.t0 = MPI_Wtime();

    bytes = (size_t)b.nranks * b.o.max;
    b.sbuf = bench_buf_alloc(bytes);
    b.rbuf = bench_buf_alloc(bytes);
    b.csrc = bench_buf_alloc(bytes);
    b.cdst = bench_buf_alloc(bytes);
    b.expect = b.o.common.check ? bench_buf_alloc(bytes) : NULL;
    for (i = 0; i < IMPL_COUNT; i++)
        if (b.o.use[i])
            impl_open(&impls[i]);
    b.fp_s_per_iter = bench_fp_calibrate();
    if (b.rank == 0) {
        print_header(&b, bench_backend(IMPL_COUNT, ctx_of));
        bench_engines(extra, sizeof(extra), b.o.common.check ? "on" : "off", IMPL_COUNT, ctx_of,
                      name_of);
        bench_open_results(&out, b.o.common.csv, b.o.common.png, columns, C_COUNT, b.nranks,
                           bench_backend(IMPL_COUNT, ctx_of), extra);
    }

    nsizes = count_sizes(&b.o);
    for (block = b.o.min; block <= b.o.max && block > 0; block *= 2)
        run_size(&b, block, ++k, nsizes, out.csv);

    for (i = 0; i < IMPL_COUNT; i++) {
        if (impls[i].oreq != NULL) /* oc_persist's last */
            bench_check(oc_request_free(impls[i].oreq), "oc_request_free");
        bench_oc_close(&impls[i].team, &impls[i].ctx);
    }
    free(b.sbuf);
    free(b.rbuf);
    free(b.csrc);
    free(b.cdst);
    free(b.expect);
    snprintf(title, sizeof(title), "Alltoall overlap (OSU procedure), %d ranks", b.nranks);
    return bench_end(&out, b.t0, "plot_overlap.gp", title);
}
