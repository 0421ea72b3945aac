/*
 * What the members of a persistent all-to-all run when they asked for
 * different algorithms, on a team large enough for auto to pick Bruck (16
 * ranks; threads stand in for them, ut_ranks.h). A member that asks for put
 * alone runs auto's choice, and Bruck is checked on what each member runs,
 * not on what it asked for: put beside auto runs Bruck everywhere, put
 * beside pairwise is refused on all instead of pairing Bruck's messages with
 * pairwise's.
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

enum { N = 16, BLOCK = 8, ROUNDS = 3 };

typedef struct {
    const char *label;
    oc_alg_t rank0, others; /* what each asks for */
    oc_status_t want;       /* from the set-up, on every member */
    oc_alg_t runs;          /* when it succeeds */
} mix_t;

static void run_mix(ut_rank_t *me, oc_context_t *ctx, oc_team_t *team)
{
    const mix_t *m = me->c;
    unsigned char s[N * BLOCK] = {0}, r[N * BLOCK];
    oc_request_t *req = NULL;
    oc_status_t st;
    ut_layout_t l;
    unsigned round;
    long bad;
    (void)ctx;

    if (!CHECK(ut_layout_init(&l, UT_EQUAL, me->member.rank, N, BLOCK) == 0, "out of memory"))
        goto out;
    st = oc_alltoall_init(team, s, r, BLOCK, &req);
    if (!CHECK(st == m->want, "set-up returned %s (%s), expected %s", oc_status_string(st),
               st == OC_OK ? "" : oc_last_error(), oc_status_string(m->want)))
        goto out;
    if (st != OC_OK) {
        CHECK(req == NULL && strstr(oc_last_error(), "Bruck") != NULL,
              "refused without naming Bruck: %s", oc_last_error());
        goto out;
    }
    CHECK(oc_request_alg(req) == m->runs, "runs %s, expected %s", oc_alg_name(oc_request_alg(req)),
          oc_alg_name(m->runs));
    for (round = 0; round < ROUNDS; round++) {
        ut_fill(&l, s, r, round);
        if (!CHECK_OC(oc_start(req)) || !CHECK_OC(oc_wait(req)))
            break;
        if (!CHECK((bad = ut_check(&l, r, round)) < 0, "round %u: receive byte %ld is wrong",
                   round, bad))
            break;
    }
out:
    if (req != NULL)
        CHECK_OC(oc_request_free(req));
    ut_layout_fini(&l);
}

static void *rank_main(void *arg)
{
    ut_rank_t *me = arg;
    const mix_t *m = me->c;
    oc_config_t cfg;

    if (!CHECK_OC(oc_config_init(&cfg)))
        return NULL;
    cfg.progress = OC_PROGRESS_INLINE; /* 16 contexts: no 16 progress threads besides */
    cfg.alltoall_alg = me->member.rank == 0 ? m->rank0 : m->others;
    cfg.bruck_max = 2 * BLOCK;
    cfg.timeout_s = 60;
    ut_with_team(me, &cfg, run_mix);
    return NULL;
}

static void test_mix(void **state)
{
    const mix_t *m = *state;
    ut_run_ranks(N, rank_main, m, m->label);
}

static const mix_t mixes[] = {
    {"put beside auto", OC_ALG_PUT, OC_ALG_AUTO, OC_OK, OC_ALG_BRUCK},
    {"put beside pairwise", OC_ALG_PUT, OC_ALG_PAIRWISE, OC_ERR_MISMATCH, OC_ALG_AUTO},
    {"put everywhere", OC_ALG_PUT, OC_ALG_PUT, OC_OK, OC_ALG_PUT},
    {"auto beside Bruck", OC_ALG_AUTO, OC_ALG_BRUCK, OC_OK, OC_ALG_BRUCK},
};

#define MIX(i) {mixes[i].label, test_mix, NULL, NULL, (void *)&mixes[i]}

int main(void)
{
    const struct CMUnitTest tests[] = {MIX(0), MIX(1), MIX(2), MIX(3)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
