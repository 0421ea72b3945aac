/*
 * The medium: homogeneous, or horizontal layers (a small text file), given
 * as P and S velocities and density; and its averaging to the staggered
 * positions of the kernel (DESIGN.md: harmonic means for the moduli,
 * arithmetic for the density).
 */
#ifndef AWP_MEDIA_H
#define AWP_MEDIA_H

#include "awp_grid.h"

#define AWP_MAX_LAYERS 64

typedef struct {
    double top; /* depth of the layer's top in m; the first layer's is 0 */
    double vp, vs, rho;
} awp_layer_t;

typedef struct {
    int nlayers;
    awp_layer_t layer[AWP_MAX_LAYERS];
} awp_media_t;

/* Reads a layers file: one "top_depth vp vs rho" line per layer (SI units),
 * '#' comments, tops increasing from 0. Messages name the file and line. */
int awp_media_load_layers(awp_media_t *m, const char *path);

/* Checks the values: vp > sqrt(2) vs > 0 (so that lambda > 0) and rho > 0.
 * They are finite: awp_parse_doubles, which read them, takes no other. */
int awp_media_check(const awp_media_t *m);

/* The layer holding depth z (m). */
const awp_layer_t *awp_media_at(const awp_media_t *m, double z);

double awp_media_vp_max(const awp_media_t *m);

/* The per-point coefficients of the kernel, averaged to the staggered
 * positions and scaled by dt/h (velocities: dt / (h rho); stresses: lambda
 * dt / h and mu dt / h). */
enum {
    AWP_C_U1, AWP_C_V1, AWP_C_W1, /* buoyancy at the velocity positions */
    AWP_C_LAM, AWP_C_MU,          /* at the normal stresses */
    AWP_C_XY, AWP_C_XZ, AWP_C_YZ, /* mu at the shear stresses */
    AWP_NCOEF
};

typedef struct {
    float *c[AWP_NCOEF];
} awp_coef_t;

/* Allocates and fills the coefficients of g's interior from the global
 * indices, so that every rank computes the values of a 1-rank run. */
int awp_coef_create(awp_coef_t *co, const awp_grid_t *g, const awp_media_t *m, double h,
                    double dt);
void awp_coef_free(awp_coef_t *co);

#endif
