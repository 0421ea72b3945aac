/*
 * Halo-exchange plans: collective validation, the plan's window, and two
 * persistent requests per field (one per parity, see halo/oc_halo_sched.h)
 * whose schedules pack, put, wait and unpack on the progress engine.
 */
#include "halo/oc_halo_sched.h"
#include "oc_error.h"
#include "oc_runtime.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    oc_halo_t *halo;
    int index;
    char *pack;
    oc_request_t *req[2];
    uint32_t started;              /* exchanges started; the parity is its low bit */
    int in_flight;
    oc_status_t broken;            /* an exchange's failure: no restart */
} halo_field_t;

struct oc_halo {
    oc_team_t *team;
    oc_halo_sched_geom_t g;
    oc_halo_sched_ext_t *ext;      /* every rank's extents: [rank * nfields + f] */
    oc_win_t *win;
    halo_field_t *fields;
};

/* What every member says first, so that all refuse a plan together. */
typedef struct {
    int32_t status;
    int32_t nfields;
    int32_t dims[3], periodic[3];
    uint32_t width;
    int32_t corners;
} halo_hello_t;

static const char *const side_name[3][2] = {{"-x", "+x"}, {"-y", "+y"}, {"-z", "+z"}};

/* ---- validation ------------------------------------------------------------------ */

/* The dimensions field x is exchanged across, a bit each (dim_mask 0: all). */
static unsigned field_dims(const oc_halo_field_t *x)
{
    return x->dim_mask != 0 ? x->dim_mask : 7u;
}

/* Whether the field's array, ghosts included, could exist: strides and box
 * sizes are computed in ptrdiff_t and size_t without further checks. */
static int addressable(const oc_halo_field_t *x, unsigned w)
{
    size_t bytes = x->elem_size;
    int d;
    for (d = 0; d < 3; d++)
        if (__builtin_mul_overflow(bytes, x->n[d] + 2 * (size_t)w, &bytes))
            return 0;
    return bytes <= PTRDIFF_MAX;
}

static oc_status_t check_local(const oc_team_t *team, const oc_halo_params_t *p,
                               const oc_halo_field_t *fields, int nfields)
{
    const char *fn = "oc_halo_create";
    long long prod = 1;
    int d, f;
    oc_halo_sched_geom_t g;

    if (p == NULL)
        return oc_error(OC_ERR_INVALID_ARG, "%s: params is NULL", fn);
    for (d = 0; d < 3; d++) {
        /* each at most the team's size, so that the product cannot overflow */
        if (p->dims[d] < 1 || p->dims[d] > team->size)
            return oc_error(OC_ERR_INVALID_ARG, "%s: params->dims[%d]=%d must be 1..%d (the "
                            "team's size)", fn, d, p->dims[d], team->size);
        prod *= p->dims[d];
    }
    if (prod != team->size)
        return oc_error(OC_ERR_INVALID_ARG,
                        "%s: params->dims %dx%dx%d make %lld ranks, but the team has %d", fn,
                        p->dims[0], p->dims[1], p->dims[2], prod, team->size);
    if (p->width < 1)
        return oc_error(OC_ERR_INVALID_ARG, "%s: params->width=0: the ghost width must be >= 1",
                        fn);
    if (fields == NULL)
        return oc_error(OC_ERR_INVALID_ARG, "%s: fields is NULL", fn);
    if (nfields < 1 || nfields > OC_WIN_MAX_COUNTERS / 6)
        return oc_error(OC_ERR_INVALID_ARG, "%s: nfields=%d: expected 1 to %d", fn, nfields,
                        OC_WIN_MAX_COUNTERS / 6);
    memset(&g, 0, sizeof(g));
    memcpy(g.dims, p->dims, sizeof(g.dims));
    memcpy(g.periodic, p->periodic, sizeof(g.periodic));
    for (f = 0; f < nfields; f++) {
        const oc_halo_field_t *x = &fields[f];
        if (x->data == NULL)
            return oc_error(OC_ERR_INVALID_ARG, "%s: fields[%d].data is NULL", fn, f);
        if (x->elem_size != 4 && x->elem_size != 8)
            return oc_error(OC_ERR_INVALID_ARG, "%s: fields[%d].elem_size=%zu: expected 4 or 8",
                            fn, f, x->elem_size);
        if (x->dim_mask > 7)
            return oc_error(OC_ERR_INVALID_ARG,
                            "%s: fields[%d].dim_mask=%#x: expected bits 0-2 (or 0 for all "
                            "three dimensions)", fn, f, x->dim_mask);
        for (d = 0; d < 3; d++) {
            int across = (field_dims(x) >> d) & 1u;
            int has_peer = across && (oc_halo_sched_side_peer(&g, team->rank, d, 0) >= 0 ||
                                      oc_halo_sched_side_peer(&g, team->rank, d, 1) >= 0);
            if (x->n[d] < 1 || x->n[d] > (1u << 30))
                return oc_error(OC_ERR_INVALID_ARG, "%s: fields[%d].n[%d]=%zu: expected 1 to 2^30",
                                fn, f, d, x->n[d]);
            if (has_peer && p->width > x->n[d])
                return oc_error(OC_ERR_INVALID_ARG,
                                "%s: params->width=%u exceeds fields[%d].n[%d]=%zu (a ghost "
                                "width is at most the interior extent along a dimension with "
                                "neighbours)", fn, p->width, f, d, x->n[d]);
        }
        if (!addressable(x, p->width))
            return oc_error(OC_ERR_INVALID_ARG,
                            "%s: fields[%d].n %zux%zux%zu with ghosts of width %u make an "
                            "array larger than the address space", fn, f, x->n[0], x->n[1],
                            x->n[2], p->width);
    }
    return OC_OK;
}

