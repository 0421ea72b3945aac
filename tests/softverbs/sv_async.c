/*
 * Asynchronous events of a context. The context's async_fd is the read
 * end of a pipe holding one byte per queued event, like a completion
 * channel; the only event raised is IBV_EVENT_CQ_ERR, on a CQ overrun.
 */
#include "sv_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

struct sv_async {
    struct ibv_async_event event;
    struct sv_async *next;
};

int sv_async_open(struct sv_ctx *ctx)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        return errno;
    }
    ctx->ibv.async_fd = fds[0];
    ctx->async_write_fd = fds[1];
    return 0;
}

void sv_async_close(struct sv_ctx *ctx)
{
    while (ctx->async_head != NULL) {
        struct sv_async *a = ctx->async_head;
        ctx->async_head = a->next;
        free(a);
    }
    close(ctx->ibv.async_fd);
    close(ctx->async_write_fd);
}

/* Called with the context lock held. */
void sv_async_raise(struct sv_ctx *ctx, const struct ibv_async_event *event)
{
    struct sv_async *a = malloc(sizeof *a);
    char byte = 0;
    if (a == NULL || write(ctx->async_write_fd, &byte, 1) != 1) {
        free(a);
        fprintf(stderr, "softverbs: async event %d lost\n", (int)event->event_type);
        return;
    }
    a->event = *event;
    a->next = NULL;
    if (ctx->async_tail != NULL) {
        ctx->async_tail->next = a;
    } else {
        ctx->async_head = a;
    }
    ctx->async_tail = a;
}

SV_EXPORT int ibv_get_async_event(struct ibv_context *context, struct ibv_async_event *event)
{
    if (!sv_is_ours(context) || event == NULL) {
        errno = EINVAL;
        return -1;
    }
    struct sv_ctx *ctx = sv_ctx_of(context);
    char byte;
    ssize_t n = read(context->async_fd, &byte, 1);
    if (n != 1) {
        return -1; /* EAGAIN on an O_NONBLOCK fd */
    }
    pthread_mutex_lock(&ctx->lock);
    struct sv_async *a = ctx->async_head; /* one byte, one event: never NULL */
    ctx->async_head = a->next;
    if (ctx->async_head == NULL) {
        ctx->async_tail = NULL;
    }
    pthread_mutex_unlock(&ctx->lock);
    *event = a->event;
    free(a);
    return 0;
}

SV_EXPORT void ibv_ack_async_event(struct ibv_async_event *event)
{
    (void)event; /* destroying the CQ does not wait for this ack here */
}
