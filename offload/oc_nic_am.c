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

void oc_nic_amq_init(oc_nic_amq_t *q)
{
    q->head = NULL;
    q->tail = &q->head;
}

void oc_nic_amq_push(oc_nic_amq_t *q, const char *who, const void *data, size_t len)
{
    oc_nic_am_msg_t *m = malloc(sizeof(*m) + len);
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
        free(m);
        n++;
    }
    return n;
}

void oc_nic_amq_fini(oc_nic_amq_t *q)
{
    while (q->head != NULL) {
        oc_nic_am_msg_t *m = q->head;
        q->head = m->next;
        free(m);
    }
    q->tail = &q->head;
}