/* Every face one rank sends must have the shape of the ghost layers its
 * neighbour fills. Checked by every member for every pair, so that all agree. */
static oc_status_t check_pairs(const oc_halo_t *h)
{
    const oc_halo_sched_geom_t *g = &h->g;
    int r, d, s, f, k;
    for (r = 0; r < g->size; r++)
        for (d = 0; d < 3; d++)
            for (s = 0; s < 2; s++) {
                int q = oc_halo_sched_side_peer(g, r, d, s);
                if (q < 0)
                    continue;
                for (f = 0; f < g->nfields; f++) {
                    const oc_halo_sched_ext_t *er =
                        &h->ext[(size_t)r * (size_t)g->nfields + (size_t)f];
                    const oc_halo_sched_ext_t *eq =
                        &h->ext[(size_t)q * (size_t)g->nfields + (size_t)f];
                    oc_halo_sched_box_t a, b;
                    int same;
                    if (er->dims != eq->dims)
                        return oc_error(OC_ERR_MISMATCH,
                                        "oc_halo_create: field %d: rank %d exchanges it across "
                                        "dimensions mask %#x, but its neighbour rank %d (%s) "
                                        "across %#x (fields[].dim_mask must agree)",
                                        f, r, er->dims, q, side_name[d][s], eq->dims);
                    if (!((er->dims >> d) & 1u))
                        continue;
                    a = oc_halo_sched_region(g, r, er, d, s, 1);
                    b = oc_halo_sched_region(g, q, eq, d, 1 - s, 0);
                    same = er->es == eq->es;
                    for (k = 0; k < 3; k++)
                        same &= a.len[k] == b.len[k];
                    if (!same)
                        return oc_error(OC_ERR_MISMATCH,
                                        "oc_halo_create: field %d: rank %d sends a %zux%zux%zu "
                                        "face of %zu-byte elements across %s, but its neighbour "
                                        "rank %d has %zux%zux%zu ghost cells of %zu bytes there "
                                        "(neighbours must agree on the extents they share)",
                                        f, r, a.len[0], a.len[1], a.len[2], er->es,
                                        side_name[d][s], q, b.len[0], b.len[1], b.len[2], eq->es);
                }
            }
    return OC_OK;
}

