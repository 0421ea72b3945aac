/*
 * Bitwise equality of parallel runs with a 1-rank run: rank 0 runs the
 * scenario alone (a communicator of 1, two-sided) as the reference; then
 * every rank runs it on each process grid given, in each mode given, and
 * rank 0 compares the seismograms and all nine final wavefields with memcmp.
 * With --loopback, each rank's offload runs must also have handed all their
 * faces to the network: with OC_INTRANODE=loopback, offcoll may not reach a
 * neighbour through shared memory, which would copy the faces instead (and
 * give the same wavefields), and its progress thread must have run; in the MPI
 * modes awp_sim_exchange_stats must fail, naming the mode.
 *
 *   mpirun -np N test_awp_bitwise [--loopback] SCENARIO MODES GRID...
 *   (MODES: comma-separated, e.g. two-sided,offload; GRID: px,py,pz)
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awp_error.h"
#include "exchange_faces.h"
#include "awp_sim.h"
#include "mpi_check.h"

typedef struct {
    float *traces;
    float *field[AWP_NFIELDS];
} result_t;

static size_t cells(const awp_scenario_t *sc)
{
    return (size_t)sc->ng[0] * (size_t)sc->ng[1] * (size_t)sc->ng[2];
}

static void result_alloc(result_t *r, const awp_scenario_t *sc)
{
    int f;
    r->traces = calloc((size_t)sc->nrec * (size_t)sc->steps * 3 + 1, sizeof(float));
    for (f = 0; f < AWP_NFIELDS; f++)
        r->field[f] = calloc(cells(sc), sizeof(float));
}

/* Before each run: bytes no run writes (a NaN pattern), so that a run which
 * delivers nothing is not compared against the previous run's output. */
static void result_poison(result_t *r, const awp_scenario_t *sc)
{
    int f;
    memset(r->traces, 0xFF, ((size_t)sc->nrec * (size_t)sc->steps * 3 + 1) * sizeof(float));
    for (f = 0; f < AWP_NFIELDS; f++)
        memset(r->field[f], 0xFF, cells(sc) * sizeof(float));
}

static void result_free(result_t *r)
{
    int f;
    free(r->traces);
    for (f = 0; f < AWP_NFIELDS; f++)
        free(r->field[f]);
}

/* The bytes of the faces this rank has sent in s's steps: every field's
 * faces (those with a neighbour) once a step, as the MPI modes pack them. */
static uint64_t face_bytes(const awp_sim_t *s)
{
    awp_face_t face[6];
    uint64_t bytes = 0;
    int f, i;
    for (f = 0; f < AWP_NFIELDS; f++) {
        awp_faces_init(&s->g, (awp_field_t)f, face);
        for (i = 0; i < 6; i++)
            if (face[i].peer != MPI_PROC_NULL)
                bytes += (uint64_t)face[i].count * sizeof(float);
    }
    return bytes * (uint64_t)s->step;
}

/* Runs sc over comm; rank 0 of comm gets the traces and fields in *r. With
 * loopback, the faces must have gone to the network in the offload mode, and
 * the MPI modes, which cannot count, must say so. */
static int run(const awp_scenario_t *sc, MPI_Comm comm, result_t *r, int loopback)
{
    static awp_sim_t s;
    awp_box_t all = {{0, 0, 0}, {sc->ng[0], sc->ng[1], sc->ng[2]}};
    awp_exchange_stats_t xs;
    int f, rank, rc;
    MPI_Comm_rank(comm, &rank);
    if ((rc = awp_sim_create(&s, sc, comm)) != 0)
        return rc;
    while (rc == 0 && s.step < sc->steps)
        rc = awp_sim_step(&s);
    if (rc == 0)
        rc = awp_sim_finish(&s);
    if (rc == 0 && loopback && sc->mode != AWP_MODE_OFFLOAD)
        CHECK(awp_sim_exchange_stats(&s, &xs) != 0 &&
                  strstr(awp_last_error(), awp_mode_name(sc->mode)) != NULL,
              "mode %s: the engine's counts did not fail naming the mode: %s",
              awp_mode_name(sc->mode), awp_last_error());
    else if (rc == 0 && loopback && (rc = awp_sim_exchange_stats(&s, &xs)) == 0) {
        CHECK(xs.network_bytes >= face_bytes(&s),
              "%" PRIu64 " bytes went to the network, fewer than the faces' %" PRIu64
              ": shared memory carried them, not the loopback path",
              xs.network_bytes, face_bytes(&s));
        CHECK(xs.engine_cpu_s > 0, "the progress thread's CPU time is %g s", xs.engine_cpu_s);
    }
    if (rc == 0)
        rc = awp_sim_traces(&s, rank == 0 ? r->traces : NULL);
    for (f = 0; f < AWP_NFIELDS && rc == 0; f++)
        rc = awp_sim_gather(&s, (awp_field_t)f, &all, rank == 0 ? r->field[f] : NULL);
    if (awp_sim_free(&s) != 0)
        rc = -1;
    return rc;
}

