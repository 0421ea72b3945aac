#include "awp_sim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awp_boundary.h"
#include "awp_error.h"
#include "awp_fp.h"
#include "awp_source.h"

/* ---- set-up ------------------------------------------------------------------ */

/* Cuts the block into the inner box, which needs no neighbour's data, and
 * up to 6 disjoint slabs of the outer AWP_GHOST layers facing a neighbour:
 * x faces whole, y faces without the x slabs, z faces without both. Where
 * the block meets the edge of the domain, the inner box reaches the edge:
 * the ghosts there are not exchanged (zero, or the free surface's images,
 * written before they are read), and long rows keep the kernel fast. */
static void cut_block(awp_sim_t *s)
{
    int a[3], b[3], d;
    for (d = 0; d < 3; d++) {
        int n = s->g.n[d];
        a[d] = awp_grid_neighbor(&s->g, d, -1) == MPI_PROC_NULL ? 0
               : n < AWP_GHOST                                 ? n
                                                               : AWP_GHOST;
        b[d] = awp_grid_neighbor(&s->g, d, 1) == MPI_PROC_NULL ? n
               : n - AWP_GHOST > a[d]                         ? n - AWP_GHOST
                                                               : a[d];
    }
    for (d = 0; d < 3; d++) {
        awp_box_t lo, hi;
        int e;
        for (e = 0; e < 3; e++) {
            /* axes before d are already covered by their own slabs */
            lo.lo[e] = hi.lo[e] = e < d ? a[e] : 0;
            lo.hi[e] = hi.hi[e] = e < d ? b[e] : s->g.n[e];
        }
        lo.hi[d] = a[d];
        hi.lo[d] = b[d];
        s->shell[2 * d] = lo;
        s->shell[2 * d + 1] = hi;
        s->inner.lo[d] = a[d];
        s->inner.hi[d] = b[d];
    }
}

int awp_agree(MPI_Comm comm, int rc)
{
    char msg[512];
    int rank, size, failed, first;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    failed = rc != 0 ? rank : size;
    MPI_Allreduce(&failed, &first, 1, MPI_INT, MPI_MIN, comm);
    if (first == size)
        return 0;
    if (rank == first)
        snprintf(msg, sizeof(msg), "%s", awp_last_error());
    MPI_Bcast(msg, sizeof(msg), MPI_CHAR, first, comm);
    return size > 1 ? awp_fail("rank %d: %s", first, msg) : awp_fail("%s", msg);
}

static int allocate(awp_sim_t *s)
{
    const awp_scenario_t *sc = &s->sc;
    int f;
    for (f = 0; f < AWP_NFIELDS; f++)
        if ((s->w.f[f] = awp_grid_alloc(&s->g)) == NULL)
            return awp_fail("out of memory for the wavefields (9 x %zu floats)", s->g.len);
    if (awp_coef_create(&s->co, &s->g, &sc->media, sc->h, sc->dt) != 0 ||
        awp_sponge_create(&s->sp, &s->g, sc->sponge_nd, sc->sponge_arbc, sc->freesurface) != 0)
        return -1;
    s->trace = calloc((size_t)sc->nrec * (size_t)sc->steps * 3 + 1, sizeof(float));
    return s->trace != NULL ? 0 : awp_fail("out of memory for the receiver traces");
}

int awp_sim_create(awp_sim_t *s, const awp_scenario_t *sc, MPI_Comm comm)
{
    int rc;
    memset(s, 0, sizeof(*s));
    s->sc = *sc;
    s->x = awp_exchange_for(sc->mode);
    rc = awp_grid_init(&s->g, comm, sc->ng, sc->proc);
    if (rc == 0)
        rc = allocate(s);
    if (awp_agree(comm, rc) != 0 ||
        (rc = awp_agree(comm, s->x->create(&s->g, &s->w, &s->xstate))) != 0 ||
        (s->x->connect != NULL && (rc = awp_agree(comm, s->x->connect(s->xstate))) != 0)) {
        char msg[512];
        snprintf(msg, sizeof(msg), "%s", awp_last_error());
        awp_sim_free(s);
        return awp_fail("%s", msg);
    }
    cut_block(s);
    return 0;
}

