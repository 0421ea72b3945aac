/*
 * The context's endpoint cache: one backend endpoint per peer address,
 * shared by every team of the context. Entries are found through a hash of
 * the address, so that creating a team of n members costs O(n) look-ups
 * whatever the number of endpoints already known (a linear list made team
 * creation quadratic in the number of ranks). Engine context only: no lock.
 */
#ifndef OC_EP_CACHE_H
#define OC_EP_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "oc_nic.h"

typedef struct oc_ep_entry {
    struct oc_ep_entry *next; /* in its bucket */
    oc_nic_ep_t *ep;          /* the backend's; the cache never closes it */
    uint64_t hash;
    size_t len;
    unsigned char addr[];
} oc_ep_entry_t;

typedef struct {
    oc_ep_entry_t **buckets; /* nbuckets heads, a power of two; NULL while empty */
    size_t nbuckets, count;
} oc_ep_cache_t;

/** The entry for the address, or NULL. */
oc_ep_entry_t *oc_ep_cache_find(const oc_ep_cache_t *c, const void *addr, size_t len);

/** Makes room for more entries at one per bucket, so that the inserts that
 *  follow never allocate the table. OC_ERR_NO_MEMORY leaves the cache as it
 *  was. */
oc_status_t oc_ep_cache_reserve(oc_ep_cache_t *c, size_t more);

/** A new entry for the address, not yet in the cache (ep NULL), or NULL
 *  without memory. The caller fills ep, then inserts it or frees it. */
oc_ep_entry_t *oc_ep_entry_new(const void *addr, size_t len);

/** Adds an entry from oc_ep_entry_new, within room reserved before; the
 *  cache owns it from now on. */
void oc_ep_cache_insert(oc_ep_cache_t *c, oc_ep_entry_t *e);

/** Frees every entry and the table (the endpoints go with the backend). */
void oc_ep_cache_clear(oc_ep_cache_t *c);

#endif /* OC_EP_CACHE_H */
