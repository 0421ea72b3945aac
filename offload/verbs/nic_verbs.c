/*
 * Verbs backend: the ops table. One RC QP per peer process, one send CQ and
 * one receive CQ for all of them, the loopback trigger QP with its own CQ,
 * and one completion channel for the three, whose fd the progress thread
 * sleeps on. A task list becomes one chain of work requests per QP:
 *   SEND, RECV  the two-sided protocol (verbs_proto.c)
 *   PUT         RDMA write into the peer's window (its rkey from mem_pack),
 *               cut into several at the port's largest message
 *   FLUSH       a zero-byte RDMA write: RC completes in order, so its
 *               completion means every earlier put to the peer has landed
 *   NOTIFY      a control message behind the puts on the same QP: RC places
 *               their data before the message's receive completes
 * and ends with the trigger (verbs_trigger.c), which calls done().
 */
#include "verbs_internal.h"
#include "oc_error.h"
#include "oc_list.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define POLL_BATCH 32

struct oc_nic_mem {
    struct ibv_mr *mr;
    void *addr;
    size_t size;
    struct oc_nic_mem *next, **prev; /* in nic->mems */
};

struct oc_nic_rkey {
    uint32_t rkey;
    struct oc_nic_rkey *next, **prev; /* in nic->rkeys */
};

/* ---- task and work-request completion ------------------------------------------- */

/* A task's handle counts its unfinished pieces, so that it is NULL once the
 * last one finishes (oc_nic.h): 1 when posted, more when its write is cut. */
static void add_pieces(oc_nic_slot_t *slot, uintptr_t n)
{
    slot->handle = (void *)((uintptr_t)slot->handle + n);
}

void vb_task_finished(vb_nic_t *nic, oc_nic_slot_t *slot, oc_status_t status)
{
    oc_nic_list_t *list = slot->list;
    add_pieces(slot, (uintptr_t)-1);
    oc_nic_list_fail(list, status);
    if (--list->outstanding == 0)
        vb_trigger_list_idle(nic, list);
}

void vb_op_done(vb_nic_t *nic, vb_op_t *op, oc_status_t status)
{
    switch (op->kind) {
    case VB_OP_TASK:
        vb_task_finished(nic, op->slot, status);
        break;
    case VB_OP_TRIGGER:
        vb_trigger_fired(nic, op, status);
        break;
    case VB_OP_PROTO:
        oc_notice(nic->verbose && status != OC_OK, "verbs: a protocol message failed: %s",
                  oc_last_error());
        break;
    case VB_OP_WAIT:
        break;
    }
    vb_op_put(nic, op);
}

static const char *opcode_name(enum ibv_wr_opcode op)
{
    switch (op) {
    case IBV_WR_SEND: return "send";
    case IBV_WR_RDMA_WRITE: return "RDMA write";
    case IBV_WR_RDMA_WRITE_WITH_IMM: return "RDMA write with immediate";
    default: return "work request";
    }
}

static void send_completed(vb_nic_t *nic, const struct ibv_wc *wc)
{
    vb_op_t *op = (vb_op_t *)(uintptr_t)wc->wr_id;
    oc_status_t st = OC_OK;

    if (op == NULL)
        return; /* a flushed WAIT */
    vb_sq_release(nic, op);
    if (wc->status != IBV_WC_SUCCESS) {
        vb_qp_failed(nic, op->ep, ibv_wc_status_str(wc->status));
        st = oc_error(OC_ERR_BACKEND, "verbs: %s on QP 0x%x to QP 0x%x failed: %s",
                      opcode_name(op->wr.opcode), wc->qp_num, op->ep->peer_qpn,
                      ibv_wc_status_str(wc->status));
    }
    vb_op_done(nic, op, st);
}

static void recv_completed(vb_nic_t *nic, const struct ibv_wc *wc)
{
    vb_rbuf_t *rb = (vb_rbuf_t *)(uintptr_t)wc->wr_id;
    if (wc->status != IBV_WC_SUCCESS) {
        /* A QP in error flushes its receives: posting again would loop. */
        if (wc->status != IBV_WC_WR_FLUSH_ERR || !nic->flush_reported)
            oc_warn("verbs: receive on QP 0x%x failed: %s; the peer is unreachable",
                    wc->qp_num, ibv_wc_status_str(wc->status));
        nic->flush_reported |= wc->status == IBV_WC_WR_FLUSH_ERR;
        vb_qp_failed(nic, rb->ep, ibv_wc_status_str(wc->status));
        return;
    }
    if (!vb_proto_arrival(nic, wc, rb) && vb_qp_repost(nic, rb) != OC_OK)
        oc_warn("%s", oc_last_error());
}

