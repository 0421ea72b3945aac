/*
 * Bad input returns an error status and a message naming the argument, never
 * a crash: NULL buffers with non-zero size, size overflow, NULL team, freeing
 * an active request, starting an active persistent request, displacements
 * outside the buffer, overlapping receive blocks or send and receive
 * buffers, restarting a one-shot request, freeing a team that still has a
 * request (what a halo plan or a put request makes for itself not counted
 * as the application's), counts that disagree between sender and receiver
 * (a rank's block to itself too, refused at the call; also where the
 * schedule is cut into one list per stage, and the mismatch in an early one
 * must not keep the rank's later messages from its peers); a team creation
 * in which one member has no context fails on every member instead of
 * leaving the others waiting; a set-up on one member against collectives on
 * the others fails on every member, none taking the set-up's messages as
 * data.
 */
#include <stdint.h>
#include <string.h>

#include "mpi_check.h"
#include "offcoll_mpi.h"

static int rank, nprocs;

static void bad_arguments(oc_team_t *team)
{
    size_t n = (size_t)nprocs;
    char *s = calloc(n, 64), *r = calloc(n, 64);
    size_t *c = calloc(n, sizeof(size_t)), *d = calloc(n, sizeof(size_t));
    size_t *rd = calloc(n, sizeof(size_t));
    oc_request_t *req = NULL;

    for (size_t i = 0; i < n; i++) {
        c[i] = 16;
        d[i] = i * 16;
    }
    CHECK_ERR(oc_ialltoall(NULL, s, r, 8, &req), OC_ERR_INVALID_ARG, "team is NULL");
    CHECK_ERR(oc_alltoall_init(NULL, s, r, 8, &req), OC_ERR_INVALID_ARG, "team is NULL");
    CHECK_ERR(oc_ialltoallv(NULL, s, 64 * n, c, d, r, 64 * n, c, d, &req), OC_ERR_INVALID_ARG,
              "team is NULL");
    CHECK_ERR(oc_alltoallv_init(NULL, s, 64 * n, c, d, r, 64 * n, c, d, &req),
              OC_ERR_INVALID_ARG, "team is NULL");
    CHECK_ERR(oc_ialltoall(team, NULL, r, 8, &req), OC_ERR_INVALID_ARG, "sbuf is NULL");
    CHECK_ERR(oc_ialltoall(team, s, NULL, 8, &req), OC_ERR_INVALID_ARG, "rbuf is NULL");
    CHECK_ERR(oc_ialltoall(team, s, r, 8, NULL), OC_ERR_INVALID_ARG, "req is NULL");
    /* persistent set-ups refuse on every rank, after agreeing on it */
    CHECK_ERR(oc_alltoall_init(team, NULL, r, 8, &req), OC_ERR_INVALID_ARG, "sbuf is NULL");
    CHECK_ERR(oc_alltoallv_init(team, s, 64 * n, c, d, NULL, 64 * n, c, d, &req),
              OC_ERR_INVALID_ARG, "rbuf is NULL");
    if (nprocs > 1) { /* one rank: block_bytes * 1 cannot overflow */
        CHECK_ERR(oc_ialltoall(team, s, r, SIZE_MAX / 2 + 1, &req), OC_ERR_INVALID_ARG,
                  "overflows");
        CHECK_ERR(oc_alltoall_init(team, s, r, SIZE_MAX / 2 + 1, &req), OC_ERR_INVALID_ARG,
                  "overflows");
    }
    CHECK_ERR(oc_ialltoall(team, s, s + 4, 8, &req), OC_ERR_INVALID_ARG, "overlap");
    CHECK_ERR(oc_start(NULL), OC_ERR_INVALID_ARG, "req is NULL");
    CHECK_ERR(oc_wait(NULL), OC_ERR_INVALID_ARG, "req is NULL");
    CHECK_ERR(oc_test(NULL), OC_ERR_INVALID_ARG, "req is NULL");
    CHECK_ERR(oc_request_free(NULL), OC_ERR_INVALID_ARG, "req is NULL");
    CHECK_ERR(oc_team_free(NULL), OC_ERR_INVALID_ARG, "team is NULL");

    /* alltoallv: each block checked against its buffer */
    CHECK_ERR(oc_ialltoallv(team, s, 64 * n, NULL, d, r, 64 * n, c, d, &req),
              OC_ERR_INVALID_ARG, "scounts is NULL");
    CHECK_ERR(oc_ialltoallv(team, s, 64 * n, c, d, r, 64 * n, c, NULL, &req),
              OC_ERR_INVALID_ARG, "rdispls is NULL");
    CHECK_ERR(oc_ialltoallv(team, NULL, 64 * n, c, d, r, 64 * n, c, d, &req),
              OC_ERR_INVALID_ARG, "sbuf is NULL");
    CHECK_ERR(oc_ialltoallv(team, s, 64 * n, c, d, NULL, 64 * n, c, d, &req),
              OC_ERR_INVALID_ARG, "rbuf is NULL");
    d[n - 1] = 64 * n - 8; /* the last block runs 8 bytes past the end */
    CHECK_ERR(oc_ialltoallv(team, s, 64 * n, c, d, r, 64 * n, c, d, &req),
              OC_ERR_INVALID_ARG, "sdispls[");
    d[n - 1] = SIZE_MAX - 4; /* displacement + count wraps around */
    CHECK_ERR(oc_ialltoallv(team, s, 64 * n, c, d, r, 64 * n, c, d, &req),
              OC_ERR_INVALID_ARG, "outside sbuf_bytes");
    d[n - 1] = (n - 1) * 16;
    /* receive displacements apart from the (valid) send ones */
    memcpy(rd, d, n * sizeof(size_t));
    rd[n - 1] = 64 * n - 8; /* the sends fit, the last receive block does not */
    CHECK_ERR(oc_ialltoallv(team, s, 64 * n, c, d, r, 64 * n, c, rd, &req), OC_ERR_INVALID_ARG,
              "rdispls[");
    CHECK_ERR(oc_alltoallv_init(team, s, 64 * n, c, d, r, 64 * n, c, rd, &req),
              OC_ERR_INVALID_ARG, "rdispls[");
    rd[n - 1] = d[n - 1];
    CHECK_ERR(oc_ialltoallv(team, s, 64 * n, c, d, s + 8, 64 * n - 8, c, d, &req),
              OC_ERR_INVALID_ARG, "sbuf and rbuf overlap");
    if (n > 1) {
        rd[1] = 8; /* overlaps rank 0's block at 0..16 */
        CHECK_ERR(oc_ialltoallv(team, s, 64 * n, c, d, r, 64 * n, c, rd, &req),
                  OC_ERR_INVALID_ARG, "overlap");
    }
    CHECK(req == NULL, "a refused call leaves *req NULL");
    /* a completed one-shot request cannot be restarted, and its team cannot
     * be freed before it is */
    CHECK_OC(oc_ialltoall(team, s, r, 8, &req));
    CHECK_OC(oc_wait(req));
    CHECK_ERR(oc_start(req), OC_ERR_INVALID_ARG, "not persistent");
    CHECK_ERR(oc_team_free(team), OC_ERR_BUSY, "1 request(s) and 0 window(s)");
    CHECK_OC(oc_request_free(req));
    free(s); free(r); free(c); free(d); free(rd);
}

