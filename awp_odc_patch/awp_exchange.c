#include "awp_exchange.h"

const awp_exchange_ops_t *awp_exchange_for(awp_mode_t mode)
{
    static const awp_exchange_ops_t *const ops[AWP_MODE_COUNT] = {
        [AWP_MODE_TWO_SIDED] = &awp_exchange_two_sided,
        [AWP_MODE_OFFLOAD] = &awp_exchange_offload,
        [AWP_MODE_RMA] = &awp_exchange_rma,
        [AWP_MODE_EMPTY] = &awp_exchange_empty,
    };
    return ops[mode];
}

unsigned awp_exchange_axes(awp_field_t f)
{
    static const unsigned axes[AWP_NFIELDS] = {
        [AWP_U1] = 7, [AWP_V1] = 7, [AWP_W1] = 7,
        [AWP_XX] = 1, [AWP_YY] = 2, [AWP_ZZ] = 4,
        [AWP_XY] = 1 | 2, [AWP_XZ] = 1 | 4, [AWP_YZ] = 2 | 4,
    };
    return axes[f];
}
