/*
 * RC queue pairs: creation, the state machine with the attribute masks the
 * kernel requires, posting, and the error state that flushes every
 * outstanding work request.
 */
#include "softverbs.h"
#include "sv_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

SV_EXPORT struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *init)
{
    if (pd == NULL || init == NULL || !sv_is_ours(pd->context) || init->send_cq == NULL || init->recv_cq == NULL ||
        init->send_cq->context != pd->context || init->recv_cq->context != pd->context) {
        errno = EINVAL;
        return NULL;
    }
    if (init->qp_type != IBV_QPT_RC || init->srq != NULL) {
        errno = EOPNOTSUPP;
        return NULL;
    }
    struct ibv_qp_cap *cap = &init->cap;
    if (cap->max_send_wr > SV_MAX_QP_WR || cap->max_recv_wr > SV_MAX_QP_WR ||
        cap->max_send_sge > SV_MAX_SGE || cap->max_recv_sge > SV_MAX_SGE || cap->max_inline_data > SV_MAX_INLINE) {
        errno = EINVAL;
        return NULL;
    }
    struct sv_ctx *ctx = sv_ctx_of(pd->context);
    struct sv_qp *qp = calloc(1, sizeof *qp);
    /* A queue of capacity 0 (send- or receive-only QP) still gets a slot
     * so that the ring arithmetic needs no special case. */
    uint32_t sq_size = cap->max_send_wr > 0 ? cap->max_send_wr : 1;
    uint32_t rq_size = cap->max_recv_wr > 0 ? cap->max_recv_wr : 1;
    if (qp != NULL) {
        qp->sq = calloc(sq_size, sizeof *qp->sq);
        qp->rq = calloc(rq_size, sizeof *qp->rq);
    }
    if (qp == NULL || qp->sq == NULL || qp->rq == NULL) {
        if (qp != NULL) {
            free(qp->sq);
            free(qp->rq);
        }
        free(qp);
        errno = ENOMEM;
        return NULL;
    }
    qp->cap = *cap;
    qp->sq_size = sq_size;
    qp->rq_size = rq_size;
    qp->sq_sig_all = init->sq_sig_all != 0;
    qp->ibv.context = pd->context;
    qp->ibv.qp_context = init->qp_context;
    qp->ibv.pd = pd;
    qp->ibv.send_cq = init->send_cq;
    qp->ibv.recv_cq = init->recv_cq;
    qp->ibv.qp_type = IBV_QPT_RC;
    qp->ibv.state = IBV_QPS_RESET;
    qp->attr.qp_state = IBV_QPS_RESET;
    qp->attr.cap = *cap;
    pthread_mutex_init(&qp->ibv.mutex, NULL);
    pthread_cond_init(&qp->ibv.cond, NULL);

    pthread_mutex_lock(&ctx->lock);
    int slot = 0;
    while (slot < SV_MAX_QP && ctx->qps[slot] != NULL) {
        slot++;
    }
    if (slot == SV_MAX_QP) {
        pthread_mutex_unlock(&ctx->lock);
        free(qp->sq);
        free(qp->rq);
        free(qp);
        errno = ENOMEM;
        return NULL;
    }
    qp->ibv.qp_num = (uint32_t)ctx->lid << SV_QPN_BITS | (uint32_t)slot;
    ctx->qps[slot] = qp;
    sv_container_of(init->send_cq, struct sv_cq, ibv)->refs++;
    sv_container_of(init->recv_cq, struct sv_cq, ibv)->refs++;
    ctx->objects++;
    pthread_mutex_unlock(&ctx->lock);
    return &qp->ibv;
}

/* A queued WAIT holds a reference on its CQ, so that the CQ cannot be
 * destroyed under it; the reference goes when the WAIT leaves the queue. */
static void release_wait(struct sv_swr *w)
{
    if (w->opcode == SV_OP_WAIT && w->wait_cq != NULL) {
        w->wait_cq->refs--;
        w->wait_cq = NULL;
    }
}

