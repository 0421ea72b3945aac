/* Context: backend choice, progress engine, endpoint cache, team registry. */
#include "oc_runtime.h"
#include "oc_error.h"
#include "oc_pe_host.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static oc_status_t check_config(const oc_config_t *c)
{
    if (c->progress != OC_PROGRESS_THREAD && c->progress != OC_PROGRESS_INLINE)
        return oc_error(OC_ERR_INVALID_ARG, "cfg->progress=%d is not an oc_progress_mode_t",
                        (int)c->progress);
    if (c->backend < OC_BACKEND_AUTO || c->backend > OC_BACKEND_VERBS)
        return oc_error(OC_ERR_INVALID_ARG, "cfg->backend=%d is not an oc_backend_kind_t",
                        (int)c->backend);
    if (c->alltoall_alg < OC_ALG_AUTO || c->alltoall_alg >= OC_ALG_COUNT_)
        return oc_error(OC_ERR_INVALID_ARG, "cfg->alltoall_alg=%d is not an oc_alg_t",
                        (int)c->alltoall_alg);
    if (c->alltoallv_alg < OC_ALG_AUTO || c->alltoallv_alg >= OC_ALG_COUNT_ ||
        c->alltoallv_alg == OC_ALG_BRUCK)
        return oc_error(OC_ERR_INVALID_ARG,
                        "cfg->alltoallv_alg=%d: alltoallv supports auto, burst, pairwise, ringk, "
                        "put",
                        (int)c->alltoallv_alg);
    if (c->intranode < OC_INTRANODE_SHM || c->intranode > OC_INTRANODE_AUTO)
        return oc_error(OC_ERR_INVALID_ARG, "cfg->intranode=%d is not an oc_intranode_t",
                        (int)c->intranode);
    if (c->list_max < 2 || c->list_max > OC_CFG_LIST_MAX_MAX)
        return oc_error(OC_ERR_INVALID_ARG, "cfg->list_max=%u: must be 2..%u (a task list "
                        "needs room for 2)", c->list_max, OC_CFG_LIST_MAX_MAX);
    if (c->ringk < 1 || c->ringk > OC_CFG_RINGK_MAX)
        return oc_error(OC_ERR_INVALID_ARG, "cfg->ringk=%u: must be 1..%u", c->ringk,
                        OC_CFG_RINGK_MAX);
    if (c->spin_us > OC_CFG_SPIN_US_MAX)
        return oc_error(OC_ERR_INVALID_ARG, "cfg->spin_us=%u: at most %u", c->spin_us,
                        OC_CFG_SPIN_US_MAX);
    if (c->wait_help_us > OC_CFG_SPIN_US_MAX && c->wait_help_us != OC_WAIT_HELP_AUTO)
        return oc_error(OC_ERR_INVALID_ARG, "cfg->wait_help_us=%u: at most %u, or "
                        "OC_WAIT_HELP_AUTO", c->wait_help_us, OC_CFG_SPIN_US_MAX);
    if (c->warn_unknown != 0 && c->warn_unknown != 1)
        return oc_error(OC_ERR_INVALID_ARG, "cfg->warn_unknown=%d: must be 0 or 1",
                        c->warn_unknown);
    if (c->huge_buffers != 0 && c->huge_buffers != 1)
        return oc_error(OC_ERR_INVALID_ARG, "cfg->huge_buffers=%d: must be 0 or 1",
                        c->huge_buffers);
    if (c->verbose < 0 || c->verbose > OC_CFG_VERBOSE_MAX)
        return oc_error(OC_ERR_INVALID_ARG, "cfg->verbose=%d: must be 0..%d", c->verbose,
                        OC_CFG_VERBOSE_MAX);
    if (!(c->timeout_s >= 0 && c->timeout_s <= OC_CFG_TIMEOUT_MAX_S))
        return oc_error(OC_ERR_INVALID_ARG, "cfg->timeout_s=%g: must be 0 (no limit) to %g",
                        c->timeout_s, OC_CFG_TIMEOUT_MAX_S);
    if (memchr(c->progress_cpus, '\0', sizeof(c->progress_cpus)) == NULL)
        return oc_error(OC_ERR_INVALID_ARG, "cfg->progress_cpus is not a terminated string");
    return oc_config_check_cpus("cfg->progress_cpus", c->progress_cpus);
}

