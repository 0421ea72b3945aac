/*
 * Windows, notified puts and halo plans end to end, with threads standing in
 * for ranks (see ut_ranks.h). Meant to run under ThreadSanitizer: the
 * notification path (progress thread -> counter -> sleeping application
 * thread) and the put completion path are what it watches; halo plans of
 * three fields in flight at once, on 1 x 1 x n and 2 x 2 x 1. Also a window
 * freed while its put is in flight (cancelled by the free, abandoned until
 * finalize) and the target's free while that put still arrives.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "ut_ranks.h"

enum { ROUNDS = 40, CHUNKS = 4, CHUNK = 512, HALO_ROUNDS = 30, HALO_FIELDS = 3, HN = 4 };

typedef struct {
    oc_progress_mode_t mode;
    int n;
    unsigned help_us; /* thread mode: waits and tests run the engine too */
    int poll;         /* notifications and halos completed by test loops */
} win_case_t;

/* Waits for the counter's expected notifications, or polls for them. */
static oc_status_t notified(const win_case_t *c, oc_win_t *win, unsigned counter,
                            uint32_t expected)
{
    oc_status_t st;
    if (!c->poll)
        return oc_notify_wait(win, counter, expected);
    while ((st = oc_notify_test(win, counter, expected)) == OC_INPROGRESS)
        ;
    return st;
}

static oc_status_t halo_done(const win_case_t *c, oc_halo_t *halo, int field)
{
    oc_status_t st;
    if (!c->poll)
        return oc_halo_wait(halo, field);
    while ((st = oc_halo_test(halo, field)) == OC_INPROGRESS)
        ;
    return st;
}

static unsigned char byte_of(int from, int chunk, int round)
{
    return (unsigned char)(from * 37 + chunk * 11 + round * 5 + 1);
}

/* Every rank puts CHUNKS notified chunks into every rank's window (itself
 * included), waits for all of its own, checks them, and repeats. */
static void puts_round(ut_rank_t *me, oc_win_t *win, unsigned char *base, unsigned char *src,
                       int round)
{
    const win_case_t *c = me->c;
    int p, k, bad = -1;
    size_t i;

    for (k = 0; k < CHUNKS; k++)
        memset(src + k * CHUNK, byte_of(me->member.rank, k, round), CHUNK);
    for (p = 0; p < c->n; p++)
        for (k = 0; k < CHUNKS; k++)
            if (!CHECK_OC(oc_put_notify(win, p, (size_t)(me->member.rank * CHUNKS + k) * CHUNK,
                                        src + k * CHUNK, CHUNK, (unsigned)(round & 1))))
                return;
    if (!CHECK_OC(notified(c, win, (unsigned)(round & 1), (uint32_t)(c->n * CHUNKS))))
        return;
    for (p = 0; p < c->n && bad < 0; p++)
        for (k = 0; k < CHUNKS; k++)
            for (i = 0; i < CHUNK; i++)
                if (base[(size_t)(p * CHUNKS + k) * CHUNK + i] != byte_of(p, k, round))
                    bad = p;
    CHECK(bad < 0, "round %d: the chunks from rank %d are wrong", round, bad);
    CHECK(oc_notify_test(win, (unsigned)(round & 1), 1) == OC_INPROGRESS,
          "round %d: a notification too many", round);
    CHECK_OC(oc_win_flush(win));
    ut_barrier(me); /* nobody overwrites what a peer still checks */
}

static double cell_value(int field, long gi, long gj, long gk, int round)
{
    return (double)(gi * 10000 + gj * 100 + gk) + 1e6 * round + 1e9 * field;
}

/* Dims 1 x 1 x n, or 2 x 2 x 1 on 4 ranks (where edge and corner ghosts come
 * from other ranks than the faces'), periodic, with corners: every ghost cell
 * has an owner. HALO_FIELDS fields in flight at once, waited for in an order
 * that differs by rank. */
