/*
 * awp_bench: time per step of the AWP-ODC kernel in each exchange mode, and
 * how it splits into computation and the communication the application
 * sees (time inside the exchange calls).
 *
 *   mpirun -np N awp_bench [--n 96,128] [--steps 100] [--warmup 10]
 *                          [--modes two-sided,offload,rma,empty] [--csv F] [--png F]
 *
 * Each rank holds n^3 cells (the ranks form an MPI_Dims_create grid), in a
 * homogeneous half-space with a free surface and a sponge, excited by a
 * source in the middle. Per mode and size: the median over the timed steps of
 * the slowest rank's step, the mean step, and the means over ranks and steps
 * of the visible communication and of the rest; in the offload mode also
 * offcoll's progress-thread CPU time and wake-ups per step, which tell
 * what the thread takes from a core beside the computation (its copies,
 * and its polling for OC_SPIN_US after each list). The CSV is appended to, so
 * runs on 2 and on 4 ranks share one file and one plot. The wavefields at the
 * end must be the same, bit for bit, in every mode of a size (the kernel
 * computes each point alike whatever the exchange): a difference is a wrong
 * exchange, and the benchmark fails. The mode "empty" is a reference, not a
 * run: the overlapped step with the same messages, all of zero bytes, so its
 * visible communication is what waiting for the neighbours costs alone
 * (exchange_empty.c); its wavefields are not compared.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awp_error.h"
#include "awp_fp.h"
#include "awp_output.h"
#include "awp_sim.h"
#include "oc_bench_common.h" /* bench_same_args */
#include "oc_bench_plot.h"

#define PROG "awp_bench"
#define MAX_SIZES 8

typedef struct {
    int n[MAX_SIZES], nsizes;
    int steps, warmup;
    int use[AWP_MODE_COUNT];
    const char *csv, *png;
    int flush; /* subnormals flushed to zero in the steps: 1, 0, or -1 for the scenario default */
} opts_t;

typedef struct {
    double median_ms, mean_ms, comm_ms, compute_ms, start_ms;
    int engine;                   /* the mode has an engine of its own that counts: */
    double pe_cpu_ms, wakeups;    /* its thread's CPU and wake-ups per step */
    uint64_t checksum; /* of this rank's wavefields at the end (wavefield_checksum) */
} result_t;

static void usage(FILE *f)
{
    fprintf(f, "usage: mpirun -np N " PROG " [options]\n"
               "  --n LIST       cells per rank along each axis, comma-separated (default 96)\n"
               "  --steps S      timed steps per mode and size (default 100)\n"
               "  --warmup W     untimed steps before them (default 10)\n"
               "  --modes LIST   comma-separated: two-sided,offload,rma,empty (default all;\n"
               "                 empty: zero-byte messages, what waiting for the\n"
               "                 neighbours costs without data)\n"
               "  --denormals flush|keep  subnormal floats in the steps (default: flush\n"
               "                 where the CPU can; keep shows what they cost)\n"
               "  --csv PATH     append one row per mode and size\n"
               "  --png PATH     plot the whole CSV (needs --csv)\n");
}

static int modes_used(const opts_t *o)
{
    int m, n = 0;
    for (m = 0; m < AWP_MODE_COUNT; m++)
        n += o->use[m];
    return n;
}

/* Those whose wavefields are a run's, to be compared. */
static int modes_compared(const opts_t *o)
{
    int m, n = 0;
    for (m = 0; m < AWP_MODE_COUNT; m++)
        n += o->use[m] && !awp_exchange_for((awp_mode_t)m)->timing_only;
    return n;
}

static int parse_int_list(const char *s, int *out, int max, int *count)
{
    char buf[256], *save = NULL, *tok;
    snprintf(buf, sizeof(buf), "%s", s);
    *count = 0;
    for (tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
        char *end;
        long v = strtol(tok, &end, 10);
        if (*end != '\0' || v < 4 || v > 4096 || *count == max)
            return awp_fail("--n: expected up to %d sizes from 4 to 4096, got '%s'", max, s);
        out[(*count)++] = (int)v;
    }
    return *count > 0 ? 0 : awp_fail("--n: no size given");
}