static unsigned poll_cq(vb_nic_t *nic, struct ibv_cq *cq,
                        void (*handle)(vb_nic_t *nic, const struct ibv_wc *wc))
{
    struct ibv_wc wc[POLL_BATCH];
    int i, n = ibv_poll_cq(cq, POLL_BATCH, wc);
    for (i = 0; i < n; i++)
        handle(nic, &wc[i]);
    return n > 0 ? (unsigned)n : 0;
}

static unsigned drain(vb_nic_t *nic)
{
    unsigned n = poll_cq(nic, nic->dev.scq, send_completed);
    n += poll_cq(nic, nic->dev.rcq, recv_completed);
    n += poll_cq(nic, nic->dev.tcq, send_completed);
    vb_flush(nic);
    return n + oc_nic_amq_deliver(&nic->proto.am, &nic->base);
}

/* ---- lists --------------------------------------------------------------------------- */

/* Self: the peer is this process, which has no QP to itself. */
static oc_status_t do_local(vb_nic_t *nic, const oc_task_t *t)
{
    if (oc_nic_do_self(&nic->proto.am, "verbs", t))
        return OC_OK;
    return oc_error(OC_ERR_INVALID_ARG, "verbs: a %s task to this process itself",
                    t->type == OC_TASK_SEND ? "send" : "receive");
}

oc_status_t vb_stage_writes(vb_nic_t *nic, oc_nic_ep_t *ep, oc_nic_slot_t *slot,
                            const char *src, size_t len, uint64_t raddr, uint32_t rkey,
                            int with_imm, uint32_t imm)
{
    size_t max = nic->dev.max_msg, nwr = len > max ? (len + max - 1) / max : 1, i;
    vb_op_t *head = NULL, **tail = &head, *op;

    /* Everything is had before anything is staged: on failure the task has
     * no WR in flight and ends once, as if it had one. */
    for (i = 0; i < nwr; i++) {
        size_t off = i * max, n = len - off < max ? len - off : max;
        oc_status_t st = OC_OK;
        if ((op = vb_op_get(nic)) == NULL)
            st = oc_error(OC_ERR_NO_MEMORY, "verbs: RDMA write");
        else if (n > 0 && (st = vb_mr_get(&nic->mrs, src + off, n, 0, &op->mr)) != OC_OK)
            vb_op_put(nic, op);
        if (st != OC_OK) {
            while ((op = head) != NULL) {
                head = op->next;
                vb_op_put(nic, op);
            }
            return st;
        }
        op->kind = VB_OP_TASK;
        op->slot = slot;
        op->wr.opcode = with_imm && i == nwr - 1 ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE;
        op->wr.imm_data = htonl(imm);
        if (n > 0) {
            op->sge.addr = (uintptr_t)(src + off);
            op->sge.length = (uint32_t)n;
            op->sge.lkey = op->mr->mr->lkey;
            op->wr.sg_list = &op->sge;
            op->wr.num_sge = 1;
        }
        op->wr.wr.rdma.remote_addr = raddr + off;
        op->wr.wr.rdma.rkey = rkey;
        *tail = op;
        tail = &op->next;
    }
    /* each WR's completion finishes the task once */
    slot->list->outstanding += nwr - 1;
    add_pieces(slot, nwr - 1);
    while ((op = head) != NULL) {
        head = op->next;
        vb_stage(nic, ep, op);
    }
    return OC_OK;
}

static oc_status_t post_task(vb_nic_t *nic, oc_nic_slot_t *slot, const oc_task_t *t)
{
    oc_nic_ep_t *ep = slot->list->match->eps[t->peer];
    switch (t->type) {
    case OC_TASK_SEND: return vb_proto_send(nic, slot);
    case OC_TASK_RECV: return vb_proto_recv(nic, slot);
    case OC_TASK_NOTIFY: return vb_proto_ctrl(nic, ep, t->src, t->len, slot);
    case OC_TASK_PUT:
        return vb_stage_writes(nic, ep, slot, t->src, t->len, t->raddr,
                               ((const oc_nic_rkey_t *)t->obj)->rkey, 0, 0);
    case OC_TASK_FLUSH: /* zero bytes, no key checked */
        return vb_stage_writes(nic, ep, slot, NULL, 0, 0, 0, 0, 0);
    default:
        return oc_error(OC_ERR_INTERNAL, "verbs: task type %d reached the backend", (int)t->type);
    }
}

