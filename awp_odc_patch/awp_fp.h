/* Subnormal floats flushed to zero around a step's computation.
 *
 * A wave leaves a tail of values below FLT_MIN ahead of its front and in the
 * sponge (a few percent of the cells while it crosses the grid). Arithmetic
 * on them takes a microcode assist on Intel cores, some hundred cycles per
 * instruction. The Intel compilers the original AWP-ODC was built with flush
 * them by default (FTZ, DAZ), as CUDA does with -ftz=true. Every rank and a
 * 1-rank run flush alike, so runs on any process grid stay bitwise equal.
 * The mode is a thread's floating-point state: it is set for the step and
 * the caller's is restored after it. */
#ifndef AWP_FP_H
#define AWP_FP_H

/* 1 where this CPU can flush (x86-64: MXCSR FTZ and DAZ; AArch64: FPCR FZ). */
int awp_fp_flush_available(void);

/* Sets flushing on the calling thread and returns the state to restore. */
unsigned long awp_fp_flush_begin(void);

/* Restores what awp_fp_flush_begin returned, on the same thread. */
void awp_fp_flush_end(unsigned long saved);

#endif
