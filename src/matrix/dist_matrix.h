/*
 * The matrix of a distributed input on several ranks: each rank holds a block of columns of the
 * assembled matrix (internal form: base 0, sorted, full storage), rank r the columns
 * distm_first_col(r) .. distm_first_col(r + 1) - 1, as a canopy_csc of all n columns whose other
 * columns are empty. No rank ever holds the whole matrix, except where a step documented below
 * still gathers it (the matching scaling, and the pattern for the sequential SCOTCH ordering).
 *
 * Owns struct api_dist (the layout of the pieces the user gave, to map later values). All
 * functions are collective over s->comm and agree on their outcome.
 */
#ifndef CANOPY_DIST_MATRIX_H
#define CANOPY_DIST_MATRIX_H

#include "solver/solver.h"

/** First column of rank @p r of @p P (r = P gives n). */
cint distm_first_col(cint n, int P, int r);

/** The rank whose block columns hold column @p j. */
int distm_col_owner(cint n, int P, cint j);

/** true when the solver's matrix lives in block columns over several ranks. */
bool distm_active(const canopy_solver *s);

/**
 * Send every entry of this rank's checked piece @p A (and, for a symmetric kind given by one
 * triangle, its mirror) to the owner of its column, sum what arrives more than once, check
 * symmetry when both triangles are given and the diagonal of a Hermitian matrix; the result
 * replaces s->A on every rank. *nnz_out: entries of the assembled matrix on all ranks.
 */
canopy_status distm_assemble(canopy_solver *s, const canopy_dist_csc *A, int64_t *nnz_out);

/** New values in the layout given to distm_assemble (this rank's piece): s->A's values are replaced.
 * Collective; s->err may hold the caller's failed checks (nothing is sent then): they are agreed
 * with the buffers' allocation: a negative return is that agreed failure, the same on every rank.
 * A failure of the exchange itself is left in s->err (return CANOPY_SUCCESS) for the caller's
 * next agreement. */
canopy_status distm_update(canopy_solver *s, const void *values);

/** Entries of the piece this rank gave (the length of its values). */
int64_t distm_piece_entries(const canopy_solver *s);

/** Gather the block columns @p local of every rank into @p full on rank 0 (values too when
 * @p values, else the pattern only). Other ranks' @p full is left empty. */
canopy_status distm_gather(canopy_solver *s, const canopy_csc *local, bool values, canopy_csc *full);

/** This rank's slice of the graph of local + local^T over the ranks (collective): for its block
 *  columns c0..c1-1, *vert (c1 - c0 + 1 offsets from 0) and *edge (global rows, sorted, no
 *  diagonal), the layout matrix_graph gives and PT-SCOTCH takes; canopy_free both. */
canopy_status distm_graph_slice(canopy_solver *s, const canopy_csc *local, cint **vert, cint **edge, cint *nedge);

/** ||M||_inf and max |m_ij| of the matrix whose block columns are @p local, on every rank. */
double distm_norm_inf(canopy_solver *s, const canopy_csc *local);
double distm_abs_max(canopy_solver *s, const canopy_csc *local);

/**
 * y = alpha A x + beta y on rank 0 (x, y: n x nrhs on rank 0, ignored elsewhere): x goes to every
 * rank, each multiplies by its columns, the products are summed on rank 0. With s->trans (the same
 * on every rank), y = alpha A^T x + beta y.
 */
canopy_status distm_spmv(canopy_solver *s, cint nrhs, double alpha, const void *x, cint ldx, double beta, void *y,
                         cint ldy);

/**
 * The scaling of the analysis on every rank (s->sc replicated): none needs nothing; the matching
 * and equilibration scalings gather the matrix on rank 0 (they are sequential algorithms there),
 * compute it, and broadcast the vectors.
 */
canopy_status distm_scaling(canopy_solver *s, canopy_scaling mode, canopy_matrix_kind kind);

/** Release what src/matrix/dist_matrix.c keeps for a distributed matrix (NULL-safe). */
void api_dist_free(canopy_solver *s);

#endif
