/*
 * Window memory on UCX: allocated and mapped by UCX itself, with the remote
 * keys of peers' windows. Both are listed in the nic, so that its
 * destruction releases what failed operations left behind.
 */
#include "ucx_internal.h"
#include "oc_error.h"
#include "oc_list.h"

#include <stdlib.h>
#include <string.h>

oc_status_t ucx_mem_alloc(oc_nic_t *base, size_t size, oc_nic_mem_t **out, void **addr)
{
    nic_ucx_t *nic = (nic_ucx_t *)base;
    ucp_mem_map_params_t mp;
    ucp_mem_attr_t attr;
    oc_nic_mem_t *mem = calloc(1, sizeof(*mem));
    ucs_status_t st;

    if (mem == NULL)
        return oc_error(OC_ERR_NO_MEMORY, "ucx: memory handle");
    /* Memory UCX allocates itself is what shared-memory transports can map
     * into peers, so that a put there is the origin's copy alone. */
    memset(&mp, 0, sizeof(mp));
    mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                    UCP_MEM_MAP_PARAM_FIELD_FLAGS;
    mp.address = NULL;
    mp.length = size;
    mp.flags = UCP_MEM_MAP_ALLOCATE;
    st = ucp_mem_map(nic->context, &mp, &mem->memh);
    if (st != UCS_OK) {
        free(mem);
        return oc_error(OC_ERR_NO_MEMORY, "ucx: ucp_mem_map of %zu bytes failed: %s", size,
                        ucs_status_string(st));
    }
    attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS;
    st = ucp_mem_query(mem->memh, &attr);
    if (st != UCS_OK) {
        ucp_mem_unmap(nic->context, mem->memh);
        free(mem);
        return ucx_error("ucp_mem_query", st);
    }
    memset(attr.address, 0, size);
    OC_LIST_PUSH(&nic->mems, mem);
    *addr = attr.address;
    *out = mem;
    return OC_OK;
}

void ucx_mem_free(oc_nic_t *base, oc_nic_mem_t *mem)
{
    if (mem == NULL)
        return;
    OC_LIST_REMOVE(mem);
    ucp_mem_unmap(((nic_ucx_t *)base)->context, mem->memh);
    free(mem);
}

oc_status_t ucx_mem_pack(oc_nic_t *base, oc_nic_mem_t *mem, void **key, size_t *len)
{
    void *buf;
    ucs_status_t st = ucp_rkey_pack(((nic_ucx_t *)base)->context, mem->memh, &buf, len);
    if (st != UCS_OK)
        return ucx_error("ucp_rkey_pack", st);
    *key = malloc(*len ? *len : 1);
    if (*key != NULL)
        memcpy(*key, buf, *len);
    ucp_rkey_buffer_release(buf);
    return *key != NULL ? OC_OK : oc_error(OC_ERR_NO_MEMORY, "ucx: packed key");
}

oc_status_t ucx_rkey_unpack(oc_nic_t *base, oc_nic_ep_t *ep, const void *key, size_t len,
                            oc_nic_rkey_t **out)
{
    nic_ucx_t *nic = (nic_ucx_t *)base;
    oc_nic_rkey_t *rkey = calloc(1, sizeof(*rkey));
    ucs_status_t st;
    (void)len;
    if (rkey == NULL)
        return oc_error(OC_ERR_NO_MEMORY, "ucx: remote key");
    st = ucp_ep_rkey_unpack(ep->ep, key, &rkey->h);
    if (st != UCS_OK) {
        free(rkey);
        return ucx_error("ucp_ep_rkey_unpack", st);
    }
    OC_LIST_PUSH(&nic->rkeys, rkey);
    *out = rkey;
    return OC_OK;
}

void ucx_rkey_destroy(oc_nic_t *base, oc_nic_rkey_t *rkey)
{
    (void)base;
    if (rkey == NULL)
        return;
    OC_LIST_REMOVE(rkey);
    ucp_rkey_destroy(rkey->h);
    free(rkey);
}

void *ucx_rkey_ptr(oc_nic_t *base, oc_nic_rkey_t *rkey, uint64_t raddr)
{
    void *p;
    (void)base;
    return ucp_rkey_ptr(rkey->h, raddr, &p) == UCS_OK ? p : NULL;
}
