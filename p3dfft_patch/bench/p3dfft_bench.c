/*
 * p3dfft_bench: forward + backward 3D r2c FFT time per variable for the
 * P3DFFT-compatible library's Y-Z transpose modes (blocking, mpi_nb, offload,
 * each with a chosen slab count) and for FFTW-MPI's own transform
 * (fftw_mpi_plan_dft_r2c_3d, slab decomposition, FFTW_MPI_TRANSPOSED_OUT and
 * _IN), on the same N and ranks. For each N and nv: the median over the timed
 * iterations (after a warm-up) of the slowest rank's time, divided by nv;
 * for the library also the communication and computation times from its
 * timers. Results are checked (backward(forward(x)) = N x) after the last two
 * iterations, each with an input of its own. Table, CSV, PNG.
 */
#if P3_BENCH_FFTW_MPI
#include <fftw3-mpi.h>
#else
#include <fftw3.h> /* built with an MPI that this FFTW-MPI was not built for */
#endif
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "oc_bench_common.h"
#include "p3dfft.h"

#define PROG "p3dfft_bench"
#define MAX_LIST 16

enum { M_BLOCKING, M_MPI_NB, M_OFFLOAD, M_FFTW_MPI, M_ALL };
/* the modes of this build: FFTW-MPI's only where it is linked */
#define M_COUNT (P3_BENCH_FFTW_MPI ? M_ALL : M_FFTW_MPI)
static const char *const mode_names[M_ALL] = {"blocking", "mpi_nb", "offload", "fftw_mpi"};

typedef struct {
    int n[MAX_LIST], nn, nv[MAX_LIST], nnv, slabs[MAX_LIST], nslabs;
    int use[M_ALL];
    int dims[2];
    long iters, warmup;
    const char *csv, *png;
} opts_t;

enum { C_IMPL, C_N, C_NV, C_SLABS, C_DIMS, C_TIME, C_COMM, C_COMP, C_Z, C_VS_BLOCKING, C_ERR,
       C_PE_CPU, C_WAKEUPS, C_CONFIG, C_COUNT };
static const bench_column_t columns[C_COUNT] = {
    {"impl", "impl", -12},        {"N", "n", 5},
    {"nv", "nv", 3},              {"slabs", "slabs", 6},
    {"dims", "dims", 6},          {"ms/var", "time_ms", 10},
    {"comm ms", "comm_ms", 10},   {"comp ms", "comp_ms", 10},
    {"of it z", "z_ms", 8},
    {"vs blocking", "vs_blocking", 12}, {"rel.err", "rel_err", 9},
    {"pe cpu ms", "pe_cpu_ms", 10}, {"wakeups", "wakeups", 8},
    {"", "config", 0},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: mpirun -np P " PROG " [options]\n"
               "  --n LIST        cube sizes N (default 64,128,256)\n"
               "  --nv LIST       variables per call (default 1,4)\n"
               "  --modes LIST    blocking,mpi_nb,offload,fftw_mpi or all (default all;\n"
               "                  fftw_mpi where built with FFTW-MPI%s)\n"
               "  --slabs LIST    slab counts for one variable's Y-Z stage; 0 = the\n"
               "                  library's default (default 0)\n"
               "  --dims AxB      processor grid (default: MPI_Dims_create, smaller first)\n"
               "  --iters N       timed iterations (default 10), --warmup N (default 2)\n"
               "  --csv FILE, --png FILE\n"
               "P3DFFT_FFTW_FLAG (estimate|measure|patient) sets the planner flag of both.\n",
            P3_BENCH_FFTW_MPI ? "" : "; not this one");
}

static int parse_list(const char *opt, const char *s, int *out, int *count, int min)
{
    char *copy = strdup(s), *save = NULL, *tok, *end;
    int rc = 0;
    *count = 0;
    for (tok = strtok_r(copy, ",", &save); tok != NULL && rc == 0; tok = strtok_r(NULL, ",", &save)) {
        long v = strtol(tok, &end, 10);
        if (*end != '\0' || v < min || v > 1 << 20 || *count == MAX_LIST)
            rc = bench_opt_error("%s: '%s' is not a list of at most %d integers >= %d", opt, s,
                                 MAX_LIST, min);
        else
            out[(*count)++] = (int)v;
    }
    free(copy);
    return rc == 0 && *count == 0 ? bench_opt_error("%s: empty list", opt) : rc;
}

