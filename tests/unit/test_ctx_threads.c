/*
 * Several application threads on one context, as offcoll.h allows: threads
 * stand in for ranks (ut_ranks.h), and each rank runs two application
 * threads at once, each on a team of its own, with one-shot and persistent
 * alltoallv checked byte by byte. In thread mode both hand their work to the
 * one progress thread; in inline mode the engine runs in whichever of them
 * calls. Then a request used by two threads at once: the second thread's
 * call is refused with OC_ERR_BUSY instead of racing the first. Meant for
 * ThreadSanitizer too.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <cmocka.h>

#include "ut_data.h"
#include "ut_ranks.h"

enum { N = 3, APPS = 2, ROUNDS = 20, SCALE = 3000, BUSY_WAIT_S = 10 };

typedef struct {
    oc_progress_mode_t mode;
} ctx_case_t;

/* One application thread: its own failure record (ut_note is not shared
 * between threads), its team and how it completes requests. */
typedef struct {
    ut_rank_t me;
    oc_team_t *team;
    int poll;
} app_t;

static int check_data(ut_rank_t *me, const ut_layout_t *l, const unsigned char *r, unsigned salt,
                      const char *what)
{
    long bad = ut_check(l, r, salt);
    return CHECK(bad < 0, "%s, salt %u: receive byte %ld of %zu is wrong", what, salt, bad,
                 l->rbytes);
}

static void *app_main(void *arg)
{
    app_t *a = arg;
    ut_rank_t *me = &a->me;
    ut_layout_t l;
    unsigned char *s = NULL, *r = NULL;
    oc_request_t *req = NULL;
    unsigned salt = a->poll ? 1000 : 0, i;

    if (!CHECK(ut_layout_init(&l, UT_UNEVEN, me->member.rank, N, SCALE) == 0, "out of memory"))
        return NULL;
    s = malloc(l.sbytes);
    r = malloc(l.rbytes);
    if (!CHECK(s != NULL && r != NULL, "out of memory"))
        goto out;
    for (i = 0; i < ROUNDS; i++, salt++) {
        int ok;
        ut_fill(&l, s, r, salt);
        if (!CHECK_OC(oc_ialltoallv(a->team, s, l.sbytes, l.sc, l.sd, r, l.rbytes, l.rc, l.rd,
                                    &req)))
            goto out;
        ok = CHECK_OC(ut_finish(req, a->poll)) && check_data(me, &l, r, salt, "oc_ialltoallv");
        CHECK_OC(oc_request_free(req));
        if (!ok)
            goto out;
    }
    if (!CHECK_OC(oc_alltoallv_init(a->team, s, l.sbytes, l.sc, l.sd, r, l.rbytes, l.rc, l.rd,
                                    &req)))
        goto out;
    for (i = 0; i < ROUNDS; i++, salt++) {
        ut_fill(&l, s, r, salt);
        if (!CHECK_OC(oc_start(req)) || !CHECK_OC(ut_finish(req, a->poll)) ||
            !check_data(me, &l, r, salt, "persistent alltoallv"))
            break;
    }
    CHECK_OC(oc_request_free(req));
out:
    ut_layout_fini(&l);
    free(s);
    free(r);
    return NULL;
}

/* Two application threads of this rank at once, on `team` and on a second
 * team of the same members. */
static void two_threads(ut_rank_t *me, oc_context_t *ctx, oc_team_t *team)
{
    oc_team_params_t tp = oc_local_team_params(&me->member);
    oc_team_t *second = NULL;
    app_t apps[APPS];
    pthread_t th[APPS];
    int k, started[APPS] = {0};

    if (!CHECK_OC(oc_team_create(ctx, &tp, &second)))
        return;
    for (k = 0; k < APPS; k++) {
        apps[k] = (app_t){{me->c, me->member, ""}, k ? second : team, k};
        started[k] = CHECK(pthread_create(&th[k], NULL, app_main, &apps[k]) == 0,
                           "pthread_create failed");
    }
    for (k = 0; k < APPS; k++) {
        if (started[k])
            pthread_join(th[k], NULL);
        if (apps[k].me.err[0] != '\0')
            ut_note(me, __LINE__, "application thread %d: %s", k, apps[k].me.err);
    }
    CHECK_OC(oc_team_free(second));
}

typedef struct {
    oc_request_t *req;
    oc_status_t st;
} waiter_t;

/* Its oc_wait is itself refused while the test thread is inside oc_test on
 * the request (either thread may come second): it tries again. */
