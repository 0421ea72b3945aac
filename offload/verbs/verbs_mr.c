/*
 * Registration cache for application buffers (sources of puts and
 * rendezvous sends, destinations of rendezvous receives). Persistent
 * collectives and halo plans reuse the same buffers at every start, so a
 * registration is kept after its last use, up to CACHE_MAX of them, least
 * recently used evicted first.
 *
 * Caveat, as with every cache without memory hooks: a buffer the
 * application frees and the allocator maps again at the same address would
 * reuse the old registration. On a real HCA the old pages stay pinned and
 * would be sent. Window memory is the backend's own and is dropped from the
 * cache when it is freed (vb_mr_invalidate).
 */
#include "verbs_internal.h"
#include "oc_error.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CACHE_MAX 256

/* Sources are registered for local reads only: const data (a table in
 * read-only pages) can be sent, and a send buffer is never writable from
 * the network. Destinations of rendezvous writes need remote write. */
static int access_of(int writable)
{
    return writable ? IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE : 0;
}

static void drop(vb_mr_cache_t *c, vb_mr_t **link)
{
    vb_mr_t *m = *link;
    *link = m->next;
    ibv_dereg_mr(m->mr);
    free(m);
    c->count--;
}

/* Makes room: the least recently used entry nobody holds goes. */
static void evict(vb_mr_cache_t *c)
{
    vb_mr_t **p, **victim = NULL;
    for (p = &c->head; *p != NULL; p = &(*p)->next)
        if ((*p)->refs == 0)
            victim = p;
    if (victim != NULL)
        drop(c, victim);
}

oc_status_t vb_mr_get(vb_mr_cache_t *c, const void *addr, size_t len, int writable,
                      vb_mr_t **out)
{
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t a = (uintptr_t)addr, end = a + (len ? len : 1);
    int access = access_of(writable);
    vb_mr_t **p, *m;

    for (p = &c->head; (m = *p) != NULL; p = &m->next)
        if (!m->stale && m->start <= a && end <= m->end && (m->access & access) == access) {
            *p = m->next; /* to the front */
            m->next = c->head;
            c->head = m;
            m->refs++;
            *out = m;
            return OC_OK;
        }
    if (c->count >= CACHE_MAX)
        evict(c);
    m = calloc(1, sizeof(*m));
    if (m == NULL)
        return oc_error(OC_ERR_NO_MEMORY, "verbs: registration cache entry");
    m->start = a & ~(page - 1);
    m->end = (end + page - 1) & ~(page - 1);
    m->access = access;
    m->mr = ibv_reg_mr(c->pd, (void *)m->start, m->end - m->start, access);
    if (m->mr == NULL) {
        int err = errno;
        free(m);
        return oc_error(OC_ERR_BACKEND, "verbs: ibv_reg_mr of %zu bytes at %p failed: %s", len,
                        addr, strerror(err));
    }
    m->refs = 1;
    m->next = c->head;
    c->head = m;
    c->count++;
    *out = m;
    return OC_OK;
}

void vb_mr_put(vb_mr_cache_t *c, vb_mr_t *m)
{
    vb_mr_t **p;
    if (m == NULL || --m->refs > 0 || !m->stale)
        return;
    for (p = &c->head; *p != m; p = &(*p)->next)
        ;
    drop(c, p);
}

void vb_mr_invalidate(vb_mr_cache_t *c, const void *addr, size_t len)
{
    uintptr_t a = (uintptr_t)addr, end = a + len;
    vb_mr_t **p = &c->head;
    while (*p != NULL) {
        vb_mr_t *m = *p;
        if (m->start < end && a < m->end) {
            if (m->refs == 0) {
                drop(c, p);
                continue;
            }
            m->stale = 1;
        }
        p = &m->next;
    }
}

void vb_mr_cache_fini(vb_mr_cache_t *c)
{
    while (c->head != NULL)
        drop(c, &c->head);
}
