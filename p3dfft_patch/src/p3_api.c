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
/* The choices of Cp3dfft_set_transpose and Cp3dfft_set_slabs (-1: none),
 * made before or after a set-up: they override the environment at every
 * later set-up, so that Cp3dfft_clean does not undo them. */
static int chosen_mode = -1;
static int chosen_slabs = -1;
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

/* Settings from the environment, overridden by the calls' choices. */
static int read_settings(p3_t *p, int *slabs)
{
    const char *v = getenv("P3DFFT_TRANSPOSE");
    char *end;

    p->mode = P3_BLOCKING;
    if (chosen_mode >= 0)
        p->mode = (p3_mode_t)chosen_mode;
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

    p->hugepages = 1;
    v = getenv("P3DFFT_HUGEPAGES");
    if (v != NULL && *v != '\0') {
        if (strcmp(v, "0") != 0 && strcmp(v, "1") != 0)
            return p3_fail(P3DFFT_ERR_ARG, "P3DFFT_HUGEPAGES: '%s' is not 0 or 1", v);
        p->hugepages = v[0] == '1';
    }

    *slabs = 0;
    v = getenv("P3DFFT_SLABS");
    if (chosen_slabs >= 0)
        *slabs = chosen_slabs;
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
    if (dims[0] < 1 || dims[1] < 1 || (long long)dims[0] * dims[1] != size)
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
    if (MPI_Allreduce(&rc, &any, 1, MPI_INT, MPI_MAX, comm) != MPI_SUCCESS)
        return p3_fail(P3DFFT_ERR_MPI, "MPI_Allreduce (agreement between ranks) failed");
    if (any && !rc)
        p3_fail(any, "failed on another rank");
    return any;
}

/* An int every rank must pass the same: what it is, its value, the names
 * of its values (NULL: a number) and what must agree. */
typedef struct {
    const char *what;
    int value;
    const char *const *names;
    const char *hint;
} same_t;
#define P3_MAX_SAME 7

static void print_value(char *buf, size_t len, const same_t *v, int value)
{
    if (v->names != NULL)
        snprintf(buf, len, "'%s'", v->names[value]);
    else
        snprintf(buf, len, "%d", value);
}

/* As p3_agree, and each value must be the same on every rank: a rank with
 * another grid, size, transpose mode or slab count would wait in other
 * collectives, or in the same ones with other counts. Refused on every rank,
 * naming the first value that differs, with its smallest and largest. */
static int agree_same(int rc, const same_t *v, int n, MPI_Comm comm)
{
    int mine[1 + 2 * P3_MAX_SAME], all[1 + 2 * P3_MAX_SAME], i;
    char lo[32], hi[32];

    mine[0] = rc;
    for (i = 0; i < n; i++) { /* max and -min; a failed rank's values may be garbage */
        mine[1 + 2 * i] = rc ? 0 : v[i].value;
        mine[2 + 2 * i] = rc ? 0 : -v[i].value;
    }
    if (MPI_Allreduce(mine, all, 1 + 2 * n, MPI_INT, MPI_MAX, comm) != MPI_SUCCESS)
        return p3_fail(P3DFFT_ERR_MPI, "MPI_Allreduce (agreement between ranks) failed");
    if (all[0])
        return rc ? rc : p3_fail(all[0], "failed on another rank");
    for (i = 0; i < n; i++)
        if (all[1 + 2 * i] != -all[2 + 2 * i]) {
            print_value(lo, sizeof(lo), &v[i], -all[2 + 2 * i]);
            print_value(hi, sizeof(hi), &v[i], all[1 + 2 * i]);
            return p3_fail(P3DFFT_ERR_ARG, "%s differs between ranks (%s and %s): %s", v[i].what,
                           lo, hi, v[i].hint);
        }
    return P3DFFT_OK;
}

/* The settings every rank must share, at setup and in the setters. */
static int settings_same(same_t *v, int mode, int slabs)
{
    v[0] = (same_t){"the transpose mode", mode, p3_mode_names,
                    "P3DFFT_TRANSPOSE and Cp3dfft_set_transpose must agree"};
    v[1] = (same_t){"the slab count", slabs, NULL,
                    "P3DFFT_SLABS and Cp3dfft_set_slabs must agree"};
    return 2;
}

