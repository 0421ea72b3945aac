/*
 * The requester side of RC: each QP executes its send queue in order, one
 * WR in flight at a time, and moves on only when the responder has ACKed
 * it; a NAK or a timeout completes the WR in error and takes the QP to the
 * error state, which flushes everything behind it. RNR NAKs are counted
 * per context and per process for softverbs_query_stats.
 */
#include "softverbs.h"
#include "sv_internal.h"

#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

/* RNR NAKs of every context this process opened: outlives the contexts. */
static _Atomic uint64_t sv_process_rnr_naks;

/* IB's RNR timer encoding (min_rnr_timer), in units of 10 ns. */
static const uint32_t sv_rnr_delay_10ns[32] = {
    65536000, 1000,    2000,    3000,    4000,    6000,    8000,    12000,   16000,   24000,   32000,
    48000,    64000,   96000,   128000,  192000,  256000,  384000,  512000,  768000,  1024000, 1536000,
    2048000,  3072000, 4096000, 6144000, 8192000, 12288000, 16384000, 24576000, 32768000, 49152000,
};

/* Transport timeout: 4.096 us * 2^timeout per try, retry_cnt retries. */
static uint64_t retry_window_ns(const struct sv_qp *qp)
{
    if (qp->attr.timeout == 0) {
        return 0; /* infinite */
    }
    uint64_t ns = (4096ull << qp->attr.timeout) * (qp->attr.retry_cnt + 1ull);
    return ns > SV_MIN_RETRY_NS ? ns : SV_MIN_RETRY_NS;
}

/* Check the WR's local SGEs against their MRs and note where the data
 * lies: false is a local protection error. */
static bool gather_local(struct sv_ctx *ctx, const struct sv_qp *qp, const struct sv_swr *w, struct sv_msg *m)
{
    unsigned int need = w->opcode == IBV_WR_RDMA_READ ? IBV_ACCESS_LOCAL_WRITE : 0;
    for (int i = 0; i < w->num_sge; i++) {
        const struct ibv_sge *s = &w->sge[i];
        if (s->length == 0) {
            continue;
        }
        const struct sv_mr *mr = sv_mr_find(ctx, s->lkey);
        void *va = mr != NULL ? sv_mr_translate(mr, s->addr, s->length) : NULL;
        if (va == NULL || mr->ibv.pd != qp->ibv.pd || (mr->access & need) != need) {
            return false;
        }
        m->sge[m->num_sge].addr = (uintptr_t)va;
        m->sge[m->num_sge].len = s->length;
        m->num_sge++;
        m->length += s->length;
    }
    return true;
}

static void fail(struct sv_qp *qp, enum ibv_wc_status status)
{
    sv_qp_complete_send(qp, status, true);
    sv_qp_set_error(qp);
}

static void start_wr(struct sv_ctx *ctx, struct sv_qp *qp, const struct sv_swr *w, uint64_t now)
{
    struct sv_msg *m = &qp->flight;
    memset(m, 0, offsetof(struct sv_msg, inline_data));
    m->type = SV_MSG_REQ;
    m->opcode = (uint8_t)w->opcode;
    m->has_imm = w->opcode == IBV_WR_RDMA_WRITE_WITH_IMM || w->opcode == IBV_WR_SEND_WITH_IMM;
    m->imm = w->imm;
    m->solicited = (w->send_flags & IBV_SEND_SOLICITED) != 0;
    m->src_lid = ctx->lid;
    m->src_pid = (int32_t)getpid();
    m->src_qpn = qp->ibv.qp_num;
    m->dst_qpn = qp->attr.dest_qp_num;
    m->psn = qp->attr.sq_psn;
    m->remote_addr = w->remote_addr;
    m->rkey = w->rkey;
    if (w->send_flags & IBV_SEND_INLINE) {
        m->inline_len = w->inline_len;
        m->length = w->inline_len;
        memcpy(m->inline_data, w->inline_data, w->inline_len);
    } else if (!gather_local(ctx, qp, w, m)) {
        fail(qp, IBV_WC_LOC_PROT_ERR);
        return;
    }
    if (m->length > ctx->max_msg_sz) {
        fail(qp, IBV_WC_LOC_LEN_ERR);
        return;
    }
    qp->in_flight = true;
    qp->rnr_left = qp->attr.rnr_retry;
    uint64_t window = retry_window_ns(qp);
    qp->retry_deadline = window != 0 ? now + window : 0;
    sv_send(ctx, qp->remote_lid, m);
}

static uint64_t earliest(uint64_t a, uint64_t b)
{
    return a != 0 && a < b ? a : b;
}