static void vb_cancel_list(oc_nic_t *base, oc_nic_list_t *list, oc_status_t why)
{
    /* Posted work requests cannot be taken back: they finish on their own. */
    vb_proto_cancel((vb_nic_t *)base, list, why);
    vb_flush((vb_nic_t *)base);
}

static int has_network_task(const oc_nic_list_t *list)
{
    size_t i;
    for (i = 0; i < list->ntasks; i++)
        if (list->tasks[i].type != OC_TASK_COPY && list->tasks[i].peer != list->match->rank)
            return 1;
    return 0;
}

static oc_status_t vb_post_list(oc_nic_t *base, oc_nic_list_t *list)
{
    vb_nic_t *nic = (vb_nic_t *)base;
    int network = has_network_task(list);
    oc_status_t st = OC_OK;
    size_t i;

    oc_task_do_copies(list->tasks, list->ntasks);
    list->nic = base;
    list->status = OC_OK;
    list->fired = 0;
    /* The trigger first: if it cannot be had, nothing has been posted yet. */
    if (network && (st = vb_trigger_list_posted(nic, list)) != OC_OK)
        return st;
    /* One extra count, dropped after the loop, keeps the list from ending
     * while it is still being posted. */
    list->outstanding = 1;
    for (i = 0; i < list->ntasks && st == OC_OK; i++) {
        const oc_task_t *t = &list->tasks[i];
        oc_nic_slot_t *slot = &list->slots[i];
        if (t->type == OC_TASK_COPY)
            continue;
        slot->list = list;
        slot->handle = NULL;
        if (t->peer == list->match->rank) {
            st = do_local(nic, t);
            continue;
        }
        list->outstanding++;
        add_pieces(slot, 1);
        st = post_task(nic, slot, t);
        if (st != OC_OK) {
            list->outstanding--;
            slot->handle = NULL;
        }
    }
    if (st != OC_OK) {
        oc_nic_list_fail(list, st);
        vb_proto_cancel(nic, list, st);
    }
    if (--list->outstanding == 0) {
        if (!network)
            return list->status;
        vb_trigger_list_idle(nic, list);
    }
    vb_flush(nic);
    return OC_INPROGRESS;
}

/* ---- progress and sleep ---------------------------------------------------------- */

static unsigned vb_progress(oc_nic_t *base)
{
    vb_nic_t *nic = (vb_nic_t *)base;
    unsigned n = vb_dev_take_events(&nic->dev);
    return n + drain(nic);
}

/* Arm, then drain: a completion that came before the arming raises no event. */
static oc_status_t vb_arm(oc_nic_t *base)
{
    vb_nic_t *nic = (vb_nic_t *)base;
    oc_status_t st;
    if (oc_nic_amq_busy(&nic->proto.am))
        return OC_ERR_BUSY;
    st = vb_dev_arm(&nic->dev);
    if (st != OC_OK)
        return st;
    return drain(nic) > 0 ? OC_ERR_BUSY : OC_OK;
}

static int vb_event_fd(oc_nic_t *base)
{
    return ((vb_nic_t *)base)->dev.channel->fd;
}

static oc_status_t vb_am_send(oc_nic_t *base, oc_nic_ep_t *ep, const void *data, size_t len)
{
    vb_nic_t *nic = (vb_nic_t *)base;
    oc_status_t st = vb_proto_ctrl(nic, ep, data, len, NULL);
    vb_flush(nic);
    return st;
}

/* ---- connection ------------------------------------------------------------------- */

static oc_status_t vb_address(oc_nic_t *base, const void **addr, size_t *len)
{
    *addr = &((vb_nic_t *)base)->dev.addr;
    *len = sizeof(vb_addr_t);
    return OC_OK;
}

static oc_status_t vb_connect(oc_nic_t *base, const void *addr, size_t len, oc_nic_ep_t **ep)
{
    vb_addr_t peer;
    if (len != sizeof(peer))
        return oc_error(OC_ERR_MISMATCH, "verbs: a peer address of %zu bytes (expected %zu): "
                        "is every member on the verbs backend?", len, sizeof(peer));
    memcpy(&peer, addr, sizeof(peer));
    if (peer.ethernet != ((vb_nic_t *)base)->dev.addr.ethernet)
        return oc_error(OC_ERR_MISMATCH, "verbs: a peer on %s, this process on %s",
                        peer.ethernet ? "RoCE" : "InfiniBand",
                        peer.ethernet ? "InfiniBand" : "RoCE");
    return vb_qp_create((vb_nic_t *)base, &peer, 0, ep);
}

