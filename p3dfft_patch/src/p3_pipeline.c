/*
 * The forward and backward transforms of nv variables, each variable's Y-Z
 * stage cut into nslab X-slabs. A "unit" is one slab of one variable; the
 * Y-Z transposes are pipelined as DESIGN.md describes for variables:
 * forward, per variable FFT-y and the start of each of its units' Y-Z
 * transposes, then, unit by unit, the wait for the previous variable's and
 * its FFT-z; the backward transform mirrors it (FFT-z and the start of the
 * Z-Y transpose of each unit, then the previous variable's waits and FFT-y).
 * With slabs, the last variable's units are waited for one at a time, each
 * FFT-z hiding the transposes of the units after it. Beyond DESIGN.md,
 * where X-Y data moves (more than one rank in ROW) the X-Y transposes are
 * pipelined across variables too: forward, variable j+1's FFT-x and the start
 * of its X-Y transpose come before the wait for variable j's; backward, a
 * variable's Y-X transpose starts after its last slab's FFT-y, and its c2r
 * waits until the next variable's Y-X has started. The units of variable j
 * use the buffers of Y-Z slot j % 2 (slab after slab), and variable j those
 * of X-Y slot j % xslots.
 *
 * Layouts (X fastest, complex elements):
 *   xs    (nxh, jisize, kjsize)       X-Y side 0: FFT-x output / c2r input,
 *                                     blocks of X ranges
 *   xr    blocks (iisize, yn_i, kjsize)  X-Y side 1 (none with one rank in ROW)
 *   ya    per slab (xs, kjsize, ny)   Y side of the Y-Z transpose
 *   zb    per slab, blocks (xs, zn_r, jjsize) for each Z range r
 *   line  (xs, max(ny, nz))           one line of a slab's Y- or Z-pencil,
 *                                     or a plane (nxh, jisize) of FFT-x
 * The Y-Z layouts let FFT-y write and read the transpose's blocks directly.
 * A rank's own block of either transpose is not moved: the stages read and
 * write it on the transpose's other side (p3_tr_block).
 * FFT-y and FFT-z read and write the Y- and Z-pencils packed, one line at a
 * time through `line`, which stays in cache: xy_line and yz_line copy a line
 * from or to the X-Y and Y-Z blocks, in runs of xs values (with one rank in
 * ROW, FFT-x and FFT-y run as one 2D transform per Z plane, p3_xy_fused, or,
 * where Y is not transformed and there is one slab, FFT-y works on xs in
 * place). With more than one
 * rank in ROW, FFT-x also goes plane by plane through `line`, and x_line
 * moves the X runs between it and the X-Y blocks; with one, and not fused,
 * FFT-x writes xs, the Y side's only block.
 */
#include <string.h>

#include "p3_internal.h"

static double now(void)
{
    return MPI_Wtime();
}

static fftw_iodim iod(int n, int is, int os)
{
    fftw_iodim d = {n, is, os};
    return d;
}

/* X-Y slot of variable j. */
static int xslot(const p3_t *p, int j)
{
    return j % p->xslots;
}

/* 1 where the X-Y transpose is pipelined across variables: forward, variable
 * j+1's FFT-x runs while j's X-Y transpose is in flight; backward, a
 * variable's c2r waits until the next one's Y-X has started. With one X-Y
 * slot, FFT-x would overwrite what FFT-y has still to read: 0. */
static int x_ahead(const p3_t *p)
{
    return p->xslots > 1;
}

/* Plane k (of kjsize) of the FFT-x side, (nxh, jisize), between p->line and
 * X-Y side 0 of slot xsl (block i is (xn_i, jisize, kjsize)).
 * to_blocks: line -> blocks (forward). */
static void x_line(p3_t *p, int xsl, int k, int to_blocks)
{
    fftw_complex *blocks = p->xs[xsl];
    int j, i;
    for (j = 0; j < p->jisize; j++) {
        size_t line = (size_t)j + (size_t)p->jisize * k;
        for (i = 0; i < p->iproc; i++) {
            fftw_complex *x = p->line + p->xc.s[i] + (size_t)p->nxh * j;
            fftw_complex *b = blocks + p->xy_sdsp[i] + (size_t)p->xc.n[i] * line;
            size_t bytes = sizeof(fftw_complex) * (size_t)p->xc.n[i];
            memcpy(to_blocks ? b : x, to_blocks ? x : b, bytes);
        }
    }
}

