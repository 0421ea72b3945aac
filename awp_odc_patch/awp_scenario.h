/*
 * Scenario files: "key = value" lines, '#' comments. README.md lists the
 * keys. Parsing and checking are separate: awp_scenario_load reads the file
 * and the key=value overrides of the command line; awp_scenario_check then
 * validates the whole (stability, positions inside the grid, the process
 * grid against the number of ranks) before anything is allocated.
 */
#ifndef AWP_SCENARIO_H
#define AWP_SCENARIO_H

#include "awp_media.h"

#define AWP_MAX_RECEIVERS 64
#define AWP_MAX_SNAPSHOTS 64
#define AWP_PATH_MAX 512

/* A scenario's exchange modes, then awp_bench's timing reference (empty
 * messages: exchange_empty.c), which a scenario file cannot name. */
typedef enum {
    AWP_MODE_TWO_SIDED, AWP_MODE_OFFLOAD, AWP_MODE_RMA,
    AWP_MODE_EMPTY,
    AWP_MODE_COUNT
} awp_mode_t;

typedef enum { AWP_STF_GAUSSIAN, AWP_STF_GAUSSIAN_DERIVATIVE, AWP_STF_BRUNE } awp_stf_kind_t;

/* The nine wavefield arrays. */
typedef enum {
    AWP_U1, AWP_V1, AWP_W1,
    AWP_XX, AWP_YY, AWP_ZZ, AWP_XY, AWP_XZ, AWP_YZ,
    AWP_NFIELDS
} awp_field_t;

typedef struct {
    awp_stf_kind_t kind;
    double param; /* f0 (Hz) for the Gaussians, rise time (s) for Brune */
    double m0;    /* scalar moment (N m) */
    double moment[6]; /* unit tensor: xx yy zz xy xz yz */
    int pos[3];   /* global cell */
} awp_source_t;

typedef struct {
    char name[64];
    int ng[3];
    double h, dt;
    int steps;
    awp_media_t media;
    int freesurface;
    int flush_denormals; /* subnormals flushed to zero in the steps (awp_fp.h) */
    int sponge_nd;       /* 0: no sponge */
    double sponge_arbc;
    awp_source_t source;
    int nrec;
    int rec[AWP_MAX_RECEIVERS][3];
    int proc[3];         /* 0 0 0: auto */
    awp_mode_t mode;
    int nsnap;
    int snap_step[AWP_MAX_SNAPSHOTS];
    int snap_axis, snap_index; /* the slice: axis (0 x, 1 y, 2 z) = index */
    awp_field_t snap_field;
    char output[AWP_PATH_MAX];
    int progress;        /* steps between progress lines; 0: none; -1: every 10 s */
} awp_scenario_t;

/* The defaults of the optional keys (README.md), with no required one set. */
void awp_scenario_defaults(awp_scenario_t *sc, const char *name);

/* The denormals choice, "flush" or "keep", into *flush (1 or 0); -1 with a
 * message where v is neither or this CPU cannot flush. */
int awp_denormals_parse(const char *v, int *flush);

/* Reads path, then applies noverrides "key=value" strings. Messages name the
 * file, line and key. */
int awp_scenario_load(awp_scenario_t *sc, const char *path, int noverrides,
                      char *const *overrides);

/* Validates sc for a run on nranks ranks and resolves proc = auto:
 * stability, the source and receivers inside the grid (and a source at
 * k = 0 under a free surface without mxz, myz), the sponge, and the process
 * grid (which must leave blocks whose arrays size_t can count). */
int awp_scenario_check(awp_scenario_t *sc, int nranks);

/* The time of field f after step steps: step dt for the stresses, (step -
 * 1/2) dt for the velocities (leapfrog; the seismograms' times). */
double awp_field_time(const awp_scenario_t *sc, awp_field_t f, int step);

const char *awp_mode_name(awp_mode_t mode);
const char *awp_field_name(awp_field_t f);

#endif
