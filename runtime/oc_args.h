/* Argument checks of oc_ialltoall(v) and oc_alltoall(v)_init (oc_args.c). */
#ifndef OC_ARGS_H
#define OC_ARGS_H

#include "oc_runtime.h"

/* team and req given, block * team size within size_t, buffers where bytes
 * go, sbuf and rbuf apart (or sbuf OC_IN_PLACE). */
oc_status_t oc_args_check_alltoall(const char *fn, const oc_team_t *team, const void *sbuf,
                                   void *rbuf, size_t block, oc_request_t **req);

/* As above, and every block inside its buffer; receive blocks disjoint
 * (allocation-free up to 64 ranks, or with displacements in rank order). */
oc_status_t oc_args_check_alltoallv(const char *fn, const oc_team_t *team, const void *sbuf,
                                    size_t sbuf_bytes, const size_t *scounts,
                                    const size_t *sdispls, void *rbuf, size_t rbuf_bytes,
                                    const size_t *rcounts, const size_t *rdispls,
                                    oc_request_t **req);

#endif
