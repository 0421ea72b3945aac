/*
 * Late messages of a freed team never reach a new one. Rank 0 starts an
 * alltoall on a team that rank 1 never starts: rank 0's block to rank 1
 * arrives there unexpected and stays, and rank 0 times out. Both free the
 * team and make a new one, whose first alltoall has the same operation
 * number. When a new team took the freed team's local id, rank 1's receive
 * matched the stale block: old data, and OC_OK. Threads stand in for ranks
 * (ut_ranks.h); on UCX, and on verbs with softverbs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "ut_data.h"
#include "ut_ranks.h"

enum { N = 2, BLOCK = 64 /* eager on every backend */ };

static void fill(unsigned char *s, int rank, unsigned salt)
{
    size_t i;
    int k;
    for (k = 0; k < N; k++)
        for (i = 0; i < BLOCK; i++)
            s[(size_t)k * BLOCK + i] = ut_pattern(rank, k, i, salt);
}

static void *rank_main(void *arg)
{
    ut_rank_t *me = arg;
    int rank = me->member.rank, k;
    unsigned char s[N * BLOCK], r[N * BLOCK];
    oc_team_params_t tp = oc_local_team_params(&me->member);
    oc_config_t cfg;
    oc_context_t *ctx = NULL;
    oc_team_t *team = NULL;
    oc_request_t *req = NULL;
    oc_status_t st;
    size_t i;
    int ok;

    if (!CHECK_OC(oc_config_init(&cfg)))
        return NULL; /* the peer then reports this rank hanging */
    cfg.timeout_s = rank == 0 ? 1 : 60;
    ok = ut_open(me, &cfg, &ctx, &team);
    if (ok && rank == 0) { /* rank 1 sits this one out */
        fill(s, rank, 1);
        if (CHECK_OC(oc_ialltoall(team, s, r, BLOCK, &req))) {
            st = oc_wait(req);
            CHECK(st == OC_ERR_TIMEOUT, "the alltoall rank 1 never starts: %s",
                  oc_status_string(st));
            CHECK_OC(oc_request_free(req));
        }
    }
    ut_barrier(me);
    if (team != NULL)
        CHECK_OC(oc_team_free(team));
    team = NULL;
    if (ok && CHECK_OC(oc_team_create(ctx, &tp, &team))) {
        fill(s, rank, 2);
        req = NULL;
        if (CHECK_OC(oc_ialltoall(team, s, r, BLOCK, &req)) && CHECK_OC(oc_wait(req)))
            for (k = 0; k < N; k++)
                for (i = 0; i < BLOCK; i++)
                    if (!CHECK(r[(size_t)k * BLOCK + i] == ut_pattern(k, rank, i, 2),
                               "the new team's block from rank %d holds %s data", k,
                               r[(size_t)k * BLOCK + i] == ut_pattern(k, rank, i, 1) ? "the "
                               "freed team's" : "wrong")) {
                        k = N;
                        break;
                    }
        if (req != NULL)
            CHECK_OC(oc_request_free(req));
    }
    ut_barrier(me);
    ut_close(me, ctx, team);
    return NULL;
}

static void test_stale(void **state)
{
    (void)state;
    ut_run_ranks(N, rank_main, NULL, "a freed team's late message");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stale),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
