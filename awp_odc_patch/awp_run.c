/*
 * awp_run: runs a scenario file.
 *
 *   mpirun -np N awp_run SCENARIO [key=value ...]
 *
 * The overrides replace keys of the file (mode=offload, proc="2 1 1"...).
 * Writes <output>/<name>_seismograms.csv and, for each snapshot step, the
 * slice as <...>.dat and a PNG through gnuplot; prints progress lines on
 * stderr (every 10 s, or every `progress` steps) and a summary at the end. Exit status: 0 done,
 * 1 failed while running, 2 a bad scenario or command line.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awp_error.h"
#include "awp_output.h"
#include "awp_sim.h"
#include "oc_bench_plot.h"

#define PROG "awp_run"

typedef struct {
    char dat[AWP_MAX_SNAPSHOTS][AWP_OUT_PATH_MAX];
    int step[AWP_MAX_SNAPSHOTS];
    int n;
} snapshots_t;

/* Every rank reaches the same verdict; rank 0 says why. */
static int report(int rank, int rc)
{
    if (rc != 0 && rank == 0)
        fprintf(stderr, PROG ": %s\n", awp_last_error());
    return rc;
}

static int take_snapshot(awp_sim_t *s, snapshots_t *snaps)
{
    int rows, cols, rc;
    awp_box_t b = awp_slice_box(&s->sc, &rows, &cols);
    float *v = s->g.rank == 0 ? malloc((size_t)rows * (size_t)cols * sizeof(float)) : NULL;
    if (s->g.rank == 0 && v == NULL)
        return awp_fail("out of memory for a snapshot");
    rc = awp_sim_gather(s, s->sc.snap_field, &b, v);
    /* as the receivers' traces (awp_sim.c), for a run that records none */
    for (size_t i = 0; rc == 0 && s->g.rank == 0 && i < (size_t)rows * (size_t)cols; i++)
        if (!isfinite(v[i]))
            rc = awp_fail("snapshot of step %d: %s = %g: the wavefield is no longer finite",
                          s->step, awp_field_name(s->sc.snap_field), v[i]);
    if (rc == 0 && s->g.rank == 0) {
        rc = awp_write_slice(&s->sc, s->step, v, rows, cols, snaps->dat[snaps->n],
                             sizeof(snaps->dat[0]));
        snaps->step[snaps->n++] = s->step;
    }
    free(v);
    return rc;
}

static int is_snapshot_step(const awp_scenario_t *sc, int step)
{
    int i;
    for (i = 0; i < sc->nsnap; i++)
        if (sc->snap_step[i] == step)
            return 1;
    return 0;
}

/* A progress line every sc.progress steps, or every 10 s with auto. */
static void progress(const awp_sim_t *s, double t0, double *last)
{
    double now = MPI_Wtime(), el = now - t0;
    if (s->g.rank != 0 || s->sc.progress == 0 || s->step == s->sc.steps ||
        (s->sc.progress > 0 ? s->step % s->sc.progress != 0 : now - *last < 10))
        return;
    *last = now;
    fprintf(stderr, PROG ": step %d/%d (%.0f%%), %.3f ms/step, %.0f s left\n", s->step,
            s->sc.steps, 100.0 * s->step / s->sc.steps, 1e3 * el / s->step,
            el / s->step * (s->sc.steps - s->step));
}

static int run(awp_sim_t *s, snapshots_t *snaps)
{
    double t0 = MPI_Wtime(), last = t0;
    int rc = 0;
    while (rc == 0 && s->step < s->sc.steps) {
        rc = awp_sim_step(s);
        if (rc == 0 && is_snapshot_step(&s->sc, s->step))
            rc = take_snapshot(s, snaps);
        progress(s, t0, &last);
    }
    return rc == 0 ? awp_sim_finish(s) : rc;
}

static int write_seismograms(const awp_sim_t *s)
{
    char path[AWP_OUT_PATH_MAX];
    size_t n = (size_t)s->sc.nrec * (size_t)s->sc.steps * 3;
    float *tr = s->g.rank == 0 ? malloc(n * sizeof(float) + 1) : NULL;
    int rc = s->g.rank == 0 && tr == NULL ? awp_fail("out of memory for the seismograms") : 0;
    if ((rc = awp_agree(s->g.comm, rc)) == 0) /* the others would wait in their sends */
        rc = awp_sim_traces(s, tr);
    if (rc == 0 && s->g.rank == 0 && s->sc.nrec > 0) {
        rc = awp_write_seismograms(&s->sc, tr, s->step, path, sizeof(path));
        if (rc == 0)
            printf("seismograms: %s\n", path);
    }
    free(tr);
    return rc;
}

