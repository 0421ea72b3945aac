/* The MPI helpers of an installed offcoll (offcoll_mpi.h, header-only), built
 * with mpicc and pkg-config: a team over MPI_COMM_WORLD and one alltoall. */
#include <stdio.h>

#include <mpi.h>
#include <offcoll_mpi.h>

int main(int argc, char **argv)
{
    oc_context_t *ctx = NULL;
    oc_team_t *team = NULL;
    oc_request_t *req = NULL;
    int rank, size, ok;
    char s[64], r[64];

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 0; i < size && i < 64; i++)
        s[i] = (char)(rank * 16 + i);
    ok = size <= 64 && oc_init(NULL, &ctx) == OC_OK &&
         oc_team_create_mpi(ctx, MPI_COMM_WORLD, &team) == OC_OK &&
         oc_ialltoall(team, s, r, 1, &req) == OC_OK && oc_wait(req) == OC_OK;
    for (int i = 0; ok && i < size; i++)
        ok = r[i] == (char)(i * 16 + rank);
    if (!ok)
        fprintf(stderr, "rank %d: %s\n", rank, oc_last_error());
    else if (rank == 0)
        printf("offcoll_mpi.h: an alltoall over MPI_COMM_WORLD of %d rank(s): ok\n", size);
    oc_request_free(req);
    oc_team_free(team);
    oc_finalize(ctx);
    MPI_Finalize();
    return ok ? 0 : 1;
}
