#include "oc_sched.h"
#include "oc_error.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Scratch blocks are chained, so that tasks built on an earlier block stay
 * valid when a second builder adds its own to the same schedule. */
typedef struct oc_sched_scratch {
    struct oc_sched_scratch *next;
    size_t size;
    max_align_t data[];
} scratch_block_t;

void oc_sched_init(oc_sched_t *s, size_t list_max)
{
    memset(s, 0, sizeof(*s));
    s->list_max = list_max;
}

static void free_chain(scratch_block_t *b)
{
    while (b != NULL) {
        scratch_block_t *next = b->next;
        free(b);
        b = next;
    }
}

void oc_sched_fini(oc_sched_t *s)
{
    free_chain(s->scratch);
    free_chain(s->scratch_free);
    free(s->tasks);
    free(s->lists);
    memset(s, 0, sizeof(*s));
}

void oc_sched_clear(oc_sched_t *s, size_t list_max)
{
    /* only the last build's: blocks of growing sizes must not pile up */
    free_chain(s->scratch_free);
    s->scratch_free = s->scratch;
    s->scratch = NULL;
    s->ntasks = s->nlists = 0;
    s->list_open = 0;
    s->list_max = list_max;
}

void oc_sched_end_list(oc_sched_t *s)
{
    s->list_open = 0;
}

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    size_t ncap;
    void *np;
    if (need <= *cap)
        return 0;
    ncap = *cap ? *cap * 2 : 16;
    while (ncap < need)
        ncap *= 2;
    np = realloc(*p, ncap * elem);
    if (np == NULL)
        return -1;
    *p = np;
    *cap = ncap;
    return 0;
}

oc_status_t oc_sched_reserve(oc_sched_t *s, size_t n)
{
    size_t need = s->ntasks + n;
    oc_task_t *t;
    if (n > SIZE_MAX / sizeof(*t) - s->ntasks)
        return oc_error(OC_ERR_NO_MEMORY, "schedule: %zu more tasks overflow", n);
    if (need <= s->tasks_cap)
        return OC_OK;
    t = realloc(s->tasks, need * sizeof(*t));
    if (t == NULL)
        return oc_error(OC_ERR_NO_MEMORY, "schedule: out of memory (%zu tasks)", need);
    s->tasks = t;
    s->tasks_cap = need;
    return OC_OK;
}

oc_status_t oc_sched_add(oc_sched_t *s, const oc_task_t *tasks, size_t n)
{
    oc_task_list_t *cur;

    if (n == 0)
        return OC_OK;
    if (n > s->list_max)
        return oc_error(OC_ERR_INTERNAL,
                        "a group of %zu tasks cannot fit a list of OC_LIST_MAX=%zu",
                        n, s->list_max);
    if (grow((void **)&s->tasks, &s->tasks_cap, s->ntasks + n, sizeof(*s->tasks)) ||
        grow((void **)&s->lists, &s->lists_cap, s->nlists + 1, sizeof(*s->lists)))
        return oc_error(OC_ERR_NO_MEMORY, "schedule: out of memory (%zu tasks)",
                        s->ntasks + n);
    cur = s->nlists ? &s->lists[s->nlists - 1] : NULL;
    if (!s->list_open || cur == NULL || cur->ntasks + n > s->list_max) {
        cur = &s->lists[s->nlists++];
        cur->first = (uint32_t)s->ntasks;
        cur->ntasks = 0;
        s->list_open = 1;
    }
    memcpy(&s->tasks[s->ntasks], tasks, n * sizeof(*tasks));
    s->ntasks += n;
    cur->ntasks += (uint32_t)n;
    return OC_OK;
}

void *oc_sched_scratch(oc_sched_t *s, size_t size)
{
    scratch_block_t *b, **p;
    for (p = &s->scratch_free; *p != NULL && (*p)->size < size; p = &(*p)->next)
        ;
    if ((b = *p) != NULL) {
        *p = b->next;
    } else {
        if (size > SIZE_MAX - sizeof(*b) || (b = malloc(sizeof(*b) + size)) == NULL)
            return NULL;
        b->size = size;
    }
    b->next = s->scratch;
    s->scratch = b;
    return b->data;
}

/* One plane of rows. Offsets from the base, so that a negative stride never
 * forms a pointer before the buffer. */
static inline void copy_rows(char *dst, ptrdiff_t dst_stride, const char *src,
                             ptrdiff_t src_stride, size_t count, size_t len)
{
    size_t i;
    for (i = 0; i < count; i++)
        memcpy(dst + (ptrdiff_t)i * dst_stride, src + (ptrdiff_t)i * src_stride, len);
}

static void do_copy(const oc_task_t *t)
{
    size_t j;
    for (j = 0; j < t->count2; j++) {
        char *dst = (char *)t->dst + (ptrdiff_t)j * t->dst_stride2;
        const char *src = (const char *)t->src + (ptrdiff_t)j * t->src_stride2;
        /* Rows of a few elements (a halo face across the fastest dimension:
         * one row per ghost width) get a length known when compiling, so
         * that each is a few moves rather than a call to memcpy. */
        switch (t->len) {
        case 4: copy_rows(dst, t->dst_stride, src, t->src_stride, t->count, 4); break;
        case 8: copy_rows(dst, t->dst_stride, src, t->src_stride, t->count, 8); break;
        case 12: copy_rows(dst, t->dst_stride, src, t->src_stride, t->count, 12); break;
        case 16: copy_rows(dst, t->dst_stride, src, t->src_stride, t->count, 16); break;
        case 24: copy_rows(dst, t->dst_stride, src, t->src_stride, t->count, 24); break;
        case 32: copy_rows(dst, t->dst_stride, src, t->src_stride, t->count, 32); break;
        default: copy_rows(dst, t->dst_stride, src, t->src_stride, t->count, t->len); break;
        }
    }
}

void oc_task_do_copies(const oc_task_t *tasks, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++)
        if (tasks[i].type == OC_TASK_COPY)
            do_copy(&tasks[i]);
    /* A copy may write a peer's window mapped into this process; the
     * notification posted after it must not become visible first. */
    atomic_thread_fence(memory_order_release);
}
