/*
 * The backend interface: "the NIC" that executes task lists.
 *
 * A backend instance is owned by one thread at a time, the one that holds the
 * engine: the progress thread in thread mode (or a waiting application thread
 * that helps it), the application thread in inline mode. Nothing here may be
 * called concurrently on one instance. A backend knows tasks, lists, endpoints
 * and the match context of a list; it never sees teams, requests or
 * algorithms.
 *
 * Self: a task whose peer is the match's own rank (no endpoint) is done
 * locally: a PUT is a copy, a NOTIFY is delivered to this backend's own
 * control-message callback after the current progress call.
 */
#ifndef OC_NIC_H
#define OC_NIC_H

#include <stdint.h>
#include <stdio.h>
#include "oc_pool.h"
#include "oc_sched.h"

typedef struct oc_nic oc_nic_t;
typedef struct oc_nic_ep oc_nic_ep_t;
typedef struct oc_nic_list oc_nic_list_t;
typedef struct oc_nic_mem oc_nic_mem_t;   /* memory peers may put into */
typedef struct oc_nic_rkey oc_nic_rkey_t; /* a peer's key to its memory */

/* The low bits of oc_nic_match_t.seq that every backend tells apart. */
#define OC_NIC_SEQ_BITS 28

/* What makes the messages of one list meet their peers' messages and no one
 * else's: the operation's match number in the team (the runtime keeps those
 * of operations in flight at once apart in the low OC_NIC_SEQ_BITS bits) and
 * the team's id at each member (ids are chosen locally, so each member has
 * its own). */
typedef struct {
    uint32_t seq;
    uint32_t team_id;              /* this process's id for the team */
    const uint32_t *peer_team_ids; /* each member's id for the team, by rank */
    int rank;                      /* this process's rank in the team */
    oc_nic_ep_t *const *eps;       /* endpoints by team rank */
} oc_nic_match_t;

/* One per task of a posted list: the backend's handle for the task,
 * non-NULL from its posting until it finishes (a timeout's diagnosis lists
 * the tasks whose handle is still set). */
typedef struct {
    oc_nic_list_t *list;
    void *handle;
} oc_nic_slot_t;

/* A posted task list. The caller fills the first five fields and keeps the
 * structure (and slots, at least ntasks of them) alive until done() ran. */
struct oc_nic_list {
    const oc_task_t *tasks;
    size_t ntasks;
    const oc_nic_match_t *match;
    oc_nic_slot_t *slots;
    void (*done)(oc_nic_list_t *list); /* the trigger: called inside progress */
    size_t outstanding;                /* backend's count of unfinished tasks */
    oc_status_t status;                /* first error of the list, else OC_OK */
    char detail[192];                  /* oc_last_error() of that error */
    oc_nic_t *nic;                     /* backend's: the instance it was posted to */
    int fired;                         /* backend's: the list's trigger has fired */
    int cancelled;                     /* backend's: cancel_list() was called */
};

/* Makes status (if an error, and the list's first) the list's status, with
 * the calling thread's oc_last_error() as its detail: called right after the
 * oc_error() that made status. */
void oc_nic_list_fail(oc_nic_list_t *list, oc_status_t status);

/* Control messages between progress engines (small, unordered, best effort). */
typedef void (*oc_nic_am_cb_t)(void *arg, const void *data, size_t len);

