/*
 * The two transposes, X-Y over ROW (a variable at a time) and Y-Z over COL
 * (one X-slab of one variable at a time), in three modes:
 *  blocking  MPI_Alltoallv at start (the baseline);
 *  mpi_nb    MPI_Ialltoallv at start, MPI_Test between FFT chunks, MPI_Wait;
 *  offload   offcoll persistent alltoallv requests, built once per
 *            (direction, slot, unit) on the library's buffers and restarted
 *            with oc_start; offcoll's progress thread moves them.
 * X-Y: block i of side 0 is X range i of every line, (xn_i, jisize, kjsize);
 * block i of side 1 is Y range i of our X range, (iisize, yn_i, kjsize).
 * Y-Z: block r of side 0 is the slab's Y range r, (xs, kjsize, yn_r), X
 * fastest; block r of side 1 is Z range r, (xs, zn_r, jjsize).
 * Our own block is not moved: it has the same shape on both sides, and the
 * stages read and write it where side 0 holds it (p3_tr_block), which saves
 * copying 1/np of the data at every transpose, in every mode.
 */
#include <stdlib.h>

#include "offcoll_mpi.h"
#include "p3_internal.h"

static int units(const p3_t *p, int t)
{
    return t == P3_XY ? 1 : p->nslab;
}

static int slots(const p3_t *p, int t)
{
    return t == P3_XY ? p->xslots : P3_SLOTS;
}

static fftw_complex *side(const p3_t *p, int t, int sd, int slot, int unit)
{
    size_t x0 = (size_t)p->slab.s[unit];
    if (p->tr[t].np == 1)
        sd = 0;
    if (t == P3_XY)
        return sd == 0 ? p->xs[slot] : p->xr[slot];
    return sd == 0 ? p->ya[slot] + x0 * (size_t)p->kjsize * (size_t)p->ny
                   : p->zb[slot] + x0 * (size_t)p->jjsize * (size_t)p->nz;
}

fftw_complex *p3_tr_sbuf(const p3_t *p, int t, int dir, int slot, int unit)
{
    return side(p, t, dir == P3_FWD ? 0 : 1, slot, unit);
}

fftw_complex *p3_tr_rbuf(const p3_t *p, int t, int dir, int slot, int unit)
{
    return side(p, t, dir == P3_FWD ? 1 : 0, slot, unit);
}

/* Our index in transpose t's communicator. */
static int own(const p3_t *p, int t)
{
    return t == P3_XY ? p->ipid : p->jpid;
}

fftw_complex *p3_tr_block(const p3_t *p, int t, int slot, int unit, int r)
{
    int mine = r == own(p, t);
    fftw_complex *b = side(p, t, mine ? 0 : 1, slot, unit);
    size_t xs = (size_t)p->slab.n[unit];
    if (t == P3_XY)
        return b + (mine ? p->xy_sdsp[r] : p->xy_rdsp[r]);
    return b + xs * (mine ? (size_t)p->kjsize * (size_t)p->yj.s[r]
                          : (size_t)p->jjsize * (size_t)p->zj.s[r]);
}

/* Counts and displacements in complex elements; c holds send counts, send
 * displacements, receive counts and receive displacements, np each. Our own
 * block's counts are 0 (p3_tr_block). */
static void counts(const p3_t *p, int t, int dir, int unit, int *c)
{
    int n = p->tr[t].np, xs = p->slab.n[unit], r;
    int *s0 = c + (dir == P3_FWD ? 0 : 2 * n), *s1 = c + (dir == P3_FWD ? 2 * n : 0);
    for (r = 0; r < n; r++) {
        if (t == P3_XY) {
            s0[r] = p->xy_scnt[r];
            s0[n + r] = p->xy_sdsp[r];
            s1[r] = p->xy_rcnt[r];
            s1[n + r] = p->xy_rdsp[r];
        } else {
            s0[r] = xs * p->kjsize * p->yj.n[r];
            s0[n + r] = xs * p->kjsize * p->yj.s[r];
            s1[r] = xs * p->jjsize * p->zj.n[r];
            s1[n + r] = xs * p->jjsize * p->zj.s[r];
        }
    }
    s0[own(p, t)] = s1[own(p, t)] = 0;
}

/* Side sd's bytes of one unit of transpose t. */
static size_t side_bytes(const p3_t *p, int t, int sd, int unit)
{
    size_t xs = (size_t)(t == P3_XY ? p->iisize : p->slab.n[unit]);
    if (t == P3_XY)
        return sizeof(fftw_complex) * (sd == 0 ? (size_t)p->nxh * p->jisize * p->kjsize
                                               : xs * p->ny * p->kjsize);
    return sizeof(fftw_complex) * xs * (sd == 0 ? (size_t)p->kjsize * p->ny
                                                : (size_t)p->jjsize * p->nz);
}

