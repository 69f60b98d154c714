/*
 * Distributed input and right-hand sides: canopy_set_matrix_distributed,
 * canopy_update_values_distributed, canopy_solve_distributed and canopy_refine_distributed.
 *
 * Distributed data are checked where they live (every rank its own piece, the outcome agreed
 * with comm_agree before any further collective, so that a rank with bad input never leaves the
 * others waiting). A matrix given in pieces goes straight to the owners of its block columns,
 * where every entry given several times (by several ranks, or twice by one rank) is the sum of
 * what was given (src/matrix/dist_matrix.c); no rank gathers it. For refinement, right-hand sides and
 * iterates are gathered into n x nrhs arrays on rank 0 and the solution is scattered back to the
 * rows' owners; a plain distributed solve sends the rows straight to the owners of their cblks
 * and back (src/solve/solve_direct.c).
 *
 * Does not own the phases or the solver's copies of the matrix.
 */
#include "api/api.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "comm/agree.h"
#include "matrix/dist_matrix.h"
#include "matrix/matrix.h"
#include "refine/refine.h"
#include "solve/solve.h"

#if CANOPY_INT64
#define CINT_MPI MPI_INT64_T
#else
#define CINT_MPI MPI_INT32_T
#endif

/* A failed MPI call: recorded like any other failure (the default error handler aborts anyway). */
static bool mpi_ok(int rc, canopy_err *err, const char *what)
{
    if (rc == MPI_SUCCESS) return true;
    canopy_err_set(err, CANOPY_ERR_MPI, "%s failed", what);
    return false;
}

/* MPI type of one value: a double, or a (re, im) pair. Free it with value_type_free. */
static bool value_type(int vsz, MPI_Datatype *t, canopy_err *err)
{
    *t = MPI_DOUBLE;
    if (vsz == 1) return true;
    if (!mpi_ok(MPI_Type_contiguous(2, MPI_DOUBLE, t), err, "MPI_Type_contiguous")) return false;
    return mpi_ok(MPI_Type_commit(t), err, "MPI_Type_commit");
}

static void value_type_free(int vsz, MPI_Datatype *t)
{
    if (vsz == 2 && *t != MPI_DATATYPE_NULL) MPI_Type_free(t);
}

/* MPI never reads a buffer of count 0, but some implementations check that it is not NULL. */
static double dummy_value[2];
static cint dummy_index;
#define NZ_VAL(p) ((p) != NULL ? (const void *)(p) : (const void *)dummy_value)
#define NZ_VALW(p) ((p) != NULL ? (void *)(p) : (void *)dummy_value)
#define NZ_IDX(p) ((p) != NULL ? (const void *)(p) : (const void *)&dummy_index)
#define NZ_IDXW(p) ((p) != NULL ? (void *)(p) : (void *)&dummy_index)

/* ---- canopy_set_matrix_distributed ------------------------------------------------------ */

static const char *tri_name(canopy_triangle t) { return t == CANOPY_TRIANGLE_LOWER ? "LOWER" : "UPPER"; }

/*
 * Check this rank's descriptor alone: sizes, enumerations, pointers, colptr. The entries are
 * looked at by check_entries, once every rank is known to describe the same matrix.
 */
