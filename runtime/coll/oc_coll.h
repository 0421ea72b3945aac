/*
 * Collective algorithms: each turns one call into a schedule and does nothing
 * else. Alltoall and alltoallv share the argument form below (NULL count
 * arrays mean equal blocks of `block` bytes).
 */
#ifndef OC_COLL_H
#define OC_COLL_H

#include "oc_sched.h"
#include "oc_win.h"
#include "offcoll.h"

/* The put algorithm's landing zones at one parity of the starts (persistent
 * requests only; runtime/oc_persist.c creates the window and agrees on the
 * offsets with the peers). */
typedef struct {
    oc_win_t *win;
    unsigned counter;        /* the parity's notification counter */
    const size_t *remote;    /* by peer: where this rank's block lands in the peer's window */
    const size_t *local;     /* by peer: where the peer's block lands in this rank's window */
} oc_coll_put_t;

typedef struct {
    int rank, size;
    const char *sbuf;
    char *rbuf;
    size_t block;                     /* equal-block form */
    const size_t *scounts, *sdispls;  /* variable form, in bytes */
    const size_t *rcounts, *rdispls;
    unsigned ringk;
    const oc_coll_put_t *put;         /* the put algorithm's zones, else NULL */
    /* One-shot: the members' sizes were not compared (a persistent set-up
     * compares them), so a zero count still exchanges a zero-byte message:
     * against a peer's non-zero count it is a mismatch, where no message at
     * all would leave the peer's data unreceived (eager: lost with OC_OK;
     * rendezvous: a sender waiting until OC_TIMEOUT_S). */
    int unagreed;
} oc_coll_args_t;

static inline size_t oc_coll_scount(const oc_coll_args_t *a, int p)
{
    return a->scounts ? a->scounts[p] : a->block;
}
static inline size_t oc_coll_sdispl(const oc_coll_args_t *a, int p)
{
    return a->sdispls ? a->sdispls[p] : (size_t)p * a->block;
}
static inline size_t oc_coll_rcount(const oc_coll_args_t *a, int p)
{
    return a->rcounts ? a->rcounts[p] : a->block;
}
static inline size_t oc_coll_rdispl(const oc_coll_args_t *a, int p)
{
    return a->rdispls ? a->rdispls[p] : (size_t)p * a->block;
}

/* put: whether this rank and peer q exchange anything, either way; such a
 * pair notifies each other every start, the others never. */
static inline int oc_coll_put_pair(const oc_coll_args_t *a, int q)
{
    return q != a->rank && (oc_coll_scount(a, q) > 0 || oc_coll_rcount(a, q) > 0);
}

/* ring-k: stage s exchanges with the k peers at distances (s-1)k+1 .. sk. */
oc_status_t oc_coll_alltoall_ringk(const oc_coll_args_t *a, unsigned k, oc_sched_t *s);
oc_status_t oc_coll_alltoall_burst(const oc_coll_args_t *a, oc_sched_t *s);
oc_status_t oc_coll_alltoall_pairwise(const oc_coll_args_t *a, oc_sched_t *s);
/* Equal blocks only. */
oc_status_t oc_coll_alltoall_bruck(const oc_coll_args_t *a, oc_sched_t *s);
/* Needs a->put. */
oc_status_t oc_coll_alltoall_put(const oc_coll_args_t *a, oc_sched_t *s);

/* The algorithm `auto` resolves to (README documents the rule); v selects
 * the alltoallv rule, where `bytes` is the mean block size. put is only
 * chosen for a persistent request; the members agree on it at set-up. */
oc_alg_t oc_coll_alltoall_select(const oc_config_t *cfg, int v, int persistent, size_t bytes,
                                 int size);

/* Builds the schedule of alg (not auto) into s. */
oc_status_t oc_coll_alltoall_build(oc_alg_t alg, const oc_coll_args_t *a, oc_sched_t *s);

#endif