/* What a member can set up alone: the geometry, its row of the extents
 * table, the fields and their pack buffers. Done before the vote, so that a
 * member short of memory fails the plan everywhere. */
static oc_status_t prepare(oc_halo_t *h, const oc_halo_params_t *p, const oc_halo_field_t *fields,
                           int nfields)
{
    oc_team_t *team = h->team;
    oc_halo_sched_ext_t *e;
    size_t bytes;
    int f, d;

    memcpy(h->g.dims, p->dims, sizeof(h->g.dims));
    for (d = 0; d < 3; d++)
        h->g.periodic[d] = p->periodic[d] != 0;
    h->g.w = p->width;
    h->g.corners = p->corners != 0;
    h->g.nfields = nfields;
    h->g.size = team->size;
    h->ext = calloc((size_t)team->size * (size_t)nfields, sizeof(*h->ext));
    h->fields = calloc((size_t)nfields, sizeof(*h->fields));
    if (h->ext == NULL || h->fields == NULL)
        return oc_error(OC_ERR_NO_MEMORY, "oc_halo_create: %d fields on %d ranks", nfields,
                        team->size);
    e = &h->ext[(size_t)team->rank * (size_t)nfields];
    for (f = 0; f < nfields; f++) {
        memcpy(e[f].n, fields[f].n, sizeof(e[f].n));
        e[f].es = fields[f].elem_size;
        e[f].dims = field_dims(&fields[f]);
        bytes = oc_halo_sched_pack_bytes(&h->g, team->rank, &e[f]);
        h->fields[f].pack = malloc(bytes + 1);
        if (h->fields[f].pack == NULL)
            return oc_error(OC_ERR_NO_MEMORY,
                            "oc_halo_create: pack buffer of fields[%d] (%zu bytes)", f, bytes);
    }
    return OC_OK;
}

/* Local checks and set-up, then a vote: a plan refused anywhere is refused
 * everywhere. h is NULL when this member could not allocate it. */
static oc_status_t agree(oc_team_t *team, oc_halo_t *h, const oc_halo_params_t *p,
                         const oc_halo_field_t *fields, int nfields)
{
    halo_hello_t mine, *all;
    oc_status_t st = check_local(team, p, fields, nfields), xst;
    oc_error_saved_t detail; /* this member's reason, across the exchange */
    int r, d;

    if (st == OC_OK)
        st = h != NULL ? prepare(h, p, fields, nfields)
                       : oc_error(OC_ERR_NO_MEMORY, "oc_halo_create: plan");

    oc_error_save(&detail);
    memset(&mine, 0, sizeof(mine));
    mine.status = st;
    if (p != NULL) {
        mine.nfields = nfields;
        mine.width = p->width;
        mine.corners = p->corners != 0;
        for (d = 0; d < 3; d++) {
            mine.dims[d] = p->dims[d];
            mine.periodic[d] = p->periodic[d] != 0;
        }
    }
    /* The plan's verdict travels in mine, so that each member can say why
     * the others refused it; the exchange's own vote is on the memory. */
    all = calloc((size_t)team->size, sizeof(*all));
    xst = all != NULL ? OC_OK : oc_error(OC_ERR_NO_MEMORY, "oc_halo_create: %d ranks", team->size);
    xst = oc_team_allgather(team, xst, "oc_halo_create: failed", &mine, sizeof(mine), all);
    if (xst != OC_OK) {
        free(all);
        oc_error_append(" (oc_halo_create: agreeing on the plan)");
        return xst;
    }
    if (st != OC_OK) {
        free(all);
        oc_error_restore(&detail);
        return st;
    }
    for (r = 0; r < team->size; r++) {
        if (all[r].status != OC_OK) {
            st = oc_error((oc_status_t)all[r].status,
                          "oc_halo_create: rank %d refused the plan (%s; its oc_last_error() "
                          "says why)", r, oc_status_string((oc_status_t)all[r].status));
            break;
        }
        all[r].status = mine.status;
        if (memcmp(&all[r], &mine, sizeof(mine)) != 0) {
            st = oc_error(OC_ERR_MISMATCH,
                          "oc_halo_create: rank %d passed other parameters (nfields %d, dims "
                          "%dx%dx%d, periodic %d%d%d, width %u, corners %d) than this rank",
                          r, all[r].nfields, all[r].dims[0], all[r].dims[1], all[r].dims[2],
                          all[r].periodic[0], all[r].periodic[1], all[r].periodic[2],
                          all[r].width, all[r].corners);
            break;
        }
    }
    free(all);
    return st;
}

