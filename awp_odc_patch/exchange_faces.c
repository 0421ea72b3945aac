#include "exchange_faces.h"

#include <string.h>

void awp_faces_init(const awp_grid_t *g, awp_field_t f, awp_face_t face[6])
{
    int d, s, e;
    for (d = 0; d < 3; d++)
        for (s = 0; s < 2; s++) {
            awp_face_t *fc = &face[2 * d + s];
            fc->peer = awp_exchange_axes(f) & (1u << d) ? awp_grid_neighbor(g, d, s ? 1 : -1)
                                                         : MPI_PROC_NULL;
            for (e = 0; e < 3; e++) {
                fc->inner.lo[e] = fc->ghost.lo[e] = 0;
                fc->inner.hi[e] = fc->ghost.hi[e] = g->n[e];
            }
            fc->inner.lo[d] = s ? g->n[d] - AWP_GHOST : 0;
            fc->inner.hi[d] = fc->inner.lo[d] + AWP_GHOST;
            fc->ghost.lo[d] = s ? g->n[d] : -AWP_GHOST;
            fc->ghost.hi[d] = fc->ghost.lo[d] + AWP_GHOST;
            fc->count = (size_t)AWP_GHOST * (size_t)g->n[0] * (size_t)g->n[1] *
                        (size_t)g->n[2] / (size_t)g->n[d];
        }
}

/* Copies box b of field to buf (to_buf) or back; rows along k are contiguous.
 * A face across k has rows of the ghost width: their length is given when
 * compiling, so that each is a move rather than a call to memcpy (as
 * offcoll's copy tasks do it for the offload mode). */
static void copy_box(const awp_grid_t *g, float *field, const awp_box_t *b, float *buf,
                     int to_buf)
{
    const size_t row = (size_t)(b->hi[2] - b->lo[2]);
    int i, j;
    for (i = b->lo[0]; i < b->hi[0]; i++)
        for (j = b->lo[1]; j < b->hi[1]; j++, buf += row) {
            float *p = field + awp_at(g, i, j, b->lo[2]);
            float *dst = to_buf ? buf : p;
            const float *src = to_buf ? p : buf;
            if (row == AWP_GHOST)
                memcpy(dst, src, AWP_GHOST * sizeof(float));
            else
                memcpy(dst, src, row * sizeof(float));
        }
}

void awp_face_pack(const awp_grid_t *g, const float *field, const awp_face_t *fc, float *buf)
{
    copy_box(g, (float *)field, &fc->inner, buf, 1);
}

void awp_face_unpack(const awp_grid_t *g, float *field, const awp_face_t *fc, const float *buf)
{
    copy_box(g, field, &fc->ghost, (float *)buf, 0);
}
