/*
 * Device discovery, the QP state machine and argument checking: what a
 * backend meets before any data moves.
 */
#include "softverbs.h"
#include "svt_util.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static void device_and_ports(void **state)
{
    (void)state;
    int n = -1;
    struct ibv_device **list = ibv_get_device_list(&n);
    assert_non_null(list);
    assert_int_equal(n, 1);
    assert_string_equal(ibv_get_device_name(list[0]), "softverbs0");
    struct ibv_context *a = ibv_open_device(list[0]);
    struct ibv_context *b = ibv_open_device(list[0]);
    ibv_free_device_list(list);
    assert_non_null(a);
    assert_non_null(b);

    struct ibv_device_attr dev;
    assert_int_equal(ibv_query_device(a, &dev), 0);
    assert_int_equal(dev.phys_port_cnt, 1);
    assert_true(dev.max_sge >= 1);

    struct ibv_port_attr pa, pb;
    assert_int_equal(ibv_query_port(a, 1, &pa), 0);
    assert_int_equal(ibv_query_port(b, 1, &pb), 0);
    assert_int_equal(pa.state, IBV_PORT_ACTIVE);
    assert_int_equal(pa.link_layer, IBV_LINK_LAYER_INFINIBAND);
    assert_int_not_equal(pa.lid, 0);
    assert_int_not_equal(pa.lid, pb.lid); /* one LID per context */
    assert_int_equal(ibv_query_port(a, 2, &pa), EINVAL);

    union ibv_gid ga, gb;
    assert_int_equal(ibv_query_gid(a, 1, 0, &ga), 0);
    assert_int_equal(ibv_query_gid(b, 1, 0, &gb), 0);
    assert_memory_not_equal(ga.raw, gb.raw, sizeof ga.raw);
    assert_int_not_equal(ibv_query_gid(a, 1, 1, &ga), 0);

    uint64_t caps = 0;
    assert_int_equal(softverbs_query_caps(a, &caps), 0);
    assert_true(caps & SOFTVERBS_CAP_CQE_WAIT);
    assert_int_equal(softverbs_query_caps(a, NULL), EINVAL);
    struct softverbs_stats stats = {.rnr_naks = 99};
    assert_int_equal(softverbs_query_stats(a, &stats), 0);
    assert_int_equal(stats.rnr_naks, 0); /* a new context has counted nothing */
    assert_int_equal(stats.mr_registrations, 0);
    assert_int_equal(softverbs_query_stats(a, NULL), EINVAL);
    assert_int_equal(softverbs_query_stats(NULL, NULL), EINVAL);
    assert_int_equal(ibv_close_device(a), 0);
    assert_int_equal(ibv_close_device(b), 0);

    errno = 0;
    assert_null(ibv_open_device(NULL));
    assert_int_equal(errno, ENODEV);
}

static int to_init(struct ibv_qp *qp, int mask)
{
    struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1, .qp_access_flags = IBV_ACCESS_REMOTE_WRITE};
    return ibv_modify_qp(qp, &a, mask);
}

