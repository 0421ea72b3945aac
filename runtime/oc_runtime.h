/* Runtime internals: context, team, request. */
#ifndef OC_RUNTIME_H
#define OC_RUNTIME_H

#include <pthread.h>
#include <stdatomic.h>

#include "oc_nic.h"
#include "oc_pe.h"
#include "oc_sched.h"
#include "offcoll.h"

typedef struct oc_ep_entry {
    struct oc_ep_entry *next;
    oc_nic_ep_t *ep;
    size_t len;
    unsigned char addr[];
} oc_ep_entry_t;

struct oc_context {
    oc_config_t cfg;
    oc_nic_t *nic;
    oc_pe_t *pe;
    char backend_info[320];
    oc_ep_entry_t *ep_cache;        /* engine context only */
    pthread_mutex_t teams_lock;     /* team registry: app threads and engine */
    oc_team_t **teams;              /* by local team id */
    size_t teams_cap;
    _Atomic int nteams, nrequests;
};

struct oc_team {
    oc_context_t *ctx;
    int rank, size;
    uint32_t id;                    /* local id, index in ctx->teams */
    uint32_t *peer_ids;             /* each member's id for this team */
    oc_nic_ep_t **eps;              /* by rank; NULL for self */
    _Atomic uint32_t next_seq;      /* operation numbers handed out */
    _Atomic uint32_t started_upto;  /* operations started: seq < started_upto */
    _Atomic int nrequests;
    struct oc_request *_Atomic diag_req; /* request whose timeout is being diagnosed */
};

/* Request state word; OC_REQ_WAITERS is or-ed in while a thread sleeps on it. */
enum { OC_REQ_INACTIVE = 0, OC_REQ_ACTIVE = 1, OC_REQ_DONE = 2, OC_REQ_WAITERS = 0x100 };

enum { OC_PRESENCE_UNKNOWN = 0, OC_PRESENCE_STARTED = 1, OC_PRESENCE_ABSENT = 2 };

typedef struct oc_request {
    oc_team_t *team;
    int persistent;
    oc_alg_t alg;
    const char *opname;
    uint32_t seq;
    oc_sched_t sched;
    oc_pe_exec_t *x;
    _Atomic uint32_t state;
    oc_status_t result;             /* written before state becomes DONE */
    _Atomic uint32_t *presence;     /* per rank, during a timeout diagnosis */
    char *stuck_on;                 /* ranks with unfinished tasks at cancel time */
} oc_request_t;

/* Context: registry lookup of a team by local id (NULL if none). */
oc_team_t *oc_ctx_team_get(oc_context_t *ctx, uint32_t id);

/* Control messages (timeout diagnosis), handled in engine context. */
void oc_diag_am_handler(void *arg, const void *data, size_t len);

/* Engine context: asks every other member of req's team whether it has
 * started req's operation. */
void oc_diag_send_queries(oc_pe_t *pe, void *req);

/* Appends "ranks that never took part: ..." for req to the error detail. */
void oc_diag_report(oc_request_t *req);

#endif
