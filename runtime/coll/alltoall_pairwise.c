#include "oc_coll.h"

/* Pairwise (ring-1): one send/receive pair per stage, n-1 stages; the least
 * contention and the most list hand-offs. */
oc_status_t oc_coll_alltoall_pairwise(const oc_coll_args_t *a, oc_sched_t *s)
{
    return oc_coll_alltoall_ringk(a, 1, s);
}
