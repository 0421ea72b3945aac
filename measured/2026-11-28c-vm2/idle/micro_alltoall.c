#include <offcoll_mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size; MPI_Comm_rank(MPI_COMM_WORLD, &rank); MPI_Comm_size(MPI_COMM_WORLD, &size);
    size_t b = argc > 1 ? strtoul(argv[1], 0, 0) : 1024; int iters = argc > 2 ? atoi(argv[2]) : 200000;
    char *s = malloc(b * size), *r = malloc(b * size); memset(s, rank, b * size);
    oc_context_t *ctx; oc_team_t *team; oc_request_t *req;
    if (oc_init(NULL, &ctx) || oc_team_create_mpi(ctx, MPI_COMM_WORLD, &team)) { printf("init failed %s\n", oc_last_error()); return 1; }
    for (int k = 0; k < 2; k++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t = MPI_Wtime();
        for (int i = 0; i < iters; i++) {
            if (oc_ialltoall(team, s, r, b, &req) || oc_wait(req) || oc_request_free(req)) { printf("fail %s\n", oc_last_error()); return 1; }
        }
        double oc = (MPI_Wtime() - t) / iters * 1e6;
        MPI_Barrier(MPI_COMM_WORLD);
        t = MPI_Wtime();
        for (int i = 0; i < (argc > 3 ? 0 : iters); i++) MPI_Alltoall(s, b, MPI_BYTE, r, b, MPI_BYTE, MPI_COMM_WORLD);
        double mpi = (MPI_Wtime() - t) / iters * 1e6;
        if (rank == 0) printf("round %d: oc %.2f us, mpi %.2f us\n", k, oc, mpi);
    }
    oc_team_free(team); oc_finalize(ctx); MPI_Finalize(); return 0;
}
