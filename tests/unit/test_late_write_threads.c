/*
 * A rendezvous receive that times out after it has sent its RTR: the sender
 * (rank 1, inline mode, not progressing) writes the data only later, into
 * the registration that the receive (rank 0) still keeps. Before, the
 * cancelled receive released it, so without the registration cache (the
 * test runs with UCX_MEM_EVENTS=no) the late write met a remote access
 * error and the pair's QP stayed in error: rank 1's send failed and every
 * later transfer between them too. Here the send completes, and so does an
 * exchange both ways afterwards. Threads stand in for ranks (ut_ranks.h);
 * verbs only, preloaded with softverbs.
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

enum { N = 2, LARGE = 100000 /* rendezvous */ };

/* Rank 1 sends LARGE bytes to rank 0 and nothing else moves. */
static oc_status_t one_way(oc_team_t *team, int rank, unsigned char *s, unsigned char *r,
                           oc_request_t **req)
{
    size_t sc[N] = {0, 0}, rc[N] = {0, 0}, d[N] = {0, 0};
    if (rank == 1)
        sc[0] = LARGE;
    else
        rc[1] = LARGE;
    return oc_ialltoallv(team, s, LARGE, sc, d, r, LARGE, rc, d, req);
}

/* An alltoall of LARGE blocks, checked. */
static void both_ways(ut_rank_t *me, oc_team_t *team)
{
    ut_layout_t l;
    unsigned char *s, *r;
    oc_request_t *req = NULL;

    if (!CHECK(ut_layout_init(&l, UT_EQUAL, me->member.rank, N, LARGE) == 0, "out of memory"))
        return;
    s = malloc(l.sbytes);
    r = malloc(l.rbytes);
    if (CHECK(s != NULL && r != NULL, "out of memory")) {
        ut_fill(&l, s, r, 3);
        if (CHECK_OC(oc_ialltoall(team, s, r, LARGE, &req)) && CHECK_OC(oc_wait(req)))
            CHECK(ut_check(&l, r, 3) < 0, "the exchange after the late write: wrong data");
        if (req != NULL)
            CHECK_OC(oc_request_free(req));
    }
    ut_layout_fini(&l);
    free(s);
    free(r);
}

static void *rank_main(void *arg)
{
    ut_rank_t *me = arg;
    int rank = me->member.rank;
    unsigned char *s = calloc(1, LARGE), *r = calloc(1, LARGE);
    oc_config_t cfg;
    oc_context_t *ctx = NULL;
    oc_team_t *team = NULL;
    oc_request_t *req = NULL;
    oc_status_t st = OC_ERR_INTERNAL;
    int ok;

    if (!CHECK_OC(oc_config_init(&cfg)) || !CHECK(s != NULL && r != NULL, "out of memory"))
        return NULL; /* the peer then reports this rank hanging */
    /* rank 1 moves only inside its own calls; rank 0 gives up after 2 s */
    cfg.progress = rank == 1 ? OC_PROGRESS_INLINE : OC_PROGRESS_THREAD;
    cfg.timeout_s = rank == 1 ? 60 : 2;
    ok = ut_open(me, &cfg, &ctx, &team);
    ut_barrier(me); /* both connected */
    if (ok)
        CHECK_OC(st = one_way(team, rank, s, r, &req)); /* rank 1's RTS goes out here */
    if (st == OC_OK && rank == 0) {
        st = oc_wait(req);
        CHECK(st == OC_ERR_TIMEOUT, "the receive whose sender never writes: %s, not a timeout",
              oc_status_string(st));
    }
    ut_barrier(me); /* rank 0 has given up */
    if (st == OC_OK && rank == 1)
        CHECK_OC(oc_wait(req)); /* now it writes */
    if (req != NULL)
        CHECK_OC(oc_request_free(req));
    ut_barrier(me);
    if (ok)
        both_ways(me, team);
    ut_barrier(me);
    ut_close(me, ctx, team);
    free(s);
    free(r); /* after oc_finalize: the late write may land until then */
    return NULL;
}

static void test_late_write(void **state)
{
    (void)state;
    ut_run_ranks(N, rank_main, NULL, "late rendezvous write");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_late_write),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
