/*
 * The progress engine end to end, with threads standing in for ranks (see
 * ut_ranks.h). Meant to run under ThreadSanitizer too: the hand-over between
 * application and progress threads is what it watches.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sched.h>
#include <string.h>
#include <cmocka.h>

#include "oc_sync.h"
#include "ut_data.h"
#include "ut_ranks.h"

enum { ROUNDS = 50, FREE_ROUNDS = 50000 };

static const size_t blocks[] = {1, 1000, 100000};
/* the largest alltoallv blocks (5 * scale) pass UCX's ~8 KB eager limit */
static const size_t v_scale = 3000;
static const size_t persistent_block = 1000;

typedef struct {
    oc_progress_mode_t mode;
    int n;
    oc_alg_t alg, valg;
    unsigned help_us; /* thread mode: waiters and polls run the engine too */
} pe_case_t;


static void check_data(ut_rank_t *me, int line, const ut_layout_t *l, const unsigned char *rbuf,
                       unsigned salt, const char *what)
{
    long bad = ut_check(l, rbuf, salt);
    if (bad >= 0)
        ut_note(me, line, "%s: receive byte %ld of %zu is wrong", what, bad, l->rbytes);
}

/* One non-blocking alltoall (equal shape) or alltoallv, checked. */
static void exchange(ut_rank_t *me, oc_team_t *team, ut_shape_t shape, size_t scale, unsigned salt,
                     int poll)
{
    const pe_case_t *c = me->c;
    ut_layout_t l;
    unsigned char *s, *r;
    oc_request_t *req = NULL;
    oc_status_t st;

    ut_layout_init(&l, shape, me->member.rank, c->n, scale);
    s = malloc(l.sbytes + 1);
    r = malloc(l.rbytes + 1);
    ut_fill(&l, s, r, salt);
    if (shape == UT_EQUAL)
        st = oc_ialltoall(team, s, r, scale, &req);
    else
        st = oc_ialltoallv(team, s, l.sbytes, l.sc, l.sd, r, l.rbytes, l.rc, l.rd, &req);
    if (CHECK_OC(st)) {
        oc_alg_t want = shape == UT_EQUAL ? c->alg : c->valg;
        /* put is for persistent requests; one-shot ones fall back to auto */
        CHECK(want == OC_ALG_PUT || oc_request_alg(req) == want, "runs %s, configured %s",
              oc_alg_name(oc_request_alg(req)), oc_alg_name(want));
        if (CHECK_OC(ut_finish(req, poll)))
            check_data(me, __LINE__, &l, r, salt, shape == UT_EQUAL ? "alltoall" : "alltoallv");
        CHECK_OC(oc_request_free(req));
    }
    ut_layout_fini(&l);
    free(s);
    free(r);
}

/* One schedule, restarted with new data each round. */
static void persistent(ut_rank_t *me, oc_team_t *team)
{
    ut_layout_t l;
    unsigned char *s, *r;
    oc_request_t *req = NULL;

    ut_layout_init(&l, UT_EQUAL, me->member.rank, ((const pe_case_t *)me->c)->n,
                   persistent_block);
    s = malloc(l.sbytes);
    r = malloc(l.rbytes);
    if (CHECK_OC(oc_alltoall_init(team, s, r, persistent_block, &req))) {
        const pe_case_t *c = me->c;
        CHECK(oc_test(req) == OC_OK, "an inactive persistent request is not complete");
        CHECK(c->alg != OC_ALG_PUT || c->n == 1 || oc_request_alg(req) == OC_ALG_PUT,
              "the persistent request runs %s, configured put", oc_alg_name(oc_request_alg(req)));
        for (unsigned i = 0; i < ROUNDS; i++) {
            ut_fill(&l, s, r, 1000 + i);
            if (!CHECK_OC(oc_start(req)))
                break;
            if (i == 0)
                CHECK(oc_start(req) == OC_ERR_BUSY, "a second start of an active request");
            if (!CHECK_OC(ut_finish(req, (int)(i % 2))))
                break;
            check_data(me, __LINE__, &l, r, 1000 + i, "persistent alltoall");
        }
        CHECK_OC(oc_request_free(req));
    }
    ut_layout_fini(&l);
    free(s);
    free(r);
}

static void check_stats(ut_rank_t *me, oc_context_t *ctx, uint64_t starts)
{
    oc_stats_t st;
    if (!CHECK_OC(oc_context_stats(ctx, &st)))
        return;
    CHECK(st.requests_started == starts, "requests_started %llu, expected %llu",
          (unsigned long long)st.requests_started, (unsigned long long)starts);
    CHECK(st.lists_posted > 0, "no list posted");
    CHECK(st.tasks_posted >= st.lists_posted, "%llu tasks in %llu lists",
          (unsigned long long)st.tasks_posted, (unsigned long long)st.lists_posted);
    const pe_case_t *c = me->c;
    CHECK(c->n == 1 || st.bytes_sent > 0, "no bytes sent");
    CHECK(st.progress_cpu_s >= 0, "progress_cpu_s %g", st.progress_cpu_s);
    CHECK(c->mode == OC_PROGRESS_THREAD || st.progress_cpu_s == 0,
          "progress_cpu_s %g with no progress thread", st.progress_cpu_s);
}

