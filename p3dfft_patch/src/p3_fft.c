/*
 * FFTW stages. A stage is cut into chunks along its outer repetition so that,
 * in mpi_nb mode, the transposes in flight are tested between chunks (the
 * progress pattern of a real application). Plans are made on first use on
 * scratch arrays (FFTW_MEASURE overwrites its arrays) and cached by their
 * geometry. User arrays may lack FFTW's SIMD alignment: each geometry has an
 * aligned plan (made at set-up for the Fourier stages, on first use for the
 * cosine and sine ones) and, where an array needs it, an
 * FFTW_UNALIGNED one (made on first use; it runs markedly slower).
 * The cosine and sine stages see a complex array as pairs of doubles: the
 * plan's strides are doubled, and one more repetition of 2 (stride 1) takes
 * the real and the imaginary part of each value.
 */
#include <stdlib.h>
#include <string.h>

#include "p3_internal.h"

/* Chunks per stage: enough tests for MPI to move a transpose along, few
 * enough that the per-chunk plan overhead stays negligible. */
#define P3_CHUNKS 8

typedef struct {
    p3_kind_t kind;
    int rank;            /* dims transformed: 2 (FFT-x and FFT-y together,
                            p3_xy_run), 1, or 0: a copy (skipped) */
    int unaligned;
    int hrank;
    fftw_iodim dim[2];   /* r2c and c2r: the real transform along the last */
    fftw_iodim how[3];
} plan_key_t;

struct p3_plan_entry {
    plan_key_t key;
    fftw_plan plan;
    p3_plan_entry_t *next;
};

static int is_r2r(p3_kind_t k)
{
    return k == P3_R2R_COS || k == P3_R2R_SIN;
}

/* Element sizes of a plan's sides (r2r: doubles, after stage_in_doubles). */
static size_t in_elem(p3_kind_t k)
{
    return k == P3_R2C || is_r2r(k) ? sizeof(double) : sizeof(fftw_complex);
}

static size_t out_elem(p3_kind_t k)
{
    return k == P3_C2R || is_r2r(k) ? sizeof(double) : sizeof(fftw_complex);
}

/* Elements one side of the key's geometry spans (the complex side of r2c and
 * c2r holds n/2+1 values along the last dim). */
static size_t extent(const plan_key_t *k, int out)
{
    size_t e = 1;
    int i;
    for (i = 0; i < k->rank; i++) {
        int n = k->dim[i].n;
        if (i == k->rank - 1 && ((k->kind == P3_R2C && out) || (k->kind == P3_C2R && !out)))
            n = n / 2 + 1;
        e += (size_t)(n - 1) * (size_t)(out ? k->dim[i].os : k->dim[i].is);
    }
    for (i = 0; i < k->hrank; i++)
        e += (size_t)(k->how[i].n - 1) * (size_t)(out ? k->how[i].os : k->how[i].is);
    return e;
}

static fftw_plan make_plan(const plan_key_t *k, unsigned flags)
{
    void *in, *out;
    fftw_plan plan = NULL;

    in = fftw_malloc(extent(k, 0) * in_elem(k->kind));
    out = fftw_malloc(extent(k, 1) * out_elem(k->kind));
    if (in == NULL || out == NULL)
        goto done;
    /* Only c2r, whose input is a work buffer, may destroy it: the other
     * stages read user arrays. */
    flags |= (k->kind == P3_C2R ? FFTW_DESTROY_INPUT : FFTW_PRESERVE_INPUT) |
             (k->unaligned ? FFTW_UNALIGNED : 0);
    switch (k->kind) {
    case P3_C2C_FWD:
    case P3_C2C_BWD:
        plan = fftw_plan_guru_dft(k->rank, k->dim, k->hrank, k->how, in, out,
                                  k->kind == P3_C2C_FWD ? FFTW_FORWARD : FFTW_BACKWARD, flags);
        break;
    case P3_R2C:
        plan = fftw_plan_guru_dft_r2c(k->rank, k->dim, k->hrank, k->how, in, out, flags);
        break;
    case P3_C2R:
        plan = fftw_plan_guru_dft_c2r(k->rank, k->dim, k->hrank, k->how, in, out, flags);
        break;
    case P3_R2R_COS:
    case P3_R2R_SIN: {
        fftw_r2r_kind r2r = k->kind == P3_R2R_COS ? FFTW_REDFT00 : FFTW_RODFT00;
        plan = fftw_plan_guru_r2r(k->rank, k->dim, k->hrank, k->how, in, out, &r2r, flags);
        break;
    }
    }
done:
    fftw_free(in);
    fftw_free(out);
    return plan;
}

