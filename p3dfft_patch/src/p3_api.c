/*
 * The P3DFFT 2.7 C entry points: argument checks with a message naming the
 * bad argument, the global state (P3DFFT keeps one transform set-up per
 * process), the mode and slab settings, and the timers.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "p3_internal.h"

static const char *const p3_mode_names[P3_NMODES] = {"blocking", "mpi_nb", "offload"};

static p3_t *g;                /* NULL before setup */
static char last_error[512];
static int pending_mode = -1;  /* Cp3dfft_set_transpose before setup */
static int pending_slabs = -1; /* Cp3dfft_set_slabs before setup */
static double idle_timers[P3DFFT_NTIMERS]; /* timers outside a set-up */

int p3_fail(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof(last_error), fmt, ap);
    va_end(ap);
    return code;
}

const char *Cp3dfft_last_error(void)
{
    return last_error;
}

static int ok(void)
{
    last_error[0] = '\0';
    return P3DFFT_OK;
}

static int parse_mode(const char *s, const char *what)
{
    int m;
    for (m = 0; m < P3_NMODES; m++)
        if (strcmp(s, p3_mode_names[m]) == 0)
            return m;
    p3_fail(P3DFFT_ERR_ARG, "%s: unknown transpose mode '%s' (blocking, mpi_nb, offload)", what, s);
    return -1;
}

/* Settings from the environment, overridden by the calls made before setup. */
static int read_settings(p3_t *p, int *slabs)
{
    const char *v = getenv("P3DFFT_TRANSPOSE");
    char *end;

    p->mode = P3_BLOCKING;
    if (pending_mode >= 0)
        p->mode = (p3_mode_t)pending_mode;
    else if (v != NULL && *v != '\0') {
        int m = parse_mode(v, "P3DFFT_TRANSPOSE");
        if (m < 0)
            return P3DFFT_ERR_ARG;
        p->mode = (p3_mode_t)m;
    }

    p->fftw_flags = FFTW_MEASURE;
    v = getenv("P3DFFT_FFTW_FLAG");
    if (v != NULL && *v != '\0') {
        if (strcmp(v, "estimate") == 0)
            p->fftw_flags = FFTW_ESTIMATE;
        else if (strcmp(v, "patient") == 0)
            p->fftw_flags = FFTW_PATIENT;
        else if (strcmp(v, "measure") != 0)
            return p3_fail(P3DFFT_ERR_ARG, "P3DFFT_FFTW_FLAG: unknown planner flag '%s' "
                           "(estimate, measure, patient)", v);
    }

    *slabs = 0;
    v = getenv("P3DFFT_SLABS");
    if (pending_slabs >= 0)
        *slabs = pending_slabs;
    else if (v != NULL && *v != '\0') {
        long n = strtol(v, &end, 10);
        if (*end != '\0' || n < 0 || n > P3_MAX_SLABS)
            return p3_fail(P3DFFT_ERR_ARG, "P3DFFT_SLABS: '%s' is not a slab count 0..%d", v,
                           P3_MAX_SLABS);
        *slabs = (int)n;
    }
    return P3DFFT_OK;
}

static int check_setup_args(const int *dims, int nx, int ny, int nz, MPI_Comm comm, int nxc,
                            int nyc, int nzc, const int *memsize)
{
    int size;
    if (dims == NULL)
        return p3_fail(P3DFFT_ERR_ARG, "dims is NULL");
    if (memsize == NULL)
        return p3_fail(P3DFFT_ERR_ARG, "memsize is NULL");
    if (nx < 2 || ny < 1 || nz < 1)
        return p3_fail(P3DFFT_ERR_ARG, "nx, ny, nz = %d, %d, %d: need nx >= 2, ny >= 1, nz >= 1",
                       nx, ny, nz);
    if (nxc != nx || nyc != ny || nzc != nz)
        return p3_fail(P3DFFT_ERR_ARG, "nxc, nyc, nzc = %d, %d, %d differ from nx, ny, nz: "
                       "truncated transforms are not supported", nxc, nyc, nzc);
    MPI_Comm_size(comm, &size);
    if (dims[0] < 1 || dims[1] < 1 || dims[0] * dims[1] != size)
        return p3_fail(P3DFFT_ERR_ARG, "dims = {%d, %d}: the product must equal the "
                       "communicator's size %d", dims[0], dims[1], size);
    if (dims[0] > ny || dims[0] > nx / 2 + 1)
        return p3_fail(P3DFFT_ERR_ARG, "dims[0] = %d: more processes than points along Y (ny = "
                       "%d) or along complex X (nx/2+1 = %d)", dims[0], ny, nx / 2 + 1);
    if (dims[1] > ny || dims[1] > nz)
        return p3_fail(P3DFFT_ERR_ARG, "dims[1] = %d: more processes than points along Y (ny = "
                       "%d) or Z (nz = %d)", dims[1], ny, nz);
    return P3DFFT_OK;
}

