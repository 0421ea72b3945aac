/*
 * The velocity and stress updates of the 4th-order staggered scheme over an
 * arbitrary box of local interior cells. The same code updates a boundary
 * shell or the interior, so a point's arithmetic does not depend on the box
 * it was computed in: this is what lets the offload mode overlap the halo
 * transfers with the interior and still match a 1-rank run bit for bit.
 *
 * A box reads the neighbours' values up to 2 cells outside it (ghosts where
 * it touches the edge of the block) and writes only inside it. Each update
 * ends with the Cerjan sponge factor of the point (1 outside the sponge).
 */
#ifndef AWP_KERNEL_H
#define AWP_KERNEL_H

#include "awp_grid.h"
#include "awp_media.h"
#include "awp_scenario.h"

typedef struct {
    float *f[AWP_NFIELDS];
} awp_wave_t;

/* Damping factors of the Cerjan sponge along each axis, by local interior
 * index; their product is the factor of a point. */
typedef struct {
    float *d[3];
} awp_sponge_t;

/* The stress updates come in groups that share derivatives: the three normal
 * stresses together, each shear stress alone. */
typedef enum { AWP_S_NORMAL, AWP_S_XY, AWP_S_XZ, AWP_S_YZ, AWP_NSGROUPS } awp_sgroup_t;

/* Updates velocity component c (AWP_U1, AWP_V1 or AWP_W1) over box b. */
void awp_velocity_box(const awp_grid_t *g, awp_wave_t *w, const awp_coef_t *co,
                      const awp_sponge_t *sp, awp_field_t c, const awp_box_t *b);

/* Updates the stresses of group s over box b. */
void awp_stress_box(const awp_grid_t *g, awp_wave_t *w, const awp_coef_t *co,
                    const awp_sponge_t *sp, awp_sgroup_t s, const awp_box_t *b);

/* The largest Courant number vp dt / h of a stable run, from the
 * coefficients: 1 / (sqrt(3) (|c1| + |c2|)) = 6 / (7 sqrt(3)) ~ 0.4949 for
 * c1 = 9/8, c2 = -1/24 (the 3D von Neumann limit of the scheme; DESIGN.md
 * rounds it to 0.5). A run above it blows up. */
double awp_courant_limit(void);

/* The fields of a stress group (1 or 3) into f; returns how many. */
int awp_sgroup_fields(awp_sgroup_t s, awp_field_t f[3]);

#endif
