/*
 * The Y-Z transpose over the COL communicator, one X-slab of one variable at
 * a time, in three modes:
 *  blocking  MPI_Alltoallv at start (the baseline);
 *  mpi_nb    MPI_Ialltoallv at start, MPI_Test between FFT chunks, MPI_Wait;
 *  offload   offcoll persistent alltoallv requests, built once per
 *            (direction, slot, slab) on the library's buffers and restarted
 *            with oc_start; offcoll's progress thread moves them.
 * Block r of the Y side is the slab's Y range r, (xs, kjsize, yn_r) with X
 * fastest; block r of the Z side is Z range r, (xs, zn_r, jjsize). With one
 * rank in COL both layouts coincide and nothing moves.
 */
#include <stdlib.h>

#include "offcoll_mpi.h"
#include "p3_internal.h"

fftw_complex *p3_yz_sbuf(const p3_t *p, int dir, int slot, int slab)
{
    size_t x0 = (size_t)p->slab.s[slab];
    return dir == P3_FWD ? p->ya[slot] + x0 * (size_t)p->kjsize * (size_t)p->ny
                         : p->zb[slot] + x0 * (size_t)p->jjsize * (size_t)p->nz;
}

fftw_complex *p3_yz_rbuf(const p3_t *p, int dir, int slot, int slab)
{
    if (p->jproc == 1)
        return p3_yz_sbuf(p, dir, slot, slab);
    return p3_yz_sbuf(p, 1 - dir, slot, slab);
}

/* Counts and displacements in complex elements for a slab of width xs. */
static void yz_counts(const p3_t *p, int dir, int xs, int *scnt, int *sdsp, int *rcnt, int *rdsp)
{
    int r;
    int *ycnt = dir == P3_FWD ? scnt : rcnt, *ydsp = dir == P3_FWD ? sdsp : rdsp;
    int *zcnt = dir == P3_FWD ? rcnt : scnt, *zdsp = dir == P3_FWD ? rdsp : sdsp;
    for (r = 0; r < p->jproc; r++) {
        ycnt[r] = xs * p->kjsize * p->yj.n[r];
        ydsp[r] = xs * p->kjsize * p->yj.s[r];
        zcnt[r] = xs * p->jjsize * p->zj.n[r];
        zdsp[r] = xs * p->jjsize * p->zj.s[r];
    }
}

static int offload_requests(p3_t *p)
{
    const size_t cplx = sizeof(fftw_complex);
    int n = p->jproc, *c = malloc(sizeof(int) * 4 * (size_t)n), dir, slot, slab, r;
    size_t *b = malloc(sizeof(size_t) * 4 * (size_t)n);
    oc_status_t st = OC_OK;

    if (c == NULL || b == NULL) {
        free(c);
        free(b);
        return p3_fail(P3DFFT_ERR_NOMEM, "out of memory for the offload requests");
    }
    for (dir = 0; dir < 2 && st == OC_OK; dir++)
        for (slot = 0; slot < P3_SLOTS && st == OC_OK; slot++)
            for (slab = 0; slab < p->nslab && st == OC_OK; slab++) {
                int xs = p->slab.n[slab];
                size_t ybytes = (size_t)xs * p->kjsize * p->ny * cplx;
                size_t zbytes = (size_t)xs * p->jjsize * p->nz * cplx;
                yz_counts(p, dir, xs, c, c + n, c + 2 * n, c + 3 * n);
                for (r = 0; r < 4 * n; r++)
                    b[r] = (size_t)c[r] * cplx;
                st = oc_alltoallv_init(p->oc_team, p3_yz_sbuf(p, dir, slot, slab),
                                       dir == P3_FWD ? ybytes : zbytes, b, b + n,
                                       p3_yz_rbuf(p, dir, slot, slab),
                                       dir == P3_FWD ? zbytes : ybytes, b + 2 * n, b + 3 * n,
                                       &p->oc_req[dir][slot][slab]);
            }
    free(c);
    free(b);
    if (st != OC_OK)
        return p3_fail(P3DFFT_ERR_OFFLOAD, "oc_alltoallv_init: %s: %s", oc_status_string(st),
                       oc_last_error());
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
static kept_t *kept; /* p3_yz_keep's buffers */

void p3_yz_keep(void *buf)
{
    kept_t *k;
    if (buf == NULL)
        return;
    if (shared_ctx == NULL) { /* no offcoll transfer ever touched it */
        fftw_free(buf);
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
        fftw_free(k->buf);
        free(k);
    }
    return MPI_SUCCESS;
}

static oc_status_t context(oc_context_t **ctx)
{
    int key;
    oc_status_t st;
    if (shared_ctx == NULL) {
        if ((st = oc_init(NULL, &shared_ctx)) != OC_OK)
            return st;
        MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, finalize_ctx, &key, NULL);
        MPI_Comm_set_attr(MPI_COMM_SELF, key, NULL);
    }
    *ctx = shared_ctx;
    return OC_OK;
}