static fftw_plan get_plan(p3_t *p, const plan_key_t *k)
{
    p3_plan_entry_t *e;
    for (e = p->plans; e != NULL; e = e->next)
        if (memcmp(&e->key, k, sizeof(*k)) == 0)
            return e->plan;
    e = malloc(sizeof(*e));
    if (e == NULL)
        return NULL;
    e->key = *k;
    e->plan = make_plan(k, p->fftw_flags);
    if (e->plan == NULL) {
        free(e);
        return NULL;
    }
    e->next = p->plans;
    p->plans = e;
    return e->plan;
}

void p3_plans_free(p3_t *p)
{
    while (p->plans != NULL) {
        p3_plan_entry_t *e = p->plans;
        p->plans = e->next;
        fftw_destroy_plan(e->plan);
        free(e);
    }
}

static void execute(fftw_plan plan, p3_kind_t kind, void *in, void *out)
{
    switch (kind) {
    case P3_C2C_FWD:
    case P3_C2C_BWD:
        fftw_execute_dft(plan, in, out);
        break;
    case P3_R2C:
        fftw_execute_dft_r2c(plan, in, out);
        break;
    case P3_C2R:
        fftw_execute_dft_c2r(plan, in, out);
        break;
    case P3_R2R_COS:
    case P3_R2R_SIN:
        fftw_execute_r2r(plan, in, out);
        break;
    }
}

/* Lines per chunk: about n / P3_CHUNKS, rounded up so that every chunk
 * starts 32 bytes after the previous one's start, or a multiple of that: a
 * chunk then has the alignment of the array, and one plan serves all. */
static int chunk_lines(const p3_stage_t *st)
{
    size_t step = (size_t)st->how[0].is * in_elem(st->kind), ostep = (size_t)st->how[0].os * out_elem(st->kind);
    int g = 1, per;
    while (g < 4 && ((g * step) % 32 != 0 || (g * ostep) % 32 != 0))
        g *= 2;
    per = (st->how[0].n + P3_CHUNKS - 1) / P3_CHUNKS;
    return (per + g - 1) / g * g;
}

/* A cosine or sine stage in units of doubles: every stride doubles. */
static void stage_in_doubles(p3_stage_t *st)
{
    fftw_iodim *d[3] = {&st->dim, &st->how[0], &st->how[1]};
    int i;
    for (i = 0; i < 3; i++) {
        d[i]->is *= 2;
        d[i]->os *= 2;
    }
}

/* A Fourier stage over runs of xs values (how[1]) that reads its lines
 * packed (stride xs along dim) and writes them spread (the layout of the
 * Y-Z blocks or of the Z-pencil, stride xs * lines), or, backward, reads
 * them spread and writes them packed. Handed to FFTW as it is, each line's
 * spread side lies a page or more apart: at N = 256 the forward Y and Z
 * stages ran 3x slower than the backward ones on the 2-vCPU EPYC VM; with
 * the forward ones plane by plane, the backward ones ran 2x slower than
 * them at 256 on the 16-core Xeon and at 128 on the VM, where gathering
 * them too brought them level (p3dfft_patch/README.md). So both run plane
 * by plane (one how[0] index: xs x n values) through p->plane, packed: FFTW
 * writes it and it is copied out in runs of xs values (P3_SCATTER), or it
 * is gathered in runs of xs values and FFTW reads it (P3_GATHER). The
 * packed side is the caller's line, of stride xs or p3_ld(xs); the plane's
 * stride is p3_ld(xs). */
enum { P3_WHOLE = 0, P3_SCATTER, P3_GATHER };
static int packed(int stride, int xs)
{
    return stride == xs || stride == p3_ld(xs);
}