static void halo_rounds(ut_rank_t *me, oc_team_t *team)
{
    const win_case_t *c = me->c;
    const int sq = c->n == 4, dims[3] = {sq ? 2 : 1, sq ? 2 : 1, sq ? 1 : c->n};
    const int r = me->member.rank;
    const long co[3] = {r / (dims[1] * dims[2]), (r / dims[2]) % dims[1], r % dims[2]};
    const long w = 1, e = HN + 2 * w;
    oc_halo_params_t p = {{dims[0], dims[1], dims[2]}, {1, 1, 1}, (unsigned)w, 1};
    oc_halo_field_t f[HALO_FIELDS];
    double *a[HALO_FIELDS] = {NULL};
    oc_halo_t *halo = NULL;
    long i, j, k, g[3], wrong = 0;
    int round, q, fi, ok = 1;

    for (fi = 0; fi < HALO_FIELDS; fi++) {
        ok &= (a[fi] = calloc((size_t)(e * e * e), sizeof(double))) != NULL;
        f[fi] = (oc_halo_field_t){a[fi], {HN, HN, HN}, sizeof(double), 0};
    }
    if (!CHECK(ok, "out of memory") || !CHECK_OC(oc_halo_create(team, &p, f, HALO_FIELDS, &halo)))
        goto out;
    for (round = 0; round < HALO_ROUNDS && wrong == 0; round++) {
        for (fi = 0; fi < HALO_FIELDS; fi++)
            for (i = 0; i < HN; i++)
                for (j = 0; j < HN; j++)
                    for (k = 0; k < HN; k++)
                        a[fi][((i + w) * e + j + w) * e + k + w] =
                            cell_value(fi, co[0] * HN + i, co[1] * HN + j, co[2] * HN + k, round);
        for (fi = 0; fi < HALO_FIELDS; fi++)
            if (!CHECK_OC(oc_halo_start(halo, fi)))
                goto done;
        for (q = 0; q < HALO_FIELDS; q++)
            if (!CHECK_OC(halo_done(c, halo, (q + r) % HALO_FIELDS)))
                goto done;
        for (fi = 0; fi < HALO_FIELDS; fi++)
            for (i = 0; i < e; i++)
                for (j = 0; j < e; j++)
                    for (k = 0; k < e; k++) {
                        const long idx[3] = {i, j, k};
                        int d;
                        for (d = 0; d < 3; d++) {
                            long n = (long)dims[d] * HN;
                            g[d] = (co[d] * HN + idx[d] - w + n) % n;
                        }
                        wrong += a[fi][(i * e + j) * e + k] != cell_value(fi, g[0], g[1], g[2], round);
                    }
    }
done:
    CHECK(wrong == 0, "halo round %d: %ld wrong cells", round - 1, wrong);
    CHECK_OC(oc_halo_free(halo));
out:
    for (fi = 0; fi < HALO_FIELDS; fi++)
        free(a[fi]);
}

static void *rank_main(void *arg)
{
    ut_rank_t *me = arg;
    const win_case_t *c = me->c;
    oc_config_t cfg;
    oc_context_t *ctx = NULL;
    oc_team_t *team = NULL;
    oc_win_t *win = NULL;
    unsigned char *base = NULL, *src = malloc(CHUNKS * CHUNK);
    int round;

    if (!CHECK(src != NULL, "out of memory") || !CHECK_OC(oc_config_init(&cfg)))
        goto out;
    cfg.progress = c->mode;
    cfg.wait_help_us = c->help_us;
    cfg.timeout_s = 30;
    if (!ut_open(me, &cfg, &ctx, &team))
        goto out;
    if (CHECK_OC(oc_win_create(team, (size_t)c->n * CHUNKS * CHUNK, 2, (void **)&base, &win))) {
        size_t size = 0;
        CHECK_OC(oc_win_size(win, c->n - 1, &size));
        CHECK(size == (size_t)c->n * CHUNKS * CHUNK, "window size %zu", size);
        for (round = 0; round < ROUNDS && me->err[0] == '\0'; round++)
            puts_round(me, win, base, src, round);
        CHECK_OC(oc_win_free(win));
    }
    halo_rounds(me, team);
    ut_barrier(me); /* nobody tears down endpoints that a peer still flushes to */
out:
    ut_close(me, ctx, team);
    free(src);
    return NULL;
}

