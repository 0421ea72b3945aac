/*
 * Windows: memory allocated by the backend and exposed to a team for puts,
 * with notification counters. A put is a one-task schedule handed to the
 * progress engine like any collective; a notified put adds a NOTIFY task,
 * which the backend sends once the put is remotely complete. Notifications
 * arrive as control messages, handled here on the engine's thread.
 */
#include "oc_runtime.h"
#include "oc_error.h"
#include "oc_list.h"
#include "oc_sync.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* One put in flight: its one-list schedule and engine state in one block. */
typedef struct oc_put_op {
    oc_pe_exec_t x;                /* first: the engine frees orphans by it */
    oc_nic_slot_t slots[2];
    oc_task_t tasks[2];
    oc_task_list_t list;
    oc_sched_t sched;
    oc_notify_msg_t msg;
    oc_win_t *win;
    struct oc_put_op *next, **prev; /* in win->puts, from the start on */
} put_op_t;

/* ---- registry and notifications (engine context for the handler) -------------- */

static void registry_add(oc_context_t *ctx, oc_win_t *win)
{
    pthread_mutex_lock(&ctx->teams_lock);
    win->id = ctx->next_win_id++;
    win->next = ctx->wins;
    ctx->wins = win;
    pthread_mutex_unlock(&ctx->teams_lock);
}

static void registry_remove(oc_context_t *ctx, oc_win_t *win)
{
    oc_win_t **p;
    pthread_mutex_lock(&ctx->teams_lock);
    for (p = &ctx->wins; *p != NULL; p = &(*p)->next)
        if (*p == win) {
            *p = win->next;
            break;
        }
    pthread_mutex_unlock(&ctx->teams_lock);
}

void oc_win_am_notify(oc_context_t *ctx, const oc_notify_msg_t *m)
{
    oc_win_t *win;
    pthread_mutex_lock(&ctx->teams_lock);
    for (win = ctx->wins; win != NULL && win->id != m->win_id; win = win->next)
        ;
    pthread_mutex_unlock(&ctx->teams_lock);
    /* Windows are freed only after the engine has passed by (oc_pe_call), so
     * win stays valid for the rest of this handler. */
    if (win == NULL || m->counter >= win->ncounters || m->origin < 0 ||
        m->origin >= win->team->size) {
        oc_notice(ctx->cfg.verbose, "dropped a notification for window %u counter %u from %d",
                  m->win_id, m->counter, m->origin);
        return;
    }
    atomic_fetch_add_explicit(&win->from[(size_t)m->counter * (size_t)win->team->size + (size_t)m->origin],
                              1, memory_order_relaxed);
    oc_pe_counter_add(ctx->pe, &win->counters[m->counter], 1);
}

/* ---- creation and release --------------------------------------------------------- */

typedef struct {
    uint64_t addr;
    uint64_t size;
    uint32_t id;
    uint32_t key_len;
} win_hello_t;

typedef struct {
    oc_win_t *win;
    size_t alloc;
    void *key;
    size_t key_len;
    const unsigned char *keys;     /* size * stride, for unpacking */
    size_t stride;
} win_setup_t;

static oc_status_t alloc_fn(oc_pe_t *pe, void *arg)
{
    win_setup_t *a = arg;
    oc_nic_t *nic = oc_pe_nic(pe);
    oc_status_t st = nic->ops->mem_alloc(nic, a->alloc, &a->win->mem, &a->win->base);
    if (st == OC_OK)
        st = nic->ops->mem_pack(nic, a->win->mem, &a->key, &a->key_len);
    return st;
}

static oc_status_t unpack_fn(oc_pe_t *pe, void *arg)
{
    win_setup_t *a = arg;
    oc_win_t *win = a->win;
    oc_nic_t *nic = oc_pe_nic(pe);
    oc_status_t st = OC_OK;
    int r;
    for (r = 0; r < win->team->size && st == OC_OK; r++) {
        if (r == win->team->rank)
            continue;
        st = nic->ops->rkey_unpack(nic, win->team->eps[r], a->keys + (size_t)r * a->stride,
                                   a->stride, &win->peers[r].rkey);
        if (st == OC_OK && nic->ops->rkey_ptr != NULL)
            win->peers[r].ptr = nic->ops->rkey_ptr(nic, win->peers[r].rkey, win->peers[r].addr);
    }
    return st;
}

