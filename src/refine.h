/* Iterative refinement and backward errors, on top of the factors held by the solver. */
#ifndef CANOPY_REFINE_H
#define CANOPY_REFINE_H

#include "solver.h"

/**
 * Normwise backward error of each column, max over columns:
 * ||b - A x||_inf / (||A||_inf ||x||_inf + ||b||_inf). @p r receives b - A x (n x nrhs, ld n).
 */
double refine_backward_error(const canopy_csc *A, double anorm, cint nrhs, const void *b, cint ldb,
                             const void *x, cint ldx, void *r);

/** true (and the first position, 0-based) if v (n x nrhs, leading dimension ld) holds a NaN or Inf. */
bool refine_find_nonfinite(canopy_arith arith, cint n, cint nrhs, const void *v, cint ld, cint *row, cint *col);

/** Solve with the factors in the scaled system, b in A's numbering (rank 0). */
canopy_status refine_apply_inverse(canopy_solver *s, cint nrhs, void *b, cint ldb);

/** Refinement loop of canopy_refine (rank 0). */
canopy_status refine_run(canopy_solver *s, cint nrhs, const void *b, cint ldb, void *x, cint ldx);

#endif
