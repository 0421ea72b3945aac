/*
 * softverbs internals: the objects behind the ibv_* handles, the wire
 * format between "NICs" and the calls the files share. See README.md for
 * the model; every object of a context is protected by that context's lock.
 */
#ifndef SV_INTERNAL_H
#define SV_INTERNAL_H

#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define SV_EXPORT __attribute__((visibility("default")))
#define sv_container_of(ptr, type, member) ((type *)((char *)(ptr) - offsetof(type, member)))

/* Device limits, reported by ibv_query_device and enforced. */
#define SV_MAX_SGE 4
#define SV_MAX_INLINE 256
#define SV_MAX_QP_WR 16384
#define SV_MAX_CQE 65536
#define SV_QPN_BITS 10 /* qpn = lid << SV_QPN_BITS | slot: unique on the host */
#define SV_MAX_QP (1 << SV_QPN_BITS)
#define SV_MAX_LID 0x3fff /* keeps lid << SV_QPN_BITS within the 24-bit QPN */
#define SV_PSN_MASK 0xffffffu
/* Floor on the transport timeout so that an oversubscribed host's slow
 * NIC thread is not mistaken for a lost packet. */
#define SV_MIN_RETRY_NS 200000000ull

/* The one extension opcode: held in the send queue like any WR. */
#define SV_OP_WAIT ((enum ibv_wr_opcode)0x7f)

struct sv_ctx;
struct sv_cq;
struct sv_async;

struct sv_pd {
    struct ibv_pd ibv;
};

struct sv_mr {
    struct ibv_mr ibv;
    uint64_t iova; /* the address remote and local keys are checked against */
    unsigned int access;
    struct sv_mr *next;
};

/* A completion as stored: send-queue CQEs retire their QP's SQ slots when
 * polled, as a NIC driver frees WQEs only once their CQE is seen. */
struct sv_cqe {
    struct ibv_wc wc;
    struct sv_qp *sq_owner;
    uint64_t sq_pos;
};

struct sv_event {
    struct sv_cq *cq;
    struct sv_event *next;
};

struct sv_channel {
    struct ibv_comp_channel ibv;
    int write_fd; /* one byte per queued event; ibv.fd is the read end */
    struct sv_event *head, *tail;
    int refs; /* CQs using it */
};

/* What ibv_req_notify_cq asked for; "any" takes precedence. */
enum sv_arm { SV_ARM_NONE, SV_ARM_SOLICITED, SV_ARM_ANY };

struct sv_cq {
    struct ibv_cq ibv;
    struct sv_cqe *ring;
    uint32_t cap, head, count;
    enum sv_arm arm;
    bool overflowed;
    uint64_t total;      /* completions ever produced: what WAIT counts */
    uint64_t wait_index; /* target of the last WAIT posted against it */
    uint32_t events_reported;
    int refs; /* QPs using it, and WAITs queued on it */
};

struct sv_swr {
    uint64_t wr_id;
    enum ibv_wr_opcode opcode;
    unsigned int send_flags;
    uint32_t imm;
    uint64_t remote_addr;
    uint32_t rkey;
    int num_sge;
    struct ibv_sge sge[SV_MAX_SGE];
    uint32_t inline_len;
    uint8_t inline_data[SV_MAX_INLINE];
    struct sv_cq *wait_cq;
    uint64_t wait_target;
};

struct sv_rwr {
    uint64_t wr_id;
    int num_sge;
    struct ibv_sge sge[SV_MAX_SGE];
};

/* What travels between NICs: one datagram per request or response. */
enum sv_msg_type { SV_MSG_REQ = 1, SV_MSG_ACK, SV_MSG_NAK };
enum sv_nak { SV_NAK_NONE, SV_NAK_RNR, SV_NAK_ACCESS, SV_NAK_INV_REQ, SV_NAK_OP_ERR };

struct sv_wire_sge {
    uint64_t addr; /* in the initiator's address space */
    uint64_t len;
};

struct sv_msg {
    uint8_t type;
    uint8_t opcode; /* enum ibv_wr_opcode */
    uint8_t nak;
    uint8_t min_rnr_timer; /* in an RNR NAK: the responder's timer code */
    uint8_t has_imm;
    uint8_t solicited;
    uint16_t src_lid;
    int32_t src_pid;
    uint32_t src_qpn, dst_qpn, psn;
    uint32_t imm;
    uint64_t remote_addr;
    uint32_t rkey;
    uint32_t length;
    uint32_t num_sge;
    struct sv_wire_sge sge[SV_MAX_SGE];
    uint32_t inline_len;
    uint8_t inline_data[SV_MAX_INLINE];
};