static oc_status_t release_fn(oc_pe_t *pe, void *arg)
{
    oc_win_t *win = arg;
    oc_nic_t *nic = oc_pe_nic(pe);
    int r;
    if (win->peers != NULL)
        for (r = 0; r < win->team->size; r++)
            nic->ops->rkey_destroy(nic, win->peers[r].rkey);
    if (win->mem != NULL)
        nic->ops->mem_free(nic, win->mem);
    return OC_OK;
}

static void win_destroy(void *arg)
{
    oc_win_t *win = arg;
    free(win->peers);
    free(win->counters);
    free(win->from);
    free(win->from_mark);
    free(win);
}

/* Local release of whatever was set up (engine resources included). */
void oc_win_release(oc_win_t *win)
{
    oc_context_t *ctx = win->team->ctx;
    registry_remove(ctx, win);
    oc_pe_call(ctx->pe, release_fn, win); /* and no notification handler holds win */
    if (win->counted)
        atomic_fetch_sub(&win->team->nwins, 1);
    win_destroy(win);
}

/* A cancelled put no longer reads its task or the team's endpoints, and
 * becomes the engine's orphan: the window may go with the team. */
static oc_status_t cancel_puts_fn(oc_pe_t *pe, void *arg)
{
    oc_win_t *win = arg;
    while (win->puts != NULL)
        oc_pe_cancel(pe, &win->puts->x, OC_ERR_TIMEOUT); /* put_complete unlinks it */
    return OC_OK;
}

/* Detaches win from its team; transfers on it failed, so the backend may
 * still move late data into or out of it (an uncancellable put, a peer's late
 * put). Its memory and keys are left to the backend, which frees them when
 * it is destroyed; its bookkeeping to oc_finalize (put_complete may still come
 * for the cancelled puts until then). */
static void win_abandon(oc_win_t *win)
{
    oc_context_t *ctx = win->team->ctx;
    registry_remove(ctx, win);
    oc_pe_call(ctx->pe, cancel_puts_fn, win); /* and no notification handler holds win */
    if (win->counted)
        atomic_fetch_sub(&win->team->nwins, 1);
    win->team = NULL;
    oc_ctx_release_later(ctx, win_destroy, win);
}

/* Exchanges addresses, sizes, ids and keys, then unpacks the peers' keys.
 * st: this member's status so far. Each exchange is voted on first (and the
 * unpacking after), so a member that fails anywhere fails all at once. */
static oc_status_t exchange(const char *fn, oc_team_t *team, win_setup_t *a, oc_status_t st,
                            const char *what)
{
    oc_win_t *win = a->win;
    win_hello_t mine, *all = NULL;
    unsigned char *padded = NULL, *keys = NULL;
    int r;

    memset(&mine, 0, sizeof(mine));
    if (st == OC_OK) {
        mine = (win_hello_t){(uint64_t)(uintptr_t)win->base, win->size, win->id,
                             (uint32_t)a->key_len};
        if ((all = calloc((size_t)team->size, sizeof(*all))) == NULL)
            st = oc_error(OC_ERR_NO_MEMORY, "%s: %d peers", fn, team->size);
    }
    st = oc_team_allgather(team, st, what, &mine, sizeof(mine), all);
    if (st == OC_OK) { /* on every member, or the vote failed on every member */
        a->stride = 1;
        for (r = 0; r < team->size; r++)
            if (all[r].key_len > a->stride)
                a->stride = all[r].key_len;
        padded = calloc(1, a->stride);
        keys = calloc((size_t)team->size, a->stride);
        if (padded == NULL || keys == NULL)
            st = oc_error(OC_ERR_NO_MEMORY, "%s: keys of %d peers", fn, team->size);
        else
            memcpy(padded, a->key, a->key_len);
        st = oc_team_allgather(team, st, what, padded, a->stride, keys);
        if (st == OC_OK) {
            for (r = 0; r < team->size; r++) {
                win->peers[r].addr = all[r].addr;
                win->peers[r].size = (size_t)all[r].size;
                win->peers[r].id = all[r].id;
            }
            win->peers[team->rank].ptr = win->base;
            a->keys = keys;
            /* A key refused by one member's backend fails all, none keeping a
             * window a peer has released. */
            st = oc_team_vote(team, oc_pe_call(team->ctx->pe, unpack_fn, a), what);
        }
        if (st != OC_OK)
            oc_error_append(" (%s: exchanging window keys)", fn);
    }
    free(all);
    free(padded);
    free(keys);
    return st;
}

