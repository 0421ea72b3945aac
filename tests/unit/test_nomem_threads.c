/*
 * Out of memory wherever the library allocates. Rank 1's Nth allocation
 * fails (malloc, calloc, realloc and posix_memalign reach the library through
 * this test's wrappers: it links with --wrap), for N = 1, 2, ... until a run
 * makes fewer than N. A run is a context's life on 2 ranks (threads): team,
 * window and notified puts, one-shot all-to-all(v), persistent all-to-all
 * (put algorithm) and all-to-allv, halo exchange, then the frees. Counted
 * are the allocations of rank 1's own thread (in inline mode that is all of
 * them) or those of its progress thread. Another case lets memory stay short:
 * every allocation from the Nth on fails, for the N that fall in team or
 * window creation; a last one starts many all-to-alls whose messages arrive
 * before their receives while rank 1's progress thread has no memory at all
 * (none may be lost). Each step must end as offcoll.h promises:
 * - rank 1's step says OC_ERR_NO_MEMORY, with a detail;
 * - a collective set-up (team, window, persistent request, halo plan) that
 *   fails on rank 1 fails at once on rank 0 too, with an error naming rank
 *   1, never by a timeout;
 * - an operation that fails on rank 1 completes on rank 0, or fails there
 *   with an error naming rank 1 (a timeout's diagnosis, or the verbs
 *   backend's "rank 1 refused the bytes sent to it");
 * - a step that no failure touched succeeds, with the right data;
 * - the frees return no error where nothing failed, never OC_ERR_BUSY;
 * - nothing crashes or hangs, and under ASan nothing leaks or is used after
 *   it is freed.
 * Allocations of UCX and libc themselves are not failed: they are not the
 * library's code.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "oc_error.h"
#include "ut_data.h"
#include "ut_ranks.h"

/* UNEVEN: the all-to-allvs' scale (blocks of 1 to 5 times it, gaps between,
 * the send blocks in falling order). */
enum { N = 2, BLOCK = 3000, UNEVEN = 1000, NX = 4, W = 1, WIN_BYTES = 256, PUT_BYTES = 64 };
#define FIELD_CELLS ((NX + 2 * W) * (NX + 2 * W) * (NX + 2 * W))

/* ---- Failing allocations ---------------------------------------------------- */

typedef enum { ROLE_NONE, ROLE_APP, ROLE_PE } role_t;

/* Which allocations a thread's count feeds: rank 1 sets ROLE_APP for itself,
 * and the progress thread its context starts inherits ROLE_PE. */
static _Thread_local role_t my_role;
static role_t counted;          /* the role whose allocations count in this run */
static long fail_at;            /* the counted allocation that fails, from 1 */
static int sticky;              /* and every one after it too (memory stays short) */
static atomic_long seen;        /* counted allocations so far in this run */
static atomic_int step_now;     /* the step rank 1 is in */
static atomic_int failed_in;    /* 1 + the step where the allocation failed, 0: none */
static atomic_int memory_gone;  /* set: every counted allocation fails, whatever fail_at */

static int fail_now(void)
{
    int none = 0;
    long n;
    if (my_role == ROLE_NONE || my_role != counted)
        return 0;
    n = atomic_fetch_add(&seen, 1) + 1;
    if (!atomic_load(&memory_gone) && (sticky ? n < fail_at : n != fail_at))
        return 0;
    atomic_compare_exchange_strong(&failed_in, &none, atomic_load(&step_now) + 1);
    errno = ENOMEM;
    return 1;
}

void *__real_malloc(size_t size);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t size);
int __real_posix_memalign(void **p, size_t align, size_t size);
int __real_pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *),
                          void *arg);

void *__wrap_malloc(size_t size)
{
    return fail_now() ? NULL : __real_malloc(size);
}

void *__wrap_calloc(size_t n, size_t size)
{
    return fail_now() ? NULL : __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t size)
{
    return fail_now() ? NULL : __real_realloc(p, size);
}

int __wrap_posix_memalign(void **p, size_t align, size_t size)
{
    return fail_now() ? ENOMEM : __real_posix_memalign(p, align, size);
}

