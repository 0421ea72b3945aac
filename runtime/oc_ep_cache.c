/* The endpoint cache: chained hash table keyed by peer address. */
#include <stdlib.h>
#include <string.h>

#include "oc_ep_cache.h"
#include "oc_error.h"

#define EP_CACHE_MIN_BUCKETS 64

/* FNV-1a: addresses are short byte strings that differ anywhere (a UUID,
 * a host name, a process id), and a team hashes each once. */
static uint64_t addr_hash(const unsigned char *p, size_t len)
{
    uint64_t h = 14695981039346656037ull;
    size_t i;
    for (i = 0; i < len; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

static void link_entry(oc_ep_entry_t **buckets, size_t nbuckets, oc_ep_entry_t *e)
{
    oc_ep_entry_t **head = &buckets[e->hash & (nbuckets - 1)];
    e->next = *head;
    *head = e;
}

oc_ep_entry_t *oc_ep_cache_find(const oc_ep_cache_t *c, const void *addr, size_t len)
{
    uint64_t h;
    oc_ep_entry_t *e;

    if (c->count == 0)
        return NULL;
    h = addr_hash(addr, len);
    for (e = c->buckets[h & (c->nbuckets - 1)]; e != NULL; e = e->next)
        if (e->hash == h && e->len == len && memcmp(e->addr, addr, len) == 0)
            return e;
    return NULL;
}

oc_status_t oc_ep_cache_reserve(oc_ep_cache_t *c, size_t more)
{
    size_t want = c->count + more, n = c->nbuckets ? c->nbuckets : EP_CACHE_MIN_BUCKETS, i;
    oc_ep_entry_t **b;

    if (more > SIZE_MAX / 2 / sizeof(*b) - c->count)
        return oc_error(OC_ERR_NO_MEMORY, "endpoint cache of %zu + %zu entries", c->count, more);
    while (n < want)
        n *= 2;
    if (n == c->nbuckets)
        return OC_OK;
    b = calloc(n, sizeof(*b));
    if (b == NULL)
        return oc_error(OC_ERR_NO_MEMORY, "endpoint cache of %zu entries", want);
    for (i = 0; i < c->nbuckets; i++) {
        oc_ep_entry_t *e = c->buckets[i], *next;
        for (; e != NULL; e = next) {
            next = e->next;
            link_entry(b, n, e);
        }
    }
    free(c->buckets);
    c->buckets = b;
    c->nbuckets = n;
    return OC_OK;
}

oc_ep_entry_t *oc_ep_entry_new(const void *addr, size_t len)
{
    oc_ep_entry_t *e = malloc(sizeof(*e) + len);
    if (e == NULL)
        return NULL;
    e->next = NULL;
    e->ep = NULL;
    e->hash = addr_hash(addr, len);
    e->len = len;
    memcpy(e->addr, addr, len);
    return e;
}

void oc_ep_cache_insert(oc_ep_cache_t *c, oc_ep_entry_t *e)
{
    link_entry(c->buckets, c->nbuckets, e);
    c->count++;
}

void oc_ep_cache_clear(oc_ep_cache_t *c)
{
    size_t i;
    for (i = 0; i < c->nbuckets; i++) {
        oc_ep_entry_t *e = c->buckets[i], *next;
        for (; e != NULL; e = next) {
            next = e->next;
            free(e);
        }
    }
    free(c->buckets);
    c->buckets = NULL;
    c->nbuckets = c->count = 0;
}
