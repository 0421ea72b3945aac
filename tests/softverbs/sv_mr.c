/*
 * Memory regions: keys, access flags and bounds. Keys are never reused
 * within a context, so a stale rkey of a deregistered region fails the way
 * it does on a NIC instead of hitting a newer region by chance.
 */
#include "sv_internal.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>

/* Outlives the contexts, as the RNR NAK count does. */
static _Atomic uint64_t sv_process_mr_registrations;

uint64_t sv_mr_registrations_total(void)
{
    return atomic_load(&sv_process_mr_registrations);
}

static const unsigned int sv_known_access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                                            IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
                                            IBV_ACCESS_RELAXED_ORDERING;

struct sv_mr *sv_mr_find(struct sv_ctx *ctx, uint32_t key)
{
    for (struct sv_mr *mr = ctx->mrs; mr != NULL; mr = mr->next) {
        if (mr->ibv.lkey == key) {
            return mr;
        }
    }
    return NULL;
}

void *sv_mr_translate(const struct sv_mr *mr, uint64_t iova, uint64_t len)
{
    if (iova < mr->iova || len > mr->ibv.length || iova - mr->iova > mr->ibv.length - len) {
        return NULL;
    }
    return (char *)mr->ibv.addr + (iova - mr->iova);
}

SV_EXPORT struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
                                          unsigned int access)
{
    /* As the kernel: remote write or atomic access needs local write. */
    bool remote_w = (access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) != 0;
    if (pd == NULL || !sv_is_ours(pd->context) || (addr == NULL && length != 0) || (access & ~sv_known_access) != 0 ||
        (remote_w && !(access & IBV_ACCESS_LOCAL_WRITE))) {
        errno = EINVAL;
        return NULL;
    }
    struct sv_ctx *ctx = sv_ctx_of(pd->context);
    if (length > ctx->max_mr_size) {
        errno = EINVAL;
        return NULL;
    }
    struct sv_mr *mr = calloc(1, sizeof *mr);
    if (mr == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    mr->ibv.context = pd->context;
    mr->ibv.pd = pd;
    mr->ibv.addr = addr;
    mr->ibv.length = length;
    mr->iova = iova;
    mr->access = access;
    pthread_mutex_lock(&ctx->lock);
    /* An index in the high bits, a per-context byte in the low ones, as
     * mlx5 keys look; zero is never a valid key. */
    mr->ibv.lkey = ++ctx->key_seq << 8 | (ctx->lid & 0xff);
    mr->ibv.rkey = mr->ibv.lkey;
    mr->next = ctx->mrs;
    ctx->mrs = mr;
    ctx->objects++;
    ctx->mr_registrations++;
    pthread_mutex_unlock(&ctx->lock);
    atomic_fetch_add(&sv_process_mr_registrations, 1);
    return &mr->ibv;
}

/* Parenthesised: verbs.h defines a macro of the same name. */
SV_EXPORT struct ibv_mr *(ibv_reg_mr)(struct ibv_pd *pd, void *addr, size_t length, int access)
{
    return ibv_reg_mr_iova2(pd, addr, length, (uintptr_t)addr, (unsigned int)access);
}

SV_EXPORT int ibv_dereg_mr(struct ibv_mr *ibv_mr)
{
    if (ibv_mr == NULL || !sv_is_ours(ibv_mr->context)) {
        return EINVAL;
    }
    struct sv_ctx *ctx = sv_ctx_of(ibv_mr->context);
    struct sv_mr *mr = sv_container_of(ibv_mr, struct sv_mr, ibv);
    pthread_mutex_lock(&ctx->lock);
    struct sv_mr **link = &ctx->mrs;
    while (*link != NULL && *link != mr) {
        link = &(*link)->next;
    }
    if (*link == NULL) {
        pthread_mutex_unlock(&ctx->lock);
        return EINVAL;
    }
    *link = mr->next;
    ctx->objects--;
    pthread_mutex_unlock(&ctx->lock);
    free(mr);
    return 0;
}
