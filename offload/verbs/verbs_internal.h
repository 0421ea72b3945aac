/*
 * Verbs backend internals, shared by its files:
 *   nic_verbs.c     the ops table: set-up, post_list, progress, arm, windows
 *   verbs_dev.c     device and port discovery, protection domain, CQs, channel
 *   verbs_qp.c      RC queue pairs: connection, receive buffers, send chains
 *   verbs_mr.c      registration cache for application buffers
 *   verbs_proto.c   the two-sided protocol of collectives and control messages
 *   verbs_trigger.c the loopback trigger QP and its two variants
 *
 * Everything runs on the one thread that owns the backend instance, except
 * the registration cache's unmap hook (any thread that unmaps memory).
 */
#ifndef VERBS_INTERNAL_H
#define VERBS_INTERNAL_H

#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdint.h>

#include "oc_nic.h"

#define VB_SQ_DEPTH   128   /* send WRs in flight per QP; more wait in software */
#define VB_RQ_DEPTH   64    /* receive buffers pre-posted per QP */
#define VB_MAX_PEERS  256   /* default of OC_VERBS_MAX_PEERS: data QPs per instance */
#define VB_MAX_PEERS_CAP (1u << 16) /* its largest value */
#define VB_BUF_SIZE   2048  /* a bounce buffer: header and eager payload */
#define VB_TRIG_DEPTH 512   /* trigger QP: WAITs and writes in flight */
#define VB_MAX_MSG    (1ul << 30) /* at most this per WR, whatever the port allows */
/* Credits (verbs_qp.c): the last one is kept for a CREDIT message, which
 * goes out once this many re-posted receives found no message to report
 * them. */
#define VB_CREDIT_RESERVE 1
#define VB_CREDIT_REPORT  (VB_RQ_DEPTH / 2)

typedef enum {
    VB_MSG_EAGER = 1, VB_MSG_RTS, VB_MSG_RTR, VB_MSG_CTRL,
    VB_MSG_CREDIT,   /* nothing but the credits field */
    VB_MSG_ABORT     /* the sender of an RTR'd message cannot write it (status, rcookie) */
} vb_msg_type_t;

/* Leads every message sent with SEND. */
typedef struct {
    uint32_t type;     /* vb_msg_type_t */
    uint32_t credits;  /* all: receives re-posted for the peer since the last report */
    uint32_t team_id;  /* EAGER, RTS: the receiver's id for the team */
    uint32_t seq;      /* EAGER, RTS: operation number */
    int32_t src;       /* EAGER, RTS: sender's rank in the team */
    uint64_t len;      /* payload bytes (EAGER, CTRL), message bytes (RTS, RTR) */
    uint64_t addr;     /* RTR: where the sender writes */
    uint32_t scookie;  /* RTS, RTR: the sender's id of a rendezvous send */
    uint32_t rcookie;  /* RTR, ABORT: the receiver's id; the write's immediate */
    uint32_t rkey;     /* RTR */
    int32_t status;    /* RTR: OC_OK, or why the receiver refuses the message;
                          ABORT: why the sender cannot write it */
} vb_hdr_t;

#define VB_EAGER_MAX (VB_BUF_SIZE - sizeof(vb_hdr_t))
/* A port must take this much in one SEND: a header and the runtime's control
 * messages (timeout queries, notifications: 20 bytes each), with room. */
#define VB_MIN_MSG   (sizeof(vb_hdr_t) + 64)

typedef struct vb_nic vb_nic_t;
typedef struct vb_mr vb_mr_t;

/* ---- registration cache (verbs_mr.c) ---------------------------------------- */

struct vb_mr {
    vb_mr_t *next;
    uintptr_t start, end;  /* registered range, page aligned */
    struct ibv_mr *mr;
    int access;            /* ibv_access_flags it was registered with */
    unsigned refs;         /* WRs or receives using it */
    int stale;             /* pages unmapped: never handed out again */
};

typedef struct {
    struct ibv_pd *pd;
    pthread_mutex_t lock;  /* the list and counts: the unmap hook runs in any thread */
    vb_mr_t *head;         /* most recently used first */
    unsigned count, nstale;
    int hooked;            /* told of unmapped memory: entries outlive their use */
} vb_mr_cache_t;

/* Empty cache on pd. With hooks, asks UCX's memory events (libucm) to report
 * unmapped memory, and keeps registrations after their last use; without
 * them, or where the events are off (UCX_MEM_EVENTS=no), a registration
 * lives only while a transfer uses it. c->hooked says which. */