static canopy_status check_piece(const canopy_dist_csc *A, int64_t *nnz_out, canopy_err *err)
{
    *nnz_out = 0;
    if (A == NULL) return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "canopy_set_matrix_distributed: NULL matrix descriptor");
    const cint n = A->n, b = A->base, nc = A->ncols;
    if (n < 1) return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "matrix order n = %" CINT_FMT ", must be at least 1", n);
    if (b != 0 && b != 1) return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "index base %d, must be 0 or 1", A->base);
    if (A->arith == CANOPY_PATTERN)
        return canopy_err_set(err, CANOPY_ERR_MATRIX, "the matrix has no values (pattern only): the solver needs values");
    if (A->arith != CANOPY_REAL && A->arith != CANOPY_COMPLEX)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "unknown arithmetic %d", (int)A->arith);
    if ((int)A->kind < CANOPY_KIND_GENERAL || (int)A->kind > CANOPY_KIND_HERMITIAN)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "unknown matrix kind %d", (int)A->kind);
    const bool sym = A->kind != CANOPY_KIND_GENERAL;
    if (sym && ((int)A->triangle < CANOPY_TRIANGLE_BOTH || (int)A->triangle > CANOPY_TRIANGLE_UPPER))
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "unknown triangle %d", (int)A->triangle);
    if (nc < 0) return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "ncols = %" CINT_FMT " is negative", nc);
    if (nc == 0 && A->colptr == NULL) return CANOPY_SUCCESS; /* nothing held, nothing to point at */
    if (nc > 0 && A->cols == NULL) return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "cols is NULL with ncols = %" CINT_FMT, nc);
    if (A->colptr == NULL) return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "colptr is NULL with ncols = %" CINT_FMT, nc);
    if (A->colptr[0] != b)
        return canopy_err_set(err, CANOPY_ERR_MATRIX, "colptr[0] = %" CINT_FMT ", must equal the index base %d", A->colptr[0], A->base);
    for (cint k = 0; k < nc; k++)
        if (A->colptr[k + 1] < A->colptr[k])
            return canopy_err_set(err, CANOPY_ERR_MATRIX, "local column %" CINT_FMT ": colptr decreases (%" CINT_FMT " then %" CINT_FMT ")",
                                  k, A->colptr[k], A->colptr[k + 1]);
    const int64_t nnz = (int64_t)A->colptr[nc] - b;
    if (nnz > 0 && A->rowind == NULL) return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "rowind is NULL with %" PRId64 " entries", nnz);
    if (nnz > 0 && A->values == NULL) return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "values are NULL with %" PRId64 " entries", nnz);
    /* one MPI message carries each array (counts are int) */
    if (nnz > INT_MAX || nc > INT_MAX)
        return canopy_err_set(err, CANOPY_ERR_TOO_LARGE, "problem too large: %" PRId64 " entries in %" CINT_FMT
                              " columns on one rank exceed what one MPI message can carry (%d)", nnz, nc, INT_MAX);
    *nnz_out = nnz;
    return CANOPY_SUCCESS;
}

/* The entries of a piece that passed check_piece: indices in range, triangle, finite values.
 * Messages use the caller's index base and name the global column and the local one. */
static canopy_status check_entries(const canopy_dist_csc *A, canopy_err *err)
{
    const cint n = A->n, b = A->base, nc = A->ncols;
    if (nc == 0) return CANOPY_SUCCESS;
    const bool sym = A->kind != CANOPY_KIND_GENERAL;
    const canopy_triangle tri = sym ? A->triangle : CANOPY_TRIANGLE_BOTH;
    const int vsz = A->arith == CANOPY_COMPLEX ? 2 : 1;
    const double *v = A->values;
    for (cint k = 0; k < nc; k++) {
        const cint c = A->cols[k], j = c - b;
        if (j < 0 || j >= n)
            return canopy_err_set(err, CANOPY_ERR_MATRIX, "local column %" CINT_FMT ": global column index %" CINT_FMT
                                  " out of range %d..%" CINT_FMT, k, c, A->base, n - 1 + b);
        for (cint p = A->colptr[k] - b; p < A->colptr[k + 1] - b; p++) {
            const cint r = A->rowind[p], i = r - b;
            if (i < 0 || i >= n)
                return canopy_err_set(err, CANOPY_ERR_MATRIX, "column %" CINT_FMT " (local column %" CINT_FMT "): row index %"
                                      CINT_FMT " out of range %d..%" CINT_FMT, c, k, r, A->base, n - 1 + b);
            if ((tri == CANOPY_TRIANGLE_LOWER && i < j) || (tri == CANOPY_TRIANGLE_UPPER && i > j))
                return canopy_err_set(err, CANOPY_ERR_MATRIX, "column %" CINT_FMT " (local column %" CINT_FMT "): row %" CINT_FMT
                                      " is %s the diagonal but the triangle is %s", c, k, r, i < j ? "above" : "below", tri_name(tri));
            for (int q = 0; q < vsz; q++)
                if (!isfinite(v[(size_t)p * vsz + q]))
                    return canopy_err_set(err, CANOPY_ERR_MATRIX, "column %" CINT_FMT " (local column %" CINT_FMT "), row %" CINT_FMT
                                          ": value is not finite", c, k, r);
        }
    }
    return CANOPY_SUCCESS;
}

/*
 * n, base, kind, arith and triangle must be the same on every rank: one allreduce of the maxima
 * of (x, -x). Every rank takes part, a rank without a descriptor with neutral values; a mismatch
 * is recorded with the same message on every rank.
 */
