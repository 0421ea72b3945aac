/*
 * 3D halo-exchange plans. For every factorisation dims[0] x dims[1] x dims[2]
 * of the number of ranks, several variants: periodic or not per dimension,
 * ghost width 1, 2 or 3 (3 = the smallest local extent), faces only or with
 * edges and corners, thread or inline progress (a second context). Each rank
 * owns a block of a global grid (block distribution: local extents differ by
 * one between ranks). Every plan has three fields: element sizes 8 and 4,
 * two of them staggered (n + 1 in one dimension); in some variants the third
 * is exchanged across one or two dimensions only (dim_mask), and its ghosts
 * of the other dimensions must keep their sentinels.
 *
 * Each iteration writes new values into every interior cell (a function of
 * the field, the iteration, the owner and the global coordinates) and a new
 * sentinel into every ghost cell, starts the three fields (all in flight,
 * waited for in a rank-dependent order, or polled with oc_halo_test), then
 * checks every cell: the interior is unchanged; a ghost cell that has an
 * owner (the face neighbours; with corners also the edge and corner ones;
 * across a periodic boundary too) holds the owner's value; every other ghost
 * cell (outside a non-periodic boundary, or an edge or corner one without
 * corners) still holds its sentinel. Every case runs TEST_HALO_ITERS
 * iterations (default 1000; meson sets fewer where each exchange is slow:
 * under the sanitizers, through TCP, on softverbs); then one configuration
 * runs 1000 iterations in thread mode, another 300 in inline mode, whatever
 * TEST_HALO_ITERS says. A rank now and then lags
 * behind, so that its neighbours start the next exchange before it has
 * looked at the last one.
 * In inline mode the waits of every iteration are followed by an
 * MPI_Allreduce: a completed wait must not leave work that only this rank's
 * progress can do (a neighbour's wait would time out).
 *
 * Then the argument checks, each refused with a message naming it (also
 * neighbours whose faces and ghosts differ in extent, and ranks that pass
 * other parameters: refused on every rank); a field started twice is
 * refused with OC_ERR_BUSY and its exchange still completes.
 */
#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "mpi_check.h"
#include "offcoll_mpi.h"

#define NF 3
#define TIMEOUT_S 5.0 /* a lost face fails the check instead of hanging */

static int rank, nprocs;

typedef struct {
    int dims[3], periodic[3];
    unsigned w;
    int corners;
    size_t G[3];      /* global interior extents (unstaggered) */
    int stagger[NF];  /* field f has one more point in dimension stagger[f] (-1: none) */
    size_t esize[NF]; /* 4 or 8 */
    unsigned mask[NF];/* fields[f].dim_mask (0: all dimensions) */
    int iters;
    int inl;          /* inline progress context */
} hcase_t;

/* Per-rank state of one case. */
typedef struct {
    const hcase_t *hc;
    int c[3];                 /* this rank's coordinates */
    size_t n[NF][3], ext[NF][3];
    void *data[NF];
} hstate_t;

static size_t nloc(size_t G, int P, int c)
{
    return G / (size_t)P + ((size_t)c < G % (size_t)P ? 1 : 0);
}

static size_t nstart(size_t G, int P, int c)
{
    return (size_t)c * (G / (size_t)P) + ((size_t)c < G % (size_t)P ? (size_t)c : G % (size_t)P);
}

