/*
 * UCX (UCP) backend. One worker in serialized mode: made on the application
 * thread, then driven only by the thread that holds the engine: the
 * progress thread, or a waiting application thread that helps it, or
 * inline any caller, one at a time under the engine's lock. Tag
 * send/receive carry the collectives, RMA puts into memory that UCX
 * allocated carry one-sided data; the trigger of a list is its completion
 * counter reaching zero.
 * Control messages (notifications among them) travel as UCP active messages
 * and are delivered after ucp_worker_progress() returns, so that handlers
 * may send. A notification goes out once an endpoint flush has completed
 * the puts before it: UCX 1.13 has no fence that orders across lanes.
 *
 * Endpoints report a peer's failure (UCP_ERR_HANDLING_MODE_PEER): UCX then
 * ends the sends, puts and flushes through the endpoint itself, but not the
 * receives, which belong to the worker; those are found through the lists
 * still in flight (nic->lists) and ended in ucx_transfer.c.
 *
 * This file: the worker, its set-up, progress and tear-down, endpoints.
 */
#include "ucx_internal.h"
#include "oc_error.h"
#include "oc_sync.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* Transports of OC_INTRANODE=loopback: every network one, no shared memory. */
#define LOOPBACK_TLS "^sm"

/* How often UCX checks that a peer is still there. Over shared memory no
 * message fails when a peer dies: only this check (is its process alive?)
 * notices, so it bounds how long a transfer with a dead peer waits. Each
 * round wakes the progress thread once and looks at each endpoint's
 * process. UCX's own default is 20 s. */
#define KEEPALIVE_INTERVAL "1s"

/* The shared-memory transports' fragment size; UCX's is 8 KB. A rendezvous
 * through the FIFO moves a message in fragments, each one handshake of
 * cache lines between the two processes: four times fewer of them took
 * 0.63-0.78x the time from 64 KB on the 2-vCPU VM whose vCPUs shared no
 * cache (docs/performance.md, "Fragments of 32 KB"), and messages up to
 * 32 KB go eagerly. UCX 1.13 fails an assertion on the fragment length from
 * 64 KB. */
#define MM_SEG_SIZE "32k"

/* A buffer a dropped message was still arriving into: kept until the worker
 * is destroyed (a matched receive cannot be cancelled). */
struct late_buf {
    struct late_buf *next;
    max_align_t data[];
};

/* Sets a UCX variable unless the user has set one of env (NULL-terminated). */
static ucs_status_t config_default(ucp_config_t *config, const char *name, const char *value,
                                   const char *const *env)
{
    ucs_status_t st;
    for (; *env != NULL; env++)
        if (getenv(*env) != NULL)
            return UCS_OK;
    st = ucp_config_modify(config, name, value);
    /* A UCX without the setting runs as before, only without its help. */
    return st == UCS_ERR_NO_ELEM ? UCS_OK : st;
}

/* Whether the transport list tls (UCX_TLS syntax; NULL: all) takes a
 * transport that one of names (NULL-terminated: the transport and the
 * aliases that include it) names. */
static int tls_has(const char *tls, const char *const *names)
{
    char buf[256], *tok, *save = NULL;
    int negated, named = 0;
    const char *const *n;

    if (tls == NULL)
        return 1;
    negated = tls[0] == '^';
    snprintf(buf, sizeof(buf), "%s", tls + negated);
    for (tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save))
        for (n = names; *n != NULL; n++)
            named |= strcmp(tok, *n) == 0;
    return named != negated;
}

/* What offcoll changes in UCX's configuration where the user has not
 * (offload/ucx/README.md lists it). UCX 1.13 gives an endpoint with peer
 * error handling only transports that claim to detect a peer's failure; as
 * shipped, sysv and posix do not, so the endpoint to a process on this host
 * would be TCP over loopback. The claim is sound here: a shared-memory peer
 * counts as failed only once its process is gone (the keepalive looks at the
 * process). cma, which such endpoints refuse for rendezvous (its memory
 * domain cannot invalidate a key), stays refused: a rendezvous through the
 * shared-memory FIFO took 0.5-0.9x the time of cma's kernel copy on the
 * 2-vCPU VMs (offload/ucx/README.md). With OC_INTRANODE=cma (cma: 1) cma's
 * memory domain claims key invalidation, as sound as the other claim, and
 * rendezvous go by its kernel copy, which pins every page of the peer's
 * buffer: cheap on huge pages (P3DFFT's work buffers: transforms in
 * 0.87-0.93x the FIFO's time, p3dfft_patch/README.md). The FIFO's
 * fragments are MM_SEG_SIZE. */
