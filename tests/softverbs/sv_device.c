/*
 * The device, its one port, contexts and protection domains.
 *
 * Each opened context is a NIC with its own LID, unique on the host: the
 * LID names an abstract unix socket, so claiming it is a bind() that fails
 * with EADDRINUSE when another context (in any process) holds it, and it
 * disappears with the socket, leaving no file behind.
 */
#include "sv_internal.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static struct ibv_device sv_device = {
    .node_type = IBV_NODE_CA,
    .transport_type = IBV_TRANSPORT_IB,
    .name = "softverbs0",
    .dev_name = "softverbs0",
    .dev_path = "/nonexistent/softverbs0",
    .ibdev_path = "/nonexistent/softverbs0",
};

/* GIDs are link-local: fe80::/64 with the LID in the interface id. */
static const uint8_t sv_gid_prefix[14] = {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x02, 's', 'o', 'f', 't', 'v'};

uint64_t sv_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void sv_wake(struct sv_ctx *ctx)
{
    uint64_t one = 1;
    /* Only EAGAIN (counter saturated) can fail, and then a wake is pending. */
    if (write(ctx->wake_fd, &one, sizeof one) < 0) {
        return;
    }
}

void sv_gid_of_lid(uint16_t lid, union ibv_gid *gid)
{
    memcpy(gid->raw, sv_gid_prefix, sizeof sv_gid_prefix);
    gid->raw[14] = (uint8_t)(lid >> 8);
    gid->raw[15] = (uint8_t)lid;
}

bool sv_lid_of_gid(const union ibv_gid *gid, uint16_t *lid)
{
    if (memcmp(gid->raw, sv_gid_prefix, sizeof sv_gid_prefix) != 0) {
        return false;
    }
    *lid = (uint16_t)(gid->raw[14] << 8 | gid->raw[15]);
    return true;
}

bool sv_is_ours(struct ibv_context *c)
{
    return c != NULL && c->device == &sv_device;
}

SV_EXPORT struct ibv_device **ibv_get_device_list(int *num_devices)
{
    struct ibv_device **list = calloc(2, sizeof *list);
    if (list == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    list[0] = &sv_device;
    if (num_devices != NULL) {
        *num_devices = 1;
    }
    return list;
}

SV_EXPORT void ibv_free_device_list(struct ibv_device **list)
{
    free(list);
}

SV_EXPORT const char *ibv_get_device_name(struct ibv_device *device)
{
    return device != NULL ? device->name : NULL;
}

SV_EXPORT __be64 ibv_get_device_guid(struct ibv_device *device)
{
    (void)device;
    return htobe64(0x02736f6674766273ull); /* "\x02softvbs" */
}

SV_EXPORT int ibv_fork_init(void)
{
    return 0;
}

/* Claim the first free LID at or after a per-process starting point. */
static int bind_lid(int sock, uint16_t *lid_out)
{
    static atomic_uint seq;
    unsigned start = ((unsigned)getpid() * 131u + atomic_fetch_add(&seq, 1) * 7u) % SV_MAX_LID;

    for (unsigned i = 0; i < SV_MAX_LID; i++) {
        uint16_t lid = (uint16_t)((start + i) % SV_MAX_LID + 1);
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        int len = snprintf(sa.sun_path + 1, sizeof sa.sun_path - 1, "softverbs-lid-%u", lid);
        if (bind(sock, (struct sockaddr *)&sa, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + len)) == 0) {
            *lid_out = lid;
            return 0;
        }
        if (errno != EADDRINUSE) {
            return errno;
        }
    }
    return EADDRNOTAVAIL;
}

static int sv_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
    (void)srq;
    if (bad != NULL) {
        *bad = wr;
    }
    return EOPNOTSUPP;
}

