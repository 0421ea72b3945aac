/* The co-design version: one offcoll halo plan over the nine fields. A start
 * hands the field's packing, notified puts and unpacking to offcoll's
 * progress engine and returns; a wait sleeps until the ghosts are filled. */
#include <stdlib.h>

#include "awp_error.h"
#include "awp_exchange.h"
#include "offcoll_mpi.h"

typedef struct {
    const awp_grid_t *g;
    awp_wave_t *w;
    oc_context_t *ctx;
    oc_team_t *team;
    oc_halo_t *halo;
} offload_t;

static int oc_fail(const char *call, oc_status_t st)
{
    return awp_fail("offload: %s: %s: %s", call, oc_status_string(st), oc_last_error());
}

static int off_destroy(void *state);

/* The local part: the context. */
static int off_create(const awp_grid_t *g, awp_wave_t *w, void **state)
{
    offload_t *x = calloc(1, sizeof(*x));
    oc_status_t st;
    if (x == NULL)
        return awp_fail("offload: out of memory");
    x->g = g;
    x->w = w;
    *state = x;
    if ((st = oc_init(NULL, &x->ctx)) != OC_OK)
        return oc_fail("oc_init", st);
    return 0;
}

/* Once every rank has its context: the team and the halo plan (offcoll fails
 * each on every member where it fails on one). */
static int off_connect(void *state)
{
    offload_t *x = state;
    const awp_grid_t *g = x->g;
    oc_halo_params_t hp = {{g->dims[0], g->dims[1], g->dims[2]}, {0, 0, 0}, AWP_GHOST, 0};
    oc_halo_field_t fields[AWP_NFIELDS];
    oc_status_t st;
    int f, d;
    if ((st = oc_team_create_mpi(x->ctx, g->comm, &x->team)) != OC_OK)
        return oc_fail("oc_team_create_mpi", st);
    for (f = 0; f < AWP_NFIELDS; f++) {
        fields[f] = (oc_halo_field_t){0};
        fields[f].data = x->w->f[f];
        for (d = 0; d < 3; d++)
            fields[f].n[d] = (size_t)g->n[d];
        fields[f].elem_size = sizeof(float);
        fields[f].dim_mask = awp_exchange_axes((awp_field_t)f);
    }
    if ((st = oc_halo_create(x->team, &hp, fields, AWP_NFIELDS, &x->halo)) != OC_OK)
        return oc_fail("oc_halo_create", st);
    return 0;
}

static int off_start(void *state, awp_field_t f)
{
    offload_t *x = state;
    oc_status_t st = oc_halo_start(x->halo, (int)f);
    return st == OC_OK ? 0 : oc_fail("oc_halo_start", st);
}

static int off_wait(void *state, awp_field_t f)
{
    offload_t *x = state;
    oc_status_t st = oc_halo_wait(x->halo, (int)f);
    return st == OC_OK ? 0 : oc_fail("oc_halo_wait", st);
}

/* Frees what create made, also after a failed create. */
static int off_destroy(void *state)
{
    offload_t *x = state;
    oc_status_t st = OC_OK, s;
    if (x == NULL)
        return 0;
    if (x->halo != NULL && (s = oc_halo_free(x->halo)) != OC_OK)
        st = s;
    if (x->team != NULL && (s = oc_team_free(x->team)) != OC_OK && st == OC_OK)
        st = s;
    if (x->ctx != NULL && (s = oc_finalize(x->ctx)) != OC_OK && st == OC_OK)
        st = s;
    free(x);
    return st == OC_OK ? 0 : oc_fail("releasing the halo plan", st);
}

/* offcoll counts its sends and puts; a face copied straight into a
 * neighbour's window (shared memory) is a copy, not among them. */
static int off_stats(void *state, awp_exchange_stats_t *out)
{
    offload_t *x = state;
    oc_stats_t st;
    oc_status_t s = oc_context_stats(x->ctx, &st);
    if (s != OC_OK)
        return oc_fail("oc_context_stats", s);
    out->network_bytes = st.bytes_sent;
    out->engine_cpu_s = st.progress_cpu_s;
    out->wakeups = st.wakeups;
    return 0;
}

const awp_exchange_ops_t awp_exchange_offload = {
    .name = "offload",
    .overlapped = 1,
    .create = off_create,
    .connect = off_connect,
    .start = off_start,
    .wait = off_wait,
    .destroy = off_destroy,
    .stats = off_stats,
};
