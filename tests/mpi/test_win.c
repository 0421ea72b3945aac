/*
 * One-sided windows and notified puts, in thread and inline progress mode:
 *  - window sizes differ per rank (0 included) and oc_win_size reports them;
 *    the memory comes zero-filled;
 *  - puts land where they should and nowhere else: to every rank including
 *    self, zero-length ones, ones that end at the window's last byte;
 *  - oc_win_flush + MPI_Barrier makes the data visible at the target, and the
 *    source may be overwritten after the flush (over loopback in inline
 *    mode, where a target moves emulated puts only inside its offcoll calls,
 *    the barrier is an offcoll alltoall);
 *  - notification counts are exact: 200 puts of mixed sizes from every other
 *    rank to one target, spread over 3 counters, waited for in pieces and by
 *    polling; the data is there once the notifications are, with no barrier;
 *    one more notification is never there (OC_INPROGRESS), not even after
 *    every origin has flushed;
 *  - two windows in flight at once keep their data and counters apart;
 *  - oc_win_peer_ptr gives this rank's own base, and for a peer either
 *    OC_ERR_UNAVAILABLE or an address where this process reads what the peer
 *    wrote and writes what the peer then reads; with UCX over shared memory
 *    (the default here) every rank is mapped, with OC_INTRANODE=loopback or
 *    verbs none but self; bad arguments are refused, naming them;
 *  - bad arguments are refused with a message naming the problem, an
 *    out-of-bounds put writes nothing and notifies nothing; a creation
 *    refused on one rank fails on every rank at once;
 *  - a wait for more notifications than can come times out (OC_TIMEOUT_S =
 *    0.5 s in a dedicated context), says how many arrived and names the ranks
 *    that sent none, and consumes nothing.
 */
#include <sched.h>
#include <stdint.h>
#include <string.h>

#include "mpi_check.h"
#include "offcoll_mpi.h"

static int rank, nprocs;
static const char *mode_name = "thread";

/* Whether msg holds v as a whole decimal number (not part of a longer one). */
static int has_number(const char *msg, unsigned long long v)
{
    char want[32];
    size_t len;
    const char *p = msg;
    snprintf(want, sizeof(want), "%llu", v);
    len = strlen(want);
    while ((p = strstr(p, want)) != NULL) {
        int before = p > msg && p[-1] >= '0' && p[-1] <= '9';
        int after = p[len] >= '0' && p[len] <= '9';
        if (!before && !after)
            return 1;
        p++;
    }
    return 0;
}

/* Compares a window with what it should hold; reports the first difference. */
static void check_bytes(const unsigned char *got, const unsigned char *want, size_t n,
                        const char *what)
{
    size_t i;
    for (i = 0; i < n; i++)
        if (got[i] != want[i])
            break;
    CHECK(i == n, "[%s] %s: byte %zu of %zu is 0x%02x, expected 0x%02x", mode_name, what, i, n,
          i < n ? got[i] : 0, i < n ? want[i] : 0);
}

/* Sizes differ per rank, and are not multiples of anything in particular. */
/* oc_win_size as a value for the checks: (size_t)-1 where the call fails. */
static size_t win_size(const oc_win_t *win, int target)
{
    size_t size;
    oc_status_t st = oc_win_size(win, target, &size);
    CHECK(st == OC_OK, "oc_win_size(win, %d) -> %s (%s)", target, oc_status_string(st),
          oc_last_error());
    return st == OC_OK ? size : (size_t)-1;
}

static size_t win_bytes(int r)
{
    return 4096 + 520 * (size_t)r + 3 * (size_t)r;
}

/* Every rank puts into every rank (itself too): a block in its own slot, a
 * zero-length put, the last byte, a block ending one byte before the end; a
 * zero-length notified put counts. Everything else stays zero. */