static int offload_requests(p3_t *p, int t)
{
    p3_tr_t *tr = &p->tr[t];
    int n = tr->np, *c = malloc(sizeof(int) * 4 * (size_t)n), dir, slot, unit, r;
    size_t *b = malloc(sizeof(size_t) * 4 * (size_t)n);
    oc_status_t st = OC_OK;

    if (c == NULL || b == NULL) {
        free(c);
        free(b);
        return p3_fail(P3DFFT_ERR_NOMEM, "out of memory for the offload requests");
    }
    for (dir = 0; dir < 2 && st == OC_OK; dir++)
        for (slot = 0; slot < slots(p, t) && st == OC_OK; slot++)
            for (unit = 0; unit < units(p, t) && st == OC_OK; unit++) {
                int sd = dir == P3_FWD ? 0 : 1;
                counts(p, t, dir, unit, c);
                for (r = 0; r < 4 * n; r++)
                    b[r] = (size_t)c[r] * sizeof(fftw_complex);
                st = oc_alltoallv_init(tr->team, p3_tr_sbuf(p, t, dir, slot, unit),
                                       side_bytes(p, t, sd, unit), b, b + n,
                                       p3_tr_rbuf(p, t, dir, slot, unit),
                                       side_bytes(p, t, 1 - sd, unit), b + 2 * n, b + 3 * n,
                                       &tr->req[dir][slot][unit]);
            }
    free(c);
    free(b);
    if (st != OC_OK)
        return p3_fail(P3DFFT_ERR_OFFLOAD, "oc_alltoallv_init (%s transpose): %s: %s",
                       tr->name[P3_FWD], oc_status_string(st), oc_last_error());
    return P3DFFT_OK;
}

/* One offcoll context per process, kept from the first offload set-up until
 * MPI_Finalize (which deletes MPI_COMM_SELF's attributes first): creating
 * and finalizing a UCX context (its worker, shared-memory segments and
 * progress thread) at every set-up costs more than a small transform. */
static oc_context_t *shared_ctx;

typedef struct kept {
    struct kept *next;
    void *buf;
} kept_t;
static kept_t *kept; /* p3_tr_keep's buffers */

void p3_tr_keep(void *buf)
{
    kept_t *k;
    if (buf == NULL)
        return;
    if (shared_ctx == NULL) { /* no offcoll transfer ever touched it */
        p3_buf_free(buf);
        return;
    }
    if ((k = malloc(sizeof(*k))) == NULL)
        return; /* never freed rather than freed early */
    k->buf = buf;
    k->next = kept;
    kept = k;
}

static int finalize_ctx(MPI_Comm comm, int key, void *value, void *extra)
{
    (void)comm, (void)key, (void)value, (void)extra;
    /* A context still busy (a plan never cleaned) keeps its backend, which
     * may still touch the kept buffers: they stay too. */
    if (shared_ctx != NULL && oc_finalize(shared_ctx) != OC_OK)
        return MPI_SUCCESS;
    shared_ctx = NULL;
    while (kept != NULL) {
        kept_t *k = kept;
        kept = k->next;
        p3_buf_free(k->buf);
        free(k);
    }
    return MPI_SUCCESS;
}

int p3_tr_stats(double *cpu_s, unsigned long long *wakeups)
{
    oc_stats_t st = {0};
    oc_status_t s;
    if (shared_ctx != NULL && (s = oc_context_stats(shared_ctx, &st)) != OC_OK)
        return p3_fail(P3DFFT_ERR_OFFLOAD, "oc_context_stats: %s: %s", oc_status_string(s),
                       oc_last_error());
    *cpu_s = st.progress_cpu_s;
    *wakeups = st.wakeups;
    return P3DFFT_OK;
}

/* The process's offcoll context, made by the first offload set-up with the
 * OC_* variables. Its work buffers advised for huge pages (p3_buf), it tells
 * offcoll so, whose OC_INTRANODE=auto then moves a rendezvous on this host
 * by cma's single kernel copy wherever the host honours the advice: offload
 * took 0.87-0.93x the FIFO's time so on the 2-vCPU VM at N = 256, where the
 * FIFO gained nothing from huge pages, but 1.02-1.06x on the same VM set to
 * "never" (README, "Measured"). */