static void *rank_main(void *arg)
{
    ut_rank_t *me = arg;
    const pe_case_t *c = me->c;
    oc_config_t cfg;
    oc_context_t *ctx = NULL;
    oc_team_t *team = NULL;
    uint64_t starts = 0;

    if (!CHECK_OC(oc_config_init(&cfg)))
        return NULL;
    cfg.progress = c->mode;
    cfg.wait_help_us = c->help_us;
    cfg.alltoall_alg = c->alg;
    cfg.alltoallv_alg = c->valg;
    cfg.list_max = 3; /* many lists: many trigger hand-offs */
    cfg.ringk = 2;
    cfg.timeout_s = 30;
    if (!ut_open(me, &cfg, &ctx, &team))
        goto out;

    for (size_t i = 0; i < sizeof(blocks) / sizeof(blocks[0]); i++, starts++)
        exchange(me, team, UT_EQUAL, blocks[i], (unsigned)i, (int)(i % 2));
    exchange(me, team, UT_ZEROS, v_scale, 99, 0);
    starts++;
    persistent(me, team);
    /* The set-up's agreement (a vote, then the exchange), its vote and the
     * vote on the built schedules are four small all-to-alls; put's window
     * adds two key exchanges, each after a vote, and a vote on the keys, and
     * its free a barrier. */
    starts += 4 + ROUNDS + (c->alg == OC_ALG_PUT ? 6 : 0);
    check_stats(me, ctx, starts);

    /* Nobody tears down endpoints that a peer still flushes to. */
    ut_barrier(me);
out:
    ut_close(me, ctx, team);
    return NULL;
}

static void run_case(const pe_case_t *c)
{
    char label[128];
    snprintf(label, sizeof(label), "%s, n=%d, %s/%s, help %u us", c->mode ? "inline" : "thread",
             c->n, oc_alg_name(c->alg), oc_alg_name(c->valg), c->help_us);
    ut_run_ranks(c->n, rank_main, c, label);
}

/* Every alltoall algorithm for one mode and team size; alltoallv has no
 * Bruck and runs burst alongside it. put runs the persistent rounds (its
 * windows and notifications under TSan); the one-shot calls fall back. */
static void test_engine(void **state)
{
    static const oc_alg_t algs[] = {OC_ALG_BURST, OC_ALG_PAIRWISE, OC_ALG_RINGK, OC_ALG_BRUCK,
                                    OC_ALG_PUT};
    const pe_case_t *base = *state;
    for (size_t i = 0; i < sizeof(algs) / sizeof(algs[0]); i++) {
        pe_case_t c = *base;
        c.alg = algs[i];
        c.valg = algs[i] == OC_ALG_BRUCK ? OC_ALG_BURST : algs[i];
        run_case(&c);
    }
}

/* The application may free a request the moment oc_test has reported it
 * complete, even while the engine thread is still returning from the
 * completion it signalled. A one-rank team keeps each round to one hand-over,
 * so that the window comes up often; ASan and TSan see a late access. */
static void test_free_at_completion(void **state)
{
    const unsigned *help_us = *state;
    oc_local_oob_t oob;
    oc_local_member_t m = {&oob, 0};
    oc_team_params_t tp;
    oc_config_t cfg;
    oc_context_t *ctx = NULL;
    oc_team_t *team = NULL;

    assert_int_equal(oc_local_oob_init(&oob, 1), 0);
    tp = oc_local_team_params(&m);
    assert_int_equal(oc_config_init(&cfg), OC_OK);
    cfg.progress = OC_PROGRESS_THREAD;
    cfg.wait_help_us = *help_us;
    assert_int_equal(oc_init(&cfg, &ctx), OC_OK);
    assert_int_equal(oc_team_create(ctx, &tp, &team), OC_OK);
    for (unsigned i = 0; i < FREE_ROUNDS; i++) {
        unsigned char s = (unsigned char)i, r = (unsigned char)~i;
        oc_request_t *req = NULL;
        oc_status_t st;
        assert_int_equal(oc_ialltoall(team, &s, &r, 1, &req), OC_OK);
        while ((st = oc_test(req)) == OC_INPROGRESS)
            ;
        assert_int_equal(st, OC_OK);
        assert_int_equal(r, s);
        assert_int_equal(oc_request_free(req), OC_OK);
    }
    assert_int_equal(oc_team_free(team), OC_OK);
    assert_int_equal(oc_finalize(ctx), OC_OK);
    oc_local_oob_fini(&oob);
}