typedef struct {
    void *(*fn)(void *);
    void *arg;
    role_t role;
} start_t;

static void *start_with_role(void *arg)
{
    start_t s = *(start_t *)arg;
    free(arg);
    my_role = s.role;
    return s.fn(s.arg);
}

/* The library's progress thread: it counts as ROLE_PE when rank 1 starts it. */
int __wrap_pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *),
                          void *arg)
{
    start_t *s = __real_malloc(sizeof(*s));
    int rc;
    if (s == NULL)
        return EAGAIN;
    *s = (start_t){fn, arg, my_role == ROLE_APP ? ROLE_PE : ROLE_NONE};
    rc = __real_pthread_create(th, attr, start_with_role, s);
    if (rc != 0)
        free(s);
    return rc;
}

/* ---- One rank's run ------------------------------------------------------------ */

typedef struct {
    ut_rank_t *me;
    int rank, peer;
    oc_context_t *ctx;
    oc_team_t *team;
    oc_win_t *win;
    unsigned char *wbase;
    oc_request_t *put_req, *v_req;
    oc_halo_t *halo;
    const ut_layout_t *eq, *uneven; /* the all-to-alls' and the all-to-allvs' blocks */
    unsigned char *s, *r;           /* for either */
    unsigned char put_src[PUT_BYTES];
    double field[FIELD_CELLS];
    char detail[512]; /* oc_last_error() after the step, if it failed */
} run_t;

typedef enum { SETUP, OPERATION } kind_t;

typedef struct {
    const char *name;
    kind_t kind;
    oc_status_t (*fn)(run_t *run);
    /* what rank 0's timeout detail says when rank 1 could not take part in
     * the operation (either, where two are given) */
    const char *rank0_names_1[2];
} step_t;

static oc_progress_mode_t mode;

static oc_status_t do_team(run_t *run)
{
    oc_config_t cfg;
    oc_team_params_t tp = oc_local_team_params(&run->me->member);
    oc_status_t st = oc_config_init(&cfg);
    if (st != OC_OK)
        return st;
    cfg.progress = mode;
    cfg.alltoall_alg = OC_ALG_PUT; /* persistent alltoall; one-shot falls back to auto */
    /* Rank 0 waits this long for an operation rank 1 could not join, in
     * about 30 of the 340 runs; a step that nothing failed takes
     * milliseconds, also under ThreadSanitizer. (1 s made the test 40 s.) */
    cfg.timeout_s = 0.5;
    /* A rank whose context failed still takes part in team creation with a
     * NULL context, so that its peer is not left in the allgather. */
    st = oc_init(&cfg, &run->ctx);
    if (st != OC_OK) {
        snprintf(run->detail, sizeof(run->detail), "%s", oc_last_error());
        oc_team_create(NULL, &tp, &run->team);
        return st;
    }
    return oc_team_create(run->ctx, &tp, &run->team);
}

static oc_status_t do_win(run_t *run)
{
    return oc_win_create(run->team, WIN_BYTES, 1, (void **)&run->wbase, &run->win);
}

/* Each rank puts PUT_BYTES at offset 0 of the other's window, notified. */
static oc_status_t do_put(run_t *run)
{
    oc_status_t st;
    size_t i;
    for (i = 0; i < PUT_BYTES; i++)
        run->put_src[i] = ut_pattern(run->rank, run->peer, i, 1);
    st = oc_put_notify(run->win, run->peer, 0, run->put_src, PUT_BYTES, 0);
    if (st == OC_OK)
        st = oc_notify_wait(run->win, 0, 1);
    if (st == OC_OK)
        st = oc_win_flush(run->win);
    for (i = 0; i < PUT_BYTES && st == OC_OK; i++)
        if (run->wbase[i] != ut_pattern(run->peer, run->rank, i, 1))
            return oc_error(OC_ERR_INTERNAL, "test: byte %zu of the put is wrong", i);
    return st;
}

/* The received blocks against their senders' patterns, the gaps untouched.
 * ut_check's allocation is the test's own: not counted, never failed. */