static oc_status_t context(const p3_t *p, oc_context_t **ctx)
{
    int key;
    oc_status_t st;
    if (shared_ctx == NULL) {
        oc_config_t cfg;
        if ((st = oc_config_init(&cfg)) != OC_OK)
            return st;
        cfg.huge_buffers |= p->hugepages;
        if ((st = oc_init(&cfg, &shared_ctx)) != OC_OK)
            return st;
        MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, finalize_ctx, &key, NULL);
        MPI_Comm_set_attr(MPI_COMM_SELF, key, NULL);
    }
    *ctx = shared_ctx;
    return OC_OK;
}

void p3_tr_init(p3_t *p)
{
    static const char *const names[P3_NTR][2] = {{"X-Y", "Y-X"}, {"Y-Z", "Z-Y"}};
    int t, s, u;
    for (t = 0; t < P3_NTR; t++) {
        p->tr[t].name[0] = names[t][0];
        p->tr[t].name[1] = names[t][1];
        p->tr[t].comm = t == P3_XY ? p->row : p->col;
        p->tr[t].np = t == P3_XY ? p->iproc : p->jproc;
        for (s = 0; s < P3_SLOTS; s++)
            for (u = 0; u < P3_MAX_SLABS; u++)
                p->tr[t].slot[s][u].mreq = MPI_REQUEST_NULL;
    }
}

static int slots_init(p3_t *p, int t)
{
    p3_tr_t *tr = &p->tr[t];
    int s, u;
    for (s = 0; s < slots(p, t); s++)
        for (u = 0; u < units(p, t); u++) {
            p3_slot_t *sl = &tr->slot[s][u];
            if ((sl->scnt = malloc(sizeof(int) * 4 * (size_t)tr->np)) == NULL)
                return p3_fail(P3DFFT_ERR_NOMEM, "out of memory for the %s counts",
                               tr->name[0]);
            sl->sdsp = sl->scnt + tr->np;
            sl->rcnt = sl->sdsp + tr->np;
            sl->rdsp = sl->rcnt + tr->np;
            sl->mreq = MPI_REQUEST_NULL;
            sl->active = 0;
        }
    return P3DFFT_OK;
}

/* A transpose with one rank moves nothing: no counts, team or requests. */
int p3_tr_setup(p3_t *p)
{
    int t, rc = P3DFFT_OK;
    oc_status_t st;
    for (t = 0; t < P3_NTR && rc == P3DFFT_OK; t++)
        if (p->tr[t].np > 1)
            rc = slots_init(p, t);
    /* one rank: no context, so no progress thread, for nothing to move */
    if (p->mode != P3_OFFLOAD || (p->tr[P3_XY].np == 1 && p->tr[P3_YZ].np == 1))
        return rc;
    /* A rank that failed still takes part in each team's creation, which then
       fails on every rank of that communicator instead of leaving the others
       in it. */
    if (rc == P3DFFT_OK && (st = context(p, &p->oc_ctx)) != OC_OK)
        rc = p3_fail(P3DFFT_ERR_OFFLOAD, "oc_init: %s: %s", oc_status_string(st),
                     oc_last_error());
    for (t = 0; t < P3_NTR; t++) {
        p3_tr_t *tr = &p->tr[t];
        if (tr->np == 1)
            continue;
        st = oc_team_create_mpi(rc == P3DFFT_OK ? p->oc_ctx : NULL, tr->comm, &tr->team);
        if (rc == P3DFFT_OK && st != OC_OK)
            rc = p3_fail(P3DFFT_ERR_OFFLOAD, "oc_team_create_mpi (%s): %s: %s",
                         t == P3_XY ? "ROW" : "COL", oc_status_string(st), oc_last_error());
    }
    /* Request set-up is collective over each team, and a failure spreads only
       within its team: a rank that failed elsewhere still makes the requests
       of every team it is in, so that no member of that team waits for it. */
    for (t = 0; t < P3_NTR; t++)
        if (p->tr[t].team != NULL) {
            int trc = offload_requests(p, t);
            if (rc == P3DFFT_OK)
                rc = trc;
        }
    return rc;
}

int p3_tr_teardown(p3_t *p)
{
    int t, dir, slot, unit, rc = P3DFFT_OK;
    for (t = 0; t < P3_NTR; t++) {
        p3_tr_t *tr = &p->tr[t];
        for (dir = 0; dir < 2; dir++)
            for (slot = 0; slot < P3_SLOTS; slot++)
                for (unit = 0; unit < P3_MAX_SLABS; unit++)
                    if (tr->req[dir][slot][unit] != NULL) {
                        if (oc_request_free(tr->req[dir][slot][unit]) != OC_OK)
                            rc = p3_fail(P3DFFT_ERR_OFFLOAD, "oc_request_free: %s",
                                         oc_last_error());
                        tr->req[dir][slot][unit] = NULL;
                    }
        if (tr->team != NULL && oc_team_free(tr->team) != OC_OK)
            rc = p3_fail(P3DFFT_ERR_OFFLOAD, "oc_team_free: %s", oc_last_error());
        tr->team = NULL;
        for (slot = 0; slot < P3_SLOTS; slot++)
            for (unit = 0; unit < P3_MAX_SLABS; unit++) {
                free(tr->slot[slot][unit].scnt);
                tr->slot[slot][unit].scnt = NULL;
            }
    }
    p->oc_ctx = NULL;
    return rc;
}

