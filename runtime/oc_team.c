/* Teams: collective creation over an out-of-band allgather, endpoints from
 * the context's shared cache. */
#include "oc_runtime.h"
#include "oc_error.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    uint32_t team_id;
    uint32_t addr_len;
    int32_t rank, size; /* as the member's params say: checked against its place */
} team_hello_t;

/* Registers team under a free local id. Ids are taken in turn, not the
 * lowest free: a team freed after a failure may still receive its peers'
 * late messages, which carry its id and operation numbers, and a new team
 * under that id would take them for its own operations' (wrong data, status
 * OC_OK). */
static oc_status_t registry_add(oc_context_t *ctx, oc_team_t *team)
{
    const size_t nids = (size_t)OC_NIC_MAX_TEAM_ID + 1;
    oc_status_t st = OC_OK;
    size_t id, tries;

    pthread_mutex_lock(&ctx->teams_lock);
    id = ctx->next_team_id;
    for (tries = 0; tries < nids && id < ctx->teams_cap && ctx->teams[id] != NULL; tries++)
        id = (id + 1) % nids;
    if (tries == nids) {
        st = oc_error(OC_ERR_UNAVAILABLE, "oc_team_create: more than %zu teams in one context",
                      nids);
    } else if (id >= ctx->teams_cap) {
        size_t ncap = ctx->teams_cap ? 2 * ctx->teams_cap : 8;
        oc_team_t **nt;
        while (ncap <= id)
            ncap *= 2;
        if (ncap > nids)
            ncap = nids;
        nt = realloc(ctx->teams, ncap * sizeof(*nt));
        if (nt == NULL)
            st = oc_error(OC_ERR_NO_MEMORY, "oc_team_create: team registry");
        else {
            memset(nt + ctx->teams_cap, 0, (ncap - ctx->teams_cap) * sizeof(*nt));
            ctx->teams = nt;
            ctx->teams_cap = ncap;
        }
    }
    if (st == OC_OK) {
        ctx->teams[id] = team;
        team->id = (uint32_t)id;
        ctx->next_team_id = (uint32_t)((id + 1) % nids);
    }
    pthread_mutex_unlock(&ctx->teams_lock);
    return st;
}

static void registry_remove(oc_context_t *ctx, oc_team_t *team)
{
    pthread_mutex_lock(&ctx->teams_lock);
    if (team->id < ctx->teams_cap && ctx->teams[team->id] == team)
        ctx->teams[team->id] = NULL;
    pthread_mutex_unlock(&ctx->teams_lock);
}

typedef struct {
    oc_team_t *team;
    const unsigned char *addrs; /* size * stride bytes */
    const team_hello_t *hello;
    size_t stride;
} connect_args_t;

/* Engine context: endpoints for every other member, shared through the cache. */
static oc_status_t connect_fn(oc_pe_t *pe, void *arg)
{
    connect_args_t *a = arg;
    oc_team_t *team = a->team;
    oc_context_t *ctx = team->ctx;
    oc_status_t st;
    int r;

    (void)pe;
    st = oc_ep_cache_reserve(&ctx->ep_cache, (size_t)team->size);
    for (r = 0; r < team->size && st == OC_OK; r++) {
        const unsigned char *addr = a->addrs + (size_t)r * a->stride;
        size_t len = a->hello[r].addr_len;
        oc_ep_entry_t *e;

        if (r == team->rank)
            continue;
        e = oc_ep_cache_find(&ctx->ep_cache, addr, len);
        if (e == NULL) {
            e = oc_ep_entry_new(addr, len);
            if (e == NULL) {
                st = oc_error(OC_ERR_NO_MEMORY, "endpoint cache");
                break;
            }
            st = ctx->nic->ops->connect(ctx->nic, addr, len, &e->ep);
            if (st != OC_OK) {
                free(e);
                break;
            }
            oc_ep_cache_insert(&ctx->ep_cache, e);
        }
        team->eps[r] = e->ep;
    }
    if (st != OC_OK)
        oc_error_append(" (oc_team_create: connecting)");
    return st;
}

