/*
 * Built against the real <infiniband/verbs.h> and linked against the real
 * libibverbs, run with softverbs in LD_PRELOAD: the program must end up
 * on softverbs unchanged, through the header's inline wrappers
 * (ibv_query_port, ibv_reg_mr, ibv_post_send, ibv_poll_cq) and the
 * versioned exported symbols. This is how the verbs backend runs in CI.
 */
#include <dlfcn.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(cond)                                                                                                    \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);                                    \
            return 1;                                                                                                  \
        }                                                                                                              \
    } while (0)

int main(void)
{
    int n = 0;
    struct ibv_device **list = ibv_get_device_list(&n);
    CHECK(list != NULL && n == 1);
    CHECK(strcmp(ibv_get_device_name(list[0]), "softverbs0") == 0);
    struct ibv_context *ctx = ibv_open_device(list[0]);
    ibv_free_device_list(list);
    CHECK(ctx != NULL);
    struct ibv_port_attr port;
    CHECK(ibv_query_port(ctx, 1, &port) == 0 && port.lid != 0 && port.state == IBV_PORT_ACTIVE);
    struct ibv_pd *pd = ibv_alloc_pd(ctx);
    struct ibv_cq *cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
    CHECK(pd != NULL && cq != NULL);
    char src[32] = "through the real header", dst[32] = {0};
    /* constant flags take ibv_reg_mr, variable ones ibv_reg_mr_iova2 */
    struct ibv_mr *smr = ibv_reg_mr(pd, src, sizeof src, IBV_ACCESS_LOCAL_WRITE);
    volatile int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
    struct ibv_mr *dmr = ibv_reg_mr(pd, dst, sizeof dst, access);
    CHECK(smr != NULL && dmr != NULL);

    struct ibv_qp_init_attr init = {.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
                                    .cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1}};
    struct ibv_qp *qp = ibv_create_qp(pd, &init);
    CHECK(qp != NULL);
    struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1, .qp_access_flags = IBV_ACCESS_REMOTE_WRITE};
    CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) == 0);
    memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = IBV_MTU_4096;
    a.dest_qp_num = qp->qp_num; /* loopback */
    a.ah_attr.dlid = port.lid;
    a.ah_attr.port_num = 1;
    CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                    IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) == 0);
    memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_RTS;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                    IBV_QP_MAX_QP_RD_ATOMIC) == 0);

    struct ibv_sge sge = {(uintptr_t)src, sizeof src, smr->lkey};
    struct ibv_send_wr wr = {.wr_id = 1, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
                             .send_flags = IBV_SEND_SIGNALED, .wr.rdma = {(uintptr_t)dst, dmr->rkey}};
    struct ibv_send_wr *bad;
    CHECK(ibv_post_send(qp, &wr, &bad) == 0);
    struct ibv_wc wc;
    int got = 0;
    for (int i = 0; i < 50000 && got == 0; i++) {
        got = ibv_poll_cq(cq, 1, &wc);
        struct timespec nap = {0, 100000};
        nanosleep(&nap, NULL);
    }
    CHECK(got == 1 && wc.status == IBV_WC_SUCCESS && wc.wr_id == 1);
    CHECK(strcmp(dst, src) == 0);
    CHECK(strcmp(ibv_wc_status_str(IBV_WC_REM_ACCESS_ERR), "remote access error") == 0);
    /* The extension is found the way a backend linked against the real
     * library finds it. */
    CHECK(dlsym(RTLD_DEFAULT, "softverbs_post_wait") != NULL);
    CHECK(dlsym(RTLD_DEFAULT, "softverbs_query_stats") != NULL);

    CHECK(ibv_destroy_qp(qp) == 0);
    CHECK(ibv_dereg_mr(smr) == 0 && ibv_dereg_mr(dmr) == 0);
    CHECK(ibv_destroy_cq(cq) == 0 && ibv_dealloc_pd(pd) == 0);
    CHECK(ibv_close_device(ctx) == 0);
    printf("real-header program ran on softverbs via LD_PRELOAD: OK\n");
    return 0;
}
