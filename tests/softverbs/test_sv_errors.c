/*
 * Error semantics as a NIC has them: key, bounds and access checks at the
 * responder (nothing written, requester QP in error, the rest flushed),
 * local protection errors, receiver-not-ready with and without retries,
 * a receive too small, and a peer that never answers.
 */
#include "softverbs.h"
#include "svt_util.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

struct pair {
    struct svt_node a, b;
    struct ibv_qp *qa, *qb;
};

static void pair_open(struct pair *p, const struct svt_conn_opts *o)
{
    assert_int_equal(svt_open(&p->a, false, 64), 0);
    assert_int_equal(svt_open(&p->b, false, 64), 0);
    p->qa = svt_create_qp(&p->a, NULL, NULL, 16, false);
    p->qb = svt_create_qp(&p->b, NULL, NULL, 16, false);
    struct svt_addr aa = svt_addr_of(&p->a, p->qa), ab = svt_addr_of(&p->b, p->qb);
    assert_int_equal(svt_connect(p->qa, &aa, &ab, o), 0);
    assert_int_equal(svt_connect(p->qb, &ab, &aa, o), 0);
}

static void pair_close(struct pair *p)
{
    assert_int_equal(ibv_destroy_qp(p->qa), 0);
    assert_int_equal(ibv_destroy_qp(p->qb), 0);
    svt_close(&p->a);
    svt_close(&p->b);
}

static enum ibv_qp_state qp_state(struct ibv_qp *qp)
{
    struct ibv_qp_attr a;
    struct ibv_qp_init_attr i;
    assert_int_equal(ibv_query_qp(qp, &a, IBV_QP_STATE, &i), 0);
    return a.qp_state;
}

/* One bad write followed by two good ones and a posted receive: the bad
 * one fails with `status`, the rest is flushed in order, nothing moved. */
static void expect_failure_and_flush(struct pair *p, struct ibv_mr *smr, char *src, uint32_t len, uint64_t raddr,
                                     uint32_t rkey, enum ibv_wc_status status, const char *dst, size_t dst_len)
{
    char before[256];
    memcpy(before, dst, dst_len);
    assert_int_equal(svt_post_recv(p->qa, 50, NULL, NULL, 0), 0);
    /* One chain, one call: all three are queued before the first runs. */
    struct ibv_sge sge = {.addr = (uintptr_t)src, .length = len, .lkey = smr->lkey};
    struct ibv_send_wr wr[3] = {
        {.wr_id = 1, .next = &wr[1], .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
         .wr.rdma = {.remote_addr = raddr, .rkey = rkey}},
        {.wr_id = 2, .next = &wr[2], .opcode = IBV_WR_RDMA_WRITE},
        {.wr_id = 3, .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED},
    };
    struct ibv_send_wr *bad = NULL;
    assert_int_equal(ibv_post_send(p->qa, wr, &bad), 0);
    struct ibv_wc wc[4];
    /* The error completes even though the WR was not signalled. */
    assert_int_equal(svt_poll(p->a.cq, wc, 4, 5000), 4);
    assert_int_equal(wc[0].wr_id, 1);
    assert_int_equal(wc[0].status, status);
    for (int i = 1; i < 4; i++) {
        assert_int_equal(wc[i].status, IBV_WC_WR_FLUSH_ERR);
    }
    /* send queue flushed in order, then the receive queue */
    assert_int_equal(wc[1].wr_id, 2);
    assert_int_equal(wc[2].wr_id, 3);
    assert_int_equal(wc[3].wr_id, 50);
    assert_int_equal(qp_state(p->qa), IBV_QPS_ERR);
    assert_memory_equal(dst, before, dst_len);
    /* Work posted to a QP in error is flushed at once. */
    assert_int_equal(svt_post(p->qa, IBV_WR_RDMA_WRITE, 4, 0, NULL, NULL, 0, 0, 0, 0), 0);
    assert_int_equal(svt_poll(p->a.cq, wc, 1, 5000), 1);
    assert_int_equal(wc[0].status, IBV_WC_WR_FLUSH_ERR);
    assert_int_equal(wc[0].wr_id, 4);
}

enum remote_fault { BAD_RKEY, PAST_END, BEFORE_START, NO_REMOTE_WRITE, STALE_RKEY };

