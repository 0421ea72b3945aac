/*
 * MPI bootstrap helpers for offcoll. Header-only on purpose: liboffcoll does
 * not link MPI, so any MPI library the application uses works.
 */
#ifndef OFFCOLL_MPI_H
#define OFFCOLL_MPI_H

#include <mpi.h>
#include "offcoll.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Out-of-band allgather over an MPI communicator (arg points at the
 *  MPI_Comm); the oc_oob_allgather_fn that oc_team_create_mpi passes. */
static inline int oc_mpi_oob_allgather(const void *src, void *dst, size_t len, void *arg)
{
    if (len > (size_t)INT32_MAX)
        return -1;
    return MPI_Allgather(src, (int)len, MPI_BYTE, dst, (int)len, MPI_BYTE,
                         *(MPI_Comm *)arg) == MPI_SUCCESS ? 0 : -1;
}

/** Creates a team with the members and ranks of comm; collective over comm,
 *  which is used only during the call (the team does not keep it). Returns
 *  oc_team_create's status; OC_ERR_INVALID_ARG for MPI_COMM_NULL. */
static inline oc_status_t oc_team_create_mpi(oc_context_t *ctx, MPI_Comm comm,
                                             oc_team_t **team)
{
    oc_team_params_t p;
    int rank, size;
    if (comm == MPI_COMM_NULL) {
        if (team != NULL)
            *team = NULL;
        return oc_set_last_error(OC_ERR_INVALID_ARG, "oc_team_create_mpi: comm is MPI_COMM_NULL");
    }
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    p.rank = rank;
    p.size = size;
    p.allgather = oc_mpi_oob_allgather;
    p.arg = &comm; /* only used during the call */
    return oc_team_create(ctx, &p, team);
}

#ifdef __cplusplus
}
#endif
#endif /* OFFCOLL_MPI_H */
