/* oc_bench_halo's MPI baselines: mpi_2sided (MPI_Irecv/MPI_Isend of packed
 * faces) and mpi_rma (MPI_Put into the neighbours' landing buffers in a
 * generalized active-target epoch); both unpack into the ghosts. */
#include <stdlib.h>
#include <string.h>

#include "halo_bench.h"

/* The MPI versions' state per field: packed faces, requests, the RMA window
 * (whose memory holds the landing buffers, one per dimension and side). */
typedef struct {
    double *sbuf[3][2], *rbuf[3][2];
    MPI_Request req[12];
    int nreq;
    MPI_Win win;
    double *landing;
} mpi_field_t;

static mpi_field_t mf[HALO_MAX_FIELDS];
static MPI_Group stage_group[3]; /* mpi_rma: the distinct neighbours of each stage */
static size_t landing_off[3][2]; /* mpi_rma: elements into the window, the same on every rank */

/* The stages of an exchange: 1, or 3 with corners (the x, y, z sweep, where
 * each stage sends the ghosts of the ones before); stage st covers dimensions
 * [*dlo, *dhi). */
static int stages(const halo_bench_t *b)
{
    return b->o.corners ? 3 : 1;
}

static void stage_dims(const halo_bench_t *b, int st, int *dlo, int *dhi)
{
    *dlo = b->o.corners ? st : 0;
    *dhi = b->o.corners ? st + 1 : 3;
}

static int msg_tag(int f, int d, int recv_side)
{
    return (f * 3 + d) * 2 + recv_side;
}

void halo_mpi_setup(halo_impl_t *im, halo_bench_t *b, int nf)
{
    int f, d, s, rma = strcmp(im->name, "mpi_rma") == 0;
    size_t total = 0;

    for (d = 0; d < 3; d++)
        for (s = 0; s < 2; s++) {
            landing_off[d][s] = total;
            total += b->face[d];
        }
    for (f = 0; f < nf; f++) {
        mpi_field_t *m = &mf[f];
        if (rma) {
            MPI_Info info;
            MPI_Info_create(&info);
            MPI_Info_set(info, "no_locks", "true");
            MPI_Win_allocate((MPI_Aint)(total * sizeof(double)), sizeof(double), info, b->cart,
                             &m->landing, &m->win);
            MPI_Info_free(&info);
        }
        for (d = 0; d < 3; d++)
            for (s = 0; s < 2; s++) {
                m->sbuf[d][s] = (double *)bench_buf_alloc(b->face[d] * sizeof(double));
                m->rbuf[d][s] = rma ? m->landing + landing_off[d][s]
                                    : (double *)bench_buf_alloc(b->face[d] * sizeof(double));
            }
    }
    if (rma) {
        MPI_Group all;
        MPI_Comm_group(b->cart, &all);
        for (s = 0; s < stages(b); s++) {
            int dlo, dhi, ranks[6], k = 0, j, side;
            stage_dims(b, s, &dlo, &dhi);
            for (d = dlo; d < dhi; d++)
                for (side = 0; side < 2; side++) {
                    int r = b->nbr[d][side];
                    for (j = 0; j < k && ranks[j] != r; j++)
                        ;
                    if (r != MPI_PROC_NULL && j == k)
                        ranks[k++] = r;
                }
            MPI_Group_incl(all, k, ranks, &stage_group[s]);
        }
        MPI_Group_free(&all);
    }
}

void halo_mpi_teardown(halo_impl_t *im, halo_bench_t *b, int nf)
{
    int f, d, s, rma = strcmp(im->name, "mpi_rma") == 0;
    for (f = 0; f < nf; f++)
        for (d = 0; d < 3; d++)
            for (s = 0; s < 2; s++) {
                free(mf[f].sbuf[d][s]);
                if (!rma)
                    free(mf[f].rbuf[d][s]);
            }
    if (rma) {
        for (f = 0; f < nf; f++)
            MPI_Win_free(&mf[f].win);
        for (s = 0; s < stages(b); s++)
            MPI_Group_free(&stage_group[s]);
    }
    memset(mf, 0, sizeof(mf));
}

