/*
 * Many operations in flight: 64 outstanding requests on one team, two teams
 * (world and a split) used at the same time, and persistent alltoall and
 * alltoallv requests restarted 1000 times with changing data, in both
 * progress modes and with each algorithm; and in-place ones. Then contexts made and torn down in quick succession, each
 * with a team over half the ranks and one operation or none: a member that leaves
 * team creation first and finalizes must not pull the shared memory from
 * under a peer still connecting to it.
 */
#include <stdint.h>
#include <string.h>

#include "mpi_check.h"
#include "offcoll_mpi.h"

static int rank, nprocs;

/* Returns the first rank whose block in r is wrong, or -1. */
static int verify(const unsigned char *r, int me, int n, size_t block, int salt)
{
    int p;
    size_t i;
    for (p = 0; p < n; p++)
        for (i = 0; i < block; i++)
            if (r[(size_t)p * block + i] != check_pattern(p, me, i, salt))
                return p;
    return -1;
}

static void outstanding_64(oc_team_t *team, const char *label)
{
    enum { NREQ = 64 };
    const size_t block = 513;
    size_t total = block * (size_t)nprocs;
    unsigned char *s = malloc(total * NREQ), *r = malloc(total * NREQ);
    oc_request_t *req[NREQ];
    int k, bad;

    for (k = 0; k < NREQ; k++) {
        check_fill(s + k * total, rank, nprocs, block, k);
        CHECK_OC(oc_ialltoall(team, s + k * total, r + k * total, block, &req[k]));
    }
    for (k = NREQ - 1; k >= 0; k--) { /* completion in reverse start order */
        CHECK_OC(oc_wait(req[k]));
        bad = verify(r + k * total, rank, nprocs, block, k);
        CHECK(bad < 0, "%s request %d: block from rank %d wrong", label, k, bad);
        CHECK_OC(oc_request_free(req[k]));
    }
    free(s);
    free(r);
}

/* World and a split (even/odd ranks) interleaved, several of each in flight. */
static void two_teams(oc_context_t *ctx, oc_team_t *world, const char *label)
{
    enum { NOPS = 8 };
    MPI_Comm sub;
    oc_team_t *half = NULL;
    int srank, ssize, k, bad;
    const size_t block = 1000;
    unsigned char *ws, *wr, *hs, *hr;
    oc_request_t *wreq[NOPS], *hreq[NOPS];
    size_t wt = block * (size_t)nprocs;

    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &sub); /* reversed order on purpose */
    MPI_Comm_rank(sub, &srank);
    MPI_Comm_size(sub, &ssize);
    CHECK_OC(oc_team_create_mpi(ctx, sub, &half));
    ws = malloc(wt * NOPS);
    wr = malloc(wt * NOPS);
    hs = malloc(block * (size_t)ssize * NOPS);
    hr = malloc(block * (size_t)ssize * NOPS);
    for (k = 0; k < NOPS; k++) {
        size_t ht = block * (size_t)ssize;
        check_fill(ws + k * wt, rank, nprocs, block, k);
        check_fill(hs + k * ht, srank, ssize, block, 100 + k);
        CHECK_OC(oc_ialltoall(world, ws + k * wt, wr + k * wt, block, &wreq[k]));
        CHECK_OC(oc_ialltoall(half, hs + k * ht, hr + k * ht, block, &hreq[k]));
    }
    for (k = 0; k < NOPS; k++) {
        size_t ht = block * (size_t)ssize;
        CHECK_OC(oc_wait(hreq[k]));
        CHECK_OC(oc_wait(wreq[k]));
        bad = verify(wr + k * wt, rank, nprocs, block, k);
        CHECK(bad < 0, "%s world op %d: block from rank %d wrong", label, k, bad);
        bad = verify(hr + k * ht, srank, ssize, block, 100 + k);
        CHECK(bad < 0, "%s split op %d: block from split rank %d wrong", label, k, bad);
        CHECK_OC(oc_request_free(wreq[k]));
        CHECK_OC(oc_request_free(hreq[k]));
    }
    CHECK_OC(oc_team_free(half));
    MPI_Comm_free(&sub);
    free(ws); free(wr); free(hs); free(hr);
}

/* 1000 restarts of one persistent alltoall and one persistent alltoallv (the
 * latter with a block of rank-dependent size), data changing every time. */
