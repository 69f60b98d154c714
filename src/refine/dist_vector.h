/*
 * Vectors of a distributed matrix where its rows live (src/refine/dist_vector.c): rank r holds rows
 * distm_first_col(r) .. distm_first_col(r + 1) - 1, the same range as its block columns, so
 * that refinement runs on every rank over its own rows: the residual by a product that sends
 * only the partial sums of rows held elsewhere, the corrections by the direct distributed solve.
 * All functions are collective over s->comm and agree on their outcome.
 */
#ifndef CANOPY_DIST_VECTOR_H
#define CANOPY_DIST_VECTOR_H

#include "solver/solver.h"

/** How the user's rows (any layout: nloc rows per rank) map onto the block rows, both ways. */
typedef struct distv_plan {
    cint n, c0, nl;       /* this rank's block rows: c0 .. c0 + nl - 1 */
    cint nloc;            /* the user's rows here */
    int64_t *scnt, *rcnt; /* [P] rows sent to / received from each rank (user layout -> blocks) */
    cint *sorder;         /* [nloc] the user's positions in send order (grouped by owner) */
    cint *ridx;           /* [nl] the local block row of each received row, in arrival order */
} distv_plan;

/** The plan for the user's rows (rows[0..nloc), 0-based): every row must be on exactly one rank
 * (a row given twice or missing is an agreed error naming it). */
canopy_status distv_plan_build(canopy_solver *s, cint nloc, const cint *rows, distv_plan *p);
void distv_plan_free(distv_plan *p);

/** out (nl x nrhs, leading dimension nl) = the user's v (nloc x nrhs, leading dimension ld). */
canopy_status distv_to_blocks(canopy_solver *s, const distv_plan *p, cint nrhs, const void *v, cint ld, void *out);
/** The reverse: the user's v = in (nl x nrhs, leading dimension nl). */
canopy_status distv_from_blocks(canopy_solver *s, const distv_plan *p, cint nrhs, const void *in, void *v, cint ld);

/** The rows of other ranks this rank's block columns touch, and the partial sums it receives. */
typedef struct distv_halo {
    int64_t *scnt, *rcnt; /* [P] partial sums sent to / received from each rank */
    cint *srow;           /* global rows whose partial sums go out, grouped by owner */
    cint *rrow;           /* local rows the arriving partial sums add to, in arrival order */
    double *X, *T;        /* n x nrhs workspaces of the product */
    cint nrhs;
} distv_halo;

canopy_status distv_halo_build(canopy_solver *s, cint nrhs, distv_halo *h);
void distv_halo_free(distv_halo *h);

/** y = alpha A x + beta y over this rank's block rows (x, y: nl x nrhs, leading dimension nl); with
 * s->trans, y = alpha A^T x + beta y. */
canopy_status distv_spmv(canopy_solver *s, distv_halo *h, cint nrhs, double alpha, const void *x, double beta,
                         void *y);

#endif
