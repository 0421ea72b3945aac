/*
 * A peer whose connection fails mid-job: rank 1 closes its context, so rank
 * 0's messages to it exhaust the transport's retries and the QP goes to
 * error (about 4 s). What waits on that peer then ends at once with
 * OC_ERR_BACKEND: the receive from it as well as the send to it, rather than
 * waiting OC_TIMEOUT_S and then naming the peer as absent (the timeout's
 * queries go through the same dead QP). A receive posted on the dead
 * connection afterwards fails when it is posted, and so does a rendezvous
 * send with no receive beside it (its RTS used to be flushed unnoticed,
 * leaving the send to wait for an RTR until OC_TIMEOUT_S). Threads stand in for ranks
 * (ut_ranks.h); verbs only, preloaded with softverbs: the QP states are the
 * verbs backend's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "ut_ranks.h"

enum { N = 2, SMALL = 100, LARGE = 20000 /* eager, rendezvous */ };

/* An alltoall of block bytes, or with send_only an alltoallv that only
 * sends block bytes to rank 1. */
static void expect_backend_error(ut_rank_t *me, oc_team_t *team, size_t block, int send_only,
                                 const char *what)
{
    unsigned char *s = calloc(N, block), *r = calloc(N, block);
    size_t sc[N] = {0, block}, rc[N] = {0, 0}, d[N] = {0, 0};
    oc_request_t *req = NULL;
    oc_status_t st;

    if (!CHECK(s != NULL && r != NULL, "out of memory"))
        goto out;
    if (send_only)
        st = oc_ialltoallv(team, s, block, sc, d, r, block, rc, d, &req);
    else
        st = oc_ialltoall(team, s, r, block, &req);
    if (st == OC_OK)
        st = oc_wait(req);
    CHECK(st == OC_ERR_BACKEND, "%s alltoall of %zu B with a peer gone: %s (%s), not %s", what,
          block, oc_status_string(st), oc_last_error(), oc_status_string(OC_ERR_BACKEND));
    if (req != NULL)
        CHECK_OC(oc_request_free(req));
out:
    free(s);
    free(r);
}

static void *rank_main(void *arg)
{
    ut_rank_t *me = arg;
    oc_config_t cfg;
    oc_context_t *ctx = NULL;
    oc_team_t *team = NULL;
    int ok;

    if (!CHECK_OC(oc_config_init(&cfg)))
        return NULL;
    cfg.timeout_s = 60; /* far beyond the transport's retries */
    ok = ut_open(me, &cfg, &ctx, &team);
    ut_barrier(me); /* both connected */
    if (me->member.rank == 1) {
        ut_close(me, ctx, team);
        ut_barrier(me);
        return NULL;
    }
    ut_barrier(me); /* rank 1 is gone */
    if (ok) {
        expect_backend_error(me, team, LARGE, 0, "first");
        expect_backend_error(me, team, SMALL, 0, "later");
        expect_backend_error(me, team, LARGE, 1, "send-only");
    }
    ut_close(me, ctx, team);
    return NULL;
}

static void test_peer_failed(void **state)
{
    (void)state;
    ut_run_ranks(N, rank_main, NULL, "peer failed");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_peer_failed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
