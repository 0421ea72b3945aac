/* Requests: schedule construction, start, test, wait, free. */
#include "oc_args.h"
#include "oc_persist.h"
#include "oc_error.h"
#include "oc_mem.h"
#include "oc_sync.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>

/* ---- life cycle ------------------------------------------------------------ */

/* Once DONE is published the application may free req at once, so the
 * engine reads nothing of it afterwards: the waiters bit comes back from the
 * exchange, and the futex wake only names the address (the kernel reads no
 * user memory for FUTEX_WAKE). */
static void req_complete(oc_pe_exec_t *x, oc_status_t st)
{
    oc_request_t *req = x->owner;
    uint32_t old;
    req->result = st;
    old = atomic_exchange(&req->state, OC_REQ_DONE);
    if (old & OC_REQ_WAITERS)
        oc_futex_wake_all(&req->state);
}

/* The state for running schedule i_sched, in reuse (an earlier execution's,
 * finished and not cancelled) where it has slots enough; reuse is freed
 * otherwise. */
static oc_pe_exec_t *exec_alloc(oc_request_t *req, unsigned i_sched, oc_pe_exec_t *reuse)
{
    const oc_sched_t *s = &req->sched[i_sched];
    oc_team_t *team = req->team;
    size_t i, max = 1;
    oc_pe_exec_t *x = reuse;

    for (i = 0; i < s->nlists; i++)
        if (s->lists[i].ntasks > max)
            max = s->lists[i].ntasks;
    if (x != NULL && x->nslots >= max) {
        /* Its slots hold no handle: a backend clears each as its task ends. */
        max = x->nslots;
        memset(x, 0, sizeof(*x));
    } else {
        free(x);
        x = oc_zalloc(sizeof(*x) + max * sizeof(oc_nic_slot_t));
        if (x == NULL)
            return NULL;
    }
    x->slots = (oc_nic_slot_t *)(x + 1);
    x->nslots = max;
    x->sched = s;
    x->complete = req_complete;
    x->owner = req;
    x->match.seq = req->match;
    x->match.team_id = team->id;
    x->match.peer_team_ids = team->peer_ids;
    x->match.rank = team->rank;
    x->match.eps = team->eps;
    return x;
}

static oc_status_t release_fn(oc_pe_t *pe, void *arg)
{
    oc_pe_exec_release(pe, arg);
    return OC_OK;
}

static void req_destroy(oc_request_t *req)
{
    unsigned i;
    if (req->prev_persistent != NULL) {
        pthread_mutex_lock(&req->team->ctx->teams_lock);
        *req->prev_persistent = req->next_persistent;
        if (req->next_persistent != NULL)
            req->next_persistent->prev_persistent = req->prev_persistent;
        pthread_mutex_unlock(&req->team->ctx->teams_lock);
    }
    for (i = 0; i < 2; i++) {
        if (req->xs[i] != NULL && req->xs[i]->cancelled) {
            req->cancelled_once = 1;
            oc_pe_call(req->team->ctx->pe, release_fn, req->xs[i]);
        } else {
            free(req->xs[i]);
        }
        oc_sched_fini(&req->sched[i]);
    }
    /* Left here only by a set-up that failed before any start (oc_request_free
     * closes it with the members). */
    if (req->win != NULL)
        oc_win_release(req->win);
    free(req->stuck_on);
    /* A cancelled send may still read it: the backend cannot cancel them all. */
    if (req->cancelled_once)
        oc_ctx_release_later(req->team->ctx, free, req->inplace);
    else
        free(req->inplace);
    free(req->put_peers);
    free(req);
}

/* The numbers of team's next operation: each member takes the same ones for
 * the same collective call. A persistent request matches on its number for
 * its whole life, while the team goes on: its match number comes from a
 * count of persistent requests, which the top matched bit keeps apart from
 * one-shot operations' numbers. So the one-shot numbers can wrap (2^26
 * operations) without meeting a persistent request made long before. The
 * runtime's own exchanges (set-up agreements, team gathers) match apart from
 * the application's one-shot operations (the next bit): a program that
 * calls a set-up on one member and a collective on another at the same
 * operation number then times out on both, instead of delivering the
 * set-up's message into the collective's buffer as data. */