static void sizes_and_data(oc_team_t *team)
{
    const size_t slot = 256;
    size_t mysize = win_bytes(rank), sz;
    unsigned char *base = NULL, *want, *src;
    oc_win_t *win = NULL;
    int t, r;
    size_t i;

    CHECK_OC(oc_win_create(team, mysize, 4, (void **)&base, &win));
    if (win == NULL || base == NULL) {
        CHECK(0, "[%s] no window", mode_name);
        return;
    }
    for (i = 0; i < mysize && base[i] == 0; i++)
        ;
    CHECK(i == mysize, "[%s] window memory is not zero-filled (byte %zu)", mode_name, i);
    for (r = 0; r < nprocs; r++)
        CHECK((sz = win_size(win, r)) == win_bytes(r),
              "[%s] oc_win_size(win, %d) = %zu, expected %zu", mode_name, r, sz, win_bytes(r));
    CHECK_ERR(oc_win_size(win, -1, &sz), OC_ERR_INVALID_ARG, "target=-1");
    CHECK_ERR(oc_win_size(win, nprocs, &sz), OC_ERR_INVALID_ARG, "is not a rank");
    CHECK_ERR(oc_win_size(NULL, 0, &sz), OC_ERR_INVALID_ARG, "win is NULL");
    CHECK_ERR(oc_win_size(win, 0, NULL), OC_ERR_INVALID_ARG, "size is NULL");

    MPI_Barrier(MPI_COMM_WORLD); /* zero-fill checked everywhere before the puts */

    /* sources: one buffer per target, untouched until the flush */
    src = malloc((size_t)nprocs * slot);
    for (t = 0; t < nprocs; t++)
        for (i = 0; i < slot; i++)
            src[(size_t)t * slot + i] = check_pattern(rank, t, i, 1);
    for (t = 0; t < nprocs; t++) {
        unsigned char *s = src + (size_t)t * slot;
        sz = win_bytes(t);
        CHECK_OC(oc_put(win, t, (size_t)rank * slot, s, 100 + (size_t)rank + (size_t)t));
        CHECK_OC(oc_put(win, t, (size_t)rank * slot + 200, s, 0));
        CHECK_OC(oc_put(win, t, (size_t)rank * slot + 201, NULL, 0));
        CHECK_OC(oc_put(win, t, sz, s, 0)); /* empty, at the very end */
        if (t == (rank + 1) % nprocs)
            CHECK_OC(oc_put(win, t, sz - 1, s + 7, 1)); /* the last byte */
        if (t == rank)
            CHECK_OC(oc_put(win, t, sz - 41, s + 50, 40)); /* ends just before it */
        if (t == (rank + 1) % nprocs)
            CHECK_OC(oc_put_notify(win, t, (size_t)rank * slot + 210, s, 0, 3));
    }
    /* the zero-length notified put from the left neighbour counts as one */
    CHECK_OC(oc_notify_wait(win, 3, 1));
    CHECK(oc_notify_test(win, 3, 1) == OC_INPROGRESS, "[%s] a second notification on counter 3",
          mode_name);
    CHECK_OC(oc_notify_wait(win, 3, 0)); /* nothing to wait for */
    CHECK_OC(oc_win_flush(win));
    CHECK_OC(oc_win_flush(win)); /* nothing outstanding */
    memset(src, 0xEE, (size_t)nprocs * slot); /* may be reused after the flush */
    MPI_Barrier(MPI_COMM_WORLD);

    want = calloc(mysize, 1);
    for (r = 0; r < nprocs; r++)
        for (i = 0; i < 100 + (size_t)r + (size_t)rank; i++)
            want[(size_t)r * slot + i] = check_pattern(r, rank, i, 1);
    want[mysize - 1] = check_pattern((rank + nprocs - 1) % nprocs, rank, 7, 1);
    for (i = 0; i < 40; i++)
        want[mysize - 41 + i] = check_pattern(rank, rank, 50 + i, 1);
    check_bytes(base, want, mysize, "window after puts from every rank");
    for (r = 0; r < 3; r++)
        CHECK(oc_notify_test(win, (unsigned)r, 1) == OC_INPROGRESS,
              "[%s] counter %d was notified by plain puts", mode_name, r);
    CHECK(oc_notify_test(win, 3, 1) == OC_INPROGRESS, "[%s] late notification on counter 3",
          mode_name);
    CHECK_OC(oc_win_free(win));
    free(want);
    free(src);
}

/* What the backend chose for each peer, read from oc_team_print_paths: how
 * many peers' windows are mapped here (a lane through memory UCX can map:
 * sysv, posix, xpmem), and whether a peer is reached through TCP only, where
 * UCX emulates puts: a put then moves only while the target's engine
 * progresses, in inline mode only inside its offcoll calls. */