static oc_status_t received(const run_t *run, const ut_layout_t *l, unsigned salt)
{
    role_t role = my_role;
    long bad;
    my_role = ROLE_NONE;
    bad = ut_check(l, run->r, salt);
    my_role = role;
    return bad < 0 ? OC_OK : oc_error(OC_ERR_INTERNAL, "test: received byte %ld is wrong", bad);
}

/* Completes req, made or started with status st, and checks the data; a
 * one-shot request is freed, its operation's error detail kept. */
static oc_status_t finish(run_t *run, const ut_layout_t *l, oc_request_t *req, oc_status_t st,
                          int one_shot, unsigned salt)
{
    if (st == OC_OK)
        st = oc_wait(req);
    if (st == OC_OK)
        st = received(run, l, salt);
    if (one_shot && req != NULL) {
        oc_error_saved_t saved;
        oc_error_save(&saved);
        if (oc_request_free(req) != OC_OK && st == OC_OK)
            return oc_error(OC_ERR_INTERNAL, "test: oc_request_free: %s", oc_last_error());
        oc_error_restore(&saved);
    }
    return st;
}

static oc_status_t do_ialltoall(run_t *run)
{
    oc_request_t *req = NULL;
    oc_status_t st;
    ut_fill(run->eq, run->s, run->r, 2);
    st = oc_ialltoall(run->team, run->s, run->r, BLOCK, &req);
    return finish(run, run->eq, req, st, 1, 2);
}

static oc_status_t do_ialltoallv(run_t *run)
{
    const ut_layout_t *l = run->uneven;
    oc_request_t *req = NULL;
    oc_status_t st;
    ut_fill(l, run->s, run->r, 3);
    st = oc_ialltoallv(run->team, run->s, l->sbytes, l->sc, l->sd, run->r, l->rbytes, l->rc,
                       l->rd, &req);
    return finish(run, l, req, st, 1, 3);
}

static oc_status_t do_put_init(run_t *run)
{
    return oc_alltoall_init(run->team, run->s, run->r, BLOCK, &run->put_req);
}

static oc_status_t do_put_start(run_t *run)
{
    unsigned salt;
    oc_status_t st = OC_OK;
    for (salt = 4; salt < 6 && st == OC_OK; salt++) { /* both landing zones */
        ut_fill(run->eq, run->s, run->r, salt);
        st = finish(run, run->eq, run->put_req, oc_start(run->put_req), 0, salt);
    }
    return st;
}

static oc_status_t do_v_init(run_t *run)
{
    const ut_layout_t *l = run->uneven;
    return oc_alltoallv_init(run->team, run->s, l->sbytes, l->sc, l->sd, run->r, l->rbytes,
                             l->rc, l->rd, &run->v_req);
}

static oc_status_t do_v_start(run_t *run)
{
    ut_fill(run->uneven, run->s, run->r, 6);
    return finish(run, run->uneven, run->v_req, oc_start(run->v_req), 0, 6);
}

/* A 2x1x1 grid of NX^3 cells per rank: the value of a cell tells its global
 * place, so that a ghost says whether it holds the neighbour's face. */
static double cell_value(int gx, int y, int z)
{
    return gx * 10000.0 + y * 100.0 + z;
}

static size_t at(int x, int y, int z)
{
    return ((size_t)(x + W) * (NX + 2 * W) + (size_t)(y + W)) * (NX + 2 * W) + (size_t)(z + W);
}

static oc_status_t do_halo_create(run_t *run)
{
    oc_halo_params_t p;
    oc_halo_field_t f;
    int x, y, z;
    memset(&p, 0, sizeof(p));
    memset(&f, 0, sizeof(f));
    for (x = 0; x < FIELD_CELLS; x++)
        run->field[x] = -1;
    for (x = 0; x < NX; x++)
        for (y = 0; y < NX; y++)
            for (z = 0; z < NX; z++)
                run->field[at(x, y, z)] = cell_value(run->rank * NX + x, y, z);
    p.dims[0] = N;
    p.dims[1] = p.dims[2] = 1;
    p.width = W;
    f.data = run->field;
    f.n[0] = f.n[1] = f.n[2] = NX;
    f.elem_size = sizeof(double);
    f.dim_mask = 1;
    return oc_halo_create(run->team, &p, &f, 1, &run->halo);
}

