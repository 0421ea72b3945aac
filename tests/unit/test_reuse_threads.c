/*
 * A team keeps its last freed one-shot request for its next call
 * (runtime/oc_request.c, spare_keep). The reused request must run each later
 * all-to-all as a new one would, whatever its schedule's shape: with
 * OC_RINGK=1 and OC_RINGK_MIN=4096 on three ranks, blocks from 4 KB take
 * ring-k's two lists of two tasks and smaller ones burst's single list of
 * four, an in-place call adds a list, and a block of 0 bytes has no
 * transfer at all, so the reused execution meets schedules with more and
 * with fewer tasks than it had. And a thread that calls one all-to-all after
 * another must allocate nothing in the library once the first is done: the
 * library's allocations reach this test's wrappers (it links with --wrap),
 * which count those made on a rank's own thread while it is inside a call.
 * Threads stand in for ranks (ut_ranks.h); in inline mode all of a rank's
 * engine work runs on its own thread, in thread mode only what the
 * application thread does is counted.
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

enum { N = 3, RINGK_MIN = 4096, STEADY_BLOCK = 1000, WARMUP = 3, STEADY_CALLS = 50 };

/* ---- Counting allocations ------------------------------------------------------ */

static _Thread_local int counting; /* this thread is inside a library call */
static _Thread_local long counted; /* allocations made meanwhile */

void *__real_malloc(size_t size);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t size);
int __real_posix_memalign(void **p, size_t align, size_t size);

void *__wrap_malloc(size_t size)
{
    counted += counting;
    return __real_malloc(size);
}

void *__wrap_calloc(size_t n, size_t size)
{
    counted += counting;
    return __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t size)
{
    counted += counting;
    return __real_realloc(p, size);
}

int __wrap_posix_memalign(void **p, size_t align, size_t size)
{
    counted += counting;
    return __real_posix_memalign(p, align, size);
}

/* ---- One rank ------------------------------------------------------------------ */

/* The call a step makes. */
typedef enum { A2A, A2A_IN_PLACE, V_EQUAL, V_UNEVEN } kind_t;

static const char *const kind_names[] = {"oc_ialltoall", "oc_ialltoall in place",
                                         "oc_ialltoallv (displacements in rank order)",
                                         "oc_ialltoallv (displacements out of order)"};

/* One call of block bytes (an alltoallv's scale) with fresh data, checked;
 * *allocs gets the library's allocations on this thread during its calls. */
static int step(ut_rank_t *me, oc_team_t *team, kind_t kind, size_t block, unsigned salt,
                long *allocs)
{
    ut_layout_t l;
    unsigned char *s = NULL, *r = NULL;
    oc_request_t *req = NULL;
    oc_status_t st;
    int ok = 0;

    if (!CHECK(ut_layout_init(&l, kind == V_UNEVEN ? UT_UNEVEN : UT_EQUAL, me->member.rank, N,
                              block) == 0 &&
                   (s = malloc(l.sbytes + 1)) != NULL && (r = malloc(l.rbytes + 1)) != NULL,
               "out of memory"))
        goto out;
    ut_fill(&l, s, r, salt);
    if (kind == A2A_IN_PLACE)
        memcpy(r, s, l.sbytes);
    counted = 0;
    counting = 1;
    if (kind == A2A || kind == A2A_IN_PLACE)
        st = oc_ialltoall(team, kind == A2A_IN_PLACE ? OC_IN_PLACE : s, r, block, &req);
    else
        st = oc_ialltoallv(team, s, l.sbytes, l.sc, l.sd, r, l.rbytes, l.rc, l.rd, &req);
    if (st == OC_OK && (st = oc_wait(req)) == OC_OK)
        st = oc_request_free(req);
    counting = 0;
    *allocs = counted;
    ok = CHECK_OC(st) &&
         CHECK(ut_check(&l, r, salt) < 0, "%s, %zu bytes: wrong data", kind_names[kind], block);
out:
    free(s);
    free(r);
    ut_layout_fini(&l);
    return ok;
}

