/*
 * P3DFFT 2.7-compatible parallel 3D real-to-complex FFT (double precision),
 * with the Y-Z transpose (and, across variables, the X-Y transpose) pipelined
 * against the FFTs and, in "offload" mode, progressed by offcoll's progress
 * thread.
 *
 * Compatible with the C API of P3DFFT 2.7: same calls, arguments, processor
 * grid, communicators, memory layouts, 1-based Fortran-order index ranges and
 * no normalisation (backward(forward(x)) = nx*ny*nz*x). A code written against
 * it compiles and runs unchanged. Differences (README.md has the details):
 *  - every call returns int: 0 on success, a P3DFFT_ERR_* code otherwise, with
 *    Cp3dfft_last_error() naming the bad argument; nothing aborts;
 *  - Cp3dfft_set_transpose() and the environment variables P3DFFT_TRANSPOSE,
 *    P3DFFT_FFTW_FLAG and P3DFFT_SLABS;
 *  - op strings: 'f'/'t' (FFT) and 'n'/'0' (no transform, Y and Z only);
 *    'c'/'s' (upstream's cosine/sine: FFTW REDFT00/RODFT00 of the real and
 *    imaginary parts) along Z only, refused for X and Y ('c' needs nz >= 2).
 *
 * Layouts (X fastest): real input, X-pencils (nx, jisize, kjsize); complex
 * output, Z-pencils (iisize, jjsize, nz) with nx/2+1 complex values along X
 * split over dims[0]. Cp3dfft_get_dims gives the local ranges. in and out may
 * be the same array (in place), as upstream.
 */
#ifndef P3DFFT_H
#define P3DFFT_H

#ifdef __cplusplus
extern "C" {
#endif

enum {
    P3DFFT_OK = 0,
    P3DFFT_ERR_ARG = 1,     /* bad argument; Cp3dfft_last_error() names it */
    P3DFFT_ERR_STATE = 2,   /* call before Cp3dfft_setup, or setup twice */
    P3DFFT_ERR_NOMEM = 3,
    P3DFFT_ERR_MPI = 4,     /* an MPI call failed */
    P3DFFT_ERR_OFFLOAD = 5, /* offcoll failed (offload mode) */
    P3DFFT_ERR_FFTW = 6     /* FFTW could not plan a transform */
};

/* Number of timers of Cget_timers (as upstream): communication first.
 *  0 X-Y transpose (forward)   1 Y-Z transpose (forward)
 *  2 Z-Y transpose (backward)  3 Y-X transpose (backward)
 *  4 FFT r2c X                 5 pack X-Y
 *  6 unpack X-Y + FFT Y        7 unpack Y-Z + FFT Z
 *  8 FFT Z + pack Z-Y          9 inverse FFT Y + pack Y-X
 * 10 unpack Y-X               11 FFT c2r X
 * In the pipelined modes, timers 0 to 3 hold the time spent starting and
 * waiting for a transpose, i.e. what the overlap did not hide. With dims[0]
 * = 1, FFT-x and FFT-y (unless the op string skips Y) run
 * together, plane by plane: timer 4 holds both forward, timer 11 both
 * backward, and 6 and 9 stay 0. Seconds, summed over calls since
 * Cset_timers. */
#define P3DFFT_NTIMERS 12

/* dims = {iproc, jproc}, product = size of the communicator whose Fortran
 * handle is comm_f; every rank must pass the same dims, nx, ny, nz (else it
 * fails on all, naming the one that differs); nxc, nyc, nzc must equal nx,
 * ny, nz (no truncation); overwrite is accepted and ignored (inputs are never
 * overwritten); memsize[3] receives, as upstream, {nx, jisize, kjsize + pad}
 * in doubles: an array of memsize[0]*memsize[1]*memsize[2] doubles holds this
 * rank's real input or its complex output (in-place transforms). When n is
 * not divisible by p, the last n % p ranks of a dimension get one more point,
 * as upstream. Zeroes the timers. Collective. */
int Cp3dfft_setup(int *dims, int nx, int ny, int nz, int comm_f, int nxc, int nyc, int nzc,
                  int overwrite, int *memsize);

/* conf 1: real X-pencil; 2: complex Z-pencil (start and end 1-based and
 * inclusive, index 0 is X); 3: as upstream, start = {0, 0, 0} and end = size
 * = memsize (the padded real array of an in-place transform). */
int Cp3dfft_get_dims(int *start, int *end, int *size, int conf);

/* Forward r2c of in (real X-pencil) into out (complex Z-pencil, as pairs of
 * doubles); op "fft". in == out is an in-place transform (the array must
 * hold both: memsize). Collective. */
int Cp3dfft_ftran_r2c(double *in, double *out, unsigned char *op);

/* Backward c2r of in (complex Z-pencil) into out (real X-pencil); op "tff".
 * Collective. */
int Cp3dfft_btran_c2r(double *in, double *out, unsigned char *op);

/* nv variables at once, pipelined: variable v of the input starts at
 * in + v*dim_in and of the output at out + v*dim_out, strides counted in
 * elements of the array's own type (doubles for real, complex pairs for
 * complex arrays), as upstream. In place (in == out) with nv > 1, the inputs
 * are first copied aside (nv variables' worth of memory for the call). */
int Cp3dfft_ftran_r2c_many(double *in, int dim_in, double *out, int dim_out, int nv,
                           unsigned char *op);
int Cp3dfft_btran_c2r_many(double *in, int dim_in, double *out, int dim_out, int nv,
                           unsigned char *op);

/* Releases everything setup created (communicators, plans, offcoll objects). */
int Cp3dfft_clean(void);

/* Zero the timers / copy the P3DFFT_NTIMERS timers into timers. */
int Cset_timers(void);
int Cget_timers(double *timers);

/* ---- Extensions ---------------------------------------------------------- */

/* Detail of the last failure ("" if none). Owned by the library. */
const char *Cp3dfft_last_error(void);

/* Transpose mode, of the X-Y and the Y-Z transpose: "blocking"
 * (MPI_Alltoallv), "mpi_nb" (MPI_Ialltoallv tested between FFT chunks) or
 * "offload" (offcoll persistent alltoallv on ROW and COL teams, progressed by
 * its progress thread). The choice overrides
 * P3DFFT_TRANSPOSE at every later setup (Cp3dfft_clean keeps it); after setup
 * the call is collective and sets up or releases what the mode needs. */
int Cp3dfft_set_transpose(const char *mode);

/* The mode in force ("blocking", ...); before setup, the one chosen by
 * Cp3dfft_set_transpose, else "unset" (setup then reads P3DFFT_TRANSPOSE). */
const char *Cp3dfft_get_transpose(void);

/* Independent X-slabs one variable's Y-Z stage is split into (>= 1); 0 =
 * automatic. The choice overrides P3DFFT_SLABS at every later setup
 * (Cp3dfft_clean keeps it); collective after setup. */
int Cp3dfft_set_slabs(int slabs);

/* Slabs in use (after setup), 0 before setup. */
int Cp3dfft_get_slabs(void);

/* The offload mode's progress thread (offcoll's): its CPU time in seconds and
 * its wake-ups since the process's first offload setup (one offcoll context
 * per process, kept until MPI_Finalize); 0 and 0 where none was made. What the
 * thread takes from a core beside the FFTs. Not collective. */
int Cp3dfft_get_offload_stats(double *thread_cpu_s, unsigned long long *wakeups);

#ifdef __cplusplus
}
#endif
#endif /* P3DFFT_H */