typedef struct {
    uint32_t seq, match;
} req_nums_t;

typedef enum { NUMS_ONESHOT, NUMS_PERSISTENT, NUMS_RUNTIME } nums_kind_t;

static req_nums_t take_nums(oc_team_t *team, nums_kind_t kind)
{
    const uint32_t top = 1u << (OC_NIC_SEQ_BITS - 1), half = top >> 1;
    req_nums_t n;
    n.seq = atomic_fetch_add(&team->next_seq, 1);
    if (kind == NUMS_PERSISTENT)
        n.match = top | (atomic_fetch_add(&team->next_pseq, 1) & (top - 1));
    else
        n.match = (kind == NUMS_RUNTIME ? half : 0) | (n.seq & (half - 1));
    return n;
}

/* Gives req, whose schedule is built, its engine state and numbers (from
 * take_nums). */
static oc_status_t req_register(const char *fn, oc_request_t *req, req_nums_t nums,
                                oc_request_t **out)
{
    oc_team_t *team = req->team;
    unsigned i;
    req->seq = nums.seq;
    req->match = nums.match;
    for (i = 0; i < req->nsched; i++)
        if ((req->xs[i] = exec_alloc(req, i, req->xs[i])) == NULL) {
            oc_status_t st = oc_error(OC_ERR_NO_MEMORY, "%s: request state", fn);
            req_destroy(req);
            return st;
        }
    req->x = req->xs[0];
    atomic_init(&req->state, OC_REQ_INACTIVE);
    if (req->persistent) {
        pthread_mutex_lock(&team->ctx->teams_lock);
        req->next_persistent = team->persistent;
        if (team->persistent != NULL)
            team->persistent->prev_persistent = &req->next_persistent;
        req->prev_persistent = &team->persistent;
        team->persistent = req;
        pthread_mutex_unlock(&team->ctx->teams_lock);
    }
    if (req->owner == NULL)
        atomic_fetch_add(&team->nrequests, 1);
    *out = req;
    return OC_OK;
}

/* A team keeps the last one-shot request freed on it for its next call,
 * which then reuses the request, its schedule's arrays and its execution
 * state instead of allocating them: malloc and free took an eighth of a 1 KB
 * Alltoall's time on 2 ranks (docs/performance.md, "A freed one-shot request
 * is reused"). One spare, passed by atomic exchange, serves the usual thread
 * that calls one collective after another; a second thread's calls allocate
 * as before. Its in-place copy is kept too, until a call that is not in
 * place. Not kept: persistent requests and what a cancel may still reach. */
static int spare_keep(oc_request_t *req)
{
    oc_request_t *old;
    if (req->persistent || req->nsched != 1 || req->cancelled_once || req->win != NULL ||
        req->xs[0] == NULL || req->xs[0]->cancelled)
        return 0;
    free(req->stuck_on);
    free(req->put_peers);
    req->stuck_on = NULL;
    req->put_peers = NULL;
    old = atomic_exchange(&req->team->spare, req);
    if (old != NULL)
        req_destroy(old);
    return 1;
}

/* A zeroed request for team: its spare, cleared, if it has one. */
static oc_request_t *spare_take(oc_team_t *team)
{
    oc_request_t *req = atomic_exchange(&team->spare, NULL);
    oc_sched_t s;
    oc_pe_exec_t *x;
    void *inplace;
    size_t inplace_cap;
    if (req == NULL)
        return oc_zalloc(sizeof(*req));
    s = req->sched[0];
    x = req->xs[0];
    inplace = req->inplace;
    inplace_cap = req->inplace_cap;
    memset(req, 0, sizeof(*req));
    req->sched[0] = s; /* cleared by req_build, emptied by exec_alloc */
    req->xs[0] = x;
    req->inplace = inplace; /* resized or freed by req_alloc */
    req->inplace_cap = inplace_cap;
    return req;
}

void oc_request_spare_free(oc_team_t *team)
{
    oc_request_t *req = atomic_exchange(&team->spare, NULL);
    if (req != NULL)
        req_destroy(req);
}

