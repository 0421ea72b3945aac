/* The faces of a field that the MPI modes (two-sided, rma) pack and unpack
 * themselves: per face, the neighbour, the 2 boundary planes sent and the 2
 * ghost planes filled; their tags (two-sided, awp_bench's empty). */
#ifndef EXCHANGE_FACES_H
#define EXCHANGE_FACES_H

#include "awp_exchange.h"

typedef struct {
    int peer;      /* MPI_PROC_NULL: no neighbour, or an axis f does not cross */
    awp_box_t inner, ghost;
    size_t count;  /* elements of either box */
} awp_face_t;

/* The 6 faces of field f, indexed 2 d + (side > 0); face i of a rank
 * receives what its peer sends through face i ^ 1. */
void awp_faces_init(const awp_grid_t *g, awp_field_t f, awp_face_t face[6]);

/* The tag of a message for face i of its receiver: one per field and face,
 * so that messages of several fields in flight never match the wrong one. */
static inline int awp_face_tag(awp_field_t f, int i)
{
    return (int)f * 6 + i;
}

void awp_face_pack(const awp_grid_t *g, const float *field, const awp_face_t *fc, float *buf);
void awp_face_unpack(const awp_grid_t *g, float *field, const awp_face_t *fc, const float *buf);

#endif
