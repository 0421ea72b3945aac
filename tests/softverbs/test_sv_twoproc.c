/*
 * Two processes, two NICs: the data crosses address spaces. The parent is
 * the target, the forked child the initiator; a socketpair stands in for
 * the team bootstrap (LID, QPN, PSN, buffer address and rkey).
 *
 * 1. N writes and a final write with immediate: when the parent sees the
 *    immediate, all N chunks are there (RC order across processes).
 * 2. A send into a posted receive.
 * 3. A write with a wrong rkey: REM_ACCESS_ERR at the child, the parent's
 *    guard bytes untouched.
 */
#include "svt_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHUNK 4096
#define NCHUNK 8
#define GUARD 64

#define CHECK(cond)                                                                                                    \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            fprintf(stderr, "%s: %s:%d: check failed: %s\n", who, __FILE__, __LINE__, #cond);                           \
            return 1;                                                                                                  \
        }                                                                                                              \
    } while (0)

static const char *who = "parent";

struct hello {
    struct svt_addr addr;
    uint64_t buf;
    uint32_t rkey;
};

static unsigned char pattern(size_t i)
{
    return (unsigned char)(i * 13u + 5u);
}

static int xfer(int fd, void *out, const void *in, size_t len)
{
    return write(fd, in, len) == (ssize_t)len && read(fd, out, len) == (ssize_t)len ? 0 : -1;
}

static int initiator(int fd)
{
    who = "child";
    struct svt_node n;
    CHECK(svt_open(&n, false, 32) == 0);
    struct ibv_qp *qp = svt_create_qp(&n, NULL, NULL, 32, false);
    CHECK(qp != NULL);
    unsigned char *src = malloc(CHUNK * NCHUNK);
    CHECK(src != NULL);
    for (size_t i = 0; i < CHUNK * NCHUNK; i++) {
        src[i] = pattern(i);
    }
    struct ibv_mr *mr = ibv_reg_mr(n.pd, src, CHUNK * NCHUNK, IBV_ACCESS_LOCAL_WRITE);
    struct hello me = {.addr = svt_addr_of(&n, qp)}, peer;
    CHECK(xfer(fd, &peer, &me, sizeof me) == 0);
    CHECK(svt_connect(qp, &me.addr, &peer.addr, &svt_default_opts) == 0);
    char go;
    CHECK(read(fd, &go, 1) == 1); /* the parent's QP is ready and its receive posted */

    for (int i = 0; i < NCHUNK - 1; i++) {
        CHECK(svt_post(qp, IBV_WR_RDMA_WRITE, (uint64_t)i, 0, mr, src + i * CHUNK, CHUNK,
                       peer.buf + GUARD + (uint64_t)i * CHUNK, peer.rkey, 0) == 0);
    }
    int last = NCHUNK - 1;
    CHECK(svt_post(qp, IBV_WR_RDMA_WRITE_WITH_IMM, 7, IBV_SEND_SIGNALED, mr, src + last * CHUNK, CHUNK,
                   peer.buf + GUARD + (uint64_t)last * CHUNK, peer.rkey, htobe32(42)) == 0);
    CHECK(svt_post(qp, IBV_WR_SEND, 8, IBV_SEND_SIGNALED, mr, src, 100, 0, 0, 0) == 0);
    struct ibv_wc wc[2];
    CHECK(svt_poll(n.cq, wc, 2, 10000) == 2);
    CHECK(wc[0].status == IBV_WC_SUCCESS && wc[0].wr_id == 7);
    CHECK(wc[1].status == IBV_WC_SUCCESS && wc[1].wr_id == 8);

    CHECK(svt_post(qp, IBV_WR_RDMA_WRITE, 9, 0, mr, src, 16, peer.buf + GUARD, peer.rkey + 0x100, 0) == 0);
    CHECK(svt_poll(n.cq, wc, 1, 10000) == 1);
    CHECK(wc[0].status == IBV_WC_REM_ACCESS_ERR && wc[0].wr_id == 9);
    CHECK(write(fd, "d", 1) == 1);

    ibv_destroy_qp(qp);
    ibv_dereg_mr(mr);
    svt_close(&n);
    free(src);
    return 0;
}

static int target(int fd)
{
    struct svt_node n;
    CHECK(svt_open(&n, false, 32) == 0);
    struct ibv_qp *qp = svt_create_qp(&n, NULL, NULL, 4, false);
    CHECK(qp != NULL);
    size_t len = CHUNK * NCHUNK + 2 * GUARD;
    unsigned char *buf = malloc(len), recv_buf[128];
    CHECK(buf != NULL);
    memset(buf, 0xee, len);
    struct ibv_mr *mr = ibv_reg_mr(n.pd, buf + GUARD, CHUNK * NCHUNK, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    struct ibv_mr *rmr = ibv_reg_mr(n.pd, recv_buf, sizeof recv_buf, IBV_ACCESS_LOCAL_WRITE);
    struct hello me = {.addr = svt_addr_of(&n, qp), .buf = (uintptr_t)buf, .rkey = mr->rkey}, peer;
    CHECK(xfer(fd, &peer, &me, sizeof me) == 0);
    CHECK(me.addr.lid != peer.addr.lid);
    CHECK(svt_connect(qp, &me.addr, &peer.addr, &svt_default_opts) == 0);
    CHECK(svt_post_recv(qp, 1, NULL, NULL, 0) == 0);
    CHECK(svt_post_recv(qp, 2, rmr, recv_buf, sizeof recv_buf) == 0);
    CHECK(write(fd, "g", 1) == 1);

    struct ibv_wc wc;
    CHECK(svt_poll(n.cq, &wc, 1, 10000) == 1);
    CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM && be32toh(wc.imm_data) == 42);
    CHECK(wc.src_qp == peer.addr.qpn && wc.slid == peer.addr.lid);
    for (size_t i = 0; i < CHUNK * NCHUNK; i++) {
        CHECK(buf[GUARD + i] == pattern(i));
    }
    CHECK(svt_poll(n.cq, &wc, 1, 10000) == 1);
    CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 2 && wc.byte_len == 100);
    CHECK(memcmp(recv_buf, buf + GUARD, 100) == 0);

    char done;
    CHECK(read(fd, &done, 1) == 1); /* the child saw its access error */
    for (size_t i = 0; i < GUARD; i++) {
        CHECK(buf[i] == 0xee && buf[len - 1 - i] == 0xee);
    }
    CHECK(buf[GUARD] == pattern(0)); /* the bad write changed nothing */
    ibv_destroy_qp(qp);
    ibv_dereg_mr(mr);
    ibv_dereg_mr(rmr);
    svt_close(&n);
    free(buf);
    return 0;
}

int main(void)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
        perror("socketpair");
        return 1;
    }
    /* Fork before any context exists: contexts do not survive fork. */
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return 1;
    }
    if (pid == 0) {
        close(sv[0]);
        _exit(initiator(sv[1]));
    }
    close(sv[1]);
    int rc = target(sv[0]);
    close(sv[0]); /* a failed parent unblocks the child */
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "child failed (status %d)\n", status);
        rc = 1;
    }
    if (rc == 0) {
        printf("two-process RC ordering, send/recv and rkey check: OK\n");
    }
    return rc;
}
