/*
 * RC queue pairs: one per peer process, connected through the team's
 * out-of-band exchange (LID or GID, QPN, PSN), plus the loopback trigger QP.
 *
 * Send work requests are staged per QP and posted as one chain per QP with
 * one ibv_post_send (vb_flush). Every WR is signalled, so a completion frees
 * exactly its own send-queue slots; WRs beyond VB_SQ_DEPTH wait in the QP's
 * pending queue. Flow control of receives is RC's own: receivers re-post a
 * buffer as soon as its message is handled, and a sender that finds none
 * posted is retried by the NIC (rnr_retry 7: for ever), never failed.
 */
#include "verbs_internal.h"
#include "oc_error.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SLAB_OPS 64

/* Transport timeout 4.096 us * 2^17 = 0.54 s per try, 7 retries: a peer is
 * declared gone after about 4 s, long enough for an oversubscribed host. */
#define QP_TIMEOUT     17
#define QP_RETRY_CNT   7
#define QP_RNR_RETRY   7   /* for ever: receive buffers come back */
#define QP_MIN_RNR     12  /* 0.64 ms before a retry after RNR */

struct vb_slab {
    struct vb_slab *next;
    struct ibv_mr *mr;
    char *mem;
    vb_op_t ops[SLAB_OPS];
};

oc_status_t vb_errno(const char *what, int err)
{
    return oc_error(OC_ERR_BACKEND, "verbs: %s failed: %s", what, strerror(err));
}

/* ---- send operations and their bounce buffers ------------------------------- */

static oc_status_t grow(vb_nic_t *nic)
{
    struct vb_slab *s = calloc(1, sizeof(*s));
    int i;
    if (s == NULL || (s->mem = malloc((size_t)SLAB_OPS * VB_BUF_SIZE)) == NULL) {
        free(s);
        return oc_error(OC_ERR_NO_MEMORY, "verbs: send buffers");
    }
    s->mr = ibv_reg_mr(nic->dev.pd, s->mem, (size_t)SLAB_OPS * VB_BUF_SIZE,
                       IBV_ACCESS_LOCAL_WRITE);
    if (s->mr == NULL) {
        oc_status_t st = vb_errno("ibv_reg_mr of send buffers", errno);
        free(s->mem);
        free(s);
        return st;
    }
    for (i = 0; i < SLAB_OPS; i++) {
        s->ops[i].buf = s->mem + (size_t)i * VB_BUF_SIZE;
        s->ops[i].buf_lkey = s->mr->lkey;
        s->ops[i].next = nic->free_ops;
        nic->free_ops = &s->ops[i];
    }
    s->next = nic->slabs;
    nic->slabs = s;
    return OC_OK;
}

vb_op_t *vb_op_get(vb_nic_t *nic)
{
    vb_op_t *op;
    char *buf;
    uint32_t lkey;
    if (nic->free_ops == NULL && grow(nic) != OC_OK)
        return NULL;
    op = nic->free_ops;
    nic->free_ops = op->next;
    buf = op->buf;
    lkey = op->buf_lkey;
    memset(op, 0, sizeof(*op));
    op->buf = buf;
    op->buf_lkey = lkey;
    op->sq_slots = 1;
    op->wr.wr_id = (uintptr_t)op;
    op->wr.send_flags = IBV_SEND_SIGNALED;
    return op;
}

void vb_op_put(vb_nic_t *nic, vb_op_t *op)
{
    vb_mr_put(&nic->mrs, op->mr);
    op->mr = NULL;
    op->next = nic->free_ops;
    nic->free_ops = op;
}

void vb_ops_fini(vb_nic_t *nic)
{
    struct vb_slab *s;
    while ((s = nic->slabs) != NULL) {
        nic->slabs = s->next;
        ibv_dereg_mr(s->mr);
        free(s->mem);
        free(s);
    }
    nic->free_ops = NULL;
}

/* ---- staging and posting ------------------------------------------------------ */

void vb_stage(vb_nic_t *nic, oc_nic_ep_t *ep, vb_op_t *op)
{
    op->ep = ep;
    op->next = NULL;
    *ep->pend_tail = op;
    ep->pend_tail = &op->next;
    if (!ep->dirty) {
        ep->dirty = 1;
        ep->dirty_next = nic->dirty;
        nic->dirty = ep;
    }
}

static void pop(oc_nic_ep_t *ep, vb_op_t *upto_next)
{
    ep->pend_head = upto_next;
    if (upto_next == NULL)
        ep->pend_tail = &ep->pend_head;
}

/* The WAIT covers every data WR posted so far: each of them produces exactly
 * one completion on the send CQ, so its count is reached once they have all
 * completed (or earlier, if WRs posted after it complete first: the list's
 * own count, kept in software, closes that gap). */
