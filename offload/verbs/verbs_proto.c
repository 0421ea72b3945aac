/*
 * The two-sided protocol of collectives over RC QPs, which have no tag
 * matching of their own.
 *
 * A message is keyed by (the receiver's team id, operation number, the
 * sender's team rank), all carried in a header (vb_hdr_t) at the front of
 * every SEND. One QP joins a pair of processes and executes in order, so the
 * messages of one key arrive in the order they were sent, and RECV tasks of
 * one key are matched first come, first served: several outstanding
 * operations per team, and teams sharing processes, never meet.
 *
 *   eager (length <= eager_max: VB_EAGER_MAX, or less where the port's
 *     max_msg_sz is shorter than a bounce buffer): EAGER header + payload in
 *     one SEND, copied through a registered bounce buffer at each end. The
 *     SEND task is done when the NIC acknowledges the message.
 *   rendezvous: the sender sends RTS (length, its cookie). When the RECV
 *     task meets it, the receiver registers its buffer and answers RTR
 *     (address, rkey, its own cookie); the sender RDMA-writes the data with
 *     the receiver's cookie as immediate. The write's completion ends the
 *     SEND task; its immediate, arriving in a receive buffer, ends the RECV.
 *
 * The receiver always learns the sender's length first (from EAGER or RTS),
 * so differing lengths end the RECV task with OC_ERR_MISMATCH and nothing is
 * written; a rendezvous SEND ends with it too (an RTR carrying the error
 * releases it), an eager one has completed already.
 * An EAGER or RTS with no RECV task yet is unexpected: kept (with a copy of
 * its payload) until the task is posted. Control messages (CTRL: timeout
 * queries, notifications) use the same QPs and are delivered to the engine
 * after the progress call, so that handlers may send.
 *
 * A connection whose QP has gone to error ends the tasks held here for it
 * (RECVs from that peer, rendezvous SENDs waiting for its RTR) at once.
 *
 * Flow control is by credits (verbs_qp.c has the scheme and why it cannot
 * deadlock): every SEND above and the rendezvous write take one, so that a
 * message never arrives to find no receive posted; a message without credit
 * waits in its QP's queue. Every header carries the credits its sender owes
 * back (taken here from each arrival, whatever its type), and CREDIT
 * messages carry nothing else. A receive buffer is re-posted, and owed, as
 * soon as its message is handled: unexpected messages are copied out, so
 * credits never wait for the application to post a receive. Only when
 * memory for the copy is short is a message held in its receive buffer
 * until its task comes: lost, it would fail its operation, while held it
 * costs its sender one credit meanwhile.
 */
#include "verbs_internal.h"
#include "oc_error.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

struct vb_recv {
    vb_recv_t *next;
    uint32_t team_id, seq;
    int src;
    oc_nic_ep_t *ep;   /* the QP its message comes through */
    /* NULL once its task was cancelled after the RTR: the sender may still
     * write, so the record and its registration stay until the write lands
     * or the QP fails (a write into a released registration would put the
     * pair's QP in error for good). */
    oc_nic_slot_t *slot;
    oc_nic_slot_t *ended; /* end_held(): the slot to finish */
    vb_recv_t *ended_next;
    void *dst;
    size_t len;
    uint32_t cookie;   /* once RTR is sent: the write's immediate */
    vb_mr_t *mr;
};

struct vb_rndv_send {
    vb_rndv_send_t *next;
    uint32_t cookie;
    oc_nic_slot_t *slot;
    oc_nic_ep_t *ep;
};

/* Records made with the instance: receives and rendezvous sends in flight,
 * early messages. Set-ups exchange a few small messages per peer; a burst
 * all-to-all posts a receive and a send per peer. An early EAGER keeps its
 * payload in a node of VB_EAGER_MAX bytes more; an early RTS (or an empty
 * EAGER) needs the record alone, so that a large all-to-all whose RTSs come
 * early does not leave its pool at thousands of 2 KB nodes. */
enum { VB_POOL_RECORDS = 64, VB_POOL_EARLY = 32 };

