/*
 * oc_bench_halo: how much of a 3D halo exchange hides behind computation, by
 * the OSU procedure (DESIGN.md, "How overlap is measured"), for five
 * implementations side by side in one run:
 *
 *   mpi_2sided   pack the faces, MPI_Irecv/MPI_Isend with the 6 neighbours
 *                (MPI_Cart_shift), MPI_Waitall, unpack
 *   mpi_rma      pack, MPI_Put into the neighbours' landing buffers in a
 *                generalized active-target epoch (post/start/complete/wait),
 *                unpack
 *   oc_thread    offcoll halo plan, progress thread, intranode shared memory
 *   oc_loopback  the same through the network transport (OC_INTRANODE=loopback)
 *   oc_inline    offcoll halo plan, progress only inside oc_halo_wait
 *
 * Each rank holds an N^3 block (default 128^3 doubles) of every field, with
 * ghost layers of width w; the ranks form an MPI_Dims_create grid. One
 * exchange starts every field of a configuration (1 or 9 fields by default),
 * then waits for every field, as a stencil code exchanging its 9 wavefield
 * arrays together would. With corners, the MPI versions sweep x, then y with
 * the x ghosts, then z with both, so only the x stage can overlap.
 *
 * Per configuration and implementation: pure exchange time T_comm (start +
 * wait), then start + calibrated CPU-bound compute lasting T_comm + wait,
 * overlap = max(0, 100 - 100 (T_overall - T_compute) / T_comm), all times
 * averaged over ranks. When a progress thread takes CPU from the compute on
 * the same cores, T_compute grows and OSU's figure credits that; the net
 * overlap measures against the compute as calibrated (T_comm) instead, as an
 * application sees it. Beside them: the bound this host allows when every byte
 * is copied by a CPU (1 - T_copy / T_comm, T_copy the time to pack the faces
 * a rank sends out of its fields and unpack those it receives into the
 * ghosts, with the exchanges' own strided box copies: the fewest copies, one
 * from the field into the neighbour's memory and one out of it into the
 * ghosts, as offcoll does on shared memory), the progress thread's CPU time
 * and its wake-ups per exchange. The ghost cells are checked against the
 * neighbours' values, outside the timed interval, after the first exchange of
 * each implementation and after two more that follow the timed ones (with
 * the compute between start and wait, as timed); each of these carries fresh
 * values into poisoned ghosts, so that data left from an earlier exchange
 * fails the check.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "halo_bench.h"

/* ---- implementations ------------------------------------------------------------ */

#define OC_IMPL(mode_, intranode_)                                                         \
    .offcoll = 1, .mode = mode_, .intranode = intranode_, .setup = halo_oc_setup,          \
    .start = halo_oc_start, .wait = halo_oc_wait, .teardown = halo_oc_teardown

/* In the order of the IMPL_* constants, named as in --impl. */
static halo_impl_t impls[IMPL_COUNT] = {
    [IMPL_MPI_2SIDED] = {.name = "mpi_2sided", .setup = halo_mpi_setup,
                         .start = halo_two_sided_start, .wait = halo_mpi_wait,
                         .teardown = halo_mpi_teardown},
    [IMPL_MPI_RMA] = {.name = "mpi_rma", .setup = halo_mpi_setup, .start = halo_rma_start,
                      .wait = halo_mpi_wait, .teardown = halo_mpi_teardown},
    [IMPL_OC_THREAD] = {.name = "oc_thread",
                        OC_IMPL(OC_PROGRESS_THREAD, OC_INTRANODE_SHM)},
    [IMPL_OC_LOOPBACK] = {.name = "oc_loopback",
                          OC_IMPL(OC_PROGRESS_THREAD, OC_INTRANODE_LOOPBACK)},
    [IMPL_OC_INLINE] = {.name = "oc_inline", OC_IMPL(OC_PROGRESS_INLINE, OC_INTRANODE_SHM)},
};

static oc_context_t *ctx_of(int i)
{
    return impls[i].ctx;
}

static const char *name_of(int i)
{
    return impls[i].name;
}

/* ---- timed phases ------------------------------------------------------------ */

