#include "oc_coll.h"

/* Burst: every exchange at once, i.e. one ring-k stage holding all n-1
 * distances; the list limit cuts it into several lists. */
oc_status_t oc_coll_alltoall_burst(const oc_coll_args_t *a, oc_sched_t *s)
{
    return oc_coll_alltoall_ringk(a, a->size > 1 ? (unsigned)(a->size - 1) : 1, s);
}
