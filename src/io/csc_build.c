/*
 * Triplets to a sorted CSC matrix (io/io.h), shared by the Matrix Market and Harwell-Boeing
 * readers.
 */
#include "io/io.h"

#include <string.h>

/*
 * Sort entries k = 0..nz-1 by (column, row) with two stable counting sorts (by row, then by
 * column) and build A's arrays. Takes ownership of row, col and val (vsz doubles per entry, val
 * NULL for a pattern). A duplicate (same row and column twice) makes it return CANOPY_ERR_MATRIX
 * without a message, with dup[0] < dup[1] the entry numbers of the first duplicate in file order
 * whose entries are both below @p limit (mirrored entries of a skew file lie at or above it), and
 * dup[2], dup[3] its 0-based row and column.
 */
canopy_status io_build_csc(cint n, int64_t nz, cint *row, cint *col, double *val, int vsz,
                               int64_t limit, canopy_csc *A, int64_t dup[4], canopy_err *err)
{
    canopy_status st = CANOPY_SUCCESS;
    cint *cnt = canopy_calloc((size_t)n + 1, sizeof(cint), "column counts", err);
    cint *colptr = canopy_calloc((size_t)n + 1, sizeof(cint), "column pointers", err);
    cint *t = canopy_alloc((size_t)nz + 1, sizeof(cint), "row indices", err);
    cint *perm = canopy_alloc((size_t)nz + 1, sizeof(cint), "entry order", err);
    double *v = NULL;
    if (!cnt || !colptr || !t || !perm) goto fail;
    for (int64_t k = 0; k < nz; k++) cnt[row[k] + 1]++;
    for (cint i = 0; i < n; i++) cnt[i + 1] += cnt[i];
    for (int64_t k = 0; k < nz; k++) t[cnt[row[k]]++] = (cint)k;
    for (int64_t k = 0; k < nz; k++) colptr[col[k] + 1]++;
    for (cint j = 0; j < n; j++) colptr[j + 1] += colptr[j];
    memcpy(cnt, colptr, (size_t)n * sizeof(cint));
    for (int64_t q = 0; q < nz; q++) {
        cint k = t[q];
        perm[cnt[col[k]]++] = k;
    }
    for (int64_t p = 0; p < nz; p++) t[p] = row[perm[p]];
    dup[0] = dup[1] = -1;
    for (cint j = 0; j < n; j++) {
        for (cint p = colptr[j] + 1; p < colptr[j + 1]; p++) {
            if (t[p] == t[p - 1] && perm[p] < limit && perm[p - 1] < limit && (dup[1] < 0 || perm[p] < dup[1])) {
                dup[0] = perm[p - 1];
                dup[1] = perm[p];
                dup[2] = t[p];
                dup[3] = j;
            }
        }
    }
    if (dup[1] >= 0) {
        st = CANOPY_ERR_MATRIX;
        goto out;
    }
    if (val != NULL) {
        v = canopy_alloc((size_t)nz + 1, (size_t)vsz * sizeof(double), "values", err);
        if (v == NULL) goto fail;
        for (int64_t p = 0; p < nz; p++)
            for (int c = 0; c < vsz; c++) v[p * vsz + c] = val[(size_t)perm[p] * vsz + c];
    }
    A->n = n;
    A->colptr = colptr;
    A->rowind = t;
    A->values = v;
    A->base = 0;
    colptr = t = NULL;
    goto out;
fail:
    st = err ? err->status : CANOPY_ERR_NOMEM;
    if (st == CANOPY_SUCCESS) st = CANOPY_ERR_NOMEM;
out:
    canopy_free(cnt);
    canopy_free(colptr);
    canopy_free(t);
    canopy_free(perm);
    canopy_free(row);
    canopy_free(col);
    canopy_free(val);
    return st;
}
