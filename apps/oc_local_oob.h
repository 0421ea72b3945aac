/*
 * An out-of-band allgather for teams whose members are threads of one
 * process (offcoll_info, engine tests). Header-only; not part of the library.
 */
#ifndef OC_LOCAL_OOB_H
#define OC_LOCAL_OOB_H

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "offcoll.h"

typedef struct {
    pthread_barrier_t barrier;
    int size;
    void **slots; /* each member's contribution, by rank */
} oc_local_oob_t;

typedef struct {
    oc_local_oob_t *oob;
    int rank;
} oc_local_member_t;

static inline int oc_local_oob_init(oc_local_oob_t *o, int size)
{
    o->size = size;
    o->slots = (void **)calloc((size_t)size, sizeof(void *));
    return o->slots == NULL || pthread_barrier_init(&o->barrier, NULL, (unsigned)size) != 0;
}

static inline void oc_local_oob_fini(oc_local_oob_t *o)
{
    pthread_barrier_destroy(&o->barrier);
    free(o->slots);
}

static inline int oc_local_oob_allgather(const void *src, void *dst, size_t len, void *arg)
{
    oc_local_member_t *m = (oc_local_member_t *)arg;
    oc_local_oob_t *o = m->oob;
    int r;
    o->slots[m->rank] = (void *)src;
    pthread_barrier_wait(&o->barrier);
    for (r = 0; r < o->size; r++)
        memcpy((char *)dst + (size_t)r * len, o->slots[r], len);
    pthread_barrier_wait(&o->barrier); /* sources stay valid until all copied */
    return 0;
}

static inline oc_team_params_t oc_local_team_params(oc_local_member_t *m)
{
    oc_team_params_t p;
    p.rank = m->rank;
    p.size = m->oob->size;
    p.allgather = oc_local_oob_allgather;
    p.arg = m;
    return p;
}

#endif