static void qp_state_machine(void **state)
{
    (void)state;
    struct svt_node n;
    assert_int_equal(svt_open(&n, false, 16), 0);
    struct ibv_qp *qp = svt_create_qp(&n, NULL, NULL, 4, false);
    assert_non_null(qp);
    assert_int_equal(qp->state, IBV_QPS_RESET);
    struct svt_addr me = svt_addr_of(&n, qp);

    /* Nothing may be posted to a QP in RESET; the bad WR is reported. */
    struct ibv_sge sge = {0};
    struct ibv_send_wr wr = {.opcode = IBV_WR_RDMA_WRITE, .sg_list = &sge}, *bad = NULL;
    assert_int_equal(ibv_post_send(qp, &wr, &bad), EINVAL);
    assert_ptr_equal(bad, &wr);
    assert_int_equal(svt_post_recv(qp, 1, NULL, NULL, 0), EINVAL);

    /* Skipping a state, or a missing required attribute, is EINVAL. */
    struct ibv_qp_attr rtr = {.qp_state = IBV_QPS_RTR};
    assert_int_equal(ibv_modify_qp(qp, &rtr, IBV_QP_STATE), EINVAL);
    assert_int_equal(to_init(qp, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT), EINVAL);
    int init_mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
    /* An attribute the transition does not take is EINVAL too. */
    assert_int_equal(to_init(qp, init_mask | IBV_QP_SQ_PSN), EINVAL);
    assert_int_equal(to_init(qp, init_mask), 0);
    assert_int_equal(qp->state, IBV_QPS_INIT);
    assert_int_equal(ibv_post_send(qp, &wr, &bad), EINVAL);
    assert_int_equal(svt_post_recv(qp, 1, NULL, NULL, 0), 0); /* receives: from INIT on */

    struct ibv_qp_attr a = {.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024, .dest_qp_num = me.qpn,
                            .ah_attr = {.dlid = me.lid, .port_num = 1}};
    int rtr_mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                   IBV_QP_MAX_DEST_RD_ATOMIC;
    assert_int_equal(ibv_modify_qp(qp, &a, rtr_mask), EINVAL); /* no MIN_RNR_TIMER */
    a.ah_attr.dlid = 0;
    assert_int_equal(ibv_modify_qp(qp, &a, rtr_mask | IBV_QP_MIN_RNR_TIMER), EINVAL); /* LID 0 */
    a.ah_attr.dlid = me.lid;
    assert_int_equal(ibv_modify_qp(qp, &a, rtr_mask | IBV_QP_MIN_RNR_TIMER), 0);
    assert_int_equal(ibv_post_send(qp, &wr, &bad), EINVAL); /* RTR: still no sends */

    struct ibv_qp_attr rts = {.qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 7, .rnr_retry = 7};
    assert_int_equal(ibv_modify_qp(qp, &rts, IBV_QP_STATE | IBV_QP_TIMEOUT), EINVAL);
    assert_int_equal(ibv_modify_qp(qp, &rts,
                                   IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                                       IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC),
                     0);

    struct ibv_qp_attr q;
    struct ibv_qp_init_attr qi;
    assert_int_equal(ibv_query_qp(qp, &q, IBV_QP_STATE | IBV_QP_DEST_QPN, &qi), 0);
    assert_int_equal(q.qp_state, IBV_QPS_RTS);
    assert_int_equal(q.dest_qp_num, me.qpn);
    assert_int_equal(q.ah_attr.dlid, me.lid);
    assert_int_equal(q.timeout, 14);
    assert_int_equal(qi.cap.max_send_wr, 4);

    /* Back to RESET from anywhere, and the cycle can start again. */
    struct ibv_qp_attr reset = {.qp_state = IBV_QPS_RESET};
    assert_int_equal(ibv_modify_qp(qp, &reset, IBV_QP_STATE), 0);
    assert_int_equal(to_init(qp, init_mask), 0);

    /* Objects in use cannot go. */
    assert_int_equal(ibv_destroy_cq(n.cq), EBUSY);
    assert_int_equal(ibv_dealloc_pd(n.pd), EBUSY);
    assert_int_equal(ibv_destroy_qp(qp), 0);
    svt_close(&n);
}

