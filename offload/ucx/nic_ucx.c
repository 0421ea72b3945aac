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
 * still in flight (nic->lists) and ended here.
 */
#include "oc_nic.h"
#include "oc_error.h"
#include "oc_list.h"
#include "oc_sync.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <ucp/api/ucp.h>

#define AM_ID_CONTROL 7

/* Transports of OC_INTRANODE=loopback: every network one, no shared memory. */
#define LOOPBACK_TLS "^sm"

/* How often UCX checks that a peer is still there. Over shared memory no
 * message fails when a peer dies: only this check (is its process alive?)
 * notices, so it bounds how long a transfer with a dead peer waits. Each
 * round wakes the progress thread once and looks at each endpoint's
 * process. UCX's own default is 20 s. */
#define KEEPALIVE_INTERVAL "1s"

/* Tag: [63..48] team id at the receiver, [47..20] operation number,
 * [19..0] sender's rank in the team. */
#define TAG_TEAM_SHIFT 48
#define TAG_SEQ_SHIFT  20
#define TAG_SEQ_MASK   ((1u << (TAG_TEAM_SHIFT - TAG_SEQ_SHIFT)) - 1u)
_Static_assert(OC_NIC_MAX_RANKS <= (1u << TAG_SEQ_SHIFT), "a rank fits below the seq field");
_Static_assert(TAG_TEAM_SHIFT - TAG_SEQ_SHIFT >= OC_NIC_SEQ_BITS, "the seq field's width");
_Static_assert(OC_NIC_MAX_TEAM_ID < (1u << (64 - TAG_TEAM_SHIFT)), "a team id fits the tag");

struct oc_nic_ep {
    ucp_ep_h ep;
    struct oc_nic_ep *next;
    struct nic_ucx *nic;
    ucs_status_t failed;            /* UCS_OK while the peer is reachable */
    struct oc_nic_ep *failed_next;  /* in nic->failing */
};

struct oc_nic_mem {
    ucp_mem_h memh;
    struct oc_nic_mem *next, **prev; /* in nic->mems */
};

struct oc_nic_rkey {
    ucp_rkey_h h;
    struct oc_nic_rkey *next, **prev; /* in nic->rkeys */
};

typedef struct nic_ucx {
    oc_nic_t base;
    ucp_context_h context;
    ucp_worker_h worker;
    ucp_address_t *address;
    size_t address_len;
    int efd;
    int verbose;
    struct oc_nic_ep *eps;
    struct oc_nic_mem *mems;   /* not freed yet: destroy() unmaps what is left */
    struct oc_nic_rkey *rkeys; /* likewise, destroyed once no request uses them */
    oc_nic_amq_t am;           /* control messages to deliver */
    oc_nic_slot_t **flushed;   /* notifications whose flush completed, to send */
    size_t nflushed, flushed_cap;
    struct late_buf *late;     /* drop_unexpected()'s buffers still being written */
    oc_nic_list_t **lists;     /* posted and not done yet, in no order */
    size_t nlists, lists_cap;
    struct oc_nic_ep *failing; /* failed since the last progress: receives to end */
} nic_ucx_t;

/* A buffer a dropped message was still arriving into: kept until the worker
 * is destroyed (a matched receive cannot be cancelled). */
struct late_buf {
    struct late_buf *next;
    max_align_t data[];
};

static inline uint64_t make_tag(uint32_t team_id, uint32_t seq, int rank)
{
    return ((uint64_t)team_id << TAG_TEAM_SHIFT) |
           ((uint64_t)(seq & TAG_SEQ_MASK) << TAG_SEQ_SHIFT) | (uint64_t)rank;
}

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

/* Whether the transport list tls (UCX_TLS syntax; NULL: all) takes sysv or
 * posix. */
static int tls_has_mm(const char *tls)
{
    static const char *const names[] = {"all", "sm", "shm", "mm", "sysv", "posix"};
    char buf[256], *tok, *save = NULL;
    int negated, named = 0;
    size_t i;

    if (tls == NULL)
        return 1;
    negated = tls[0] == '^';
    snprintf(buf, sizeof(buf), "%s", tls + negated);
    for (tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save))
        for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
            named |= strcmp(tok, names[i]) == 0;
    return named != negated;
}

