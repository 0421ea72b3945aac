/*
 * Completion channels (a thread asleep on the fd is woken by a completion
 * on an armed CQ, and only then) and the cross-channel WAIT extension.
 */
#include "softverbs.h"
#include "svt_util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <cmocka.h>

struct sleeper {
    struct ibv_comp_channel *channel;
    atomic_int woke;
    struct ibv_cq *cq;
    void *cq_context;
};

/* Sleeps in poll() on the channel fd, then takes the event. */
static void *sleep_on_channel(void *arg)
{
    struct sleeper *s = arg;
    struct pollfd pfd = {.fd = s->channel->fd, .events = POLLIN};
    if (poll(&pfd, 1, 10000) == 1 && ibv_get_cq_event(s->channel, &s->cq, &s->cq_context) == 0) {
        atomic_store(&s->woke, 1);
    }
    return NULL;
}

static int fd_ready(int fd, int ms)
{
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    return poll(&pfd, 1, ms);
}

static void wakes_sleeping_thread(void **state)
{
    (void)state;
    struct svt_node n;
    assert_int_equal(svt_open(&n, true, 16), 0);
    struct ibv_qp *qp = svt_loopback_qp(&n, 8, false);
    assert_non_null(qp);

    struct sleeper s = {.channel = n.channel};
    pthread_t t;
    assert_int_equal(ibv_req_notify_cq(n.cq, 0), 0);
    pthread_create(&t, NULL, sleep_on_channel, &s);
    usleep(20000); /* let it fall asleep: the wake-up must come from the CQE */
    assert_int_equal(atomic_load(&s.woke), 0);
    assert_int_equal(svt_post(qp, IBV_WR_RDMA_WRITE, 1, IBV_SEND_SIGNALED, NULL, NULL, 0, 0, 0, 0), 0);
    pthread_join(t, NULL);
    assert_int_equal(atomic_load(&s.woke), 1);
    assert_ptr_equal(s.cq, n.cq);
    assert_ptr_equal(s.cq_context, &n); /* svt_open passes the node */

    /* An unacknowledged event keeps the CQ alive (EBUSY, where the real
     * library would block). */
    struct ibv_wc wc;
    assert_int_equal(svt_poll(n.cq, &wc, 1, 1000), 1);
    assert_int_equal(ibv_destroy_qp(qp), 0);
    assert_int_equal(ibv_destroy_cq(n.cq), EBUSY);
    ibv_ack_cq_events(n.cq, 1);
    svt_close(&n);
}

/* Not armed: completions arrive but the fd stays quiet. Armed once: one
 * event for any number of completions, until re-armed. */
static void no_spurious_events(void **state)
{
    (void)state;
    struct svt_node n;
    assert_int_equal(svt_open(&n, true, 16), 0);
    struct ibv_qp *qp = svt_loopback_qp(&n, 8, false);
    assert_non_null(qp);
    struct ibv_wc wc[1];

    assert_int_equal(svt_post(qp, IBV_WR_RDMA_WRITE, 1, IBV_SEND_SIGNALED, NULL, NULL, 0, 0, 0, 0), 0);
    assert_int_equal(svt_poll(n.cq, wc, 1, 1000), 1);
    assert_int_equal(fd_ready(n.channel->fd, 50), 0);

    /* Arming does not fire for completions already there (see README). The
     * completion is known to be there by the event of an arm before (a
     * sleep instead raced the NIC thread on a loaded host). */
    struct ibv_cq *cq;
    void *ctx;
    assert_int_equal(ibv_req_notify_cq(n.cq, 0), 0);
    assert_int_equal(svt_post(qp, IBV_WR_RDMA_WRITE, 2, IBV_SEND_SIGNALED, NULL, NULL, 0, 0, 0, 0), 0);
    assert_int_equal(fd_ready(n.channel->fd, 5000), 1);
    assert_int_equal(ibv_get_cq_event(n.channel, &cq, &ctx), 0);
    ibv_ack_cq_events(n.cq, 1);
    assert_int_equal(ibv_req_notify_cq(n.cq, 0), 0);
    assert_int_equal(fd_ready(n.channel->fd, 50), 0);

    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN}, out;
    assert_int_equal(epoll_ctl(ep, EPOLL_CTL_ADD, n.channel->fd, &ev), 0);
    assert_int_equal(svt_post(qp, IBV_WR_RDMA_WRITE, 3, IBV_SEND_SIGNALED, NULL, NULL, 0, 0, 0, 0), 0);
    assert_int_equal(svt_post(qp, IBV_WR_RDMA_WRITE, 4, IBV_SEND_SIGNALED, NULL, NULL, 0, 0, 0, 0), 0);
    assert_int_equal(epoll_wait(ep, &out, 1, 5000), 1);
    assert_int_equal(ibv_get_cq_event(n.channel, &cq, &ctx), 0);
    struct ibv_wc three[3]; /* the one from before arming, and the two after */
    assert_int_equal(svt_poll(n.cq, three, 3, 1000), 3);
    assert_int_equal(three[2].wr_id, 4);
    assert_int_equal(epoll_wait(ep, &out, 1, 50), 0); /* one event only */

    /* With O_NONBLOCK, no event is EAGAIN, as with the kernel's fd. */
    fcntl(n.channel->fd, F_SETFL, fcntl(n.channel->fd, F_GETFL) | O_NONBLOCK);
    errno = 0;
    assert_int_equal(ibv_get_cq_event(n.channel, &cq, &ctx), -1);
    assert_int_equal(errno, EAGAIN);
    close(ep);
    ibv_ack_cq_events(n.cq, 1);
    assert_int_equal(ibv_destroy_qp(qp), 0);
    assert_int_equal(ibv_destroy_comp_channel(n.channel), EBUSY); /* CQ still on it */
    svt_close(&n);
}