int awp_sim_exchange_stats(const awp_sim_t *s, awp_exchange_stats_t *st)
{
    if (s->x->stats == NULL)
        return awp_fail("mode %s has no engine of its own that counts (its MPI transport does "
                        "not say)", s->x->name);
    return s->x->stats(s->xstate, st);
}

int awp_sim_free(awp_sim_t *s)
{
    int f, rc = 0;
    if (s->xstate != NULL)
        rc = s->x->destroy(s->xstate);
    s->xstate = NULL;
    for (f = 0; f < AWP_NFIELDS; f++) {
        free(s->w.f[f]);
        s->w.f[f] = NULL;
    }
    awp_coef_free(&s->co);
    awp_sponge_free(&s->sp);
    free(s->trace);
    s->trace = NULL;
    return rc;
}

/* ---- the step ------------------------------------------------------------------ */

static int xstart(awp_sim_t *s, awp_field_t f)
{
    double t = MPI_Wtime();
    int rc = s->x->start(s->xstate, f);
    t = MPI_Wtime() - t;
    s->t_comm += t;
    s->t_start += t;
    return rc;
}

static int xwait(awp_sim_t *s, awp_field_t f)
{
    double t = MPI_Wtime();
    int rc = s->x->wait(s->xstate, f);
    s->t_comm += MPI_Wtime() - t;
    return rc;
}

/* The stress update of group grp over box b: kernel, source, free surface. */
static void stress(awp_sim_t *s, awp_sgroup_t grp, const awp_box_t *b)
{
    awp_stress_box(&s->g, &s->w, &s->co, &s->sp, grp, b);
    awp_source_add(&s->g, &s->w, &s->sc.source, s->sc.h, s->sc.dt, s->step, grp, b);
    if (s->sc.freesurface && (grp == AWP_S_XZ || grp == AWP_S_YZ))
        awp_fs_zero_shear(&s->g, &s->w, grp == AWP_S_XZ ? AWP_XZ : AWP_YZ, b);
}

static void velocity_shell(awp_sim_t *s, awp_field_t c)
{
    int k;
    for (k = 0; k < 6; k++)
        awp_velocity_box(&s->g, &s->w, &s->co, &s->sp, c, &s->shell[k]);
    if (s->sc.freesurface)
        awp_fs_image_velocity(&s->g, &s->w, c);
}

/* vx, vy, vz of receiver r at the current step. */
static float *trace_now(const awp_sim_t *s, int r)
{
    return s->trace + ((size_t)r * (size_t)s->sc.steps + (size_t)s->step) * 3;
}

static void record(awp_sim_t *s)
{
    int r, c, lc[3];
    for (r = 0; r < s->sc.nrec; r++)
        if (awp_grid_owns(&s->g, s->sc.rec[r], lc))
            for (c = 0; c < 3; c++)
                trace_now(s, r)[c] = s->w.f[AWP_U1 + c][awp_at(&s->g, lc[0], lc[1], lc[2])];
}

/* A run that blows up (beyond float range: a huge m0, say) fills the
 * receivers with inf and NaN; it stops here rather than write them out as a
 * result. The traces of the receivers other ranks hold stay 0. */
static int check_receivers(const awp_sim_t *s)
{
    int r, c;
    for (r = 0; r < s->sc.nrec; r++)
        for (c = 0; c < 3; c++)
            if (!isfinite(trace_now(s, r)[c]))
                return awp_fail("receiver %d at cell %d %d %d: v%c = %g at t = %g s: the "
                                "wavefield is no longer finite", r + 1, s->sc.rec[r][0],
                                s->sc.rec[r][1], s->sc.rec[r][2], "xyz"[c], trace_now(s, r)[c],
                                awp_field_time(&s->sc, AWP_U1, s->step + 1));
    return 0;
}

/* The original order: update everything, then exchange everything. */
static int step_bulk(awp_sim_t *s)
{
    awp_box_t all = awp_grid_interior(&s->g);
    int c, grp, rc = 0;
    for (c = AWP_U1; c <= AWP_W1; c++) {
        awp_velocity_box(&s->g, &s->w, &s->co, &s->sp, (awp_field_t)c, &all);
        if (s->sc.freesurface)
            awp_fs_image_velocity(&s->g, &s->w, (awp_field_t)c);
    }
    record(s);
    for (c = AWP_U1; c <= AWP_W1 && rc == 0; c++)
        rc = xstart(s, (awp_field_t)c);
    for (c = AWP_U1; c <= AWP_W1 && rc == 0; c++)
        rc = xwait(s, (awp_field_t)c);
    for (grp = 0; grp < AWP_NSGROUPS; grp++)
        stress(s, (awp_sgroup_t)grp, &all);
    if (s->sc.freesurface)
        awp_fs_image_stress(&s->g, &s->w);
    for (c = AWP_XX; c < AWP_NFIELDS && rc == 0; c++)
        rc = xstart(s, (awp_field_t)c);
    for (c = AWP_XX; c < AWP_NFIELDS && rc == 0; c++)
        rc = xwait(s, (awp_field_t)c);
    return rc;
}