/* The pool of an early message's node: by its payload. */
static oc_pool_t *unexp_pool(vb_proto_t *p, const vb_hdr_t *h)
{
    return h->type == VB_MSG_EAGER && h->len > 0 ? &p->early_data : &p->early_hdrs;
}

oc_status_t vb_proto_init(vb_proto_t *p)
{
    memset(p, 0, sizeof(*p));
    p->expected_tail = &p->expected;
    p->unexp_tail = &p->unexp;
    if (oc_pool_init(&p->recvs, sizeof(vb_recv_t), VB_POOL_RECORDS) != 0 ||
        oc_pool_init(&p->sends, sizeof(vb_rndv_send_t), VB_POOL_RECORDS) != 0 ||
        oc_pool_init(&p->early_hdrs, sizeof(vb_unexp_t), VB_POOL_EARLY) != 0 ||
        oc_pool_init(&p->early_data, sizeof(vb_unexp_t) + VB_EAGER_MAX, VB_POOL_EARLY) != 0)
        return oc_error(OC_ERR_NO_MEMORY, "verbs: transfer records");
    return oc_nic_amq_init(&p->am);
}

/* A message of no task (RTR): lost only when memory is. */
static void send_proto(vb_nic_t *nic, oc_nic_ep_t *ep, const vb_hdr_t *h)
{
    vb_op_t *op = vb_op_get(nic);
    if (op == NULL) {
        oc_warn("verbs: out of memory: a protocol message was lost");
        return;
    }
    op->kind = VB_OP_PROTO;
    vb_op_set_send(op, h, NULL, 0);
    vb_stage(nic, ep, op);
}

static oc_status_t mismatch(const vb_recv_t *r, uint64_t sent)
{
    return oc_error(OC_ERR_MISMATCH,
                    "verbs: a receive of %zu bytes from rank %d met a message of %llu bytes",
                    r->len, r->src, (unsigned long long)sent);
}

static void finish_recv(vb_nic_t *nic, vb_recv_t *r, oc_status_t st)
{
    vb_mr_put(&nic->mrs, r->mr);
    if (r->slot != NULL)
        vb_task_finished(nic, r->slot, st);
    oc_pool_put(&nic->proto.recvs, r);
}

static oc_status_t conn_failed(const char *what, int rank)
{
    return oc_error(OC_ERR_BACKEND, "verbs: a %s rank %d: the connection to it has failed",
                    what, rank);
}

/* r meets its EAGER or RTS h (payload: EAGER's data), which came through ep. */
static void meet(vb_nic_t *nic, vb_recv_t *r, const vb_hdr_t *h, const char *payload,
                 oc_nic_ep_t *ep)
{
    vb_proto_t *p = &nic->proto;
    vb_hdr_t rtr;
    oc_status_t st;

    if (h->type == VB_MSG_RTS && ep->failed) {
        finish_recv(nic, r, conn_failed("receive from", r->src)); /* no write will come */
        return;
    }
    if (h->len != r->len) {
        st = mismatch(r, h->len);
    } else if (h->type == VB_MSG_EAGER) {
        if (r->len > 0)
            memcpy(r->dst, payload, r->len);
        finish_recv(nic, r, OC_OK);
        return;
    } else {
        st = vb_mr_get(&nic->mrs, r->dst, r->len, 1, &r->mr);
    }
    if (st != OC_OK && h->type == VB_MSG_EAGER) {
        finish_recv(nic, r, st);
        return;
    }
    memset(&rtr, 0, sizeof(rtr));
    rtr.type = VB_MSG_RTR;
    rtr.scookie = h->scookie;
    rtr.len = r->len;
    rtr.status = st;
    if (st == OC_OK) {
        r->cookie = ++p->next_cookie;
        rtr.rcookie = r->cookie;
        rtr.addr = (uintptr_t)r->dst;
        rtr.rkey = r->mr->mr->rkey;
        r->next = p->writing;
        p->writing = r;
    }
    send_proto(nic, ep, &rtr);
    if (st != OC_OK)
        finish_recv(nic, r, st);
}

