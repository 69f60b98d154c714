/*
 * Triangular solves with a factor held on a 2D block-cyclic grid by grid_dense_factor_d (issue 31:
 * the shared top's solve). Real double (_d) and complex double (_z, with grid_dense_factor_z's
 * kinds: LL^T's backward solve uses L^H, LDL^T's L^T). The factor, ipiv and dsub are exactly what
 * grid_dense_factor_d left (see grid_dense.h for their storage and the product-form pivots).
 *
 * Right-hand sides (nrhs columns of n rows): the row tiles of nb rows are on grid column 0, row
 * tile i on grid row i mod pr, i.e. on rank (i mod pr) * pc. Rank (r, 0) holds the rows of its
 * tiles i = r, r + pr, ... in increasing order (grid_dense_count(n, nb, pr, r) rows, the same rows
 * as its factor array), column-major with a leading dimension of the caller's choice
 * (>= grid_dense_rhs_ld); the ranks of the other grid columns hold no right-hand side.
 *
 * Forward (grid_dense_forward_d): for each step k (columns [k nb, min((k+1) nb, m))) the step's
 * interchanges are applied to its rows, they are solved with L's diagonal tile, and the rows below
 * (up to n) get b -= L y; LDL^T then solves with D (1x1 and 2x2 pivots) on the step's rows. On
 * return rows [0, m) hold y1 = L11^-1 P b1 (LDL^T: D^-1 L11^-1 P b1) and, for m < n, rows [m, n)
 * hold b2 - L21 y1: what a front passes up the tree.
 * Backward (grid_dense_backward_d): rows [m, n) hold the trailing solution x2 (input, unchanged);
 * rows [0, m) go from y1 to x1 = U11^-1 (y1 - U12 x2) (U = L^T for LL^T and LDL^T), the
 * symmetric interchanges applied back (LDL^T): the front's part of the backward solve.
 *
 * Messages: each step's right-hand side tile is summed along a grid row (forward, LU backward) or
 * down a grid column (symmetric backward) onto the diagonal tile's owner, which solves it and
 * broadcasts the solution down its grid column (forward, LU backward) or along its grid row
 * (symmetric backward) to the ranks whose tiles use it, and to rank (i mod pr, 0) that stores it.
 * Every broadcast and sum follows comm/tree's binary tree over only the ranks concerned. Tags
 * [g->tag, g->tag + grid_dense_solve_ntags(g)) of g->comm are used (the factorization's may be
 * reused once it has returned). Every buffer is allocated first and the grid agrees that every
 * rank could (comm_agree): the same error everywhere, no rank waiting for another. All
 * ranks of the grid take part in the same messages' order, so blocking sends cannot deadlock.
 */
#ifndef CANOPY_GRID_DENSE_SOLVE_H
#define CANOPY_GRID_DENSE_SOLVE_H

#include "numeric/grid_dense.h"

/** Tags a solve uses from g->tag on. */
int grid_dense_solve_ntags(const grid_dense *g);

/** Rank (in g->comm) holding global row @p gi of the right-hand sides: (row tile mod pr) * pc. */
int grid_dense_rhs_owner(const grid_dense *g, cint gi);

/** Rows of the right-hand sides held by @p rank: grid_dense_count(n, nb, pr, rank / pc) on grid
 * column 0, 0 elsewhere. */
cint grid_dense_rhs_rows(const grid_dense *g, int rank);

/** Smallest leading dimension of @p rank's right-hand sides: its rows, at least 1. */
cint grid_dense_rhs_ld(const grid_dense *g, int rank);

/** Local row of global row @p gi in its owner's array (grid_dense_rhs_owner). */
cint grid_dense_rhs_local_row(const grid_dense *g, cint gi);

/**
 * Collective over g->comm: the n x nrhs matrix @p B (leading dimension @p ldb, read on @p root
 * only) into every rank's @p local (leading dimension @p ld). Agreed.
 */
canopy_status grid_dense_rhs_scatter_d(const grid_dense *g, int root, const double *B, cint ldb, cint nrhs,
                                       double *local, cint ld, canopy_err *err);

/** The reverse: every rank's @p local into @p B (written on @p root only). Agreed. */
canopy_status grid_dense_rhs_gather_d(const grid_dense *g, int root, const double *local, cint ld, cint nrhs,
                                      double *B, cint ldb, canopy_err *err);

/**
 * Collective over g->comm: the forward solve (and LDL^T's D solve) of the first g->m columns'
 * factor in @p factor (grid_dense_factor_d's local array, unchanged) on the right-hand sides
 * @p rhs (leading dimension @p ld), in place. @p ipiv (LDL^T, LU) and @p dsub (LDL^T) as the
 * factorization returned them. Returns the agreed CANOPY_SUCCESS, CANOPY_ERR_NOMEM,
 * CANOPY_ERR_ARGUMENT, CANOPY_ERR_UNSUPPORTED, CANOPY_ERR_TOO_LARGE or CANOPY_ERR_MPI.
 */
canopy_status grid_dense_forward_d(const grid_dense *g, const double *factor, const cint *ipiv, const double *dsub,
                                   cint nrhs, double *rhs, cint ld, canopy_err *err);

/** Collective: the backward solve (rows [m, n) of @p rhs are x2, read only); as grid_dense_forward_d. */
canopy_status grid_dense_backward_d(const grid_dense *g, const double *factor, const cint *ipiv, const double *dsub,
                                    cint nrhs, double *rhs, cint ld, canopy_err *err);

/** Collective: forward then backward, the whole solve A x = b in place; g->m must be g->n. */
canopy_status grid_dense_solve_d(const grid_dense *g, const double *factor, const cint *ipiv, const double *dsub,
                                 cint nrhs, double *rhs, cint ld, canopy_err *err);

/** The complex double variants (a factor of grid_dense_factor_z); as the _d ones. */
canopy_status grid_dense_rhs_scatter_z(const grid_dense *g, int root, const double _Complex *B, cint ldb, cint nrhs,
                                       double _Complex *local, cint ld, canopy_err *err);
canopy_status grid_dense_rhs_gather_z(const grid_dense *g, int root, const double _Complex *local, cint ld, cint nrhs,
                                      double _Complex *B, cint ldb, canopy_err *err);
canopy_status grid_dense_forward_z(const grid_dense *g, const double _Complex *factor, const cint *ipiv,
                                   const double _Complex *dsub, cint nrhs, double _Complex *rhs, cint ld,
                                   canopy_err *err);
canopy_status grid_dense_backward_z(const grid_dense *g, const double _Complex *factor, const cint *ipiv,
                                    const double _Complex *dsub, cint nrhs, double _Complex *rhs, cint ld,
                                    canopy_err *err);
canopy_status grid_dense_solve_z(const grid_dense *g, const double _Complex *factor, const cint *ipiv,
                                 const double _Complex *dsub, cint nrhs, double _Complex *rhs, cint ld,
                                 canopy_err *err);

#endif