/* Armed for solicited completions only: send completions and ordinary
 * receives stay quiet; a message sent with IBV_SEND_SOLICITED wakes. */
static void solicited_only(void **state)
{
    (void)state;
    struct svt_node n;
    assert_int_equal(svt_open(&n, true, 16), 0);
    struct ibv_qp *qp = svt_loopback_qp(&n, 8, true);
    assert_non_null(qp);
    struct ibv_wc wc[2];
    assert_int_equal(ibv_req_notify_cq(n.cq, 1), 0);
    assert_int_equal(svt_post_recv(qp, 10, NULL, NULL, 0), 0);
    assert_int_equal(svt_post(qp, IBV_WR_SEND, 1, 0, NULL, NULL, 0, 0, 0, 0), 0);
    assert_int_equal(svt_poll(n.cq, wc, 2, 1000), 2);
    assert_int_equal(fd_ready(n.channel->fd, 50), 0);

    assert_int_equal(svt_post_recv(qp, 11, NULL, NULL, 0), 0);
    assert_int_equal(svt_post(qp, IBV_WR_SEND, 2, IBV_SEND_SOLICITED, NULL, NULL, 0, 0, 0, 0), 0);
    assert_int_equal(fd_ready(n.channel->fd, 5000), 1);
    struct ibv_cq *cq;
    void *ctx;
    assert_int_equal(ibv_get_cq_event(n.channel, &cq, &ctx), 0);
    ibv_ack_cq_events(cq, 1);
    assert_int_equal(svt_poll(n.cq, wc, 2, 1000), 2);
    assert_int_equal(ibv_destroy_qp(qp), 0);
    svt_close(&n);
}

/*
 * WAIT: the trigger QP (looped back, own CQ) holds its WRs until the data
 * CQ has produced the awaited number of completions; WAITs count
 * cumulatively, and what follows each one is released in order.
 */
