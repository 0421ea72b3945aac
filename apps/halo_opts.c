/* oc_bench_halo's command line: parsed, and checked against the run's ranks. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "halo_bench.h"

static const char *const impl_names[IMPL_COUNT] = {
    [IMPL_MPI_2SIDED] = "mpi_2sided", [IMPL_MPI_RMA] = "mpi_rma",
    [IMPL_OC_THREAD] = "oc_thread",   [IMPL_OC_LOOPBACK] = "oc_loopback",
    [IMPL_OC_INLINE] = "oc_inline",
};


static void usage(FILE *f)
{
    fprintf(f,
            "usage: " HALO_PROG " [options]\n"
            "  --n N[xNxN]     interior cells per rank and dimension (default 128)\n"
            "  --width W       ghost width (default 2)\n"
            "  --fields LIST   comma-separated field counts, one configuration each; an\n"
            "                  exchange starts all fields, then waits for all (default 1,9)\n"
            "  --corners, --no-corners  edges and corners too, by the x, y, z sweep\n"
            "                  (default off: the 6 faces)\n"
            "  --periodic, --no-periodic  wrap around in every dimension (default on)\n"
            "  --dims AxBxC    process grid (default: MPI_Dims_create; 0 = let it choose)\n"
            "  --iters N       timed exchanges per phase at most (default 1000)\n"
            "  --warmup N      warm-up exchanges at most (default 10)\n"
            "  --budget S      seconds per timed phase, which set the number of exchanges\n"
            "                  (default 1; at least %d; 0 = always --iters)\n"
            "  --impl LIST     comma-separated: mpi_2sided,mpi_rma,oc_thread,oc_loopback,\n"
            "                  oc_inline (default all)\n"
            "  --csv PATH      write one row per configuration and implementation\n"
            "  --png PATH      plot with gnuplot (overlap and exchange time)\n"
            "  --check, --no-check  check the ghost cells (default on)\n"
            "The OC_* environment variables (README) configure the offcoll contexts,\n"
            "except the progress mode and OC_INTRANODE, which each implementation sets.\n",
            BENCH_MIN_TIMED_ITERS);
}

/* "128" (all three) or "64x128x32". */
static int parse_extents(const char *opt, const char *s, size_t *n, int allow_zero)
{
    char *end;
    const char *p = s;
    int d;
    for (d = 0; d < 3; d++) {
        unsigned long v;
        errno = 0;
        v = strtoul(p, &end, 10);
        if (errno != 0 || end == p || *p == '-' || v > (1ul << 20) || (v == 0 && !allow_zero))
            break;
        n[d] = v;
        if (d == 0 && *end == '\0') {
            n[1] = n[2] = v;
            return 0;
        }
        if (*end != (d < 2 ? 'x' : '\0'))
            break;
        p = end + 1;
    }
    if (d == 3)
        return 0;
    return bench_opt_error("%s needs N or AxBxC%s, not '%s'", opt,
                           allow_zero ? " (0 = any)" : " (each 1..1048576)", s);
}

static int parse_fields(const char *s, halo_opts_t *o)
{
    char *copy = strdup(s), *save = NULL, *tok, *end;
    int rc = 0;
    o->nconfigs = 0;
    for (tok = strtok_r(copy, ",", &save); tok != NULL && rc == 0;
         tok = strtok_r(NULL, ",", &save)) {
        long v = strtol(tok, &end, 10);
        if (end == tok || *end != '\0' || v < 1 || v > HALO_MAX_FIELDS)
            rc = bench_opt_error("--fields: '%s' is not a count in 1..%d", tok, HALO_MAX_FIELDS);
        else if (o->nconfigs == HALO_MAX_CONFIGS)
            rc = bench_opt_error("--fields: at most %d configurations", HALO_MAX_CONFIGS);
        else
            o->fields[o->nconfigs++] = (int)v;
    }
    free(copy);
    if (rc == 0 && o->nconfigs == 0)
        rc = bench_opt_error("--fields needs at least one count");
    return rc;
}

