/*
 * RC queue pairs: one per peer process, connected through the team's
 * out-of-band exchange (LID or GID, QPN, PSN), plus the loopback trigger QP.
 *
 * Send work requests are staged per QP and posted as one chain per QP with
 * one ibv_post_send (vb_flush). Every WR is signalled, so a completion frees
 * exactly its own send-queue slots. A WR waits in the QP's pending queue, in
 * order, while the send queue is full or while it lacks a credit.
 *
 * Credits. A message that consumes a receive at the peer (every SEND, and
 * the rendezvous write with immediate) needs one: a credit is a receive
 * buffer known to be posted at the peer for this QP. A sender starts with
 * VB_RQ_DEPTH, the receives each side posts before wire-up. A receiver
 * re-posts a buffer once its message is handled and counts it as owed
 * (unreported); every header it sends carries that count back (set when the
 * SEND is posted, not when it is staged), and when VB_CREDIT_REPORT are owed
 * with nothing going out to carry them, it sends a CREDIT message, past any
 * queued messages. Only a CREDIT message may take the last credit
 * (VB_CREDIT_RESERVE). So a message never finds its receive missing, and the
 * NIC's RNR retry (rnr_retry 7, kept as a safety net) never runs.
 *
 * Why two peers A and B cannot both wait for credits for ever, each with
 * queued messages, once everything sent has arrived and been handled: A
 * waits, so it holds at most the reserved credit, and at least
 * VB_RQ_DEPTH - 1 of B's receives were used by A's messages, which B has
 * handled and re-posted: B owes at least VB_CREDIT_REPORT and sends a CREDIT
 * message unless it holds no credit at all. The same holds for A, so both
 * hold none. A reaches zero only by sending a CREDIT message (any other
 * leaves the reserve), which reported all A owed; A now owes
 * VB_RQ_DEPTH - 1 again, so it has handled that many of B's messages since.
 * In order: the last of them was B's last message, by the same reasoning a
 * CREDIT message, which gave A at least VB_CREDIT_REPORT credits after A
 * last sent: A holds credits. Contradiction. A QP in error (failed) drops
 * credits: its WRs are posted and flushed, so that their tasks end with the
 * error.
 *
 * One exception, when memory is short: a message that came before its
 * receive and found no memory for its copy is held in its receive buffer
 * (verbs_proto.c), handled only when its receive is posted. Held messages
 * can leave a sender without credits while the receiver waits for a message
 * queued behind them; the operations then end by their timeout, naming the
 * peer, where a lost message would have failed its operation for certain.
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
    /* On a cluster a registration mostly fails for the locked-memory limit. */
    int reg = strncmp(what, "ibv_reg_mr", 10) == 0 && err == ENOMEM;
    return oc_error(OC_ERR_BACKEND, "verbs: %s failed: %s%s", what, strerror(err),
                    reg ? " (pinned memory counts against RLIMIT_MEMLOCK: check ulimit -l)"
                        : "");
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