/* Rank 0 starts while the others hold back: its request stays active. */
static void active_request(oc_team_t *team)
{
    size_t n = (size_t)nprocs;
    char *s = calloc(n, 8), *r = calloc(n, 8);
    oc_request_t *req = NULL, *once = NULL;

    if (nprocs < 2) {
        if (rank == 0)
            printf("test_errors: SKIP active-request checks: one rank completes at once\n");
        free(s);
        free(r);
        return;
    }
    CHECK_OC(oc_alltoall_init(team, s, r, 8, &req));
    if (rank == 0) {
        CHECK_OC(oc_start(req));
        CHECK_ERR(oc_start(req), OC_ERR_BUSY, "active");
        CHECK_ERR(oc_request_free(req), OC_ERR_BUSY, "active");
        CHECK(oc_test(req) == OC_INPROGRESS, "rank 0's request completes without its peers");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank != 0)
        CHECK_OC(oc_start(req));
    CHECK_OC(oc_wait(req));
    CHECK_OC(oc_request_free(req));
    /* a one-shot operation in flight cannot be freed either */
    if (rank == 0) {
        CHECK_OC(oc_ialltoall(team, s, r, 8, &once));
        CHECK_ERR(oc_request_free(once), OC_ERR_BUSY, "active");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank != 0)
        CHECK_OC(oc_ialltoall(team, s, r, 8, &once));
    CHECK_OC(oc_wait(once));
    CHECK_OC(oc_request_free(once));
    free(s);
    free(r);
}

