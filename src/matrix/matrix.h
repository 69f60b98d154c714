/*
 * Internal sparse-matrix helpers. Inside the library a matrix is a canopy_csc with base 0, row
 * indices sorted increasingly in each column, no duplicates, and FULL storage (both triangles for
 * symmetric kinds). matrix_import() turns any user/reader matrix into that form.
 */
#ifndef CANOPY_MATRIX_H
#define CANOPY_MATRIX_H

#include "base/common.h"

/** Number of stored entries. */
static inline int64_t matrix_nnz(const canopy_csc *A) { return (int64_t)A->colptr[A->n]; }

/**
 * Check @p in (square, colptr monotone, indices in range, no duplicates, finite values, triangle
 * consistent with its kind, numerically symmetric when both triangles are given for a symmetric
 * kind) and build @p out: base 0, sorted, full storage, arith and kind copied, triangle BOTH.
 * Errors name the column and row ("column 3: row index 7 out of range 1..5").
 */
canopy_status matrix_import(const canopy_csc *in, canopy_csc *out, canopy_err *err);

/**
 * Replace the values of @p A (internal form) by @p values given in the layout of the original
 * matrix @p layout (same pattern as was imported). Checks finiteness.
 */
canopy_status matrix_update_values(const canopy_csc *layout, const void *values, canopy_csc *A, canopy_err *err);

/** Pattern of A + A^T without the diagonal (the adjacency graph), sorted; values NULL. */
canopy_status matrix_graph(const canopy_csc *A, canopy_csc *G, canopy_err *err);

/** y = alpha * A x + beta * y for nrhs columns (real or complex, full storage). */
void matrix_spmv(const canopy_csc *A, cint nrhs, double alpha, const void *x, cint ldx,
                 double beta, void *y, cint ldy);

/** y = alpha * A^T x + beta * y (no conjugation; full storage). */
void matrix_spmv_t(const canopy_csc *A, cint nrhs, double alpha, const void *x, cint ldx, double beta, void *y,
                   cint ldy);

/** max_j sum_i |a_ij| (one-norm: the infinity norm of A^T). */
double matrix_norm_one(const canopy_csc *A);

/** max_i sum_j |a_ij| (infinity norm). */
double matrix_norm_inf(const canopy_csc *A);

/** max |a_ij|. */
double matrix_abs_max(const canopy_csc *A);

/** Deep copy. */
canopy_status matrix_copy(const canopy_csc *A, canopy_csc *B, canopy_err *err);

/** Free the arrays (canopy_free) and zero the descriptor. Same as canopy_csc_free. */
void matrix_free(canopy_csc *A);

/** true (and the first position, 0-based) if v (n x nrhs, leading dimension ld) holds a NaN or Inf. */
bool matrix_find_nonfinite(canopy_arith arith, cint n, cint nrhs, const void *v, cint ld, cint *row, cint *col);

#endif
