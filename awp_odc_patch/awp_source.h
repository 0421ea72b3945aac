/*
 * The moment-tensor point source: sigma_ij -= (dt / h^3) M0 m_ij s(t) on the
 * six stresses at the source cell, s the moment-rate function of unit
 * integral (the Gaussian derivative integrates to 0: a pulse of moment that
 * returns to zero).
 */
#ifndef AWP_SOURCE_H
#define AWP_SOURCE_H

#include "awp_kernel.h"

/* The normalised moment rate s(t) (1/s). */
double awp_stf(const awp_source_t *src, double t);

/* Delay of the Gaussians' peak (s): 1.2 / f0, so that s(0) is negligible. */
double awp_stf_delay(const awp_source_t *src);

/* Adds the source of stress step n (time (n + 1/2) dt, midway through the
 * step) to the stresses of group s, when the source cell lies in box b of
 * this rank. Part of the stress update of the box. */
void awp_source_add(const awp_grid_t *g, awp_wave_t *w, const awp_source_t *src, double h,
                    double dt, int n, awp_sgroup_t s, const awp_box_t *b);

#endif
