/* The control-message queue every backend keeps (oc_nic.h). */
#include "oc_nic.h"
#include "oc_error.h"

#include <stdlib.h>
#include <string.h>

struct oc_nic_am_msg {
    oc_nic_am_msg_t *next;
    size_t len;
    char data[];
};

/* Control messages are small (notifications, timeout queries): nodes for
 * AMQ_SMALL bytes come from a pool made with the queue, so that keeping one
 * needs no memory while no more than AMQ_NODES wait at once. A larger
 * message gets a node of its own, freed once delivered. */
enum { AMQ_SMALL = 64, AMQ_NODES = 64 };

static int small(size_t len)
{
    return len <= AMQ_SMALL;
}

static void node_free(oc_nic_amq_t *q, oc_nic_am_msg_t *m)
{
    if (small(m->len))
        oc_pool_put(&q->pool, m);
    else
        free(m);
}

oc_status_t oc_nic_amq_init(oc_nic_amq_t *q)
{
    q->head = NULL;
    q->tail = &q->head;
    if (oc_pool_init(&q->pool, sizeof(oc_nic_am_msg_t) + AMQ_SMALL, AMQ_NODES) != 0)
        return oc_error(OC_ERR_NO_MEMORY, "control-message queue");
    return OC_OK;
}

void oc_nic_amq_push(oc_nic_amq_t *q, const char *who, const void *data, size_t len)
{
    oc_nic_am_msg_t *m = small(len) ? oc_pool_get(&q->pool) : malloc(sizeof(*m) + len);
    if (m == NULL) {
        oc_warn("%s: out of memory: a control message of %zu bytes was lost", who, len);
        return;
    }
    m->next = NULL;
    m->len = len;
    memcpy(m->data, data, len);
    *q->tail = m;
    q->tail = &m->next;
}

unsigned oc_nic_amq_deliver(oc_nic_amq_t *q, oc_nic_t *nic)
{
    unsigned n = 0;
    while (q->head != NULL) {
        oc_nic_am_msg_t *m = q->head;
        q->head = m->next;
        if (q->head == NULL)
            q->tail = &q->head;
        if (nic->am_cb != NULL)
            nic->am_cb(nic->am_arg, m->data, m->len);
        node_free(q, m);
        n++;
    }
    return n;
}

void oc_nic_amq_fini(oc_nic_amq_t *q)
{
    while (q->head != NULL) {
        oc_nic_am_msg_t *m = q->head;
        q->head = m->next;
        node_free(q, m);
    }
    oc_pool_fini(&q->pool);
    q->tail = &q->head;
}