struct sv_qp {
    struct ibv_qp ibv;
    struct ibv_qp_attr attr; /* what ibv_query_qp returns */
    struct ibv_qp_cap cap;
    bool sq_sig_all;
    uint16_t remote_lid; /* resolved from ah_attr at RTR */
    /* Send queue: [retired, next) executed but not yet seen polled,
     * [next, posted) waiting. Positions grow forever; slot = pos % size. */
    struct sv_swr *sq;
    uint32_t sq_size;
    uint64_t sq_posted, sq_next, sq_retired;
    struct sv_rwr *rq;
    uint32_t rq_size;
    uint64_t rq_posted, rq_next;
    /* The WR at sq_next while it awaits its ACK: one in flight per QP keeps
     * RC order and stops at the first error exactly as a NIC does. */
    bool in_flight;
    struct sv_msg flight;
    uint64_t retry_deadline; /* 0: none (infinite timeout or waiting RNR) */
    uint64_t rnr_resend_at;  /* 0: none */
    int rnr_left;
};

struct sv_outmsg {
    uint16_t lid;
    struct sv_msg msg;
    struct sv_outmsg *next;
};

struct sv_ctx {
    struct ibv_context ibv;
    pthread_mutex_t lock;
    uint16_t lid;
    bool ethernet; /* RoCE-like port: LID 0, GRH addressing required */
    uint32_t max_msg_sz; /* the port's largest message; longer WRs fail LOC_LEN_ERR */
    int max_cqe;         /* entries of the largest CQ */
    uint64_t max_mr_size; /* the largest registration; longer ones fail EINVAL */
    int sock;      /* datagram socket bound to the LID's abstract name */
    int wake_fd;   /* eventfd: posted work or shutdown for the NIC thread */
    pthread_t thread;
    bool stop;
    bool progressed; /* a CQE was produced: WAITs may be released */
    struct sv_qp *qps[SV_MAX_QP];
    struct sv_mr *mrs;
    uint32_t key_seq;
    struct sv_outmsg *out_head, *out_tail;
    int async_write_fd;
    struct sv_async *async_head, *async_tail;
    int objects; /* PDs, MRs, CQs, QPs, channels still allocated */
    uint64_t rnr_naks; /* received by this context's requesters */
    uint64_t mr_registrations; /* successful ibv_reg_mr calls */
};

static inline struct sv_ctx *sv_ctx_of(struct ibv_context *c)
{
    return sv_container_of(c, struct sv_ctx, ibv);
}

/* sv_device.c */
bool sv_is_ours(struct ibv_context *c);
uint64_t sv_now_ns(void);
void sv_wake(struct sv_ctx *ctx);
void sv_gid_of_lid(uint16_t lid, union ibv_gid *gid);
bool sv_lid_of_gid(const union ibv_gid *gid, uint16_t *lid);

/* sv_async.c */
int sv_async_open(struct sv_ctx *ctx);
void sv_async_close(struct sv_ctx *ctx);
void sv_async_raise(struct sv_ctx *ctx, const struct ibv_async_event *event);

/* sv_mr.c */
struct sv_mr *sv_mr_find(struct sv_ctx *ctx, uint32_t key);
/* The virtual address of [iova, iova+len) in mr, or NULL when outside. */
void *sv_mr_translate(const struct sv_mr *mr, uint64_t iova, uint64_t len);
/* Successful registrations of every context this process opened. */
uint64_t sv_mr_registrations_total(void);

/* The data-path calls that verbs.h inlines through ibv_context.ops. */
int sv_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);
int sv_req_notify_cq(struct ibv_cq *cq, int solicited_only);
int sv_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
int sv_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);

/* sv_cq.c */
/* solicited: a receive completion of a message sent with IBV_SEND_SOLICITED. */
void sv_cq_push(struct sv_cq *cq, const struct ibv_wc *wc, bool solicited, struct sv_qp *sq_owner, uint64_t sq_pos);
void sv_cq_forget_qp(struct sv_cq *cq, const struct sv_qp *qp);

/* sv_qp.c */
void sv_qp_set_error(struct sv_qp *qp);
void sv_qp_complete_send(struct sv_qp *qp, enum ibv_wc_status status, bool force);
/* The WAIT at the head of the send queue is satisfied: it leaves silently. */
void sv_qp_pass_wait(struct sv_qp *qp);

/* sv_engine.c: the NIC thread and the datagrams between NICs */
int sv_engine_start(struct sv_ctx *ctx);
void sv_engine_stop(struct sv_ctx *ctx);
void sv_send(struct sv_ctx *ctx, uint16_t lid, const struct sv_msg *msg);
struct sv_qp *sv_qp_lookup(struct sv_ctx *ctx, uint32_t qpn);

/* sv_requester.c: executing the send queues. Returns the next timer
 * deadline (UINT64_MAX: none). */
uint64_t sv_requester_advance(struct sv_ctx *ctx, uint64_t now);
void sv_requester_response(struct sv_ctx *ctx, const struct sv_msg *msg, uint64_t now);

/* sv_responder.c: serving requests that arrive for this NIC's QPs. */
void sv_responder_request(struct sv_ctx *ctx, const struct sv_msg *msg);

#endif
