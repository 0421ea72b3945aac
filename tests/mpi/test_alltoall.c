/*
 * Alltoall and alltoallv against MPI_Alltoall(v): every algorithm in both
 * progress modes, block sizes 0, 1, 7, 4099 and 1 MiB, lists cut small and
 * large; alltoallv with uneven and zero counts and non-monotonic
 * displacements. The put algorithm, persistent only, is started three times
 * with new data each time (its landing zones alternate by start).
 */
#include <stdint.h>
#include <string.h>

#include "mpi_check.h"
#include "offcoll_mpi.h"

static int rank, nprocs;

static oc_context_t *open_ctx(oc_progress_mode_t mode, oc_alg_t alg, oc_alg_t valg,
                              unsigned list_max)
{
    oc_config_t cfg;
    oc_context_t *ctx = NULL;
    CHECK_OC(oc_config_init(&cfg));
    cfg.progress = mode;
    cfg.alltoall_alg = alg;
    cfg.alltoallv_alg = valg;
    cfg.list_max = list_max;
    cfg.ringk = 2;
    cfg.timeout_s = 60;
    CHECK_OC(oc_init(&cfg, &ctx));
    return ctx;
}

/* The request runs what was asked for: put where it is persistent and has
 * a peer to put to (one-shot requests run auto's choice instead), Bruck for
 * alltoall only (v: auto's choice); auto, anything. */
static void check_alg(oc_request_t *req, oc_alg_t want, int persistent, int v, const char *label)
{
    if (want == OC_ALG_AUTO || (want == OC_ALG_PUT && (!persistent || nprocs == 1)) ||
        (want == OC_ALG_BRUCK && v))
        return;
    CHECK(oc_request_alg(req) == want, "%s: the %s%s request runs %s, not %s", label,
          persistent ? "persistent " : "", v ? "alltoallv" : "alltoall",
          oc_alg_name(oc_request_alg(req)), oc_alg_name(want));
}

/* rounds 0: one oc_ialltoall; else a persistent request started rounds times. */
static void test_alltoall(oc_team_t *team, size_t block, int salt, int rounds, oc_alg_t alg,
                          const char *label)
{
    size_t total = block * (size_t)nprocs;
    unsigned char *s = malloc(total + 1), *r = malloc(total + 1), *ref = malloc(total + 1);
    oc_request_t *req = NULL;
    int round;

    if (rounds > 0) {
        CHECK_OC(oc_alltoall_init(team, s, r, block, &req));
        check_alg(req, alg, 1, 0, label);
    }
    for (round = 0; round < (rounds > 0 ? rounds : 1); round++) {
        check_fill(s, rank, nprocs, block, salt + round);
        memset(r, 0xEE, total + 1);
        MPI_Alltoall(s, (int)block, MPI_BYTE, ref, (int)block, MPI_BYTE, MPI_COMM_WORLD);
        if (rounds > 0)
            CHECK_OC(oc_start(req));
        else {
            CHECK_OC(oc_ialltoall(team, s, r, block, &req));
            check_alg(req, alg, 0, 0, label);
        }
        CHECK_OC(oc_wait(req));
        CHECK(memcmp(r, ref, total) == 0, "%s block %zu round %d: data differs from "
              "MPI_Alltoall", label, block, round);
        CHECK(r[total] == 0xEE, "%s block %zu: wrote past the receive buffer", label, block);
        if (rounds == 0)
            CHECK_OC(oc_request_free(req));
    }
    if (rounds > 0)
        CHECK_OC(oc_request_free(req));
    free(s);
    free(r);
    free(ref);
}