static int parse_opt(void *opts, const char *a, const char *v)
{
    halo_opts_t *o = opts;
    if (strcmp(a, "--n") == 0)
        return parse_extents(a, v, o->n, 0);
    if (strcmp(a, "--dims") == 0) {
        size_t d[3];
        int i, rc = parse_extents(a, v, d, 1);
        for (i = 0; i < 3 && rc == 0; i++)
            o->dims[i] = (int)d[i];
        return rc;
    }
    if (strcmp(a, "--width") == 0) {
        long w;
        int rc = bench_parse_count(a, v, &w); /* its message alone where v is no count */
        if (rc != 0)
            return rc;
        if (w < 1 || w > 1024)
            return bench_opt_error("--width needs 1..1024, not '%s'", v);
        o->width = (unsigned)w;
        return 0;
    }
    if (strcmp(a, "--fields") == 0)
        return parse_fields(v, o);
    if (strcmp(a, "--impl") == 0)
        return bench_parse_names(a, v, impl_names, IMPL_COUNT, o->use);
    return bench_parse_common_opt(&o->common, a, v);
}

/* --dims against the number of ranks, before MPI_Cart_create (which would
 * abort without saying why, or leave ranks out of the grid): the given
 * extents must make a grid of exactly nranks, the zeros filled in. */
static int check_dims(const halo_opts_t *o, int nranks)
{
    int d, fixed = 1, free_dims = 0;
    for (d = 0; d < 3; d++) {
        if (o->dims[d] == 0)
            free_dims++;
        else
            fixed *= o->dims[d];
    }
    if (free_dims == 0 && fixed != nranks)
        return bench_opt_error("--dims %dx%dx%d makes a grid of %d, but this run has %d ranks",
                               o->dims[0], o->dims[1], o->dims[2], fixed, nranks);
    if (nranks % fixed != 0)
        return bench_opt_error("--dims %dx%dx%d: this run's %d ranks are no multiple of %d, the "
                               "product of the extents given", o->dims[0], o->dims[1], o->dims[2],
                               nranks, fixed);
    return 0;
}

/* --width against --n, in the grid the run will have: a ghost layer thicker
 * than the interior that fills it would have to come from beyond the
 * neighbour. */
static int check_width(const halo_opts_t *o, int nranks)
{
    int dims[3], d;
    memcpy(dims, o->dims, sizeof(dims));
    MPI_Dims_create(nranks, 3, dims);
    for (d = 0; d < 3; d++)
        if ((dims[d] > 1 || o->periodic) && o->width > o->n[d])
            return bench_opt_error("--width %u is above the interior extent %zu of dimension %d",
                                   o->width, o->n[d], d);
    return 0;
}

/* 0 to run, 1 after --help, 2 on a bad command line (for nranks ranks). */
int halo_parse_opts(int argc, char **argv, halo_opts_t *o, int nranks)
{
    static const bench_flag_t flags[] = {
        {"--check", "--no-check", offsetof(halo_opts_t, common.check)},
        {"--corners", "--no-corners", offsetof(halo_opts_t, corners)},
        {"--periodic", "--no-periodic", offsetof(halo_opts_t, periodic)},
    };
    int rc;
    *o = (halo_opts_t){.n = {128, 128, 128}, .width = 2, .fields = {1, 9}, .nconfigs = 2,
                  .periodic = 1,
                  .common = {.iters = 1000, .warmup = 10, .budget_s = 1.0, .check = 1}};
    bench_parse_names("--impl", "all", impl_names, IMPL_COUNT, o->use);
    rc = bench_parse_args(argc, argv, o, flags, (int)(sizeof(flags) / sizeof(flags[0])),
                          parse_opt, usage);
    if (rc == 0 && o->common.iters < 1)
        rc = bench_opt_error("--iters must be at least 1");
    if (rc == 0)
        rc = check_dims(o, nranks);
    if (rc == 0)
        rc = check_width(o, nranks);
    return rc;
}