void vb_mr_cache_init(vb_mr_cache_t *c, struct ibv_pd *pd, int hooks);
/* A registration covering [addr, addr+len) (writable: by the network), held
 * until vb_mr_put. */
oc_status_t vb_mr_get(vb_mr_cache_t *c, const void *addr, size_t len, int writable,
                      vb_mr_t **out);
void vb_mr_put(vb_mr_cache_t *c, vb_mr_t *m);
/* Removes the hook, then deregisters everything; nothing may be held. */
void vb_mr_cache_fini(vb_mr_cache_t *c);

/* ---- send work requests and queue pairs (verbs_qp.c) ----------------------- */

typedef enum {
    VB_OP_TASK,     /* carries a task; finishing it finishes the task */
    VB_OP_PROTO,    /* a protocol or control message of no task */
    VB_OP_TRIGGER,  /* the zero-byte write that ends a list */
    VB_OP_WAIT      /* cross-channel WAIT ahead of a trigger (never completes) */
} vb_op_kind_t;

typedef struct vb_op {
    struct vb_op *next;          /* pending queue of its QP, or the free list */
    struct ibv_send_wr wr;
    struct ibv_sge sge;
    vb_op_kind_t kind;
    unsigned sq_slots;           /* send-queue slots its completion frees */
    oc_nic_ep_t *ep;
    oc_nic_slot_t *slot;         /* VB_OP_TASK */
    vb_mr_t *mr;                 /* registration held while the WR is in flight */
    oc_nic_list_t *list;         /* VB_OP_TRIGGER */
    char *buf;                   /* VB_BUF_SIZE registered bytes */
    uint32_t buf_lkey;
} vb_op_t;

typedef struct vb_rbuf vb_rbuf_t;

/* An EAGER or RTS that came before its RECV task (verbs_proto.c). It is
 * copied into a node of the protocol's pool, or, when memory for one is
 * short, left where it arrived: its receive buffer is then posted again, and
 * its credit owed, only once the task takes it. */
typedef struct vb_unexp {
    struct vb_unexp *next;
    oc_nic_ep_t *ep;             /* the QP it came through, where an RTR goes back */
    vb_rbuf_t *held;             /* the receive buffer it is still in; NULL: copied */
    vb_hdr_t hdr;
} vb_unexp_t;

struct vb_rbuf {
    oc_nic_ep_t *ep;
    char *data;                  /* VB_BUF_SIZE bytes in ep->rbufs */
    vb_unexp_t held;             /* its message, while held */
};

/* What a peer needs to reach this process (oc_nic address). */
typedef struct {
    uint64_t nonce;              /* tells processes that share a LID apart */
    uint8_t gid[16];
    uint16_t lid;
    uint8_t port;
    uint8_t ethernet;            /* RoCE: address by GID */
    uint8_t mtu;                 /* the port's active_mtu (enum ibv_mtu) */
} vb_addr_t;

/* What the peer's QP for this pair needs (the wire-up blob). */
typedef struct {
    uint32_t qpn;
    uint32_t psn;
} vb_wireup_t;

struct oc_nic_ep {
    oc_nic_ep_t *next;           /* all QPs of the instance */
    oc_nic_ep_t *dirty_next;     /* QPs with staged WRs to post */
    int dirty;
    struct ibv_qp *qp;
    vb_addr_t peer;
    uint32_t psn;
    uint32_t peer_qpn;           /* 0 until wired up */
    int sq_avail;
    vb_op_t *pend_head, **pend_tail; /* staged, not yet posted: waiting for send-queue
                                        slots or credits */
    int credits;                 /* receives posted at the peer for this QP, unused */
    int unreported;              /* receives re-posted here, not yet reported to the peer */
    int failed;                  /* a WR failed: the QP is in error and flushes all */
    char *rbufs;
    struct ibv_mr *rmr;
    vb_rbuf_t rdesc[VB_RQ_DEPTH];
    int loopback;                /* the trigger QP */
};

oc_status_t vb_qp_create(vb_nic_t *nic, const vb_addr_t *peer, int loopback, oc_nic_ep_t **out);
/* To RTR and RTS, addressed to the peer's QP. */
oc_status_t vb_qp_connect(vb_nic_t *nic, oc_nic_ep_t *ep, const vb_wireup_t *w);
void vb_qp_destroy(vb_nic_t *nic, oc_nic_ep_t *ep);
/* rb's message has been handled: its buffer is posted again, a credit owed to the peer. */
oc_status_t vb_qp_repost(vb_nic_t *nic, vb_rbuf_t *rb);
/* The peer reports n more receives posted for ep. */
void vb_qp_credits(vb_nic_t *nic, oc_nic_ep_t *ep, uint32_t n);
/* A WR or receive of ep failed: ep's QP is in error. */
/* ep's QP is in error (why: the work completion's status): what waits on it
 * ends with an error. */