/* UCX 1.13 gives an endpoint with peer error handling only transports that
 * claim to detect a peer's failure; as shipped, sysv and posix do not, and
 * cma is refused for rendezvous because its memory domain cannot invalidate
 * a key. Without these, the endpoint to a process on this host would be
 * TCP over loopback. Both claims are sound here: a shared-memory peer
 * counts as failed only once its process is gone (the keepalive looks at
 * the process), and a process that is gone reads and writes nothing more. */
static ucs_status_t config_peer_errors(ucp_config_t *config, const char *tls)
{
    static const char *const mm_env[] = {"UCX_MM_ERROR_HANDLING", "UCX_SYSV_ERROR_HANDLING",
                                         "UCX_POSIX_ERROR_HANDLING", NULL};
    static const char *const inv_env[] = {"UCX_CMA_MEMORY_INVALIDATE", "UCX_MEMORY_INVALIDATE",
                                          NULL};
    static const char *const ka_env[] = {"UCX_KEEPALIVE_INTERVAL", NULL};
    ucs_status_t st = UCS_OK;
    /* A setting no transport takes earns a UCX warning at every start. */
    if (tls_has_mm(tls))
        st = config_default(config, "MM_ERROR_HANDLING", "y", mm_env);
    /* as "CMA_MEMORY_INVALIDATE" it does not reach the memory domain in 1.13.1 */
    if (st == UCS_OK)
        st = config_default(config, "MEMORY_INVALIDATE", "y", inv_env);
    if (st == UCS_OK)
        st = config_default(config, "KEEPALIVE_INTERVAL", KEEPALIVE_INTERVAL, ka_env);
    return st;
}

static oc_status_t ucx_error(const char *what, ucs_status_t st)
{
    return oc_error(OC_ERR_BACKEND, "ucx: %s failed: %s", what, ucs_status_string(st));
}

const char *oc_nic_ucx_version(void)
{
    return ucp_get_version_string();
}

/* ---- task completion ---------------------------------------------------- */

/* A list leaves nic->lists when it is done; few are in flight at once. */
static void list_forget(nic_ucx_t *nic, oc_nic_list_t *list)
{
    size_t i = nic->nlists;
    while (i-- > 0)
        if (nic->lists[i] == list) {
            nic->lists[i] = nic->lists[--nic->nlists];
            return;
        }
}

static void task_finished(oc_nic_slot_t *slot, oc_status_t status)
{
    oc_nic_list_t *list = slot->list;
    slot->handle = NULL;
    oc_nic_list_fail(list, status);
    if (--list->outstanding == 0) {
        list_forget((nic_ucx_t *)list->nic, list);
        list->done(list);
    }
}

/* The endpoint of t's peer; NULL for this process itself. */
static struct oc_nic_ep *task_ep(const oc_nic_list_t *list, const oc_task_t *t)
{
    const oc_nic_match_t *m = list->match;
    return t->peer == m->rank ? NULL : m->eps[t->peer];
}

static oc_status_t peer_failed(const oc_task_t *t, ucs_status_t why)
{
    return oc_error(OC_ERR_BACKEND, "ucx: a %s rank %d failed: the connection to it has failed "
                    "(%s)", oc_task_verb(t->type), t->peer, ucs_status_string(why));
}

/* A completion's status, with the reason in oc_last_error(). Once its list
 * is cancelled the owner may have freed the tasks (oc_nic.h): nothing of
 * them is read then. */
static oc_status_t slot_status(const oc_nic_slot_t *slot, ucs_status_t st)
{
    const oc_task_t *t;
    if (slot->list->cancelled)
        return OC_ERR_TIMEOUT;
    t = oc_nic_slot_task(slot);
    switch (st) {
    case UCS_OK: return OC_OK;
    /* Not our cancel (the list's is above): UCX's, of a rendezvous whose
     * peer failed, which the default case names. */
    case UCS_ERR_MESSAGE_TRUNCATED:
        return oc_error(OC_ERR_MISMATCH, "ucx: a receive of %zu bytes from rank %d met a "
                        "longer message", t->len, t->peer);
    default: {
        const struct oc_nic_ep *ep = task_ep(slot->list, t);
        if (ep != NULL && ep->failed != UCS_OK)
            return peer_failed(t, ep->failed);
        return oc_error(OC_ERR_BACKEND, "ucx: %s rank %d failed: %s", oc_task_verb(t->type),
                        t->peer, ucs_status_string(st));
    }
    }
}