static void path_kinds(oc_team_t *team, int *mapped, int *tcp)
{
    char *text = NULL, *line, *save = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);

    *mapped = *tcp = 0;
    if (f == NULL)
        return;
    oc_team_print_paths(team, f);
    fclose(f);
    for (line = strtok_r(text, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
        char *tls = strstr(line, ": "), *end = strstr(line, " (OC_INTRANODE");
        if (strncmp(line, "rank ", 5) != 0 || tls == NULL || end == NULL)
            continue;
        *end = '\0';
        if (strstr(tls, "sysv/") || strstr(tls, "posix/") || strstr(tls, "xpmem/"))
            ++*mapped;
        else if (strstr(tls, "tcp/"))
            *tcp = 1;
    }
    free(text);
}

static int emulated_puts(oc_team_t *team)
{
    int mapped, tcp;
    path_kinds(team, &mapped, &tcp);
    return tcp;
}

/* The barrier after a flush. Where an inline target moves emulated puts only
 * inside its offcoll calls, one that has flushed its own puts must wait in
 * one (a one-byte alltoall) for the others' flushes to complete; elsewhere
 * MPI_Barrier, no offcoll call, shows that the flush alone completed them. */
static void flush_barrier(oc_team_t *team, int inl)
{
    unsigned char *s, *r;
    oc_request_t *req = NULL;

    if (!inl || !emulated_puts(team)) {
        MPI_Barrier(MPI_COMM_WORLD);
        return;
    }
    s = calloc((size_t)nprocs, 1);
    r = calloc((size_t)nprocs, 1);
    CHECK_OC(oc_ialltoall(team, s, r, 1, &req));
    CHECK_OC(oc_wait(req));
    CHECK_OC(oc_request_free(req));
    free(s);
    free(r);
}

/* Flush semantics: large and small puts to both ring neighbours, flush,
 * overwrite the sources, barrier: the target holds the old data. */
static void flush_visibility(oc_team_t *team, int inl)
{
    const size_t big = 300 * 1024, small = 24;
    size_t mysize = 2 * big + 64 + (size_t)rank;
    unsigned char *base = NULL, *s1, *s2, *want;
    oc_win_t *win = NULL;
    int right = (rank + 1) % nprocs, left = (rank + nprocs - 1) % nprocs, round;
    size_t i;

    CHECK_OC(oc_win_create(team, mysize, 0, (void **)&base, &win));
    if (win == NULL || base == NULL)
        return;
    s1 = malloc(big);
    s2 = malloc(small);
    want = malloc(mysize);
    for (round = 0; round < 3; round++) {
        for (i = 0; i < big; i++)
            s1[i] = check_pattern(rank, right, i, 10 + round);
        for (i = 0; i < small; i++)
            s2[i] = check_pattern(rank, left, i, 20 + round);
        /* the right neighbour gets the big block at 0, the left one the small
         * block at 2 * big (with 2 ranks both are the same rank; 1: itself) */
        CHECK_OC(oc_put(win, right, 0, s1, big));
        CHECK_OC(oc_put(win, left, 2 * big, s2, small));
        CHECK_OC(oc_win_flush(win));
        memset(s1, 0xEE, big);
        memset(s2, 0xEE, small);
        flush_barrier(team, inl);
        memset(want, 0, mysize);
        for (i = 0; i < big; i++)
            want[i] = check_pattern(left, rank, i, 10 + round);
        for (i = 0; i < small; i++)
            want[2 * big + i] = check_pattern(right, rank, i, 20 + round);
        check_bytes(base, want, mysize, "window after oc_win_flush + MPI_Barrier");
        MPI_Barrier(MPI_COMM_WORLD); /* checked before the next round overwrites it */
    }
    CHECK_OC(oc_win_free(win));
    free(s1);
    free(s2);
    free(want);
}

/* 200 notified puts of mixed sizes from every other rank (from itself on one
 * rank) into one target, on 3 counters. */
#define NPUTS 200
static size_t put_len(int k)
{
    static const size_t lens[] = {65536, 0, 1, 1000, 7, 8192, 64, 33000, 3};
    return lens[(k * 7) % (int)(sizeof(lens) / sizeof(lens[0]))];
}