/* ---- the thread beside helping waiters ---------------------------------------- */

static void stats(ut_rank_t *me, oc_context_t *ctx, oc_stats_t *st)
{
    if (!CHECK_OC(oc_context_stats(ctx, st)))
        memset(st, 0, sizeof(*st));
}

/* A configuration for the two tests below: thread mode, c's help_us. */
static void aside_config(ut_rank_t *me, oc_config_t *cfg)
{
    const pe_case_t *c = me->c;
    CHECK_OC(oc_config_init(cfg));
    cfg->progress = OC_PROGRESS_THREAD;
    cfg->wait_help_us = c->help_us;
    cfg->alltoall_alg = OC_ALG_PAIRWISE; /* a list per peer, each after the last */
    cfg->timeout_s = 30;
}

enum { BG_BLOCK = 100000, BG_TIMEOUT_S = 20 };

/* What the progress thread is for: a request started and then left alone
 * goes on. A first alltoall, waited for (where waiters help, the thread
 * stands aside meanwhile), counts its lists; a second is started and left
 * alone until as many are posted. Its blocks take UCX's rendezvous, so no
 * list completes within the start: each one after the first is the
 * thread's work. */
static void background_body(ut_rank_t *me, oc_context_t *ctx, oc_team_t *team)
{
    const pe_case_t *c = me->c;
    ut_layout_t l;
    unsigned char *s, *r;
    uint64_t lists = 0;
    int round;

    ut_layout_init(&l, UT_EQUAL, me->member.rank, c->n, BG_BLOCK);
    s = malloc(l.sbytes);
    r = malloc(l.rbytes);
    for (round = 0; round < 2; round++) {
        oc_request_t *req = NULL;
        oc_stats_t st;
        uint64_t base;
        stats(me, ctx, &st);
        base = st.lists_posted;
        ut_fill(&l, s, r, (unsigned)round);
        if (!CHECK_OC(oc_ialltoall(team, s, r, BG_BLOCK, &req)))
            break;
        if (round == 1) {
            double deadline = oc_time_now() + BG_TIMEOUT_S;
            struct timespec ms = {0, 1000000};
            do {
                nanosleep(&ms, NULL);
                stats(me, ctx, &st);
            } while (st.lists_posted - base < lists && oc_time_now() < deadline);
            CHECK(st.lists_posted - base >= lists, "help %u us: %llu of %llu lists posted "
                  "in %d s while the application slept", c->help_us,
                  (unsigned long long)(st.lists_posted - base), (unsigned long long)lists,
                  BG_TIMEOUT_S);
        }
        if (CHECK_OC(oc_wait(req)))
            check_data(me, __LINE__, &l, r, (unsigned)round, "alltoall");
        CHECK_OC(oc_request_free(req));
        if (round == 0) {
            stats(me, ctx, &st);
            lists = st.lists_posted - base;
            CHECK(lists >= 2, "%llu lists: nothing is left for the thread",
                  (unsigned long long)lists);
        }
    }
    ut_layout_fini(&l);
    free(s);
    free(r);
}

/* While waiters help, the thread stands aside: over many short alltoalls,
 * each waited for by a waiter that never gives up helping (help_us is 1 s),
 * it sleeps and looks now and then, using under 5% of a core. (CPU time
 * against the run's own wall time: this is not a timing test.) The rounds go
 * on, in batches, until every rank has run for ASIDE_MIN_S: a share of a
 * shorter run is noise. 20000 rounds once took 50 ms, but 8 ms once calls
 * became cheaper, and a few ms of the thread's running between two rounds
 * (where no waiter helps yet) then failed one run in five. */
enum { ASIDE_BATCH = 2000 };
#define ASIDE_MIN_S 0.1

/* A 1-byte alltoall of s into r; whether it completed. */
static int aside_exchange(ut_rank_t *me, oc_team_t *team, unsigned char *s, unsigned char *r)
{
    oc_request_t *req = NULL;
    int ok;
    if (!CHECK_OC(oc_ialltoall(team, s, r, 1, &req)))
        return 0;
    ok = CHECK_OC(oc_wait(req));
    CHECK_OC(oc_request_free(req));
    return ok;
}

/* One round: the bytes carry round i, checked. */
static void aside_round(ut_rank_t *me, oc_team_t *team, int i)
{
    const pe_case_t *c = me->c;
    unsigned char s[UT_MAX_RANKS], r[UT_MAX_RANKS];
    int j;
    for (j = 0; j < c->n; j++)
        s[j] = (unsigned char)(i + me->member.rank * 31 + j);
    if (aside_exchange(me, team, s, r))
        for (j = 0; j < c->n; j++)
            CHECK(r[j] == (unsigned char)(i + j * 31 + me->member.rank),
                  "round %d: byte from rank %d", i, j);
}