/* Undoes req_register. */
static void req_unregister(oc_request_t *req)
{
    oc_team_t *team = req->team;
    int counted = req->owner == NULL;
    if (!spare_keep(req))
        req_destroy(req);
    if (counted)
        atomic_fetch_sub(&team->nrequests, 1);
}

/* The request, its in-place copy and its choice of algorithm. args->sbuf
 * OC_IN_PLACE: the schedule sends from a copy of the inplace bytes of rbuf,
 * made by a list of its own before the algorithm's, so that the copy is the
 * engine's work and not the caller's, and no receive of the operation is
 * posted before it is done. That list waits on nobody, so the algorithm's
 * lists keep their pairing with the peers'. */
static oc_status_t req_alloc(const char *fn, oc_team_t *team, int persistent, int v,
                             oc_coll_args_t *args, size_t mean_block, size_t inplace,
                             oc_request_t **out)
{
    oc_request_t *req = spare_take(team);

    if (req == NULL)
        return oc_error(OC_ERR_NO_MEMORY, "%s: request", fn);
    req->team = team;
    if (args->sbuf != OC_IN_PLACE) {
        /* a spare's copy is kept only from one in-place call to the next */
        free(req->inplace);
        req->inplace = NULL;
        req->inplace_cap = 0;
    } else {
        if (inplace >= req->inplace_cap) {
            free(req->inplace);
            req->inplace = inplace < SIZE_MAX ? malloc(inplace + 1) : NULL;
            req->inplace_cap = req->inplace != NULL ? inplace + 1 : 0;
            if (req->inplace == NULL) {
                req_destroy(req);
                return oc_error(OC_ERR_NO_MEMORY, "%s: in-place copy of %zu bytes", fn,
                                inplace);
            }
        }
        args->sbuf = req->inplace;
    }
    req->persistent = persistent;
    req->opname = v ? "alltoallv" : "alltoall";
    req->alg = oc_coll_alltoall_select(&team->ctx->cfg, v, persistent, mean_block, team->size);
    req->nsched = 1;
    *out = req;
    return OC_OK;
}

/* Schedule i: the in-place copy's list, then the algorithm's. */
static oc_status_t req_build(const char *fn, oc_request_t *req, const oc_coll_args_t *args,
                             size_t inplace, unsigned i)
{
    oc_sched_t *s = &req->sched[i];
    oc_status_t st = OC_OK;

    oc_sched_clear(s, req->team->ctx->cfg.list_max);
    if (req->inplace != NULL && inplace > 0) {
        oc_task_t t = oc_task_copy(req->inplace, args->rbuf, inplace);
        st = oc_sched_add(s, &t, 1);
        oc_sched_end_list(s);
    }
    if (st == OC_OK)
        st = oc_coll_alltoall_build(req->alg, args, s);
    if (st != OC_OK)
        oc_error_append(" (%s, algorithm %s)", fn, oc_alg_name(req->alg));
    return st;
}

/* alg: OC_ALG_AUTO for the configuration's choice; kind: the application's
 * one-shot operation or the runtime's own exchange. */
static oc_status_t req_create(const char *fn, oc_team_t *team, int v, oc_coll_args_t *args,
                              size_t mean_block, size_t inplace, oc_alg_t alg, nums_kind_t kind,
                              oc_request_t **out)
{
    req_nums_t nums = take_nums(team, kind); /* taken whatever fails here, as by the peers */
    oc_request_t *req = NULL;
    oc_status_t st;
    args->unagreed = 1;
    st = req_alloc(fn, team, 0, v, args, mean_block, inplace, &req);
    if (st == OC_OK && alg != OC_ALG_AUTO)
        req->alg = alg;
    if (st == OC_OK && (st = req_build(fn, req, args, inplace, 0)) != OC_OK)
        req_destroy(req);
    return st == OC_OK ? req_register(fn, req, nums, out) : st;
}

/* Collective, whatever this member's verdict on its arguments (st): the
 * members agree (runtime/oc_persist.h) before anything is built. The put
 * algorithm builds one schedule per parity of the starts, each with its own
 * landing zones. Building can still fail on one member (memory), so the
 * members vote once more; each takes the operation number before that, so
 * that the vote pairs with the peers' whatever failed. */
