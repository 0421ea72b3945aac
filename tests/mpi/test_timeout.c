/*
 * oc_wait gives up after OC_TIMEOUT_S with OC_ERR_TIMEOUT and names the ranks
 * that never took part: the last rank skips the call, every other rank must
 * name it (and only it), whatever the algorithm and progress mode. With
 * pairwise, most ranks wait on a peer that is itself stuck on the skipper, so
 * the name cannot come from the unfinished transfers alone; with burst, one
 * list, those must include the receive from the skipper (on verbs too, whose
 * tasks keep their handle set while unfinished). The same with a
 * persistent request that every rank has started twice: the skipper misses
 * the third start, and must still be named (it has started the operation,
 * but not this round of it).
 * A halo exchange that a rank skips: its neighbours' oc_halo_wait names it and
 * the side it sits on; the other ranks complete.
 * A put whose target does not progress (inline, over TCP, where UCX emulates
 * puts): the origin's flush times out and it frees the window with the put
 * still in flight, then the target frees it while the put's data still
 * arrives. Both windows are kept until oc_finalize (under ASan, an early
 * release is a use after free), and both finalize.
 * A set-up that a rank comes to only after the others timed out fails on
 * every rank, and the team then works: the next set-up, a put, an all-to-all.
 */
#include <stdlib.h>
#include <string.h>

#include "mpi_check.h"
#include "offcoll_mpi.h"

static int rank, nprocs;

/* The skip cases' contexts override OC_TIMEOUT_S=1 with this: each case
 * waits it out once, plus the diagnosis's grace of as long again, and a
 * 64-byte exchange or a halo start needs far less. The late cases keep the
 * variable's value, so that it is read as well. */
#define SKIP_TIMEOUT_S 0.5

/* Whether msg's list of ranks that never took part is the skipper alone: it
 * answers that it never started the operation where its progress thread can
 * answer, and cannot answer where its context progresses only in its calls. */
static int names_alone(const char *msg, int skipper, oc_progress_mode_t mode)
{
    char want[128];
    const char *at;
    snprintf(want, sizeof(want), "never took part: %d (%s)", skipper,
             mode == OC_PROGRESS_INLINE ? "no answer: not started and not progressing, or gone"
                                        : "never started it");
    at = strstr(msg, want);
    return at != NULL && (at[strlen(want)] == ';' || at[strlen(want)] == '\0');
}

