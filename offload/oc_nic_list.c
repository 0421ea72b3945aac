/* The error record of a posted list, shared by the backends (oc_nic.h). */
#include "oc_nic.h"
#include "oc_error.h"

#include <stdio.h>

void oc_nic_list_fail(oc_nic_list_t *list, oc_status_t status)
{
    if (status == OC_OK || list->status != OC_OK)
        return;
    list->status = status;
    /* The backend ran on this thread, often the progress thread: without a
     * copy, the application would learn the status and not the reason. */
    snprintf(list->detail, sizeof(list->detail), "%s", oc_last_error());
}
