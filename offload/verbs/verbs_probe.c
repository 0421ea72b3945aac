/*
 * Is there an RDMA device here? Used by backend selection and offcoll_info.
 * The verbs backend proper comes with its own issue; until then a device that
 * is present is reported, but UCX still carries the traffic.
 */
#include "oc_nic.h"
#include "oc_error.h"

#include <errno.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <string.h>

oc_status_t oc_nic_verbs_probe(char *reason, size_t size)
{
    struct ibv_device **list;
    int n = 0;

    errno = 0;
    list = ibv_get_device_list(&n);
    if (list == NULL) {
        int err = errno;
        snprintf(reason, size, "no RDMA device (%s: %s)",
                 err == ENOSYS ? "ENOSYS" : "errno", strerror(err));
        return OC_ERR_UNAVAILABLE;
    }
    if (n == 0) {
        snprintf(reason, size, "no RDMA device found");
        ibv_free_device_list(list);
        return OC_ERR_UNAVAILABLE;
    }
    snprintf(reason, size, "RDMA device %s present, but this build has no verbs backend yet",
             ibv_get_device_name(list[0]));
    ibv_free_device_list(list);
    return OC_ERR_UNAVAILABLE;
}