int p3_tr_start(p3_t *p, int t, int dir, int slot, int unit)
{
    p3_tr_t *tr = &p->tr[t];
    p3_slot_t *sl = &tr->slot[slot][unit];
    fftw_complex *sbuf = p3_tr_sbuf(p, t, dir, slot, unit);
    fftw_complex *rbuf = p3_tr_rbuf(p, t, dir, slot, unit);
    oc_status_t st;

    if (tr->np == 1)
        return P3DFFT_OK;
    sl->dir = dir;
    switch (p->mode) {
    case P3_BLOCKING:
    case P3_MPI_NB:
        counts(p, t, dir, unit, sl->scnt);
        if (p->mode == P3_BLOCKING) {
            if (MPI_Alltoallv(sbuf, sl->scnt, sl->sdsp, MPI_C_DOUBLE_COMPLEX, rbuf, sl->rcnt,
                              sl->rdsp, MPI_C_DOUBLE_COMPLEX, tr->comm) != MPI_SUCCESS)
                return p3_fail(P3DFFT_ERR_MPI, "MPI_Alltoallv (%s transpose) failed",
                               tr->name[dir]);
            return P3DFFT_OK;
        }
        if (MPI_Ialltoallv(sbuf, sl->scnt, sl->sdsp, MPI_C_DOUBLE_COMPLEX, rbuf, sl->rcnt,
                           sl->rdsp, MPI_C_DOUBLE_COMPLEX, tr->comm, &sl->mreq) != MPI_SUCCESS)
            return p3_fail(P3DFFT_ERR_MPI, "MPI_Ialltoallv (%s transpose) failed", tr->name[dir]);
        break;
    case P3_OFFLOAD:
        if ((st = oc_start(tr->req[dir][slot][unit])) != OC_OK)
            return p3_fail(P3DFFT_ERR_OFFLOAD, "oc_start (%s transpose): %s: %s", tr->name[dir],
                           oc_status_string(st), oc_last_error());
        break;
    default:
        break;
    }
    sl->active = 1;
    return P3DFFT_OK;
}

/* Completes the transpose of the unit in slot; a failure is recorded
 * (p3_fail) unless quiet. */
static int slot_wait(p3_t *p, int t, int slot, int unit, int quiet)
{
    p3_tr_t *tr = &p->tr[t];
    p3_slot_t *sl = &tr->slot[slot][unit];
    oc_status_t st;
    if (tr->np == 1 || !sl->active)
        return P3DFFT_OK;
    sl->active = 0;
    if (p->mode == P3_OFFLOAD) {
        if ((st = oc_wait(tr->req[sl->dir][slot][unit])) != OC_OK) {
            p->oc_failed = 1;
            return quiet ? P3DFFT_ERR_OFFLOAD
                         : p3_fail(P3DFFT_ERR_OFFLOAD, "oc_wait (%s transpose): %s: %s",
                                   tr->name[sl->dir], oc_status_string(st), oc_last_error());
        }
    } else if (MPI_Wait(&sl->mreq, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
        return quiet ? P3DFFT_ERR_MPI
                     : p3_fail(P3DFFT_ERR_MPI, "MPI_Wait (%s transpose) failed",
                               tr->name[sl->dir]);
    }
    return P3DFFT_OK;
}

int p3_tr_wait(p3_t *p, int t, int slot, int unit)
{
    return slot_wait(p, t, slot, unit, 0);
}

void p3_tr_drain(p3_t *p)
{
    int t, s, u;
    for (t = 0; t < P3_NTR; t++)
        for (s = 0; s < slots(p, t); s++)
            for (u = 0; u < units(p, t); u++)
                (void)slot_wait(p, t, s, u, 1);
}

void p3_tr_progress(p3_t *p)
{
    int t, s, u, done;
    if (p->mode != P3_MPI_NB)
        return;
    for (t = 0; t < P3_NTR; t++)
        for (s = 0; s < slots(p, t); s++)
            for (u = 0; u < units(p, t); u++) {
                p3_slot_t *sl = &p->tr[t].slot[s][u];
                if (sl->active && sl->mreq != MPI_REQUEST_NULL)
                    MPI_Test(&sl->mreq, &done, MPI_STATUS_IGNORE);
            }
}