static void persistent_1000(oc_team_t *team, oc_alg_t alg, const char *label)
{
    const size_t block = 100;
    size_t total = block * (size_t)nprocs;
    unsigned char *s = malloc(total), *r = malloc(total);
    unsigned char *vs = malloc(total), *vr = malloc(total);
    size_t *sc = malloc(sizeof(size_t) * (size_t)nprocs), *sd = malloc(sizeof(size_t) * (size_t)nprocs);
    size_t *rc = malloc(sizeof(size_t) * (size_t)nprocs), *rd = malloc(sizeof(size_t) * (size_t)nprocs);
    oc_request_t *req = NULL, *vreq = NULL;
    int it, p, bad = -1, vbad = -1;
    size_t i;

    for (p = 0; p < nprocs; p++) { /* rank a sends (a + b) % block + 1 bytes to b */
        sc[p] = (size_t)(rank + p) % block + 1;
        rc[p] = sc[p];
        sd[p] = rd[p] = (size_t)p * block;
    }
    CHECK_OC(oc_alltoall_init(team, s, r, block, &req));
    CHECK_OC(oc_alltoallv_init(team, vs, total, sc, sd, vr, total, rc, rd, &vreq));
    CHECK(oc_test(req) == OC_OK, "%s an inactive persistent request tests complete", label);
    if (req && vreq && alg != OC_ALG_AUTO && (alg != OC_ALG_PUT || nprocs > 1))
        CHECK(oc_request_alg(req) == alg &&
                  oc_request_alg(vreq) == (alg == OC_ALG_BRUCK ? OC_ALG_BURST : alg),
              "%s the persistent requests run %s and %s", label, oc_alg_name(oc_request_alg(req)),
              oc_alg_name(oc_request_alg(vreq)));
    for (it = 0; it < 1000 && req && vreq; it++) {
        check_fill(s, rank, nprocs, block, it);
        check_fill(vs, rank, nprocs, block, it + 7);
        CHECK_OC(oc_start(req));
        CHECK_OC(oc_start(vreq));
        CHECK_OC(oc_wait(vreq));
        CHECK_OC(oc_wait(req));
        if (bad < 0 && (bad = verify(r, rank, nprocs, block, it)) >= 0)
            CHECK(0, "%s restart %d: block from rank %d wrong", label, it, bad);
        for (p = 0; p < nprocs && vbad < 0; p++)
            for (i = 0; i < rc[p]; i++)
                if (vr[rd[p] + i] != check_pattern(p, rank, i, it + 7)) {
                    vbad = p;
                    CHECK(0, "%s alltoallv restart %d: block from rank %d wrong", label, it, p);
                    break;
                }
    }
    CHECK_OC(oc_request_free(req));
    CHECK_OC(oc_request_free(vreq));
    free(s); free(r); free(vs); free(vr);
    free(sc); free(sd); free(rc); free(rd);
}

static void context_churn(void)
{
    MPI_Comm half;
    int i, hrank, hsize;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    MPI_Comm_rank(half, &hrank);
    MPI_Comm_size(half, &hsize);
    for (i = 0; i < 20; i++) {
        const size_t block = 64;
        unsigned char *s = malloc(block * (size_t)hsize), *r = malloc(block * (size_t)hsize);
        oc_context_t *ctx = NULL;
        oc_team_t *team = NULL;
        oc_request_t *req = NULL;
        int up, all_up;
        CHECK_OC(oc_init(NULL, &ctx));
        up = ctx != NULL; /* team creation is collective: all or none */
        MPI_Allreduce(&up, &all_up, 1, MPI_INT, MPI_LAND, half);
        if (all_up)
            CHECK_OC(oc_team_create_mpi(ctx, half, &team));
        if (team != NULL && i % 2) { /* every other context: no operation at all */
            check_fill(s, hrank, hsize, block, i);
            CHECK_OC(oc_ialltoall(team, s, r, block, &req));
            CHECK_OC(oc_wait(req));
            CHECK(verify(r, hrank, hsize, block, i) < 0, "context %d: wrong data", i);
            CHECK_OC(oc_request_free(req));
        }
        if (team != NULL)
            CHECK_OC(oc_team_free(team));
        if (ctx != NULL)
            CHECK_OC(oc_finalize(ctx));
        free(s);
        free(r);
    }
    MPI_Comm_free(&half);
}

/* OC_IN_PLACE: rbuf holds the blocks to send and receives the others', for
 * one-shot and persistent requests (restarted with changing data), equal
 * and variable blocks (symmetric counts, displacements in reverse rank
 * order; the send arguments ignored). */
