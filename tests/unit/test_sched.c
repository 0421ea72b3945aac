/*
 * The alltoall(v) schedule builders, run for every team size 1..33 on a
 * simulated network. The simulator applies rendezvous semantics, the
 * strictest a real network uses (UCX switches to it above ~8 KB): a send
 * completes only once the peer has posted the matching receive. A schedule
 * that needs eager buffering, or that only works when every rank's lists
 * line up index by index, deadlocks here even where small messages pass.
 * The put algorithm runs three starts over its two landing zones on
 * simulated windows, half the peers mapped (copies) and half not (puts); a
 * rank moves on to its next start as soon as its last one is done, so the
 * fastest run ahead. Last, the copy tasks' strided copies against a
 * byte-by-byte reference.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include "coll/oc_coll.h"
#include "oc_runtime.h"
#include "ut_data.h"

enum { MAX_RANKS = 33, MAX_REPORTED = 5, PUT_ROUNDS = 3 };

static const size_t list_maxes[] = {2, 3, 4, 7, 64};
static const size_t equal_blocks[] = {0, 1, 3, 16};
static const size_t v_scales[] = {1, 3, 16};

typedef enum { B_BURST, B_PAIRWISE, B_RINGK, B_BRUCK, B_PUT, B_CUSTOM } builder_kind_t;

typedef struct {
    builder_kind_t kind;
    unsigned k; /* ring-k only */
    oc_status_t (*fn)(const oc_coll_args_t *a, oc_sched_t *s); /* B_CUSTOM only */
} builder_t;

static const char *builder_name(const builder_t *b)
{
    static const char *const names[] = {"burst", "pairwise", "ringk", "bruck", "put", "custom"};
    return names[b->kind];
}

static oc_status_t build(const builder_t *b, const oc_coll_args_t *a, oc_sched_t *s)
{
    switch (b->kind) {
    case B_BURST:    return oc_coll_alltoall_burst(a, s);
    case B_PAIRWISE: return oc_coll_alltoall_pairwise(a, s);
    case B_RINGK:    return oc_coll_alltoall_ringk(a, b->k, s);
    case B_BRUCK:    return oc_coll_alltoall_bruck(a, s);
    case B_PUT:      return oc_coll_alltoall_put(a, s);
    default:         return b->fn(a, s);
    }
}

/* Peer pairs per stage: burst and pairwise are ring-k's two ends. */
static unsigned stage_width(const builder_t *b, int n)
{
    switch (b->kind) {
    case B_BURST:    return n > 1 ? (unsigned)(n - 1) : 1;
    case B_PAIRWISE: return 1;
    case B_RINGK:    return b->k;
    default:         return 0;
    }
}

/* ---- the simulated network --------------------------------------------------- */

typedef struct {
    const oc_task_t *t;
    int rank;
} pend_t;

/* Posted, unmatched transfers from one rank to another. Matching is FIFO per
 * pair (as UCX tag matching per sender is), so at any time only one side
 * has entries waiting. */
typedef struct {
    pend_t *q;
    size_t head, len, cap;
    oc_task_type_t waiting;
} pairq_t;

/* Schedules, receive buffers and write counts are by [round * n + rank]. */
typedef struct {
    int n;
    const oc_sched_t *sched;
    const ut_layout_t *lay;
    unsigned char **rbuf;
    unsigned char **writes; /* per byte of each rbuf: how often the schedule wrote it */
    size_t *cur;            /* the list each rank is in */
    size_t *left;           /* unfinished transfers of that list */
    int *posted;
    pairq_t *pairs;         /* by src * n + dst */
    char *err;
    size_t errlen;
    int rounds;             /* starts each rank runs, one after another */
    size_t *round;          /* the start each rank is in */
    oc_win_t *wins;         /* put: each rank's window, its id the rank */
    uint32_t (*avail)[2];   /* put: notifications arrived and not yet waited for */
} net_t;

static size_t at(const net_t *m, int r)
{
    return m->round[r] * (size_t)m->n + (size_t)r;
}