typedef struct {
    oc_team_t *team;
    unsigned char *mine;        /* size * len: this member's blob for each peer */
    unsigned char *all;         /* size * size * len: every member's blobs */
    size_t len;
    int complete;               /* 0: write the blobs; 1: complete the endpoints */
} wireup_args_t;

/* Engine context: one step of the backend's per-pair wire-up. */
static oc_status_t wireup_fn(oc_pe_t *pe, void *arg)
{
    wireup_args_t *a = arg;
    oc_team_t *team = a->team;
    oc_nic_t *nic = oc_pe_nic(pe);
    size_t n = (size_t)team->size;
    oc_status_t st = OC_OK;
    int r;

    for (r = 0; r < team->size && st == OC_OK; r++) {
        if (r == team->rank || team->eps[r] == NULL)
            continue;
        if (!a->complete)
            st = nic->ops->ep_wireup(nic, team->eps[r], a->mine + (size_t)r * a->len);
        else
            st = nic->ops->ep_complete(
                nic, team->eps[r], a->all + ((size_t)r * n + (size_t)team->rank) * a->len);
    }
    if (st != OC_OK)
        oc_error_append(" (oc_team_create: wiring up)");
    return st;
}

/* The wire-up buffers of backends whose endpoints are per pair, allocated
 * before the first vote so that running short of memory later cannot keep a
 * member out of a round its peers are in. */
typedef struct {
    unsigned char *mine, *all;
} wireup_bufs_t;

static oc_status_t wireup_alloc(const oc_context_t *ctx, int size, wireup_bufs_t *b)
{
    size_t n = (size_t)size, len = ctx->nic->ops->wireup_len;
    if (ctx->nic->ops->ep_wireup == NULL)
        return OC_OK;
    b->mine = calloc(n, len);
    b->all = malloc(n * n * len);
    if (b->mine == NULL || b->all == NULL)
        return oc_error(OC_ERR_NO_MEMORY, "oc_team_create: wire-up of %d members", size);
    return OC_OK;
}

/* The second round of backends whose endpoints are per pair (the vote that
 * follows keeps traffic from starting before the peer's end is ready).
 * Every member takes part whatever its own status (st), so that none is left
 * waiting. */
static oc_status_t wireup(oc_team_t *team, const oc_team_params_t *p, const wireup_bufs_t *b,
                          oc_status_t st)
{
    const oc_nic_ops_t *ops = team->ctx->nic->ops;
    size_t n = (size_t)p->size, len = ops->wireup_len;
    wireup_args_t a = {team, b->mine, b->all, len, 0};

    if (ops->ep_wireup == NULL)
        return st;
    if (st == OC_OK)
        st = oc_pe_call(team->ctx->pe, wireup_fn, &a);
    if (p->allgather(a.mine, a.all, n * len, p->arg) != 0 && st == OC_OK)
        st = oc_error(OC_ERR_BACKEND, "oc_team_create: the out-of-band allgather failed");
    a.complete = 1;
    if (st == OC_OK)
        st = oc_pe_call(team->ctx->pe, wireup_fn, &a);
    return st;
}

/* Without these a member cannot even take part in the vote. */
static oc_status_t check_params(const oc_team_params_t *p)
{
    if (p == NULL)
        return oc_error(OC_ERR_INVALID_ARG, "oc_team_create: params is NULL");
    if (p->size < 1 || (unsigned)p->size > OC_NIC_MAX_RANKS)
        return oc_error(OC_ERR_INVALID_ARG, "oc_team_create: params->size=%d (1..%u)", p->size,
                        OC_NIC_MAX_RANKS);
    if (p->rank < 0 || p->rank >= p->size)
        return oc_error(OC_ERR_INVALID_ARG, "oc_team_create: params->rank=%d outside 0..%d",
                        p->rank, p->size - 1);
    if (p->allgather == NULL)
        return oc_error(OC_ERR_INVALID_ARG, "oc_team_create: params->allgather is NULL");
    return OC_OK;
}

