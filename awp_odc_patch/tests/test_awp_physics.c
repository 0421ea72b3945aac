/*
 * Physics checks on a run of a scenario:
 *
 *   test_awp_physics arrivals SCENARIO
 *     the peak of the radial velocity of each receiver comes at t0 + r / vp,
 *     that of the transverse velocity at t0 + r / vs (t0: the delay of the
 *     source pulse), each within two cells' travel time. Needs a homogeneous
 *     medium and receivers where P and S show on different components
 *     (scenarios/wholespace.txt says how).
 *   test_awp_physics energy SCENARIO STEPS
 *     over STEPS steps with the sponge, the wavefield's energy (kinetic and
 *     strain) stays finite and never exceeds its peak again in the second
 *     half; its kinetic part, the waves, ends below 1% of its peak (absorbed).
 *     The strain part does not: the source's moment stays, and with it a
 *     static deformation around it.
 *   test_awp_physics subnormals SCENARIO
 *     kept (denormals = keep), subnormal floats appear in the wavefields
 *     (else the next check proves nothing); flushed (the default), none
 *     does after any step, the seismograms agree with the kept run's within
 *     1e-6 of their peak, and the caller's own arithmetic after a step still
 *     yields subnormals (the step restores the thread's state).
 */
#include <fenv.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awp_error.h"
#include "awp_fp.h"
#include "awp_sim.h"
#include "awp_source.h"
#include "mpi_check.h"

static int setup(awp_sim_t *s, awp_scenario_t *sc, const char *path, int nover, char **over)
{
    int size, rc;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    rc = awp_scenario_load(sc, path, nover, over);
    if (rc == 0)
        rc = awp_scenario_check(sc, size);
    if (rc == 0)
        rc = awp_sim_create(s, sc, MPI_COMM_WORLD);
    CHECK(rc == 0, "%s", awp_last_error());
    return rc;
}

/* A step that fails on one rank (a receiver's blow-up is seen by its owner
 * only) fails on all, instead of leaving the others in the next exchange. */
static int step(awp_sim_t *s)
{
    return awp_agree(MPI_COMM_WORLD, awp_sim_step(s));
}

/* Time of the largest |x| of n samples taken at (i + 1/2) dt. */
static double peak_time(const double *x, int n, double dt)
{
    int i, best = 0;
    for (i = 1; i < n; i++)
        if (fabs(x[i]) > fabs(x[best]))
            best = i;
    return (best + 0.5) * dt;
}

static void arrivals(const char *path)
{
    static awp_sim_t s;
    static awp_scenario_t sc;
    const awp_layer_t *m;
    float *tr;
    int rank, r, n, rc = 0;

    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (setup(&s, &sc, path, 0, NULL) != 0)
        return;
    CHECK(sc.media.nlayers == 1, "the arrival check needs a homogeneous medium");
    while (rc == 0 && s.step < sc.steps)
        rc = step(&s);
    if (rc == 0)
        rc = awp_sim_finish(&s);
    tr = calloc((size_t)sc.nrec * (size_t)sc.steps * 3 + 1, sizeof(float));
    if (rc == 0)
        rc = awp_agree(MPI_COMM_WORLD, tr == NULL ? awp_fail("out of memory for the traces") : 0);
    if (rc == 0)
        rc = awp_sim_traces(&s, tr);
    CHECK(rc == 0, "%s", awp_last_error());
    m = &sc.media.layer[0];
    for (r = 0; r < sc.nrec && rc == 0 && rank == 0; r++) {
        double e[3], dist = 0, *radial = calloc((size_t)sc.steps, sizeof(double));
        double *transverse = calloc((size_t)sc.steps, sizeof(double)), tp, ts, t0;
        int d;
        if (radial == NULL || transverse == NULL) {
            CHECK(0, "out of memory for the traces of %d steps", sc.steps);
            free(radial);
            free(transverse);
            break;
        }
        for (d = 0; d < 3; d++) {
            e[d] = (sc.rec[r][d] - sc.source.pos[d]) * sc.h;
            dist += e[d] * e[d];
        }
        dist = sqrt(dist);
        for (n = 0; n < sc.steps; n++) {
            const float *v = tr + ((size_t)r * (size_t)sc.steps + (size_t)n) * 3;
            double vr = (v[0] * e[0] + v[1] * e[1] + v[2] * e[2]) / dist, t2 = 0;
            for (d = 0; d < 3; d++)
                t2 += pow(v[d] - vr * e[d] / dist, 2);
            radial[n] = vr;
            transverse[n] = sqrt(t2);
        }
        t0 = awp_stf_delay(&sc.source);
        tp = peak_time(radial, sc.steps, sc.dt) - t0;
        ts = peak_time(transverse, sc.steps, sc.dt) - t0;
        printf("receiver %d at %.0f m: P at %.3f s (r/vp %.3f s), S at %.3f s (r/vs %.3f s)\n",
               r + 1, dist, tp, dist / m->vp, ts, dist / m->vs);
        CHECK(fabs(tp - dist / m->vp) <= 2 * sc.h / m->vp,
              "receiver %d: P peak %.3f s after the source, expected %.3f +- %.3f s", r + 1, tp,
              dist / m->vp, 2 * sc.h / m->vp);
        CHECK(fabs(ts - dist / m->vs) <= 2 * sc.h / m->vs,
              "receiver %d: S peak %.3f s after the source, expected %.3f +- %.3f s", r + 1, ts,
              dist / m->vs, 2 * sc.h / m->vs);
        free(radial);
        free(transverse);
    }
    free(tr);
    awp_sim_free(&s);
}