/* Mean over ranks of the time per step, its exchange and compute parts. */
static void summary(const awp_sim_t *s)
{
    double t[3] = {s->t_step, s->t_comm, s->t_start}, tmax;
    MPI_Reduce(&s->t_step, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, s->g.comm);
    MPI_Reduce(s->g.rank == 0 ? MPI_IN_PLACE : t, t, 3, MPI_DOUBLE, MPI_SUM, 0, s->g.comm);
    if (s->g.rank != 0 || s->step == 0)
        return;
    for (int i = 0; i < 3; i++)
        t[i] /= s->g.size * s->step;
    printf("summary: mode %s, grid %dx%dx%d on %dx%dx%d ranks, %d steps\n",
           awp_mode_name(s->sc.mode), s->sc.ng[0], s->sc.ng[1], s->sc.ng[2], s->g.dims[0],
           s->g.dims[1], s->g.dims[2], s->step);
    printf("  time per step      %10.3f ms (slowest rank: %.3f ms)\n", 1e3 * t[0],
           1e3 * tmax / s->step);
    printf("  communication      %10.3f ms per step, visible to the application (%.1f%%)\n",
           1e3 * t[1], 100 * t[1] / t[0]);
    printf("    of which starts  %10.3f ms per step (the rest: waits)\n", 1e3 * t[2]);
    printf("  computation        %10.3f ms per step\n", 1e3 * (t[0] - t[1]));
}

/* After MPI_Finalize: one PNG per slice written. */
static void plot_snapshots(const awp_scenario_t *sc, const snapshots_t *snaps)
{
    static const char *const axes[3] = {"x", "y", "z"};
    int i, a = sc->snap_axis;
    for (i = 0; i < snaps->n; i++) {
        char png[AWP_OUT_PATH_MAX], title[256], h[32];
        const char *extra[4] = {title, h, axes[a == 0 ? 1 : 0], axes[a == 2 ? 1 : 2]};
        snprintf(png, sizeof(png), "%.*s.png", (int)(strlen(snaps->dat[i]) - 4), snaps->dat[i]);
        awp_slice_title(sc, snaps->step[i], title, sizeof(title));
        snprintf(h, sizeof(h), "%g", sc->h);
        if (bench_plot(PROG, "plot_awp_snapshot.gp", snaps->dat[i], png, extra, 4) == 0)
            printf("snapshot: %s\n", png);
    }
}

int main(int argc, char **argv)
{
    static awp_scenario_t sc;
    static awp_sim_t sim;
    static snapshots_t snaps;
    int rank, size, rc;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        if (rank == 0)
            fprintf(argc < 2 ? stderr : stdout,
                    "usage: mpirun -np N " PROG " SCENARIO [key=value ...]\n"
                    "Runs the scenario file (README.md lists its keys); key=value replaces\n"
                    "a key of the file, e.g. mode=offload or proc=\"2 2 1\".\n");
        MPI_Finalize();
        return argc < 2 ? 2 : 0;
    }
    /* Every rank reads the files; one that cannot (no shared file system, a
     * relative path from another folder) fails them all. */
    rc = awp_scenario_load(&sc, argv[1], argc - 2, argv + 2);
    if (rc == 0)
        rc = awp_scenario_check(&sc, size);
    rc = report(rank, awp_agree(MPI_COMM_WORLD, rc));
    if (rc == 0) {
        int made = rank == 0 ? awp_output_prepare(&sc) : 0;
        MPI_Bcast(&made, 1, MPI_INT, 0, MPI_COMM_WORLD);
        rc = report(rank, made);
    }
    if (rc != 0) {
        MPI_Finalize();
        return 2;
    }
    if (report(rank, awp_sim_create(&sim, &sc, MPI_COMM_WORLD)) != 0) {
        MPI_Finalize();
        return 1;
    }
    if (rank == 0)
        printf("%s: %dx%dx%d cells of %g m, %d steps of %g s, vp_max dt / h = %.3f, "
               "mode %s, %dx%dx%d ranks, subnormals %s\n",
               sc.name, sc.ng[0], sc.ng[1], sc.ng[2], sc.h, sc.steps, sc.dt,
               awp_media_vp_max(&sc.media) * sc.dt / sc.h, awp_mode_name(sc.mode), sim.g.dims[0],
               sim.g.dims[1], sim.g.dims[2], sc.flush_denormals ? "flushed" : "kept");
    rc = run(&sim, &snaps);
    if (rc != 0) {
        /* a failed exchange leaves the others waiting: end them all */
        fprintf(stderr, PROG ": rank %d: step %d: %s\n", rank, sim.step, awp_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    rc = report(rank, write_seismograms(&sim));
    summary(&sim);
    if (awp_sim_free(&sim) != 0 && rc == 0)
        rc = report(rank, -1);
    MPI_Finalize();
    if (rank == 0)
        plot_snapshots(&sc, &snaps);
    return rc == 0 ? 0 : 1;
}
