/*
 * Sender and receiver disagree on a block's size, for each pairing of small
 * (eager: copied through the backend's buffers) and large (rendezvous:
 * written straight into the receive buffer) sizes: the receiver's request
 * ends with OC_ERR_MISMATCH and nothing lands outside the block it named;
 * the sender's ends with OC_OK or OC_ERR_MISMATCH. Afterwards the same team
 * runs a correct exchange of large blocks, so nothing of the failed
 * operation (an early message, a rendezvous reply) is matched by a later one.
 * In inline mode, a successful wait during which another operation fails
 * leaves the caller's oc_last_error() as it was. Threads stand in for
 * ranks (ut_ranks.h); runs on UCX and, preloaded with
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

/* Inline mode: rank 1's thread meets operation A's mismatch while it waits
 * for operation B, which succeeds; B's wait must leave rank 1's
 * oc_last_error() as it was, and A's own wait report the mismatch. Rank 0
 * sends only once rank 1 has posted both (the barrier), so that the failure
 * comes inside B's wait. */
static void detail_kept(ut_rank_t *me, oc_context_t *ctx, oc_team_t *team)
{
    static const char marker[] = "the application's own last error";
    static const pairing_t p = {SMALL, 2 * SMALL};
    size_t sc[N] = {SMALL, SMALL}, rc[N] = {SMALL, SMALL}, d[N] = {0, 4 * LARGE};
    unsigned char *s = calloc(N, 4 * LARGE), *r = calloc(N, 4 * LARGE);
    unsigned char *s2 = calloc(N, SMALL), *r2 = calloc(N, SMALL);
    oc_request_t *a = NULL, *b = NULL;
    int me_r = me->member.rank;

    (void)ctx;
    if (!CHECK(s != NULL && r != NULL && s2 != NULL && r2 != NULL, "out of memory"))
        goto out;
    if (me_r == 0)
        sc[1] = p.sent;
    else
        rc[0] = p.expected;
    if (me_r == 1) {
        oc_set_last_error(OC_OK, marker);
        if (!CHECK_OC(oc_ialltoallv(team, s, N * 4 * LARGE, sc, d, r, N * 4 * LARGE, rc, d,
                                    &a)) ||
            !CHECK_OC(oc_ialltoall(team, s2, r2, SMALL, &b)))
            goto out;
        ut_barrier(me);
        if (CHECK_OC(oc_wait(b)))
            CHECK(strcmp(oc_last_error(), marker) == 0,
                  "a successful oc_wait changed oc_last_error() to \"%s\"", oc_last_error());
        /* polled: the failure names the call that reported it */
        CHECK(ut_finish(a, 1) == OC_ERR_MISMATCH && strstr(oc_last_error(), "bytes") != NULL &&
                  strncmp(oc_last_error(), "oc_test: ", 9) == 0,
              "operation A: \"%s\", not the mismatch reported by oc_test", oc_last_error());
    } else {
        ut_barrier(me);
        if (!CHECK_OC(oc_ialltoallv(team, s, N * 4 * LARGE, sc, d, r, N * 4 * LARGE, rc, d,
                                    &a)) ||
            !CHECK_OC(oc_ialltoall(team, s2, r2, SMALL, &b)))
            goto out;
        oc_wait(a); /* OC_OK or OC_ERR_MISMATCH, as above */
        CHECK_OC(oc_wait(b));
    }
out:
    if (a != NULL)
        CHECK_OC(oc_request_free(a));
    if (b != NULL)
        CHECK_OC(oc_request_free(b));
    free(s);
    free(r);
    free(s2);
    free(r2);
}

static void *rank_main(void *arg)
{
    ut_rank_t *me = arg;
    oc_config_t cfg;
    int inline_detail = me->c != NULL;

    if (!CHECK_OC(oc_config_init(&cfg)))
        return NULL;
    cfg.progress = inline_detail ? OC_PROGRESS_INLINE : OC_PROGRESS_THREAD;
    cfg.alltoall_alg = cfg.alltoallv_alg = OC_ALG_BURST;
    cfg.timeout_s = 30;
    ut_with_team(me, &cfg, inline_detail ? detail_kept : every_pairing);
    return NULL;
}

static void test_mismatch(void **state)
{
    (void)state;
    ut_run_ranks(N, rank_main, NULL, "mismatched sizes");
}

static void test_inline_detail_kept(void **state)
{
    (void)state;
    ut_run_ranks(N, rank_main, "inline", "another operation's failure, inline");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mismatch),
        cmocka_unit_test(test_inline_detail_kept),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