/* The local part of the creation: the window and its memory. */
static oc_status_t win_alloc(const char *fn, oc_team_t *team, size_t size, unsigned ncounters,
                             int counted, win_setup_t *a)
{
    size_t nfrom = (size_t)ncounters * (size_t)team->size;
    oc_win_t *win;
    oc_status_t st;
    unsigned c;

    win = calloc(1, sizeof(*win));
    if (win == NULL)
        return oc_error(OC_ERR_NO_MEMORY, "%s: window", fn);
    win->team = team;
    win->counted = counted;
    win->size = size;
    win->ncounters = ncounters;
    win->peers = calloc((size_t)team->size, sizeof(*win->peers));
    win->counters = calloc(ncounters ? ncounters : 1, sizeof(*win->counters));
    win->from = calloc(nfrom ? nfrom : 1, sizeof(*win->from));
    win->from_mark = calloc(nfrom ? nfrom : 1, sizeof(*win->from_mark));
    if (counted)
        atomic_fetch_add(&team->nwins, 1);
    if (win->peers == NULL || win->counters == NULL || win->from == NULL ||
        win->from_mark == NULL) {
        oc_win_release(win);
        return oc_error(OC_ERR_NO_MEMORY, "%s: window of %u counters for %d ranks", fn,
                        ncounters, team->size);
    }
    for (c = 0; c < ncounters; c++)
        oc_pe_counter_init(&win->counters[c]);
    /* Registered before the exchange: a peer may notify as soon as its own
     * creation returns. */
    registry_add(team->ctx, win);

    a->win = win;
    a->alloc = size ? size : 1; /* a zero-length map is refused by UCX */
    st = oc_pe_call(team->ctx->pe, alloc_fn, a);
    if (st != OC_OK) {
        oc_error_append(" (%s: allocating the window)", fn);
        oc_win_release(win);
        a->win = NULL;
    }
    return st;
}

/* Above this host's memory a backend may try for a long while (UCX's posix
 * allocator writes out a shared-memory file block by block) before failing. */
static oc_status_t check_size(const char *fn, size_t size)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0 && size / (size_t)page >= (size_t)pages)
        return oc_error(OC_ERR_NO_MEMORY, "%s: size=%zu bytes is more than this host's memory "
                        "(%zu bytes)", fn, size, (size_t)pages * (size_t)page);
    return OC_OK;
}

/* st: this member's status so far (a refused argument); it votes whatever
 * it is, so that a failure on one member fails all at once. */
oc_status_t oc_win_create_internal(const char *fn, oc_team_t *team, size_t size,
                                   unsigned ncounters, int counted, oc_status_t st,
                                   oc_win_t **out)
{
    char what[64];
    win_setup_t a;

    memset(&a, 0, sizeof(a));
    if (st == OC_OK)
        st = check_size(fn, size);
    if (st == OC_OK)
        st = win_alloc(fn, team, size, ncounters, counted, &a);
    snprintf(what, sizeof(what), "%s: failed", fn);
    st = exchange(fn, team, &a, st, what);
    free(a.key);
    if (st != OC_OK) {
        if (a.win != NULL)
            oc_win_release(a.win);
        return st;
    }
    *out = a.win;
    return OC_OK;
}

oc_status_t oc_win_create(oc_team_t *team, size_t size, unsigned ncounters, void **base,
                          oc_win_t **win)
{
    oc_status_t st = OC_OK;
    if (win != NULL)
        *win = NULL;
    if (base != NULL)
        *base = NULL;
    if (team == NULL)
        return oc_error(OC_ERR_INVALID_ARG, "oc_win_create: team is NULL");
    if (base == NULL || win == NULL)
        st = oc_error(OC_ERR_INVALID_ARG, "oc_win_create: %s is NULL", base ? "win" : "base");
    else if (ncounters > OC_WIN_MAX_COUNTERS)
        st = oc_error(OC_ERR_INVALID_ARG, "oc_win_create: ncounters=%u exceeds %d", ncounters,
                      OC_WIN_MAX_COUNTERS);
    st = oc_win_create_internal("oc_win_create", team, size, ncounters, 1, st, win);
    if (st == OC_OK)
        *base = (*win)->base;
    return st;
}