/* The first difference, as the global cell and the two values. */
static void compare(const char *what, const float *ref, const float *got, size_t n,
                    const awp_scenario_t *sc, int is_field)
{
    size_t i;
    if (memcmp(ref, got, n * sizeof(float)) == 0)
        return;
    for (i = 0; i < n && memcmp(&ref[i], &got[i], sizeof(float)) == 0; i++)
        ;
    if (is_field) {
        size_t k = i % (size_t)sc->ng[2], j = i / (size_t)sc->ng[2] % (size_t)sc->ng[1];
        CHECK(0, "%s differs first at cell (%zu, %zu, %zu): %.9g, reference %.9g", what,
              i / (size_t)sc->ng[2] / (size_t)sc->ng[1], j, k, got[i], ref[i]);
    } else
        CHECK(0, "%s differs first at receiver %zu, step %zu, component %zu: %.9g, reference %.9g",
              what, i / 3 / (size_t)sc->steps + 1, i / 3 % (size_t)sc->steps + 1, i % 3, got[i],
              ref[i]);
}

int main(int argc, char **argv)
{
    static awp_scenario_t sc;
    result_t ref = {0}, got = {0};
    char tag[128], modes[256], *save = NULL, *mode;
    int rank, size, g, rc, f, loopback;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    loopback = argc > 1 && strcmp(argv[1], "--loopback") == 0;
    argc -= loopback;
    argv += loopback;
    if (argc < 4) {
        if (rank == 0)
            fprintf(stderr, "usage: test_awp_bitwise [--loopback] SCENARIO MODES GRID...\n");
        MPI_Finalize();
        return 2;
    }
    rc = awp_scenario_load(&sc, argv[1], 0, NULL);
    CHECK(rc == 0, "%s", awp_last_error());
    if (rc != 0)
        return check_finish("test_awp_bitwise");

    /* the reference: rank 0 alone */
    if (rank == 0) {
        awp_scenario_t one = sc;
        one.mode = AWP_MODE_TWO_SIDED;
        one.proc[0] = one.proc[1] = one.proc[2] = 1;
        result_alloc(&ref, &sc);
        check_tag = "reference";
        rc = awp_scenario_check(&one, 1);
        if (rc == 0)
            rc = run(&one, MPI_COMM_SELF, &ref, 0);
        CHECK(rc == 0, "%s", awp_last_error());
        result_alloc(&got, &sc);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    snprintf(modes, sizeof(modes), "%s", argv[2]);
    for (mode = strtok_r(modes, ",", &save); mode != NULL; mode = strtok_r(NULL, ",", &save))
        for (g = 3; g < argc; g++) {
            awp_scenario_t par = sc;
            char over[2][128];
            char *ov[2] = {over[0], over[1]};
            snprintf(over[0], sizeof(over[0]), "mode=%s", mode);
            snprintf(over[1], sizeof(over[1]), "proc=%s", argv[g]);
            for (f = 0; over[1][f] != '\0'; f++)
                if (over[1][f] == ',')
                    over[1][f] = ' ';
            snprintf(tag, sizeof(tag), "%s on %s", mode, argv[g]);
            check_tag = tag;
            rc = awp_scenario_load(&par, argv[1], 2, ov);
            if (rc == 0)
                rc = awp_scenario_check(&par, size);
            if (rank == 0)
                result_poison(&got, &sc);
            if (rc == 0)
                rc = run(&par, MPI_COMM_WORLD, &got, loopback);
            CHECK(rc == 0, "%s", awp_last_error());
            if (rc != 0 || rank != 0)
                continue;
            compare("seismograms", ref.traces, got.traces,
                    (size_t)sc.nrec * (size_t)sc.steps * 3, &sc, 0);
            for (f = 0; f < AWP_NFIELDS; f++)
                compare(awp_field_name((awp_field_t)f), ref.field[f], got.field[f], cells(&sc),
                        &sc, 1);
            printf("%s: compared %d seismogram samples and %zu cells of 9 fields\n", tag,
                   sc.nrec * sc.steps * 3, cells(&sc));
        }
    if (rank == 0) {
        result_free(&ref);
        result_free(&got);
    }
    return check_finish("test_awp_bitwise");
}
