/*
 * A simulation: the decomposition, the nine wavefields, the coefficients,
 * the boundaries and the exchange of the chosen mode, advanced one time step
 * at a time. The step order of each mode lives here (awp_sim.c); the
 * arithmetic lives in the kernel, so that every mode and decomposition
 * computes each point alike.
 */
#ifndef AWP_SIM_H
#define AWP_SIM_H

#include "awp_exchange.h"

typedef struct {
    awp_scenario_t sc;
    awp_grid_t g;
    awp_wave_t w;
    awp_coef_t co;
    awp_sponge_t sp;
    const awp_exchange_ops_t *x;
    void *xstate;
    awp_box_t inner;    /* cells at least 2 from every face with a neighbour */
    awp_box_t shell[6]; /* the rest of the block, in disjoint slabs (some empty) */
    int step;           /* steps done */
    double t_step;      /* seconds inside awp_sim_step and awp_sim_finish */
    double t_comm;      /* of which inside exchange calls (start, wait) */
    double t_start;     /* of which inside starts: what an exchange costs the
                           application even where nothing is left to wait for */
    float *trace;       /* [receiver][step][3] velocities of the receivers this rank holds */
} awp_sim_t;

/* Collective over comm: makes a failure (rc != 0) on one rank a failure on
 * all, with the message of the lowest failing rank everywhere. */
int awp_agree(MPI_Comm comm, int rc);

/* Collective over comm: sets up sc (checked by awp_scenario_check for the
 * size of comm) in mode sc->mode. Fails on every rank if it fails on one. */
int awp_sim_create(awp_sim_t *s, const awp_scenario_t *sc, MPI_Comm comm);

/* Advances one time step: velocities, their exchange, stresses with the
 * source, theirs; records the receivers. Fails on the rank that holds a
 * receiver whose velocity is no longer finite (the run has blown up). */
int awp_sim_step(awp_sim_t *s);

/* Completes the exchanges still in flight (the offload mode leaves the
 * stresses travelling at the end of a step). */
int awp_sim_finish(awp_sim_t *s);

/* Collective: rank 0 receives field f over the global box b (C order, k
 * fastest) in out; the others pass NULL. Interior values only. */
int awp_sim_gather(const awp_sim_t *s, awp_field_t f, const awp_box_t *b, float *out);

/* Collective: rank 0 receives the traces of all receivers, [receiver][step][3]
 * for the steps done, in out. */
int awp_sim_traces(const awp_sim_t *s, float *out);

/* The counts of this rank's exchange engine so far, its set-up included:
 * offcoll's in the offload mode (the bytes handed to the network, where
 * faces copied into a neighbour's memory on the same host are not among
 * them; its progress thread's CPU time and wake-ups). Fails in the MPI
 * modes, whose transport does not say. */
int awp_sim_exchange_stats(const awp_sim_t *s, awp_exchange_stats_t *st);

/* Collective: releases everything. */
int awp_sim_free(awp_sim_t *s);

#endif