static oc_status_t vb_ep_wireup(oc_nic_t *base, oc_nic_ep_t *ep, void *blob)
{
    vb_wireup_t w = {ep->qp->qp_num, ep->psn};
    (void)base;
    memcpy(blob, &w, sizeof(w));
    return OC_OK;
}

static oc_status_t vb_ep_complete(oc_nic_t *base, oc_nic_ep_t *ep, const void *blob)
{
    vb_wireup_t w;
    memcpy(&w, blob, sizeof(w));
    if (ep->peer_qpn != 0) /* shared with an earlier team: connected already */
        return w.qpn == ep->peer_qpn
                   ? OC_OK
                   : oc_error(OC_ERR_MISMATCH, "verbs: peer QP 0x%x, connected to 0x%x before",
                              w.qpn, ep->peer_qpn);
    return vb_qp_connect((vb_nic_t *)base, ep, &w);
}

static void vb_ep_transports(oc_nic_t *base, oc_nic_ep_t *ep, char *buf, size_t size)
{
    vb_nic_t *nic = (vb_nic_t *)base;
    (void)ep;
    snprintf(buf, size, "rc/%s:%u", nic->dev.name, nic->dev.addr.port);
}

static void vb_describe_ep(oc_nic_t *base, oc_nic_ep_t *ep, FILE *out)
{
    vb_nic_t *nic = (vb_nic_t *)base;
    fprintf(out, "#   RC QP 0x%x on %s port %u (%s) -> QP 0x%x at LID %u; trigger: %s\n",
            ep->qp->qp_num, nic->dev.name, nic->dev.addr.port,
            nic->dev.addr.ethernet ? "RoCE" : "InfiniBand", ep->peer_qpn, ep->peer.lid,
            nic->trig.why);
}

/* ---- windows ------------------------------------------------------------------------ */

static oc_status_t vb_mem_alloc(oc_nic_t *base, size_t size, oc_nic_mem_t **out, void **addr)
{
    vb_nic_t *nic = (vb_nic_t *)base;
    oc_nic_mem_t *mem = calloc(1, sizeof(*mem));
    size_t page = (size_t)sysconf(_SC_PAGESIZE);

    if (mem == NULL || posix_memalign(&mem->addr, page, size ? size : 1) != 0) {
        free(mem);
        return oc_error(OC_ERR_NO_MEMORY, "verbs: window of %zu bytes", size);
    }
    memset(mem->addr, 0, size);
    mem->size = size;
    mem->mr = ibv_reg_mr(nic->dev.pd, mem->addr, size ? size : 1,
                         IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                             IBV_ACCESS_REMOTE_READ);
    if (mem->mr == NULL) {
        oc_status_t st = vb_errno("ibv_reg_mr of a window", errno);
        free(mem->addr);
        free(mem);
        return st;
    }
    OC_LIST_PUSH(&nic->mems, mem);
    *addr = mem->addr;
    *out = mem;
    return OC_OK;
}

static void vb_mem_free(oc_nic_t *base, oc_nic_mem_t *mem)
{
    (void)base;
    if (mem == NULL)
        return;
    OC_LIST_REMOVE(mem);
    ibv_dereg_mr(mem->mr);
    free(mem->addr);
    free(mem);
}

static oc_status_t vb_mem_pack(oc_nic_t *base, oc_nic_mem_t *mem, void **key, size_t *len)
{
    (void)base;
    *key = malloc(sizeof(uint32_t));
    if (*key == NULL)
        return oc_error(OC_ERR_NO_MEMORY, "verbs: packed key");
    memcpy(*key, &mem->mr->rkey, sizeof(uint32_t));
    *len = sizeof(uint32_t);
    return OC_OK;
}

static oc_status_t vb_rkey_unpack(oc_nic_t *base, oc_nic_ep_t *ep, const void *key, size_t len,
                                  oc_nic_rkey_t **out)
{
    vb_nic_t *nic = (vb_nic_t *)base;
    oc_nic_rkey_t *k;
    (void)ep;
    if (len < sizeof(uint32_t))
        return oc_error(OC_ERR_MISMATCH, "verbs: a window key of %zu bytes", len);
    k = malloc(sizeof(*k));
    if (k == NULL)
        return oc_error(OC_ERR_NO_MEMORY, "verbs: window key");
    memcpy(&k->rkey, key, sizeof(k->rkey));
    OC_LIST_PUSH(&nic->rkeys, k);
    *out = k;
    return OC_OK;
}