/* ---- creation ---------------------------------------------------------------------- */

static void timeout_report(oc_request_t *req);

/* *made: the requests created so far (oc_request_create takes an operation
 * number even when it fails). */
static oc_status_t build_field(oc_halo_t *h, const oc_halo_field_t *x, int f, unsigned *made)
{
    halo_field_t *hf = &h->fields[f];
    oc_halo_sched_args_t c = {&h->g, h->team->rank, h->ext, x->data, NULL, h->win};
    oc_status_t st = OC_OK;
    int p;

    hf->halo = h;
    hf->index = f;
    c.pack = hf->pack;
    for (p = 0; p < 2 && st == OC_OK; p++) {
        oc_sched_t s;
        oc_sched_init(&s, h->team->ctx->cfg.list_max);
        st = oc_halo_sched_build(&c, f, p, &s);
        if (st != OC_OK) {
            oc_sched_fini(&s);
            break;
        }
        st = oc_request_create(h->team, "halo exchange", &s, hf, &hf->req[p]);
        ++*made;
        if (st == OC_OK) {
            hf->req[p]->timeout_report = timeout_report;
            hf->req[p]->knows_peers = 1;
        }
    }
    return st;
}

static void halo_destroy(oc_halo_t *h)
{
    int f, p;
    if (h->fields != NULL)
        for (f = 0; f < h->g.nfields; f++) {
            for (p = 0; p < 2; p++)
                if (h->fields[f].req[p] != NULL)
                    oc_request_free(h->fields[f].req[p]);
            /* A failed exchange's puts may still read it: they cannot be cancelled. */
            if (h->fields[f].broken != OC_OK)
                oc_ctx_release_later(h->team->ctx, free, h->fields[f].pack);
            else
                free(h->fields[f].pack);
        }
    free(h->fields);
    free(h->ext);
    free(h);
}

oc_status_t oc_halo_create(oc_team_t *team, const oc_halo_params_t *params,
                           const oc_halo_field_t *fields, int nfields, oc_halo_t **out)
{
    oc_halo_t *h;
    oc_status_t st;
    int f;

    if (out != NULL)
        *out = NULL;
    if (team == NULL)
        return oc_error(OC_ERR_INVALID_ARG, "oc_halo_create: team is NULL");
    if (out == NULL)
        return oc_error(OC_ERR_INVALID_ARG, "oc_halo_create: halo is NULL");
    h = calloc(1, sizeof(*h));
    if (h != NULL)
        h->team = team;
    st = agree(team, h, params, fields, nfields);
    if (st == OC_OK) /* the own row is copied out before the table is written */
        st = oc_team_allgather(team, OC_OK, "oc_halo_create: failed",
                               &h->ext[(size_t)team->rank * (size_t)nfields],
                               (size_t)nfields * sizeof(*h->ext), h->ext);
    if (st == OC_OK)
        st = check_pairs(h);
    if (st == OC_OK)
        st = oc_win_create_internal(
            "oc_halo_create", team,
            oc_halo_sched_landing(&h->g, team->rank,
                                  &h->ext[(size_t)team->rank * (size_t)nfields], nfields, 0, 0, 0),
            (unsigned)nfields * 6, 1, OC_OK, &h->win);
    if (st == OC_OK) {
        unsigned made = 0;
        for (f = 0; f < nfields && st == OC_OK; f++)
            st = build_field(h, &fields[f], f, &made);
        if (st != OC_OK) /* the peers made a request (an operation number) for each */
            oc_team_skip_ops(team, 2 * (unsigned)nfields - made, 1);
        st = oc_team_vote(team, st, "oc_halo_create: failed while building the exchanges");
    }
    if (st != OC_OK) {
        if (h != NULL) {
            if (h->win != NULL)
                oc_win_free(h->win);
            halo_destroy(h);
        }
        return st;
    }
    *out = h;
    return OC_OK;
}