/* A vote of a team up to this size gathers onto the stack (4 KB), so it
 * needs no memory from the heap. */
#define VOTE_ON_STACK 1024

/* One exchange of every member's status (st: this one's), so that a failure
 * anywhere is a failure everywhere and no member is left waiting in a later
 * round. A member that failed keeps its own error; the others get one naming
 * it, "<what> on rank R". gather exchanges one int32 per member, into buf
 * (NULL: allocated here). */
static oc_status_t vote(int size, oc_status_t (*gather)(void *arg, int32_t ok, int32_t *oks),
                        void *arg, oc_status_t st, const char *what, int32_t *buf)
{
    int32_t stack[VOTE_ON_STACK], ok = st == OC_OK, *oks;
    oc_error_saved_t detail; /* this member's reason, across a gather that fails */
    oc_status_t gst;
    int r, nfailed = 0;
    if (buf == NULL && size <= VOTE_ON_STACK)
        buf = stack; /* not freed below */
    oks = buf != NULL ? buf : malloc((size_t)size * sizeof(*oks));
    if (oks == NULL) /* out of band: the peers are left in their gather */
        return st != OC_OK ? st : oc_error(OC_ERR_NO_MEMORY, "vote of %d members", size);
    oc_error_save(&detail);
    gst = gather(arg, ok, oks);
    if (gst != OC_OK) {
        if (oks != buf)
            free(oks);
        if (st == OC_OK)
            return gst;
        oc_error_restore(&detail);
        return st;
    }
    for (r = 0; r < size && ok; r++) {
        if (oks[r])
            continue;
        if (nfailed++ == 0)
            st = oc_error(OC_ERR_MISMATCH, "%s on rank %d", what, r);
        else
            oc_error_append(", rank %d", r);
    }
    if (nfailed > 0)
        oc_error_append(" (oc_last_error() there says why)");
    if (oks != buf)
        free(oks);
    return st;
}

static oc_status_t oob_gather(void *arg, int32_t ok, int32_t *oks)
{
    const oc_team_params_t *p = arg;
    return p->allgather(&ok, oks, sizeof(ok), p->arg) == 0
               ? OC_OK
               : oc_error(OC_ERR_BACKEND, "oc_team_create: the out-of-band allgather failed");
}

oc_status_t oc_team_gather_i32(oc_team_t *team, int32_t mine, const int32_t **all)
{
    oc_status_t st;
    int r;
    for (r = 0; r < team->size; r++)
        team->gather_buf[r] = mine;
    *all = team->gather_buf + team->size;
    st = oc_start(team->gather_req);
    if (st != OC_OK) { /* refused before it took the number the peers' gather takes */
        oc_team_skip_ops(team, 1, 0);
        return st;
    }
    return oc_wait(team->gather_req);
}

/* oks is where the gather lands: oc_team_vote passes gather_buf's received
 * half. */
static oc_status_t team_gather(void *arg, int32_t ok, int32_t *oks)
{
    const int32_t *all;
    (void)oks;
    return oc_team_gather_i32(arg, ok, &all);
}

oc_status_t oc_team_vote(oc_team_t *team, oc_status_t st, const char *what)
{
    return vote(team->size, team_gather, team, st, what, team->gather_buf + team->size);
}

/* No backend address comes near this: a larger one announced by a peer
 * means it runs another build of offcoll, or its memory is corrupt. */
#define TEAM_MAX_ADDR_LEN (1u << 20)

/* st: this member's status so far; it takes part in the first vote whatever
 * it is (team is NULL when st is not OC_OK). Everything the later rounds need
 * whatever the peers announce is allocated before that vote; what depends on
 * their addresses' lengths has a vote of its own. So from the first vote on
 * a member leaves no round that its peers are in. */