/* The wavefield's energy over the whole grid, times h / dt (the coefficients
 * carry dt / h), and in *kin its kinetic part: rho |v|^2 / 2 at the velocity
 * positions, and strain, sigma : epsilon / 2 at the stress positions, which
 * for an isotropic medium is (sigma : sigma - lambda / (3 lambda + 2 mu)
 * tr(sigma)^2) / (4 mu), the shear stresses counted twice in sigma : sigma. */
static double energy_of(const awp_sim_t *s, double *kin)
{
    static const int shear[3][2] = {{AWP_XY, AWP_C_XY}, {AWP_XZ, AWP_C_XZ}, {AWP_YZ, AWP_C_YZ}};
    float *const *f = s->w.f, *const *co = s->co.c;
    double e[2] = {0, 0}, all[2]; /* kinetic, strain */
    int i, j, k, c;
    for (i = 0; i < s->g.n[0]; i++)
        for (j = 0; j < s->g.n[1]; j++)
            for (k = 0; k < s->g.n[2]; k++) {
                size_t p = awp_at(&s->g, i, j, k);
                double xx = f[AWP_XX][p], yy = f[AWP_YY][p], zz = f[AWP_ZZ][p];
                double lam = co[AWP_C_LAM][p], mu = co[AWP_C_MU][p], tr = xx + yy + zz;
                for (c = 0; c < 3; c++) /* buoyancy dt / (h rho) */
                    e[0] += 0.5 * (double)f[AWP_U1 + c][p] * f[AWP_U1 + c][p] /
                            co[AWP_C_U1 + c][p];
                e[1] += (xx * xx + yy * yy + zz * zz - lam / (3 * lam + 2 * mu) * tr * tr) /
                        (4 * mu);
                for (c = 0; c < 3; c++)
                    e[1] += (double)f[shear[c][0]][p] * f[shear[c][0]][p] /
                            (2.0 * co[shear[c][1]][p]);
            }
    MPI_Allreduce(e, all, 2, MPI_DOUBLE, MPI_SUM, s->g.comm);
    *kin = all[0];
    return all[0] + all[1];
}

static void energy(const char *path, const char *steps)
{
    static awp_sim_t s;
    static awp_scenario_t sc;
    char over[64], *ov[1] = {over};
    double e = 0, peak = 0, late_peak = 0, kin = 0, kin_peak = 0;
    int rc = 0;

    snprintf(over, sizeof(over), "steps=%s", steps);
    if (setup(&s, &sc, path, 1, ov) != 0)
        return;
    CHECK(sc.sponge_nd > 0, "the energy check needs a sponge");
    while (rc == 0 && s.step < sc.steps && isfinite(e)) {
        rc = step(&s);
        e = energy_of(&s, &kin);
        kin_peak = fmax(kin_peak, kin);
        if (s.step <= sc.steps / 2)
            peak = fmax(peak, e);
        else
            late_peak = fmax(late_peak, e);
    }
    CHECK(rc == 0, "%s", awp_last_error());
    CHECK(isfinite(e), "the energy became %g at step %d", e, s.step);
    CHECK(peak > 0, "no energy at all: the source did not act");
    CHECK(late_peak <= peak, "the energy grew to %g in the second half, above its peak %g",
          late_peak, peak);
    CHECK(kin < 0.01 * kin_peak, "the kinetic energy ends at %g, %.3g of its peak %g (the waves "
          "were not absorbed)", kin, kin / kin_peak, kin_peak);
    if (s.g.rank == 0)
        printf("energy: peak %g, after %d steps %g (%.2g of the peak); kinetic: peak %g, then "
               "%g (%.2g)\n", peak, s.step, e, e / peak, kin_peak, kin, kin / kin_peak);
    awp_sim_free(&s);
}