static void skip_case(oc_progress_mode_t mode, oc_alg_t alg, int persistent)
{
    const int skipper = nprocs - 1;
    const size_t block = 64;
    char *s = calloc((size_t)nprocs, block), *r = calloc((size_t)nprocs, block);
    char want[64];
    oc_config_t cfg;
    oc_context_t *ctx = NULL;
    oc_team_t *team = NULL;
    oc_request_t *req = NULL;
    double t0, waited;
    oc_status_t st;
    int round;
    char name[64];

    CHECK_OC(oc_config_init(&cfg));
    CHECK(cfg.timeout_s == 1.0, "OC_TIMEOUT_S=1 read as %g", cfg.timeout_s);
    cfg.timeout_s = SKIP_TIMEOUT_S;
    cfg.progress = mode;
    cfg.alltoall_alg = alg;
    CHECK_OC(oc_init(&cfg, &ctx));
    CHECK_OC(oc_team_create_mpi(ctx, MPI_COMM_WORLD, &team));
    snprintf(name, sizeof(name), "%s %s%s", mode ? "inline" : "thread", oc_alg_name(alg),
             persistent ? " persistent" : "");
    if (persistent) {
        CHECK_OC(oc_alltoall_init(team, s, r, block, &req));
        for (round = 0; round < 2; round++) {
            CHECK_OC(oc_start(req));
            CHECK_OC(oc_wait(req));
        }
    }
    if (rank != skipper) {
        if (persistent)
            CHECK_OC(oc_start(req));
        else
            CHECK_OC(oc_ialltoall(team, s, r, block, &req));
        t0 = MPI_Wtime();
        st = oc_wait(req);
        waited = MPI_Wtime() - t0;
        CHECK(st == OC_ERR_TIMEOUT, "[%s] oc_wait returned %s", name, oc_status_string(st));
        CHECK(names_alone(oc_last_error(), skipper, mode),
              "[%s] message does not name rank %d alone: %s", name, skipper, oc_last_error());
        /* About twice the timeout (the timeout, then as long for the peers'
           answers); the upper bound only tells it from the 300 s default,
           as a loaded CI host stretched 2 s to 7.7 s once (ASan, 4 ranks). */
        CHECK(waited >= SKIP_TIMEOUT_S && waited < 30.0,
              "[%s] gave up after %.2f s with a timeout of %g s", name, waited, SKIP_TIMEOUT_S);
        if (rank == 0)
            printf("rank 0 [%s]: %s\n", name, oc_last_error());
        if (persistent && alg == OC_ALG_PUT) {
            snprintf(want, sizeof(want), "blocks that never came: from %d", skipper);
            CHECK(strstr(oc_last_error(), want) != NULL, "[%s] %s", name, oc_last_error());
        }
        if (alg == OC_ALG_BURST) {
            /* One list: among its unfinished tasks, the skipper's block. */
            const char *unfinished = strstr(oc_last_error(), "; unfinished:");
            snprintf(want, sizeof(want), "receive from %d", skipper);
            CHECK(unfinished != NULL && strstr(unfinished, want) != NULL, "[%s] %s", name,
                  oc_last_error());
        }
        if (persistent) {
            /* The skipper's late messages (blocks) would be taken for the
               next start's: every start of a request has the same tag. */
            CHECK(oc_start(req) == OC_ERR_INVALID_ARG &&
                      strstr(oc_last_error(), "failed earlier") != NULL,
                  "[%s] a restart after the timeout: %s", name, oc_last_error());
        }
    }
    /* Requests are freed once every rank is done: the skipper must still hold
       its persistent request while the others ask about it (one that is
       freed answers by the operation number alone). */
    MPI_Barrier(MPI_COMM_WORLD);
    if (req != NULL)
        CHECK_OC(oc_request_free(req));
    CHECK_OC(oc_team_free(team));
    CHECK_OC(oc_finalize(ctx));
    free(s);
    free(r);
}

/* A periodic ring of ranks along x; the last one never starts the exchange.
 * Thread mode exchanges faces only; inline mode edges and corners too, where
 * the report stops at the x stage (this rank's own faces into the later ones
 * never went out, and are not to be blamed on it). */
static void halo_skip_case(oc_progress_mode_t mode)
{
    const int skipper = nprocs - 1;
    const size_t n = 4, e = n + 2;
    double *a = calloc(e * e * e, sizeof(double));
    const int c = mode == OC_PROGRESS_INLINE; /* y and z then wrap onto this rank itself */
    oc_halo_params_t p = {{nprocs, 1, 1}, {1, c, c}, 1, c};
    oc_halo_field_t f = {a, {n, n, n}, sizeof(double), 0};
    oc_config_t cfg;
    oc_context_t *ctx = NULL;
    oc_team_t *team = NULL;
    oc_halo_t *halo = NULL;
    oc_status_t st;
    char want[64];

    CHECK_OC(oc_config_init(&cfg));
    cfg.timeout_s = SKIP_TIMEOUT_S;
    cfg.progress = mode;
    CHECK_OC(oc_init(&cfg, &ctx));
    CHECK_OC(oc_team_create_mpi(ctx, MPI_COMM_WORLD, &team));
    CHECK_OC(oc_halo_create(team, &p, &f, 1, &halo));
    if (rank != skipper) {
        int left = -1, right = -1;
        CHECK_OC(oc_halo_neighbor(halo, -1, 0, 0, &left));
        CHECK_OC(oc_halo_neighbor(halo, 1, 0, 0, &right));
        CHECK_OC(oc_halo_start(halo, 0));
        st = oc_halo_wait(halo, 0);
        if (left == skipper || right == skipper) {
            /* on two ranks the skipper is on both sides, named once */
            snprintf(want, sizeof(want), "rank %d (%s)", skipper,
                     left == right ? "-x/+x" : right == skipper ? "+x" : "-x");
            CHECK(st == OC_ERR_TIMEOUT, "[halo %s] oc_halo_wait returned %s",
                  mode ? "inline" : "thread", oc_status_string(st));
            CHECK(strstr(oc_last_error(), "oc_halo_wait") != NULL &&
                      strstr(oc_last_error(), want) != NULL,
                  "[halo %s] message does not name %s: %s", mode ? "inline" : "thread", want,
                  oc_last_error());
            snprintf(want, sizeof(want), "rank %d (", rank);
            CHECK(strstr(oc_last_error(), want) == NULL &&
                      (!p.corners || strstr(oc_last_error(), "after x's not reached") != NULL),
                  "[halo %s] the report goes past the x stage: %s", mode ? "inline" : "thread",
                  oc_last_error());
            if (rank == 0)
                printf("rank 0 [halo %s]: %s\n", mode ? "inline" : "thread", oc_last_error());
            /* Late faces could be taken for a later exchange's. */
            CHECK(oc_halo_start(halo, 0) == OC_ERR_INVALID_ARG &&
                      strstr(oc_last_error(), "failed earlier") != NULL,
                  "[halo %s] a restart after the timeout: %s", mode ? "inline" : "thread",
                  oc_last_error());
        } else {
            CHECK(st == OC_OK, "[halo %s] rank %d, no neighbour of the skipper: %s",
                  mode ? "inline" : "thread", rank, oc_status_string(st));
        }
    }
    /* The skipper's collective free would itself time out while its
       neighbours still wait for the face it never sent. */
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_OC(oc_halo_free(halo));
    CHECK_OC(oc_team_free(team));
    CHECK_OC(oc_finalize(ctx));
    free(a);
}

