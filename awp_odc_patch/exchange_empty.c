/* awp_bench's timing reference, not a simulation mode: the overlapped step
 * with the same messages as the other modes, each of zero bytes. What the
 * application waits for then is its neighbours reaching their starts, not
 * data: the part of any mode's visible communication that no transport can
 * hide (ranks drifting apart, a vCPU whose host took it away). The ghosts
 * keep what they had, so the wavefields differ from a real run's. */
#include <stdlib.h>

#include "awp_error.h"
#include "exchange_faces.h"

typedef struct {
    const awp_grid_t *g;
    int peer[AWP_NFIELDS][6];
    MPI_Request req[AWP_NFIELDS][12];
    int nreq[AWP_NFIELDS];
} empty_t;

static int empty_create(const awp_grid_t *g, awp_wave_t *w, void **state)
{
    empty_t *x = calloc(1, sizeof(*x));
    awp_face_t face[6];
    int f, i;
    (void)w;
    if (x == NULL)
        return awp_fail("empty: out of memory");
    x->g = g;
    *state = x;
    for (f = 0; f < AWP_NFIELDS; f++) {
        awp_faces_init(g, (awp_field_t)f, face);
        for (i = 0; i < 6; i++)
            x->peer[f][i] = face[i].peer;
    }
    return 0;
}

static int empty_start(void *state, awp_field_t f)
{
    empty_t *x = state;
    int i, rc = MPI_SUCCESS;
    for (i = 0; i < 6; i++)
        if (x->peer[f][i] != MPI_PROC_NULL) {
            rc |= MPI_Irecv(NULL, 0, MPI_FLOAT, x->peer[f][i], awp_face_tag(f, i), x->g->comm,
                            &x->req[f][x->nreq[f]++]);
            rc |= MPI_Isend(NULL, 0, MPI_FLOAT, x->peer[f][i], awp_face_tag(f, i ^ 1),
                            x->g->comm,
                            &x->req[f][x->nreq[f]++]);
        }
    return rc == MPI_SUCCESS ? 0 : awp_fail("empty: posting the messages of %s failed",
                                            awp_field_name(f));
}

static int empty_wait(void *state, awp_field_t f)
{
    empty_t *x = state;
    int rc = MPI_Waitall(x->nreq[f], x->req[f], MPI_STATUSES_IGNORE);
    x->nreq[f] = 0;
    return rc == MPI_SUCCESS ? 0 : awp_fail("empty: MPI_Waitall for %s failed",
                                            awp_field_name(f));
}

static int empty_destroy(void *state)
{
    empty_t *x = state;
    int f, rc = 0;
    if (x == NULL)
        return 0;
    for (f = 0; f < AWP_NFIELDS; f++)
        if (x->nreq[f] > 0 && empty_wait(x, (awp_field_t)f) != 0)
            rc = -1;
    free(x);
    return rc;
}

const awp_exchange_ops_t awp_exchange_empty = {
    .name = "empty",
    .overlapped = 1,
    .timing_only = 1,
    .create = empty_create,
    .start = empty_start,
    .wait = empty_wait,
    .destroy = empty_destroy,
};