static oc_status_t exchange(oc_team_t *team, const oc_team_params_t *p, oc_status_t st)
{
    oc_context_t *ctx = team != NULL ? team->ctx : NULL;
    team_hello_t mine, *hello = NULL;
    int32_t *oks = NULL;
    wireup_bufs_t wb = {NULL, NULL};
    const void *addr = NULL;
    size_t len = 0, stride = 0;
    unsigned char *padded = NULL, *all = NULL;
    connect_args_t ca;
    int r;

    if (st == OC_OK)
        st = ctx->nic->ops->address(ctx->nic, &addr, &len);
    if (st == OC_OK && ((hello = malloc((size_t)p->size * sizeof(*hello))) == NULL ||
                        (oks = malloc((size_t)p->size * sizeof(*oks))) == NULL))
        st = oc_error(OC_ERR_NO_MEMORY, "oc_team_create: %d members", p->size);
    if (st == OC_OK)
        st = wireup_alloc(ctx, p->size, &wb);
    st = vote(p->size, oob_gather, (void *)p, st, "oc_team_create: failed before connecting", oks);
    if (st != OC_OK)
        goto out;
    mine.team_id = team->id;
    mine.addr_len = (uint32_t)len;
    mine.rank = p->rank;
    mine.size = p->size;
    if (p->allgather(&mine, hello, sizeof(mine), p->arg) != 0) {
        st = oc_error(OC_ERR_BACKEND, "oc_team_create: the out-of-band allgather failed");
        goto out;
    }
    /* Every member sees the same table, so all refuse together. */
    for (r = 0; r < p->size && st == OC_OK; r++) {
        team->peer_ids[r] = hello[r].team_id;
        if (hello[r].rank != r || hello[r].size != p->size)
            st = oc_error(OC_ERR_MISMATCH, "oc_team_create: the allgather's block %d comes from "
                          "a member whose params say rank %d of %d (here: rank %d of %d); "
                          "params->rank must be the member's place in the allgather and "
                          "params->size the same on all", r, hello[r].rank, hello[r].size,
                          p->rank, p->size);
        else if (hello[r].addr_len > TEAM_MAX_ADDR_LEN)
            st = oc_error(OC_ERR_MISMATCH, "oc_team_create: rank %d announced a %u-byte address "
                          "(at most %u): another build of offcoll?", r, hello[r].addr_len,
                          TEAM_MAX_ADDR_LEN);
        else if (hello[r].addr_len > stride)
            stride = hello[r].addr_len;
    }
    if (st == OC_OK && ((padded = calloc(1, stride)) == NULL ||
                        (all = malloc((size_t)p->size * stride)) == NULL))
        st = oc_error(OC_ERR_NO_MEMORY, "oc_team_create: %d addresses of up to %zu bytes",
                      p->size, stride);
    st = vote(p->size, oob_gather, (void *)p, st,
              "oc_team_create: failed before exchanging addresses", oks);
    if (st != OC_OK)
        goto out;
    memcpy(padded, addr, len);
    if (p->allgather(padded, all, stride, p->arg) != 0) {
        st = oc_error(OC_ERR_BACKEND, "oc_team_create: the out-of-band allgather failed");
        goto out;
    }
    ca.team = team;
    ca.addrs = all;
    ca.hello = hello;
    ca.stride = stride;
    st = oc_pe_call(ctx->pe, connect_fn, &ca);
    st = wireup(team, p, &wb, st);
    /* No member leaves before all have connected: one that went on to
     * finalize its context would take with it the memory its peers are still
     * attaching (UCX's shared-memory FIFOs), and one that sent at once could
     * reach a peer whose end of a per-pair QP is not ready. */
    st = vote(p->size, oob_gather, (void *)p, st, "oc_team_create: failed while connecting", oks);
out:
    free(hello);
    free(oks);
    free(wb.mine);
    free(wb.all);
    free(padded);
    free(all);
    return st;
}