static oc_status_t persistent_create(const char *fn, oc_team_t *team, int v,
                                     oc_coll_args_t *args, size_t mean_block, size_t inplace,
                                     oc_status_t st, oc_request_t **out)
{
    oc_alg_t fallback = oc_coll_alltoall_select(&team->ctx->cfg, v, 0, mean_block, team->size);
    oc_alg_t alg = OC_ALG_AUTO;
    oc_request_t *req = NULL;
    oc_persist_put_t put;
    req_nums_t nums;
    unsigned i;

    if (st == OC_OK && (st = req_alloc(fn, team, 1, v, args, mean_block, inplace, &req)) == OC_OK)
        alg = req->alg;
    st = oc_persist_agree(fn, team, st, v, args, &alg, fallback, &put);
    if (st != OC_OK) {
        if (req != NULL)
            req_destroy(req);
        return st;
    }
    nums = take_nums(team, NUMS_PERSISTENT);
    req->alg = alg;
    if (alg == OC_ALG_PUT)
        st = oc_persist_put_attach(fn, req, args, &put);
    for (i = 0; i < req->nsched && st == OC_OK; i++) {
        args->put = alg == OC_ALG_PUT ? &put.zones[i] : NULL;
        st = req_build(fn, req, args, inplace, i);
    }
    oc_persist_put_fini(&put);
    if (st != OC_OK)
        req_destroy(req);
    else
        st = req_register(fn, req, nums, out);
    st = oc_team_vote(team, st, fn);
    if (st != OC_OK && *out != NULL) { /* never started: nothing can be on its way here */
        req_unregister(*out);
        *out = NULL;
    }
    return st;
}

oc_status_t oc_request_create(oc_team_t *team, const char *opname, oc_sched_t *sched,
                              void *owner, oc_request_t **out)
{
    req_nums_t nums = take_nums(team, NUMS_PERSISTENT); /* taken whatever fails, as by the peers */
    oc_request_t *req = oc_zalloc(sizeof(*req));
    if (req == NULL) {
        oc_sched_fini(sched);
        return oc_error(OC_ERR_NO_MEMORY, "%s: request", opname);
    }
    req->team = team;
    req->persistent = 1;
    req->opname = opname;
    req->owner = owner;
    req->nsched = 1;
    req->sched[0] = *sched;
    memset(sched, 0, sizeof(*sched));
    return req_register(opname, req, nums, out);
}

static void launch(oc_request_t *req)
{
    oc_team_t *team = req->team;
    uint32_t upto = atomic_load(&team->started_upto);

    req->x = req->xs[atomic_load(&req->starts) % req->nsched];
    /* For the presence answers of a timeout diagnosis. */
    atomic_fetch_add(&req->starts, 1);
    while ((int32_t)(req->seq + 1 - upto) > 0 &&
           !atomic_compare_exchange_weak(&team->started_upto, &upto, req->seq + 1))
        ;
    req->result = OC_OK;
    atomic_store(&req->state, OC_REQ_ACTIVE);
    oc_pe_start(team->ctx->pe, req->x);
}

static void fill_args(oc_coll_args_t *a, const oc_team_t *team, const void *sbuf, void *rbuf)
{
    memset(a, 0, sizeof(*a));
    a->rank = team->rank;
    a->size = team->size;
    a->sbuf = sbuf;
    a->rbuf = rbuf;
    a->ringk = team->ctx->cfg.ringk;
}

static oc_status_t alltoall_create(const char *fn, oc_team_t *team, const void *sbuf,
                                   void *rbuf, size_t block, int persistent, oc_request_t **req)
{
    oc_coll_args_t a;
    oc_status_t st = oc_args_check_alltoall(fn, team, sbuf, rbuf, block, req);
    if (team == NULL || (st != OC_OK && !persistent))
        return st;
    fill_args(&a, team, sbuf, rbuf);
    a.block = block;
    if (persistent)
        return persistent_create(fn, team, 0, &a, block, block * (size_t)team->size, st, req);
    return req_create(fn, team, 0, &a, block, block * (size_t)team->size, OC_ALG_AUTO,
                      NUMS_ONESHOT, req);
}

