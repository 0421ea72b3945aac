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
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROG "oc_bench_halo"
#define MAX_FIELDS 64
#define MAX_CONFIGS 16

#include "oc_bench_common.h"

/* ---- options ---------------------------------------------------------------- */

enum { IMPL_MPI_2SIDED, IMPL_MPI_RMA, IMPL_OC_THREAD, IMPL_OC_LOOPBACK, IMPL_OC_INLINE,
       IMPL_COUNT };

static const char *const impl_names[IMPL_COUNT] = {
    [IMPL_MPI_2SIDED] = "mpi_2sided", [IMPL_MPI_RMA] = "mpi_rma",
    [IMPL_OC_THREAD] = "oc_thread",   [IMPL_OC_LOOPBACK] = "oc_loopback",
    [IMPL_OC_INLINE] = "oc_inline",
};

typedef struct {
    size_t n[3];          /* interior extents per rank */
    unsigned width;       /* ghost width */
    int fields[MAX_CONFIGS], nconfigs;
    int corners, periodic;
    int dims[3];          /* 0: MPI_Dims_create chooses */
    bench_opts_t common;
    int use[IMPL_COUNT];
} opts_t;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: " PROG " [options]\n"
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

static int parse_fields(const char *s, opts_t *o)
{
    char *copy = strdup(s), *save = NULL, *tok, *end;
    int rc = 0;
    o->nconfigs = 0;
    for (tok = strtok_r(copy, ",", &save); tok != NULL && rc == 0;
         tok = strtok_r(NULL, ",", &save)) {
        long v = strtol(tok, &end, 10);
        if (end == tok || *end != '\0' || v < 1 || v > MAX_FIELDS)
            rc = bench_opt_error("--fields: '%s' is not a count in 1..%d", tok, MAX_FIELDS);
        else if (o->nconfigs == MAX_CONFIGS)
            rc = bench_opt_error("--fields: at most %d configurations", MAX_CONFIGS);
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
    opts_t *o = opts;
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
        if (bench_parse_count(a, v, &w) != 0 || w < 1 || w > 1024)
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
static int check_dims(const opts_t *o, int nranks)
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
static int check_width(const opts_t *o, int nranks)
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
static int parse_opts(int argc, char **argv, opts_t *o, int nranks)
{
    static const bench_flag_t flags[] = {
        {"--check", "--no-check", offsetof(opts_t, common.check)},
        {"--corners", "--no-corners", offsetof(opts_t, corners)},
        {"--periodic", "--no-periodic", offsetof(opts_t, periodic)},
    };
    int rc;
    *o = (opts_t){.n = {128, 128, 128}, .width = 2, .fields = {1, 9}, .nconfigs = 2,
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

/* ---- geometry ------------------------------------------------------------------
 * A field is a C array of ext[0] x ext[1] x ext[2] doubles, ext = n + 2w,
 * dimension 0 (x) slowest, as oc_halo_create takes it. Side 0 of dimension d
 * is the low one. The layer this rank sends to its side-s neighbour lands in
 * that neighbour's ghost on side 1-s. With corners, dimension d's messages
 * span the ghosts of the dimensions before it (the sweep); otherwise only the
 * interior.
 */

typedef struct {
    size_t lo[3], hi[3];
} box_t;

typedef struct {
    int rank, nranks;
    opts_t o;
    MPI_Comm cart;                /* MPI_Cart_create without reordering: rank as in world */
    int dims[3], coords[3];
    int nbr[3][2];                /* MPI_Cart_shift: the neighbour on each side, or PROC_NULL */
    size_t n[3], ext[3], w;
    size_t cells;                 /* per field, ghosts included */
    box_t send[3][2], recv[3][2]; /* the boundary layer sent, the ghost layer received */
    size_t face[3];               /* elements of one message of dimension d */
    size_t sent_per_field;        /* bytes this rank sends per field and exchange */
    int nfields_max;
    double *field[MAX_FIELDS];
    unsigned char *packed, *landed; /* the copy bound's faces: packed, and to unpack */
    uint64_t seq;                 /* fills so far, equal on all ranks: values never repeat */
    double fp_s_per_iter;         /* calibrated dummy compute */
    double t0;                    /* start of the run, for progress lines */
} bench_t;

static size_t box_elems(const box_t *bx)
{
    return (bx->hi[0] - bx->lo[0]) * (bx->hi[1] - bx->lo[1]) * (bx->hi[2] - bx->lo[2]);
}

static size_t idx(const bench_t *b, size_t i0, size_t i1, size_t i2)
{
    return (i0 * b->ext[1] + i1) * b->ext[2] + i2;
}

/* A box between the array and a packed buffer, in contiguous runs along
 * dimension 2. Runs of a few values (a face across dimension 2: one per
 * ghost layer) get a length known when compiling, as offcoll's copy tasks
 * do, so that the MPI baselines pack as fast as offcoll. */
static void box_copy(const bench_t *b, double *a, const box_t *bx, double *buf, int pack)
{
    size_t i0, i1, len = bx->hi[2] - bx->lo[2];
    for (i0 = bx->lo[0]; i0 < bx->hi[0]; i0++)
        for (i1 = bx->lo[1]; i1 < bx->hi[1]; i1++, buf += len) {
            double *cell = a + idx(b, i0, i1, bx->lo[2]);
            double *dst = pack ? buf : cell;
            const double *src = pack ? cell : buf;
            switch (len) {
            case 1: memcpy(dst, src, sizeof(double)); break;
            case 2: memcpy(dst, src, 2 * sizeof(double)); break;
            case 3: memcpy(dst, src, 3 * sizeof(double)); break;
            case 4: memcpy(dst, src, 4 * sizeof(double)); break;
            default: memcpy(dst, src, len * sizeof(double)); break;
            }
        }
}

static void geometry(bench_t *b)
{
    int periods[3], d, e, s;
    size_t w = b->o.width;

    memcpy(b->dims, b->o.dims, sizeof(b->dims));
    if (MPI_Dims_create(b->nranks, 3, b->dims) != MPI_SUCCESS)
        bench_die("MPI_Dims_create cannot make a grid of %d ranks from --dims %dx%dx%d", b->nranks,
                  b->o.dims[0], b->o.dims[1], b->o.dims[2]);
    for (d = 0; d < 3; d++)
        periods[d] = b->o.periodic;
    MPI_Cart_create(MPI_COMM_WORLD, 3, b->dims, periods, 0, &b->cart);
    MPI_Cart_coords(b->cart, b->rank, 3, b->coords);
    b->w = w;
    for (d = 0; d < 3; d++) {
        MPI_Cart_shift(b->cart, d, 1, &b->nbr[d][0], &b->nbr[d][1]);
        b->n[d] = b->o.n[d];
        b->ext[d] = b->n[d] + 2 * w;
    }
    b->cells = b->ext[0] * b->ext[1] * b->ext[2];
    b->sent_per_field = 0;
    for (d = 0; d < 3; d++)
        for (s = 0; s < 2; s++) {
            box_t *snd = &b->send[d][s], *rcv = &b->recv[d][s];
            for (e = 0; e < 3; e++) {
                int full = b->o.corners && e < d;
                snd->lo[e] = rcv->lo[e] = full ? 0 : w;
                snd->hi[e] = rcv->hi[e] = full ? b->ext[e] : w + b->n[e];
            }
            snd->lo[d] = s == 0 ? w : b->n[d];
            snd->hi[d] = snd->lo[d] + w;
            rcv->lo[d] = s == 0 ? 0 : b->n[d] + w;
            rcv->hi[d] = rcv->lo[d] + w;
            b->face[d] = box_elems(snd);
            if (b->nbr[d][s] != MPI_PROC_NULL)
                b->sent_per_field += b->face[d] * sizeof(double);
        }
}

/* The dimensions of stage st: the three at once, or one per stage with corners. */
static int stages(const bench_t *b)
{
    return b->o.corners ? 3 : 1;
}

static void stage_dims(const bench_t *b, int st, int *dlo, int *dhi)
{
    *dlo = b->o.corners ? st : 0;
    *dhi = b->o.corners ? st + 1 : 3;
}

/* ---- data and check ----------------------------------------------------------------
 * Interior cell (g0, g1, g2) of field f, in global coordinates, holds
 * base(seq, f) + its global linear index: exact in a double, different for
 * every cell, field and fill. A ghost cell must hold the value of the global
 * cell it mirrors (wrapped around where periodic); ghosts that mirror no cell
 * (a non-periodic edge) and, without corners, edge and corner ghosts are not
 * checked. Before the first exchange of an implementation every ghost cell is
 * poisoned (NaN), so a ghost never written fails.
 */

static double cell_base(uint64_t seq, int f)
{
    return (double)((seq * MAX_FIELDS + (uint64_t)f) % 65536) * 68719476736.0; /* 2^36 */
}

static void fill_field(bench_t *b, int f)
{
    double *a = b->field[f], base = cell_base(b->seq, f);
    size_t i0, i1, i2, G1 = (size_t)b->dims[1] * b->n[1], G2 = (size_t)b->dims[2] * b->n[2];
    size_t o0 = (size_t)b->coords[0] * b->n[0], o1 = (size_t)b->coords[1] * b->n[1],
           o2 = (size_t)b->coords[2] * b->n[2];
    for (i0 = 0; i0 < b->n[0]; i0++)
        for (i1 = 0; i1 < b->n[1]; i1++) {
            double row = base + (double)(((o0 + i0) * G1 + o1 + i1) * G2 + o2);
            double *p = a + idx(b, i0 + b->w, i1 + b->w, b->w);
            for (i2 = 0; i2 < b->n[2]; i2++)
                p[i2] = row + (double)i2;
        }
}

/* Global coordinate of local index i in dimension d, wrapped; -1 if none. */
static long global_of(const bench_t *b, int d, size_t i)
{
    long G = (long)b->dims[d] * (long)b->n[d];
    long g = (long)b->coords[d] * (long)b->n[d] + (long)i - (long)b->w;
    if (b->o.periodic)
        return (g % G + G) % G;
    return g >= 0 && g < G ? g : -1;
}

static void mismatch(const bench_t *b, int f, const size_t i[3], double got, double want)
{
    const char *side[3];
    int d;
    for (d = 0; d < 3; d++)
        side[d] = i[d] < b->w ? "low ghost" : i[d] >= b->n[d] + b->w ? "high ghost" : "interior";
    bench_die("GHOST MISMATCH in field %d at local (%zu, %zu, %zu) (x %s, y %s, z %s; "
              "grid %dx%dx%d, this rank at (%d, %d, %d)): expected %.17g, got %.17g%s", f, i[0],
              i[1], i[2], side[0], side[1], side[2], b->dims[0], b->dims[1], b->dims[2],
              b->coords[0], b->coords[1], b->coords[2], want, got,
              isnan(got) ? " (the poison: never written)" : "");
}

/* Visits every ghost cell: poisons it, or checks it where it is defined. */
static void ghost_pass(const bench_t *b, int f, int poison)
{
    double *a = b->field[f], base = cell_base(b->seq, f);
    size_t i[3], w = b->w;
    long G1 = (long)b->dims[1] * (long)b->n[1], G2 = (long)b->dims[2] * (long)b->n[2];

    for (i[0] = 0; i[0] < b->ext[0]; i[0]++)
        for (i[1] = 0; i[1] < b->ext[1]; i[1]++) {
            int in0 = i[0] >= w && i[0] < w + b->n[0], in1 = i[1] >= w && i[1] < w + b->n[1];
            size_t step = in0 && in1 ? b->n[2] + 1 : 1; /* jump over the interior */
            for (i[2] = 0; i[2] < b->ext[2]; i[2] += (i[2] == w - 1 ? step : 1)) {
                int in2 = i[2] >= w && i[2] < w + b->n[2], d, outside = 3 - in0 - in1 - in2;
                long g[3];
                double *p = a + idx(b, i[0], i[1], i[2]);
                if (poison) {
                    *p = NAN;
                    continue;
                }
                if (outside > 1 && !b->o.corners)
                    continue;
                for (d = 0; d < 3; d++)
                    if ((g[d] = global_of(b, d, i[d])) < 0)
                        break;
                if (d == 3 && *p != base + (double)((g[0] * G1 + g[1]) * G2 + g[2]))
                    mismatch(b, f, i, *p, base + (double)((g[0] * G1 + g[1]) * G2 + g[2]));
            }
        }
}

/* ---- implementations ------------------------------------------------------------ */

typedef struct impl impl_t;
struct impl {
    const char *name;
    int offcoll;                /* mode and intranode below are meaningful */
    oc_progress_mode_t mode;
    oc_intranode_t intranode;
    void (*setup)(impl_t *im, bench_t *b, int nf);
    void (*start)(impl_t *im, bench_t *b, int f);
    void (*wait)(impl_t *im, bench_t *b, int f);
    void (*teardown)(impl_t *im, bench_t *b, int nf);
    int unavailable;            /* its context could not be made (a note says why) */
    oc_context_t *ctx;
    oc_team_t *team;
    oc_halo_t *halo;
};

/* The MPI versions' state per field: packed faces, requests, the RMA window
 * (whose memory holds the landing buffers, one per dimension and side). */
typedef struct {
    double *sbuf[3][2], *rbuf[3][2];
    MPI_Request req[12];
    int nreq;
    MPI_Win win;
    double *landing;
} mpi_field_t;

static mpi_field_t mf[MAX_FIELDS];
static MPI_Group stage_group[3]; /* mpi_rma: the distinct neighbours of each stage */
static size_t landing_off[3][2]; /* mpi_rma: elements into the window, the same on every rank */

static int msg_tag(int f, int d, int recv_side)
{
    return (f * 3 + d) * 2 + recv_side;
}

static void mpi_setup(impl_t *im, bench_t *b, int nf)
{
    int f, d, s, rma = strcmp(im->name, "mpi_rma") == 0;
    size_t total = 0;

    for (d = 0; d < 3; d++)
        for (s = 0; s < 2; s++) {
            landing_off[d][s] = total;
            total += b->face[d];
        }
    for (f = 0; f < nf; f++) {
        mpi_field_t *m = &mf[f];
        if (rma) {
            MPI_Info info;
            MPI_Info_create(&info);
            MPI_Info_set(info, "no_locks", "true");
            MPI_Win_allocate((MPI_Aint)(total * sizeof(double)), sizeof(double), info, b->cart,
                             &m->landing, &m->win);
            MPI_Info_free(&info);
        }
        for (d = 0; d < 3; d++)
            for (s = 0; s < 2; s++) {
                m->sbuf[d][s] = (double *)bench_buf_alloc(b->face[d] * sizeof(double));
                m->rbuf[d][s] = rma ? m->landing + landing_off[d][s]
                                    : (double *)bench_buf_alloc(b->face[d] * sizeof(double));
            }
    }
    if (rma) {
        MPI_Group all;
        MPI_Comm_group(b->cart, &all);
        for (s = 0; s < stages(b); s++) {
            int dlo, dhi, ranks[6], k = 0, j, side;
            stage_dims(b, s, &dlo, &dhi);
            for (d = dlo; d < dhi; d++)
                for (side = 0; side < 2; side++) {
                    int r = b->nbr[d][side];
                    for (j = 0; j < k && ranks[j] != r; j++)
                        ;
                    if (r != MPI_PROC_NULL && j == k)
                        ranks[k++] = r;
                }
            MPI_Group_incl(all, k, ranks, &stage_group[s]);
        }
        MPI_Group_free(&all);
    }
}

static void mpi_teardown(impl_t *im, bench_t *b, int nf)
{
    int f, d, s, rma = strcmp(im->name, "mpi_rma") == 0;
    for (f = 0; f < nf; f++)
        for (d = 0; d < 3; d++)
            for (s = 0; s < 2; s++) {
                free(mf[f].sbuf[d][s]);
                if (!rma)
                    free(mf[f].rbuf[d][s]);
            }
    if (rma) {
        for (f = 0; f < nf; f++)
            MPI_Win_free(&mf[f].win);
        for (s = 0; s < stages(b); s++)
            MPI_Group_free(&stage_group[s]);
    }
    memset(mf, 0, sizeof(mf));
}

/* Receives posted first, then each face packed and sent. */
static void two_sided_stage_start(bench_t *b, int f, int st)
{
    mpi_field_t *m = &mf[f];
    int dlo, dhi, d, s;
    stage_dims(b, st, &dlo, &dhi);
    for (d = dlo; d < dhi; d++)
        for (s = 0; s < 2; s++)
            if (b->nbr[d][s] != MPI_PROC_NULL)
                MPI_Irecv(m->rbuf[d][s], (int)b->face[d], MPI_DOUBLE, b->nbr[d][s],
                          msg_tag(f, d, s), b->cart, &m->req[m->nreq++]);
    for (d = dlo; d < dhi; d++)
        for (s = 0; s < 2; s++)
            if (b->nbr[d][s] != MPI_PROC_NULL) {
                box_copy(b, b->field[f], &b->send[d][s], m->sbuf[d][s], 1);
                MPI_Isend(m->sbuf[d][s], (int)b->face[d], MPI_DOUBLE, b->nbr[d][s],
                          msg_tag(f, d, 1 - s), b->cart, &m->req[m->nreq++]);
            }
}

/* Exposure epoch opened first, then each face packed and put. */
static void rma_stage_start(bench_t *b, int f, int st)
{
    mpi_field_t *m = &mf[f];
    int dlo, dhi, d, s;
    stage_dims(b, st, &dlo, &dhi);
    MPI_Win_post(stage_group[st], 0, m->win);
    for (d = dlo; d < dhi; d++)
        for (s = 0; s < 2; s++)
            if (b->nbr[d][s] != MPI_PROC_NULL)
                box_copy(b, b->field[f], &b->send[d][s], m->sbuf[d][s], 1);
    MPI_Win_start(stage_group[st], 0, m->win);
    for (d = dlo; d < dhi; d++)
        for (s = 0; s < 2; s++)
            if (b->nbr[d][s] != MPI_PROC_NULL)
                MPI_Put(m->sbuf[d][s], (int)b->face[d], MPI_DOUBLE, b->nbr[d][s],
                        (MPI_Aint)landing_off[d][1 - s], (int)b->face[d], MPI_DOUBLE, m->win);
}

/* Completes stage st of field f and unpacks its ghosts. */
static void mpi_stage_finish(bench_t *b, int f, int st, int rma)
{
    mpi_field_t *m = &mf[f];
    int dlo, dhi, d, s;
    if (rma) {
        MPI_Win_complete(m->win);
        MPI_Win_wait(m->win);
    } else {
        MPI_Waitall(m->nreq, m->req, MPI_STATUSES_IGNORE);
        m->nreq = 0;
    }
    stage_dims(b, st, &dlo, &dhi);
    for (d = dlo; d < dhi; d++)
        for (s = 0; s < 2; s++)
            if (b->nbr[d][s] != MPI_PROC_NULL)
                box_copy(b, b->field[f], &b->recv[d][s], m->rbuf[d][s], 0);
}

static void two_sided_start(impl_t *im, bench_t *b, int f)
{
    (void)im;
    two_sided_stage_start(b, f, 0);
}

static void rma_start(impl_t *im, bench_t *b, int f)
{
    (void)im;
    rma_stage_start(b, f, 0);
}

/* The rest of the sweep: stage st+1 needs the ghosts of stage st. */
static void mpi_wait(impl_t *im, bench_t *b, int f)
{
    int st, rma = im->start == rma_start;
    for (st = 0; st < stages(b); st++) {
        if (st > 0)
            (rma ? rma_stage_start : two_sided_stage_start)(b, f, st);
        mpi_stage_finish(b, f, st, rma);
    }
}

static void oc_setup(impl_t *im, bench_t *b, int nf)
{
    oc_halo_field_t fields[MAX_FIELDS];
    oc_halo_params_t p;
    int f, d, s;

    memset(&p, 0, sizeof(p));
    memset(fields, 0, sizeof(fields));
    for (d = 0; d < 3; d++) {
        p.dims[d] = b->dims[d];
        p.periodic[d] = b->o.periodic;
    }
    p.width = (unsigned)b->w;
    p.corners = b->o.corners;
    for (f = 0; f < nf; f++) {
        fields[f].data = b->field[f];
        memcpy(fields[f].n, b->n, sizeof(fields[f].n));
        fields[f].elem_size = sizeof(double);
    }
    bench_check(oc_halo_create(im->team, &p, fields, nf, &im->halo), "oc_halo_create");
    /* The plan's grid must be MPI_Cart_create's, or the check below would
     * blame the data for a difference of neighbours. */
    for (d = 0; d < 3; d++)
        for (s = 0; s < 2; s++) {
            int off[3] = {0, 0, 0}, mpi = b->nbr[d][s], oc = -1;
            off[d] = s == 0 ? -1 : 1;
            bench_check(oc_halo_neighbor(im->halo, off[0], off[1], off[2], &oc),
                        "oc_halo_neighbor");
            if (oc != (mpi == MPI_PROC_NULL ? -1 : mpi))
                bench_die("oc_halo_neighbor(%d, %d, %d) = %d, but MPI_Cart_shift says %d", off[0],
                          off[1], off[2], oc, mpi == MPI_PROC_NULL ? -1 : mpi);
        }
}

static void oc_teardown(impl_t *im, bench_t *b, int nf)
{
    (void)b;
    (void)nf;
    bench_check(oc_halo_free(im->halo), "oc_halo_free");
    im->halo = NULL;
}

static void oc_start_halo(impl_t *im, bench_t *b, int f)
{
    (void)b;
    bench_check(oc_halo_start(im->halo, f), "oc_halo_start");
}

static void oc_wait_halo(impl_t *im, bench_t *b, int f)
{
    (void)b;
    bench_check(oc_halo_wait(im->halo, f), "oc_halo_wait");
}

#define OC_IMPL(mode_, intranode_)                                                        \
    .offcoll = 1, .mode = mode_, .intranode = intranode_, .setup = oc_setup,              \
    .start = oc_start_halo, .wait = oc_wait_halo, .teardown = oc_teardown

static impl_t impls[IMPL_COUNT] = {
    [IMPL_MPI_2SIDED] = {.name = "mpi_2sided", .setup = mpi_setup, .start = two_sided_start,
                         .wait = mpi_wait, .teardown = mpi_teardown},
    [IMPL_MPI_RMA] = {.name = "mpi_rma", .setup = mpi_setup, .start = rma_start,
                      .wait = mpi_wait, .teardown = mpi_teardown},
    [IMPL_OC_THREAD] = {.name = "oc_thread",
                        OC_IMPL(OC_PROGRESS_THREAD, OC_INTRANODE_SHM)},
    [IMPL_OC_LOOPBACK] = {.name = "oc_loopback",
                          OC_IMPL(OC_PROGRESS_THREAD, OC_INTRANODE_LOOPBACK)},
    [IMPL_OC_INLINE] = {.name = "oc_inline", OC_IMPL(OC_PROGRESS_INLINE, OC_INTRANODE_SHM)},
};

/* A context per offcoll implementation, since a context reads its
 * configuration once. One that cannot be made on some rank (a transport
 * missing here) is left out everywhere, with a note. */
static void impl_open(bench_t *b, impl_t *im)
{
    oc_config_t cfg;
    oc_status_t st;
    int ok, all_ok;
    if (!im->offcoll)
        return;
    bench_at.impl = im->name;
    bench_check(oc_config_init(&cfg), "oc_config_init");
    cfg.progress = im->mode;
    cfg.intranode = im->intranode;
    st = oc_init(&cfg, &im->ctx);
    ok = st == OC_OK;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all_ok) {
        if (st != OC_OK)
            fprintf(stderr, PROG ": rank %d: note: %s left out: oc_init: %s: %s\n", b->rank,
                    im->name, oc_status_string(st), oc_last_error());
        else
            bench_check(oc_finalize(im->ctx), "oc_finalize");
        im->ctx = NULL;
        im->unavailable = 1;
    } else
        bench_check(oc_team_create_mpi(im->ctx, b->cart, &im->team), "oc_team_create_mpi");
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

/* ---- timed phases ------------------------------------------------------------ */

/* One exchange: start every field, (compute), wait for every field. */
static double exchange(bench_t *b, impl_t *im, int nf, uint64_t fp_iters, double *t_compute)
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
static double checked_exchange(bench_t *b, impl_t *im, int nf, uint64_t fp_iters,
                               const char *ph)
{
    double t;
    int f;
    bench_at.phase = ph;
    if (b->o.common.check) {
        b->seq++;
        for (f = 0; f < nf; f++) {
            fill_field(b, f);
            ghost_pass(b, f, 1);
        }
    }
    t = exchange(b, im, nf, fp_iters, NULL);
    if (b->o.common.check)
        for (f = 0; f < nf; f++)
            ghost_pass(b, f, 0);
    return t;
}

/* Mean time per exchange on this rank; *compute_mean likewise when given. */
static double phase(bench_t *b, impl_t *im, int nf, const char *name, long iters,
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

static result_t measure(bench_t *b, impl_t *im, int nf)
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

static void row_fields(const bench_t *b, const impl_t *im, int cfg, const result_t *r,
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

static void report_row(const bench_t *b, const impl_t *im, int cfg, const result_t *r,
                       FILE *csv)
{
    bench_field_t table[C_COUNT], csv_f[C_COUNT];
    row_fields(b, im, cfg, r, 1, table);
    row_fields(b, im, cfg, r, 0, csv_f);
    bench_report_line(columns, C_COUNT, table, csv_f, csv);
}

static void print_header(const bench_t *b)
{
    char per_field[24];
    int i;
    printf("# " PROG ": 3D halo exchange overlap, OSU procedure, %d ranks, grid %dx%dx%d%s\n",
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
    bench_t *b;
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
    bench_t *b = a->b;
    int pack, f, d, s;
    for (pack = 1; pack >= 0; pack--) {
        double *buf = (double *)(pack ? b->packed : b->landed);
        for (f = 0; f < a->nf; f++)
            for (d = 0; d < 3; d++)
                for (s = 0; s < 2; s++)
                    if (b->nbr[d][s] != MPI_PROC_NULL) {
                        box_copy(b, b->field[f], pack ? &b->send[d][s] : &b->recv[d][s], buf,
                                 pack);
                        buf += b->face[d];
                    }
    }
}

static void run_config(bench_t *b, int cfg, FILE *csv)
{
    result_t res[IMPL_COUNT];
    int i, nf = b->o.fields[cfg];
    face_copies_t fc = {b, nf};
    double copy = bench_time_copies(face_copies, &fc), setup;

    snprintf(bench_at.what, sizeof(bench_at.what), "%d field%s", nf, nf > 1 ? "s" : "");
    for (i = 0; i < IMPL_COUNT; i++) {
        impl_t *im = &impls[i];
        if (!b->o.use[i] || im->unavailable)
            continue;
        bench_at.impl = im->name;
        bench_at.phase = "set-up";
        if (b->rank == 0)
            fprintf(stderr, PROG ": [%d/%d] %2d field%s %-12s (%.1f s elapsed)\n", cfg + 1,
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
    bench_t b = {0};
    bench_out_t out = {0};
    char extra[2048], title[256];
    size_t copy_bytes;
    int i, rc;

    bench_init(&argc, &argv, PROG, &b.rank, &b.nranks, "exchange");
    rc = parse_opts(argc, argv, &b.o, b.nranks);
    if (rc != 0)
        return bench_quit(rc);
    b.t0 = MPI_Wtime();

    geometry(&b);
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
            impl_open(&b, &impls[i]);
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