oc_status_t oc_win_close(oc_win_t *win, int failed)
{
    const int32_t *all;
    oc_status_t st;
    int r, abandon = failed;

    /* Nobody releases memory a peer may still put into: a barrier, which
     * also tells whether a member's transfers on the window failed. */
    st = oc_team_gather_i32(win->team, failed ? 2 : 1, &all);
    for (r = 0; st == OC_OK && r < win->team->size; r++)
        abandon |= all[r] == 2;
    if (st != OC_OK || abandon)
        win_abandon(win);
    else
        oc_win_release(win);
    return st;
}

oc_status_t oc_win_free(oc_win_t *win)
{
    oc_status_t st, bst;

    if (win == NULL)
        return oc_error(OC_ERR_INVALID_ARG, "oc_win_free: win is NULL");
    st = oc_win_flush(win);
    bst = oc_win_close(win, atomic_load(&win->puts_inflight) > 0);
    if (st == OC_OK && bst != OC_OK) {
        oc_error_append(" (oc_win_free: waiting for the other members)");
        st = bst;
    }
    return st;
}

static oc_status_t check_target(const char *fn, const oc_win_t *win, int target)
{
    if (win == NULL)
        return oc_error(OC_ERR_INVALID_ARG, "%s: win is NULL", fn);
    if (target < 0 || target >= win->team->size)
        return oc_error(OC_ERR_INVALID_ARG, "%s: target=%d is not a rank of the window's team "
                        "(0..%d)", fn, target, win->team->size - 1);
    return OC_OK;
}

oc_status_t oc_win_size(const oc_win_t *win, int target, size_t *size)
{
    oc_status_t st;
    if (size == NULL)
        return oc_error(OC_ERR_INVALID_ARG, "oc_win_size: size is NULL");
    *size = 0;
    if ((st = check_target("oc_win_size", win, target)) != OC_OK)
        return st;
    *size = win->peers[target].size;
    return OC_OK;
}

oc_status_t oc_win_peer_ptr(const oc_win_t *win, int target, void **ptr)
{
    oc_status_t st;
    if (ptr == NULL)
        return oc_error(OC_ERR_INVALID_ARG, "oc_win_peer_ptr: ptr is NULL");
    *ptr = NULL;
    if ((st = check_target("oc_win_peer_ptr", win, target)) != OC_OK)
        return st;
    if ((*ptr = win->peers[target].ptr) == NULL)
        return oc_error(OC_ERR_UNAVAILABLE,
                        "oc_win_peer_ptr: rank %d's window is not mapped in this process "
                        "(another host, OC_INTRANODE=loopback or a backend without shared "
                        "memory)", target);
    return OC_OK;
}

/* ---- puts ---------------------------------------------------------------------- */

static oc_task_t put_task(const oc_win_t *win, int peer, size_t off, const void *src, size_t len)
{
    return oc_task_put(peer, src, len, win->peers[peer].addr + off, win->peers[peer].rkey);
}

static oc_task_t notify_task(const oc_win_t *win, int peer, unsigned counter, int origin,
                             oc_notify_msg_t *msg)
{
    msg->type = OC_MSG_NOTIFY;
    msg->win_id = win->peers[peer].id;
    msg->counter = counter;
    msg->origin = origin;
    return oc_task_notify(peer, msg, sizeof(*msg));
}

size_t oc_win_put_tasks(const oc_win_t *win, int peer, size_t off, const void *src, size_t len,
                        unsigned counter, int origin, oc_notify_msg_t *msg, oc_task_t t[2])
{
    char *mapped = win->peers[peer].ptr;
    size_t k = 0;
    if (len > 0)
        t[k++] = mapped != NULL ? oc_task_copy(mapped + off, src, len)
                                : put_task(win, peer, off, src, len);
    t[k++] = notify_task(win, peer, counter, origin, msg);
    return k;
}

oc_task_t oc_win_wait_task(oc_win_t *win, unsigned counter, size_t n)
{
    return oc_task_wait(&win->counters[counter], n);
}

char *oc_win_base(const oc_win_t *win)
{
    return win->base;
}

char *oc_win_mapped(const oc_win_t *win, int peer)
{
    return win->peers[peer].ptr;
}