static oc_status_t alltoallv_create(const char *fn, oc_team_t *team, const void *sbuf,
                                    size_t sbuf_bytes, const size_t *scounts,
                                    const size_t *sdispls, void *rbuf, size_t rbuf_bytes,
                                    const size_t *rcounts, const size_t *rdispls,
                                    int persistent, oc_request_t **req)
{
    oc_coll_args_t a;
    size_t total = 0, extent = 0, mean;
    int i;
    oc_status_t st = oc_args_check_alltoallv(fn, team, sbuf, sbuf_bytes, scounts, sdispls,
                                             rbuf, rbuf_bytes, rcounts, rdispls, req);
    if (team == NULL || (st != OC_OK && !persistent))
        return st;
    fill_args(&a, team, sbuf, rbuf);
    if (st != OC_OK) /* persistent: it still takes part in the agreement */
        return persistent_create(fn, team, 1, &a, 0, 0, st, req);
    if (sbuf == OC_IN_PLACE) { /* rbuf's blocks go out, at the same offsets in the copy */
        scounts = rcounts;
        sdispls = rdispls;
    }
    a.scounts = scounts;
    a.sdispls = sdispls;
    a.rcounts = rcounts;
    a.rdispls = rdispls;
    /* In place, the copy holds rbuf up to the end of its last block (checked
     * inside rbuf_bytes): nothing where every count is 0 and rbuf is NULL. */
    for (i = 0; i < team->size; i++) {
        if (i != team->rank)
            total += scounts[i];
        if (rcounts[i] > 0 && rdispls[i] + rcounts[i] > extent)
            extent = rdispls[i] + rcounts[i];
    }
    /* The blocks that cross the network choose the algorithm: a caller that
     * keeps its own block elsewhere (count 0) must not lower the mean. */
    mean = team->size > 1 ? total / (size_t)(team->size - 1) : 0;
    if (persistent)
        return persistent_create(fn, team, 1, &a, mean, extent, st, req);
    return req_create(fn, team, 1, &a, mean, extent, OC_ALG_AUTO, NUMS_ONESHOT, req);
}

oc_status_t oc_request_alltoall_make(const char *fn, oc_team_t *team, const void *sbuf,
                                     void *rbuf, size_t len, int renumber, oc_request_t **req)
{
    oc_coll_args_t a;
    oc_status_t st;
    fill_args(&a, team, sbuf, rbuf);
    a.block = len;
    st = req_create(fn, team, 0, &a, len, 0, OC_ALG_BURST, NUMS_RUNTIME, req);
    if (st == OC_OK && renumber)
        (*req)->persistent = (*req)->renumber = 1;
    return st;
}

void oc_request_launch(oc_request_t *req)
{
    launch(req);
}

oc_status_t oc_ialltoall(oc_team_t *team, const void *sbuf, void *rbuf, size_t block_bytes,
                         oc_request_t **req)
{
    oc_status_t st = alltoall_create("oc_ialltoall", team, sbuf, rbuf, block_bytes, 0, req);
    if (st == OC_OK)
        launch(*req);
    return st;
}

oc_status_t oc_ialltoallv(oc_team_t *team, const void *sbuf, size_t sbuf_bytes,
                          const size_t *scounts, const size_t *sdispls, void *rbuf,
                          size_t rbuf_bytes, const size_t *rcounts, const size_t *rdispls,
                          oc_request_t **req)
{
    oc_status_t st = alltoallv_create("oc_ialltoallv", team, sbuf, sbuf_bytes, scounts, sdispls,
                                      rbuf, rbuf_bytes, rcounts, rdispls, 0, req);
    if (st == OC_OK)
        launch(*req);
    return st;
}

oc_status_t oc_alltoall_init(oc_team_t *team, const void *sbuf, void *rbuf, size_t block_bytes,
                             oc_request_t **req)
{
    return alltoall_create("oc_alltoall_init", team, sbuf, rbuf, block_bytes, 1, req);
}