typedef struct {
    void (*destroy)(oc_nic_t *nic);
    /* Address that peers pass to connect(); owned by the backend. */
    oc_status_t (*address)(oc_nic_t *nic, const void **addr, size_t *len);
    oc_status_t (*connect)(oc_nic_t *nic, const void *addr, size_t len, oc_nic_ep_t **ep);
    /* Optional second round, for backends whose endpoints are per pair (an RC
     * queue pair needs the peer's queue-pair number): after connect(),
     * ep_wireup() writes wireup_len bytes for the peer of ep; the runtime
     * hands them to that peer, whose ep_complete() finishes its endpoint to
     * this process, and then holds a barrier before any traffic. Both are
     * called again, with the same blobs, when a later team reuses the
     * endpoint. NULL (and 0) where connect() alone connects. */
    size_t wireup_len;
    oc_status_t (*ep_wireup)(oc_nic_t *nic, oc_nic_ep_t *ep, void *blob);
    oc_status_t (*ep_complete)(oc_nic_t *nic, oc_nic_ep_t *ep, const void *blob);
    /* Posts a list: its copies first, in order, then its transfers. Returns
     * OC_INPROGRESS if done() will be called from progress() (list->status
     * then holds the outcome); otherwise the list finished during the call,
     * with the returned status, and done() is not called. */
    oc_status_t (*post_list)(oc_nic_t *nic, oc_nic_list_t *list);
    /* Cancels what can be cancelled, with why as the status of the tasks it
     * ends itself; done() still comes for the list once every task has
     * finished, possibly only at destroy(). From the call on the backend
     * reads neither the tasks nor the match: their owner may free them (the
     * schedule, the team) before done() comes. */
    void (*cancel_list)(oc_nic_t *nic, oc_nic_list_t *list, oc_status_t why);
    /* Makes progress; returns how many events it handled. */
    unsigned (*progress)(oc_nic_t *nic);
    /* Prepares for sleeping on event_fd: OC_OK if sleeping is safe, OC_ERR_BUSY
     * if events are pending (progress again, do not sleep). */
    oc_status_t (*arm)(oc_nic_t *nic);
    int (*event_fd)(oc_nic_t *nic);
    oc_status_t (*am_send)(oc_nic_t *nic, oc_nic_ep_t *ep, const void *data, size_t len);
    /* Human-readable description of the path to ep (transports, lanes). */
    void (*describe_ep)(oc_nic_t *nic, oc_nic_ep_t *ep, FILE *out);
    /* One-line summary of the path to ep ("posix/cma", "tcp"). */
    void (*ep_transports)(oc_nic_t *nic, oc_nic_ep_t *ep, char *buf, size_t size);
    /* Allocates size bytes (zero-filled) that peers write with PUT tasks
     * without this process's CPU where the transport allows it. */
    oc_status_t (*mem_alloc)(oc_nic_t *nic, size_t size, oc_nic_mem_t **mem, void **addr);
    /* destroy() frees, once no peer can reach it any more, the memory this
     * was not called for: a window abandoned after a failure. */
    void (*mem_free)(oc_nic_t *nic, oc_nic_mem_t *mem);
    /* The key peers need to reach mem, in a malloc'd buffer the caller frees. */
    oc_status_t (*mem_pack)(oc_nic_t *nic, oc_nic_mem_t *mem, void **key, size_t *len);
    oc_status_t (*rkey_unpack)(oc_nic_t *nic, oc_nic_ep_t *ep, const void *key, size_t len,
                               oc_nic_rkey_t **rkey);
    /* destroy() destroys the keys this was not called for, once no transfer
     * uses them (after closing its endpoints). */
    void (*rkey_destroy)(oc_nic_t *nic, oc_nic_rkey_t *rkey);
    /* This process's address of raddr in the peer memory rkey reaches, where
     * it can load and store that memory itself (shared memory on this host),
     * else NULL. Optional: NULL where a backend never can. */
    void *(*rkey_ptr)(oc_nic_t *nic, oc_nic_rkey_t *rkey, uint64_t raddr);
} oc_nic_ops_t;

struct oc_nic {
    const oc_nic_ops_t *ops;
    oc_nic_am_cb_t am_cb; /* set by the engine before any traffic */
    void *am_arg;
};

/* Control messages a backend has received, held until its progress call
 * returns, then handed to am_cb in arrival order (oc_nic_am.c): the
 * engine's handler never runs inside the network layer's own callback. */
typedef struct oc_nic_am_msg oc_nic_am_msg_t;
typedef struct {
    oc_nic_am_msg_t *head, **tail;
    oc_pool_t pool;            /* nodes for small messages */
} oc_nic_amq_t;

/* Makes the queue's pool of nodes, so that keeping a message needs no memory
 * while few wait; OC_ERR_NO_MEMORY if it cannot be made. */
oc_status_t oc_nic_amq_init(oc_nic_amq_t *q);
/* Copies len bytes; out of memory, the message is lost with a warning naming
 * the backend (who). */
void oc_nic_amq_push(oc_nic_amq_t *q, const char *who, const void *data, size_t len);
/* Hands every held message to nic's am_cb; returns how many. */
unsigned oc_nic_amq_deliver(oc_nic_amq_t *q, oc_nic_t *nic);
/* Frees what was not delivered, and the spare nodes. */
void oc_nic_amq_fini(oc_nic_amq_t *q);

/* The task of a posted list's slot. */
static inline const oc_task_t *oc_nic_slot_task(const oc_nic_slot_t *slot)
{
    return &slot->list->tasks[slot - slot->list->slots];
}

/* A put, notification or flush to this process itself, which has no
 * endpoint to itself: done here (a put is a memcpy, a notification joins q;
 * who names the backend). Returns 0 for a send or receive, left to the
 * caller. */
int oc_nic_do_self(oc_nic_amq_t *q, const char *who, const oc_task_t *t);

static inline int oc_nic_amq_busy(const oc_nic_amq_t *q)
{
    return q->head != NULL;
}

typedef struct {
    int verbose;
    int intranode_loopback; /* reach same-host peers through the network transport */
    int intranode_cma;      /* rendezvous with same-host peers by the kernel's copy */
} oc_nic_params_t;

/* UCX backend (offload/ucx/). */
oc_status_t oc_nic_ucx_create(const oc_nic_params_t *params, oc_nic_t **nic);
/* "ucx 1.13.1" */
const char *oc_nic_ucx_version(void);

/* Verbs backend (offload/verbs/) on the first RDMA device with an active
 * port. info receives what was opened ("mlx5_0 port 1 (InfiniBand, LID 7),
 * trigger: thread (...)"), or why nothing was: OC_ERR_UNAVAILABLE when no
 * usable device exists, another status when the set-up failed. */
oc_status_t oc_nic_verbs_create(const oc_nic_params_t *params, oc_nic_t **nic, char *info,
                                size_t size);

/* Limits every backend serves, checked when teams are created (the UCX tag
 * holds a team id and a rank of these widths beside the operation number). */
#define OC_NIC_MAX_TEAM_ID  0xffffu
#define OC_NIC_MAX_RANKS    (1u << 20)

#endif
