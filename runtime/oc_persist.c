/* Agreement of the members of a persistent all-to-all; the put algorithm's
 * zones and timeout report. */
#include "oc_persist.h"
#include "oc_error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What a member tells each other member (and itself) at set-up. */
typedef struct {
    int32_t valid;      /* 0: the sender refused its arguments; the rest is zero */
    int32_t alg;        /* the sender's choice */
    int32_t fallback;   /* what it runs if put is not agreed */
    uint64_t sends;     /* bytes the sender sends to the receiver */
    uint64_t expects;   /* bytes the sender expects from the receiver */
    uint64_t landing;   /* put: where the receiver's block lands in the sender's window */
    uint64_t zone;      /* put: one parity's landing zone in the sender's window */
} persist_msg_t;

/* What the argument of a member's send sizes is called. */
static const char *scounts_name(int v)
{
    return v ? "scounts" : "block_bytes";
}

/* What a member runs: put where every member chose it, else its choice,
 * put falling back. */
static oc_alg_t runs(oc_alg_t choice, oc_alg_t fallback, int all_put)
{
    if (all_put)
        return OC_ALG_PUT;
    return choice == OC_ALG_PUT ? fallback : choice;
}

/* This member's view of what peer r said; OC_OK or the first disagreement.
 * alg: what this member runs. */
static oc_status_t check_peer(const char *fn, const oc_team_t *team, int v, const oc_coll_args_t *a,
                              oc_alg_t alg, int all_put, int r, const persist_msg_t *m)
{
    oc_alg_t peer_alg = runs((oc_alg_t)m->alg, (oc_alg_t)m->fallback, all_put);

    size_t rc = oc_coll_rcount(a, r), sc = oc_coll_scount(a, r);
    if (!m->valid)
        return oc_error(OC_ERR_MISMATCH, "%s: rank %d refused its arguments (oc_last_error() "
                        "there says why)", fn, r);
    if (m->sends != rc && v)
        return oc_error(OC_ERR_MISMATCH, "%s: rank %d sends %llu bytes to rank %d, but "
                        "rcounts[%d]=%zu there", fn, r, (unsigned long long)m->sends, team->rank,
                        r, rc);
    if (m->sends != rc)
        return oc_error(OC_ERR_MISMATCH, "%s: rank %d passed block_bytes=%llu, rank %d %zu "
                        "(block_bytes must agree)", fn, r, (unsigned long long)m->sends,
                        team->rank, rc);
    if (m->expects != sc)
        return oc_error(OC_ERR_MISMATCH, "%s: rank %d expects %llu bytes from rank %d, but "
                        "%s[%d]=%zu there", fn, r, (unsigned long long)m->expects, team->rank,
                        scounts_name(v), r, sc);
    if ((peer_alg == OC_ALG_BRUCK) != (alg == OC_ALG_BRUCK))
        return oc_error(OC_ERR_MISMATCH, "%s: rank %d runs algorithm %s, rank %d %s: Bruck's "
                        "messages pair only with Bruck's (OC_ALLTOALL_ALG must agree; put, "
                        "unless every member asks for it, runs auto's choice)",
                        fn, r, oc_alg_name(peer_alg), team->rank, oc_alg_name(alg));
    return OC_OK;
}

/* Own landing zones: the peers' blocks one after another, rank order. */
static void fill_messages(const oc_team_t *team, const oc_coll_args_t *a, oc_alg_t alg,
                          oc_alg_t fallback, persist_msg_t *out)
{
    uint64_t at = 0;
    int r;
    for (r = 0; r < team->size; r++) {
        out[r].valid = 1;
        out[r].alg = (int32_t)alg;
        out[r].fallback = (int32_t)fallback;
        out[r].sends = oc_coll_scount(a, r);
        out[r].expects = oc_coll_rcount(a, r);
        out[r].landing = at;
        if (r != team->rank)
            at += out[r].expects;
    }
    for (r = 0; r < team->size; r++)
        out[r].zone = at;
}

