/*
 * Device and port discovery, protection domain, completion queues and the
 * completion channel they all report to (the progress thread sleeps on its
 * fd). InfiniBand ports are addressed by LID, RoCE ports by GID.
 */
#include "verbs_internal.h"
#include "oc_env.h"
#include "oc_error.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Acknowledging is a lock in the library: take events one by one, ack many. */
#define ACK_BATCH 32

/* Processes on one host share the port's LID and GID, and so do two contexts
 * of one process: a live process's pid and a count tell them apart. */
static uint64_t make_nonce(void)
{
    static _Atomic uint32_t opened;
    return (uint64_t)getpid() << 32 | atomic_fetch_add(&opened, 1);
}

/* First port that is ACTIVE: 0 if none. */
static int active_port(struct ibv_context *ctx, struct ibv_port_attr *pa)
{
    struct ibv_device_attr da;
    int p;
    if (ibv_query_device(ctx, &da) != 0)
        return 0;
    for (p = 1; p <= da.phys_port_cnt; p++)
        if (ibv_query_port(ctx, (uint8_t)p, pa) == 0 && pa->state == IBV_PORT_ACTIVE)
            return p;
    return 0;
}

static oc_status_t open_first_active(vb_dev_t *d, char *reason, size_t size)
{
    struct ibv_device **list;
    struct ibv_port_attr pa;
    int n = 0, i, port = 0;
    size_t fit;

    errno = 0;
    list = ibv_get_device_list(&n);
    if (list == NULL) {
        int err = errno;
        snprintf(reason, size, "no RDMA device (%s: %s)", err == ENOSYS ? "ENOSYS" : "errno",
                 strerror(err));
        return OC_ERR_UNAVAILABLE;
    }
    for (i = 0; i < n && port == 0; i++) {
        d->ctx = ibv_open_device(list[i]);
        if (d->ctx == NULL)
            continue;
        port = active_port(d->ctx, &pa);
        if (port == 0) {
            ibv_close_device(d->ctx);
            d->ctx = NULL;
        } else {
            snprintf(d->name, sizeof(d->name), "%s", ibv_get_device_name(list[i]));
        }
    }
    ibv_free_device_list(list);
    if (d->ctx == NULL) {
        snprintf(reason, size, n == 0 ? "no RDMA device found"
                                      : "no RDMA device with an active port (%d device(s))", n);
        return OC_ERR_UNAVAILABLE;
    }
    d->addr.port = (uint8_t)port;
    d->addr.lid = pa.lid;
    d->addr.ethernet = pa.link_layer == IBV_LINK_LAYER_ETHERNET;
    d->mtu = pa.active_mtu;
    d->addr.mtu = (uint8_t)pa.active_mtu;
    d->max_msg = pa.max_msg_sz > 0 && pa.max_msg_sz < VB_MAX_MSG ? pa.max_msg_sz : VB_MAX_MSG;
    if (d->max_msg < VB_MIN_MSG) {
        snprintf(reason, size, "%s port %d takes at most %zu bytes per message (max_msg_sz), "
                 "below the %zu of the protocol's control messages", d->name, port, d->max_msg,
                 (size_t)VB_MIN_MSG);
        ibv_close_device(d->ctx);
        d->ctx = NULL;
        return OC_ERR_UNAVAILABLE;
    }
    fit = d->max_msg - sizeof(vb_hdr_t); /* payload of one SEND with its header */
    d->eager_max = fit < VB_EAGER_MAX ? fit : VB_EAGER_MAX;
    return OC_OK;
}

static oc_status_t fail(vb_dev_t *d, const char *what, char *reason, size_t size)
{
    snprintf(reason, size, "%s on %s failed: %s", what, d->name, strerror(errno));
    vb_dev_close(d);
    return OC_ERR_UNAVAILABLE;
}

/* ibv_fork_init is process-wide and not thread-safe: contexts opened by
 * several threads at once would race in it. Once per process. */
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;
static int fork_init_rc;

static void fork_init(void)
{
    fork_init_rc = ibv_fork_init();
}

oc_status_t vb_dev_parse_max_peers(unsigned *max_peers, int *given)
{
    unsigned long long v = 0;
    oc_status_t st = oc_env_uint("OC_VERBS_MAX_PEERS", 1, VB_MAX_PEERS_CAP, &v);
    *given = v != 0;
    *max_peers = v != 0 ? (unsigned)v : VB_MAX_PEERS;
    return st;
}

/* Every data QP may fill its share of the data CQs: the send CQ takes
 * max_peers x VB_SQ_DEPTH entries. Where the device's CQs are smaller, a
 * default is lowered to what fits; a number the user gave is refused. */