static void in_place(oc_team_t *team, const char *label)
{
    static const size_t blocks[] = {1, 7, 4099, 1 << 20};
    const size_t vblock = 300;
    size_t total = vblock * (size_t)nprocs, i;
    size_t *rc = malloc(sizeof(size_t) * (size_t)nprocs), *rd = malloc(sizeof(size_t) * (size_t)nprocs);
    unsigned char *vr = malloc(total);
    oc_request_t *req = NULL;
    int b, it, p, bad;

    for (b = 0; b < (int)(sizeof(blocks) / sizeof(blocks[0])); b++) {
        unsigned char *r = malloc(blocks[b] * (size_t)nprocs);
        check_fill(r, rank, nprocs, blocks[b], b);
        CHECK_OC(oc_ialltoall(team, OC_IN_PLACE, r, blocks[b], &req));
        CHECK_OC(oc_wait(req));
        CHECK_OC(oc_request_free(req));
        if ((bad = verify(r, rank, nprocs, blocks[b], b)) >= 0)
            CHECK(0, "%s in-place alltoall of %zu B: block from rank %d wrong", label, blocks[b],
                  bad);
        CHECK_OC(oc_alltoall_init(team, OC_IN_PLACE, r, blocks[b], &req));
        for (it = 0; it < 20 && req != NULL; it++) {
            check_fill(r, rank, nprocs, blocks[b], it + 100);
            CHECK_OC(oc_start(req));
            CHECK_OC(oc_wait(req));
            if ((bad = verify(r, rank, nprocs, blocks[b], it + 100)) >= 0) {
                CHECK(0, "%s persistent in-place alltoall of %zu B, start %d: block from rank "
                      "%d wrong", label, blocks[b], it, bad);
                break;
            }
        }
        CHECK_OC(oc_request_free(req));
        free(r);
    }

    for (p = 0; p < nprocs; p++) { /* a and b exchange (a + b) % vblock + 1 bytes */
        rc[p] = (size_t)(rank + p) % vblock + 1;
        rd[p] = (size_t)(nprocs - 1 - p) * vblock;
    }
    CHECK_OC(oc_alltoallv_init(team, OC_IN_PLACE, 0, NULL, NULL, vr, total, rc, rd, &req));
    for (it = 0; it < 20 && req != NULL; it++) {
        for (p = 0; p < nprocs; p++)
            for (i = 0; i < rc[p]; i++)
                vr[rd[p] + i] = check_pattern(rank, p, i, it);
        CHECK_OC(oc_start(req));
        CHECK_OC(oc_wait(req));
        for (p = 0, bad = -1; p < nprocs && bad < 0; p++)
            for (i = 0; i < rc[p]; i++)
                if (vr[rd[p] + i] != check_pattern(p, rank, i, it)) {
                    bad = p;
                    CHECK(0, "%s in-place alltoallv, start %d: block from rank %d wrong", label,
                          it, p);
                    break;
                }
    }
    CHECK_OC(oc_request_free(req));
    CHECK_ERR(oc_ialltoall(team, OC_IN_PLACE, NULL, 8, &req), OC_ERR_INVALID_ARG, "rbuf is NULL");
    /* Nothing to move: a NULL rbuf with a size but no block (the in-place
       copy once took rbuf_bytes from it). */
    memset(rc, 0, (size_t)nprocs * sizeof(*rc));
    CHECK_OC(oc_ialltoallv(team, OC_IN_PLACE, 0, NULL, NULL, NULL, 64, rc, rd, &req));
    CHECK_OC(oc_wait(req));
    CHECK_OC(oc_request_free(req));
    free(rc); free(rd); free(vr);
}

/* A context in mode whose operations run alg (alltoallv: auto for Bruck,
 * which it lacks), ring-k in pairs so that 3-5 ranks take several stages. */
static oc_context_t *open_alg(oc_progress_mode_t mode, oc_alg_t alg, oc_team_t **team)
{
    oc_config_t cfg;
    CHECK_OC(oc_config_init(&cfg));
    cfg.progress = mode;
    cfg.timeout_s = 60;
    cfg.alltoall_alg = alg;
    cfg.alltoallv_alg = alg == OC_ALG_BRUCK ? OC_ALG_AUTO : alg;
    cfg.ringk = 2;
    return check_open_cfg(&cfg, team);
}

int main(int argc, char **argv)
{
    static const oc_alg_t algs[] = {OC_ALG_AUTO, OC_ALG_PAIRWISE, OC_ALG_RINGK, OC_ALG_BRUCK,
                                    OC_ALG_PUT};
    int m, a;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);

    for (m = 0; m < 2; m++)
        for (a = 0; a < (int)(sizeof(algs) / sizeof(algs[0])); a++) {
            oc_team_t *team = NULL;
            oc_context_t *ctx =
                open_alg(m ? OC_PROGRESS_INLINE : OC_PROGRESS_THREAD, algs[a], &team);
            char label[48];

            snprintf(label, sizeof(label), "[%s %s]", m ? "inline" : "thread",
                     oc_alg_name(algs[a]));
            if (ctx == NULL || team == NULL)
                break;
            if (algs[a] != OC_ALG_PUT) { /* one-shot calls run auto's choice then */
                outstanding_64(team, label);
                two_teams(ctx, team, label);
            }
            persistent_1000(team, algs[a], label);
            if (algs[a] == OC_ALG_AUTO)
                in_place(team, label);
            CHECK_OC(oc_team_free(team));
            CHECK_OC(oc_finalize(ctx));
        }
    context_churn();
    return check_finish("test_features");
}
