/*
 * Completion queues and completion channels.
 *
 * A channel's fd is the read end of a pipe holding one byte per queued
 * event, so poll/epoll on it behave as on a real channel, and a blocking
 * or O_NONBLOCK read in ibv_get_cq_event behaves as the kernel's does.
 */
#include "sv_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

SV_EXPORT struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
    if (!sv_is_ours(context)) {
        errno = EINVAL;
        return NULL;
    }
    struct sv_channel *ch = calloc(1, sizeof *ch);
    int fds[2];
    if (ch == NULL || pipe2(fds, O_CLOEXEC) != 0) {
        int err = ch == NULL ? ENOMEM : errno;
        free(ch);
        errno = err;
        return NULL;
    }
    struct sv_ctx *ctx = sv_ctx_of(context);
    ch->ibv.context = context;
    ch->ibv.fd = fds[0];
    ch->write_fd = fds[1];
    pthread_mutex_lock(&ctx->lock);
    ctx->objects++;
    pthread_mutex_unlock(&ctx->lock);
    return &ch->ibv;
}

SV_EXPORT int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
    if (channel == NULL || !sv_is_ours(channel->context)) {
        return EINVAL;
    }
    struct sv_ctx *ctx = sv_ctx_of(channel->context);
    struct sv_channel *ch = sv_container_of(channel, struct sv_channel, ibv);
    pthread_mutex_lock(&ctx->lock);
    if (ch->refs != 0) {
        pthread_mutex_unlock(&ctx->lock);
        return EBUSY;
    }
    ctx->objects--;
    pthread_mutex_unlock(&ctx->lock);
    /* No CQ left means no event left: destroy_cq removed its own. */
    close(ch->ibv.fd);
    close(ch->write_fd);
    free(ch);
    return 0;
}

SV_EXPORT struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
                                       struct ibv_comp_channel *channel, int comp_vector)
{
    if (!sv_is_ours(context) || cqe < 1 || cqe > sv_ctx_of(context)->max_cqe ||
        comp_vector != 0 ||
        (channel != NULL && channel->context != context)) {
        errno = EINVAL;
        return NULL;
    }
    struct sv_cq *cq = calloc(1, sizeof *cq);
    struct sv_cqe *ring = calloc((size_t)cqe, sizeof *ring);
    if (cq == NULL || ring == NULL) {
        free(cq);
        free(ring);
        errno = ENOMEM;
        return NULL;
    }
    struct sv_ctx *ctx = sv_ctx_of(context);
    cq->ibv.context = context;
    cq->ibv.channel = channel;
    cq->ibv.cq_context = cq_context;
    cq->ibv.cqe = cqe;
    pthread_mutex_init(&cq->ibv.mutex, NULL);
    pthread_cond_init(&cq->ibv.cond, NULL);
    cq->ring = ring;
    cq->cap = (uint32_t)cqe;
    pthread_mutex_lock(&ctx->lock);
    if (channel != NULL) {
        sv_container_of(channel, struct sv_channel, ibv)->refs++;
    }
    ctx->objects++;
    pthread_mutex_unlock(&ctx->lock);
    return &cq->ibv;
}

/*
 * The real call blocks until every event handed out by ibv_get_cq_event
 * has been acknowledged; here that is EBUSY, so that a missing ack in the
 * code under test fails visibly instead of hanging it.
 */
SV_EXPORT int ibv_destroy_cq(struct ibv_cq *ibv_cq)
{
    if (ibv_cq == NULL || !sv_is_ours(ibv_cq->context)) {
        return EINVAL;
    }
    struct sv_ctx *ctx = sv_ctx_of(ibv_cq->context);
    struct sv_cq *cq = sv_container_of(ibv_cq, struct sv_cq, ibv);
    pthread_mutex_lock(&ctx->lock);
    if (cq->refs != 0 || cq->events_reported != ibv_cq->comp_events_completed) {
        pthread_mutex_unlock(&ctx->lock);
        return EBUSY;
    }
    if (ibv_cq->channel != NULL) {
        struct sv_channel *ch = sv_container_of(ibv_cq->channel, struct sv_channel, ibv);
        /* Queued, not yet read events go with the CQ, as the kernel drops
         * them; their bytes stay and ibv_get_cq_event skips them. */
        struct sv_event **link = &ch->head;
        ch->tail = NULL;
        while (*link != NULL) {
            if ((*link)->cq == cq) {
                struct sv_event *gone = *link;
                *link = gone->next;
                free(gone);
            } else {
                ch->tail = *link;
                link = &(*link)->next;
            }
        }
        ch->refs--;
    }
    ctx->objects--;
    pthread_mutex_unlock(&ctx->lock);
    pthread_mutex_destroy(&ibv_cq->mutex);
    pthread_cond_destroy(&ibv_cq->cond);
    free(cq->ring);
    free(cq);
    return 0;
}