static uint64_t mix(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* Interior values are even, sentinels odd (also after truncation to 4 bytes). */
static uint64_t value(int f, int iter, int owner, size_t gi, size_t gj, size_t gk)
{
    uint64_t h = mix(((uint64_t)f << 48) ^ ((uint64_t)iter << 20) ^ (uint64_t)owner);
    h = mix(h ^ ((uint64_t)gi << 42) ^ ((uint64_t)gj << 21) ^ (uint64_t)gk);
    return h & ~(uint64_t)1;
}

static uint64_t sentinel(int f, int iter, size_t i, size_t j, size_t k)
{
    uint64_t h = mix(0xDEADull ^ ((uint64_t)f << 48) ^ ((uint64_t)iter << 20) ^ (uint64_t)rank);
    h = mix(h ^ ((uint64_t)i << 42) ^ ((uint64_t)j << 21) ^ (uint64_t)k);
    return h | 1;
}

static int rank_of(const int dims[3], const int c[3])
{
    return (c[0] * dims[1] + c[1]) * dims[2] + c[2];
}

/* Coordinates of the rank at offset off, or 0 where there is none. */
static int neighbour(const hcase_t *hc, const int c[3], const int off[3], int oc[3])
{
    int d;
    for (d = 0; d < 3; d++) {
        oc[d] = c[d] + off[d];
        if (oc[d] < 0 || oc[d] >= hc->dims[d]) {
            if (!hc->periodic[d])
                return 0;
            oc[d] = (oc[d] + hc->dims[d]) % hc->dims[d];
        }
    }
    return 1;
}

static void put_elem(void *data, size_t esize, size_t idx, uint64_t v)
{
    if (esize == 4)
        ((uint32_t *)data)[idx] = (uint32_t)v;
    else
        ((uint64_t *)data)[idx] = v;
}

static uint64_t get_elem(const void *data, size_t esize, size_t idx)
{
    return esize == 4 ? ((const uint32_t *)data)[idx] : ((const uint64_t *)data)[idx];
}

/* What cell (idx[0], idx[1], idx[2]) of field f must hold after the exchange
 * of iteration iter; *ghost_owner tells whose value (-1: sentinel). */
static uint64_t expected(const hstate_t *s, int f, int iter, const size_t idx[3], int *who)
{
    const hcase_t *hc = s->hc;
    const size_t w = hc->w;
    int off[3], oc[3], d, nout = 0;
    size_t g[3];

    int masked = 0; /* a ghost of a dimension the field is not exchanged across */

    for (d = 0; d < 3; d++) {
        if (idx[d] < w)
            off[d] = -1;
        else if (idx[d] >= w + s->n[f][d])
            off[d] = 1;
        else
            off[d] = 0;
        nout += off[d] != 0;
        masked |= off[d] != 0 && hc->mask[f] != 0 && !((hc->mask[f] >> d) & 1u);
    }
    if ((nout > 1 && !hc->corners) || masked || !neighbour(hc, s->c, off, oc)) {
        *who = -1;
        return sentinel(f, iter, idx[0], idx[1], idx[2]);
    }
    for (d = 0; d < 3; d++) {
        size_t on = nloc(hc->G[d], hc->dims[d], oc[d]) + (hc->stagger[f] == d);
        size_t l; /* owner-local interior coordinate */
        if (off[d] < 0)
            l = on + idx[d] - w;          /* idx[d] - w is negative: count from its end */
        else if (off[d] > 0)
            l = idx[d] - w - s->n[f][d];  /* past my end: from its start */
        else
            l = idx[d] - w;
        if (l >= on) { /* cannot happen with w <= n; guards the test itself */
            CHECK(0, "test bug: owner-local %zu >= %zu", l, on);
            l = 0;
        }
        g[d] = nstart(hc->G[d], hc->dims[d], oc[d]) + l;
    }
    *who = rank_of(hc->dims, oc);
    return value(f, iter, *who, g[0], g[1], g[2]);
}

static void fill(hstate_t *s, int f, int iter)
{
    size_t idx[3], e = 0;
    int who;
    for (idx[0] = 0; idx[0] < s->ext[f][0]; idx[0]++)
        for (idx[1] = 0; idx[1] < s->ext[f][1]; idx[1]++)
            for (idx[2] = 0; idx[2] < s->ext[f][2]; idx[2]++, e++) {
                uint64_t v = expected(s, f, iter, idx, &who);
                /* interior: its value; ghosts: a fresh sentinel */
                if (who != rank || idx[0] < s->hc->w || idx[1] < s->hc->w ||
                    idx[2] < s->hc->w || idx[0] >= s->hc->w + s->n[f][0] ||
                    idx[1] >= s->hc->w + s->n[f][1] || idx[2] >= s->hc->w + s->n[f][2])
                    v = sentinel(f, iter, idx[0], idx[1], idx[2]);
                put_elem(s->data[f], s->hc->esize[f], e, v);
            }
}

static const char *case_name(const hcase_t *hc, char *buf, size_t len)
{
    snprintf(buf, len, "%dx%dx%d periodic %d%d%d w=%u corners=%d G=%zux%zux%zu %s", hc->dims[0],
             hc->dims[1], hc->dims[2], hc->periodic[0], hc->periodic[1], hc->periodic[2], hc->w,
             hc->corners, hc->G[0], hc->G[1], hc->G[2], hc->inl ? "inline" : "thread");
    return buf;
}

/* Checks every cell of field f; reports the first few wrong ones (and no more
 * than 30 in the whole run). Returns the number of wrong cells. */
static int check_field(const hstate_t *s, int f, int iter)
{
    static int printed;
    size_t idx[3], e = 0;
    int who, bad = 0;
    char name[160];
    for (idx[0] = 0; idx[0] < s->ext[f][0]; idx[0]++)
        for (idx[1] = 0; idx[1] < s->ext[f][1]; idx[1]++)
            for (idx[2] = 0; idx[2] < s->ext[f][2]; idx[2]++, e++) {
                uint64_t want = expected(s, f, iter, idx, &who);
                uint64_t got = get_elem(s->data[f], s->hc->esize[f], e);
                if (s->hc->esize[f] == 4)
                    want = (uint32_t)want;
                if (got == want)
                    continue;
                if (bad < 3 && printed < 30) {
                    printed++;
                    CHECK(got == want,
                          "[%s] iter %d field %d (n=%zux%zux%zu, %zu B) cell (%zu,%zu,%zu) "
                          "(w=%u): %s (owner %d) %#llx, found %#llx%s",
                          case_name(s->hc, name, sizeof(name)), iter, f, s->n[f][0], s->n[f][1],
                          s->n[f][2], s->hc->esize[f], idx[0], idx[1], idx[2], s->hc->w,
                          who < 0 ? "untouched sentinel" : "expected", who,
                          (unsigned long long)want, (unsigned long long)got,
                          (got & 1) ? " (a sentinel: never written)" : "");
                } else if (bad == 0) {
                    check_failures++;
                }
                bad++;
            }
    if (bad > 3 && printed < 30) {
        printed++;
        fprintf(stderr, "[rank %d] [%s] iter %d field %d: %d wrong cells in all\n", rank,
                case_name(s->hc, name, sizeof(name)), iter, f, bad);
    }
    return bad;
}

static void wait_field(oc_halo_t *halo, int f, const char *how)
{
    oc_status_t st = oc_halo_wait(halo, f);
    CHECK(st == OC_OK, "%s oc_halo_wait(%d) -> %s (%s)", how, f, oc_status_string(st),
          oc_last_error());
}

static void poll_fields(oc_halo_t *halo)
{
    int done[NF] = {0}, left = NF, f;
    double t0 = MPI_Wtime();
    while (left > 0) {
        for (f = 0; f < NF; f++) {
            oc_status_t st;
            if (done[f])
                continue;
            st = oc_halo_test(halo, f);
            if (st == OC_INPROGRESS)
                continue;
            CHECK(st == OC_OK, "oc_halo_test(%d) -> %s (%s)", f, oc_status_string(st),
                  oc_last_error());
            done[f] = 1;
            left--;
        }
        if (left > 0 && MPI_Wtime() - t0 > TIMEOUT_S) {
            CHECK(0, "oc_halo_test: %d field(s) never completed", left);
            for (f = 0; f < NF; f++)
                if (!done[f])
                    wait_field(halo, f, "after polling");
            return;
        }
        sched_yield();
    }
}

/* Collective: whether any rank has failed a check since its count was failures0. */
static int all_stop(int failures0)
{
    int mine = check_failures > failures0, any = 0;
    MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return any;
}

static const int perms[6][3] = {{0, 1, 2}, {2, 1, 0}, {1, 0, 2}, {2, 0, 1}, {0, 2, 1}, {1, 2, 0}};

/* Collective. Returns whether this rank saw a failure in the case. With ctx,
 * *sent receives the bytes ctx handed to the network during the exchanges. */
static int run_case(oc_team_t *team, const hcase_t *hc, oc_context_t *ctx, uint64_t *sent)
{
    oc_stats_t st0, st1;
    hstate_t s;
    oc_halo_params_t p;
    oc_halo_field_t fields[NF];
    oc_halo_t *halo = NULL;
    int f, d, iter, bad = 0, dx, dy, dz, failures0 = check_failures;
    char name[160];

    memset(&s, 0, sizeof(s));
    s.hc = hc;
    s.c[0] = rank / (hc->dims[1] * hc->dims[2]);
    s.c[1] = (rank / hc->dims[2]) % hc->dims[1];
    s.c[2] = rank % hc->dims[2];
    for (f = 0; f < NF; f++) {
        size_t cells = 1;
        for (d = 0; d < 3; d++) {
            s.n[f][d] = nloc(hc->G[d], hc->dims[d], s.c[d]) + (hc->stagger[f] == d);
            s.ext[f][d] = s.n[f][d] + 2 * hc->w;
            cells *= s.ext[f][d];
        }
        s.data[f] = calloc(cells, hc->esize[f]);
        fields[f].data = s.data[f];
        memcpy(fields[f].n, s.n[f], sizeof(fields[f].n));
        fields[f].elem_size = hc->esize[f];
        fields[f].dim_mask = hc->mask[f];
    }
    memcpy(p.dims, hc->dims, sizeof(p.dims));
    memcpy(p.periodic, hc->periodic, sizeof(p.periodic));
    p.width = hc->w;
    p.corners = hc->corners;
    case_name(hc, name, sizeof(name));

    {
        oc_status_t st = oc_halo_create(team, &p, fields, NF, &halo);
        CHECK(st == OC_OK, "[%s] oc_halo_create -> %s (%s)", name, oc_status_string(st),
              oc_last_error());
    }
    if (halo == NULL) {
        bad = 1;
        goto out;
    }
    for (dx = -1; dx <= 1; dx++)
        for (dy = -1; dy <= 1; dy++)
            for (dz = -1; dz <= 1; dz++) {
                int off[3] = {dx, dy, dz}, oc[3];
                int want = neighbour(hc, s.c, off, oc) ? rank_of(hc->dims, oc) : -1;
                int got = -2;
                CHECK_OC(oc_halo_neighbor(halo, dx, dy, dz, &got));
                CHECK(got == want, "[%s] oc_halo_neighbor(%d,%d,%d) = %d, expected %d", name, dx,
                      dy, dz, got, want);
            }

    if (ctx != NULL)
        CHECK_OC(oc_context_stats(ctx, &st0));
    for (iter = 0; iter < hc->iters; iter++) {
        const int *perm = perms[(rank + iter) % 6];
        for (f = 0; f < NF; f++)
            fill(&s, f, iter);
        switch (iter % 4) {
        case 0: /* all in flight, waited for in a rank-dependent order */
        case 3:
            for (f = 0; f < NF; f++)
                CHECK_OC(oc_halo_start(halo, iter % 4 ? perms[iter % 6][f] : f));
            for (f = 0; f < NF; f++)
                wait_field(halo, perm[f], name);
            break;
        case 1: /* one alone, then two together */
            CHECK_OC(oc_halo_start(halo, 1));
            wait_field(halo, 1, name);
            CHECK_OC(oc_halo_start(halo, 2));
            CHECK_OC(oc_halo_start(halo, 0));
            wait_field(halo, perm[0] == 2 ? 2 : 0, name);
            wait_field(halo, perm[0] == 2 ? 0 : 2, name);
            break;
        case 2: /* all in flight, polled */
            for (f = NF - 1; f >= 0; f--)
                CHECK_OC(oc_halo_start(halo, f));
            poll_fields(halo);
            break;
        }
        /* done fields: wait and test return at once */
        CHECK_OC(oc_halo_wait(halo, perm[1]));
        CHECK_OC(oc_halo_test(halo, perm[2]));
        /* Inline: a completed wait leaves nothing that needs this rank's
         * progress (a neighbour's wait would time out). Every rank stops
         * together once one has failed. */
        if (hc->inl && all_stop(failures0))
            break;
        if (iter % 7 == 3 && rank == (iter / 7) % nprocs)
            usleep(300); /* lag: the neighbours start the next exchange first */
        for (f = 0; f < NF; f++)
            check_field(&s, f, iter);
        if (!hc->inl && hc->iters > 100 && iter % 25 == 24 && all_stop(failures0))
            break;
    }
    if (ctx != NULL) {
        CHECK_OC(oc_context_stats(ctx, &st1));
        *sent = st1.bytes_sent - st0.bytes_sent;
    }
    all_stop(failures0);
    bad = check_failures > failures0;
    CHECK_OC(oc_halo_free(halo));
out:
    for (f = 0; f < NF; f++)
        free(s.data[f]);
    return bad;
}

/* A neighbour whose window is mapped here gets its faces copied straight into
 * its landing zone, without a put: where every rank is mapped, the exchanges
 * hand nothing to the network (sent: their bytes); where none but self is,
 * they put every face that goes to another rank. */
static void faces_path(oc_team_t *team, uint64_t sent)
{
    unsigned char *base;
    oc_win_t *win = NULL;
    int r, mapped = 0;

    CHECK_OC(oc_win_create(team, 8, 0, (void **)&base, &win));
    if (win == NULL)
        return;
    for (r = 0; r < nprocs; r++) {
        void *p;
        mapped += oc_win_peer_ptr(win, r, &p) == OC_OK;
    }
    if (mapped == nprocs)
        CHECK(sent == 0, "all %d ranks mapped, yet the exchanges put %llu bytes", nprocs,
              (unsigned long long)sent);
    else if (mapped == 1 && nprocs > 1)
        CHECK(sent > 0, "no peer mapped, yet the exchanges put nothing");
    if (rank == 0)
        printf("test_halo: %d of %d ranks' windows mapped on rank 0; faces put: %llu bytes\n",
               mapped, nprocs, (unsigned long long)sent);
    CHECK_OC(oc_win_free(win));
}

/* All ordered factorisations of n into three factors. */
static int factorisations(int n, int out[][3])
{
    int k = 0, a, b;
    for (a = 1; a <= n; a++)
        for (b = 1; a * b <= n; b++)
            if (n % (a * b) == 0) {
                out[k][0] = a;
                out[k][1] = b;
                out[k][2] = n / (a * b);
                k++;
            }
    return k;
}

/* Variant v of a case on process grid dims. */
static void make_case(hcase_t *hc, const int dims[3], int v, int iters)
{
    static const unsigned widths[3] = {1, 2, 3};
    int d, mask = (v * 5 + v / 8) % 8;
    size_t nmin;

    memset(hc, 0, sizeof(*hc));
    memcpy(hc->dims, dims, sizeof(hc->dims));
    hc->w = widths[v % 3];
    hc->corners = v % 2;
    hc->inl = v % 5 == 2;
    hc->iters = iters;
    /* w = 3: the smaller blocks are exactly w wide; otherwise w or w + 1 */
    nmin = hc->w == 3 ? 3 : hc->w + (size_t)((v / 3) % 2);
    for (d = 0; d < 3; d++) {
        hc->periodic[d] = (mask >> d) & 1;
        if (dims[d] > 1)
            hc->G[d] = (size_t)dims[d] * nmin + 1 + (size_t)((v + d) % (dims[d] - 1));
        else if (!hc->periodic[d] && hc->w == 3 && d == v % 3)
            hc->G[d] = 2; /* no neighbour in d: w may exceed the extent */
        else
            hc->G[d] = nmin + (size_t)((v + d) % 2);
    }
    hc->stagger[0] = -1;
    hc->stagger[1] = v % 3;
    hc->stagger[2] = (v + 1) % 3;
    hc->esize[0] = 8;
    hc->esize[1] = 4;
    hc->esize[2] = v % 2 ? 4 : 8;
    /* every fourth variant: across one dimension, or two, as a stencil's
       stress component that is differentiated along those only */
    if (v % 4 == 3)
        hc->mask[2] = (v / 4) % 2 ? 1u << (v % 3) : 7u & ~(1u << (v % 3));
}

static void bad_arguments(oc_team_t *team)
{
    int fact[64][3], nf = factorisations(nprocs, fact);
    const int *dims = fact[nf / 2];
    oc_halo_params_t p;
    oc_halo_field_t f[2];
    oc_halo_t *halo = NULL;
    hcase_t hc;
    hstate_t s;
    int i, d, nbr = 0;

    memset(&p, 0, sizeof(p));
    memcpy(p.dims, dims, sizeof(p.dims));
    p.periodic[0] = p.periodic[1] = p.periodic[2] = 1; /* every dimension has neighbours */
    p.width = 1;
    p.corners = 0;
    for (i = 0; i < 2; i++) {
        f[i].n[0] = f[i].n[1] = f[i].n[2] = 2;
        f[i].elem_size = 8;
        f[i].dim_mask = 0;
        f[i].data = calloc(5 * 5 * 5, 8); /* room for n = 3 */
    }

    CHECK_ERR(oc_halo_create(NULL, &p, f, 2, &halo), OC_ERR_INVALID_ARG, "team is NULL");
    CHECK_ERR(oc_halo_create(team, NULL, f, 2, &halo), OC_ERR_INVALID_ARG, "params is NULL");
    CHECK_ERR(oc_halo_create(team, &p, NULL, 2, &halo), OC_ERR_INVALID_ARG, "fields is NULL");
    CHECK_ERR(oc_halo_create(team, &p, f, 2, NULL), OC_ERR_INVALID_ARG, "halo is NULL");
    CHECK_ERR(oc_halo_create(team, &p, f, 0, &halo), OC_ERR_INVALID_ARG, "nfields");
    CHECK_ERR(oc_halo_create(team, &p, f, -1, &halo), OC_ERR_INVALID_ARG, "nfields");
    p.dims[0] *= 2; /* product 2 x team size */
    CHECK_ERR(oc_halo_create(team, &p, f, 2, &halo), OC_ERR_INVALID_ARG, "dims");
    p.dims[0] = 0;
    CHECK_ERR(oc_halo_create(team, &p, f, 2, &halo), OC_ERR_INVALID_ARG, "dims");
    p.dims[0] = -dims[0];
    p.dims[1] = -dims[1];
    CHECK_ERR(oc_halo_create(team, &p, f, 2, &halo), OC_ERR_INVALID_ARG, "dims");
    /* a product that wraps to 1 in 64 bits (it crashed the neighbour checks) */
    p.dims[0] = 925832047;
    p.dims[1] = 1394715261;
    p.dims[2] = 2147483643;
    CHECK_ERR(oc_halo_create(team, &p, f, 2, &halo), OC_ERR_INVALID_ARG, "dims");
    memcpy(p.dims, dims, sizeof(p.dims));
    p.width = 0;
    CHECK_ERR(oc_halo_create(team, &p, f, 2, &halo), OC_ERR_INVALID_ARG, "width");
    p.width = 3; /* > n = 2 where there are neighbours */
    CHECK_ERR(oc_halo_create(team, &p, f, 2, &halo), OC_ERR_INVALID_ARG, "width");
    p.width = 1;
    f[1].elem_size = 3;
    CHECK_ERR(oc_halo_create(team, &p, f, 2, &halo), OC_ERR_INVALID_ARG, "elem_size");
    f[1].elem_size = 8;
    f[1].dim_mask = 8;
    CHECK_ERR(oc_halo_create(team, &p, f, 2, &halo), OC_ERR_INVALID_ARG, "dim_mask");
    /* neighbours that disagree on a field's dimensions: refused everywhere */
    f[1].dim_mask = nprocs > 1 && rank == 0 ? 1 : 3;
    if (nprocs > 1)
        CHECK_ERR(oc_halo_create(team, &p, f, 2, &halo), OC_ERR_MISMATCH, "dim_mask");
    f[1].dim_mask = 0;
    {
        void *keep = f[1].data;
        f[1].data = NULL;
        CHECK_ERR(oc_halo_create(team, &p, f, 2, &halo), OC_ERR_INVALID_ARG, "data");
        f[1].data = keep;
    }
    f[1].n[2] = 0;
    CHECK_ERR(oc_halo_create(team, &p, f, 2, &halo), OC_ERR_INVALID_ARG, "fields[1].n[2]=0");
    f[1].n[2] = 2;
    if (nprocs > 1) {
        /* rank 0's faces are 3 cells wide, its neighbours' ghosts 2: every
         * rank refuses (some dimension has two ranks, all are periodic) */
        f[1].n[0] = f[1].n[1] = f[1].n[2] = rank == 0 ? 3 : 2;
        CHECK_ERR(oc_halo_create(team, &p, f, 2, &halo), OC_ERR_MISMATCH,
                  "neighbours must agree");
        f[1].n[0] = f[1].n[1] = f[1].n[2] = 2;
        p.corners = rank == 0;
        CHECK_ERR(oc_halo_create(team, &p, f, 2, &halo), OC_ERR_MISMATCH,
                  "passed other parameters");
        p.corners = 0;
    }
    f[1].n[0] = f[1].n[1] = f[1].n[2] = (size_t)1 << 30;
    CHECK_ERR(oc_halo_create(team, &p, f, 2, &halo), OC_ERR_INVALID_ARG, "address space");
    f[1].n[0] = f[1].n[1] = f[1].n[2] = 2;
    {
        /* The last rank cannot allocate a pack buffer (a z face of 2^51
         * bytes, beyond any address space): every rank fails, naming it. */
        char needle[64];
        if (rank == nprocs - 1) {
            f[1].n[0] = f[1].n[1] = (size_t)1 << 24;
            snprintf(needle, sizeof(needle), "pack buffer of fields[1]");
        } else {
            snprintf(needle, sizeof(needle), "rank %d refused the plan", nprocs - 1);
        }
        CHECK_ERR(oc_halo_create(team, &p, f, 2, &halo), OC_ERR_NO_MEMORY, needle);
        f[1].n[0] = f[1].n[1] = 2;
    }
    CHECK(halo == NULL, "a refused oc_halo_create leaves *halo NULL");

    CHECK_OC(oc_halo_create(team, &p, f, 2, &halo));
    if (halo == NULL)
        goto out;
    CHECK_ERR(oc_halo_start(halo, 2), OC_ERR_INVALID_ARG, "field");
    CHECK_ERR(oc_halo_start(halo, -1), OC_ERR_INVALID_ARG, "field");
    CHECK_ERR(oc_halo_wait(halo, 2), OC_ERR_INVALID_ARG, "field");
    CHECK_ERR(oc_halo_test(halo, -1), OC_ERR_INVALID_ARG, "field");
    CHECK_ERR(oc_halo_start(NULL, 0), OC_ERR_INVALID_ARG, "halo is NULL");
    CHECK_ERR(oc_halo_wait(NULL, 0), OC_ERR_INVALID_ARG, "halo is NULL");
    CHECK_ERR(oc_halo_test(NULL, 0), OC_ERR_INVALID_ARG, "halo is NULL");
    CHECK_ERR(oc_halo_free(NULL), OC_ERR_INVALID_ARG, "halo is NULL");
    CHECK_ERR(oc_halo_neighbor(NULL, 1, 0, 0, &nbr), OC_ERR_INVALID_ARG, "halo is NULL");
    CHECK_ERR(oc_halo_neighbor(halo, 2, 0, 0, &nbr), OC_ERR_INVALID_ARG, "(2, 0, 0)");
    CHECK(nbr == -1, "oc_halo_neighbor(dx=2) stored %d, not -1", nbr);
    CHECK_ERR(oc_halo_neighbor(halo, 0, 0, -2, &nbr), OC_ERR_INVALID_ARG, "(0, 0, -2)");
    CHECK_ERR(oc_halo_neighbor(halo, 0, 0, 0, NULL), OC_ERR_INVALID_ARG, "rank is NULL");
    CHECK_OC(oc_halo_wait(halo, 0)); /* not in flight: at once */
    CHECK_OC(oc_halo_test(halo, 1));

    /* started twice: refused, and the exchange in flight is not disturbed */
    memset(&hc, 0, sizeof(hc));
    memcpy(hc.dims, dims, sizeof(hc.dims));
    memcpy(hc.periodic, p.periodic, sizeof(hc.periodic));
    hc.w = 1;
    for (d = 0; d < 3; d++)
        hc.G[d] = 2 * (size_t)dims[d];
    hc.stagger[0] = hc.stagger[1] = hc.stagger[2] = -1;
    hc.esize[0] = hc.esize[1] = 8;
    memset(&s, 0, sizeof(s));
    s.hc = &hc;
    s.c[0] = rank / (dims[1] * dims[2]);
    s.c[1] = (rank / dims[2]) % dims[1];
    s.c[2] = rank % dims[2];
    for (i = 0; i < 2; i++) {
        for (d = 0; d < 3; d++) {
            s.n[i][d] = 2;
            s.ext[i][d] = 4;
        }
        s.data[i] = f[i].data;
        fill(&s, i, 7);
    }
    CHECK_OC(oc_halo_start(halo, 0));
    CHECK_ERR(oc_halo_start(halo, 0), OC_ERR_BUSY, "field");
    CHECK_OC(oc_halo_start(halo, 1));
    CHECK_ERR(oc_halo_start(halo, 1), OC_ERR_BUSY, "field");
    CHECK_OC(oc_halo_wait(halo, 1));
    CHECK_OC(oc_halo_wait(halo, 0));
    check_field(&s, 0, 7);
    check_field(&s, 1, 7);
    CHECK_OC(oc_halo_free(halo));
out:
    for (i = 0; i < 2; i++)
        free(f[i].data);
}

int main(int argc, char **argv)
{
    oc_context_t *ctx[2] = {NULL, NULL};
    oc_team_t *team[2] = {NULL, NULL};
    const char *env = getenv("TEST_HALO_ITERS");
    int fact[64][3], nf, m, fi, k, K, ncases = 0, bad, iters = env != NULL ? atoi(env) : 1000;
    uint64_t sent = 0;
    double t0 = 0, t1;
    hcase_t hc;
    char name[160];

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    /* both contexts live at once: thread progress, and inline progress */
    for (m = 0; m < 2; m++) {
        ctx[m] = check_open(m ? OC_PROGRESS_INLINE : OC_PROGRESS_THREAD, TIMEOUT_S, &team[m]);
    }
    if (check_failures)
        return check_finish("test_halo");

    /* the matrix: every factorisation, at least 24 cases per rank count */
    t0 = MPI_Wtime();
    nf = factorisations(nprocs, fact);
    K = (24 + nf - 1) / nf;
    if (K < 2)
        K = 2;
    MPI_Bcast(&iters, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (iters < 1)
        iters = 1;
    for (fi = 0; fi < nf; fi++)
        for (k = 0; k < K; k++) {
            make_case(&hc, fact[fi], fi * K + k, iters);
            bad = run_case(team[hc.inl], &hc, NULL, NULL);
            ncases++;
            if (bad && rank == 0)
                printf("FAILED: %s\n", case_name(&hc, name, sizeof(name)));
        }
    t1 = MPI_Wtime();
    if (rank == 0)
        printf("test_halo: %d cases x %d iterations on %d ranks: %.2f s\n", ncases, iters, nprocs,
               t1 - t0);

    /* the long run: 1000 exchanges of three fields, a balanced grid, corners */
    make_case(&hc, fact[nf / 2], 1, 1000);
    hc.periodic[0] = 1;
    hc.periodic[1] = 0;
    hc.periodic[2] = 1;
    hc.inl = 0;
    run_case(team[0], &hc, ctx[0], &sent);
    if (rank == 0)
        printf("test_halo: %s, 1000 iterations: %.2f s\n", case_name(&hc, name, sizeof(name)),
               MPI_Wtime() - t1);
    faces_path(team[0], sent);
    t1 = MPI_Wtime();
    make_case(&hc, fact[0], 4, 300); /* 1 x 1 x n, w = 2, faces only */
    hc.inl = 1;
    run_case(team[1], &hc, NULL, NULL);
    if (rank == 0)
        printf("test_halo: %s, 300 iterations: %.2f s\n", case_name(&hc, name, sizeof(name)),
               MPI_Wtime() - t1);

    bad_arguments(team[0]);
    for (m = 0; m < 2; m++) {
        CHECK_OC(oc_team_free(team[m]));
        CHECK_OC(oc_finalize(ctx[m]));
    }
    if (rank == 0)
        printf("test_halo: %.2f s in all\n", MPI_Wtime() - t0);
    return check_finish("test_halo");
}
