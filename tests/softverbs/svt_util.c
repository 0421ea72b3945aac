#include "svt_util.h"

#include <errno.h>
#include <string.h>
#include <time.h>

const struct svt_conn_opts svt_default_opts = {
    .rnr_retry = 7, .min_rnr_timer = 1, .timeout = 14, .retry_cnt = 7, .use_gid = false};

int svt_open(struct svt_node *n, bool with_channel, int cqe)
{
    memset(n, 0, sizeof *n);
    struct ibv_device **list = ibv_get_device_list(NULL);
    if (list == NULL || list[0] == NULL) {
        ibv_free_device_list(list);
        return ENODEV;
    }
    n->ctx = ibv_open_device(list[0]);
    ibv_free_device_list(list);
    if (n->ctx == NULL) {
        return errno;
    }
    struct ibv_port_attr port;
    if (ibv_query_port(n->ctx, 1, &port) != 0) {
        return EIO;
    }
    n->lid = port.lid;
    if (ibv_query_gid(n->ctx, 1, 0, &n->gid) != 0) {
        return EIO;
    }
    n->pd = ibv_alloc_pd(n->ctx);
    n->channel = with_channel ? ibv_create_comp_channel(n->ctx) : NULL;
    n->cq = ibv_create_cq(n->ctx, cqe, n, n->channel, 0);
    return n->pd != NULL && n->cq != NULL && (n->channel != NULL || !with_channel) ? 0 : ENOMEM;
}

void svt_close(struct svt_node *n)
{
    if (n->cq != NULL) ibv_destroy_cq(n->cq);
    if (n->channel != NULL) ibv_destroy_comp_channel(n->channel);
    if (n->pd != NULL) ibv_dealloc_pd(n->pd);
    if (n->ctx != NULL) ibv_close_device(n->ctx);
    memset(n, 0, sizeof *n);
}

struct ibv_qp *svt_create_qp(struct svt_node *n, struct ibv_cq *scq, struct ibv_cq *rcq, uint32_t max_send_wr,
                             bool sig_all)
{
    struct ibv_qp_init_attr init = {
        .send_cq = scq != NULL ? scq : n->cq,
        .recv_cq = rcq != NULL ? rcq : n->cq,
        .cap = {.max_send_wr = max_send_wr, .max_recv_wr = 16, .max_send_sge = 2, .max_recv_sge = 2,
                .max_inline_data = 64},
        .qp_type = IBV_QPT_RC,
        .sq_sig_all = sig_all,
    };
    return ibv_create_qp(n->pd, &init);
}

struct svt_addr svt_addr_of(const struct svt_node *n, const struct ibv_qp *qp)
{
    return (struct svt_addr){.lid = n->lid, .gid = n->gid, .qpn = qp->qp_num, .psn = qp->qp_num * 7u & 0xffffffu};
}

int svt_connect(struct ibv_qp *qp, const struct svt_addr *self, const struct svt_addr *to,
                const struct svt_conn_opts *o)
{
    struct ibv_qp_attr a = {
        .qp_state = IBV_QPS_INIT,
        .port_num = 1,
        .qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
    };
    int rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
    if (rc != 0) {
        return rc;
    }
    memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = IBV_MTU_4096;
    a.dest_qp_num = to->qpn;
    a.rq_psn = to->psn;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = o->min_rnr_timer;
    a.ah_attr.port_num = 1;
    if (o->use_gid) {
        a.ah_attr.is_global = 1;
        a.ah_attr.grh.hop_limit = 1;
        a.ah_attr.grh.dgid = to->gid;
    } else {
        a.ah_attr.dlid = to->lid;
    }
    rc = ibv_modify_qp(qp, &a,
                       IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                           IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
    if (rc != 0) {
        return rc;
    }
    memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_RTS;
    a.sq_psn = self->psn;
    a.timeout = o->timeout;
    a.retry_cnt = o->retry_cnt;
    a.rnr_retry = o->rnr_retry;
    a.max_rd_atomic = 1;
    return ibv_modify_qp(qp, &a,
                         IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                             IBV_QP_MAX_QP_RD_ATOMIC);
}

struct ibv_qp *svt_loopback_qp(struct svt_node *n, uint32_t max_send_wr, bool sig_all)
{
    struct ibv_qp *qp = svt_create_qp(n, NULL, NULL, max_send_wr, sig_all);
    struct svt_addr me;
    if (qp == NULL) {
        return NULL;
    }
    me = svt_addr_of(n, qp);
    if (svt_connect(qp, &me, &me, &svt_default_opts) != 0) {
        ibv_destroy_qp(qp);
        return NULL;
    }
    return qp;
}

int svt_post(struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id, unsigned flags, const struct ibv_mr *mr,
             void *buf, uint32_t len, uint64_t raddr, uint32_t rkey, uint32_t imm)
{
    struct ibv_sge sge = {.addr = (uintptr_t)buf, .length = len, .lkey = mr != NULL ? mr->lkey : 0};
    struct ibv_send_wr wr = {
        .wr_id = wr_id,
        .sg_list = &sge,
        .num_sge = len > 0 ? 1 : 0,
        .opcode = op,
        .send_flags = flags,
        .imm_data = imm,
        .wr.rdma = {.remote_addr = raddr, .rkey = rkey},
    };
    struct ibv_send_wr *bad = NULL;
    return ibv_post_send(qp, &wr, &bad);
}

int svt_post_recv(struct ibv_qp *qp, uint64_t wr_id, const struct ibv_mr *mr, void *buf, uint32_t len)
{
    struct ibv_sge sge = {.addr = (uintptr_t)buf, .length = len, .lkey = mr != NULL ? mr->lkey : 0};
    struct ibv_recv_wr wr = {.wr_id = wr_id, .sg_list = &sge, .num_sge = len > 0 ? 1 : 0};
    struct ibv_recv_wr *bad = NULL;
    return ibv_post_recv(qp, &wr, &bad);
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int svt_poll(struct ibv_cq *cq, struct ibv_wc *wc, int n, int timeout_ms)
{
    int got = 0;
    uint64_t end = now_ms() + (uint64_t)timeout_ms;
    while (got < n) {
        int r = ibv_poll_cq(cq, n - got, wc + got);
        if (r < 0) {
            return got;
        }
        got += r;
        if (r == 0) {
            if (now_ms() > end) {
                break;
            }
            struct timespec nap = {0, 200000};
            nanosleep(&nap, NULL);
        }
    }
    return got;
}

bool svt_quiet(struct ibv_cq *cq, int ms)
{
    struct ibv_wc wc;
    return svt_poll(cq, &wc, 1, ms) == 0;
}
