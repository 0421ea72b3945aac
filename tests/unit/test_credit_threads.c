/*
 * Credit-based flow control of the verbs backend. Rank 0 runs in inline
 * mode: after starting its side it sleeps, so that nothing of it moves,
 * while its peers (thread mode) pile up far more messages towards it than
 * the receives it keeps posted per peer (64):
 *   - 300 alltoalls of eager blocks, then 24 of rendezvous blocks, all
 *     started at once on every rank: traffic both ways, credits come back
 *     in the headers of the messages going the other way;
 *   - 300 notified puts from each peer into rank 0's window: one-way
 *     traffic (each notification is a message), so credits come back only
 *     in CREDIT messages.
 * Every operation completes with the right data, and softverbs counts no
 * RNR NAK in the whole process: the senders waited for credits instead of
 * leaning on the NIC's receiver-not-ready retry. Runs on the verbs backend
 * with softverbs preloaded, in both trigger variants; the counter is found
 * with dlsym, as the backend finds the WAIT extension.
 */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "softverbs.h"
#include "ut_data.h"
#include "ut_ranks.h"

enum { N = 3, SLEEP_MS = 200, PUTS = 300, PUT_BYTES = 16 };

typedef struct {
    int ops;          /* alltoalls started at once */
    size_t bytes;     /* block size */
} burst_t;

static const burst_t bursts[] = {
    {300, 64},   /* eager */
    {24, 4096},  /* rendezvous: RTS, RTR and a write with immediate each */
};

/* Rank 0 is not progressing: in inline mode its side moves only in its calls. */
static void stall(const ut_rank_t *me)
{
    struct timespec d = {0, SLEEP_MS * 1000000L};
    if (me->member.rank == 0)
        nanosleep(&d, NULL);
}

static int backend_is_verbs(ut_rank_t *me, oc_context_t *ctx)
{
    const char *info = oc_context_backend_info(ctx);
    return CHECK(strncmp(info, "verbs", 5) == 0, "the backend is %s, not verbs", info);
}

/* b->ops alltoalls in flight at once; op k's blocks carry salt k. */
static void burst(ut_rank_t *me, oc_team_t *team, const burst_t *b)
{
    const size_t total = N * b->bytes;
    const int rank = me->member.rank;
    unsigned char *s = malloc((size_t)b->ops * total), *r = malloc((size_t)b->ops * total);
    oc_request_t **reqs = calloc((size_t)b->ops, sizeof(*reqs));
    int k, p, started = 0;
    size_t i;

    if (!CHECK(s != NULL && r != NULL && reqs != NULL, "out of memory"))
        goto out;
    memset(r, UT_GAP_BYTE, (size_t)b->ops * total);
    for (k = 0; k < b->ops; k++)
        for (p = 0; p < N; p++)
            for (i = 0; i < b->bytes; i++)
                s[k * total + p * b->bytes + i] = ut_pattern(rank, p, i, (unsigned)k);
    for (; started < b->ops; started++)
        if (!CHECK_OC(oc_ialltoall(team, s + started * total, r + started * total, b->bytes,
                                   &reqs[started])))
            break;
    stall(me);
    for (k = 0; k < started; k++) {
        /* Stuck: the ones behind would time out one by one; they are left
         * active (the team's release then fails too). */
        if (!CHECK_OC(oc_wait(reqs[k])))
            break;
        for (p = 0; p < N; p++)
            for (i = 0; i < b->bytes; i++)
                if (r[k * total + p * b->bytes + i] != ut_pattern(p, rank, i, (unsigned)k)) {
                    ut_note(me, __LINE__, "%zu-byte alltoall %d: byte %zu from rank %d is wrong",
                            b->bytes, k, i, p);
                    p = N;
                    break;
                }
        CHECK_OC(oc_request_free(reqs[k]));
    }
out:
    free(s);
    free(r);
    free(reqs);
}

/* Ranks 1..N-1 each put PUTS notified chunks into rank 0's window (counter:
 * their rank), with nothing coming back but credits. */
static void one_way_puts(ut_rank_t *me, oc_team_t *team)
{
    const int rank = me->member.rank;
    unsigned char src[PUTS][PUT_BYTES], *base = NULL;
    oc_win_t *win = NULL;
    int k, p, bad = -1;

    if (!CHECK_OC(oc_win_create(team, rank == 0 ? (size_t)N * PUTS * PUT_BYTES : 0, N,
                                (void **)&base, &win)))
        return;
    if (rank != 0) {
        for (k = 0; k < PUTS; k++) {
            memset(src[k], (unsigned char)ut_pattern(rank, 0, (size_t)k, 0), PUT_BYTES);
            if (!CHECK_OC(oc_put_notify(win, 0, ((size_t)rank * PUTS + (size_t)k) * PUT_BYTES,
                                        src[k], PUT_BYTES, (unsigned)rank)))
                break;
        }
        CHECK_OC(oc_win_flush(win));
    }
    stall(me);
    for (p = 1; rank == 0 && p < N; p++) {
        if (!CHECK_OC(oc_notify_wait(win, (unsigned)p, PUTS)))
            continue;
        for (k = 0; k < PUTS * PUT_BYTES && bad < 0; k++)
            if (base[(size_t)p * PUTS * PUT_BYTES + (size_t)k] !=
                ut_pattern(p, 0, (size_t)(k / PUT_BYTES), 0))
                bad = k / PUT_BYTES;
        CHECK(bad < 0, "put %d from rank %d is wrong", bad, p);
    }
    CHECK_OC(oc_win_free(win));
}

static void bursts_and_puts(ut_rank_t *me, oc_context_t *ctx, oc_team_t *team)
{
    size_t i;
    if (!backend_is_verbs(me, ctx))
        return;
    for (i = 0; i < sizeof(bursts) / sizeof(bursts[0]); i++)
        burst(me, team, &bursts[i]);
    one_way_puts(me, team);
}

static void *rank_main(void *arg)
{
    ut_rank_t *me = arg;
    oc_config_t cfg;

    if (!CHECK_OC(oc_config_init(&cfg)))
        return NULL;
    cfg.progress = me->member.rank == 0 ? OC_PROGRESS_INLINE : OC_PROGRESS_THREAD;
    cfg.alltoall_alg = OC_ALG_BURST;
    cfg.timeout_s = 30; /* a flow-control deadlock fails the test rather than hang it */
    ut_with_team(me, &cfg, bursts_and_puts);
    return NULL;
}

typedef int (*query_stats_fn)(struct ibv_context *context, struct softverbs_stats *stats);

static uint64_t process_rnr_naks(query_stats_fn query)
{
    struct softverbs_stats st;
    assert_int_equal(query(NULL, &st), 0);
    return st.rnr_naks;
}

static void test_no_rnr(void **state)
{
    query_stats_fn query;
    uint64_t before, naks;
    (void)state;
    /* Stored through a void **, as in POSIX's dlsym example. */
    *(void **)&query = dlsym(RTLD_DEFAULT, "softverbs_query_stats");
    if (query == NULL)
        fail_msg("softverbs_query_stats not found: run with softverbs preloaded (LD_PRELOAD)");
    before = process_rnr_naks(query);
    ut_run_ranks(N, rank_main, NULL, "a slow inline receiver");
    naks = process_rnr_naks(query) - before;
    if (naks != 0)
        fail_msg("%llu RNR NAKs: a sender found no receive posted", (unsigned long long)naks);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_rnr),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
