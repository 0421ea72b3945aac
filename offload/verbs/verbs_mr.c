/*
 * Registration cache for application buffers (sources of puts and
 * rendezvous sends, destinations of rendezvous receives). Persistent
 * collectives and halo plans reuse the same buffers at every start, so a
 * registration is kept after its last use, up to CACHE_MAX of them, least
 * recently used evicted first.
 *
 * A registration pins the physical pages it found. Memory the application
 * unmaps (munmap, free of a large block, madvise DONTNEED, heap trimming)
 * and maps again at the same address has other pages, and a NIC using the
 * old registration would send or overwrite the old ones: silent corruption.
 * So entries are kept only while UCX's memory events (libucm, which hooks
 * those calls for UCX's own cache) report every unmapped range; the hook
 * marks overlapping entries stale, and the owner thread drops them.
 * Without the events a registration lives only as long as its transfers.
 *
 * The hook runs in whichever thread unmaps, possibly inside free(): it
 * takes the lock and touches nothing else. The owner thread therefore never
 * registers, deregisters or frees while holding the lock, since those may
 * unmap and call the hook.
 */
#include "verbs_internal.h"
#include "oc_error.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <ucm/api/ucm.h>
#include <unistd.h>

#define CACHE_MAX 256

/* Sources are registered for local reads only: const data (a table in
 * read-only pages) can be sent, and a send buffer is never writable from
 * the network. Destinations of rendezvous writes need remote write. */
static int access_of(int writable)
{
    return writable ? IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE : 0;
}

static void unmapped(ucm_event_type_t type, ucm_event_t *ev, void *arg)
{
    vb_mr_cache_t *c = arg;
    uintptr_t a = (uintptr_t)ev->vm_unmapped.address, end = a + ev->vm_unmapped.size;
    vb_mr_t *m;

    (void)type;
    pthread_mutex_lock(&c->lock);
    for (m = c->head; m != NULL; m = m->next)
        if (!m->stale && m->start < end && a < m->end) {
            m->stale = 1;
            c->nstale++;
        }
    pthread_mutex_unlock(&c->lock);
}

void vb_mr_cache_init(vb_mr_cache_t *c, struct ibv_pd *pd, int hooks)
{
    memset(c, 0, sizeof(*c));
    c->pd = pd;
    pthread_mutex_init(&c->lock, NULL);
    c->hooked = hooks && ucm_set_event_handler(UCM_EVENT_VM_UNMAPPED, 0, unmapped, c) == UCS_OK;
}

/* Moves *link from the list to the front of *dead (under the lock). */
static void unlink_to(vb_mr_cache_t *c, vb_mr_t **link, vb_mr_t **dead)
{
    vb_mr_t *m = *link;
    *link = m->next;
    m->next = *dead;
    *dead = m;
    c->count--;
    if (m->stale)
        c->nstale--;
}

/* Deregisters and frees what unlink_to collected (without the lock). */
static void release(vb_mr_t *dead)
{
    while (dead != NULL) {
        vb_mr_t *m = dead;
        dead = m->next;
        ibv_dereg_mr(m->mr);
        free(m);
    }
}

/* Under the lock: stale entries nobody holds, and, when full, the least
 * recently used one nobody holds. */
static void collect(vb_mr_cache_t *c, vb_mr_t **dead)
{
    vb_mr_t **p = &c->head, **victim = NULL;
    while (*p != NULL) {
        if ((*p)->refs == 0 && (*p)->stale) {
            unlink_to(c, p, dead);
            continue;
        }
        if ((*p)->refs == 0)
            victim = p;
        p = &(*p)->next;
    }
    if (c->count >= CACHE_MAX && victim != NULL)
        unlink_to(c, victim, dead);
}

/* Under the lock: a live entry covering [a, end) with the access, moved to
 * the front and held; NULL if none. */
static vb_mr_t *lookup(vb_mr_cache_t *c, uintptr_t a, uintptr_t end, int access)
{
    vb_mr_t **p, *m;
    for (p = &c->head; (m = *p) != NULL; p = &m->next)
        if (!m->stale && m->start <= a && end <= m->end && (m->access & access) == access) {
            *p = m->next;
            m->next = c->head;
            c->head = m;
            m->refs++;
            return m;
        }
    return NULL;
}

oc_status_t vb_mr_get(vb_mr_cache_t *c, const void *addr, size_t len, int writable,
                      vb_mr_t **out)
{
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t a = (uintptr_t)addr, end = a + (len ? len : 1);
    int access = access_of(writable);
    vb_mr_t *m, *dead = NULL;

    pthread_mutex_lock(&c->lock);
    if (c->nstale > 0 || c->count >= CACHE_MAX)
        collect(c, &dead);
    m = lookup(c, a, end, access);
    pthread_mutex_unlock(&c->lock);
    release(dead);
    if (m != NULL) {
        *out = m;
        return OC_OK;
    }
    m = calloc(1, sizeof(*m));
    if (m == NULL)
        return oc_error(OC_ERR_NO_MEMORY, "verbs: registration cache entry");
    m->start = a & ~(page - 1);
    m->end = (end + page - 1) & ~(page - 1);
    m->access = access;
    m->refs = 1;
    m->mr = ibv_reg_mr(c->pd, (void *)m->start, m->end - m->start, access);
    if (m->mr == NULL) {
        int err = errno;
        free(m);
        return oc_error(OC_ERR_BACKEND, "verbs: ibv_reg_mr of %zu bytes at %p failed: %s", len,
                        addr, strerror(err));
    }
    /* The buffer belongs to a transfer being posted, so it cannot be
     * unmapped between the registration and this insertion. */
    pthread_mutex_lock(&c->lock);
    m->next = c->head;
    c->head = m;
    c->count++;
    pthread_mutex_unlock(&c->lock);
    *out = m;
    return OC_OK;
}

void vb_mr_put(vb_mr_cache_t *c, vb_mr_t *m)
{
    vb_mr_t **p, *dead = NULL;
    if (m == NULL)
        return;
    pthread_mutex_lock(&c->lock);
    if (--m->refs == 0 && (m->stale || !c->hooked)) {
        for (p = &c->head; *p != m; p = &(*p)->next)
            ;
        unlink_to(c, p, &dead);
    }
    pthread_mutex_unlock(&c->lock);
    release(dead);
}

void vb_mr_cache_fini(vb_mr_cache_t *c)
{
    if (c->pd == NULL)
        return;
    if (c->hooked)
        ucm_unset_event_handler(UCM_EVENT_VM_UNMAPPED, unmapped, c);
    release(c->head);
    c->head = NULL;
    c->count = c->nstale = 0;
    pthread_mutex_destroy(&c->lock);
    c->pd = NULL;
}
