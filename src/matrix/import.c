/*
 * matrix_import(): check a matrix given by the user (or a file reader) and build the internal form
 * (base 0, rows sorted in each column, full storage, triangle BOTH); matrix_update_values(): new
 * values for the same pattern. Messages use the caller's index base, since they name the caller's
 * entries. Everything is O(nnz + n): sorting is done by counting transposes, never by comparison.
 */
#include "base/common.h"
#include "matrix/matrix.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

/*
 * out = in^T (0-based output). in has base @p base; the output columns come out sorted because
 * the input columns are visited in order. @p conj negates imaginary parts. @p work holds n cints.
 */
static void transpose(cint n, const cint *cp, const cint *ri, const double *v, int vsz, cint base, bool conj,
                      cint *ocp, cint *ori, double *ov, cint *work)
{
    memset(ocp, 0, ((size_t)n + 1) * sizeof(cint));
    int64_t nnz = (int64_t)cp[n] - base;
    for (int64_t p = 0; p < nnz; p++) ocp[ri[p] - base + 1]++;
    for (cint i = 0; i < n; i++) ocp[i + 1] += ocp[i];
    memcpy(work, ocp, (size_t)n * sizeof(cint));
    for (cint j = 0; j < n; j++) {
        for (cint p = cp[j] - base; p < cp[j + 1] - base; p++) {
            cint q = work[ri[p] - base]++;
            ori[q] = j;
            if (ov) {
                if (vsz == 1) {
                    ov[q] = v[p];
                } else {
                    ov[2 * (size_t)q] = v[2 * (size_t)p];
                    ov[2 * (size_t)q + 1] = conj ? -v[2 * (size_t)p + 1] : v[2 * (size_t)p + 1];
                }
            }
        }
    }
}

/* Allocate the arrays of an n x n matrix with nnz entries (one spare so nnz = 0 is no special case). */
static bool alloc_csc(canopy_csc *M, cint n, int64_t nnz, int vsz, canopy_err *err)
{
    memset(M, 0, sizeof *M);
    M->n = n;
    M->colptr = canopy_alloc((size_t)n + 1, sizeof(cint), "column pointers", err);
    M->rowind = canopy_alloc((size_t)nnz + 1, sizeof(cint), "row indices", err);
    M->values = canopy_alloc((size_t)nnz + 1, (size_t)vsz * sizeof(double), "values", err);
    if (M->colptr && M->rowind && M->values) return true;
    matrix_free(M);
    return false;
}

static const char *tri_name(canopy_triangle t) { return t == CANOPY_TRIANGLE_LOWER ? "LOWER" : "UPPER"; }

