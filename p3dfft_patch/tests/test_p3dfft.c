/*
 * Multi-rank tests of the P3DFFT-compatible library: every rank compares its
 * part of the distributed forward transform with a serial FFTW transform of
 * the whole input (which every rank can build, as the input is a function of
 * the global index), checks backward(forward(x)) = N x, the sine test's four
 * spectral entries, and the errors bad input gets. Sizes 16^3, 17x18x19,
 * 32^3 and 14x18x12 (nx / 2 + 1 even: the padded strides of p3_ld); every processor grid 1 x n, n x 1 (and 2 x 2 on 4 ranks); nv = 1..3;
 * every transpose mode, also switched after set-up; the slab pipeline with 1
 * and 3 slabs. The cosine and sine transforms along Z ("ffc" / "cff", "ffs" /
 * "sff") against the serial r2c in X, c2c in Y and REDFT00 / RODFT00 along Z
 * of the real and imaginary parts, nv = 2. After every set-up, the ranges,
 * memsize and get_dims conf 3 against P3DFFT 2.7's; in-place transforms
 * (in == out, nv = 1 and 3) on arrays sized by memsize; the library's
 * communicators return MPI errors; disagreeing set-up arguments; the
 * timers and the chosen mode and slab count across Cp3dfft_clean; the mode
 * P3DFFT_TRANSPOSE chooses where no call has; on one rank, that offload mode
 * (nothing to move) started no offcoll progress thread.
 * With --late (2 ranks): rank 1 comes late to a transform's Y-Z transpose
 * (dims 1x2; --late xy: the X-Y transpose, dims 2x1) in offload mode, so rank
 * 0's times out and names it; both clean up and finalize (under ASan: the
 * failed transpose's buffers are kept until MPI_Finalize, when offcoll's
 * context goes). With --bad-init (4 ranks, 2x2, offload): the first
 * offcoll request of ROW 0 fails there (an oc_alltoallv_init defined here);
 * every rank's set-up fails, well before OC_TIMEOUT_S.
 */
#include <complex.h>
#include <dlfcn.h>
#include <limits.h>
#include <fftw3.h>
#include <math.h>
#include <unistd.h>

#include "mpi_check.h"
#include "p3dfft.h"
#include "pe_threads.h"

static int rank, nproc;
static char tag[160]; /* the case, printed with every failed check */

