/*
 * Internal sparse-matrix helpers on the internal form (base 0, sorted, full storage): adjacency
 * graph, products, norms, copies. Input checking lives in matrix_import.c.
 */
#include "matrix/matrix.h"

#include <complex.h>
#include <math.h>
#include <string.h>

void matrix_free(canopy_csc *A)
{
    if (A == NULL) return;
    canopy_free(A->colptr);
    canopy_free(A->rowind);
    canopy_free(A->values);
    memset(A, 0, sizeof *A);
}

CANOPY_EXPORT void canopy_csc_free(canopy_csc *A) { matrix_free(A); }

canopy_status matrix_copy(const canopy_csc *A, canopy_csc *B, canopy_err *err)
{
    int64_t nnz = matrix_nnz(A);
    size_t sz = A->arith == CANOPY_COMPLEX ? 2 * sizeof(double) : sizeof(double);
    *B = *A;
    B->colptr = canopy_alloc((size_t)A->n + 1, sizeof(cint), "matrix copy", err);
    B->rowind = canopy_alloc((size_t)nnz + 1, sizeof(cint), "matrix copy", err);
    B->values = A->values ? canopy_alloc((size_t)nnz + 1, sz, "matrix copy", err) : NULL;
    if (!B->colptr || !B->rowind || (A->values && !B->values)) {
        matrix_free(B);
        return err ? err->status : CANOPY_ERR_NOMEM;
    }
    memcpy(B->colptr, A->colptr, ((size_t)A->n + 1) * sizeof(cint));
    memcpy(B->rowind, A->rowind, (size_t)nnz * sizeof(cint));
    if (A->values) memcpy(B->values, A->values, (size_t)nnz * sz);
    return CANOPY_SUCCESS;
}

canopy_status matrix_graph(const canopy_csc *A, canopy_csc *G, canopy_err *err)
{
    /* G = pattern(A) merged with pattern(A^T), diagonal dropped. A^T is built by a counting
     * transpose (its columns come out sorted), then each column is the merge of two sorted runs. */
    cint n = A->n;
    int64_t nnz = matrix_nnz(A);
    memset(G, 0, sizeof *G);
    cint *tptr = canopy_calloc((size_t)n + 1, sizeof(cint), "graph transpose", err);
    cint *tind = canopy_alloc((size_t)nnz + 1, sizeof(cint), "graph transpose", err);
    cint *next = canopy_alloc((size_t)n + 1, sizeof(cint), "graph transpose", err);
    if (!tptr || !tind || !next) goto fail;
    for (int64_t p = 0; p < nnz; p++) tptr[A->rowind[p] + 1]++;
    for (cint j = 0; j < n; j++) tptr[j + 1] += tptr[j];
    memcpy(next, tptr, (size_t)n * sizeof(cint));
    for (cint c = 0; c < n; c++)
        for (cint p = A->colptr[c]; p < A->colptr[c + 1]; p++) tind[next[A->rowind[p]]++] = c;
    /* upper bound 2 nnz; exact size after the merge */
    int64_t cap = 2 * nnz;
    if (cap > (int64_t)CINT_MAX) {
        int64_t exact = 0; /* count exactly before giving up */
        for (cint j = 0; j < n; j++) {
            cint a = A->colptr[j], ae = A->colptr[j + 1], b = tptr[j], be = tptr[j + 1];
            while (a < ae || b < be) {
                cint i = (b >= be || (a < ae && A->rowind[a] < tind[b])) ? A->rowind[a] : tind[b];
                while (a < ae && A->rowind[a] == i) a++;
                while (b < be && tind[b] == i) b++;
                exact += i != j;
            }
        }
        if (exact > (int64_t)CINT_MAX) {
            canopy_err_set(err, CANOPY_ERR_TOO_LARGE,
                           "graph of A+A^T has %lld entries: rebuild Canopy with --enable-int64", (long long)exact);
            goto fail;
        }
        cap = exact;
    }
    G->n = n;
    G->colptr = canopy_alloc((size_t)n + 1, sizeof(cint), "graph colptr", err);
    G->rowind = canopy_alloc((size_t)cap + 1, sizeof(cint), "graph rowind", err);
    if (!G->colptr || !G->rowind) goto fail;
    cint out = 0;
    for (cint j = 0; j < n; j++) {
        G->colptr[j] = out;
        cint a = A->colptr[j], ae = A->colptr[j + 1], b = tptr[j], be = tptr[j + 1];
        while (a < ae || b < be) {
            cint i = (b >= be || (a < ae && A->rowind[a] < tind[b])) ? A->rowind[a] : tind[b];
            while (a < ae && A->rowind[a] == i) a++;
            while (b < be && tind[b] == i) b++;
            if (i != j) G->rowind[out++] = i;
        }
    }
    G->colptr[n] = out;
    G->base = 0;
    G->arith = CANOPY_PATTERN;
    G->kind = CANOPY_KIND_SYMMETRIC;
    G->triangle = CANOPY_TRIANGLE_BOTH;
    canopy_free(tptr);
    canopy_free(tind);
    canopy_free(next);
    return CANOPY_SUCCESS;
fail:
    canopy_free(tptr);
    canopy_free(tind);
    canopy_free(next);
    matrix_free(G);
    return err ? err->status : CANOPY_ERR_NOMEM;
}