/* FFT-y works on xs in place: one rank in ROW (xs is the Y side's only
 * block) and one slab. */
static int y_in_place(const p3_t *p)
{
    return p->iproc == 1 && p->nslab == 1;
}

/* Line k (of kjsize) of slab [x0, x0 + xs) of the Y-pencil, (xs, ny) with
 * stride p3_ld(xs) in p->line, between the Y side's blocks of X-Y slot xsl
 * (p3_tr_block: block i is (iisize, yn_i, kjsize), our own on side 0) and
 * p->line. to_line: blocks -> line (forward). */
static void xy_line(p3_t *p, int xsl, int x0, int xs, int k, int to_line)
{
    int i, ld = p3_ld(xs);
    for (i = 0; i < p->iproc; i++) {
        int yn = p->yi.n[i];
        fftw_complex *b = p3_tr_block(p, P3_XY, xsl, 0, i) + x0 + (size_t)p->iisize * yn * k;
        p3_runs_copy(p->line + (size_t)ld * p->yi.s[i], (size_t)ld, b, (size_t)p->iisize,
                     (size_t)yn, (size_t)xs, to_line);
    }
}

/* Line y of slab s's Z-pencil, (xs, nz) with stride p3_ld(xs) in p->line,
 * between the Z side's blocks of Y-Z slot `slot` (p3_tr_block: block r is
 * (xs, zn_r, jjsize), our own (xs, kjsize, ny) on the Y side) and p->line.
 * to_line: blocks -> line (forward). */
static void yz_line(p3_t *p, int slot, int s, int y, int to_line)
{
    int xs = p->slab.n[s], ld = p3_ld(xs), r;
    for (r = 0; r < p->jproc; r++) {
        int zn = p->zj.n[r];
        fftw_complex *b = p3_tr_block(p, P3_YZ, slot, s, r) + (size_t)xs * zn * y;
        p3_runs_copy(p->line + (size_t)ld * p->zj.s[r], (size_t)ld, b, (size_t)xs, (size_t)zn,
                     (size_t)xs, to_line);
    }
}

/* The Z stage of one line (dim) of xs runs for op letter zop: a Fourier
 * transform in direction fourier, a copy ('n'), or the cosine or sine
 * transform, which is the same stage in both directions (REDFT00 and
 * RODFT00 are their own inverses up to scale). */
static p3_stage_t z_stage(p3_op_t zop, p3_kind_t fourier, fftw_iodim dim, int xs)
{
    p3_stage_t st = {fourier, zop == P3_OP_NONE, dim, {iod(1, 0, 0), iod(xs, 1, 1)}};
    if (zop == P3_OP_COS)
        st.kind = P3_R2R_COS;
    else if (zop == P3_OP_SIN)
        st.kind = P3_R2R_SIN;
    return st;
}

/* ---- forward ----------------------------------------------------------------- */

/* FFT-x of a variable into X-Y slot xsl, and the start of its X-Y transpose:
 * with more than one rank in ROW, FFT-x goes plane by plane through p->line,
 * copied out to the blocks. */
static int fwd_x_start(p3_t *p, const double *in, int xsl)
{
    int jl = p->jisize, k, rc = P3DFFT_OK;
    double t = now(), pack = 0, tc;
    p3_stage_t st = {P3_R2C, 0, iod(p->nx, 1, 1), {iod(jl, p->nx, p->nxh), iod(1, 0, 0)}};

    if (p->iproc == 1) {
        st.how[0].n = jl * p->kjsize;
        rc = p3_stage_run(p, &st, (void *)in, p->xs[xsl]);
        p->timers[4] += now() - t;
        return rc;
    }
    for (k = 0; k < p->kjsize && rc == P3DFFT_OK; k++) {
        rc = p3_stage_run(p, &st, (void *)(in + (size_t)p->nx * jl * k), p->line);
        tc = now();
        if (rc == P3DFFT_OK)
            x_line(p, xsl, k, 1);
        pack += now() - tc;
    }
    p->timers[4] += now() - t - pack;
    p->timers[5] += pack;
    if (rc)
        return rc;
    tc = now();
    rc = p3_tr_start(p, P3_XY, P3_FWD, xsl, 0);
    p->timers[0] += now() - tc;
    return rc;
}