/* Whether any rank wants another batch: an alltoall of each rank's wish. */
static int aside_more(ut_rank_t *me, oc_team_t *team, int want)
{
    const pe_case_t *c = me->c;
    unsigned char s[UT_MAX_RANKS], r[UT_MAX_RANKS];
    int j, any = 0;
    memset(s, want, sizeof(s));
    if (aside_exchange(me, team, s, r))
        for (j = 0; j < c->n; j++)
            any |= r[j];
    return any;
}

static void aside_body(ut_rank_t *me, oc_context_t *ctx, oc_team_t *team)
{
    oc_stats_t st0, st1;
    double wall, cpu;
    int i = 0, k;

    stats(me, ctx, &st0);
    wall = oc_time_now();
    do {
        for (k = 0; k < ASIDE_BATCH; k++)
            aside_round(me, team, i++);
    } while (aside_more(me, team, oc_time_now() - wall < ASIDE_MIN_S));
    wall = oc_time_now() - wall;
    stats(me, ctx, &st1);
    cpu = st1.progress_cpu_s - st0.progress_cpu_s;
    CHECK(cpu < 0.05 * wall + 0.002, "the progress thread used %.1f%% of a core (%.4f s of %.4f s) "
          "over %d rounds beside waiters that helped", 100 * cpu / wall, cpu, wall, i);
}

/* A case of the two tests above: the rank's body after its case. */
typedef struct {
    pe_case_t c; /* first: the bodies read me->c as a pe_case_t */
    void (*body)(ut_rank_t *me, oc_context_t *ctx, oc_team_t *team);
} aside_case_t;

static void *aside_main(void *arg)
{
    ut_rank_t *me = arg;
    const aside_case_t *a = me->c;
    oc_config_t cfg;
    aside_config(me, &cfg);
    ut_with_team(me, &cfg, a->body);
    return NULL;
}

static void test_background(void **state)
{
    static const unsigned help[] = {0, 200};
    for (size_t i = 0; i < sizeof(help) / sizeof(help[0]); i++) {
        aside_case_t a = {{OC_PROGRESS_THREAD, 3, OC_ALG_PAIRWISE, OC_ALG_AUTO, help[i]},
                          background_body};
        char label[64];
        snprintf(label, sizeof(label), "background, help %u us", help[i]);
        ut_run_ranks(a.c.n, aside_main, &a, label);
    }
    (void)state;
}

static void test_aside(void **state)
{
    aside_case_t a = {{OC_PROGRESS_THREAD, 2, OC_ALG_PAIRWISE, OC_ALG_AUTO, 1000000}, aside_body};
    ut_run_ranks(a.c.n, aside_main, &a, "stand aside");
    (void)state;
}

#define MODE_N(mode, n) {mode, n, OC_ALG_AUTO, OC_ALG_AUTO, 0}
/* Helping waiters and polls take the engine from the thread in turns. */
#define HELP_N(n) {OC_PROGRESS_THREAD, n, OC_ALG_AUTO, OC_ALG_AUTO, 200}
static pe_case_t cases[] = {
    MODE_N(OC_PROGRESS_THREAD, 1), MODE_N(OC_PROGRESS_THREAD, 2),
    MODE_N(OC_PROGRESS_THREAD, 3), MODE_N(OC_PROGRESS_THREAD, 4),
    MODE_N(OC_PROGRESS_INLINE, 1), MODE_N(OC_PROGRESS_INLINE, 2),
    MODE_N(OC_PROGRESS_INLINE, 3), MODE_N(OC_PROGRESS_INLINE, 4),
    HELP_N(2), HELP_N(3),
};
static const unsigned no_help = 0, help = 200;

#define CASE(name, i) {name, test_engine, NULL, NULL, &cases[i]}
#define FREE_CASE(name, h) {name, test_free_at_completion, NULL, NULL, (void *)&(h)}

int main(void)
{
    const struct CMUnitTest tests[] = {
        CASE("thread progress, 1 rank", 0), CASE("thread progress, 2 ranks", 1),
        CASE("thread progress, 3 ranks", 2), CASE("thread progress, 4 ranks", 3),
        CASE("inline progress, 1 rank", 4), CASE("inline progress, 2 ranks", 5),
        CASE("inline progress, 3 ranks", 6), CASE("inline progress, 4 ranks", 7),
        CASE("thread progress, helping waiters, 2 ranks", 8),
        CASE("thread progress, helping waiters, 3 ranks", 9),
        FREE_CASE("free at completion", no_help),
        FREE_CASE("free at completion, helping polls", help),
        cmocka_unit_test(test_background),
        cmocka_unit_test(test_aside),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