oc_status_t vb_ops_init(vb_nic_t *nic)
{
    return grow(nic);
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

void vb_op_set_send(vb_op_t *op, const vb_hdr_t *h, const void *payload, size_t len)
{
    memcpy(op->buf, h, sizeof(*h));
    if (len > 0)
        memcpy(op->buf + sizeof(*h), payload, len);
    op->sge.addr = (uintptr_t)op->buf;
    op->sge.length = (uint32_t)(sizeof(*h) + len);
    op->sge.lkey = op->buf_lkey;
    op->wr.sg_list = &op->sge;
    op->wr.num_sge = 1;
    op->wr.opcode = IBV_WR_SEND;
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

/* ---- credits -------------------------------------------------------------------- */

static int consumes_receive(const vb_op_t *op)
{
    return op->wr.opcode == IBV_WR_SEND || op->wr.opcode == IBV_WR_RDMA_WRITE_WITH_IMM;
}

/* Whether op may be posted now as far as credits go (a CREDIT message is
 * posted by post_credit, not from the queue). */
static int affordable(const oc_nic_ep_t *ep, const vb_op_t *op)
{
    return !consumes_receive(op) || ep->failed || ep->credits > VB_CREDIT_RESERVE;
}

/* op is being posted: it takes a credit and, a SEND, reports what is owed. */
static void charge(oc_nic_ep_t *ep, vb_op_t *op)
{
    if (!consumes_receive(op))
        return;
    ep->credits--;
    if (op->wr.opcode == IBV_WR_SEND) {
        vb_hdr_t *h = (vb_hdr_t *)op->buf;
        h->credits = (uint32_t)ep->unreported;
        ep->unreported = 0;
    }
}

/* op was not posted after all: what charge() took goes back. */
static void uncharge(oc_nic_ep_t *ep, const vb_op_t *op)
{
    if (!consumes_receive(op))
        return;
    ep->credits++;
    if (op->wr.opcode == IBV_WR_SEND)
        ep->unreported += (int)((const vb_hdr_t *)op->buf)->credits;
}

static int credit_due(const oc_nic_ep_t *ep)
{
    return !ep->failed && ep->unreported >= VB_CREDIT_REPORT;
}

/* ---- staging and posting ------------------------------------------------------ */

/* Queues ep for the next vb_flush if it has anything to post. */
static void mark_dirty(vb_nic_t *nic, oc_nic_ep_t *ep)
{
    if (!ep->dirty && (ep->pend_head != NULL || credit_due(ep))) {
        ep->dirty = 1;
        ep->dirty_next = nic->dirty;
        nic->dirty = ep;
    }
}

void vb_stage(vb_nic_t *nic, oc_nic_ep_t *ep, vb_op_t *op)
{
    op->ep = ep;
    op->next = NULL;
    *ep->pend_tail = op;
    ep->pend_tail = &op->next;
    mark_dirty(nic, ep);
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
            oc_warn("verbs: cross-channel WAIT not posted (%s): the list is checked in "
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

    charge(ep, first);
    while (last->next != NULL && last->next->kind != VB_OP_WAIT && n < ep->sq_avail &&
           affordable(ep, last->next)) {
        last->wr.next = &last->next->wr;
        last = last->next;
        charge(ep, last);
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
            uncharge(ep, op);
            vb_op_done(nic, op, vb_errno("ibv_post_send", rc));
        }
        op = next;
    }
}

/* Sends what ep owes the peer, which no queued message could carry, on the
 * reserved credit. Out of memory: tried again at the next flush of ep. */
static void post_credit(vb_nic_t *nic, oc_nic_ep_t *ep)
{
    vb_op_t *op = vb_op_get(nic);
    vb_hdr_t h;
    if (op == NULL)
        return;
    memset(&h, 0, sizeof(h));
    h.type = VB_MSG_CREDIT;
    op->kind = VB_OP_PROTO;
    op->ep = ep;
    vb_op_set_send(op, &h, NULL, 0);
    /* Ahead of the queue, whose head waits for credits this brings back. */
    op->next = ep->pend_head;
    ep->pend_head = op;
    if (op->next == NULL)
        ep->pend_tail = &op->next;
    post_chain(nic, ep);
}

static void post_pending(vb_nic_t *nic, oc_nic_ep_t *ep)
{
    while (ep->pend_head != NULL && ep->sq_avail > 0) {
        if (ep->pend_head->kind == VB_OP_WAIT) {
            if (ep->sq_avail < 2) /* the trigger write behind it must fit too */
                break;
            post_wait(nic, ep);
        } else if (affordable(ep, ep->pend_head)) {
            post_chain(nic, ep);
        } else {
            break;
        }
    }
    /* Queued messages that went out carried the count; none could: report it. */
    if (credit_due(ep) && ep->sq_avail > 0 && ep->credits > 0)
        post_credit(nic, ep);
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
    op->ep->sq_avail += (int)op->sq_slots;
    mark_dirty(nic, op->ep);
}

void vb_qp_credits(vb_nic_t *nic, oc_nic_ep_t *ep, uint32_t n)
{
    ep->credits += (int)n;
    mark_dirty(nic, ep);
}

void vb_qp_failed(vb_nic_t *nic, oc_nic_ep_t *ep, const char *why)
{
    if (!ep->failed) {
        ep->failed = 1;
        vb_proto_peer_failed(nic, ep, why);
    }
    mark_dirty(nic, ep);
}

/* ---- receive buffers ---------------------------------------------------------- */

static oc_status_t post_recv(vb_rbuf_t *rb)
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

oc_status_t vb_qp_repost(vb_nic_t *nic, vb_rbuf_t *rb)
{
    oc_status_t st = post_recv(rb);
    if (st == OC_OK) {
        rb->ep->unreported++;
        mark_dirty(nic, rb->ep);
    }
    return st;
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
        st = post_recv(&ep->rdesc[i]);
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

    /* neps counts the trigger QP too */
    if (!loopback && nic->neps >= nic->dev.max_peers + 1)
        return oc_error(OC_ERR_UNAVAILABLE, "verbs: more than %u peer processes, the most its "
                        "completion queues are sized for (OC_VERBS_MAX_PEERS; each peer also "
                        "takes %u KB of receive buffers): %s, or set OC_BACKEND=ucx",
                        nic->dev.max_peers, VB_RQ_DEPTH * VB_BUF_SIZE / 1024,
                        nic->dev.device_cap ? "the device's CQs allow no more (max_cqe)"
                                            : "raise it");
    ep = calloc(1, sizeof(*ep));
    if (ep == NULL)
        return oc_error(OC_ERR_NO_MEMORY, "verbs: endpoint");
    ep->peer = *peer;
    ep->loopback = loopback;
    ep->pend_tail = &ep->pend_head;
    ep->sq_avail = loopback ? VB_TRIG_DEPTH : VB_SQ_DEPTH;
    ep->credits = loopback ? 0 : VB_RQ_DEPTH; /* what post_receives() posts at the peer */
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
    st = to_init(nic, ep);
    if (st == OC_OK && !loopback)
        st = post_receives(nic, ep);
    if (st != OC_OK) {
        vb_qp_destroy(nic, ep); /* nothing of it has completed yet */
        return st;
    }
    ep->next = nic->eps;
    nic->eps = ep;
    nic->neps++;
    *out = ep;
    return OC_OK;
}

oc_status_t vb_qp_connect(vb_nic_t *nic, oc_nic_ep_t *ep, const vb_wireup_t *w)
{
    struct ibv_qp_attr a;
    int rc;

    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RTR;
    /* The smaller of the two ports': a larger one's packets would be dropped
     * by the other side, and the retries end as a failed peer. */
    a.path_mtu = ep->peer.mtu != 0 && ep->peer.mtu < nic->dev.mtu ? ep->peer.mtu : nic->dev.mtu;
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