static void post_wait(vb_nic_t *nic, oc_nic_ep_t *ep)
{
    vb_op_t *op = ep->pend_head;
    uint32_t count = (uint32_t)(nic->trig.posted - nic->trig.waited);
    int rc = 0;

    pop(ep, op->next);
    if (count > 0)
        /* wr_id 0: a WAIT completes only when flushed, and then means nothing. */
        rc = nic->trig.post_wait(ep->qp, nic->dev.scq, count, 0);
    if (count > 0 && rc == 0) {
        ep->sq_avail--;
        nic->trig.waited = nic->trig.posted;
    } else {
        if (rc != 0)
            oc_notice(1, "verbs: cross-channel WAIT not posted (%s): the list is checked in "
                      "software only", strerror(rc));
        if (ep->pend_head != NULL)
            ep->pend_head->sq_slots = 1; /* its trigger write frees its own slot only */
    }
    vb_op_put(nic, op);
}

/* Posts the longest chain the send queue takes, up to the next WAIT. */
static void post_chain(vb_nic_t *nic, oc_nic_ep_t *ep)
{
    vb_op_t *first = ep->pend_head, *last = first, *op;
    struct ibv_send_wr *bad = NULL;
    int n = 1, rc;

    while (last->next != NULL && last->next->kind != VB_OP_WAIT && n < ep->sq_avail) {
        last->wr.next = &last->next->wr;
        last = last->next;
        n++;
    }
    last->wr.next = NULL;
    pop(ep, last->next);
    last->next = NULL;
    rc = ibv_post_send(ep->qp, &first->wr, &bad);
    if (rc == 0) {
        ep->sq_avail -= n;
        if (!ep->loopback)
            nic->trig.posted += (uint64_t)n;
        return;
    }
    /* The WRs before bad were posted; the rest fail here. */
    for (op = first; op != NULL;) {
        vb_op_t *next = op->next;
        if (bad != NULL && &op->wr == bad)
            bad = NULL;
        if (bad != NULL) {
            ep->sq_avail--;
            if (!ep->loopback)
                nic->trig.posted++;
        } else {
            vb_op_done(nic, op, vb_errno("ibv_post_send", rc));
        }
        op = next;
    }
}

static void post_pending(vb_nic_t *nic, oc_nic_ep_t *ep)
{
    while (ep->pend_head != NULL && ep->sq_avail > 0) {
        if (ep->pend_head->kind != VB_OP_WAIT)
            post_chain(nic, ep);
        else if (ep->sq_avail >= 2) /* the trigger write behind it must fit too */
            post_wait(nic, ep);
        else
            break;
    }
}

/* Data QPs first: a WAIT on the trigger QP counts the data WRs posted. */
void vb_flush(vb_nic_t *nic)
{
    do {
        oc_nic_ep_t *trigger = NULL;
        while (nic->dirty != NULL) {
            oc_nic_ep_t *ep = nic->dirty;
            nic->dirty = ep->dirty_next;
            ep->dirty = 0;
            if (ep->loopback)
                trigger = ep;
            else
                post_pending(nic, ep);
        }
        if (trigger != NULL)
            post_pending(nic, trigger);
    } while (nic->dirty != NULL); /* a failed post may have staged a trigger */
}

void vb_sq_release(vb_nic_t *nic, vb_op_t *op)
{
    oc_nic_ep_t *ep = op->ep;
    ep->sq_avail += (int)op->sq_slots;
    if (ep->pend_head != NULL && !ep->dirty) {
        ep->dirty = 1;
        ep->dirty_next = nic->dirty;
        nic->dirty = ep;
    }
}

/* ---- receive buffers ---------------------------------------------------------- */

oc_status_t vb_qp_repost(vb_rbuf_t *rb)
{
    struct ibv_sge sge = {(uintptr_t)rb->data, VB_BUF_SIZE, rb->ep->rmr->lkey};
    struct ibv_recv_wr wr, *bad;
    int rc;
    memset(&wr, 0, sizeof(wr));
    wr.wr_id = (uintptr_t)rb;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    rc = ibv_post_recv(rb->ep->qp, &wr, &bad);
    return rc == 0 ? OC_OK : vb_errno("ibv_post_recv", rc);
}

static oc_status_t post_receives(vb_nic_t *nic, oc_nic_ep_t *ep)
{
    oc_status_t st = OC_OK;
    int i;
    ep->rbufs = malloc((size_t)VB_RQ_DEPTH * VB_BUF_SIZE);
    if (ep->rbufs == NULL)
        return oc_error(OC_ERR_NO_MEMORY, "verbs: receive buffers");
    ep->rmr = ibv_reg_mr(nic->dev.pd, ep->rbufs, (size_t)VB_RQ_DEPTH * VB_BUF_SIZE,
                         IBV_ACCESS_LOCAL_WRITE);
    if (ep->rmr == NULL)
        return vb_errno("ibv_reg_mr of receive buffers", errno);
    for (i = 0; i < VB_RQ_DEPTH && st == OC_OK; i++) {
        ep->rdesc[i].ep = ep;
        ep->rdesc[i].data = ep->rbufs + (size_t)i * VB_BUF_SIZE;
        st = vb_qp_repost(&ep->rdesc[i]);
    }
    return st;
}