static oc_status_t do_halo_exchange(run_t *run)
{
    oc_status_t st = oc_halo_start(run->halo, 0);
    int x = run->rank == 0 ? NX : -1, y, z;
    if (st == OC_OK)
        st = oc_halo_wait(run->halo, 0);
    for (y = 0; y < NX && st == OC_OK; y++)
        for (z = 0; z < NX; z++)
            if (run->field[at(x, y, z)] != cell_value(run->rank * NX + x, y, z))
                return oc_error(OC_ERR_INTERNAL, "test: ghost (%d,%d,%d) is wrong", x, y, z);
    return st;
}

static const step_t steps[] = {
    {"oc_init and oc_team_create", SETUP, do_team, {NULL}},
    {"oc_win_create", SETUP, do_win, {NULL}},
    {"notified puts", OPERATION, do_put, {"none from ranks 0, 1"}},
    {"oc_ialltoall", OPERATION, do_ialltoall, {"never took part: 1"}},
    {"oc_ialltoallv", OPERATION, do_ialltoallv, {"never took part: 1"}},
    {"oc_alltoall_init (put algorithm)", SETUP, do_put_init, {NULL}},
    /* rank 1 started it but could not put its block (its progress thread) */
    {"oc_start of the put request", OPERATION, do_put_start,
     {"never took part: 1", "blocks that never came: from 1"}},
    {"oc_alltoallv_init", SETUP, do_v_init, {NULL}},
    {"oc_start of the alltoallv request", OPERATION, do_v_start, {"never took part: 1"}},
    {"oc_halo_create", SETUP, do_halo_create, {NULL}},
    {"halo exchange", OPERATION, do_halo_exchange, {"faces that never came: rank 1"}},
};
enum { NSTEPS = sizeof(steps) / sizeof(steps[0]) };

/* Every rank's status of a step, and its detail (rank 0 reads rank 1's). */
typedef struct {
    int32_t st;
    char detail[512];
} outcome_t;

/* Rank 0 checks what both ranks said of the step. */
static void judge(ut_rank_t *me, const step_t *step, int index, const outcome_t *all)
{
    oc_status_t st0 = all[0].st, st1 = all[1].st;
    const char *d0 = all[0].detail, *const *names_1 = step->rank0_names_1;
    int failed = atomic_load(&failed_in);
    int hit = failed == index + 1 || (sticky && failed != 0 && failed <= index + 1);

    if (!hit) {
        CHECK(st0 == OC_OK && st1 == OC_OK,
              "%s, no allocation failed: rank 0 %s (%s), rank 1 %s (%s)", step->name,
              oc_status_string(st0), d0, oc_status_string(st1), all[1].detail);
        return;
    }
    if (st1 == OC_OK) { /* the failure was absorbed: then both go on */
        CHECK(st0 == OC_OK, "%s: rank 1 absorbed its failed allocation, rank 0 says %s (%s)",
              step->name, oc_status_string(st0), d0);
        return;
    }
    CHECK(st1 == OC_ERR_NO_MEMORY && all[1].detail[0] != '\0',
          "%s, allocation %ld failed: rank 1 says %s (%s)", step->name, fail_at,
          oc_status_string(st1), all[1].detail);
    if (step->kind == SETUP) {
        CHECK(st0 != OC_OK && st0 != OC_ERR_TIMEOUT && strstr(d0, "rank 1") != NULL,
              "%s, allocation %ld failed on rank 1: rank 0 says %s (%s), not an error naming "
              "rank 1 at once", step->name, fail_at, oc_status_string(st0), d0);
        return;
    }
    CHECK(st0 == OC_OK ||
              (st0 == OC_ERR_TIMEOUT
                   ? strstr(d0, names_1[0]) != NULL ||
                         (names_1[1] != NULL && strstr(d0, names_1[1]) != NULL)
                   : strstr(d0, "rank 1 ") != NULL),
          "%s, allocation %ld failed on rank 1: rank 0 says %s (%s), not OC_OK or an error "
          "naming rank 1 (a timeout's \"%s\")",
          step->name, fail_at, oc_status_string(st0), d0, names_1[0]);
}