/* Uneven counts (some zero), receive blocks placed in reverse rank order. */
static void test_alltoallv(oc_team_t *team, size_t scale, int salt, int rounds, oc_alg_t alg,
                           const char *label)
{
    size_t *sc = calloc((size_t)nprocs, sizeof(size_t)), *sd = calloc((size_t)nprocs, sizeof(size_t));
    size_t *rc = calloc((size_t)nprocs, sizeof(size_t)), *rd = calloc((size_t)nprocs, sizeof(size_t));
    int *isc = calloc((size_t)nprocs, sizeof(int)), *isd = calloc((size_t)nprocs, sizeof(int));
    int *irc = calloc((size_t)nprocs, sizeof(int)), *ird = calloc((size_t)nprocs, sizeof(int));
    size_t stot = 0, rtot = 0, i;
    unsigned char *s, *r, *ref;
    oc_request_t *req = NULL;
    int p, round;

    /* count from a to b: zero when (a + 2b) % 3 == 2, else uneven; a rank's
     * block to itself is never zero, so one rank moves data too. */
#define COUNT(a, b) ((((a) + 2 * (b)) % 3 == 2) ? 0 : scale * (size_t)(1 + (a) + 3 * (b)))
    for (p = 0; p < nprocs; p++) {
        sc[p] = COUNT(rank, p);
        rc[p] = COUNT(p, rank);
    }
    /* send blocks with a gap between them; receive blocks in reverse order */
    for (p = 0; p < nprocs; p++) {
        sd[p] = stot;
        stot += sc[p] + 3;
    }
    for (p = nprocs - 1; p >= 0; p--) {
        rd[p] = rtot;
        rtot += rc[p] + 5;
    }
    s = malloc(stot + 1);
    r = malloc(rtot + 1);
    ref = malloc(rtot + 1);
    memset(s, 0, stot + 1);
    for (p = 0; p < nprocs; p++) {
        isc[p] = (int)sc[p];
        isd[p] = (int)sd[p];
        irc[p] = (int)rc[p];
        ird[p] = (int)rd[p];
    }
    if (rounds > 0) {
        CHECK_OC(oc_alltoallv_init(team, s, stot, sc, sd, r, rtot, rc, rd, &req));
        check_alg(req, alg, 1, 1, label);
    }
    for (round = 0; round < (rounds > 0 ? rounds : 1); round++) {
        for (p = 0; p < nprocs; p++)
            for (i = 0; i < sc[p]; i++)
                s[sd[p] + i] = check_pattern(rank, p, i, salt + round);
        memset(r, 0xEE, rtot + 1);
        memset(ref, 0xEE, rtot + 1);
        MPI_Alltoallv(s, isc, isd, MPI_BYTE, ref, irc, ird, MPI_BYTE, MPI_COMM_WORLD);
        if (rounds > 0)
            CHECK_OC(oc_start(req));
        else {
            CHECK_OC(oc_ialltoallv(team, s, stot, sc, sd, r, rtot, rc, rd, &req));
            check_alg(req, alg, 0, 1, label);
        }
        CHECK_OC(oc_wait(req));
        CHECK(memcmp(r, ref, rtot + 1) == 0, "%s alltoallv scale %zu round %d: differs from "
              "MPI_Alltoallv", label, scale, round);
        if (rounds == 0)
            CHECK_OC(oc_request_free(req));
    }
    if (rounds > 0)
        CHECK_OC(oc_request_free(req));
#undef COUNT
    free(s); free(r); free(ref);
    free(sc); free(sd); free(rc); free(rd);
    free(isc); free(isd); free(irc); free(ird);
}

/* auto's rule for alltoallv takes the mean of the blocks to other ranks: a
 * rank that keeps its own block out (count 0, as P3DFFT does) and sends
 * OC_RINGK_MIN bytes to every peer gets ring-k where the team is large
 * enough for it (n - 1 > k), not burst for a mean lowered by its own 0. */