static void exact_counts(oc_team_t *team)
{
    const int target = nprocs - 1;
    int norigins = nprocs > 1 ? nprocs - 1 : 1, k, c, o;
    size_t off[NPUTS + 1], per_origin, mysize, sz;
    uint32_t expect[3] = {0, 0, 0};
    unsigned char *base = NULL, *src = NULL, *want;
    oc_win_t *win = NULL;
    double t0;

    off[0] = 0;
    for (k = 0; k < NPUTS; k++)
        off[k + 1] = off[k] + put_len(k);
    per_origin = off[NPUTS];
    mysize = rank == target ? per_origin * (size_t)norigins : 0;
    CHECK_OC(oc_win_create(team, mysize, 3, (void **)&base, &win));
    if (win == NULL)
        return;
    CHECK((sz = win_size(win, target)) == per_origin * (size_t)norigins,
          "[%s] target's window size %zu", mode_name, sz);
    if (nprocs > 1)
        CHECK((sz = win_size(win, 0)) == 0, "[%s] an empty window has size %zu", mode_name, sz);
    for (k = 0; k < NPUTS; k++)
        expect[k % 3] += (uint32_t)norigins;

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank != target || nprocs == 1) {
        /* origin index: the target is the last rank, so origins are 0..n-2 */
        int oi = nprocs > 1 ? rank : 0;
        src = malloc(per_origin ? per_origin : 1);
        for (size_t i = 0; i < per_origin; i++)
            src[i] = check_pattern(rank, target, i, 30);
        /* the big ones first, so that the small ones behind them can overtake */
        for (k = 0; k < NPUTS; k++)
            CHECK_OC(oc_put_notify(win, target, (size_t)oi * per_origin + off[k], src + off[k],
                                   put_len(k), (unsigned)(k % 3)));
    }
    if (rank == target) {
        t0 = MPI_Wtime();
        /* counter 0: one, then the rest; counter 1: polled; counter 2: all at once */
        CHECK_OC(oc_notify_wait(win, 0, 1));
        CHECK_OC(oc_notify_wait(win, 0, expect[0] - 1));
        for (;;) {
            oc_status_t st = oc_notify_test(win, 1, expect[1]);
            if (st != OC_INPROGRESS) {
                CHECK(st == OC_OK, "[%s] oc_notify_test(counter 1, %u) -> %s (%s)", mode_name,
                      expect[1], oc_status_string(st), oc_last_error());
                break;
            }
            if (MPI_Wtime() - t0 > 30) {
                CHECK(0, "[%s] %u notifications on counter 1 never came", mode_name, expect[1]);
                break;
            }
            sched_yield();
        }
        CHECK_OC(oc_notify_wait(win, 2, expect[2]));
        /* notified means the data is there: no flush or barrier needed */
        want = malloc(mysize ? mysize : 1);
        for (o = 0; o < norigins; o++)
            for (size_t i = 0; i < per_origin; i++)
                want[(size_t)o * per_origin + i] = check_pattern(nprocs > 1 ? o : 0, target, i, 30);
        check_bytes(base, want, mysize, "target window once all notifications came");
        free(want);
        for (c = 0; c < 3; c++)
            CHECK(oc_notify_test(win, (unsigned)c, 1) == OC_INPROGRESS,
                  "[%s] counter %d: more than the %u notifications sent", mode_name, c, expect[c]);
    }
    if (src != NULL)
        CHECK_OC(oc_win_flush(win));
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == target)
        for (c = 0; c < 3; c++)
            CHECK(oc_notify_test(win, (unsigned)c, 1) == OC_INPROGRESS,
                  "[%s] counter %d: a notification after every origin flushed", mode_name, c);
    CHECK_OC(oc_win_free(win));
    free(src);
}

/* Two windows in flight at once: interleaved notified puts to the right
 * neighbour on both, waited for in rank-dependent order. */