/* A free's status: no error where no allocation failed in the run. */
static void freed(ut_rank_t *me, const char *what, oc_status_t st)
{
    if (st == OC_OK)
        return;
    CHECK(st != OC_ERR_BUSY, "%s: OC_ERR_BUSY (%s)", what, oc_last_error());
    CHECK(atomic_load(&failed_in) != 0, "%s, no allocation failed: %s (%s)", what,
          oc_status_string(st), oc_last_error());
}

static run_t runs[N];

/* Each rank's layouts and buffers, made before any allocation is counted. */
static struct {
    ut_layout_t eq, uneven;
    unsigned char *s, *r;
} data[N];

static size_t larger(size_t a, size_t b)
{
    return a > b ? a : b;
}

static int data_make(void **state)
{
    int r;
    (void)state;
    for (r = 0; r < N; r++) {
        if (ut_layout_init(&data[r].eq, UT_EQUAL, r, N, BLOCK) != 0 ||
            ut_layout_init(&data[r].uneven, UT_UNEVEN, r, N, UNEVEN) != 0)
            return -1;
        data[r].s = malloc(larger(data[r].eq.sbytes, data[r].uneven.sbytes));
        data[r].r = malloc(larger(data[r].eq.rbytes, data[r].uneven.rbytes));
        if (data[r].s == NULL || data[r].r == NULL)
            return -1;
    }
    return 0;
}

static int data_free(void **state)
{
    int r;
    (void)state;
    for (r = 0; r < N; r++) {
        ut_layout_fini(&data[r].eq);
        ut_layout_fini(&data[r].uneven);
        free(data[r].s);
        free(data[r].r);
    }
    return 0;
}

static void *rank_main(void *arg)
{
    ut_rank_t *me = arg;
    run_t *run = &runs[me->member.rank];
    outcome_t mine, all[N];
    int i;

    memset(run, 0, sizeof(*run));
    run->me = me;
    run->rank = me->member.rank;
    run->peer = 1 - run->rank;
    run->eq = &data[run->rank].eq;
    run->uneven = &data[run->rank].uneven;
    run->s = data[run->rank].s;
    run->r = data[run->rank].r;
    if (run->rank == 1)
        my_role = ROLE_APP;
    for (i = 0; i < NSTEPS; i++) {
        if (run->rank == 1)
            atomic_store(&step_now, i);
        run->detail[0] = '\0';
        mine.st = steps[i].fn(run);
        snprintf(mine.detail, sizeof(mine.detail), "%s",
                 mine.st != OC_OK && run->detail[0] != '\0' ? run->detail : oc_last_error());
        oc_local_oob_allgather(&mine, all, sizeof(mine), &run->me->member);
        if (run->rank == 0)
            judge(me, &steps[i], i, all);
        if (all[0].st != OC_OK || all[1].st != OC_OK)
            break;
    }
    if (run->rank == 1)
        atomic_store(&step_now, NSTEPS);
    if (run->halo != NULL)
        freed(me, "oc_halo_free", oc_halo_free(run->halo));
    if (run->v_req != NULL)
        freed(me, "oc_request_free (alltoallv)", oc_request_free(run->v_req));
    if (run->put_req != NULL)
        freed(me, "oc_request_free (put)", oc_request_free(run->put_req));
    if (run->win != NULL)
        freed(me, "oc_win_free", oc_win_free(run->win));
    ut_barrier(me); /* no endpoint torn down while the peer may use it */
    if (run->team != NULL)
        freed(me, "oc_team_free", oc_team_free(run->team));
    if (run->ctx != NULL)
        freed(me, "oc_finalize", oc_finalize(run->ctx));
    my_role = ROLE_NONE;
    return NULL;
}

/* Fails each of rank 1's allocations of role `role` in turn, each in a run of
 * its own; fails the test if any run went wrong, or if no allocation was
 * failed at all. short_steps > 0: memory stays short, every allocation from
 * the failed one on fails too, for the runs whose first failure falls in the
 * first short_steps steps. */