/* FFT-x and FFT-y run together, one 2D transform per Z plane (p3_xy_run),
 * where both dimensions are local and Y is transformed: one pass over the
 * array instead of two, with the plane in cache between them, as FFTW's own
 * 3D plans go. At N = 128 on one rank of the 2-vCPU Intel VM the two stages
 * took 25% less time so (README "Measured"). The plane's runs are cut into
 * the slabs' blocks as they are copied out (or gathered), so the Y-Z
 * transposes can still go slab by slab. */
int p3_xy_fused(const p3_t *p, int yskip)
{
    return p->iproc == 1 && !yskip;
}

/* The Y-Z slot of variable j: all its slabs' units; two variables' units
 * are in flight at once, the previous one's and its own. */
static int yslot(int j)
{
    return j % P3_SLOTS;
}

/* FFT-y of slab s reads the slab's Y-pencil (xs, ny, kjsize) packed along Y,
 * unless fused (the caller ran p3_xy_run for all slabs); then the slab's
 * Y-Z transpose starts. */
static int fwd_y_start(p3_t *p, int fused, int xsl, int slot, int s, int skip)
{
    int x0 = p->slab.s[s], xs = p->slab.n[s], ny = p->ny, kj = p->kjsize, rc = P3DFFT_OK, k;
    fftw_complex *sbuf = p3_tr_sbuf(p, P3_YZ, P3_FWD, slot, s);
    p3_stage_t st = {P3_C2C_FWD, skip, iod(ny, xs, xs * kj),
                     {iod(kj, xs * ny, xs), iod(xs, 1, 1)}};
    double t = now();
    if (!fused) {
        if (y_in_place(p)) {
            rc = p3_stage_run(p, &st, p->xs[xsl], sbuf);
        } else {
            st.dim.is = p3_ld(xs);
            st.how[0] = iod(1, 0, 0);
            for (k = 0; k < kj && rc == P3DFFT_OK; k++) {
                xy_line(p, xsl, x0, xs, k, 1);
                rc = p3_stage_run(p, &st, p->line, sbuf + (size_t)xs * k);
            }
        }
        p->timers[6] += now() - t;
        if (rc)
            return rc;
        t = now();
    }
    rc = p3_tr_start(p, P3_YZ, P3_FWD, slot, s);
    p->timers[1] += now() - t;
    return rc;
}

/* FFT-z of slab s of variable j reads the slab's Z-pencil (xs, nz, jjsize)
 * packed along Z, line by line from the blocks through p->line. Also with
 * one rank in COL, whose single block FFTW could read in place: the copy
 * into the line, aligned and in cache, made the stage 0.7-0.8x as long
 * (p3dfft_patch/README.md, "Measured"). */
static int fwd_finish(p3_t *p, int j, int s, fftw_complex *out, size_t out_stride, p3_op_t zop)
{
    int slot = yslot(j), x0 = p->slab.s[s], xs = p->slab.n[s], jj = p->jjsize, rc, y;
    p3_stage_t st = z_stage(zop, P3_C2C_FWD, iod(p->nz, p3_ld(xs), p->iisize * jj), xs);
    double t = now();
    if ((rc = p3_tr_wait(p, P3_YZ, slot, s)))
        return rc;
    p->timers[1] += now() - t;
    t = now();
    out += (size_t)j * out_stride + x0;
    for (y = 0; y < jj && rc == P3DFFT_OK; y++) {
        yz_line(p, slot, s, y, 1);
        rc = p3_stage_run(p, &st, p->line, out + (size_t)p->iisize * y);
    }
    p->timers[7] += now() - t;
    return rc;
}

/* Per variable j: its FFT-y (slab by slab, or fused with FFT-x for all
 * slabs at once) and the start of each slab's Y-Z transpose; then, for
 * each slab of variable j-1, the wait for its transpose and its FFT-z. Each
 * slab of the last variable waits for its own transpose alone, so that the
 * FFT-z of one slab hides the transposes of the slabs after it. */