static ucs_status_t config_defaults(ucp_config_t *config, const char *tls, int cma)
{
    static const char *const mm_env[] = {"UCX_MM_ERROR_HANDLING", "UCX_SYSV_ERROR_HANDLING",
                                         "UCX_POSIX_ERROR_HANDLING", NULL};
    static const char *const seg_env[] = {"UCX_MM_SEG_SIZE", "UCX_SYSV_SEG_SIZE",
                                          "UCX_POSIX_SEG_SIZE", NULL};
    static const char *const ka_env[] = {"UCX_KEEPALIVE_INTERVAL", NULL};
    static const char *const inv_env[] = {"UCX_CMA_MEMORY_INVALIDATE", "UCX_MEMORY_INVALIDATE",
                                          NULL};
    static const char *const mm_names[] = {"all", "sm", "shm", "mm", "sysv", "posix", NULL};
    /* A setting no transport takes earns a UCX warning at every start. */
    int mm = tls_has(tls, mm_names);
    ucs_status_t st = UCS_OK;
    if (mm)
        st = config_default(config, "MM_ERROR_HANDLING", "y", mm_env);
    if (st == UCS_OK && mm)
        st = config_default(config, "MM_SEG_SIZE", MM_SEG_SIZE, seg_env);
    if (st == UCS_OK)
        st = config_default(config, "KEEPALIVE_INTERVAL", KEEPALIVE_INTERVAL, ka_env);
    /* as "CMA_MEMORY_INVALIDATE" it does not reach the memory domain in 1.13.1 */
    if (st == UCS_OK && cma)
        st = config_default(config, "MEMORY_INVALIDATE", "y", inv_env);
    return st;
}

oc_status_t ucx_error(const char *what, ucs_status_t st)
{
    return oc_error(OC_ERR_BACKEND, "ucx: %s failed: %s", what, ucs_status_string(st));
}

const char *oc_nic_ucx_version(void)
{
    return ucp_get_version_string();
}

/* ---- worker ------------------------------------------------------------------ */

static unsigned ucx_progress(oc_nic_t *base)
{
    nic_ucx_t *nic = (nic_ucx_t *)base;
    unsigned n = ucp_worker_progress(nic->worker);
    n += ucx_end_failed(nic);
    n += ucx_send_flushed(nic);
    return n + oc_nic_amq_deliver(&nic->am, &nic->base);
}

static oc_status_t ucx_arm(oc_nic_t *base)
{
    nic_ucx_t *nic = (nic_ucx_t *)base;
    ucs_status_t st;
    if (oc_nic_amq_busy(&nic->am) || nic->nflushed > 0 || nic->failing != NULL)
        return OC_ERR_BUSY;
    st = ucp_worker_arm(nic->worker);
    if (st == UCS_OK)
        return OC_OK;
    if (st == UCS_ERR_BUSY)
        return OC_ERR_BUSY;
    return ucx_error("ucp_worker_arm", st);
}

static int ucx_event_fd(oc_nic_t *base)
{
    return ((nic_ucx_t *)base)->efd;
}

static oc_status_t ucx_address(oc_nic_t *base, const void **addr, size_t *len)
{
    nic_ucx_t *nic = (nic_ucx_t *)base;
    *addr = nic->address;
    *len = nic->address_len;
    return OC_OK;
}