static void send_cb(void *request, ucs_status_t st, void *user_data)
{
    ucp_request_free(request);
    task_finished(user_data, slot_status(user_data, st));
}

/* The sender's and receiver's sizes must agree: a shorter message is as much
 * a mismatch as a longer (truncated) one. */
static oc_status_t recv_status(const oc_nic_slot_t *slot, ucs_status_t st,
                               const ucp_tag_recv_info_t *info)
{
    const oc_task_t *t;
    if (st != UCS_OK || slot->list->cancelled)
        return slot_status(slot, st);
    t = oc_nic_slot_task(slot);
    if (info->length != t->len)
        return oc_error(OC_ERR_MISMATCH, "ucx: a receive of %zu bytes from rank %d met a "
                        "message of %zu bytes", t->len, t->peer, info->length);
    return OC_OK;
}

static void recv_cb(void *request, ucs_status_t st, const ucp_tag_recv_info_t *info,
                    void *user_data)
{
    oc_nic_slot_t *slot = user_data;
    ucp_request_free(request);
    task_finished(slot, recv_status(slot, st, info));
}

/* Marks a slot whose operation is being posted: the completion callback may
 * run inside the posting call (it does for receives with NO_IMM_CMPL). */
#define SLOT_POSTING ((void *)1)
/* Marks a notification whose flush completed: it waits in nic->flushed. */
#define SLOT_FLUSHED ((void *)2)


/* A notification's puts are remotely complete: queue it for sending after
 * the progress call (sending from inside a UCX callback is not safe). */
static void flush_notify_cb(void *request, ucs_status_t st, void *user_data)
{
    oc_nic_slot_t *slot = user_data;
    nic_ucx_t *nic = (nic_ucx_t *)slot->list->nic;
    ucp_request_free(request);
    /* A flush cannot be cancelled; once its list is, the notification (and
     * the endpoint it would take from the team) is not sent any more. */
    if (st != UCS_OK || slot->list->cancelled) {
        task_finished(slot, st != UCS_OK ? slot_status(slot, st) : OC_ERR_TIMEOUT);
        return;
    }
    if (nic->nflushed == nic->flushed_cap) {
        size_t ncap = 2 * nic->flushed_cap;
        oc_nic_slot_t **n = realloc(nic->flushed, ncap * sizeof(*n));
        if (n == NULL) {
            task_finished(slot, oc_error(OC_ERR_NO_MEMORY, "ucx: notification queue"));
            return;
        }
        nic->flushed = n;
        nic->flushed_cap = ncap;
    }
    slot->handle = SLOT_FLUSHED;
    nic->flushed[nic->nflushed++] = slot;
}

static ucs_status_ptr_t send_notify(oc_nic_slot_t *slot, ucp_request_param_t *param)
{
    const oc_task_t *t = oc_nic_slot_task(slot);
    param->cb.send = send_cb;
    param->op_attr_mask |= UCP_OP_ATTR_FIELD_FLAGS;
    param->flags = UCP_AM_SEND_FLAG_EAGER;
    return ucp_am_send_nbx(slot->list->match->eps[t->peer]->ep, AM_ID_CONTROL, NULL, 0, t->src,
                           t->len, param);
}

static void request_param(ucp_request_param_t *param, oc_nic_slot_t *slot)
{
    memset(param, 0, sizeof(*param));
    param->op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                          UCP_OP_ATTR_FIELD_DATATYPE;
    param->datatype = ucp_dt_make_contig(1);
    param->user_data = slot;
}

/* Statuses with which UCX says the peer of an endpoint is gone. */
static int peer_gone(ucs_status_t st)
{
    return st == UCS_ERR_ENDPOINT_TIMEOUT || st == UCS_ERR_CONNECTION_RESET ||
           st == UCS_ERR_UNREACHABLE || st == UCS_ERR_NOT_CONNECTED;
}

/* ep's peer has failed: nothing more is posted to it, and its receives are
 * ended after this progress (end_failed). Once per endpoint. */