static int parse_opt(void *o_, const char *name, const char *v)
{
    opts_t *o = o_;
    if (strcmp(name, "--n") == 0)
        return parse_list(name, v, o->n, &o->nn, 2);
    if (strcmp(name, "--nv") == 0)
        return parse_list(name, v, o->nv, &o->nnv, 1);
    if (strcmp(name, "--slabs") == 0)
        return parse_list(name, v, o->slabs, &o->nslabs, 0);
    if (strcmp(name, "--modes") == 0)
        return bench_parse_names(name, v, mode_names, M_COUNT, o->use);
    if (strcmp(name, "--iters") == 0)
        return bench_parse_count(name, v, &o->iters);
    if (strcmp(name, "--warmup") == 0)
        return bench_parse_count(name, v, &o->warmup);
    if (strcmp(name, "--csv") == 0)
        return o->csv = v, 0;
    if (strcmp(name, "--png") == 0)
        return o->png = v, 0;
    if (strcmp(name, "--dims") == 0) {
        int end = 0; /* "1x1x7" is not a grid of 1x1 */
        return sscanf(v, "%dx%d%n", &o->dims[0], &o->dims[1], &end) == 2 && v[end] == '\0' &&
                       o->dims[0] > 0 && o->dims[1] > 0
                   ? 0 : bench_opt_error("--dims: '%s' is not AxB", v);
    }
    return bench_opt_error("unknown option %s", name);
}

static const char *env_or(const char *name, const char *unset)
{
    const char *v = getenv(name);
    return v != NULL && *v != '\0' ? v : unset;
}

/* One measured configuration. */
typedef struct {
    double t_var, comm, comp, err;
    double z; /* of comp, the Z stages' (timers 7 and 8); the rest is X and Y's */
    int have_split;
    int engine;             /* offload: a progress thread runs, and then */
    double pe_cpu, wakeups; /* its CPU time and wake-ups per variable */
} result_t;