/* All ranks succeed or all fail, so that none waits in a collective alone:
 * the first failure's code, with the detail "failed on another rank" on the
 * ranks where it did not fail. */
int p3_agree(int rc, MPI_Comm comm)
{
    int any;
    MPI_Allreduce(&rc, &any, 1, MPI_INT, MPI_MAX, comm);
    if (any && !rc)
        p3_fail(any, "failed on another rank");
    return any;
}

/* As p3_agree, and the transpose mode and slab count must be the same on
 * every rank: a rank in another mode or with another slab count would wait
 * in other collectives, or in the same ones with other counts. */
static int agree_settings(int rc, int mode, int slabs, MPI_Comm comm)
{
    int mine[5] = {rc, mode, -mode, slabs, -slabs}, all[5];
    MPI_Allreduce(mine, all, 5, MPI_INT, MPI_MAX, comm);
    if (all[0])
        return rc ? rc : p3_fail(all[0], "failed on another rank");
    if (all[1] != -all[2])
        return p3_fail(P3DFFT_ERR_ARG, "the transpose mode differs between ranks ('%s' and "
                       "'%s'): P3DFFT_TRANSPOSE and Cp3dfft_set_transpose must agree",
                       p3_mode_names[-all[2]], p3_mode_names[all[1]]);
    if (all[3] != -all[4])
        return p3_fail(P3DFFT_ERR_ARG, "the slab count differs between ranks (%d and %d): "
                       "P3DFFT_SLABS and Cp3dfft_set_slabs must agree", -all[4], all[3]);
    return P3DFFT_OK;
}

static int release(p3_t *p)
{
    int rc = p3_yz_teardown(p);
    p3_plans_free(p);
    p3_decomp_free(p);
    free(p);
    return rc;
}

int Cp3dfft_setup(int *dims, int nx, int ny, int nz, int comm_f, int nxc, int nyc, int nzc,
                  int overwrite, int *memsize)
{
    MPI_Comm comm = MPI_Comm_f2c(comm_f);
    int rc, slabs = 0;
    p3_t *p = NULL;

    (void)overwrite; /* inputs are never overwritten */
    if (comm == MPI_COMM_NULL) /* nothing to agree over */
        return p3_fail(P3DFFT_ERR_ARG, "comm_f is not a valid communicator handle");
    /* Agreed, as every later step: a rank refused alone would leave the
     * others in the communicator's duplication, or in the offload team's
     * creation on COL. */
    rc = g != NULL ? p3_fail(P3DFFT_ERR_STATE,
                             "Cp3dfft_setup: already set up; call Cp3dfft_clean first")
                   : check_setup_args(dims, nx, ny, nz, comm, nxc, nyc, nzc, memsize);
    if (!rc && (p = calloc(1, sizeof(*p))) == NULL)
        rc = p3_fail(P3DFFT_ERR_NOMEM, "out of memory");
    if (!rc) {
        p->comm = p->row = p->col = MPI_COMM_NULL;
        rc = read_settings(p, &slabs);
    }
    if ((rc = agree_settings(rc, p != NULL ? (int)p->mode : 0, slabs, comm))) {
        free(p);
        return rc;
    }
    p->slabs_asked = slabs;
    if (!(rc = p3_decomp_init(p, dims, nx, ny, nz, comm)))
        rc = p3_slabs_init(p, slabs > 0 ? slabs : p3_auto_slabs(p));
    if (!(rc = p3_agree(rc, comm)))
        rc = p3_agree(p3_yz_setup(p), comm);
    if (!rc)
        rc = p3_warmup(p); /* agreed inside, before its first transpose and after */
    if (rc) {
        char why[sizeof(last_error)];
        memcpy(why, last_error, sizeof(why));
        release(p);
        return p3_fail(rc, "%s", why);
    }
    memsize[0] = p->iisize;
    memsize[1] = p->jjsize;
    memsize[2] = p->nz;
    memcpy(p->timers, idle_timers, sizeof(p->timers));
    g = p;
    return ok();
}

