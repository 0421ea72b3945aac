/* Runtime internals: context, team, request. */
#ifndef OC_RUNTIME_H
#define OC_RUNTIME_H

#include <pthread.h>
#include <stdatomic.h>

#include "oc_ep_cache.h"
#include "oc_nic.h"
#include "oc_pe.h"
#include "oc_sched.h"
#include "oc_win.h"
#include "offcoll.h"

struct oc_context {
    oc_config_t cfg;
    oc_nic_t *nic;
    oc_pe_t *pe;
    char backend_info[384];
    int intranode_auto;             /* cfg.intranode was auto, decided at oc_init */
    oc_ep_cache_t ep_cache;         /* engine context only */
    pthread_mutex_t teams_lock;     /* registries of teams, windows and persistent
                                       requests: app threads and engine */
    oc_team_t **teams;              /* by local team id */
    size_t teams_cap;
    uint32_t next_team_id;          /* where the search for a free id starts */
    struct oc_win *wins;            /* windows, found by id */
    struct oc_later *later;         /* released after the backend (oc_ctx_release_later) */
    uint32_t next_win_id;           /* never reused: a late notification finds nothing */
    _Atomic int nteams;             /* created and not freed (their requests: each team's) */
};

struct oc_team {
    oc_context_t *ctx;
    int rank, size;
    uint32_t id;                    /* local id, index in ctx->teams */
    uint32_t *peer_ids;             /* each member's id for this team */
    oc_nic_ep_t **eps;              /* by rank; NULL for self */
    _Atomic uint32_t next_seq;      /* operation numbers handed out */
    _Atomic uint32_t next_pseq;     /* persistent requests made (their match numbers) */
    _Atomic uint32_t started_upto;  /* operations started: seq < started_upto */
    _Atomic int nrequests, nwins;
    struct oc_request *_Atomic diag_req; /* request whose timeout is being diagnosed */
    struct oc_request *persistent;  /* list of the team's persistent requests, for
                                       timeout diagnosis (ctx->teams_lock) */
    struct oc_request *gather_req;  /* oc_team_gather_i32's, made with the team, so that
                                       votes and barriers need no memory (counted in
                                       nrequests) */
    int32_t *gather_buf;            /* its blocks: size sent, size received */
    struct oc_request *_Atomic spare; /* the last one-shot request freed, for the next
                                       (oc_request.c, spare_keep) */
};

/* Request state word; OC_REQ_WAITERS is or-ed in while a thread sleeps on it. */
enum { OC_REQ_INACTIVE = 0, OC_REQ_ACTIVE = 1, OC_REQ_DONE = 2, OC_REQ_WAITERS = 0x100 };

enum { OC_PRESENCE_UNKNOWN = 0, OC_PRESENCE_STARTED = 1, OC_PRESENCE_ABSENT = 2 };

typedef struct oc_request {
    oc_team_t *team;
    int persistent;
    oc_alg_t alg;
    const char *opname;
    uint32_t seq;                   /* operation number, the same at every member */
    uint32_t match;                 /* what its messages match on (oc_nic_match_t.seq) */
    /* One schedule, or two that alternate by start (the put algorithm's
     * landing zones); xs[i] runs sched[i], x is the current start's. */
    oc_sched_t sched[2];
    oc_pe_exec_t *xs[2];
    unsigned nsched;
    oc_pe_exec_t *x;
    oc_win_t *win;                  /* the put algorithm's landing zones, the request's own */
    oc_status_t broken;             /* persistent: an earlier start's failure (put: any,
                                       else not a mismatch); no restart */
    unsigned char *put_peers;       /* put: by rank, whether the pair exchanges anything
                                       (and so notifies each start) */
    _Atomic uint32_t state;
    oc_status_t result;             /* written before state becomes DONE */
    _Atomic uint32_t *presence;     /* per rank, during a timeout diagnosis */
    _Atomic uint32_t starts;        /* oc_start calls: a member whose count is lower has
                                       not started this round of a persistent request */
    struct oc_request *next_persistent, **prev_persistent; /* team->persistent list */
    char *stuck_on;                 /* ranks with unfinished tasks at cancel time */
    /* What the request itself knows of a timed-out start (put: whose blocks
     * never came), appended to the error after the team's answers on who
     * started it; with knows_peers, instead of asking the team (a halo
     * exchange knows better whom it waits for). */
    void (*timeout_report)(struct oc_request *req);
    int knows_peers;
    void *owner;                    /* oc_request_create's: then not in team->nrequests */
    void *inplace;                  /* OC_IN_PLACE: rbuf's copy, the schedule's sbuf,
                                       made by the schedule's first list */
    size_t inplace_cap;             /* its size (a team's spare keeps it for the next
                                       in-place call) */
    int cancelled_once;             /* an execution was cancelled: its sends may
                                       still read inplace (oc_ctx_release_later) */
    _Atomic int in_call;            /* an application thread is in oc_start/test/wait/
                                       request_free on it: a second is refused */
    int renumber;                   /* restartable, but each start takes new operation
                                       numbers as a one-shot operation does (the team's
                                       own gather): late messages of a failed start
                                       match no later one, and it may start again */
} oc_request_t;

