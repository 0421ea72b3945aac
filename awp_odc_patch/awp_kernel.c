#include "awp_kernel.h"

#include <math.h>

/* 4th-order staggered difference coefficients (distance 1/2 and 3/2). */
#define C1 (9.0f / 8.0f)
#define C2 (-1.0f / 24.0f)

/* The difference of a centred at p along stride s, for a quantity whose
 * samples at p + s/2 and p - s/2 sit at indices p + fwd and p + fwd - s
 * (fwd = s or 0): the staggering of the two positions involved. */
#define D4(a, p, s, fwd) \
    (C1 * ((a)[(p) + (fwd)] - (a)[(p) + (fwd) - (s)]) + \
     C2 * ((a)[(p) + (fwd) + (s)] - (a)[(p) + (fwd) - 2 * (s)]))

/* The loops in 16-byte vectors (what a build for any x86-64 has) and, where
 * the CPU has AVX2, in 32-byte ones, chosen when the program loads: 0.65-0.84x
 * the time of a step on the AMD EPYC VM of README's "The kernel vectorized".
 * AVX2 brings no fused multiply-add (FMA is a flag of its own, and
 * -ffp-contract=off forbids contraction): the results are the same bit for
 * bit on either path. */
#if defined(__SANITIZE_THREAD__)
#define TSAN_BUILD 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer) /* clang's way to say it */
#define TSAN_BUILD 1
#endif
#endif
/* Not under ThreadSanitizer: it instruments the clones' resolver, which the
 * loader runs while it relocates the program, before the sanitizer has
 * started (SIGSEGV in awp_velocity_box[resolver] from _dl_relocate_object,
 * GCC 12). */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(TSAN_BUILD)
#define VECTOR_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define VECTOR_CLONES
#endif

/* Loops over box b: i, j, then the fastest index k, with p the offset of
 * (i, j, k) and damp the sponge factor of the point. ivdep: a loop writes
 * only the point p of its own fields and reads the others', which GCC cannot
 * prove from the restrict of locals: even at -O3 it vectorized three of the
 * seven loops after versioning them for aliasing, not the velocities' nor
 * the normal stresses' (each needed more than its 10 run-time checks). Each
 * point's arithmetic is the same, in the same order, in the vector body as
 * in the scalar remainder (no contraction: -ffp-contract=off), so the
 * bitwise equality of any decomposition holds. */
#define FOR_BOX(g, sp, b, ...)                                                     \
    do {                                                                           \
        int i_, j_, k_;                                                            \
        for (i_ = (b)->lo[0]; i_ < (b)->hi[0]; i_++)                               \
            for (j_ = (b)->lo[1]; j_ < (b)->hi[1]; j_++) {                         \
                const size_t row_ = awp_at(g, i_, j_, 0);                          \
                const float dxy_ = (sp)->d[0][i_] * (sp)->d[1][j_];                \
                const float *restrict dz_ = (sp)->d[2];                            \
                _Pragma("GCC ivdep")                                               \
                for (k_ = (b)->lo[2]; k_ < (b)->hi[2]; k_++) {                     \
                    const size_t p = row_ + (size_t)k_;                            \
                    const float damp = dxy_ * dz_[k_];                             \
                    __VA_ARGS__                                                    \
                }                                                                  \
            }                                                                      \
    } while (0)

static int empty(const awp_box_t *b)
{
    return b->lo[0] >= b->hi[0] || b->lo[1] >= b->hi[1] || b->lo[2] >= b->hi[2];
}

/* Positions (z down): u1 (i, j-1/2, k+1/2), v1 (i+1/2, j, k+1/2), w1 (i+1/2,
 * j-1/2, k); xx, yy, zz (i+1/2, j-1/2, k+1/2), xy (i, j, k+1/2), xz (i, j-1/2,
 * k), yz (i+1/2, j, k). Each D4 below picks the index offset that puts the two
 * nearest samples at +-1/2 around the updated position. */