static void remote_fault(enum remote_fault fault)
{
    struct pair p;
    pair_open(&p, &svt_default_opts);
    char src[64], dst[128];
    memset(src, 'S', sizeof src);
    memset(dst, 'D', sizeof dst);
    struct ibv_mr *smr = ibv_reg_mr(p.a.pd, src, sizeof src, IBV_ACCESS_LOCAL_WRITE);
    /* The target region is the middle of dst: bytes around it must stay. */
    int access = fault == NO_REMOTE_WRITE ? IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ
                                          : IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
    struct ibv_mr *dmr = ibv_reg_mr(p.b.pd, dst + 32, 64, access);
    uint64_t raddr = (uintptr_t)dst + 32;
    uint32_t rkey = dmr->rkey;
    switch (fault) {
    case BAD_RKEY: rkey ^= 0x100; break;
    case PAST_END: raddr += 1; break; /* 64 bytes from +1: one past the end */
    case BEFORE_START: raddr -= 1; break;
    case NO_REMOTE_WRITE: break;
    case STALE_RKEY:
        ibv_dereg_mr(dmr);
        dmr = ibv_reg_mr(p.b.pd, dst + 32, 64, access); /* same memory, new key */
        break;
    }
    expect_failure_and_flush(&p, smr, src, 64, raddr, rkey, IBV_WC_REM_ACCESS_ERR, dst, sizeof dst);
    /* The responder is unaffected by the requester's access error. */
    assert_int_equal(qp_state(p.qb), IBV_QPS_RTS);
    ibv_dereg_mr(smr);
    ibv_dereg_mr(dmr);
    pair_close(&p);
}

static void bad_rkey(void **state) { (void)state; remote_fault(BAD_RKEY); }
static void past_mr_end(void **state) { (void)state; remote_fault(PAST_END); }
static void before_mr_start(void **state) { (void)state; remote_fault(BEFORE_START); }
static void no_remote_write_access(void **state) { (void)state; remote_fault(NO_REMOTE_WRITE); }
static void stale_rkey(void **state) { (void)state; remote_fault(STALE_RKEY); }

/* The responder QP's own access flags must allow the operation, whatever
 * the MR allows: they can be taken away in RTS (RTS->RTS). */