static void drop_queued(struct sv_qp *qp)
{
    for (uint64_t pos = qp->sq_next; pos < qp->sq_posted; pos++) {
        release_wait(&qp->sq[pos % qp->sq_size]);
    }
}

SV_EXPORT int ibv_destroy_qp(struct ibv_qp *ibv_qp)
{
    if (ibv_qp == NULL || !sv_is_ours(ibv_qp->context)) {
        return EINVAL;
    }
    struct sv_ctx *ctx = sv_ctx_of(ibv_qp->context);
    struct sv_qp *qp = sv_container_of(ibv_qp, struct sv_qp, ibv);
    struct sv_cq *scq = sv_container_of(ibv_qp->send_cq, struct sv_cq, ibv);
    struct sv_cq *rcq = sv_container_of(ibv_qp->recv_cq, struct sv_cq, ibv);
    pthread_mutex_lock(&ctx->lock);
    drop_queued(qp);
    ctx->qps[ibv_qp->qp_num & (SV_MAX_QP - 1)] = NULL;
    sv_cq_forget_qp(scq, qp);
    scq->refs--;
    rcq->refs--;
    ctx->objects--;
    pthread_mutex_unlock(&ctx->lock);
    pthread_mutex_destroy(&ibv_qp->mutex);
    pthread_cond_destroy(&ibv_qp->cond);
    free(qp->sq);
    free(qp->rq);
    free(qp);
    return 0;
}

/* Per transition: attributes that must be given, and those that may be. */
struct sv_transition {
    enum ibv_qp_state from, to;
    int required, optional;
};

static const struct sv_transition sv_transitions[] = {
    {IBV_QPS_RESET, IBV_QPS_INIT, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, 0},
    {IBV_QPS_INIT, IBV_QPS_INIT, 0, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS},
    {IBV_QPS_INIT, IBV_QPS_RTR,
     IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
         IBV_QP_MIN_RNR_TIMER,
     IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX},
    {IBV_QPS_RTR, IBV_QPS_RTS,
     IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC,
     IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_MIN_RNR_TIMER | IBV_QP_PATH_MIG_STATE},
    {IBV_QPS_RTS, IBV_QPS_RTS, 0,
     IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_ALT_PATH | IBV_QP_PATH_MIG_STATE | IBV_QP_MIN_RNR_TIMER},
};

static const struct sv_transition *find_transition(enum ibv_qp_state from, enum ibv_qp_state to)
{
    static const struct sv_transition to_reset_or_err[] = {
        {IBV_QPS_UNKNOWN, IBV_QPS_RESET, 0, 0},
        {IBV_QPS_UNKNOWN, IBV_QPS_ERR, 0, 0},
    };
    if (to == IBV_QPS_RESET) {
        return &to_reset_or_err[0];
    }
    if (to == IBV_QPS_ERR) {
        return &to_reset_or_err[1];
    }
    for (size_t i = 0; i < sizeof sv_transitions / sizeof sv_transitions[0]; i++) {
        if (sv_transitions[i].from == from && sv_transitions[i].to == to) {
            return &sv_transitions[i];
        }
    }
    return NULL;
}

/* Resolve where the QP's packets go; false when the address is unusable. */
static bool resolve_remote(struct sv_ctx *ctx, const struct ibv_ah_attr *ah, uint16_t *lid)
{
    if (ah->port_num != 1) {
        return false;
    }
    if (ah->is_global) {
        return sv_lid_of_gid(&ah->grh.dgid, lid);
    }
    if (ctx->ethernet || ah->dlid == 0) {
        return false; /* RoCE needs a GRH; LID 0 is not an address */
    }
    *lid = ah->dlid;
    return true;
}

/* RESET discards queued work without completions. Positions keep growing
 * and the QP's CQEs still in the CQ stop retiring slots, so that polling
 * them later cannot corrupt the new queue. */