static void check_same_descriptor(MPI_Comm comm, const canopy_dist_csc *A, canopy_err *err)
{
    enum { NF = 5 };
    static const char *const names[NF] = {"n", "base", "kind", "arith", "triangle"};
    int64_t mine[2 * NF], all[2 * NF];
    for (int f = 0; f < 2 * NF; f++) mine[f] = -INT64_MAX;
    if (A != NULL) {
        int64_t x[NF] = {(int64_t)A->n, A->base, (int64_t)A->kind, (int64_t)A->arith,
                         /* the triangle of a general matrix is ignored */
                         A->kind == CANOPY_KIND_GENERAL ? 0 : (int64_t)A->triangle};
        for (int f = 0; f < NF; f++) {
            mine[2 * f] = x[f];
            mine[2 * f + 1] = -x[f];
        }
    }
    if (!mpi_ok(MPI_Allreduce(mine, all, 2 * NF, MPI_INT64_T, MPI_MAX, comm), err, "MPI_Allreduce (matrix descriptor)"))
        return;
    for (int f = 0; f < NF; f++) {
        int64_t hi = all[2 * f], lo = -all[2 * f + 1];
        if (hi < lo) return; /* no rank gave a descriptor */
        if (hi != lo) {
            canopy_err_set(err, CANOPY_ERR_ARGUMENT, "%s differs across ranks (%" PRId64 " to %" PRId64
                           "): n, base, kind, arith and triangle must be the same on every rank", names[f], lo, hi);
            return;
        }
    }
}

static canopy_status set_matrix_distributed_call(canopy_solver *s, const canopy_dist_csc *A)
{
    if (s == NULL) return CANOPY_ERR_ARGUMENT;
    canopy_err_clear(&s->err);
    int64_t nnz = 0;
    check_piece(A, &nnz, &s->err);
    check_same_descriptor(s->comm, A, &s->err);
    /* only a piece of the agreed matrix is worth reading (a rank whose arith differs would read
     * its values with the wrong size) */
    if (s->err.status == CANOPY_SUCCESS) check_entries(A, &s->err);
    if (s->err.status == CANOPY_SUCCESS && A->arith == CANOPY_COMPLEX && A->kind == CANOPY_KIND_SPD)
        canopy_err_set(&s->err, CANOPY_ERR_ARGUMENT,
                       "a complex matrix is HERMITIAN (LL^H when positive definite) or SYMMETRIC, not SPD");
    /* every rank's piece checked: agree before anything moves */
    if (comm_agree(s->comm, &s->err) < 0) {
        api_matrix_reset(s);
        return s->err.status;
    }
    api_matrix_reset(s);
    /* the entries go straight to the owners of their columns (src/matrix/dist_matrix.c) */
    int64_t total = 0;
    if (distm_assemble(s, A, &total) == CANOPY_SUCCESS) {
        s->stats.n = A->n;
        s->stats.nnz = total;
    }
    return api_matrix_done(s);
}

static canopy_status update_values_distributed_call(canopy_solver *s, const void *values)
{
    if (s == NULL) return CANOPY_ERR_ARGUMENT;
    canopy_err_clear(&s->err);
    const int64_t nloc = distm_piece_entries(s);
    const int vsz = s->A.arith == CANOPY_COMPLEX ? 2 : 1;
    if (s->dist == NULL || s->phase < PHASE_MATRIX) {
        canopy_err_set(&s->err, CANOPY_ERR_PHASE, "canopy_update_values_distributed: no distributed matrix "
                       "(call canopy_set_matrix_distributed first)");
    } else if (nloc > 0 && values == NULL) {
        canopy_err_set(&s->err, CANOPY_ERR_ARGUMENT, "canopy_update_values_distributed: NULL values on a rank holding %"
                       PRId64 " entries", nloc);
    } else {
        const double *v = values;
        for (int64_t k = 0; k < nloc * vsz; k++)
            if (!isfinite(v[k])) {
                canopy_err_set(&s->err, CANOPY_ERR_MATRIX, "canopy_update_values_distributed: value %" PRId64
                               " of this rank (0-based, in the layout given to canopy_set_matrix_distributed) is not finite",
                               k / vsz);
                break;
            }
    }
    /* the presence of a distributed matrix is the same everywhere; the checks above are agreed
     * inside distm_update with its buffers, its exchange's outcome in api_values_changed */
    if (s->dist == NULL || s->phase < PHASE_MATRIX) return comm_agree(s->comm, &s->err);
    if (distm_update(s, values) < 0) return s->err.status; /* agreed: the factors stay valid */
    return api_values_changed(s);
}

/* ---- canopy_solve_distributed, canopy_refine_distributed --------------------------------- */