/* Check the descriptor and every entry; fills *nnz_out and *maxabs. */
static canopy_status check_input(const canopy_csc *in, int64_t *nnz_out, int64_t *offdiag, double *maxabs, canopy_err *err)
{
    const cint n = in->n, b = in->base;
    if (n < 1) return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "matrix order n = %" CINT_FMT ", must be at least 1", n);
    if (b != 0 && b != 1) return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "index base %d, must be 0 or 1", in->base);
    if (in->arith == CANOPY_PATTERN)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "the matrix has no values (pattern only): the solver needs values");
    if (in->arith != CANOPY_REAL && in->arith != CANOPY_COMPLEX)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "unknown arithmetic %d", (int)in->arith);
    if ((int)in->kind < CANOPY_KIND_GENERAL || (int)in->kind > CANOPY_KIND_HERMITIAN)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "unknown matrix kind %d", (int)in->kind);
    if (in->kind != CANOPY_KIND_GENERAL && ((int)in->triangle < CANOPY_TRIANGLE_BOTH || (int)in->triangle > CANOPY_TRIANGLE_UPPER))
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "unknown triangle %d", (int)in->triangle);
    if (in->colptr == NULL) return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "colptr is NULL");
    if (in->colptr[0] != b)
        return canopy_err_set(err, CANOPY_ERR_MATRIX, "colptr[0] = %" CINT_FMT ", must equal the index base %d", in->colptr[0], in->base);
    for (cint j = 0; j < n; j++)
        if (in->colptr[j + 1] < in->colptr[j])
            return canopy_err_set(err, CANOPY_ERR_MATRIX, "column %" CINT_FMT ": colptr decreases (%" CINT_FMT " then %" CINT_FMT ")",
                                  j + b, in->colptr[j], in->colptr[j + 1]);
    int64_t nnz = (int64_t)in->colptr[n] - b;
    if (nnz > 0 && in->rowind == NULL) return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "rowind is NULL");
    if (nnz > 0 && in->values == NULL) return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "values are NULL");

    const bool sym = in->kind != CANOPY_KIND_GENERAL;
    const canopy_triangle tri = sym ? in->triangle : CANOPY_TRIANGLE_BOTH;
    const int vsz = in->arith == CANOPY_COMPLEX ? 2 : 1;
    const double *v = in->values;
    cint *mark = canopy_alloc((size_t)n, sizeof(cint), "duplicate marks", err);
    if (mark == NULL) return err ? err->status : CANOPY_ERR_NOMEM;
    for (cint i = 0; i < n; i++) mark[i] = -1;
    canopy_status st = CANOPY_SUCCESS;
    double amax = 0;
    int64_t off = 0;
    for (cint j = 0; j < n && st == CANOPY_SUCCESS; j++) {
        for (cint p = in->colptr[j] - b; p < in->colptr[j + 1] - b; p++) {
            cint r = in->rowind[p], i = r - b;
            if (i < 0 || i >= n) {
                st = canopy_err_set(err, CANOPY_ERR_MATRIX, "column %" CINT_FMT ": row index %" CINT_FMT " out of range %d..%" CINT_FMT,
                                    j + b, r, in->base, n - 1 + b);
                break;
            }
            if (mark[i] == j) {
                st = canopy_err_set(err, CANOPY_ERR_MATRIX, "column %" CINT_FMT ": duplicate entry in row %" CINT_FMT, j + b, r);
                break;
            }
            mark[i] = j;
            if ((tri == CANOPY_TRIANGLE_LOWER && i < j) || (tri == CANOPY_TRIANGLE_UPPER && i > j)) {
                st = canopy_err_set(err, CANOPY_ERR_MATRIX, "column %" CINT_FMT ": row %" CINT_FMT " is %s the diagonal but the triangle is %s",
                                    j + b, r, i < j ? "above" : "below", tri_name(tri));
                break;
            }
            double a = fabs(v[(size_t)p * vsz]);
            if (vsz == 2) a = hypot(a, v[(size_t)p * 2 + 1]);
            if (!isfinite(a)) {
                st = canopy_err_set(err, CANOPY_ERR_MATRIX, "column %" CINT_FMT ", row %" CINT_FMT ": value is not finite", j + b, r);
                break;
            }
            if (a > amax) amax = a;
            off += i != j;
        }
    }
    canopy_free(mark);
    *nnz_out = nnz;
    *offdiag = off;
    *maxabs = amax;
    return st;
}

/* A Hermitian matrix needs a real diagonal; force exact zeros once the noise is known to be small.
 * @p sign: -1 where M's diagonal was conjugated on the way (the message gives the input's value). */
static canopy_status hermitian_diagonal(canopy_csc *M, double tol, int base, double sign, canopy_err *err)
{
    double *v = M->values;
    for (cint j = 0; j < M->n; j++) {
        for (cint p = M->colptr[j]; p < M->colptr[j + 1]; p++) {
            if (M->rowind[p] != j) continue;
            if (fabs(v[2 * (size_t)p + 1]) > tol)
                return canopy_err_set(err, CANOPY_ERR_MATRIX, "column %" CINT_FMT ": diagonal entry of a Hermitian matrix has imaginary part %g",
                                      j + base, sign * v[2 * (size_t)p + 1]);
            v[2 * (size_t)p + 1] = 0;
        }
    }
    return CANOPY_SUCCESS;
}

