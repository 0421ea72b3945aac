/*
 * The boundaries: the Cerjan sponge on the sides and the bottom (and on top
 * too without a free surface), and the free surface on top by stress
 * imaging. Everything is a function of global indices, so every rank writes
 * what a 1-rank run writes.
 */
#ifndef AWP_BOUNDARY_H
#define AWP_BOUNDARY_H

#include "awp_kernel.h"

/* The damping factors along each axis: exp(-(alpha (nd - d))^2) at distance d
 * < nd cells from an absorbing edge, alpha = sqrt(-ln arbc) / nd; 1 elsewhere
 * (nd = 0: no sponge). */
int awp_sponge_create(awp_sponge_t *sp, const awp_grid_t *g, int nd, double arbc,
                      int freesurface);
void awp_sponge_free(awp_sponge_t *sp);

/* Free surface at the plane of w1, xz and yz with k = 0 (z = 0). Only ranks
 * holding that plane do anything (the others return at once). */

/* Zeroes shear stress f (xz or yz) on the surface inside box b; part of the
 * stress update of the box, so it runs before the box's halos start. */
void awp_fs_zero_shear(const awp_grid_t *g, awp_wave_t *w, awp_field_t f, const awp_box_t *b);

/* Images the stresses into the ghost planes above the surface that the
 * stencils read (2 for zz, 1 for xz and yz, which sit on it), over the
 * interior (i, j), antisymmetric about it. Writes ghosts the halo plans never
 * write (there is no neighbour above) and reads no plane below k = 1, so it
 * may run while they are in flight. */
void awp_fs_image_stress(const awp_grid_t *g, awp_wave_t *w);

/* Mirrors velocity component c into the ghost planes above the surface that
 * the stencils read (2 for u1 and v1, 1 for w1, which sits on it), even about
 * it: a simplification of AWP-ODC's free-surface velocities,
 * which keeps the stencil of the top planes point-wise and local. */
void awp_fs_image_velocity(const awp_grid_t *g, awp_wave_t *w, awp_field_t c);

#endif