/* Local arguments of one distributed array (b or x): pointer, leading dimension, finiteness. */
static bool rhs_local_ok(canopy_err *err, const char *call, canopy_arith arith, cint nrhs, cint nloc,
                         const cint *rows, const void *v, cint ld, const char *name)
{
    if (nrhs == 0) return true;
    if (nloc > 0 && v == NULL)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "%s: %s is NULL with nloc = %" CINT_FMT, call, name, nloc), false;
    if (ld < CANOPY_MAX(nloc, 1))
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "%s: leading dimension of %s = %" CINT_FMT " < max(nloc, 1) = %"
                              CINT_FMT, call, name, ld, CANOPY_MAX(nloc, 1)), false;
    cint row, col;
    if (nloc > 0 && matrix_find_nonfinite(arith, nloc, nrhs, v, ld, &row, &col))
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "%s: %s(%" CINT_FMT ", %" CINT_FMT ") (local row %" CINT_FMT
                              ", 0-based) is NaN or Inf", call, name, rows[row], col, row), false;
    return true;
}

/* Where each rank's rows go, on rank 0 (with the gathered rows), and the per-chunk counts. */
typedef struct rhs_layout {
    int np;
    cint n;
    int vsz;
    MPI_Datatype vt;
    cint nloc;
    const cint *rows;
    int64_t *sizes;      /* rank 0: (nloc, nrhs) of each rank */
    int *nl, *off;       /* rank 0: rows of each rank and their start in grows */
    int *counts, *displs; /* rank 0: per-chunk counts in values */
    cint *grows;         /* rank 0: the gathered rows */
    double *pack;        /* nloc x chunk values, this rank */
    double *recv;        /* rank 0: n x chunk values */
    cint chunk;          /* right-hand sides per message (counts must fit an int) */
} rhs_layout;

/* Gather the nloc x nrhs array @p v (leading dimension ld) into the n x nrhs array @p full on rank 0. */
static bool rhs_gather(const rhs_layout *L, MPI_Comm comm, bool root, cint nrhs, const void *v, cint ld, double *full,
                       canopy_err *err)
{
    const double *src = v;
    const int vsz = L->vsz;
    for (cint c0 = 0; c0 < nrhs; c0 += L->chunk) {
        cint cc = CANOPY_MIN(L->chunk, nrhs - c0);
        for (cint c = 0; c < cc && L->nloc > 0; c++) /* no rows here: b may be NULL */
            memcpy(L->pack + ((size_t)c * L->nloc) * vsz, src + ((size_t)(c0 + c) * ld) * vsz,
                   (size_t)L->nloc * vsz * sizeof(double));
        if (root)
            for (int r = 0; r < L->np; r++) {
                L->counts[r] = (int)(L->nl[r] * (int64_t)cc);
                L->displs[r] = (int)(L->off[r] * (int64_t)cc);
            }
        if (!mpi_ok(MPI_Gatherv(NZ_VAL(L->pack), (int)(L->nloc * (int64_t)cc), L->vt, NZ_VALW(L->recv), L->counts, L->displs,
                                L->vt, 0, comm), err, "MPI_Gatherv (right-hand sides)"))
            return false;
        if (!root) continue;
        for (int r = 0; r < L->np; r++)
            for (cint c = 0; c < cc; c++)
                for (int k = 0; k < L->nl[r]; k++) {
                    size_t from = (size_t)L->displs[r] + (size_t)c * L->nl[r] + k;
                    size_t to = (size_t)(c0 + c) * L->n + L->grows[L->off[r] + k];
                    memcpy(full + to * vsz, L->recv + from * vsz, (size_t)vsz * sizeof(double));
                }
    }
    return true;
}

/* Scatter the n x nrhs array @p full of rank 0 back to the rows' owners, into @p v (leading dimension ld). */
static bool rhs_scatter(const rhs_layout *L, MPI_Comm comm, bool root, cint nrhs, const double *full, void *v, cint ld,
                        canopy_err *err)
{
    double *dst = v;
    const int vsz = L->vsz;
    for (cint c0 = 0; c0 < nrhs; c0 += L->chunk) {
        cint cc = CANOPY_MIN(L->chunk, nrhs - c0);
        if (root)
            for (int r = 0; r < L->np; r++) {
                L->counts[r] = (int)(L->nl[r] * (int64_t)cc);
                L->displs[r] = (int)(L->off[r] * (int64_t)cc);
                for (cint c = 0; c < cc; c++)
                    for (int k = 0; k < L->nl[r]; k++) {
                        size_t to = (size_t)L->displs[r] + (size_t)c * L->nl[r] + k;
                        size_t from = (size_t)(c0 + c) * L->n + L->grows[L->off[r] + k];
                        memcpy(L->recv + to * vsz, full + from * vsz, (size_t)vsz * sizeof(double));
                    }
            }
        if (!mpi_ok(MPI_Scatterv(NZ_VAL(L->recv), L->counts, L->displs, L->vt, NZ_VALW(L->pack), (int)(L->nloc * (int64_t)cc),
                                 L->vt, 0, comm), err, "MPI_Scatterv (solution)"))
            return false;
        for (cint c = 0; c < cc && L->nloc > 0; c++)
            memcpy(dst + ((size_t)(c0 + c) * ld) * vsz, L->pack + ((size_t)c * L->nloc) * vsz,
                   (size_t)L->nloc * vsz * sizeof(double));
    }
    return true;
}

