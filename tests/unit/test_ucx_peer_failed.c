/*
 * A peer process that dies mid-exchange, on the UCX backend. Rank 1 is a
 * child process (this program again, exec'd with --child, so that it starts
 * UCX afresh); the two meet over a socketpair. Once both are connected and
 * have exchanged data, rank 0 posts a receive from rank 1 alone and tells it
 * to die: rank 1 _exits without finalizing. UCX reports the failed endpoint
 * (over shared memory its keepalive notices that the process is gone, over
 * TCP the connection is reset) but does not end receives, which wait in the
 * worker for any sender: the backend must, so that oc_wait returns
 * OC_ERR_BACKEND naming rank 1 within seconds rather than after OC_TIMEOUT_S
 * (30 s here). Later exchanges with rank 1 fail at once, but a message it
 * sent before it died still reaches its receive (one it only announced, by
 * rendezvous, fails naming it), and finalizing closes the failed endpoint
 * without waiting. Each progress mode, over shared
 * memory and over TCP (OC_INTRANODE=loopback).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <errno.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "oc_sync.h"
#include "offcoll.h"

enum { N = 2, SMALL = 100, LARGE = 20000 /* eager, rendezvous */, HUGE = 65536 };

#define TIMEOUT_S 30.0
/* UCX's keepalive runs every second (the backend's default): a few rounds. */
#define DETECT_MAX_S 10.0
#define REFUSE_MAX_S 5.0 /* at once, but the CI host may be loaded */