/* The stresses each velocity component reads across the faces. */
static const awp_field_t reads[3][3] = {
    {AWP_XX, AWP_XY, AWP_XZ}, {AWP_XY, AWP_YY, AWP_YZ}, {AWP_XZ, AWP_YZ, AWP_ZZ}};

/* Overlapped: the inner box of every component runs while the previous
 * step's stresses travel; each component's shell waits only for the
 * stresses it reads, and its exchange starts as soon as the shell is done,
 * to travel behind the next components and the stress interior. */
static int step_overlapped(awp_sim_t *s)
{
    int c, f, k, grp, rc = 0, waited[AWP_NFIELDS] = {0};
    for (c = AWP_U1; c <= AWP_W1; c++)
        awp_velocity_box(&s->g, &s->w, &s->co, &s->sp, (awp_field_t)c, &s->inner);
    for (c = AWP_U1; c <= AWP_W1 && rc == 0; c++) {
        for (f = 0; f < 3 && rc == 0; f++)
            if (!waited[reads[c][f]]++)
                rc = xwait(s, reads[c][f]);
        if (rc == 0) {
            velocity_shell(s, (awp_field_t)c);
            rc = xstart(s, (awp_field_t)c);
        }
    }
    if (rc != 0)
        return rc;
    record(s);
    for (grp = 0; grp < AWP_NSGROUPS; grp++)
        stress(s, (awp_sgroup_t)grp, &s->inner);
    for (c = AWP_U1; c <= AWP_W1 && rc == 0; c++)
        rc = xwait(s, (awp_field_t)c);
    for (grp = 0; grp < AWP_NSGROUPS && rc == 0; grp++) {
        awp_field_t fs[3];
        int nf = awp_sgroup_fields((awp_sgroup_t)grp, fs);
        for (k = 0; k < 6; k++)
            stress(s, (awp_sgroup_t)grp, &s->shell[k]);
        for (f = 0; f < nf && rc == 0; f++)
            rc = xstart(s, fs[f]);
    }
    /* writes only ghosts above the surface, which no exchange fills, and
     * reads no z ghost below (image() in awp_boundary.c) */
    if (rc == 0 && s->sc.freesurface)
        awp_fs_image_stress(&s->g, &s->w);
    return rc;
}

int awp_sim_step(awp_sim_t *s)
{
    double t = MPI_Wtime();
    unsigned long fp = 0;
    int rc;
    if (s->step >= s->sc.steps)
        return awp_fail("awp_sim_step: all %d steps of the scenario are done", s->sc.steps);
    if (s->sc.flush_denormals)
        fp = awp_fp_flush_begin();
    rc = s->x->overlapped ? step_overlapped(s) : step_bulk(s);
    if (s->sc.flush_denormals)
        awp_fp_flush_end(fp);
    if (rc == 0)
        rc = check_receivers(s);
    s->step++;
    s->t_step += MPI_Wtime() - t;
    return rc;
}

int awp_sim_finish(awp_sim_t *s)
{
    double t = MPI_Wtime();
    int f, rc = 0;
    for (f = 0; f < AWP_NFIELDS && rc == 0; f++)
        rc = xwait(s, (awp_field_t)f);
    s->t_step += MPI_Wtime() - t;
    return rc;
}

/* ---- gathering to rank 0 ------------------------------------------------------- */

/* The part of global box b inside the block of the rank at coords, in
 * global indices; 0 if empty. */
static int overlap(const awp_grid_t *g, const int coords[3], const awp_box_t *b, awp_box_t *o)
{
    int d;
    for (d = 0; d < 3; d++) {
        int lo = coords[d] * g->n[d], hi = lo + g->n[d];
        o->lo[d] = b->lo[d] > lo ? b->lo[d] : lo;
        o->hi[d] = b->hi[d] < hi ? b->hi[d] : hi;
        if (o->lo[d] >= o->hi[d])
            return 0;
    }
    return 1;
}

