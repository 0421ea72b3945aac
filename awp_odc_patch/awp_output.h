/*
 * What the run driver and the benchmark write: seismograms (CSV), wavefield
 * slices (a matrix gnuplot reads), and the PNGs drawn by gnuplot from the
 * scripts installed with them. Rank 0 alone calls these.
 */
#ifndef AWP_OUTPUT_H
#define AWP_OUTPUT_H

#include "awp_grid.h"
#include "awp_scenario.h"

/* Room for every path of the output: the folder, the name and the longest
 * of the files' suffixes (awp_output_prepare checks that they fit). */
#define AWP_OUT_PATH_MAX (AWP_PATH_MAX + 64)

/* Before a run: creates sc->output and its parents as needed, and refuses a
 * path that is no folder, a folder it cannot write into, or one in which the
 * output's file names would not fit AWP_OUT_PATH_MAX, so that a run does not
 * end in a failed or cut-off write. */
int awp_output_prepare(const awp_scenario_t *sc);

/* <output>/<name>_seismograms.csv: step, time (the velocities', (step - 1/2)
 * dt), then vx, vy, vz of each receiver; traces is [receiver][step][3] of
 * sc->steps steps, steps of them done. The path written goes to path. */
int awp_write_seismograms(const awp_scenario_t *sc, const float *traces, int steps, char *path,
                          size_t len);

/* The global box of the snapshot slice of sc, and its rows and columns (the
 * two axes other than the slice's, the slower one first). */
awp_box_t awp_slice_box(const awp_scenario_t *sc, int *rows, int *cols);

/* Writes a slice as rows of blank-separated values; path gets its name. */
int awp_write_slice(const awp_scenario_t *sc, int step, const float *v, int rows, int cols,
                    char *path, size_t len);

/* The title of the slice of step: the scenario, field, plane, step and the
 * time the field holds (half a step earlier for the velocities). */
void awp_slice_title(const awp_scenario_t *sc, int step, char *title, size_t len);

#endif