void vb_qp_failed(vb_nic_t *nic, oc_nic_ep_t *ep, const char *why);

/* The first SLAB_OPS send operations and their bounce buffers, made with the
 * instance so that a few operations' messages need no memory; more are made
 * when they are all in flight. */
oc_status_t vb_ops_init(vb_nic_t *nic);
vb_op_t *vb_op_get(vb_nic_t *nic);
void vb_op_put(vb_nic_t *nic, vb_op_t *op);
/* Makes op a SEND of h and len bytes of payload, through its bounce buffer. */
void vb_op_set_send(vb_op_t *op, const vb_hdr_t *h, const void *payload, size_t len);
/* Queues op on ep; vb_flush posts what was staged, one chain per QP. */
void vb_stage(vb_nic_t *nic, oc_nic_ep_t *ep, vb_op_t *op);
void vb_flush(vb_nic_t *nic);
/* op ended (completion, or failure to post it) with status; op is released. */
void vb_op_done(vb_nic_t *nic, vb_op_t *op, oc_status_t status);
/* A send completion of op's QP freed op->sq_slots. */
void vb_sq_release(vb_nic_t *nic, vb_op_t *op);
void vb_ops_fini(vb_nic_t *nic);

/* ---- device (verbs_dev.c) --------------------------------------------------- */

typedef struct {
    struct ibv_context *ctx;
    struct ibv_pd *pd;
    struct ibv_comp_channel *channel;
    struct ibv_cq *scq, *rcq, *tcq;  /* data sends, data receives, trigger */
    unsigned unacked[3];             /* events taken, not yet acknowledged, per CQ */
    vb_addr_t addr;
    enum ibv_mtu mtu;
    size_t max_msg;                  /* bytes per WR: the port's max_msg_sz, at most VB_MAX_MSG */
    size_t eager_max;                /* payload of an EAGER or CTRL: VB_EAGER_MAX, less where
                                        max_msg does not take header and all in one SEND */
    unsigned max_peers;              /* data QPs the CQs are sized for (OC_VERBS_MAX_PEERS) */
    int device_cap;                  /* max_peers is all the device's CQs (max_cqe) allow */
    int fork_init;                   /* what ibv_fork_init returned (0, or an errno value) */
    char name[64];
} vb_dev_t;

/* OC_VERBS_MAX_PEERS into *max_peers (VB_MAX_PEERS where unset; *given
 * says whether it was set); OC_ERR_INVALID_ARG naming it when malformed. */
oc_status_t vb_dev_parse_max_peers(unsigned *max_peers, int *given);
/* Opens the first device with an active port, its CQs sized for max_peers
 * (fewer where the device's CQs cannot hold that many and max_peers was not
 * given); why not in reason. */
oc_status_t vb_dev_open(vb_dev_t *d, unsigned max_peers, int given, char *reason, size_t size);
void vb_dev_close(vb_dev_t *d);
/* Takes the channel's pending events (non-blocking); acknowledges in batches. */
unsigned vb_dev_take_events(vb_dev_t *d);
/* Asks for an event on the next completion of each CQ. */
oc_status_t vb_dev_arm(vb_dev_t *d);

/* ---- trigger (verbs_trigger.c) ----------------------------------------------- */

typedef enum { VB_TRIG_AUTO, VB_TRIG_WAIT, VB_TRIG_THREAD } vb_trig_mode_t;

typedef int (*vb_post_wait_fn)(struct ibv_qp *qp, struct ibv_cq *cq, uint32_t count,
                               uint64_t wr_id);

typedef struct {
    vb_trig_mode_t mode;             /* WAIT or THREAD once opened */
    vb_post_wait_fn post_wait;       /* WAIT: the provider's cross-channel wait */
    oc_nic_ep_t *ep;                 /* the loopback QP */
    uint64_t posted, waited;         /* data WRs posted; covered by WAITs so far */
    char why[128];                   /* how the variant was chosen */
} vb_trigger_t;

/* OC_VERBS_TRIGGER, read before any device is opened. */
oc_status_t vb_trigger_parse(vb_trig_mode_t *mode);
/* The loopback QP, and the variant trig.mode asks for (AUTO: WAIT if the
 * provider has it). */
