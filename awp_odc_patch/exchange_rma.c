/* The MPI-3 one-sided baseline: per field a window holding the landing
 * zones of its faces; an exchange is one generalized active-target epoch
 * (MPI_Win_post / MPI_Win_start, MPI_Put of the packed faces at start;
 * MPI_Win_complete / MPI_Win_wait and unpacking at wait). It runs the
 * overlapped step, like offload, so the two differ only in who moves the
 * data. */
#include <stdlib.h>

#include "awp_error.h"
#include "exchange_faces.h"

typedef struct {
    const awp_grid_t *g;
    awp_wave_t *w;
    awp_face_t face[AWP_NFIELDS][6];
    size_t landing[6];            /* offset of face i's landing zone, the same on all ranks */
    float *sbuf[AWP_NFIELDS][6];
    float *base[AWP_NFIELDS];     /* the window memory: the landing zones */
    MPI_Win win[AWP_NFIELDS];
    MPI_Group peers[AWP_NFIELDS]; /* the neighbours the field is exchanged with */
    int active[AWP_NFIELDS];
} rma_t;

/* The distinct peers of the faces of f (a peer may sit on two faces only
 * with 2 ranks along a periodic axis, which this code has not). */
static int peer_group(rma_t *x, awp_field_t f)
{
    MPI_Group all;
    int ranks[6], n = 0, i;
    for (i = 0; i < 6; i++)
        if (x->face[f][i].peer != MPI_PROC_NULL)
            ranks[n++] = x->face[f][i].peer;
    MPI_Comm_group(x->g->comm, &all);
    i = MPI_Group_incl(all, n, ranks, &x->peers[f]);
    MPI_Group_free(&all);
    return i == MPI_SUCCESS ? 0 : awp_fail("rma: MPI_Group_incl failed");
}

/* The local part: faces, peer groups and send buffers. */
static int rma_create(const awp_grid_t *g, awp_wave_t *w, void **state)
{
    rma_t *x = calloc(1, sizeof(*x));
    int f, i;
    if (x == NULL)
        return awp_fail("rma: out of memory");
    x->g = g;
    x->w = w;
    *state = x;
    for (f = 0; f < AWP_NFIELDS; f++) {
        x->win[f] = MPI_WIN_NULL;
        x->peers[f] = MPI_GROUP_NULL;
    }
    for (f = 0; f < AWP_NFIELDS; f++) {
        awp_faces_init(g, (awp_field_t)f, x->face[f]);
        if (peer_group(x, (awp_field_t)f) != 0)
            return -1;
        for (i = 0; i < 6; i++)
            if (x->face[f][i].peer != MPI_PROC_NULL &&
                (x->sbuf[f][i] = malloc(x->face[f][i].count * sizeof(float))) == NULL)
                return awp_fail("rma: out of memory for the face buffers");
    }
    return 0;
}

/* The windows, collectively: every rank allocates all of them, or (create
 * failed somewhere) none, so that rma_destroy's frees pair. A failing
 * MPI_Win_allocate aborts the job (the communicator's default error
 * handler), so the ranks cannot end up with different windows here. */
static int rma_connect(void *state)
{
    rma_t *x = state;
    size_t total = 0;
    int f, i;
    for (i = 0; i < 6; i++) {
        x->landing[i] = total;
        total += x->face[AWP_U1][i].count; /* velocities cross every face: the largest */
    }
    for (f = 0; f < AWP_NFIELDS; f++) {
        MPI_Info info;
        int rc;
        MPI_Info_create(&info);
        MPI_Info_set(info, "no_locks", "true");
        rc = MPI_Win_allocate((MPI_Aint)(total * sizeof(float)), sizeof(float), info,
                              x->g->comm, &x->base[f], &x->win[f]);
        MPI_Info_free(&info);
        if (rc != MPI_SUCCESS)
            return awp_fail("rma: MPI_Win_allocate of %zu bytes failed", total * sizeof(float));
    }
    return 0;
}

static int rma_start(void *state, awp_field_t f)
{
    rma_t *x = state;
    int i, rc;
    /* open for the neighbours' puts first: their start waits for it */
    rc = MPI_Win_post(x->peers[f], 0, x->win[f]);
    for (i = 0; i < 6; i++)
        if (x->face[f][i].peer != MPI_PROC_NULL)
            awp_face_pack(x->g, x->w->f[f], &x->face[f][i], x->sbuf[f][i]);
    rc |= MPI_Win_start(x->peers[f], 0, x->win[f]);
    for (i = 0; i < 6; i++) {
        const awp_face_t *a = &x->face[f][i];
        if (a->peer != MPI_PROC_NULL)
            rc |= MPI_Put(x->sbuf[f][i], (int)a->count, MPI_FLOAT, a->peer,
                          (MPI_Aint)x->landing[i ^ 1], (int)a->count, MPI_FLOAT, x->win[f]);
    }
    x->active[f] = 1;
    return rc == MPI_SUCCESS ? 0 : awp_fail("rma: starting the exchange of %s failed",
                                            awp_field_name(f));
}

static int rma_wait(void *state, awp_field_t f)
{
    rma_t *x = state;
    int i, rc;
    if (!x->active[f])
        return 0;
    rc = MPI_Win_complete(x->win[f]);
    rc |= MPI_Win_wait(x->win[f]);
    x->active[f] = 0;
    if (rc != MPI_SUCCESS)
        return awp_fail("rma: completing the exchange of %s failed", awp_field_name(f));
    for (i = 0; i < 6; i++)
        if (x->face[f][i].peer != MPI_PROC_NULL)
            awp_face_unpack(x->g, x->w->f[f], &x->face[f][i], x->base[f] + x->landing[i]);
    return 0;
}

static int rma_destroy(void *state)
{
    rma_t *x = state;
    int f, i, rc = 0;
    if (x == NULL)
        return 0;
    for (f = 0; f < AWP_NFIELDS; f++) {
        if (rma_wait(x, (awp_field_t)f) != 0)
            rc = -1;
        if (x->win[f] != MPI_WIN_NULL)
            MPI_Win_free(&x->win[f]);
        if (x->peers[f] != MPI_GROUP_NULL)
            MPI_Group_free(&x->peers[f]);
        for (i = 0; i < 6; i++)
            free(x->sbuf[f][i]);
    }
    free(x);
    return rc;
}

const awp_exchange_ops_t awp_exchange_rma = {
    .name = "rma",
    .overlapped = 1,
    .create = rma_create,
    .connect = rma_connect,
    .start = rma_start,
    .wait = rma_wait,
    .destroy = rma_destroy,
};