static void reset_queues(struct sv_qp *qp)
{
    drop_queued(qp);
    sv_cq_forget_qp(sv_container_of(qp->ibv.send_cq, struct sv_cq, ibv), qp);
    qp->sq_next = qp->sq_retired = qp->sq_posted;
    qp->rq_next = qp->rq_posted;
    qp->in_flight = false;
    qp->retry_deadline = 0;
    qp->rnr_resend_at = 0;
}

SV_EXPORT int ibv_modify_qp(struct ibv_qp *ibv_qp, struct ibv_qp_attr *attr, int mask)
{
    if (ibv_qp == NULL || attr == NULL || !sv_is_ours(ibv_qp->context) || !(mask & IBV_QP_STATE)) {
        return EINVAL;
    }
    struct sv_ctx *ctx = sv_ctx_of(ibv_qp->context);
    struct sv_qp *qp = sv_container_of(ibv_qp, struct sv_qp, ibv);
    pthread_mutex_lock(&ctx->lock);
    enum ibv_qp_state from = qp->attr.qp_state;
    if ((mask & IBV_QP_CUR_STATE) && attr->cur_qp_state != from) {
        pthread_mutex_unlock(&ctx->lock);
        return EINVAL;
    }
    const struct sv_transition *t = find_transition(from, attr->qp_state);
    int given = mask & ~(IBV_QP_STATE);
    uint16_t lid = 0;
    if (t == NULL || (given & t->required) != t->required || (given & ~(t->required | t->optional)) != 0 ||
        ((mask & IBV_QP_PORT) && attr->port_num != 1) || ((mask & IBV_QP_PKEY_INDEX) && attr->pkey_index != 0) ||
        ((mask & IBV_QP_AV) && !resolve_remote(ctx, &attr->ah_attr, &lid)) ||
        ((mask & IBV_QP_RNR_RETRY) && attr->rnr_retry > 7) || ((mask & IBV_QP_RETRY_CNT) && attr->retry_cnt > 7) ||
        ((mask & IBV_QP_MIN_RNR_TIMER) && attr->min_rnr_timer > 31) ||
        ((mask & IBV_QP_TIMEOUT) && attr->timeout > 31)) {
        pthread_mutex_unlock(&ctx->lock);
        return EINVAL;
    }
    struct ibv_qp_attr *a = &qp->attr;
    if (mask & IBV_QP_PKEY_INDEX) a->pkey_index = attr->pkey_index;
    if (mask & IBV_QP_PORT) a->port_num = attr->port_num;
    if (mask & IBV_QP_ACCESS_FLAGS) a->qp_access_flags = attr->qp_access_flags;
    if (mask & IBV_QP_AV) {
        a->ah_attr = attr->ah_attr;
        qp->remote_lid = lid;
    }
    if (mask & IBV_QP_PATH_MTU) a->path_mtu = attr->path_mtu;
    if (mask & IBV_QP_DEST_QPN) a->dest_qp_num = attr->dest_qp_num & SV_PSN_MASK;
    if (mask & IBV_QP_RQ_PSN) a->rq_psn = attr->rq_psn & SV_PSN_MASK;
    if (mask & IBV_QP_SQ_PSN) a->sq_psn = attr->sq_psn & SV_PSN_MASK;
    if (mask & IBV_QP_MAX_DEST_RD_ATOMIC) a->max_dest_rd_atomic = attr->max_dest_rd_atomic;
    if (mask & IBV_QP_MAX_QP_RD_ATOMIC) a->max_rd_atomic = attr->max_rd_atomic;
    if (mask & IBV_QP_MIN_RNR_TIMER) a->min_rnr_timer = attr->min_rnr_timer;
    if (mask & IBV_QP_TIMEOUT) a->timeout = attr->timeout;
    if (mask & IBV_QP_RETRY_CNT) a->retry_cnt = attr->retry_cnt;
    if (mask & IBV_QP_RNR_RETRY) a->rnr_retry = attr->rnr_retry;
    if (mask & IBV_QP_PATH_MIG_STATE) a->path_mig_state = attr->path_mig_state;
    a->qp_state = attr->qp_state;
    ibv_qp->state = attr->qp_state;
    if (attr->qp_state == IBV_QPS_RESET) {
        reset_queues(qp);
    } else if (attr->qp_state == IBV_QPS_ERR) {
        sv_qp_set_error(qp);
    }
    pthread_mutex_unlock(&ctx->lock);
    sv_wake(ctx); /* an RTS QP may have WRs waiting */
    return 0;
}

