/*
 * The trigger: a QP connected to itself (loopback) whose CQ reports to the
 * same completion channel as the data CQs. Each list with network tasks ends
 * with a signalled zero-byte RDMA write on it; its completion wakes the
 * progress thread, which runs the list's done() and posts the next list.
 *
 * Two variants (OC_VERBS_TRIGGER=auto|wait|thread):
 *   wait    the write is posted with the list, behind a cross-channel WAIT on
 *           the data send CQ, so the NIC itself holds it until the list's
 *           work requests have completed. Upstream rdma-core has no such
 *           verb; softverbs' extension stands for the mlx5 raw-WQE route.
 *   thread  the thread counts the list's completions (data CQ events on the
 *           same channel) and posts the write itself when the last arrives.
 * Receives are matched in software (verbs have no tag matching), so in
 * either variant done() runs only once the write has fired and the list's
 * own count of unfinished tasks is zero.
 */
#include "verbs_internal.h"
#include "oc_env.h"
#include "oc_error.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* softverbs.h, found at run time: the backend links the real libibverbs. */
#define SOFTVERBS_CAP_CQE_WAIT (1ULL << 0)
typedef int (*query_caps_fn)(struct ibv_context *context, uint64_t *caps);

oc_status_t vb_trigger_parse(vb_trig_mode_t *mode)
{
    /* in the order of vb_trig_mode_t */
    static const char *const names[] = {"auto", "wait", "thread"};
    int m = VB_TRIG_AUTO;
    oc_status_t st = oc_env_enum("OC_VERBS_TRIGGER", names, 3, &m);
    *mode = (vb_trig_mode_t)m;
    return st;
}

/* The provider's cross-channel WAIT, or NULL with the reason in why. */
static vb_post_wait_fn find_wait(vb_nic_t *nic, char *why, size_t size)
{
    query_caps_fn query;
    uint64_t caps = 0;
    /* Stored through a void **, as in POSIX's dlsym example: ISO C has no
     * conversion from object to function pointers. */
    *(void **)&query = dlsym(RTLD_DEFAULT, "softverbs_query_caps");
    if (query != NULL && query(nic->dev.ctx, &caps) == 0 && (caps & SOFTVERBS_CAP_CQE_WAIT)) {
        vb_post_wait_fn post;
        *(void **)&post = dlsym(RTLD_DEFAULT, "softverbs_post_wait");
        snprintf(why, size, "softverbs CQE_WAIT");
        return post;
    }
    if (strncmp(nic->dev.name, "mlx5", 4) == 0)
        snprintf(why, size, "the mlx5 raw-WQE WAIT is not implemented yet");
    else
        snprintf(why, size, "%s has no cross-channel WAIT", nic->dev.name);
    return NULL;
}

oc_status_t vb_trigger_open(vb_nic_t *nic)
{
    vb_trigger_t *tr = &nic->trig;
    vb_wireup_t self;
    char why[96];
    oc_status_t st;

    tr->post_wait = tr->mode == VB_TRIG_THREAD ? NULL : find_wait(nic, why, sizeof(why));
    if (tr->mode == VB_TRIG_WAIT && tr->post_wait == NULL)
        return oc_error(OC_ERR_UNAVAILABLE, "OC_VERBS_TRIGGER=wait: %s", why);
    if (tr->post_wait != NULL) {
        tr->mode = VB_TRIG_WAIT;
        snprintf(tr->why, sizeof(tr->why), "wait (%s)", why);
    } else if (tr->mode == VB_TRIG_THREAD) {
        snprintf(tr->why, sizeof(tr->why), "thread (OC_VERBS_TRIGGER=thread)");
    } else {
        tr->mode = VB_TRIG_THREAD;
        snprintf(tr->why, sizeof(tr->why), "thread (%s)", why);
    }
    st = vb_qp_create(nic, &nic->dev.addr, 1, &tr->ep);
    if (st != OC_OK)
        return st;
    self.qpn = tr->ep->qp->qp_num;
    self.psn = tr->ep->psn;
    return vb_qp_connect(nic, tr->ep, &self);
}

void vb_trigger_stage(vb_nic_t *nic, oc_nic_list_t *list, unsigned sq_slots)
{
    vb_op_t *op = vb_op_get(nic);
    if (op == NULL) {
        /* The list cannot end: its request times out and says why here. */
        oc_warn("verbs: out of memory for a trigger write; a list is left unfinished");
        return;
    }
    op->kind = VB_OP_TRIGGER;
    op->list = list;
    op->sq_slots = sq_slots;
    op->wr.opcode = IBV_WR_RDMA_WRITE; /* zero bytes: no MR, no receive needed */
    op->wr.num_sge = 0;
    vb_stage(nic, nic->trig.ep, op);
}

oc_status_t vb_trigger_list_posted(vb_nic_t *nic, oc_nic_list_t *list)
{
    vb_op_t *wait, *write;
    if (nic->trig.mode != VB_TRIG_WAIT)
        return OC_OK;
    wait = vb_op_get(nic);
    write = wait != NULL ? vb_op_get(nic) : NULL;
    if (write == NULL) {
        if (wait != NULL)
            vb_op_put(nic, wait);
        return oc_error(OC_ERR_NO_MEMORY, "verbs: the trigger of a list");
    }
    vb_op_put(nic, write); /* the next get takes it back: the stage cannot fail */
    wait->kind = VB_OP_WAIT; /* its count is taken when it is posted */
    vb_stage(nic, nic->trig.ep, wait);
    vb_trigger_stage(nic, list, 2);
    return OC_OK;
}

void vb_trigger_list_idle(vb_nic_t *nic, oc_nic_list_t *list)
{
    if (nic->trig.mode == VB_TRIG_THREAD)
        vb_trigger_stage(nic, list, 1);
    else if (list->fired)
        list->done(list);
}

void vb_trigger_fired(vb_nic_t *nic, vb_op_t *op, oc_status_t status)
{
    oc_nic_list_t *list = op->list;
    (void)nic;
    oc_nic_list_fail(list, status);
    list->fired = 1;
    if (list->outstanding == 0)
        list->done(list);
}
