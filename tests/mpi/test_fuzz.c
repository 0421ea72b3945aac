/*
 * Randomised all-to-alls against MPI_Alltoallv: contexts of random
 * configuration (progress mode, algorithms, list length, ring width, Bruck
 * limit), each running rounds of several operations outstanding at once,
 * mixed: alltoall and alltoallv, in place or not, one-shot or persistent and
 * restarted, completed in random order by oc_wait or by polling oc_test.
 * Counts (zeros included), block order and the gaps between blocks are
 * random; a gap of the receive buffer must come back untouched.
 *
 * Every rank draws the same sequence (seed TEST_FUZZ_SEED, printed), so the
 * ranks agree on every operation without talking; a failure names the seed,
 * context and round to replay.
 */
#include <stdint.h>
#include <string.h>

#include "mpi_check.h"
#include "offcoll_mpi.h"

#define CONTEXTS 4
#define ROUNDS 12
#define MAX_OPS 5
#define GAP_BYTE 0xC3
#define MAX_RANKS 64

static int rank, nprocs;
static uint64_t rng;
static unsigned long completed, kinds[8]; /* kinds: persistent | in_place | equal */
static unsigned long long checked;

/* xorshift64*: the same sequence on every rank. */
static uint64_t draw(void)
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 2685821657736338717ull;
}

/* Whether any rank has failed a check: the ranks stop together, or one
 * would wait in a collective the others never join. */
static int any_failed(void)
{
    int mine = check_failures, all = 0;
    MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return all != 0;
}

static int ok(oc_status_t st, const char *call)
{
    CHECK(st == OC_OK, "%s -> %s (%s)", call, oc_status_string(st), oc_last_error());
    return st == OC_OK;
}

static size_t below(size_t n)
{
    return n == 0 ? 0 : (size_t)(draw() % n);
}

typedef struct {
    int persistent, in_place, equal;
    size_t sbytes, rbytes;
    size_t *scounts, *sdispls, *rcounts, *rdispls; /* this rank's, nprocs each */
    unsigned char *s, *r, *ref;
    oc_request_t *req;
    int salt;
} op_t;

/* Byte i of what src sends to dst in the operation of this salt. */
static unsigned char byte_of(int src, int dst, size_t i, int salt)
{
    return (unsigned char)(src * 37 + dst * 101 + (int)(i % 253) * 3 + salt * 29 + 1);
}

/* Lays out nprocs blocks of the given counts in a random order with random
 * gaps (and a random lead); returns the buffer's size. Drawn for every rank
 * so that the sequence stays the same everywhere; mine is kept in displs. */
static size_t layout(const size_t *counts_of_all, int stride, size_t *displs)
{
    size_t mine = 0;
    int p, q, order[MAX_RANKS];

    for (q = 0; q < nprocs; q++) {
        size_t off = below(4) == 0 ? below(24) : 0;
        for (p = 0; p < nprocs; p++)
            order[p] = p;
        for (p = nprocs - 1; p > 0; p--) {
            int j = (int)below((size_t)p + 1), t = order[p];
            order[p] = order[j];
            order[j] = t;
        }
        for (p = 0; p < nprocs; p++) {
            int b = order[p];
            size_t gap = below(3); /* draws in sequence: replays the same everywhere */
            gap *= below(17);
            if (q == rank)
                displs[b] = off;
            off += counts_of_all[(size_t)q * (size_t)stride + (size_t)b] + gap;
        }
        if (q == rank)
            mine = off;
    }
    return mine;
}

/* Draws the next operation; with counts shared by all ranks (symmetric for an
 * in-place alltoallv, where each rank's rcounts are also what it sends). */
static void make_op(op_t *op, int salt)
{
    size_t n = (size_t)nprocs, *c = malloc(n * n * sizeof(size_t)), *ct = malloc(n * n * sizeof(size_t));
    size_t i, j, block = 0, maxc = below(3) == 0 ? 70000 : 3000;
    int p;

    memset(op, 0, sizeof(*op));
    op->salt = salt;
    op->persistent = below(3) == 0;
    op->in_place = below(4) == 0;
    op->equal = below(3) == 0;
    if (op->equal)
        block = below(5) == 0 ? 0 : below(maxc);
    for (i = 0; i < n; i++)
        for (j = 0; j < n; j++)
            c[i * n + j] = op->equal ? block : below(4) == 0 ? 0 : below(maxc);
    if (op->in_place)
        for (i = 0; i < n; i++)
            for (j = 0; j < i; j++)
                c[i * n + j] = c[j * n + i];
    for (i = 0; i < n; i++)
        for (j = 0; j < n; j++)
            ct[i * n + j] = c[j * n + i]; /* ct[dst][src] */

    op->scounts = malloc(n * sizeof(size_t));
    op->sdispls = malloc(n * sizeof(size_t));
    op->rcounts = malloc(n * sizeof(size_t));
    op->rdispls = malloc(n * sizeof(size_t));
    for (p = 0; p < nprocs; p++) {
        op->scounts[p] = c[(size_t)rank * n + (size_t)p];
        op->rcounts[p] = c[(size_t)p * n + (size_t)rank];
    }
    if (op->equal) { /* alltoall: blocks in rank order, no gaps */
        for (p = 0; p < nprocs; p++)
            op->sdispls[p] = op->rdispls[p] = (size_t)p * block;
        op->sbytes = op->rbytes = n * block;
    } else {
        op->sbytes = layout(c, nprocs, op->sdispls);
        op->rbytes = layout(ct, nprocs, op->rdispls);
    }
    if (op->in_place) { /* what this rank sends is in rbuf, where it receives */
        memcpy(op->scounts, op->rcounts, n * sizeof(size_t));
        memcpy(op->sdispls, op->rdispls, n * sizeof(size_t));
        op->sbytes = op->rbytes;
    }
    op->s = malloc(op->sbytes + 1);
    op->r = malloc(op->rbytes + 1);
    op->ref = malloc(op->rbytes + 1);
    free(c);
    free(ct);
}

