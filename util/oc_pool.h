/*
 * A free list of equal-size nodes whose first ones are made in one block
 * with the pool, so that a backend can hold that many things at once (a
 * receive, an early message) without allocating while transfers run, where
 * a failed malloc would cost a message rather than a call's status. Past the
 * block, nodes come from malloc and are kept for reuse once put back.
 * One owner: not thread-safe.
 */
#ifndef OC_POOL_H
#define OC_POOL_H

#include <stddef.h>

typedef struct {
    void *spare;             /* free nodes, linked through their first bytes */
    char *block, *block_end; /* the nodes made with the pool */
    size_t size;             /* bytes per node, rounded up for alignment */
} oc_pool_t;

/* count nodes of size bytes (at least a pointer's); -1 if out of memory. */
int oc_pool_init(oc_pool_t *p, size_t size, unsigned count);
/* A node (uninitialised); NULL only when the block's are taken and malloc fails. */
void *oc_pool_get(oc_pool_t *p);
/* Gives a node of p back. */
void oc_pool_put(oc_pool_t *p, void *node);
/* Frees the pool; the nodes taken must have been put back. */
void oc_pool_fini(oc_pool_t *p);

#endif
