/*
 * Task lists on UCX: tag sends and receives, RMA puts and the notifications
 * after them, each counted in its list until it completes; control messages
 * as UCP active messages. A peer's failure ends what waits on it here.
 */
#include "ucx_internal.h"
#include "oc_error.h"

#include <stdlib.h>
#include <string.h>

/* Tag: [63..48] team id at the receiver, [47..20] operation number,
 * [19..0] sender's rank in the team. */
#define TAG_TEAM_SHIFT 48
#define TAG_SEQ_SHIFT  20
#define TAG_SEQ_MASK   ((1u << (TAG_TEAM_SHIFT - TAG_SEQ_SHIFT)) - 1u)
_Static_assert(OC_NIC_MAX_RANKS <= (1u << TAG_SEQ_SHIFT), "a rank fits below the seq field");
_Static_assert(TAG_TEAM_SHIFT - TAG_SEQ_SHIFT >= OC_NIC_SEQ_BITS, "the seq field's width");
_Static_assert(OC_NIC_MAX_TEAM_ID < (1u << (64 - TAG_TEAM_SHIFT)), "a team id fits the tag");

static inline uint64_t make_tag(uint32_t team_id, uint32_t seq, int rank)
{
    return ((uint64_t)team_id << TAG_TEAM_SHIFT) |
           ((uint64_t)(seq & TAG_SEQ_MASK) << TAG_SEQ_SHIFT) | (uint64_t)rank;
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
 * ended after this progress (ucx_end_failed). Once per endpoint. */
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
unsigned ucx_send_flushed(nic_ucx_t *nic)
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

void ucx_cancel_list(oc_nic_t *base, oc_nic_list_t *list, oc_status_t why)
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

oc_status_t ucx_post_list(oc_nic_t *base, oc_nic_list_t *list)
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
void ucx_ep_error_cb(void *arg, ucp_ep_h uep, ucs_status_t st)
{
    (void)uep;
    ep_failed(arg, st);
}

unsigned ucx_end_failed(nic_ucx_t *nic)
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

ucs_status_t ucx_am_recv_cb(void *arg, const void *header, size_t header_length, void *data,
                            size_t length, const ucp_am_recv_param_t *param)
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

oc_status_t ucx_am_send(oc_nic_t *base, oc_nic_ep_t *ep, const void *data, size_t len)
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
