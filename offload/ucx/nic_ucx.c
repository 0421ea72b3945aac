/*
 * UCX (UCP) backend. One worker in single-thread mode, driven only by the
 * thread that owns the backend instance. Tag send/receive carry the
 * collectives; the trigger of a list is its completion counter reaching
 * zero. Control messages travel as UCP active messages and are delivered
 * after ucp_worker_progress() returns, so that handlers may send.
 */
#include "oc_nic.h"
#include "oc_error.h"
#include "oc_sync.h"

#include <stdlib.h>
#include <string.h>
#include <ucp/api/ucp.h>

#define AM_ID_CONTROL 7

/* Tag: [63..48] team id at the receiver, [47..20] operation number,
 * [19..0] sender's rank in the team. */
#define TAG_TEAM_SHIFT 48
#define TAG_SEQ_SHIFT  20

struct oc_nic_ep {
    ucp_ep_h ep;
    struct oc_nic_ep *next;
};

typedef struct am_msg {
    struct am_msg *next;
    size_t len;
    char data[];
} am_msg_t;

typedef struct {
    oc_nic_t base;
    ucp_context_h context;
    ucp_worker_h worker;
    ucp_address_t *address;
    size_t address_len;
    int efd;
    int verbose;
    struct oc_nic_ep *eps;
    am_msg_t *am_head, **am_tail;
} nic_ucx_t;