oc_status_t vb_trigger_open(vb_nic_t *nic);
/* A list with network tasks is being posted; WAIT: stages its trigger behind
 * a cross-channel WAIT, which vb_flush posts after the list's data WRs. */
oc_status_t vb_trigger_list_posted(vb_nic_t *nic, oc_nic_list_t *list);
/* The last task of list finished. */
void vb_trigger_list_idle(vb_nic_t *nic, oc_nic_list_t *list);
/* The trigger write of op->list completed with status. */
void vb_trigger_fired(vb_nic_t *nic, vb_op_t *op, oc_status_t status);
/* Stages the trigger write of list on the trigger QP. */
void vb_trigger_stage(vb_nic_t *nic, oc_nic_list_t *list, unsigned sq_slots);

/* ---- two-sided protocol (verbs_proto.c) ------------------------------------ */

typedef struct vb_recv vb_recv_t;
typedef struct vb_rndv_send vb_rndv_send_t;

typedef struct {
    vb_recv_t *expected, **expected_tail; /* RECV tasks waiting for EAGER or RTS */
    vb_recv_t *writing;                   /* RECV tasks that sent RTR */
    vb_unexp_t *unexp, **unexp_tail;      /* arrivals before their RECV task */
    vb_rndv_send_t *rts;                  /* SEND tasks waiting for RTR */
    oc_nic_amq_t am;                      /* control messages to deliver */
    oc_pool_t recvs, sends;               /* the records above */
    oc_pool_t early_hdrs, early_data;     /* early messages without, with a payload */
    uint32_t next_cookie;
    int held_told;                        /* the warning that messages are held was given */
} vb_proto_t;

/* Makes room for the records of the transfers a few operations keep in
 * flight, so that they need no memory; OC_ERR_NO_MEMORY if it cannot. */
oc_status_t vb_proto_init(vb_proto_t *p);
void vb_proto_fini(vb_proto_t *p);
oc_status_t vb_proto_send(vb_nic_t *nic, oc_nic_slot_t *slot);
oc_status_t vb_proto_recv(vb_nic_t *nic, oc_nic_slot_t *slot);
/* A message or a write with immediate arrived in rb. 1: the message is held
 * in rb (vb_unexp_t), which the caller must not post again; 0: rb is free. */
int vb_proto_arrival(vb_nic_t *nic, const struct ibv_wc *wc, vb_rbuf_t *rb);
/* A control message (NOTIFY task when slot is set) through ep. */
oc_status_t vb_proto_ctrl(vb_nic_t *nic, oc_nic_ep_t *ep, const void *data, size_t len,
                          oc_nic_slot_t *slot);
/* The software-held tasks of list end with status. */
void vb_proto_cancel(vb_nic_t *nic, oc_nic_list_t *list, oc_status_t status);
/* The software-held tasks whose message or RTR would come through ep end
 * with an error. */
void vb_proto_peer_failed(vb_nic_t *nic, oc_nic_ep_t *ep, const char *why);

/* ---- the instance (nic_verbs.c) -------------------------------------------- */

struct vb_nic {
    oc_nic_t base;
    int verbose;
    vb_dev_t dev;
    vb_mr_cache_t mrs;
    vb_trigger_t trig;
    vb_proto_t proto;
    oc_nic_ep_t *eps;            /* data QPs and the trigger QP */
    unsigned neps;
    struct oc_nic_mem *mems;     /* windows not freed yet: destroy() frees them */
    struct oc_nic_rkey *rkeys;   /* likewise their peers' keys */
    oc_nic_ep_t *dirty;
    vb_op_t *free_ops;
    struct vb_slab *slabs;
    int flush_reported;          /* a receive flushed by a QP error was reported */
};

/* The task of slot ended with status; the list's last one fires its trigger. */
void vb_task_finished(vb_nic_t *nic, oc_nic_slot_t *slot, oc_status_t status);
/* Stages the RDMA writes of slot's task: len bytes from src to raddr under
 * rkey, cut at the device's largest message (nic->dev.max_msg); with_imm:
 * the last one carries imm. On failure nothing is staged. */
oc_status_t vb_stage_writes(vb_nic_t *nic, oc_nic_ep_t *ep, oc_nic_slot_t *slot,
                            const char *src, size_t len, uint64_t raddr, uint32_t rkey,
                            int with_imm, uint32_t imm);

oc_status_t vb_errno(const char *what, int err);

#endif