SV_EXPORT int ibv_query_qp(struct ibv_qp *ibv_qp, struct ibv_qp_attr *attr, int mask,
                           struct ibv_qp_init_attr *init)
{
    if (ibv_qp == NULL || attr == NULL || init == NULL || !sv_is_ours(ibv_qp->context)) {
        return EINVAL;
    }
    (void)mask; /* everything is returned, as drivers do */
    struct sv_ctx *ctx = sv_ctx_of(ibv_qp->context);
    struct sv_qp *qp = sv_container_of(ibv_qp, struct sv_qp, ibv);
    pthread_mutex_lock(&ctx->lock);
    *attr = qp->attr;
    attr->cur_qp_state = qp->attr.qp_state;
    memset(init, 0, sizeof *init);
    init->qp_context = ibv_qp->qp_context;
    init->send_cq = ibv_qp->send_cq;
    init->recv_cq = ibv_qp->recv_cq;
    init->cap = qp->cap;
    init->qp_type = IBV_QPT_RC;
    init->sq_sig_all = qp->sq_sig_all;
    pthread_mutex_unlock(&ctx->lock);
    return 0;
}

static uint64_t sge_total(const struct ibv_sge *sge, int n)
{
    uint64_t total = 0;
    for (int i = 0; i < n; i++) {
        total += sge[i].length;
    }
    return total;
}

static void push_send_cqe(struct sv_qp *qp, uint64_t pos, enum ibv_wc_status status)
{
    static const enum ibv_wc_opcode wc_op[] = {
        [IBV_WR_RDMA_WRITE] = IBV_WC_RDMA_WRITE, [IBV_WR_RDMA_WRITE_WITH_IMM] = IBV_WC_RDMA_WRITE,
        [IBV_WR_SEND] = IBV_WC_SEND,             [IBV_WR_SEND_WITH_IMM] = IBV_WC_SEND,
        [IBV_WR_RDMA_READ] = IBV_WC_RDMA_READ,
    };
    const struct sv_swr *w = &qp->sq[pos % qp->sq_size];
    struct ibv_wc wc = {
        .wr_id = w->wr_id,
        .status = status,
        /* An error completion's opcode is undefined on a NIC: the WAIT's
         * is left as SEND. */
        .opcode = w->opcode == SV_OP_WAIT ? IBV_WC_SEND : wc_op[w->opcode],
        .qp_num = qp->ibv.qp_num,
    };
    if (w->opcode == IBV_WR_RDMA_READ) {
        wc.byte_len = (uint32_t)sge_total(w->sge, w->num_sge);
    }
    sv_cq_push(sv_container_of(qp->ibv.send_cq, struct sv_cq, ibv), &wc, false, qp, pos);
}

void sv_qp_pass_wait(struct sv_qp *qp)
{
    release_wait(&qp->sq[qp->sq_next % qp->sq_size]);
    qp->sq_next++;
}

void sv_qp_complete_send(struct sv_qp *qp, enum ibv_wc_status status, bool force)
{
    struct sv_swr *w = &qp->sq[qp->sq_next % qp->sq_size];
    release_wait(w);
    if (force || status != IBV_WC_SUCCESS || qp->sq_sig_all || (w->send_flags & IBV_SEND_SIGNALED)) {
        push_send_cqe(qp, qp->sq_next, status);
    }
    qp->sq_next++;
    qp->in_flight = false;
    qp->retry_deadline = 0;
    qp->rnr_resend_at = 0;
}

