/*
 * Halo geometry and the schedule of one field's exchange.
 *
 * Faces only: one list packs all six faces and puts each, with notification,
 * into the neighbour's landing zone; the next waits for them and unpacks.
 * With corners, the sweep: stage d packs the faces of dimension d, taking
 * along the ghost layers of the dimensions before it (just unpacked), so that
 * edges and corners travel in two or three hops; each stage has its own
 * counter, since a neighbour's stage y may arrive before this rank's stage x.
 */
#include "oc_halo_sched.h"
#include "oc_error.h"

/* Grid coordinates of rank (row-major, dimension 2 fastest). */
static void coords(const oc_halo_sched_geom_t *g, int rank, int c[3])
{
    c[2] = rank % g->dims[2];
    c[1] = (rank / g->dims[2]) % g->dims[1];
    c[0] = rank / (g->dims[2] * g->dims[1]);
}

int oc_halo_sched_rank_at(const oc_halo_sched_geom_t *g, int rank, int dx, int dy, int dz)
{
    int c[3], off[3] = {dx, dy, dz}, d;
    coords(g, rank, c);
    for (d = 0; d < 3; d++) {
        c[d] += off[d];
        if (c[d] < 0 || c[d] >= g->dims[d]) {
            if (!g->periodic[d])
                return -1;
            c[d] = (c[d] + g->dims[d]) % g->dims[d];
        }
    }
    return (c[0] * g->dims[1] + c[1]) * g->dims[2] + c[2];
}

int oc_halo_sched_side_peer(const oc_halo_sched_geom_t *g, int rank, int d, int s)
{
    int off[3] = {0, 0, 0};
    off[d] = s ? 1 : -1;
    return oc_halo_sched_rank_at(g, rank, off[0], off[1], off[2]);
}

/* The neighbour rank exchanges field e with across side s of dimension d,
 * or -1: none there, or the field is not exchanged across d. */
static int face_peer(const oc_halo_sched_geom_t *g, int rank, const oc_halo_sched_ext_t *e, int d,
                     int s)
{
    return (e->dims >> d) & 1u ? oc_halo_sched_side_peer(g, rank, d, s) : -1;
}

oc_halo_sched_box_t oc_halo_sched_region(const oc_halo_sched_geom_t *g, int rank,
                                         const oc_halo_sched_ext_t *e, int d, int s, int send)
{
    oc_halo_sched_box_t b;
    int k;
    for (k = 0; k < 3; k++) {
        if (k == d) {
            b.lo[k] = send ? (s ? e->n[k] : g->w) : (s ? g->w + e->n[k] : 0);
            b.len[k] = g->w;
        } else if (g->corners && k < d) {
            /* The sweep carries the ghosts of earlier dimensions along, where
             * a neighbour filled them: ghosts past a non-periodic edge are
             * the application's and stay untouched everywhere. Neighbours
             * along d share coordinate k, so they agree on which exist. */
            int lo = face_peer(g, rank, e, k, 0) >= 0;
            int hi = face_peer(g, rank, e, k, 1) >= 0;
            b.lo[k] = lo ? 0 : g->w;
            b.len[k] = e->n[k] + (size_t)(lo + hi) * g->w;
        } else {
            b.lo[k] = g->w;
            b.len[k] = e->n[k];
        }
    }
    return b;
}

static size_t box_bytes(const oc_halo_sched_box_t *b, size_t es)
{
    return b->len[0] * b->len[1] * b->len[2] * es;
}

/* Landing zones start on cache lines: neighbours write them concurrently. */
static size_t align64(size_t x)
{
    return (x + 63) & ~(size_t)63;
}

size_t oc_halo_sched_landing(const oc_halo_sched_geom_t *g, int rank,
                             const oc_halo_sched_ext_t *ext, int f, int p, int d, int s)
{
    size_t off = 0;
    int ff, pp, dd, ss;
    for (ff = 0; ff < g->nfields; ff++)
        for (pp = 0; pp < 2; pp++)
            for (dd = 0; dd < 3; dd++)
                for (ss = 0; ss < 2; ss++) {
                    oc_halo_sched_box_t b;
                    if (ff == f && pp == p && dd == d && ss == s)
                        return off;
                    if (face_peer(g, rank, &ext[ff], dd, ss) < 0)
                        continue;
                    b = oc_halo_sched_region(g, rank, &ext[ff], dd, ss, 0);
                    off += align64(box_bytes(&b, ext[ff].es));
                }
    return off;
}

size_t oc_halo_sched_pack_bytes(const oc_halo_sched_geom_t *g, int rank,
                                const oc_halo_sched_ext_t *e)
{
    size_t total = 0;
    int d, s;
    for (d = 0; d < 3; d++)
        for (s = 0; s < 2; s++)
            if (face_peer(g, rank, e, d, s) >= 0) {
                oc_halo_sched_box_t b = oc_halo_sched_region(g, rank, e, d, s, 1);
                total += box_bytes(&b, e->es);
            }
    return total;
}

/* Copy between a box of the field array and a packed buffer. */
static oc_task_t box_copy(const oc_halo_sched_geom_t *g, const oc_halo_sched_ext_t *e, char *array,
                          const oc_halo_sched_box_t *b, char *packed, int pack)
{
    size_t es = e->es;
    ptrdiff_t a1 = (ptrdiff_t)((e->n[2] + 2 * g->w) * es);            /* array strides */
    ptrdiff_t a0 = a1 * (ptrdiff_t)(e->n[1] + 2 * g->w);
    ptrdiff_t p1 = (ptrdiff_t)(b->len[2] * es);                       /* packed strides */
    ptrdiff_t p0 = p1 * (ptrdiff_t)b->len[1];
    char *cell = array + (ptrdiff_t)b->lo[0] * a0 + (ptrdiff_t)b->lo[1] * a1 +
                 (ptrdiff_t)(b->lo[2] * es);
    size_t row = b->len[2] * es;
    if (pack)
        return oc_task_copy_box(packed, p1, p0, cell, a1, a0, row, b->len[1], b->len[0]);
    return oc_task_copy_box(cell, a1, a0, packed, p1, p0, row, b->len[1], b->len[0]);
}