static oc_status_t ucx_connect(oc_nic_t *base, const void *addr, size_t len, oc_nic_ep_t **out)
{
    nic_ucx_t *nic = (nic_ucx_t *)base;
    ucp_ep_params_t params;
    struct oc_nic_ep *ep;
    ucs_status_t st;
    (void)len;

    ep = calloc(1, sizeof(*ep));
    if (ep == NULL)
        return oc_error(OC_ERR_NO_MEMORY, "ucx: endpoint");
    ep->nic = nic;
    ep->failed = UCS_OK;
    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                        UCP_EP_PARAM_FIELD_ERR_HANDLER;
    params.address = addr;
    /* Without it a peer's death goes unnoticed: what waits on it waits
     * until OC_TIMEOUT_S, and the endpoint's close cannot be forced. */
    params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    params.err_handler.cb = ucx_ep_error_cb;
    params.err_handler.arg = ep;
    st = ucp_ep_create(nic->worker, &params, &ep->ep);
    if (st != UCS_OK) {
        free(ep);
        return ucx_error("ucp_ep_create", st);
    }
    ep->next = nic->eps;
    nic->eps = ep;
    *out = ep;
    return OC_OK;
}

static void ucx_describe_ep(oc_nic_t *base, oc_nic_ep_t *ep, FILE *out)
{
    (void)base;
    ucp_ep_print_info(ep->ep, out);
}

/* The transports of ep's lanes, from UCX's own description of it (1.13 has no
 * query for them): "sysv/memory.0+cma/memory.0". */