/* Sender and receiver disagree on a block's size. One-shot: the receiver
 * learns it. Persistent: the set-up fails on every rank, the pair named on
 * both of its ranks; so do block sizes that disagree and a bad argument on
 * one rank only (none is left waiting for the others). */
static void mismatched_counts(oc_team_t *team)
{
    size_t n = (size_t)nprocs;
    char *s = calloc(n, 64), *r = calloc(n, 64), want[96];
    size_t *sc = calloc(n, sizeof(size_t)), *rc = calloc(n, sizeof(size_t));
    size_t *d = calloc(n, sizeof(size_t));
    oc_request_t *req = NULL;
    oc_status_t st;

    if (nprocs < 2) {
        free(s); free(r); free(sc); free(rc); free(d);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        sc[i] = rc[i] = 16;
        d[i] = i * 64;
    }
    if (rank == 1)
        rc[0] = 32; /* rank 0 sends 16 bytes, rank 1 expects 32 */
    CHECK_OC(oc_ialltoallv(team, s, 64 * n, sc, d, r, 64 * n, rc, d, &req));
    st = oc_wait(req);
    if (rank == 1)
        CHECK(st == OC_ERR_MISMATCH && strstr(oc_last_error(), "scounts/rcounts") != NULL,
              "mismatch reported as %s: %s", oc_status_string(st), oc_last_error());
    else
        CHECK(st == OC_OK, "rank %d unaffected: %s", rank, oc_status_string(st));
    CHECK_OC(oc_request_free(req));
    req = NULL;

    st = oc_alltoallv_init(team, s, 64 * n, sc, d, r, 64 * n, rc, d, &req);
    CHECK(st == OC_ERR_MISMATCH && req == NULL, "alltoallv_init with disagreeing counts: %s",
          oc_status_string(st));
    if (rank == 0)
        CHECK(strstr(oc_last_error(), "rank 1 expects 32 bytes from rank 0, but scounts[1]=16") !=
                  NULL, "rank 0: %s", oc_last_error());
    else if (rank == 1)
        CHECK(strstr(oc_last_error(), "rank 0 sends 16 bytes to rank 1, but rcounts[0]=32") !=
                  NULL, "rank 1: %s", oc_last_error());
    else
        CHECK(strstr(oc_last_error(), "refused on rank 0") != NULL, "rank %d: %s", rank,
              oc_last_error());

    st = oc_alltoall_init(team, s, r, rank == (int)n - 1 ? 8 : 16, &req);
    CHECK(st == OC_ERR_MISMATCH && req == NULL, "alltoall_init with disagreeing block_bytes: %s",
          oc_status_string(st));
    CHECK(strstr(oc_last_error(), "block_bytes") != NULL || strstr(oc_last_error(), "refused")
          != NULL, "rank %d: %s", rank, oc_last_error());

    st = oc_alltoall_init(team, s, rank == 0 ? NULL : r, 16, &req);
    snprintf(want, sizeof(want), "%s", rank == 0 ? "rbuf is NULL" : "rank 0 refused its arguments");
    CHECK(st != OC_OK && req == NULL && strstr(oc_last_error(), want) != NULL,
          "rank %d: a bad argument on rank 0 only: %s: %s", rank, oc_status_string(st),
          oc_last_error());
    free(s); free(r); free(sc); free(rc); free(d);
}

/* put chosen on rank 0 alone: every rank falls back, and the data arrive. */
/* A rank's block to itself, which no receiver checks, of another length on
 * each side: longer (it would be copied past its receive block) and zero
 * against non-zero. Every rank refuses alike, so that no peer waits; the
 * receive buffer stays untouched. */
