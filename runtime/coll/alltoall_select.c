#include "oc_coll.h"

#include "oc_error.h"

/* The rule (README, "Algorithm selection"):
 *  - Bruck for blocks up to OC_BRUCK_MAX bytes on 16 ranks or more: log2(n)
 *    messages instead of n-1 pay off when per-message cost dominates;
 *  - ring-k for blocks from OC_RINGK_MIN bytes when n-1 > k: bounded
 *    contention for large transfers;
 *  - burst otherwise: the fewest list hand-offs.
 * Alltoallv has no Bruck; it uses the mean block size. */
oc_alg_t oc_coll_alltoall_select(const oc_config_t *cfg, int v, int persistent, size_t bytes,
                                 int size)
{
    oc_alg_t forced = v ? cfg->alltoallv_alg : cfg->alltoall_alg;
    if (forced != OC_ALG_AUTO && (forced != OC_ALG_PUT || persistent))
        return forced;
    if (!v && bytes <= cfg->bruck_max && size >= 16)
        return OC_ALG_BRUCK;
    if (bytes >= cfg->ringk_min && (unsigned)(size - 1) > cfg->ringk)
        return OC_ALG_RINGK;
    return OC_ALG_BURST;
}

oc_status_t oc_coll_alltoall_build(oc_alg_t alg, const oc_coll_args_t *a, oc_sched_t *s)
{
    switch (alg) {
    case OC_ALG_BURST:    return oc_coll_alltoall_burst(a, s);
    case OC_ALG_PAIRWISE: return oc_coll_alltoall_pairwise(a, s);
    case OC_ALG_RINGK:    return oc_coll_alltoall_ringk(a, a->ringk, s);
    case OC_ALG_BRUCK:    return oc_coll_alltoall_bruck(a, s);
    case OC_ALG_PUT:      return oc_coll_alltoall_put(a, s);
    default: break;
    }
    return oc_error(OC_ERR_INVALID_ARG, "algorithm %d has no schedule builder", (int)alg);
}
