/* The baseline, as the original AWP-ODC does it: pack the 2 boundary planes
 * of each face, MPI_Irecv / MPI_Isend with the face neighbours, MPI_Waitall,
 * unpack into the ghosts. */
#include <stdlib.h>

#include "awp_error.h"
#include "exchange_faces.h"

typedef struct {
    const awp_grid_t *g;
    awp_wave_t *w;
    awp_face_t face[AWP_NFIELDS][6];
    float *sbuf[AWP_NFIELDS][6], *rbuf[AWP_NFIELDS][6];
    MPI_Request req[AWP_NFIELDS][12];
    int nreq[AWP_NFIELDS];
} two_sided_t;

static int ts_destroy(void *state);

static int ts_create(const awp_grid_t *g, awp_wave_t *w, void **state)
{
    two_sided_t *x = calloc(1, sizeof(*x));
    int f, i;
    if (x == NULL)
        return awp_fail("two-sided: out of memory");
    x->g = g;
    x->w = w;
    *state = x;
    for (f = 0; f < AWP_NFIELDS; f++) {
        awp_faces_init(g, (awp_field_t)f, x->face[f]);
        for (i = 0; i < 6; i++) {
            if (x->face[f][i].peer == MPI_PROC_NULL)
                continue;
            x->sbuf[f][i] = malloc(x->face[f][i].count * sizeof(float));
            x->rbuf[f][i] = malloc(x->face[f][i].count * sizeof(float));
            if (x->sbuf[f][i] == NULL || x->rbuf[f][i] == NULL)
                return awp_fail("two-sided: out of memory for the face buffers");
        }
    }
    return 0;
}

static int ts_start(void *state, awp_field_t f)
{
    two_sided_t *x = state;
    int i, rc = MPI_SUCCESS;
    for (i = 0; i < 6; i++) {
        const awp_face_t *a = &x->face[f][i];
        if (a->peer != MPI_PROC_NULL)
            rc |= MPI_Irecv(x->rbuf[f][i], (int)a->count, MPI_FLOAT, a->peer, awp_face_tag(f, i),
                            x->g->comm, &x->req[f][x->nreq[f]++]);
    }
    for (i = 0; i < 6; i++) {
        const awp_face_t *a = &x->face[f][i];
        if (a->peer == MPI_PROC_NULL)
            continue;
        awp_face_pack(x->g, x->w->f[f], a, x->sbuf[f][i]);
        rc |= MPI_Isend(x->sbuf[f][i], (int)a->count, MPI_FLOAT, a->peer, awp_face_tag(f, i ^ 1),
                        x->g->comm, &x->req[f][x->nreq[f]++]);
    }
    return rc == MPI_SUCCESS ? 0 : awp_fail("two-sided: posting the exchange of %s failed",
                                            awp_field_name(f));
}

static int ts_wait(void *state, awp_field_t f)
{
    two_sided_t *x = state;
    int i, rc;
    if (x->nreq[f] == 0)
        return 0;
    rc = MPI_Waitall(x->nreq[f], x->req[f], MPI_STATUSES_IGNORE);
    x->nreq[f] = 0;
    if (rc != MPI_SUCCESS)
        return awp_fail("two-sided: MPI_Waitall for %s failed", awp_field_name(f));
    for (i = 0; i < 6; i++)
        if (x->face[f][i].peer != MPI_PROC_NULL)
            awp_face_unpack(x->g, x->w->f[f], &x->face[f][i], x->rbuf[f][i]);
    return 0;
}

static int ts_destroy(void *state)
{
    two_sided_t *x = state;
    int f, i, rc = 0;
    if (x == NULL)
        return 0;
    for (f = 0; f < AWP_NFIELDS; f++) {
        if (x->nreq[f] > 0 && ts_wait(x, (awp_field_t)f) != 0)
            rc = -1;
        for (i = 0; i < 6; i++) {
            free(x->sbuf[f][i]);
            free(x->rbuf[f][i]);
        }
    }
    free(x);
    return rc;
}

const awp_exchange_ops_t awp_exchange_two_sided = {
    .name = "two-sided",
    .overlapped = 0,
    .create = ts_create,
    .start = ts_start,
    .wait = ts_wait,
    .destroy = ts_destroy,
};
