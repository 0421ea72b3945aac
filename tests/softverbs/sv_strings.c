/*
 * The string helpers of libibverbs, since a program linked against
 * softverbs alone has no other copy of them.
 */
#include "sv_internal.h"

SV_EXPORT const char *ibv_wc_status_str(enum ibv_wc_status status)
{
    static const char *const names[] = {
        [IBV_WC_SUCCESS] = "success",
        [IBV_WC_LOC_LEN_ERR] = "local length error",
        [IBV_WC_LOC_QP_OP_ERR] = "local QP operation error",
        [IBV_WC_LOC_EEC_OP_ERR] = "local EE context operation error",
        [IBV_WC_LOC_PROT_ERR] = "local protection error",
        [IBV_WC_WR_FLUSH_ERR] = "Work Request Flushed Error",
        [IBV_WC_MW_BIND_ERR] = "memory management operation error",
        [IBV_WC_BAD_RESP_ERR] = "bad response error",
        [IBV_WC_LOC_ACCESS_ERR] = "local access error",
        [IBV_WC_REM_INV_REQ_ERR] = "remote invalid request error",
        [IBV_WC_REM_ACCESS_ERR] = "remote access error",
        [IBV_WC_REM_OP_ERR] = "remote operation error",
        [IBV_WC_RETRY_EXC_ERR] = "transport retry counter exceeded",
        [IBV_WC_RNR_RETRY_EXC_ERR] = "RNR retry counter exceeded",
        [IBV_WC_LOC_RDD_VIOL_ERR] = "local RDD violation error",
        [IBV_WC_REM_INV_RD_REQ_ERR] = "remote invalid RD request",
        [IBV_WC_REM_ABORT_ERR] = "aborted error",
        [IBV_WC_INV_EECN_ERR] = "invalid EE context number",
        [IBV_WC_INV_EEC_STATE_ERR] = "invalid EE context state",
        [IBV_WC_FATAL_ERR] = "fatal error",
        [IBV_WC_RESP_TIMEOUT_ERR] = "response timeout error",
        [IBV_WC_GENERAL_ERR] = "general error",
        [IBV_WC_TM_ERR] = "TM error",
        [IBV_WC_TM_RNDV_INCOMPLETE] = "TM software rendezvous",
    };
    if ((unsigned)status >= sizeof names / sizeof names[0] || names[status] == NULL) {
        return "unknown";
    }
    return names[status];
}

SV_EXPORT const char *ibv_port_state_str(enum ibv_port_state state)
{
    static const char *const names[] = {"PORT_NOP", "PORT_DOWN", "PORT_INIT", "PORT_ARMED", "PORT_ACTIVE",
                                        "PORT_ACTIVE_DEFER"};
    return (unsigned)state < sizeof names / sizeof names[0] ? names[state] : "unknown";
}
