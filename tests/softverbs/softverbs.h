/*
 * softverbs extensions: the cross-channel WAIT that upstream rdma-core
 * lacks, and a counter that tests read.
 *
 * A real NIC offers the WAIT only through vendor routes (CORE-Direct's
 * CQE_WAIT, today mlx5 raw WQEs); softverbs offers it through two calls so
 * that a backend's "NIC holds the trigger" variant can be tested without one.
 * A program that is linked against the real libibverbs and runs with
 * softverbs preloaded finds them with dlsym(RTLD_DEFAULT, "softverbs_...").
 */
#ifndef SOFTVERBS_H
#define SOFTVERBS_H

#include <infiniband/verbs.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Capability bits reported by softverbs_query_caps(). */
#define SOFTVERBS_CAP_CQE_WAIT (1ULL << 0)

/*
 * Capabilities of an opened context. Returns 0, EINVAL for NULL arguments,
 * ENODEV when the context does not belong to softverbs (a real device).
 */
int softverbs_query_caps(struct ibv_context *context, uint64_t *caps);

/*
 * Post a WAIT work request on qp's send queue: the WRs posted after it
 * start only once cq has produced `count` more completions, counted from
 * the CQ's wait index. Each WAIT advances that index by `count` at post
 * time, like CORE-Direct's CQE_WAIT: two WAITs of 2 on the same CQ release
 * after its 2nd and its 4th completion (counted since the CQ was created).
 * cq must belong to the same context as qp. A WAIT produces no completion
 * of its own, except a flush error carrying wr_id when the QP goes to error
 * while it is queued. Returns 0 or an errno value as ibv_post_send does
 * (EINVAL: bad argument or QP not in RTS; ENOMEM: send queue full).
 */
int softverbs_post_wait(struct ibv_qp *qp, struct ibv_cq *cq, uint32_t count, uint64_t wr_id);

/* What softverbs_query_stats() reports. */
struct softverbs_stats {
    uint64_t rnr_naks; /* RNR NAKs received by requesters: on a NIC, each costs a retry delay */
    uint64_t mr_registrations; /* successful ibv_reg_mr calls: each pins pages, tens of us on a NIC */
};

/*
 * The counters of an opened context, or, with context NULL, the sum over
 * every context this process has opened, closed ones included (for a test
 * whose contexts are hidden inside a library). Returns 0, EINVAL for a NULL
 * stats, ENODEV when the context does not belong to softverbs.
 */
int softverbs_query_stats(struct ibv_context *context, struct softverbs_stats *stats);

#ifdef __cplusplus
}
#endif

#endif