/* Rank 0: every row 0..n-1 held by exactly one rank; the message names the first row that is not. */
static void check_rows(const rhs_layout *L, const char *call, canopy_err *err)
{
    int *owner = canopy_alloc((size_t)L->n, sizeof(int), "row owners", err);
    if (owner == NULL) return;
    for (cint i = 0; i < L->n; i++) owner[i] = -1;
    for (int r = 0; r < L->np; r++)
        for (int k = 0; k < L->nl[r]; k++) {
            cint i = L->grows[L->off[r] + k];
            if (owner[i] < 0) {
                owner[i] = r;
            } else {
                if (owner[i] == r)
                    canopy_err_set(err, CANOPY_ERR_ARGUMENT, "%s: row %" CINT_FMT " is given twice by rank %d"
                                   " (each row must be on exactly one rank)", call, i, r);
                else
                    canopy_err_set(err, CANOPY_ERR_ARGUMENT, "%s: row %" CINT_FMT " is given by rank %d and by rank %d"
                                   " (each row must be on exactly one rank)", call, i, owner[i], r);
                canopy_free(owner);
                return;
            }
        }
    for (cint i = 0; i < L->n; i++)
        if (owner[i] < 0) {
            canopy_err_set(err, CANOPY_ERR_ARGUMENT, "%s: row %" CINT_FMT " is given by no rank"
                           " (each row must be on exactly one rank)", call, i);
            break;
        }
    canopy_free(owner);
}

static void layout_free(rhs_layout *L)
{
    canopy_free(L->sizes);
    canopy_free(L->nl);
    canopy_free(L->off);
    canopy_free(L->counts);
    canopy_free(L->displs);
    canopy_free(L->grows);
    canopy_free(L->pack);
    canopy_free(L->recv);
    value_type_free(L->vsz, &L->vt);
}

/*
 * Both distributed solves. On several ranks, the solve sends the rows straight to the cblk owners
 * and back (solve_direct), and the refinement of a distributed matrix runs on every rank over
 * its own rows (refine_dist). Otherwise (one rank, or refining a centralized matrix): gather b
 * (and x) to rank 0, run the centralized call, scatter the result back.
 */