/* One exchange: start every field, (compute), wait for every field. */
static double exchange(halo_bench_t *b, halo_impl_t *im, int nf, uint64_t fp_iters,
                       double *t_compute)
{
    double t, tc = 0;
    int f;
    MPI_Barrier(b->cart);
    t = MPI_Wtime();
    for (f = 0; f < nf; f++)
        im->start(im, b, f);
    if (fp_iters > 0) {
        tc = MPI_Wtime();
        bench_fp_work(fp_iters);
        tc = MPI_Wtime() - tc;
    }
    for (f = 0; f < nf; f++)
        im->wait(im, b, f);
    t = MPI_Wtime() - t;
    if (t_compute != NULL)
        *t_compute += tc;
    return t;
}

/* An untimed exchange, checked: fresh values (never sent before, so ghosts
 * left from an earlier exchange, or unpacked before this one's data came,
 * fail) into poisoned ghosts (so ghosts never written fail), with fp_iters
 * steps of compute between start and wait, as in the overlapped phase. */
static double checked_exchange(halo_bench_t *b, halo_impl_t *im, int nf, uint64_t fp_iters,
                               const char *ph)
{
    double t;
    int f;
    bench_at.phase = ph;
    if (b->o.common.check) {
        b->seq++;
        for (f = 0; f < nf; f++) {
            halo_fill_field(b, f);
            halo_ghost_pass(b, f, 1);
        }
    }
    t = exchange(b, im, nf, fp_iters, NULL);
    if (b->o.common.check)
        for (f = 0; f < nf; f++)
            halo_ghost_pass(b, f, 0);
    return t;
}

/* Mean time per exchange on this rank; *compute_mean likewise when given. */
static double phase(halo_bench_t *b, halo_impl_t *im, int nf, const char *name, long iters,
                    uint64_t fp_iters, double *compute_mean)
{
    double total = 0, compute = 0;
    long it;
    bench_at.phase = name;
    for (it = 0; it < iters; it++) {
        bench_at.iter = it;
        total += exchange(b, im, nf, fp_iters, &compute);
    }
    bench_at.iter = -1;
    if (compute_mean != NULL)
        *compute_mean = iters > 0 ? compute / (double)iters : 0;
    return iters > 0 ? total / (double)iters : 0;
}

/* What is measured per exchange on each rank, then averaged over ranks. */
enum { M_COMM, M_OVERALL, M_COMPUTE, M_PE_CPU, M_WAKEUPS, M_COUNT };

typedef struct {
    long iters;
    double setup;      /* the plan, windows or requests made before the first exchange, s,
                        * the slowest rank's (once per configuration: one sample) */
    double m[M_COUNT]; /* seconds or counts per exchange, mean over ranks */
    double copy;       /* packing the faces sent and unpacking those received, s, mean
                        * over ranks */
} result_t;

static result_t measure(halo_bench_t *b, halo_impl_t *im, int nf)
{
    result_t r = {0};
    double *m = r.m, probe, t;
    long warm;
    uint64_t fp_iters;
    oc_stats_t s0, s1;

    probe = bench_max_over_ranks(checked_exchange(b, im, nf, 0, "first exchange"));
    warm = bench_fit_budget(b->o.common.budget_s / 4, probe, 1, b->o.common.warmup);
    t = warm > 0 ? phase(b, im, nf, "warm-up", warm, 0, NULL) : probe;
    r.iters = bench_fit_budget(b->o.common.budget_s, bench_max_over_ranks(t), BENCH_MIN_TIMED_ITERS,
                               b->o.common.iters);

    m[M_COMM] = phase(b, im, nf, "pure", r.iters, 0, NULL);
    /* Each rank computes for its own T_comm, as OSU does. */
    fp_iters = bench_fp_steps_for(b->fp_s_per_iter, m[M_COMM]);
    bench_stats(im->ctx, &s0);
    m[M_OVERALL] = phase(b, im, nf, "overlapped", r.iters, fp_iters, &m[M_COMPUTE]);
    bench_stats(im->ctx, &s1);
    m[M_PE_CPU] = (s1.progress_cpu_s - s0.progress_cpu_s) / (double)r.iters;
    m[M_WAKEUPS] = (double)(s1.wakeups - s0.wakeups) / (double)r.iters;
    /* Two in a row: offcoll's halo plans alternate between two sets of landing
     * zones (by the parity of the exchange), and each must deliver. */
    checked_exchange(b, im, nf, fp_iters, "first checked exchange after the timed ones");
    checked_exchange(b, im, nf, fp_iters, "second checked exchange after the timed ones");
    bench_mean_over_ranks(m, M_COUNT);
    return r;
}