static void late_put_case(void)
{
    const size_t size = 4u << 20;
    char *src = malloc(size);
    oc_config_t cfg;
    oc_context_t *ctx = NULL;
    oc_team_t *team = NULL;
    oc_win_t *win = NULL;
    void *base = NULL;
    MPI_Comm pair;
    oc_status_t st;

    MPI_Comm_split(MPI_COMM_WORLD, rank < 2 ? 0 : MPI_UNDEFINED, rank, &pair);
    if (pair == MPI_COMM_NULL) {
        free(src);
        return;
    }
    memset(src, 0x5a, size);
    CHECK_OC(oc_config_init(&cfg));
    /* The origin's thread keeps sending; the target moves only in its calls. */
    cfg.progress = rank == 0 ? OC_PROGRESS_INLINE : OC_PROGRESS_THREAD;
    cfg.intranode = OC_INTRANODE_LOOPBACK;
    CHECK_OC(oc_init(&cfg, &ctx));
    CHECK_OC(oc_team_create_mpi(ctx, pair, &team));
    CHECK_OC(oc_win_create(team, size, 0, &base, &win));
    if (rank == 1) {
        CHECK_OC(oc_put(win, 0, 0, src, size));
        st = oc_win_flush(win);
        if (st == OC_OK) {
            printf("test_timeout: SKIP late put: the put completed without the target's "
                   "progress (a transport with true one-sided puts): no late data to check\n");
            MPI_Send(NULL, 0, MPI_BYTE, 0, 0, pair);
            CHECK_OC(oc_win_free(win));
        } else {
            CHECK(st == OC_ERR_TIMEOUT && strstr(oc_last_error(), "still unfinished"),
                  "[late put] oc_win_flush: %s", oc_last_error());
            /* The target is not in the barrier yet: this member leaves it
               after OC_TIMEOUT_S, telling the target that its put failed. */
            st = oc_win_free(win);
            CHECK(st == OC_ERR_TIMEOUT, "[late put] oc_win_free on the origin: %s",
                  oc_last_error());
            MPI_Send(NULL, 0, MPI_BYTE, 0, 0, pair);
        }
    } else {
        MPI_Recv(NULL, 0, MPI_BYTE, 1, 0, pair, MPI_STATUS_IGNORE);
        /* The put's data, then the origin's barrier message, arrive from now
           on: the barrier passes, and this member keeps the window too. */
        CHECK_OC(oc_win_free(win));
    }
    MPI_Barrier(pair);
    CHECK_OC(oc_team_free(team));
    CHECK_OC(oc_finalize(ctx));
    MPI_Comm_free(&pair);
    free(src);
}