/* Median over iterations of the slowest rank's time. */
static double median_of_max(double *t, long n)
{
    long i;
    MPI_Allreduce(MPI_IN_PLACE, t, (int)n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    qsort(t, (size_t)n, sizeof(double), bench_cmp_double);
    i = n / 2;
    return n % 2 ? t[i] : 0.5 * (t[i - 1] + t[i]);
}

static double input(long i, int rank)
{
    return sin(0.001 * (double)i + rank) + 0.5;
}

/* The input of iteration it is the first one times 2^(it % 4): each element
 * differs from those of the three iterations before, so that an output left
 * over from one of them fails the check; exactly (a power of 2), and bounded. */
static double input_scale(long it)
{
    return (double)(1 << (it % 4));
}

/* dst = f src, n values (outside the timing). dst may be src. */
static void scale_values(double *dst, const double *src, size_t n, double f)
{
    size_t i;
    for (i = 0; i < n; i++)
        dst[i] = f * src[i];
}

/* The largest |out - N f in| / N over n values, backward(forward(x)) being
 * N x, divided by s: in units of the first iteration's input when this one's
 * is s times it. */
static double round_trip_err(const double *out, const double *in, size_t n, double f, double N,
                             double s)
{
    double err = 0;
    size_t i;
    for (i = 0; i < n; i++)
        err = fmax(err, fabs(out[i] - N * f * in[i]) / N);
    return err / s;
}

/* The iterations checked: the last two, so that transposes alternating
 * between two sets of buffers are checked in both. */
static int checked_iteration(long it, long total)
{
    return it >= total - 2;
}

static void offload_stats(double *cpu_s, unsigned long long *wakeups)
{
    if (Cp3dfft_get_offload_stats(cpu_s, wakeups))
        bench_die("Cp3dfft_get_offload_stats: %s", Cp3dfft_last_error());
}

/* The library in one mode: setup, warm-up, timed loop, check. */
static result_t run_p3dfft(const opts_t *o, int mode, int slabs, int n, int nv, const int dims[2],
                           int rank)
{
    int d[2] = {dims[0], dims[1]}, mem[3], s[3], e[3], rsz[3], csz[3], v;
    long it, total = o->warmup + o->iters, i;
    unsigned char fw[] = "fft", bw[] = "tff";
    double *A, *B, *C, *t = (double *)bench_buf_alloc(sizeof(double) * ((size_t)o->iters + 1));
    double timers[P3DFFT_NTIMERS], err = 0, N = (double)n * n * n, cpu[2] = {0, 0};
    unsigned long long wakes[2] = {0, 0};
    size_t nr, nc;
    result_t r = {0};

    if (Cp3dfft_set_transpose(mode_names[mode]) || Cp3dfft_set_slabs(slabs) ||
        Cp3dfft_setup(d, n, n, n, MPI_Comm_c2f(MPI_COMM_WORLD), n, n, n, 0, mem) ||
        Cp3dfft_get_dims(s, e, rsz, 1) || Cp3dfft_get_dims(s, e, csz, 2))
        bench_die("%s: %s", mode_names[mode], Cp3dfft_last_error());
    nr = (size_t)rsz[0] * rsz[1] * rsz[2];
    nc = (size_t)csz[0] * csz[1] * csz[2];
    A = (double *)bench_buf_alloc(sizeof(double) * nr * (size_t)nv);
    C = (double *)bench_buf_alloc(sizeof(double) * nr * (size_t)nv);
    B = (double *)bench_buf_alloc(2 * sizeof(double) * nc * (size_t)nv);
    for (i = 0; i < (long)nr * nv; i++)
        A[i] = input(i, rank);
    for (it = 0; it < total; it++) {
        double t0;
        if (it > 0)
            scale_values(A, A, nr * (size_t)nv, input_scale(it) / input_scale(it - 1));
        if (it == o->warmup) {
            Cset_timers();
            offload_stats(&cpu[0], &wakes[0]);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        if (Cp3dfft_ftran_r2c_many(A, (int)nr, B, (int)nc, nv, fw) ||
            Cp3dfft_btran_c2r_many(B, (int)nc, C, (int)nr, nv, bw))
            bench_die("%s: %s", mode_names[mode], Cp3dfft_last_error());
        if (it >= o->warmup)
            t[it - o->warmup] = MPI_Wtime() - t0;
        if (checked_iteration(it, total))
            err = fmax(err, round_trip_err(C, A, nr * (size_t)nv, 1, N, input_scale(it)));
    }
    Cget_timers(timers);
    offload_stats(&cpu[1], &wakes[1]);
    r.engine = mode == M_OFFLOAD; /* the other modes run no thread (the context idles) */
    r.pe_cpu = bench_max_over_ranks(cpu[1] - cpu[0]) / (double)o->iters / nv;
    r.wakeups = bench_max_over_ranks((double)(wakes[1] - wakes[0])) / (double)o->iters / nv;
    for (v = 0; v < P3DFFT_NTIMERS; v++)
        *(v < 4 ? &r.comm : &r.comp) += timers[v];
    r.comm = bench_max_over_ranks(r.comm) / (double)o->iters / nv;
    r.comp = bench_max_over_ranks(r.comp) / (double)o->iters / nv;
    r.z = bench_max_over_ranks(timers[7] + timers[8]) / (double)o->iters / nv;
    r.have_split = 1;
    r.err = bench_max_over_ranks(err);
    r.t_var = median_of_max(t, o->iters) / nv;
    if (Cp3dfft_clean())
        bench_die("Cp3dfft_clean: %s", Cp3dfft_last_error());
    free(A);
    free(B);
    free(C);
    free(t);
    return r;
}

#if P3_BENCH_FFTW_MPI
/* The planner flag the library takes from P3DFFT_FFTW_FLAG, for FFTW-MPI's
 * plans too. */
static unsigned fftw_flag(void)
{
    const char *v = getenv("P3DFFT_FFTW_FLAG");
    if (v != NULL && strcmp(v, "estimate") == 0)
        return FFTW_ESTIMATE;
    if (v != NULL && strcmp(v, "patient") == 0)
        return FFTW_PATIENT;
    return FFTW_MEASURE;
}

/* FFTW-MPI's 3D r2c: slabs of n0 = X of the library (the slowest dimension
 * here, z), transposed output, each variable transformed in turn. */
static result_t run_fftw_mpi(const opts_t *o, int n, int nv, int rank)
{
    ptrdiff_t local_n0, start0, local_n1, start1, alloc, i, j, k;
    ptrdiff_t nh = n / 2 + 1;
    long it, total = o->warmup + o->iters;
    double *in, *t = (double *)bench_buf_alloc(sizeof(double) * ((size_t)o->iters + 1));
    double err = 0, N = (double)n * n * n;
    double *orig;
    fftw_complex *out;
    fftw_plan fwd, bwd;
    result_t r = {0};
    int v;

    alloc = fftw_mpi_local_size_3d_transposed(n, n, nh, MPI_COMM_WORLD, &local_n0, &start0,
                                              &local_n1, &start1);
    in = fftw_alloc_real(2 * (size_t)alloc * (size_t)nv);
    orig = fftw_alloc_real(2 * (size_t)alloc * (size_t)nv);
    out = fftw_alloc_complex((size_t)alloc * (size_t)nv);
    if (in == NULL || out == NULL || orig == NULL)
        bench_die("fftw_mpi: cannot allocate %td values", alloc);
    fwd = fftw_mpi_plan_dft_r2c_3d(n, n, n, in, out, MPI_COMM_WORLD,
                                   fftw_flag() | FFTW_MPI_TRANSPOSED_OUT);
    bwd = fftw_mpi_plan_dft_c2r_3d(n, n, n, out, in, MPI_COMM_WORLD,
                                   fftw_flag() | FFTW_MPI_TRANSPOSED_IN);
    if (fwd == NULL || bwd == NULL)
        bench_die("fftw_mpi: cannot plan N = %d", n);
    /* plans were made on in/out (MEASURE overwrites): fill afterwards */
    for (i = 0; i < 2 * alloc * nv; i++)
        orig[i] = 0;
    for (v = 0; v < nv; v++)
        for (i = 0; i < local_n0; i++)
            for (j = 0; j < n; j++)
                for (k = 0; k < n; k++)
                    orig[v * 2 * alloc + (i * n + j) * 2 * nh + k] = input((i * n + j) * n + k + v, rank);
    for (it = 0; it < total; it++) {
        double t0;
        /* the c2r wrote its output over the input */
        scale_values(in, orig, 2 * (size_t)alloc * (size_t)nv, input_scale(it));
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        for (v = 0; v < nv; v++) {
            fftw_mpi_execute_dft_r2c(fwd, in + v * 2 * alloc, out + v * alloc);
            fftw_mpi_execute_dft_c2r(bwd, out + v * alloc, in + v * 2 * alloc);
        }
        if (it >= o->warmup)
            t[it - o->warmup] = MPI_Wtime() - t0;
        if (checked_iteration(it, total)) /* each row's n values, not its padding */
            for (v = 0; v < nv; v++)
                for (i = 0; i < local_n0; i++)
                    for (j = 0; j < n; j++) {
                        ptrdiff_t x = v * 2 * alloc + (i * n + j) * 2 * nh;
                        err = fmax(err, round_trip_err(in + x, orig + x, (size_t)n,
                                                       input_scale(it), N, input_scale(it)));
                    }
    }
    r.err = bench_max_over_ranks(err);
    r.t_var = median_of_max(t, o->iters) / nv;
    fftw_destroy_plan(fwd);
    fftw_destroy_plan(bwd);
    fftw_free(in);
    fftw_free(orig);
    fftw_free(out);
    free(t);
    return r;
}
#endif

static void emit(FILE *csv, int config, const char *impl, int n, int nv, int slabs,
                 const int dims[2], const result_t *r, double blocking)
{
    bench_field_t f[C_COUNT];
    snprintf(f[C_IMPL], sizeof(bench_field_t), "%s", impl);
    snprintf(f[C_N], sizeof(bench_field_t), "%d", n);
    snprintf(f[C_NV], sizeof(bench_field_t), "%d", nv);
    if (slabs >= 0)
        snprintf(f[C_SLABS], sizeof(bench_field_t), "%d", slabs);
    else
        f[C_SLABS][0] = '\0';
    snprintf(f[C_DIMS], sizeof(bench_field_t), "%dx%d", dims[0], dims[1]);
    bench_set_field(f[C_TIME], 1, 3, r->t_var * 1e3);
    bench_set_field(f[C_COMM], r->have_split, 3, r->comm * 1e3);
    bench_set_field(f[C_COMP], r->have_split, 3, r->comp * 1e3);
    bench_set_field(f[C_Z], r->have_split, 3, r->z * 1e3);
    bench_set_field(f[C_VS_BLOCKING], blocking > 0, 3, r->t_var / blocking);
    snprintf(f[C_ERR], sizeof(bench_field_t), "%.1e", r->err);
    bench_set_field(f[C_PE_CPU], r->engine, 3, r->pe_cpu * 1e3);
    bench_set_field(f[C_WAKEUPS], r->engine, 1, r->wakeups);
    snprintf(f[C_CONFIG], sizeof(bench_field_t), "%d", config);
    bench_report_line(columns, C_COUNT, f, f, csv);
    if (r->err > 1e-10)
        bench_die("%s N=%d nv=%d: wrong result (relative error %g)", impl, n, nv, r->err);
}

int main(int argc, char **argv)
{
    static const bench_flag_t no_flags[1];
    opts_t o = {.n = {64, 128, 256}, .nn = 3, .nv = {1, 4}, .nnv = 2, .slabs = {0}, .nslabs = 1,
                .use = {1, 1, 1, 1}, .iters = 10, .warmup = 2};
    char extra[512], impls[256] = "", title[160];
    bench_out_t out = {0};
    int rank, nproc, rc, a, b, m, s, config = 0;
    double t0;

    bench_init(&argc, &argv, PROG, &rank, &nproc, "iteration");
    t0 = MPI_Wtime();
    rc = bench_parse_args(argc, argv, &o, no_flags, 0, parse_opt, usage);
    if (rc == 0 && o.iters < 1)
        rc = bench_opt_error("--iters must be at least 1");
    if (rc == 0 && o.dims[0] != 0 && (long)o.dims[0] * o.dims[1] != nproc)
        rc = bench_opt_error("--dims %dx%d: the product must equal the number of ranks, %d",
                             o.dims[0], o.dims[1], nproc);
    if (rc != 0)
        return bench_quit(rc);
    if (o.dims[0] == 0) {
        MPI_Dims_create(nproc, 2, o.dims);
        if (o.dims[0] > o.dims[1])
            o.dims[0] = o.dims[1], o.dims[1] = nproc / o.dims[0];
    }
#if P3_BENCH_FFTW_MPI
    fftw_mpi_init();
#endif

    /* the implementations' names, for the plot's legend: mode, or mode_sK */
    for (m = 0; m < M_COUNT; m++)
        for (s = 0; s < (m == M_FFTW_MPI ? 1 : o.nslabs) && o.use[m]; s++)
            snprintf(impls + strlen(impls), sizeof(impls) - strlen(impls), "%s%s%s%.0d", *impls ? " " : "",
                     mode_names[m], m != M_FFTW_MPI && o.slabs[s] ? "_s" : "",
                     m != M_FFTW_MPI ? o.slabs[s] : 0);
    if (rank == 0) {
        printf("# " PROG ": %d ranks, grid %dx%d, %ld iterations after %ld warm-up; "
               "forward + backward per variable, median of the slowest rank\n",
               nproc, o.dims[0], o.dims[1], o.iters, o.warmup);
        /* the settings that change the work buffers' pages and the offload
         * context's path on the host, as given (unset: the library's default) */
        snprintf(extra, sizeof(extra), "grid=%dx%d impls=\"%s\" P3DFFT_HUGEPAGES=%s OC_INTRANODE=%s",
                 o.dims[0], o.dims[1], impls, env_or("P3DFFT_HUGEPAGES", "unset"),
                 env_or("OC_INTRANODE", "unset"));
        bench_open_results(&out, o.csv, o.png, columns, C_COUNT, nproc, "ucx", extra);
        bench_table_header(columns, C_COUNT);
    }

    for (a = 0; a < o.nn; a++)
        for (b = 0; b < o.nnv; b++, config++) {
            double blocking = 0;
            for (m = 0; m < M_COUNT; m++) {
                if (!o.use[m])
                    continue;
#if P3_BENCH_FFTW_MPI
                if (m == M_FFTW_MPI) {
                    result_t r = run_fftw_mpi(&o, o.n[a], o.nv[b], rank);
                    int slab_dims[2] = {1, nproc};
                    if (rank == 0)
                        emit(out.csv, config, mode_names[m], o.n[a], o.nv[b], -1, slab_dims, &r,
                             blocking);
                    continue;
                }
#endif
                for (s = 0; s < o.nslabs; s++) {
                    char name[32];
                    result_t r = run_p3dfft(&o, m, o.slabs[s], o.n[a], o.nv[b], o.dims, rank);
                    snprintf(name, sizeof(name), "%s%s%.0d", mode_names[m], o.slabs[s] ? "_s" : "",
                             o.slabs[s]);
                    if (m == M_BLOCKING && s == 0)
                        blocking = r.t_var;
                    if (rank == 0)
                        emit(out.csv, config, name, o.n[a], o.nv[b], o.slabs[s], o.dims, &r,
                             m == M_BLOCKING && s == 0 ? 0 : blocking);
                }
            }
        }
#if P3_BENCH_FFTW_MPI
    fftw_mpi_cleanup();
#endif
    snprintf(title, sizeof(title), "P3DFFT-compatible FFT, %d ranks (grid %dx%d)", nproc, o.dims[0],
             o.dims[1]);
    return bench_end(&out, t0, "plot_p3dfft.gp", title);
}