static void ucx_ep_transports(oc_nic_t *base, oc_nic_ep_t *ep, char *buf, size_t size)
{
    char *text = NULL, *line, *save = NULL;
    size_t len = 0, used = 0;
    FILE *f = open_memstream(&text, &len);

    (void)base;
    if (size > 0)
        buf[0] = '\0';
    if (f == NULL)
        return;
    ucp_ep_print_info(ep->ep, f);
    fclose(f);
    for (line = strtok_r(text, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
        char tl[64];
        const char *p = strstr(line, "lane[");
        if (p == NULL || (p = strchr(p, ':')) == NULL || sscanf(p + 1, " %*d:%63s", tl) != 1)
            continue;
        if (strstr(buf, tl) == NULL && used + strlen(tl) + 2 < size)
            used += (size_t)snprintf(buf + used, size - used, "%s%s", used ? "+" : "", tl);
    }
    free(text);
}

/* Waits for a close or flush request until the deadline, then cancels it;
 * its status (UCS_INPROGRESS: it did not end in time). */
static ucs_status_t finish_request(nic_ucx_t *nic, void *req, double deadline)
{
    ucs_status_t st;
    if (!UCS_PTR_IS_PTR(req))
        return UCS_PTR_STATUS(req);
    while (ucp_request_check_status(req) == UCS_INPROGRESS && oc_time_now() < deadline)
        ucp_worker_progress(nic->worker);
    if ((st = ucp_request_check_status(req)) == UCS_INPROGRESS)
        ucp_request_cancel(nic->worker, req);
    ucp_request_free(req);
    return st;
}

static void drop_rkeys(nic_ucx_t *nic)
{
    while (nic->rkeys != NULL)
        ucx_rkey_destroy(&nic->base, nic->rkeys);
}

/* The keys of windows abandoned after a failure. UCX wants a key destroyed
 * once the puts using it are flushed and before its endpoint is: so flush
 * first, for a second (a peer that is gone never acknowledges). Should that
 * not end, the keys go after the endpoints' close instead: ucp_rkey_destroy
 * only hands the key back to the worker, and the worker's destruction then
 * purges the puts without reading it. */
static void flush_for_rkeys(nic_ucx_t *nic)
{
    ucp_request_param_t param;
    if (nic->rkeys == NULL)
        return;
    memset(&param, 0, sizeof(param));
    if (finish_request(nic, ucp_worker_flush_nbx(nic->worker, &param), oc_time_now() + 1.0) ==
        UCS_OK)
        drop_rkeys(nic);
}

/* Closes every endpoint: flush first, so that peers get what was sent; after a
 * grace period (a peer that is gone never acknowledges) force the rest. The
 * closes run side by side; without memory for their list, one after another. */
static void close_eps(nic_ucx_t *nic)
{
    struct oc_nic_ep *ep;
    size_t n = 0, i;
    void **reqs;
    double deadline = oc_time_now() + 2.0;
    ucp_request_param_t param;

    for (ep = nic->eps; ep != NULL; ep = ep->next)
        n++;
    reqs = calloc(n ? n : 1, sizeof(*reqs));
    memset(&param, 0, sizeof(param));
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    for (ep = nic->eps, i = 0; ep != NULL; ep = ep->next, i++) {
        void *r;
        /* A failed endpoint has nothing left to flush: UCX wants it forced. */
        param.flags = ep->failed != UCS_OK ? UCP_EP_CLOSE_FLAG_FORCE : 0;
        r = ucp_ep_close_nbx(ep->ep, &param);
        if (reqs != NULL)
            reqs[i] = r;
        else
            finish_request(nic, r, deadline);
    }
    for (i = 0; reqs != NULL && i < n; i++)
        finish_request(nic, reqs[i], deadline);
    free(reqs);
    nic->failing = NULL; /* failures seen while closing end nothing more */
    while ((ep = nic->eps) != NULL) {
        nic->eps = ep->next;
        free(ep);
    }
}

/* Messages of operations that timed out never find their receive; take them
 * off the worker so that it is destroyed clean. */
static void drop_unexpected(nic_ucx_t *nic)
{
    ucp_tag_recv_info_t info;
    ucp_tag_message_h msg;
    ucp_request_param_t param;
    double deadline = oc_time_now() + 1.0;
    size_t dropped = 0;

    memset(&param, 0, sizeof(param));
    while ((msg = ucp_tag_probe_nb(nic->worker, 0, 0, 1, &info)) != NULL) {
        struct late_buf *buf = malloc(sizeof(*buf) + (info.length ? info.length : 1));
        void *r = buf ? ucp_tag_msg_recv_nbx(nic->worker, buf->data, info.length, msg, &param)
                      : NULL;
        int writing = 0;
        if (UCS_PTR_IS_PTR(r)) {
            while (ucp_request_check_status(r) == UCS_INPROGRESS && oc_time_now() < deadline)
                ucp_worker_progress(nic->worker);
            writing = ucp_request_check_status(r) == UCS_INPROGRESS;
            ucp_request_free(r); /* it goes on internally: buf stays until the worker goes */
        }
        if (writing) {
            buf->next = nic->late;
            nic->late = buf;
        } else {
            free(buf);
        }
        dropped++;
    }
    oc_notice(nic->verbose && dropped, "dropped %zu message(s) of unfinished operations", dropped);
}

static void ucx_destroy(oc_nic_t *base)
{
    nic_ucx_t *nic = (nic_ucx_t *)base;
    if (nic == NULL)
        return;
    if (nic->worker != NULL) {
        flush_for_rkeys(nic);
        drop_unexpected(nic);
        close_eps(nic);
        drop_rkeys(nic);
        oc_nic_amq_deliver(&nic->am, &nic->base);
        if (nic->address != NULL)
            ucp_worker_release_address(nic->worker, nic->address);
        ucp_worker_destroy(nic->worker);
    }
    free(nic->lists); /* after the worker: its destruction may end requests */
    free(nic->flushed);
    oc_nic_amq_fini(&nic->am);
    while (nic->late != NULL) {
        struct late_buf *b = nic->late;
        nic->late = b->next;
        free(b);
    }
    /* Windows abandoned after a failure: peers' late puts (emulated ones land
     * in this worker's progress) could reach them until the worker was gone. */
    while (nic->mems != NULL)
        ucx_mem_free(base, nic->mems);
    if (nic->context != NULL)
        ucp_cleanup(nic->context);
    free(nic);
}

static const oc_nic_ops_t ucx_ops = {
    .destroy = ucx_destroy,
    .address = ucx_address,
    .connect = ucx_connect,
    .post_list = ucx_post_list,
    .cancel_list = ucx_cancel_list,
    .progress = ucx_progress,
    .arm = ucx_arm,
    .event_fd = ucx_event_fd,
    .am_send = ucx_am_send,
    .describe_ep = ucx_describe_ep,
    .ep_transports = ucx_ep_transports,
    .mem_alloc = ucx_mem_alloc,
    .mem_free = ucx_mem_free,
    .mem_pack = ucx_mem_pack,
    .rkey_unpack = ucx_rkey_unpack,
    .rkey_ptr = ucx_rkey_ptr,
    .rkey_destroy = ucx_rkey_destroy,
};

oc_status_t oc_nic_ucx_create(const oc_nic_params_t *params, oc_nic_t **out)
{
    ucp_params_t cp;
    ucp_worker_params_t wp;
    ucp_am_handler_param_t ap;
    ucp_config_t *config;
    nic_ucx_t *nic;
    ucs_status_t st;

    nic = calloc(1, sizeof(*nic));
    if (nic == NULL)
        return oc_error(OC_ERR_NO_MEMORY, "ucx: backend");
    nic->base.ops = &ucx_ops;
    nic->efd = -1;
    nic->verbose = params->verbose;
    /* Room for the lists and notifications in flight of a usual run, so that
     * posting needs no memory: a list that fails for want of it cannot tell
     * its peers, who wait for it until their timeout. */
    nic->lists_cap = nic->flushed_cap = 16;
    nic->lists = calloc(nic->lists_cap, sizeof(*nic->lists));
    nic->flushed = calloc(nic->flushed_cap, sizeof(*nic->flushed));
    if (oc_nic_amq_init(&nic->am) != OC_OK || nic->lists == NULL || nic->flushed == NULL) {
        ucx_destroy(&nic->base);
        return oc_error(OC_ERR_NO_MEMORY, "ucx: backend");
    }

    st = ucp_config_read(NULL, NULL, &config);
    if (st != UCS_OK) {
        ucx_destroy(&nic->base);
        return ucx_error("ucp_config_read", st);
    }
    if (params->intranode_loopback) {
        /* Without shared-memory transports, a peer on this host is reached
         * like a remote one: through the NIC's loopback (TCP here). */
        oc_notice(params->verbose && getenv("UCX_TLS") != NULL,
                  "OC_INTRANODE=loopback overrides UCX_TLS=%s", getenv("UCX_TLS"));
        st = ucp_config_modify(config, "TLS", LOOPBACK_TLS);
        if (st != UCS_OK) {
            ucp_config_release(config);
            ucx_destroy(&nic->base);
            return ucx_error("ucp_config_modify(TLS=" LOOPBACK_TLS ")", st);
        }
    }
    st = config_defaults(config, params->intranode_loopback ? LOOPBACK_TLS : getenv("UCX_TLS"),
                         params->intranode_cma);
    if (st != UCS_OK) {
        ucp_config_release(config);
        ucx_destroy(&nic->base);
        return ucx_error("ucp_config_modify (offcoll's defaults)", st);
    }
    memset(&cp, 0, sizeof(cp));
    cp.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
    cp.features = UCP_FEATURE_TAG | UCP_FEATURE_AM | UCP_FEATURE_RMA | UCP_FEATURE_WAKEUP;
    cp.mt_workers_shared = 0;
    st = ucp_init(&cp, config, &nic->context);
    ucp_config_release(config);
    if (st != UCS_OK) {
        ucx_destroy(&nic->base);
        return ucx_error("ucp_init", st);
    }

    memset(&wp, 0, sizeof(wp));
    wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    /* Made here, then used by whichever thread holds the engine (the
     * progress thread, a waiter that helps it, an inline caller): one at a
     * time. */
    wp.thread_mode = UCS_THREAD_MODE_SERIALIZED;
    st = ucp_worker_create(nic->context, &wp, &nic->worker);
    if (st != UCS_OK) {
        nic->worker = NULL;
        ucx_destroy(&nic->base);
        return ucx_error("ucp_worker_create", st);
    }
    st = ucp_worker_get_address(nic->worker, &nic->address, &nic->address_len);
    if (st == UCS_OK)
        st = ucp_worker_get_efd(nic->worker, &nic->efd);
    if (st == UCS_OK) {
        memset(&ap, 0, sizeof(ap));
        ap.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                        UCP_AM_HANDLER_PARAM_FIELD_ARG;
        ap.id = AM_ID_CONTROL;
        ap.cb = ucx_am_recv_cb;
        ap.arg = nic;
        st = ucp_worker_set_am_recv_handler(nic->worker, &ap);
    }
    if (st != UCS_OK) {
        ucx_destroy(&nic->base);
        return ucx_error("worker set-up", st);
    }
    *out = &nic->base;
    return OC_OK;
}
