/*
 * A persistent request keeps its operation's match number for its life
 * while the team's one-shot operations go on numbering: after 2^28 of them
 * (a few minutes of small all-to-alls) a one-shot operation took the number
 * a persistent request still matched on, and the two, in flight at once,
 * took each other's messages. The team skips the numbers here (as a member
 * does whose set-up failed) instead of running them. Rank 0 sends the
 * persistent request's blocks first, rank 1 posts the one-shot receive
 * first, so a shared match number gives rank 1's one-shot operation the
 * persistent request's data. Threads stand in for ranks (ut_ranks.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "oc_runtime.h"
#include "ut_data.h"
#include "ut_ranks.h"

enum { N = 2, BLOCK = 64 /* eager on every backend */, ROUNDS = 3 };

/* Each round's data: the persistent request's, the one-shot operation's. */
static unsigned salt(unsigned round, int oneshot)
{
    return 2 * round + (unsigned)oneshot;
}

/* Whether r holds the blocks of salt; notes it if not. */
static int check(ut_rank_t *me, const ut_layout_t *l, const unsigned char *r, unsigned salt,
                 const char *what)
{
    long bad = ut_check(l, r, salt);
    return CHECK(bad < 0, "%s: receive byte %ld is wrong", what, bad);
}

static void run(ut_rank_t *me, oc_context_t *ctx, oc_team_t *team)
{
    unsigned char ps[N * BLOCK] = {0}, pr[N * BLOCK], os[N * BLOCK], orr[N * BLOCK];
    oc_request_t *p = NULL, *o = NULL;
    ut_layout_t l;
    unsigned round;
    (void)ctx;

    if (!CHECK(ut_layout_init(&l, UT_EQUAL, me->member.rank, N, BLOCK) == 0, "out of memory") ||
        !CHECK_OC(oc_alltoall_init(team, ps, pr, BLOCK, &p)))
        goto out;
    /* The one-shot operations' numbers go round until the next one's is the
     * persistent request's again, in the matched bits. */
    oc_team_skip_ops(team, (p->seq + (1u << OC_NIC_SEQ_BITS)) - atomic_load(&team->next_seq), 0);
    for (round = 0; round < ROUNDS; round++) {
        ut_fill(&l, ps, pr, salt(round, 0));
        ut_fill(&l, os, orr, salt(round, 1));
        o = NULL;
        if (me->member.rank == 0) {
            if (!CHECK_OC(oc_start(p)) || !CHECK_OC(oc_ialltoall(team, os, orr, BLOCK, &o)))
                break;
        } else {
            if (!CHECK_OC(oc_ialltoall(team, os, orr, BLOCK, &o)) || !CHECK_OC(oc_start(p)))
                break;
        }
        if (!CHECK_OC(oc_wait(o)) || !CHECK_OC(oc_wait(p)) ||
            !check(me, &l, orr, salt(round, 1), "one-shot all-to-all") ||
            !check(me, &l, pr, salt(round, 0), "persistent all-to-all"))
            break;
        CHECK_OC(oc_request_free(o));
        o = NULL;
    }
    if (o != NULL) {
        oc_wait(o);
        oc_request_free(o);
    }
out:
    if (p != NULL) {
        oc_wait(p);
        CHECK_OC(oc_request_free(p));
    }
    ut_layout_fini(&l);
}

static void *rank_main(void *arg)
{
    ut_with_mode(arg, NULL, run);
    return NULL;
}

static void test_wrap(void **state)
{
    ut_run_ranks(N, rank_main, *state, "a persistent request after the numbers wrapped");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        {"thread mode", test_wrap, NULL, NULL, (void *)&ut_thread_mode},
        {"inline mode", test_wrap, NULL, NULL, (void *)&ut_inline_mode},
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