/* Engine context: the backend's control messages, by type. */
static void am_handler(void *arg, const void *data, size_t len)
{
    oc_notify_msg_t n;
    uint32_t type;
    if (len < sizeof(type))
        return;
    memcpy(&type, data, sizeof(type));
    if (type == OC_MSG_NOTIFY && len == sizeof(n)) {
        memcpy(&n, data, sizeof(n));
        oc_win_am_notify(arg, &n);
    } else {
        oc_diag_am_handler(arg, data, len);
    }
}

/* Large buffers on huge pages make cma's pinning cheap and the FIFO the
 * slower path: with transparent huge pages "always", Alltoall took
 * 0.79-1.31x MPI_Alltoall's time from 64 KB by cma, 0.82-1.84x through the
 * FIFO; on ordinary pages the FIFO took 0.53-0.90x, cma 1.01-1.08x. Where
 * the host is "madvise", only buffers so advised get them: P3DFFT's offload
 * took 0.87-0.93x the FIFO's time by cma on its advised buffers at N = 256,
 * and 1.02-1.06x on a host set to "never", where the advice is ignored
 * (2-vCPU VM: docs/performance.md, "cma on huge pages"; p3dfft_patch/
 * README.md, "Measured"). */
static void intranode_auto(oc_config_t *c)
{
    static const char *const thp_names[] = {"never", "madvise", "always"};
    oc_pe_thp_t thp = oc_pe_host_thp("");
    int huge = thp == OC_PE_THP_ALWAYS || (thp == OC_PE_THP_MADVISE && c->huge_buffers);
    c->intranode = huge ? OC_INTRANODE_CMA : OC_INTRANODE_SHM;
    oc_notice(c->verbose, "OC_INTRANODE=auto: %s (transparent huge pages \"%s\", "
              "OC_HUGE_BUFFERS=%d)", oc_intranode_name(c->intranode), thp_names[thp],
              c->huge_buffers);
}

/* Picks the backend; fills ctx->backend_info with what and why. auto takes
 * verbs wherever an RDMA device opens and sets up, UCX otherwise. */
static oc_status_t open_backend(oc_context_t *ctx)
{
    char info[320];
    oc_nic_params_t params = {ctx->cfg.verbose, ctx->cfg.intranode == OC_INTRANODE_LOOPBACK,
                              ctx->cfg.intranode == OC_INTRANODE_CMA};
    oc_status_t st = OC_ERR_UNAVAILABLE;

    if (ctx->cfg.backend != OC_BACKEND_UCX) {
        st = oc_nic_verbs_create(&params, &ctx->nic, info, sizeof(info));
        /* A malformed OC_VERBS_* variable, or a device that opened on a
         * host out of memory: neither is a reason to take UCX instead. */
        if (st == OC_ERR_INVALID_ARG || st == OC_ERR_NO_MEMORY)
            return oc_error(st, "%s", info);
        if (st != OC_OK && ctx->cfg.backend == OC_BACKEND_VERBS)
            return oc_error(st == OC_ERR_UNAVAILABLE ? st : OC_ERR_BACKEND,
                            "OC_BACKEND=verbs: verbs backend unavailable: %s", info);
    }
    if (st == OC_OK) {
        snprintf(ctx->backend_info, sizeof(ctx->backend_info), "verbs: %s", info);
        oc_notice(ctx->cfg.verbose, "using verbs: %s", info);
    } else {
        st = oc_nic_ucx_create(&params, &ctx->nic);
        if (st != OC_OK)
            return st;
        if (ctx->cfg.backend == OC_BACKEND_UCX)
            snprintf(ctx->backend_info, sizeof(ctx->backend_info), "ucx %s (OC_BACKEND=ucx)",
                     oc_nic_ucx_version());
        else {
            snprintf(ctx->backend_info, sizeof(ctx->backend_info), "ucx %s (verbs: %s)",
                     oc_nic_ucx_version(), info);
            oc_notice(ctx->cfg.verbose, "using UCX: verbs unavailable: %s", info);
        }
    }
    ctx->nic->am_cb = am_handler;
    ctx->nic->am_arg = ctx;
    return OC_OK;
}