static void team_destroy(oc_team_t *team)
{
    if (team == NULL)
        return;
    if (team->gather_req != NULL)
        oc_request_free(team->gather_req);
    oc_request_spare_free(team);
    free(team->gather_buf);
    registry_remove(team->ctx, team);
    free(team->peer_ids);
    free(team->eps);
    free(team);
}

/* The local part of the creation, before any exchange. */
static oc_status_t team_alloc(oc_context_t *ctx, const oc_team_params_t *p, oc_team_t **out)
{
    oc_team_t *team = calloc(1, sizeof(*team));
    oc_status_t st;

    if (team == NULL)
        return oc_error(OC_ERR_NO_MEMORY, "oc_team_create: team");
    team->ctx = ctx;
    team->rank = p->rank;
    team->size = p->size;
    team->peer_ids = calloc((size_t)p->size, sizeof(*team->peer_ids));
    team->eps = calloc((size_t)p->size, sizeof(*team->eps));
    team->gather_buf = calloc(2 * (size_t)p->size, sizeof(*team->gather_buf));
    if (team->peer_ids == NULL || team->eps == NULL || team->gather_buf == NULL)
        st = oc_error(OC_ERR_NO_MEMORY, "oc_team_create: %d members", p->size);
    else
        st = registry_add(ctx, team);
    /* Its operation number is the team's first, the same on every member. */
    if (st == OC_OK)
        st = oc_request_alltoall_make("oc_team_create", team, team->gather_buf,
                                      team->gather_buf + p->size, sizeof(*team->gather_buf), 1,
                                      &team->gather_req);
    if (st != OC_OK) {
        team_destroy(team);
        return st;
    }
    *out = team;
    return OC_OK;
}

oc_status_t oc_team_create(oc_context_t *ctx, const oc_team_params_t *p, oc_team_t **out)
{
    oc_team_t *team = NULL;
    oc_status_t st;

    if (out != NULL)
        *out = NULL;
    if ((st = check_params(p)) != OC_OK)
        return st;
    /* A member that fails here still votes, so that its peers fail too. */
    if (ctx == NULL)
        st = oc_error(OC_ERR_INVALID_ARG, "oc_team_create: ctx is NULL");
    else if (out == NULL)
        st = oc_error(OC_ERR_INVALID_ARG, "oc_team_create: team is NULL");
    else
        st = team_alloc(ctx, p, &team);
    st = exchange(team, p, st);
    if (st != OC_OK) {
        team_destroy(team);
        return st;
    }
    atomic_fetch_add(&ctx->nteams, 1);
    *out = team;
    return OC_OK;
}

oc_status_t oc_team_free(oc_team_t *team)
{
    int nr, nw;
    if (team == NULL)
        return oc_error(OC_ERR_INVALID_ARG, "oc_team_free: team is NULL");
    nr = atomic_load(&team->nrequests) - 1; /* gather_req is the team's own */
    nw = atomic_load(&team->nwins);
    if (nr > 0 || nw > 0)
        return oc_error(OC_ERR_BUSY,
                        "oc_team_free: %d request(s) and %d window(s) or halo plan(s) on the "
                        "team not freed", nr, nw);
    registry_remove(team->ctx, team);
    /* A control-message handler may hold the team: let the engine pass by. */
    oc_pe_sync(team->ctx->pe);
    atomic_fetch_sub(&team->ctx->nteams, 1);
    team_destroy(team); /* its registry_remove finds nothing left to remove */
    return OC_OK;
}

int oc_team_rank(const oc_team_t *team)
{
    return team != NULL ? team->rank : -1;
}

int oc_team_size(const oc_team_t *team)
{
    return team != NULL ? team->size : -1;
}

typedef struct {
    const oc_team_t *team;
    FILE *out;
} paths_args_t;