oc_status_t oc_alltoallv_init(oc_team_t *team, const void *sbuf, size_t sbuf_bytes,
                              const size_t *scounts, const size_t *sdispls, void *rbuf,
                              size_t rbuf_bytes, const size_t *rcounts, const size_t *rdispls,
                              oc_request_t **req)
{
    return alltoallv_create("oc_alltoallv_init", team, sbuf, sbuf_bytes, scounts, sdispls, rbuf,
                            rbuf_bytes, rcounts, rdispls, 1, req);
}

/* A request is used by one thread at a time (offcoll.h); a second thread in
 * a call on it is refused rather than left to race the first. */
static oc_status_t req_enter(const char *fn, oc_request_t *req)
{
    if (req == NULL)
        return oc_error(OC_ERR_INVALID_ARG, "%s: req is NULL", fn);
    if (atomic_exchange(&req->in_call, 1))
        return oc_error(OC_ERR_BUSY,
                        "%s: req is in use by another thread (oc_start, oc_test, oc_wait or "
                        "oc_request_free); a request is used by one thread at a time", fn);
    return OC_OK;
}

static oc_status_t req_leave(oc_request_t *req, oc_status_t st)
{
    atomic_store(&req->in_call, 0);
    return st;
}

static oc_status_t req_start(oc_request_t *req)
{
    unsigned i;
    if (!req->persistent)
        return oc_error(OC_ERR_INVALID_ARG,
                        "oc_start: req is not persistent (made by oc_i%s, not oc_%s_init)",
                        req->opname, req->opname);
    switch (oc_request_state(req)) {
    case OC_REQ_ACTIVE:
        return oc_error(OC_ERR_BUSY, "oc_start: req is active (started and not yet completed)");
    case OC_REQ_DONE:
        return oc_error(OC_ERR_BUSY,
                        "oc_start: req's last start has not been completed by oc_test/oc_wait");
    default:
        break;
    }
    if (req->broken != OC_OK)
        return oc_error(OC_ERR_INVALID_ARG,
                        "oc_start: req's %s failed earlier (%s): that start's late %s could "
                        "be taken for a new start's; free it and create it again",
                        req->opname, oc_status_string(req->broken),
                        req->win != NULL ? "blocks" : "messages");
    i = atomic_load(&req->starts) % req->nsched;
    if (req->xs[i]->cancelled) {
        /* The cancelled list may still be in flight: leave it to the engine. */
        oc_pe_exec_t *fresh = exec_alloc(req, i, NULL);
        if (fresh == NULL)
            return oc_error(OC_ERR_NO_MEMORY, "oc_start: request state");
        oc_pe_call(req->team->ctx->pe, release_fn, req->xs[i]);
        req->xs[i] = fresh;
        req->cancelled_once = 1;
    }
    if (req->renumber) { /* the runtime's own (oc_request_alltoall_make) */
        req_nums_t nums = take_nums(req->team, NUMS_RUNTIME);
        req->seq = nums.seq;
        req->match = req->xs[i]->match.seq = nums.match;
    }
    launch(req);
    return OC_OK;
}

oc_status_t oc_start(oc_request_t *req)
{
    oc_status_t st = req_enter("oc_start", req);
    return st != OC_OK ? st : req_leave(req, req_start(req));
}

/* Consumes a completion: a persistent request becomes inactive. fn: the
 * caller's name for the error. */
static oc_status_t take_result(const char *fn, oc_request_t *req)
{
    oc_status_t st = req->result;
    if (req->persistent)
        atomic_store(&req->state, OC_REQ_INACTIVE);
    /* After a cancel, the peers' late messages of this start would match the
     * next start's receives (every start has the same tag); a put request's
     * zones may still receive blocks even after a mismatch, where a two-sided
     * schedule has run to its end. */
    if (req->persistent && !req->renumber && st != OC_OK &&
        (st != OC_ERR_MISMATCH || req->win != NULL))
        req->broken = st;
    /* The reason is the completed execution's, written before it published
     * DONE; nothing restarts it before this thread returns. */
    if (st != OC_OK && st != OC_ERR_TIMEOUT)
        oc_error(st, "%s: %s (op %u on a team of %d) failed: %s%s", fn, req->opname, req->seq,
                 req->team->size,
                 req->x->detail[0] != '\0'  ? req->x->detail
                 : st == OC_ERR_MISMATCH ? "a peer sent a different number of bytes than "
                                           "this rank expects"
                                         : oc_status_string(st),
                 st == OC_ERR_MISMATCH ? " (scounts/rcounts disagree)" : "");
    return st;
}