/* Fills the send data of one start (salt changes with every restart) and
 * computes the expected receive buffer with MPI. */
static void fill_and_reference(op_t *op, int start)
{
    int p, salt = op->salt * 8 + start, *sc = malloc((size_t)nprocs * 4 * sizeof(int));
    int *sd = sc + nprocs, *rc = sd + nprocs, *rd = rc + nprocs;
    size_t i;

    memset(op->s, 0, op->sbytes + 1);
    for (p = 0; p < nprocs; p++)
        for (i = 0; i < op->scounts[p]; i++)
            op->s[op->sdispls[p] + i] = byte_of(rank, p, i, salt);
    memset(op->ref, GAP_BYTE, op->rbytes + 1);
    for (p = 0; p < nprocs; p++) {
        sc[p] = (int)op->scounts[p];
        sd[p] = (int)op->sdispls[p];
        rc[p] = (int)op->rcounts[p];
        rd[p] = (int)op->rdispls[p];
    }
    MPI_Alltoallv(op->s, sc, sd, MPI_BYTE, op->ref, rc, rd, MPI_BYTE, MPI_COMM_WORLD);
    if (op->in_place) { /* the data to send lies in rbuf, gaps as they were */
        memset(op->r, GAP_BYTE, op->rbytes + 1);
        for (p = 0; p < nprocs; p++)
            memcpy(op->r + op->sdispls[p], op->s + op->sdispls[p], op->scounts[p]);
    } else {
        memset(op->r, GAP_BYTE, op->rbytes + 1);
    }
    free(sc);
}

static oc_status_t post(oc_team_t *team, op_t *op)
{
    const void *sbuf = op->in_place ? OC_IN_PLACE : (const void *)op->s;
    size_t block = nprocs > 0 ? op->rcounts[0] : 0;

    if (op->equal)
        return op->persistent ? oc_alltoall_init(team, sbuf, op->r, block, &op->req)
                              : oc_ialltoall(team, sbuf, op->r, block, &op->req);
    if (op->persistent)
        return oc_alltoallv_init(team, sbuf, op->sbytes, op->scounts, op->sdispls, op->r,
                                 op->rbytes, op->rcounts, op->rdispls, &op->req);
    return oc_ialltoallv(team, sbuf, op->sbytes, op->scounts, op->sdispls, op->r, op->rbytes,
                         op->rcounts, op->rdispls, &op->req);
}

static void complete(op_t *op, int poll)
{
    oc_status_t st;
    if (poll) {
        double t0 = MPI_Wtime();
        while ((st = oc_test(op->req)) == OC_INPROGRESS && MPI_Wtime() - t0 < 60)
            ;
    } else {
        st = oc_wait(op->req);
    }
    CHECK(st == OC_OK, "%s -> %s (%s)", poll ? "oc_test" : "oc_wait", oc_status_string(st),
          oc_last_error());
}

static void verify(const op_t *op, const char *what)
{
    size_t i;
    for (i = 0; i <= op->rbytes && op->r[i] == op->ref[i]; i++)
        ;
    completed++;
    kinds[op->persistent * 4 + op->in_place * 2 + op->equal]++;
    checked += op->rbytes;
    CHECK(i > op->rbytes, "%s: %s%s%s of %zu bytes: byte %zu is 0x%02x, expected 0x%02x", what,
          op->persistent ? "persistent " : "", op->in_place ? "in-place " : "",
          op->equal ? "alltoall" : "alltoallv", op->rbytes, i, op->r[i], op->ref[i]);
}

static void free_op(op_t *op)
{
    if (op->req != NULL)
        CHECK_OC(oc_request_free(op->req));
    free(op->scounts);
    free(op->sdispls);
    free(op->rcounts);
    free(op->rdispls);
    free(op->s);
    free(op->r);
    free(op->ref);
}

