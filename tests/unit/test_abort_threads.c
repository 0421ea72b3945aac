/*
 * A rendezvous send whose source cannot be registered once the receiver's
 * RTR has come (on a cluster, most often the locked-memory limit; here
 * softverbs' SOFTVERBS_MAX_MR_SZ, set to 32 pages by meson, and a source
 * that straddles 33 while the receive buffer fits in 32). The sender's
 * operation fails with the registration's error, and the receiver's ends
 * at once with OC_ERR_BACKEND saying the sender could not send, instead of
 * waiting for the write until OC_TIMEOUT_S and then blaming a peer that did
 * take part. The pair still works afterwards. Threads stand in for ranks
 * (ut_ranks.h); verbs only, preloaded with softverbs.
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

enum { N = 2, PAGE = 4096, BLOCK = 32 * PAGE, TIMEOUT_S = 60 };

static void *rank_main(void *arg)
{
    ut_rank_t *me = arg;
    int rank = me->member.rank;
    unsigned char *buf = aligned_alloc(PAGE, BLOCK + PAGE), s[N * 32] = {0}, r[N * 32];
    size_t sc[N] = {0, 0}, rc[N] = {0, 0}, d[N] = {0, 0};
    oc_config_t cfg;
    oc_context_t *ctx = NULL;
    oc_team_t *team = NULL;
    oc_request_t *req = NULL;
    oc_status_t st = OC_ERR_INTERNAL;
    size_t i;

    if (!CHECK_OC(oc_config_init(&cfg)) || !CHECK(buf != NULL, "out of memory"))
        return NULL; /* the peer then reports this rank hanging */
    cfg.timeout_s = TIMEOUT_S;
    if (ut_open(me, &cfg, &ctx, &team)) {
        if (rank == 1)
            sc[0] = BLOCK; /* from buf + 64: 33 pages to register */
        else
            rc[1] = BLOCK; /* into buf: 32 pages */
        if (rank == 1)
            st = oc_ialltoallv(team, buf + 64, BLOCK, sc, d, r, sizeof(r), rc, d, &req);
        else
            st = oc_ialltoallv(team, s, sizeof(s), sc, d, buf, BLOCK, rc, d, &req);
        if (st == OC_OK)
            st = oc_wait(req);
        CHECK(st == OC_ERR_BACKEND, "%s: %s (%s), not OC_ERR_BACKEND",
              rank == 1 ? "the send whose source does not register"
                        : "the receive whose sender cannot send",
              oc_status_string(st), oc_last_error());
        /* the reasons, raised on the progress threads, reach oc_wait's caller */
        if (rank == 0)
            CHECK(strstr(oc_last_error(), "rank 1 could not send") != NULL,
                  "the receiver's error does not say that the sender could not send: %s",
                  oc_last_error());
        else
            CHECK(strstr(oc_last_error(), "ibv_reg_mr") != NULL,
                  "the sender's error does not name the failed registration: %s",
                  oc_last_error());
        if (req != NULL)
            CHECK_OC(oc_request_free(req));
        req = NULL;
        ut_barrier(me);
        for (i = 0; i < sizeof(s); i++)
            s[i] = ut_pattern(rank, (int)(i / 32), i % 32, 5);
        if (CHECK_OC(oc_ialltoall(team, s, r, 32, &req)) && CHECK_OC(oc_wait(req)))
            for (i = 0; i < sizeof(r); i++)
                if (!CHECK(r[i] == ut_pattern((int)(i / 32), rank, i % 32, 5),
                           "the exchange after the failure: byte %zu is wrong", i))
                    break;
        if (req != NULL)
            CHECK_OC(oc_request_free(req));
    } else {
        ut_barrier(me);
    }
    ut_barrier(me);
    ut_close(me, ctx, team);
    free(buf);
    return NULL;
}

static void test_abort(void **state)
{
    (void)state;
    ut_run_ranks(N, rank_main, NULL, "sender cannot register");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_abort),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