/* Receives posted first, then each face packed and sent. */
static void two_sided_stage_start(halo_bench_t *b, int f, int st)
{
    mpi_field_t *m = &mf[f];
    int dlo, dhi, d, s;
    stage_dims(b, st, &dlo, &dhi);
    for (d = dlo; d < dhi; d++)
        for (s = 0; s < 2; s++)
            if (b->nbr[d][s] != MPI_PROC_NULL)
                MPI_Irecv(m->rbuf[d][s], (int)b->face[d], MPI_DOUBLE, b->nbr[d][s],
                          msg_tag(f, d, s), b->cart, &m->req[m->nreq++]);
    for (d = dlo; d < dhi; d++)
        for (s = 0; s < 2; s++)
            if (b->nbr[d][s] != MPI_PROC_NULL) {
                halo_box_copy(b, b->field[f], &b->send[d][s], m->sbuf[d][s], 1);
                MPI_Isend(m->sbuf[d][s], (int)b->face[d], MPI_DOUBLE, b->nbr[d][s],
                          msg_tag(f, d, 1 - s), b->cart, &m->req[m->nreq++]);
            }
}

/* Exposure epoch opened first, then each face packed and put. */
static void rma_stage_start(halo_bench_t *b, int f, int st)
{
    mpi_field_t *m = &mf[f];
    int dlo, dhi, d, s;
    stage_dims(b, st, &dlo, &dhi);
    MPI_Win_post(stage_group[st], 0, m->win);
    for (d = dlo; d < dhi; d++)
        for (s = 0; s < 2; s++)
            if (b->nbr[d][s] != MPI_PROC_NULL)
                halo_box_copy(b, b->field[f], &b->send[d][s], m->sbuf[d][s], 1);
    MPI_Win_start(stage_group[st], 0, m->win);
    for (d = dlo; d < dhi; d++)
        for (s = 0; s < 2; s++)
            if (b->nbr[d][s] != MPI_PROC_NULL)
                MPI_Put(m->sbuf[d][s], (int)b->face[d], MPI_DOUBLE, b->nbr[d][s],
                        (MPI_Aint)landing_off[d][1 - s], (int)b->face[d], MPI_DOUBLE, m->win);
}

/* Completes stage st of field f and unpacks its ghosts. */
static void mpi_stage_finish(halo_bench_t *b, int f, int st, int rma)
{
    mpi_field_t *m = &mf[f];
    int dlo, dhi, d, s;
    if (rma) {
        MPI_Win_complete(m->win);
        MPI_Win_wait(m->win);
    } else {
        MPI_Waitall(m->nreq, m->req, MPI_STATUSES_IGNORE);
        m->nreq = 0;
    }
    stage_dims(b, st, &dlo, &dhi);
    for (d = dlo; d < dhi; d++)
        for (s = 0; s < 2; s++)
            if (b->nbr[d][s] != MPI_PROC_NULL)
                halo_box_copy(b, b->field[f], &b->recv[d][s], m->rbuf[d][s], 0);
}

void halo_two_sided_start(halo_impl_t *im, halo_bench_t *b, int f)
{
    (void)im;
    two_sided_stage_start(b, f, 0);
}

void halo_rma_start(halo_impl_t *im, halo_bench_t *b, int f)
{
    (void)im;
    rma_stage_start(b, f, 0);
}

/* The rest of the sweep: stage st+1 needs the ghosts of stage st. */
void halo_mpi_wait(halo_impl_t *im, halo_bench_t *b, int f)
{
    int st, rma = im->start == halo_rma_start;
    for (st = 0; st < stages(b); st++) {
        if (st > 0)
            (rma ? rma_stage_start : two_sided_stage_start)(b, f, st);
        mpi_stage_finish(b, f, st, rma);
    }
}
