/* Shared checking helpers for the multi-rank tests: count failures per rank,
 * print them with the rank, and agree on the outcome at the end. */
#ifndef MPI_CHECK_H
#define MPI_CHECK_H

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "offcoll_mpi.h"

static int check_failures;
static const char *check_tag = ""; /* a case name printed with failures, if set */

#define CHECK(cond, ...)                                                          \
    do {                                                                          \
        if (!(cond)) {                                                            \
            int rank_;                                                            \
            MPI_Comm_rank(MPI_COMM_WORLD, &rank_);                                \
            fprintf(stderr, "[rank %d] %s:%d: %s%s%scheck failed: %s: ", rank_,      \
                    __FILE__, __LINE__, *check_tag ? "[" : "", check_tag,         \
                    *check_tag ? "] " : "", #cond);                               \
            fprintf(stderr, __VA_ARGS__);                                         \
            fprintf(stderr, "\n");                                                \
            check_failures++;                                                     \
        }                                                                         \
    } while (0)

/* An offcoll call that must succeed; a failure is fatal for this rank's run
 * of the current case (the message names the call and the library's detail). */
#define CHECK_OC(call)                                                            \
    do {                                                                          \
        oc_status_t st_ = (call);                                                 \
        CHECK(st_ == OC_OK, "%s -> %s (%s)", #call, oc_status_string(st_),        \
              oc_last_error());                                                   \
    } while (0)

/* A call that must fail with status want and a detail containing needle
 * (the argument or problem it names). */
#define CHECK_ERR(call, want, needle)                                                   \
    do {                                                                                \
        oc_status_t st_ = (call);                                                       \
        CHECK(st_ == (want), "%s returned %s, expected %s", #call, oc_status_string(st_), \
              oc_status_string(want));                                                  \
        CHECK(strstr(oc_last_error(), (needle)) != NULL,                                \
              "%s: message \"%s\" does not name \"%s\"", #call, oc_last_error(), (needle)); \
    } while (0)

/* Byte i of the block src sends to dst; salt tells operations apart. */
static inline unsigned char check_pattern(int src, int dst, size_t i, int salt)
{
    return (unsigned char)(src * 131 + dst * 31 + (int)(i % 251) * 7 + salt * 13);
}

/* Fills the n equal send blocks of rank me with check_pattern. */
static inline void check_fill(unsigned char *s, int me, int n, size_t block, int salt)
{
    int p;
    size_t i;
    for (p = 0; p < n; p++)
        for (i = 0; i < block; i++)
            s[(size_t)p * block + i] = check_pattern(me, p, i, salt);
}

/* A context configured by cfg and, when team is not NULL, a team of
 * MPI_COMM_WORLD on it. NULL if oc_init failed (counted as a failure). */
static inline oc_context_t *check_open_cfg(const oc_config_t *cfg, oc_team_t **team)
{
    oc_context_t *ctx = NULL;
    CHECK_OC(oc_init(cfg, &ctx));
    if (team != NULL && ctx != NULL)
        CHECK_OC(oc_team_create_mpi(ctx, MPI_COMM_WORLD, team));
    return ctx;
}

/* check_open_cfg in the given progress mode with OC_TIMEOUT_S = timeout_s
 * (the rest from the environment). */
static inline oc_context_t *check_open(oc_progress_mode_t mode, double timeout_s,
                                       oc_team_t **team)
{
    oc_config_t cfg;
    CHECK_OC(oc_config_init(&cfg));
    cfg.progress = mode;
    cfg.timeout_s = timeout_s;
    return check_open_cfg(&cfg, team);
}

/* Ends the test: every rank learns the total; rank 0 prints the verdict. */
static inline int check_finish(const char *name)
{
    int total = 0, rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Allreduce(&check_failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("%s: %s (%d failed checks)\n", name, total ? "FAIL" : "PASS", total);
    MPI_Finalize();
    return total ? 1 : 0;
}

#endif