VECTOR_CLONES
void awp_velocity_box(const awp_grid_t *g, awp_wave_t *w, const awp_coef_t *co,
                      const awp_sponge_t *sp, awp_field_t c, const awp_box_t *b)
{
    const ptrdiff_t si = (ptrdiff_t)g->si, sj = (ptrdiff_t)g->sj;
    const float *restrict xx = w->f[AWP_XX], *restrict yy = w->f[AWP_YY];
    const float *restrict zz = w->f[AWP_ZZ], *restrict xy = w->f[AWP_XY];
    const float *restrict xz = w->f[AWP_XZ], *restrict yz = w->f[AWP_YZ];
    float *restrict v = w->f[c];
    const float *restrict bu = co->c[AWP_C_U1 + (c - AWP_U1)];

    if (empty(b))
        return;
    switch (c) {
    case AWP_U1:
        FOR_BOX(g, sp, b, {
            v[p] = (v[p] + bu[p] * (D4(xx, p, si, 0) + D4(xy, p, sj, 0) + D4(xz, p, 1, 1))) *
                   damp;
        });
        break;
    case AWP_V1:
        FOR_BOX(g, sp, b, {
            v[p] = (v[p] + bu[p] * (D4(xy, p, si, si) + D4(yy, p, sj, sj) + D4(yz, p, 1, 1))) *
                   damp;
        });
        break;
    default:
        FOR_BOX(g, sp, b, {
            v[p] = (v[p] + bu[p] * (D4(xz, p, si, si) + D4(yz, p, sj, 0) + D4(zz, p, 1, 0))) *
                   damp;
        });
        break;
    }
}

VECTOR_CLONES
void awp_stress_box(const awp_grid_t *g, awp_wave_t *w, const awp_coef_t *co,
                    const awp_sponge_t *sp, awp_sgroup_t s, const awp_box_t *b)
{
    const ptrdiff_t si = (ptrdiff_t)g->si, sj = (ptrdiff_t)g->sj;
    const float *restrict u = w->f[AWP_U1], *restrict v = w->f[AWP_V1];
    const float *restrict ww = w->f[AWP_W1];

    if (empty(b))
        return;
    switch (s) {
    case AWP_S_NORMAL: {
        float *restrict xx = w->f[AWP_XX], *restrict yy = w->f[AWP_YY];
        float *restrict zz = w->f[AWP_ZZ];
        const float *restrict lam = co->c[AWP_C_LAM], *restrict mu = co->c[AWP_C_MU];
        FOR_BOX(g, sp, b, {
            const float ux = D4(u, p, si, si), vy = D4(v, p, sj, 0), wz = D4(ww, p, 1, 1);
            const float ltr = lam[p] * (ux + vy + wz), mu2 = mu[p] + mu[p];
            xx[p] = (xx[p] + ltr + mu2 * ux) * damp;
            yy[p] = (yy[p] + ltr + mu2 * vy) * damp;
            zz[p] = (zz[p] + ltr + mu2 * wz) * damp;
        });
        break;
    }
    case AWP_S_XY: {
        float *restrict xy = w->f[AWP_XY];
        const float *restrict mu = co->c[AWP_C_XY];
        FOR_BOX(g, sp, b, {
            xy[p] = (xy[p] + mu[p] * (D4(u, p, sj, sj) + D4(v, p, si, 0))) * damp;
        });
        break;
    }
    case AWP_S_XZ: {
        float *restrict xz = w->f[AWP_XZ];
        const float *restrict mu = co->c[AWP_C_XZ];
        FOR_BOX(g, sp, b, {
            xz[p] = (xz[p] + mu[p] * (D4(u, p, 1, 0) + D4(ww, p, si, 0))) * damp;
        });
        break;
    }
    default: {
        float *restrict yz = w->f[AWP_YZ];
        const float *restrict mu = co->c[AWP_C_YZ];
        FOR_BOX(g, sp, b, {
            yz[p] = (yz[p] + mu[p] * (D4(v, p, 1, 0) + D4(ww, p, sj, sj))) * damp;
        });
        break;
    }
    }
}

double awp_courant_limit(void)
{
    /* von Neumann for leapfrog: vp dt |D| / 2 < 1, with |D| the largest
     * symbol of the differences: 2 (|c1| + |c2|) / h per axis at the Nyquist
     * wavenumber, the three axes in quadrature along the diagonal */
    return 1.0 / (sqrt(3.0) * (fabs(C1) + fabs(C2)));
}

int awp_sgroup_fields(awp_sgroup_t s, awp_field_t f[3])
{
    switch (s) {
    case AWP_S_NORMAL:
        f[0] = AWP_XX, f[1] = AWP_YY, f[2] = AWP_ZZ;
        return 3;
    case AWP_S_XY:
        f[0] = AWP_XY;
        return 1;
    case AWP_S_XZ:
        f[0] = AWP_XZ;
        return 1;
    default:
        f[0] = AWP_YZ;
        return 1;
    }
}