/* ---- output ---------------------------------------------------------------------- */

enum { C_IMPL, C_FIELDS, C_N, C_WIDTH, C_CORNERS, C_PERIODIC, C_DIMS, C_RANKS, C_BYTES,
       C_ITERS, C_PURE, C_OVERALL, C_COMPUTE, C_OVERLAP, C_NET, C_COPY, C_BOUND, C_PE_CPU,
       C_WAKEUPS, C_SETUP, C_CONFIG, C_COUNT };

static const bench_column_t columns[C_COUNT] = {
    [C_IMPL] = {"impl", "impl", -12},         [C_FIELDS] = {"fields", "fields", 6},
    [C_N] = {"", "n", 0},                     [C_WIDTH] = {"", "width", 0},
    [C_CORNERS] = {"", "corners", 0},         [C_PERIODIC] = {"", "periodic", 0},
    [C_DIMS] = {"", "dims", 0},               [C_RANKS] = {"", "ranks", 0},
    [C_BYTES] = {"sent", "bytes_sent_per_rank", 7},
    [C_ITERS] = {"iters", "iters", 6},        [C_PURE] = {"pure_us", "pure_us", 10},
    [C_OVERALL] = {"overall_us", "overall_us", 10},
    [C_COMPUTE] = {"compute_us", "compute_us", 10},
    [C_OVERLAP] = {"overlap%", "overlap_pct", 8}, [C_NET] = {"net%", "net_overlap_pct", 5},
    [C_COPY] = {"copy_us", "copy_us", 9},
    [C_BOUND] = {"bound%", "bound_pct", 7},
    [C_PE_CPU] = {"pe_cpu_us", "pe_cpu_us_per_exchange", 10},
    [C_WAKEUPS] = {"wakeup/ex", "wakeups_per_exchange", 9},
    [C_SETUP] = {"setup_us", "setup_us", 9},
    [C_CONFIG] = {"", "config", 0},
};

static const char *bytes_str(size_t s, char *buf, size_t len)
{
    if (s >= ((size_t)1 << 20))
        snprintf(buf, len, "%.1fM", (double)s / (1 << 20));
    else if (s >= 1024)
        snprintf(buf, len, "%.0fK", (double)s / 1024);
    else
        snprintf(buf, len, "%zu", s);
    return buf;
}

static void row_fields(const halo_bench_t *b, const halo_impl_t *im, int cfg, const result_t *r,
                       int table, bench_field_t f[C_COUNT])
{
    const double *m = r->m;
    int nf = b->o.fields[cfg], oc = im->offcoll, thread = oc && im->mode == OC_PROGRESS_THREAD;
    size_t bytes = b->sent_per_field * (size_t)nf;

    snprintf(f[C_IMPL], sizeof(bench_field_t), "%s", im->name);
    snprintf(f[C_FIELDS], sizeof(bench_field_t), "%d", nf);
    snprintf(f[C_N], sizeof(bench_field_t), "%zux%zux%zu", b->n[0], b->n[1], b->n[2]);
    snprintf(f[C_WIDTH], sizeof(bench_field_t), "%zu", b->w);
    snprintf(f[C_CORNERS], sizeof(bench_field_t), "%d", b->o.corners);
    snprintf(f[C_PERIODIC], sizeof(bench_field_t), "%d", b->o.periodic);
    snprintf(f[C_DIMS], sizeof(bench_field_t), "%dx%dx%d", b->dims[0], b->dims[1], b->dims[2]);
    snprintf(f[C_RANKS], sizeof(bench_field_t), "%d", b->nranks);
    if (table)
        bytes_str(bytes, f[C_BYTES], sizeof(bench_field_t));
    else
        snprintf(f[C_BYTES], sizeof(bench_field_t), "%zu", bytes);
    snprintf(f[C_ITERS], sizeof(bench_field_t), "%ld", r->iters);
    bench_set_field(f[C_PURE], 1, 1, m[M_COMM] * 1e6);
    bench_set_field(f[C_OVERALL], 1, 1, m[M_OVERALL] * 1e6);
    bench_set_field(f[C_COMPUTE], 1, 1, m[M_COMPUTE] * 1e6);
    bench_set_field(f[C_OVERLAP], 1, 1, bench_overlap_pct(m[M_COMM], m[M_OVERALL], m[M_COMPUTE]));
    bench_set_field(f[C_NET], 1, 0, bench_overlap_pct(m[M_COMM], m[M_OVERALL], m[M_COMM]));
    bench_set_field(f[C_COPY], 1, 1, r->copy * 1e6);
    bench_set_field(f[C_BOUND], 1, 1, bench_bound_pct(m[M_COMM], r->copy));
    bench_set_field(f[C_PE_CPU], thread, 1, m[M_PE_CPU] * 1e6);
    bench_set_field(f[C_WAKEUPS], thread, 2, m[M_WAKEUPS]);
    bench_set_field(f[C_SETUP], 1, 0, r->setup * 1e6);
    snprintf(f[C_CONFIG], sizeof(bench_field_t), "%d", cfg);
}