/* ---- exchanges ----------------------------------------------------------------------- */

static oc_status_t get_field(const char *fn, oc_halo_t *h, int field, halo_field_t **hf)
{
    if (h == NULL)
        return oc_error(OC_ERR_INVALID_ARG, "%s: halo is NULL", fn);
    if (field < 0 || field >= h->g.nfields)
        return oc_error(OC_ERR_INVALID_ARG, "%s: field=%d: the plan has fields 0..%d", fn, field,
                        h->g.nfields - 1);
    *hf = &h->fields[field];
    return OC_OK;
}

static oc_request_t *current(const halo_field_t *hf)
{
    return hf->req[(hf->started - 1) & 1];
}

oc_status_t oc_halo_start(oc_halo_t *h, int field)
{
    halo_field_t *hf = NULL;
    oc_status_t st = get_field("oc_halo_start", h, field, &hf);
    if (st != OC_OK)
        return st;
    if (hf->in_flight)
        return oc_error(OC_ERR_BUSY, "oc_halo_start: field %d is in flight; complete it with "
                        "oc_halo_wait or oc_halo_test first", field);
    /* A neighbour's faces of the failed exchange may still arrive: they
     * would count towards a later one, which would unpack them as its own. */
    if (hf->broken != OC_OK)
        return oc_error(OC_ERR_INVALID_ARG, "oc_halo_start: an exchange of field %d failed "
                        "earlier (%s); free the plan and create it again", field,
                        oc_status_string(hf->broken));
    st = oc_start(hf->req[hf->started & 1]);
    if (st != OC_OK)
        return st;
    hf->started++;
    hf->in_flight = 1;
    return OC_OK;
}

/* Completes the field's exchange: blocking (oc_wait) or not (oc_test). */
static oc_status_t complete(const char *fn, oc_halo_t *h, int field, int block)
{
    halo_field_t *hf = NULL;
    oc_status_t st = get_field(fn, h, field, &hf);
    if (st != OC_OK || !hf->in_flight)
        return st;
    st = block ? oc_wait(current(hf)) : oc_test(current(hf));
    if (st == OC_INPROGRESS)
        return st;
    hf->in_flight = 0;
    if (st != OC_OK) {
        char detail[1024];
        hf->broken = st;
        snprintf(detail, sizeof(detail), "%s", oc_last_error());
        oc_error(st, "%s: field %d: %s", fn, hf->index, detail);
    }
    return st;
}

oc_status_t oc_halo_wait(oc_halo_t *h, int field)
{
    return complete("oc_halo_wait", h, field, 1);
}

oc_status_t oc_halo_test(oc_halo_t *h, int field)
{
    return complete("oc_halo_test", h, field, 0);
}

