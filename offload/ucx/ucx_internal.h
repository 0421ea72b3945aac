/*
 * What the UCX backend's files share (nic_ucx.c: the worker, its set-up and
 * tear-down; ucx_transfer.c: task lists and control messages; ucx_mem.c:
 * window memory and remote keys). Private to offload/ucx/.
 */
#ifndef OC_UCX_INTERNAL_H
#define OC_UCX_INTERNAL_H

#include "oc_nic.h"

#include <ucp/api/ucp.h>

#define AM_ID_CONTROL 7

struct oc_nic_ep {
    ucp_ep_h ep;
    struct oc_nic_ep *next;
    struct nic_ucx *nic;
    ucs_status_t failed;            /* UCS_OK while the peer is reachable */
    struct oc_nic_ep *failed_next;  /* in nic->failing */
};

struct oc_nic_mem {
    ucp_mem_h memh;
    struct oc_nic_mem *next, **prev; /* in nic->mems */
};

struct oc_nic_rkey {
    ucp_rkey_h h;
    struct oc_nic_rkey *next, **prev; /* in nic->rkeys */
};

typedef struct nic_ucx {
    oc_nic_t base;
    ucp_context_h context;
    ucp_worker_h worker;
    ucp_address_t *address;
    size_t address_len;
    int efd;
    int verbose;
    struct oc_nic_ep *eps;
    struct oc_nic_mem *mems;   /* not freed yet: destroy() unmaps what is left */
    struct oc_nic_rkey *rkeys; /* likewise, destroyed once no request uses them */
    oc_nic_amq_t am;           /* control messages to deliver */
    oc_nic_slot_t **flushed;   /* notifications whose flush completed, to send */
    size_t nflushed, flushed_cap;
    struct late_buf *late;     /* drop_unexpected()'s buffers still being written */
    oc_nic_list_t **lists;     /* posted and not done yet, in no order */
    size_t nlists, lists_cap;
    struct oc_nic_ep *failing; /* failed since the last progress: receives to end */
} nic_ucx_t;

/* OC_ERR_BACKEND, "ucx: <what> failed: <UCX's reason>". */
oc_status_t ucx_error(const char *what, ucs_status_t st);

/* ---- ucx_transfer.c: the oc_nic_ops_t calls of task lists and control
 * messages, and what the worker calls back ---- */
oc_status_t ucx_post_list(oc_nic_t *base, oc_nic_list_t *list);
void ucx_cancel_list(oc_nic_t *base, oc_nic_list_t *list, oc_status_t why);
oc_status_t ucx_am_send(oc_nic_t *base, oc_nic_ep_t *ep, const void *data, size_t len);
/* The worker's handler of control messages (arg: the nic). */
ucs_status_t ucx_am_recv_cb(void *arg, const void *header, size_t header_length, void *data,
                            size_t length, const ucp_am_recv_param_t *param);
/* Every endpoint's error handler (arg: the endpoint). */
void ucx_ep_error_cb(void *arg, ucp_ep_h uep, ucs_status_t st);
/* After ucp_worker_progress(): the receives of failed peers are ended, and
 * notifications whose flush completed go out. Each returns what it did. */
unsigned ucx_end_failed(nic_ucx_t *nic);
unsigned ucx_send_flushed(nic_ucx_t *nic);

/* ---- ucx_mem.c: the oc_nic_ops_t calls of window memory and remote keys ---- */
oc_status_t ucx_mem_alloc(oc_nic_t *base, size_t size, oc_nic_mem_t **out, void **addr);
void ucx_mem_free(oc_nic_t *base, oc_nic_mem_t *mem);
oc_status_t ucx_mem_pack(oc_nic_t *base, oc_nic_mem_t *mem, void **key, size_t *len);
oc_status_t ucx_rkey_unpack(oc_nic_t *base, oc_nic_ep_t *ep, const void *key, size_t len,
                            oc_nic_rkey_t **out);
void ucx_rkey_destroy(oc_nic_t *base, oc_nic_rkey_t *rkey);
void *ucx_rkey_ptr(oc_nic_t *base, oc_nic_rkey_t *rkey, uint64_t raddr);

#endif