static void report_row(const halo_bench_t *b, const halo_impl_t *im, int cfg, const result_t *r,
                       FILE *csv)
{
    bench_field_t table[C_COUNT], csv_f[C_COUNT];
    row_fields(b, im, cfg, r, 1, table);
    row_fields(b, im, cfg, r, 0, csv_f);
    bench_report_line(columns, C_COUNT, table, csv_f, csv);
}

static void print_header(const halo_bench_t *b)
{
    char per_field[24];
    int i;
    printf("# " HALO_PROG ": 3D halo exchange overlap, OSU procedure, %d ranks, grid %dx%dx%d%s\n",
           b->nranks, b->dims[0], b->dims[1], b->dims[2],
           b->o.periodic ? " periodic" : " (not periodic)");
    printf("# field: %zux%zux%zu doubles per rank, ghost width %zu (%.1f MB with ghosts), %s; "
           "%s sent per field and exchange\n", b->n[0], b->n[1], b->n[2], b->w,
           (double)b->cells * sizeof(double) / 1e6,
           b->o.corners ? "faces, edges and corners (x, y, z sweep)" : "faces only",
           bytes_str(b->sent_per_field, per_field, sizeof(per_field)));
    for (i = 0; i < IMPL_COUNT; i++)
        if (impls[i].ctx != NULL)
            printf("# offcoll of %s: backend %s; progress engine (rank 0) %s\n", impls[i].name,
                   oc_context_backend_info(impls[i].ctx),
                   oc_context_progress_info(impls[i].ctx));
    printf("# dummy compute: %.3f ns per loop step (calibrated); budget %.2f s per phase, "
           "exchanges %d..%ld\n", b->fp_s_per_iter * 1e9, b->o.common.budget_s,
           BENCH_MIN_TIMED_ITERS, b->o.common.iters);
    printf("# exchange = start all fields, [compute], wait all fields; us per exchange, mean "
           "over ranks\n# overlap = max(0, 100 - 100*(overall - compute)/pure); bound = "
           "100*(1 - copy/pure), copy = packing the faces sent + unpacking those received\n"
           "# net = the same against the compute as calibrated (lasting pure), not as it ran: "
           "CPU taken from the\n#   compute (compute above pure: by a progress thread) "
           "counts against it, as in an application\n"
           "# setup = what is made before the first exchange (offcoll: oc_halo_create; mpi_rma: "
           "MPI_Win_allocate\n#   and groups; mpi_2sided: buffers), once per row, the slowest "
           "rank's\n"
           "# ghost cells checked: %s\n",
           b->o.common.check ? "after the first exchange and two after the timed ones, "
                               "fresh values each" : "no (--no-check)");
    bench_table_header(columns, C_COUNT);
    fflush(stdout);
}

/* ---- main -------------------------------------------------------------------------- */

typedef struct {
    halo_bench_t *b;
    int nf;
} face_copies_t;

/* The copies of one exchange of nf fields when a CPU moves every byte, made
 * as the exchanges make them (box_copy: a face across dimension 2 is runs of
 * the ghost width): every face this rank sends packed out of its field, every
 * face it receives unpacked into its ghosts (before the exchanges, which
 * poison the ghosts first). */
