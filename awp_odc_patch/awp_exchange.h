/*
 * The halo exchange of the wavefield, one implementation per mode behind a
 * small table of operations. A field is exchanged across the faces its
 * readers need (DESIGN.md): velocities across all three axes; xx, xy, xz
 * across x; yy, xy, yz across y; zz, xz, yz across z. Ghost cells past the
 * edge of the domain are never written.
 *
 * Between start(f) and wait(f) the outer 2 interior layers of f must not be
 * written and its ghost cells (those the exchange fills) not read. wait on a
 * field not in flight returns at once.
 */
#ifndef AWP_EXCHANGE_H
#define AWP_EXCHANGE_H

#include <stdint.h>

#include "awp_kernel.h"

/* What an exchange's own engine counts, since create. */
typedef struct {
    uint64_t network_bytes; /* handed to the network */
    double engine_cpu_s;    /* CPU time of the engine's own thread */
    uint64_t wakeups;       /* that thread's returns from sleep */
} awp_exchange_stats_t;

typedef struct {
    const char *name;
    /* 1: the step starts each field as soon as it is ready and waits right
     * before use (offload); 0: the original pattern, update all, then start
     * and wait for all (two-sided). */
    int overlapped;
    /* 1: moves no data, the ghosts keep what they had (awp_bench's timing
     * reference, never a scenario's mode): its wavefields are not a run's. */
    int timing_only;
    /* Collective where the mode needs it; awp_sim_create agrees on the
     * outcome across ranks. */
    int (*create)(const awp_grid_t *g, awp_wave_t *w, void **state);
    /* Optional second, collective step, run only where create succeeded on
     * every rank (a collective that a failed rank would leave). */
    int (*connect)(void *state);
    int (*start)(void *state, awp_field_t f);
    int (*wait)(void *state, awp_field_t f);
    /* Waits for what is in flight and releases everything; collective. */
    int (*destroy)(void *state);
    /* Optional: the counts of the mode's own engine (NULL for the MPI
     * modes, whose transport does not say). */
    int (*stats)(void *state, awp_exchange_stats_t *st);
} awp_exchange_ops_t;

extern const awp_exchange_ops_t awp_exchange_two_sided;
extern const awp_exchange_ops_t awp_exchange_offload;
extern const awp_exchange_ops_t awp_exchange_rma;
extern const awp_exchange_ops_t awp_exchange_empty;

const awp_exchange_ops_t *awp_exchange_for(awp_mode_t mode);

/* Bit d set: field f is exchanged across axis d. */
unsigned awp_exchange_axes(awp_field_t f);

#endif