static int parse_opts(int argc, char **argv, opts_t *o)
{
    int i, m;
    *o = (opts_t){{96}, 1, 100, 10, {1, 1, 1, 1}, NULL, NULL, -1};
    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)
            return 1;
        if (v == NULL) /* an option missing its value, or none */
            return awp_fail("'%s' without a value: options are '--name value' (--help lists "
                            "them)", a);
        i++;
        if (strcmp(a, "--n") == 0) {
            if (parse_int_list(v, o->n, MAX_SIZES, &o->nsizes) != 0)
                return -1;
        } else if (strcmp(a, "--steps") == 0 || strcmp(a, "--warmup") == 0) {
            int timed = strcmp(a, "--steps") == 0; /* at least one timed step */
            long x = strtol(v, &end, 10);
            if (*end != '\0' || x < timed || x > 1000000)
                return awp_fail("%s: expected a count >= %d, got '%s'", a, timed, v);
            *(timed ? &o->steps : &o->warmup) = (int)x;
        } else if (strcmp(a, "--modes") == 0) {
            char buf[256], *save = NULL, *tok;
            snprintf(buf, sizeof(buf), "%s", v);
            memset(o->use, 0, sizeof(o->use));
            for (tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
                for (m = 0; m < AWP_MODE_COUNT && strcmp(tok, awp_mode_name(m)) != 0; m++)
                    ;
                if (m == AWP_MODE_COUNT)
                    return awp_fail("--modes: unknown mode '%s' (two-sided, offload, rma, empty)", tok);
                o->use[m] = 1;
            }
            if (modes_used(o) == 0) /* it would run nothing and look like success */
                return awp_fail("--modes '%s' names no mode (two-sided, offload, rma, empty)", v);
        } else if (strcmp(a, "--denormals") == 0) {
            char msg[256];
            if (awp_denormals_parse(v, &o->flush) != 0) {
                snprintf(msg, sizeof(msg), "%s", awp_last_error()); /* awp_fail overwrites it */
                return awp_fail("--denormals: %s", msg);
            }
        } else if (strcmp(a, "--csv") == 0)
            o->csv = v;
        else if (strcmp(a, "--png") == 0)
            o->png = v;
        else
            return awp_fail("unknown option %s (--help lists the options)", a);
    }
    if (o->png != NULL && o->csv == NULL)
        return awp_fail("--png plots the CSV: give --csv too");
    return 0;
}

/* The benchmark's scenario for n^3 cells per rank on dims. */
static void scenario(awp_scenario_t *sc, int n, const int dims[3], awp_mode_t mode, int steps,
                     int flush)
{
    int d;
    awp_scenario_defaults(sc, "bench");
    for (d = 0; d < 3; d++) {
        sc->ng[d] = n * dims[d];
        sc->proc[d] = dims[d];
        sc->source.pos[d] = sc->ng[d] / 2;
    }
    sc->h = 100;
    sc->dt = 0.01;
    sc->steps = steps;
    sc->media.nlayers = 1;
    sc->media.layer[0] = (awp_layer_t){0, 3464, 2000, 2500};
    sc->sponge_nd = n / 4 < 20 ? n / 4 : 20;
    sc->source.kind = AWP_STF_GAUSSIAN;
    sc->source.param = 2.0;
    sc->source.moment[3] = 1; /* xy double couple */
    sc->mode = mode;
    if (flush >= 0)
        sc->flush_denormals = flush;
}

/* FNV-1a over the bits of this rank's interior cells of every wavefield. */
static uint64_t wavefield_checksum(const awp_sim_t *s)
{
    uint64_t h = 14695981039346656037ull;
    int f, i, j, k;
    for (f = 0; f < AWP_NFIELDS; f++)
        for (i = 0; i < s->g.n[0]; i++)
            for (j = 0; j < s->g.n[1]; j++) {
                const float *p = s->w.f[f] + awp_at(&s->g, i, j, 0);
                for (k = 0; k < s->g.n[2]; k++) {
                    uint32_t bits;
                    memcpy(&bits, &p[k], sizeof(bits));
                    h = (h ^ bits) * 1099511628211ull;
                }
            }
    return h;
}

/* Collective: fails the run, loudly, when the wavefields of mode m differ
 * from those of the first mode run on this size (*first < 0: m is it). */