static void face_copies(void *arg)
{
    face_copies_t *a = arg;
    halo_bench_t *b = a->b;
    int pack, f, d, s;
    for (pack = 1; pack >= 0; pack--) {
        double *buf = (double *)(pack ? b->packed : b->landed);
        for (f = 0; f < a->nf; f++)
            for (d = 0; d < 3; d++)
                for (s = 0; s < 2; s++)
                    if (b->nbr[d][s] != MPI_PROC_NULL) {
                        halo_box_copy(b, b->field[f], pack ? &b->send[d][s] : &b->recv[d][s],
                                      buf, pack);
                        buf += b->face[d];
                    }
    }
}

static void run_config(halo_bench_t *b, int cfg, FILE *csv)
{
    result_t res[IMPL_COUNT];
    int i, nf = b->o.fields[cfg];
    face_copies_t fc = {b, nf};
    double copy = bench_time_copies(face_copies, &fc), setup;

    snprintf(bench_at.what, sizeof(bench_at.what), "%d field%s", nf, nf > 1 ? "s" : "");
    for (i = 0; i < IMPL_COUNT; i++) {
        halo_impl_t *im = &impls[i];
        if (!b->o.use[i] || im->unavailable)
            continue;
        bench_at.impl = im->name;
        bench_at.phase = "set-up";
        if (b->rank == 0)
            fprintf(stderr, HALO_PROG ": [%d/%d] %2d field%s %-12s (%.1f s elapsed)\n", cfg + 1,
                    b->o.nconfigs, nf, nf > 1 ? "s" : " ", im->name, MPI_Wtime() - b->t0);
        setup = bench_setup_start();
        im->setup(im, b, nf);
        setup = bench_setup_end(setup);
        res[i] = measure(b, im, nf);
        res[i].setup = setup;
        res[i].copy = copy;
        bench_at.phase = "tear-down";
        im->teardown(im, b, nf);
    }
    bench_at.impl = "-";
    bench_at.what[0] = '\0';
    if (b->rank != 0)
        return;
    for (i = 0; i < IMPL_COUNT; i++)
        if (b->o.use[i] && !impls[i].unavailable)
            report_row(b, &impls[i], cfg, &res[i], csv);
    printf("\n");
    fflush(stdout);
}

int main(int argc, char **argv)
{
    halo_bench_t b = {0};
    bench_out_t out = {0};
    char extra[2048], title[256];
    size_t copy_bytes;
    int i, rc;

    bench_init(&argc, &argv, HALO_PROG, &b.rank, &b.nranks, "exchange");
    rc = halo_parse_opts(argc, argv, &b.o, b.nranks);
    if (rc != 0)
        return bench_quit(rc);
    b.t0 = MPI_Wtime();

    halo_geometry(&b);
    for (i = 0; i < b.o.nconfigs; i++)
        if (b.o.fields[i] > b.nfields_max)
            b.nfields_max = b.o.fields[i];
    for (i = 0; i < b.nfields_max; i++)
        b.field[i] = (double *)bench_buf_alloc(b.cells * sizeof(double));
    copy_bytes = b.sent_per_field * (size_t)b.nfields_max;
    b.packed = bench_buf_alloc(copy_bytes);
    b.landed = bench_buf_alloc(copy_bytes);
    for (i = 0; i < IMPL_COUNT; i++)
        if (b.o.use[i])
            halo_impl_open(&b, &impls[i]);
    b.fp_s_per_iter = bench_fp_calibrate();
    if (b.rank == 0) {
        print_header(&b);
        bench_engines(extra, sizeof(extra), b.o.common.check ? "on" : "off", IMPL_COUNT, ctx_of,
                      name_of);
        bench_open_results(&out, b.o.common.csv, b.o.common.png, columns, C_COUNT, b.nranks,
                           bench_backend(IMPL_COUNT, ctx_of), extra);
    }

    for (i = 0; i < b.o.nconfigs; i++)
        run_config(&b, i, out.csv);

    for (i = 0; i < IMPL_COUNT; i++)
        bench_oc_close(&impls[i].team, &impls[i].ctx);
    for (i = 0; i < b.nfields_max; i++)
        free(b.field[i]);
    free(b.packed);
    free(b.landed);
    MPI_Comm_free(&b.cart);
    snprintf(title, sizeof(title),
             "Halo exchange overlap (OSU procedure), %zux%zux%zu doubles/rank, w=%zu, %s, %d ranks",
             b.n[0], b.n[1], b.n[2], b.w, b.o.corners ? "corners" : "faces", b.nranks);
    return bench_end(&out, b.t0, "plot_halo.gp", title);
}
