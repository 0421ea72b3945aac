/*
 * RC data movement on one QP looped back to itself and between two
 * contexts (two NICs): ordering, completions, opcodes, inline data.
 */
#include "svt_util.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define CHUNK 64
#define NCHUNK 16

static void fill(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++) {
        p[i] = (unsigned char)(seed * 31u + i * 7u);
    }
}

/* Writes, then a write with immediate: when the receive completion of the
 * immediate arrives, every earlier write has landed (RC order). Only the
 * signalled WR produces a send completion. */
static void ordered_writes(struct svt_node *a, struct ibv_qp *qa, struct svt_node *b, struct ibv_qp *qb)
{
    unsigned char *src = malloc(CHUNK * NCHUNK), *dst = calloc(1, CHUNK * NCHUNK);
    struct ibv_mr *smr = ibv_reg_mr(a->pd, src, CHUNK * NCHUNK, IBV_ACCESS_LOCAL_WRITE);
    struct ibv_mr *dmr =
        ibv_reg_mr(b->pd, dst, CHUNK * NCHUNK, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    assert_non_null(smr);
    assert_non_null(dmr);
    fill(src, CHUNK * NCHUNK, 1);
    assert_int_equal(svt_post_recv(qb, 77, NULL, NULL, 0), 0);
    for (int i = 0; i < NCHUNK - 1; i++) {
        assert_int_equal(svt_post(qa, IBV_WR_RDMA_WRITE, (uint64_t)i, 0, smr, src + i * CHUNK, CHUNK,
                                  (uintptr_t)dst + (uint64_t)i * CHUNK, dmr->rkey, 0),
                         0);
    }
    int last = NCHUNK - 1;
    assert_int_equal(svt_post(qa, IBV_WR_RDMA_WRITE_WITH_IMM, 1000, IBV_SEND_SIGNALED, smr, src + last * CHUNK,
                              CHUNK, (uintptr_t)dst + (uint64_t)last * CHUNK, dmr->rkey, htobe32(0xabcd)),
                     0);
    struct ibv_wc wc[2];
    if (a->cq == b->cq) {
        /* loopback: both completions on one CQ, the send one is first
         * only if the ACK beats the receive; accept either order */
        assert_int_equal(svt_poll(a->cq, wc, 2, 5000), 2);
        if (wc[0].wr_id == 1000) {
            struct ibv_wc t = wc[0];
            wc[0] = wc[1];
            wc[1] = t;
        }
    } else {
        assert_int_equal(svt_poll(b->cq, &wc[0], 1, 5000), 1);
        assert_int_equal(svt_poll(a->cq, &wc[1], 1, 5000), 1);
    }
    assert_int_equal(wc[0].status, IBV_WC_SUCCESS);
    assert_int_equal(wc[0].wr_id, 77);
    assert_int_equal(wc[0].opcode, IBV_WC_RECV_RDMA_WITH_IMM);
    assert_true(wc[0].wc_flags & IBV_WC_WITH_IMM);
    assert_int_equal(be32toh(wc[0].imm_data), 0xabcd);
    assert_int_equal(wc[0].byte_len, CHUNK);
    assert_int_equal(wc[0].src_qp, qa->qp_num);
    assert_int_equal(wc[0].slid, a->lid);
    assert_memory_equal(dst, src, CHUNK * NCHUNK);
    assert_int_equal(wc[1].status, IBV_WC_SUCCESS);
    assert_int_equal(wc[1].wr_id, 1000);
    assert_int_equal(wc[1].opcode, IBV_WC_RDMA_WRITE);
    assert_true(svt_quiet(a->cq, 20)); /* no CQE for the unsignalled ones */
    ibv_dereg_mr(smr);
    ibv_dereg_mr(dmr);
    free(src);
    free(dst);
}

/* Sends into posted receives: matched in order, scattered, completed in
 * post order on both sides. */
static void ordered_sends(struct svt_node *a, struct ibv_qp *qa, struct svt_node *b, struct ibv_qp *qb)
{
    unsigned char src[NCHUNK][CHUNK], dst[NCHUNK][CHUNK];
    memset(dst, 0, sizeof dst);
    fill(&src[0][0], sizeof src, 2);
    struct ibv_mr *smr = ibv_reg_mr(a->pd, src, sizeof src, IBV_ACCESS_LOCAL_WRITE);
    struct ibv_mr *dmr = ibv_reg_mr(b->pd, dst, sizeof dst, IBV_ACCESS_LOCAL_WRITE);
    for (int i = 0; i < 8; i++) {
        assert_int_equal(svt_post_recv(qb, 100 + (uint64_t)i, dmr, dst[i], CHUNK), 0);
    }
    for (int i = 0; i < 8; i++) {
        unsigned flags = IBV_SEND_SIGNALED;
        assert_int_equal(svt_post(qa, i % 2 ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND, (uint64_t)i, flags, smr,
                                  src[i], (uint32_t)(i + 1) * 4, 0, 0, htobe32((uint32_t)i)),
                         0);
    }
    struct ibv_wc wc[16];
    int want = 16, got = svt_poll(a->cq, wc, a->cq == b->cq ? want : 8, 5000);
    if (a->cq != b->cq) {
        got += svt_poll(b->cq, wc + 8, 8, 5000);
    }
    assert_int_equal(got, want);
    uint64_t next_send = 0, next_recv = 100;
    for (int i = 0; i < want; i++) {
        assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
        if (wc[i].opcode == IBV_WC_SEND) {
            assert_int_equal(wc[i].wr_id, next_send++);
        } else {
            int k = (int)(wc[i].wr_id - 100);
            assert_int_equal(wc[i].opcode, IBV_WC_RECV);
            assert_int_equal(wc[i].wr_id, next_recv++);
            assert_int_equal(wc[i].byte_len, (k + 1) * 4);
            assert_int_equal(!!(wc[i].wc_flags & IBV_WC_WITH_IMM), k % 2);
            if (k % 2) {
                assert_int_equal(be32toh(wc[i].imm_data), k);
            }
            assert_memory_equal(dst[k], src[k], (size_t)(k + 1) * 4);
        }
    }
    ibv_dereg_mr(smr);
    ibv_dereg_mr(dmr);
}

static void loopback(void **state)
{
    (void)state;
    struct svt_node n;
    assert_int_equal(svt_open(&n, false, 64), 0);
    struct ibv_qp *qp = svt_loopback_qp(&n, 32, false);
    assert_non_null(qp);
    ordered_writes(&n, qp, &n, qp);
    ordered_sends(&n, qp, &n, qp);
    /* A zero-byte write needs neither MR nor key: the trigger's write. */
    assert_int_equal(svt_post(qp, IBV_WR_RDMA_WRITE, 5, IBV_SEND_SIGNALED, NULL, NULL, 0, 0, 0, 0), 0);
    struct ibv_wc wc;
    assert_int_equal(svt_poll(n.cq, &wc, 1, 5000), 1);
    assert_int_equal(wc.status, IBV_WC_SUCCESS);
    assert_int_equal(wc.wr_id, 5);
    ibv_destroy_qp(qp);
    svt_close(&n);
}

static void connect_pair(struct svt_node *a, struct ibv_qp **qa, struct svt_node *b, struct ibv_qp **qb,
                         bool use_gid)
{
    assert_int_equal(svt_open(a, false, 64), 0);
    assert_int_equal(svt_open(b, false, 64), 0);
    *qa = svt_create_qp(a, NULL, NULL, 32, false);
    *qb = svt_create_qp(b, NULL, NULL, 32, false);
    struct svt_addr aa = svt_addr_of(a, *qa), ab = svt_addr_of(b, *qb);
    struct svt_conn_opts o = svt_default_opts;
    o.use_gid = use_gid;
    assert_int_equal(svt_connect(*qa, &aa, &ab, &o), 0);
    assert_int_equal(svt_connect(*qb, &ab, &aa, &o), 0);
}

static void two_nics(void **state)
{
    (void)state;
    struct svt_node a, b;
    struct ibv_qp *qa, *qb;
    connect_pair(&a, &qa, &b, &qb, false);
    ordered_writes(&a, qa, &b, qb);
    ordered_sends(&a, qa, &b, qb);
    ordered_sends(&b, qb, &a, qa); /* and the other way */
    ibv_destroy_qp(qa);
    ibv_destroy_qp(qb);
    svt_close(&a);
    svt_close(&b);
}

/* RoCE-like port: LID 0, the address is the GID and a GRH is required. */
static void ethernet_port_by_gid(void **state)
{
    (void)state;
    setenv("SOFTVERBS_LINK_LAYER", "ethernet", 1);
    struct svt_node a, b;
    struct ibv_qp *qa, *qb;
    connect_pair(&a, &qa, &b, &qb, true);
    unsetenv("SOFTVERBS_LINK_LAYER");
    struct ibv_port_attr pa;
    assert_int_equal(ibv_query_port(a.ctx, 1, &pa), 0);
    assert_int_equal(pa.link_layer, IBV_LINK_LAYER_ETHERNET);
    assert_int_equal(pa.lid, 0);
    ordered_writes(&a, qa, &b, qb);

    struct ibv_qp *q = svt_create_qp(&a, NULL, NULL, 4, false);
    struct svt_addr self = svt_addr_of(&a, q), peer = svt_addr_of(&b, qb);
    assert_int_equal(svt_connect(q, &self, &peer, &svt_default_opts), EINVAL); /* no GRH */
    ibv_destroy_qp(q);
    ibv_destroy_qp(qa);
    ibv_destroy_qp(qb);
    svt_close(&a);
    svt_close(&b);
}

/* sq_sig_all: every WR completes; send-queue slots are freed only when a
 * signalled completion is polled, so an all-unsignalled queue fills. */
static void signalling_and_sq_slots(void **state)
{
    (void)state;
    struct svt_node n;
    assert_int_equal(svt_open(&n, false, 64), 0);
    struct ibv_qp *all = svt_create_qp(&n, NULL, NULL, 4, true);
    struct ibv_qp *qp = svt_create_qp(&n, NULL, NULL, 4, false);
    struct svt_addr ma = svt_addr_of(&n, all), mq = svt_addr_of(&n, qp);
    assert_int_equal(svt_connect(all, &ma, &ma, &svt_default_opts), 0);
    assert_int_equal(svt_connect(qp, &mq, &mq, &svt_default_opts), 0);
    struct ibv_wc wc[4];
    for (int i = 0; i < 3; i++) {
        assert_int_equal(svt_post(all, IBV_WR_RDMA_WRITE, (uint64_t)i, 0, NULL, NULL, 0, 0, 0, 0), 0);
    }
    assert_int_equal(svt_poll(n.cq, wc, 3, 5000), 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(wc[i].wr_id, i);
    }

    for (int i = 0; i < 3; i++) {
        assert_int_equal(svt_post(qp, IBV_WR_RDMA_WRITE, (uint64_t)i, 0, NULL, NULL, 0, 0, 0, 0), 0);
    }
    assert_int_equal(svt_post(qp, IBV_WR_RDMA_WRITE, 3, IBV_SEND_SIGNALED, NULL, NULL, 0, 0, 0, 0), 0);
    /* All four executed, but no slot is free before the CQE is polled. */
    assert_int_equal(svt_poll(n.cq, wc, 1, 5000), 1);
    assert_int_equal(wc[0].wr_id, 3);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(svt_post(qp, IBV_WR_RDMA_WRITE, 10 + (uint64_t)i, 0, NULL, NULL, 0, 0, 0, 0), 0);
    }
    assert_int_equal(svt_post(qp, IBV_WR_RDMA_WRITE, 99, IBV_SEND_SIGNALED, NULL, NULL, 0, 0, 0, 0), ENOMEM);
    assert_true(svt_quiet(n.cq, 20));

    /* RESET frees every slot and discards queued work, without CQEs. */
    struct ibv_qp_attr reset = {.qp_state = IBV_QPS_RESET};
    assert_int_equal(ibv_modify_qp(qp, &reset, IBV_QP_STATE), 0);
    assert_int_equal(svt_connect(qp, &mq, &mq, &svt_default_opts), 0);
    assert_int_equal(svt_post(qp, IBV_WR_RDMA_WRITE, 20, IBV_SEND_SIGNALED, NULL, NULL, 0, 0, 0, 0), 0);
    assert_int_equal(svt_poll(n.cq, wc, 1, 5000), 1);
    assert_int_equal(wc[0].wr_id, 20);
    assert_int_equal(wc[0].status, IBV_WC_SUCCESS);
    ibv_destroy_qp(all);
    ibv_destroy_qp(qp);
    svt_close(&n);
}