static void every_allocation(oc_progress_mode_t m, role_t role, const char *label,
                             int short_steps)
{
    char name[128];
    int bad = 0, failed;
    mode = m;
    counted = role;
    sticky = short_steps > 0;
    const char *first = getenv("NOMEM_FIRST"); /* to rerun from a given allocation */
    for (fail_at = first != NULL ? atol(first) : 1;; fail_at++) {
        atomic_store(&seen, 0);
        atomic_store(&failed_in, 0);
        snprintf(name, sizeof(name), "%s, allocation %ld fails%s", label, fail_at,
                 sticky ? " and every one after it" : "");
        bad += ut_run_ranks_noted(N, rank_main, NULL, name);
        failed = atomic_load(&failed_in);
        if (failed == 0 || (sticky && failed > short_steps))
            break;
    }
    print_message("%s: %ld allocation(s) failed in turn, %d run(s) went wrong\n", label,
                  fail_at - 1, bad);
    assert_true(fail_at > 1);
    assert_int_equal(bad, 0);
}

static void test_app_thread(void **state)
{
    (void)state;
    every_allocation(OC_PROGRESS_THREAD, ROLE_APP, "thread mode, application thread", 0);
}

/* A member whose memory runs out for good while it creates its team or
 * window: it must still vote, and free what it made. */
static void test_memory_stays_short(void **state)
{
    (void)state;
    every_allocation(OC_PROGRESS_THREAD, ROLE_APP, "memory short from then on", 2);
}

/* ---- Early messages while memory is short -------------------------------------
 * Rank 0 starts EARLY all-to-alls at once; rank 1's progress thread takes in
 * their messages before rank 1 starts its own, with every allocation of that
 * thread failing. None may be lost: the verbs backend keeps the first
 * VB_POOL_EARLY (32) in nodes made with the instance and holds the rest in
 * their receive buffers (UCX keeps them in memory of its own). So rank 1's
 * operations succeed with the right data, or fail for want of memory
 * elsewhere (OC_ERR_NO_MEMORY: the wait trigger variant runs out of send
 * operations with this many lists in flight), never by a timeout, which is
 * how a lost message shows; rank 0's succeed, or fail naming rank 1.
 */
enum { EARLY = 48, EARLY_BLOCK = 64, EARLY_POOLED = 32 };

static unsigned char early_s[N][EARLY][N * EARLY_BLOCK], early_r[N][EARLY][N * EARLY_BLOCK];
static oc_status_t early_st[N][EARLY];
static char early_detail[N][EARLY][256];

/* Rank 1 on verbs: until its progress thread has tried to keep the early
 * messages past its pool (one failed allocation each), so that rank 1's
 * receives come after them. */
static void await_early(ut_rank_t *me, oc_context_t *ctx, long before)
{
    struct timespec pause = {0, 1000000};
    int i;
    if (strncmp(oc_context_backend_info(ctx), "verbs", 5) != 0) {
        nanosleep(&(struct timespec){0, 100000000}, NULL);
        return;
    }
    for (i = 0; i < 10000 && atomic_load(&seen) - before < EARLY - EARLY_POOLED; i++)
        nanosleep(&pause, NULL);
    CHECK(atomic_load(&seen) - before >= EARLY - EARLY_POOLED,
          "the progress thread took in %ld of the %d early messages past its pool in 10 s",
          atomic_load(&seen) - before, EARLY - EARLY_POOLED);
}

static void start_early(ut_rank_t *me, run_t *run, oc_request_t **req)
{
    int rank = me->member.rank, k;
    for (k = 0; k < EARLY; k++)
        CHECK_OC(oc_ialltoall(run->team, early_s[rank][k], early_r[rank][k], EARLY_BLOCK,
                              &req[k]));
}