static size_t box_volume(const awp_box_t *b)
{
    return (size_t)(b->hi[0] - b->lo[0]) * (size_t)(b->hi[1] - b->lo[1]) *
           (size_t)(b->hi[2] - b->lo[2]);
}

/* Copies between the packed part o (global indices) and either this rank's
 * field (local) or rank 0's output box b. */
static void pack_local(const awp_grid_t *g, const float *f, const awp_box_t *o, float *buf)
{
    int i, j, k;
    for (i = o->lo[0]; i < o->hi[0]; i++)
        for (j = o->lo[1]; j < o->hi[1]; j++)
            for (k = o->lo[2]; k < o->hi[2]; k++)
                *buf++ = f[awp_at(g, i - g->off[0], j - g->off[1], k - g->off[2])];
}

static void unpack_out(const awp_box_t *b, const awp_box_t *o, const float *buf, float *out)
{
    const size_t nj = (size_t)(b->hi[1] - b->lo[1]), nk = (size_t)(b->hi[2] - b->lo[2]);
    int i, j, k;
    for (i = o->lo[0]; i < o->hi[0]; i++)
        for (j = o->lo[1]; j < o->hi[1]; j++)
            for (k = o->lo[2]; k < o->hi[2]; k++)
                out[((size_t)(i - b->lo[0]) * nj + (size_t)(j - b->lo[1])) * nk +
                    (size_t)(k - b->lo[2])] = *buf++;
}

int awp_sim_gather(const awp_sim_t *s, awp_field_t f, const awp_box_t *b, float *out)
{
    const awp_grid_t *g = &s->g;
    awp_box_t o;
    float *buf = malloc(((size_t)g->n[0] * (size_t)g->n[1] * (size_t)g->n[2]) * sizeof(float));
    int r, rc = 0;
    if (awp_agree(g->comm, buf == NULL ? awp_fail("gather: out of memory") : 0) != 0) {
        free(buf);
        return -1;
    }
    if (g->rank != 0) {
        if (overlap(g, g->coords, b, &o)) {
            pack_local(g, s->w.f[f], &o, buf);
            rc = MPI_Send(buf, (int)box_volume(&o), MPI_FLOAT, 0, 0, g->comm);
        }
    } else
        for (r = 0; r < g->size && rc == MPI_SUCCESS; r++) {
            int c[3] = {r / g->dims[2] / g->dims[1], r / g->dims[2] % g->dims[1], r % g->dims[2]};
            if (!overlap(g, c, b, &o))
                continue;
            if (r == 0)
                pack_local(g, s->w.f[f], &o, buf);
            else
                rc = MPI_Recv(buf, (int)box_volume(&o), MPI_FLOAT, r, 0, g->comm,
                              MPI_STATUS_IGNORE);
            unpack_out(b, &o, buf, out);
        }
    free(buf);
    return rc == MPI_SUCCESS ? 0 : awp_fail("gather of %s failed", awp_field_name(f));
}

int awp_sim_traces(const awp_sim_t *s, float *out)
{
    const awp_grid_t *g = &s->g;
    const size_t len = (size_t)s->sc.steps * 3;
    int r, lc[3], rc = MPI_SUCCESS;
    for (r = 0; r < s->sc.nrec && rc == MPI_SUCCESS; r++) {
        const int *p = s->sc.rec[r];
        int owner = ((p[0] / g->n[0]) * g->dims[1] + p[1] / g->n[1]) * g->dims[2] +
                    p[2] / g->n[2];
        if (g->rank == 0 && owner == 0)
            memcpy(out + r * len, s->trace + r * len, len * sizeof(float));
        else if (g->rank == 0)
            rc = MPI_Recv(out + r * len, (int)len, MPI_FLOAT, owner, 1, g->comm,
                          MPI_STATUS_IGNORE);
        else if (awp_grid_owns(g, p, lc))
            rc = MPI_Send(s->trace + r * len, (int)len, MPI_FLOAT, 0, 1, g->comm);
    }
    return rc == MPI_SUCCESS ? 0 : awp_fail("gathering the receiver traces failed");
}