static void mismatched_self_block(oc_team_t *team)
{
    size_t n = (size_t)nprocs, me = (size_t)rank;
    char *s = malloc(16 * n), *r = malloc(16 * n + 16);
    size_t *sc = calloc(n, sizeof(size_t)), *rc = calloc(n, sizeof(size_t));
    size_t *d = calloc(n, sizeof(size_t));
    const size_t cases[2][2] = {{16, 8}, {0, 16}}; /* scounts[me], rcounts[me] */
    char want[96];
    oc_request_t *req = NULL;
    oc_status_t st;

    memset(s, 'S', 16 * n);
    for (size_t i = 0; i < n; i++) {
        sc[i] = rc[i] = 16;
        d[i] = i * 16;
    }
    for (int c = 0; c < 2; c++) {
        sc[me] = cases[c][0];
        rc[me] = cases[c][1];
        snprintf(want, sizeof(want), "sends itself scounts[%d]=%zu bytes, but rcounts[%d]=%zu",
                 rank, sc[me], rank, rc[me]);
        memset(r, 'R', 16 * n + 16);
        st = oc_ialltoallv(team, s, 16 * n, sc, d, r, 16 * n, rc, d, &req);
        CHECK(st == OC_ERR_MISMATCH && req == NULL && strstr(oc_last_error(), want) != NULL,
              "oc_ialltoallv, self block %zu against %zu: %s: %s", sc[me], rc[me],
              oc_status_string(st), oc_last_error());
        for (size_t i = 0; i < 16 * n + 16; i++)
            if (r[i] != 'R') {
                CHECK(0, "self block %zu against %zu: rbuf[%zu] written", sc[me], rc[me], i);
                break;
            }
        st = oc_alltoallv_init(team, s, 16 * n, sc, d, r, 16 * n, rc, d, &req);
        CHECK(st == OC_ERR_MISMATCH && req == NULL && strstr(oc_last_error(), want) != NULL,
              "oc_alltoallv_init, self block %zu against %zu: %s: %s", sc[me], rc[me],
              oc_status_string(st), oc_last_error());
    }
    free(s); free(r); free(sc); free(rc); free(d);
}

/* What a halo plan and a put request make for themselves (a halo plan's
 * requests, a put request's window) is not named among the objects the
 * application left on the team: one plan is one halo plan, one put request
 * one request. */
static void owned_objects(void)
{
    oc_config_t cfg;
    oc_context_t *ctx;
    oc_team_t *team = NULL;
    oc_halo_t *halo = NULL;
    oc_request_t *req = NULL;
    oc_halo_params_t p = {.dims = {nprocs, 1, 1}, .width = 1};
    double *a = calloc(6 * 6 * 6, sizeof(double));
    char *s = calloc((size_t)nprocs, 16), *r = calloc((size_t)nprocs, 16);
    oc_halo_field_t f = {.data = a, .n = {4, 4, 4}, .elem_size = sizeof(double)};

    CHECK_OC(oc_config_init(&cfg));
    cfg.timeout_s = 60;
    cfg.alltoall_alg = OC_ALG_PUT;
    ctx = check_open_cfg(&cfg, &team);
    CHECK_OC(oc_halo_create(team, &p, &f, 1, &halo));
    CHECK_ERR(oc_team_free(team), OC_ERR_BUSY, "0 request(s) and 1 window(s) or halo plan(s)");
    CHECK_ERR(oc_finalize(ctx), OC_ERR_BUSY, "1 team(s) and 0 request(s) not freed");
    CHECK_OC(oc_halo_free(halo));
    CHECK_OC(oc_alltoall_init(team, s, r, 16, &req));
    CHECK(oc_request_alg(req) == OC_ALG_PUT, "the put request is %s",
          oc_alg_name(oc_request_alg(req)));
    CHECK_ERR(oc_team_free(team), OC_ERR_BUSY, "1 request(s) and 0 window(s) or halo plan(s)");
    CHECK_OC(oc_request_free(req));
    CHECK_OC(oc_team_free(team));
    CHECK_OC(oc_finalize(ctx));
    free(a); free(s); free(r);
}

/* An erroneous program (as in MPI): a persistent set-up on rank 0, one-shot
 * collectives elsewhere, with blocks the size of the set-up's own messages.
 * Every member fails, and no collective takes in the set-up's messages as
 * its data: they match apart (oc_request.c, take_nums). */
static void setup_against_collective(void)
{
    oc_config_t cfg;
    oc_context_t *ctx;
    oc_team_t *team = NULL;
    oc_request_t *req = NULL;
    unsigned char s[64 * 64], r[64 * 64];
    oc_status_t st;

    if (nprocs < 2 || nprocs > 64)
        return;
    CHECK_OC(oc_config_init(&cfg));
    cfg.timeout_s = 1;
    ctx = check_open_cfg(&cfg, &team);
    memset(s, rank + 1, sizeof(s));
    if (rank == 0) {
        st = oc_alltoall_init(team, s, r, 64, &req);
        CHECK(st != OC_OK && req == NULL, "rank 0: the set-up against collectives: %s",
              oc_status_string(st));
    } else
        for (int i = 0; i < 2; i++) {
            memset(r, 0xee, sizeof(r));
            CHECK_OC(oc_ialltoall(team, s, r, 4, &req));
            st = oc_wait(req);
            CHECK(st == OC_ERR_TIMEOUT, "rank %d: collective %d against a set-up: %s: %s%s", rank,
                  i, oc_status_string(st), oc_last_error(),
                  st == OC_OK && r[0] != 0xee ? " (rank 0's block written)" : "");
            CHECK_OC(oc_request_free(req));
        }
    CHECK_OC(oc_team_free(team));
    CHECK_OC(oc_finalize(ctx));
}