/* Operation k on this rank: its status and detail, and its data when it succeeded. */
static void early_done(ut_rank_t *me, int k, oc_status_t st)
{
    int rank = me->member.rank, src;
    size_t i;
    early_st[rank][k] = st;
    snprintf(early_detail[rank][k], sizeof(early_detail[rank][k]), "%s",
             st == OC_OK ? "" : oc_last_error());
    for (src = 0; src < N && st == OC_OK; src++)
        for (i = 0; i < EARLY_BLOCK; i++)
            if (!CHECK(early_r[rank][k][src * EARLY_BLOCK + i] == ut_pattern(src, rank, i, k),
                       "all-to-all %d: byte %zu from rank %d is wrong", k, i, src))
                return;
}

/* Rank 0, once both ranks are done. */
static void early_judge(ut_rank_t *me)
{
    int k;
    for (k = 0; k < EARLY; k++) {
        oc_status_t st0 = early_st[0][k], st1 = early_st[1][k];
        const char *d0 = early_detail[0][k];
        CHECK(st1 == OC_OK || st1 == OC_ERR_NO_MEMORY,
              "all-to-all %d: rank 1 says %s (%s): a message it took in early was lost", k,
              oc_status_string(st1), early_detail[1][k]);
        CHECK(st0 == OC_OK || (st1 != OC_OK && (strstr(d0, "receive from 1") != NULL ||
                                                strstr(d0, "rank 1 ") != NULL)),
              "all-to-all %d: rank 0 says %s (%s), rank 1 %s", k, oc_status_string(st0), d0,
              oc_status_string(st1));
    }
}

static void *rank_early(void *arg)
{
    ut_rank_t *me = arg;
    run_t *run = &runs[me->member.rank];
    oc_request_t *req[EARLY] = {NULL};
    int rank = me->member.rank, k;
    size_t i;

    memset(run, 0, sizeof(*run));
    run->me = me;
    if (rank == 1)
        my_role = ROLE_APP;
    for (k = 0; k < EARLY; k++)
        for (i = 0; i < N * EARLY_BLOCK; i++)
            early_s[rank][k][i] = ut_pattern(rank, (int)(i / EARLY_BLOCK), i % EARLY_BLOCK, k);
    if (CHECK_OC(do_team(run))) {
        long before = atomic_load(&seen);
        if (rank == 1)
            atomic_store(&memory_gone, 1);
        ut_barrier(me);
        if (rank == 0)
            start_early(me, run, req);
        else
            await_early(me, run->ctx, before);
        /* Rank 0's waits, and their timeout, begin once rank 1 starts. */
        ut_barrier(me);
        if (rank == 1)
            start_early(me, run, req);
        for (k = 0; k < EARLY; k++)
            early_done(me, k, req[k] != NULL ? oc_wait(req[k]) : OC_ERR_INTERNAL);
        if (rank == 1)
            atomic_store(&memory_gone, 0);
        for (k = 0; k < EARLY; k++)
            if (req[k] != NULL)
                CHECK_OC(oc_request_free(req[k]));
        ut_barrier(me);
        if (rank == 0)
            early_judge(me);
    }
    ut_barrier(me);
    if (run->team != NULL)
        CHECK_OC(oc_team_free(run->team));
    if (run->ctx != NULL)
        CHECK_OC(oc_finalize(run->ctx));
    my_role = ROLE_NONE;
    return NULL;
}

static void test_early_messages(void **state)
{
    (void)state;
    mode = OC_PROGRESS_THREAD;
    counted = ROLE_PE;
    sticky = 0;
    fail_at = 0; /* none, until memory_gone */
    atomic_store(&seen, 0);
    ut_run_ranks(N, rank_early, NULL, "early messages while memory is short");
}

static void test_progress_thread(void **state)
{
    (void)state;
    every_allocation(OC_PROGRESS_THREAD, ROLE_PE, "thread mode, progress thread", 0);
}

static void test_inline(void **state)
{
    (void)state;
    every_allocation(OC_PROGRESS_INLINE, ROLE_APP, "inline mode", 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_app_thread),
        cmocka_unit_test(test_progress_thread),
        cmocka_unit_test(test_inline),
        cmocka_unit_test(test_memory_stays_short),
        cmocka_unit_test(test_early_messages),
    };
    return cmocka_run_group_tests(tests, data_make, data_free);
}