static oc_status_t req_test(oc_request_t *req)
{
    uint32_t state = oc_request_state(req);
    if (state == OC_REQ_ACTIVE) {
        oc_pe_poll(req->team->ctx->pe);
        state = oc_request_state(req);
    }
    if (state == OC_REQ_ACTIVE)
        return OC_INPROGRESS;
    if (state == OC_REQ_INACTIVE)
        return OC_OK; /* persistent and not started: nothing to wait for */
    return take_result("oc_test", req);
}

oc_status_t oc_test(oc_request_t *req)
{
    oc_status_t st = req_enter("oc_test", req);
    return st != OC_OK ? st : req_leave(req, req_test(req));
}

static int req_done(void *arg)
{
    return oc_request_state((oc_request_t *)arg) != OC_REQ_ACTIVE;
}

/* Wait for the operation's completion or its deadline; returns whether it is
 * still active. */
static int wait_until(oc_request_t *req, oc_deadline_t *deadline)
{
    oc_pe_t *pe = req->team->ctx->pe;
    if (oc_pe_mode(pe) == OC_PROGRESS_INLINE) {
        oc_pe_poll_until(pe, req_done, req, deadline);
    } else {
        uint32_t s;
        if (!oc_pe_help(pe, req_done, req, deadline))
            oc_pe_wait_spin(pe, req_done, req, deadline);
        s = atomic_load(&req->state);
        while (oc_request_state_of(s) == OC_REQ_ACTIVE) {
            double left = oc_deadline_left(deadline);
            if (left == 0)
                break;
            /* Announce the sleeper; the engine's exchange sees the bit. */
            if (!(s & OC_REQ_WAITERS) &&
                !atomic_compare_exchange_weak(&req->state, &s, s | OC_REQ_WAITERS))
                continue;
            oc_futex_wait(&req->state, s | OC_REQ_WAITERS, left);
            s = atomic_load(&req->state);
        }
    }
    return oc_request_state(req) == OC_REQ_ACTIVE;
}

static oc_status_t req_wait(oc_request_t *req)
{
    double timeout;
    oc_deadline_t deadline;
    oc_status_t st;
    if (oc_request_state(req) == OC_REQ_INACTIVE)
        return OC_OK;
    timeout = req->team->ctx->cfg.timeout_s;
    deadline = oc_deadline(timeout);
    if (!wait_until(req, &deadline))
        return take_result("oc_wait", req);
    oc_diag_cancel(req, timeout);
    st = take_result("oc_wait", req);
    oc_diag_report(req, st, timeout);
    return st;
}

oc_status_t oc_wait(oc_request_t *req)
{
    oc_status_t st = req_enter("oc_wait", req);
    return st != OC_OK ? st : req_leave(req, req_wait(req));
}

oc_status_t oc_request_free(oc_request_t *req)
{
    oc_status_t st = req_enter("oc_request_free", req);
    if (st != OC_OK)
        return st;
    if (oc_request_state(req) == OC_REQ_ACTIVE)
        return req_leave(req, oc_error(OC_ERR_BUSY, "oc_request_free: req is active; complete "
                                                    "it with oc_wait or oc_test"));
    /* A peer may have started a round this member never will (it then timed
     * out): its blocks may still be on their way here. The window's close
     * keeps the landing zones until oc_finalize where any member failed. */
    if (req->win != NULL) {
        st = oc_win_close(req->win, req->broken != OC_OK);
        req->win = NULL;
        if (st != OC_OK)
            oc_error_append(" (oc_request_free: a put request is freed by every member)");
    }
    req_unregister(req);
    return st;
}

oc_alg_t oc_request_alg(const oc_request_t *req)
{
    return req != NULL ? req->alg : OC_ALG_AUTO;
}
