/*
 * Threads standing in for ranks: each opens its own context (its own UCX
 * worker and, in thread mode, its own progress thread) and they meet over
 * shared memory, as processes would; teams come from oc_local_oob.h.
 *
 * A rank thread never calls cmocka (not thread-safe): it records its first
 * failure, carries on so that its peers are not left waiting, and the test
 * thread reports after joining.
 */
#ifndef UT_RANKS_H
#define UT_RANKS_H

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "../../apps/oc_local_oob.h"
#include "offcoll.h"

enum { UT_MAX_RANKS = 16, UT_JOIN_TIMEOUT_S = 120 };

typedef struct {
    const void *c; /* the test's case */
    oc_local_member_t member;
    char err[768]; /* first failure, "" if none */
} ut_rank_t;

static void ut_note(ut_rank_t *me, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void ut_note(ut_rank_t *me, int line, const char *fmt, ...)
{
    va_list ap;
    int len;
    if (me->err[0] != '\0')
        return;
    len = snprintf(me->err, sizeof(me->err), "rank %d, line %d: ", me->member.rank, line);
    va_start(ap, fmt);
    vsnprintf(me->err + len, sizeof(me->err) - (size_t)len, fmt, ap);
    va_end(ap);
}

static inline int ut_check_oc(ut_rank_t *me, int line, const char *what, oc_status_t st)
{
    if (st == OC_OK)
        return 1;
    ut_note(me, line, "%s: %s (%s)", what, oc_status_string(st), oc_last_error());
    return 0;
}

#define CHECK(cond, ...) ((cond) ? 1 : (ut_note(me, __LINE__, __VA_ARGS__), 0))
#define CHECK_OC(call) ut_check_oc(me, __LINE__, #call, (call))

/* Completes req by polling oc_test (which drives the schedule in inline
 * mode) or by sleeping in oc_wait. */
static inline oc_status_t ut_finish(oc_request_t *req, int poll)
{
    oc_status_t st;
    if (!poll)
        return oc_wait(req);
    while ((st = oc_test(req)) == OC_INPROGRESS)
        sched_yield(); /* more threads than cores: let the peers run */
    return st;
}

/* Every rank waits for all (an allgather of one byte). */
static inline void ut_barrier(ut_rank_t *me)
{
    char token = 0, all[UT_MAX_RANKS];
    oc_local_oob_allgather(&token, all, 1, &me->member);
}

/* Opens this rank's context with cfg and its team over the local OOB; 0 on
 * failure (recorded), after which the peers cannot go on either: the join
 * reports them hanging. */
static inline int ut_open(ut_rank_t *me, const oc_config_t *cfg, oc_context_t **ctx,
                          oc_team_t **team)
{
    oc_team_params_t tp = oc_local_team_params(&me->member);
    *ctx = NULL;
    *team = NULL;
    return CHECK_OC(oc_init(cfg, ctx)) && CHECK_OC(oc_team_create(*ctx, &tp, team));
}

/* Frees what ut_open made (either may be NULL). */
static inline void ut_close(ut_rank_t *me, oc_context_t *ctx, oc_team_t *team)
{
    if (team != NULL)
        CHECK_OC(oc_team_free(team));
    if (ctx != NULL)
        CHECK_OC(oc_finalize(ctx));
}

/* Runs body on this rank's context and team when ut_open makes them, then
 * closes them after a barrier whatever happened: nobody tears down endpoints
 * that a peer still uses. */
static inline void ut_with_team(ut_rank_t *me, const oc_config_t *cfg,
                                void (*body)(ut_rank_t *me, oc_context_t *ctx, oc_team_t *team))
{
    oc_context_t *ctx;
    oc_team_t *team;
    if (ut_open(me, cfg, &ctx, &team))
        body(me, ctx, team);
    ut_barrier(me);
    ut_close(me, ctx, team);
}

/* Cases run in each progress mode point their c at one of these. */
static const oc_progress_mode_t ut_thread_mode = OC_PROGRESS_THREAD;
static const oc_progress_mode_t ut_inline_mode = OC_PROGRESS_INLINE;

/* ut_with_team in the case's progress mode (c points to it), with a 20 s
 * timeout and whatever tune (may be NULL) changes. */
static inline void ut_with_mode(ut_rank_t *me, void (*tune)(oc_config_t *cfg),
                                void (*body)(ut_rank_t *me, oc_context_t *ctx, oc_team_t *team))
{
    oc_config_t cfg;
    if (!CHECK_OC(oc_config_init(&cfg)))
        return;
    cfg.progress = *(const oc_progress_mode_t *)me->c;
    cfg.timeout_s = 20;
    if (tune != NULL)
        tune(&cfg);
    ut_with_team(me, &cfg, body);
}

/* Runs fn on n rank threads with case c; prints the first failure of each
 * rank, naming label, and returns whether there was one; cmocka-fails on a
 * rank that hangs. */
static inline int ut_run_ranks_noted(int n, void *(*fn)(void *), const void *c,
                                     const char *label)
{
    oc_local_oob_t oob;
    ut_rank_t ranks[UT_MAX_RANKS];
    pthread_t th[UT_MAX_RANKS];
    struct timespec deadline;
    int r, failed = 0;

    assert_true(n <= UT_MAX_RANKS);
    assert_int_equal(oc_local_oob_init(&oob, n), 0);
    for (r = 0; r < n; r++) {
        ranks[r] = (ut_rank_t){c, {&oob, r}, ""};
        assert_int_equal(pthread_create(&th[r], NULL, fn, &ranks[r]), 0);
    }
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += UT_JOIN_TIMEOUT_S;
    for (r = 0; r < n; r++)
        if (pthread_timedjoin_np(th[r], NULL, &deadline) == ETIMEDOUT)
            fail_msg("%s: rank %d hangs", label, r); /* the process ends with the test */
    for (r = 0; r < n; r++)
        if (ranks[r].err[0] != '\0') {
            print_error("%s: %s\n", label, ranks[r].err);
            failed = 1;
        }
    oc_local_oob_fini(&oob);
    return failed;
}

/* As ut_run_ranks_noted, and cmocka-fails if a rank failed. */
static inline void ut_run_ranks(int n, void *(*fn)(void *), const void *c, const char *label)
{
    assert_false(ut_run_ranks_noted(n, fn, c, label));
}

#endif