static void ep_failed(struct oc_nic_ep *ep, ucs_status_t st)
{
    if (ep->failed != UCS_OK)
        return;
    ep->failed = st != UCS_OK ? st : UCS_ERR_ENDPOINT_TIMEOUT;
    ep->failed_next = ep->nic->failing;
    ep->nic->failing = ep;
}

/* Whether peer's message of m's operation waits among the unexpected ones. */
static int arrived(nic_ucx_t *nic, const oc_nic_match_t *m, int peer)
{
    ucp_tag_recv_info_t info; /* filled by UCX when found */
    return ucp_tag_probe_nb(nic->worker, make_tag(m->team_id, m->seq, peer), UINT64_MAX, 0,
                            &info) != NULL;
}

/* Posts one transfer, counted in list->outstanding until it finishes. */
static oc_status_t post_transfer(nic_ucx_t *nic, oc_nic_list_t *list, size_t i)
{
    const oc_task_t *t = &list->tasks[i];
    const oc_nic_match_t *m = list->match;
    oc_nic_slot_t *slot = &list->slots[i];
    struct oc_nic_ep *ep;
    ucp_request_param_t param;
    ucs_status_ptr_t sp;
    const char *what;

    slot->list = list;
    slot->handle = NULL;
    /* A send or receive to itself goes through UCX's self transport. */
    if (t->peer == m->rank && oc_nic_do_self(&nic->am, "ucx", t))
        return OC_OK;
    /* Only this task fails: the list's transfers with live peers go on, so
     * that those peers are not left waiting for them. A message the peer
     * sent before it died may be here already, though: its receive goes on. */
    ep = task_ep(list, t);
    if (ep != NULL && ep->failed != UCS_OK &&
        !(t->type == OC_TASK_RECV && arrived(nic, m, t->peer))) {
        oc_nic_list_fail(list, peer_failed(t, ep->failed));
        return OC_OK;
    }
    request_param(&param, slot);
    slot->handle = SLOT_POSTING;
    list->outstanding++;

    switch (t->type) {
    case OC_TASK_SEND:
        what = "ucp_tag_send_nbx";
        param.cb.send = send_cb;
        sp = ucp_tag_send_nbx(m->eps[t->peer]->ep, t->src, t->len,
                              make_tag(m->peer_team_ids[t->peer], m->seq, m->rank), &param);
        break;
    case OC_TASK_RECV:
        what = "ucp_tag_recv_nbx";
        /* Always complete through the callback: with UCX 1.13.1 here,
         * recv_info came back unfilled on immediate completion, and the
         * received length is what detects mismatched counts. */
        param.op_attr_mask |= UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
        param.cb.recv = recv_cb;
        sp = ucp_tag_recv_nbx(nic->worker, t->dst, t->len,
                              make_tag(m->team_id, m->seq, t->peer), UINT64_MAX, &param);
        break;
    case OC_TASK_PUT:
        what = "ucp_put_nbx";
        param.cb.send = send_cb;
        sp = ucp_put_nbx(m->eps[t->peer]->ep, t->src, t->len, t->raddr,
                         ((oc_nic_rkey_t *)t->obj)->h, &param);
        break;
    case OC_TASK_NOTIFY:
        what = "ucp_ep_flush_nbx";
        param.cb.send = flush_notify_cb;
        sp = ucp_ep_flush_nbx(m->eps[t->peer]->ep, &param);
        if (sp == NULL) { /* nothing to wait for: send at once */
            what = "ucp_am_send_nbx";
            request_param(&param, slot);
            sp = send_notify(slot, &param);
        }
        break;
    default: /* OC_TASK_FLUSH */
        what = "ucp_ep_flush_nbx";
        param.cb.send = send_cb;
        sp = ucp_ep_flush_nbx(m->eps[t->peer]->ep, &param);
        break;
    }
    if (UCS_PTR_IS_PTR(sp)) {
        if (slot->handle == SLOT_POSTING) /* else the callback already ran */
            slot->handle = sp;
        return OC_OK;
    }
    slot->handle = NULL;
    list->outstanding--;
    if (!UCS_PTR_IS_ERR(sp))
        return OC_OK;
    /* UCX may refuse a post with the peer's failure before it has called
     * the endpoint's error callback: the same failure, handled as above. */
    if (ep != NULL && peer_gone(UCS_PTR_STATUS(sp))) {
        ep_failed(ep, UCS_PTR_STATUS(sp));
        oc_nic_list_fail(list, peer_failed(t, ep->failed));
        return OC_OK;
    }
    return ucx_error(what, UCS_PTR_STATUS(sp));
}