static inline uint64_t make_tag(uint32_t team_id, uint32_t seq, int rank)
{
    return ((uint64_t)team_id << TAG_TEAM_SHIFT) |
           ((uint64_t)(seq & OC_NIC_SEQ_MASK) << TAG_SEQ_SHIFT) | (uint64_t)rank;
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

static void task_finished(oc_nic_slot_t *slot, oc_status_t status)
{
    oc_nic_list_t *list = slot->list;
    slot->handle = NULL;
    if (status != OC_OK && list->status == OC_OK)
        list->status = status;
    if (--list->outstanding == 0)
        list->done(list);
}

static oc_status_t map_status(ucs_status_t st)
{
    switch (st) {
    case UCS_OK: return OC_OK;
    case UCS_ERR_CANCELED: return OC_ERR_TIMEOUT;
    case UCS_ERR_MESSAGE_TRUNCATED: return OC_ERR_MISMATCH;
    default: return OC_ERR_BACKEND;
    }
}

static void send_cb(void *request, ucs_status_t st, void *user_data)
{
    ucp_request_free(request);
    task_finished(user_data, map_status(st));
}

/* The sender's and receiver's sizes must agree: a shorter message is as much
 * a mismatch as a longer (truncated) one. */
static oc_status_t recv_status(ucs_status_t st, const ucp_tag_recv_info_t *info,
                               const oc_task_t *t)
{
    if (st == UCS_OK && info->length != t->len)
        return OC_ERR_MISMATCH;
    return map_status(st);
}

static void recv_cb(void *request, ucs_status_t st, const ucp_tag_recv_info_t *info,
                    void *user_data)
{
    oc_nic_slot_t *slot = user_data;
    const oc_task_t *t = &slot->list->tasks[slot - slot->list->slots];
    ucp_request_free(request);
    task_finished(slot, recv_status(st, info, t));
}

/* Marks a slot whose operation is being posted: the completion callback may
 * run inside the posting call (it does for receives with NO_IMM_CMPL). */
#define SLOT_POSTING ((void *)1)

/* Posts one transfer, counted in list->outstanding until it finishes. */
static oc_status_t post_transfer(nic_ucx_t *nic, oc_nic_list_t *list, size_t i)
{
    const oc_task_t *t = &list->tasks[i];
    const oc_nic_match_t *m = list->match;
    oc_nic_slot_t *slot = &list->slots[i];
    ucp_request_param_t param;
    ucs_status_ptr_t sp;

    memset(&param, 0, sizeof(param));
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                         UCP_OP_ATTR_FIELD_DATATYPE;
    param.datatype = ucp_dt_make_contig(1);
    param.user_data = slot;
    slot->list = list;
    slot->handle = SLOT_POSTING;
    list->outstanding++;

    if (t->type == OC_TASK_SEND) {
        param.cb.send = send_cb;
        sp = ucp_tag_send_nbx(m->eps[t->peer]->ep, t->src, t->len,
                              make_tag(m->peer_team_ids[t->peer], m->seq, m->rank), &param);
    } else {
        /* Always complete through the callback: with UCX 1.13.1 here,
         * recv_info came back unfilled on immediate completion, and the
         * received length is what detects mismatched counts. */
        param.op_attr_mask |= UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
        param.cb.recv = recv_cb;
        sp = ucp_tag_recv_nbx(nic->worker, t->dst, t->len,
                              make_tag(m->team_id, m->seq, t->peer), UINT64_MAX, &param);
    }
    if (UCS_PTR_IS_PTR(sp)) {
        if (slot->handle == SLOT_POSTING) /* else the callback already ran */
            slot->handle = sp;
        return OC_OK;
    }
    slot->handle = NULL;
    list->outstanding--;
    if (UCS_PTR_IS_ERR(sp))
        return ucx_error(t->type == OC_TASK_SEND ? "ucp_tag_send_nbx" : "ucp_tag_recv_nbx",
                         UCS_PTR_STATUS(sp));
    return OC_OK;
}

static void ucx_cancel_list(oc_nic_t *base, oc_nic_list_t *list)
{
    nic_ucx_t *nic = (nic_ucx_t *)base;
    size_t i;
    for (i = 0; i < list->ntasks; i++)
        if (list->tasks[i].type != OC_TASK_COPY && list->slots[i].handle != NULL)
            ucp_request_cancel(nic->worker, list->slots[i].handle);
}

static oc_status_t ucx_post_list(oc_nic_t *base, oc_nic_list_t *list)
{
    nic_ucx_t *nic = (nic_ucx_t *)base;
    oc_status_t st = OC_OK;
    size_t i;

    for (i = 0; i < list->ntasks; i++)
        if (list->tasks[i].type == OC_TASK_COPY)
            oc_task_do_copy(&list->tasks[i]);

    /* One extra count, dropped after the loop, keeps done() from firing while
     * the list is still being posted. */
    list->status = OC_OK;
    list->outstanding = 1;
    for (i = 0; i < list->ntasks && st == OC_OK; i++)
        if (list->tasks[i].type != OC_TASK_COPY)
            st = post_transfer(nic, list, i);
    if (st != OC_OK) {
        /* Stop here; what was posted is cancelled and reports through done(). */
        list->status = st;
        ucx_cancel_list(base, list);
    }
    if (--list->outstanding == 0)
        return list->status;
    return OC_INPROGRESS;
}

/* ---- control messages ------------------------------------------------------- */

static ucs_status_t am_recv_cb(void *arg, const void *header, size_t header_length,
                               void *data, size_t length, const ucp_am_recv_param_t *param)
{
    nic_ucx_t *nic = arg;
    am_msg_t *m;
    (void)header;
    (void)header_length;
    if (!(param->recv_attr & UCP_AM_RECV_ATTR_FLAG_DATA) &&
        (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV))
        return UCS_OK; /* control messages are small; a rendezvous one is not ours */
    m = malloc(sizeof(*m) + length);
    if (m == NULL)
        return UCS_OK; /* best effort: a lost query only weakens a diagnosis */
    m->next = NULL;
    m->len = length;
    memcpy(m->data, data, length);
    *nic->am_tail = m;
    nic->am_tail = &m->next;
    return UCS_OK;
}

static unsigned deliver_am(nic_ucx_t *nic)
{
    unsigned n = 0;
    while (nic->am_head != NULL) {
        am_msg_t *m = nic->am_head;
        nic->am_head = m->next;
        if (nic->am_head == NULL)
            nic->am_tail = &nic->am_head;
        if (nic->base.am_cb != NULL)
            nic->base.am_cb(nic->base.am_arg, m->data, m->len);
        free(m);
        n++;
    }
    return n;
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
    void *copy = malloc(len);
    (void)base;
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
    return n + deliver_am(nic);
}

static oc_status_t ucx_arm(oc_nic_t *base)
{
    nic_ucx_t *nic = (nic_ucx_t *)base;
    ucs_status_t st;
    if (nic->am_head != NULL)
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
    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    params.address = addr;
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

/* Closes every endpoint: flush first, so that peers get what was sent; after a
 * grace period (a peer that is gone never acknowledges) force the rest. */
static void close_eps(nic_ucx_t *nic)
{
    struct oc_nic_ep *ep;
    size_t n = 0, i;
    void **reqs;
    double deadline;
    ucp_request_param_t param;

    for (ep = nic->eps; ep != NULL; ep = ep->next)
        n++;
    reqs = calloc(n ? n : 1, sizeof(*reqs));
    memset(&param, 0, sizeof(param));
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags = 0;
    for (ep = nic->eps, i = 0; ep != NULL; ep = ep->next, i++) {
        void *r = ucp_ep_close_nbx(ep->ep, &param);
        reqs[i] = UCS_PTR_IS_PTR(r) ? r : NULL;
    }
    deadline = oc_time_now() + 2.0;
    for (i = 0; i < n; i++) {
        while (reqs[i] != NULL && ucp_request_check_status(reqs[i]) == UCS_INPROGRESS &&
               oc_time_now() < deadline)
            ucp_worker_progress(nic->worker);
        if (reqs[i] != NULL) {
            if (ucp_request_check_status(reqs[i]) == UCS_INPROGRESS)
                ucp_request_cancel(nic->worker, reqs[i]);
            ucp_request_free(reqs[i]);
        }
    }
    free(reqs);
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
        void *buf = malloc(info.length ? info.length : 1);
        void *r = buf ? ucp_tag_msg_recv_nbx(nic->worker, buf, info.length, msg, &param) : NULL;
        if (UCS_PTR_IS_PTR(r)) {
            while (ucp_request_check_status(r) == UCS_INPROGRESS && oc_time_now() < deadline)
                ucp_worker_progress(nic->worker);
            if (ucp_request_check_status(r) == UCS_INPROGRESS)
                ucp_request_cancel(nic->worker, r);
            ucp_request_free(r);
        }
        free(buf);
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
        drop_unexpected(nic);
        close_eps(nic);
        deliver_am(nic);
        if (nic->address != NULL)
            ucp_worker_release_address(nic->worker, nic->address);
        ucp_worker_destroy(nic->worker);
    }
    if (nic->context != NULL)
        ucp_cleanup(nic->context);
    free(nic);
}

static const oc_nic_ops_t ucx_ops = {
    .name = "ucx",
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
    nic->am_tail = &nic->am_head;
    nic->efd = -1;
    nic->verbose = params->verbose;

    st = ucp_config_read(NULL, NULL, &config);
    if (st != UCS_OK) {
        ucx_destroy(&nic->base);
        return ucx_error("ucp_config_read", st);
    }
    memset(&cp, 0, sizeof(cp));
    cp.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
    cp.features = UCP_FEATURE_TAG | UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;
    cp.mt_workers_shared = 0;
    st = ucp_init(&cp, config, &nic->context);
    ucp_config_release(config);
    if (st != UCS_OK) {
        ucx_destroy(&nic->base);
        return ucx_error("ucp_init", st);
    }

    memset(&wp, 0, sizeof(wp));
    wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wp.thread_mode = UCS_THREAD_MODE_SINGLE;
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