int Cp3dfft_clean(void)
{
    int rc;
    if (g == NULL)
        return p3_fail(P3DFFT_ERR_STATE, "Cp3dfft_clean: not set up (call Cp3dfft_setup first)");
    memcpy(idle_timers, g->timers, sizeof(idle_timers)); /* upstream's drivers read them after */
    rc = release(g);
    g = NULL;
    return rc ? rc : ok();
}

int Cp3dfft_get_dims(int *start, int *end, int *size, int conf)
{
    int d;
    if (g == NULL)
        return p3_fail(P3DFFT_ERR_STATE, "Cp3dfft_get_dims: not set up (call Cp3dfft_setup first)");
    if (start == NULL || end == NULL || size == NULL)
        return p3_fail(P3DFFT_ERR_ARG, "Cp3dfft_get_dims: %s is NULL",
                       start == NULL ? "start" : end == NULL ? "end" : "size");
    switch (conf) {
    case 1:
        start[0] = 1, size[0] = g->nx;
        start[1] = g->yi.s[g->ipid] + 1, size[1] = g->jisize;
        start[2] = g->zj.s[g->jpid] + 1, size[2] = g->kjsize;
        break;
    case 2:
        start[0] = g->xc.s[g->ipid] + 1, size[0] = g->iisize;
        start[1] = g->yj.s[g->jpid] + 1, size[1] = g->jjsize;
        start[2] = 1, size[2] = g->nz;
        break;
    case 3:
        for (d = 0; d < 3; d++)
            start[d] = 1, size[d] = g->zmax[d];
        break;
    default:
        return p3_fail(P3DFFT_ERR_ARG, "Cp3dfft_get_dims: conf = %d (1: real X-pencil, "
                       "2: complex Z-pencil, 3: largest Z-pencil)", conf);
    }
    for (d = 0; d < 3; d++)
        end[d] = start[d] + size[d] - 1;
    return ok();
}

/* op: forward {X, Y, Z}, backward {Z, Y, X}. X must be a Fourier transform;
 * the cosine and sine transforms ('c', 's') are for Z only, as in P3DFFT 2.7,
 * which applies them to the third dimension and to no other. */
static int parse_op(const unsigned char *op, int backward, int nz, p3_op_t ops[3])
{
    static const char *const allowed[3] = {"'f' or 't' (X is always r2c/c2r)",
                                           "one of f, t, n, 0", "one of f, t, n, 0, c, s"};
    int i;
    if (op == NULL)
        return p3_fail(P3DFFT_ERR_ARG, "op is NULL");
    for (i = 0; i < 3; i++) {
        int d = backward ? 2 - i : i; /* the dimension the letter is for */
        unsigned char c = op[i];
        if (c == 'f' || c == 't')
            ops[d] = P3_OP_FFT;
        else if ((c == 'n' || c == '0') && d != 0)
            ops[d] = P3_OP_NONE;
        else if ((c == 'c' || c == 's') && d != 2)
            return p3_fail(P3DFFT_ERR_ARG, "op = \"%.3s\": op[%d] = '%c': the %s transform is "
                           "only supported along Z (op[%d])", (const char *)op, i, c,
                           c == 'c' ? "cosine" : "sine", backward ? 0 : 2);
        else if (c == 'c' && nz < 2)
            return p3_fail(P3DFFT_ERR_ARG, "op = \"%.3s\": op[%d] = 'c': the cosine transform "
                           "needs nz >= 2 (nz = %d)", (const char *)op, i, nz);
        else if (c == 'c' || c == 's')
            ops[d] = c == 'c' ? P3_OP_COS : P3_OP_SIN;
        else
            return p3_fail(P3DFFT_ERR_ARG, "op = \"%.3s\": op[%d] = '%c' is not %s", (const char *)op,
                           i, c ? c : '?', allowed[d]);
    }
    return P3DFFT_OK;
}