static void two_windows(oc_team_t *team)
{
    const size_t asz = 4096 + (size_t)rank, bsz = 8192 + 2 * (size_t)rank;
    unsigned char *abase = NULL, *bbase = NULL, *sa, *sb, *want;
    oc_win_t *a = NULL, *b = NULL;
    int right = (rank + 1) % nprocs, left = (rank + nprocs - 1) % nprocs, k;
    size_t i;

    CHECK_OC(oc_win_create(team, asz, 2, (void **)&abase, &a));
    CHECK_OC(oc_win_create(team, bsz, 1, (void **)&bbase, &b));
    if (a == NULL || b == NULL)
        return;
    sa = malloc(3 * 50);
    sb = malloc(5 * 300);
    for (i = 0; i < 150; i++)
        sa[i] = check_pattern(rank, right, i, 40);
    for (i = 0; i < 1500; i++)
        sb[i] = check_pattern(rank, right, i, 41);
    for (k = 0; k < 5; k++) {
        if (k < 3)
            CHECK_OC(oc_put_notify(a, right, (size_t)k * 100, sa + k * 50, 50, 1));
        CHECK_OC(oc_put_notify(b, right, (size_t)k * 1000, sb + k * 300, 300, 0));
    }
    if (rank % 2) {
        CHECK_OC(oc_notify_wait(b, 0, 5));
        CHECK_OC(oc_notify_wait(a, 1, 3));
    } else {
        CHECK_OC(oc_notify_wait(a, 1, 3));
        CHECK_OC(oc_notify_wait(b, 0, 5));
    }
    CHECK(oc_notify_test(a, 0, 1) == OC_INPROGRESS, "[%s] window a, counter 0 notified", mode_name);
    CHECK(oc_notify_test(a, 1, 1) == OC_INPROGRESS, "[%s] window a, counter 1: more than 3",
          mode_name);
    CHECK(oc_notify_test(b, 0, 1) == OC_INPROGRESS, "[%s] window b, counter 0: more than 5",
          mode_name);
    want = calloc(bsz, 1);
    for (k = 0; k < 3; k++)
        for (i = 0; i < 50; i++)
            want[(size_t)k * 100 + i] = check_pattern(left, rank, (size_t)k * 50 + i, 40);
    check_bytes(abase, want, asz, "window a");
    memset(want, 0, bsz);
    for (k = 0; k < 5; k++)
        for (i = 0; i < 300; i++)
            want[(size_t)k * 1000 + i] = check_pattern(left, rank, (size_t)k * 300 + i, 41);
    check_bytes(bbase, want, bsz, "window b");
    CHECK_OC(oc_win_flush(b)); /* a's puts may still be outstanding here */
    CHECK_OC(oc_win_flush(a));
    CHECK_OC(oc_win_free(a));
    CHECK_OC(oc_win_free(b));
    free(sa);
    free(sb);
    free(want);
}

/* oc_win_peer_ptr: own base, the peers mapped here read and written through
 * it, the others OC_ERR_UNAVAILABLE; bad arguments refused. */
