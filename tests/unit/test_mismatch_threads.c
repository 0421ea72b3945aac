/*
 * Sender and receiver disagree on a block's size, for each pairing of small
 * (eager: copied through the backend's buffers) and large (rendezvous:
 * written straight into the receive buffer) sizes: the receiver's request
 * ends with OC_ERR_MISMATCH and nothing lands outside the block it named;
 * the sender's ends with OC_OK or OC_ERR_MISMATCH. Afterwards the same team
 * runs a correct exchange of large blocks, so nothing of the failed
 * operation (an early message, a rendezvous reply) is matched by a later one.
 * Threads stand in for ranks (ut_ranks.h); runs on UCX and, preloaded with
 * softverbs, on the verbs backend.
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

enum { N = 2, SMALL = 100, LARGE = 20000, GOOD = 30000 };

typedef struct {
    size_t sent, expected; /* rank 0 -> rank 1 only; every other block is right */
} pairing_t;

/* A zero on one side too: one-shot operations exchange zero-byte messages
 * for it, or the other side's block would go unreceived unnoticed. */
static const pairing_t pairings[] = {
    {SMALL, 2 * SMALL}, {2 * SMALL, SMALL}, {LARGE, 2 * LARGE}, {2 * LARGE, LARGE},
    {SMALL, LARGE},     {LARGE, SMALL},     {SMALL, 0},         {LARGE, 0},
    {0, SMALL},         {0, LARGE},
};

/* One alltoallv where rank 1 expects `expected` bytes from rank 0, which
 * sends `sent`. Blocks are 2 * LARGE apart, so a block that overran would
 * show in the guard bytes after it. */
static void mismatched(ut_rank_t *me, oc_team_t *team, const pairing_t *p)
{
    const size_t stride = 4 * LARGE;
    unsigned char *s = calloc(N, stride), *r = malloc(N * stride);
    size_t sc[N], rc[N], d[N], i;
    oc_request_t *req = NULL;
    oc_status_t st;
    int me_r = me->member.rank, k;

    if (!CHECK(s != NULL && r != NULL, "out of memory"))
        goto out;
    memset(r, UT_GAP_BYTE, N * stride);
    for (k = 0; k < N; k++) {
        sc[k] = rc[k] = SMALL;
        d[k] = (size_t)k * stride;
    }
    if (me_r == 0)
        sc[1] = p->sent;
    else
        rc[0] = p->expected;
    if (!CHECK_OC(oc_ialltoallv(team, s, N * stride, sc, d, r, N * stride, rc, d, &req)))
        goto out;
    st = oc_wait(req);
    if (me_r == 1)
        CHECK(st == OC_ERR_MISMATCH, "%zu bytes sent, %zu expected: the receiver got %s",
              p->sent, p->expected, oc_status_string(st));
    else
        CHECK(st == OC_OK || st == OC_ERR_MISMATCH,
              "%zu bytes sent, %zu expected: the sender got %s", p->sent, p->expected,
              oc_status_string(st));
    for (i = rc[0]; me_r == 1 && i < stride; i++)
        if (!CHECK(r[i] == UT_GAP_BYTE, "%zu bytes sent, %zu expected: byte %zu was written",
                   p->sent, p->expected, i))
            break;
    CHECK_OC(oc_request_free(req));
out:
    free(s);
    free(r);
}

/* A correct exchange of GOOD-byte blocks, checked byte by byte. */
static void exchange(ut_rank_t *me, oc_team_t *team, unsigned salt)
{
    unsigned char *s = malloc(N * GOOD), *r = malloc(N * GOOD);
    oc_request_t *req = NULL;
    size_t i;
    int k;

    if (!CHECK(s != NULL && r != NULL, "out of memory"))
        goto out;
    for (k = 0; k < N; k++)
        for (i = 0; i < GOOD; i++)
            s[(size_t)k * GOOD + i] = ut_pattern(me->member.rank, k, i, salt);
    if (CHECK_OC(oc_ialltoall(team, s, r, GOOD, &req)) && CHECK_OC(oc_wait(req)))
        for (k = 0; k < N; k++)
            for (i = 0; i < GOOD; i++)
                if (r[(size_t)k * GOOD + i] != ut_pattern(k, me->member.rank, i, salt)) {
                    ut_note(me, __LINE__, "after mismatch %u: byte %zu from rank %d is wrong",
                            salt, i, k);
                    k = N;
                    break;
                }
    if (req != NULL)
        CHECK_OC(oc_request_free(req));
out:
    free(s);
    free(r);
}

static void every_pairing(ut_rank_t *me, oc_context_t *ctx, oc_team_t *team)
{
    size_t i;
    (void)ctx;
    for (i = 0; i < sizeof(pairings) / sizeof(pairings[0]); i++) {
        mismatched(me, team, &pairings[i]);
        exchange(me, team, (unsigned)i);
    }
}

static void *rank_main(void *arg)
{
    ut_rank_t *me = arg;
    oc_config_t cfg;

    if (!CHECK_OC(oc_config_init(&cfg)))
        return NULL;
    cfg.progress = OC_PROGRESS_THREAD;
    cfg.alltoall_alg = cfg.alltoallv_alg = OC_ALG_BURST;
    cfg.timeout_s = 30;
    ut_with_team(me, &cfg, every_pairing);
    return NULL;
}

static void test_mismatch(void **state)
{
    (void)state;
    ut_run_ranks(N, rank_main, NULL, "mismatched sizes");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mismatch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