static void bad_arguments(void **state)
{
    (void)state;
    struct svt_node n;
    assert_int_equal(svt_open(&n, false, 16), 0);
    char buf[64];

    errno = 0;
    assert_null(ibv_alloc_pd(NULL));
    assert_int_equal(errno, EINVAL);
    assert_null(ibv_reg_mr(NULL, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE));
    /* Remote write without local write is refused, as by the kernel. */
    errno = 0;
    assert_null(ibv_reg_mr(n.pd, buf, sizeof buf, IBV_ACCESS_REMOTE_WRITE));
    assert_int_equal(errno, EINVAL);
    struct softverbs_stats stats;
    assert_int_equal(softverbs_query_stats(n.ctx, &stats), 0);
    assert_int_equal(stats.mr_registrations, 0); /* refused ones do not count */
    struct ibv_mr *ro = ibv_reg_mr(n.pd, buf, sizeof buf, 0);
    assert_non_null(ro);
    assert_int_equal(softverbs_query_stats(n.ctx, &stats), 0);
    assert_int_equal(stats.mr_registrations, 1);
    assert_int_equal(ibv_dereg_mr(ro), 0);
    assert_null(ibv_create_cq(n.ctx, 0, NULL, NULL, 0));
    assert_null(ibv_create_cq(n.ctx, 4, NULL, NULL, 1)); /* one vector only */
    assert_null(ibv_create_cq(NULL, 4, NULL, NULL, 0));
    assert_int_equal(ibv_destroy_cq(NULL), EINVAL);
    assert_int_equal(ibv_modify_qp(NULL, NULL, 0), EINVAL);
    assert_int_equal(ibv_dereg_mr(NULL), EINVAL);
    assert_null(ibv_create_comp_channel(NULL));

    struct ibv_qp_init_attr ud = {.send_cq = n.cq, .recv_cq = n.cq, .qp_type = IBV_QPT_UD, .cap = {.max_send_wr = 1}};
    errno = 0;
    assert_null(ibv_create_qp(n.pd, &ud));
    assert_int_equal(errno, EOPNOTSUPP);
    struct ibv_qp_init_attr big = {.send_cq = n.cq, .recv_cq = n.cq, .qp_type = IBV_QPT_RC,
                                   .cap = {.max_send_wr = 1, .max_send_sge = 1000}};
    assert_null(ibv_create_qp(n.pd, &big));
    assert_null(ibv_create_qp(n.pd, NULL));

    /* A receive-only QP: it exists, and refuses sends as full. */
    struct ibv_qp_init_attr rx_only = {.send_cq = n.cq, .recv_cq = n.cq, .qp_type = IBV_QPT_RC,
                                       .cap = {.max_recv_wr = 1, .max_recv_sge = 1}};
    struct ibv_qp *rx = ibv_create_qp(n.pd, &rx_only);
    assert_non_null(rx);
    struct svt_addr rxa = svt_addr_of(&n, rx);
    assert_int_equal(svt_connect(rx, &rxa, &rxa, &svt_default_opts), 0);
    assert_int_equal(svt_post(rx, IBV_WR_RDMA_WRITE, 1, 0, NULL, NULL, 0, 0, 0, 0), ENOMEM);
    assert_int_equal(ibv_destroy_qp(rx), 0);

    /* Posting: too many SGEs, too much inline data, unknown opcode. */
    struct ibv_qp *qp = svt_loopback_qp(&n, 4, false);
    assert_non_null(qp);
    struct ibv_mr *mr = ibv_reg_mr(n.pd, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE);
    assert_non_null(mr);
    struct ibv_sge sge[3] = {{(uintptr_t)buf, 8, mr->lkey}, {(uintptr_t)buf, 8, mr->lkey}, {(uintptr_t)buf, 8, mr->lkey}};
    struct ibv_send_wr ok = {.wr_id = 1, .opcode = IBV_WR_SEND, .sg_list = sge, .num_sge = 1};
    struct ibv_send_wr wr = {.opcode = IBV_WR_SEND, .sg_list = sge, .num_sge = 3}, *bad = NULL;
    ok.next = &wr; /* the first is taken, the second reported */
    assert_int_equal(ibv_post_send(qp, &ok, &bad), EINVAL);
    assert_ptr_equal(bad, &wr);
    char big_inline[128] = {0};
    struct ibv_sge isge = {(uintptr_t)big_inline, sizeof big_inline, 0};
    struct ibv_send_wr inl = {.opcode = IBV_WR_SEND, .sg_list = &isge, .num_sge = 1, .send_flags = IBV_SEND_INLINE};
    assert_int_equal(ibv_post_send(qp, &inl, &bad), EINVAL);
    struct ibv_send_wr atomic = {.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD, .sg_list = sge, .num_sge = 1};
    assert_int_equal(ibv_post_send(qp, &atomic, &bad), EINVAL);
    assert_int_equal(softverbs_post_wait(NULL, n.cq, 1, 0), EINVAL);
    assert_int_equal(softverbs_post_wait(qp, NULL, 1, 0), EINVAL);

    /* The send that was accepted finds no receive: RNR for ever, then the
     * QP is torn down with it in flight. */
    assert_int_equal(ibv_destroy_qp(qp), 0);
    assert_int_equal(ibv_dereg_mr(mr), 0);
    svt_close(&n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(device_and_ports),
        cmocka_unit_test(qp_state_machine),
        cmocka_unit_test(bad_arguments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