static void vb_rkey_destroy(oc_nic_t *base, oc_nic_rkey_t *rkey)
{
    (void)base;
    if (rkey == NULL)
        return;
    OC_LIST_REMOVE(rkey);
    free(rkey);
}

/* ---- instance ------------------------------------------------------------------------ */

static void vb_destroy(oc_nic_t *base)
{
    vb_nic_t *nic = (vb_nic_t *)base;
    if (nic == NULL)
        return;
    vb_proto_fini(&nic->proto);
    while (nic->eps != NULL) {
        oc_nic_ep_t *ep = nic->eps;
        nic->eps = ep->next;
        vb_qp_destroy(nic, ep);
    }
    /* Windows abandoned after a failure: no QP writes into them any more. */
    while (nic->mems != NULL)
        vb_mem_free(base, nic->mems);
    while (nic->rkeys != NULL)
        vb_rkey_destroy(base, nic->rkeys);
    vb_ops_fini(nic);
    vb_mr_cache_fini(&nic->mrs);
    vb_dev_close(&nic->dev);
    free(nic);
}

static const oc_nic_ops_t verbs_ops = {
    .destroy = vb_destroy,
    .address = vb_address,
    .connect = vb_connect,
    .wireup_len = sizeof(vb_wireup_t),
    .ep_wireup = vb_ep_wireup,
    .ep_complete = vb_ep_complete,
    .post_list = vb_post_list,
    .cancel_list = vb_cancel_list,
    .progress = vb_progress,
    .arm = vb_arm,
    .event_fd = vb_event_fd,
    .am_send = vb_am_send,
    .describe_ep = vb_describe_ep,
    .ep_transports = vb_ep_transports,
    .mem_alloc = vb_mem_alloc,
    .mem_free = vb_mem_free,
    .mem_pack = vb_mem_pack,
    .rkey_unpack = vb_rkey_unpack,
    .rkey_destroy = vb_rkey_destroy,
};

oc_status_t oc_nic_verbs_create(const oc_nic_params_t *params, oc_nic_t **out, char *info,
                                size_t size)
{
    vb_nic_t *nic = calloc(1, sizeof(*nic));
    unsigned max_peers;
    int given;
    oc_status_t st;

    if (nic == NULL) {
        snprintf(info, size, "out of memory");
        return oc_error(OC_ERR_NO_MEMORY, "verbs: backend");
    }
    nic->base.ops = &verbs_ops;
    nic->verbose = params->verbose;
    st = vb_trigger_parse(&nic->trig.mode);
    if (st == OC_OK)
        st = vb_dev_parse_max_peers(&max_peers, &given);
    if (st != OC_OK) {
        snprintf(info, size, "%s", oc_last_error());
        free(nic);
        return st;
    }
    st = vb_dev_open(&nic->dev, max_peers, given, info, size);
    if (st != OC_OK) {
        free(nic);
        return oc_error(st, "%s", info);
    }
    vb_mr_cache_init(&nic->mrs, nic->dev.pd, 1);
    oc_notice(nic->verbose && nic->dev.fork_init != 0,
              "verbs: ibv_fork_init: %s (verbs was in use before offcoll); fork() while "
              "buffers are registered is safe only on kernels with copy-on-fork (5.13+)",
              strerror(nic->dev.fork_init));
    st = vb_proto_init(&nic->proto);
    if (st == OC_OK)
        st = vb_ops_init(nic);
    if (st == OC_OK)
        st = vb_trigger_open(nic);
    if (st != OC_OK) {
        snprintf(info, size, "%s", oc_last_error());
        vb_destroy(&nic->base);
        return st;
    }
    snprintf(info, size, "%s port %u (%s, LID %u), trigger: %s, registration cache: %s, "
             "up to %u peers", nic->dev.name, nic->dev.addr.port,
             nic->dev.addr.ethernet ? "RoCE" : "InfiniBand", nic->dev.addr.lid, nic->trig.why,
             nic->mrs.hooked ? "on" : "off (no UCX memory events)", nic->dev.max_peers);
    *out = &nic->base;
    return OC_OK;
}