int p3_forward(p3_t *p, const double *in, size_t in_stride, fftw_complex *out,
               size_t out_stride, int nv, const p3_op_t op[3])
{
    int ahead = x_ahead(p), yskip = op[1] == P3_OP_NONE, fused = p3_xy_fused(p, yskip), j, s;
    int rc;
    double t;
    if (ahead && (rc = fwd_x_start(p, in, 0)))
        return rc;
    for (j = 0; j < nv; j++) {
        int x = j + ahead;
        if (!fused && x < nv && (rc = fwd_x_start(p, in + (size_t)x * in_stride, xslot(p, x))))
            return rc;
        t = now();
        if ((rc = p3_tr_wait(p, P3_XY, xslot(p, j), 0)))
            return rc;
        p->timers[0] += now() - t;
        if (fused) {
            t = now();
            rc = p3_xy_run(p, P3_FWD, (double *)(in + (size_t)j * in_stride),
                           p3_tr_sbuf(p, P3_YZ, P3_FWD, yslot(j), 0));
            p->timers[4] += now() - t;
            if (rc)
                return rc;
        }
        for (s = 0; s < p->nslab; s++)
            if ((rc = fwd_y_start(p, fused, xslot(p, j), yslot(j), s, yskip)))
                return rc;
        for (s = 0; j > 0 && s < p->nslab; s++)
            if ((rc = fwd_finish(p, j - 1, s, out, out_stride, op[2])))
                return rc;
    }
    for (s = 0; s < p->nslab; s++)
        if ((rc = fwd_finish(p, nv - 1, s, out, out_stride, op[2])))
            return rc;
    return P3DFFT_OK;
}

/* ---- backward ---------------------------------------------------------------- */

/* Mirrors fwd_finish: FFT-z writes the Z-pencil packed along Z. */
static int bwd_z_start(p3_t *p, int slot, int s, const fftw_complex *in, p3_op_t zop)
{
    int x0 = p->slab.s[s], xs = p->slab.n[s], jj = p->jjsize, rc = P3DFFT_OK, y;
    double t = now();
    p3_stage_t st = z_stage(zop, P3_C2C_BWD, iod(p->nz, p->iisize * jj, p3_ld(xs)), xs);

    for (y = 0; y < jj && rc == P3DFFT_OK; y++) {
        rc = p3_stage_run(p, &st, (void *)(in + x0 + (size_t)p->iisize * y), p->line);
        if (rc == P3DFFT_OK)
            yz_line(p, slot, s, y, 0);
    }
    if (rc)
        return rc;
    p->timers[8] += now() - t;
    t = now();
    rc = p3_tr_start(p, P3_YZ, P3_BWD, slot, s);
    p->timers[2] += now() - t;
    return rc;
}

/* The wait for the Y-X transpose of a variable in X-Y slot xsl and its c2r;
 * mirrors fwd_x_start. */
static int bwd_x_finish(p3_t *p, int xsl, double *out)
{
    int jl = p->jisize, k, rc;
    double t = now(), unpack = 0, tc;
    p3_stage_t st = {P3_C2R, 0, iod(p->nx, 1, 1), {iod(jl, p->nxh, p->nx), iod(1, 0, 0)}};

    if ((rc = p3_tr_wait(p, P3_XY, xsl, 0)))
        return rc;
    p->timers[3] += now() - t;
    t = now();
    if (p->iproc == 1) {
        st.how[0].n = jl * p->kjsize;
        rc = p3_stage_run(p, &st, p->xs[xsl], out);
        p->timers[11] += now() - t;
        return rc;
    }
    for (k = 0; k < p->kjsize && rc == P3DFFT_OK; k++) {
        tc = now();
        x_line(p, xsl, k, 0);
        unpack += now() - tc;
        rc = p3_stage_run(p, &st, p->line, out + (size_t)p->nx * jl * k);
    }
    p->timers[10] += unpack;
    p->timers[11] += now() - t - unpack;
    return rc;
}

/* Mirrors fwd_y_start: the wait for slab s of variable j, then its FFT-y,
 * which writes the Y-pencil packed along Y. After a variable's last slab
 * its Y-X transpose starts, and the c2r of the variable x_ahead before it
 * follows (0: this one; 1: the one before, whose Y-X has had this
 * variable's work to complete in). Fused (p3_xy_fused), FFT-y and the c2r
 * run together for all slabs once the last has arrived, and no Y-X
 * transpose exists. */