/* Every outstanding WR completes with a flush error, signalled or not. */
static void flush(struct sv_qp *qp)
{
    while (qp->sq_next < qp->sq_posted) {
        sv_qp_complete_send(qp, IBV_WC_WR_FLUSH_ERR, true);
    }
    struct sv_cq *rcq = sv_container_of(qp->ibv.recv_cq, struct sv_cq, ibv);
    while (qp->rq_next < qp->rq_posted) {
        struct ibv_wc wc = {
            .wr_id = qp->rq[qp->rq_next % qp->rq_size].wr_id,
            .status = IBV_WC_WR_FLUSH_ERR,
            .opcode = IBV_WC_RECV,
            .qp_num = qp->ibv.qp_num,
        };
        qp->rq_next++;
        sv_cq_push(rcq, &wc, false, NULL, 0);
    }
}

/* As on a NIC, an error the hardware raises shows in ibv_query_qp only:
 * ibv_qp.state is the application's field, written by ibv_modify_qp. */
void sv_qp_set_error(struct sv_qp *qp)
{
    qp->attr.qp_state = IBV_QPS_ERR;
    flush(qp);
}

static int check_send_wr(const struct sv_qp *qp, const struct ibv_send_wr *wr)
{
    switch (wr->opcode) {
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM:
    case IBV_WR_SEND:
    case IBV_WR_SEND_WITH_IMM:
    case IBV_WR_RDMA_READ:
        break;
    default:
        return EINVAL;
    }
    if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->cap.max_send_sge || (wr->num_sge > 0 && wr->sg_list == NULL)) {
        return EINVAL;
    }
    if (wr->send_flags & IBV_SEND_INLINE) {
        if (wr->opcode == IBV_WR_RDMA_READ || sge_total(wr->sg_list, wr->num_sge) > qp->cap.max_inline_data) {
            return EINVAL;
        }
    }
    if (qp->sq_posted - qp->sq_retired >= qp->cap.max_send_wr) {
        return ENOMEM;
    }
    return 0;
}

static void store_send_wr(struct sv_qp *qp, const struct ibv_send_wr *wr)
{
    struct sv_swr *w = &qp->sq[qp->sq_posted % qp->sq_size];
    memset(w, 0, offsetof(struct sv_swr, inline_data));
    w->wr_id = wr->wr_id;
    w->opcode = wr->opcode;
    w->send_flags = wr->send_flags;
    w->imm = wr->imm_data;
    w->remote_addr = wr->wr.rdma.remote_addr;
    w->rkey = wr->wr.rdma.rkey;
    w->num_sge = wr->num_sge;
    if (wr->num_sge > 0) {
        memcpy(w->sge, wr->sg_list, (size_t)wr->num_sge * sizeof *w->sge);
    }
    if (wr->send_flags & IBV_SEND_INLINE) {
        /* The data is captured now: the buffer may be reused on return. */
        for (int i = 0; i < wr->num_sge; i++) {
            memcpy(w->inline_data + w->inline_len, (void *)(uintptr_t)wr->sg_list[i].addr, wr->sg_list[i].length);
            w->inline_len += wr->sg_list[i].length;
        }
    }
    qp->sq_posted++;
}

/* Posting is allowed in RTS, and in ERR where the WRs are flushed at once. */
static bool can_post_send(const struct sv_qp *qp)
{
    return qp->attr.qp_state == IBV_QPS_RTS || qp->attr.qp_state == IBV_QPS_ERR;
}

/* A post call works on its QP with the context's lock held. */
static struct sv_qp *post_lock(struct ibv_qp *ibv_qp)
{
    pthread_mutex_lock(&sv_ctx_of(ibv_qp->context)->lock);
    return sv_container_of(ibv_qp, struct sv_qp, ibv);
}