static void check_same_wavefields(const result_t *r, int m, int n, int *first, uint64_t *sum)
{
    int differ, any, rank;
    if (awp_exchange_for((awp_mode_t)m)->timing_only)
        return;
    if (*first < 0) {
        *first = m;
        *sum = r->checksum;
        return;
    }
    differ = r->checksum != *sum;
    MPI_Allreduce(&differ, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (!any)
        return;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (differ)
        fprintf(stderr, PROG ": rank %d: WRONG DATA: n = %d: the wavefields after the %s run "
                "differ from those after the %s run; the modes must agree bit for bit\n", rank,
                n, awp_mode_name(m), awp_mode_name(*first));
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Runs warm-up + timed steps; rank 0 gets the result. */
static int measure(const opts_t *o, int n, const int dims[3], awp_mode_t mode, result_t *res)
{
    static awp_sim_t s;
    static awp_scenario_t sc;
    double *step = calloc((size_t)o->steps, sizeof(double)), sums[5] = {0, 0, 0, 0, 0};
    awp_exchange_stats_t x0 = {0}, x1 = {0};
    int i, rc, size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    scenario(&sc, n, dims, mode, o->warmup + o->steps, o->flush);
    rc = step == NULL ? awp_fail("out of memory") : awp_scenario_check(&sc, size);
    if (rc == 0)
        rc = awp_sim_create(&s, &sc, MPI_COMM_WORLD);
    if (rc != 0) {
        free(step);
        return rc;
    }
    for (i = 0; i < o->warmup && rc == 0; i++)
        rc = awp_sim_step(&s);
    res->engine = s.x->stats != NULL;
    if (rc == 0 && res->engine)
        rc = awp_sim_exchange_stats(&s, &x0);
    MPI_Barrier(MPI_COMM_WORLD);
    s.t_step = s.t_comm = s.t_start = 0;
    for (i = 0; i < o->steps && rc == 0; i++) {
        double t = s.t_step;
        rc = awp_sim_step(&s);
        step[i] = s.t_step - t;
    }
    if (rc == 0 && res->engine)
        rc = awp_sim_exchange_stats(&s, &x1);
    /* The timed steps only, as the median: awp_sim_finish's waits for the
     * exchanges still in flight (offload, rma) come once per run, not per step. */
    sums[0] = s.t_step, sums[1] = s.t_comm, sums[2] = s.t_start;
    sums[3] = x1.engine_cpu_s - x0.engine_cpu_s;
    sums[4] = (double)(x1.wakeups - x0.wakeups);
    if (rc == 0)
        rc = awp_sim_finish(&s);
    if (rc != 0) {
        fprintf(stderr, PROG ": %s: %s\n", awp_mode_name(mode), awp_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    res->checksum = wavefield_checksum(&s);
    /* the slowest rank's step sets the pace of all */
    MPI_Allreduce(MPI_IN_PLACE, step, o->steps, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, sums, 5, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    res->mean_ms = 1e3 * sums[0] / size / o->steps;
    res->comm_ms = 1e3 * sums[1] / size / o->steps;
    res->start_ms = 1e3 * sums[2] / size / o->steps;
    res->pe_cpu_ms = 1e3 * sums[3] / size / o->steps;
    res->wakeups = sums[4] / size / o->steps;
    res->compute_ms = res->mean_ms - res->comm_ms;
    qsort(step, (size_t)o->steps, sizeof(double), cmp_double);
    res->median_ms = 1e3 * step[o->steps / 2];
    free(step);
    return awp_sim_free(&s);
}

#define CSV_HEADER "config,label,mode,ranks,px,py,pz,n,steps,step_ms_median,step_ms_mean," \
                   "comm_ms,compute_ms,comm_pct,start_ms,pe_cpu_ms,wakeups"

/* Index of the next configuration in an existing CSV (its last row's + 1);
 * -1 where its header is not this version's (rows would not match it). */
static int next_config(const char *path)
{
    char line[512];
    int last = -1, other = 0;
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return 0;
    while (fgets(line, sizeof(line), f) != NULL)
        if (line[0] >= '0' && line[0] <= '9')
            last = atoi(line);
        else if (line[0] != '#')
            other |= strcmp(line, CSV_HEADER "\n") != 0;
    fclose(f);
    return other ? -1 : last + 1;
}

static FILE *open_csv(const char *path, int *config)
{
    FILE *f;
    if ((*config = next_config(path)) < 0) {
        fprintf(stderr, PROG ": %s has other columns (an older awp_bench's?): appending "
                        "would mix them; give a new file\n", path);
        return NULL;
    }
    if ((f = fopen(path, "a")) == NULL) {
        fprintf(stderr, PROG ": cannot write %s: %s\n", path, strerror(errno));
        return NULL;
    }
    if (*config == 0)
        fprintf(f, CSV_HEADER "\n");
    return f;
}

int main(int argc, char **argv)
{
    opts_t o;
    FILE *csv = NULL;
    int rank, size, dims[3] = {0, 0, 0}, rc, k, m, config = 0, first, flushed;
    uint64_t sum = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (!bench_same_args(PROG, argc, argv)) {
        MPI_Finalize();
        return 2;
    }
    rc = parse_opts(argc, argv, &o);
    if (rc != 0) {
        if (rank == 0 && rc < 0)
            fprintf(stderr, PROG ": %s\n", awp_last_error());
        if (rank == 0 && rc > 0)
            usage(stdout);
        MPI_Finalize();
        return rc < 0 ? 2 : 0;
    }
    flushed = o.flush < 0 ? awp_fp_flush_available() : o.flush;
    MPI_Dims_create(size, 3, dims);
    if (rank == 0 && o.csv != NULL && (csv = open_csv(o.csv, &config)) == NULL)
        MPI_Abort(MPI_COMM_WORLD, 1);
    if (rank == 0) {
        printf("# wavefields at the end: %s%s\n", modes_compared(&o) > 1
               ? "the same bit for bit in every mode (checked)" : "not checked (one mode)",
               o.use[AWP_MODE_EMPTY] ? "; empty moves no data: a reference, not compared" : "");
        printf("# subnormal floats in the steps: %s\n", flushed ? "flushed to zero" : "kept");
        printf("%-10s %5s %-7s %6s %12s %10s %10s %10s %7s %9s %9s %8s\n", "mode", "ranks",
               "grid", "n", "step_ms_med", "step_ms", "comm_ms", "compute_ms", "comm%",
               "start_ms", "pe_cpu_ms", "wakeups");
    }
    for (k = 0; k < o.nsizes; k++, config++)
        for (m = 0, first = -1; m < AWP_MODE_COUNT; m++) {
            result_t r = {0};
            char label[64], cpu[32] = "", wakes[32] = "";
            if (!o.use[m])
                continue;
            if (measure(&o, o.n[k], dims, (awp_mode_t)m, &r) != 0) {
                if (rank == 0)
                    fprintf(stderr, PROG ": %s\n", awp_last_error());
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
            check_same_wavefields(&r, m, o.n[k], &first, &sum);
            if (rank != 0)
                continue;
            snprintf(label, sizeof(label), "%d ranks %d^3%s", size, o.n[k],
                     flushed ? "" : " subnormals kept");
            if (r.engine) {
                snprintf(cpu, sizeof(cpu), "%.4f", r.pe_cpu_ms);
                snprintf(wakes, sizeof(wakes), "%.1f", r.wakeups);
            }
            printf("%-10s %5d %dx%dx%d %6d %12.3f %10.3f %10.3f %10.3f %7.1f %9.3f %9s %8s\n",
                   awp_mode_name(m), size, dims[0], dims[1], dims[2], o.n[k], r.median_ms,
                   r.mean_ms, r.comm_ms, r.compute_ms, 100 * r.comm_ms / r.mean_ms, r.start_ms,
                   r.engine ? cpu : "-", r.engine ? wakes : "-");
            if (csv != NULL)
                fprintf(csv, "%d,%s,%s,%d,%d,%d,%d,%d,%d,%.4f,%.4f,%.4f,%.4f,%.2f,%.4f,%s,%s\n",
                        config, label, awp_mode_name(m), size, dims[0], dims[1], dims[2],
                        o.n[k], o.steps, r.median_ms, r.mean_ms, r.comm_ms, r.compute_ms,
                        100 * r.comm_ms / r.mean_ms, r.start_ms, cpu, wakes);
        }
    if (csv != NULL)
        fclose(csv);
    MPI_Finalize();
    if (rank == 0 && o.png != NULL &&
        bench_plot(PROG, "plot_awp_bench.gp", o.csv, o.png, NULL, 0) == 0)
        printf("PNG: %s\n", o.png);
    if (rank == 0 && o.csv != NULL)
        printf("CSV: %s\n", o.csv);
    return 0;
}