oc_status_t oc_halo_neighbor(const oc_halo_t *h, int dx, int dy, int dz, int *rank)
{
    if (rank == NULL)
        return oc_error(OC_ERR_INVALID_ARG, "oc_halo_neighbor: rank is NULL");
    *rank = -1;
    if (h == NULL)
        return oc_error(OC_ERR_INVALID_ARG, "oc_halo_neighbor: halo is NULL");
    if (dx < -1 || dx > 1 || dy < -1 || dy > 1 || dz < -1 || dz > 1)
        return oc_error(OC_ERR_INVALID_ARG, "oc_halo_neighbor: offset (%d, %d, %d) has a "
                        "component outside -1..1", dx, dy, dz);
    *rank = oc_halo_sched_rank_at(&h->g, h->team->rank, dx, dy, dz);
    return OC_OK;
}

/* Names the neighbours whose faces of the timed-out exchange never came: each
 * sends one notification per face per exchange to the stage's counter, so a
 * neighbour on two sides of a stage (two ranks along a periodic dimension)
 * is short on the pair, and is named once with both. With corners, the
 * stages run in order: the report stops at the first one short, since the
 * later ones (this rank's own faces into them included) were never reached. */
static void timeout_report(oc_request_t *req)
{
    halo_field_t *hf = req->owner;
    oc_halo_t *h = hf->halo;
    const oc_halo_sched_geom_t *g = &h->g;
    int p = (int)((hf->started - 1) & 1), me = h->team->rank, st, missing = 0;
    const oc_halo_sched_ext_t *e = &h->ext[(size_t)me * (size_t)g->nfields + (size_t)hf->index];
    uint32_t rounds = (hf->started - 1 - (uint32_t)p) / 2 + 1; /* exchanges of parity p */

    oc_error_append("; faces that never came:");
    for (st = 0; st < (g->corners ? 3 : 1) && !missing; st++) {
        int d_s[6][2], peer[6], n = oc_halo_sched_stage_sides(g, me, e, st, d_s), i, j;
        const _Atomic uint32_t *from =
            &h->win->from[(size_t)oc_halo_sched_counter(g, hf->index, p, st) * (size_t)g->size];
        for (i = 0; i < n; i++)
            peer[i] = oc_halo_sched_side_peer(g, me, d_s[i][0], d_s[i][1]);
        for (i = 0; i < n; i++) {
            uint32_t mult = 0, got;
            for (j = 0; j < i && peer[j] != peer[i]; j++)
                ;
            if (j < i)
                continue; /* named with its first side */
            for (j = i; j < n; j++)
                mult += peer[j] == peer[i];
            got = atomic_load_explicit(&from[peer[i]], memory_order_relaxed);
            if ((int32_t)(got - rounds * mult) >= 0) /* counts wrap */
                continue;
            oc_error_append("%s rank %d (", missing++ ? "," : "", peer[i]);
            for (j = i; j < n; j++)
                if (peer[j] == peer[i])
                    oc_error_append("%s%s", j > i ? "/" : "", side_name[d_s[j][0]][d_s[j][1]]);
            oc_error_append(")");
        }
        if (missing && g->corners && st < 2)
            oc_error_append("; the stages after %c's not reached", "xyz"[st]);
    }
    if (!missing)
        oc_error_append(" none (every neighbour's faces arrived)");
    if (req->stuck_on != NULL && req->stuck_on[0] != '\0')
        oc_error_append("; unfinished:%s", req->stuck_on);
}

oc_status_t oc_halo_free(oc_halo_t *h)
{
    oc_status_t st = OC_OK, wst;
    int f, failed = 0;
    if (h == NULL)
        return oc_error(OC_ERR_INVALID_ARG, "oc_halo_free: halo is NULL");
    for (f = 0; f < h->g.nfields; f++) {
        wst = oc_halo_wait(h, f);
        if (st == OC_OK)
            st = wst;
        failed |= h->fields[f].broken != OC_OK;
    }
    wst = oc_win_close(h->win, failed);
    if (wst != OC_OK)
        oc_error_append(" (oc_halo_free: waiting for the other members)");
    if (st == OC_OK)
        st = wst;
    halo_destroy(h);
    return st;
}
