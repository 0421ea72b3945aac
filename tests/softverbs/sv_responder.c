/*
 * The responder side of RC: a request is checked against the QP's
 * connection and expected PSN (a mismatch is dropped silently, as a NIC
 * drops a stray packet, and the requester times out), then against keys,
 * access and bounds before any byte moves. Data moves straight between
 * the two address spaces with process_vm_readv/writev.
 */
#include "sv_internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>

/* The target range of an RDMA request, or NULL: remote access error. */
static void *remote_range(struct sv_ctx *ctx, const struct sv_qp *qp, const struct sv_msg *m, unsigned int need)
{
    const struct sv_mr *mr = sv_mr_find(ctx, m->rkey);
    if (mr == NULL || mr->ibv.pd != qp->ibv.pd || (mr->access & need) != need) {
        return NULL;
    }
    return sv_mr_translate(mr, m->remote_addr, m->length);
}

static int remote_iov(const struct sv_msg *m, struct iovec *iov)
{
    for (uint32_t i = 0; i < m->num_sge; i++) {
        iov[i].iov_base = (void *)(uintptr_t)m->sge[i].addr;
        iov[i].iov_len = m->sge[i].len;
    }
    return (int)m->num_sge;
}

/* A short or refused cross-process copy is a remote operation error; a
 * refusal is a host setting, so say which. */
static bool copied(ssize_t done, uint32_t want, int32_t pid)
{
    if (done == (ssize_t)want) {
        return true;
    }
    if (done < 0 && errno == EPERM) {
        fprintf(stderr, "softverbs: the kernel refuses process_vm_readv/writev with pid %d (EPERM): "
                        "cross-process transfers need ptrace permission (same uid and "
                        "kernel.yama.ptrace_scope=0, or CAP_SYS_PTRACE)\n", (int)pid);
    }
    return false;
}

/* Bring the request's payload into local iovecs covering m->length. */
static bool pull(const struct sv_msg *m, const struct iovec *local, int n)
{
    if (m->length == 0) {
        return true;
    }
    if (m->inline_len > 0) {
        size_t done = 0;
        for (int i = 0; i < n; i++) {
            memcpy(local[i].iov_base, m->inline_data + done, local[i].iov_len);
            done += local[i].iov_len;
        }
        return true;
    }
    struct iovec remote[SV_MAX_SGE];
    int rn = remote_iov(m, remote);
    return copied(process_vm_readv(m->src_pid, local, (unsigned long)n, remote, (unsigned long)rn, 0), m->length,
                  m->src_pid);
}

static void complete_recv(struct sv_qp *qp, const struct sv_msg *m, enum ibv_wc_status status)
{
    bool rdma = m->opcode == IBV_WR_RDMA_WRITE_WITH_IMM;
    struct ibv_wc wc = {
        .wr_id = qp->rq[qp->rq_next % qp->rq_size].wr_id,
        .status = status,
        .opcode = rdma ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV,
        .byte_len = m->length,
        .imm_data = m->has_imm ? m->imm : 0,
        .wc_flags = m->has_imm ? IBV_WC_WITH_IMM : 0,
        .qp_num = qp->ibv.qp_num,
        .src_qp = m->src_qpn,
        .slid = sv_ctx_of(qp->ibv.context)->ethernet ? 0 : m->src_lid, /* RoCE has no LIDs */
    };
    qp->rq_next++;
    sv_cq_push(sv_container_of(qp->ibv.recv_cq, struct sv_cq, ibv), &wc, m->solicited, NULL, 0);
    if (status != IBV_WC_SUCCESS) {
        sv_qp_set_error(qp);
    }
}

static enum sv_nak rdma_write(struct sv_ctx *ctx, struct sv_qp *qp, const struct sv_msg *m)
{
    bool imm = m->opcode == IBV_WR_RDMA_WRITE_WITH_IMM;
    if (!(qp->attr.qp_access_flags & IBV_ACCESS_REMOTE_WRITE)) {
        return SV_NAK_INV_REQ;
    }
    if (imm && qp->rq_next == qp->rq_posted) {
        return SV_NAK_RNR;
    }
    /* A zero-length write checks no key (IB spec), so the trigger QP
     * needs no memory region. */
    if (m->length > 0) {
        struct iovec dst = {.iov_base = remote_range(ctx, qp, m, IBV_ACCESS_REMOTE_WRITE), .iov_len = m->length};
        if (dst.iov_base == NULL) {
            return SV_NAK_ACCESS;
        }
        if (!pull(m, &dst, 1)) {
            return SV_NAK_OP_ERR;
        }
    }
    if (imm) {
        complete_recv(qp, m, IBV_WC_SUCCESS);
    }
    return SV_NAK_NONE;
}