/* Both triangles given for a symmetric kind: S (sorted A) must equal T (sorted A^T, conjugated if Hermitian). */
static canopy_status check_symmetric(const canopy_csc *S, const canopy_csc *T, int vsz, double tol, int base, canopy_err *err)
{
    const double *sv = S->values, *tv = T->values;
    for (cint j = 0; j < S->n; j++) {
        cint p = S->colptr[j], q = T->colptr[j];
        cint pe = S->colptr[j + 1], qe = T->colptr[j + 1];
        while (p < pe || q < qe) {
            /* rows of S's column j are entries A(i,j); rows of T's column j are entries A(j,i) */
            if (q >= qe || (p < pe && S->rowind[p] < T->rowind[q]))
                return canopy_err_set(err, CANOPY_ERR_MATRIX, "column %" CINT_FMT ", row %" CINT_FMT ": entry has no symmetric partner (row %" CINT_FMT ", column %" CINT_FMT ") although both triangles are given",
                                      j + base, S->rowind[p] + base, j + base, S->rowind[p] + base);
            if (p >= pe || T->rowind[q] < S->rowind[p])
                return canopy_err_set(err, CANOPY_ERR_MATRIX, "column %" CINT_FMT ", row %" CINT_FMT ": entry has no symmetric partner (row %" CINT_FMT ", column %" CINT_FMT ") although both triangles are given",
                                      T->rowind[q] + base, j + base, T->rowind[q] + base, j + base);
            for (int c = 0; c < vsz; c++) {
                if (fabs(sv[(size_t)p * vsz + c] - tv[(size_t)q * vsz + c]) > tol)
                    return canopy_err_set(err, CANOPY_ERR_MATRIX, "column %" CINT_FMT ", row %" CINT_FMT ": value differs from its symmetric partner (row %" CINT_FMT ", column %" CINT_FMT ") beyond 1e-12 relative",
                                          j + base, S->rowind[p] + base, j + base, S->rowind[p] + base);
            }
            p++;
            q++;
        }
    }
    return CANOPY_SUCCESS;
}