static canopy_status solve_dist(canopy_solver *s, int trans, bool refine, cint nrhs, cint nloc, const cint *rows,
                                void *b, cint ldb, void *x, cint ldx)
{
    if (s == NULL) return CANOPY_ERR_ARGUMENT;
    canopy_err_clear(&s->err);
    const char *call = refine ? (trans ? "canopy_refine_distributed_trans" : "canopy_refine_distributed")
                              : (trans ? "canopy_solve_distributed_trans" : "canopy_solve_distributed");
    const bool root = s->rank == 0;
    double *B = NULL, *X = NULL;
    rhs_layout L = {.np = s->nranks, .vt = MPI_DATATYPE_NULL, .nloc = nloc, .rows = rows};
    if (s->phase < PHASE_FACTORIZED) /* the same on every rank */
        canopy_err_set(&s->err, CANOPY_ERR_PHASE, "%s called before canopy_factorize", call);
    else
        api_factors_ok(s, PHASE_FACTORIZED, call);
    /* n, the arithmetic and the kind live on rank 0, and on every rank with a distributed
     * matrix (assembled the same everywhere; distm_active is the same on every rank) */
    const bool everywhere = distm_active(s) && s->phase >= PHASE_MATRIX;
    int64_t shape[3] = {(root || everywhere) && s->phase >= PHASE_MATRIX ? (int64_t)s->A.n : 0,
                        (root || everywhere) && s->phase >= PHASE_MATRIX ? (int64_t)s->A.arith : 0,
                        (root || everywhere) && s->phase >= PHASE_MATRIX ? (int64_t)s->A.kind : 0};
    if (!everywhere && !mpi_ok(MPI_Bcast(shape, 3, MPI_INT64_T, 0, s->comm), &s->err, "MPI_Bcast (matrix shape)"))
        return s->err.status;
    const cint n = (cint)shape[0];
    const canopy_arith arith = (canopy_arith)shape[1];
    const canopy_matrix_kind kind = (canopy_matrix_kind)shape[2];
    L.n = n;
    L.vsz = arith == CANOPY_COMPLEX ? 2 : 1;

    /* local arguments */
    if (s->err.status != CANOPY_SUCCESS) {
        /* phase error already recorded */
    } else if (trans != CANOPY_TRANS_NONE && trans != CANOPY_TRANS_T && trans != CANOPY_TRANS_H) {
        canopy_err_set(&s->err, CANOPY_ERR_ARGUMENT, "%s: trans = %d (expected CANOPY_TRANS_NONE, _T or _H)", call, trans);
    } else if (nrhs < 0) {
        canopy_err_set(&s->err, CANOPY_ERR_ARGUMENT, "%s: nrhs = %" CINT_FMT " is negative", call, nrhs);
    } else if (nloc < 0 || nloc > n) {
        canopy_err_set(&s->err, CANOPY_ERR_ARGUMENT, "%s: nloc = %" CINT_FMT " is out of range 0..n = %" CINT_FMT, call, nloc, n);
    } else if (n > INT_MAX) {
        canopy_err_set(&s->err, CANOPY_ERR_TOO_LARGE, "%s: n = %" CINT_FMT " rows are more than one MPI message can gather (%d)",
                       call, n, INT_MAX);
    } else if (nloc > 0 && rows == NULL) {
        canopy_err_set(&s->err, CANOPY_ERR_ARGUMENT, "%s: rows is NULL with nloc = %" CINT_FMT, call, nloc);
    } else {
        for (cint k = 0; k < nloc; k++)
            if (rows[k] < 0 || rows[k] >= n) {
                canopy_err_set(&s->err, CANOPY_ERR_ARGUMENT, "%s: rows[%" CINT_FMT "] = %" CINT_FMT " is out of range 0..%" CINT_FMT,
                               call, k, rows[k], n - 1);
                break;
            }
        if (s->err.status == CANOPY_SUCCESS && rhs_local_ok(&s->err, call, arith, nrhs, nloc, rows, b, ldb, "b") && refine &&
            rhs_local_ok(&s->err, call, arith, nrhs, nloc, rows, x, ldx, "x") && nrhs > 0 && nloc > 0 && b == x)
            canopy_err_set(&s->err, CANOPY_ERR_ARGUMENT, "%s: x and b must be different arrays", call);
    }
    if (s->err.status == CANOPY_SUCCESS) {
        /* counts of one message are ints: that many right-hand sides at a time */
        L.chunk = nrhs == 0 ? 1 : (cint)CANOPY_MIN((int64_t)nrhs, (int64_t)INT_MAX / CANOPY_MAX((int64_t)n, 1));
        L.pack = canopy_alloc((size_t)nloc * L.chunk + 1, (size_t)L.vsz * sizeof(double), "right-hand side buffer", &s->err);
        if (root) {
            L.sizes = canopy_alloc(2 * (size_t)L.np, sizeof(int64_t), "row counts", &s->err);
            L.nl = canopy_alloc((size_t)L.np, sizeof(int), "row counts", &s->err);
            L.off = canopy_alloc((size_t)L.np, sizeof(int), "row counts", &s->err);
            L.counts = canopy_alloc((size_t)L.np, sizeof(int), "row counts", &s->err);
            L.displs = canopy_alloc((size_t)L.np, sizeof(int), "row counts", &s->err);
        }
        if (s->err.status == CANOPY_SUCCESS) value_type(L.vsz, &L.vt, &s->err);
    }
    /* nrhs and trans, the same on every rank, checked with the agreement: their minima and
     * minus their maxima ride in its reduction */
    int64_t lo[4] = {nrhs, -(int64_t)nrhs, trans, -(int64_t)trans};
    if (comm_agree_min(s->comm, &s->err, lo, 4) < 0) goto done;

    if ((!refine || distm_active(s)) && s->nranks > 1) {
        /* straight to the owners and back (src/solve/solve_direct.c), once nrhs and the row count agree;
         * refinement of a distributed matrix on every rank over its own rows (refine_dist) */
        int64_t mine = nloc, tot = 0;
        if (!mpi_ok(MPI_Allreduce(&mine, &tot, 1, MPI_INT64_T, MPI_SUM, s->comm), &s->err, "MPI_Allreduce (rows)"))
            goto done;
        if (lo[0] != -lo[1])
            canopy_err_set(&s->err, CANOPY_ERR_ARGUMENT, "%s: nrhs differs across ranks (from %" PRId64 " to %" PRId64 ")",
                           call, lo[0], -lo[1]);
        else if (lo[2] != -lo[3])
            canopy_err_set(&s->err, CANOPY_ERR_ARGUMENT, "%s: trans differs across ranks (from %" PRId64 " to %" PRId64 ")",
                           call, lo[2], -lo[3]);
        else if (tot != n)
            canopy_err_set(&s->err, CANOPY_ERR_ARGUMENT, "%s: the ranks give %" PRId64 " rows in all for n = %" CINT_FMT
                           " (each row must be on exactly one rank)", call, tot, n);
        /* op(A) as a solve with A or A^T, with this rank's rows conjugated around it (solver_trans_plan) */
        int op, cj;
        solver_trans_plan(kind, arith, trans, &op, &cj);
        void *bc = NULL;
        if (cj && refine && nloc > 0) {
            bc = canopy_alloc((size_t)nloc * nrhs, 2 * sizeof(double), "conjugated right-hand sides", &s->err);
            if (bc)
                for (cint k = 0; k < nrhs; k++)
                    memcpy((double *)bc + 2 * (size_t)k * nloc, (const double *)b + 2 * (size_t)k * ldb,
                           (size_t)nloc * 2 * sizeof(double));
        }
        /* the checks above give every rank the same outcome: an agreement only for the message
         * (when they failed) or the conjugated copy's allocation */
        if (((s->err.status != CANOPY_SUCCESS || (cj && refine)) && comm_agree(s->comm, &s->err) < 0) || nrhs == 0) {
            canopy_free(bc);
            goto done;
        }
        void *bb = b;
        cint ldbb = ldb;
        if (cj && nloc > 0) {
            if (refine) {
                bb = bc;
                ldbb = nloc;
                api_conj(nloc, nrhs, bc, nloc);
                api_conj(nloc, nrhs, x, ldx);
            } else {
                api_conj(nloc, nrhs, b, ldb);
            }
        }
        solver_set_trans(s, op);
        if (refine) {
            double t0 = canopy_wtime();
            refine_dist(s, nrhs, nloc, rows, bb, ldbb, x, ldx);
            s->stats.time_refine = canopy_wtime() - t0;
        } else {
            solve_direct(s, n, arith, nrhs, nloc, rows, b, ldb);
        }
        solver_set_trans(s, 0);
        if (cj && nloc > 0) api_conj(nloc, nrhs, refine ? x : b, refine ? ldx : ldb);
        canopy_free(bc);
        goto done;
    }

    /* the row layout (and nrhs, which must be the same everywhere): counts, then the rows
     * themselves, checked on rank 0 */
    int64_t mine[2] = {nloc, nrhs};
    if (!mpi_ok(MPI_Gather(mine, 2, MPI_INT64_T, L.sizes, 2, MPI_INT64_T, 0, s->comm), &s->err, "MPI_Gather (row counts)"))
        goto done;
    if (root) {
        int64_t total = 0;
        for (int r = 0; r < L.np; r++) {
            L.nl[r] = (int)L.sizes[2 * r]; /* nloc <= n <= INT_MAX was checked */
            L.off[r] = (int)CANOPY_MIN(total, (int64_t)INT_MAX);
            total += L.nl[r];
        }
        for (int r = 1; r < L.np && s->err.status == CANOPY_SUCCESS; r++)
            if (L.sizes[2 * r + 1] != nrhs)
                canopy_err_set(&s->err, CANOPY_ERR_ARGUMENT, "%s: nrhs differs across ranks (%" CINT_FMT " on rank 0, %"
                               PRId64 " on rank %d)", call, nrhs, L.sizes[2 * r + 1], r);
        if (total != n)
            canopy_err_set(&s->err, CANOPY_ERR_ARGUMENT, "%s: the ranks give %" PRId64 " rows in all for n = %" CINT_FMT
                           " (each row must be on exactly one rank)", call, total, n);
        if (s->err.status == CANOPY_SUCCESS) L.grows = canopy_alloc((size_t)n, sizeof(cint), "gathered rows", &s->err);
    }
    if (comm_agree(s->comm, &s->err) < 0) goto done;
    if (!mpi_ok(MPI_Gatherv(NZ_IDX(rows), (int)nloc, CINT_MPI, NZ_IDXW(L.grows), L.nl, L.off, CINT_MPI, 0, s->comm), &s->err,
                "MPI_Gatherv (rows)"))
        goto done;
    if (root) {
        check_rows(&L, call, &s->err);
        if (s->err.status == CANOPY_SUCCESS && nrhs > 0) {
            L.recv = canopy_alloc((size_t)n * L.chunk, (size_t)L.vsz * sizeof(double), "gathered right-hand sides", &s->err);
            B = canopy_alloc((size_t)n * nrhs, (size_t)L.vsz * sizeof(double), "right-hand sides", &s->err);
            if (refine) X = canopy_alloc((size_t)n * nrhs, (size_t)L.vsz * sizeof(double), "solution", &s->err);
        }
    }
    if (comm_agree(s->comm, &s->err) < 0) goto done;

    if (!rhs_gather(&L, s->comm, root, nrhs, b, ldb, B, &s->err)) goto done;
    if (refine && !rhs_gather(&L, s->comm, root, nrhs, x, ldx, X, &s->err)) goto done;
    /* collective; non-root ranks' arrays are not read */
    canopy_status st = refine ? api_refine(s, trans, nrhs, root ? B : NULL, n, root ? X : NULL, n)
                              : api_solve(s, trans, nrhs, root ? B : NULL, n);
    if (st >= 0) rhs_scatter(&L, s->comm, root, nrhs, refine ? X : B, refine ? x : b, refine ? ldx : ldb, &s->err);
done:
    layout_free(&L);
    canopy_free(B);
    canopy_free(X);
    return s->err.status;
}