/* A request's state word without the waiters bit. */
static inline uint32_t oc_request_state_of(uint32_t word)
{
    return word & ~(uint32_t)OC_REQ_WAITERS;
}

/* req's state without the waiters bit (any thread). */
static inline uint32_t oc_request_state(oc_request_t *req)
{
    return oc_request_state_of(atomic_load(&req->state));
}

/* Control messages between progress engines: a uint32_t type comes first
 * (oc_notify_msg_t, oc_diag.c's). */
enum { OC_MSG_DIAG_QUERY = 1, OC_MSG_DIAG_REPLY = 2, OC_MSG_NOTIFY = 3 };

typedef struct {
    uint64_t addr;                  /* the peer's window base, in its address space */
    size_t size;
    uint32_t id;                    /* the peer's id for the window */
    oc_nic_rkey_t *rkey;            /* NULL for self */
    void *ptr;                      /* the window mapped here (own base for self), or NULL */
} oc_win_peer_t;

struct oc_win {
    oc_team_t *team;                /* NULL once abandoned (oc_win_close) */
    int counted;                    /* in team->nwins (oc_win_create_internal) */
    uint32_t id;
    struct oc_win *next;            /* in the context's registry */
    void *base;
    size_t size;
    oc_nic_mem_t *mem;
    oc_win_peer_t *peers;           /* by team rank */
    unsigned ncounters;
    oc_pe_counter_t *counters;
    _Atomic uint32_t *from;         /* arrivals by counter and origin: [c * size + origin] */
    uint32_t *from_mark;            /* from[] when counter c's last wait completed */
    _Atomic uint32_t puts_inflight; /* futex word of flushes */
    _Atomic uint32_t flush_waiters;
    _Atomic int put_error;          /* first failure of a put, an oc_status_t */
    struct oc_put_op *puts;         /* engine only: oc_put's puts in flight, to cancel */
};

/* Context: registry lookup of a team by local id (NULL if none). */
oc_team_t *oc_ctx_team_get(oc_context_t *ctx, uint32_t id);

/* Control messages, handled in engine context (oc_context.c dispatches): the
 * timeout diagnosis and notifications. */
void oc_diag_am_handler(oc_context_t *ctx, const void *data, size_t len);
void oc_win_am_notify(oc_context_t *ctx, const oc_notify_msg_t *m);

/* Bounds of the configuration, the same for OC_* variables and oc_init's cfg. */
#define OC_CFG_LIST_MAX_MAX (1u << 20)
#define OC_CFG_RINGK_MAX (1u << 20)
#define OC_CFG_SPIN_US_MAX (10u * 1000 * 1000)
#define OC_CFG_VERBOSE_MAX 9
#define OC_CFG_TIMEOUT_MAX_S 1e6 /* 11.6 days; 0 waits for ever */

/* OC_PROGRESS_CPUS's syntax (oc_config.c); name: what the message calls it. */
oc_status_t oc_config_check_cpus(const char *name, const char *v);
/* "shm", "loopback", "cma", "auto" (OC_INTRANODE's values). */
const char *oc_intranode_name(oc_intranode_t mode);
/* OC_WAIT_HELP_US in force: 0 outside thread mode. */
unsigned oc_config_wait_help_us(const oc_config_t *c);

/* Once per process, where c->warn_unknown, on the node's first rank (the
 * launcher's local rank 0, or a process no launcher started): a warning
 * naming the OC_* variables of the environment that offcoll does not read
 * (a misspelt one would otherwise be ignored without a word). */
void oc_config_warn_unknown(const oc_config_t *c);

/* Collective exchanges over the team's own network path, run by burst
 * whatever the members' OC_ALLTOALL_ALG. Each first votes (oc_team_vote) on
 * st, this member's status so far, and on whether it could make the
 * exchange's buffers and request; the exchange runs only where every member
 * says yes. So a member short of memory fails the vote rather than leave its
 * peers in the exchange until their timeout. what: the vote's words.
 * oc_team_alltoall: block r of mine (len bytes each) goes to rank r, block r
 * of theirs comes from rank r. oc_team_allgather: every member contributes
 * len bytes, all receives size * len by rank. */