/* After progress: notifications whose flush completed go out. */
static unsigned send_flushed(nic_ucx_t *nic)
{
    size_t i, n = nic->nflushed;
    ucp_request_param_t param;

    nic->nflushed = 0;
    for (i = 0; i < n; i++) {
        oc_nic_slot_t *slot = nic->flushed[i];
        const oc_task_t *t = oc_nic_slot_task(slot);
        const struct oc_nic_ep *ep = task_ep(slot->list, t); /* never NULL: self is local */
        ucs_status_ptr_t sp;
        if (ep->failed != UCS_OK) {
            task_finished(slot, peer_failed(t, ep->failed));
            continue;
        }
        request_param(&param, slot);
        slot->handle = SLOT_POSTING;
        sp = send_notify(slot, &param);
        if (UCS_PTR_IS_PTR(sp)) {
            if (slot->handle == SLOT_POSTING)
                slot->handle = sp;
        } else {
            task_finished(slot, UCS_PTR_IS_ERR(sp)
                                    ? ucx_error("ucp_am_send_nbx", UCS_PTR_STATUS(sp))
                                    : OC_OK);
        }
    }
    return (unsigned)n;
}

static void ucx_cancel_list(oc_nic_t *base, oc_nic_list_t *list, oc_status_t why)
{
    nic_ucx_t *nic = (nic_ucx_t *)base;
    size_t i, j, keep = 0;

    list->cancelled = 1;
    /* A queued notification is not sent any more. */
    for (j = 0; j < nic->nflushed; j++) {
        oc_nic_slot_t *slot = nic->flushed[j];
        if (slot->list == list)
            task_finished(slot, why);
        else
            nic->flushed[keep++] = slot;
    }
    nic->nflushed = keep;
    for (i = 0; i < list->ntasks; i++) {
        void *h = list->slots[i].handle;
        if (list->tasks[i].type != OC_TASK_COPY && h != NULL && h != SLOT_POSTING)
            ucp_request_cancel(nic->worker, h);
    }
}

static oc_status_t ucx_post_list(oc_nic_t *base, oc_nic_list_t *list)
{
    nic_ucx_t *nic = (nic_ucx_t *)base;
    oc_status_t st = OC_OK;
    size_t i;

    list->nic = base;
    list->status = OC_OK;
    list->cancelled = 0;
    /* Room first: a list in flight that a peer's failure could not find
     * would wait for its receives until it times out. */
    if (nic->nlists == nic->lists_cap) {
        size_t ncap = 2 * nic->lists_cap;
        oc_nic_list_t **n = realloc(nic->lists, ncap * sizeof(*n));
        if (n == NULL) {
            st = oc_error(OC_ERR_NO_MEMORY, "ucx: list of %zu lists in flight", ncap);
            oc_nic_list_fail(list, st);
            return st;
        }
        nic->lists = n;
        nic->lists_cap = ncap;
    }
    oc_task_do_copies(list->tasks, list->ntasks);

    /* One extra count, dropped after the loop, keeps done() from firing while
     * the list is still being posted. */
    list->outstanding = 1;
    for (i = 0; i < list->ntasks && st == OC_OK; i++)
        if (list->tasks[i].type != OC_TASK_COPY)
            st = post_transfer(nic, list, i);
    if (st != OC_OK) {
        /* Stop here; what was posted is cancelled and reports through done(). */
        oc_nic_list_fail(list, st);
        ucx_cancel_list(base, list, st);
    }
    if (--list->outstanding == 0)
        return list->status;
    nic->lists[nic->nlists++] = list;
    return OC_INPROGRESS;
}

/* UCX ends what goes through a failed endpoint, but a receive waits in the
 * worker for any sender: end those of ep's peer. Cancelling completes a
 * receive at once (recv_cb, here), and only its own list can become done
 * then, leaving nic->lists at that index: hence the walk from the end.
 * Cancelled lists are skipped (their tasks are no longer ours to read);
 * their receives are being cancelled already. A receive already matched,
 * its data coming by rendezvous, cannot be cancelled: UCX ends it through
 * the endpoint it reads from. */
