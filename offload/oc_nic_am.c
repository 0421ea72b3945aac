/* The control-message queue every backend keeps (oc_nic.h). */
#include "oc_nic.h"
#include "oc_error.h"

#include <stdlib.h>
#include <string.h>

struct oc_nic_am_msg {
    oc_nic_am_msg_t *next;
    size_t len;
    int pooled; /* part of q->pool, not freed on its own */
    char data[];
};

/* Control messages are small (notifications, timeout queries): a pool of
 * nodes of this size is made with the queue and its nodes reused, so that
 * keeping one needs no memory while no more than AMQ_NODES wait at once. A
 * node holding at most AMQ_SMALL bytes has room for AMQ_SMALL: it is reused
 * too; a larger one is freed once delivered. */
enum { AMQ_SMALL = 64, AMQ_NODES = 64, AMQ_NODE_BYTES = sizeof(oc_nic_am_msg_t) + AMQ_SMALL };

static oc_nic_am_msg_t *node_new(size_t len)
{
    oc_nic_am_msg_t *m = malloc(sizeof(*m) + (len > AMQ_SMALL ? len : AMQ_SMALL));
    if (m != NULL)
        m->pooled = 0;
    return m;
}

oc_status_t oc_nic_amq_init(oc_nic_amq_t *q)
{
    int i;
    q->head = q->spare = NULL;
    q->tail = &q->head;
    q->pool = malloc(AMQ_NODES * AMQ_NODE_BYTES);
    if (q->pool == NULL)
        return oc_error(OC_ERR_NO_MEMORY, "control-message queue");
    for (i = 0; i < AMQ_NODES; i++) {
        oc_nic_am_msg_t *m = (oc_nic_am_msg_t *)((char *)q->pool + (size_t)i * AMQ_NODE_BYTES);
        m->pooled = 1;
        m->next = q->spare;
        q->spare = m;
    }
    return OC_OK;
}

void oc_nic_amq_push(oc_nic_amq_t *q, const char *who, const void *data, size_t len)
{
    oc_nic_am_msg_t *m;
    if (len <= AMQ_SMALL && q->spare != NULL) {
        m = q->spare;
        q->spare = m->next;
    } else {
        m = node_new(len);
    }
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
        if (m->len <= AMQ_SMALL) {
            m->next = q->spare;
            q->spare = m;
        } else {
            free(m);
        }
        n++;
    }
    return n;
}

static void free_nodes(oc_nic_am_msg_t *m)
{
    while (m != NULL) {
        oc_nic_am_msg_t *next = m->next;
        if (!m->pooled)
            free(m);
        m = next;
    }
}

void oc_nic_amq_fini(oc_nic_amq_t *q)
{
    free_nodes(q->head);
    free_nodes(q->spare);
    free(q->pool);
    q->head = q->spare = NULL;
    q->pool = NULL;
    q->tail = &q->head;
}