SV_EXPORT struct ibv_context *ibv_open_device(struct ibv_device *device)
{
    if (device != &sv_device) {
        errno = ENODEV;
        return NULL;
    }
    struct sv_ctx *ctx = calloc(1, sizeof *ctx);
    if (ctx == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    int err = 0;
    ctx->sock = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    ctx->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    ctx->ibv.async_fd = -1;
    if (ctx->sock < 0 || ctx->wake_fd < 0) {
        err = errno;
    } else if ((err = bind_lid(ctx->sock, &ctx->lid)) == 0) {
        err = sv_async_open(ctx);
    }
    const char *ll = getenv("SOFTVERBS_LINK_LAYER");
    ctx->ethernet = ll != NULL && strcmp(ll, "ethernet") == 0;
    /* 2^31 as InfiniBand's limit; smaller to test a consumer that cuts. */
    const char *mm = getenv("SOFTVERBS_MAX_MSG_SZ");
    unsigned long long max_msg = mm != NULL ? strtoull(mm, NULL, 0) : 0;
    ctx->max_msg_sz = max_msg > 0 && max_msg < (1ull << 31) ? (uint32_t)max_msg : 1u << 31;
    /* SV_MAX_CQE, or fewer to test a consumer that sizes its CQs. */
    const char *mc = getenv("SOFTVERBS_MAX_CQE");
    unsigned long long max_cqe = mc != NULL ? strtoull(mc, NULL, 0) : 0;
    ctx->max_cqe = max_cqe > 0 && max_cqe < SV_MAX_CQE ? (int)max_cqe : SV_MAX_CQE;
    /* Unlimited, or less to test a consumer whose registration fails. */
    const char *mr = getenv("SOFTVERBS_MAX_MR_SZ");
    unsigned long long max_mr = mr != NULL ? strtoull(mr, NULL, 0) : 0;
    ctx->max_mr_size = max_mr > 0 ? max_mr : UINT64_MAX;
    ctx->ibv.device = &sv_device;
    ctx->ibv.cmd_fd = -1;
    ctx->ibv.num_comp_vectors = 1;
    ctx->ibv.abi_compat = NULL; /* not an extended context: the inline
                                 * wrappers fall back to the exported calls */
    ctx->ibv.ops.poll_cq = sv_poll_cq;
    ctx->ibv.ops.req_notify_cq = sv_req_notify_cq;
    ctx->ibv.ops.post_send = sv_post_send;
    ctx->ibv.ops.post_recv = sv_post_recv;
    ctx->ibv.ops.post_srq_recv = sv_post_srq_recv;
    pthread_mutex_init(&ctx->ibv.mutex, NULL);
    pthread_mutex_init(&ctx->lock, NULL);
    if (err == 0) {
        err = sv_engine_start(ctx);
    }
    if (err != 0) {
        fprintf(stderr, "softverbs: cannot open a context: %s\n", strerror(err));
        if (ctx->sock >= 0) close(ctx->sock);
        if (ctx->wake_fd >= 0) close(ctx->wake_fd);
        if (ctx->ibv.async_fd >= 0) sv_async_close(ctx);
        pthread_mutex_destroy(&ctx->lock);
        pthread_mutex_destroy(&ctx->ibv.mutex);
        free(ctx);
        errno = err;
        return NULL;
    }
    return &ctx->ibv;
}

SV_EXPORT int ibv_close_device(struct ibv_context *context)
{
    if (!sv_is_ours(context)) {
        return EINVAL;
    }
    struct sv_ctx *ctx = sv_ctx_of(context);
    sv_engine_stop(ctx);
    if (ctx->objects != 0) {
        fprintf(stderr, "softverbs: context LID %u closed with %d objects still allocated (leaked)\n", ctx->lid,
                ctx->objects);
    }
    while (ctx->out_head != NULL) {
        struct sv_outmsg *m = ctx->out_head;
        ctx->out_head = m->next;
        free(m);
    }
    close(ctx->sock);
    close(ctx->wake_fd);
    sv_async_close(ctx);
    pthread_mutex_destroy(&ctx->lock);
    pthread_mutex_destroy(&ctx->ibv.mutex);
    free(ctx);
    return 0;
}

SV_EXPORT int ibv_query_device(struct ibv_context *context, struct ibv_device_attr *attr)
{
    if (!sv_is_ours(context) || attr == NULL) {
        return EINVAL;
    }
    memset(attr, 0, sizeof *attr);
    snprintf(attr->fw_ver, sizeof attr->fw_ver, "softverbs-1");
    attr->node_guid = ibv_get_device_guid(context->device);
    attr->sys_image_guid = attr->node_guid;
    attr->max_mr_size = sv_ctx_of(context)->max_mr_size;
    attr->page_size_cap = 4096;
    attr->vendor_id = 0x736f66; /* not a real vendor */
    attr->max_qp = SV_MAX_QP;
    attr->max_qp_wr = SV_MAX_QP_WR;
    attr->device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN;
    attr->max_sge = SV_MAX_SGE;
    attr->max_cq = 1 << 16;
    attr->max_cqe = sv_ctx_of(context)->max_cqe;
    attr->max_mr = 1 << 20;
    attr->max_pd = 1 << 16;
    attr->max_qp_rd_atom = 1;
    attr->max_qp_init_rd_atom = 1;
    attr->atomic_cap = IBV_ATOMIC_NONE;
    attr->max_pkeys = 1;
    attr->phys_port_cnt = 1;
    return 0;
}

/* The inline wrapper in verbs.h zeroes a full ibv_port_attr and passes it
 * here as the older, shorter struct: only fields of both are filled. The
 * parentheses keep verbs.h's macro of the same name from expanding. */
SV_EXPORT int(ibv_query_port)(struct ibv_context *context, uint8_t port_num, struct _compat_ibv_port_attr *compat)
{
    struct ibv_port_attr *attr = (struct ibv_port_attr *)compat;
    if (!sv_is_ours(context) || attr == NULL || port_num != 1) {
        return EINVAL;
    }
    struct sv_ctx *ctx = sv_ctx_of(context);
    attr->state = IBV_PORT_ACTIVE;
    attr->max_mtu = IBV_MTU_4096;
    attr->active_mtu = IBV_MTU_4096;
    attr->gid_tbl_len = 1;
    attr->max_msg_sz = ctx->max_msg_sz;
    attr->pkey_tbl_len = 1;
    attr->lid = ctx->ethernet ? 0 : ctx->lid;
    attr->sm_lid = ctx->ethernet ? 0 : 1;
    attr->active_width = 2;  /* 4x */
    attr->active_speed = 32; /* EDR */
    attr->phys_state = 5;    /* LinkUp */
    attr->link_layer = ctx->ethernet ? IBV_LINK_LAYER_ETHERNET : IBV_LINK_LAYER_INFINIBAND;
    return 0;
}

SV_EXPORT int ibv_query_gid(struct ibv_context *context, uint8_t port_num, int index, union ibv_gid *gid)
{
    if (!sv_is_ours(context) || gid == NULL || port_num != 1 || index != 0) {
        return -1;
    }
    sv_gid_of_lid(sv_ctx_of(context)->lid, gid);
    return 0;
}

SV_EXPORT int ibv_query_pkey(struct ibv_context *context, uint8_t port_num, int index, __be16 *pkey)
{
    if (!sv_is_ours(context) || pkey == NULL || port_num != 1 || index != 0) {
        return -1;
    }
    *pkey = htobe16(0xffff);
    return 0;
}

SV_EXPORT struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
    if (!sv_is_ours(context)) {
        errno = EINVAL;
        return NULL;
    }
    struct sv_pd *pd = calloc(1, sizeof *pd);
    if (pd == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    struct sv_ctx *ctx = sv_ctx_of(context);
    pd->ibv.context = context;
    pthread_mutex_lock(&ctx->lock);
    ctx->objects++;
    pthread_mutex_unlock(&ctx->lock);
    return &pd->ibv;
}

SV_EXPORT int ibv_dealloc_pd(struct ibv_pd *pd)
{
    if (pd == NULL || !sv_is_ours(pd->context)) {
        return EINVAL;
    }
    struct sv_ctx *ctx = sv_ctx_of(pd->context);
    pthread_mutex_lock(&ctx->lock);
    for (struct sv_mr *mr = ctx->mrs; mr != NULL; mr = mr->next) {
        if (mr->ibv.pd == pd) {
            pthread_mutex_unlock(&ctx->lock);
            return EBUSY;
        }
    }
    for (int i = 0; i < SV_MAX_QP; i++) {
        if (ctx->qps[i] != NULL && ctx->qps[i]->ibv.pd == pd) {
            pthread_mutex_unlock(&ctx->lock);
            return EBUSY;
        }
    }
    ctx->objects--;
    pthread_mutex_unlock(&ctx->lock);
    free(sv_container_of(pd, struct sv_pd, ibv));
    return 0;
}
