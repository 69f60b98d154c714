/* Iterative refinement and backward errors, on top of the factors held by the solver. */
#ifndef CANOPY_REFINE_H
#define CANOPY_REFINE_H

#include "solver/solver.h"

/**
 * Normwise backward error of each column, max over columns:
 * ||b - A x||_inf / (||A||_inf ||x||_inf + ||b||_inf). @p r receives b - A x (n x nrhs, ld n).
 */
double refine_backward_error(const canopy_csc *A, double anorm, cint nrhs, const void *b, cint ldb,
                             const void *x, cint ldx, void *r);


/** Solve with the factors in the scaled system, b in A's numbering (rank 0). */
canopy_status refine_apply_inverse(canopy_solver *s, cint nrhs, void *b, cint ldb);

/** Refinement loop of canopy_refine (rank 0). */
canopy_status refine_run(canopy_solver *s, cint nrhs, const void *b, cint ldb, void *x, cint ldx);

/**
 * canopy_refine / canopy_refine_distributed on a distributed matrix: the user's rows (rows[0..nloc)
 * of b and x on this rank) move to the ranks holding those block columns, every rank refines its
 * own rows (residuals by distv_spmv, corrections by solve_direct, norms and dot products
 * reduced), and x moves back. Collective; the arguments are checked already.
 */
canopy_status refine_dist(canopy_solver *s, cint nrhs, cint nloc, const cint *rows, const void *b, cint ldb,
                              void *x, cint ldx);

#endif