/* Setup's agreement: its grid and sizes (which upstream takes on trust: a
 * rank with another grid hung, one with another nz aborted in MPI), then the
 * settings. */
static int agree_setup(int rc, const int *dims, int nx, int ny, int nz, const p3_t *p,
                       int slabs, MPI_Comm comm)
{
    static const char args[] = "every rank must pass the same dims, nx, ny, nz";
    same_t v[P3_MAX_SAME] = {{"dims[0]", dims != NULL ? dims[0] : 0, NULL, args},
                             {"dims[1]", dims != NULL ? dims[1] : 0, NULL, args},
                             {"nx", nx, NULL, args},
                             {"ny", ny, NULL, args},
                             {"nz", nz, NULL, args}};
    int n = 5 + settings_same(v + 5, p != NULL ? (int)p->mode : 0, slabs);
    return agree_same(rc, v, n, comm);
}

static int release(p3_t *p)
{
    int rc = p3_tr_teardown(p);
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
    if ((rc = agree_setup(rc, dims, nx, ny, nz, p, slabs, comm))) {
        free(p);
        return rc;
    }
    p->slabs_asked = slabs;
    if (!(rc = p3_decomp_init(p, dims, nx, ny, nz, comm)))
        rc = p3_slabs_init(p, slabs > 0 ? slabs : p3_auto_slabs(p));
    if (!(rc = p3_agree(rc, comm)))
        rc = p3_agree(p3_tr_setup(p), comm);
    if (!rc)
        rc = p3_warmup(p); /* agreed inside, before its first transpose and after */
    if (rc) {
        char why[sizeof(last_error)];
        memcpy(why, last_error, sizeof(why));
        release(p);
        return p3_fail(rc, "%s", why);
    }
    memcpy(memsize, p->mem, sizeof(p->mem));
    g = p; /* its timers are zero (p3_warmup), as upstream's setup makes them */
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
    case 3: /* as upstream: start 0, end = size = memsize */
        for (d = 0; d < 3; d++)
            start[d] = 0, end[d] = size[d] = g->mem[d];
        return ok();
    default:
        return p3_fail(P3DFFT_ERR_ARG, "Cp3dfft_get_dims: conf = %d (1: real X-pencil, "
                       "2: complex Z-pencil, 3: memsize)", conf);
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

/* After a failed re-configuration only Cp3dfft_clean is left. */
static int refuse_broken(const char *call)
{
    return p3_fail(P3DFFT_ERR_STATE, "%s: an earlier re-configuration failed; call "
                   "Cp3dfft_clean and set up again", call);
}

/* In place (in == out, upstream's "first elements coincide"), one variable
 * needs nothing: the pipeline reads all of it before it writes any output.
 * With several, it would write a variable's output over inputs of the next
 * ones not read yet (the input and output strides differ), so *copy gets the
 * inputs, packed (need_in elements of elem bytes each). */
static int copy_in_place(const void *in, int dim_in, size_t need_in, const void *out, int nv,
                         size_t elem, void **copy)
{
    size_t v, bytes = need_in * elem;
    if (in != out || nv == 1)
        return P3DFFT_OK;
    if ((*copy = fftw_malloc(bytes * (size_t)nv)) == NULL)
        return p3_fail(P3DFFT_ERR_NOMEM, "out of memory for a copy of the %d variables of an "
                       "in-place transform", nv);
    for (v = 0; v < (size_t)nv; v++)
        memcpy((char *)*copy + v * bytes, (const char *)in + v * (size_t)dim_in * elem, bytes);
    return P3DFFT_OK;
}

/* Collective once set up: arguments refused on one rank are refused on all,
 * which would otherwise wait for it in the transposes. *copy: the inputs of
 * an in-place transform of several variables (copy_in_place), else NULL;
 * the caller frees it. */
static int check_transform(const char *call, const void *in, int dim_in, size_t need_in,
                           const void *out, int dim_out, size_t need_out, int nv,
                           const unsigned char *op, int backward, p3_op_t ops[3], void **copy)
{
    int rc;
    *copy = NULL;
    if (g == NULL)
        return p3_fail(P3DFFT_ERR_STATE, "%s: not set up (call Cp3dfft_setup first)", call);
    rc = g->broken ? refuse_broken(call)
                   : check_transform_args(call, in, dim_in, need_in, out, dim_out, need_out, nv,
                                          op, backward, ops);
    if (!rc)
        rc = copy_in_place(in, dim_in, need_in, out, nv,
                           backward ? sizeof(fftw_complex) : sizeof(double), copy);
    if (!rc)
        rc = p3_xs_need(g, ops[1] == P3_OP_NONE);
    if ((rc = p3_agree(rc, g->comm))) {
        fftw_free(*copy);
        *copy = NULL;
    }
    return rc;
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
        p3_tr_drain(g);
    return rc ? rc : ok();
}

int Cp3dfft_ftran_r2c_many(double *in, int dim_in, double *out, int dim_out, int nv,
                           unsigned char *op)
{
    p3_op_t ops[3];
    void *copy;
    int rc;
    if ((rc = check_transform("Cp3dfft_ftran_r2c", in, dim_in, real_size(), out, dim_out,
                              complex_size(), nv, op, 0, ops, &copy)))
        return rc;
    rc = p3_forward(g, copy != NULL ? copy : in, copy != NULL ? real_size() : (size_t)dim_in,
                    (fftw_complex *)out, (size_t)dim_out, nv, ops);
    fftw_free(copy);
    return transform_done(rc);
}

int Cp3dfft_btran_c2r_many(double *in, int dim_in, double *out, int dim_out, int nv,
                           unsigned char *op)
{
    p3_op_t ops[3];
    void *copy;
    int rc;
    if ((rc = check_transform("Cp3dfft_btran_c2r", in, dim_in, complex_size(), out, dim_out,
                              real_size(), nv, op, 1, ops, &copy)))
        return rc;
    rc = p3_backward(g, copy != NULL ? copy : (const fftw_complex *)in,
                     copy != NULL ? complex_size() : (size_t)dim_in, out, (size_t)dim_out, nv, ops);
    fftw_free(copy);
    return transform_done(rc);
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
    int rc = p3_tr_teardown(g);
    if (!rc)
        rc = p3_slabs_init(g, slabs > 0 ? slabs : p3_auto_slabs(g));
    if (!(rc = p3_agree(rc, g->comm))) {
        g->mode = mode;
        g->slabs_asked = slabs;
        rc = p3_agree(p3_tr_setup(g), g->comm);
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
    same_t v[2];
    if (g == NULL)
        return rc;
    if (!rc && g->broken)
        rc = refuse_broken(call);
    return agree_same(rc, v, settings_same(v, mode, slabs), g->comm);
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
    chosen_mode = m;
    return g == NULL ? ok() : reconfigure((p3_mode_t)m, g->slabs_asked);
}

const char *Cp3dfft_get_transpose(void)
{
    if (g != NULL)
        return p3_mode_names[g->mode];
    return chosen_mode >= 0 ? p3_mode_names[chosen_mode] : "unset";
}

int Cp3dfft_set_slabs(int slabs)
{
    int rc = slabs < 0 || slabs > P3_MAX_SLABS
                 ? p3_fail(P3DFFT_ERR_ARG, "Cp3dfft_set_slabs: slabs = %d, need 0..%d", slabs,
                           P3_MAX_SLABS)
                 : P3DFFT_OK;
    if ((rc = agreed("Cp3dfft_set_slabs", rc, g != NULL ? (int)g->mode : 0, slabs)))
        return rc;
    chosen_slabs = slabs;
    return g == NULL ? ok() : reconfigure(g->mode, slabs);
}

int Cp3dfft_get_slabs(void)
{
    return g != NULL ? g->nslab : 0;
}

int Cp3dfft_get_offload_stats(double *thread_cpu_s, unsigned long long *wakeups)
{
    if (thread_cpu_s == NULL || wakeups == NULL)
        return p3_fail(P3DFFT_ERR_ARG, "Cp3dfft_get_offload_stats: %s is NULL",
                       thread_cpu_s == NULL ? "thread_cpu_s" : "wakeups");
    return p3_tr_stats(thread_cpu_s, wakeups) == P3DFFT_OK ? ok() : P3DFFT_ERR_OFFLOAD;
}