void matrix_spmv(const canopy_csc *A, cint nrhs, double alpha, const void *x, cint ldx, double beta,
                 void *y, cint ldy)
{
    cint n = A->n;
    if (A->arith == CANOPY_COMPLEX) {
        const double complex *av = A->values;
        const double complex *xv = x;
        double complex *yv = y;
        for (cint r = 0; r < nrhs; r++) {
            double complex *yc = yv + (size_t)r * ldy;
            const double complex *xc = xv + (size_t)r * ldx;
            for (cint i = 0; i < n; i++) yc[i] = beta == 0 ? 0 : beta * yc[i];
            for (cint j = 0; j < n; j++) {
                double complex t = alpha * xc[j];
                for (cint p = A->colptr[j]; p < A->colptr[j + 1]; p++) yc[A->rowind[p]] += av[p] * t;
            }
        }
        return;
    }
    const double *av = A->values;
    const double *xv = x;
    double *yv = y;
    for (cint r = 0; r < nrhs; r++) {
        double *yc = yv + (size_t)r * ldy;
        const double *xc = xv + (size_t)r * ldx;
        for (cint i = 0; i < n; i++) yc[i] = beta == 0 ? 0 : beta * yc[i];
        for (cint j = 0; j < n; j++) {
            double t = alpha * xc[j];
            for (cint p = A->colptr[j]; p < A->colptr[j + 1]; p++) yc[A->rowind[p]] += av[p] * t;
        }
    }
}

void matrix_spmv_t(const canopy_csc *A, cint nrhs, double alpha, const void *x, cint ldx, double beta, void *y,
                   cint ldy)
{
    cint n = A->n;
    /* column j of A is row j of A^T: one dot product per column, each y entry written once */
    if (A->arith == CANOPY_COMPLEX) {
        const double complex *av = A->values, *xv = x;
        double complex *yv = y;
        for (cint r = 0; r < nrhs; r++) {
            double complex *yc = yv + (size_t)r * ldy;
            const double complex *xc = xv + (size_t)r * ldx;
            for (cint j = 0; j < n; j++) {
                double complex t = 0;
                for (cint p = A->colptr[j]; p < A->colptr[j + 1]; p++) t += av[p] * xc[A->rowind[p]];
                yc[j] = (beta == 0 ? 0 : beta * yc[j]) + alpha * t;
            }
        }
        return;
    }
    const double *av = A->values, *xv = x;
    double *yv = y;
    for (cint r = 0; r < nrhs; r++) {
        double *yc = yv + (size_t)r * ldy;
        const double *xc = xv + (size_t)r * ldx;
        for (cint j = 0; j < n; j++) {
            double t = 0;
            for (cint p = A->colptr[j]; p < A->colptr[j + 1]; p++) t += av[p] * xc[A->rowind[p]];
            yc[j] = (beta == 0 ? 0 : beta * yc[j]) + alpha * t;
        }
    }
}

static double entry_abs(const canopy_csc *A, int64_t p)
{
    if (A->arith == CANOPY_COMPLEX) return cabs(((const double complex *)A->values)[p]);
    return fabs(((const double *)A->values)[p]);
}

double matrix_norm_inf(const canopy_csc *A)
{
    /* row sums: accumulate over columns into a small stack-free pass (two passes, no alloc) */
    double best = 0;
    cint n = A->n;
    /* |A| is needed per row; with full storage of symmetric kinds row sums equal column sums, but
     * for general matrices we need a scratch vector: allocate through the checked allocator. */
    double *rs = canopy_calloc((size_t)n + 1, sizeof(double), "row sums", NULL);
    if (rs == NULL) { /* fall back to the one-norm bound, still a norm */
        for (cint j = 0; j < n; j++) {
            double s = 0;
            for (cint p = A->colptr[j]; p < A->colptr[j + 1]; p++) s += entry_abs(A, p);
            best = s > best ? s : best;
        }
        return best;
    }
    for (cint j = 0; j < n; j++)
        for (cint p = A->colptr[j]; p < A->colptr[j + 1]; p++) rs[A->rowind[p]] += entry_abs(A, p);
    for (cint i = 0; i < n; i++) best = rs[i] > best ? rs[i] : best;
    canopy_free(rs);
    return best;
}

double matrix_norm_one(const canopy_csc *A)
{
    double best = 0;
    for (cint j = 0; j < A->n; j++) {
        double s = 0;
        for (cint p = A->colptr[j]; p < A->colptr[j + 1]; p++) s += entry_abs(A, p);
        if (!(s <= best)) best = s;
    }
    return best;
}

double matrix_abs_max(const canopy_csc *A)
{
    double m = 0;
    for (int64_t p = 0; p < matrix_nnz(A); p++) {
        double a = entry_abs(A, p);
        m = a > m ? a : m;
    }
    return m;
}

bool matrix_find_nonfinite(canopy_arith arith, cint n, cint nrhs, const void *v, cint ld, cint *row, cint *col)
{
    size_t s = arith == CANOPY_COMPLEX ? 2 : 1;
    const double *d = v;
    for (cint k = 0; k < nrhs; k++)
        for (cint i = 0; i < n; i++)
            for (size_t c = 0; c < s; c++)
                if (!isfinite(d[((size_t)k * ld + i) * s + c])) {
                    *row = i;
                    *col = k;
                    return true;
                }
    return false;
}