oc_status_t oc_init(const oc_config_t *cfg, oc_context_t **out)
{
    oc_context_t *ctx;
    oc_status_t st;

    if (out == NULL)
        return oc_error(OC_ERR_INVALID_ARG, "oc_init: ctx is NULL");
    *out = NULL;
    ctx = calloc(1, sizeof(*ctx));
    if (ctx == NULL)
        return oc_error(OC_ERR_NO_MEMORY, "oc_init: context");
    if (cfg != NULL)
        ctx->cfg = *cfg;
    st = cfg != NULL ? check_config(cfg) : oc_config_init(&ctx->cfg);
    if (st != OC_OK) {
        free(ctx);
        return st;
    }
    oc_config_warn_unknown(&ctx->cfg);
    ctx->intranode_auto = ctx->cfg.intranode == OC_INTRANODE_AUTO;
    if (ctx->intranode_auto)
        intranode_auto(&ctx->cfg);
    pthread_mutex_init(&ctx->teams_lock, NULL);
    st = open_backend(ctx);
    if (st == OC_OK)
        st = oc_pe_create(ctx->nic, ctx->cfg.progress, ctx->cfg.spin_us,
                          oc_config_wait_help_us(&ctx->cfg), ctx->cfg.progress_cpus, &ctx->pe);
    if (st != OC_OK) {
        pthread_mutex_destroy(&ctx->teams_lock);
        free(ctx);
        return st;
    }
    *out = ctx;
    return OC_OK;
}

struct oc_later {
    struct oc_later *next;
    void (*release)(void *ptr);
    void *ptr;
};

void oc_ctx_release_later(oc_context_t *ctx, void (*release)(void *ptr), void *ptr)
{
    struct oc_later *l;
    if (ptr == NULL || (l = malloc(sizeof(*l))) == NULL)
        return;
    l->release = release;
    l->ptr = ptr;
    pthread_mutex_lock(&ctx->teams_lock);
    l->next = ctx->later;
    ctx->later = l;
    pthread_mutex_unlock(&ctx->teams_lock);
}

/* Requests not freed on ctx's teams, not counting each team's own
 * (gather_req). Counted per team only, so that calls on different teams
 * share no counter. */
static int requests_left(oc_context_t *ctx)
{
    size_t i;
    int n = 0;
    pthread_mutex_lock(&ctx->teams_lock);
    for (i = 0; i < ctx->teams_cap; i++)
        if (ctx->teams[i] != NULL)
            n += atomic_load(&ctx->teams[i]->nrequests) - 1;
    pthread_mutex_unlock(&ctx->teams_lock);
    return n;
}

oc_status_t oc_finalize(oc_context_t *ctx)
{
    int nt, nr;

    if (ctx == NULL)
        return oc_error(OC_ERR_INVALID_ARG, "oc_finalize: ctx is NULL");
    nt = atomic_load(&ctx->nteams);
    nr = requests_left(ctx);
    if (nt > 0 || nr > 0)
        return oc_error(OC_ERR_BUSY, "oc_finalize: %d team(s) and %d request(s) not freed", nt,
                        nr);
    oc_pe_destroy(ctx->pe); /* and with it the backend */
    while (ctx->later != NULL) {
        struct oc_later *l = ctx->later;
        ctx->later = l->next;
        l->release(l->ptr);
        free(l);
    }
    oc_ep_cache_clear(&ctx->ep_cache);
    pthread_mutex_destroy(&ctx->teams_lock);
    free(ctx->teams);
    free(ctx);
    return OC_OK;
}

oc_status_t oc_context_config(const oc_context_t *ctx, oc_config_t *cfg)
{
    if (ctx == NULL || cfg == NULL)
        return oc_error(OC_ERR_INVALID_ARG, "oc_context_config: %s is NULL",
                        ctx ? "cfg" : "ctx");
    *cfg = ctx->cfg;
    return OC_OK;
}

oc_status_t oc_context_stats(const oc_context_t *ctx, oc_stats_t *stats)
{
    if (ctx == NULL || stats == NULL)
        return oc_error(OC_ERR_INVALID_ARG, "oc_context_stats: %s is NULL",
                        ctx ? "stats" : "ctx");
    oc_pe_stats(ctx->pe, stats);
    return OC_OK;
}

const char *oc_context_progress_info(const oc_context_t *ctx)
{
    return ctx != NULL ? oc_pe_info(ctx->pe) : "";
}

const char *oc_context_backend_info(const oc_context_t *ctx)
{
    return ctx != NULL ? ctx->backend_info : "";
}

oc_team_t *oc_ctx_team_get(oc_context_t *ctx, uint32_t id)
{
    oc_team_t *t = NULL;
    pthread_mutex_lock(&ctx->teams_lock);
    if (id < ctx->teams_cap)
        t = ctx->teams[id];
    pthread_mutex_unlock(&ctx->teams_lock);
    return t;
}