int p3_yz_setup(p3_t *p)
{
    int s;
    oc_status_t st;
    if (p->jproc == 1)
        return P3DFFT_OK;
    for (s = 0; s < P3_SLOTS; s++) {
        p->slot[s].scnt = malloc(sizeof(int) * 4 * (size_t)p->jproc);
        if (p->slot[s].scnt == NULL)
            return p3_fail(P3DFFT_ERR_NOMEM, "out of memory for the Y-Z counts");
        p->slot[s].sdsp = p->slot[s].scnt + p->jproc;
        p->slot[s].rcnt = p->slot[s].sdsp + p->jproc;
        p->slot[s].rdsp = p->slot[s].rcnt + p->jproc;
        p->slot[s].mreq = MPI_REQUEST_NULL;
        p->slot[s].active = 0;
    }
    if (p->mode != P3_OFFLOAD)
        return P3DFFT_OK;
    /* A rank whose context failed still takes part in the team's creation,
       which then fails on every rank of COL instead of leaving the others in it. */
    if ((st = context(&p->oc_ctx)) != OC_OK) {
        int rc = p3_fail(P3DFFT_ERR_OFFLOAD, "oc_init: %s: %s", oc_status_string(st),
                         oc_last_error());
        oc_team_create_mpi(NULL, p->col, &p->oc_team);
        return rc;
    }
    if ((st = oc_team_create_mpi(p->oc_ctx, p->col, &p->oc_team)) != OC_OK)
        return p3_fail(P3DFFT_ERR_OFFLOAD, "oc_team_create_mpi (COL): %s: %s",
                       oc_status_string(st), oc_last_error());
    return offload_requests(p);
}

int p3_yz_teardown(p3_t *p)
{
    int dir, slot, slab, rc = P3DFFT_OK;
    for (dir = 0; dir < 2; dir++)
        for (slot = 0; slot < P3_SLOTS; slot++)
            for (slab = 0; slab < P3_MAX_SLABS; slab++)
                if (p->oc_req[dir][slot][slab] != NULL) {
                    if (oc_request_free(p->oc_req[dir][slot][slab]) != OC_OK)
                        rc = p3_fail(P3DFFT_ERR_OFFLOAD, "oc_request_free: %s", oc_last_error());
                    p->oc_req[dir][slot][slab] = NULL;
                }
    if (p->oc_team != NULL && oc_team_free(p->oc_team) != OC_OK)
        rc = p3_fail(P3DFFT_ERR_OFFLOAD, "oc_team_free: %s", oc_last_error());
    p->oc_team = NULL;
    p->oc_ctx = NULL;
    for (slot = 0; slot < P3_SLOTS; slot++) {
        free(p->slot[slot].scnt);
        p->slot[slot].scnt = NULL;
    }
    return rc;
}

int p3_yz_start(p3_t *p, int dir, int slot, int slab)
{
    p3_slot_t *sl = &p->slot[slot];
    fftw_complex *sbuf = p3_yz_sbuf(p, dir, slot, slab), *rbuf = p3_yz_rbuf(p, dir, slot, slab);
    oc_status_t st;

    if (p->jproc == 1)
        return P3DFFT_OK;
    sl->dir = dir;
    sl->slab = slab;
    switch (p->mode) {
    case P3_BLOCKING:
    case P3_MPI_NB:
        yz_counts(p, dir, p->slab.n[slab], sl->scnt, sl->sdsp, sl->rcnt, sl->rdsp);
        if (p->mode == P3_BLOCKING) {
            if (MPI_Alltoallv(sbuf, sl->scnt, sl->sdsp, MPI_C_DOUBLE_COMPLEX, rbuf, sl->rcnt,
                              sl->rdsp, MPI_C_DOUBLE_COMPLEX, p->col) != MPI_SUCCESS)
                return p3_fail(P3DFFT_ERR_MPI, "MPI_Alltoallv (Y-Z transpose) failed");
            return P3DFFT_OK;
        }
        if (MPI_Ialltoallv(sbuf, sl->scnt, sl->sdsp, MPI_C_DOUBLE_COMPLEX, rbuf, sl->rcnt,
                           sl->rdsp, MPI_C_DOUBLE_COMPLEX, p->col, &sl->mreq) != MPI_SUCCESS)
            return p3_fail(P3DFFT_ERR_MPI, "MPI_Ialltoallv (Y-Z transpose) failed");
        break;
    case P3_OFFLOAD:
        if ((st = oc_start(p->oc_req[dir][slot][slab])) != OC_OK)
            return p3_fail(P3DFFT_ERR_OFFLOAD, "oc_start (Y-Z transpose): %s: %s",
                           oc_status_string(st), oc_last_error());
        break;
    default:
        break;
    }
    sl->active = 1;
    return P3DFFT_OK;
}

/* Completes slot's transpose; a failure is recorded (p3_fail) unless quiet. */
static int slot_wait(p3_t *p, int slot, int quiet)
{
    p3_slot_t *sl = &p->slot[slot];
    oc_status_t st;
    if (p->jproc == 1 || !sl->active)
        return P3DFFT_OK;
    sl->active = 0;
    if (p->mode == P3_OFFLOAD) {
        if ((st = oc_wait(p->oc_req[sl->dir][slot][sl->slab])) != OC_OK) {
            p->oc_failed = 1;
            return quiet ? P3DFFT_ERR_OFFLOAD
                         : p3_fail(P3DFFT_ERR_OFFLOAD, "oc_wait (Y-Z transpose): %s: %s",
                                   oc_status_string(st), oc_last_error());
        }
    } else if (MPI_Wait(&sl->mreq, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
        return quiet ? P3DFFT_ERR_MPI : p3_fail(P3DFFT_ERR_MPI, "MPI_Wait (Y-Z transpose) failed");
    }
    return P3DFFT_OK;
}

int p3_yz_wait(p3_t *p, int slot)
{
    return slot_wait(p, slot, 0);
}

void p3_yz_drain(p3_t *p)
{
    int s;
    for (s = 0; s < P3_SLOTS; s++)
        (void)slot_wait(p, s, 1);
}

void p3_yz_progress(p3_t *p)
{
    int s, done;
    if (p->mode != P3_MPI_NB)
        return;
    for (s = 0; s < P3_SLOTS; s++)
        if (p->slot[s].active && p->slot[s].mreq != MPI_REQUEST_NULL)
            MPI_Test(&p->slot[s].mreq, &done, MPI_STATUS_IGNORE);
}