/* In ERR the WRs just posted complete at once, with a flush error. */
static void post_unlock(struct sv_qp *qp)
{
    if (qp->attr.qp_state == IBV_QPS_ERR) {
        flush(qp);
    }
    pthread_mutex_unlock(&sv_ctx_of(qp->ibv.context)->lock);
}

int sv_post_send(struct ibv_qp *ibv_qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
    if (ibv_qp == NULL || bad == NULL) {
        return EINVAL;
    }
    struct sv_qp *qp = post_lock(ibv_qp);
    int err = 0;
    for (; wr != NULL; wr = wr->next) {
        err = can_post_send(qp) ? check_send_wr(qp, wr) : EINVAL;
        if (err != 0) {
            *bad = wr;
            break;
        }
        store_send_wr(qp, wr);
    }
    post_unlock(qp);
    sv_wake(sv_ctx_of(ibv_qp->context));
    return err;
}

int sv_post_recv(struct ibv_qp *ibv_qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
    if (ibv_qp == NULL || bad == NULL) {
        return EINVAL;
    }
    struct sv_qp *qp = post_lock(ibv_qp);
    int err = 0;
    for (; wr != NULL; wr = wr->next) {
        if (qp->attr.qp_state == IBV_QPS_RESET || wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->cap.max_recv_sge ||
            (wr->num_sge > 0 && wr->sg_list == NULL)) {
            err = EINVAL;
        } else if (qp->rq_posted - qp->rq_next >= qp->cap.max_recv_wr) {
            err = ENOMEM;
        }
        if (err != 0) {
            *bad = wr;
            break;
        }
        struct sv_rwr *r = &qp->rq[qp->rq_posted % qp->rq_size];
        r->wr_id = wr->wr_id;
        r->num_sge = wr->num_sge;
        if (wr->num_sge > 0) {
            memcpy(r->sge, wr->sg_list, (size_t)wr->num_sge * sizeof *r->sge);
        }
        qp->rq_posted++;
    }
    post_unlock(qp);
    return err;
}

SV_EXPORT int softverbs_query_caps(struct ibv_context *context, uint64_t *caps)
{
    if (context == NULL || caps == NULL) {
        return EINVAL;
    }
    if (!sv_is_ours(context)) {
        return ENODEV;
    }
    *caps = SOFTVERBS_CAP_CQE_WAIT;
    return 0;
}

SV_EXPORT int softverbs_post_wait(struct ibv_qp *ibv_qp, struct ibv_cq *ibv_cq, uint32_t count, uint64_t wr_id)
{
    if (ibv_qp == NULL || ibv_cq == NULL || !sv_is_ours(ibv_qp->context) || ibv_cq->context != ibv_qp->context) {
        return EINVAL;
    }
    struct sv_ctx *ctx = sv_ctx_of(ibv_qp->context);
    struct sv_qp *qp = sv_container_of(ibv_qp, struct sv_qp, ibv);
    struct sv_cq *cq = sv_container_of(ibv_cq, struct sv_cq, ibv);
    int err = 0;
    pthread_mutex_lock(&ctx->lock);
    if (!can_post_send(qp)) {
        err = EINVAL;
    } else if (qp->sq_posted - qp->sq_retired >= qp->cap.max_send_wr) {
        err = ENOMEM;
    } else {
        struct sv_swr *w = &qp->sq[qp->sq_posted % qp->sq_size];
        memset(w, 0, offsetof(struct sv_swr, inline_data));
        w->wr_id = wr_id;
        w->opcode = SV_OP_WAIT;
        w->wait_cq = cq;
        cq->refs++;
        cq->wait_index += count;
        w->wait_target = cq->wait_index;
        qp->sq_posted++;
        if (qp->attr.qp_state == IBV_QPS_ERR) {
            flush(qp);
        }
    }
    pthread_mutex_unlock(&ctx->lock);
    sv_wake(ctx);
    return err;
}