static int plane_wise(const p3_t *p, const p3_stage_t *st)
{
    int xs = st->how[1].n;
    if ((st->kind != P3_C2C_FWD && st->kind != P3_C2C_BWD) || st->skip ||
        st->how[1].is != 1 || st->how[1].os != 1 ||
        (size_t)p3_ld(xs) * st->dim.n > p->plane_len)
        return P3_WHOLE;
    if (packed(st->dim.is, xs) && !packed(st->dim.os, xs))
        return P3_SCATTER;
    return packed(st->dim.os, xs) && !packed(st->dim.is, xs) ? P3_GATHER : P3_WHOLE;
}

/* n: the points of a transform of rank 0 or 1. */
static int plan_failed(const plan_key_t *k, int n)
{
    if (k->rank == 2)
        return p3_fail(P3DFFT_ERR_FFTW, "FFTW cannot plan a 2D transform of %d x %d points",
                       k->dim[0].n, k->dim[1].n);
    return p3_fail(P3DFFT_ERR_FFTW, "FFTW cannot plan a transform of %d points", n);
}

/* Where a plane's runs lie on its spread side. With slabs (p3_xy_run), the
 * runs are cut along X: slab s's parts lie in a block of their own, slab
 * after slab, laid out as the whole would be with xs = the slab's width
 * (p3_tr_sbuf: the Y side of the Y-Z transpose). */
typedef struct {
    int n, xs;     /* n runs of xs complex values */
    size_t stride; /* complex values from one run to the next */
    const p3_split_t *slabs; /* NULL: one piece, [0, xs) */
    int nslab;
    int ld;        /* the plane's stride from one run to the next */
} p3_runs_t;

/* Line l's runs between the plane and the spread side starting at spread
 * (line 0's); gather: spread -> plane. With slabs, the strides of a slab's
 * block are the whole's scaled by its share of xs (stride and step_spread
 * are then multiples of xs: p3_xy_run). */
static void copy_runs(p3_t *p, const p3_runs_t *r, fftw_complex *spread, size_t step_spread,
                      int l, int gather)
{
    int s, nslab = r->slabs != NULL ? r->nslab : 1;
    size_t per_x = r->stride / (size_t)r->xs, step_x = step_spread / (size_t)r->xs;
    for (s = 0; s < nslab; s++) {
        size_t x0 = r->slabs != NULL ? (size_t)r->slabs->s[s] : 0;
        size_t xn = r->slabs != NULL ? (size_t)r->slabs->n[s] : (size_t)r->xs;
        size_t stride = r->slabs != NULL ? per_x * xn : r->stride;
        fftw_complex *b = r->slabs != NULL
                              ? spread + x0 * per_x * (size_t)r->n + (size_t)l * step_x * xn
                              : spread + (size_t)l * step_spread;
        p3_runs_copy(p->plane + x0, (size_t)r->ld, b, stride, (size_t)r->n, xn, gather);
    }
}

/* `lines` transforms of key k, each between p->plane (the runs packed) and
 * the spread side: P3_SCATTER, FFTW writes the plane and it is copied out;
 * P3_GATHER, it is gathered and FFTW reads it. Line l's packed side starts
 * at in (scatter) or out (gather) + l * step elements of its kind, its spread
 * side step_spread complex values after line 0's (in each slab's block,
 * scaled: copy_runs). */
static int run_planes(p3_t *p, plan_key_t *k, int how, int lines, const p3_runs_t *r, char *in,
                      char *out, size_t step, size_t step_spread)
{
    int per = (lines + P3_CHUNKS - 1) / P3_CHUNKS, l;
    fftw_complex *spread = (fftw_complex *)(how == P3_GATHER ? in : out);

    for (l = 0; l < lines; l++) {
        char *packed = how == P3_GATHER ? out + l * step * out_elem(k->kind)
                                        : in + l * step * in_elem(k->kind);
        fftw_plan plan;

        if (how == P3_GATHER)
            copy_runs(p, r, spread, step_spread, l, 1);
        /* p->plane has FFTW's alignment; the user's side may not */
        k->unaligned = fftw_alignment_of((double *)packed) != 0;
        if ((plan = get_plan(p, k)) == NULL)
            return plan_failed(k, k->dim[0].n);
        if (how == P3_GATHER) {
            execute(plan, k->kind, p->plane, packed);
        } else {
            execute(plan, k->kind, packed, p->plane);
            copy_runs(p, r, spread, step_spread, l, 0);
        }
        if ((l + 1) % per == 0)
            p3_tr_progress(p);
    }
    return P3DFFT_OK;
}

