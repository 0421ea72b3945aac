/*
 * Timeout diagnosis: when a wait runs out of time, ask every other member of
 * the team whether it has started the operation. Answers come from the
 * members' progress engines (their threads, or their test/wait calls inline),
 * so a member that never called the collective says so, and one that is not
 * progressing at all stays silent; both are reported as never having taken
 * part.
 */
#include "oc_runtime.h"
#include "oc_error.h"
#include "oc_sync.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    uint32_t type;
    uint32_t team_id;  /* the receiver's id for the team */
    uint32_t seq;
    int32_t from;      /* sender's rank in the team */
    uint32_t starts;   /* query: the asker's oc_start count of a persistent seq (else 0);
                          reply: 1 if the sender has started that round of seq */
} diag_msg_t;

static void send_msg(oc_nic_t *nic, oc_team_t *team, int to, uint32_t type, uint32_t seq,
                     uint32_t starts)
{
    diag_msg_t m = {type, team->peer_ids[to], seq, team->rank, starts};
    /* Best effort: a lost message only leaves a rank reported as silent. */
    (void)nic->ops->am_send(nic, team->eps[to], &m, sizeof(m));
}

/* Engine context: asks every other member whether it has started req's operation. */
static oc_status_t send_queries(oc_pe_t *pe, void *arg)
{
    oc_request_t *req = arg;
    oc_team_t *team = req->team;
    uint32_t starts = req->persistent && !req->renumber ? atomic_load(&req->starts) : 0;
    int r;
    for (r = 0; r < team->size; r++)
        if (r != team->rank)
            send_msg(oc_pe_nic(pe), team, r, OC_MSG_DIAG_QUERY, req->seq, starts);
    return OC_OK;
}

/* Has this member started round `starts` of persistent operation seq (its
 * starts counted from 1), or operation seq at all (starts == 0)? A request
 * this member has already freed (it gave up too) is answered by the
 * operation number alone: it did take part, and was not the one missing. */
static int has_started(oc_team_t *team, uint32_t seq, uint32_t starts)
{
    oc_request_t *req;
    int yes = -1;
    if (starts != 0) {
        pthread_mutex_lock(&team->ctx->teams_lock);
        for (req = team->persistent; req != NULL; req = req->next_persistent)
            if (req->seq == seq) {
                yes = atomic_load(&req->starts) >= starts;
                break;
            }
        pthread_mutex_unlock(&team->ctx->teams_lock);
    }
    if (yes < 0)
        yes = (int32_t)(atomic_load(&team->started_upto) - seq) > 0;
    return yes;
}

void oc_diag_am_handler(oc_context_t *ctx, const void *data, size_t len)
{
    oc_team_t *team;
    oc_request_t *req;
    diag_msg_t m;

    if (len != sizeof(m))
        return;
    memcpy(&m, data, sizeof(m));
    team = oc_ctx_team_get(ctx, m.team_id);
    if (team == NULL || m.from < 0 || m.from >= team->size || m.from == team->rank)
        return;
    if (m.type == OC_MSG_DIAG_QUERY) {
        send_msg(ctx->nic, team, m.from, OC_MSG_DIAG_REPLY, m.seq,
                 (uint32_t)has_started(team, m.seq, m.starts));
    } else if (m.type == OC_MSG_DIAG_REPLY) {
        req = atomic_load(&team->diag_req);
        if (req != NULL && req->seq == m.seq)
            atomic_store(&req->presence[m.from],
                         m.starts ? OC_PRESENCE_STARTED : OC_PRESENCE_ABSENT);
    }
}

static int append_ranks(const oc_request_t *req, uint32_t which)
{
    int r, n = 0;
    for (r = 0; r < req->team->size; r++)
        if (r != req->team->rank && atomic_load(&req->presence[r]) == which)
            oc_error_append("%s%d", n++ ? ", " : " ", r);
    return n;
}

/* Appends "ranks that never took part: ..." to the error detail. */
static void report_presence(const oc_request_t *req)
{
    int absent, silent;
    if (req->presence == NULL)
        return;
    oc_error_append("; ranks that never took part:");
    absent = append_ranks(req, OC_PRESENCE_ABSENT);
    if (absent)
        oc_error_append(" (never started it)");
    silent = append_ranks(req, OC_PRESENCE_UNKNOWN);
    if (silent)
        oc_error_append(" (no answer: not started and not progressing, or gone)");
    if (!absent && !silent)
        oc_error_append(" none, every rank has started it");
    if (req->stuck_on != NULL && req->stuck_on[0] != '\0')
        oc_error_append("; unfinished:%s", req->stuck_on);
}

/* Engine context: notes the tasks still unfinished, then cancels. */
static oc_status_t cancel_fn(oc_pe_t *pe, void *arg)
{
    oc_request_t *req = arg;
    oc_pe_exec_t *x = req->x;
    size_t i, len = 0, cap = 256;

    if (oc_request_state(req) != OC_REQ_ACTIVE)
        return OC_OK; /* completed just in time */
    free(req->stuck_on);
    req->stuck_on = calloc(1, cap);
    if (req->stuck_on != NULL && x->in_flight)
        for (i = 0; i < x->list.ntasks && len + 16 < cap; i++) {
            const oc_task_t *t = &x->list.tasks[i];
            if (t->type != OC_TASK_COPY && x->slots[i].handle != NULL)
                len += (size_t)snprintf(req->stuck_on + len, cap - len, "%s%s %d",
                                        len ? ", " : " ", oc_task_verb(t->type), t->peer);
        }
    oc_pe_cancel(pe, x, OC_ERR_TIMEOUT);
    return OC_OK;
}

static int presence_complete(const oc_request_t *req)
{
    int r;
    for (r = 0; r < req->team->size; r++)
        if (r != req->team->rank && atomic_load(&req->presence[r]) == OC_PRESENCE_UNKNOWN)
            return 0;
    return 1;
}

void oc_diag_cancel(oc_request_t *req, double timeout)
{
    oc_team_t *team = req->team;
    oc_pe_t *pe = team->ctx->pe;
    double grace_end = oc_time_now() + (timeout < 1.0 ? (timeout > 0.1 ? timeout : 0.1) : 1.0);
    struct timespec ms = {0, 1000000};

    if (!req->knows_peers)
        req->presence = calloc((size_t)team->size, sizeof(*req->presence));
    if (req->presence != NULL) {
        atomic_store(&team->diag_req, req);
        oc_pe_call(pe, send_queries, req);
        while (oc_request_state(req) == OC_REQ_ACTIVE && !presence_complete(req) &&
               oc_time_now() < grace_end) {
            if (oc_pe_mode(pe) == OC_PROGRESS_INLINE)
                oc_pe_progress(pe);
            else
                nanosleep(&ms, NULL);
        }
        atomic_store(&team->diag_req, NULL);
        oc_pe_sync(pe); /* no handler still writes presence */
    }
    if (oc_request_state(req) == OC_REQ_ACTIVE)
        oc_pe_call(pe, cancel_fn, req);
}

void oc_diag_report(oc_request_t *req, oc_status_t st, double timeout)
{
    const oc_team_t *team = req->team;
    if (st == OC_ERR_TIMEOUT) {
        oc_error(OC_ERR_TIMEOUT, "oc_wait: %s (op %u on a team of %d, rank %d) timed out after %g s",
                 req->opname, req->seq, team->size, team->rank, timeout);
        report_presence(req);
        if (req->timeout_report != NULL)
            req->timeout_report(req);
    }
    free(req->presence);
    req->presence = NULL;
}
