/*
 * The block checks of oc_ialltoallv and oc_alltoallv_init (runtime/oc_args.c)
 * on teams of 3 and of 100 ranks, so that both the sort on the stack (up to
 * 64 ranks) and the one on the heap run: receive blocks in rank order,
 * out of it with gaps, touching end to end, overlapping by one byte
 * (adjacent in the sort, or with a zero count between), and zero counts
 * anywhere. Only the team's size and rank are read: a stand-in team.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "oc_args.h"

enum { MAX_N = 100, BLOCK = 8 };

typedef struct {
    int n;
    size_t counts[MAX_N], sdispls[MAX_N], rdispls[MAX_N];
    char sbuf[MAX_N * (BLOCK + 1)], rbuf[MAX_N * (BLOCK + 1)];
} layout_t;

/* Blocks of BLOCK bytes, one byte apart; receive block i at the place of
 * perm(i), a permutation of the ranks that keeps none in order for n > 2. */
static void layout(layout_t *l, int n)
{
    memset(l, 0, sizeof(*l));
    l->n = n;
    for (int i = 0; i < n; i++) {
        l->counts[i] = BLOCK;
        l->sdispls[i] = (size_t)i * (BLOCK + 1);
        l->rdispls[i] = (size_t)((i * 37 + 11) % n) * (BLOCK + 1); /* 37: prime to 3 and 100 */
    }
}

static oc_status_t check(layout_t *l)
{
    oc_team_t team;
    oc_request_t *req = (oc_request_t *)&team; /* a refusal must clear it */
    oc_status_t st;
    memset(&team, 0, sizeof(team));
    team.size = l->n;
    st = oc_args_check_alltoallv("oc_ialltoallv", &team, l->sbuf, sizeof(l->sbuf), l->counts,
                                 l->sdispls, l->rbuf, sizeof(l->rbuf), l->counts, l->rdispls,
                                 &req);
    assert_null(req);
    return st;
}

/* The two ranks whose receive blocks meet, as the detail names them. */
static void expect_overlap(layout_t *l, int a, int b)
{
    char want[64];
    assert_int_equal(check(l), OC_ERR_INVALID_ARG);
    snprintf(want, sizeof(want), "ranks %d and %d overlap", a < b ? a : b, a < b ? b : a);
    if (strstr(oc_last_error(), "rdispls") == NULL)
        fail_msg("\"%s\" does not name rdispls", oc_last_error());
    /* the sort decides which comes first: either order names the pair */
    if (strstr(oc_last_error(), want) == NULL) {
        snprintf(want, sizeof(want), "ranks %d and %d overlap", a < b ? b : a, a < b ? a : b);
        if (strstr(oc_last_error(), want) == NULL)
            fail_msg("\"%s\" does not name ranks %d and %d", oc_last_error(), a, b);
    }
}

static void run(int n)
{
    layout_t l;
    int first, second;

    layout(&l, n);
    assert_int_equal(check(&l), OC_OK); /* out of order, with gaps */
    for (int i = 0; i < n; i++)         /* in rank order, end to end */
        l.rdispls[i] = (size_t)i * BLOCK;
    assert_int_equal(check(&l), OC_OK);
    for (int i = 0; i < n; i++)         /* in reverse order, end to end */
        l.rdispls[i] = (size_t)(n - 1 - i) * BLOCK;
    assert_int_equal(check(&l), OC_OK);

    /* one byte too far: the block placed before another runs into it */
    layout(&l, n);
    first = n / 2;
    for (second = 0; second < n && l.rdispls[second] != l.rdispls[first] + BLOCK + 1; second++)
        ;
    assert_true(second < n); /* placed right after it */
    l.counts[first] = BLOCK + 2;
    expect_overlap(&l, first, second);

    /* in rank order, the last two overlapping: the fast path must not pass it */
    for (int i = 0; i < n; i++) {
        l.counts[i] = BLOCK;
        l.rdispls[i] = (size_t)i * BLOCK;
    }
    l.rdispls[n - 1] -= 1;
    expect_overlap(&l, n - 2, n - 1);

    /* a zero count between two that overlap is no block at all */
    if (n >= 3) {
        l.rdispls[n - 1] = (size_t)(n - 1) * BLOCK;
        l.counts[1] = 0;
        l.rdispls[1] = 0;        /* inside rank 0's block, but empty */
        assert_int_equal(check(&l), OC_OK);
        l.rdispls[2] = 1;        /* rank 2's block now starts inside rank 0's */
        expect_overlap(&l, 0, 2);
    }
}

static void test_three(void **state)
{
    (void)state;
    run(3);
}

static void test_hundred(void **state)
{
    (void)state;
    run(MAX_N);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_three),
        cmocka_unit_test(test_hundred),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
