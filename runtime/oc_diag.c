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

#include <string.h>

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

void oc_diag_send_queries(oc_pe_t *pe, void *arg)
{
    oc_request_t *req = arg;
    oc_team_t *team = req->team;
    uint32_t starts = req->persistent ? atomic_load(&req->starts) : 0;
    int r;
    for (r = 0; r < team->size; r++)
        if (r != team->rank)
            send_msg(oc_pe_nic(pe), team, r, OC_MSG_DIAG_QUERY, req->seq, starts);
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

void oc_diag_report(oc_request_t *req)
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