static int check_transform_args(const char *call, const void *in, int dim_in, size_t need_in,
                                const void *out, int dim_out, size_t need_out, int nv,
                                const unsigned char *op, int backward, p3_op_t ops[3])
{
    if (in == NULL || out == NULL)
        return p3_fail(P3DFFT_ERR_ARG, "%s: %s is NULL", call, in == NULL ? "in" : "out");
    if (in == out)
        return p3_fail(P3DFFT_ERR_ARG, "%s: in and out are the same array (in-place is not "
                       "supported)", call);
    if (nv < 1)
        return p3_fail(P3DFFT_ERR_ARG, "%s: nv = %d, need at least 1", call, nv);
    if (nv > 1 && (dim_in < 0 || (size_t)dim_in < need_in))
        return p3_fail(P3DFFT_ERR_ARG, "%s: dim_in = %d is smaller than one variable (%zu)",
                       call, dim_in, need_in);
    if (nv > 1 && (dim_out < 0 || (size_t)dim_out < need_out))
        return p3_fail(P3DFFT_ERR_ARG, "%s: dim_out = %d is smaller than one variable (%zu)",
                       call, dim_out, need_out);
    if (parse_op(op, backward, g->nz, ops)) {
        char why[sizeof(last_error)];
        memcpy(why, last_error, sizeof(why));
        return p3_fail(P3DFFT_ERR_ARG, "%s: %s", call, why);
    }
    return P3DFFT_OK;
}

/* Collective once set up: arguments refused on one rank are refused on all,
 * which would otherwise wait for it in the transposes. */
/* After a failed re-configuration only Cp3dfft_clean is left. */
static int refuse_broken(const char *call)
{
    return p3_fail(P3DFFT_ERR_STATE, "%s: an earlier re-configuration failed; call "
                   "Cp3dfft_clean and set up again", call);
}

static int check_transform(const char *call, const void *in, int dim_in, size_t need_in,
                           const void *out, int dim_out, size_t need_out, int nv,
                           const unsigned char *op, int backward, p3_op_t ops[3])
{
    if (g == NULL)
        return p3_fail(P3DFFT_ERR_STATE, "%s: not set up (call Cp3dfft_setup first)", call);
    return p3_agree(g->broken ? refuse_broken(call)
                              : check_transform_args(call, in, dim_in, need_in, out, dim_out,
                                                     need_out, nv, op, backward, ops),
                    g->comm);
}

static size_t real_size(void)
{
    return g == NULL ? 0 : (size_t)g->nx * g->jisize * g->kjsize;
}

static size_t complex_size(void)
{
    return g == NULL ? 0 : (size_t)g->iisize * g->jjsize * g->nz;
}

/* The end of a transform: a failed one leaves no transpose in flight. */
static int transform_done(int rc)
{
    if (rc)
        p3_yz_drain(g);
    return rc ? rc : ok();
}

int Cp3dfft_ftran_r2c_many(double *in, int dim_in, double *out, int dim_out, int nv,
                           unsigned char *op)
{
    p3_op_t ops[3];
    int rc;
    if ((rc = check_transform("Cp3dfft_ftran_r2c", in, dim_in, real_size(), out, dim_out,
                              complex_size(), nv, op, 0, ops)))
        return rc;
    return transform_done(
        p3_forward(g, in, (size_t)dim_in, (fftw_complex *)out, (size_t)dim_out, nv, ops));
}