/* A member that comes to a set-up only after the others gave up (their
 * OC_TIMEOUT_S): the set-up fails on every member (by the timeout, or naming
 * a member whose part failed) and makes nothing, and the team goes on: the next set-up, a
 * notified put in its window and an all-to-all succeed everywhere, and
 * everything frees. (The team's internal gather restarts after its cancel
 * here, which nothing else reaches.) */
static void late_setup_case(void)
{
    const int late = nprocs - 1, to = (rank + 1) % nprocs, from = (rank + nprocs - 1) % nprocs;
    oc_config_t cfg;
    oc_context_t *ctx = NULL;
    oc_team_t *team = NULL;
    oc_win_t *win = NULL;
    oc_request_t *req = NULL;
    unsigned char *base = NULL, mine = (unsigned char)(rank + 1);
    unsigned char *s = malloc((size_t)nprocs), *r = calloc((size_t)nprocs, 1);
    oc_status_t st;
    int i;

    for (i = 0; i < nprocs; i++)
        s[i] = (unsigned char)(16 * rank + i);
    CHECK_OC(oc_config_init(&cfg));
    CHECK_OC(oc_init(&cfg, &ctx));
    CHECK_OC(oc_team_create_mpi(ctx, MPI_COMM_WORLD, &team));
    /* The late rank comes once the others have given up, however loaded
     * the host: its own set-up then times out too. */
    if (rank == late)
        MPI_Barrier(MPI_COMM_WORLD);
    st = oc_win_create(team, 64, 1, (void **)&base, &win);
    if (rank != late)
        MPI_Barrier(MPI_COMM_WORLD);
    CHECK((st == OC_ERR_TIMEOUT || st == OC_ERR_MISMATCH) && win == NULL,
          "[late set-up] oc_win_create: %s (%s), window %s", oc_status_string(st),
          oc_last_error(), win != NULL ? "made" : "not made");
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_OC(oc_win_create(team, 64, 1, (void **)&base, &win));
    if (win != NULL) {
        CHECK_OC(oc_put_notify(win, to, 0, &mine, 1, 0));
        CHECK_OC(oc_notify_wait(win, 0, 1));
        CHECK(base[0] == from + 1, "[late set-up] the put from rank %d landed as %d", from,
              base[0]);
        CHECK_OC(oc_win_free(win));
    }
    CHECK_OC(oc_ialltoall(team, s, r, 1, &req));
    if (req != NULL) {
        CHECK_OC(oc_wait(req));
        for (i = 0; i < nprocs; i++)
            CHECK(r[i] == 16 * i + rank, "[late set-up] all-to-all: byte from rank %d is %d", i,
                  r[i]);
        CHECK_OC(oc_request_free(req));
    }
    CHECK_OC(oc_team_free(team));
    CHECK_OC(oc_finalize(ctx));
    free(s);
    free(r);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    setenv("OC_TIMEOUT_S", "1", 1);
    {
        /* Every case waits for a timeout: with a configuration refused (a bad
           OC_* variable) it would be OC_TIMEOUT_S's default, past the test's. */
        oc_config_t cfg;
        CHECK_OC(oc_config_init(&cfg));
    }
    if (nprocs < 2) {
        if (rank == 0)
            printf("test_timeout: SKIP: needs 2 ranks or more (one rank never waits on a peer)\n");
    } else if (check_failures == 0) {
        skip_case(OC_PROGRESS_THREAD, OC_ALG_BURST, 0);
        skip_case(OC_PROGRESS_THREAD, OC_ALG_PAIRWISE, 0);
        skip_case(OC_PROGRESS_INLINE, OC_ALG_BURST, 0);
        skip_case(OC_PROGRESS_INLINE, OC_ALG_PAIRWISE, 0);
        skip_case(OC_PROGRESS_THREAD, OC_ALG_PAIRWISE, 1);
        skip_case(OC_PROGRESS_INLINE, OC_ALG_BURST, 1);
        skip_case(OC_PROGRESS_THREAD, OC_ALG_PUT, 1);
        skip_case(OC_PROGRESS_INLINE, OC_ALG_PUT, 1);
        halo_skip_case(OC_PROGRESS_THREAD);
        halo_skip_case(OC_PROGRESS_INLINE);
        late_put_case();
        late_setup_case();
    }
    return check_finish("test_timeout");
}