/* Subnormal values in this rank's wavefields (interior cells). */
static long subnormals(const awp_sim_t *s)
{
    long n = 0;
    int f, i, j, k;
    for (f = 0; f < AWP_NFIELDS; f++)
        for (i = 0; i < s->g.n[0]; i++)
            for (j = 0; j < s->g.n[1]; j++) {
                const float *p = s->w.f[f] + awp_at(&s->g, i, j, 0);
                for (k = 0; k < s->g.n[2]; k++)
                    n += fpclassify(p[k]) == FP_SUBNORMAL;
            }
    return n;
}

/* Runs the scenario with denormals = how; returns the most subnormal cells
 * seen after a step (all ranks), and on rank 0 the seismograms in *tr
 * (malloc'd, *ntr floats). */
static long run_counting(const char *path, const char *how, float **tr, size_t *ntr)
{
    static awp_sim_t s;
    static awp_scenario_t sc;
    char over[64], *ov[1] = {over};
    long most = 0, all, underflows = 0;
    int rc = 0;

    snprintf(over, sizeof(over), "denormals=%s", how);
    *tr = NULL;
    if (setup(&s, &sc, path, 1, ov) != 0)
        return -1;
    while (rc == 0 && s.step < sc.steps) {
        volatile float tiny = FLT_MIN;
        long n;
        feclearexcept(FE_ALL_EXCEPT);
        rc = awp_sim_step(&s);
        underflows += fetestexcept(FE_UNDERFLOW) != 0;
        rc = awp_agree(MPI_COMM_WORLD, rc);
        n = subnormals(&s);
        most = n > most ? n : most;
        CHECK(tiny / 4 != 0, "after step %d the caller's arithmetic flushes subnormals: "
              "awp_sim_step did not restore the thread's floating-point state", s.step);
    }
    *ntr = (size_t)sc.nrec * (size_t)sc.steps * 3;
    if (rc == 0 && s.g.rank == 0)
        *tr = malloc(*ntr * sizeof(float) + 1);
    if (rc == 0)
        rc = awp_agree(s.g.comm, s.g.rank == 0 && *tr == NULL ? awp_fail("out of memory") : 0);
    if (rc == 0)
        rc = awp_sim_traces(&s, *tr);
    CHECK(rc == 0, "%s", awp_last_error());
    /* A flushed result raises the underflow flag; the restore after the
     * step must leave the flags the step raised to the caller. */
    MPI_Allreduce(MPI_IN_PLACE, &underflows, 1, MPI_LONG, MPI_SUM, s.g.comm);
    CHECK(underflows > 0, "denormals = %s: no step left FE_UNDERFLOW raised (the restore after "
          "the step cleared the flags it raised)", how);
    MPI_Allreduce(&most, &all, 1, MPI_LONG, MPI_SUM, s.g.comm);
    awp_sim_free(&s);
    return rc == 0 ? all : -1;
}

static void subnormal_flush(const char *path)
{
    float *kept_tr, *flushed_tr;
    size_t n, i;
    long kept, flushed;
    int rank;

    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (!awp_fp_flush_available()) {
        if (rank == 0)
            printf("test_awp_physics subnormals: SKIP: this CPU cannot flush subnormals\n");
        return;
    }
    kept = run_counting(path, "keep", &kept_tr, &n);
    flushed = run_counting(path, "flush", &flushed_tr, &n);
    if (kept < 0 || flushed < 0) { /* the run's failure is reported */
        free(kept_tr);
        free(flushed_tr);
        return;
    }
    CHECK(kept > 0, "no subnormal value arose with denormals = keep: the scenario cannot show "
          "the flush");
    CHECK(flushed == 0, "%ld subnormal values in the wavefields with denormals = flush", flushed);
    if (rank == 0 && kept_tr != NULL && flushed_tr != NULL) {
        double peak = 0, diff = 0;
        for (i = 0; i < n; i++) {
            peak = fmax(peak, fabs(kept_tr[i]));
            diff = fmax(diff, fabs((double)kept_tr[i] - flushed_tr[i]));
        }
        CHECK(peak > 0, "the seismograms are all zero");
        CHECK(diff <= 1e-6 * peak, "flushing changed the seismograms by %g (peak %g)", diff, peak);
        printf("subnormals: up to %ld cells kept, none flushed; seismograms differ by %.3g of "
               "their peak\n", kept, diff / peak);
    }
    free(kept_tr);
    free(flushed_tr);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    if (argc == 3 && strcmp(argv[1], "arrivals") == 0)
        arrivals(argv[2]);
    else if (argc == 4 && strcmp(argv[1], "energy") == 0)
        energy(argv[2], argv[3]);
    else if (argc == 3 && strcmp(argv[1], "subnormals") == 0)
        subnormal_flush(argv[2]);
    else
        CHECK(0, "usage: test_awp_physics arrivals SCENARIO | energy SCENARIO STEPS | "
              "subnormals SCENARIO");
    return check_finish("test_awp_physics");
}