/* Inline data is taken at post time; RDMA read pulls remote data. */
static void inline_and_read(void **state)
{
    (void)state;
    struct svt_node a, b;
    struct ibv_qp *qa, *qb;
    connect_pair(&a, &qa, &b, &qb, false);
    char msg[32] = "inline payload", got[32] = {0};
    struct ibv_mr *gmr = ibv_reg_mr(b.pd, got, sizeof got, IBV_ACCESS_LOCAL_WRITE);
    assert_int_equal(svt_post_recv(qb, 1, gmr, got, sizeof got), 0);
    assert_int_equal(svt_post(qa, IBV_WR_SEND, 2, IBV_SEND_SIGNALED | IBV_SEND_INLINE, NULL, msg, sizeof msg, 0, 0, 0),
                     0);
    memset(msg, 'X', sizeof msg); /* allowed at once for inline */
    struct ibv_wc wc;
    assert_int_equal(svt_poll(b.cq, &wc, 1, 5000), 1);
    assert_int_equal(wc.status, IBV_WC_SUCCESS);
    assert_string_equal(got, "inline payload");
    assert_int_equal(svt_poll(a.cq, &wc, 1, 5000), 1);

    char remote[48], local[48] = {0};
    fill((unsigned char *)remote, sizeof remote, 3);
    struct ibv_mr *rmr = ibv_reg_mr(b.pd, remote, sizeof remote, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
    struct ibv_mr *lmr = ibv_reg_mr(a.pd, local, sizeof local, IBV_ACCESS_LOCAL_WRITE);
    assert_int_equal(svt_post(qa, IBV_WR_RDMA_READ, 3, IBV_SEND_SIGNALED, lmr, local, sizeof local,
                              (uintptr_t)remote, rmr->rkey, 0),
                     0);
    assert_int_equal(svt_poll(a.cq, &wc, 1, 5000), 1);
    assert_int_equal(wc.status, IBV_WC_SUCCESS);
    assert_int_equal(wc.opcode, IBV_WC_RDMA_READ);
    assert_int_equal(wc.byte_len, sizeof local);
    assert_memory_equal(local, remote, sizeof local);
    ibv_dereg_mr(gmr);
    ibv_dereg_mr(rmr);
    ibv_dereg_mr(lmr);
    ibv_destroy_qp(qa);
    ibv_destroy_qp(qb);
    svt_close(&a);
    svt_close(&b);
}

/* Many QPs between two NICs, all busy at once: more datagrams than a
 * socket queue holds (net.unix.max_dgram_qlen, 10 by default) are in
 * flight, so the NICs must queue and resend without losing or reordering
 * anything. */
#define MANY_QPS 48
#define WRS_EACH 4

static void many_qps_between_two_nics(void **state)
{
    (void)state;
    struct svt_node a, b;
    assert_int_equal(svt_open(&a, false, MANY_QPS * WRS_EACH), 0);
    assert_int_equal(svt_open(&b, false, MANY_QPS * WRS_EACH), 0);
    struct ibv_qp *qa[MANY_QPS], *qb[MANY_QPS];
    unsigned char *dst = calloc(MANY_QPS, WRS_EACH);
    struct ibv_mr *dmr = ibv_reg_mr(b.pd, dst, MANY_QPS * WRS_EACH, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    unsigned char src[MANY_QPS * WRS_EACH];
    fill(src, sizeof src, 9);
    struct ibv_mr *smr = ibv_reg_mr(a.pd, src, sizeof src, IBV_ACCESS_LOCAL_WRITE);
    for (int q = 0; q < MANY_QPS; q++) {
        qa[q] = svt_create_qp(&a, NULL, NULL, WRS_EACH, false);
        qb[q] = svt_create_qp(&b, NULL, NULL, WRS_EACH, false);
        struct svt_addr xa = svt_addr_of(&a, qa[q]), xb = svt_addr_of(&b, qb[q]);
        assert_int_equal(svt_connect(qa[q], &xa, &xb, &svt_default_opts), 0);
        assert_int_equal(svt_connect(qb[q], &xb, &xa, &svt_default_opts), 0);
    }
    for (int i = 0; i < WRS_EACH; i++) {
        for (int q = 0; q < MANY_QPS; q++) {
            int off = q * WRS_EACH + i;
            assert_int_equal(svt_post(qa[q], IBV_WR_RDMA_WRITE, (uint64_t)i, IBV_SEND_SIGNALED, smr, src + off, 1,
                                      (uintptr_t)dst + (uint64_t)off, dmr->rkey, 0),
                             0);
        }
    }
    struct ibv_wc wc[MANY_QPS * WRS_EACH];
    int next[MANY_QPS] = {0};
    assert_int_equal(svt_poll(a.cq, wc, MANY_QPS * WRS_EACH, 10000), MANY_QPS * WRS_EACH);
    for (int i = 0; i < MANY_QPS * WRS_EACH; i++) {
        int q = 0;
        while (q < MANY_QPS && qa[q]->qp_num != wc[i].qp_num) {
            q++;
        }
        assert_true(q < MANY_QPS);
        assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
        assert_int_equal(wc[i].wr_id, next[q]++);
    }
    assert_memory_equal(dst, src, sizeof src);
    for (int q = 0; q < MANY_QPS; q++) {
        ibv_destroy_qp(qa[q]);
        ibv_destroy_qp(qb[q]);
    }
    ibv_dereg_mr(smr);
    ibv_dereg_mr(dmr);
    free(dst);
    svt_close(&a);
    svt_close(&b);
}

/* Several threads post on their own QPs while another polls the shared
 * CQ: each QP's completions arrive complete and in its post order. */
#define POSTERS 3
#define PER_POSTER 300

struct poster {
    struct ibv_qp *qp;
    struct ibv_mr *mr;
    unsigned char *buf; /* PER_POSTER bytes, written from src onto itself + PER_POSTER */
};

static void *post_many(void *arg)
{
    struct poster *p = arg;
    for (int i = 0; i < PER_POSTER; i++) {
        int rc;
        /* ENOMEM: the send queue is full until the poller sees CQEs */
        while ((rc = svt_post(p->qp, IBV_WR_RDMA_WRITE, (uint64_t)i, IBV_SEND_SIGNALED, p->mr, p->buf + i, 1,
                              (uintptr_t)p->buf + PER_POSTER + (uint64_t)i, p->mr->rkey, 0)) == ENOMEM) {
            sched_yield();
        }
        if (rc != 0) {
            return (void *)1;
        }
    }
    return NULL;
}

static void threads_post_and_poll(void **state)
{
    (void)state;
    struct svt_node n;
    assert_int_equal(svt_open(&n, false, 64), 0);
    struct poster p[POSTERS];
    pthread_t t[POSTERS];
    int next[POSTERS] = {0};
    for (int k = 0; k < POSTERS; k++) {
        p[k].qp = svt_create_qp(&n, NULL, NULL, 8, false);
        struct svt_addr me = svt_addr_of(&n, p[k].qp);
        assert_int_equal(svt_connect(p[k].qp, &me, &me, &svt_default_opts), 0);
        p[k].buf = calloc(2, PER_POSTER);
        fill(p[k].buf, PER_POSTER, (unsigned)k);
        p[k].mr = ibv_reg_mr(n.pd, p[k].buf, 2 * PER_POSTER, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
        pthread_create(&t[k], NULL, post_many, &p[k]);
    }
    for (int done = 0; done < POSTERS * PER_POSTER;) {
        struct ibv_wc wc[16];
        int left = POSTERS * PER_POSTER - done;
        int got = svt_poll(n.cq, wc, left < 16 ? left : 16, 5000);
        assert_true(got > 0);
        for (int i = 0; i < got; i++) {
            int k = 0;
            while (k < POSTERS && p[k].qp->qp_num != wc[i].qp_num) {
                k++;
            }
            assert_true(k < POSTERS);
            assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
            assert_int_equal(wc[i].wr_id, next[k]++);
        }
        done += got;
    }
    for (int k = 0; k < POSTERS; k++) {
        void *ret;
        pthread_join(t[k], &ret);
        assert_null(ret);
        assert_memory_equal(p[k].buf + PER_POSTER, p[k].buf, PER_POSTER);
        ibv_destroy_qp(p[k].qp);
        ibv_dereg_mr(p[k].mr);
        free(p[k].buf);
    }
    svt_close(&n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(loopback),
        cmocka_unit_test(two_nics),
        cmocka_unit_test(ethernet_port_by_gid),
        cmocka_unit_test(signalling_and_sq_slots),
        cmocka_unit_test(inline_and_read),
        cmocka_unit_test(threads_post_and_poll),
        cmocka_unit_test(many_qps_between_two_nics),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