/* Engine only, as put_complete and the cancel: the list needs no lock. */
static void put_started(oc_pe_exec_t *x)
{
    put_op_t *op = (put_op_t *)x;
    OC_LIST_PUSH(&op->win->puts, op);
}

static void put_complete(oc_pe_exec_t *x, oc_status_t st)
{
    put_op_t *op = (put_op_t *)x;
    oc_win_t *win = op->win;
    int none = OC_OK;
    if (st != OC_OK)
        atomic_compare_exchange_strong(&win->put_error, &none, (int)st);
    /* Dekker-style with oc_pe_wait_word in oc_win_flush: the count first. */
    OC_LIST_REMOVE(op);
    if (atomic_fetch_sub(&win->puts_inflight, 1) == 1 && atomic_load(&win->flush_waiters) > 0)
        oc_futex_wake_all(&win->puts_inflight);
    if (x->cancelled)
        oc_pe_exec_release(x->pe, x); /* freed when the backend is done with it */
    else
        free(op);
}

static oc_status_t put(const char *fn, oc_win_t *win, int target, size_t offset,
                       const void *src, size_t len, int notify, unsigned counter)
{
    oc_team_t *team;
    put_op_t *op;
    size_t limit;
    oc_status_t st = check_target(fn, win, target);

    if (st != OC_OK)
        return st;
    team = win->team;
    limit = win->peers[target].size;
    if (offset > limit || len > limit - offset)
        return oc_error(OC_ERR_OUT_OF_BOUNDS,
                        "%s: offset=%zu + len=%zu lies outside the %zu-byte window of rank %d",
                        fn, offset, len, limit, target);
    if (len > 0 && src == NULL)
        return oc_error(OC_ERR_INVALID_ARG, "%s: src is NULL with len=%zu", fn, len);
    if (notify && counter >= win->ncounters)
        return oc_error(OC_ERR_INVALID_ARG, "%s: counter=%u, but the window has %u counter(s)",
                        fn, counter, win->ncounters);
    op = calloc(1, sizeof(*op));
    if (op == NULL)
        return oc_error(OC_ERR_NO_MEMORY, "%s: put state", fn);
    op->win = win;
    op->tasks[0] = put_task(win, target, offset, src, len);
    op->tasks[1] = notify ? notify_task(win, target, counter, team->rank, &op->msg)
                          : oc_task_flush(target);
    /* A fixed one-list schedule: no builder needed. */
    op->list.first = 0;
    op->list.ntasks = 2;
    op->sched.tasks = op->tasks;
    op->sched.ntasks = op->list.ntasks;
    op->sched.lists = &op->list;
    op->sched.nlists = 1;
    op->x.sched = &op->sched;
    op->x.slots = op->slots;
    op->x.complete = put_complete;
    op->x.owner = op;
    op->x.match.team_id = team->id;
    op->x.match.peer_team_ids = team->peer_ids;
    op->x.match.rank = team->rank;
    op->x.match.eps = team->eps;
    op->x.started = put_started;
    atomic_fetch_add(&win->puts_inflight, 1);
    oc_pe_start(team->ctx->pe, &op->x);
    return OC_OK;
}

oc_status_t oc_put(oc_win_t *win, int target, size_t offset, const void *src, size_t len)
{
    return put("oc_put", win, target, offset, src, len, 0, 0);
}

oc_status_t oc_put_notify(oc_win_t *win, int target, size_t offset, const void *src,
                          size_t len, unsigned counter)
{
    return put("oc_put_notify", win, target, offset, src, len, 1, counter);
}

/* ---- completion ------------------------------------------------------------------ */

static int none_inflight(void *arg)
{
    oc_win_t *win = arg;
    return atomic_load(&win->puts_inflight) == 0;
}