typedef struct {
    const oc_halo_sched_args_t *h;
    int f, p;
    const oc_halo_sched_ext_t *e;   /* this rank's extents of the field */
    size_t pack_off;                /* next free byte of the pack buffer */
    oc_notify_msg_t *msgs;
    int nmsgs;
    oc_sched_t *s;
} build_t;

int oc_halo_sched_stage_sides(const oc_halo_sched_geom_t *g, int rank, const oc_halo_sched_ext_t *e,
                              int st, int d_s[6][2])
{
    int d, s, n = 0;
    for (d = g->corners ? st : 0; d < (g->corners ? st + 1 : 3); d++)
        for (s = 0; s < 2; s++)
            if (face_peer(g, rank, e, d, s) >= 0) {
                d_s[n][0] = d;
                d_s[n][1] = s;
                n++;
            }
    return n;
}

/* Waits for the stage's faces and unpacks them into the ghost layers. */
static oc_status_t add_unpack(build_t *b, int st)
{
    const oc_halo_sched_geom_t *g = b->h->g;
    oc_win_t *win = b->h->win;
    int me = b->h->rank, d_s[6][2], n = oc_halo_sched_stage_sides(g, me, b->e, st, d_s), i;
    oc_task_t t;
    oc_status_t rc;

    if (n == 0)
        return OC_OK;
    t = oc_win_wait_task(win, oc_halo_sched_counter(g, b->f, b->p, st), (size_t)n);
    rc = oc_sched_add(b->s, &t, 1);
    for (i = 0; i < n && rc == OC_OK; i++) {
        int d = d_s[i][0], s = d_s[i][1];
        oc_halo_sched_box_t box = oc_halo_sched_region(g, me, b->e, d, s, 0);
        size_t landing = oc_halo_sched_landing(g, me, &b->h->ext[(size_t)me * (size_t)g->nfields],
                                               b->f, b->p, d, s);
        t = box_copy(g, b->e, b->h->data, &box, oc_win_base(win) + landing, 0);
        rc = oc_sched_add(b->s, &t, 1);
    }
    return rc;
}

/* Sends the stage's faces into the neighbours' landing zones, each followed
 * by its notification: a neighbour whose window is mapped here (this host,
 * shared memory) gets the face copied straight from the array into its
 * landing zone, one copy where packing and a put make two; the others get it
 * packed, then put. A list's copies run before its transfers, so a face is in
 * place before its notification leaves. */
static oc_status_t add_send(build_t *b, int st)
{
    const oc_halo_sched_geom_t *g = b->h->g;
    oc_win_t *win = b->h->win;
    int me = b->h->rank, d_s[6][2], n = oc_halo_sched_stage_sides(g, me, b->e, st, d_s), i;
    oc_status_t rc = OC_OK;

    for (i = 0; i < n && rc == OC_OK; i++) {
        int d = d_s[i][0], s = d_s[i][1], q = oc_halo_sched_side_peer(g, me, d, s);
        oc_halo_sched_box_t box = oc_halo_sched_region(g, me, b->e, d, s, 1);
        size_t bytes = box_bytes(&box, b->e->es);
        /* Across side s, the data fills q's ghost layers of the other side. */
        size_t landing = oc_halo_sched_landing(g, q, &b->h->ext[(size_t)q * (size_t)g->nfields],
                                               b->f, b->p, d, 1 - s);
        char *mapped = oc_win_mapped(win, q), *packed = b->h->pack + b->pack_off;
        oc_task_t t[2];
        size_t k;

        t[0] = box_copy(g, b->e, b->h->data, &box, mapped != NULL ? mapped + landing : packed, 1);
        rc = oc_sched_add(b->s, t, 1);
        /* Into a mapped window the face is in place already: its notification alone follows. */
        k = oc_win_put_tasks(win, q, landing, packed, mapped != NULL ? 0 : bytes,
                             oc_halo_sched_counter(g, b->f, b->p, st), me, &b->msgs[b->nmsgs++], t);
        if (mapped == NULL)
            b->pack_off += bytes;
        if (rc == OC_OK)
            rc = oc_sched_add(b->s, t, k);
    }
    return rc;
}

oc_status_t oc_halo_sched_build(const oc_halo_sched_args_t *h, int f, int p, oc_sched_t *s)
{
    const oc_halo_sched_geom_t *g = h->g;
    int st, nstages = g->corners ? 3 : 1;
    oc_status_t rc = OC_OK;
    build_t b;

    b.h = h;
    b.f = f;
    b.p = p;
    b.e = &h->ext[(size_t)h->rank * (size_t)g->nfields + (size_t)f];
    b.pack_off = 0;
    b.nmsgs = 0;
    b.s = s;
    b.msgs = oc_sched_scratch(s, 6 * sizeof(*b.msgs));
    if (b.msgs == NULL)
        return oc_error(OC_ERR_NO_MEMORY, "halo: notification messages");
    for (st = 0; st <= nstages && rc == OC_OK; st++) {
        /* A WAIT task must lead its list: every stage starts a new one. */
        oc_sched_end_list(s);
        if (st > 0)
            rc = add_unpack(&b, st - 1);
        if (rc == OC_OK && st < nstages)
            rc = add_send(&b, st);
    }
    if (rc != OC_OK)
        oc_error_append(" (halo exchange of field %d)", f);
    return rc;
}