canopy_status matrix_import(const canopy_csc *in, canopy_csc *out, canopy_err *err)
{
    if (in == NULL || out == NULL) return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "matrix_import: NULL matrix");
    memset(out, 0, sizeof *out);
    int64_t nnz = 0, off = 0;
    double amax = 0;
    canopy_status st = check_input(in, &nnz, &off, &amax, err);
    if (st != CANOPY_SUCCESS) return st;

    const cint n = in->n, b = in->base;
    const int vsz = in->arith == CANOPY_COMPLEX ? 2 : 1;
    const bool herm = in->kind == CANOPY_KIND_HERMITIAN && vsz == 2;
    const bool stored_triangle = in->kind != CANOPY_KIND_GENERAL && in->triangle != CANOPY_TRIANGLE_BOTH;
    const double tol = 1e-12 * amax;
    const int64_t full = stored_triangle ? nnz + off : nnz;
    if (full > CINT_MAX - 1)
        return canopy_err_set(err, CANOPY_ERR_TOO_LARGE, "problem too large: %lld entries after symmetric expansion overflow the index type",
                              (long long)full);

    canopy_csc T; /* an intermediate whose transpose is the result */
    memset(&T, 0, sizeof T);
    cint *work = canopy_alloc((size_t)n + 1, sizeof(cint), "transpose counts", err);
    if (work == NULL || !alloc_csc(&T, n, full, vsz, err)) goto nomem;

    if (!stored_triangle) {
        /* T = A^T with sorted columns; the result, T^T, is A sorted */
        transpose(n, in->colptr, in->rowind, in->values, vsz, b, false, T.colptr, T.rowind, T.values, work);
    } else {
        /* T = the full matrix with unsorted columns: each off-diagonal entry also goes to its mirror */
        const double *v = in->values;
        double *tv = T.values;
        memset(T.colptr, 0, ((size_t)n + 1) * sizeof(cint));
        for (cint j = 0; j < n; j++) {
            T.colptr[j + 1] += in->colptr[j + 1] - in->colptr[j];
            for (cint p = in->colptr[j] - b; p < in->colptr[j + 1] - b; p++)
                if (in->rowind[p] - b != j) T.colptr[in->rowind[p] - b + 1]++;
        }
        for (cint j = 0; j < n; j++) T.colptr[j + 1] += T.colptr[j];
        memcpy(work, T.colptr, (size_t)n * sizeof(cint));
        for (cint j = 0; j < n; j++) {
            for (cint p = in->colptr[j] - b; p < in->colptr[j + 1] - b; p++) {
                cint i = in->rowind[p] - b;
                cint q = work[j]++;
                T.rowind[q] = i;
                for (int c = 0; c < vsz; c++) tv[(size_t)q * vsz + c] = v[(size_t)p * vsz + c];
                if (i == j) continue;
                q = work[i]++;
                T.rowind[q] = j;
                tv[(size_t)q * vsz] = v[(size_t)p * vsz];
                if (vsz == 2) tv[(size_t)q * 2 + 1] = herm ? -v[(size_t)p * 2 + 1] : v[(size_t)p * 2 + 1];
            }
        }
    }

    if (!alloc_csc(out, n, full, vsz, err)) goto nomem;
    /* For the full Hermitian T, T^T = conj(T): conjugating while transposing gives T back, sorted. */
    transpose(n, T.colptr, T.rowind, T.values, vsz, 0, herm && stored_triangle, out->colptr, out->rowind, out->values, work);
    out->base = 0;
    out->arith = in->arith;
    out->kind = in->kind;
    out->triangle = CANOPY_TRIANGLE_BOTH;

    if (in->kind != CANOPY_KIND_GENERAL && !stored_triangle) {
        /* out = A sorted and T = A^T sorted: symmetric means out == T (== conj(T) if Hermitian) */
        if (herm) {
            double *tv = T.values;
            for (int64_t p = 0; p < nnz; p++) tv[2 * p + 1] = -tv[2 * p + 1];
        }
        st = check_symmetric(out, &T, vsz, tol, b, err);
    }
    if (st == CANOPY_SUCCESS && herm) st = hermitian_diagonal(out, tol, b, stored_triangle ? -1.0 : 1.0, err);
    canopy_free(work);
    matrix_free(&T);
    if (st != CANOPY_SUCCESS) matrix_free(out);
    return st;

nomem:
    canopy_free(work);
    matrix_free(&T);
    return err && err->status != CANOPY_SUCCESS ? err->status : CANOPY_ERR_NOMEM;
}

canopy_status matrix_update_values(const canopy_csc *layout, const void *values, canopy_csc *A, canopy_err *err)
{
    if (layout == NULL || values == NULL || A == NULL)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "matrix_update_values: NULL argument");
    canopy_csc in = *layout, B;
    in.values = (void *)(uintptr_t)values; /* read only: matrix_import never writes its input */
    canopy_status st = matrix_import(&in, &B, err);
    if (st != CANOPY_SUCCESS) return st;
    bool same = B.n == A->n && B.arith == A->arith && A->colptr && A->rowind &&
                memcmp(B.colptr, A->colptr, ((size_t)B.n + 1) * sizeof(cint)) == 0 &&
                memcmp(B.rowind, A->rowind, (size_t)matrix_nnz(&B) * sizeof(cint)) == 0;
    if (!same) {
        matrix_free(&B);
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "new values: the layout's pattern differs from the matrix's");
    }
    canopy_free(A->values);
    A->values = B.values;
    B.values = NULL;
    matrix_free(&B);
    return CANOPY_SUCCESS;
}