static unsigned fail_receives(nic_ucx_t *nic, struct oc_nic_ep *ep)
{
    size_t l = nic->nlists, i;
    unsigned n = 0;

    while (l-- > 0) {
        oc_nic_list_t *list = nic->lists[l];
        if (list->cancelled)
            continue;
        for (i = 0; i < list->ntasks && l < nic->nlists && nic->lists[l] == list; i++) {
            const oc_task_t *t = &list->tasks[i];
            void *h = list->slots[i].handle;
            if (t->type != OC_TASK_RECV || h == NULL || h == SLOT_POSTING ||
                task_ep(list, t) != ep)
                continue;
            oc_nic_list_fail(list, peer_failed(t, ep->failed));
            ucp_request_cancel(nic->worker, h);
            n++;
        }
    }
    return n;
}

/* Runs inside ucp_worker_progress(): the receives are ended after it returns
 * (UCX calls are not made from inside its callbacks). From now on nothing is
 * posted to ep's peer. */
static void ep_error_cb(void *arg, ucp_ep_h uep, ucs_status_t st)
{
    (void)uep;
    ep_failed(arg, st);
}

static unsigned end_failed(nic_ucx_t *nic)
{
    unsigned n = 0;
    while (nic->failing != NULL) {
        struct oc_nic_ep *ep = nic->failing;
        unsigned k;
        nic->failing = ep->failed_next;
        k = fail_receives(nic, ep);
        if (k > 0)
            oc_warn("ucx: the connection to a peer failed (%s); %u receive(s) from it end "
                    "with an error", ucs_status_string(ep->failed), k);
        else
            oc_notice(nic->verbose, "ucx: the connection to a peer failed (%s)",
                      ucs_status_string(ep->failed));
        n += k + 1;
    }
    return n;
}

/* ---- control messages ------------------------------------------------------- */

static ucs_status_t am_recv_cb(void *arg, const void *header, size_t header_length,
                               void *data, size_t length, const ucp_am_recv_param_t *param)
{
    nic_ucx_t *nic = arg;
    (void)header;
    (void)header_length;
    if (!(param->recv_attr & UCP_AM_RECV_ATTR_FLAG_DATA) &&
        (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV))
        return UCS_OK; /* control messages are small; a rendezvous one is not ours */
    oc_nic_amq_push(&nic->am, "ucx", data, length);
    return UCS_OK;
}

static void am_send_cb(void *request, ucs_status_t st, void *user_data)
{
    (void)st;
    ucp_request_free(request);
    free(user_data);
}

static oc_status_t ucx_am_send(oc_nic_t *base, oc_nic_ep_t *ep, const void *data, size_t len)
{
    ucp_request_param_t param;
    ucs_status_ptr_t sp;
    void *copy;
    (void)base;
    if (ep->failed != UCS_OK)
        return oc_error(OC_ERR_BACKEND, "ucx: control message not sent: the connection to the "
                        "peer has failed (%s)", ucs_status_string(ep->failed));
    copy = malloc(len);
    if (copy == NULL)
        return oc_error(OC_ERR_NO_MEMORY, "ucx: control message of %zu bytes", len);
    memcpy(copy, data, len);
    memset(&param, 0, sizeof(param));
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                         UCP_OP_ATTR_FIELD_FLAGS;
    param.flags = UCP_AM_SEND_FLAG_EAGER;
    param.cb.send = am_send_cb;
    param.user_data = copy;
    sp = ucp_am_send_nbx(ep->ep, AM_ID_CONTROL, NULL, 0, copy, len, &param);
    if (sp == NULL) {
        free(copy);
        return OC_OK;
    }
    if (UCS_PTR_IS_ERR(sp)) {
        free(copy);
        return ucx_error("ucp_am_send_nbx", UCS_PTR_STATUS(sp));
    }
    return OC_OK;
}

/* ---- worker ------------------------------------------------------------------ */

