/* oc_bench_halo's offcoll implementations: a context and team each, and a
 * halo plan over the benchmark's fields. */
#include <stdio.h>
#include <string.h>

#include "halo_bench.h"

void halo_oc_setup(halo_impl_t *im, halo_bench_t *b, int nf)
{
    oc_halo_field_t fields[HALO_MAX_FIELDS];
    oc_halo_params_t p;
    int f, d, s;

    memset(&p, 0, sizeof(p));
    memset(fields, 0, sizeof(fields));
    for (d = 0; d < 3; d++) {
        p.dims[d] = b->dims[d];
        p.periodic[d] = b->o.periodic;
    }
    p.width = (unsigned)b->w;
    p.corners = b->o.corners;
    for (f = 0; f < nf; f++) {
        fields[f].data = b->field[f];
        memcpy(fields[f].n, b->n, sizeof(fields[f].n));
        fields[f].elem_size = sizeof(double);
    }
    bench_check(oc_halo_create(im->team, &p, fields, nf, &im->halo), "oc_halo_create");
    /* The plan's grid must be MPI_Cart_create's, or the check below would
     * blame the data for a difference of neighbours. */
    for (d = 0; d < 3; d++)
        for (s = 0; s < 2; s++) {
            int off[3] = {0, 0, 0}, mpi = b->nbr[d][s], oc = -1;
            off[d] = s == 0 ? -1 : 1;
            bench_check(oc_halo_neighbor(im->halo, off[0], off[1], off[2], &oc),
                        "oc_halo_neighbor");
            if (oc != (mpi == MPI_PROC_NULL ? -1 : mpi))
                bench_die("oc_halo_neighbor(%d, %d, %d) = %d, but MPI_Cart_shift says %d", off[0],
                          off[1], off[2], oc, mpi == MPI_PROC_NULL ? -1 : mpi);
        }
}

void halo_oc_teardown(halo_impl_t *im, halo_bench_t *b, int nf)
{
    (void)b;
    (void)nf;
    bench_check(oc_halo_free(im->halo), "oc_halo_free");
    im->halo = NULL;
}

void halo_oc_start(halo_impl_t *im, halo_bench_t *b, int f)
{
    (void)b;
    bench_check(oc_halo_start(im->halo, f), "oc_halo_start");
}

void halo_oc_wait(halo_impl_t *im, halo_bench_t *b, int f)
{
    (void)b;
    bench_check(oc_halo_wait(im->halo, f), "oc_halo_wait");
}

/* A context per offcoll implementation, since a context reads its
 * configuration once. One that cannot be made on some rank (a transport
 * missing here) is left out everywhere, with a note. */
void halo_impl_open(halo_bench_t *b, halo_impl_t *im)
{
    oc_config_t cfg;
    oc_status_t st;
    int ok, all_ok;
    if (!im->offcoll)
        return;
    bench_at.impl = im->name;
    bench_check(oc_config_init(&cfg), "oc_config_init");
    cfg.progress = im->mode;
    cfg.intranode = im->intranode;
    st = oc_init(&cfg, &im->ctx);
    ok = st == OC_OK;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all_ok) {
        if (st != OC_OK)
            fprintf(stderr, HALO_PROG ": rank %d: note: %s left out: oc_init: %s: %s\n", b->rank,
                    im->name, oc_status_string(st), oc_last_error());
        else
            bench_check(oc_finalize(im->ctx), "oc_finalize");
        im->ctx = NULL;
        im->unavailable = 1;
    } else
        bench_check(oc_team_create_mpi(im->ctx, b->cart, &im->team), "oc_team_create_mpi");
    bench_at.impl = "-";
}
