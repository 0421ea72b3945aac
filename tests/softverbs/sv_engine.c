/*
 * The NIC thread of a context and the datagrams between NICs.
 *
 * One thread per context sleeps in ppoll on its socket and on an eventfd
 * that posting writes; it executes send queues, serves incoming requests
 * and runs the RNR and retry timers, always under the context lock.
 * Sends never block: a full peer queue keeps the datagram in a local
 * FIFO, so that two NICs sending to each other cannot deadlock.
 */
#include "sv_internal.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define SV_RESEND_NS 1000000ull /* retry of a datagram a full peer refused */

struct sv_qp *sv_qp_lookup(struct sv_ctx *ctx, uint32_t qpn)
{
    struct sv_qp *qp = ctx->qps[qpn & (SV_MAX_QP - 1)];
    return qp != NULL && qp->ibv.qp_num == qpn ? qp : NULL;
}

static size_t msg_size(const struct sv_msg *m)
{
    return offsetof(struct sv_msg, inline_data) + m->inline_len;
}

/* False only when the peer's queue is full; a vanished peer loses the
 * datagram as a link loses a packet, and the requester's timer notices. */
static bool try_send(struct sv_ctx *ctx, uint16_t lid, const struct sv_msg *m)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    int len = snprintf(sa.sun_path + 1, sizeof sa.sun_path - 1, "softverbs-lid-%u", lid);
    socklen_t alen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)len);
    if (sendto(ctx->sock, m, msg_size(m), MSG_DONTWAIT, (struct sockaddr *)&sa, alen) >= 0) {
        return true;
    }
    return errno != EAGAIN && errno != ENOBUFS;
}

void sv_send(struct sv_ctx *ctx, uint16_t lid, const struct sv_msg *msg)
{
    if (ctx->out_head == NULL && try_send(ctx, lid, msg)) {
        return;
    }
    struct sv_outmsg *o = malloc(sizeof *o);
    if (o == NULL) {
        fprintf(stderr, "softverbs: out of memory: datagram to LID %u lost\n", lid);
        return;
    }
    o->lid = lid;
    memcpy(&o->msg, msg, msg_size(msg));
    o->next = NULL;
    if (ctx->out_tail != NULL) {
        ctx->out_tail->next = o;
    } else {
        ctx->out_head = o;
    }
    ctx->out_tail = o;
}

static void flush_out(struct sv_ctx *ctx)
{
    while (ctx->out_head != NULL && try_send(ctx, ctx->out_head->lid, &ctx->out_head->msg)) {
        struct sv_outmsg *o = ctx->out_head;
        ctx->out_head = o->next;
        if (ctx->out_head == NULL) {
            ctx->out_tail = NULL;
        }
        free(o);
    }
}

static void receive_all(struct sv_ctx *ctx)
{
    struct sv_msg m;
    ssize_t n;
    while ((n = recv(ctx->sock, &m, sizeof m, MSG_DONTWAIT)) >= 0) {
        if ((size_t)n < offsetof(struct sv_msg, inline_data) || (size_t)n != msg_size(&m)) {
            continue; /* not ours: the LID's name is public */
        }
        if (m.type == SV_MSG_REQ) {
            sv_responder_request(ctx, &m);
        } else {
            sv_requester_response(ctx, &m, sv_now_ns());
        }
    }
}

static void sleep_until(struct sv_ctx *ctx, uint64_t deadline, uint64_t now)
{
    struct pollfd fds[2] = {{.fd = ctx->sock, .events = POLLIN}, {.fd = ctx->wake_fd, .events = POLLIN}};
    struct timespec ts, *tsp = NULL;
    if (deadline != UINT64_MAX) {
        uint64_t d = deadline > now ? deadline - now : 0;
        ts.tv_sec = (time_t)(d / 1000000000ull);
        ts.tv_nsec = (long)(d % 1000000000ull);
        tsp = &ts;
    }
    if (ppoll(fds, 2, tsp, NULL) > 0 && (fds[1].revents & POLLIN)) {
        uint64_t count;
        if (read(ctx->wake_fd, &count, sizeof count) < 0) {
            return; /* EAGAIN: another read took it; nothing lost */
        }
    }
}

static void *nic_main(void *arg)
{
    struct sv_ctx *ctx = arg;
    pthread_mutex_lock(&ctx->lock);
    while (!ctx->stop) {
        receive_all(ctx);
        uint64_t now = sv_now_ns();
        uint64_t next = sv_requester_advance(ctx, now);
        flush_out(ctx);
        if (ctx->out_head != NULL && next > now + SV_RESEND_NS) {
            next = now + SV_RESEND_NS;
        }
        pthread_mutex_unlock(&ctx->lock);
        sleep_until(ctx, next, now);
        pthread_mutex_lock(&ctx->lock);
    }
    pthread_mutex_unlock(&ctx->lock);
    return NULL;
}

int sv_engine_start(struct sv_ctx *ctx)
{
    return pthread_create(&ctx->thread, NULL, nic_main, ctx);
}

void sv_engine_stop(struct sv_ctx *ctx)
{
    pthread_mutex_lock(&ctx->lock);
    ctx->stop = true;
    pthread_mutex_unlock(&ctx->lock);
    sv_wake(ctx);
    pthread_join(ctx->thread, NULL);
}