#define CHECK_P3(call) \
    CHECK((call) == 0, "%s failed: %s", #call, Cp3dfft_last_error())

/* A call that must fail with a message containing needle. */
#define CHECK_FAILS(call, needle)                                                          \
    do {                                                                                   \
        int rc_ = (call);                                                                  \
        CHECK(rc_ != 0, "%s succeeded", #call);                                            \
        CHECK(strstr(Cp3dfft_last_error(), needle) != NULL, "%s: \"%s\" does not name %s", \
              #call, Cp3dfft_last_error(), needle);                                        \
    } while (0)

typedef struct {
    int n[3];          /* nx, ny, nz */
    int rs[3], rn[3];  /* real X-pencil: 0-based start, size */
    int cs[3], cn[3];  /* complex Z-pencil */
    int mem[3];        /* memsize */
} grid_t;

/* Input value at a global index, different for every variable. */
static double input(int v, long x, long y, long z)
{
    unsigned long h = (unsigned long)(((x * 73856093L) ^ (y * 19349663L) ^ (z * 83492791L)) +
                                      v * 2654435761L);
    h ^= h >> 13;
    h *= 0x5bd1e995UL;
    h ^= h >> 15;
    return (double)(h % 20001) / 10000.0 - 1.0;
}

static double sine_input(const grid_t *g, long x, long y, long z)
{
    const double tau = 8 * atan(1.0);
    return sin(tau * x / g->n[0]) * sin(tau * y / g->n[1]) * sin(tau * z / g->n[2]);
}

static void fill_real(const grid_t *g, double *a, double (*f)(const grid_t *, int, long, long, long),
                      int v)
{
    long x, y, z, i = 0;
    for (z = 0; z < g->rn[2]; z++)
        for (y = 0; y < g->rn[1]; y++)
            for (x = 0; x < g->rn[0]; x++)
                a[i++] = f(g, v, x + g->rs[0], y + g->rs[1], z + g->rs[2]);
}

static double rand_at(const grid_t *g, int v, long x, long y, long z)
{
    (void)g;
    return input(v, x, y, z);
}

static double sine_at(const grid_t *g, int v, long x, long y, long z)
{
    (void)v;
    return sine_input(g, x, y, z);
}

/* The transforms under test: along Y a Fourier transform or none, along Z
 * also the cosine and sine ones; op letters, and the round-trip factors (Y:
 * ny or 1; Z: Fourier nz, REDFT00 2(nz-1), RODFT00 2(nz+1), none 1). */
enum { YF = 0, YN, NYOPS };
static const char yletter[NYOPS] = {'f', 'n'};
enum { ZF = 0, ZC, ZS, ZN, NZOPS };
static const char zletter[NZOPS] = {'f', 'c', 's', 'n'};

static double roundtrip(const grid_t *g, int yop, int zop)
{
    int nz = g->n[2];
    double z = zop == ZF ? nz : zop == ZC ? 2.0 * (nz - 1) : zop == ZS ? 2.0 * (nz + 1) : 1;
    return (double)g->n[0] * (yop == YF ? g->n[1] : 1) * z;
}

/* Serial reference, index (kz * ny + ky) * nxh + kx: the r2c of every X line
 * and the c2c along Y (the 2D r2c of every XY plane) or none, then along Z
 * the c2c, the r2r of the real and imaginary parts, or none. */
static fftw_complex *reference(const grid_t *g, int v, int yop, int zop)
{
    int nx = g->n[0], ny = g->n[1], nz = g->n[2], nxh = nx / 2 + 1, plane = nxh * ny;
    long x, y, z;
    double *r = fftw_alloc_real((size_t)nx * ny * nz);
    fftw_complex *c = fftw_alloc_complex((size_t)plane * nz);
    fftw_r2r_kind kind = zop == ZC ? FFTW_REDFT00 : FFTW_RODFT00;
    fftw_plan xy = yop == YF ? fftw_plan_many_dft_r2c(2, (int[]){ny, nx}, nz, r, NULL, 1, nx * ny,
                                                      c, NULL, 1, plane, FFTW_ESTIMATE)
                             : fftw_plan_many_dft_r2c(1, &nx, ny * nz, r, NULL, 1, nx, c, NULL, 1,
                                                      nxh, FFTW_ESTIMATE);
    fftw_plan zp = zop == ZN   ? NULL
                   : zop == ZF ? fftw_plan_many_dft(1, &nz, plane, c, NULL, plane, 1, c, NULL,
                                                    plane, 1, FFTW_FORWARD, FFTW_ESTIMATE)
                               : fftw_plan_many_r2r(1, &nz, 2 * plane, (double *)c, NULL,
                                                    2 * plane, 1, (double *)c, NULL, 2 * plane, 1,
                                                    &kind, FFTW_ESTIMATE);
    for (z = 0; z < nz; z++)
        for (y = 0; y < ny; y++)
            for (x = 0; x < nx; x++)
                r[(z * ny + y) * nx + x] = input(v, x, y, z);
    fftw_execute(xy);
    fftw_destroy_plan(xy);
    if (zp != NULL) {
        fftw_execute(zp);
        fftw_destroy_plan(zp);
    }
    fftw_free(r);
    return c;
}

static double max_all(double v)
{
    double m;
    MPI_Allreduce(&v, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return m;
}

/* Upstream's MapDataToProc, written as its loop: the 1-based start and the
 * size of part i of n points over p parts (the last n % p get one more). */
static void upstream_split(int n, int p, int i, int *start, int *size)
{
    int base = n / p, nl = p - (n - base * p), k;
    *start = 1;
    for (k = 0; k < i; k++)
        *start += k < nl ? base : base + 1;
    *size = i < nl ? base : base + 1;
}

/* One get_dims configuration against the 1-based starts and sizes wanted. */
static void check_dims(int conf, const int want_s[3], const int want_n[3])
{
    int s[3], e[3], z[3], d;
    CHECK_P3(Cp3dfft_get_dims(s, e, z, conf));
    for (d = 0; d < 3; d++)
        CHECK(s[d] == want_s[d] && z[d] == want_n[d] && e[d] == want_s[d] + want_n[d] - 1,
              "get_dims conf %d, dimension %d: start %d end %d size %d, upstream's %d %d %d", conf,
              d, s[d], e[d], z[d], want_s[d], want_s[d] + want_n[d] - 1, want_n[d]);
}

/* This rank's ranges and memsize against P3DFFT 2.7's: MapDataToProc's
 * splits; memsize = {nx, jisize, kjsize + padi} doubles, padi the XY planes
 * that make room for twice the larger of the complex Z- and Y-pencils
 * (setup.F90); get_dims conf 3 gives start 0 and end = size = memsize. */
static void check_layout(const grid_t *g, const int dims[2])
{
    int ip = rank % dims[0], jp = rank / dims[0], nx = g->n[0], ny = g->n[1], nz = g->n[2];
    int rs[3] = {1, 0, 0}, rn[3] = {nx, 0, 0}, cs[3] = {0, 0, 1}, cn[3] = {0, 0, nz};
    int s[3], e[3], z[3], d;
    long long plane, zc, yc, pad;

    upstream_split(ny, dims[0], ip, &rs[1], &rn[1]);
    upstream_split(nz, dims[1], jp, &rs[2], &rn[2]);
    upstream_split(nx / 2 + 1, dims[0], ip, &cs[0], &cn[0]);
    upstream_split(ny, dims[1], jp, &cs[1], &cn[1]);
    check_dims(1, rs, rn);
    check_dims(2, cs, cn);

    plane = (long long)nx * rn[1];
    zc = (long long)nz * cn[1] * cn[0];
    yc = (long long)ny * rn[2] * cn[0];
    pad = 2 * (zc > yc ? zc : yc) - plane * rn[2];
    pad = pad <= 0 ? 0 : pad % plane != 0 ? pad / plane + 1 : pad / plane;
    CHECK(g->mem[0] == nx && g->mem[1] == rn[1] && g->mem[2] == rn[2] + pad,
          "memsize = %d %d %d, upstream's %d %d %lld", g->mem[0], g->mem[1], g->mem[2], nx,
          rn[1], rn[2] + pad);
    CHECK_P3(Cp3dfft_get_dims(s, e, z, 3));
    for (d = 0; d < 3; d++)
        CHECK(s[d] == 0 && e[d] == g->mem[d] && z[d] == g->mem[d],
              "get_dims conf 3, dimension %d: start %d end %d size %d, upstream's 0 %d %d", d,
              s[d], e[d], z[d], g->mem[d], g->mem[d]);
}

static int setup(grid_t *g, int d0, int d1, const int n[3])
{
    int dims[2] = {d0, d1}, s[3], e[3], d;
    memcpy(g->n, n, sizeof(g->n));
    if (Cp3dfft_setup(dims, n[0], n[1], n[2], MPI_Comm_c2f(MPI_COMM_WORLD), n[0], n[1], n[2], 0,
                      g->mem) != 0) {
        CHECK(0, "Cp3dfft_setup: %s", Cp3dfft_last_error());
        return -1;
    }
    CHECK_P3(Cp3dfft_get_dims(s, e, g->rn, 1));
    for (d = 0; d < 3; d++)
        g->rs[d] = s[d] - 1;
    CHECK_P3(Cp3dfft_get_dims(s, e, g->cn, 2));
    for (d = 0; d < 3; d++)
        g->cs[d] = s[d] - 1;
    check_layout(g, dims);
    return 0;
}

static size_t rsize(const grid_t *g)
{
    return (size_t)g->rn[0] * g->rn[1] * g->rn[2];
}

static size_t csize(const grid_t *g)
{
    return (size_t)g->cn[0] * g->cn[1] * g->cn[2];
}

/* The local part of a variable's spectrum against the serial reference. */
static double spectrum_error(const grid_t *g, const fftw_complex *out, const fftw_complex *ref)
{
    long nxh = g->n[0] / 2 + 1, ny = g->n[1], x, y, z, i = 0;
    double err = 0, mag = 0;
    for (z = 0; z < g->cn[2]; z++)
        for (y = 0; y < g->cn[1]; y++)
            for (x = 0; x < g->cn[0]; x++, i++) {
                fftw_complex r = ref[((z + g->cs[2]) * ny + y + g->cs[1]) * nxh + x + g->cs[0]];
                err = fmax(err, cabs(out[i] - r));
            }
    for (i = 0; i < nxh * ny * g->n[2]; i++)
        mag = fmax(mag, cabs(ref[i]));
    return max_all(err) / mag;
}

/* Forward ('f', the Y and the Z letter) and backward (the Z and the Y letter,
 * 'f') of nv variables, checked against the reference; backward(forward(x))
 * is x times the round-trip factors. */
static void check_transforms(const grid_t *g, int nv, fftw_complex **refs, int yop, int zop)
{
    unsigned char fw[] = {'f', yletter[yop], zletter[zop], 0};
    unsigned char bw[] = {zletter[zop], yletter[yop], 'f', 0};
    size_t rs = rsize(g), cs = csize(g), i;
    double *in = malloc(sizeof(double) * rs * (size_t)nv + 1);
    double *back = malloc(sizeof(double) * rs * (size_t)nv + 1);
    fftw_complex *out = fftw_alloc_complex(cs * (size_t)nv + 1);
    double N = roundtrip(g, yop, zop);
    int v;

    for (v = 0; v < nv; v++)
        fill_real(g, in + rs * (size_t)v, rand_at, v);
    CHECK_P3(Cp3dfft_ftran_r2c_many(in, (int)rs, (double *)out, (int)cs, nv, fw));
    for (v = 0; v < nv; v++) {
        double e = spectrum_error(g, out + cs * (size_t)v, refs[v]);
        CHECK(e < 1e-12, "%s variable %d: forward relative error %g", fw, v, e);
    }
    CHECK_P3(Cp3dfft_btran_c2r_many((double *)out, (int)cs, back, (int)rs, nv, bw));
    {
        double err = 0;
        for (i = 0; i < rs * (size_t)nv; i++)
            err = fmax(err, fabs(back[i] - N * in[i]));
        err = max_all(err) / N;
        CHECK(err < 1e-12, "%s(%s(x)) - N x: relative error %g", bw, fw, err);
    }
    free(in);
    free(back);
    fftw_free(out);
}

/* In place, as upstream's driver_sine_inplace and driver_sine_inplace_many:
 * one array of nv times memsize doubles holds the inputs (dim_in: a real
 * X-pencil), then the outputs (dim_out: a complex Z-pencil) and back; a
 * guard after the array must stay as it was. nv = 1 uses the plain calls. */
static void check_in_place(const grid_t *g, int nv, fftw_complex **refs)
{
    enum { GUARD = 4096 };
    unsigned char fw[] = "fft", bw[] = "tff";
    size_t rs = rsize(g), cs = csize(g), n = (size_t)g->mem[0] * g->mem[1] * g->mem[2] * nv, i;
    double *a = malloc(sizeof(double) * (n + GUARD)), *x = malloc(sizeof(double) * rs * nv);
    double N = (double)g->n[0] * g->n[1] * g->n[2], err = 0;
    int v, guard_ok = 1;

    for (v = 0; v < nv; v++)
        fill_real(g, x + rs * (size_t)v, rand_at, v);
    memcpy(a, x, sizeof(double) * rs * nv);
    for (i = n; i < n + GUARD; i++)
        a[i] = -12345.0;
    CHECK_P3(nv == 1 ? Cp3dfft_ftran_r2c(a, a, fw)
                     : Cp3dfft_ftran_r2c_many(a, (int)rs, a, (int)cs, nv, fw));
    for (v = 0; v < nv; v++) {
        double e = spectrum_error(g, (fftw_complex *)a + cs * (size_t)v, refs[v]);
        CHECK(e < 1e-12, "in place, variable %d: forward relative error %g", v, e);
    }
    CHECK_P3(nv == 1 ? Cp3dfft_btran_c2r(a, a, bw)
                     : Cp3dfft_btran_c2r_many(a, (int)cs, a, (int)rs, nv, bw));
    for (i = 0; i < rs * (size_t)nv; i++)
        err = fmax(err, fabs(a[i] - N * x[i]));
    err = max_all(err) / N;
    CHECK(err < 1e-12, "in place: backward(forward(x)) - N x: relative error %g", err);
    for (i = n; i < n + GUARD; i++)
        guard_ok &= a[i] == -12345.0;
    CHECK(guard_ok, "in place: written past nv * memsize doubles");
    free(a);
    free(x);
}

/* Counted while watch_alltoallv is set: the library's MPI_Alltoallv calls,
 * and those on a communicator whose MPI errors would abort rather than
 * return to the library's checks (through the profiling interface). */
static int watch_alltoallv, alltoallv_calls, alltoallv_fatal;

int MPI_Alltoallv(const void *sbuf, const int scnt[], const int sdsp[], MPI_Datatype stype,
                  void *rbuf, const int rcnt[], const int rdsp[], MPI_Datatype rtype,
                  MPI_Comm comm)
{
    if (watch_alltoallv) {
        MPI_Errhandler eh;
        MPI_Comm_get_errhandler(comm, &eh);
        alltoallv_calls++;
        alltoallv_fatal += eh != MPI_ERRORS_RETURN;
        MPI_Errhandler_free(&eh);
    }
    return PMPI_Alltoallv(sbuf, scnt, sdsp, stype, rbuf, rcnt, rdsp, rtype, comm);
}

/* The library's transposes (blocking mode) run on communicators with
 * MPI_ERRORS_RETURN, so its "!= MPI_SUCCESS" checks see a failure. */
static void check_errhandler(const grid_t *g, fftw_complex **refs)
{
    alltoallv_calls = alltoallv_fatal = 0;
    watch_alltoallv = 1;
    check_transforms(g, 1, refs, YF, ZF);
    watch_alltoallv = 0;
    CHECK(nproc == 1 || alltoallv_calls > 0, "no MPI_Alltoallv seen");
    CHECK(alltoallv_fatal == 0, "%d of %d MPI_Alltoallv calls on a communicator whose errors "
          "abort", alltoallv_fatal, alltoallv_calls);
}

/* The sine test: four entries of magnitude N/8 (+i at (1,1,1) and
 * (1,ny-1,nz-1), -i at (1,1,nz-1) and (1,ny-1,1)); back to the input. */
static void check_sine(const grid_t *g)
{
    unsigned char fw[] = "fft", bw[] = "tff";
    size_t rs = rsize(g), cs = csize(g), i;
    double *in = malloc(sizeof(double) * rs), *back = malloc(sizeof(double) * rs);
    fftw_complex *out = fftw_alloc_complex(cs);
    double N = (double)g->n[0] * g->n[1] * g->n[2], err = 0;
    int found = 0, wrong = 0, total, x, y, z;

    fill_real(g, in, sine_at, 0);
    CHECK_P3(Cp3dfft_ftran_r2c(in, (double *)out, fw));
    i = 0;
    for (z = g->cs[2]; z < g->cs[2] + g->cn[2]; z++)
        for (y = g->cs[1]; y < g->cs[1] + g->cn[1]; y++)
            for (x = g->cs[0]; x < g->cs[0] + g->cn[0]; x++, i++) {
                int ylo = y == 1, yhi = y == g->n[1] - 1, zlo = z == 1, zhi = z == g->n[2] - 1;
                if (x == 1 && (ylo || yhi) && (zlo || zhi)) {
                    double want = (ylo == zlo ? 1 : -1) * N / 8;
                    found++;
                    if (fabs(creal(out[i])) > 1e-9 * N || fabs(cimag(out[i]) - want) > 1e-9 * N)
                        wrong++;
                } else if (cabs(out[i]) > 1e-9 * N) {
                    wrong++;
                }
                out[i] /= N;
            }
    MPI_Allreduce(&found, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(total == 4, "%d of the 4 sine entries found", total);
    CHECK(wrong == 0, "%d spectral values wrong", wrong);
    CHECK_P3(Cp3dfft_btran_c2r((double *)out, back, bw));
    for (i = 0; i < rs; i++)
        err = fmax(err, fabs(back[i] - in[i]));
    err = max_all(err);
    CHECK(err < 1e-14 * N * 0.25, "sine round trip: max diff %g", err);
    free(in);
    free(back);
    fftw_free(out);
}

/* Across Cp3dfft_clean and a new set-up: the timers are zero again (as
 * upstream's setup makes them), though still readable after the clean, and
 * a transpose mode and slab count chosen after the first set-up stay chosen. */
static void check_setup_again(void)
{
    static const int n[3] = {8, 8, 8};
    double t[P3DFFT_NTIMERS], sum = 0;
    grid_t g;
    int i;

    snprintf(tag, sizeof(tag), "8^3 dims 1x%d set up again", nproc);
    CHECK_P3(Cp3dfft_set_transpose("blocking"));
    CHECK_P3(Cp3dfft_set_slabs(1));
    if (setup(&g, 1, nproc, n) != 0)
        return;
    check_sine(&g);
    CHECK_P3(Cp3dfft_set_transpose("mpi_nb"));
    CHECK_P3(Cp3dfft_set_slabs(2));
    CHECK_P3(Cp3dfft_clean());
    CHECK_P3(Cget_timers(t));
    for (i = 0; i < P3DFFT_NTIMERS; i++)
        sum += t[i];
    CHECK(sum > 0, "timers after Cp3dfft_clean: all zero");
    if (setup(&g, 1, nproc, n) != 0)
        return;
    CHECK_P3(Cget_timers(t));
    for (i = 0; i < P3DFFT_NTIMERS; i++)
        CHECK(t[i] == 0, "timer %d after a new set-up: %g", i, t[i]);
    CHECK(strcmp(Cp3dfft_get_transpose(), "mpi_nb") == 0, "mode after clean and setup: %s",
          Cp3dfft_get_transpose());
    CHECK(Cp3dfft_get_slabs() == 2, "slabs after clean and setup: %d", Cp3dfft_get_slabs());
    CHECK_P3(Cp3dfft_clean());
    CHECK_P3(Cp3dfft_set_slabs(0));
}

static void check_errors(void)
{
    int dims[2] = {1, nproc}, mem[3], s[3], e[3], n = 8;
    int comm = MPI_Comm_c2f(MPI_COMM_WORLD);
    double a[4], t[P3DFFT_NTIMERS], cpu = -1;
    unsigned long long wakeups = 1;
    unsigned char fw[] = "fft", bad[] = "fxt", cos_x[] = "cff", sin_y[] = "fsf", cos_z[] = "ffc";

    snprintf(tag, sizeof(tag), "errors");
    CHECK_P3(Cp3dfft_get_offload_stats(&cpu, &wakeups));
    CHECK(cpu == 0 && wakeups == 0, "before any offload setup: thread CPU %g s, %llu wake-ups",
          cpu, wakeups);
    CHECK_FAILS(Cp3dfft_get_offload_stats(NULL, &wakeups), "thread_cpu_s");
    CHECK_FAILS(Cp3dfft_get_offload_stats(&cpu, NULL), "wakeups");
    CHECK_FAILS(Cp3dfft_ftran_r2c(a, a + 2, fw), "Cp3dfft_setup");
    CHECK_FAILS(Cp3dfft_btran_c2r(a, a + 2, fw), "Cp3dfft_setup");
    CHECK_FAILS(Cp3dfft_get_dims(s, e, s, 1), "Cp3dfft_setup");
    CHECK_FAILS(Cp3dfft_clean(), "Cp3dfft_setup");
    CHECK_FAILS(Cget_timers(NULL), "timers");
    CHECK_FAILS(Cp3dfft_set_transpose("fast"), "fast");
    CHECK_FAILS(Cp3dfft_set_slabs(-1), "slabs");

    dims[1] = nproc + 1;
    CHECK_FAILS(Cp3dfft_setup(dims, n, n, n, comm, n, n, n, 0, mem), "dims");
    /* a grid whose product is 2^32 + nproc, which int arithmetic wraps to nproc */
    for (long long d0 = 2; d0 < 1000; d0++)
        if (((1LL << 32) + nproc) % d0 == 0 && ((1LL << 32) + nproc) / d0 <= INT_MAX) {
            dims[0] = (int)d0;
            dims[1] = (int)(((1LL << 32) + nproc) / d0);
            CHECK_FAILS(Cp3dfft_setup(dims, n, n, n, comm, n, n, n, 0, mem),
                        "the product must equal");
            break;
        }
    dims[0] = 1;
    dims[1] = nproc;
    CHECK_FAILS(Cp3dfft_setup(NULL, n, n, n, comm, n, n, n, 0, mem), "dims");
    CHECK_FAILS(Cp3dfft_setup(dims, n, n, n, comm, n, n, n, 0, NULL), "memsize");
    CHECK_FAILS(Cp3dfft_setup(dims, n, n, n, comm, n + 1, n, n, 0, mem), "nxc");
    CHECK_FAILS(Cp3dfft_setup(dims, 1, n, n, comm, 1, n, n, 0, mem), "need nx >= 2");
    CHECK_FAILS(Cp3dfft_setup(dims, n, n, n, MPI_Comm_c2f(MPI_COMM_NULL), n, n, n, 0, mem),
                "comm_f");
    CHECK_FAILS(Cp3dfft_setup(dims, 1 << 16, 1 << 16, 1 << 16, comm, 1 << 16, 1 << 16, 1 << 16,
                              0, mem), "too large for MPI's int counts");
    if (nproc > 1) {
        CHECK_FAILS(Cp3dfft_setup(dims, n, n, 1, comm, n, n, 1, 0, mem), "dims[1]");
        dims[0] = nproc, dims[1] = 1;
        CHECK_FAILS(Cp3dfft_setup(dims, n, 1, n, comm, n, 1, n, 0, mem), "dims[0]");
        dims[0] = 1, dims[1] = nproc;
    }
    /* refused on one rank only: refused on all, none left in MPI_Comm_dup */
    CHECK_FAILS(Cp3dfft_setup(dims, n, n, n, comm, n, n, n, 0, rank == nproc - 1 ? NULL : mem),
                rank == nproc - 1 ? "memsize" : "failed on another rank");
    setenv("P3DFFT_TRANSPOSE", "sometimes", 1);
    CHECK_FAILS(Cp3dfft_setup(dims, n, n, n, comm, n, n, n, 0, mem), "P3DFFT_TRANSPOSE");
    /* no call has chosen a mode yet: the variable does */
    CHECK(strcmp(Cp3dfft_get_transpose(), "unset") == 0, "mode before any choice: %s",
          Cp3dfft_get_transpose());
    setenv("P3DFFT_TRANSPOSE", "offload", 1);
    CHECK_P3(Cp3dfft_setup(dims, n, n, n, comm, n, n, n, 0, mem));
    CHECK(strcmp(Cp3dfft_get_transpose(), "offload") == 0, "P3DFFT_TRANSPOSE=offload: mode %s",
          Cp3dfft_get_transpose());
    CHECK_P3(Cp3dfft_clean());
    unsetenv("P3DFFT_TRANSPOSE");
    if (rank == 0) /* a setting refused on one rank only */
        setenv("P3DFFT_SLABS", "abc", 1);
    CHECK_FAILS(Cp3dfft_setup(dims, n, n, n, comm, n, n, n, 0, mem),
                rank == 0 ? "P3DFFT_SLABS" : "failed on another rank");
    unsetenv("P3DFFT_SLABS");
    setenv("P3DFFT_HUGEPAGES", "yes", 1);
    CHECK_FAILS(Cp3dfft_setup(dims, n, n, n, comm, n, n, n, 0, mem), "P3DFFT_HUGEPAGES");
    unsetenv("P3DFFT_HUGEPAGES");
    if (nproc > 1) { /* valid grids and sizes that differ: refused on every rank, named */
        int other[2] = {nproc, 1}, last = rank == nproc - 1;
        CHECK_FAILS(Cp3dfft_setup(dims, n, n, last ? n + 2 : n, comm, n, n, last ? n + 2 : n, 0,
                                  mem), "nz differs between ranks (8 and 10)");
        CHECK_FAILS(Cp3dfft_setup(last ? other : dims, n, n, n, comm, n, n, n, 0, mem),
                    "dims[0] differs");
        CHECK_FAILS(Cp3dfft_setup(dims, rank == 0 ? n + 1 : n, n, n, comm, rank == 0 ? n + 1 : n,
                                  n, n, 0, mem), "nx differs");
    }
    if (nproc > 1) { /* valid settings that differ: the ranks would transpose differently */
        CHECK_P3(Cp3dfft_set_transpose(rank == 0 ? "offload" : "blocking"));
        CHECK_FAILS(Cp3dfft_setup(dims, n, n, n, comm, n, n, n, 0, mem), "mode differs");
        CHECK_P3(Cp3dfft_set_transpose(getenv("P3DFFT_TRANSPOSE") != NULL
                                           ? getenv("P3DFFT_TRANSPOSE") : "blocking"));
        CHECK_P3(Cp3dfft_set_slabs(rank == 0 ? 2 : 0));
        CHECK_FAILS(Cp3dfft_setup(dims, n, n, n, comm, n, n, n, 0, mem), "slab count differs");
        CHECK_P3(Cp3dfft_set_slabs(0));
    }

    CHECK_P3(Cp3dfft_setup(dims, n, n, n, comm, n, n, n, 0, mem));
    CHECK_FAILS(Cp3dfft_setup(dims, n, n, n, comm, n, n, n, 0, mem), "already");
    if (nproc > 1) { /* set up on all but rank 0: a set-up is refused on all */
        if (rank == 0)
            CHECK_P3(Cp3dfft_clean());
        CHECK_FAILS(Cp3dfft_setup(dims, n, n, n, comm, n, n, n, 0, mem),
                    rank == 0 ? "failed on another rank" : "already");
        if (rank != 0)
            CHECK_P3(Cp3dfft_clean());
        CHECK_P3(Cp3dfft_setup(dims, n, n, n, comm, n, n, n, 0, mem));
    }
    CHECK_FAILS(Cp3dfft_ftran_r2c(NULL, a, fw), "in");
    CHECK_FAILS(Cp3dfft_ftran_r2c(a, NULL, fw), "out");
    CHECK_FAILS(Cp3dfft_btran_c2r(NULL, a, fw), "in");
    CHECK_FAILS(Cp3dfft_ftran_r2c(a, a + 2, NULL), "op");
    CHECK_FAILS(Cp3dfft_ftran_r2c(a, a + 2, bad), "op[1]");
    /* cosine and sine along Z only: op[2] forward, op[0] backward */
    CHECK_FAILS(Cp3dfft_ftran_r2c(a, a + 2, cos_x), "op[0] = 'c'");
    CHECK_FAILS(Cp3dfft_ftran_r2c(a, a + 2, sin_y), "op[1] = 's'");
    CHECK_FAILS(Cp3dfft_btran_c2r(a, a + 2, cos_z), "op[2] = 'c'");
    CHECK_FAILS(Cp3dfft_btran_c2r(a, a + 2, sin_y), "op[1] = 's'");
    CHECK_FAILS(Cp3dfft_ftran_r2c_many(a, 1, a + 2, 1, 2, fw), "dim_in");
    CHECK_FAILS(Cp3dfft_ftran_r2c_many(a, 1 << 20, a + 2, 1, 2, fw), "dim_out");
    CHECK_FAILS(Cp3dfft_ftran_r2c_many(a, 1 << 20, a + 2, 1 << 20, 0, fw), "nv");
    /* refused on one rank only: refused on all, none left waiting in a transpose */
    CHECK_FAILS(Cp3dfft_ftran_r2c(rank == 0 ? NULL : a, a + 2, fw),
                rank == 0 ? "in is NULL" : "failed on another rank");
    CHECK_FAILS(Cp3dfft_btran_c2r(a, a + 2, rank == nproc - 1 ? bad : fw),
                rank == nproc - 1 ? "op[1]" : "failed on another rank");
    CHECK_FAILS(Cp3dfft_set_transpose(rank == 0 ? "fast" : "offload"),
                rank == 0 ? "fast" : "failed on another rank");
    CHECK_FAILS(Cp3dfft_set_slabs(rank == nproc - 1 ? 65 : 2),
                rank == nproc - 1 ? "slabs = 65" : "failed on another rank");
    if (nproc > 1) {
        CHECK_FAILS(Cp3dfft_set_transpose(rank == 0 ? "mpi_nb" : "blocking"), "mode differs");
        CHECK_FAILS(Cp3dfft_set_slabs(rank == 0 ? 2 : 1), "slab count differs");
    }
    CHECK_FAILS(Cp3dfft_get_dims(s, e, s, 4), "conf");
    CHECK_FAILS(Cp3dfft_get_dims(NULL, e, s, 1), "start");
    CHECK_P3(Cget_timers(t));
    CHECK_P3(Cp3dfft_clean());

    /* REDFT00 needs two points along Z */
    dims[0] = nproc, dims[1] = 1;
    CHECK_P3(Cp3dfft_setup(dims, n, n, 1, comm, n, n, 1, 0, mem));
    CHECK_FAILS(Cp3dfft_ftran_r2c(a, a + 2, cos_z), "nz >= 2");
    CHECK_P3(Cp3dfft_clean());
}

/* Set on rank 1: its next MPI_Allreduce, a transform's agreement on its
 * arguments (through the profiling interface), returns 3 s late. */
static int late_allreduce;

int MPI_Allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op,
                  MPI_Comm comm)
{
    int rc = PMPI_Allreduce(sbuf, rbuf, count, type, op, comm);
    if (late_allreduce) {
        late_allreduce = 0;
        sleep(3);
    }
    return rc;
}

/* Over TCP, where rank 0's messages to the late rank stay in its backend.
 * xy: the grid is 2x1, so the X-Y transpose is the one that times out. */
static void late_case(int xy)
{
    static const int n[3] = {32, 32, 32};
    unsigned char op[] = "fft";
    double *in;
    fftw_complex *out;
    grid_t g;
    int rc;

    const char *name = xy ? "X-Y transpose" : "Y-Z transpose";

    snprintf(tag, sizeof(tag), "32^3 dims %s offload, rank 1 late to a transform",
             xy ? "2x1" : "1x2");
    setenv("OC_TIMEOUT_S", "1", 1);
    setenv("OC_INTRANODE", "loopback", 1);
    CHECK_P3(Cp3dfft_set_transpose("offload"));
    if (setup(&g, xy ? nproc : 1, xy ? 1 : nproc, n) != 0)
        return;
    in = fftw_malloc(rsize(&g) * sizeof(double));
    out = fftw_malloc(csize(&g) * sizeof(fftw_complex));
    fill_real(&g, in, rand_at, 0);
    late_allreduce = rank == 1;
    rc = Cp3dfft_ftran_r2c(in, (double *)out, op);
    if (rank == 0) {
        CHECK(rc != 0 && strstr(Cp3dfft_last_error(), name) != NULL &&
                  strstr(Cp3dfft_last_error(), "OC_ERR_TIMEOUT") != NULL &&
                  strstr(Cp3dfft_last_error(), "never took part: 1") != NULL,
              "the transform returned %d: %s", rc, Cp3dfft_last_error());
    }
    /* Rank 1's transpose may complete or time out, as its peer gave up. */
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_P3(Cp3dfft_clean());
    fftw_free(in);
    fftw_free(out);
}

/* Makes the next oc_alltoallv_init of this rank fail without calling it:
 * the library's own calls come here (the executable's definition comes first
 * in symbol lookup), the others go on to offcoll's. */
static int fail_next_init;

oc_status_t oc_alltoallv_init(oc_team_t *team, const void *sbuf, size_t sbuf_bytes,
                              const size_t *scounts, const size_t *sdispls, void *rbuf,
                              size_t rbuf_bytes, const size_t *rcounts, const size_t *rdispls,
                              oc_request_t **req)
{
    oc_status_t (*real)(oc_team_t *, const void *, size_t, const size_t *, const size_t *,
                        void *, size_t, const size_t *, const size_t *, oc_request_t **);
    if (fail_next_init) {
        fail_next_init = 0;
        return OC_ERR_NO_MEMORY;
    }
    *(void **)&real = dlsym(RTLD_NEXT, "oc_alltoallv_init");
    return real(team, sbuf, sbuf_bytes, scounts, sdispls, rbuf, rbuf_bytes, rcounts, rdispls,
                req);
}

/* 2x2 offload: the first request of ROW 0 (ranks 0 and 1, an X-Y request)
 * fails there; ROW 1's succeed. Request set-up is collective per team, so
 * ranks 0 and 1 must still set up their Y-Z requests with ranks 2 and 3 on
 * COL: every set-up fails at once, none waits until OC_TIMEOUT_S. */
static void bad_init_case(void)
{
    static const int n[3] = {16, 16, 16};
    int dims[2] = {2, 2}, mem[3], rc;
    double t;

    snprintf(tag, sizeof(tag), "16^3 dims 2x2 offload, an X-Y request fails on ROW 0");
    setenv("OC_TIMEOUT_S", "20", 1);
    CHECK_P3(Cp3dfft_set_transpose("offload"));
    fail_next_init = rank < 2;
    t = MPI_Wtime();
    rc = Cp3dfft_setup(dims, n[0], n[1], n[2], MPI_Comm_c2f(MPI_COMM_WORLD), n[0], n[1], n[2], 0,
                       mem);
    t = MPI_Wtime() - t;
    CHECK(rc != 0, "set-up succeeded");
    CHECK(rank >= 2 || strstr(Cp3dfft_last_error(), "oc_alltoallv_init (X-Y") != NULL,
          "rank %d: %s", rank, Cp3dfft_last_error());
    CHECK(t < 10, "set-up took %.1f s to fail (OC_TIMEOUT_S is 20): %s", t, Cp3dfft_last_error());
}

/* After the offload cases: the statistics are the context's, not zeros. */
static void check_thread_ran(void)
{
    double cpu = -1;
    unsigned long long wakeups;
    CHECK_P3(Cp3dfft_get_offload_stats(&cpu, &wakeups));
    CHECK(nproc == 1 ? cpu == 0 : cpu > 0, "%d rank(s): the progress thread's CPU time %g s",
          nproc, cpu);
}

int main(int argc, char **argv)
{
    static const int sizes[][3] = {{16, 16, 16}, {17, 18, 19}, {32, 32, 32}, {14, 18, 12}};
    static const char *const modes[] = {"blocking", "mpi_nb", "offload"};
    int grids[3][2], ngrid = 0, si, gi, mi, nv, v, slabs;
    grid_t g;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nproc);
    check_tag = tag;
    setenv("P3DFFT_FFTW_FLAG", "estimate", 0); /* planning time is not under test */
    if (argc > 1 && strcmp(argv[1], "--late") == 0) {
        if (nproc == 2)
            late_case(argc > 2 && strcmp(argv[2], "xy") == 0);
        else if (rank == 0)
            printf("test_p3dfft --late: SKIP: needs 2 ranks\n");
        return check_finish("test_p3dfft --late");
    }
    if (argc > 1 && strcmp(argv[1], "--bad-init") == 0) {
        if (nproc == 4)
            bad_init_case();
        else if (rank == 0)
            printf("test_p3dfft --bad-init: SKIP: needs 4 ranks\n");
        return check_finish("test_p3dfft --bad-init");
    }

    check_errors();
    check_setup_again();

    grids[ngrid][0] = 1, grids[ngrid++][1] = nproc;
    if (nproc > 1)
        grids[ngrid][0] = nproc, grids[ngrid++][1] = 1;
    if (nproc == 4)
        grids[ngrid][0] = 2, grids[ngrid++][1] = 2;

    for (si = 0; si < (int)(sizeof(sizes) / sizeof(sizes[0])); si++) {
        const grid_t whole = {.n = {sizes[si][0], sizes[si][1], sizes[si][2]}};
        fftw_complex *refs[NYOPS][NZOPS][3];
        int y, z;
        for (y = 0; y < NYOPS; y++)
            for (z = 0; z < NZOPS; z++)
                for (v = 0; v < 3; v++)
                    refs[y][z][v] = reference(&whole, v, y, z);
        for (gi = 0; gi < ngrid; gi++)
            for (mi = 0; mi < 3; mi++) {
                snprintf(tag, sizeof(tag), "%dx%dx%d dims %dx%d %s", sizes[si][0], sizes[si][1],
                         sizes[si][2], grids[gi][0], grids[gi][1], modes[mi]);
                CHECK_P3(Cp3dfft_set_transpose(modes[mi]));
                if (setup(&g, grids[gi][0], grids[gi][1], sizes[si]) != 0)
                    continue;
                CHECK(strcmp(Cp3dfft_get_transpose(), modes[mi]) == 0, "mode %s",
                      Cp3dfft_get_transpose());
                for (slabs = 1; slabs <= 3; slabs += 2) {
                    CHECK_P3(Cp3dfft_set_slabs(slabs));
                    for (nv = 1; nv <= 3; nv++) {
                        snprintf(tag, sizeof(tag), "%dx%dx%d dims %dx%d %s slabs %d nv %d",
                                 sizes[si][0], sizes[si][1], sizes[si][2], grids[gi][0],
                                 grids[gi][1], modes[mi], slabs, nv);
                        check_transforms(&g, nv, refs[YF][ZF], YF, ZF);
                        if (nv != 2)
                            check_in_place(&g, nv, refs[YF][ZF]);
                    }
                    /* the other op strings: the Y and Z letters but "ff" */
                    for (y = 0; y < NYOPS; y++)
                        for (z = y == YF ? ZC : ZF; z < NZOPS; z++) {
                            snprintf(tag, sizeof(tag), "%dx%dx%d dims %dx%d %s slabs %d op f%c%c",
                                     sizes[si][0], sizes[si][1], sizes[si][2], grids[gi][0],
                                     grids[gi][1], modes[mi], slabs, yletter[y], zletter[z]);
                            check_transforms(&g, 2, refs[y][z], y, z);
                        }
                }
                if (si == 1) {
                    /* a mode switched after set-up: what the new mode needs is made */
                    const char *next = modes[(mi + 1) % 3];
                    check_sine(&g);
                    if (mi == 0)
                        check_errhandler(&g, refs[YF][ZF]);
                    snprintf(tag, sizeof(tag), "%dx%dx%d dims %dx%d %s then %s", sizes[si][0],
                             sizes[si][1], sizes[si][2], grids[gi][0], grids[gi][1], modes[mi],
                             next);
                    CHECK_P3(Cp3dfft_set_transpose(next));
                    CHECK(strcmp(Cp3dfft_get_transpose(), next) == 0, "mode %s",
                          Cp3dfft_get_transpose());
                    check_transforms(&g, 2, refs[YF][ZF], YF, ZF);
                }
                CHECK_P3(Cp3dfft_clean());
            }
        for (y = 0; y < NYOPS; y++)
            for (z = 0; z < NZOPS; z++)
                for (v = 0; v < 3; v++)
                    fftw_free(refs[y][z][v]);
    }
    /* Offload mode with nothing to move (one rank) starts no offcoll context;
     * with something, the context's thread has run. */
    snprintf(tag, sizeof(tag), "after every offload case");
    if (nproc == 1)
        CHECK(pe_thread_ids(NULL, 0) == 0, "%d offcoll progress threads with nothing to move",
              pe_thread_ids(NULL, 0));
    check_thread_ran();
    return check_finish("test_p3dfft");
}