static void test_auto_mean(void)
{
    oc_config_t cfg;
    oc_context_t *ctx = NULL;
    oc_team_t *team = NULL;
    oc_request_t *req = NULL;
    size_t *c = calloc(2 * (size_t)nprocs, sizeof(*c)), *d = c + nprocs, total;
    int *ic = calloc(2 * (size_t)nprocs, sizeof(*ic)), *id = ic + nprocs, p;
    unsigned char *s, *r, *ref;
    oc_alg_t want;

    CHECK_OC(oc_config_init(&cfg));
    cfg.ringk = 2;
    cfg.ringk_min = 4096;
    cfg.timeout_s = 60;
    want = nprocs - 1 > (int)cfg.ringk ? OC_ALG_RINGK : OC_ALG_BURST;
    for (p = 0; p < nprocs; p++) {
        c[p] = p == rank ? 0 : cfg.ringk_min;
        d[p] = (size_t)p * cfg.ringk_min;
        ic[p] = (int)c[p];
        id[p] = (int)d[p];
    }
    total = (size_t)nprocs * cfg.ringk_min;
    s = malloc(total);
    r = malloc(total);
    ref = malloc(total);
    check_fill(s, rank, nprocs, cfg.ringk_min, 0); /* the own block too, never sent */
    memset(r, 0xEE, total);
    memset(ref, 0xEE, total);
    MPI_Alltoallv(s, ic, id, MPI_BYTE, ref, ic, id, MPI_BYTE, MPI_COMM_WORLD);
    CHECK_OC(oc_init(&cfg, &ctx));
    CHECK_OC(oc_team_create_mpi(ctx, MPI_COMM_WORLD, &team));
    CHECK_OC(oc_ialltoallv(team, s, total, c, d, r, total, c, d, &req));
    CHECK(oc_request_alg(req) == want, "[auto mean] %d ranks, own block 0, %zu bytes to each "
          "peer: auto chose %s, not %s", nprocs, cfg.ringk_min,
          oc_alg_name(oc_request_alg(req)), oc_alg_name(want));
    CHECK_OC(oc_wait(req));
    CHECK(memcmp(r, ref, total) == 0, "[auto mean] differs from MPI_Alltoallv");
    CHECK_OC(oc_request_free(req));
    CHECK_OC(oc_team_free(team));
    CHECK_OC(oc_finalize(ctx));
    free(s); free(r); free(ref); free(c); free(ic);
}

int main(int argc, char **argv)
{
    static const size_t blocks[] = {0, 1, 7, 4099, 1 << 20};
    static const oc_alg_t algs[] = {OC_ALG_AUTO, OC_ALG_BURST, OC_ALG_PAIRWISE, OC_ALG_RINGK,
                                    OC_ALG_BRUCK, OC_ALG_PUT};
    static const unsigned list_maxes[] = {64, 3};
    int m, a, b, l;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);

    for (m = 0; m < 2; m++)
        for (a = 0; a < (int)(sizeof(algs) / sizeof(algs[0])); a++)
            for (l = 0; l < 2; l++) {
                oc_progress_mode_t mode = m ? OC_PROGRESS_INLINE : OC_PROGRESS_THREAD;
                oc_alg_t valg = algs[a] == OC_ALG_BRUCK ? OC_ALG_AUTO : algs[a];
                oc_context_t *ctx = open_ctx(mode, algs[a], valg, list_maxes[l]);
                oc_team_t *team = NULL;
                int rounds = algs[a] == OC_ALG_PUT ? 3 : 0;
                char label[96];

                if (ctx == NULL)
                    continue;
                snprintf(label, sizeof(label), "[%s %s list_max %u]", m ? "inline" : "thread",
                         oc_alg_name(algs[a]), list_maxes[l]);
                CHECK_OC(oc_team_create_mpi(ctx, MPI_COMM_WORLD, &team));
                for (b = 0; b < (int)(sizeof(blocks) / sizeof(blocks[0])); b++)
                    test_alltoall(team, blocks[b], a + b, rounds, algs[a], label);
                test_alltoallv(team, 1, a, rounds, algs[a], label);
                test_alltoallv(team, 3001, a + 1, rounds, algs[a], label);
                CHECK_OC(oc_team_free(team));
                CHECK_OC(oc_finalize(ctx));
            }
    test_auto_mean();
    return check_finish("test_alltoall");
}