int Cp3dfft_btran_c2r_many(double *in, int dim_in, double *out, int dim_out, int nv,
                           unsigned char *op)
{
    p3_op_t ops[3];
    int rc;
    if ((rc = check_transform("Cp3dfft_btran_c2r", in, dim_in, complex_size(), out, dim_out,
                              real_size(), nv, op, 1, ops)))
        return rc;
    return transform_done(
        p3_backward(g, (const fftw_complex *)in, (size_t)dim_in, out, (size_t)dim_out, nv, ops));
}

int Cp3dfft_ftran_r2c(double *in, double *out, unsigned char *op)
{
    return Cp3dfft_ftran_r2c_many(in, 0, out, 0, 1, op);
}

int Cp3dfft_btran_c2r(double *in, double *out, unsigned char *op)
{
    return Cp3dfft_btran_c2r_many(in, 0, out, 0, 1, op);
}

int Cset_timers(void)
{
    memset(g != NULL ? g->timers : idle_timers, 0, sizeof(idle_timers));
    return ok();
}

int Cget_timers(double *timers)
{
    if (timers == NULL)
        return p3_fail(P3DFFT_ERR_ARG, "Cget_timers: timers is NULL");
    memcpy(timers, g != NULL ? g->timers : idle_timers, sizeof(idle_timers));
    return ok();
}

/* Re-creates what the mode and slab count need; collective, each step
 * agreed. A failure leaves the library broken (transforms and setters
 * refused) until Cp3dfft_clean: the transposes are gone. */
static int reconfigure(p3_mode_t mode, int slabs)
{
    double timers[P3DFFT_NTIMERS];
    int rc = p3_yz_teardown(g);
    if (!rc)
        rc = p3_slabs_init(g, slabs > 0 ? slabs : p3_auto_slabs(g));
    if (!(rc = p3_agree(rc, g->comm))) {
        g->mode = mode;
        g->slabs_asked = slabs;
        rc = p3_agree(p3_yz_setup(g), g->comm);
    }
    if (!rc) {
        memcpy(timers, g->timers, sizeof(timers));
        rc = p3_warmup(g);
        memcpy(g->timers, timers, sizeof(timers));
    }
    if (rc)
        g->broken = 1;
    return rc ? rc : ok();
}

/* After setup the setters are collective: a value refused on one rank, or
 * one that differs between ranks, is refused on all, which would otherwise
 * re-create the transposes alone or differently. */
static int agreed(const char *call, int rc, int mode, int slabs)
{
    if (g == NULL)
        return rc;
    if (!rc && g->broken)
        rc = refuse_broken(call);
    return agree_settings(rc, mode, slabs, g->comm);
}

int Cp3dfft_set_transpose(const char *mode)
{
    int m = -1, rc;
    if (mode == NULL)
        rc = p3_fail(P3DFFT_ERR_ARG, "Cp3dfft_set_transpose: mode is NULL");
    else
        rc = (m = parse_mode(mode, "Cp3dfft_set_transpose")) < 0 ? P3DFFT_ERR_ARG : P3DFFT_OK;
    if ((rc = agreed("Cp3dfft_set_transpose", rc, m, g != NULL ? g->slabs_asked : 0)))
        return rc;
    if (g == NULL) {
        pending_mode = m;
        return ok();
    }
    return reconfigure((p3_mode_t)m, g->slabs_asked);
}

const char *Cp3dfft_get_transpose(void)
{
    if (g != NULL)
        return p3_mode_names[g->mode];
    return pending_mode >= 0 ? p3_mode_names[pending_mode] : "unset";
}

int Cp3dfft_set_slabs(int slabs)
{
    int rc = slabs < 0 || slabs > P3_MAX_SLABS
                 ? p3_fail(P3DFFT_ERR_ARG, "Cp3dfft_set_slabs: slabs = %d, need 0..%d", slabs,
                           P3_MAX_SLABS)
                 : P3DFFT_OK;
    if ((rc = agreed("Cp3dfft_set_slabs", rc, g != NULL ? (int)g->mode : 0, slabs)))
        return rc;
    if (g == NULL) {
        pending_slabs = slabs;
        return ok();
    }
    return reconfigure(g->mode, slabs);
}

int Cp3dfft_get_slabs(void)
{
    return g != NULL ? g->nslab : 0;
}