static int net_fail(net_t *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int net_fail(net_t *m, const char *fmt, ...)
{
    va_list ap;
    if (m->err[0] != '\0') /* keep the first cause */
        return -1;
    va_start(ap, fmt);
    vsnprintf(m->err, m->errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* Counts a write into rank r's receive buffer; writes elsewhere go to the
 * schedule's scratch and are not counted. */
static int note_write(net_t *m, int r, uintptr_t p, size_t len)
{
    uintptr_t b = (uintptr_t)m->rbuf[at(m, r)], size = m->lay[r].rbytes;
    if (len == 0 || p + len <= b || p >= b + size)
        return 0;
    if (p < b || p + len > b + size)
        return net_fail(m, "rank %d: a write of %zu bytes straddles the receive buffer", r, len);
    for (size_t i = 0; i < len; i++)
        if (m->writes[at(m, r)][p - b + i] < UINT8_MAX)
            m->writes[at(m, r)][p - b + i]++;
    return 0;
}

static int deliver(net_t *m, const pend_t *send, const pend_t *recv)
{
    if (send->t->len != recv->t->len)
        return net_fail(m, "rank %d sends %zu bytes to rank %d, which receives %zu",
                        send->rank, send->t->len, recv->rank, recv->t->len);
    memcpy(recv->t->dst, send->t->src, send->t->len);
    m->left[send->rank]--;
    m->left[recv->rank]--;
    return note_write(m, recv->rank, (uintptr_t)recv->t->dst, recv->t->len);
}

static int post(net_t *m, int r, const oc_task_t *t)
{
    int send = t->type == OC_TASK_SEND;
    pairq_t *q;
    pend_t me = {t, r};

    if (t->peer < 0 || t->peer >= m->n)
        return net_fail(m, "rank %d: peer %d outside the team", r, t->peer);
    q = &m->pairs[send ? r * m->n + t->peer : t->peer * m->n + r];
    m->left[r]++;
    if (q->head < q->len && q->waiting != t->type) {
        pend_t other = q->q[q->head++];
        if (q->head == q->len)
            q->head = q->len = 0;
        return send ? deliver(m, &me, &other) : deliver(m, &other, &me);
    }
    if (q->len == q->cap) {
        size_t ncap = q->cap ? 2 * q->cap : 4;
        pend_t *nq = realloc(q->q, ncap * sizeof(*nq));
        if (nq == NULL)
            return net_fail(m, "out of memory");
        q->q = nq;
        q->cap = ncap;
    }
    q->q[q->len++] = me;
    q->waiting = t->type;
    return 0;
}

/* A put lands at once: the simulator's network is never slow. */
static int put_now(net_t *m, int r, const oc_task_t *t)
{
    const oc_win_t *w = &m->wins[t->peer];
    uintptr_t base = (uintptr_t)w->base;
    if (t->raddr < base || t->raddr + t->len > base + w->size)
        return net_fail(m, "rank %d: a put of %zu bytes to rank %d lies outside its window", r,
                        t->len, t->peer);
    memcpy((void *)(uintptr_t)t->raddr, t->src, t->len);
    return 0;
}

static int notify_now(net_t *m, int r, const oc_task_t *t)
{
    const oc_notify_msg_t *msg = t->src;
    if (msg->win_id != (uint32_t)t->peer || msg->origin != r || msg->counter > 1)
        return net_fail(m, "rank %d: a notification to rank %d names window %u, counter %u, "
                        "origin %d", r, t->peer, msg->win_id, msg->counter, msg->origin);
    m->avail[t->peer][msg->counter]++;
    return 0;
}

/* A WAIT task leading the list: 1 while its notifications are missing. */
static int wait_blocks(net_t *m, int r, const oc_task_t *t)
{
    size_t c = m->wins != NULL ? (size_t)((const oc_pe_counter_t *)t->obj - m->wins[r].counters)
                               : 2;
    if (c > 1)
        return net_fail(m, "rank %d: a WAIT task on a counter that is not its window's", r);
    if (m->avail[r][c] < t->count)
        return 1;
    m->avail[r][c] -= (uint32_t)t->count;
    return 0;
}

/* A backend's order: the list's copies, in order, then its transfers.
 * Returns 1 where the list must wait for notifications first. */
static int post_list(net_t *m, int r)
{
    const oc_sched_t *s = &m->sched[at(m, r)];
    const oc_task_list_t *l = &s->lists[m->cur[r]];
    const oc_task_t *t = &s->tasks[l->first];
    size_t i, c;
    int rc;

    if (l->ntasks > 0 && t[0].type == OC_TASK_WAIT && (rc = wait_blocks(m, r, &t[0])) != 0)
        return rc;
    for (i = 0; i < l->ntasks; i++)
        if (t[i].type == OC_TASK_COPY) {
            for (c = 0; c < t[i].count; c++) {
                ptrdiff_t off = (ptrdiff_t)c * t[i].dst_stride;
                if (note_write(m, r, (uintptr_t)t[i].dst + (uintptr_t)off, t[i].len) != 0)
                    return -1;
            }
            oc_task_do_copies(&t[i], 1);
        }
    for (i = 0; i < l->ntasks; i++) {
        switch (t[i].type) {
        case OC_TASK_COPY:
            rc = 0;
            break;
        case OC_TASK_WAIT: /* done above where it leads */
            rc = i == 0 ? 0 : net_fail(m, "rank %d: list %zu: a WAIT task at %zu, not first", r,
                                       m->cur[r], i);
            break;
        case OC_TASK_SEND:
        case OC_TASK_RECV:
            rc = post(m, r, &t[i]);
            break;
        case OC_TASK_PUT:
            rc = put_now(m, r, &t[i]);
            break;
        case OC_TASK_NOTIFY:
            rc = notify_now(m, r, &t[i]);
            break;
        default:
            rc = net_fail(m, "rank %d: task %zu of list %zu: a FLUSH task", r, i, m->cur[r]);
        }
        if (rc != 0)
            return -1;
    }
    m->posted[r] = 1;
    return 0;
}

static void describe_deadlock(net_t *m)
{
    size_t len = 0;
    len += (size_t)snprintf(m->err, m->errlen, "deadlock:");
    for (int r = 0; r < m->n && len < m->errlen; r++) {
        const oc_sched_t *s = &m->sched[at(m, r)];
        if (m->cur[r] >= s->nlists)
            continue;
        len += (size_t)snprintf(m->err + len, m->errlen - len,
                                " [rank %d in start %zu, list %zu/%zu waits on", r, m->round[r],
                                m->cur[r], s->nlists);
        if (!m->posted[r] && len < m->errlen)
            len += (size_t)snprintf(m->err + len, m->errlen - len, " notifications");
        for (int p = 0; p < m->n * m->n && len < m->errlen; p++) {
            const pairq_t *q = &m->pairs[p];
            for (size_t i = q->head; i < q->len && len < m->errlen; i++)
                if (q->q[i].rank == r)
                    len += (size_t)snprintf(m->err + len, m->errlen - len, " %s %d",
                                            q->waiting == OC_TASK_SEND ? "send to" : "recv from",
                                            q->q[i].t->peer);
        }
        if (len < m->errlen)
            len += (size_t)snprintf(m->err + len, m->errlen - len, "]");
    }
}

/* Runs every rank's schedules to their end, list k+1 only after list k,
 * each start right after the rank's previous one. */
static int net_run(net_t *m)
{
    for (;;) {
        int moved = 0, busy = 0;
        for (int r = 0; r < m->n; r++) {
            for (;;) {
                int rc;
                if (m->cur[r] >= m->sched[at(m, r)].nlists) {
                    if (m->round[r] + 1 >= (size_t)m->rounds)
                        break;
                    m->round[r]++;
                    m->cur[r] = 0;
                    moved = 1;
                } else if (m->posted[r]) {
                    if (m->left[r] > 0)
                        break;
                    m->posted[r] = 0;
                    m->cur[r]++;
                } else if ((rc = post_list(m, r)) < 0) {
                    return -1;
                } else if (rc > 0) {
                    break;
                } else {
                    moved = 1;
                }
            }
            busy |= m->round[r] + 1 < (size_t)m->rounds || m->cur[r] < m->sched[at(m, r)].nlists;
        }
        if (!busy)
            return 0;
        if (!moved) {
            describe_deadlock(m);
            return -1;
        }
    }
}

/* ---- one case: n ranks, one builder, one layout ---------------------------------- */

typedef struct {
    const builder_t *b;
    ut_shape_t shape;
    int n;
    size_t list_max, scale;
} case_t;

static size_t ceil_log2(size_t n)
{
    size_t l = 0;
    while (((size_t)1 << l) < n)
        l++;
    return l;
}

/* How far rank r's send or receive reaches round the ring: stage j of ring-k
 * exchanges with the ranks j*w+1 .. (j+1)*w away. */
static size_t ring_distance(const oc_task_t *t, int r, int n)
{
    int d = t->type == OC_TASK_SEND ? t->peer - r : r - t->peer;
    return (size_t)((d + n) % n);
}

/* ceil((n-1)/w) stages, also where a stage is cut into several lists: the
 * lists alone then no longer count them, so each list's stage comes from its
 * peers' distances. A list must stay within one stage, and a new list within
 * a stage counts as a stage of its own unless the one before had no room for
 * its first pair (the send and receive of one distance, which the builder
 * keeps together): a list ended with room is a stage boundary. Where a
 * stage fits one list, this makes the list count the stage count. The self
 * copy, before any exchange, belongs to stage 0. */
static int check_stages(const case_t *c, int r, const oc_sched_t *s, unsigned w, char *err,
                        size_t errlen)
{
    size_t want = ((size_t)c->n - 1 + w - 1) / w, stages = 1, cur = 0;

    for (size_t i = 0; i < s->nlists; i++) {
        const oc_task_list_t *l = &s->lists[i];
        size_t stage = SIZE_MAX, first = 0, pair = 0;
        for (size_t j = l->first; j < l->first + l->ntasks; j++) {
            size_t d;
            if (s->tasks[j].type == OC_TASK_COPY)
                continue;
            d = ring_distance(&s->tasks[j], r, c->n);
            if (stage == SIZE_MAX) {
                stage = (d - 1) / w;
                first = d;
            }
            if ((d - 1) / w != stage) {
                snprintf(err, errlen, "rank %d: list %zu mixes stages %zu and %zu (%u peers each)",
                         r, i, stage, (d - 1) / w, w);
                return -1;
            }
            pair += d == first;
        }
        if (stage == SIZE_MAX)
            stage = cur;
        if (i > 0 && (stage != cur || s->lists[i - 1].ntasks + pair <= c->list_max))
            stages++;
        cur = stage;
    }
    if (stages != want) {
        snprintf(err, errlen, "rank %d: %zu stages in %zu lists, expected ceil((n-1)/%u) = %zu",
                 r, stages, s->nlists, w, want);
        return -1;
    }
    return 0;
}

/* Limits and list counts of the schedule itself, before running it. */
static int check_shape(const case_t *c, int r, const oc_sched_t *s, char *err, size_t errlen)
{
    size_t next = 0, with_transfers = 0;
    int nonzero = c->scale > 0 && c->shape != UT_EMPTY;
    unsigned w = stage_width(c->b, c->n);

    for (size_t i = 0; i < s->nlists; i++) {
        const oc_task_list_t *l = &s->lists[i];
        int transfers = 0;
        if (l->ntasks == 0 || l->ntasks > c->list_max || l->first != next) {
            snprintf(err, errlen, "rank %d: list %zu has %u tasks from task %u (limit %zu, "
                     "expected from %zu)", r, i, l->ntasks, l->first, c->list_max, next);
            return -1;
        }
        for (size_t j = l->first; j < l->first + l->ntasks; j++)
            transfers |= s->tasks[j].type != OC_TASK_COPY;
        with_transfers += (size_t)transfers;
        next += l->ntasks;
    }
    if (next != s->ntasks) {
        snprintf(err, errlen, "rank %d: the lists cover %zu of %zu tasks", r, next, s->ntasks);
        return -1;
    }
    if (!nonzero && s->ntasks != 0) {
        snprintf(err, errlen, "rank %d: %zu tasks for nothing to move", r, s->ntasks);
        return -1;
    }
    if (nonzero && (c->shape == UT_EQUAL || c->shape == UT_UNEVEN) && c->n > 1 && w > 0 &&
        check_stages(c, r, s, w, err, errlen) != 0)
        return -1;
    if (nonzero && c->b->kind == B_BRUCK && with_transfers != ceil_log2((size_t)c->n)) {
        snprintf(err, errlen, "rank %d: %zu lists with transfers, expected ceil(log2 n) = %zu", r,
                 with_transfers, ceil_log2((size_t)c->n));
        return -1;
    }
    return 0;
}

/* Every byte of every receive block written exactly once, nothing else. */
static int check_writes(const ut_layout_t *l, const unsigned char *writes, char *err, size_t errlen)
{
    unsigned char *expect = calloc(1, l->rbytes ? l->rbytes : 1);
    int rc = 0;
    for (int p = 0; p < l->size; p++)
        memset(expect + l->rd[p], 1, l->rc[p]);
    for (size_t i = 0; i < l->rbytes && rc == 0; i++)
        if (writes[i] != expect[i]) {
            snprintf(err, errlen, "rank %d: receive byte %zu written %u times, expected %u",
                     l->rank, i, writes[i], expect[i]);
            rc = -1;
        }
    free(expect);
    return rc;
}

/* The put algorithm's windows, as runtime/oc_persist.c lays them out: each
 * rank's zone holds the other ranks' blocks in rank order, twice (by parity);
 * odd ranks' windows are mapped in every other rank, even ones are not. */
typedef struct {
    oc_win_t wins[MAX_RANKS];
    oc_win_peer_t peers[MAX_RANKS][MAX_RANKS];
    oc_pe_counter_t counters[MAX_RANKS][2];
    size_t landing[MAX_RANKS][MAX_RANKS], zone[MAX_RANKS];
    size_t remote[MAX_RANKS][2][MAX_RANKS], local[MAX_RANKS][2][MAX_RANKS];
    oc_coll_put_t zones[MAX_RANKS][2];
    uint32_t avail[MAX_RANKS][2];
} sim_put_t;

static void sim_put_init(sim_put_t *z, int n, const ut_layout_t *lay)
{
    int r, q, p;
    memset(z, 0, sizeof(*z));
    for (r = 0; r < n; r++) {
        for (q = 0; q < n; q++) {
            z->landing[r][q] = z->zone[r];
            if (q != r)
                z->zone[r] += lay[r].rc[q];
        }
        z->wins[r].base = malloc(2 * z->zone[r] + 1);
        z->wins[r].size = 2 * z->zone[r];
        z->wins[r].counters = z->counters[r];
        z->wins[r].peers = z->peers[r];
    }
    for (r = 0; r < n; r++)
        for (q = 0; q < n; q++) {
            z->peers[r][q].addr = (uint64_t)(uintptr_t)z->wins[q].base;
            z->peers[r][q].size = z->wins[q].size;
            z->peers[r][q].id = (uint32_t)q;
            z->peers[r][q].ptr = q % 2 ? z->wins[q].base : NULL;
            for (p = 0; p < 2; p++) {
                z->remote[r][p][q] = (size_t)p * z->zone[q] + z->landing[q][r];
                z->local[r][p][q] = (size_t)p * z->zone[r] + z->landing[r][q];
            }
        }
    for (r = 0; r < n; r++)
        for (p = 0; p < 2; p++) {
            oc_coll_put_t zz = {&z->wins[r], (unsigned)p, z->remote[r][p], z->local[r][p]};
            z->zones[r][p] = zz;
        }
}

static void sim_put_fini(sim_put_t *z, int n)
{
    for (int r = 0; r < n; r++)
        free(z->wins[r].base);
}

/* Fills s with a schedule of another shape (an open list, a scratch block)
 * and clears it, as a team does for the request it reuses (oc_request.c):
 * a builder must then find it empty. */
static oc_status_t stale_build(oc_sched_t *s, size_t list_max)
{
    static char junk[8];
    oc_task_t t[2] = {oc_task_send(0, junk, 8), oc_task_recv(0, junk, 8)};
    oc_status_t st = OC_OK;
    for (int i = 0; i < 3 && st == OC_OK; i++)
        st = oc_sched_add(s, t, 2);
    if (st == OC_OK && oc_sched_scratch(s, 64) == NULL)
        st = OC_ERR_NO_MEMORY;
    oc_sched_clear(s, list_max);
    return st;
}

static int run_case(const case_t *c, char *err, size_t errlen)
{
    enum { MAX = PUT_ROUNDS * MAX_RANKS };
    int n = c->n, rounds = c->b->kind == B_PUT ? PUT_ROUNDS : 1, r, k, rc = 0;
    ut_layout_t lay[MAX_RANKS];
    oc_sched_t sched[MAX];
    unsigned char *sbuf[MAX], *rbuf[MAX], *writes[MAX];
    size_t cur[MAX_RANKS] = {0}, left[MAX_RANKS] = {0}, round[MAX_RANKS] = {0};
    int posted[MAX_RANKS] = {0};
    sim_put_t *z = NULL;
    net_t m = {n, sched, lay, rbuf, writes, cur, left, posted, NULL, err, errlen, rounds, round,
               NULL, NULL};

    err[0] = '\0';
    for (r = 0; r < n; r++)
        ut_layout_init(&lay[r], c->shape, r, n, c->scale);
    if (c->b->kind == B_PUT) {
        z = malloc(sizeof(*z));
        sim_put_init(z, n, lay);
        m.wins = z->wins;
        m.avail = z->avail;
    }
    for (k = 0; k < rounds * n; k++) {
        oc_coll_args_t a;
        oc_status_t st;
        r = k % n;
        sbuf[k] = malloc(lay[r].sbytes + 1);
        rbuf[k] = malloc(lay[r].rbytes + 1);
        writes[k] = calloc(1, lay[r].rbytes + 1);
        ut_fill(&lay[r], sbuf[k], rbuf[k], k / n);
        memset(&a, 0, sizeof(a));
        a.rank = r;
        a.size = n;
        a.sbuf = (const char *)sbuf[k];
        a.rbuf = (char *)rbuf[k];
        a.block = c->scale;
        if (c->shape != UT_EQUAL) {
            a.scounts = lay[r].sc;
            a.sdispls = lay[r].sd;
            a.rcounts = lay[r].rc;
            a.rdispls = lay[r].rd;
        }
        if (z != NULL)
            a.put = &z->zones[r][(k / n) % 2];
        /* Built where another schedule was, as a reused request's is. */
        oc_sched_init(&sched[k], c->list_max);
        st = stale_build(&sched[k], c->list_max);
        if (st == OC_OK)
            st = build(c->b, &a, &sched[k]);
        if (rc == 0 && st != OC_OK) {
            snprintf(err, errlen, "rank %d: the builder returned %s (%s)", r,
                     oc_status_string(st), oc_last_error());
            rc = -1;
        }
        if (rc == 0)
            rc = check_shape(c, r, &sched[k], err, errlen);
    }
    m.pairs = calloc((size_t)n * (size_t)n, sizeof(*m.pairs));
    if (rc == 0)
        rc = net_run(&m);
    for (k = 0; k < rounds * n && rc == 0; k++) {
        long bad = ut_check(&lay[k % n], rbuf[k], k / n);
        if (bad >= 0) {
            snprintf(err, errlen, "rank %d, start %d: receive byte %ld is wrong", k % n, k / n,
                     bad);
            rc = -1;
        }
    }
    for (k = 0; k < rounds * n && rc == 0; k++)
        rc = check_writes(&lay[k % n], writes[k], err, errlen);
    for (r = 0; r < n * n; r++)
        free(m.pairs[r].q);
    free(m.pairs);
    for (k = 0; k < rounds * n; k++) {
        oc_sched_fini(&sched[k]);
        free(sbuf[k]);
        free(rbuf[k]);
        free(writes[k]);
    }
    for (r = 0; r < n; r++)
        ut_layout_fini(&lay[r]);
    if (z != NULL)
        sim_put_fini(z, n);
    free(z);
    return rc;
}

/* Runs every team size and list limit for the shapes and sizes given; reports
 * the first few failing cases, then fails with the count. */
static void run_matrix(const builder_t *b, const ut_shape_t *shapes, size_t nshapes,
                       const size_t *sizes, size_t nsizes)
{
    static const char *const shape_names[] = {"equal", "uneven", "zeros", "empty"};
    int failures = 0, total = 0;
    char err[1024];

    for (size_t si = 0; si < nshapes; si++)
        for (int n = 1; n <= MAX_RANKS; n++)
            for (size_t li = 0; li < sizeof(list_maxes) / sizeof(list_maxes[0]); li++)
                for (size_t zi = 0; zi < nsizes; zi++) {
                    case_t c = {b, shapes[si], n, list_maxes[li], sizes[zi]};
                    total++;
                    if (run_case(&c, err, sizeof(err)) != 0 && ++failures <= MAX_REPORTED)
                        print_error("%s k=%u %s n=%d list_max=%zu block=%zu: %s\n",
                                    builder_name(b), b->k, shape_names[c.shape], n, c.list_max,
                                    c.scale, err);
                }
    if (failures > 0)
        fail_msg("%s k=%u: %d of %d cases failed", builder_name(b), b->k, failures, total);
}

static void test_alltoall(void **state)
{
    static const ut_shape_t shapes[] = {UT_EQUAL};
    run_matrix(*state, shapes, 1, equal_blocks, sizeof(equal_blocks) / sizeof(equal_blocks[0]));
}

static void test_alltoallv(void **state)
{
    static const ut_shape_t shapes[] = {UT_UNEVEN, UT_ZEROS, UT_EMPTY};
    run_matrix(*state, shapes, sizeof(shapes) / sizeof(shapes[0]), v_scales,
               sizeof(v_scales) / sizeof(v_scales[0]));
}

/* Bruck exchanges whole packed runs of blocks, so it cannot take counts. */
static void test_bruck_refuses_counts(void **state)
{
    size_t counts[2] = {1, 1}, displs[2] = {0, 1};
    char sbuf[2], rbuf[2];
    oc_coll_args_t a = {.rank = 0, .size = 2, .sbuf = sbuf, .rbuf = rbuf, .block = 1,
                        .scounts = counts, .sdispls = displs, .rcounts = counts,
                        .rdispls = displs, .ringk = 1};
    oc_sched_t s;
    (void)state;
    oc_sched_init(&s, 64);
    assert_int_equal(oc_coll_alltoall_bruck(&a, &s), OC_ERR_INVALID_ARG);
    assert_int_equal(s.ntasks, 0);
    oc_sched_fini(&s);
}

/* ---- the checks themselves must bite: schedules broken on purpose ------------- */

/* Both ranks of a pair receive in a list before the one that sends: passes
 * with eager sends, a deadlock under rendezvous. */
static oc_status_t recv_before_send(const oc_coll_args_t *a, oc_sched_t *s)
{
    int peer = 1 - a->rank;
    size_t b = a->block;
    oc_task_t t[3] = {oc_task_copy(a->rbuf + a->rank * b, a->sbuf + a->rank * b, b),
                      oc_task_recv(peer, a->rbuf + peer * b, b),
                      oc_task_send(peer, a->sbuf + peer * b, b)};
    oc_status_t st = oc_sched_add(s, t, 2);
    oc_sched_end_list(s);
    return st == OC_OK ? oc_sched_add(s, &t[2], 1) : st;
}

static oc_status_t short_recv(const oc_coll_args_t *a, oc_sched_t *s)
{
    oc_status_t st = oc_coll_alltoall_pairwise(a, s);
    for (size_t i = 0; i < s->ntasks; i++)
        if (s->tasks[i].type == OC_TASK_RECV)
            s->tasks[i].len--;
    return st;
}

static oc_status_t self_twice(const oc_coll_args_t *a, oc_sched_t *s)
{
    oc_status_t st = oc_coll_alltoall_pairwise(a, s);
    oc_task_t t = oc_task_copy(a->rbuf + a->rank * a->block, a->sbuf + a->rank * a->block,
                               a->block);
    return st == OC_OK ? oc_sched_add(s, &t, 1) : st;
}

static oc_status_t self_from_peer(const oc_coll_args_t *a, oc_sched_t *s)
{
    oc_status_t st = oc_coll_alltoall_pairwise(a, s);
    s->tasks[0].src = a->sbuf + (size_t)(1 - a->rank) * a->block; /* task 0: the self copy */
    return st;
}

/* Copy tasks against a byte-by-byte reference: rows of 1 to 40 bytes (the
 * lengths of 4 to 32 bytes take the fixed-length path), one to three rows
 * per plane, one or two planes, strides of either sign, and the bytes
 * around every row untouched. */
static void test_copy_box(void **state)
{
    enum { SZ = 4096, MID = 2048 };
    static unsigned char src[SZ], got[SZ], want[SZ];
    static const ptrdiff_t strides[] = {48, -48, 96, -96};
    size_t len, rows, planes, i, j, b;
    int si, di, pi;

    (void)state;
    for (i = 0; i < SZ; i++)
        src[i] = (unsigned char)(i * 131 + 7);
    for (len = 1; len <= 40; len++)
        for (rows = 1; rows <= 3; rows++)
            for (planes = 1; planes <= 2; planes++)
                for (si = 0; si < 4; si++)
                    for (di = 0; di < 4; di++)
                        for (pi = 0; pi < 2; pi++) {
                            ptrdiff_t ss = strides[si], ds = strides[di];
                            ptrdiff_t ss2 = pi ? 400 : -400, ds2 = pi ? -400 : 400;
                            oc_task_t t = oc_task_copy_box(got + MID, ds, ds2, src + MID, ss,
                                                           ss2, len, rows, planes);
                            memset(got, 0, SZ);
                            memset(want, 0, SZ);
                            for (j = 0; j < planes; j++)
                                for (i = 0; i < rows; i++)
                                    for (b = 0; b < len; b++)
                                        want[MID + (ptrdiff_t)j * ds2 + (ptrdiff_t)i * ds +
                                             (ptrdiff_t)b] =
                                            src[MID + (ptrdiff_t)j * ss2 + (ptrdiff_t)i * ss +
                                                (ptrdiff_t)b];
                            oc_task_do_copies(&t, 1);
                            assert_memory_equal(got, want, SZ);
                        }
}

/* Two builders may stack on one schedule (an in-place copy, then Bruck):
 * the second's scratch must not take the first's away (under ASan a use
 * after free otherwise). */
static void test_scratch_blocks(void **state)
{
    oc_sched_t s;
    unsigned char *a, *b;
    size_t i;
    (void)state;
    oc_sched_init(&s, 8);
    a = oc_sched_scratch(&s, 100);
    assert_non_null(a);
    memset(a, 0xa5, 100);
    b = oc_sched_scratch(&s, 0);
    assert_non_null(b);
    assert_ptr_not_equal(a, b);
    for (i = 0; i < 100; i++)
        assert_int_equal(a[i], 0xa5);
    assert_null(oc_sched_scratch(&s, SIZE_MAX));
    oc_sched_fini(&s);
}

static void test_simulator_catches(void **state)
{
    static const struct {
        builder_t b;
        const char *expect;
    } broken[] = {
        {{B_CUSTOM, 0, recv_before_send}, "deadlock"},
        {{B_CUSTOM, 0, short_recv}, "which receives"},
        {{B_CUSTOM, 0, self_twice}, "written 2 times"},
        {{B_CUSTOM, 0, self_from_peer}, "is wrong"},
    };
    char err[1024];
    (void)state;
    for (size_t i = 0; i < sizeof(broken) / sizeof(broken[0]); i++) {
        case_t c = {&broken[i].b, UT_EQUAL, 2, 64, 4};
        assert_int_equal(run_case(&c, err, sizeof(err)), -1);
        if (strstr(err, broken[i].expect) == NULL)
            fail_msg("broken schedule %zu: \"%s\" does not say \"%s\"", i, err, broken[i].expect);
    }
}

static builder_t burst = {B_BURST, 0, NULL}, pairwise = {B_PAIRWISE, 0, NULL},
                 bruck = {B_BRUCK, 0, NULL}, put = {B_PUT, 0, NULL};
static builder_t ring1 = {B_RINGK, 1, NULL}, ring2 = {B_RINGK, 2, NULL},
                 ring3 = {B_RINGK, 3, NULL}, ring5 = {B_RINGK, 5, NULL};

#define CASE(name, fn, b) {name, fn, NULL, NULL, &(b)}

int main(void)
{
    const struct CMUnitTest tests[] = {
        CASE("alltoall burst", test_alltoall, burst),
        CASE("alltoall pairwise", test_alltoall, pairwise),
        CASE("alltoall ringk k=1", test_alltoall, ring1),
        CASE("alltoall ringk k=2", test_alltoall, ring2),
        CASE("alltoall ringk k=3", test_alltoall, ring3),
        CASE("alltoall ringk k=5", test_alltoall, ring5),
        CASE("alltoall bruck", test_alltoall, bruck),
        CASE("alltoallv burst", test_alltoallv, burst),
        CASE("alltoallv pairwise", test_alltoallv, pairwise),
        CASE("alltoallv ringk k=1", test_alltoallv, ring1),
        CASE("alltoallv ringk k=2", test_alltoallv, ring2),
        CASE("alltoallv ringk k=3", test_alltoallv, ring3),
        CASE("alltoallv ringk k=5", test_alltoallv, ring5),
        CASE("alltoall put", test_alltoall, put),
        CASE("alltoallv put", test_alltoallv, put),
        cmocka_unit_test(test_bruck_refuses_counts),
        cmocka_unit_test(test_simulator_catches),
        cmocka_unit_test(test_copy_box),
        cmocka_unit_test(test_scratch_blocks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