static int bwd_finish(p3_t *p, int j, int s, double *out, size_t out_stride, int skip)
{
    int slot = yslot(j), ahead = x_ahead(p);
    int x0 = p->slab.s[s], xs = p->slab.n[s], ny = p->ny, kj = p->kjsize, rc, k;
    fftw_complex *rbuf = p3_tr_rbuf(p, P3_YZ, P3_BWD, slot, s);
    p3_stage_t st = {P3_C2C_BWD, skip, iod(ny, xs * kj, xs),
                     {iod(kj, xs, xs * ny), iod(xs, 1, 1)}};
    double t = now();
    if ((rc = p3_tr_wait(p, P3_YZ, slot, s)))
        return rc;
    p->timers[2] += now() - t;
    t = now();
    if (p3_xy_fused(p, skip)) { /* with the c2r; one rank in ROW: no Y-X transpose */
        if (s < p->nslab - 1)
            return P3DFFT_OK;
        rc = p3_xy_run(p, P3_BWD, out + (size_t)j * out_stride,
                       p3_tr_rbuf(p, P3_YZ, P3_BWD, slot, 0));
        p->timers[11] += now() - t;
        return rc;
    }
    if (y_in_place(p)) {
        rc = p3_stage_run(p, &st, rbuf, p->xs[xslot(p, j)]);
    } else {
        st.dim.os = p3_ld(xs);
        st.how[0] = iod(1, 0, 0);
        for (k = 0; k < kj && rc == P3DFFT_OK; k++) {
            rc = p3_stage_run(p, &st, rbuf + (size_t)xs * k, p->line);
            if (rc == P3DFFT_OK)
                xy_line(p, xslot(p, j), x0, xs, k, 0);
        }
    }
    p->timers[9] += now() - t;
    if (rc || s < p->nslab - 1)
        return rc;
    t = now();
    rc = p3_tr_start(p, P3_XY, P3_BWD, xslot(p, j), 0);
    p->timers[3] += now() - t;
    if (rc || j < ahead)
        return rc;
    return bwd_x_finish(p, xslot(p, j - ahead), out + (size_t)(j - ahead) * out_stride);
}

/* Mirrors p3_forward: per variable j, the FFT-z of each slab and the start
 * of its Z-Y transpose; then each slab of variable j-1: its wait and FFT-y. */
int p3_backward(p3_t *p, const fftw_complex *in, size_t in_stride, double *out,
                size_t out_stride, int nv, const p3_op_t op[3])
{
    int j, s, rc, yskip = op[1] == P3_OP_NONE;
    for (j = 0; j < nv; j++) {
        for (s = 0; s < p->nslab; s++)
            if ((rc = bwd_z_start(p, yslot(j), s, in + (size_t)j * in_stride, op[2])))
                return rc;
        for (s = 0; j > 0 && s < p->nslab; s++)
            if ((rc = bwd_finish(p, j - 1, s, out, out_stride, yskip)))
                return rc;
    }
    for (s = 0; s < p->nslab; s++)
        if ((rc = bwd_finish(p, nv - 1, s, out, out_stride, yskip)))
            return rc;
    if (!x_ahead(p))
        return P3DFFT_OK;
    return bwd_x_finish(p, xslot(p, nv - 1), out + (size_t)(nv - 1) * out_stride);
}

int p3_warmup(p3_t *p)
{
    /* Fourier transforms only: most codes never ask for the cosine or sine
     * transform, whose plans are made (on scratch arrays) by the first
     * transform that uses them. So are, where FFT-x and FFT-y are fused
     * (p3_xy_fused), the plans of FFT-x alone that an op string with 'n'
     * along Y needs. */
    static const p3_op_t fourier[3] = {P3_OP_FFT, P3_OP_FFT, P3_OP_FFT};
    size_t nr = (size_t)p->nx * p->jisize * p->kjsize, nc = (size_t)p->iisize * p->jjsize * p->nz;
    double *r = fftw_alloc_real(nr > 0 ? nr : 1);
    fftw_complex *c = fftw_alloc_complex(nc > 0 ? nc : 1);
    int rc;

    /* Agreed: the transforms are collective. */
    rc = p3_agree(r == NULL || c == NULL
                      ? p3_fail(P3DFFT_ERR_NOMEM, "out of memory for the planning transform")
                      : p3_xs_need(p, 0),
                  p->comm);
    if (rc == P3DFFT_OK) {
        memset(r, 0, sizeof(double) * nr);
        rc = p3_forward(p, r, 0, c, 0, 1, fourier);
        if (rc == P3DFFT_OK)
            rc = p3_backward(p, c, 0, r, 0, 1, fourier);
        if (rc)
            p3_tr_drain(p);
        rc = p3_agree(rc, p->comm);
    }
    fftw_free(r);
    fftw_free(c);
    memset(p->timers, 0, sizeof(p->timers));
    return rc;
}