static oc_status_t put_setup(const char *fn, oc_team_t *team, const persist_msg_t *out,
                             const persist_msg_t *in, oc_persist_put_t *put)
{
    size_t n = (size_t)team->size, zone = out[0].zone, *remote, *local;
    oc_status_t st;
    int p;
    size_t r;

    put->at = malloc(4 * n * sizeof(*put->at));
    st = put->at != NULL ? OC_OK : oc_error(OC_ERR_NO_MEMORY, "%s: put offsets", fn);
    /* The window votes: a member short of memory fails every member. */
    st = oc_win_create_internal(fn, team, 2 * zone, 2, 0, st, &put->win);
    if (st != OC_OK) {
        free(put->at);
        put->at = NULL;
        return st;
    }
    for (p = 0; p < 2; p++) {
        remote = put->at + (size_t)p * n;
        local = put->at + (2 + (size_t)p) * n;
        for (r = 0; r < n; r++) {
            remote[r] = (size_t)p * in[r].zone + in[r].landing;
            local[r] = (size_t)p * zone + out[r].landing;
        }
        put->zones[p].win = put->win;
        put->zones[p].counter = (unsigned)p;
        put->zones[p].remote = remote;
        put->zones[p].local = local;
    }
    return OC_OK;
}

oc_status_t oc_persist_agree(const char *fn, oc_team_t *team, oc_status_t st, int v,
                             const oc_coll_args_t *a, oc_alg_t *alg, oc_alg_t fallback,
                             oc_persist_put_t *put)
{
    int n = team->size, r, all_put = 1;
    persist_msg_t *out = calloc(2 * (size_t)n, sizeof(*out)), *in;
    oc_error_saved_t detail; /* this member's reason, across the exchange */
    char what[96];
    oc_status_t xst;

    memset(put, 0, sizeof(*put));
    oc_error_save(&detail);
    snprintf(what, sizeof(what), "%s: failed", fn);
    /* A refusal travels in the messages (zeroed), so that the peers can say
     * so; the exchange's own vote is on the memory. */
    xst = out != NULL ? OC_OK : oc_error(OC_ERR_NO_MEMORY, "%s: set-up of %d ranks", fn, n);
    in = out != NULL ? out + n : NULL;
    if (st == OC_OK && out != NULL)
        fill_messages(team, a, *alg, fallback, out);
    xst = oc_team_alltoall(team, xst, what, out, sizeof(*out), in);
    if (xst != OC_OK) {
        free(out);
        oc_error_append(" (%s: agreeing with the other members)", fn);
        if (st == OC_OK)
            return xst;
        oc_error_restore(&detail);
        return st;
    }
    if (st != OC_OK)
        oc_error_restore(&detail);
    for (r = 0; r < n; r++)
        all_put &= (oc_alg_t)in[r].alg == OC_ALG_PUT;
    *alg = runs(*alg, fallback, all_put);
    for (r = 0; r < n && st == OC_OK; r++)
        st = check_peer(fn, team, v, a, *alg, all_put, r, &in[r]);
    snprintf(what, sizeof(what), "%s: refused", fn);
    st = oc_team_vote(team, st, what);
    if (st == OC_OK && *alg == OC_ALG_PUT)
        st = put_setup(fn, team, out, in, put);
    free(out);
    return st;
}

/* Every peer the request exchanges anything with notifies the start's counter
 * once per start, so the counts of the timed-out start's parity tell whose
 * blocks never came. */
static void put_report(oc_request_t *req)
{
    const oc_team_t *team = req->team;
    uint32_t started = atomic_load(&req->starts), p = (started - 1) % 2;
    uint32_t rounds = (started - 1 - p) / 2 + 1; /* starts of this parity */
    int q, missing = 0;

    oc_error_append("; blocks that never came:");
    for (q = 0; q < team->size; q++) {
        uint32_t got = atomic_load_explicit(&req->win->from[(size_t)p * (size_t)team->size +
                                                            (size_t)q],
                                            memory_order_relaxed);
        if (req->put_peers[q] && (int32_t)(got - rounds) < 0) /* counts wrap */
            oc_error_append("%s from %d", missing++ ? "," : "", q);
    }
    if (!missing)
        oc_error_append(" none");
}

oc_status_t oc_persist_put_attach(const char *fn, oc_request_t *req, const oc_coll_args_t *a,
                                  const oc_persist_put_t *put)
{
    int q, n = req->team->size;
    req->win = put->win;
    req->nsched = 2;
    req->timeout_report = put_report;
    req->put_peers = calloc((size_t)n, 1);
    if (req->put_peers == NULL)
        return oc_error(OC_ERR_NO_MEMORY, "%s: %d peers", fn, n);
    for (q = 0; q < n; q++)
        req->put_peers[q] = (unsigned char)oc_coll_put_pair(a, q);
    return OC_OK;
}

void oc_persist_put_fini(oc_persist_put_t *put)
{
    free(put->at);
    memset(put, 0, sizeof(*put));
}