/* solve_dist with the phase canopy_get_progress reports */
static canopy_status solve_dist_phase(canopy_solver *s, int trans, bool refine, cint nrhs, cint nloc, const cint *rows,
                                      void *b, cint ldb, void *x, cint ldx)
{
    if (s == NULL) return CANOPY_ERR_ARGUMENT;
    if (!api_enter(s)) return CANOPY_ERR_BUSY;
    solver_progress_phase(s, CANOPY_PHASE_SOLVE);
    canopy_status st = solve_dist(s, trans, refine, nrhs, nloc, rows, b, ldb, x, ldx);
    solver_progress_phase(s, CANOPY_PHASE_IDLE);
    api_leave(s);
    return st;
}

CANOPY_EXPORT canopy_status canopy_solve_distributed(canopy_solver *s, canopy_int nrhs, canopy_int nloc,
                                                     const canopy_int *rows, void *b, canopy_int ldb)
{
    return solve_dist_phase(s, CANOPY_TRANS_NONE, false, nrhs, nloc, rows, b, ldb, NULL, 0);
}

CANOPY_EXPORT canopy_status canopy_solve_distributed_trans(canopy_solver *s, canopy_trans trans, canopy_int nrhs,
                                                           canopy_int nloc, const canopy_int *rows, void *b,
                                                           canopy_int ldb)
{
    return solve_dist_phase(s, (int)trans, false, nrhs, nloc, rows, b, ldb, NULL, 0);
}

