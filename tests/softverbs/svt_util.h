/*
 * Helpers shared by the softverbs tests: a "node" is an opened context
 * with a PD and a CQ; QPs are connected exactly as a backend would do it.
 * They report failures by return value so that both the cmocka tests and
 * the forked two-process test can use them.
 */
#ifndef SVT_UTIL_H
#define SVT_UTIL_H

#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stdint.h>

struct svt_node {
    struct ibv_context *ctx;
    struct ibv_pd *pd;
    struct ibv_comp_channel *channel; /* NULL unless asked for */
    struct ibv_cq *cq;
    uint16_t lid; /* 0 on an Ethernet (RoCE-like) port */
    union ibv_gid gid;
};

/* Where a peer's QP is: what a bootstrap exchanges. */
struct svt_addr {
    uint16_t lid;
    union ibv_gid gid;
    uint32_t qpn;
    uint32_t psn;
};

struct svt_conn_opts {
    uint8_t rnr_retry;     /* 7: for ever */
    uint8_t min_rnr_timer; /* IB encoding; 1 = 10 us */
    uint8_t timeout;       /* IB encoding; 0 = infinite */
    uint8_t retry_cnt;
    bool use_gid;          /* address by GID (RoCE style) instead of LID */
};

extern const struct svt_conn_opts svt_default_opts;

int svt_open(struct svt_node *n, bool with_channel, int cqe);
void svt_close(struct svt_node *n);
struct ibv_qp *svt_create_qp(struct svt_node *n, struct ibv_cq *scq, struct ibv_cq *rcq, uint32_t max_send_wr,
                             bool sig_all);
struct svt_addr svt_addr_of(const struct svt_node *n, const struct ibv_qp *qp);
/* RESET -> INIT -> RTR -> RTS towards `to`; returns 0 or the errno of the
 * failing ibv_modify_qp. */
int svt_connect(struct ibv_qp *qp, const struct svt_addr *self, const struct svt_addr *to,
                const struct svt_conn_opts *o);

/* A QP of n connected to itself (the loopback the tests use most), or NULL. */
struct ibv_qp *svt_loopback_qp(struct svt_node *n, uint32_t max_send_wr, bool sig_all);

/* Post one WR with one SGE (len 0: no SGE). */
int svt_post(struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id, unsigned flags, const struct ibv_mr *mr,
             void *buf, uint32_t len, uint64_t raddr, uint32_t rkey, uint32_t imm);
int svt_post_recv(struct ibv_qp *qp, uint64_t wr_id, const struct ibv_mr *mr, void *buf, uint32_t len);

/* Poll until n completions or timeout_ms; returns how many arrived. */
int svt_poll(struct ibv_cq *cq, struct ibv_wc *wc, int n, int timeout_ms);
/* True when cq stays empty for ms milliseconds. */
bool svt_quiet(struct ibv_cq *cq, int ms);

#endif