oc_status_t vb_proto_send(vb_nic_t *nic, oc_nic_slot_t *slot)
{
    const oc_task_t *t = oc_nic_slot_task(slot);
    const oc_nic_match_t *m = slot->list->match;
    oc_nic_ep_t *ep = m->eps[t->peer];
    vb_op_t *op;
    vb_hdr_t h;

    /* A failed QP would flush the RTS as a message of no task, and the
     * send would wait for an RTR until OC_TIMEOUT_S. */
    if (ep->failed)
        return conn_failed("send to", t->peer);
    op = vb_op_get(nic);
    if (op == NULL)
        return oc_error(OC_ERR_NO_MEMORY, "verbs: send buffer");
    memset(&h, 0, sizeof(h));
    h.team_id = m->peer_team_ids[t->peer];
    h.seq = m->seq;
    h.src = m->rank;
    h.len = t->len;
    if (t->len <= nic->dev.eager_max) {
        h.type = VB_MSG_EAGER;
        op->kind = VB_OP_TASK;
        op->slot = slot;
        vb_op_set_send(op, &h, t->src, t->len);
    } else {
        vb_rndv_send_t *rs = oc_pool_get(&nic->proto.sends);
        if (rs == NULL) {
            vb_op_put(nic, op);
            return oc_error(OC_ERR_NO_MEMORY, "verbs: rendezvous send");
        }
        rs->cookie = ++nic->proto.next_cookie;
        rs->slot = slot;
        rs->ep = ep;
        rs->next = nic->proto.rts;
        nic->proto.rts = rs;
        h.type = VB_MSG_RTS;
        h.scookie = rs->cookie;
        op->kind = VB_OP_PROTO;
        vb_op_set_send(op, &h, NULL, 0);
    }
    vb_stage(nic, ep, op);
    return OC_OK;
}

static int same_key(const vb_hdr_t *h, const vb_recv_t *r)
{
    return h->team_id == r->team_id && h->seq == r->seq && h->src == r->src;
}

/* x's EAGER data: after the node, or after the header in the receive buffer
 * it is held in. */
static const char *unexp_payload(const vb_unexp_t *x)
{
    return x->held != NULL ? x->held->data + sizeof(x->hdr) : (const char *)(x + 1);
}

/* x has met its task: its node goes back to the pool, or the receive
 * buffer it was held in is posted again. */
static void unexp_done(vb_nic_t *nic, vb_unexp_t *x)
{
    if (x->held == NULL)
        oc_pool_put(unexp_pool(&nic->proto, &x->hdr), x);
    else if (!x->ep->failed && vb_qp_repost(nic, x->held) != OC_OK)
        oc_warn("%s", oc_last_error());
}

oc_status_t vb_proto_recv(vb_nic_t *nic, oc_nic_slot_t *slot)
{
    const oc_task_t *t = oc_nic_slot_task(slot);
    const oc_nic_match_t *m = slot->list->match;
    vb_proto_t *p = &nic->proto;
    vb_unexp_t **u;
    vb_recv_t *r = oc_pool_get(&p->recvs);

    if (r == NULL)
        return oc_error(OC_ERR_NO_MEMORY, "verbs: receive");
    memset(r, 0, sizeof(*r));
    r->team_id = m->team_id;
    r->seq = m->seq;
    r->src = t->peer;
    r->ep = m->eps[t->peer];
    r->slot = slot;
    r->dst = t->dst;
    r->len = t->len;
    for (u = &p->unexp; *u != NULL; u = &(*u)->next)
        if (same_key(&(*u)->hdr, r)) {
            vb_unexp_t *x = *u;
            *u = x->next;
            if (*u == NULL)
                p->unexp_tail = u;
            meet(nic, r, &x->hdr, unexp_payload(x), x->ep);
            unexp_done(nic, x);
            return OC_OK;
        }
    if (r->ep->failed) {
        oc_pool_put(&p->recvs, r);
        return conn_failed("receive from", t->peer);
    }
    *p->expected_tail = r;
    p->expected_tail = &r->next;
    return OC_OK;
}

/* EAGER or RTS h, which arrived in rb: to its RECV task, or kept as
 * unexpected. 1 when it is held in rb. */