static void wait_holds_until_count(void **state)
{
    (void)state;
    struct svt_node n;
    assert_int_equal(svt_open(&n, false, 32), 0);
    struct ibv_cq *tcq = ibv_create_cq(n.ctx, 16, NULL, NULL, 0);
    struct ibv_qp *data = svt_create_qp(&n, NULL, NULL, 8, false);
    struct ibv_qp *trig = svt_create_qp(&n, tcq, tcq, 8, false);
    struct svt_addr ad = svt_addr_of(&n, data), at = svt_addr_of(&n, trig);
    assert_int_equal(svt_connect(data, &ad, &ad, &svt_default_opts), 0);
    assert_int_equal(svt_connect(trig, &at, &at, &svt_default_opts), 0);

    assert_int_equal(softverbs_post_wait(trig, n.cq, 2, 90), 0);
    assert_int_equal(svt_post(trig, IBV_WR_RDMA_WRITE, 100, IBV_SEND_SIGNALED, NULL, NULL, 0, 0, 0, 0), 0);
    assert_int_equal(softverbs_post_wait(trig, n.cq, 1, 91), 0);
    assert_int_equal(svt_post(trig, IBV_WR_RDMA_WRITE, 101, IBV_SEND_SIGNALED, NULL, NULL, 0, 0, 0, 0), 0);
    assert_true(svt_quiet(tcq, 30));

    struct ibv_wc wc;
    /* an unsignalled data WR makes no CQE, so it does not count */
    assert_int_equal(svt_post(data, IBV_WR_RDMA_WRITE, 1, 0, NULL, NULL, 0, 0, 0, 0), 0);
    assert_int_equal(svt_post(data, IBV_WR_RDMA_WRITE, 2, IBV_SEND_SIGNALED, NULL, NULL, 0, 0, 0, 0), 0);
    assert_int_equal(svt_poll(n.cq, &wc, 1, 1000), 1);
    assert_true(svt_quiet(tcq, 30));

    assert_int_equal(svt_post(data, IBV_WR_RDMA_WRITE, 3, IBV_SEND_SIGNALED, NULL, NULL, 0, 0, 0, 0), 0);
    assert_int_equal(svt_poll(tcq, &wc, 1, 1000), 1);
    assert_int_equal(wc.status, IBV_WC_SUCCESS);
    assert_int_equal(wc.wr_id, 100);
    assert_true(svt_quiet(tcq, 30)); /* the second WAIT holds 101 */

    assert_int_equal(svt_post(data, IBV_WR_RDMA_WRITE, 4, IBV_SEND_SIGNALED, NULL, NULL, 0, 0, 0, 0), 0);
    assert_int_equal(svt_poll(tcq, &wc, 1, 1000), 1);
    assert_int_equal(wc.wr_id, 101);

    /* A queued WAIT keeps its CQ alive; still held when the QP goes to
     * error, it is flushed with its id and lets the CQ go. */
    struct ibv_cq *other = ibv_create_cq(n.ctx, 4, NULL, NULL, 0);
    assert_int_equal(softverbs_post_wait(trig, other, 10, 92), 0);
    assert_int_equal(ibv_destroy_cq(other), EBUSY);
    struct ibv_qp_attr err = {.qp_state = IBV_QPS_ERR};
    assert_int_equal(ibv_modify_qp(trig, &err, IBV_QP_STATE), 0);
    assert_int_equal(svt_poll(tcq, &wc, 1, 1000), 1);
    assert_int_equal(wc.wr_id, 92);
    assert_int_equal(wc.status, IBV_WC_WR_FLUSH_ERR);
    assert_int_equal(ibv_destroy_cq(other), 0);

    assert_int_equal(ibv_destroy_qp(data), 0);
    assert_int_equal(ibv_destroy_qp(trig), 0);
    assert_int_equal(ibv_destroy_cq(tcq), 0);
    svt_close(&n);
}

/* More completions than CQ entries: the overrun is an async CQ error. */
static void cq_overrun_is_async_error(void **state)
{
    (void)state;
    struct svt_node n;
    assert_int_equal(svt_open(&n, false, 2), 0);
    struct ibv_qp *qp = svt_loopback_qp(&n, 8, true);
    assert_non_null(qp);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(svt_post(qp, IBV_WR_RDMA_WRITE, (uint64_t)i, 0, NULL, NULL, 0, 0, 0, 0), 0);
    }
    assert_int_equal(fd_ready(n.ctx->async_fd, 5000), 1);
    struct ibv_async_event ev;
    assert_int_equal(ibv_get_async_event(n.ctx, &ev), 0);
    assert_int_equal(ev.event_type, IBV_EVENT_CQ_ERR);
    assert_ptr_equal(ev.element.cq, n.cq);
    ibv_ack_async_event(&ev);
    struct ibv_wc wc[3];
    assert_int_equal(svt_poll(n.cq, wc, 3, 50), 2); /* the third was lost */
    assert_int_equal(ibv_destroy_qp(qp), 0);
    svt_close(&n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(wakes_sleeping_thread),
        cmocka_unit_test(no_spurious_events),
        cmocka_unit_test(solicited_only),
        cmocka_unit_test(wait_holds_until_count),
        cmocka_unit_test(cq_overrun_is_async_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