static void *waiter_main(void *arg)
{
    waiter_t *w = arg;
    while ((w->st = oc_wait(w->req)) == OC_ERR_BUSY)
        sched_yield();
    return NULL;
}

/* Rank 0 waits for an alltoall in a second thread, which cannot end before
 * rank 1 starts: meanwhile its own oc_test and oc_request_free on the
 * request must be refused. Rank 1 starts once rank 0 has seen that. */
static void in_use(ut_rank_t *me, oc_context_t *ctx, oc_team_t *team)
{
    unsigned char s[2 * SCALE], r[2 * SCALE];
    waiter_t w = {NULL, OC_ERR_INTERNAL};
    pthread_t th;
    oc_status_t st = OC_INPROGRESS;
    time_t deadline;
    size_t i;
    int k;

    (void)ctx;
    for (k = 0; k < 2; k++)
        for (i = 0; i < SCALE; i++)
            s[(size_t)k * SCALE + i] = ut_pattern(me->member.rank, k, i, 7);
    if (me->member.rank == 1) {
        ut_barrier(me);
        if (CHECK_OC(oc_ialltoall(team, s, r, SCALE, &w.req)))
            CHECK_OC(w.st = oc_wait(w.req));
    } else if (CHECK_OC(oc_ialltoall(team, s, r, SCALE, &w.req)) &&
               CHECK(pthread_create(&th, NULL, waiter_main, &w) == 0, "pthread_create failed")) {
        deadline = time(NULL) + BUSY_WAIT_S;
        while (st == OC_INPROGRESS && time(NULL) < deadline) {
            const struct timespec pause = {0, 1000000};
            st = oc_test(w.req);
            nanosleep(&pause, NULL); /* time for the waiter to get in and stay */
        }
        if (CHECK(st == OC_ERR_BUSY, "oc_test beside a thread in oc_wait: %s, not OC_ERR_BUSY",
                  oc_status_string(st)))
            CHECK(strstr(oc_last_error(), "in use by another thread") != NULL,
                  "oc_test's refusal says: %s", oc_last_error());
        st = oc_request_free(w.req);
        CHECK(st == OC_ERR_BUSY, "oc_request_free beside a thread in oc_wait: %s",
              oc_status_string(st));
        ut_barrier(me);
        pthread_join(th, NULL);
        CHECK_OC(w.st);
    } else {
        ut_barrier(me); /* rank 1 waits for it */
        if (w.req != NULL)
            CHECK_OC(w.st = oc_wait(w.req));
    }
    if (w.st == OC_OK && w.req != NULL)
        for (k = 0; k < 2; k++)
            for (i = 0; i < SCALE; i++)
                if (!CHECK(r[(size_t)k * SCALE + i] == ut_pattern(k, me->member.rank, i, 7),
                           "byte %zu from rank %d is wrong", i, k)) {
                    k = 2;
                    break;
                }
    if (w.req != NULL)
        CHECK_OC(oc_request_free(w.req));
}

static void open_and_run(ut_rank_t *me, void (*body)(ut_rank_t *, oc_context_t *, oc_team_t *))
{
    const ctx_case_t *c = me->c;
    oc_config_t cfg;
    if (!CHECK_OC(oc_config_init(&cfg)))
        return;
    cfg.progress = c->mode;
    cfg.timeout_s = 60;
    ut_with_team(me, &cfg, body);
}

static void *two_threads_main(void *arg)
{
    open_and_run(arg, two_threads);
    return NULL;
}

static void *in_use_main(void *arg)
{
    open_and_run(arg, in_use);
    return NULL;
}

static const ctx_case_t thread_mode = {OC_PROGRESS_THREAD}, inline_mode = {OC_PROGRESS_INLINE};

static void test_two_threads_thread(void **state)
{
    (void)state;
    ut_run_ranks(N, two_threads_main, &thread_mode, "two application threads, thread mode");
}

static void test_two_threads_inline(void **state)
{
    (void)state;
    ut_run_ranks(N, two_threads_main, &inline_mode, "two application threads, inline mode");
}

static void test_in_use_thread(void **state)
{
    (void)state;
    ut_run_ranks(2, in_use_main, &thread_mode, "request in use, thread mode");
}

static void test_in_use_inline(void **state)
{
    (void)state;
    ut_run_ranks(2, in_use_main, &inline_mode, "request in use, inline mode");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_threads_thread),
        cmocka_unit_test(test_two_threads_inline),
        cmocka_unit_test(test_in_use_thread),
        cmocka_unit_test(test_in_use_inline),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