/* After a first call, each of a thread's calls of the same kind and size
 * allocates nothing in the library. */
static int steady(ut_rank_t *me, oc_team_t *team, kind_t kind, size_t block, unsigned *salt)
{
    long allocs, total = 0;
    for (int i = 0; i < WARMUP + STEADY_CALLS; i++) {
        if (!step(me, team, kind, block, (*salt)++, &allocs))
            return 0;
        total += i >= WARMUP ? allocs : 0;
    }
    return CHECK(total == 0,
                 "%ld allocations in the library over %d calls of %s, %zu bytes, after the "
                 "first: a freed request is not reused",
                 total, STEADY_CALLS, kind_names[kind], block);
}

static void run(ut_rank_t *me, oc_context_t *ctx, oc_team_t *team)
{
    /* Ring-k first, so that burst's longer list finds too few slots; then
     * both in turn, up and down in size, rendezvous included. */
    static const struct {
        size_t block;
        kind_t kind;
    } seq[] = {{70000, A2A},        {1000, A2A},  {0, A2A},         {7, V_UNEVEN},
               {4099, A2A_IN_PLACE}, {1, A2A},     {4099, V_EQUAL},  {1000, A2A_IN_PLACE},
               {1000, A2A},         {0, A2A_IN_PLACE}, {70000, A2A_IN_PLACE}, {64, A2A},
               {5000, V_UNEVEN},    {64, A2A}};
    unsigned salt = 0, i;
    (void)ctx;

    for (i = 0; i < sizeof(seq) / sizeof(seq[0]); i++)
        if (!step(me, team, seq[i].kind, seq[i].block, salt++, &(long){0}))
            return;
    /* Eager messages on every backend: the verbs backend's rendezvous
     * registers its buffers where its registration cache is off, as under
     * UCX_MEM_EVENTS=no here (uneven blocks are up to 5 times the scale). */
    for (i = 0; i <= V_UNEVEN; i++)
        if (!steady(me, team, (kind_t)i, i == V_UNEVEN ? STEADY_BLOCK / 4 : STEADY_BLOCK, &salt))
            return;
}

static void tune(oc_config_t *cfg)
{
    cfg->alltoall_alg = OC_ALG_AUTO;
    cfg->ringk = 1;
    cfg->ringk_min = RINGK_MIN;
}

/* Bruck's schedule takes a scratch buffer, which a cleared schedule keeps. */
static void run_bruck(ut_rank_t *me, oc_context_t *ctx, oc_team_t *team)
{
    unsigned salt = 0;
    (void)ctx;
    if (step(me, team, A2A, 300, salt++, &(long){0}) &&
        step(me, team, A2A_IN_PLACE, 5, salt++, &(long){0}) &&
        steady(me, team, A2A, 64, &salt))
        steady(me, team, A2A_IN_PLACE, 64, &salt);
}

static void tune_bruck(oc_config_t *cfg)
{
    cfg->alltoall_alg = OC_ALG_BRUCK;
}

static void *rank_main_bruck(void *arg)
{
    ut_with_mode(arg, tune_bruck, run_bruck);
    return NULL;
}

static void *rank_main(void *arg)
{
    ut_with_mode(arg, tune, run);
    return NULL;
}

static void test_reuse(void **state)
{
    ut_run_ranks(N, rank_main, *state, "one-shot all-to-alls on a team that reuses requests");
}

static void test_reuse_bruck(void **state)
{
    ut_run_ranks(N, rank_main_bruck, *state, "Bruck all-to-alls on a team that reuses requests");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        {"inline mode", test_reuse, NULL, NULL, (void *)&ut_inline_mode},
        {"thread mode", test_reuse, NULL, NULL, (void *)&ut_thread_mode},
        {"inline mode, Bruck", test_reuse_bruck, NULL, NULL, (void *)&ut_inline_mode},
        {"thread mode, Bruck", test_reuse_bruck, NULL, NULL, (void *)&ut_thread_mode},
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
