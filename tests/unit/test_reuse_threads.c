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

/* One all-to-all of block bytes (in place: from rbuf) with fresh data, checked;
 * *allocs gets the library's allocations on this thread during its calls. */
static int alltoall(ut_rank_t *me, oc_team_t *team, size_t block, int in_place, unsigned salt,
                    long *allocs)
{
    ut_layout_t l;
    unsigned char *s = NULL, *r = NULL;
    oc_request_t *req = NULL;
    oc_status_t st;
    int ok = 0;

    if (!CHECK(ut_layout_init(&l, UT_EQUAL, me->member.rank, N, block) == 0 &&
                   (s = malloc(l.sbytes + 1)) != NULL && (r = malloc(l.rbytes + 1)) != NULL,
               "out of memory"))
        goto out;
    ut_fill(&l, s, r, salt);
    if (in_place)
        memcpy(r, s, l.sbytes);
    counted = 0;
    counting = 1;
    st = oc_ialltoall(team, in_place ? OC_IN_PLACE : s, r, block, &req);
    if (st == OC_OK && (st = oc_wait(req)) == OC_OK)
        st = oc_request_free(req);
    counting = 0;
    *allocs = counted;
    ok = CHECK_OC(st) &&
         CHECK(ut_check(&l, r, salt) < 0, "%zu-byte blocks%s: wrong data", block,
               in_place ? " in place" : "");
out:
    free(s);
    free(r);
    ut_layout_fini(&l);
    return ok;
}

static void run(ut_rank_t *me, oc_context_t *ctx, oc_team_t *team)
{
    /* Ring-k first, so that burst's longer list finds too few slots; then
     * both in turn, up and down in size, rendezvous included. */
    static const struct {
        size_t block;
        int in_place;
    } seq[] = {{70000, 0}, {1000, 0}, {0, 0}, {7, 0}, {4099, 1}, {1, 0}, {4099, 0},
               {1000, 1},  {1000, 0}, {0, 1}, {70000, 1}, {64, 0}};
    unsigned salt = 0, i;
    long allocs, total = 0;
    (void)ctx;

    for (i = 0; i < sizeof(seq) / sizeof(seq[0]); i++)
        if (!alltoall(me, team, seq[i].block, seq[i].in_place, salt++, &allocs))
            return;
    for (i = 0; i < WARMUP; i++)
        if (!alltoall(me, team, STEADY_BLOCK, 0, salt++, &allocs))
            return;
    for (i = 0; i < STEADY_CALLS; i++) {
        if (!alltoall(me, team, STEADY_BLOCK, 0, salt++, &allocs))
            return;
        total += allocs;
    }
    CHECK(total == 0,
          "%ld allocations in the library over %d one-shot all-to-alls of %d bytes after the "
          "first: a freed request is not reused",
          total, STEADY_CALLS, STEADY_BLOCK);
}

static void tune(oc_config_t *cfg)
{
    cfg->alltoall_alg = OC_ALG_AUTO;
    cfg->ringk = 1;
    cfg->ringk_min = RINGK_MIN;
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        {"inline mode", test_reuse, NULL, NULL, (void *)&ut_inline_mode},
        {"thread mode", test_reuse, NULL, NULL, (void *)&ut_thread_mode},
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