/* ---- connection ----------------------------------------------------------------- */

static oc_status_t to_init(vb_nic_t *nic, oc_nic_ep_t *ep)
{
    struct ibv_qp_attr a;
    int rc;
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_INIT;
    a.pkey_index = 0;
    a.port_num = nic->dev.addr.port;
    a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
    rc = ibv_modify_qp(ep->qp, &a,
                       IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
    return rc == 0 ? OC_OK : vb_errno("ibv_modify_qp(INIT)", rc);
}

oc_status_t vb_qp_create(vb_nic_t *nic, const vb_addr_t *peer, int loopback, oc_nic_ep_t **out)
{
    struct ibv_qp_init_attr ia;
    oc_nic_ep_t *ep;
    oc_status_t st;

    if (!loopback && nic->neps >= VB_MAX_PEERS + 1)
        return oc_error(OC_ERR_UNAVAILABLE, "verbs: more than %d peer processes (the CQs are "
                        "sized for VB_MAX_PEERS)", VB_MAX_PEERS);
    ep = calloc(1, sizeof(*ep));
    if (ep == NULL)
        return oc_error(OC_ERR_NO_MEMORY, "verbs: endpoint");
    ep->peer = *peer;
    ep->loopback = loopback;
    ep->pend_tail = &ep->pend_head;
    ep->sq_avail = loopback ? VB_TRIG_DEPTH : VB_SQ_DEPTH;
    memset(&ia, 0, sizeof(ia));
    ia.send_cq = loopback ? nic->dev.tcq : nic->dev.scq;
    ia.recv_cq = loopback ? nic->dev.tcq : nic->dev.rcq;
    ia.cap.max_send_wr = (uint32_t)ep->sq_avail;
    ia.cap.max_recv_wr = loopback ? 1 : VB_RQ_DEPTH;
    ia.cap.max_send_sge = 1;
    ia.cap.max_recv_sge = 1;
    ia.qp_type = IBV_QPT_RC;
    ep->qp = ibv_create_qp(nic->dev.pd, &ia);
    if (ep->qp == NULL) {
        st = vb_errno("ibv_create_qp", errno);
        free(ep);
        return st;
    }
    ep->psn = (uint32_t)(nic->dev.addr.nonce ^ ((uint64_t)ep->qp->qp_num * 2654435761u)) &
              0xffffffu;
    ep->next = nic->eps;
    nic->eps = ep;
    nic->neps++;
    st = to_init(nic, ep);
    if (st == OC_OK && !loopback)
        st = post_receives(nic, ep);
    if (st != OC_OK)
        return st; /* ep stays listed: destroy() releases it */
    *out = ep;
    return OC_OK;
}

oc_status_t vb_qp_connect(vb_nic_t *nic, oc_nic_ep_t *ep, const vb_wireup_t *w)
{
    struct ibv_qp_attr a;
    int rc;

    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = nic->dev.mtu;
    a.dest_qp_num = w->qpn;
    a.rq_psn = w->psn;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = QP_MIN_RNR;
    a.ah_attr.port_num = nic->dev.addr.port;
    a.ah_attr.dlid = ep->peer.lid;
    if (ep->peer.ethernet) {
        a.ah_attr.is_global = 1;
        memcpy(a.ah_attr.grh.dgid.raw, ep->peer.gid, sizeof(ep->peer.gid));
        a.ah_attr.grh.sgid_index = 0;
        a.ah_attr.grh.hop_limit = 64;
    }
    rc = ibv_modify_qp(ep->qp, &a,
                       IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                           IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
    if (rc != 0)
        return vb_errno("ibv_modify_qp(RTR)", rc);
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RTS;
    a.timeout = QP_TIMEOUT;
    a.retry_cnt = QP_RETRY_CNT;
    a.rnr_retry = QP_RNR_RETRY;
    a.sq_psn = ep->psn;
    a.max_rd_atomic = 1;
    rc = ibv_modify_qp(ep->qp, &a,
                       IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                           IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
    if (rc != 0)
        return vb_errno("ibv_modify_qp(RTS)", rc);
    ep->peer_qpn = w->qpn;
    return OC_OK;
}

void vb_qp_destroy(vb_nic_t *nic, oc_nic_ep_t *ep)
{
    while (ep->pend_head != NULL) {
        vb_op_t *op = ep->pend_head;
        ep->pend_head = op->next;
        vb_op_put(nic, op);
    }
    if (ep->qp != NULL)
        ibv_destroy_qp(ep->qp);
    if (ep->rmr != NULL)
        ibv_dereg_mr(ep->rmr);
    free(ep->rbufs);
    free(ep);
}