static void qp_without_remote_write(void **state)
{
    (void)state;
    struct pair p;
    pair_open(&p, &svt_default_opts);
    char src[16] = {0}, dst[16];
    memset(dst, 'D', sizeof dst);
    struct ibv_mr *smr = ibv_reg_mr(p.a.pd, src, sizeof src, IBV_ACCESS_LOCAL_WRITE);
    struct ibv_mr *dmr = ibv_reg_mr(p.b.pd, dst, sizeof dst, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    struct ibv_qp_attr a = {.qp_state = IBV_QPS_RTS, .qp_access_flags = IBV_ACCESS_REMOTE_READ};
    assert_int_equal(ibv_modify_qp(p.qb, &a, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS), 0);
    expect_failure_and_flush(&p, smr, src, sizeof src, (uintptr_t)dst, dmr->rkey, IBV_WC_REM_INV_REQ_ERR, dst,
                             sizeof dst);
    ibv_dereg_mr(smr);
    ibv_dereg_mr(dmr);
    pair_close(&p);
}

static void local_protection(void **state)
{
    (void)state;
    struct pair p;
    pair_open(&p, &svt_default_opts);
    char src[64], dst[64];
    memset(dst, 'D', sizeof dst);
    struct ibv_mr *smr = ibv_reg_mr(p.a.pd, src, 32, IBV_ACCESS_LOCAL_WRITE);
    struct ibv_mr *dmr = ibv_reg_mr(p.b.pd, dst, sizeof dst, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    /* 64 bytes from a 32-byte region */
    expect_failure_and_flush(&p, smr, src, 64, (uintptr_t)dst, dmr->rkey, IBV_WC_LOC_PROT_ERR, dst, sizeof dst);
    ibv_dereg_mr(smr);
    ibv_dereg_mr(dmr);
    pair_close(&p);

    pair_open(&p, &svt_default_opts);
    dmr = ibv_reg_mr(p.b.pd, dst, sizeof dst, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    struct ibv_mr fake = {.lkey = 0xdead00};
    expect_failure_and_flush(&p, &fake, src, 16, (uintptr_t)dst, dmr->rkey, IBV_WC_LOC_PROT_ERR, dst, sizeof dst);
    ibv_dereg_mr(dmr);
    pair_close(&p);
}

/* A port's max_msg_sz bounds one WR: longer fails LOC_LEN_ERR, as on a
 * NIC; exactly that long goes through. */
static void message_too_long(void **state)
{
    (void)state;
    struct pair p;
    setenv("SOFTVERBS_MAX_MSG_SZ", "32", 1);
    pair_open(&p, &svt_default_opts);
    unsetenv("SOFTVERBS_MAX_MSG_SZ");
    struct ibv_port_attr pa;
    assert_int_equal(ibv_query_port(p.a.ctx, 1, &pa), 0);
    assert_int_equal(pa.max_msg_sz, 32);
    char src[64], dst[64];
    memset(src, 'S', sizeof src);
    memset(dst, 'D', sizeof dst);
    struct ibv_mr *smr = ibv_reg_mr(p.a.pd, src, sizeof src, IBV_ACCESS_LOCAL_WRITE);
    struct ibv_mr *dmr = ibv_reg_mr(p.b.pd, dst, sizeof dst, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    struct ibv_sge sge = {.addr = (uintptr_t)src, .length = 32, .lkey = smr->lkey};
    struct ibv_send_wr wr = {.wr_id = 9, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
                             .send_flags = IBV_SEND_SIGNALED,
                             .wr.rdma = {.remote_addr = (uintptr_t)dst, .rkey = dmr->rkey}};
    struct ibv_send_wr *bad = NULL;
    struct ibv_wc wc;
    assert_int_equal(ibv_post_send(p.qa, &wr, &bad), 0);
    assert_int_equal(svt_poll(p.a.cq, &wc, 1, 5000), 1);
    assert_int_equal(wc.status, IBV_WC_SUCCESS);
    assert_memory_equal(dst, src, 32);
    memset(dst, 'D', sizeof dst);
    expect_failure_and_flush(&p, smr, src, 33, (uintptr_t)dst, dmr->rkey, IBV_WC_LOC_LEN_ERR, dst, sizeof dst);
    ibv_dereg_mr(smr);
    ibv_dereg_mr(dmr);
    pair_close(&p);
}

struct late_recv {
    struct ibv_qp *qp;
    struct ibv_mr *mr;
    char *buf;
    int delay_ms;
};

static void *post_late(void *arg)
{
    struct late_recv *l = arg;
    struct timespec d = {l->delay_ms / 1000, (long)(l->delay_ms % 1000) * 1000000L};
    nanosleep(&d, NULL);
    svt_post_recv(l->qp, 9, l->mr, l->buf, 16);
    return NULL;
}

/* No receive posted: RNR NAK, retried; succeeds once a receive appears. */
static void rnr_then_success(void **state)
{
    (void)state;
    struct svt_conn_opts o = svt_default_opts;
    o.min_rnr_timer = 14; /* 1.28 ms */
    o.rnr_retry = 7;      /* for ever */
    struct pair p;
    pair_open(&p, &o);
    char msg[16] = "late but fine", got[16] = {0};
    struct ibv_mr *smr = ibv_reg_mr(p.a.pd, msg, sizeof msg, IBV_ACCESS_LOCAL_WRITE);
    struct ibv_mr *gmr = ibv_reg_mr(p.b.pd, got, sizeof got, IBV_ACCESS_LOCAL_WRITE);
    assert_int_equal(svt_post(p.qa, IBV_WR_SEND, 1, IBV_SEND_SIGNALED, smr, msg, sizeof msg, 0, 0, 0), 0);
    pthread_t t;
    struct late_recv l = {p.qb, gmr, got, 50};
    pthread_create(&t, NULL, post_late, &l);
    struct ibv_wc wc;
    assert_int_equal(svt_poll(p.a.cq, &wc, 1, 5000), 1);
    pthread_join(t, NULL);
    assert_int_equal(wc.status, IBV_WC_SUCCESS);
    assert_int_equal(svt_poll(p.b.cq, &wc, 1, 5000), 1);
    assert_int_equal(wc.status, IBV_WC_SUCCESS);
    assert_string_equal(got, "late but fine");
    ibv_dereg_mr(smr);
    ibv_dereg_mr(gmr);
    pair_close(&p);
}

static uint64_t rnr_naks(struct ibv_context *ctx)
{
    struct softverbs_stats st;
    assert_int_equal(softverbs_query_stats(ctx, &st), 0);
    return st.rnr_naks;
}

/* Retries exhausted: RNR_RETRY_EXC_ERR, and a write with immediate counts
 * as a receiver-not-ready case too. The requester's context has counted the
 * first try and each retry, the responder's none; the process total (a NULL
 * context) has them too. */
static void rnr_retries_exhausted(void **state)
{
    (void)state;
    struct svt_conn_opts o = svt_default_opts;
    o.min_rnr_timer = 1;
    o.rnr_retry = 3;
    for (int imm = 0; imm < 2; imm++) {
        struct pair p;
        pair_open(&p, &o);
        uint64_t before = rnr_naks(NULL);
        char dst[8];
        struct ibv_mr *dmr = ibv_reg_mr(p.b.pd, dst, sizeof dst, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
        if (imm) {
            assert_int_equal(svt_post(p.qa, IBV_WR_RDMA_WRITE_WITH_IMM, 1, 0, NULL, NULL, 0, (uintptr_t)dst,
                                      dmr->rkey, 5),
                             0);
        } else {
            assert_int_equal(svt_post(p.qa, IBV_WR_SEND, 1, 0, NULL, NULL, 0, 0, 0, 0), 0);
        }
        struct ibv_wc wc;
        assert_int_equal(svt_poll(p.a.cq, &wc, 1, 5000), 1);
        assert_int_equal(wc.status, IBV_WC_RNR_RETRY_EXC_ERR);
        assert_int_equal(qp_state(p.qa), IBV_QPS_ERR);
        assert_int_equal(rnr_naks(p.a.ctx), 1 + o.rnr_retry);
        assert_int_equal(rnr_naks(p.b.ctx), 0);
        assert_true(rnr_naks(NULL) - before >= 1u + o.rnr_retry);
        ibv_dereg_mr(dmr);
        pair_close(&p);
    }
}

/* A send larger than the receive: LOC_LEN_ERR at the responder, which goes
 * to error; REM_INV_REQ_ERR at the requester. */
static void receive_too_small(void **state)
{
    (void)state;
    struct pair p;
    pair_open(&p, &svt_default_opts);
    char msg[64] = {0}, got[32];
    struct ibv_mr *smr = ibv_reg_mr(p.a.pd, msg, sizeof msg, IBV_ACCESS_LOCAL_WRITE);
    struct ibv_mr *gmr = ibv_reg_mr(p.b.pd, got, sizeof got, IBV_ACCESS_LOCAL_WRITE);
    assert_int_equal(svt_post_recv(p.qb, 7, gmr, got, sizeof got), 0);
    assert_int_equal(svt_post(p.qa, IBV_WR_SEND, 1, 0, smr, msg, sizeof msg, 0, 0, 0), 0);
    struct ibv_wc wc;
    assert_int_equal(svt_poll(p.b.cq, &wc, 1, 5000), 1);
    assert_int_equal(wc.wr_id, 7);
    assert_int_equal(wc.status, IBV_WC_LOC_LEN_ERR);
    assert_int_equal(qp_state(p.qb), IBV_QPS_ERR);
    assert_int_equal(svt_poll(p.a.cq, &wc, 1, 5000), 1);
    assert_int_equal(wc.status, IBV_WC_REM_INV_REQ_ERR);
    ibv_dereg_mr(smr);
    ibv_dereg_mr(gmr);
    pair_close(&p);
}

/* Nobody answers (wrong QPN, or a PSN the responder does not expect):
 * the transport retries run out. */
static void no_answer(void **state)
{
    (void)state;
    struct svt_conn_opts o = svt_default_opts;
    o.timeout = 1;
    o.retry_cnt = 1;
    struct svt_node n;
    assert_int_equal(svt_open(&n, false, 16), 0);
    struct ibv_qp *qp = svt_create_qp(&n, NULL, NULL, 4, false);
    struct ibv_qp *peer = svt_create_qp(&n, NULL, NULL, 4, false);
    struct svt_addr self = svt_addr_of(&n, qp), other = svt_addr_of(&n, peer);
    struct svt_addr nowhere = self;
    nowhere.qpn = self.qpn + 100; /* no such QP */
    assert_int_equal(svt_connect(qp, &self, &nowhere, &o), 0);
    assert_int_equal(svt_post(qp, IBV_WR_RDMA_WRITE, 1, 0, NULL, NULL, 0, 0, 0, 0), 0);
    struct ibv_wc wc;
    assert_int_equal(svt_poll(n.cq, &wc, 1, 5000), 1);
    assert_int_equal(wc.status, IBV_WC_RETRY_EXC_ERR);

    struct ibv_qp_attr reset = {.qp_state = IBV_QPS_RESET};
    assert_int_equal(ibv_modify_qp(qp, &reset, IBV_QP_STATE), 0);
    struct svt_addr wrong_psn = self;
    wrong_psn.psn += 1;
    assert_int_equal(svt_connect(qp, &self, &other, &o), 0);
    assert_int_equal(svt_connect(peer, &other, &wrong_psn, &o), 0);
    assert_int_equal(svt_post(qp, IBV_WR_RDMA_WRITE, 2, 0, NULL, NULL, 0, 0, 0, 0), 0);
    assert_int_equal(svt_poll(n.cq, &wc, 1, 5000), 1);
    assert_int_equal(wc.wr_id, 2);
    assert_int_equal(wc.status, IBV_WC_RETRY_EXC_ERR);
    ibv_destroy_qp(qp);
    ibv_destroy_qp(peer);
    svt_close(&n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bad_rkey),         cmocka_unit_test(past_mr_end),
        cmocka_unit_test(before_mr_start),  cmocka_unit_test(no_remote_write_access),
        cmocka_unit_test(stale_rkey),       cmocka_unit_test(qp_without_remote_write),
        cmocka_unit_test(local_protection), cmocka_unit_test(message_too_long),
        cmocka_unit_test(rnr_then_success), cmocka_unit_test(rnr_retries_exhausted),
        cmocka_unit_test(receive_too_small), cmocka_unit_test(no_answer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