static int arrived_message(vb_nic_t *nic, const vb_hdr_t *h, vb_rbuf_t *rb)
{
    vb_proto_t *p = &nic->proto;
    const char *payload = rb->data + sizeof(*h);
    size_t plen = h->type == VB_MSG_EAGER ? (size_t)h->len : 0;
    vb_recv_t **pr;
    vb_unexp_t *x;

    for (pr = &p->expected; *pr != NULL; pr = &(*pr)->next)
        if (same_key(h, *pr)) {
            vb_recv_t *r = *pr;
            *pr = r->next;
            if (*pr == NULL)
                p->expected_tail = pr;
            meet(nic, r, h, payload, rb->ep);
            return 0;
        }
    if ((x = oc_pool_get(unexp_pool(p, h))) != NULL) {
        x->held = NULL;
        if (plen > 0)
            memcpy(x + 1, payload, plen);
    } else {
        if (!p->held_told)
            oc_warn("verbs: out of memory: early messages wait in their receive buffers "
                    "for their receives, each taking a credit from its sender meanwhile");
        p->held_told = 1;
        x = &rb->held;
        x->held = rb;
    }
    x->next = NULL;
    x->ep = rb->ep;
    x->hdr = *h;
    *p->unexp_tail = x;
    p->unexp_tail = &x->next;
    return x->held != NULL;
}

/* RTR: the data goes out as a write with the receiver's cookie. Where it
 * cannot (the source will not register: on a cluster, most often the
 * locked-memory limit), ABORT tells the receiver, which would otherwise wait
 * for the write until OC_TIMEOUT_S. */
static void arrived_rtr(vb_nic_t *nic, const vb_hdr_t *h)
{
    vb_rndv_send_t **ps, *rs;
    const oc_task_t *t;
    oc_status_t st;

    for (ps = &nic->proto.rts; *ps != NULL && (*ps)->cookie != h->scookie; ps = &(*ps)->next)
        ;
    if ((rs = *ps) == NULL)
        return; /* its send was cancelled */
    *ps = rs->next;
    t = oc_nic_slot_task(rs->slot);
    st = (oc_status_t)h->status;
    if (st != OC_OK) {
        st = oc_error(st, "verbs: rank %d refused the %zu bytes sent to it (%s)%s", t->peer,
                      t->len, oc_status_string(st),
                      st == OC_ERR_MISMATCH ? ": it expects another number of bytes" : "");
    } else {
        st = vb_stage_writes(nic, rs->ep, rs->slot, t->src, t->len, h->addr, h->rkey, 1,
                             h->rcookie);
        if (st != OC_OK) {
            vb_hdr_t abort;
            memset(&abort, 0, sizeof(abort));
            abort.type = VB_MSG_ABORT;
            abort.rcookie = h->rcookie;
            abort.status = st;
            send_proto(nic, rs->ep, &abort);
        }
    }
    if (st != OC_OK)
        vb_task_finished(nic, rs->slot, st);
    oc_pool_put(&nic->proto.sends, rs);
}

/* The receive waiting for the write with this cookie, unlinked; NULL if its
 * QP failed meanwhile. */
static vb_recv_t *take_writing(vb_nic_t *nic, uint32_t cookie)
{
    vb_recv_t **pr, *r;
    for (pr = &nic->proto.writing; *pr != NULL && (*pr)->cookie != cookie; pr = &(*pr)->next)
        ;
    if ((r = *pr) != NULL)
        *pr = r->next;
    return r;
}

/* The rendezvous write of the RECV task with this cookie has landed. */
static void arrived_write(vb_nic_t *nic, uint32_t cookie, uint32_t bytes)
{
    vb_recv_t *r = take_writing(nic, cookie);
    if (r == NULL)
        return;
    /* The sizes were matched at the RTS; this write is the last of the
     * sender's pieces (cut at its device's largest message), so it carries
     * no more than the whole. */
    finish_recv(nic, r, bytes <= r->len ? OC_OK : mismatch(r, bytes));
}