static unsigned ucx_progress(oc_nic_t *base)
{
    nic_ucx_t *nic = (nic_ucx_t *)base;
    unsigned n = ucp_worker_progress(nic->worker);
    n += end_failed(nic);
    n += send_flushed(nic);
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
    params.err_handler.cb = ep_error_cb;
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

static oc_status_t ucx_mem_alloc(oc_nic_t *base, size_t size, oc_nic_mem_t **out, void **addr)
{
    nic_ucx_t *nic = (nic_ucx_t *)base;
    ucp_mem_map_params_t mp;
    ucp_mem_attr_t attr;
    oc_nic_mem_t *mem = calloc(1, sizeof(*mem));
    ucs_status_t st;

    if (mem == NULL)
        return oc_error(OC_ERR_NO_MEMORY, "ucx: memory handle");
    /* Memory UCX allocates itself is what shared-memory transports can map
     * into peers, so that a put there is the origin's copy alone. */
    memset(&mp, 0, sizeof(mp));
    mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                    UCP_MEM_MAP_PARAM_FIELD_FLAGS;
    mp.address = NULL;
    mp.length = size;
    mp.flags = UCP_MEM_MAP_ALLOCATE;
    st = ucp_mem_map(nic->context, &mp, &mem->memh);
    if (st != UCS_OK) {
        free(mem);
        return oc_error(OC_ERR_NO_MEMORY, "ucx: ucp_mem_map of %zu bytes failed: %s", size,
                        ucs_status_string(st));
    }
    attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS;
    st = ucp_mem_query(mem->memh, &attr);
    if (st != UCS_OK) {
        ucp_mem_unmap(nic->context, mem->memh);
        free(mem);
        return ucx_error("ucp_mem_query", st);
    }
    memset(attr.address, 0, size);
    OC_LIST_PUSH(&nic->mems, mem);
    *addr = attr.address;
    *out = mem;
    return OC_OK;
}

static void ucx_mem_free(oc_nic_t *base, oc_nic_mem_t *mem)
{
    if (mem == NULL)
        return;
    OC_LIST_REMOVE(mem);
    ucp_mem_unmap(((nic_ucx_t *)base)->context, mem->memh);
    free(mem);
}

static oc_status_t ucx_mem_pack(oc_nic_t *base, oc_nic_mem_t *mem, void **key, size_t *len)
{
    void *buf;
    ucs_status_t st = ucp_rkey_pack(((nic_ucx_t *)base)->context, mem->memh, &buf, len);
    if (st != UCS_OK)
        return ucx_error("ucp_rkey_pack", st);
    *key = malloc(*len ? *len : 1);
    if (*key != NULL)
        memcpy(*key, buf, *len);
    ucp_rkey_buffer_release(buf);
    return *key != NULL ? OC_OK : oc_error(OC_ERR_NO_MEMORY, "ucx: packed key");
}

static oc_status_t ucx_rkey_unpack(oc_nic_t *base, oc_nic_ep_t *ep, const void *key, size_t len,
                                   oc_nic_rkey_t **out)
{
    nic_ucx_t *nic = (nic_ucx_t *)base;
    oc_nic_rkey_t *rkey = calloc(1, sizeof(*rkey));
    ucs_status_t st;
    (void)len;
    if (rkey == NULL)
        return oc_error(OC_ERR_NO_MEMORY, "ucx: remote key");
    st = ucp_ep_rkey_unpack(ep->ep, key, &rkey->h);
    if (st != UCS_OK) {
        free(rkey);
        return ucx_error("ucp_ep_rkey_unpack", st);
    }
    OC_LIST_PUSH(&nic->rkeys, rkey);
    *out = rkey;
    return OC_OK;
}

static void ucx_rkey_destroy(oc_nic_t *base, oc_nic_rkey_t *rkey)
{
    (void)base;
    if (rkey == NULL)
        return;
    OC_LIST_REMOVE(rkey);
    ucp_rkey_destroy(rkey->h);
    free(rkey);
}

static void *ucx_rkey_ptr(oc_nic_t *base, oc_nic_rkey_t *rkey, uint64_t raddr)
{
    void *p;
    (void)base;
    return ucp_rkey_ptr(rkey->h, raddr, &p) == UCS_OK ? p : NULL;
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
    st = config_peer_errors(config, params->intranode_loopback ? LOOPBACK_TLS : getenv("UCX_TLS"));
    if (st != UCS_OK) {
        ucp_config_release(config);
        ucx_destroy(&nic->base);
        return ucx_error("ucp_config_modify (peer error handling)", st);
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
        ap.cb = am_recv_cb;
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