oc_status_t oc_team_alltoall(oc_team_t *team, oc_status_t st, const char *what, const void *mine,
                             size_t len, void *theirs);
oc_status_t oc_team_allgather(oc_team_t *team, oc_status_t st, const char *what,
                              const void *mine, size_t len, void *all);

/* Collective: every member's mine, by rank in *all (valid until the team's
 * next gather). Allocates nothing: the team's own request carries it. */
oc_status_t oc_team_gather_i32(oc_team_t *team, int32_t mine, const int32_t **all);

/* Collective: every member's status st, so that a local failure fails all
 * members at once ("<what> on rank R" where it did not fail) instead of
 * leaving them in the next exchange until their timeout. Allocates nothing
 * (oc_team_gather_i32). */
oc_status_t oc_team_vote(oc_team_t *team, oc_status_t st, const char *what);

/* A member whose collective set-up failed before it made all its requests
 * takes the n operation numbers it skipped (of persistent requests when
 * persistent), so that the team's next collectives (the vote on that failure
 * first) pair with the peers'. */
void oc_team_skip_ops(oc_team_t *team, unsigned n, int persistent);

/* Request running a schedule built by the caller (taken over, also on
 * failure); persistent, started with oc_start. Takes the team's next
 * operation number whether or not it succeeds. owner: the object the
 * request belongs to (a halo plan's field), which the team counts instead of
 * the request (team->nwins), so that a message about objects not freed names
 * only what the application made. */
oc_status_t oc_request_create(oc_team_t *team, const char *opname, oc_sched_t *sched,
                              void *owner, oc_request_t **req);

/* Makes, without starting it, an all-to-all of len-byte blocks run by burst,
 * whatever the configuration says, for the runtime's own exchanges (whose
 * members agree by construction); fn names the caller in errors. Takes the
 * team's next operation number whether or not it succeeds. A one-shot one
 * is started by oc_request_launch, once; a renumbered one (renumber) by
 * oc_start, as often as needed, each start taking new numbers. */
oc_status_t oc_request_alltoall_make(const char *fn, oc_team_t *team, const void *sbuf,
                                     void *rbuf, size_t len, int renumber, oc_request_t **req);
void oc_request_launch(oc_request_t *req);

/* Frees the one-shot request team keeps for reuse (team->spare), if any. */
void oc_request_spare_free(oc_team_t *team);

/* Window of n counters created for the runtime's own use (halo plans, put
 * all-to-alls). counted: whether team->nwins counts it (a halo plan's, which
 * stands for the plan; not a put request's, for which the request counts).
 * st: this member's status so far; it votes whatever it is, so that a
 * failure on one member fails all. */
oc_status_t oc_win_create_internal(const char *fn, oc_team_t *team, size_t size,
                                   unsigned ncounters, int counted, oc_status_t st,
                                   oc_win_t **win);

/* Releases win here without waiting for the peers (oc_win_free's barrier):
 * for a window that no peer puts into any more. */
void oc_win_release(oc_win_t *win);

/* Collective release of win, oc_win_free's after its flush. failed: this
 * member's transfers on win (or into it) failed, so late ones may still come
 * or go; if any member says so, or the barrier fails, win is abandoned: gone
 * from the team at once, its memory, keys and bookkeeping kept until
 * oc_finalize (the backend's destroy frees the memory and keys). Returns the
 * barrier's status. */
oc_status_t oc_win_close(oc_win_t *win, int failed);

/* Calls release(ptr) in oc_finalize, after the backend: for what a transfer
 * which failed (and could not be cancelled) may still touch, such as a pack
 * buffer (release: free) or an abandoned window. Should the bookkeeping fail,
 * ptr is never released rather than released early. */
void oc_ctx_release_later(oc_context_t *ctx, void (*release)(void *ptr), void *ptr);

/* oc_wait's deadline for req passed: asks the team who has started its
 * operation (unless req->knows_peers), gives them a moment to answer (it may
 * still complete meanwhile), then cancels it. oc_diag_report follows, once
 * the result is taken. */
void oc_diag_cancel(oc_request_t *req, double timeout);

/* After oc_diag_cancel, with the start's result st: on OC_ERR_TIMEOUT the
 * error says what timed out after timeout seconds and who never took part
 * (and what req->timeout_report adds). */
void oc_diag_report(oc_request_t *req, oc_status_t st, double timeout);

#endif