static void arrived_abort(vb_nic_t *nic, const vb_hdr_t *h)
{
    vb_recv_t *r = take_writing(nic, h->rcookie);
    if (r == NULL)
        return;
    finish_recv(nic, r, oc_error((oc_status_t)h->status, "verbs: rank %d could not send the "
                                 "%zu bytes of this receive (%s; its oc_last_error() says why)",
                                 r->src, r->len, oc_status_string((oc_status_t)h->status)));
}

int vb_proto_arrival(vb_nic_t *nic, const struct ibv_wc *wc, vb_rbuf_t *rb)
{
    vb_hdr_t h;
    const char *payload = rb->data + sizeof(h);

    if (wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
        arrived_write(nic, ntohl(wc->imm_data), wc->byte_len);
        return 0;
    }
    if (wc->byte_len < sizeof(h)) {
        oc_notice(nic->verbose, "verbs: dropped a message of %u bytes", wc->byte_len);
        return 0;
    }
    memcpy(&h, rb->data, sizeof(h));
    vb_qp_credits(nic, rb->ep, h.credits);
    if ((h.type == VB_MSG_EAGER || h.type == VB_MSG_CTRL) && h.len != wc->byte_len - sizeof(h)) {
        oc_notice(nic->verbose, "verbs: dropped a malformed message of %u bytes", wc->byte_len);
        return 0;
    }
    switch (h.type) {
    case VB_MSG_EAGER:
    case VB_MSG_RTS:
        return arrived_message(nic, &h, rb);
    case VB_MSG_RTR:
        arrived_rtr(nic, &h);
        break;
    case VB_MSG_CTRL:
        oc_nic_amq_push(&nic->proto.am, "verbs", payload, (size_t)h.len);
        break;
    case VB_MSG_ABORT:
        arrived_abort(nic, &h);
        break;
    case VB_MSG_CREDIT:
        break; /* taken above */
    default:
        oc_notice(nic->verbose, "verbs: dropped a message of unknown type %u", h.type);
    }
    return 0;
}

oc_status_t vb_proto_ctrl(vb_nic_t *nic, oc_nic_ep_t *ep, const void *data, size_t len,
                          oc_nic_slot_t *slot)
{
    vb_op_t *op;
    vb_hdr_t h;

    if (len > nic->dev.eager_max)
        return oc_error(OC_ERR_INVALID_ARG, "verbs: a control message of %zu bytes (at most %zu)",
                        len, nic->dev.eager_max);
    op = vb_op_get(nic);
    if (op == NULL)
        return oc_error(OC_ERR_NO_MEMORY, "verbs: control message");
    memset(&h, 0, sizeof(h));
    h.type = VB_MSG_CTRL;
    h.len = len;
    op->kind = slot != NULL ? VB_OP_TASK : VB_OP_PROTO;
    op->slot = slot;
    vb_op_set_send(op, &h, data, len);
    vb_stage(nic, ep, op);
    return OC_OK;
}

/* ---- tasks held in software: cancellation, a failed connection ------------- */

/* Whether a held task, of slot and coming or going through ep, is one that
 * end_held() ends; key says which (a list, a QP). */
typedef int (*vb_pick_fn)(const oc_nic_slot_t *slot, const oc_nic_ep_t *ep, const void *key);

/* Unlinks from *pr the RECV tasks that pick() onto *done. */
static void take_recvs(vb_recv_t **pr, vb_recv_t ***tail, vb_recv_t **done, vb_pick_fn pick,
                       const void *key)
{
    vb_recv_t *r;
    while ((r = *pr) != NULL)
        if (pick(r->slot, r->ep, key)) {
            *pr = r->next;
            r->next = *done;
            *done = r;
        } else {
            pr = &r->next;
        }
    if (tail != NULL)
        *tail = pr;
}

/* Ends the tasks of the receives that wait for a write and that pick(),
 * keeping the receives themselves (see vb_recv_t's slot). */