static void put_on_one_rank(void)
{
    size_t n = (size_t)nprocs, i;
    char *s = calloc(n, 16), *r = calloc(n, 16);
    oc_context_t *ctx = check_open(OC_PROGRESS_THREAD, 60, NULL);
    oc_config_t cfg;
    oc_team_t *team = NULL;
    oc_request_t *req = NULL;

    oc_context_config(ctx, &cfg);
    CHECK_OC(oc_finalize(ctx));
    cfg.alltoall_alg = rank == 0 ? OC_ALG_PUT : OC_ALG_BURST;
    ctx = NULL;
    CHECK_OC(oc_init(&cfg, &ctx));
    CHECK_OC(oc_team_create_mpi(ctx, MPI_COMM_WORLD, &team));
    for (i = 0; i < 16 * n; i++)
        s[i] = (char)(rank * 16 + (int)(i / 16));
    CHECK_OC(oc_alltoall_init(team, s, r, 16, &req));
    CHECK(nprocs == 1 || oc_request_alg(req) == OC_ALG_BURST, "rank %d runs %s", rank,
          oc_alg_name(oc_request_alg(req)));
    CHECK_OC(oc_start(req));
    CHECK_OC(oc_wait(req));
    for (i = 0; i < 16 * n; i++)
        CHECK(r[i] == (char)((int)(i / 16) * 16 + rank), "byte %zu from rank %zu", i, i / 16);
    CHECK_OC(oc_request_free(req));
    CHECK_OC(oc_team_free(team));
    CHECK_OC(oc_finalize(ctx));
    free(s);
    free(r);
}

/* As mismatched_counts, with one list per pairwise stage: rank 1's mismatch
 * (stage 1) must not keep its stage-2 message from rank 0. A short timeout
 * turns a rank left waiting into a failed check instead of a stalled test. */
static void mismatch_in_early_list(oc_progress_mode_t mode)
{
    oc_config_t cfg;
    oc_context_t *ctx = NULL;
    oc_team_t *team = NULL;

    CHECK_OC(oc_config_init(&cfg));
    cfg.progress = mode;
    cfg.timeout_s = 10;
    cfg.list_max = 2;
    cfg.alltoallv_alg = OC_ALG_PAIRWISE;
    CHECK_OC(oc_init(&cfg, &ctx));
    CHECK_OC(oc_team_create_mpi(ctx, MPI_COMM_WORLD, &team));
    mismatched_counts(team);
    CHECK_OC(oc_team_free(team));
    CHECK_OC(oc_finalize(ctx));
}

/* Refused locally, before any communication; *team is cleared. */
static void null_communicator(oc_context_t *ctx)
{
    oc_team_t *team = (oc_team_t *)&team;

    CHECK_ERR(oc_team_create_mpi(ctx, MPI_COMM_NULL, &team), OC_ERR_INVALID_ARG,
              "comm is MPI_COMM_NULL");
    CHECK(team == NULL, "a refused creation left *team set");
}

/* The last rank has no context, as after a failed oc_init: it still takes
 * part, and the others return an error naming it. */
static void member_without_context(oc_context_t *ctx)
{
    oc_team_t *team = NULL;
    int last = nprocs - 1;
    char needle[64];

    if (rank == last) {
        CHECK_ERR(oc_team_create_mpi(NULL, MPI_COMM_WORLD, &team), OC_ERR_INVALID_ARG,
                  "ctx is NULL");
    } else {
        snprintf(needle, sizeof(needle), "failed before connecting on rank %d", last);
        CHECK_ERR(oc_team_create_mpi(ctx, MPI_COMM_WORLD, &team), OC_ERR_MISMATCH, needle);
    }
    CHECK(team == NULL, "a failed creation left a team");
}

/* On the verbs backend, OC_VERBS_MAX_PEERS bounds the peers of a context:
 * one peer fewer than the team needs fails the creation on every rank with
 * the variable named; exactly as many works. Other backends: nothing to do. */