static void test_windows(void **state)
{
    const win_case_t *c = *state;
    char label[64];
    snprintf(label, sizeof(label), "%s, n=%d, help %u us%s", c->mode ? "inline" : "thread", c->n,
             c->help_us, c->poll ? ", polling" : "");
    ut_run_ranks(c->n, rank_main, c, label);
}

/* Rank 1 (thread mode) puts 4 MB over TCP into rank 0 (inline), which does
 * not progress until the origin has freed the window; as test_timeout's late
 * put case, with both ranks in one process. A transport with true one-sided
 * puts (verbs) completes the put without the target: nothing arrives late,
 * and the case says SKIP. */
static _Atomic int late_put_one_sided;

static void *late_put_main(void *arg)
{
    ut_rank_t *me = arg;
    const size_t size = 4u << 20;
    char *src = calloc(1, size);
    oc_config_t cfg;
    oc_context_t *ctx = NULL;
    oc_team_t *team = NULL;
    oc_win_t *win = NULL;
    void *base = NULL;
    oc_status_t st;

    if (!CHECK(src != NULL, "out of memory") || !CHECK_OC(oc_config_init(&cfg)))
        goto out;
    cfg.progress = me->member.rank == 0 ? OC_PROGRESS_INLINE : OC_PROGRESS_THREAD;
    cfg.intranode = OC_INTRANODE_LOOPBACK;
    cfg.timeout_s = 1;
    if (!ut_open(me, &cfg, &ctx, &team) ||
        !CHECK_OC(oc_win_create(team, size, 0, &base, &win)))
        goto out;
    if (me->member.rank == 1) {
        CHECK_OC(oc_put(win, 0, 0, src, size));
        if ((st = oc_win_flush(win)) == OC_OK) { /* a transport with one-sided puts */
            late_put_one_sided = 1;
            ut_barrier(me);
            CHECK_OC(oc_win_free(win));
        } else {
            CHECK(st == OC_ERR_TIMEOUT, "oc_win_flush: %s", oc_last_error());
            st = oc_win_free(win);
            CHECK(st == OC_ERR_TIMEOUT, "oc_win_free on the origin: %s", oc_last_error());
            ut_barrier(me);
        }
    } else {
        ut_barrier(me);
        CHECK_OC(oc_win_free(win));
    }
    ut_barrier(me);
out:
    ut_close(me, ctx, team);
    free(src);
    return NULL;
}

static void test_late_put(void **state)
{
    (void)state;
    ut_run_ranks(2, late_put_main, NULL, "late put");
    if (late_put_one_sided) {
        printf("SKIP late put: the put completed without the target's progress (true "
               "one-sided puts): no late data\n");
        skip();
    }
}

static win_case_t cases[] = {
    {OC_PROGRESS_THREAD, 1, 0, 0}, {OC_PROGRESS_THREAD, 2, 0, 0}, {OC_PROGRESS_THREAD, 3, 0, 0},
    {OC_PROGRESS_INLINE, 2, 0, 0}, {OC_PROGRESS_THREAD, 4, 0, 0},
    /* The tests' own progress: a yield, or with helping a pass of their own
     * taken in turns with the thread and the peers' waits. */
    {OC_PROGRESS_THREAD, 2, 0, 1}, {OC_PROGRESS_THREAD, 3, 200, 1},
    {OC_PROGRESS_INLINE, 2, 0, 1},
};

int main(void)
{
    const struct CMUnitTest tests[] = {
        {"thread progress, 1 rank", test_windows, NULL, NULL, &cases[0]},
        {"thread progress, 2 ranks", test_windows, NULL, NULL, &cases[1]},
        {"thread progress, 3 ranks", test_windows, NULL, NULL, &cases[2]},
        {"inline progress, 2 ranks", test_windows, NULL, NULL, &cases[3]},
        {"thread progress, 4 ranks (halo 2x2x1)", test_windows, NULL, NULL, &cases[4]},
        {"thread progress, 2 ranks, polling tests", test_windows, NULL, NULL, &cases[5]},
        {"thread progress, 3 ranks, helping waiters, polling tests", test_windows, NULL, NULL,
         &cases[6]},
        {"inline progress, 2 ranks, polling tests", test_windows, NULL, NULL, &cases[7]},
        cmocka_unit_test(test_late_put),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