static unsigned abandon_writing(vb_nic_t *nic, vb_pick_fn pick, const void *key,
                                oc_status_t status)
{
    vb_recv_t *r, *ended = NULL;
    unsigned n = 0;
    for (r = nic->proto.writing; r != NULL; r = r->next)
        if (r->slot != NULL && pick(r->slot, r->ep, key)) {
            r->ended = r->slot;
            r->slot = NULL;
            r->ended_next = ended;
            ended = r;
        }
    for (r = ended; r != NULL; r = r->ended_next, n++)
        vb_task_finished(nic, r->ended, status);
    return n;
}

/* Ends with status the RECV tasks and waiting rendezvous SENDs that pick():
 * unlinked first, finished after, since finishing may start a list's
 * trigger, which may post more. Receives that wait for a write stay
 * (abandon_writing) unless their QP has failed (keep_writing 0). */
static unsigned end_held(vb_nic_t *nic, vb_pick_fn pick, const void *key, oc_status_t status,
                         int keep_writing)
{
    vb_proto_t *p = &nic->proto;
    vb_recv_t *r, *done = NULL;
    vb_rndv_send_t **ps, *sends = NULL, *rs;
    unsigned n = 0;

    take_recvs(&p->expected, &p->expected_tail, &done, pick, key);
    if (!keep_writing)
        take_recvs(&p->writing, NULL, &done, pick, key);
    for (ps = &p->rts; (rs = *ps) != NULL;)
        if (pick(rs->slot, rs->ep, key)) {
            *ps = rs->next;
            rs->next = sends;
            sends = rs;
        } else {
            ps = &rs->next;
        }
    while ((rs = sends) != NULL) {
        sends = rs->next;
        vb_task_finished(nic, rs->slot, status);
        oc_pool_put(&p->sends, rs);
        n++;
    }
    while ((r = done) != NULL) {
        done = r->next;
        finish_recv(nic, r, status);
        n++;
    }
    if (keep_writing)
        n += abandon_writing(nic, pick, key, status);
    return n;
}

static int of_list(const oc_nic_slot_t *slot, const oc_nic_ep_t *ep, const void *list)
{
    (void)ep;
    return slot != NULL && slot->list == list;
}

void vb_proto_cancel(vb_nic_t *nic, oc_nic_list_t *list, oc_status_t status)
{
    end_held(nic, of_list, list, status, 1);
}

static int through(const oc_nic_slot_t *slot, const oc_nic_ep_t *ep, const void *qp)
{
    (void)slot;
    return ep == qp;
}

/* A QP in error completes nothing more: what waits on a message or an RTR
 * through it would otherwise wait until OC_TIMEOUT_S, and the timeout's
 * diagnosis, whose queries go the same way, would blame the peers. */
void vb_proto_peer_failed(vb_nic_t *nic, oc_nic_ep_t *ep, const char *why)
{
    oc_status_t st = oc_error(OC_ERR_BACKEND, "verbs: the connection to QP 0x%x failed (%s)",
                              ep->peer_qpn, why);
    unsigned n = end_held(nic, through, ep, st, 0);
    oc_warn("verbs: the connection to QP 0x%x failed (%s); %u transfer(s) waiting on it "
            "end with an error", ep->peer_qpn, why, n);
}

/* ---- control messages ----------------------------------------------------------- */

void vb_proto_fini(vb_proto_t *p)
{
    while (p->expected != NULL) {
        vb_recv_t *r = p->expected;
        p->expected = r->next;
        oc_pool_put(&p->recvs, r);
    }
    while (p->writing != NULL) {
        vb_recv_t *r = p->writing;
        p->writing = r->next;
        oc_pool_put(&p->recvs, r);
    }
    while (p->unexp != NULL) {
        vb_unexp_t *x = p->unexp;
        p->unexp = x->next;
        if (x->held == NULL) /* a held one goes with its QP */
            oc_pool_put(unexp_pool(p, &x->hdr), x);
    }
    while (p->rts != NULL) {
        vb_rndv_send_t *rs = p->rts;
        p->rts = rs->next;
        oc_pool_put(&p->sends, rs);
    }
    oc_pool_fini(&p->recvs);
    oc_pool_fini(&p->early_hdrs);
    oc_pool_fini(&p->early_data);
    oc_pool_fini(&p->sends);
    oc_nic_amq_fini(&p->am);
}