CANOPY_EXPORT canopy_status canopy_refine_distributed_trans(canopy_solver *s, canopy_trans trans, canopy_int nrhs,
                                                            canopy_int nloc, const canopy_int *rows, const void *b,
                                                            canopy_int ldb, void *x, canopy_int ldx)
{
    return solve_dist_phase(s, (int)trans, true, nrhs, nloc, rows, (void *)(uintptr_t)b, ldb, x, ldx);
}

CANOPY_EXPORT canopy_status canopy_refine_distributed(canopy_solver *s, canopy_int nrhs, canopy_int nloc,
                                                      const canopy_int *rows, const void *b, canopy_int ldb,
                                                      void *x, canopy_int ldx)
{
    /* b is only read: solve_dist writes x back, never b, when it refines */
    return solve_dist_phase(s, CANOPY_TRANS_NONE, true, nrhs, nloc, rows, (void *)(uintptr_t)b, ldb, x, ldx);
}

/* one call at a time per solver (src/api/api.c) */
CANOPY_EXPORT canopy_status canopy_set_matrix_distributed(canopy_solver *s, const canopy_dist_csc *A)
{
    API_GUARDED(s, set_matrix_distributed_call(s, A));
}

CANOPY_EXPORT canopy_status canopy_update_values_distributed(canopy_solver *s, const void *values)
{
    API_GUARDED(s, update_values_distributed_call(s, values));
}
