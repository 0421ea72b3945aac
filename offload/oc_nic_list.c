/* What the backends share about a posted list: its error record, its tasks
 * to this process itself (oc_nic.h). */
#include "oc_nic.h"
#include "oc_error.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

void oc_nic_list_fail(oc_nic_list_t *list, oc_status_t status)
{
    if (status == OC_OK || list->status != OC_OK)
        return;
    list->status = status;
    /* The backend ran on this thread, often the progress thread: without a
     * copy, the application would learn the status and not the reason. */
    snprintf(list->detail, sizeof(list->detail), "%s", oc_last_error());
}

int oc_nic_do_self(oc_nic_amq_t *q, const char *who, const oc_task_t *t)
{
    switch (t->type) {
    case OC_TASK_PUT:
        if (t->len > 0)
            memcpy((void *)(uintptr_t)t->raddr, t->src, t->len);
        return 1;
    case OC_TASK_NOTIFY:
        oc_nic_amq_push(q, who, t->src, t->len);
        return 1;
    case OC_TASK_FLUSH:
        return 1;
    default:
        return 0;
    }
}