SV_EXPORT int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq_out, void **cq_context)
{
    if (channel == NULL || cq_out == NULL || cq_context == NULL || !sv_is_ours(channel->context)) {
        errno = EINVAL;
        return -1;
    }
    struct sv_ctx *ctx = sv_ctx_of(channel->context);
    struct sv_channel *ch = sv_container_of(channel, struct sv_channel, ibv);
    for (;;) {
        char byte;
        ssize_t n = read(channel->fd, &byte, 1);
        if (n != 1) {
            if (n == 0) {
                errno = EIO;
            }
            return -1; /* EAGAIN on an O_NONBLOCK fd, as the real one */
        }
        pthread_mutex_lock(&ctx->lock);
        struct sv_event *ev = ch->head;
        if (ev != NULL) {
            ch->head = ev->next;
            if (ch->head == NULL) {
                ch->tail = NULL;
            }
            ev->cq->events_reported++;
            *cq_out = &ev->cq->ibv;
            *cq_context = ev->cq->ibv.cq_context;
        }
        pthread_mutex_unlock(&ctx->lock);
        if (ev != NULL) {
            free(ev);
            return 0;
        }
    }
}

SV_EXPORT void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
    if (cq == NULL || !sv_is_ours(cq->context)) {
        return;
    }
    struct sv_ctx *ctx = sv_ctx_of(cq->context);
    pthread_mutex_lock(&ctx->lock);
    cq->comp_events_completed += nevents;
    pthread_mutex_unlock(&ctx->lock);
}

int sv_req_notify_cq(struct ibv_cq *ibv_cq, int solicited_only)
{
    if (ibv_cq == NULL || ibv_cq->channel == NULL) {
        return EINVAL;
    }
    struct sv_ctx *ctx = sv_ctx_of(ibv_cq->context);
    pthread_mutex_lock(&ctx->lock);
    struct sv_cq *cq = sv_container_of(ibv_cq, struct sv_cq, ibv);
    enum sv_arm want = solicited_only ? SV_ARM_SOLICITED : SV_ARM_ANY;
    if (cq->arm < want) {
        cq->arm = want;
    }
    pthread_mutex_unlock(&ctx->lock);
    return 0;
}

int sv_poll_cq(struct ibv_cq *ibv_cq, int n, struct ibv_wc *wc)
{
    if (ibv_cq == NULL || n < 0 || (wc == NULL && n > 0)) {
        return -EINVAL;
    }
    struct sv_ctx *ctx = sv_ctx_of(ibv_cq->context);
    struct sv_cq *cq = sv_container_of(ibv_cq, struct sv_cq, ibv);
    int got = 0;
    pthread_mutex_lock(&ctx->lock);
    while (got < n && cq->count > 0) {
        struct sv_cqe *e = &cq->ring[cq->head];
        wc[got++] = e->wc;
        if (e->sq_owner != NULL && e->sq_owner->sq_retired < e->sq_pos + 1) {
            e->sq_owner->sq_retired = e->sq_pos + 1;
        }
        cq->head = (cq->head + 1) % cq->cap;
        cq->count--;
    }
    pthread_mutex_unlock(&ctx->lock);
    return got;
}

static void channel_raise(struct sv_channel *ch, struct sv_cq *cq)
{
    struct sv_event *ev = malloc(sizeof *ev);
    if (ev == NULL) {
        fprintf(stderr, "softverbs: out of memory: completion event lost\n");
        return;
    }
    ev->cq = cq;
    ev->next = NULL;
    if (ch->tail != NULL) {
        ch->tail->next = ev;
    } else {
        ch->head = ev;
    }
    ch->tail = ev;
    char byte = 0;
    /* A pipe holds 64 Ki bytes; events are bounded by armed CQs, fewer. */
    if (write(ch->write_fd, &byte, 1) != 1) {
        fprintf(stderr, "softverbs: completion channel pipe full: event lost\n");
    }
}

/* Called with the context lock held. */
void sv_cq_push(struct sv_cq *cq, const struct ibv_wc *wc, bool solicited, struct sv_qp *sq_owner, uint64_t sq_pos)
{
    if (cq->count == cq->cap) {
        if (!cq->overflowed) {
            fprintf(stderr, "softverbs: CQ overrun (cqe=%u): completions are being lost\n", cq->cap);
            struct ibv_async_event ev = {.element.cq = &cq->ibv, .event_type = IBV_EVENT_CQ_ERR};
            sv_async_raise(sv_ctx_of(cq->ibv.context), &ev);
        }
        cq->overflowed = true;
        return;
    }
    struct sv_cqe *e = &cq->ring[(cq->head + cq->count) % cq->cap];
    e->wc = *wc;
    e->sq_owner = sq_owner;
    e->sq_pos = sq_pos;
    cq->count++;
    cq->total++;
    sv_ctx_of(cq->ibv.context)->progressed = true;
    /* An error completion counts as solicited (ibv_req_notify_cq(3)). */
    bool fires = cq->arm == SV_ARM_ANY ||
                 (cq->arm == SV_ARM_SOLICITED && (solicited || wc->status != IBV_WC_SUCCESS));
    if (fires) {
        cq->arm = SV_ARM_NONE;
        channel_raise(sv_container_of(cq->ibv.channel, struct sv_channel, ibv), cq);
    }
}

/* The QP is going away: its CQEs stay valid, but must not retire its SQ. */
void sv_cq_forget_qp(struct sv_cq *cq, const struct sv_qp *qp)
{
    for (uint32_t i = 0; i < cq->count; i++) {
        struct sv_cqe *e = &cq->ring[(cq->head + i) % cq->cap];
        if (e->sq_owner == qp) {
            e->sq_owner = NULL;
        }
    }
}