static void peer_pointers(oc_team_t *team)
{
    unsigned char *base = NULL, *p = NULL;
    oc_win_t *win = NULL;
    int r, mapped = 0, i, expect, tcp;

    path_kinds(team, &expect, &tcp);
    expect++; /* self */
    CHECK_OC(oc_win_create(team, 64, 0, (void **)&base, &win));
    if (win == NULL)
        return;
    CHECK_OC(oc_win_peer_ptr(win, rank, (void **)&p));
    CHECK(p == base, "oc_win_peer_ptr(own rank) is the window's base");
    p = base;
    CHECK_ERR(oc_win_peer_ptr(NULL, 0, (void **)&p), OC_ERR_INVALID_ARG, "win is NULL");
    CHECK(p == NULL, "a refused oc_win_peer_ptr sets *ptr to NULL");
    CHECK_ERR(oc_win_peer_ptr(win, -1, (void **)&p), OC_ERR_INVALID_ARG, "target=-1");
    CHECK_ERR(oc_win_peer_ptr(win, nprocs, (void **)&p), OC_ERR_INVALID_ARG, "is not a rank");
    CHECK_ERR(oc_win_peer_ptr(win, 0, NULL), OC_ERR_INVALID_ARG, "ptr is NULL");
    memset(base, 0x40 + rank, 64);
    MPI_Barrier(MPI_COMM_WORLD);
    for (r = 0; r < nprocs; r++) {
        oc_status_t st = oc_win_peer_ptr(win, r, (void **)&p);
        CHECK(st == OC_OK || (st == OC_ERR_UNAVAILABLE && p == NULL &&
                              strstr(oc_last_error(), "not mapped") != NULL),
              "oc_win_peer_ptr(%d) -> %s (%s)", r, oc_status_string(st), oc_last_error());
        if (st != OC_OK)
            continue;
        mapped++;
        for (i = 0; i < 32; i++)
            CHECK(p[i] == 0x40 + r, "rank %d's window byte %d read here: %#x", r, i, p[i]);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    /* the right neighbour's upper half takes this rank's mark */
    if (oc_win_peer_ptr(win, (rank + 1) % nprocs, (void **)&p) == OC_OK)
        memset(p + 32, 0x80 + rank, 32);
    MPI_Barrier(MPI_COMM_WORLD);
    if (expect == nprocs) {
        int left = (rank + nprocs - 1) % nprocs;
        for (i = 32; i < 64; i++)
            CHECK(base[i] == 0x80 + left, "byte %d written by rank %d through its pointer: %#x",
                  i, left, base[i]);
    }
    CHECK(mapped == expect, "%d of %d ranks' windows mapped here (%d expected from the "
          "transports: self and the peers reached through sysv, posix or xpmem)", mapped,
          nprocs, expect);
    CHECK_OC(oc_win_free(win));
}

/* Bad arguments; out-of-bounds puts write and notify nothing. */
static void errors(oc_team_t *team)
{
    const int t = (rank + 1) % nprocs;
    const size_t tsz = win_bytes(t), mysize = win_bytes(rank);
    size_t sz;
    unsigned char src[64], *base = NULL, *zbase = NULL, *mbase = NULL;
    unsigned char *want;
    oc_win_t *win = NULL, *zwin = NULL, *mwin = NULL, *nwin = NULL;
    void *vb = NULL;
    char needle[64];

    memset(src, 0x5A, sizeof(src));
    /* creation */
    CHECK_ERR(oc_win_create(NULL, 64, 1, &vb, &nwin), OC_ERR_INVALID_ARG, "team is NULL");
    CHECK_ERR(oc_win_create(team, 64, OC_WIN_MAX_COUNTERS + 1, &vb, &nwin), OC_ERR_INVALID_ARG,
              "ncounters");
    CHECK_ERR(oc_win_create(team, 64, 1, NULL, &nwin), OC_ERR_INVALID_ARG, "base is NULL");
    CHECK_ERR(oc_win_create(team, 64, 1, &vb, NULL), OC_ERR_INVALID_ARG, "win is NULL");
    CHECK(nwin == NULL, "[%s] a refused oc_win_create leaves *win NULL", mode_name);
    /* more than the host's memory: refused before the backend tries (UCX
       wrote gigabytes of a shared-memory file for SIZE_MAX) */
    CHECK_ERR(oc_win_create(team, SIZE_MAX, 1, &vb, &nwin), OC_ERR_NO_MEMORY,
              "more than this host's memory");
    /* refused on the last rank only: every rank fails at once, none waits for it */
    snprintf(needle, sizeof(needle), "oc_win_create: failed on rank %d", nprocs - 1);
    CHECK_ERR(oc_win_create(team, 64, rank == nprocs - 1 ? OC_WIN_MAX_COUNTERS + 1 : 1, &vb,
                            &nwin),
              rank == nprocs - 1 ? OC_ERR_INVALID_ARG : OC_ERR_MISMATCH,
              rank == nprocs - 1 ? "ncounters" : needle);
    CHECK(nwin == NULL && vb == NULL, "[%s] a failed oc_win_create leaves *win and *base NULL",
          mode_name);

    CHECK_OC(oc_win_create(team, mysize, 2, (void **)&base, &win));
    CHECK_OC(oc_win_create(team, 0, 0, (void **)&zbase, &zwin)); /* empty, no counters */
    CHECK_OC(oc_win_create(team, 8, OC_WIN_MAX_COUNTERS, (void **)&mbase, &mwin));
    if (win == NULL || zwin == NULL || mwin == NULL)
        return;

    /* NULL window */
    CHECK_ERR(oc_put(NULL, t, 0, src, 8), OC_ERR_INVALID_ARG, "win is NULL");
    CHECK_ERR(oc_put_notify(NULL, t, 0, src, 8, 0), OC_ERR_INVALID_ARG, "win is NULL");
    CHECK_ERR(oc_win_flush(NULL), OC_ERR_INVALID_ARG, "win is NULL");
    CHECK_ERR(oc_notify_wait(NULL, 0, 1), OC_ERR_INVALID_ARG, "win is NULL");
    CHECK_ERR(oc_notify_test(NULL, 0, 1), OC_ERR_INVALID_ARG, "win is NULL");
    CHECK_ERR(oc_win_free(NULL), OC_ERR_INVALID_ARG, "win is NULL");
    /* wrong target */
    CHECK_ERR(oc_put(win, -1, 0, src, 8), OC_ERR_INVALID_ARG, "target");
    CHECK_ERR(oc_put(win, nprocs, 0, src, 8), OC_ERR_INVALID_ARG, "target");
    CHECK_ERR(oc_put_notify(win, -1, 0, src, 8, 0), OC_ERR_INVALID_ARG, "target");
    CHECK_ERR(oc_put_notify(win, nprocs, 0, src, 8, 0), OC_ERR_INVALID_ARG, "target");
    /* counter out of range */
    CHECK_ERR(oc_put_notify(win, t, 0, src, 8, 2), OC_ERR_INVALID_ARG, "counter");
    CHECK_ERR(oc_put_notify(win, t, 0, src, 8, UINT32_MAX), OC_ERR_INVALID_ARG, "counter");
    CHECK_ERR(oc_notify_wait(win, 2, 1), OC_ERR_INVALID_ARG, "counter");
    CHECK_ERR(oc_notify_test(win, 2, 1), OC_ERR_INVALID_ARG, "counter");
    CHECK_ERR(oc_put_notify(zwin, t, 0, src, 0, 0), OC_ERR_INVALID_ARG, "counter");
    CHECK_ERR(oc_notify_wait(zwin, 0, 1), OC_ERR_INVALID_ARG, "counter");
    CHECK_ERR(oc_put_notify(mwin, t, 0, src, 8, OC_WIN_MAX_COUNTERS), OC_ERR_INVALID_ARG,
              "counter");
    /* NULL source with data to send */
    CHECK_ERR(oc_put(win, t, 0, NULL, 8), OC_ERR_INVALID_ARG, "src is NULL");
    CHECK_ERR(oc_put_notify(win, t, 0, NULL, 8, 0), OC_ERR_INVALID_ARG, "src is NULL");
    /* out of bounds: the message names the offset and the target's size */
    CHECK_ERR(oc_put(win, t, tsz - 8, src, 9), OC_ERR_OUT_OF_BOUNDS, "offset");
    CHECK(has_number(oc_last_error(), tsz), "[%s] message does not give the window size %zu: %s",
          mode_name, tsz, oc_last_error());
    CHECK_ERR(oc_put(win, t, tsz, src, 1), OC_ERR_OUT_OF_BOUNDS, "offset");
    CHECK_ERR(oc_put(win, t, tsz + 1, src, 0), OC_ERR_OUT_OF_BOUNDS, "offset");
    CHECK_ERR(oc_put(win, t, 0, src, tsz + 1), OC_ERR_OUT_OF_BOUNDS, "len");
    CHECK_ERR(oc_put(win, t, SIZE_MAX - 2, src, 8), OC_ERR_OUT_OF_BOUNDS, "offset");
    CHECK_ERR(oc_put(win, t, 16, src, SIZE_MAX - 8), OC_ERR_OUT_OF_BOUNDS, "len");
    CHECK_ERR(oc_put_notify(win, t, tsz - 1, src, 2, 0), OC_ERR_OUT_OF_BOUNDS, "offset");
    CHECK_ERR(oc_put_notify(win, t, SIZE_MAX, src, 1, 1), OC_ERR_OUT_OF_BOUNDS, "offset");
    CHECK_ERR(oc_put(zwin, t, 0, src, 1), OC_ERR_OUT_OF_BOUNDS, "offset");
    CHECK_ERR(oc_put(mwin, t, 1, src, 8), OC_ERR_OUT_OF_BOUNDS, "offset");
    CHECK((sz = win_size(zwin, t)) == 0, "[%s] empty window of rank %d: size %zu", mode_name, t,
          sz);
    CHECK_OC(oc_put(zwin, t, 0, src, 0)); /* the empty range of an empty window */
    /* the last counter of a window with the most counters works */
    CHECK_OC(oc_put_notify(mwin, t, 0, src, 8, OC_WIN_MAX_COUNTERS - 1));
    CHECK_OC(oc_notify_wait(mwin, OC_WIN_MAX_COUNTERS - 1, 1));

    /* refused puts were never started: the flush has nothing to report */
    CHECK_OC(oc_win_flush(win));
    CHECK_OC(oc_win_flush(zwin));
    CHECK_OC(oc_win_flush(mwin));
    MPI_Barrier(MPI_COMM_WORLD);
    want = calloc(mysize, 1);
    check_bytes(base, want, mysize, "window after refused puts (nothing may be written)");
    free(want);
    CHECK(oc_notify_test(win, 0, 1) == OC_INPROGRESS && oc_notify_test(win, 1, 1) == OC_INPROGRESS,
          "[%s] a refused oc_put_notify notified", mode_name);
    for (int i = 0; i < 8; i++)
        CHECK(mbase[i] == 0x5A, "[%s] byte %d of the 4096-counter window: 0x%02x", mode_name, i,
              mbase[i]);
    CHECK_OC(oc_win_free(mwin));
    CHECK_OC(oc_win_free(zwin));
    CHECK_OC(oc_win_free(win));
}

/* More notifications than can ever come: ranks below half send two each to
 * rank 0 (itself included), the others none; rank 0 waits for one more. */
static void timeout_case(oc_progress_mode_t mode)
{
    oc_context_t *ctx = NULL;
    oc_team_t *team = NULL;
    oc_win_t *win = NULL;
    void *base = NULL;
    unsigned char src[16];
    int nsenders = (nprocs + 1) / 2, r;
    uint32_t arrived = 2 * (uint32_t)nsenders;
    double t0, waited;
    oc_status_t st;

    memset(src, 1, sizeof(src));
    ctx = check_open(mode, 0.5, &team);
    CHECK_OC(oc_win_create(team, 64, 1, &base, &win));
    if (rank < nsenders) {
        CHECK_OC(oc_put_notify(win, 0, 16 + (size_t)rank, src, 1, 0));
        CHECK_OC(oc_put_notify(win, 0, 32 + (size_t)rank, src, 1, 0));
        CHECK_OC(oc_win_flush(win));
    }
    if (rank == 0) {
        t0 = MPI_Wtime();
        st = oc_notify_wait(win, 0, arrived + 1);
        waited = MPI_Wtime() - t0;
        CHECK(st == OC_ERR_TIMEOUT, "[%s] oc_notify_wait for %u of %u -> %s (%s)", mode_name,
              arrived + 1, arrived, oc_status_string(st), oc_last_error());
        CHECK(waited >= 0.5 && waited < 5, "[%s] gave up after %.2f s with OC_TIMEOUT_S=0.5",
              mode_name, waited);
        CHECK(strstr(oc_last_error(), "oc_notify_wait") != NULL,
              "[%s] timeout message does not name the call: %s", mode_name, oc_last_error());
        CHECK(has_number(oc_last_error(), arrived),
              "[%s] timeout message does not say that %u arrived: %s", mode_name, arrived,
              oc_last_error());
        if (nsenders < nprocs)
            CHECK(strstr(oc_last_error(), "none") != NULL,
                  "[%s] timeout message does not say which ranks sent none: %s", mode_name,
                  oc_last_error());
        for (r = nsenders; r < nprocs; r++)
            CHECK(has_number(oc_last_error(), (unsigned long long)r),
                  "[%s] timeout message does not name silent rank %d: %s", mode_name, r,
                  oc_last_error());
        printf("rank 0 [%s]: %s\n", mode_name, oc_last_error());
        /* the failed wait consumed nothing */
        CHECK_OC(oc_notify_wait(win, 0, arrived));
        CHECK(oc_notify_test(win, 0, 1) == OC_INPROGRESS, "[%s] more than %u notifications",
              mode_name, arrived);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_OC(oc_win_free(win));
    CHECK_OC(oc_team_free(team));
    CHECK_OC(oc_finalize(ctx));
}

int main(int argc, char **argv)
{
    oc_context_t *ctx = NULL;
    oc_team_t *team = NULL;
    int m;
    double t0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    for (m = 0; m < 2; m++) {
        oc_progress_mode_t mode = m ? OC_PROGRESS_INLINE : OC_PROGRESS_THREAD;
        t0 = MPI_Wtime();
        mode_name = m ? "inline" : "thread";
        check_tag = mode_name;
        /* a 30 s timeout: a lost notification fails the check instead of hanging */
        ctx = check_open(mode, 30, &team);
        sizes_and_data(team);
        flush_visibility(team, m);
        exact_counts(team);
        two_windows(team);
        peer_pointers(team);
        errors(team);
        CHECK_OC(oc_team_free(team));
        CHECK_OC(oc_finalize(ctx));
        timeout_case(mode);
        if (rank == 0)
            printf("test_win [%s]: %.2f s\n", mode_name, MPI_Wtime() - t0);
    }
    return check_finish("test_win");
}