static oc_status_t paths_fn(oc_pe_t *pe, void *arg)
{
    paths_args_t *a = arg;
    oc_nic_t *nic = oc_pe_nic(pe);
    int r;
    for (r = 0; r < a->team->size; r++) {
        if (r == a->team->rank)
            continue;
        char tls[256];
        nic->ops->ep_transports(nic, a->team->eps[r], tls, sizeof(tls));
        fprintf(a->out, "rank %d -> rank %d: %s (OC_INTRANODE=%s%s)\n", a->team->rank, r, tls,
                oc_intranode_name(a->team->ctx->cfg.intranode),
                a->team->ctx->intranode_auto ? ", by auto" : "");
        nic->ops->describe_ep(nic, a->team->eps[r], a->out);
    }
    fflush(a->out);
    return OC_OK;
}

oc_status_t oc_team_print_paths(const oc_team_t *team, FILE *out)
{
    paths_args_t a = {team, out};
    if (team == NULL || out == NULL)
        return oc_error(OC_ERR_INVALID_ARG, "oc_team_print_paths: %s is NULL",
                        team ? "out" : "team");
    oc_pe_call(team->ctx->pe, paths_fn, &a);
    return OC_OK;
}

void oc_team_skip_ops(oc_team_t *team, unsigned n, int persistent)
{
    atomic_fetch_add(&team->next_seq, n);
    if (persistent)
        atomic_fetch_add(&team->next_pseq, n);
}

/* Makes the exchange's buffer, own (this member's blocks, then the received
 * ones), and its request. The exchange runs on a buffer of its own: after a
 * timeout the backend may still read or write it (not every transfer can be
 * cancelled), so it is kept until oc_finalize rather than the caller's freed
 * under it. gather: mine is one block, sent to every member. */
static oc_status_t exchange_prepare(oc_team_t *team, oc_status_t st, const void *mine,
                                    size_t len, int gather, unsigned char **own,
                                    oc_request_t **req)
{
    size_t total = len * (size_t)team->size;
    int r;
    if (st == OC_OK && (*own = malloc(2 * total + 1)) == NULL)
        st = oc_error(OC_ERR_NO_MEMORY, "all-to-all of %d blocks of %zu bytes", team->size, len);
    if (st != OC_OK) {
        oc_team_skip_ops(team, 1, 0); /* the number the peers' exchange takes */
        return st;
    }
    for (r = 0; r < team->size && gather; r++)
        memcpy(*own + (size_t)r * len, mine, len);
    if (!gather)
        memcpy(*own, mine, total);
    return oc_request_alltoall_make("oc_team_alltoall", team, *own, *own + total, len, 0, req);
}

static oc_status_t team_exchange(oc_team_t *team, oc_status_t st, const char *what,
                                 const void *mine, size_t len, int gather, void *theirs)
{
    unsigned char *own = NULL;
    oc_request_t *req = NULL;
    int launched = 0;

    st = oc_team_vote(team, exchange_prepare(team, st, mine, len, gather, &own, &req), what);
    if (st == OC_OK) {
        oc_request_launch(req);
        launched = 1;
        st = oc_wait(req);
    }
    if (req != NULL)
        oc_request_free(req);
    if (st == OC_OK)
        memcpy(theirs, own + len * (size_t)team->size, len * (size_t)team->size);
    if (st != OC_OK && launched)
        oc_ctx_release_later(team->ctx, free, own);
    else
        free(own);
    return st;
}

oc_status_t oc_team_alltoall(oc_team_t *team, oc_status_t st, const char *what, const void *mine,
                             size_t len, void *theirs)
{
    return team_exchange(team, st, what, mine, len, 0, theirs);
}

oc_status_t oc_team_allgather(oc_team_t *team, oc_status_t st, const char *what,
                              const void *mine, size_t len, void *all)
{
    return team_exchange(team, st, what, mine, len, 1, all);
}