static enum sv_nak rdma_read(struct sv_ctx *ctx, struct sv_qp *qp, const struct sv_msg *m)
{
    if (!(qp->attr.qp_access_flags & IBV_ACCESS_REMOTE_READ)) {
        return SV_NAK_INV_REQ;
    }
    if (m->length == 0) {
        return SV_NAK_NONE;
    }
    struct iovec src = {.iov_base = remote_range(ctx, qp, m, IBV_ACCESS_REMOTE_READ), .iov_len = m->length};
    if (src.iov_base == NULL) {
        return SV_NAK_ACCESS;
    }
    struct iovec remote[SV_MAX_SGE];
    int rn = remote_iov(m, remote);
    if (!copied(process_vm_writev(m->src_pid, &src, 1, remote, (unsigned long)rn, 0), m->length, m->src_pid)) {
        return SV_NAK_OP_ERR;
    }
    return SV_NAK_NONE;
}

/* A send lands in the next posted receive, scattered over its SGEs. */
static enum sv_nak send_into_recv(struct sv_ctx *ctx, struct sv_qp *qp, const struct sv_msg *m)
{
    if (qp->rq_next == qp->rq_posted) {
        return SV_NAK_RNR;
    }
    const struct sv_rwr *r = &qp->rq[qp->rq_next % qp->rq_size];
    struct iovec local[SV_MAX_SGE];
    int n = 0;
    uint64_t room = 0;
    for (int i = 0; i < r->num_sge && room < m->length; i++) {
        const struct ibv_sge *s = &r->sge[i];
        if (s->length == 0) {
            continue;
        }
        const struct sv_mr *mr = sv_mr_find(ctx, s->lkey);
        void *va = mr != NULL ? sv_mr_translate(mr, s->addr, s->length) : NULL;
        if (va == NULL || mr->ibv.pd != qp->ibv.pd || !(mr->access & IBV_ACCESS_LOCAL_WRITE)) {
            complete_recv(qp, m, IBV_WC_LOC_PROT_ERR);
            return SV_NAK_OP_ERR;
        }
        uint64_t take = m->length - room < s->length ? m->length - room : s->length;
        local[n].iov_base = va;
        local[n].iov_len = take;
        n++;
        room += take;
    }
    if (room < m->length) {
        complete_recv(qp, m, IBV_WC_LOC_LEN_ERR);
        return SV_NAK_INV_REQ;
    }
    if (!pull(m, local, n)) {
        complete_recv(qp, m, IBV_WC_LOC_ACCESS_ERR);
        return SV_NAK_OP_ERR;
    }
    complete_recv(qp, m, IBV_WC_SUCCESS);
    return SV_NAK_NONE;
}

static enum sv_nak execute(struct sv_ctx *ctx, struct sv_qp *qp, const struct sv_msg *m)
{
    switch (m->opcode) {
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM:
        return rdma_write(ctx, qp, m);
    case IBV_WR_RDMA_READ:
        return rdma_read(ctx, qp, m);
    case IBV_WR_SEND:
    case IBV_WR_SEND_WITH_IMM:
        return send_into_recv(ctx, qp, m);
    default:
        return SV_NAK_INV_REQ;
    }
}

void sv_responder_request(struct sv_ctx *ctx, const struct sv_msg *m)
{
    struct sv_qp *qp = sv_qp_lookup(ctx, m->dst_qpn);
    if (qp == NULL || (qp->attr.qp_state != IBV_QPS_RTR && qp->attr.qp_state != IBV_QPS_RTS) ||
        qp->attr.dest_qp_num != m->src_qpn || qp->remote_lid != m->src_lid || qp->attr.rq_psn != m->psn) {
        return;
    }
    enum sv_nak nak = execute(ctx, qp, m);
    if (nak == SV_NAK_NONE) {
        qp->attr.rq_psn = (qp->attr.rq_psn + 1) & SV_PSN_MASK;
    }
    struct sv_msg r = {
        .type = nak == SV_NAK_NONE ? SV_MSG_ACK : SV_MSG_NAK,
        .nak = (uint8_t)nak,
        .min_rnr_timer = qp->attr.min_rnr_timer,
        .src_lid = ctx->lid,
        .src_qpn = qp->ibv.qp_num,
        .dst_qpn = m->src_qpn,
        .psn = m->psn,
    };
    sv_send(ctx, m->src_lid, &r);
}