static void verbs_peer_limit(void)
{
    oc_context_t *ctx = NULL;
    oc_team_t *team = NULL;
    char limit[16], want[64];
    int verbs;

    ctx = check_open(OC_PROGRESS_THREAD, 60, NULL);
    verbs = ctx != NULL && strncmp(oc_context_backend_info(ctx), "verbs: ", 7) == 0;
    CHECK_OC(oc_finalize(ctx));
    if (!verbs || nprocs < 2)
        return;
    if (nprocs > 2) {
        snprintf(limit, sizeof(limit), "%d", nprocs - 2);
        setenv("OC_VERBS_MAX_PEERS", limit, 1);
        ctx = check_open(OC_PROGRESS_THREAD, 60, NULL);
        snprintf(want, sizeof(want), "up to %d peers", nprocs - 2);
        CHECK(ctx != NULL && strstr(oc_context_backend_info(ctx), want) != NULL,
              "backend info \"%s\" lacks \"%s\"", ctx ? oc_context_backend_info(ctx) : "",
              want);
        CHECK_ERR(oc_team_create_mpi(ctx, MPI_COMM_WORLD, &team), OC_ERR_UNAVAILABLE,
                  "OC_VERBS_MAX_PEERS");
        CHECK(team == NULL, "a failed creation left a team");
        CHECK_OC(oc_finalize(ctx));
    }
    snprintf(limit, sizeof(limit), "%d", nprocs - 1);
    setenv("OC_VERBS_MAX_PEERS", limit, 1);
    ctx = check_open(OC_PROGRESS_THREAD, 60, &team);
    if (team != NULL) { /* an alltoall of 4 KB blocks talks to every peer */
        const size_t block = 4096, n = (size_t)nprocs;
        unsigned char *s = malloc(n * block), *r = calloc(n, block);
        oc_request_t *req = NULL;
        size_t i;
        int p, bad = 0;
        check_fill(s, rank, nprocs, block, 5);
        CHECK_OC(oc_ialltoall(team, s, r, block, &req));
        CHECK_OC(oc_wait(req));
        CHECK_OC(oc_request_free(req));
        for (p = 0; p < nprocs; p++)
            for (i = 0; i < block; i++)
                bad += r[(size_t)p * block + i] != check_pattern(p, rank, i, 5);
        CHECK(bad == 0, "OC_VERBS_MAX_PEERS=%d: %d bytes differ", nprocs - 1, bad);
        free(s);
        free(r);
        CHECK_OC(oc_team_free(team));
    }
    CHECK_OC(oc_finalize(ctx));
    unsetenv("OC_VERBS_MAX_PEERS");
    if (rank == 0)
        printf("test_errors: verbs: OC_VERBS_MAX_PEERS=%d refused by all%s, =%d works\n",
               nprocs - 2, nprocs > 2 ? "" : " (not tried: 0 is below the minimum)", nprocs - 1);
}

int main(int argc, char **argv)
{
    oc_context_t *ctx = NULL;
    oc_team_t *team = NULL;
    int m;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    for (m = 0; m < 2; m++) {
        ctx = check_open(m ? OC_PROGRESS_INLINE : OC_PROGRESS_THREAD, 60, NULL);
        null_communicator(ctx);
        member_without_context(ctx);
        CHECK_OC(oc_team_create_mpi(ctx, MPI_COMM_WORLD, &team));
        bad_arguments(team);
        active_request(team);
        mismatched_counts(team);
        mismatched_self_block(team);
        mismatch_in_early_list(m ? OC_PROGRESS_INLINE : OC_PROGRESS_THREAD);
        CHECK_ERR(oc_finalize(ctx), OC_ERR_BUSY, "1 team(s) and 0 request(s) not freed");
        {
            /* A request left on the team: its count reaches both messages. */
            char s[64] = {0}, r[64];
            oc_request_t *req;
            CHECK_OC(oc_alltoall_init(team, s, r, nprocs <= 64 ? 1 : 0, &req));
            CHECK_ERR(oc_finalize(ctx), OC_ERR_BUSY, "1 team(s) and 1 request(s) not freed");
            CHECK_ERR(oc_team_free(team), OC_ERR_BUSY, "1 request(s) and 0 window(s)");
            CHECK_OC(oc_request_free(req));
        }
        CHECK_OC(oc_team_free(team));
        CHECK_OC(oc_finalize(ctx));
    }
    put_on_one_rank();
    owned_objects();
    setup_against_collective();
    verbs_peer_limit();
    return check_finish("test_errors");
}
