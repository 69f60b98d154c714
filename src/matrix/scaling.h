/*
 * Matching and scaling applied before the analysis: the solver factorizes
 *     As = Dr * P * A * Dc
 * where P is a row permutation that puts large entries on the diagonal (maximum-product
 * matching, in the spirit of MC64) and Dr, Dc are diagonal scalings. Symmetric kinds use a
 * symmetric scaling only (Dr = Dc, P = I) so that As stays symmetric.
 */
#ifndef CANOPY_SCALING_H
#define CANOPY_SCALING_H

#include <stdbool.h>
#include "base/common.h"

typedef struct scaling {
    cint n;
    double *row;        /**< Dr, NULL = identity */
    double *col;        /**< Dc, NULL = identity */
    cint *row_perm;     /**< row i of A becomes row row_perm[i] of P*A; NULL = identity */
    int structurally_singular; /**< set when no perfect matching exists */
    int unscaled_values;       /**< set when the values allow no scaling (a row or column of stored zeros,
                                    no perfect matching on the nonzero entries) while the pattern does:
                                    the identity is used */
} scaling;

/**
 * Compute the scaling of A (internal full storage) for @p mode and @p kind
 * (CANOPY_SCALING_AUTO: matching + scaling for GENERAL, symmetric matching-based scaling for
 * SYMMETRIC/HERMITIAN, none for SPD). Returns CANOPY_ERR_SINGULAR (structurally singular: the message
 * names a row or column without any stored entry, or says how many rows could not be matched) when
 * the pattern has no perfect matching. Values are not judged: when stored zeros leave a line
 * without a nonzero, or the nonzero entries have no perfect matching, the scaling is the identity
 * and sc->unscaled_values is set (the numeric factorization meets the singularity).
 */
canopy_status scaling_compute(const canopy_csc *A, canopy_scaling mode, canopy_matrix_kind kind,
                              scaling *sc, canopy_err *err);

/**
 * The reductions that let the equilibration run on a matrix held in block columns over ranks
 * (src/matrix/dist_matrix.c): every rank passes its columns (the others empty) and gets the same
 * vectors as scaling_compute of the whole matrix. Both are collective over the ranks.
 */
typedef struct scaling_reduce {
    bool (*agree)(void *ctx, canopy_err *err); /* false when some rank failed (then every rank) */
    bool (*max)(void *ctx, double *v, cint n); /* v <- the elementwise maximum over the ranks */
    void *ctx;
} scaling_reduce;

/**
 * scaling_compute for CANOPY_SCALING_NONE or CANOPY_SCALING_EQUILIBRATE (Ruiz) of the matrix
 * whose columns are spread over the ranks, through @p red: the same vectors, and the same
 * structurally-singular messages, on every rank.
 */
canopy_status scaling_equilibrate_reduced(const canopy_csc *A, canopy_scaling mode, canopy_matrix_kind kind,
                                          const scaling_reduce *red, scaling *sc, canopy_err *err);

/** As = Dr P A Dc (full storage, sorted, base 0). As may be allocated already with A's pattern size. */
canopy_status scaling_apply(const canopy_csc *A, const scaling *sc, canopy_csc *As, canopy_err *err);

/**
 * b <- Dr P b (right-hand sides into the scaled system), nrhs columns of leading dimension ldb,
 * real or complex per @p arith; @p tmp has room for n scalars of that arith.
 */
void scaling_rhs(const scaling *sc, canopy_arith arith, cint nrhs, void *b, cint ldb, void *tmp);
/** x <- Dc x (solution of the scaled system back to the solution of A x = b). */
void scaling_solution(const scaling *sc, canopy_arith arith, cint nrhs, void *x, cint ldx);

/*
 * The transposed system: As = Dr P A Dc gives A^T = Dc^-1 As^T Dr^-1 P, so A^T x = b is solved by
 * As^T y = Dc b and x = P^T Dr y (the same for A^H: the scalings are real).
 */
/** b <- Dc b (right-hand sides of A^T x = b into the scaled system). */
void scaling_rhs_t(const scaling *sc, canopy_arith arith, cint nrhs, void *b, cint ldb);
/** x <- P^T Dr x (solution of As^T y = Dc b back to that of A^T x = b); @p tmp holds n scalars. */
void scaling_solution_t(const scaling *sc, canopy_arith arith, cint nrhs, void *x, cint ldx, void *tmp);

void scaling_free(scaling *sc);

/** true when the scaling changes nothing (no vectors, no permutation). */
static inline bool scaling_identity(const scaling *sc)
{
    return sc->row == NULL && sc->col == NULL && sc->row_perm == NULL;
}

#endif