/* All of len bytes through fd, or -1 (EOF or an error). */
static int io_all(int fd, void *buf, size_t len, int out)
{
    char *p = buf;
    while (len > 0) {
        ssize_t n = out ? write(fd, p, len) : read(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static int write_all(int fd, const void *buf, size_t len)
{
    return io_all(fd, (void *)(uintptr_t)buf, len, 1);
}

static int read_all(int fd, void *buf, size_t len)
{
    return io_all(fd, buf, len, 0);
}

typedef struct {
    int fd;
    int rank;
} sock_oob_t;

/* Two members: each writes its part, then reads the other's. */
static int sock_allgather(const void *src, void *dst, size_t len, void *arg)
{
    sock_oob_t *o = arg;
    memcpy((char *)dst + (size_t)o->rank * len, src, len);
    if (write_all(o->fd, src, len) != 0)
        return -1;
    return read_all(o->fd, (char *)dst + (size_t)(1 - o->rank) * len, len);
}

static void configure(oc_config_t *cfg, int inline_mode, int loopback)
{
    cfg->backend = OC_BACKEND_UCX;
    cfg->timeout_s = TIMEOUT_S;
    cfg->progress = inline_mode ? OC_PROGRESS_INLINE : OC_PROGRESS_THREAD;
    cfg->intranode = loopback ? OC_INTRANODE_LOOPBACK : OC_INTRANODE_SHM;
}

static oc_status_t alltoall(oc_team_t *team, size_t block)
{
    unsigned char *s = calloc(N, block), *r = calloc(N, block);
    oc_request_t *req = NULL;
    oc_status_t st = OC_ERR_NO_MEMORY;
    if (s != NULL && r != NULL) {
        memset(s, 0x5a, N * block);
        st = oc_ialltoall(team, s, r, block, &req);
        if (st == OC_OK)
            st = oc_wait(req);
        if (req != NULL)
            oc_request_free(req);
    }
    free(s);
    free(r);
    return st;
}

/* A persistent exchange in which rank 1 sends len bytes of buf to rank 0
 * (into buf + len) and nothing else moves (agreed at the set-up, so no
 * zero-byte messages). Eager (SMALL), rank 1's part ends once its send has
 * left; by rendezvous (HUGE, over TCP too), only once rank 0 has fetched it. */
static oc_status_t last_words_init(oc_team_t *team, int rank, unsigned char *buf, size_t len,
                                   oc_request_t **req)
{
    size_t sc[N] = {0, 0}, rc[N] = {0, 0}, d[N] = {0, 0};
    if (rank == 1)
        sc[0] = len;
    else
        rc[1] = len;
    return oc_alltoallv_init(team, buf, len, sc, d, buf + len, len, rc, d, req);
}

/* Rank 1: connects, exchanges, sends its last words, then dies when told,
 * without finalizing. */
static int child_main(int fd, int inline_mode, int loopback)
{
    sock_oob_t oob = {fd, 1};
    oc_team_params_t tp = {1, N, sock_allgather, &oob};
    oc_config_t cfg;
    oc_context_t *ctx;
    oc_team_t *team;
    oc_request_t *req, *unfinished;
    static unsigned char buf[2 * SMALL], big[2 * HUGE];
    char c;

    if (oc_config_init(&cfg) != OC_OK)
        _exit(2);
    configure(&cfg, inline_mode, loopback);
    memset(buf, 0x77, SMALL);
    memset(big, 0x78, HUGE);
    if (oc_init(&cfg, &ctx) != OC_OK || oc_team_create(ctx, &tp, &team) != OC_OK ||
        alltoall(team, SMALL) != OC_OK || alltoall(team, LARGE) != OC_OK ||
        last_words_init(team, 1, buf, SMALL, &req) != OC_OK || oc_start(req) != OC_OK ||
        oc_wait(req) != OC_OK || last_words_init(team, 1, big, HUGE, &unfinished) != OC_OK ||
        oc_start(unfinished) != OC_OK) {
        fprintf(stderr, "child: %s\n", oc_last_error());
        _exit(3);
    }
    c = 1;
    if (write_all(fd, &c, 1) != 0 || read_all(fd, &c, 1) != 0)
        _exit(4);
    _exit(0); /* mid-exchange: rank 0 waits for a message from here */
}

/* An exchange with rank 1 that must fail with OC_ERR_BACKEND naming it, within
 * max_s; recv_only: rank 0 only receives (nothing goes through the endpoint). */
static void expect_failure(oc_team_t *team, size_t block, int recv_only, int kill_fd,
                           pid_t child, double max_s, const char *what)
{
    unsigned char *s = calloc(N, block), *r = calloc(N, block);
    size_t sc[N] = {0, 0}, rc[N] = {0, block}, d[N] = {0, 0};
    oc_request_t *req = NULL;
    oc_status_t st;
    double t0, dt;
    char detail[512] = "";

    assert_non_null(s);
    assert_non_null(r);
    if (recv_only)
        st = oc_ialltoallv(team, s, block, sc, d, r, block, rc, d, &req);
    else
        st = oc_ialltoall(team, s, r, block, &req);
    assert_int_equal(st, OC_OK);
    t0 = oc_time_now();
    if (kill_fd >= 0) {
        char c = 0;
        assert_int_equal(write_all(kill_fd, &c, 1), 0);
        assert_int_equal(waitpid(child, NULL, 0), child); /* gone from here on */
    }
    st = oc_wait(req);
    dt = oc_time_now() - t0;
    snprintf(detail, sizeof(detail), "%s", oc_last_error());
    print_message("%s: %s after %.3f s: %s\n", what, oc_status_string(st), dt, detail);
    if (st != OC_ERR_BACKEND)
        fail_msg("%s: %s (%s), not OC_ERR_BACKEND", what, oc_status_string(st), detail);
    if (dt > max_s)
        fail_msg("%s: failed after %.1f s, more than %.1f s (OC_TIMEOUT_S %.0f s)", what, dt,
                 max_s, TIMEOUT_S);
    if (strstr(detail, "rank 1") == NULL || strstr(detail, "connection") == NULL)
        fail_msg("%s: the error does not name the failed connection to rank 1: %s", what,
                 detail);
    assert_int_equal(oc_request_free(req), OC_OK);
    free(s);
    free(r);
}

static void run_case(int inline_mode, int loopback)
{
    int sv[2];
    pid_t child;
    sock_oob_t oob;
    oc_team_params_t tp;
    oc_config_t cfg;
    oc_context_t *ctx = NULL;
    oc_team_t *team = NULL;
    oc_request_t *last = NULL, *unfinished = NULL;
    static unsigned char buf[2 * SMALL], big[2 * HUGE];
    oc_status_t st;
    double t0;
    size_t i;
    char c;

    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        char fd[16], im[2] = {(char)('0' + inline_mode), 0}, lb[2] = {(char)('0' + loopback), 0};
        close(sv[0]);
        snprintf(fd, sizeof(fd), "%d", dup(sv[1])); /* without CLOEXEC */
        execl("/proc/self/exe", "test_ucx_peer_failed", "--child", fd, im, lb, (char *)NULL);
        _exit(5);
    }
    close(sv[1]);
    oob = (sock_oob_t){sv[0], 0};
    tp = (oc_team_params_t){0, N, sock_allgather, &oob};

    assert_int_equal(oc_config_init(&cfg), OC_OK);
    configure(&cfg, inline_mode, loopback);
    assert_int_equal(oc_init(&cfg, &ctx), OC_OK);
    if (oc_team_create(ctx, &tp, &team) != OC_OK) {
        kill(child, SIGKILL);
        fail_msg("team: %s", oc_last_error());
    }
    memset(buf, 0, sizeof(buf));
    if (alltoall(team, SMALL) != OC_OK || alltoall(team, LARGE) != OC_OK ||
        last_words_init(team, 0, buf, SMALL, &last) != OC_OK ||
        last_words_init(team, 0, big, HUGE, &unfinished) != OC_OK) {
        kill(child, SIGKILL);
        fail_msg("exchange before the failure: %s", oc_last_error());
    }
    assert_int_equal(read_all(sv[0], &c, 1), 0); /* the child is through its exchanges */

    expect_failure(team, LARGE, 1, sv[0], child, DETECT_MAX_S, "receive pending at the death");
    expect_failure(team, LARGE, 0, -1, 0, REFUSE_MAX_S, "later rendezvous alltoall");
    expect_failure(team, SMALL, 0, -1, 0, REFUSE_MAX_S, "later eager alltoall");
    expect_failure(team, SMALL, 1, -1, 0, REFUSE_MAX_S, "later receive");

    /* What rank 1 sent before it died is delivered, failed peer or not. */
    assert_int_equal(oc_start(last), OC_OK);
    if (oc_wait(last) != OC_OK)
        fail_msg("rank 1's last words, sent before it died: %s", oc_last_error());
    for (i = 0; i < SMALL; i++)
        assert_int_equal(buf[SMALL + i], 0x77);
    assert_int_equal(oc_request_free(last), OC_OK);
    /* But one it had only announced (rendezvous) cannot come: UCX cancels the
     * matched receive, which must fail naming rank 1, not as a timeout. */
    assert_int_equal(oc_start(unfinished), OC_OK);
    t0 = oc_time_now();
    st = oc_wait(unfinished);
    print_message("rendezvous announced before the death: %s after %.3f s: %s\n",
                  oc_status_string(st), oc_time_now() - t0, oc_last_error());
    if (st != OC_ERR_BACKEND || strstr(oc_last_error(), "receive from rank 1") == NULL)
        fail_msg("rank 1's unfinished rendezvous: %s (%s), not OC_ERR_BACKEND naming rank 1",
                 oc_status_string(st), oc_last_error());
    if (oc_time_now() - t0 > REFUSE_MAX_S)
        fail_msg("rank 1's unfinished rendezvous failed after %.1f s", oc_time_now() - t0);
    assert_int_equal(oc_request_free(unfinished), OC_OK);

    t0 = oc_time_now();
    assert_int_equal(oc_team_free(team), OC_OK);
    assert_int_equal(oc_finalize(ctx), OC_OK);
    print_message("finalize: %.3f s\n", oc_time_now() - t0);
    close(sv[0]);
}

static void test_thread_shm(void **state)
{
    (void)state;
    run_case(0, 0);
}

static void test_inline_shm(void **state)
{
    (void)state;
    run_case(1, 0);
}

static void test_thread_loopback(void **state)
{
    (void)state;
    run_case(0, 1);
}

static void test_inline_loopback(void **state)
{
    (void)state;
    run_case(1, 1);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_thread_shm),
        cmocka_unit_test(test_inline_shm),
        cmocka_unit_test(test_thread_loopback),
        cmocka_unit_test(test_inline_loopback),
    };
    if (argc == 5 && strcmp(argv[1], "--child") == 0)
        return child_main(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