oc_status_t oc_win_flush(oc_win_t *win)
{
    double timeout;
    oc_deadline_t deadline;
    int err;

    if (win == NULL)
        return oc_error(OC_ERR_INVALID_ARG, "oc_win_flush: win is NULL");
    timeout = win->team->ctx->cfg.timeout_s;
    /* Every put ends with its own flush (or its notification, sent after
     * one), so waiting for none in flight is waiting for remote completion. */
    deadline = oc_deadline(timeout);
    if (oc_pe_wait_word(win->team->ctx->pe, none_inflight, win, &win->puts_inflight,
                        &win->flush_waiters, &deadline) != OC_OK)
        return oc_error(OC_ERR_TIMEOUT,
                        "oc_win_flush: %u put(s) of rank %d still unfinished after %g s",
                        atomic_load(&win->puts_inflight), win->team->rank, timeout);
    err = atomic_exchange(&win->put_error, OC_OK);
    if (err != OC_OK)
        return oc_error((oc_status_t)err, "oc_win_flush: a put on the window failed: %s",
                        oc_status_string((oc_status_t)err));
    return OC_OK;
}

/* ---- notification waits -------------------------------------------------------- */

static oc_status_t check_counter(const char *fn, const oc_win_t *win, unsigned counter)
{
    if (win == NULL)
        return oc_error(OC_ERR_INVALID_ARG, "%s: win is NULL", fn);
    if (counter >= win->ncounters)
        return oc_error(OC_ERR_INVALID_ARG, "%s: counter=%u, but the window has %u counter(s)",
                        fn, counter, win->ncounters);
    return OC_OK;
}

/* The arrivals at counter so far become the reference of the next timeout report. */
static void mark(oc_win_t *win, unsigned counter)
{
    size_t n = (size_t)win->team->size, r;
    for (r = 0; r < n; r++)
        win->from_mark[counter * n + r] = atomic_load_explicit(&win->from[counter * n + r],
                                                               memory_order_relaxed);
}

static void report_origins(oc_win_t *win, unsigned counter)
{
    size_t n = (size_t)win->team->size, r;
    int some = 0, none = 0;
    oc_error_append("; since the last completed wait, notifications came from");
    for (r = 0; r < n; r++) {
        uint32_t k = atomic_load_explicit(&win->from[counter * n + r], memory_order_relaxed) -
                     win->from_mark[counter * n + r];
        if (k > 0)
            oc_error_append("%s rank %zu (%u)", some++ ? "," : "", r, k);
    }
    if (!some)
        oc_error_append(" no rank");
    oc_error_append("; none from");
    for (r = 0; r < n; r++)
        if (atomic_load_explicit(&win->from[counter * n + r], memory_order_relaxed) ==
            win->from_mark[counter * n + r])
            oc_error_append("%s %zu", none++ ? "," : " ranks", r);
    if (!none)
        oc_error_append(" no rank");
}

oc_status_t oc_notify_wait(oc_win_t *win, unsigned counter, uint32_t expected)
{
    oc_status_t st = check_counter("oc_notify_wait", win, counter);
    oc_pe_counter_t *c;
    double timeout;
    oc_deadline_t deadline;

    if (st != OC_OK)
        return st;
    c = &win->counters[counter];
    timeout = win->team->ctx->cfg.timeout_s;
    deadline = oc_deadline(timeout);
    st = oc_pe_counter_wait(win->team->ctx->pe, c, expected, &deadline);
    if (st == OC_OK) {
        mark(win, counter);
        return OC_OK;
    }
    oc_error(OC_ERR_TIMEOUT,
             "oc_notify_wait: counter %u of rank %d: %u of the %u expected notification(s) "
             "arrived within %g s",
             counter, win->team->rank, atomic_load(&c->arrived) - atomic_load(&c->consumed),
             expected, timeout);
    report_origins(win, counter);
    return OC_ERR_TIMEOUT;
}

oc_status_t oc_notify_test(oc_win_t *win, unsigned counter, uint32_t expected)
{
    oc_status_t st = check_counter("oc_notify_test", win, counter);
    oc_pe_t *pe;
    int inline_mode, ready;
    if (st != OC_OK)
        return st;
    pe = win->team->ctx->pe;
    inline_mode = oc_pe_mode(pe) == OC_PROGRESS_INLINE;
    /* Inline, every test moves the engine along, as the application's
     * other operations may depend on it; in thread mode only one that finds
     * its notifications missing polls. */
    if (inline_mode)
        oc_pe_progress(pe);
    ready = oc_pe_counter_take(&win->counters[counter], expected);
    if (!ready && !inline_mode) {
        oc_pe_poll(pe);
        ready = oc_pe_counter_take(&win->counters[counter], expected);
    }
    if (!ready)
        return OC_INPROGRESS;
    mark(win, counter);
    return OC_OK;
}