static oc_status_t fit_max_peers(vb_dev_t *d, unsigned max_peers, int given, char *reason,
                                 size_t size)
{
    struct ibv_device_attr da;
    unsigned fit;

    int rc = ibv_query_device(d->ctx, &da);

    if (rc != 0) {
        errno = rc; /* returned, not set, by ibv_query_device */
        return fail(d, "ibv_query_device", reason, size);
    }
    if (da.max_cqe < 2 * VB_TRIG_DEPTH) {
        snprintf(reason, size, "%s allows completion queues of %d entries (max_cqe); the "
                 "trigger's needs %d", d->name, da.max_cqe, 2 * VB_TRIG_DEPTH);
        vb_dev_close(d);
        return OC_ERR_UNAVAILABLE;
    }
    fit = (unsigned)da.max_cqe / VB_SQ_DEPTH;
    d->max_peers = max_peers < fit ? max_peers : fit;
    d->device_cap = max_peers >= fit;
    if (max_peers <= fit || !given)
        return OC_OK;
    snprintf(reason, size, "OC_VERBS_MAX_PEERS=%u needs completion queues of %u entries; %s "
             "allows %d (max_cqe), that is at most %u peers", max_peers,
             max_peers * VB_SQ_DEPTH, d->name, da.max_cqe, fit);
    vb_dev_close(d);
    return OC_ERR_UNAVAILABLE;
}

oc_status_t vb_dev_open(vb_dev_t *d, unsigned max_peers, int given, char *reason, size_t size)
{
    union ibv_gid gid;
    oc_status_t st;
    int flags;

    memset(d, 0, sizeof(*d));
    /* Before the first registration, as UCX does: on kernels without
     * copy-on-fork for pinned pages (before 5.13) a fork() would otherwise
     * leave the parent writing into pages the NIC no longer sees. A no-op
     * where the kernel handles it; too late (EINVAL) where this process
     * used verbs before, which is then the application's choice. */
    pthread_once(&fork_once, fork_init);
    d->fork_init = fork_init_rc;
    st = open_first_active(d, reason, size);
    if (st == OC_OK)
        st = fit_max_peers(d, max_peers, given, reason, size);
    if (st != OC_OK)
        return st;
    /* GID index 0: the port GID on InfiniBand, the link-local one on RoCE. */
    if (ibv_query_gid(d->ctx, d->addr.port, 0, &gid) != 0)
        return fail(d, "ibv_query_gid", reason, size);
    memcpy(d->addr.gid, gid.raw, sizeof(d->addr.gid));
    d->addr.nonce = make_nonce();
    d->pd = ibv_alloc_pd(d->ctx);
    if (d->pd == NULL)
        return fail(d, "ibv_alloc_pd", reason, size);
    d->channel = ibv_create_comp_channel(d->ctx);
    if (d->channel == NULL)
        return fail(d, "ibv_create_comp_channel", reason, size);
    /* Events are taken in progress() without blocking; sleeping is epoll's. */
    flags = fcntl(d->channel->fd, F_GETFL);
    if (flags < 0 || fcntl(d->channel->fd, F_SETFL, flags | O_NONBLOCK) < 0)
        return fail(d, "fcntl(O_NONBLOCK) of the completion channel", reason, size);
    d->scq = ibv_create_cq(d->ctx, (int)(d->max_peers * VB_SQ_DEPTH), NULL, d->channel, 0);
    d->rcq = d->scq ? ibv_create_cq(d->ctx, (int)(d->max_peers * VB_RQ_DEPTH), NULL, d->channel,
                                    0)
                    : NULL;
    d->tcq = d->rcq ? ibv_create_cq(d->ctx, 2 * VB_TRIG_DEPTH, NULL, d->channel, 0) : NULL;
    if (d->tcq == NULL)
        return fail(d, "ibv_create_cq", reason, size);
    return OC_OK;
}

static struct ibv_cq *cq_at(vb_dev_t *d, int i)
{
    return i == 0 ? d->scq : i == 1 ? d->rcq : d->tcq;
}

static void ack_all(vb_dev_t *d)
{
    int i;
    for (i = 0; i < 3; i++)
        if (d->unacked[i] > 0) {
            ibv_ack_cq_events(cq_at(d, i), d->unacked[i]);
            d->unacked[i] = 0;
        }
}

unsigned vb_dev_take_events(vb_dev_t *d)
{
    struct ibv_cq *cq;
    void *cq_ctx;
    unsigned n = 0;
    int i;

    while (ibv_get_cq_event(d->channel, &cq, &cq_ctx) == 0) {
        for (i = 0; i < 3 && cq != cq_at(d, i); i++)
            ;
        if (i < 3 && ++d->unacked[i] >= ACK_BATCH) {
            ibv_ack_cq_events(cq, d->unacked[i]);
            d->unacked[i] = 0;
        }
        n++;
    }
    return n;
}

oc_status_t vb_dev_arm(vb_dev_t *d)
{
    int i, rc;
    for (i = 0; i < 3; i++) {
        rc = ibv_req_notify_cq(cq_at(d, i), 0);
        if (rc != 0)
            return vb_errno("ibv_req_notify_cq", rc);
    }
    return OC_OK;
}

void vb_dev_close(vb_dev_t *d)
{
    int i;
    if (d->channel != NULL)
        vb_dev_take_events(d);
    ack_all(d);
    for (i = 0; i < 3; i++)
        if (cq_at(d, i) != NULL)
            ibv_destroy_cq(cq_at(d, i));
    if (d->channel != NULL)
        ibv_destroy_comp_channel(d->channel);
    if (d->pd != NULL)
        ibv_dealloc_pd(d->pd);
    if (d->ctx != NULL)
        ibv_close_device(d->ctx);
    memset(d, 0, sizeof(*d));
}
