/*
 * Set-up of persistent all-to-alls (oc_alltoall_init, oc_alltoallv_init):
 * the members agree on the algorithm and check each other's block sizes
 * before any start, and the put algorithm gets its window of landing zones.
 */
#ifndef OC_PERSIST_H
#define OC_PERSIST_H

#include "coll/oc_coll.h"
#include "oc_runtime.h"

/* The put algorithm's window and the zones of both parities. */
typedef struct {
    oc_win_t *win;
    size_t *at;                 /* remote[2][size] then local[2][size] */
    oc_coll_put_t zones[2];     /* by parity of the start */
} oc_persist_put_t;

/* Collective: every member passes its status so far (st) and its choice of
 * algorithm (*alg); a failure anywhere fails all. Checks that each block
 * sent is as large as its receiver expects and that what the members run
 * can work together. *alg becomes what this member runs: put only where
 * every member chose it, `fallback` where this one chose put alone. With
 * put agreed, fills *put (window included: oc_persist_put_attach gives it to the request). */
oc_status_t oc_persist_agree(const char *fn, oc_team_t *team, oc_status_t st, int v,
                             const oc_coll_args_t *a, oc_alg_t *alg, oc_alg_t fallback,
                             oc_persist_put_t *put);

/* Makes req run the put algorithm: put's window, one schedule per parity of
 * the starts, the peers it exchanges anything with (by its arguments a) and
 * the timeout report that names those whose blocks never came. */
oc_status_t oc_persist_put_attach(const char *fn, oc_request_t *req, const oc_coll_args_t *a,
                                  const oc_persist_put_t *put);

/* Frees put's offsets (its window is the request's). */
void oc_persist_put_fini(oc_persist_put_t *put);

#endif