static uint64_t advance_qp(struct sv_ctx *ctx, struct sv_qp *qp, uint64_t now)
{
    if (qp->attr.qp_state != IBV_QPS_RTS) {
        return UINT64_MAX;
    }
    if (qp->in_flight) {
        if (qp->rnr_resend_at != 0 && now >= qp->rnr_resend_at) {
            uint64_t window = retry_window_ns(qp);
            qp->rnr_resend_at = 0;
            qp->retry_deadline = window != 0 ? now + window : 0;
            sv_send(ctx, qp->remote_lid, &qp->flight);
        } else if (qp->retry_deadline != 0 && now >= qp->retry_deadline) {
            fail(qp, IBV_WC_RETRY_EXC_ERR);
            return UINT64_MAX;
        }
        return earliest(qp->rnr_resend_at, earliest(qp->retry_deadline, UINT64_MAX));
    }
    while (qp->sq_next < qp->sq_posted && qp->attr.qp_state == IBV_QPS_RTS && !qp->in_flight) {
        const struct sv_swr *w = &qp->sq[qp->sq_next % qp->sq_size];
        if (w->opcode == SV_OP_WAIT) {
            if (w->wait_cq->total < w->wait_target) {
                break;
            }
            sv_qp_pass_wait(qp);
            continue;
        }
        start_wr(ctx, qp, w, now);
    }
    return qp->in_flight ? earliest(qp->retry_deadline, UINT64_MAX) : UINT64_MAX;
}

uint64_t sv_requester_advance(struct sv_ctx *ctx, uint64_t now)
{
    uint64_t next;
    /* A completion produced on the way may release a WAIT of a QP already
     * visited: go round until nothing new completes. */
    do {
        ctx->progressed = false;
        next = UINT64_MAX;
        for (int i = 0; i < SV_MAX_QP; i++) {
            if (ctx->qps[i] != NULL) {
                uint64_t t = advance_qp(ctx, ctx->qps[i], now);
                next = t < next ? t : next;
            }
        }
    } while (ctx->progressed);
    return next;
}

static enum ibv_wc_status nak_status(enum sv_nak nak)
{
    switch (nak) {
    case SV_NAK_ACCESS:
        return IBV_WC_REM_ACCESS_ERR;
    case SV_NAK_INV_REQ:
        return IBV_WC_REM_INV_REQ_ERR;
    default:
        return IBV_WC_REM_OP_ERR;
    }
}

void sv_requester_response(struct sv_ctx *ctx, const struct sv_msg *m, uint64_t now)
{
    struct sv_qp *qp = sv_qp_lookup(ctx, m->dst_qpn);
    if (qp == NULL || qp->attr.qp_state != IBV_QPS_RTS || !qp->in_flight || m->psn != qp->flight.psn ||
        m->src_qpn != qp->attr.dest_qp_num) {
        return; /* late answer to a WR that timed out or was flushed */
    }
    if (m->type == SV_MSG_ACK) {
        qp->attr.sq_psn = (qp->attr.sq_psn + 1) & SV_PSN_MASK;
        sv_qp_complete_send(qp, IBV_WC_SUCCESS, false);
        return;
    }
    if (m->nak != SV_NAK_RNR) {
        fail(qp, nak_status(m->nak));
        return;
    }
    ctx->rnr_naks++;
    atomic_fetch_add(&sv_process_rnr_naks, 1);
    if (qp->rnr_left == 0) {
        fail(qp, IBV_WC_RNR_RETRY_EXC_ERR);
    } else {
        if (qp->rnr_left != 7) { /* 7: retry for ever */
            qp->rnr_left--;
        }
        qp->rnr_resend_at = now + sv_rnr_delay_10ns[m->min_rnr_timer & 31] * 10ull;
        qp->retry_deadline = 0;
    }
}

SV_EXPORT int softverbs_query_stats(struct ibv_context *context, struct softverbs_stats *stats)
{
    if (stats == NULL) {
        return EINVAL;
    }
    if (context == NULL) {
        stats->rnr_naks = atomic_load(&sv_process_rnr_naks);
        stats->mr_registrations = sv_mr_registrations_total();
        return 0;
    }
    if (!sv_is_ours(context)) {
        return ENODEV;
    }
    struct sv_ctx *ctx = sv_ctx_of(context);
    pthread_mutex_lock(&ctx->lock);
    stats->rnr_naks = ctx->rnr_naks;
    stats->mr_registrations = ctx->mr_registrations;
    pthread_mutex_unlock(&ctx->lock);
    return 0;
}
