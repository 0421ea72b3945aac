/* Node pools (oc_pool.h). */
#include "oc_pool.h"

#include <stdalign.h>
#include <stdint.h>
#include <stdlib.h>

int oc_pool_init(oc_pool_t *p, size_t size, unsigned count)
{
    const size_t align = alignof(max_align_t);
    unsigned i;
    if (size < sizeof(void *))
        size = sizeof(void *);
    p->size = (size + align - 1) / align * align;
    p->spare = NULL;
    p->block = malloc(p->size * count);
    p->block_end = p->block != NULL ? p->block + p->size * count : NULL;
    if (p->block == NULL && count > 0)
        return -1;
    for (i = count; i-- > 0;)
        oc_pool_put(p, p->block + p->size * i);
    return 0;
}

void *oc_pool_get(oc_pool_t *p)
{
    void *node = p->spare;
    if (node == NULL)
        return malloc(p->size);
    p->spare = *(void **)node;
    return node;
}

void oc_pool_put(oc_pool_t *p, void *node)
{
    *(void **)node = p->spare;
    p->spare = node;
}

void oc_pool_fini(oc_pool_t *p)
{
    while (p->spare != NULL) {
        void *node = p->spare;
        uintptr_t at = (uintptr_t)node;
        p->spare = *(void **)node;
        if (at < (uintptr_t)p->block || at >= (uintptr_t)p->block_end)
            free(node);
    }
    free(p->block);
    p->block = p->block_end = NULL;
}