/* Plane by plane, as the Y stage it replaces: the 2D transform's complex
 * side is the packed plane, its runs spread as the Y side lays them out.
 * Its stride is odd (p3_ld) as the Y and Z stages' lines: nxh is a power of
 * two for N = 126 or 254. */
int p3_xy_run(p3_t *p, int dir, double *real, fftw_complex *y)
{
    int nx = p->nx, ny = p->ny, xs = p->nxh, ld = p3_ld(xs);
    p3_runs_t r = {ny, xs, (size_t)xs * (size_t)p->kjsize, &p->slab, p->nslab, ld};
    plan_key_t k;

    memset(&k, 0, sizeof(k)); /* keys are compared bytewise */
    k.kind = dir == P3_FWD ? P3_R2C : P3_C2R;
    k.rank = 2;
    k.dim[0] = dir == P3_FWD ? (fftw_iodim){ny, nx, ld} : (fftw_iodim){ny, ld, nx};
    k.dim[1] = (fftw_iodim){nx, 1, 1};
    if (dir == P3_FWD)
        return run_planes(p, &k, P3_SCATTER, p->kjsize, &r, (char *)real, (char *)y,
                          (size_t)nx * ny, (size_t)xs);
    return run_planes(p, &k, P3_GATHER, p->kjsize, &r, (char *)y, (char *)real,
                      (size_t)nx * ny, (size_t)xs);
}

int p3_stage_run(p3_t *p, const p3_stage_t *stage, void *in, void *out)
{
    p3_stage_t s = *stage, *st = &s;
    int per, first, how = plane_wise(p, st);
    plan_key_t k;

    if (how != P3_WHOLE) {
        int xs = st->how[1].n;
        p3_runs_t r = {st->dim.n, xs, (size_t)(how == P3_GATHER ? st->dim.is : st->dim.os),
                       NULL, 1, p3_ld(xs)};
        memset(&k, 0, sizeof(k)); /* keys are compared bytewise */
        k.kind = st->kind;
        k.rank = 1;
        k.dim[0] = how == P3_GATHER ? (fftw_iodim){r.n, r.ld, st->dim.os}
                                    : (fftw_iodim){r.n, st->dim.is, r.ld};
        k.how[0] = st->how[1];
        k.hrank = 1;
        return run_planes(p, &k, how, st->how[0].n, &r, in, out,
                          (size_t)(how == P3_GATHER ? st->how[0].os : st->how[0].is),
                          (size_t)(how == P3_GATHER ? st->how[0].is : st->how[0].os));
    }
    if (is_r2r(st->kind))
        stage_in_doubles(st);
    per = chunk_lines(st);
    memset(&k, 0, sizeof(k)); /* keys are compared bytewise */
    k.kind = st->kind;
    k.rank = !st->skip;
    k.dim[0] = st->dim;
    k.how[0] = st->how[0];
    k.how[1] = st->how[1];
    k.hrank = 2;
    if (is_r2r(st->kind)) {
        /* the real and the imaginary part of each complex value */
        k.how[2] = (fftw_iodim){2, 1, 1};
        k.hrank = 3;
    } else if (st->skip) {
        /* a copy: FFTW's rank-0 transform over the line as one more repetition */
        k.how[2] = st->dim;
        k.hrank = 3;
        memset(&k.dim[0], 0, sizeof(k.dim[0]));
    }
    for (first = 0; first < st->how[0].n; first += per) {
        char *ci = (char *)in + (size_t)first * (size_t)st->how[0].is * in_elem(st->kind);
        char *co = (char *)out + (size_t)first * (size_t)st->how[0].os * out_elem(st->kind);
        fftw_plan plan;

        k.how[0].n = first + per <= st->how[0].n ? per : st->how[0].n - first;
        /* the fast plan needs FFTW's SIMD alignment; a user array without it
         * (or a variable of _many at an odd offset) gets an unaligned one */
        k.unaligned = fftw_alignment_of((double *)ci) != 0 || fftw_alignment_of((double *)co) != 0;
        plan = get_plan(p, &k);
        if (plan == NULL)
            return plan_failed(&k, st->dim.n);
        execute(plan, st->kind, ci, co);
        p3_tr_progress(p);
    }
    return P3DFFT_OK;
}