static void fuzz_context(int ci, uint64_t seed)
{
    /* put applies to the persistent operations; the others fall back */
    static const oc_alg_t algs[] = {OC_ALG_AUTO, OC_ALG_BURST, OC_ALG_PAIRWISE, OC_ALG_RINGK,
                                    OC_ALG_PUT, OC_ALG_BRUCK};
    oc_config_t cfg;
    oc_context_t *ctx = NULL;
    oc_team_t *team = NULL;
    char what[160];
    int round, k, nops, starts, start, order[MAX_OPS];
    op_t ops[MAX_OPS];

    if (!ok(oc_config_init(&cfg), "oc_config_init"))
        return;
    cfg.progress = below(3) == 0 ? OC_PROGRESS_INLINE : OC_PROGRESS_THREAD;
    cfg.alltoall_alg = algs[below(6)];
    cfg.alltoallv_alg = algs[below(5)];
    cfg.list_max = 2 + (unsigned)below(9);
    cfg.ringk = 1 + (unsigned)below((size_t)nprocs + 1);
    cfg.bruck_max = below(2) ? 0 : below(5000);
    cfg.timeout_s = 30;
    snprintf(what, sizeof(what), "seed %llu context %d (%s, alltoall %s, alltoallv %s, "
             "OC_LIST_MAX %u, OC_RINGK %u, OC_BRUCK_MAX %zu)", (unsigned long long)seed, ci,
             cfg.progress == OC_PROGRESS_INLINE ? "inline" : "thread",
             oc_alg_name(cfg.alltoall_alg), oc_alg_name(cfg.alltoallv_alg), cfg.list_max,
             cfg.ringk, cfg.bruck_max);
    if (!ok(oc_init(&cfg, &ctx), "oc_init"))
        return;
    if (ok(oc_team_create_mpi(ctx, MPI_COMM_WORLD, &team), "oc_team_create_mpi")) {
        for (round = 0; round < ROUNDS && !any_failed(); round++) {
            char where[240];
            nops = 1 + (int)below(MAX_OPS);
            starts = 1 + (int)below(3);
            snprintf(where, sizeof(where), "%s round %d", what, round);
            for (k = 0; k < nops; k++) {
                make_op(&ops[k], round * MAX_OPS + k);
                if (!ops[k].persistent)
                    continue;
                CHECK(post(team, &ops[k]) == OC_OK, "%s: init: %s", where, oc_last_error());
            }
            /* Persistent operations start `starts` times, each with new
             * data; one-shot ones are posted at the first start only. */
            for (start = 0; start < starts; start++) {
                int any = 0;
                for (k = 0; k < nops; k++) {
                    if (!ops[k].persistent && start > 0)
                        continue;
                    fill_and_reference(&ops[k], start);
                    if (ops[k].persistent)
                        CHECK(oc_start(ops[k].req) == OC_OK, "%s: start: %s", where,
                              oc_last_error());
                    else
                        CHECK(post(team, &ops[k]) == OC_OK, "%s: post: %s", where,
                              oc_last_error());
                    order[any++] = k;
                }
                for (k = any - 1; k > 0; k--) { /* complete in a random order */
                    int j = (int)below((size_t)k + 1), t = order[k];
                    order[k] = order[j];
                    order[j] = t;
                }
                for (k = 0; k < any; k++) {
                    op_t *op = &ops[order[k]];
                    int poll = below(2) == 0;
                    if (op->req == NULL)
                        continue;
                    complete(op, poll);
                    verify(op, where);
                }
            }
            for (k = 0; k < nops; k++)
                free_op(&ops[k]);
        }
        CHECK_OC(oc_team_free(team));
    }
    CHECK_OC(oc_finalize(ctx));
}

int main(int argc, char **argv)
{
    const char *env = getenv("TEST_FUZZ_SEED");
    unsigned long long seed = env != NULL ? strtoull(env, NULL, 0) : 20261122ull;
    int ci;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    MPI_Bcast(&seed, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
    if (nprocs > MAX_RANKS) {
        if (rank == 0)
            printf("test_fuzz: SKIP: at most %d ranks\n", MAX_RANKS);
        return check_finish("test_fuzz");
    }
    if (rank == 0)
        printf("test_fuzz: seed %llu (TEST_FUZZ_SEED replays it)\n", seed);
    rng = seed * 0x9E3779B97F4A7C15ull | 1;
    for (ci = 0; ci < CONTEXTS && !any_failed(); ci++)
        fuzz_context(ci, seed);
    if (rank == 0) {
        printf("test_fuzz: rank 0 checked %lu operations (%llu bytes); by kind (persistent, "
               "in place, alltoall):", completed, checked);
        for (ci = 0; ci < 8; ci++)
            printf(" %d%d%d:%lu", ci >> 2, (ci >> 1) & 1, ci & 1, kinds[ci]);
        printf("\n");
    }
    return check_finish("test_fuzz");
}
